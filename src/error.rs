//! One error type for the whole crate, and the one place that classifies errors.
//!
//! Every failure is an [`Error`] with an [`ErrorKind`]. The kind alone decides what happens
//! next ([`ErrorKind::policy`]): a lost connection is retried (the connector restarts),
//! everything about bad input (config, types, credentials, server settings, refused records)
//! is fatal, because retrying cannot fix it, and each fatal kind says what the operator does.
//!
//! Errors that come from outside are classified here and nowhere else:
//! - SQLSTATE codes from either PostgreSQL connection (the replication connection speaks the
//!   wire protocol itself, the SQL connections use tokio-postgres) and from
//!   `heartbeat.action.query`: one table, [`SQLSTATE_RULES`], read by [`classify_sqlstate`];
//! - I/O errors, by [`std::io::ErrorKind`] and by where they happened (a server connection or
//!   a local file): one table, [`IO_RULES`], read by [`classify_io`].
//!
//! Messages never contain passwords or row values; they name keys, relations, columns, types
//! and LSNs.

use std::fmt;
use std::io;

/// What went wrong, in terms a user can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A configuration key or value is invalid. Fatal.
    Config,
    /// The network or a server connection failed (connect, read, write, TLS), or the server is
    /// going away or not ready yet. Retriable.
    Connection,
    /// Authentication was refused, or an unsupported method was requested. Fatal.
    Auth,
    /// A PostgreSQL server setting or object is not as required (wal_level, slot,
    /// publication, privileges). Fatal.
    Server,
    /// A replication-protocol or pgoutput message could not be decoded. Fatal.
    Protocol,
    /// A column value could not be converted to its Debezium representation. Fatal.
    Conversion,
    /// A single message transform (or its predicate) could not handle a record, such as a
    /// `TimestampRouter` given a record without a timestamp. Fatal.
    Transform,
    /// A SQL statement failed on a regular connection for a reason the server gave. Fatal.
    Sql,
    /// Kafka refused or failed to deliver a record (too large, not authorized, timed out), or
    /// could not be configured. Fatal.
    Kafka,
    /// Another producer took over this connector's `transactional.id` (exactly-once): this
    /// instance stops without writing more. Fatal.
    Fenced,
    /// The schema registry refused a schema (incompatible, invalid, not registered). Fatal.
    Registry,
    /// Local I/O (the offset file). Fatal.
    Io,
    /// pgcdc itself failed (a task ended abnormally). Fatal.
    Internal,
}

/// What the connector does after an error of some kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// `true`: restart the connector (`errors.max.retries`,
    /// `retriable.restart.connector.wait.ms`); `false`: stop with a non-zero exit.
    pub retriable: bool,
    /// What the operator does about a fatal error of this kind, in general; the message
    /// itself names the key, object or value.
    pub fix: &'static str,
    /// The process exit status when an error of this kind stops `pgcdc run`: 78 (sysexits'
    /// `EX_CONFIG`) for a config error and 77 (`EX_NOPERM`) for refused credentials, which no
    /// restart fixes, so a supervisor can stop restarting (systemd's
    /// `RestartPreventExitStatus=77 78`); 1 for every other fatal error.
    pub exit_code: u8,
}

/// Exit status of `pgcdc` for a config error (sysexits' `EX_CONFIG`).
pub const EXIT_CONFIG: u8 = 78;
/// Exit status of `pgcdc` for refused credentials (sysexits' `EX_NOPERM`).
pub const EXIT_AUTH: u8 = 77;

