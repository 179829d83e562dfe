//! The `pgcdc` command line: parse arguments, load and validate the config, set up logging,
//! run the connector (`run`) or a worker of connectors (`serve`) with the REST API, and exit
//! with a one-line cause on error.
//!
//! Exit status: 0 after a stop (SIGINT/SIGTERM) or a connector that ended on its own
//! (`snapshot.mode=initial_only`); 78 for a configuration error (nothing to retry: a container
//! should not restart in a loop); 77 for refused credentials; 1 for other failures; 130 for a
//! second signal.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use pgcdc::config::{self, keys, ConfigSource, ConnectorConfig, WorkerConfig};
use pgcdc::pipeline::Connector;
use pgcdc::rest::{Listener, Loggers};
use pgcdc::worker::{ConfigStore, Mode, TargetState, Worker};

#[derive(Parser)]
#[command(
    name = "pgcdc",
    version,
    about = "Stream PostgreSQL changes into Kafka as Debezium change events"
)]
struct Cli {
    /// Log format: text (default) or json (one JSON object per line).
    #[arg(long, global = true, env = "PGCDC_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Sets up logging to stderr at the levels of `PGCDC_LOG` (default `info`), in `format`, and
/// returns the handle that changes the levels at run time (`/admin/loggers`). Errors: a
/// `PGCDC_LOG` the filter parser refuses.
fn init_logging(format: LogFormat) -> Result<pgcdc::rest::Loggers, String> {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{fmt, reload, EnvFilter};
    // rdkafka's producer poll warns about every error event it does not consume itself; the
    // same errors reach the rate-limited client context, so that target is kept quiet.
    let directives = std::env::var("PGCDC_LOG")
        .ok()
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| "info,rdkafka::producer=error".to_string());
    let filter = EnvFilter::try_new(&directives)
        .map_err(|e| format!("PGCDC_LOG={directives:?} is not a valid log filter: {e}"))?;
    let (filter, handle) = reload::Layer::new(filter);
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Json => registry
            .with(fmt::layer().json().with_writer(std::io::stderr))
            .init(),
        LogFormat::Text => registry
            .with(
                fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::stderr().is_terminal()),
            )
            .init(),
    }
    let apply = move |d: &str| {
        let filter = EnvFilter::try_new(d).map_err(|e| e.to_string())?;
        handle.reload(filter).map_err(|e| e.to_string())
    };
    Ok(pgcdc::rest::Loggers::new(&directives, Box::new(apply)))
}

#[derive(Subcommand)]
enum Command {
    /// Run a connector from a Kafka Connect connector JSON or a .properties file.
    Run {
        /// Connector config: {"name": ..., "config": {...}}, a flat JSON map, or .properties.
        #[arg(long, short)]
        config: PathBuf,
        /// Override a property (repeatable): --set database.hostname=127.0.0.1
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = config::parse_set)]
        set: Vec<(String, String)>,
        #[command(flatten)]
        worker: WorkerArgs,
    },
    /// Run a worker: the REST API, with the connectors created through it (kept in
    /// pgcdc.config.storage.dir and started again with the process).
    Serve {
        #[command(flatten)]
        worker: WorkerArgs,
    },
    /// Check a connector against its PostgreSQL and Kafka before running it: every finding
    /// with its fix. Exit 0 when all is well, 1 for errors, 3 for warnings only.
    Validate {
        /// Connector config file.
        #[arg(long, short)]
        config: PathBuf,
        /// Override a property (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = config::parse_set)]
        set: Vec<(String, String)>,
        /// Worker properties file whose `bootstrap.servers` and `producer.*` apply where the
        /// connector config does not set them, as for `run --worker` and `serve`.
        #[arg(long)]
        worker: Option<PathBuf>,
    },
    /// Ask the REST API of a running pgcdc for GET /health/ready and print the answer: exit 0
    /// when ready (200), 1 when not or when nothing answers. For container health checks.
    Health {
        #[command(flatten)]
        worker: WorkerArgs,
    },
    /// Install, remove or inspect the event triggers that write table DDL into the WAL, for
    /// `include.schema.changes` (docs/schema-changes.md). Install and uninstall need a
    /// superuser: give its credentials with --set database.user=... if the config's role is not.
    SchemaCapture {
        /// install (idempotent), uninstall, or status (exit 0 when installed at this
        /// pgcdc's version, 1 otherwise).
        #[arg(value_enum)]
        action: CaptureAction,
        /// Connector config file (its database.* settings say where).
        #[arg(long, short)]
        config: PathBuf,
        /// Override a property (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = config::parse_set)]
        set: Vec<(String, String)>,
    },
    /// Validate a config (without connecting) and print the merged settings, secrets hidden;
    /// keys left at their defaults are not printed.
    Check {
        /// Connector config file.
        #[arg(long, short)]
        config: PathBuf,
        /// Override a property (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = config::parse_set)]
        set: Vec<(String, String)>,
        /// Worker properties file whose connector defaults apply (see `validate --worker`).
        #[arg(long)]
        worker: Option<PathBuf>,
    },
}

