//! The source side: PostgreSQL connections, the replication protocol, the pgoutput decoder,
//! the relation cache, value parsing, publication/slot management and snapshots.
//!
//! Nothing here knows about Kafka, converters or transforms.

pub mod client_key;
pub mod columns;
pub mod pgoutput;
pub mod preflight;
pub mod relation;
pub mod schema_capture;
pub mod setup;
pub mod snapshot;
pub mod sql;
pub mod stream;
pub mod streamed;
pub mod tls;
pub mod types;
pub mod wire;

/// PostgreSQL's epoch (2000-01-01 00:00 UTC) minus the Unix epoch, in microseconds: add it to
/// a protocol timestamp (µs since 2000) to get µs since 1970.
pub const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;

/// The error of a connection attempt that took longer than `pgcdc.database.connect.timeout.ms`
/// (`what`: `SQL` or `replication`): a connection error, so the connector retries.
pub(crate) fn connect_timed_out(
    db: &crate::config::DatabaseConfig,
    what: &str,
) -> crate::error::Error {
    crate::error::Error::connection(format!(
        "timed out after {} ms opening a {what} connection to PostgreSQL at {}:{} (TCP connect, TLS handshake and authentication; pgcdc.database.connect.timeout.ms): the server accepts connections but does not answer (overloaded, out of connection slots, or a network device drops its replies?)",
        db.connect_timeout.as_millis(),
        db.hostname,
        db.port
    ))
}
