//! Sinks: where records go. The Kafka sink sees topics, partitions, key and value bytes,
//! headers and ack tokens, never PostgreSQL types.

pub mod kafka;