/// What `pgcdc schema-capture` does.
#[derive(Clone, Copy, clap::ValueEnum)]
enum CaptureAction {
    Install,
    Uninstall,
    Status,
}

/// `pgcdc schema-capture`: installs, removes or reports the capture in the config's database.
async fn schema_capture(action: CaptureAction, cfg: &ConnectorConfig) -> pgcdc::Result<u8> {
    use pgcdc::pg::schema_capture;
    let client = pgcdc::pg::sql::connect(&cfg.database).await?;
    let db = &cfg.database.dbname;
    match action {
        CaptureAction::Install => {
            schema_capture::install(&client).await?;
            println!("schema capture installed in database {db}");
        }
        CaptureAction::Uninstall => {
            schema_capture::uninstall(&client).await?;
            println!("schema capture removed from database {db}");
        }
        CaptureAction::Status => {}
    }
    let status = schema_capture::status(&client).await?;
    println!("database {db}: schema capture {}", status.describe());
    Ok(
        if status.is_current() || matches!(action, CaptureAction::Uninstall) {
            0
        } else {
            1
        },
    )
}

/// Where the worker settings come from.
#[derive(Args)]
struct WorkerArgs {
    /// Worker properties file (listeners, REST credentials, pgcdc.config.storage.dir).
    #[arg(long)]
    worker: Option<PathBuf>,
    /// The REST API's address, http://HOST:PORT (default http://127.0.0.1:8083; also
    /// PGCDC_LISTENERS or `listeners` in the worker file).
    #[arg(long)]
    listeners: Option<String>,
}

impl WorkerArgs {
    fn load(&self) -> pgcdc::Result<WorkerConfig> {
        let env = config::utf8_environment(std::env::vars_os())?;
        let overrides: Vec<(String, String)> = self
            .listeners
            .iter()
            .map(|l| (keys::LISTENERS.to_string(), l.clone()))
            .collect();
        WorkerConfig::load(self.worker.as_deref(), &env, &overrides)
    }
}

/// The `worker_id` of status answers: the advertised host and port, else the bound address.
fn worker_id(config: &WorkerConfig, bound: std::net::SocketAddr) -> String {
    let host = config
        .advertised_host
        .clone()
        .unwrap_or_else(|| bound.ip().to_string());
    let port = config.advertised_port.unwrap_or(bound.port());
    format!("{host}:{port}")
}

/// Binds the REST listener and starts serving `worker` on it.
async fn start_rest(config: WorkerConfig, mode: Mode, loggers: Loggers) -> pgcdc::Result<Worker> {
    let listener = Listener::bind(&config).await?;
    let worker = Worker::with_defaults(
        worker_id(&config, listener.addr()),
        mode,
        config.connector_defaults.clone(),
    );
    if let Some(interval) = config.status_log_interval {
        worker.spawn_status_log(interval);
    }
    let served = worker.clone();
    tokio::spawn(async move { listener.serve(served, &config, loggers).await });
    Ok(worker)
}

/// `pgcdc run`: the one connector, with the REST API, until a signal or until it fails or
/// ends on its own.
async fn run(
    raw: config::RawConfig,
    cfg: ConnectorConfig,
    worker: WorkerConfig,
    loggers: Loggers,
) -> pgcdc::Result<()> {
    let name = cfg.name.clone();
    let worker = start_rest(worker, Mode::Run, loggers).await?;
    // Registered before the connector starts: a signal that came before the handler task
    // first ran would otherwise kill the process.
    let mut signals = StopSignals::new();
    let connector = Connector::new(Arc::new(cfg));
    let mut changes = connector.handle().subscribe();
    worker
        .add(raw, connector, TargetState::Started)
        .await
        .map_err(|e| pgcdc::Error::config(e.message))?;
    loop {
        tokio::select! {
            () = signals.recv() => {
                tracing::info!("signal received; stopping (a second signal exits at once)");
                tokio::spawn(async move {
                    signals.recv().await;
                    std::process::exit(130);
                });
                worker.shutdown().await;
                return Ok(());
            }
            _ = changes.changed() => {}
            // Target states and restarts change without a state change of the run: look again
            // now and then.
            () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        }
        if let Some(ended) = worker.ended(&name) {
            return match ended {
                None => Ok(()),
                Some(kind) => {
                    let trace = worker
                        .status(&name)
                        .ok()
                        .and_then(|s| s.tasks.first().and_then(|t| t.trace.clone()))
                        .unwrap_or_default();
                    Err(pgcdc::Error::new(kind, trace_message(&trace)))
                }
            };
        }
    }
}