impl ErrorKind {
    /// The error policy of this kind: the single decision point for retry versus stop.
    pub fn policy(self) -> Policy {
        let (retriable, fix) = match self {
            ErrorKind::Connection => (
                true,
                "none needed: pgcdc restarts the connector and resumes from the slot",
            ),
            ErrorKind::Config => (
                false,
                "correct the configuration key the message names, then start again",
            ),
            ErrorKind::Auth => (
                false,
                "correct the credentials the message names: database.user / database.password (and pg_hba.conf) for PostgreSQL, sasl.jaas.config for Kafka, the converter's basic.auth.user.info or bearer.auth.token (Apicurio's: apicurio.auth.username and apicurio.auth.password) for the schema registry",
            ),
            ErrorKind::Server => (
                false,
                "change the server setting or object the message names (pgcdc validate checks the server, the role, the publication and the slot, each with its fix)",
            ),
            ErrorKind::Protocol => (
                false,
                "a message pgcdc cannot decode: report it with the LSN from the message; the slot keeps the change",
            ),
            ErrorKind::Conversion => (
                false,
                "exclude the column (column.exclude.list) or choose another handling mode; the slot keeps the change",
            ),
            ErrorKind::Transform => (
                false,
                "change the transform the message names (transforms.<alias>.*), or give it a predicate so that it only sees the records it can handle; the slot keeps the change",
            ),
            ErrorKind::Sql => (
                false,
                "the statement the message names failed: fix what the server reports (privileges, objects)",
            ),
            ErrorKind::Kafka => (
                false,
                "fix what Kafka reports (topic limits, ACLs, producer settings); nothing past the last acknowledged record was confirmed",
            ),
            ErrorKind::Fenced => (
                false,
                "another pgcdc instance (or Kafka Connect task) with the same transactional.id is running: keep one of them (restarting this one would fence the other in turn)",
            ),
            ErrorKind::Registry => (
                false,
                "make the schema acceptable to the subject the message names (its compatibility level, or register it), or change the converter's subject name strategy; nothing past the last acknowledged record was confirmed",
            ),
            ErrorKind::Io => (
                false,
                "check the path, its directory and its permissions (offset.storage.file.filename)",
            ),
            ErrorKind::Internal => (
                false,
                "a failure inside pgcdc: report it with the log; nothing unacknowledged was confirmed, so a restart resends it",
            ),
        };
        let exit_code = match self {
            ErrorKind::Config => EXIT_CONFIG,
            ErrorKind::Auth => EXIT_AUTH,
            _ => 1,
        };
        Policy {
            retriable,
            fix,
            exit_code,
        }
    }
}

/// SQLSTATE codes that code outside this module tests for by name. Every other code is only
/// ever looked up in [`SQLSTATE_RULES`].
pub mod sqlstate {
    /// `42704 undefined_object` (a slot or publication that does not exist).
    pub const UNDEFINED_OBJECT: &str = "42704";
    /// `55006 object_in_use` (a replication slot another connection holds).
    pub const OBJECT_IN_USE: &str = "55006";
    /// `42883 undefined_function` (also: no binary send function for a type).
    pub const UNDEFINED_FUNCTION: &str = "42883";
}

/// What happens after `heartbeat.action.query` fails, by SQLSTATE. These are Debezium
/// 3.6.1's rules for PostgreSQL, which differ from those of the data connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeartbeatAction {
    /// Stop the connector (fatal).
    Stop,
    /// Restart the connector (retriable).
    Restart,
    /// Log a warning and go on streaming.
    Continue,
}

/// One row of the SQLSTATE table: a five-character code, or a two-character class that
/// matches every code of the class.
#[derive(Debug, Clone, Copy)]
pub struct SqlStateRule {
    /// The code (`57P03`) or class (`08`).
    pub code: &'static str,
    /// The kind of an error with this code on either PostgreSQL connection.
    pub kind: ErrorKind,
    /// What a heartbeat action query failing with this code does.
    pub heartbeat: HeartbeatAction,
    /// The fix, added to the message; empty when the kind's general fix says it all.
    pub fix: &'static str,
}

const fn rule(
    code: &'static str,
    kind: ErrorKind,
    heartbeat: HeartbeatAction,
    fix: &'static str,
) -> SqlStateRule {
    SqlStateRule {
        code,
        kind,
        heartbeat,
        fix,
    }
}

