//! The source side: PostgreSQL connections, the replication protocol, the pgoutput decoder,
//! the relation cache, value parsing, publication/slot management and snapshots.
//!
//! Nothing here knows about Kafka, converters or transforms.

pub mod client_key;
pub mod columns;
pub mod pgoutput;
pub mod preflight;
pub mod relation;
pub mod setup;
pub mod snapshot;
pub mod sql;
pub mod stream;
pub mod tls;
pub mod types;
pub mod wire;

/// PostgreSQL's epoch (2000-01-01 00:00 UTC) minus the Unix epoch, in microseconds: add it to
/// a protocol timestamp (µs since 2000) to get µs since 1970.
pub const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;
