//! The change-event model: Kafka Connect schemas and values, the Debezium envelope and the
//! records handed to transforms, converters and the sink.
//!
//! Nothing here does I/O. The source side ([`crate::pg`]) produces [`ChangeEvent`]s;
//! [`envelope::change_records`] turns each into one to three [`ConnectRecord`]s (change,
//! tombstone, and the delete/create pair of a primary-key change), shaped exactly as
//! Debezium's PostgreSQL connector shapes them.

pub mod envelope;
pub mod meta;
pub mod schema;
pub mod schema_change;
pub mod signal;
pub mod value;

use std::sync::Arc;

use crate::lsn::Lsn;

pub use schema::{Field, Schema, SchemaType};
pub use value::Value;

/// The Debezium release whose output format pgcdc reproduces; written in `source.version`.
pub const DEBEZIUM_VERSION: &str = "3.6.1.Final";

/// A captured table as seen by converters and transforms: names, topic and schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct TableDescriptor {
    /// Schema (namespace) name.
    pub schema: Arc<str>,
    /// Table name.
    pub table: Arc<str>,
    /// Data topic, `<prefix>.<schema>.<table>` sanitised.
    pub topic: Arc<str>,
    /// `<topic>.Key` struct schema, or `None` for a table without a key.
    pub key_schema: Option<Arc<Schema>>,
    /// The regex topic naming strategies' last key field's value (the physical table), which
    /// every key of the table ends with; `None` otherwise.
    pub key_extra: Option<Arc<str>>,
    /// `<topic>.Value` struct schema (optional), one field per column.
    pub row_schema: Arc<Schema>,
    /// `<topic>.Envelope` schema, version 2.
    pub envelope_schema: Arc<Schema>,
}

/// Operation of a change event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Snapshot read (`r`).
    Read,
    /// INSERT (`c`).
    Create,
    /// UPDATE (`u`).
    Update,
    /// DELETE (`d`).
    Delete,
    /// TRUNCATE (`t`).
    Truncate,
}

impl Op {
    /// The one-letter code in the envelope's `op` field.
    pub fn code(self) -> &'static str {
        match self {
            Op::Read => "r",
            Op::Create => "c",
            Op::Update => "u",
            Op::Delete => "d",
            Op::Truncate => "t",
        }
    }
}

/// The `source` block of an event (Debezium's `io.debezium.connector.postgresql.Source`).
#[derive(Debug, Clone, PartialEq)]
pub struct SourceInfo {
    /// `name`: the topic prefix.
    pub name: Arc<str>,
    /// `db`: the database name.
    pub db: Arc<str>,
    /// Commit time (streaming) or snapshot start (snapshot), µs since the Unix epoch.
    pub ts_us: i64,
    /// `snapshot` marker (`true`, `first`, `last`, ...); `None` while streaming (JSON shows the
    /// schema default `"false"`).
    pub snapshot: Option<&'static str>,
    /// `sequence`: `[last commit LSN, this event's LSN]` as a JSON array of decimal strings.
    pub sequence: Option<String>,
    /// `txId`.
    pub tx_id: Option<i64>,
    /// `lsn` (written as the decimal `u64`).
    pub lsn: Option<Lsn>,
    /// `xmin`: the slot's `catalog_xmin` as last read (`xmin.fetch.interval.ms`; `None` when
    /// off, and in snapshot records).
    pub xmin: Option<i64>,
    /// `origin`: replication origin of the transaction.
    pub origin: Option<String>,
    /// `origin_lsn` (written as the decimal `u64`).
    pub origin_lsn: Option<Lsn>,
}

/// One captured change (or snapshot row) before it becomes Kafka records.
#[derive(Debug, Clone)]
pub struct ChangeEvent {
    /// The table and its schemas.
    pub table: Arc<TableDescriptor>,
    /// Operation.
    pub op: Op,
    /// Key values of the emitted image (`None` for a keyless table).
    pub key: Option<Vec<Value>>,
    /// Key values of the old image, when it differs from `key` (a primary-key change).
    pub old_key: Option<Vec<Value>>,
    /// Row before the change, per replica identity.
    pub before: Option<Vec<Value>>,
    /// Row after the change.
    pub after: Option<Vec<Value>>,
    /// Source block.
    pub source: SourceInfo,
}

/// A record header; the value is rendered by the header converter.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Header key.
    pub key: Arc<str>,
    /// Header schema.
    pub schema: Arc<Schema>,
    /// Header value.
    pub value: Value,
}

/// A Kafka Connect source record: what transforms see and converters serialise.
#[derive(Debug, Clone)]
pub struct ConnectRecord {
    /// Topic.
    pub topic: Arc<str>,
    /// Explicit partition; `None` lets the key hash decide.
    pub partition: Option<i32>,
    /// Key schema (`None` with `key: None` is a Kafka null key).
    pub key_schema: Option<Arc<Schema>>,
    /// Key value.
    pub key: Option<Value>,
    /// Value schema (`None` with `value: None` is a tombstone).
    pub value_schema: Option<Arc<Schema>>,
    /// Value.
    pub value: Option<Value>,
    /// Headers in order.
    pub headers: Vec<Header>,
    /// Record timestamp in ms; `None` lets the producer set it.
    pub timestamp: Option<i64>,
    /// The table the record came from, for transforms that decide per table.
    pub table: Option<Arc<TableDescriptor>>,
    /// `op` of the change this record belongs to (a tombstone carries its delete's `d`);
    /// `None` for records that are not change events (logical messages).
    pub op: Option<Op>,
}

pub use crate::util::{topic_name_problem, MAX_TOPIC_LENGTH};

/// Replaces every character outside `[A-Za-z0-9._-]` with `_`, as Debezium's topic naming does.
/// The length is kept: a name over [`MAX_TOPIC_LENGTH`] is refused by [`check_topic_name`]
/// rather than cut, since two cut names can be the same.
pub fn sanitize_topic(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.as_str() {
        "." => "_".into(),
        ".." => "__".into(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_kafka_refuses_are_named_and_never_cut() {
        assert_eq!(topic_name_problem("a.b-c_D9"), None);
        assert_eq!(topic_name_problem(&"x".repeat(249)), None);
        let long = "x".repeat(250);
        assert!(topic_name_problem(&long)
            .unwrap()
            .contains("250 characters"));
        assert_eq!(
            sanitize_topic(&long).len(),
            250,
            "sanitising keeps the length"
        );
        assert!(topic_name_problem("a b").unwrap().contains("' '"));
        assert!(topic_name_problem("..").is_some() && topic_name_problem("").is_some());
        assert_eq!(sanitize_topic("s.t a"), "s.t_a");
    }
}