/// The SQLSTATE table, exact codes before classes. A code that matches no row is a
/// [`ErrorKind::Server`] error on the replication connection and at connection start-up,
/// an [`ErrorKind::Sql`] error for a statement, and [`HeartbeatAction::Continue`] for the
/// heartbeat.
pub const SQLSTATE_RULES: &[SqlStateRule] = &[
    rule(
        "28000",
        ErrorKind::Auth,
        HeartbeatAction::Continue,
        "check database.user, and that pg_hba.conf lets it connect to database.dbname from this host (for the replication connection, with the replication keyword or a database entry)",
    ),
    rule(
        "28P01",
        ErrorKind::Auth,
        HeartbeatAction::Continue,
        "check database.password (or PGCDC_DATABASE_PASSWORD / PGPASSWORD)",
    ),
    rule(
        "3D000",
        ErrorKind::Server,
        HeartbeatAction::Continue,
        "check database.dbname: that database does not exist on this server",
    ),
    rule(
        "42501",
        ErrorKind::Server,
        HeartbeatAction::Continue,
        "grant the role what the message names (REPLICATION for slots, SELECT on captured tables, CREATE on the database or ownership of the tables for the publication), or use a role that has it",
    ),
    // Undefined table: Debezium stops the connector when the heartbeat query names one.
    rule("42P01", ErrorKind::Sql, HeartbeatAction::Stop, ""),
    // Admin shutdown: PostgreSQL is stopping or the backend was terminated; reconnecting
    // succeeds once it is back. Debezium stops the connector when the heartbeat sees it.
    rule("57P01", ErrorKind::Connection, HeartbeatAction::Stop, ""),
    // Crash shutdown.
    rule("57P02", ErrorKind::Connection, HeartbeatAction::Continue, ""),
    // Cannot connect now: the server is starting up or in recovery.
    rule("57P03", ErrorKind::Connection, HeartbeatAction::Restart, ""),
    // Too many connections: a slot frees up.
    rule("53300", ErrorKind::Connection, HeartbeatAction::Continue, ""),
    // Object in use: another walsender holds the slot. As when start-up finds the slot
    // active, pgcdc waits for it to free up (restarts), telling the operator who holds it.
    rule(
        "55006",
        ErrorKind::Connection,
        HeartbeatAction::Continue,
        "another connection holds the object (pg_stat_replication shows a slot's client): stop it, or use another slot.name",
    ),
    // Object not in prerequisite state: on the replication connection, most often a slot the
    // server invalidated while it was streamed ("can no longer get changes from replication
    // slot"). Nothing can be read from it again.
    rule(
        "55000",
        ErrorKind::Server,
        HeartbeatAction::Continue,
        "if the message says the replication slot was invalidated (pg_replication_slots shows wal_status=lost, usually max_slot_wal_keep_size), the changes since its position are gone: restart with snapshot.mode=when_needed, which drops it, creates it again and takes a new snapshot",
    ),
    // Connection exceptions.
    rule("08", ErrorKind::Connection, HeartbeatAction::Continue, ""),
];

/// Where a server error arrived: decides the kind of codes the table does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlContext {
    /// Connection start-up or the replication connection.
    Connection,
    /// A statement on a SQL connection.
    Statement,
}

/// The table row for `code`: the exact code first, then its class.
pub fn sqlstate_rule(code: &str) -> Option<&'static SqlStateRule> {
    SQLSTATE_RULES
        .iter()
        .find(|r| r.code.len() == 5 && r.code == code)
        .or_else(|| {
            SQLSTATE_RULES
                .iter()
                .find(|r| r.code.len() == 2 && code.starts_with(r.code))
        })
}

/// The kind and fix of a server error with SQLSTATE `code` (see [`SQLSTATE_RULES`]).
pub fn classify_sqlstate(code: &str, context: SqlContext) -> (ErrorKind, &'static str) {
    match sqlstate_rule(code) {
        Some(r) => (r.kind, r.fix),
        None => match context {
            SqlContext::Connection => (ErrorKind::Server, ""),
            SqlContext::Statement => (ErrorKind::Sql, ""),
        },
    }
}

/// `true` when `SET TRANSACTION SNAPSHOT` failed with `code` because the snapshot is no longer
/// exported: the replication connection that created the slot (and exported it) has ended
/// (22023 "invalid snapshot identifier", or 55000 "the source transaction is not running
/// anymore"). Retrying takes the snapshot again on the slot, which now exists.
pub fn is_lost_exported_snapshot(code: &str) -> bool {
    code == "22023" || code == "55000"
}

