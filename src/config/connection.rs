//! PostgreSQL connection settings: `database.*` (host, port, credentials, database), TLS
//! (`database.sslmode` and the certificate files), TCP keepalive, the connect timeout
//! (`pgcdc.database.connect.timeout.ms`) and the validation timeout.

use std::path::PathBuf;
use std::time::Duration;

use super::checker::Checker;
use super::keys::{
    CONNECTION_VALIDATION_TIMEOUT_MS, DATABASE_CONNECT_TIMEOUT_MS, DATABASE_DBNAME,
    DATABASE_HOSTNAME, DATABASE_INITIAL_STATEMENTS, DATABASE_PASSWORD, DATABASE_PORT,
    DATABASE_QUERY_TIMEOUT_MS, DATABASE_SSLCERT, DATABASE_SSLKEY, DATABASE_SSLMODE,
    DATABASE_SSLPASSWORD, DATABASE_SSLROOTCERT, DATABASE_TCP_KEEP_ALIVE, DATABASE_USER,
};

/// Default `pgcdc.database.connect.timeout.ms`: how long one connection attempt (TCP connect,
/// TLS handshake and authentication) may take.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 30_000;
/// Default `connection.validation.timeout.ms`.
pub const DEFAULT_VALIDATION_TIMEOUT_MS: u64 = 60_000;
/// Default `database.port`.
const DEFAULT_PORT: u16 = 5432;

/// libpq `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// Plain first, TLS if the server insists.
    Allow,
    /// TLS if the server offers it, else plain (the default).
    Prefer,
    /// TLS, certificate not verified.
    Require,
    /// TLS, certificate chain verified against the root certificates.
    VerifyCa,
    /// TLS, chain and host name verified.
    VerifyFull,
}

/// PostgreSQL connection settings. `Debug` hides the password.
#[derive(Clone)]
pub struct DatabaseConfig {
    /// `database.hostname`
    pub hostname: String,
    /// `database.port`
    pub port: u16,
    /// pgcdc's extension of `database.hostname` (and `database.port`): the hosts after the
    /// first of a comma-separated list, tried in order when the first is not a writable primary
    /// (libpq's `target_session_attrs=read-write`), so that the connector follows a promotion.
    /// Empty for one host.
    pub other_hosts: Vec<(String, u16)>,
    /// `database.user`
    pub user: String,
    /// `database.password` (never logged).
    pub password: Option<String>,
    /// `database.dbname`
    pub dbname: String,
    /// `database.sslmode`
    pub sslmode: SslMode,
    /// `database.sslrootcert`
    pub sslrootcert: Option<PathBuf>,
    /// `database.sslcert`
    pub sslcert: Option<PathBuf>,
    /// `database.sslkey`
    pub sslkey: Option<PathBuf>,
    /// `database.sslpassword`: the password of an encrypted `database.sslkey` (never logged).
    pub sslpassword: Option<String>,
    /// `database.tcpKeepAlive`
    pub tcp_keepalive: bool,
    /// `pgcdc.database.connect.timeout.ms`: the most one connection attempt may take, from the
    /// TCP connect through the TLS handshake to the end of authentication, for every
    /// PostgreSQL connection (SQL and replication). A server that accepts TCP and never
    /// answers fails the attempt after it (a connection error, retried).
    pub connect_timeout: Duration,
    /// `connection.validation.timeout.ms`: the most the connection check of a validation
    /// (`pgcdc validate`, `PUT .../config/validate`) may take.
    pub validation_timeout: Duration,
    /// `database.query.timeout.ms`: the `statement_timeout` of regular SQL connections (catalog,
    /// heartbeat action, slot monitor), `None` for 0 (no limit); snapshot reads have none.
    pub query_timeout: Option<Duration>,
    /// `database.initial.statements`: SQL run, in order, on every regular SQL connection
    /// (not the replication connection) once it is open.
    pub initial_statements: Vec<String>,
}

impl std::fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("hostname", &self.hostname)
            .field("port", &self.port)
            .field("other_hosts", &self.other_hosts)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[hidden]"))
            .field("dbname", &self.dbname)
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .field("sslcert", &self.sslcert)
            .field("sslkey", &self.sslkey)
            .field(
                "sslpassword",
                &self.sslpassword.as_ref().map(|_| "[hidden]"),
            )
            .field("tcp_keepalive", &self.tcp_keepalive)
            .field("connect_timeout", &self.connect_timeout)
            .field("validation_timeout", &self.validation_timeout)
            .field("query_timeout", &self.query_timeout)
            .field("initial_statements", &self.initial_statements.len())
            .finish()
    }
}

