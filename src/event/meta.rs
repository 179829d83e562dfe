//! Records that are not row changes: transaction metadata (BEGIN/END on the transaction
//! topic, and the `transaction` block of each event) and heartbeats.
//!
//! Shapes are Debezium 3.6.1's (`SchemaFactory`, `AbstractTransactionStructMaker`,
//! `PostgresTransactionMonitor`, `HeartbeatImpl`):
//! - transaction key `io.debezium.connector.common.TransactionMetadataKey` v1 `{id}`;
//! - transaction value `io.debezium.connector.common.TransactionMetadataValue` v1
//!   `{status, id, event_count?, data_collections?[event.collection], ts_ms}`;
//! - the PostgreSQL transaction id is `"<xid>:<lsn>"`, with the LSN of the message the record
//!   is made from (BEGIN, the change, or COMMIT);
//! - heartbeat key `io.debezium.connector.common.ServerNameKey` v1 `{serverName}` and value
//!   `io.debezium.connector.common.Heartbeat` v1 `{ts_ms}`, always on partition 0.
//!
//! Neither kind carries the `__debezium.context.*` headers: Debezium adds those only to
//! change events.

use std::sync::{Arc, OnceLock};

use super::{ConnectRecord, Field, Schema, SchemaType, Value};
use crate::lsn::Lsn;
use crate::util::{java_hash_map_order, JAVA_HASH_MAP_INITIAL_CAPACITY};

/// The data collection name Debezium gives a logical decoding message in transaction
/// metadata (its `LogicalDecodingMessageId.identifier()`).
pub const LOGICAL_MESSAGE_COLLECTION: &str = "LOGICAL_DECODING_MESSAGE";

/// `io.debezium.connector.common.TransactionMetadataKey`, version 1: `{id: string}`.
pub fn transaction_key_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        let mut s = Schema::structure(
            "io.debezium.connector.common.TransactionMetadataKey",
            false,
            vec![Field::new("id", Schema::new(SchemaType::String, false))],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// `io.debezium.connector.common.TransactionMetadataValue`, version 1.
pub fn transaction_value_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        let mut collection = Schema::structure(
            "event.collection",
            true,
            vec![
                Field::new("data_collection", Schema::new(SchemaType::String, false)),
                Field::new("event_count", Schema::new(SchemaType::Int64, false)),
            ],
        );
        collection.version = Some(1);
        let mut s = Schema::structure(
            "io.debezium.connector.common.TransactionMetadataValue",
            false,
            vec![
                Field::new("status", Schema::new(SchemaType::String, false)),
                Field::new("id", Schema::new(SchemaType::String, false)),
                Field::new("event_count", Schema::new(SchemaType::Int64, true)),
                Field::new("data_collections", Schema::array(collection, true)),
                Field::new("ts_ms", Schema::new(SchemaType::Int64, false)),
            ],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// The counters of one open transaction, as Debezium's `TransactionContext` keeps them.
#[derive(Debug, Clone)]
pub struct TransactionCounters {
    total: i64,
    /// Data collections in first-seen order with their event counts. A logical decoding
    /// message is a collection of its own each time (Debezium makes a new id per message).
    collections: Vec<(String, i64)>,
    /// Table size of Debezium's per-collection `HashMap`. The map is cleared, never shrunk,
    /// between transactions, so the size carries over from earlier transactions of the run.
    capacity: usize,
}

impl Default for TransactionCounters {
    fn default() -> Self {
        Self::with_capacity(JAVA_HASH_MAP_INITIAL_CAPACITY)
    }
}

impl TransactionCounters {
    /// Counters whose map starts with table size `capacity` (a power of two >= 16).
    pub fn with_capacity(capacity: usize) -> Self {
        TransactionCounters {
            total: 0,
            collections: Vec::new(),
            capacity: capacity.max(JAVA_HASH_MAP_INITIAL_CAPACITY),
        }
    }

    /// The map's table size now (to carry into the next transaction).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Doubles the table size as `HashMap` does once it holds more than 3/4 of it.
    fn grow(&mut self) {
        while self.collections.len() * 4 > self.capacity * 3 {
            self.capacity *= 2;
        }
    }

    /// Counts one event of `collection` (`schema.table`) and returns
    /// `(total_order, data_collection_order)`, both 1-based.
    pub fn table_event(&mut self, collection: &str) -> (i64, i64) {
        self.total += 1;
        let order = match self.collections.iter_mut().find(|(c, _)| c == collection) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                self.collections.push((collection.to_string(), 1));
                self.grow();
                1
            }
        };
        (self.total, order)
    }

    /// Counts one transactional logical decoding message: always data collection order 1.
    pub fn message_event(&mut self) -> (i64, i64) {
        self.total += 1;
        self.collections
            .push((LOGICAL_MESSAGE_COLLECTION.to_string(), 1));
        self.grow();
        (self.total, 1)
    }

    /// Events counted so far.
    pub fn total(&self) -> i64 {
        self.total
    }

    /// `data_collections` entries in the order Debezium's `HashMap` iterates them.
    pub fn collections_in_java_order(&self) -> Vec<(&str, i64)> {
        let order = java_hash_map_order(
            self.collections.iter().map(|(c, _)| c.as_str()),
            self.capacity,
        );
        order
            .into_iter()
            .map(|i| (self.collections[i].0.as_str(), self.collections[i].1))
            .collect()
    }
}

