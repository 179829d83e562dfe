//! The Debezium envelope: schemas of `source` and `<topic>.Envelope`, and the records made
//! from one change event (change, tombstone, primary-key change split).

use crate::util::NameAdjustment;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{
    sanitize_topic, ChangeEvent, ConnectRecord, Field, Header, Op, Schema, SchemaType, SourceInfo,
    TableDescriptor, Value, DEBEZIUM_VERSION,
};

/// Allowed values of `source.snapshot`, in Debezium's order.
pub const SNAPSHOT_ALLOWED: &str =
    "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental";

/// The `io.debezium.connector.postgresql.Source` schema (version 1, 16 fields).
pub fn source_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        use SchemaType::*;
        let f = |name: &str, ty: SchemaType, optional: bool| {
            Field::new(name, Schema::new(ty, optional))
        };
        let mut snapshot = Schema::new(String, true)
            .named("io.debezium.data.Enum")
            .param("allowed", SNAPSHOT_ALLOWED);
        snapshot.default = Some(Value::String("false".into()));
        let mut s = Schema::structure(
            "io.debezium.connector.postgresql.Source",
            false,
            vec![
                f("version", String, false),
                f("connector", String, false),
                f("name", String, false),
                f("ts_ms", Int64, false),
                Field::new("snapshot", snapshot),
                f("db", String, false),
                f("sequence", String, true),
                f("ts_us", Int64, true),
                f("ts_ns", Int64, true),
                f("schema", String, false),
                f("table", String, false),
                f("txId", Int64, true),
                f("lsn", Int64, true),
                f("xmin", Int64, true),
                f("origin", String, true),
                f("origin_lsn", Int64, true),
            ],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// The `event.block` transaction schema (optional, version 1).
pub fn transaction_block_schema() -> Schema {
    let mut s = Schema::structure(
        "event.block",
        true,
        vec![
            Field::new("id", Schema::new(SchemaType::String, false)),
            Field::new("total_order", Schema::new(SchemaType::Int64, false)),
            Field::new(
                "data_collection_order",
                Schema::new(SchemaType::Int64, false),
            ),
        ],
    );
    s.version = Some(1);
    s
}

/// Builds a table's descriptor: topic `<prefix><d><schema><d><table>` (sanitised) and the
/// Key, Value and Envelope schemas. `columns` are (name, field schema with optionality and
/// default); `key` lists indices into `columns`.
pub fn table_descriptor(
    prefix: &str,
    delimiter: &str,
    schema_name: &str,
    table_name: &str,
    columns: &[(String, Schema)],
    key: &[usize],
) -> TableDescriptor {
    let key_fields: Vec<(String, Schema)> = key.iter().map(|&i| columns[i].clone()).collect();
    table_descriptor_from_fields(
        TableNames {
            prefix,
            delimiter,
            schema_name,
            table_name,
            schema_names: NameAdjustment::None,
            naming: &crate::util::TopicNaming::default(),
        },
        columns,
        &key_fields,
    )
}

/// What names a table's topic and schemas.
#[derive(Debug, Clone, Copy)]
pub struct TableNames<'a> {
    /// `topic.prefix`.
    pub prefix: &'a str,
    /// `topic.delimiter`.
    pub delimiter: &'a str,
    /// The table's schema (namespace).
    pub schema_name: &'a str,
    /// The table's name.
    pub table_name: &'a str,
    /// `schema.name.adjustment.mode`, applied to the Key, Value and Envelope names.
    pub schema_names: NameAdjustment,
    /// `topic.naming.strategy`.
    pub naming: &'a crate::util::TopicNaming,
}

