//! Routing rules of an outbox row that the conformance cases in `tests.rs` leave out: the
//! exact text of each error, which error a row with several problems gets, null optional
//! columns, envelope columns absent from a later table, and value-struct names of unusual
//! row schemas.

use std::sync::Arc;

use crate::event::{ConnectRecord, Schema, SchemaType, TableDescriptor, Value};
use crate::transform::apply_chain;
use crate::transform::testutil::*;

const ID: &str = "da8d6de6-3b77-45ff-8f44-57db55a7a06c";
const PREFIX: &str = "outbox EventRouter (transforms.outbox): ";

/// The outbox table plus `ts` (Timestamp), `ts_raw` (int64 without logical type),
/// `ts_other` (int64 of another logical type), `ver` and `part` (int32), all optional.
fn wide() -> Arc<TableDescriptor> {
    let mut cols = outbox_columns();
    cols.push((
        "ts".into(),
        Schema::new(SchemaType::Int64, true).named("io.debezium.time.Timestamp"),
    ));
    cols.push(col("ts_raw", SchemaType::Int64, true));
    cols.push((
        "ts_other".into(),
        Schema::new(SchemaType::Int64, true).named("com.example.Epoch"),
    ));
    cols.push(col("ver", SchemaType::Int32, true));
    cols.push(col("part", SchemaType::Int32, true));
    table("public", "outbox", cols)
}

/// A row of [`wide`]: `aggregatetype` and `payload` as given, then `extra` as the values of
/// `ts`, `ts_raw`, `ts_other`, `ver` and `part`.
fn wide_row(agg_type: Value, payload: &str, extra: [Value; 5]) -> Vec<Value> {
    let mut r = vec![
        s(ID),
        agg_type,
        s("10711fa5"),
        s("UserCreated"),
        s(payload),
        Value::Null,
    ];
    r.extend(extra);
    r
}

/// A row of [`wide`] with every extra column set: `ts`, `ts_raw`, `ts_other` to 7, `ver` to
/// 2, `part` to 3.
fn full_row() -> Vec<Value> {
    wide_row(
        s("User"),
        "{}",
        [
            Value::Int(7),
            Value::Int(7),
            Value::Int(7),
            Value::Int(2),
            Value::Int(3),
        ],
    )
}

/// A row of [`wide`] whose extra columns are all null.
fn null_row() -> Vec<Value> {
    wide_row(s("User"), "{}", std::array::from_fn(|_| Value::Null))
}

/// The error routing `row` of [`wide`] under `opts` gives, without the transform prefix.
fn error(opts: &[(&str, &str)], row: Vec<Value>) -> String {
    let e = apply_chain(&mut router(opts), insert(&wide(), row))
        .expect_err("record fails")
        .to_string();
    match e.strip_prefix(PREFIX) {
        Some(m) => m.to_string(),
        None => panic!("{e}"),
    }
}

/// The record routing `row` of [`wide`] under `opts` gives.
fn routed(opts: &[(&str, &str)], row: Vec<Value>) -> ConnectRecord {
    apply_chain(&mut router(opts), insert(&wide(), row))
        .unwrap()
        .expect("record routed")
}

#[test]
fn timestamp_column_errors_and_null_values() {
    let opt = |c| [("table.field.event.timestamp", c)];
    assert_eq!(
        error(&opt("nots"), full_row()),
        "unable to find timestamp field nots in the row (table.field.event.timestamp)"
    );
    assert_eq!(
        error(&opt("type"), full_row()),
        "timestamp field type is of type string, not int64: table.field.event.timestamp needs a column of type timestamp (io.debezium.time.Timestamp, MicroTimestamp or NanoTimestamp); timestamptz is a string"
    );
    assert_eq!(
        error(&opt("ts_raw"), full_row()),
        "timestamp field ts_raw is an int64 without a logical type; a Timestamp, MicroTimestamp or NanoTimestamp is needed"
    );
    assert_eq!(
        error(&opt("ts_other"), full_row()),
        "unsupported type com.example.Epoch of timestamp field ts_other"
    );
    assert_eq!(routed(&opt("ts"), full_row()).timestamp, Some(7));
    // A null value gives the envelope's ts_ms, whatever the column's logical type.
    for c in ["ts", "ts_raw", "ts_other"] {
        assert_eq!(
            routed(&opt(c), null_row()).timestamp,
            Some(1_700_000_000_999),
            "{c}"
        );
    }
}

#[test]
fn missing_id_and_key_columns() {
    assert_eq!(
        error(&[("table.field.event.id", "noid")], full_row()),
        "noid is not a valid field name of the row"
    );
    assert_eq!(
        error(&[("table.field.event.key", "nokey")], full_row()),
        "nokey is not a valid field name of the row"
    );
}

