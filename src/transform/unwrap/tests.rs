//! ExtractNewRecordState as Debezium 3.6.1 runs it: delete handling modes, added fields and
//! headers, routing by a column.

use std::sync::Arc;

use crate::event::{Op, SchemaType, TableDescriptor, Value};
use crate::transform::testutil::*;
use crate::transform::Stage;

/// The table the unwrap tests use: `public.customers (id int4 NOT NULL, name text)`.
pub(super) fn t() -> Arc<TableDescriptor> {
    table(
        "public",
        "customers",
        vec![
            col("id", SchemaType::Int32, false),
            col("name", SchemaType::String, true),
        ],
    )
}

/// An ExtractNewRecordState chain under alias `unwrap` with `opts` (option names without
/// prefix).
pub(super) fn unwrap(opts: &[(&str, &str)]) -> Vec<Stage> {
    let mut pairs = vec![
        ("transforms".to_string(), "unwrap".to_string()),
        (
            "transforms.unwrap.type".to_string(),
            crate::transform::EXTRACT_NEW_RECORD_STATE.to_string(),
        ),
    ];
    for (k, v) in opts {
        pairs.push((format!("transforms.unwrap.{k}"), v.to_string()));
    }
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    chain(&refs)
}

fn row(id: i64, name: &str) -> Vec<Value> {
    vec![Value::Int(id), s(name)]
}

fn values(
    chain: &mut [Stage],
    recs: Vec<crate::event::ConnectRecord>,
    schemas: bool,
) -> Vec<Option<String>> {
    run(chain, recs)
        .iter()
        .map(|r| render(r, schemas).1)
        .collect()
}

