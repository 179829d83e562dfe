//! EventRouter rules, one test per outbox case of the Debezium conformance set (DBZ-T-15x..17x,
//! the unit cases; the PostgreSQL cases DBZ-T-143..149 run end to end in tests/outbox.rs) and
//! per outbox bug case (BUG-34, BUG-35). Inputs are the cases' rows; expectations are the cases'
//! records, checked as the bytes JsonConverter writes.

use std::sync::Arc;

use crate::event::{ConnectRecord, Op, Schema, SchemaType, Value};
use crate::transform::testutil::*;
use crate::transform::{apply_chain, Stage};

const ID: &str = "da8d6de6-3b77-45ff-8f44-57db55a7a06c";

fn outbox() -> Arc<crate::event::TableDescriptor> {
    table("public", "outbox", outbox_columns())
}

fn row(
    id: &str,
    agg_type: &str,
    agg_id: &str,
    ty: &str,
    payload: Value,
    deleted: Value,
) -> Vec<Value> {
    vec![s(id), s(agg_type), s(agg_id), s(ty), payload, deleted]
}

fn user_created(payload: &str) -> Vec<Value> {
    row(
        ID,
        "User",
        "10711fa5",
        "UserCreated",
        s(payload),
        Value::Null,
    )
}

fn one(chain: &mut [Stage], r: ConnectRecord) -> ConnectRecord {
    apply_chain(chain, r).unwrap().expect("record routed")
}

fn err(chain: &mut [Stage], r: ConnectRecord) -> String {
    apply_chain(chain, r).expect_err("record fails").to_string()
}

