//! Record builders for transform unit tests: real change records (as the pipeline makes them)
//! for a table described by its columns, and their JsonConverter rendering.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::TransformConfig;
use crate::convert::RecordConverter;
use crate::event::envelope::{change_records, table_descriptor, RecordOptions};
use crate::event::{
    ChangeEvent, ConnectRecord, Op, Schema, SchemaType, SourceInfo, TableDescriptor, Value,
};

use super::{build_chain, Stage};

/// A column of `ty`, optional or not.
pub fn col(name: &str, ty: SchemaType, optional: bool) -> (String, Schema) {
    (name.to_string(), Schema::new(ty, optional))
}

/// The outbox row of the Debezium unit tests: `struct{id:string, aggregatetype:string,
/// aggregateid:string, type:string, payload:string, is_deleted:boolean?}`.
pub fn outbox_columns() -> Vec<(String, Schema)> {
    vec![
        col("id", SchemaType::String, false),
        col("aggregatetype", SchemaType::String, false),
        col("aggregateid", SchemaType::String, false),
        col("type", SchemaType::String, false),
        col("payload", SchemaType::String, true),
        col("is_deleted", SchemaType::Boolean, true),
    ]
}

/// The descriptor of table `<schema>.<table>` under prefix `db`, keyed by its first column.
pub fn table(schema: &str, name: &str, columns: Vec<(String, Schema)>) -> Arc<TableDescriptor> {
    Arc::new(table_descriptor("db", ".", schema, name, &columns, &[0]))
}

/// String value.
pub fn s(v: &str) -> Value {
    Value::String(v.into())
}

/// The records the pipeline makes for one change (`tombstones.on.delete=true`, extended
/// headers on, run id `run`), with `ts_ms` of the envelope forced to `ts_ms`.
pub fn records(
    t: &Arc<TableDescriptor>,
    op: Op,
    before: Option<Vec<Value>>,
    after: Option<Vec<Value>>,
    ts_ms: i64,
) -> Vec<ConnectRecord> {
    let image = after
        .as_ref()
        .or(before.as_ref())
        .cloned()
        .unwrap_or_default();
    let ev = ChangeEvent {
        table: t.clone(),
        op,
        key: Some(vec![image.first().cloned().unwrap_or(Value::Null)]),
        old_key: None,
        before,
        after,
        source: SourceInfo {
            name: Arc::from("db"),
            db: Arc::from("postgres"),
            ts_us: 1_700_000_000_123_456,
            snapshot: None,
            sequence: Some("[null,\"100\"]".into()),
            tx_id: Some(777),
            lsn: Some(crate::lsn::Lsn(100)),
            origin: None,
            origin_lsn: None,
            xmin: None,
        },
    };
    let opts = RecordOptions::new(true, true, "db", "run");
    let mut out = change_records(ev, &opts);
    for r in &mut out {
        if let (Some(schema), Some(Value::Struct(vs))) = (&r.value_schema, &mut r.value) {
            if let Some(i) = schema.field_index("ts_ms") {
                vs[i] = Value::Int(ts_ms);
            }
        }
    }
    out
}

/// The single record of an insert of `row`.
pub fn insert(t: &Arc<TableDescriptor>, row: Vec<Value>) -> ConnectRecord {
    records(t, Op::Create, None, Some(row), 1_700_000_000_999).remove(0)
}

/// Parses `pairs` as `transforms.<alias>.*` keys of a one-transform chain (plus any
/// `predicates*` keys) and builds the chain; panics on config problems.
pub fn chain(pairs: &[(&str, &str)]) -> Vec<Stage> {
    build_chain(&configs(pairs).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{}", e.message()))
}

/// The transform configs of `pairs` (keys as in a connector config), checked as a connector
/// config and with every transform's and predicate's options; or the config error.
pub fn configs(pairs: &[(&str, &str)]) -> Result<Vec<TransformConfig>, String> {
    let mut raw: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in [
        (
            "connector.class",
            "io.debezium.connector.postgresql.PostgresConnector",
        ),
        ("database.hostname", "localhost"),
        ("database.user", "u"),
        ("database.dbname", "postgres"),
        ("topic.prefix", "db"),
        ("bootstrap.servers", "localhost:9092"),
    ] {
        raw.insert(k.into(), v.into());
    }
    for (k, v) in pairs {
        raw.insert(k.to_string(), v.to_string());
    }
    let (c, mut problems, warnings) = crate::config::ConnectorConfig::parse(&raw);
    problems.extend(super::validate(&c.transforms, &c.predicates).0);
    if problems.is_empty() {
        Ok(c.transforms)
    } else {
        Err(crate::config::invalid_config(&problems, &warnings)
            .message()
            .to_string())
    }
}

/// An EventRouter stage under alias `outbox` with `opts` (option names without prefix).
pub fn router(opts: &[(&str, &str)]) -> Vec<Stage> {
    let mut pairs = vec![
        ("transforms".to_string(), "outbox".to_string()),
        (
            "transforms.outbox.type".to_string(),
            super::EVENT_ROUTER.to_string(),
        ),
    ];
    for (k, v) in opts {
        pairs.push((format!("transforms.outbox.{k}"), v.to_string()));
    }
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    chain(&refs)
}

/// JsonConverter output of a record: (key, value) as text, `None` for Kafka nulls.
pub fn render(r: &ConnectRecord, schemas: bool) -> (Option<String>, Option<String>) {
    let mut c = RecordConverter::new(schemas, schemas);
    let k = c.convert(r).expect("JSON conversion");
    let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
    (text(k.key), text(k.value))
}

/// The header `name` rendered by the SimpleHeaderConverter (`Some(None)` for a null value).
pub fn header(r: &ConnectRecord, name: &str) -> Option<Option<String>> {
    r.headers.iter().find(|h| &*h.key == name).map(|h| {
        crate::convert::header::render(&h.schema, &h.value)
            .map(|b| String::from_utf8(b.into_owned()).unwrap())
    })
}

/// Header names in order.
pub fn header_names(r: &ConnectRecord) -> Vec<String> {
    r.headers.iter().map(|h| h.key.to_string()).collect()
}

/// Runs `chain` over `records`, collecting survivors (errors panic).
pub fn run(chain: &mut [Stage], records: Vec<ConnectRecord>) -> Vec<ConnectRecord> {
    records
        .into_iter()
        .filter_map(|r| super::apply_chain(chain, r).unwrap())
        .collect()
}