#[test]
fn route_by_field_errors_read_the_same_with_and_without_envelope_fields() {
    for placement in [None, Some("type:envelope")] {
        let opts = |route: &'static str| {
            let mut o = vec![("route.by.field", route)];
            o.extend(placement.map(|p| ("table.fields.additional.placement", p)));
            o
        };
        assert_eq!(
            error(&opts("is_deleted"), full_row()),
            "route.by.field is_deleted is of type boolean, not string",
            "{placement:?}"
        );
        assert_eq!(
            error(&opts("nocol"), full_row()),
            "nocol is not a valid field name of the row",
            "{placement:?}"
        );
        assert_eq!(
            error(
                &opts("aggregatetype"),
                wide_row(Value::Null, "{}", std::array::from_fn(|_| Value::Null))
            ),
            "route.by.field aggregatetype is NULL in a row; it names the destination topic",
            "{placement:?}"
        );
    }
}

#[test]
fn schema_version_column_errors_and_null_version() {
    let opts = |c| {
        [
            ("table.field.event.schema.version", c),
            ("table.fields.additional.placement", "type:envelope"),
        ]
    };
    assert_eq!(
        error(&opts("type"), full_row()),
        "table.field.event.schema.version column type is of type string, not int32"
    );
    assert_eq!(
        error(&opts("nover"), full_row()),
        "nover is not a valid field name of the row"
    );
    let out = routed(&opts("ver"), full_row());
    assert_eq!(out.value_schema.as_ref().unwrap().version, Some(2));
    let out = routed(&opts("ver"), null_row());
    assert_eq!(out.value_schema.as_ref().unwrap().version, None);
    assert_eq!(
        render(&out, true).1.as_deref(),
        Some(
            r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"field":"payload"},{"type":"string","optional":false,"field":"type"}],"optional":false,"name":"db.public.outbox.User.Value"},"payload":{"payload":"{}","type":"UserCreated"}}"#
        )
    );
}

#[test]
fn placement_errors_and_null_partition() {
    let opt = |p| [("table.fields.additional.placement", p)];
    assert_eq!(
        error(&opt("nope:envelope"), full_row()),
        "unable to find field nope in the row (table.fields.additional.placement)"
    );
    assert_eq!(
        error(&opt("nohdr:header"), full_row()),
        "nohdr is not a valid field name of the row"
    );
    assert_eq!(
        error(&opt("nopart:partition"), full_row()),
        "nopart is not a valid field name of the row"
    );
    assert_eq!(
        error(&opt("type:partition"), full_row()),
        "partition column type is of type string, not int32"
    );
    assert_eq!(
        routed(&opt("part:partition"), full_row()).partition,
        Some(3)
    );
    assert_eq!(routed(&opt("part:partition"), null_row()).partition, None);
    // The last partition placement wins, a null one included.
    assert_eq!(
        routed(&opt("part:partition,ver:partition"), full_row()).partition,
        Some(2)
    );
    assert_eq!(
        routed(&opt("ver:partition,part:partition"), null_row()).partition,
        None
    );
    // Headers follow the record's own headers and `id`, in placement order.
    let out = routed(&opt("ver:header:v,type:header,part:header:p"), full_row());
    let names = header_names(&out);
    assert_eq!(names[names.len() - 4..], ["id", "v", "type", "p"]);
    assert_eq!(header(&out, "p"), Some(Some("3".into())));
}

