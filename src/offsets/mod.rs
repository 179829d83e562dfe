//! Progress tracking: which LSN may be confirmed to PostgreSQL, and the offset file.
//!
//! The [`ack::AckTracker`] is the heart of invariant 1 (no committed change is lost): the LSN
//! reported as flushed is the end LSN of the newest transaction whose records, and those of
//! every transaction before it, Kafka has acknowledged. Enqueued is not acknowledged; only a
//! delivery report is.

pub mod ack;
pub mod incremental;
pub mod initial;
pub mod java_keys;
pub mod store;
