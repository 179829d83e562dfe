//! The `pgcdc` command line: parse arguments, load and validate the config, set up logging,
//! run the connector, and exit with a one-line cause on error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pgcdc::config::{self, ConfigSource, ConnectorConfig};
use pgcdc::pipeline::Connector;

#[derive(Parser)]
#[command(
    name = "pgcdc",
    version,
    about = "Stream PostgreSQL changes into Kafka as Debezium change events"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
    },
}

fn load(
    path: &std::path::Path,
    set: Vec<(String, String)>,
) -> pgcdc::Result<(config::RawConfig, ConnectorConfig)> {
    let file = config::load_file(path)?;
    let source = ConfigSource {
        overrides: set,
        env: std::env::vars().collect(),
    };
    for var in source.unmatched_env(&file) {
        tracing::warn!("environment variable {var} matches no configuration key and is ignored");
    }
    let origins = source.env_origins(&file);
    let raw = source.merge(file);
    // `${provider:...}` placeholders are resolved for the run; `check` prints `raw`, unresolved.
    let resolved = config::resolve_providers(&raw, &|name| std::env::var(name).ok())?;
    let (cfg, warnings) = pgcdc::pipeline::validate_config(&resolved)
        .map_err(|e| config::attribute_env_values(e, &origins))?;
    for w in warnings {
        tracing::warn!("{}", w.0);
    }
    Ok((raw, cfg))
}

fn main() -> ExitCode {
    use std::io::IsTerminal;
    // rdkafka's producer poll warns about every error event it does not consume itself; the
    // same errors reach the rate-limited client context, so that target is kept quiet.
    let filter = tracing_subscriber::EnvFilter::try_from_env("PGCDC_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rdkafka::producer=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pgcdc: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Check { config, set } => {
                let (raw, _) = load(&config, set)?;
                for (k, v) in raw {
                    let shown = if config::keys::is_secret(&k) {
                        "[hidden]".to_string()
                    } else {
                        v
                    };
                    println!("{k}={shown}");
                }
                Ok(())
            }
            Command::Run { config, set } => {
                let (_, cfg) = load(&config, set)?;
                let mut connector = Connector::new(Arc::new(cfg));
                let stopper = connector.stopper();
                // Registered before the connector starts: a signal that came before the handler
                // task first ran would otherwise kill the process.
                let mut signals = StopSignals::new();
                tokio::spawn(async move {
                    signals.recv().await;
                    tracing::info!("signal received; stopping (a second signal exits at once)");
                    stopper.stop();
                    signals.recv().await;
                    std::process::exit(130);
                });
                // On the main thread, as the runtime's worker threads serve the replication
                // reader and the connections.
                connector.run().await.map(|_| ())
            }
        }
    });
    // A blocking call the stop abandoned (a schema registry request that hangs, for up to its
    // 30 s timeout) must not hold the exit: nothing waits for its answer any more.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match result {
        Ok(()) => ExitCode::SUCCESS,
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