/// What a failing `heartbeat.action.query` does: by its SQLSTATE, or, without one (the
/// connection broke), a restart.
pub fn heartbeat_action(code: Option<&str>) -> HeartbeatAction {
    match code {
        None => HeartbeatAction::Restart,
        Some(c) => sqlstate_rule(c).map_or(HeartbeatAction::Continue, |r| r.heartbeat),
    }
}

/// Kafka client errors that retrying cannot fix: librdkafka's error code
/// (`rd_kafka_resp_err_t`), the kind, and the fix. Other client errors (a broker down, a
/// timeout) are connection errors.
pub const KAFKA_CLIENT_RULES: &[(i32, ErrorKind, &str)] = &[
    // RD_KAFKA_RESP_ERR__AUTHENTICATION: SASL authentication failed.
    (-169, ErrorKind::Auth, KAFKA_AUTH_FIX),
    // RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED.
    (58, ErrorKind::Auth, KAFKA_AUTH_FIX),
    // RD_KAFKA_RESP_ERR__SSL: the TLS handshake failed (an untrusted certificate, a host name
    // that does not match, a client certificate the broker refuses).
    (
        -181,
        ErrorKind::Config,
        "check ssl.truststore.location (a PEM file with ssl.truststore.type=PEM) names the CA that signed the brokers' certificates, that the certificates name the host in bootstrap.servers (ssl.endpoint.identification.algorithm= turns that check off), and, when the brokers require one, the client certificate (ssl.keystore.*)",
    ),
];

/// librdkafka codes of a fenced transactional producer: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH
/// and the client's own __FENCED.
pub const KAFKA_FENCED_CODES: &[i32] = &[90, 47, -144];

/// The kind of a record's failed delivery with librdkafka code `code`. librdkafka retries
/// whatever a broker reports as retriable for as long as `delivery.timeout.ms` allows (for
/// ever, by pgcdc's default), so a failed delivery is final: [`ErrorKind::Kafka`], which stops
/// the connector with the fix, as Kafka Connect fails the task (a restart while the old
/// producer's requests may still sit in a stalled broker could land them after newer ones,
/// out of per-key order). The one exception: a `transactional` producer that was fenced is
/// [`ErrorKind::Fenced`] (another instance took over its `transactional.id`).
pub fn classify_kafka_delivery(code: Option<i32>, transactional: bool) -> ErrorKind {
    match code {
        Some(c) if transactional && KAFKA_FENCED_CODES.contains(&c) => ErrorKind::Fenced,
        _ => ErrorKind::Kafka,
    }
}

const KAFKA_AUTH_FIX: &str =
    "check the username and password in sasl.jaas.config and sasl.mechanism, and that the user exists on the brokers with that mechanism";

/// The kind of a schema registry's refusal, by HTTP status: 401 and 403 are refused
/// credentials ([`ErrorKind::Auth`]), everything else a refused schema or subject
/// ([`ErrorKind::Registry`]). (A registry that does not answer, or answers 5xx, is retried by
/// the converter and never reaches this.)
pub fn classify_registry(status: u16) -> ErrorKind {
    match status {
        401 | 403 => ErrorKind::Auth,
        _ => ErrorKind::Registry,
    }
}

/// The kind and fix of a Kafka client error with librdkafka code `code`, when retrying
/// cannot fix it (see [`KAFKA_CLIENT_RULES`]).
pub fn classify_kafka_client(code: i32) -> Option<(ErrorKind, &'static str)> {
    KAFKA_CLIENT_RULES
        .iter()
        .find(|(c, _, _)| *c == code)
        .map(|(_, kind, fix)| (*kind, *fix))
}

/// Where an I/O error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoContext {
    /// A socket to PostgreSQL or Kafka (including TLS on it).
    Network,
    /// A file pgcdc keeps: the offset file.
    File,
    /// A file the configuration names (the config file, certificates and keys): whatever the
    /// I/O error, the configuration has to change, so it is an [`ErrorKind::Config`] error.
    Config,
}