/// Reads the connection settings.
pub(super) fn parse(c: &mut Checker<'_>) -> DatabaseConfig {
    let sslmode = c.choice(
        DATABASE_SSLMODE,
        SslMode::Prefer,
        &[
            ("disable", SslMode::Disable),
            ("allow", SslMode::Allow),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
        ],
    );
    let path = |c: &Checker<'_>, key: &str| c.get(key).filter(|s| !s.is_empty()).map(PathBuf::from);
    let hostnames = c.required(
        DATABASE_HOSTNAME,
        &format!("the PostgreSQL host (or set PGHOST, or --set {DATABASE_HOSTNAME}=...)"),
    );
    let mut hosts = host_list(c, &hostnames).into_iter();
    let (hostname, port) = hosts.next().unwrap_or((hostnames, DEFAULT_PORT));
    let database = DatabaseConfig {
        hostname,
        port,
        other_hosts: hosts.collect(),
        user: c.required(
            DATABASE_USER,
            &format!(
                "a role with LOGIN and REPLICATION (or set PGUSER, or --set {DATABASE_USER}=...)"
            ),
        ),
        password: c.get(DATABASE_PASSWORD).map(str::to_string),
        dbname: c.required(
            DATABASE_DBNAME,
            "the database to capture (or set PGDATABASE)",
        ),
        sslmode,
        sslrootcert: path(c, DATABASE_SSLROOTCERT),
        sslcert: path(c, DATABASE_SSLCERT),
        sslkey: path(c, DATABASE_SSLKEY),
        sslpassword: c
            .get(DATABASE_SSLPASSWORD)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        tcp_keepalive: c.boolean(DATABASE_TCP_KEEP_ALIVE, true),
        query_timeout: Some(c.int(DATABASE_QUERY_TIMEOUT_MS, 600_000u64, 0u64))
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis),
        connect_timeout: Duration::from_millis(c.int(
            DATABASE_CONNECT_TIMEOUT_MS,
            DEFAULT_CONNECT_TIMEOUT_MS,
            1,
        )),
        validation_timeout: Duration::from_millis(c.int(
            CONNECTION_VALIDATION_TIMEOUT_MS,
            DEFAULT_VALIDATION_TIMEOUT_MS,
            1,
        )),
        initial_statements: c
            .get(DATABASE_INITIAL_STATEMENTS)
            .map(split_statements)
            .unwrap_or_default(),
    };
    if database.sslcert.is_some() != database.sslkey.is_some() {
        c.problem(format!(
            "{DATABASE_SSLCERT} and {DATABASE_SSLKEY} must be set together (client certificate and its key)"
        ));
    }
    database
}

/// Splits `database.initial.statements` as Debezium does: `;` ends a statement, `;;` is a
/// semicolon inside one; blank statements are dropped.
pub fn split_statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ';' {
            current.push(c);
        } else if chars.peek() == Some(&';') {
            chars.next();
            current.push(';');
        } else {
            out.push(std::mem::take(&mut current));
        }
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `database.port`: a TCP port from 1 to 65535.
/// The hosts of `database.hostname` (one, or a comma-separated list: pgcdc's extension) with
/// their ports: `database.port` is one port for all, or a list as long as the hosts'.
fn host_list(c: &mut Checker<'_>, hostnames: &str) -> Vec<(String, u16)> {
    let names: Vec<String> = hostnames.split(',').map(|h| h.trim().to_string()).collect();
    if names.len() > 1 && names.iter().any(String::is_empty) {
        c.problem(format!(
            "{DATABASE_HOSTNAME}={hostnames} has an empty host: list hosts separated by commas (host1,host2)"
        ));
    }
    let ports = match c.get(DATABASE_PORT).map(str::trim) {
        None | Some("") => vec![DEFAULT_PORT],
        Some(v) => v.split(',').map(|p| parse_port(c, p.trim())).collect(),
    };
    if ports.len() != 1 && ports.len() != names.len() {
        c.problem(format!(
            "{DATABASE_PORT} lists {} ports for the {} hosts of {DATABASE_HOSTNAME}: give one port for all, or one per host in the same order",
            ports.len(),
            names.len()
        ));
    }
    names
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            (
                h,
                ports
                    .get(i)
                    .or(ports.first())
                    .copied()
                    .unwrap_or(DEFAULT_PORT),
            )
        })
        .collect()
}

fn parse_port(c: &mut Checker<'_>, v: &str) -> u16 {
    v.parse::<u16>()
        .ok()
        .filter(|p| *p >= 1)
        .unwrap_or_else(|| {
            c.problem(format!(
                "{DATABASE_PORT}={v} is invalid: expected a TCP port from 1 to 65535"
            ));
            DEFAULT_PORT
        })
}