/// Like [`table_descriptor`], with the value fields and the key fields given apart (the
/// value may leave out key columns, and its field schemas may carry mapper parameters that
/// the key's do not). An empty `key_fields` is a table without a key.
pub fn table_descriptor_from_fields(
    names: TableNames<'_>,
    value_fields: &[(String, Schema)],
    key_fields: &[(String, Schema)],
) -> TableDescriptor {
    let TableNames {
        prefix,
        delimiter,
        schema_name,
        table_name,
        schema_names,
        naming,
    } = names;
    let topic = naming.data_topic(prefix, delimiter, schema_name, table_name);
    let schema_base = schema_names.schema(&topic);
    let row_fields: Vec<Field> = value_fields
        .iter()
        .map(|(n, s)| Field::new(n.clone(), s.clone()))
        .collect();
    let row_schema = Arc::new(Schema::structure(
        format!("{schema_base}.Value"),
        true,
        row_fields,
    ));
    let key_schema = if key_fields.is_empty() {
        None
    } else {
        let fields = key_fields
            .iter()
            .map(|(n, s)| Field::new(n.clone(), s.clone()))
            .collect();
        Some(Arc::new(Schema::structure(
            format!("{schema_base}.Key"),
            false,
            fields,
        )))
    };
    let envelope_schema = Arc::new(envelope_schema(&schema_base, &row_schema));
    TableDescriptor {
        schema: Arc::from(schema_name),
        table: Arc::from(table_name),
        topic: Arc::from(topic.as_str()),
        key_schema,
        key_extra: None,
        row_schema,
        envelope_schema,
    }
}

/// `<topic>.Envelope`, version 2: before, after, source, transaction, op, ts_ms, ts_us, ts_ns.
pub fn envelope_schema(topic: &str, row: &Schema) -> Schema {
    let mut s = Schema::structure(
        format!("{topic}.Envelope"),
        false,
        vec![
            Field::new("before", row.clone()),
            Field::new("after", row.clone()),
            Field::new("source", (**source_schema()).clone()),
            Field::new("transaction", transaction_block_schema()),
            Field::new("op", Schema::new(SchemaType::String, false)),
            Field::new("ts_ms", Schema::new(SchemaType::Int64, true)),
            Field::new("ts_us", Schema::new(SchemaType::Int64, true)),
            Field::new("ts_ns", Schema::new(SchemaType::Int64, true)),
        ],
    );
    s.version = Some(2);
    s
}

/// The source block as a struct value.
pub fn source_value(source: &SourceInfo, table: &TableDescriptor) -> Value {
    let opt_i = |v: Option<i64>| v.map(Value::Int).unwrap_or(Value::Null);
    static CONSTANTS: OnceLock<(Arc<str>, Arc<str>)> = OnceLock::new();
    let (version, connector) =
        CONSTANTS.get_or_init(|| (Arc::from(DEBEZIUM_VERSION), Arc::from("postgresql")));
    Value::Struct(vec![
        Value::Shared(version.clone()),
        Value::Shared(connector.clone()),
        Value::Shared(source.name.clone()),
        Value::Int(source.ts_us.div_euclid(1000)),
        source
            .snapshot
            .map(|s| Value::String(s.into()))
            .unwrap_or(Value::Null),
        Value::Shared(source.db.clone()),
        source
            .sequence
            .clone()
            .map(Value::String)
            .unwrap_or(Value::Null),
        Value::Int(source.ts_us),
        Value::Int(source.ts_us.saturating_mul(1000)),
        Value::Shared(table.schema.clone()),
        Value::Shared(table.table.clone()),
        opt_i(source.tx_id),
        opt_i(source.lsn.map(|l| l.0 as i64)),
        opt_i(source.xmin),
        source
            .origin
            .clone()
            .map(Value::String)
            .unwrap_or(Value::Null),
        opt_i(source.origin_lsn.map(|l| l.0 as i64)),
    ])
}

/// Settings that shape the records of an event.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// `tombstones.on.delete`.
    pub tombstones_on_delete: bool,
    /// `__debezium.context.*` headers, in order; empty when `extended.headers.enabled=false`.
    pub context_headers: Vec<Header>,
}

