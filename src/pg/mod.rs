//! The source side: PostgreSQL connections, the replication protocol, the pgoutput decoder,
//! the relation cache, value parsing, publication/slot management and snapshots.
//!
//! Nothing here knows about Kafka, converters or transforms.

pub mod columns;
pub mod lsn;
pub mod pgoutput;
pub mod relation;
pub mod setup;
pub mod snapshot;
pub mod sql;
pub mod stream;
pub mod tls;
pub mod types;
pub mod wire;