#[test]
fn inserts_become_the_after_row_with_a_required_schema() {
    let mut c = unwrap(&[]);
    let out = values(
        &mut c,
        records(&t(), Op::Create, None, Some(row(1, "a")), 1),
        true,
    );
    assert_eq!(
        out,
        [Some(
            r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"}],"optional":false,"name":"db.public.customers.Value"},"payload":{"id":1,"name":"a"}}"#.into())]
    );
}

#[test]
fn delete_tombstone_handling_modes() {
    let del = || records(&t(), Op::Delete, Some(row(1, "a")), None, 1);
    // tombstone (default): the delete keeps the row schema with a null value; the tombstone goes.
    assert_eq!(
        values(&mut unwrap(&[]), del(), true),
        [Some(
            r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"}],"optional":true,"name":"db.public.customers.Value"},"payload":null}"#.into())]
    );
    assert_eq!(
        values(&mut unwrap(&[]), del(), false),
        [Some("null".into())]
    );
    assert!(run(
        &mut unwrap(&[("delete.tombstone.handling.mode", "drop")]),
        del()
    )
    .is_empty());
    let out = run(
        &mut unwrap(&[("delete.tombstone.handling.mode", "delete-to-tombstone")]),
        del(),
    );
    assert_eq!(out.len(), 1);
    assert!(out[0].value.is_none() && out[0].value_schema.is_none());
    assert_eq!(render(&out[0], false).0.as_deref(), Some(r#"{"id":1}"#));
    assert_eq!(
        values(
            &mut unwrap(&[("delete.tombstone.handling.mode", "rewrite")]),
            del(),
            false
        ),
        [Some(r#"{"id":1,"name":"a","__deleted":"true"}"#.into())]
    );
    let out = values(
        &mut unwrap(&[("delete.tombstone.handling.mode", "rewrite-with-tombstone")]),
        del(),
        false,
    );
    assert_eq!(
        out,
        [
            Some(r#"{"id":1,"name":"a","__deleted":"true"}"#.into()),
            None
        ]
    );
    assert_eq!(
        values(
            &mut unwrap(&[("delete.tombstone.handling.mode", "rewrite")]),
            records(&t(), Op::Create, None, Some(row(2, "b")), 1),
            true,
        ),
        [Some(
            r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"},{"type":"string","optional":true,"field":"__deleted"}],"optional":false,"name":"db.public.customers.Value"},"payload":{"id":2,"name":"b","__deleted":"false"}}"#.into())]
    );
}

#[test]
fn add_fields_and_headers_with_prefixes_and_aliases() {
    let mut c = unwrap(&[
        (
            "add.fields",
            "op,table, source.lsn:pos,ts_ms,transaction.id",
        ),
        ("add.headers", "op,db"),
        ("add.headers.prefix", "h_"),
    ]);
    let out = run(
        &mut c,
        records(&t(), Op::Create, None, Some(row(1, "a")), 42),
    );
    assert_eq!(
        render(&out[0], true).1.as_deref(),
        Some(
            r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"},{"type":"string","optional":true,"field":"__op"},{"type":"string","optional":true,"field":"__table"},{"type":"int64","optional":true,"field":"__pos"},{"type":"int64","optional":true,"field":"__ts_ms"},{"type":"string","optional":true,"field":"__transaction_id"}],"optional":false,"name":"db.public.customers.Value"},"payload":{"id":1,"name":"a","__op":"c","__table":"customers","__pos":100,"__ts_ms":42,"__transaction_id":null}}"#
        )
    );
    assert_eq!(header(&out[0], "h_op"), Some(Some("c".into())));
    assert_eq!(header(&out[0], "h_db"), Some(Some("postgres".into())));
    // A kept tombstone gets only the op header, "d".
    let mut c = unwrap(&[
        ("add.headers", "op,db"),
        ("delete.tombstone.handling.mode", "rewrite-with-tombstone"),
    ]);
    let out = run(
        &mut c,
        records(&t(), Op::Delete, Some(row(1, "a")), None, 1),
    );
    assert_eq!(header(&out[1], "__op"), Some(Some("d".into())));
    assert_eq!(header(&out[1], "__db"), None);
    assert_eq!(header(&out[0], "__op"), Some(Some("d".into())));
}

#[test]
fn route_by_field_uses_the_row_value_and_the_before_row_for_deletes() {
    let mut c = unwrap(&[
        ("route.by.field", "name"),
        ("delete.tombstone.handling.mode", "rewrite"),
    ]);
    let out = run(
        &mut c,
        records(&t(), Op::Create, None, Some(row(1, "alpha")), 1),
    );
    assert_eq!(&*out[0].topic, "alpha");
    let out = run(
        &mut c,
        records(&t(), Op::Delete, Some(row(1, "beta")), None, 1),
    );
    assert_eq!(&*out[0].topic, "beta");
    let out = run(
        &mut c,
        records(
            &t(),
            Op::Create,
            None,
            Some(vec![Value::Int(1), Value::Null]),
            1,
        ),
    );
    assert_eq!(
        &*out[0].topic, "db.public.customers",
        "a null value keeps the topic"
    );
    let mut c = unwrap(&[("route.by.field", "id")]);
    let r = records(&t(), Op::Create, None, Some(row(1, "a")), 1).remove(0);
    let e = crate::transform::apply_chain(&mut c, r).expect_err("int column");
    assert!(e.to_string().contains("not a string column"), "{e}");
}

#[test]
fn updates_and_snapshot_rows_unwrap_and_non_envelopes_pass() {
    let mut c = unwrap(&[("add.fields", "op")]);
    let out = values(
        &mut c,
        records(&t(), Op::Update, Some(row(1, "a")), Some(row(1, "b")), 1),
        false,
    );
    assert_eq!(out, [Some(r#"{"id":1,"name":"b","__op":"u"}"#.into())]);
    let out = values(
        &mut c,
        records(&t(), Op::Read, None, Some(row(1, "a")), 1),
        false,
    );
    assert_eq!(out, [Some(r#"{"id":1,"name":"a","__op":"r"}"#.into())]);
    let mut msg = records(&t(), Op::Create, None, Some(row(1, "a")), 1).remove(0);
    msg.value_schema = Some(Arc::new(crate::event::Schema::structure(
        "io.debezium.connector.common.Message",
        false,
        vec![],
    )));
    assert_eq!(run(&mut c, vec![msg]).len(), 1);
}