impl RecordOptions {
    /// Options with the four extended context headers for `prefix` and this run's `run_id`.
    pub fn new(
        tombstones_on_delete: bool,
        extended_headers: bool,
        prefix: &str,
        run_id: &str,
    ) -> Self {
        let string = Arc::new(Schema::new(SchemaType::String, false));
        let h = |k: &str, v: &str| Header {
            key: k.into(),
            schema: string.clone(),
            value: Value::String(v.into()),
        };
        let context_headers = if extended_headers {
            vec![
                h("__debezium.context.connectorLogicalName", prefix),
                h("__debezium.context.taskId", "0"),
                h("__debezium.context.connectorName", "postgresql"),
                h("__debezium.context.runId", run_id),
            ]
        } else {
            Vec::new()
        };
        RecordOptions {
            tombstones_on_delete,
            context_headers,
        }
    }
}

/// Current time in ns since the Unix epoch.
pub fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn envelope_value(source: Value, op: Op, before: Value, after: Value, now_ns: i64) -> Value {
    Value::Struct(vec![
        before,
        after,
        source,
        Value::Null,
        Value::Shared(op_code(op)),
        Value::Int(now_ns / 1_000_000),
        Value::Int(now_ns / 1_000),
        Value::Int(now_ns),
    ])
}

/// The `op` codes as shared strings, so that envelopes do not allocate them.
fn op_code(op: Op) -> Arc<str> {
    static CODES: OnceLock<[Arc<str>; 5]> = OnceLock::new();
    let codes = CODES.get_or_init(|| ["r", "c", "u", "d", "t"].map(Arc::from));
    codes[match op {
        Op::Read => 0,
        Op::Create => 1,
        Op::Update => 2,
        Op::Delete => 3,
        Op::Truncate => 4,
    }]
    .clone()
}

fn row(v: Option<Vec<Value>>) -> Value {
    v.map(Value::Struct).unwrap_or(Value::Null)
}

/// Turns one change event into its records, in order:
/// - `c`, `u`, `r`: one record;
/// - `d`: the delete, then a tombstone (same key, null value) when `tombstones.on.delete`;
/// - `u` whose key changed: delete (header `__debezium.newkey`), tombstone, create (header
///   `__debezium.oldkey`), all with the same source block;
/// - `t`: one record with a null key.
///
/// The event is consumed: its row images move into the records.
pub fn change_records(ev: ChangeEvent, opts: &RecordOptions) -> Vec<ConnectRecord> {
    let now = now_nanos();
    let source = source_value(&ev.source, &ev.table);
    let table = ev.table;
    let base = |op: Op, key: Option<Value>, value: Option<Value>, extra: Option<Header>| {
        let mut headers = Vec::with_capacity(opts.context_headers.len() + 1);
        headers.extend(extra);
        headers.extend(opts.context_headers.iter().cloned());
        ConnectRecord {
            topic: table.topic.clone(),
            partition: None,
            key_schema: if key.is_some() {
                table.key_schema.clone()
            } else {
                None
            },
            key,
            value_schema: value.as_ref().map(|_| table.envelope_schema.clone()),
            value,
            headers,
            timestamp: None,
            table: Some(table.clone()),
            op: Some(op),
        }
    };
    let key = ev.key.map(Value::Struct);
    let mut out = Vec::with_capacity(3);
    match ev.op {
        Op::Update if ev.old_key.is_some() && ev.old_key.as_ref() != key_values(&key) => {
            let old_key = ev.old_key.map(Value::Struct);
            let key_schema = table
                .key_schema
                .clone()
                .unwrap_or_else(|| Arc::new(Schema::new(SchemaType::Struct, true)));
            let newkey_header = Header {
                key: Arc::from("__debezium.newkey"),
                schema: key_schema.clone(),
                value: key.clone().unwrap_or(Value::Null),
            };
            let oldkey_header = Header {
                key: Arc::from("__debezium.oldkey"),
                schema: key_schema,
                value: old_key.clone().unwrap_or(Value::Null),
            };
            let delete_value =
                envelope_value(source.clone(), Op::Delete, row(ev.before), Value::Null, now);
            out.push(base(
                Op::Delete,
                old_key.clone(),
                Some(delete_value),
                Some(newkey_header.clone()),
            ));
            if opts.tombstones_on_delete {
                out.push(base(Op::Delete, old_key, None, Some(newkey_header)));
            }
            let create_value = envelope_value(source, Op::Create, Value::Null, row(ev.after), now);
            out.push(base(
                Op::Create,
                key,
                Some(create_value),
                Some(oldkey_header),
            ));
        }
        Op::Delete => {
            let value = envelope_value(source, Op::Delete, row(ev.before), Value::Null, now);
            out.push(base(Op::Delete, key.clone(), Some(value), None));
            if opts.tombstones_on_delete {
                out.push(base(Op::Delete, key, None, None));
            }
        }
        Op::Truncate => {
            let value = envelope_value(source, Op::Truncate, Value::Null, Value::Null, now);
            out.push(base(Op::Truncate, None, Some(value), None));
        }
        op => {
            let value = envelope_value(source, op, row(ev.before), row(ev.after), now);
            out.push(base(op, key, Some(value), None));
        }
    }
    out
}

