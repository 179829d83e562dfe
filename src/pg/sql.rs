//! Regular SQL connections (tokio-postgres) for catalog queries, publication and slot
//! management and snapshot reads, with the same TLS rules and session settings as the
//! replication connection, and `database.initial.statements` run on each once it is open;
//! `database.query.timeout.ms` is their `statement_timeout`, except on the snapshot's.

use tokio_postgres::tls::NoTls;
use tokio_postgres::Client;

use crate::config::keys::{DATABASE_HOSTNAME, DATABASE_INITIAL_STATEMENTS};
use crate::config::{DatabaseConfig, SslMode};
use crate::error::{Error, ErrorKind, Result, SqlContext};
use crate::pg::tls::RustlsMakeConnect;
use crate::pg::wire::SESSION_SETTINGS;

fn base_config(db: &DatabaseConfig) -> tokio_postgres::Config {
    let mut c = tokio_postgres::Config::new();
    c.host(&db.hostname)
        .port(db.port)
        .user(&db.user)
        .dbname(&db.dbname)
        .application_name("pgcdc");
    if let Some(pw) = &db.password {
        c.password(pw);
    }
    c.connect_timeout(db.connect_timeout)
        .keepalives(db.tcp_keepalive);
    let mut options: Vec<String> = SESSION_SETTINGS
        .iter()
        .filter(|(k, _)| *k != "client_encoding")
        .map(|(k, v)| format!("-c {k}={v}"))
        .collect();
    // database.query.timeout.ms, as the JDBC query timeout Debezium sets.
    if let Some(t) = db.query_timeout {
        options.push(format!("-c statement_timeout={}", t.as_millis()));
    }
    c.options(options.join(" "));
    c
}

fn connect_error(db: &DatabaseConfig, e: tokio_postgres::Error) -> Error {
    if let Some(msg) = crate::pg::tls::certificate_problem(&e, db) {
        return Error::config(msg).with_source(e);
    }
    let context = format!(
        "cannot connect to PostgreSQL at {}:{} as user {}",
        db.hostname, db.port, db.user
    );
    match e.as_db_error() {
        Some(d) => {
            let code = d.code().code();
            let message = format!("{context}: {code} {}", d.message());
            Error::from_sqlstate(code, SqlContext::Connection, message).with_source(e)
        }
        None => Error::from(e).with_context(&context),
    }
}

/// The first host of `database.hostname` that is a writable primary (not in recovery), as a
/// one-host config; `db` itself when it names one host. Each host is tried in order, within
/// `pgcdc.database.connect.timeout.ms`. Errors: a connection error (retried by the connector)
/// listing every host and why it was passed over.
pub async fn choose_primary(db: &DatabaseConfig) -> Result<DatabaseConfig> {
    if db.other_hosts.is_empty() {
        return Ok(db.clone());
    }
    let candidates =
        std::iter::once((db.hostname.clone(), db.port)).chain(db.other_hosts.iter().cloned());
    let mut passed = Vec::new();
    for (i, (host, port)) in candidates.enumerate() {
        let one = DatabaseConfig {
            hostname: host.clone(),
            port,
            other_hosts: Vec::new(),
            ..db.clone()
        };
        let standby = match open(&one).await {
            Ok(client) => client
                .query_one("SELECT pg_is_in_recovery()", &[])
                .await
                .map(|r| r.get::<_, bool>(0)),
            Err(e) => {
                passed.push(format!("{host}:{port} ({})", e.one_line()));
                continue;
            }
        };
        match standby {
            Ok(false) => {
                if i > 0 {
                    tracing::warn!(host = %host, port, passed = %passed.join("; "),
                        "connected to the first writable primary of the hosts in database.hostname, not the first host");
                }
                return Ok(one);
            }
            Ok(true) => passed.push(format!("{host}:{port} (a standby: in recovery)")),
            Err(e) => passed.push(format!("{host}:{port} ({e})")),
        }
    }
    Err(Error::connection(format!(
        "none of the hosts of {DATABASE_HOSTNAME} is a writable primary: {}; trying again as errors.max.retries allows (a promotion in progress ends this)",
        passed.join("; ")
    )))
}

