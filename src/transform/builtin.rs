//! Kafka Connect's `Filter` (drop every record its predicate selects), and the tests of Kafka
//! Connect's built-in transforms (`org.apache.kafka.connect.transforms.*`, Kafka 4.3) as a
//! family. Each other class lives in its own module ([`super::fields`], [`super::flatten`],
//! [`super::cast`], [`super::headers`], [`super::timestamp`], [`super::regex_router`]) and is
//! registered in [`super::TRANSFORMS`].

use super::{Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::ConnectRecord;

/// `Filter`: drops every record it is applied to (with a predicate, the records it selects).
#[derive(Debug, Clone, Copy)]
pub struct Filter;

impl Transformation for Filter {
    /// `Filter` has no options of its own.
    fn parse(_: &Declared<'_>, _: &mut Options<'_>) -> Option<Self> {
        Some(Filter)
    }

    fn apply(&mut self, _: ConnectRecord) -> Result<Option<ConnectRecord>> {
        Ok(None)
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

#[cfg(test)]
mod tests {
    use crate::event::{Op, SchemaType, Value};
    use crate::transform::testutil::*;

    const P: &str = "org.apache.kafka.connect.transforms.";

    fn orders() -> std::sync::Arc<crate::event::TableDescriptor> {
        table(
            "public",
            "orders",
            vec![
                col("id", SchemaType::Int32, false),
                col("note", SchemaType::String, true),
            ],
        )
    }

    fn one(class: &str, opts: &[(&str, &str)]) -> Vec<crate::transform::Stage> {
        let ty = format!("{P}{class}");
        let mut pairs: Vec<(String, String)> = vec![
            ("transforms".into(), "unwrap,t".into()),
            (
                "transforms.unwrap.type".into(),
                crate::transform::EXTRACT_NEW_RECORD_STATE.into(),
            ),
            (
                "transforms.unwrap.delete.tombstone.handling.mode".into(),
                "tombstone".into(),
            ),
            ("transforms.t.type".into(), ty),
        ];
        for (k, v) in opts {
            pairs.push((format!("transforms.t.{k}"), v.to_string()));
        }
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        chain(&refs)
    }

    fn problems(class: &str, opts: &[(&str, &str)]) -> String {
        let ty = format!("{P}{class}");
        let mut pairs: Vec<(String, String)> = vec![
            ("transforms".into(), "t".into()),
            ("transforms.t.type".into(), ty),
        ];
        for (k, v) in opts {
            pairs.push((format!("transforms.t.{k}"), v.to_string()));
        }
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        configs(&refs).expect_err("the options must be refused")
    }

    fn delete_and_tombstone() -> Vec<crate::event::ConnectRecord> {
        records(
            &orders(),
            Op::Delete,
            Some(vec![Value::Int(7), s("x")]),
            None,
            1,
        )
    }

    #[test]
    fn transforms_that_connect_fails_on_a_tombstone_pass_it_through() {
        for (class, opts) in [
            ("MaskField$Value", vec![("fields", "note")]),
            ("ValueToKey", vec![("fields", "id")]),
            (
                "HeaderFrom$Value",
                vec![("fields", "note"), ("headers", "n"), ("operation", "move")],
            ),
        ] {
            let out = run(&mut one(class, &opts), delete_and_tombstone());
            assert_eq!(out.len(), 1, "{class}: the delete is dropped by unwrap");
            assert!(out[0].value.is_none(), "{class}: the tombstone stays one");
            assert_eq!(
                render(&out[0], false).0.as_deref(),
                Some(r#"{"id":7}"#),
                "{class}"
            );
        }
    }

    #[test]
    fn hoisting_a_tombstone_gives_a_schemaless_map_as_connect_does() {
        let mut c = chain(&[
            ("transforms", "t"),
            (
                "transforms.t.type",
                "org.apache.kafka.connect.transforms.HoistField$Value",
            ),
            ("transforms.t.field", "row"),
        ]);
        let out = run(&mut c, delete_and_tombstone());
        assert_eq!(out.len(), 2, "the delete and its tombstone");
        assert_eq!(
            render(&out[1], true).1.as_deref(),
            Some(r#"{"schema":null,"payload":{"row":null}}"#)
        );
    }

    #[test]
    fn flattening_a_null_with_a_schema_gives_the_flattened_schema_as_connect_does() {
        let out = run(
            &mut one("Flatten$Value", &[("delimiter", "_")]),
            delete_and_tombstone(),
        );
        assert_eq!(out.len(), 1);
        let (_, v) = render(&out[0], true);
        let v = v.unwrap();
        assert!(v.ends_with(r#""payload":null}"#), "{v}");
        assert!(
            v.contains(r#""optional":false,"name":"db.public.orders.Value""#),
            "{v}"
        );
    }

    #[test]
    fn mask_value_to_key_and_cast_on_a_row() {
        let rec = || insert(&orders(), vec![Value::Int(300), s("secret")]);
        let out = run(
            &mut one("MaskField$Value", &[("fields", "note,id")]),
            vec![rec()],
        );
        assert_eq!(
            render(&out[0], false).1.as_deref(),
            Some(r#"{"id":0,"note":""}"#)
        );
        let out = run(&mut one("ValueToKey", &[("fields", "note")]), vec![rec()]);
        assert_eq!(
            render(&out[0], false).0.as_deref(),
            Some(r#"{"note":"secret"}"#)
        );
        let out = run(
            &mut one("Cast$Value", &[("spec", "id:int8,note:boolean")]),
            vec![rec()],
        );
        assert_eq!(
            render(&out[0], false).1.as_deref(),
            Some(r#"{"id":44,"note":false}"#)
        );
        let out = run(&mut one("Filter", &[]), vec![rec()]);
        assert!(out.is_empty());
    }

    #[test]
    fn a_required_inserted_field_without_a_value_is_an_error_naming_it() {
        let mut c = one("InsertField$Value", &[("timestamp.field", "ts!")]);
        let r = insert(&orders(), vec![Value::Int(1), s("a")]);
        let e = crate::transform::apply_chain(&mut c, r).expect_err("no record timestamp");
        assert!(
            e.message().contains("required field \"ts\""),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_field_the_schema_lacks_is_an_error_naming_it() {
        let r = || insert(&orders(), vec![Value::Int(1), s("a")]);
        for (class, opts, needle) in [
            (
                "ValueToKey",
                vec![("fields", "nope")],
                "field does not exist: nope",
            ),
            (
                "ExtractField$Value",
                vec![("field", "nope")],
                "unknown field: nope",
            ),
            (
                "HeaderFrom$Value",
                vec![("fields", "nope"), ("headers", "h"), ("operation", "copy")],
                "field \"nope\"",
            ),
        ] {
            let e = crate::transform::apply_chain(&mut one(class, &opts), r()).expect_err(class);
            assert!(e.message().contains(needle), "{class}: {}", e.message());
        }
    }

    #[test]
    fn a_misspelled_insert_field_option_is_the_one_problem_reported() {
        let msg = problems(
            "InsertField$Value",
            &[("static.feild", "origin"), ("static.value", "x")],
        );
        assert!(
            msg.contains("transforms.t.static.feild is not an option")
                && msg.contains("did you mean transforms.t.static.field?"),
            "{msg}"
        );
        assert!(!msg.contains("no field insertion configured"), "{msg}");
    }

    #[test]
    fn bad_options_are_refused_at_startup_naming_the_key() {
        for (class, opts, needle) in [
            (
                "InsertField$Value",
                vec![("offset.field", "o")],
                "transforms.t.offset.field only applies to sink connectors",
            ),
            ("InsertField$Value", vec![], "no field insertion configured"),
            (
                "InsertField$Value",
                vec![("static.field", "s")],
                "transforms.t.static.value is required",
            ),
            (
                "Cast$Value",
                vec![("spec", "id:decimal")],
                "cannot cast to \"decimal\"",
            ),
            (
                "Cast$Value",
                vec![("spec", "int8,id:int16")],
                "may hold only that one type",
            ),
            (
                "HeaderFrom$Key",
                vec![("fields", "a,b"), ("headers", "h"), ("operation", "copy")],
                "as many items as fields",
            ),
            (
                "HeaderFrom$Key",
                vec![("fields", "a"), ("headers", "h"), ("operation", "swap")],
                "operation=swap is invalid",
            ),
            (
                "MaskField$Value",
                vec![("fields", "a,a")],
                "lists \"a\" twice",
            ),
            (
                "ReplaceField$Value",
                vec![("renames", "a")],
                "invalid rename mapping",
            ),
            (
                "SetSchemaMetadata$Value",
                vec![],
                "neither schema.name nor schema.version",
            ),
            (
                "InsertHeader",
                vec![("header", "h"), ("value.literal", "[1,2]")],
                "array or a map",
            ),
            ("DropHeaders", vec![], "transforms.t.headers is required"),
            (
                "Flatten$Value",
                vec![("delimter", "_")],
                "did you mean transforms.t.delimiter",
            ),
        ] {
            let msg = problems(class, &opts);
            assert!(msg.contains(needle), "{class} {opts:?}: {msg}");
        }
    }

    #[test]
    fn every_class_name_parses() {
        let kafka = crate::transform::transform_types();
        for name in kafka.iter().filter(|n| n.starts_with(P)) {
            let (_, short) = name.split_at(P.len());
            let class = short;
            // Each parses with its required options or reports them, never "not implemented".
            let msg = problems(class, &[("no.such.option", "x")]);
            assert!(!msg.contains("is not implemented"), "{name}: {msg}");
        }
    }
}
