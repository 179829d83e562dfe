//! Why a registry refused a schema: the fields that make a new Avro schema incompatible with
//! the latest registered one under a compatibility level, said in terms of columns.
//!
//! The registry's own answer to a refused registration names no field. [`explain`] compares
//! the two schemas' records of the same full name (a table's `...Value` row record among
//! them) field by field, with Avro's resolution rules: BACKWARD reads the old records with
//! the new schema, FORWARD the new records with the old schema, FULL both. Pure: JSON in,
//! sentences out; a schema it cannot parse gives no explanation (the registry's message
//! still stands).

use std::collections::BTreeMap;

use serde_json::Value as J;

/// Which readings a compatibility level requires: (new reads old, old reads new).
fn directions(level: Option<&str>) -> (bool, bool) {
    let level = level.unwrap_or("").to_ascii_uppercase();
    if level.starts_with("BACKWARD") {
        (true, false)
    } else if level.starts_with("FORWARD") {
        (false, true)
    } else {
        (true, true)
    }
}

/// A field's type with nullability apart: (`T` of `["null", T]` or `T`, nullable).
fn shape(t: &J) -> (J, bool) {
    if let J::Array(branches) = t {
        let non_null: Vec<&J> = branches.iter().filter(|b| *b != "null").collect();
        let nullable = non_null.len() < branches.len();
        if non_null.len() == 1 {
            return (non_null[0].clone(), nullable);
        }
        return (J::Array(non_null.into_iter().cloned().collect()), nullable);
    }
    (t.clone(), false)
}

/// A type's short name for messages and for promotion: the primitive (`int`, `string`), a
/// logical type's `type`, or a named type's name.
fn type_name(t: &J) -> String {
    match t {
        J::String(s) => s.clone(),
        J::Object(o) => match (o.get("type"), o.get("name")) {
            (_, Some(J::String(n))) => n.clone(),
            (Some(inner), None) => type_name(inner),
            _ => "?".into(),
        },
        J::Array(a) => a.iter().map(type_name).collect::<Vec<_>>().join("|"),
        _ => "?".into(),
    }
}

/// Whether data written as `writer` reads as `reader` (equal names, or Avro's promotions).
fn promotes(writer: &str, reader: &str) -> bool {
    writer == reader
        || matches!(
            (writer, reader),
            ("int", "long" | "float" | "double")
                | ("long", "float" | "double")
                | ("float", "double")
                | ("string", "bytes")
                | ("bytes", "string")
        )
}

/// A record's fields by name: (type, has a default).
type Fields = BTreeMap<String, (J, bool)>;

/// Every record type in `schema` by full name (nested records too).
fn records(schema: &J, namespace: &str, out: &mut BTreeMap<String, Fields>) {
    match schema {
        J::Array(branches) => branches.iter().for_each(|b| records(b, namespace, out)),
        J::Object(o) if o.get("type") == Some(&J::String("record".into())) => {
            let name = o.get("name").and_then(J::as_str).unwrap_or("");
            let ns = o.get("namespace").and_then(J::as_str).unwrap_or(namespace);
            let full = if name.contains('.') || ns.is_empty() {
                name.to_string()
            } else {
                format!("{ns}.{name}")
            };
            let mut fields = Fields::new();
            for f in o.get("fields").and_then(J::as_array).into_iter().flatten() {
                let (Some(fname), Some(t)) = (f.get("name").and_then(J::as_str), f.get("type"))
                else {
                    continue;
                };
                records(t, ns, out);
                fields.insert(fname.to_string(), (t.clone(), f.get("default").is_some()));
            }
            out.insert(full, fields);
        }
        J::Object(o) => {
            if let Some(items) = o.get("items").or_else(|| o.get("values")) {
                records(items, namespace, out);
            }
        }
        _ => {}
    }
}

/// The problems of one field present in both records, for the directions required.
fn changed(field: &str, old: &J, new: &J, (backward, forward): (bool, bool)) -> Vec<String> {
    let ((old_t, old_null), (new_t, new_null)) = (shape(old), shape(new));
    let (old_name, new_name) = (type_name(&old_t), type_name(&new_t));
    let mut out = Vec::new();
    if old_name != new_name {
        if backward && !promotes(&old_name, &new_name) {
            out.push(format!(
                "column `{field}` changed type from {old_name} to {new_name}: the new schema cannot read the records written before (BACKWARD)"
            ));
        }
        if forward && !promotes(&new_name, &old_name) {
            out.push(format!(
                "column `{field}` changed type from {old_name} to {new_name}: readers of the old schema cannot read the new records (FORWARD)"
            ));
        }
    }
    if backward && old_null && !new_null {
        out.push(format!(
            "column `{field}` became NOT NULL: the new schema cannot read the nulls written before (BACKWARD)"
        ));
    }
    if forward && new_null && !old_null {
        out.push(format!(
            "column `{field}` became nullable: readers of the old schema cannot read a null (FORWARD)"
        ));
    }
    out
}