/// Opens a regular SQL connection; its driver task runs in the background until the
/// [`Client`] is dropped.
pub async fn connect(db: &DatabaseConfig) -> Result<Client> {
    let client = open(db).await?;
    run_initial_statements(&client, db).await?;
    Ok(client)
}

/// Opens the connection a snapshot reads with: as [`connect`], without the
/// `database.query.timeout.ms` limit (Debezium's snapshot reads have none either: a big table
/// takes as long as it takes).
pub async fn connect_for_snapshot(db: &DatabaseConfig) -> Result<Client> {
    let client = connect(db).await?;
    if db.query_timeout.is_some() {
        client.batch_execute("SET statement_timeout = 0").await?;
    }
    Ok(client)
}

/// Runs `database.initial.statements` on a new connection. Errors: the first statement the
/// server refuses, numbered, with its SQLSTATE (not retried: a restart would fail alike).
async fn run_initial_statements(client: &Client, db: &DatabaseConfig) -> Result<()> {
    for (i, statement) in db.initial_statements.iter().enumerate() {
        if let Err(e) = client.batch_execute(statement).await {
            let context = format!(
                "statement {} of {DATABASE_INITIAL_STATEMENTS} failed; fix or remove it",
                i + 1
            );
            return Err(match e.as_db_error() {
                Some(d) => {
                    let code = d.code().code();
                    let message = format!("{context}: {code} {}", d.message());
                    Error::from_sqlstate(code, SqlContext::Statement, message).with_source(e)
                }
                None => Error::from(e).with_context(&context),
            });
        }
    }
    Ok(())
}

/// Opens the connection under the TLS rules of `database.sslmode`.
async fn open(db: &DatabaseConfig) -> Result<Client> {
    tracing::debug!(host = %db.hostname, port = db.port, connection = "SQL", "connecting to PostgreSQL");
    tokio::time::timeout(db.connect_timeout, open_negotiated(db))
        .await
        .map_err(|_| crate::pg::connect_timed_out(db, "SQL"))?
}

/// [`open`] without its time limit.
async fn open_negotiated(db: &DatabaseConfig) -> Result<Client> {
    // A socket directory as host: a Unix-domain socket, never encrypted (as libpq).
    if crate::pg::wire::socket_path(db).is_some() {
        return connect_mode(db, tokio_postgres::config::SslMode::Disable).await;
    }
    match db.sslmode {
        SslMode::Allow => match connect_mode(db, tokio_postgres::config::SslMode::Disable).await {
            Err(e) if e.kind() == ErrorKind::Auth => {
                connect_mode(db, tokio_postgres::config::SslMode::Require).await
            }
            other => other,
        },
        SslMode::Disable => connect_mode(db, tokio_postgres::config::SslMode::Disable).await,
        SslMode::Prefer => connect_mode(db, tokio_postgres::config::SslMode::Prefer).await,
        _ => connect_mode(db, tokio_postgres::config::SslMode::Require).await,
    }
}

async fn connect_mode(
    db: &DatabaseConfig,
    mode: tokio_postgres::config::SslMode,
) -> Result<Client> {
    let mut config = base_config(db);
    config.ssl_mode(mode);
    let tls = match mode {
        tokio_postgres::config::SslMode::Disable => None,
        _ => crate::pg::tls::client_config(db)?,
    };
    match tls {
        None => {
            let (client, conn) = config
                .connect(NoTls)
                .await
                .map_err(|e| connect_error(db, e))?;
            spawn_driver(conn);
            Ok(client)
        }
        Some(tls) => {
            let (client, conn) = config
                .connect(RustlsMakeConnect::new(tls))
                .await
                .map_err(|e| connect_error(db, e))?;
            spawn_driver(conn);
            Ok(client)
        }
    }
}

/// Runs a connection's driver task until the client is dropped or the connection breaks.
fn spawn_driver<F>(conn: F)
where
    F: std::future::Future<Output = std::result::Result<(), tokio_postgres::Error>>
        + Send
        + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "SQL connection ended");
        }
    });
}