/// `"<xid>:<lsn>"`, the PostgreSQL transaction id of a metadata record or event.
pub fn transaction_id(xid: u32, lsn: Lsn) -> String {
    format!("{xid}:{}", lsn.0)
}

/// The `transaction` block of an event (`event.block`): `{id, total_order,
/// data_collection_order}`.
pub fn transaction_block(id: String, total_order: i64, data_collection_order: i64) -> Value {
    Value::Struct(vec![
        Value::String(id),
        Value::Int(total_order),
        Value::Int(data_collection_order),
    ])
}

/// Puts `block` (see [`transaction_block`]) into the `transaction` field of `record`'s value:
/// a change event's envelope or a logical message's value. Records whose value has no such
/// field (tombstones, metadata records) are left as they are.
pub fn set_transaction_block(record: &mut ConnectRecord, block: Value) {
    let index = record
        .value_schema
        .as_ref()
        .and_then(|s| s.field_index("transaction"));
    if let (Some(i), Some(Value::Struct(fields))) = (index, record.value.as_mut()) {
        if let Some(slot) = fields.get_mut(i) {
            *slot = block;
        }
    }
}

/// A BEGIN record on `topic`: `event_count` and `data_collections` null, `ts_ms` the commit
/// time in ms.
pub fn begin_record(topic: &Arc<str>, id: String, ts_ms: i64) -> ConnectRecord {
    metadata_record(topic, "BEGIN", id, Value::Null, Value::Null, ts_ms)
}

/// An END record on `topic` with the transaction's counters.
pub fn end_record(
    topic: &Arc<str>,
    id: String,
    ts_ms: i64,
    counters: &TransactionCounters,
) -> ConnectRecord {
    let collections = counters
        .collections_in_java_order()
        .into_iter()
        .map(|(c, n)| Value::Struct(vec![Value::String(c.to_string()), Value::Int(n)]))
        .collect();
    metadata_record(
        topic,
        "END",
        id,
        Value::Int(counters.total()),
        Value::Array(collections),
        ts_ms,
    )
}

fn metadata_record(
    topic: &Arc<str>,
    status: &str,
    id: String,
    event_count: Value,
    data_collections: Value,
    ts_ms: i64,
) -> ConnectRecord {
    ConnectRecord {
        topic: topic.clone(),
        partition: None,
        key_schema: Some(transaction_key_schema().clone()),
        key: Some(Value::Struct(vec![Value::String(id.clone())])),
        value_schema: Some(transaction_value_schema().clone()),
        value: Some(Value::Struct(vec![
            Value::String(status.to_string()),
            Value::String(id),
            event_count,
            data_collections,
            Value::Int(ts_ms),
        ])),
        headers: Vec::new(),
        timestamp: None,
        table: None,
        op: None,
    }
}