/// `pgcdc serve`: the worker and its stored connectors, until a signal.
async fn serve(config: WorkerConfig, loggers: Loggers) -> pgcdc::Result<()> {
    let store = ConfigStore::open(&config).await?;
    let stored_in = store.describe();
    let mut signals = StopSignals::new();
    let worker = start_rest(config, Mode::Serve(store), loggers).await?;
    let loaded = worker.load_stored().await?;
    tracing::info!(connectors = loaded, configs_in = %stored_in, "worker started");
    signals.recv().await;
    tracing::info!("signal received; stopping every connector (a second signal exits at once)");
    tokio::spawn(async move {
        signals.recv().await;
        std::process::exit(130);
    });
    worker.shutdown().await;
    Ok(())
}

/// `pgcdc validate`: prints each finding (and its fix) and returns the exit status: 0 when
/// every check passed, 1 when one found an error, 3 when the worst was a warning.
async fn preflight(cfg: &ConnectorConfig) -> u8 {
    use pgcdc::pipeline::preflight::{self, Severity};
    let findings = preflight::run(cfg).await;
    println!("pgcdc validate: connector {}", cfg.name);
    for f in &findings {
        let tag = match f.severity {
            Severity::Ok => "ok     ",
            Severity::Warning => "WARNING",
            Severity::Error => "ERROR  ",
        };
        println!("  {tag} {:<22} {}", f.check, f.message);
        if let Some(fix) = &f.fix {
            println!("          {:<22} fix: {fix}", "");
        }
    }
    let worst = findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Ok);
    let (errors, warnings) = findings.iter().fold((0, 0), |(e, w), f| match f.severity {
        Severity::Error => (e + 1, w),
        Severity::Warning => (e, w + 1),
        Severity::Ok => (e, w),
    });
    println!("{errors} error(s), {warnings} warning(s)");
    match worst {
        Severity::Ok => 0,
        Severity::Warning => 3,
        Severity::Error => 1,
    }
}

/// `pgcdc health`: prints the readiness answer; 0 when ready, 1 when not. Errors: nothing
/// answers (a connection error, exit 1 too), or the listener cannot be probed (config).
async fn health(worker: &WorkerConfig) -> pgcdc::Result<u8> {
    let answer = pgcdc::rest::probe::ready(worker).await?;
    println!("{}", answer.body.trim_end());
    Ok(if answer.status == 200 { 0 } else { 1 })
}

/// The error's message in a task's trace (`<Kind> error: <message>`, then `fix: ...`).
fn trace_message(trace: &str) -> String {
    let body = trace.split_once(" error: ").map_or(trace, |(_, m)| m);
    let body = body.rsplit_once("\nfix: ").map_or(body, |(m, _)| m);
    if body.is_empty() {
        "the connector failed".to_string()
    } else {
        body.to_string()
    }
}

/// The connector defaults of the worker file at `path` (`bootstrap.servers`, `producer.*`);
/// empty without one. Errors: the worker file cannot be read or is invalid.
fn worker_defaults(path: Option<&std::path::Path>) -> pgcdc::Result<config::RawConfig> {
    let Some(path) = path else {
        return Ok(config::RawConfig::new());
    };
    let env = config::utf8_environment(std::env::vars_os())?;
    Ok(WorkerConfig::load(Some(path), &env, &[])?.connector_defaults)
}

