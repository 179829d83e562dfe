//! # pgcdc
//!
//! Streams PostgreSQL changes into Kafka as Debezium change events. It reads a logical
//! replication slot with the built-in `pgoutput` plugin, turns every committed row change into
//! the record Debezium's PostgreSQL connector would produce (same topic, key, value, headers
//! and partition), and publishes it with `acks=all`.
//!
//! ```text
//! Postgres ──replication conn (CopyBoth)──▶ pgoutput decoder ──▶ relation cache + value parser
//!    ▲                                                                   │
//!    │ standby status: flush LSN = last fully-acked commit               ▼
//!    │                                                     change event (internal model)
//!    │                                                                   │
//!    └──────── ack tracker ◀── delivery reports ◀── Kafka producer ◀── transforms ◀── converter
//! ```
//!
//! ## Invariants
//! 1. **Ack-gated progress**: the LSN confirmed to PostgreSQL is the end LSN of the newest
//!    transaction whose records, and those of all before it, Kafka has acknowledged
//!    ([`offsets::ack`]).
//! 2. **Liveness under backpressure**: status updates go out on a timer even while the socket
//!    is not read ([`pg::stream`]).
//! 3. **Ordering**: same key, same partition (murmur2, as the Java client), commit order
//!    ([`sink::kafka`]).
//! 4. **Bounded memory**: every queue is bounded by records and bytes.
//! 5. **Deterministic bytes**: the same row gives the same key and value bytes as Debezium's
//!    JsonConverter ([`convert::json`]).
//! 6. **No silent loss or skip**: unknown types, unparseable values, a lost slot or a refused
//!    record stop the connector with an error that names the problem.
//!
//! ## Modules
//! - [`config`]: connector JSON / properties, key policy, validation.
//! - [`pg`]: connections, replication protocol, pgoutput, relations, types, snapshot.
//! - [`event`]: Connect schemas and values, the Debezium envelope.
//! - [`convert`]: JsonConverter and header rendering.
//! - [`transform`]: transform chains with predicates: the outbox EventRouter, ExtractNewRecordState, RegexRouter.
//! - [`sink`]: the Kafka producer.
//! - [`offsets`]: ack tracker and offset file.
//! - [`pipeline`]: wires everything together.

#![warn(missing_docs)]

pub mod config;
pub mod convert;
pub mod error;
pub mod event;
pub mod lsn;
pub mod offsets;
pub mod pg;
pub mod pipeline;
pub mod sink;
pub mod transform;
pub mod util;

pub use error::{Error, ErrorKind, Result};
