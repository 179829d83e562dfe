//! ExtractNewRecordState cases that `tests.rs` leaves out: the exact text of each error,
//! truncates, fields that do not exist, blank routing values, and the routing of a delete in
//! each delete mode.

use std::sync::Arc;

use super::tests::{t, unwrap};
use crate::event::{ConnectRecord, Op, Value};
use crate::transform::apply_chain;
use crate::transform::testutil::*;

const PREFIX: &str = "ExtractNewRecordState (transforms.unwrap): ";

/// The insert record of row `(1, name)`.
fn created(name: Value) -> ConnectRecord {
    records(&t(), Op::Create, None, Some(vec![Value::Int(1), name]), 1).remove(0)
}

/// The delete record (without its tombstone) of row `(1, name)`.
fn deleted(name: Value) -> ConnectRecord {
    records(&t(), Op::Delete, Some(vec![Value::Int(1), name]), None, 1).remove(0)
}

/// The error `r` gives under `opts`, without the transform prefix.
fn error(opts: &[(&str, &str)], r: ConnectRecord) -> String {
    let e = apply_chain(&mut unwrap(opts), r)
        .expect_err("record fails")
        .to_string();
    match e.strip_prefix(PREFIX) {
        Some(m) => m.to_string(),
        None => panic!("{e}"),
    }
}

/// What `r` gives under `opts` (`None`: dropped).
fn out(opts: &[(&str, &str)], r: ConnectRecord) -> Option<ConnectRecord> {
    apply_chain(&mut unwrap(opts), r).unwrap()
}

#[test]
fn added_fields_and_headers_that_cannot_be_added_fail_and_absent_ones_are_skipped() {
    for key in ["add.headers", "add.fields"] {
        assert_eq!(
            error(&[(key, "nostruct.x")], created(s("a"))),
            format!("{key}: the envelope has no nostruct struct")
        );
        assert_eq!(
            error(&[(key, "source")], created(s("a"))),
            format!("{key}: source is a struct, which pgcdc cannot add")
        );
    }
    assert_eq!(
        error(
            &[("add.fields", "op:name"), ("add.fields.prefix", "")],
            created(s("a"))
        ),
        "add.fields: the row already has a field named name"
    );
    let r = out(
        &[
            ("add.headers", "source.nosuch"),
            ("add.fields", "source.nosuch"),
        ],
        created(s("a")),
    )
    .unwrap();
    assert_eq!(header(&r, "__source_nosuch"), None);
    assert_eq!(
        render(&r, false).1.as_deref(),
        Some(r#"{"id":1,"name":"a"}"#)
    );
}

#[test]
fn an_envelope_without_after_fails_and_truncates_are_dropped() {
    let mut r = created(s("a"));
    let mut env = (**r.value_schema.as_ref().unwrap()).clone();
    env.fields.retain(|f| f.name != "after");
    r.value_schema = Some(Arc::new(env));
    assert_eq!(error(&[], r), "the envelope has no after field");
    for mode in ["tombstone", "rewrite", "rewrite-with-tombstone"] {
        let opts = [
            ("delete.tombstone.handling.mode", mode),
            ("route.by.field", "nocol"),
        ];
        for r in records(&t(), Op::Truncate, None, None, 1) {
            assert!(out(&opts, r).is_none(), "{mode}");
        }
    }
}

#[test]
fn route_by_field_of_a_row() {
    let opt = |c| [("route.by.field", c)];
    assert_eq!(
        error(&opt("nocol"), created(s("a"))),
        "route.by.field nocol is not a field of the row"
    );
    assert_eq!(
        error(&opt("id"), created(s("a"))),
        "route.by.field id is not a string column"
    );
    assert_eq!(&*out(&opt("name"), created(s("a"))).unwrap().topic, "a");
    assert_eq!(
        &*out(&opt("name"), created(s(" \t"))).unwrap().topic,
        "db.public.customers",
        "a blank value keeps the topic"
    );
    // An added field is a field of the row.
    let r = out(
        &[("route.by.field", "__db"), ("add.fields", "db")],
        created(s("a")),
    );
    assert_eq!(&*r.unwrap().topic, "postgres");
}

#[test]
fn route_by_field_of_a_delete_reads_the_before_row_in_every_mode() {
    for mode in [
        "tombstone",
        "delete-to-tombstone",
        "rewrite",
        "rewrite-with-tombstone",
    ] {
        let opts = |c| {
            [
                ("delete.tombstone.handling.mode", mode),
                ("route.by.field", c),
            ]
        };
        assert_eq!(
            error(&opts("nocol"), deleted(s("a"))),
            "route.by.field nocol is not a field of the before row",
            "{mode}"
        );
        assert_eq!(
            error(&opts("id"), deleted(s("a"))),
            "route.by.field id is not a string column",
            "{mode}"
        );
        let r = out(&opts("name"), deleted(s("a"))).unwrap();
        assert_eq!(&*r.topic, "a", "{mode}");
        let r = out(&opts("name"), deleted(s(" "))).unwrap();
        assert_eq!(&*r.topic, "db.public.customers", "{mode}");
        let r = out(&opts("name"), deleted(Value::Null)).unwrap();
        assert_eq!(&*r.topic, "db.public.customers", "{mode}");
    }
    // Dropped deletes are not routed, so an unknown column does not fail them.
    let opts = [
        ("delete.tombstone.handling.mode", "drop"),
        ("route.by.field", "nocol"),
    ];
    assert!(out(&opts, deleted(s("a"))).is_none());
}

#[test]
fn tombstones_get_only_the_op_header_and_pass_only_with_rewrite_with_tombstone() {
    let tombstone =
        || records(&t(), Op::Delete, Some(vec![Value::Int(1), s("a")]), None, 1).remove(1);
    for mode in ["drop", "tombstone", "rewrite", "delete-to-tombstone"] {
        let opts = [
            ("delete.tombstone.handling.mode", mode),
            ("add.headers", "op"),
        ];
        assert!(out(&opts, tombstone()).is_none(), "{mode}");
    }
    let opts = [
        ("delete.tombstone.handling.mode", "rewrite-with-tombstone"),
        ("add.headers", "op,op:again,source.op,ts_ms"),
    ];
    let r = out(&opts, tombstone()).unwrap();
    assert_eq!(header(&r, "__op"), Some(Some("d".into())));
    assert_eq!(header(&r, "__again"), Some(Some("d".into())));
    assert_eq!(header(&r, "__source_op"), None);
    assert_eq!(header(&r, "__ts_ms"), None);
    assert!(r.value.is_none() && r.value_schema.is_none());
}
