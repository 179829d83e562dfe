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
//! Layers, bottom up (`docs/architecture.md` has the dependency rule, which
//! `architecture.rs` checks on every `cargo test`):
//! - [`error`]: the one error type and the one classifier (SQLSTATEs, I/O errors, retry
//!   policy); [`lsn`]: the LSN type; [`util`]: quoting, whole-name regexes, hex.
//! - [`config`]: connector JSON / properties, the key registry, validation.
//! - [`event`]: Connect schemas and values, the Debezium envelope.
//! - [`offsets`]: the ack tracker and the offset file.
//! - [`pg`]: connections, replication protocol, pgoutput, relations, types, snapshot reads.
//! - [`convert`]: JsonConverter, the Avro converter (Confluent's wire format) and header
//!   rendering.
//! - [`registry`]: the schema registry client (Confluent's REST API), used by the pipeline to
//!   obtain the ids of the Avro converter's schemas.
//! - [`transform`]: transform chains with predicates: the outbox EventRouter,
//!   ExtractNewRecordState, RegexRouter.
//! - [`sink`]: the [`sink::Sink`] seam, the Kafka producer and an in-memory sink.
//! - [`pipeline`]: wires everything together: the [`pipeline::Connector`], the start-up
//!   plan, the snapshot, the processor and the main loop.
//! - [`worker`]: the connectors of one process by name, with their target states (running,
//!   paused, stopped), their stored configs (`pgcdc serve`) and offsets management.
//! - [`rest`]: Kafka Connect's REST API over the worker, `/metrics` and `/health`.

#![warn(missing_docs)]

pub mod config;
pub mod convert;
pub mod error;
pub mod event;
pub mod lsn;
pub mod offsets;
pub mod pg;
pub mod pipeline;
pub mod registry;
pub mod rest;
pub mod sink;
pub mod transform;
pub mod util;
pub mod worker;

#[cfg(test)]
mod architecture;
#[cfg(test)]
mod docs_links;

pub use error::{Error, ErrorKind, Result};