#[test]
fn dbz_t_158_defaults_route_by_aggregatetype_key_aggregateid_value_payload_header_id() {
    let mut c = router(&[]);
    let out = one(&mut c, insert(&outbox(), user_created("{}")));
    assert_eq!(&*out.topic, "outbox.event.User");
    assert_eq!(out.partition, None);
    let (k, v) = render(&out, true);
    assert_eq!(
        k.as_deref(),
        Some(r#"{"schema":{"type":"string","optional":false},"payload":"10711fa5"}"#)
    );
    assert_eq!(
        v.as_deref(),
        Some(r#"{"schema":{"type":"string","optional":true},"payload":"{}"}"#)
    );
    assert_eq!(
        render(&out, false),
        (Some(r#""10711fa5""#.into()), Some(r#""{}""#.into()))
    );
    assert_eq!(out.value_schema.as_ref().unwrap().version, None);
    assert_eq!(header(&out, "id"), Some(Some(ID.into())));
    // The four context headers stay first; id follows.
    assert_eq!(header_names(&out)[4..], ["id"]);
}

#[test]
fn dbz_t_161_timestamp_defaults_to_the_envelope_ts_ms() {
    let mut c = router(&[]);
    let mut r = insert(&outbox(), user_created("{}"));
    r.timestamp = None;
    assert_eq!(one(&mut c, r).timestamp, Some(1_700_000_000_999));
}

#[test]
fn dbz_t_151_and_152_tombstones_and_deletes_are_dropped() {
    let mut c = router(&[]);
    let recs = records(&outbox(), Op::Delete, Some(user_created("{}")), None, 1);
    assert_eq!(recs.len(), 2, "delete and its tombstone");
    assert!(run(&mut c, recs).is_empty());
}

#[test]
fn dbz_t_154_updates_are_dropped_or_fail_per_table_op_invalid_behavior() {
    let upd = || {
        records(
            &outbox(),
            Op::Update,
            Some(user_created("{}")),
            Some(user_created("{}")),
            1,
        )
        .remove(0)
    };
    for mode in ["warn", "error"] {
        let mut c = router(&[("table.op.invalid.behavior", mode)]);
        assert!(apply_chain(&mut c, upd()).unwrap().is_none(), "{mode}");
    }
    assert!(
        apply_chain(&mut router(&[]), upd()).unwrap().is_none(),
        "warn by default"
    );
    let mut c = router(&[("table.op.invalid.behavior", "fatal")]);
    assert!(err(&mut c, upd()).contains("table.op.invalid.behavior=fatal"));
}

#[test]
fn dbz_t_155_and_169_invalid_options_are_startup_errors() {
    let base = [
        ("transforms", "outbox"),
        ("transforms.outbox.type", crate::transform::EVENT_ROUTER),
    ];
    for (k, v) in [
        (
            "transforms.outbox.table.op.invalid.behavior",
            "invalidOption",
        ),
        (
            "transforms.outbox.table.fields.additional.placement",
            "type",
        ),
        ("transforms.outbox.table.fields.additional.placement", ""),
        ("transforms.outbox.route.topic.regex", " [[a-z]"),
    ] {
        let mut pairs = base.to_vec();
        pairs.push((k, v));
        let e = configs(&pairs).expect_err(k);
        assert!(e.contains(k), "{e}");
    }
}

#[test]
fn dbz_t_157_an_envelope_named_record_without_op_fails() {
    let mut schema = Schema::structure(
        "io.debezium.connector.common.Heartbeat.Envelope",
        false,
        vec![crate::event::Field::new(
            "ts_ms",
            Schema::new(SchemaType::Int64, false),
        )],
    );
    schema.version = None;
    let r = ConnectRecord {
        topic: "db.heartbeat".into(),
        partition: None,
        key_schema: None,
        key: None,
        value_schema: Some(Arc::new(schema)),
        value: Some(Value::Struct(vec![Value::Int(1)])),
        headers: vec![],
        timestamp: None,
        table: None,
        op: None,
    };
    assert!(err(&mut router(&[]), r).contains("op is not a valid field name"));
}

#[test]
fn dbz_t_160_a_missing_key_column_fails() {
    let mut c = router(&[("table.field.event.key", "fakefield")]);
    assert!(err(&mut c, insert(&outbox(), user_created("{}")))
        .contains("fakefield is not a valid field name"));
}

#[test]
fn dbz_t_163_route_by_field_chooses_the_topic() {
    let mut c = router(&[("route.by.field", "aggregatetype")]);
    let t = outbox();
    let out = run(
        &mut c,
        vec![
            insert(&t, user_created("{}")),
            insert(
                &t,
                row(
                    "ab720dd3-176d-40a6-96f3-6cf961d7df6a",
                    "User",
                    "10711fa5",
                    "UserUpdate",
                    s("{}"),
                    Value::Null,
                ),
            ),
            insert(
                &t,
                row(
                    "ab720dd3-176d-40a6-96f3-6cf961d7df6a",
                    "Address",
                    "10711fa5",
                    "AddressCreated",
                    s("{}"),
                    Value::Null,
                ),
            ),
        ],
    );
    let topics: Vec<&str> = out.iter().map(|r| &*r.topic).collect();
    assert_eq!(
        topics,
        [
            "outbox.event.User",
            "outbox.event.User",
            "outbox.event.Address"
        ]
    );
}

#[test]
fn dbz_t_164_every_table_field_can_be_renamed_and_the_header_stays_id() {
    let t = table(
        "public",
        "outbox",
        vec![
            col("event_id", SchemaType::String, false),
            col("payload_id", SchemaType::String, false),
            col("event_type", SchemaType::String, false),
            col("payload_body", SchemaType::String, true),
        ],
    );
    let mut c = router(&[
        ("table.field.event.id", "event_id"),
        ("table.field.event.key", "payload_id"),
        ("table.field.event.type", "event_type"),
        ("table.field.event.payload", "payload_body"),
        ("route.by.field", "payload_id"),
    ]);
    let mut r = insert(&t, vec![s(ID), s("10711fa5"), s("UserCreated"), s("{}")]);
    r.headers.clear();
    let out = one(&mut c, r);
    assert_eq!(&*out.topic, "outbox.event.10711fa5");
    assert_eq!(
        render(&out, false),
        (Some(r#""10711fa5""#.into()), Some(r#""{}""#.into()))
    );
    assert_eq!(header_names(&out), ["id"]);
    assert_eq!(header(&out, "id"), Some(Some(ID.into())));
}

fn versioned_outbox() -> Arc<crate::event::TableDescriptor> {
    let mut cols = outbox_columns();
    cols.push(col("version", SchemaType::Int32, true));
    table("public", "outbox", cols)
}

#[test]
fn dbz_t_166_schema_version_applies_with_envelope_fields_and_is_cached_per_version() {
    let t = versioned_outbox();
    let rows = [
        ("166080d9-3b0e-4a04-81fe-2058a7386f1f", "420b186d", 1),
        ("166080d9-3b0e-4a04-81fe-2058a7386f1f", "420b186d", 3),
        ("18f94a39-b931-41b7-837c-6fc23b013597", "1b10b70b", 1),
    ];
    let recs = || {
        rows.iter()
            .map(|(id, agg, v)| {
                let mut r = row(id, "User", agg, "UserCreated", s("{}"), Value::Null);
                r.push(Value::Int(*v));
                insert(&t, r)
            })
            .collect::<Vec<_>>()
    };
    let mut c = router(&[
        ("table.field.event.schema.version", "version"),
        (
            "table.fields.additional.placement",
            "type:envelope:eventType",
        ),
    ]);
    let out = run(&mut c, recs());
    let versions: Vec<Option<i32>> = out
        .iter()
        .map(|r| r.value_schema.as_ref().unwrap().version)
        .collect();
    assert_eq!(versions, [Some(1), Some(3), Some(1)]);
    assert!(Arc::ptr_eq(
        out[0].value_schema.as_ref().unwrap(),
        out[2].value_schema.as_ref().unwrap()
    ));
    assert_eq!(
        render(&out[1], true).1.as_deref(),
        Some(concat!(
            r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"#,
            r#""field":"payload"},{"type":"string","optional":false,"field":"eventType"}],"#,
            r#""optional":false,"name":"db.public.outbox.User.Value","version":3},"#,
            r#""payload":{"payload":"{}","eventType":"UserCreated"}}"#,
        ))
    );
    // Payload only: no struct, so no version.
    let mut c = router(&[("table.field.event.schema.version", "version")]);
    for r in run(&mut c, recs()) {
        assert_eq!(r.value_schema.as_ref().unwrap().version, None);
    }
}

#[test]
fn dbz_t_167_envelope_and_header_placements_with_and_without_alias() {
    let mut c = router(&[(
        "table.fields.additional.placement",
        "type:envelope:payloadType, aggregateid:envelope:payloadId,type:header:payloadType",
    )]);
    let out = one(&mut c, insert(&outbox(), user_created("{}")));
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#"{"payload":"{}","payloadType":"UserCreated","payloadId":"10711fa5"}"#)
    );
    assert_eq!(
        header(&out, "payloadType"),
        Some(Some("UserCreated".into()))
    );
    assert_eq!(header(&out, "id"), Some(Some(ID.into())));
    assert_eq!(header_names(&out)[4..], ["id", "payloadType"]);

    let mut c = router(&[("table.fields.additional.placement", "type:envelope")]);
    let out = one(&mut c, insert(&outbox(), user_created("{}")));
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#"{"payload":"{}","type":"UserCreated"}"#)
    );
}

#[test]
fn dbz_t_170_a_missing_additional_field_fails_or_is_ignored() {
    let mut c = router(&[(
        "table.fields.additional.placement",
        "nonExistingField:envelope:alias",
    )]);
    assert!(err(&mut c, insert(&outbox(), user_created("{}"))).contains("nonExistingField"));
    let mut c = router(&[
        (
            "table.fields.additional.placement",
            "nonExistingField:envelope:alias,nope:header,nada:partition",
        ),
        ("table.field.additional.missing", "ignore"),
    ]);
    let out = one(&mut c, insert(&outbox(), user_created("{}")));
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#"{"payload":"{}"}"#)
    );
    assert_eq!(header(&out, "nope"), None);
    assert_eq!(out.partition, None);
}

#[test]
fn dbz_t_172_deleted_flag_in_the_envelope_and_tombstone_on_blank_payload() {
    let t = outbox();
    let recs = || {
        vec![
            insert(
                &t,
                row(
                    ID,
                    "User",
                    "10711fa5",
                    "UserCreated",
                    s("{}"),
                    Value::Bool(true),
                ),
            ),
            insert(
                &t,
                row(
                    ID,
                    "User",
                    "10711fa5",
                    "UserCreated",
                    s(""),
                    Value::Bool(true),
                ),
            ),
        ]
    };
    let mut c = router(&[
        (
            "table.fields.additional.placement",
            "is_deleted:envelope:deleted",
        ),
        ("route.tombstone.on.empty.payload", "true"),
    ]);
    let out = run(&mut c, recs());
    assert_eq!(
        render(&out[0], false).1.as_deref(),
        Some(r#"{"payload":"{}","deleted":true}"#)
    );
    assert_eq!(
        render(&out[1], true),
        (
            Some(r#"{"schema":{"type":"string","optional":false},"payload":"10711fa5"}"#.into()),
            None
        )
    );
    assert!(out[1].value_schema.is_none());

    let mut c = router(&[(
        "table.fields.additional.placement",
        "is_deleted:envelope:deleted",
    )]);
    let out = run(&mut c, recs());
    assert_eq!(
        render(&out[1], false).1.as_deref(),
        Some(r#"{"payload":"","deleted":true}"#)
    );
    assert!(out[1].key_schema.is_some() && out[1].value_schema.is_some());
}

#[test]
fn dbz_t_173_expanded_json_payload_becomes_a_struct_with_inferred_schema() {
    let mut c = router(&[("table.expand.json.payload", "true")]);
    let text = concat!(
        r#"{"fullName": "John Doe", "enabled": true, "rating": 4.9, "age": 42, "pets": ["dog","#,
        r#" "cat"], "petObjects": [{"type": "dog"}, {"type": "cat"}]}"#,
    );
    let out = one(&mut c, insert(&outbox(), user_created(text)));
    let vs = out.value_schema.as_ref().unwrap();
    assert_eq!(vs.ty, SchemaType::Struct);
    assert!(vs.optional);
    let types: Vec<(&str, &str)> = vs
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.schema.ty.json_name()))
        .collect();
    assert_eq!(
        types,
        [
            ("fullName", "string"),
            ("enabled", "boolean"),
            ("rating", "double"),
            ("age", "int32"),
            ("pets", "array"),
            ("petObjects", "array")
        ]
    );
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(concat!(
            r#"{"fullName":"John Doe","enabled":true,"rating":4.9,"age":42,"pets":["dog","cat"],"#,
            r#""petObjects":[{"type":"dog"},{"type":"cat"}]}"#,
        ))
    );
    assert_eq!(
        render(&out, true).1.unwrap(),
        concat!(
            r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"#,
            r#""field":"fullName"},{"type":"boolean","optional":true,"field":"enabled"},"#,
            r#"{"type":"double","optional":true,"field":"rating"},{"type":"int32","optional":true,"#,
            r#""field":"age"},{"type":"array","items":{"type":"string","optional":true},"#,
            r#""optional":true,"field":"pets"},{"type":"array","items":{"type":"struct","#,
            r#""fields":[{"type":"string","optional":true,"field":"type"}],"optional":true,"#,
            r#""name":"payload.petObjects"},"optional":true,"field":"petObjects"}],"optional":true,"#,
            r#""name":"payload"},"payload":{"fullName":"John Doe","enabled":true,"rating":4.9,"age":42,"#,
            r#""pets":["dog","cat"],"petObjects":[{"type":"dog"},{"type":"cat"}]}}"#,
        )
    );
}

#[test]
fn dbz_t_175_expanded_payload_inside_the_envelope_struct() {
    let mut c = router(&[
        ("table.expand.json.payload", "true"),
        ("table.fields.additional.placement", "type:envelope"),
    ]);
    let out = one(
        &mut c,
        insert(&outbox(), user_created(r#"{"fullName": "John Doe"}"#)),
    );
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#"{"payload":{"fullName":"John Doe"},"type":"UserCreated"}"#)
    );
}

#[test]
fn dbz_t_176_null_payload_with_expansion_and_tombstones_is_a_tombstone() {
    let mut c = router(&[
        ("table.expand.json.payload", "true"),
        ("route.tombstone.on.empty.payload", "true"),
    ]);
    let out = one(
        &mut c,
        insert(
            &outbox(),
            row(
                ID,
                "User",
                "10711fa5",
                "UserCreated",
                Value::Null,
                Value::Null,
            ),
        ),
    );
    assert!(out.value.is_none() && out.value_schema.is_none());
    assert_eq!(render(&out, false), (Some(r#""10711fa5""#.into()), None));
}

#[test]
fn expansion_failures_leave_the_payload_unchanged_and_bad_values_fail() {
    let mut c = router(&[("table.expand.json.payload", "true")]);
    let out = one(&mut c, insert(&outbox(), user_created("not json")));
    assert_eq!(render(&out, false).1.as_deref(), Some(r#""not json""#));
    let out = one(
        &mut c,
        insert(&outbox(), user_created(r#"{"a": [1, "x"]}"#)),
    );
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#""{\"a\": [1, \"x\"]}""#)
    );
    assert!(err(&mut c, insert(&outbox(), user_created("[1, 2]"))).contains("JSON array"));
}

#[test]
fn snapshot_rows_are_routed_like_inserts_and_truncates_fail() {
    let t = outbox();
    let mut c = router(&[]);
    let r = records(&t, Op::Read, None, Some(user_created("{}")), 5).remove(0);
    let out = one(&mut c, r);
    assert_eq!(&*out.topic, "outbox.event.User");
    assert_eq!(out.timestamp, Some(5));
    let tr = records(&t, Op::Truncate, None, None, 5);
    if let Some(r) = tr.into_iter().next() {
        assert!(err(&mut c, r).contains("no after row"));
    }
}

#[test]
fn tables_without_the_payload_column_and_non_envelope_records_pass_through() {
    let other = table(
        "public",
        "orders",
        vec![
            col("id", SchemaType::Int32, false),
            col("total", SchemaType::Int64, true),
        ],
    );
    let mut c = router(&[]);
    let recs = records(
        &other,
        Op::Delete,
        Some(vec![Value::Int(1), Value::Int(5)]),
        None,
        1,
    );
    let out = run(&mut c, recs);
    assert_eq!(
        out.len(),
        2,
        "delete and tombstone of a non-outbox table pass through"
    );
    assert_eq!(&*out[0].topic, "db.public.orders");
    let msg = ConnectRecord {
        value_schema: Some(Arc::new(Schema::structure(
            "io.debezium.connector.common.Message",
            false,
            vec![],
        ))),
        ..insert(&outbox(), user_created("{}"))
    };
    let out = one(&mut c, msg);
    assert_eq!(&*out.topic, "db.public.outbox");
}

#[test]
fn custom_topic_regex_and_replacement_and_raw_value_when_the_regex_does_not_match() {
    let mut c = router(&[
        ("route.topic.regex", "(?<routedByValue>[A-Z][a-z]+)"),
        ("route.topic.replacement", "events.${routedByValue}.v1"),
    ]);
    let t = outbox();
    let out = run(
        &mut c,
        vec![
            insert(&t, user_created("{}")),
            insert(&t, row(ID, "user_account", "1", "T", s("{}"), Value::Null)),
        ],
    );
    assert_eq!(&*out[0].topic, "events.User.v1");
    assert_eq!(&*out[1].topic, "user_account");
}

#[test]
fn value_schema_name_comes_from_the_first_event_with_that_payload_schema() {
    let mut c = router(&[("table.fields.additional.placement", "type:envelope")]);
    let t = outbox();
    let out = run(
        &mut c,
        vec![
            insert(&t, user_created("{}")),
            insert(&t, row(ID, "Address", "1", "T", s("{}"), Value::Null)),
        ],
    );
    assert_eq!(&*out[1].topic, "outbox.event.Address");
    assert_eq!(
        out[1].value_schema.as_ref().unwrap().name.as_deref(),
        Some("db.public.outbox.User.Value")
    );
}

fn timed_outbox(ts: Schema) -> Arc<crate::event::TableDescriptor> {
    let mut cols = outbox_columns();
    cols.push(("createdat".into(), ts));
    cols.push(col("part", SchemaType::Int32, true));
    table("public", "outbox", cols)
}

#[test]
fn timestamp_column_of_each_debezium_timestamp_type_and_partition_placement() {
    let cases = [
        ("io.debezium.time.Timestamp", 1_553_460_779_000_i64),
        ("io.debezium.time.MicroTimestamp", 1_553_460_779_000_000),
        ("io.debezium.time.NanoTimestamp", 1_553_460_779_000_000_000),
    ];
    for (name, raw) in cases {
        let t = timed_outbox(Schema::new(SchemaType::Int64, false).named(name));
        let mut c = router(&[
            ("table.field.event.timestamp", "createdat"),
            ("table.fields.additional.placement", "part:partition"),
        ]);
        let mut r = user_created("{}");
        r.push(Value::Int(raw));
        r.push(Value::Int(3));
        let out = one(&mut c, insert(&t, r));
        assert_eq!(out.timestamp, Some(1_553_460_779_000), "{name}");
        assert_eq!(out.partition, Some(3));
    }
    // NULL falls back to the envelope's ts_ms.
    let t =
        timed_outbox(Schema::new(SchemaType::Int64, true).named("io.debezium.time.MicroTimestamp"));
    let mut c = router(&[("table.field.event.timestamp", "createdat")]);
    let mut r = user_created("{}");
    r.extend([Value::Null, Value::Null]);
    assert_eq!(
        one(&mut c, insert(&t, r.clone())).timestamp,
        Some(1_700_000_000_999)
    );
    // timestamptz (a ZonedTimestamp string) is rejected, as Debezium rejects it.
    let t = timed_outbox(
        Schema::new(SchemaType::String, true).named("io.debezium.time.ZonedTimestamp"),
    );
    assert!(err(&mut c, insert(&t, r)).contains("not int64"));
}

#[test]
fn bytea_and_text_payloads_keep_their_column_schema() {
    let mut cols = outbox_columns();
    cols[4] = col("payload", SchemaType::Bytes, true);
    let t = table("public", "outbox", cols);
    let mut c = router(&[("table.expand.json.payload", "true")]);
    let out = one(
        &mut c,
        insert(
            &t,
            row(
                ID,
                "User",
                "1",
                "T",
                Value::Bytes(b"\x01\x02\x03".to_vec()),
                Value::Null,
            ),
        ),
    );
    assert_eq!(
        render(&out, true).1.as_deref(),
        Some(r#"{"schema":{"type":"bytes","optional":true},"payload":"AQID"}"#)
    );
}

#[test]
fn bug_35_null_payload_tombstone_or_null_value_and_deletes_and_updates_produce_nothing() {
    let t = outbox();
    let null_row = || {
        row(
            "6f1c2d3e-0000-4000-8000-000000000002",
            "order",
            "42",
            "OrderDeleted",
            Value::Null,
            Value::Null,
        )
    };
    // Tombstone on: a real tombstone keyed "42".
    let mut c = router(&[("route.tombstone.on.empty.payload", "true")]);
    let out = one(&mut c, insert(&t, null_row()));
    assert_eq!(&*out.topic, "outbox.event.order");
    assert_eq!(
        render(&out, true),
        (
            Some(r#"{"schema":{"type":"string","optional":false},"payload":"42"}"#.into()),
            None
        )
    );
    // Off, no envelope fields: null value with the payload schema.
    let mut c = router(&[]);
    let out = one(&mut c, insert(&t, null_row()));
    assert_eq!(
        render(&out, true).1.as_deref(),
        Some(r#"{"schema":{"type":"string","optional":true},"payload":null}"#)
    );
    assert_eq!(render(&out, false).1.as_deref(), Some("null"));
    // Off, with an envelope field: a struct whose payload is null.
    let mut c = router(&[("table.fields.additional.placement", "type:envelope")]);
    let out = one(&mut c, insert(&t, null_row()));
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#"{"payload":null,"type":"OrderDeleted"}"#)
    );
    // The delete and its tombstone, and an update: nothing.
    let mut c = router(&[]);
    assert!(run(&mut c, records(&t, Op::Delete, Some(null_row()), None, 1)).is_empty());
    assert!(run(
        &mut c,
        records(&t, Op::Update, Some(null_row()), Some(null_row()), 1)
    )
    .is_empty());
}

#[test]
fn bug_34_expansion_drops_empty_arrays_and_nulls_unless_asked_and_the_text_payload_keeps_them() {
    let t = outbox();
    let text = concat!(
        r#"{"note": null, "lines": [], "total": "19.90", "groups": [{"items": []},"#,
        r#" {"items": [{"qty": 2, "sku": "A1"}]}]}"#,
    );
    let r = || {
        insert(
            &t,
            row(
                "6f1c2d3e-0000-4000-8000-000000000001",
                "order",
                "42",
                "OrderCreated",
                s(text),
                Value::Null,
            ),
        )
    };
    let out = one(&mut router(&[]), r());
    assert_eq!(
        render(&out, false).1.unwrap(),
        serde_json::to_string(text).unwrap()
    );
    let out = one(&mut router(&[("table.expand.json.payload", "true")]), r());
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#"{"total":"19.90","groups":[{"items":[]},{"items":[{"qty":2,"sku":"A1"}]}]}"#)
    );
    let keep = [
        ("table.expand.json.payload", "true"),
        ("table.json.payload.null.behavior", "optional_bytes"),
        ("table.json.payload.empty.array.behavior", "optional_string"),
    ];
    // With empty arrays kept as array<string>, groups[0].items (empty) and groups[1].items
    // (objects) disagree; the first element's schema wins the merge and the objects do not fit
    // it, so the record fails (Debezium's merge order is its HashSet's, pgcdc's is array order).
    let e = apply_chain(&mut router(&keep), r()).expect_err("conflicting array schemas");
    assert!(
        e.to_string().contains("does not fit the inferred schema"),
        "{e}"
    );
    let simple = r#"{"note": null, "lines": [], "total": "19.90"}"#;
    let out = one(
        &mut router(&keep),
        insert(
            &t,
            row(
                "6f1c2d3e-0000-4000-8000-000000000001",
                "order",
                "42",
                "OrderCreated",
                s(simple),
                Value::Null,
            ),
        ),
    );
    assert_eq!(
        render(&out, false).1.as_deref(),
        Some(r#"{"note":null,"lines":[],"total":"19.90"}"#)
    );
    assert_eq!(&*out.topic, "outbox.event.order");
    assert_eq!(
        header(&out, "id"),
        Some(Some("6f1c2d3e-0000-4000-8000-000000000001".into()))
    );
}