fn key_values(key: &Option<Value>) -> Option<&Vec<Value>> {
    match key {
        Some(Value::Struct(v)) => Some(v),
        _ => None,
    }
}

/// Key schema of logical-message records (`io.debezium.connector.postgresql.MessageKey`).
pub fn message_key_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        let mut s = Schema::structure(
            "io.debezium.connector.postgresql.MessageKey",
            false,
            vec![Field::new("prefix", Schema::new(SchemaType::String, true))],
        );
        s.version = Some(1);
        Arc::new(s)
    })
}

/// Value schema of logical-message records (`io.debezium.connector.postgresql.MessageValue`):
/// op, ts_ms, source, transaction, message{prefix, content}. `content_as_string` is true when
/// `binary.handling.mode` encodes bytes as text.
pub fn message_value_schema(content_as_string: bool) -> Arc<Schema> {
    let content = Schema::new(
        if content_as_string {
            SchemaType::String
        } else {
            SchemaType::Bytes
        },
        true,
    );
    let mut message = Schema::structure(
        "io.debezium.connector.postgresql.Message",
        false,
        vec![
            Field::new("prefix", Schema::new(SchemaType::String, true)),
            Field::new("content", content),
        ],
    );
    message.version = Some(1);
    let mut s = Schema::structure(
        "io.debezium.connector.postgresql.MessageValue",
        false,
        vec![
            Field::new("op", Schema::new(SchemaType::String, false)),
            Field::new("ts_ms", Schema::new(SchemaType::Int64, true)),
            Field::new("source", (**source_schema()).clone()),
            Field::new("transaction", transaction_block_schema()),
            Field::new("message", message),
        ],
    );
    s.version = Some(1);
    Arc::new(s)
}

/// The record of a logical decoding message (`pg_logical_emit_message`): topic
/// `<prefix>.message` (the suffix ignores `topic.delimiter`), key `{prefix}`, no headers.
/// `source` carries empty schema and table names.
pub fn message_record(
    topic_prefix: &str,
    source: &SourceInfo,
    prefix: &str,
    content: Value,
    value_schema: Arc<Schema>,
) -> ConnectRecord {
    let table = TableDescriptor {
        schema: Arc::from(""),
        table: Arc::from(""),
        topic: Arc::from(""),
        key_schema: None,
        key_extra: None,
        row_schema: Arc::new(Schema::new(SchemaType::Struct, true)),
        envelope_schema: value_schema.clone(),
    };
    let now = now_nanos();
    ConnectRecord {
        topic: Arc::from(sanitize_topic(&format!("{topic_prefix}.message"))),
        partition: None,
        key_schema: Some(message_key_schema().clone()),
        key: Some(Value::Struct(vec![Value::String(prefix.to_string())])),
        value_schema: Some(value_schema),
        value: Some(Value::Struct(vec![
            Value::String("m".into()),
            Value::Int(now / 1_000_000),
            source_value(source, &table),
            Value::Null,
            Value::Struct(vec![Value::String(prefix.to_string()), content]),
        ])),
        headers: Vec::new(),
        timestamp: None,
        table: None,
        op: None,
    }
}