/// `io.debezium.connector.common.ServerNameKey`, version 1: `{serverName: string}`.
pub fn heartbeat_key_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        let mut s = Schema::structure(
            "io.debezium.connector.common.ServerNameKey",
            false,
            vec![Field::new(
                "serverName",
                Schema::new(SchemaType::String, false),
            )],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// `io.debezium.connector.common.Heartbeat`, version 1: `{ts_ms: int64}`.
pub fn heartbeat_value_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        let mut s = Schema::structure(
            "io.debezium.connector.common.Heartbeat",
            false,
            vec![Field::new("ts_ms", Schema::new(SchemaType::Int64, false))],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// A heartbeat record on `topic`, partition 0: key `{serverName: topic.prefix}`, value
/// `{ts_ms: now_ms}` (wall-clock ms).
pub fn heartbeat_record(topic: &Arc<str>, server_name: &str, now_ms: i64) -> ConnectRecord {
    ConnectRecord {
        topic: topic.clone(),
        partition: Some(0),
        key_schema: Some(heartbeat_key_schema().clone()),
        key: Some(Value::Struct(vec![Value::String(server_name.to_string())])),
        value_schema: Some(heartbeat_value_schema().clone()),
        value: Some(Value::Struct(vec![Value::Int(now_ms)])),
        headers: Vec::new(),
        timestamp: None,
        table: None,
        op: None,
    }
}

/// `io.debezium.connector.common.NotificationKey`, version 1: `{id: string}`.
pub fn notification_key_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        let mut s = Schema::structure(
            "io.debezium.connector.common.NotificationKey",
            false,
            vec![Field::new("id", Schema::new(SchemaType::String, false))],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// `io.debezium.connector.common.Notification`, version 1: `{id, type, aggregate_type:
/// string, additional_data: optional map<string, string>, timestamp: int64}`.
pub fn notification_value_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        let string = || Schema::new(SchemaType::String, false);
        let mut map = Schema::new(SchemaType::Map, true);
        map.keys = Some(Box::new(string()));
        map.items = Some(Box::new(string()));
        let mut s = Schema::structure(
            "io.debezium.connector.common.Notification",
            false,
            vec![
                Field::new("id", string()),
                Field::new("type", string()),
                Field::new("aggregate_type", string()),
                Field::new("additional_data", map),
                Field::new("timestamp", Schema::new(SchemaType::Int64, false)),
            ],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// One of Debezium's notifications (`io.debezium.pipeline.notification.Notification`), as
/// its sink channel writes it to Kafka and its log channel writes it to the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// A random UUID.
    pub id: String,
    /// `aggregate_type`, such as `Initial Snapshot`.
    pub aggregate_type: &'static str,
    /// `type`, such as `STARTED` or `TABLE_SCAN_COMPLETED`.
    pub kind: &'static str,
    /// `additional_data`, in the iteration order of the Java `HashMap` Debezium builds.
    pub additional_data: Vec<(&'static str, String)>,
    /// `timestamp`: wall-clock ms since the Unix epoch.
    pub timestamp_ms: i64,
}

impl Notification {
    /// A notification whose additional data is `data` plus `connector_name` (the topic
    /// prefix), ordered as Debezium's `new HashMap<>(data)` followed by a `put` of
    /// `connector_name` iterates.
    pub fn new(
        aggregate_type: &'static str,
        kind: &'static str,
        data: Vec<(&'static str, String)>,
        connector_name: &str,
        id: String,
        timestamp_ms: i64,
    ) -> Notification {
        let capacity = match data.len() {
            0 => JAVA_HASH_MAP_INITIAL_CAPACITY,
            n => (n * 4).div_ceil(3).next_power_of_two(),
        };
        let mut entries = data;
        entries.push(("connector_name", connector_name.to_string()));
        let order = crate::util::java_hash_map_order_from(entries.iter().map(|e| e.0), capacity);
        let mut slots: Vec<Option<(&'static str, String)>> =
            entries.into_iter().map(Some).collect();
        let additional_data = order.into_iter().filter_map(|i| slots[i].take()).collect();
        Notification {
            id,
            aggregate_type,
            kind,
            additional_data,
            timestamp_ms,
        }
    }

    /// The sink channel's record on `topic`: key `{id}`, the value struct, no partition
    /// (the key decides it).
    pub fn record(&self, topic: &Arc<str>) -> ConnectRecord {
        let data = self
            .additional_data
            .iter()
            .map(|(k, v)| (Value::String((*k).into()), Value::String(v.clone())))
            .collect();
        ConnectRecord {
            topic: topic.clone(),
            partition: None,
            key_schema: Some(notification_key_schema().clone()),
            key: Some(Value::Struct(vec![Value::String(self.id.clone())])),
            value_schema: Some(notification_value_schema().clone()),
            value: Some(Value::Struct(vec![
                Value::String(self.id.clone()),
                Value::String(self.kind.into()),
                Value::String(self.aggregate_type.into()),
                Value::Map(data),
                Value::Int(self.timestamp_ms),
            ])),
            headers: Vec::new(),
            timestamp: None,
            table: None,
            op: None,
        }
    }

    /// The log channel's text: Debezium's `Notification.toString()`.
    pub fn log_text(&self) -> String {
        let data: Vec<String> = self
            .additional_data
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!(
            "{{id='{}', aggregateType='{}', type='{}', additionalData={{{}}}, timestamp={}}}",
            self.id,
            self.aggregate_type,
            self.kind,
            data.join(", "),
            self.timestamp_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::json::JsonConverter;
    use crate::util::java_string_hash;

    #[test]
    fn java_string_hash_matches_known_values() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(java_string_hash("s1.a"), 3_474_577);
    }

    #[test]
    fn hash_map_order_is_by_bucket_then_insertion() {
        // Buckets (16 slots): "s1.a" -> 4, "s2.a" -> 7, "hello" -> 11.
        assert_eq!(
            java_hash_map_order(["hello", "s2.a", "s1.a"].iter().copied(), 16),
            vec![2, 1, 0]
        );
        // "public.t" is in bucket 5 of 16 but 21 of 32: after "s2.a" (7) in a bigger map.
        assert_eq!(
            java_hash_map_order(["public.t", "s2.a"].iter().copied(), 16),
            vec![0, 1]
        );
        assert_eq!(
            java_hash_map_order(["public.t", "s2.a"].iter().copied(), 32),
            vec![1, 0]
        );
        // 13 entries make a 16-slot map grow to 32, and the size carries over.
        let mut c = TransactionCounters::default();
        for i in 0..13 {
            c.table_event(&format!("t{i}"));
        }
        assert_eq!(c.capacity(), 32);
        let mut next = TransactionCounters::with_capacity(c.capacity());
        next.table_event("public.t");
        next.table_event("s2.a");
        assert_eq!(
            next.collections_in_java_order(),
            vec![("s2.a", 1), ("public.t", 1)]
        );
        // Two keys in the same bucket keep insertion order.
        let same = ["Aa", "BB"]; // equal Java hash codes
        assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
        assert_eq!(java_hash_map_order(same.iter().copied(), 16), vec![0, 1]);
        assert_eq!(
            java_hash_map_order(["BB", "Aa"].iter().copied(), 16),
            vec![0, 1]
        );
    }

    #[test]
    fn end_record_value_prints_as_debezium() {
        let mut c = TransactionCounters::default();
        assert_eq!(c.table_event("s1.a"), (1, 1));
        assert_eq!(c.table_event("s2.a"), (2, 1));
        assert_eq!(c.table_event("s1.a"), (3, 2));
        let r = end_record(&Arc::from("p.transaction"), "771:100".into(), 5, &c);
        let mut out = Vec::new();
        JsonConverter::new(false).serialize(r.value_schema.as_ref(), r.value.as_ref(), &mut out);
        let s = String::from_utf8(out).unwrap();
        let s1 = r#"{"data_collection":"s1.a","event_count":2}"#;
        let s2 = r#"{"data_collection":"s2.a","event_count":1}"#;
        let cols = format!("{s1},{s2}");
        assert_eq!(
            s,
            format!(
                r#"{{"status":"END","id":"771:100","event_count":3,"data_collections":[{cols}],"ts_ms":5}}"#
            )
        );
    }

    #[test]
    fn heartbeat_schema_prints_as_debezium() {
        let r = heartbeat_record(&Arc::from("__debezium-heartbeat.p"), "p", 7);
        let mut out = Vec::new();
        JsonConverter::new(true).serialize(r.key_schema.as_ref(), r.key.as_ref(), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1},"payload":{"serverName":"p"}}"#
        );
        let mut out = Vec::new();
        JsonConverter::new(true).serialize(r.value_schema.as_ref(), r.value.as_ref(), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1},"payload":{"ts_ms":7}}"#
        );
    }

    #[test]
    fn notifications_order_their_data_as_debeziums_hash_map_and_print_as_it_does() {
        let n = Notification::new(
            "Initial Snapshot",
            "TABLE_SCAN_COMPLETED",
            vec![
                ("scanned_collection", "public.t".into()),
                ("data_collections", "public.t".into()),
                ("total_rows_scanned", "3".into()),
                ("status", "SUCCEEDED".into()),
            ],
            "srv",
            "00000000-0000-4000-8000-000000000000".into(),
            7,
        );
        // Four entries size Debezium's map at 8 buckets; the five keys fall, by their Java
        // string hashes, into this order.
        let keys: Vec<&str> = n.additional_data.iter().map(|e| e.0).collect();
        let mut want: Vec<(&str, u32)> = keys
            .iter()
            .map(|k| {
                let h = java_string_hash(k) as u32;
                (*k, (h ^ (h >> 16)) & 7)
            })
            .collect();
        want.sort_by_key(|e| e.1);
        assert_eq!(keys, want.iter().map(|e| e.0).collect::<Vec<_>>());
        assert_eq!(keys.len(), 5);
        let started =
            Notification::new("Initial Snapshot", "STARTED", vec![], "srv", "x".into(), 7);
        assert_eq!(
            started.log_text(),
            "{id='x', aggregateType='Initial Snapshot', type='STARTED', additionalData={connector_name=srv}, timestamp=7}"
        );
        let r = started.record(&Arc::from("notes"));
        let mut out = Vec::new();
        JsonConverter::new(true).serialize(r.key_schema.as_ref(), r.key.as_ref(), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"}],"optional":false,"name":"io.debezium.connector.common.NotificationKey","version":1},"payload":{"id":"x"}}"#
        );
    }
}