/// The fields that make `new` incompatible with `old` (both Avro schema JSON text) under
/// `level` (`BACKWARD`, `FORWARD`, `FULL`, their `_TRANSITIVE` forms; anything else is
/// treated as both directions), one sentence each naming the column (the field) and the
/// table's record. Empty when nothing is found or a schema does not parse.
pub fn explain(level: Option<&str>, old: &str, new: &str) -> Vec<String> {
    let (Ok(old), Ok(new)) = (
        serde_json::from_str::<J>(old),
        serde_json::from_str::<J>(new),
    ) else {
        return Vec::new();
    };
    let dirs = directions(level);
    let (mut old_records, mut new_records) = (BTreeMap::new(), BTreeMap::new());
    records(&old, "", &mut old_records);
    records(&new, "", &mut new_records);
    let mut out = Vec::new();
    for (name, new_fields) in &new_records {
        let Some(old_fields) = old_records.get(name) else {
            continue;
        };
        let mut problems = Vec::new();
        for (field, (t, default)) in new_fields {
            match old_fields.get(field) {
                None if dirs.0 && !default => problems.push(format!(
                    "column `{field}` was added without a default: the new schema cannot read the records written before (BACKWARD)"
                )),
                None => {}
                Some((old_t, _)) => problems.extend(changed(field, old_t, t, dirs)),
            }
        }
        for (field, (_, default)) in old_fields {
            if dirs.1 && !new_fields.contains_key(field) && !default {
                problems.push(format!(
                    "column `{field}` was removed, and the old schema has no default for it: readers of the old schema cannot read the new records (FORWARD)"
                ));
            }
        }
        out.extend(problems.into_iter().map(|p| format!("{p} [record {name}]")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Debezium-like value schema whose row record has `fields` (JSON text of each).
    fn value(fields: &[&str]) -> String {
        format!(
            r#"{{"type":"record","name":"Envelope","namespace":"p.public.t","fields":[
                {{"name":"before","type":["null",{{"type":"record","name":"Value","fields":[{0}]}}],"default":null}},
                {{"name":"after","type":["null","Value"],"default":null}},
                {{"name":"op","type":"string"}}]}}"#,
            fields.join(",")
        )
    }

    const ID: &str = r#"{"name":"id","type":"int"}"#;
    const A_INT: &str = r#"{"name":"a","type":["null","int"],"default":null}"#;

    fn problems(level: &str, old: &[&str], new: &[&str]) -> Vec<String> {
        explain(Some(level), &value(old), &value(new))
    }

    #[test]
    fn a_nullable_column_or_one_with_a_default_is_compatible_everywhere() {
        let with_default = r#"{"name":"b","type":"int","default":5}"#;
        for level in ["BACKWARD", "FORWARD", "FULL"] {
            assert!(problems(level, &[ID], &[ID, A_INT]).is_empty(), "{level}");
            assert!(
                problems(level, &[ID], &[ID, with_default]).is_empty(),
                "{level}"
            );
        }
    }

    #[test]
    fn a_column_added_without_a_default_breaks_backward_only() {
        let b = r#"{"name":"b","type":"int"}"#;
        let p = problems("BACKWARD", &[ID], &[ID, b]);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("column `b` was added without a default"),
            "{p:?}"
        );
        assert!(p[0].contains("[record p.public.t.Value]"), "{p:?}");
        assert!(problems("FORWARD", &[ID], &[ID, b]).is_empty());
        assert_eq!(problems("FULL", &[ID], &[ID, b]).len(), 1);
    }

    #[test]
    fn a_dropped_column_breaks_forward_unless_it_had_a_default() {
        let b = r#"{"name":"b","type":"int"}"#;
        assert!(problems("BACKWARD", &[ID, b], &[ID]).is_empty());
        let p = problems("FORWARD", &[ID, b], &[ID]);
        assert!(
            p.len() == 1 && p[0].contains("column `b` was removed"),
            "{p:?}"
        );
        assert!(problems("FORWARD", &[ID, A_INT], &[ID]).is_empty());
    }

    #[test]
    fn widening_breaks_forward_and_narrowing_breaks_backward() {
        let a_long = r#"{"name":"a","type":["null","long"],"default":null}"#;
        assert!(problems("BACKWARD", &[ID, A_INT], &[ID, a_long]).is_empty());
        let p = problems("FORWARD", &[ID, A_INT], &[ID, a_long]);
        assert!(p.len() == 1 && p[0].contains("from int to long"), "{p:?}");
        let p = problems("BACKWARD", &[ID, a_long], &[ID, A_INT]);
        assert!(p.len() == 1 && p[0].contains("from long to int"), "{p:?}");
        let a_text = r#"{"name":"a","type":["null","string"],"default":null}"#;
        assert_eq!(problems("FULL", &[ID, A_INT], &[ID, a_text]).len(), 2);
    }

    #[test]
    fn nullability_changes_break_one_direction_each() {
        let a_required = r#"{"name":"a","type":"int"}"#;
        let p = problems("BACKWARD", &[ID, A_INT], &[ID, a_required]);
        assert!(p.len() == 1 && p[0].contains("became NOT NULL"), "{p:?}");
        assert!(problems("FORWARD", &[ID, A_INT], &[ID, a_required]).is_empty());
        let p = problems("FORWARD", &[ID, a_required], &[ID, A_INT]);
        assert!(p.len() == 1 && p[0].contains("became nullable"), "{p:?}");
    }

    #[test]
    fn renaming_is_a_drop_and_an_add() {
        let b = r#"{"name":"b","type":["null","int"],"default":null}"#;
        let a_required = r#"{"name":"a","type":"int"}"#;
        let b_required = r#"{"name":"b","type":"int"}"#;
        assert!(problems("FULL", &[ID, A_INT], &[ID, b]).is_empty());
        assert_eq!(
            problems("FULL", &[ID, a_required], &[ID, b_required]).len(),
            2
        );
    }

    #[test]
    fn unparseable_schemas_explain_nothing() {
        assert!(explain(Some("FULL"), "{", &value(&[ID])).is_empty());
    }
}