/// Reads the connector config at `path` with the `--set` overrides and `PGCDC_*` variables,
/// and validates it over the worker's connector `defaults` (which apply to the keys it does
/// not set, as Connect's workers give their `bootstrap.servers` and `producer.*` to source
/// tasks). Returns the config as given (without the defaults: what REST shows) and the
/// validated config. Errors: every problem of the config, as one config error.
fn load(
    path: &std::path::Path,
    set: Vec<(String, String)>,
    defaults: &config::RawConfig,
) -> pgcdc::Result<(config::RawConfig, ConnectorConfig)> {
    let file = config::load_file(path)?;
    let source = ConfigSource {
        overrides: set,
        env: config::utf8_environment(std::env::vars_os())?,
    };
    for var in source.unmatched_env(&file) {
        tracing::warn!("environment variable {var} matches no configuration key and is ignored");
    }
    let origins = source.env_origins(&file);
    let raw = source.merge(file);
    // `${provider:...}` placeholders are resolved for the run; `check` prints `raw`, unresolved.
    let mut effective = defaults.clone();
    effective.extend(raw.iter().map(|(k, v)| (k.clone(), v.clone())));
    let resolved = config::resolve_providers(&effective, &|name| std::env::var(name).ok())?;
    let (cfg, warnings) = pgcdc::pipeline::validate_config(&resolved)
        .map_err(|e| config::attribute_env_values(e, &origins))?;
    for w in warnings {
        tracing::warn!("{}", w.0);
    }
    Ok((raw, cfg))
}

/// Limits glibc's malloc to one arena, unless `MALLOC_ARENA_MAX` is set in the environment
/// (glibc reads it itself). Records are allocated on the pipeline's threads and freed on
/// librdkafka's: with an arena per thread (glibc's default, up to 8 per core) the freed memory
/// stays spread over the arenas, and the bulk bench's peak RSS was 85 MiB instead of 44 MiB,
/// for more CPU, not less. Must run before any other thread starts.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; no thread allocates concurrently
        // yet. A refusal (return 0) leaves glibc's default, which is only slower.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

fn main() -> ExitCode {
    limit_malloc_arenas();
    // rdkafka's producer poll warns about every error event it does not consume itself; the
    // same errors reach the rate-limited client context, so that target is kept quiet.
    let cli = Cli::parse();
    let loggers = match init_logging(cli.log_format) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("pgcdc: error: {e}");
            return ExitCode::from(pgcdc::error::ErrorKind::Config.policy().exit_code);
        }
    };
    // The connectors run as tasks: one worker thread per core plus one, as the main thread
    // only waits; TOKIO_WORKER_THREADS (tokio's own variable) sets another number.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()) + 1);
    }
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pgcdc: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Check {
                config,
                set,
                worker,
            } => {
                let (raw, _) = load(&config, set, &worker_defaults(worker.as_deref())?)?;
                for (k, v) in raw {
                    let shown = if config::keys::is_secret(&k) {
                        "[hidden]".to_string()
                    } else {
                        v
                    };
                    println!("{k}={shown}");
                }
                Ok(0)
            }
            Command::Validate {
                config,
                set,
                worker,
            } => {
                let (_, cfg) = load(&config, set, &worker_defaults(worker.as_deref())?)?;
                Ok(preflight(&cfg).await)
            }
            Command::Run {
                config,
                set,
                worker,
            } => {
                let worker = worker.load()?;
                let (raw, cfg) = load(&config, set, &worker.connector_defaults)?;
                run(raw, cfg, worker, loggers).await.map(|()| 0)
            }
            Command::SchemaCapture {
                action,
                config,
                set,
            } => {
                // Only the database.* settings are used: a config without Kafka settings is
                // enough, so the connector's required bootstrap.servers gets a stand-in.
                let stand_in = config::RawConfig::from([(
                    keys::BOOTSTRAP_SERVERS.to_string(),
                    "unused:9092".to_string(),
                )]);
                let (_, cfg) = load(&config, set, &stand_in)?;
                schema_capture(action, &cfg).await
            }
            Command::Serve { worker } => serve(worker.load()?, loggers).await.map(|()| 0),
            Command::Health { worker } => health(&worker.load()?).await,
        }
    });
    // A blocking call the stop abandoned (a schema registry request that hangs, for up to its
    // 30 s timeout) must not hold the exit: nothing waits for its answer any more.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A config error lists every problem, one per line; anything else is one line.
            if e.kind() == pgcdc::ErrorKind::Config {
                eprintln!("pgcdc: error: {}", e.report());
            } else {
                eprintln!("pgcdc: error: {}", e.one_line());
            }
            ExitCode::from(e.kind().policy().exit_code)
        }
    }
}

/// SIGINT and SIGTERM, with their handlers installed when this is created.
struct StopSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Installs the handlers (on the current runtime). One that cannot be installed is never
    /// received.
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            StopSignals {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            StopSignals {}
        }
    }

    /// Waits for the next SIGINT or SIGTERM.
    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = next(&mut self.term) => {}
                () = next(&mut self.int) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