#[test]
fn a_row_with_several_problems_fails_on_the_first_in_routing_order() {
    // Each step fixes the problem the previous one reported.
    let steps: [(&[(&str, &str)], &str); 10] = [
        (
            &[
                ("table.field.event.timestamp", "nots"),
                ("table.field.event.id", "noid"),
                ("table.expand.json.payload", "true"),
                ("route.by.field", "is_deleted"),
                ("table.field.event.schema.version", "nover"),
                (
                    "table.fields.additional.placement",
                    "nope:envelope,nohdr:header,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "unable to find timestamp field nots in the row (table.field.event.timestamp)",
        ),
        (
            &[
                ("table.field.event.id", "noid"),
                ("table.expand.json.payload", "true"),
                ("route.by.field", "is_deleted"),
                ("table.field.event.schema.version", "nover"),
                (
                    "table.fields.additional.placement",
                    "nope:envelope,nohdr:header,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "noid is not a valid field name of the row",
        ),
        (
            &[
                ("table.expand.json.payload", "true"),
                ("route.by.field", "is_deleted"),
                ("table.field.event.schema.version", "nover"),
                (
                    "table.fields.additional.placement",
                    "nope:envelope,nohdr:header,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "table.expand.json.payload: the payload is a JSON array: Debezium builds an array schema for it but cannot convert the value (only JSON objects can be expanded)",
        ),
        (
            &[
                ("route.by.field", "is_deleted"),
                ("table.field.event.schema.version", "nover"),
                (
                    "table.fields.additional.placement",
                    "nope:envelope,nohdr:header,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "route.by.field is_deleted is of type boolean, not string",
        ),
        (
            &[
                ("table.field.event.schema.version", "nover"),
                (
                    "table.fields.additional.placement",
                    "nope:envelope,nohdr:header,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "nover is not a valid field name of the row",
        ),
        (
            &[
                (
                    "table.fields.additional.placement",
                    "nope:envelope,nohdr:header,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "unable to find field nope in the row (table.fields.additional.placement)",
        ),
        (
            &[
                (
                    "table.fields.additional.placement",
                    "type:envelope,nohdr:header,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "nohdr is not a valid field name of the row",
        ),
        (
            &[
                (
                    "table.fields.additional.placement",
                    "type:envelope,type:partition",
                ),
                ("table.field.event.key", "nokey"),
            ],
            "partition column type is of type string, not int32",
        ),
        (
            &[
                ("table.fields.additional.placement", "type:envelope"),
                ("table.field.event.key", "nokey"),
            ],
            "nokey is not a valid field name of the row",
        ),
        (
            &[("table.fields.additional.placement", "type:envelope")],
            "route.by.field aggregatetype is NULL in a row; it names the destination topic",
        ),
    ];
    for (i, (opts, expected)) in steps.iter().enumerate() {
        let row = if i == 0 || i == 1 || i == 2 {
            wide_row(s("User"), "[1, 2]", std::array::from_fn(|_| Value::Null))
        } else {
            wide_row(Value::Null, "{}", std::array::from_fn(|_| Value::Null))
        };
        assert_eq!(error(opts, row), *expected, "step {i}");
    }
}

#[test]
fn an_envelope_column_absent_from_a_later_table_with_the_same_payload_schema() {
    let mut cols = outbox_columns();
    cols.push(col("extra", SchemaType::String, true));
    let with = table("public", "outbox", cols);
    let without = table("public", "outbox2", outbox_columns());
    let first = || {
        let mut r = wide_row(s("User"), "{}", std::array::from_fn(|_| Value::Null));
        r.truncate(6);
        r.push(s("x"));
        insert(&with, r)
    };
    let second = || {
        let mut r = wide_row(s("Order"), "{}", std::array::from_fn(|_| Value::Null));
        r.truncate(6);
        insert(&without, r)
    };
    // The value schema built for the first table is reused: no placement error, the value
    // lookup fails.
    let mut c = router(&[("table.fields.additional.placement", "extra:envelope")]);
    assert!(apply_chain(&mut c, first()).unwrap().is_some());
    let e = apply_chain(&mut c, second()).expect_err("record fails");
    assert_eq!(
        e.to_string(),
        format!("{PREFIX}extra is not a valid field name of the row")
    );
    // Ignored: a null value in the reused struct.
    let mut c = router(&[
        ("table.fields.additional.placement", "extra:envelope"),
        ("table.field.additional.missing", "ignore"),
    ]);
    assert!(apply_chain(&mut c, first()).unwrap().is_some());
    let out = apply_chain(&mut c, second()).unwrap().unwrap();
    assert_eq!(
        render(&out, true).1.as_deref(),
        Some(
            r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"field":"payload"},{"type":"string","optional":true,"field":"extra"}],"optional":false,"name":"db.public.outbox.User.Value"},"payload":{"payload":"{}","extra":null}}"#
        )
    );
    assert_eq!(&*out.topic, "outbox.event.Order");
}

#[test]
fn value_struct_name_of_a_row_schema_without_name_or_dot() {
    for (row_name, expected) in [(None, "User"), (Some("Plain"), "User.Plain")] {
        let mut r = insert(&wide(), full_row());
        let mut env = (**r.value_schema.as_ref().unwrap()).clone();
        let i = env.field_index("after").unwrap();
        env.fields[i].schema.name = row_name.map(str::to_string);
        r.value_schema = Some(Arc::new(env));
        let mut c = router(&[("table.fields.additional.placement", "type:envelope")]);
        let out = apply_chain(&mut c, r).unwrap().unwrap();
        assert_eq!(
            out.value_schema.as_ref().unwrap().name.as_deref(),
            Some(expected)
        );
    }
}

#[test]
fn topics_are_rewritten_once_per_value_and_kept() {
    let mut c = router(&[
        ("route.topic.regex", "(?<routedByValue>[A-Z][a-z]+)"),
        ("route.topic.replacement", "events.${routedByValue}.v1"),
    ]);
    let t = wide();
    let rows = ["User", "user_account", "User", "user_account"];
    let topics: Vec<String> = rows
        .iter()
        .map(|v| {
            let r = wide_row(s(v), "{}", std::array::from_fn(|_| Value::Null));
            let out = apply_chain(&mut c, insert(&t, r)).unwrap().unwrap();
            out.topic.to_string()
        })
        .collect();
    assert_eq!(
        topics,
        [
            "events.User.v1",
            "user_account",
            "events.User.v1",
            "user_account"
        ]
    );
}