/// One row of the I/O table: a [`io::ErrorKind`] and the kind it becomes on a network
/// connection and on a local file.
#[derive(Debug, Clone, Copy)]
pub struct IoRule {
    /// The I/O error kind.
    pub io: io::ErrorKind,
    /// Its kind on a server connection.
    pub network: ErrorKind,
    /// Its kind on a local file.
    pub file: ErrorKind,
}

const fn io_rule(io: io::ErrorKind, network: ErrorKind, file: ErrorKind) -> IoRule {
    IoRule { io, network, file }
}

/// The I/O table. A kind it does not list is [`ErrorKind::Connection`] on a network
/// connection (a socket error is a broken connection unless this table says otherwise) and
/// [`ErrorKind::Io`] on a file (a file error does not fix itself).
pub const IO_RULES: &[IoRule] = &[
    io_rule(
        io::ErrorKind::ConnectionRefused,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::ConnectionReset,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::ConnectionAborted,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::NotConnected,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::BrokenPipe,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::TimedOut,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::UnexpectedEof,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::Interrupted,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::AddrNotAvailable,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    // A host:port that is not an address (or a name that does not resolve to one) is the
    // configuration's fault, not the network's.
    io_rule(
        io::ErrorKind::InvalidInput,
        ErrorKind::Config,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::NotFound,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(
        io::ErrorKind::PermissionDenied,
        ErrorKind::Connection,
        ErrorKind::Io,
    ),
    io_rule(io::ErrorKind::OutOfMemory, ErrorKind::Io, ErrorKind::Io),
];

/// The kind of an I/O error of kind `io` that happened in `context` (see [`IO_RULES`]).
pub fn classify_io(io: io::ErrorKind, context: IoContext) -> ErrorKind {
    let row = IO_RULES.iter().find(|r| r.io == io);
    match (row, context) {
        (_, IoContext::Config) => ErrorKind::Config,
        (Some(r), IoContext::Network) => r.network,
        (Some(r), IoContext::File) => r.file,
        (None, IoContext::Network) => ErrorKind::Connection,
        (None, IoContext::File) => ErrorKind::Io,
    }
}

/// The crate's error: a kind, a one-line message, and an optional cause.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with a human-readable `message` (no secrets, no row values).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// An error from a server-reported SQLSTATE `code`: kind and fix from [`SQLSTATE_RULES`];
    /// the fix, when the table has one, ends the message in parentheses.
    pub fn from_sqlstate(code: &str, context: SqlContext, message: impl Into<String>) -> Self {
        let (kind, fix) = classify_sqlstate(code, context);
        let mut message = message.into();
        if !fix.is_empty() {
            message.push_str(&format!(" ({fix})"));
        }
        Error::new(kind, message)
    }

    /// An error from an I/O failure in `context`, described by `message` (what was being
    /// done, on which server or file); kind from [`IO_RULES`], the I/O error as its cause.
    pub fn io(e: io::Error, context: IoContext, message: impl Into<String>) -> Self {
        Error::new(classify_io(e.kind(), context), message).with_source(e)
    }

    /// An I/O failure on a server connection (socket or TLS).
    pub fn network_io(e: io::Error) -> Self {
        Error::io(e, IoContext::Network, "I/O error on a server connection")
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Prefixes the message with `context` (kind and cause are kept).
    pub fn with_context(mut self, context: &str) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// Shorthand for [`ErrorKind::Config`].
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }
    /// Shorthand for [`ErrorKind::Connection`].
    pub fn connection(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Connection, message)
    }
    /// Shorthand for [`ErrorKind::Protocol`].
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Protocol, message)
    }
    /// Shorthand for [`ErrorKind::Server`].
    pub fn server(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Server, message)
    }
    /// Shorthand for [`ErrorKind::Conversion`].
    pub fn conversion(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conversion, message)
    }
    /// Shorthand for [`ErrorKind::Transform`].
    pub fn transform(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Transform, message)
    }
    /// Shorthand for [`ErrorKind::Kafka`].
    pub fn kafka(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Kafka, message)
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without its causes.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error-policy decision ([`ErrorKind::policy`]): `true` when restarting the
    /// connector may succeed (a broken connection), `false` when it cannot.
    pub fn is_retriable(&self) -> bool {
        self.kind.policy().retriable
    }

    /// The message (which may span lines, as a list of config problems does) followed by
    /// every cause.
    pub fn report(&self) -> String {
        let mut out = self.message.clone();
        let mut cur: Option<&(dyn std::error::Error + 'static)> = self
            .source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static));
        while let Some(e) = cur {
            let text = e.to_string();
            if !text.is_empty() && !out.contains(&text) {
                out.push_str(": ");
                out.push_str(&text);
            }
            cur = e.source();
        }
        out
    }

    /// A copy of this error: the same kind, with [`Error::report`] as its message (the causes
    /// become text). For a failure kept where several readers see it (the ack tracker).
    pub fn copy(&self) -> Error {
        Error::new(self.kind, self.report())
    }

    /// The message followed by every cause, on one line (for the CLI's exit message).
    pub fn one_line(&self) -> String {
        self.report().replace('\n', " ")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// A statement or connection error from tokio-postgres (the SQL connections): a server
/// error by its SQLSTATE ([`SqlContext::Statement`]); an I/O failure by [`IO_RULES`]; any
/// other failure (closed connection, timeout, unexpected message) is a broken connection.
impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        if let Some(db) = e.as_db_error() {
            let message = format!("PostgreSQL error {}: {}", db.code().code(), db.message());
            return Error::from_sqlstate(db.code().code(), SqlContext::Statement, message)
                .with_source(e);
        }
        let io_kind = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<io::Error>())
            .map(io::Error::kind);
        let kind = match io_kind {
            Some(k) => classify_io(k, IoContext::Network),
            None => ErrorKind::Connection,
        };
        Error::new(kind, "PostgreSQL connection error").with_source(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_exported_snapshot_is_told_from_other_import_errors() {
        assert!(is_lost_exported_snapshot("22023"));
        assert!(is_lost_exported_snapshot("55000"));
        // Permission or syntax problems are not retried.
        assert!(!is_lost_exported_snapshot("42501"));
        assert!(!is_lost_exported_snapshot("42601"));
    }

    #[test]
    fn only_connection_errors_are_retried_and_every_fatal_kind_names_a_fix() {
        use ErrorKind::*;
        for kind in [
            Config, Connection, Auth, Server, Protocol, Conversion, Transform, Sql, Kafka, Io,
            Internal,
        ] {
            let p = kind.policy();
            assert_eq!(p.retriable, kind == Connection, "{kind:?}");
            assert!(!p.fix.is_empty(), "{kind:?} has no fix");
        }
    }

    #[test]
    fn sqlstates_are_classified_the_same_on_every_connection() {
        for context in [SqlContext::Connection, SqlContext::Statement] {
            // The server starting up, stopping or out of connection slots: retried.
            for code in [
                "57P01", "57P02", "57P03", "53300", "55006", "08006", "08001",
            ] {
                assert_eq!(
                    classify_sqlstate(code, context).0,
                    ErrorKind::Connection,
                    "{code} {context:?}"
                );
            }
            assert_eq!(classify_sqlstate("28P01", context).0, ErrorKind::Auth);
            assert_eq!(classify_sqlstate("28000", context).0, ErrorKind::Auth);
            assert_eq!(classify_sqlstate("42501", context).0, ErrorKind::Server);
        }
        // Codes the table does not list: fatal, labelled by where they came from.
        assert_eq!(
            classify_sqlstate("55000", SqlContext::Connection).0,
            ErrorKind::Server
        );
        assert_eq!(
            classify_sqlstate("22P02", SqlContext::Statement).0,
            ErrorKind::Sql
        );
    }

    #[test]
    fn table_fixes_end_the_message() {
        let e = Error::from_sqlstate(
            "28P01",
            SqlContext::Connection,
            "password authentication failed",
        );
        assert_eq!(e.kind(), ErrorKind::Auth);
        assert!(
            e.message()
                .ends_with("(check database.password (or PGCDC_DATABASE_PASSWORD / PGPASSWORD))"),
            "{}",
            e.message()
        );
        let e = Error::from_sqlstate("57P03", SqlContext::Statement, "not yet");
        assert_eq!(e.message(), "not yet");
        assert!(e.is_retriable());
    }

    #[test]
    fn heartbeat_failures_follow_debeziums_rules() {
        assert_eq!(heartbeat_action(Some("57P01")), HeartbeatAction::Stop);
        assert_eq!(heartbeat_action(Some("42P01")), HeartbeatAction::Stop);
        assert_eq!(heartbeat_action(Some("57P03")), HeartbeatAction::Restart);
        assert_eq!(heartbeat_action(None), HeartbeatAction::Restart);
        assert_eq!(heartbeat_action(Some("23505")), HeartbeatAction::Continue);
        assert_eq!(heartbeat_action(Some("08006")), HeartbeatAction::Continue);
    }

    #[test]
    fn io_errors_are_retried_on_sockets_and_fatal_on_files() {
        for kind in [
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::UnexpectedEof,
            io::ErrorKind::TimedOut,
            io::ErrorKind::Other,
        ] {
            assert_eq!(classify_io(kind, IoContext::Network), ErrorKind::Connection);
            assert_eq!(classify_io(kind, IoContext::File), ErrorKind::Io);
        }
        assert_eq!(
            classify_io(io::ErrorKind::InvalidInput, IoContext::Network),
            ErrorKind::Config
        );
        assert_eq!(
            classify_io(io::ErrorKind::NotFound, IoContext::Config),
            ErrorKind::Config
        );
        let e = Error::network_io(io::Error::from(io::ErrorKind::ConnectionReset));
        assert!(e.is_retriable());
        let e = Error::io(
            io::Error::from(io::ErrorKind::PermissionDenied),
            IoContext::File,
            "cannot write offset file o.json",
        );
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(!e.is_retriable());
    }

    #[test]
    fn exact_codes_win_over_their_class() {
        assert_eq!(sqlstate_rule("57P03").map(|r| r.code), Some("57P03"));
        assert_eq!(sqlstate_rule("08P01").map(|r| r.code), Some("08"));
        assert!(sqlstate_rule("99999").is_none());
    }

    #[test]
    fn only_config_and_credential_errors_have_their_own_exit_status() {
        assert_eq!(ErrorKind::Config.policy().exit_code, EXIT_CONFIG);
        assert_eq!(ErrorKind::Auth.policy().exit_code, EXIT_AUTH);
        for kind in [
            ErrorKind::Connection,
            ErrorKind::Server,
            ErrorKind::Protocol,
            ErrorKind::Conversion,
            ErrorKind::Transform,
            ErrorKind::Sql,
            ErrorKind::Kafka,
            ErrorKind::Io,
            ErrorKind::Internal,
        ] {
            assert_eq!(kind.policy().exit_code, 1, "{kind:?}");
        }
    }

    #[test]
    fn a_failed_delivery_stops_with_the_fix_or_as_fenced_by_its_code() {
        // MSG_TIMED_OUT, MSG_SIZE_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED, a retriable broker
        // code that outlived the retries, unknown codes: final, fatal with the fix.
        for code in [Some(-192), Some(10), Some(29), Some(6), Some(12345), None] {
            assert_eq!(
                classify_kafka_delivery(code, false),
                ErrorKind::Kafka,
                "{code:?}"
            );
            assert_eq!(
                classify_kafka_delivery(code, true),
                ErrorKind::Kafka,
                "{code:?}"
            );
        }
        for code in [90, 47, -144] {
            assert_eq!(classify_kafka_delivery(Some(code), true), ErrorKind::Fenced);
            // No transactional.id to be fenced on: an idempotent producer's epoch error.
            assert_eq!(classify_kafka_delivery(Some(code), false), ErrorKind::Kafka);
        }
        assert!(!ErrorKind::Kafka.policy().retriable);
        let fenced = ErrorKind::Fenced.policy();
        assert!(!fenced.retriable && fenced.fix.contains("transactional.id"));
    }

    #[test]
    fn a_copy_keeps_the_kind_and_the_causes_as_text() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let e = Error::network_io(io);
        let copy = e.copy();
        assert_eq!(copy.kind(), e.kind());
        assert_eq!(copy.report(), e.report());
        assert!(copy.report().contains("reset by peer"));
    }
}
