//! One error type for the whole crate, and the one place that classifies errors.
//!
//! Every failure is an [`Error`] with an [`ErrorKind`]. [`Error::is_retriable`] is the single
//! decision point for "restart the pipeline and try again" versus "stop with a non-zero exit":
//! lost connections are retriable, everything about bad input (config, types, identifiers,
//! server settings) is fatal because retrying cannot fix it.
//!
//! Messages never contain passwords or row values; they name keys, relations, columns, types
//! and LSNs.

use std::fmt;

/// What went wrong, in terms a user can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A configuration key or value is invalid. Fatal.
    Config,
    /// The network or a server connection failed (connect, read, write, TLS). Retriable.
    Connection,
    /// Authentication was refused, or an unsupported method was requested. Fatal.
    Auth,
    /// A PostgreSQL server setting or object is not as required (wal_level, slot, publication). Fatal.
    Server,
    /// A replication-protocol or pgoutput message could not be decoded. Fatal.
    Protocol,
    /// A column value could not be converted to its Debezium representation. Fatal.
    Conversion,
    /// A SQL statement failed on the regular connection. Retriable when the connection broke.
    Sql,
    /// Kafka refused or failed to deliver a record, or could not be configured. Fatal.
    Kafka,
    /// Local I/O (offset file). Fatal.
    Io,
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

    /// The error-policy decision: `true` when restarting the pipeline may succeed
    /// (a broken connection), `false` when it cannot (bad config, bad data, lost slot).
    pub fn is_retriable(&self) -> bool {
        match self.kind {
            ErrorKind::Connection => true,
            ErrorKind::Sql => self
                .source
                .as_ref()
                .and_then(|s| s.downcast_ref::<tokio_postgres::Error>())
                .map(|e| e.is_closed() || e.as_db_error().is_none())
                .unwrap_or(false),
            _ => false,
        }
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

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        let message = match e.as_db_error() {
            Some(db) => format!("PostgreSQL error {}: {}", db.code().code(), db.message()),
            None => "PostgreSQL connection error".to_string(),
        };
        let kind = if e.as_db_error().is_none() {
            ErrorKind::Connection
        } else {
            ErrorKind::Sql
        };
        Error::new(kind, message).with_source(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Connection, "I/O error on a server connection").with_source(e)
    }
}
