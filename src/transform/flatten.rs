//! Kafka Connect's `Flatten$Key` / `Flatten$Value`: nested structs become top-level fields
//! named by joining the path with `delimiter` (default `.`), so a Debezium envelope's
//! `after` → `{id, name}` becomes `after.id`, `after.name`.
//!
//! As in Connect 4.3: the flattened schema takes the input's name, version, doc and
//! parameters and is required; a field is optional when it or any struct above it is; a
//! field keeps its default, or takes its parent struct's default; arrays are kept as they are;
//! a map is an error (Connect does not flatten maps in records with schemas). A null nested
//! struct leaves its fields null. Kafka nulls pass through; a null value with a schema takes the
//! flattened schema.

use std::sync::Arc;

use super::side::{data_error, field_value, struct_basics, SchemaCache, Side};
use super::{Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::{ConnectRecord, Field, Schema, SchemaType, Value};

/// The transform with its schema cache.
#[derive(Debug, Clone)]
pub struct Flatten {
    class: String,
    alias: String,
    side: Side,
    delimiter: String,
    cache: SchemaCache,
}

impl Transformation for Flatten {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let delimiter = o.raw("delimiter").unwrap_or(".").to_string();
        Some(Flatten {
            class: class.into(),
            alias: alias.into(),
            side,
            delimiter,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let Some(schema) = self.side.schema(&r).cloned() else {
            return Ok(Some(r));
        };
        if schema.ty != SchemaType::Struct {
            return Err(data_error(
                &self.class,
                &self.alias,
                format!(
                    "only a struct is supported for [flattening] (topic {})",
                    r.topic
                ),
            ));
        }
        let delimiter = &self.delimiter;
        let out_schema = self
            .cache
            .get_or_try(&schema, |s| {
                let mut out = struct_basics(s);
                flat_schema(s, "", delimiter, s.optional, None, &mut out.fields)?;
                Ok(Arc::new(out))
            })
            .map_err(|e| {
                data_error(&self.class, &self.alias, format!("{e} (topic {})", r.topic))
            })?;
        // A null with a schema (ExtractNewRecordState's delete in `tombstone` mode) keeps its
        // null and takes the flattened schema, as in Connect.
        let Some(value) = self.side.take(&mut r) else {
            self.side.set(&mut r, Some(out_schema), None);
            return Ok(Some(r));
        };
        let mut out = Vec::with_capacity(out_schema.fields.len());
        flat_value(&schema, Some(&value), &mut out);
        self.side
            .set(&mut r, Some(out_schema), Some(Value::Struct(out)));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

fn joined(prefix: &str, delimiter: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}{delimiter}{name}")
    }
}

/// Appends the flattened fields of struct schema `s` to `out`.
fn flat_schema(
    s: &Schema,
    prefix: &str,
    delimiter: &str,
    optional: bool,
    parent_default: Option<&Value>,
    out: &mut Vec<Field>,
) -> std::result::Result<(), String> {
    for (i, f) in s.fields.iter().enumerate() {
        let name = joined(prefix, delimiter, &f.name);
        let optional = optional || f.schema.optional;
        let default = f.schema.default.clone().or_else(|| match parent_default {
            Some(Value::Struct(vs)) => Some(field_value(s, vs, i, true)).filter(|v| !v.is_null()),
            _ => None,
        });
        match f.schema.ty {
            SchemaType::Struct => {
                flat_schema(&f.schema, &name, delimiter, optional, default.as_ref(), out)?
            }
            SchemaType::Map => {
                return Err(format!(
                    "Flatten does not support a map in a record with a schema (field {name})"
                ))
            }
            _ => {
                let mut fs = f.schema.clone();
                fs.optional = optional;
                fs.default = default;
                out.push(Field::new(name, fs));
            }
        }
    }
    Ok(())
}

/// Appends the flattened values of struct `value` (shaped by `s`) to `out`; a null struct
/// gives nulls for all its fields.
fn flat_value(s: &Schema, value: Option<&Value>, out: &mut Vec<Value>) {
    let values: &[Value] = match value {
        Some(Value::Struct(vs)) => vs,
        _ => &[],
    };
    for (i, f) in s.fields.iter().enumerate() {
        if f.schema.ty == SchemaType::Struct {
            let v = (!values.is_empty()).then(|| field_value(s, values, i, true));
            flat_value(&f.schema, v.as_ref(), out);
        } else if values.is_empty() {
            out.push(Value::Null);
        } else {
            out.push(field_value(s, values, i, true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_structs_become_joined_fields_and_inherit_optionality() {
        let inner = Schema::structure(
            "inner",
            true,
            vec![
                Field::new("a", Schema::new(SchemaType::Int32, false)),
                Field::new("b", Schema::new(SchemaType::String, true)),
            ],
        );
        let outer = Schema::structure(
            "outer",
            false,
            vec![
                Field::new("x", inner),
                Field::new("op", Schema::new(SchemaType::String, false)),
            ],
        );
        let mut fields = Vec::new();
        flat_schema(&outer, "", "_", false, None, &mut fields).unwrap();
        let names: Vec<(&str, bool)> = fields
            .iter()
            .map(|f| (f.name.as_str(), f.schema.optional))
            .collect();
        assert_eq!(names, [("x_a", true), ("x_b", true), ("op", false)]);
        let mut out = Vec::new();
        let v = Value::Struct(vec![Value::Null, Value::String("c".into())]);
        flat_value(&outer, Some(&v), &mut out);
        assert_eq!(out, [Value::Null, Value::Null, Value::String("c".into())]);
    }
}
