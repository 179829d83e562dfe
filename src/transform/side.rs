//! What Kafka Connect's built-in transforms share: the side of the record a `$Key` or `$Value`
//! variant works on, per-schema caches of the schemas they derive, and the struct helpers their
//! output depends on (`Struct.get` substituting a field's default, `SchemaUtil.copySchemaBasics`).
//!
//! Invariant: a transform that derives a schema derives it once per input schema (cached by
//! the input's `Arc` address, bounded), so the converters, which cache by address too, see one
//! schema per table and not one per record.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Error;
use crate::event::{ConnectRecord, Schema, SchemaType, Value};

/// The part of a record a `$Key` or `$Value` transform reads and rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The record key (`…$Key`).
    Key,
    /// The record value (`…$Value`).
    Value,
}

impl Side {
    /// Splits `Base$Key` / `Base$Value` into the base class name and the side.
    pub fn of_class(class: &str) -> Option<(&str, Side)> {
        if let Some(base) = class.strip_suffix("$Key") {
            Some((base, Side::Key))
        } else {
            class.strip_suffix("$Value").map(|b| (b, Side::Value))
        }
    }

    /// `Key` or `Value`, as the class suffix spells it.
    pub fn name(self) -> &'static str {
        match self {
            Side::Key => "Key",
            Side::Value => "Value",
        }
    }

    /// The schema of this side (`None`: schemaless, or a null key / tombstone).
    pub fn schema(self, r: &ConnectRecord) -> Option<&Arc<Schema>> {
        match self {
            Side::Key => r.key_schema.as_ref(),
            Side::Value => r.value_schema.as_ref(),
        }
    }

    /// The data of this side; `None` for a Kafka null (a `Value::Null` counts as null too).
    pub fn value(self, r: &ConnectRecord) -> Option<&Value> {
        match self {
            Side::Key => r.key.as_ref(),
            Side::Value => r.value.as_ref(),
        }
        .filter(|v| !v.is_null())
    }

    /// Takes the data of this side out of the record (leaving a null).
    pub fn take(self, r: &mut ConnectRecord) -> Option<Value> {
        match self {
            Side::Key => r.key.take(),
            Side::Value => r.value.take(),
        }
        .filter(|v| !v.is_null())
    }

    /// Replaces schema and data of this side.
    pub fn set(self, r: &mut ConnectRecord, schema: Option<Arc<Schema>>, value: Option<Value>) {
        match self {
            Side::Key => {
                r.key_schema = schema;
                r.key = value;
            }
            Side::Value => {
                r.value_schema = schema;
                r.value = value;
            }
        }
    }
}

/// Most input schemas a cache keeps before it starts again (Connect keeps an LRU of 16 per
/// transform; a table's schema changes rarely, so a larger bound costs little).
const CACHE_LIMIT: usize = 256;

/// Derived schemas by input schema address; the input `Arc` is kept so the address stays
/// valid while it is a key.
#[derive(Debug, Clone)]
pub struct SchemaCache<T = Arc<Schema>> {
    map: HashMap<usize, (Arc<Schema>, T)>,
}

impl<T> Default for SchemaCache<T> {
    fn default() -> Self {
        SchemaCache {
            map: HashMap::new(),
        }
    }
}

impl<T: Clone> SchemaCache<T> {
    /// What `derive` makes of `input`, computed at most once per input schema.
    pub fn get_or_try(
        &mut self,
        input: &Arc<Schema>,
        derive: impl FnOnce(&Schema) -> Result<T, String>,
    ) -> Result<T, String> {
        let key = Arc::as_ptr(input) as usize;
        if let Some((_, out)) = self.map.get(&key) {
            return Ok(out.clone());
        }
        let out = derive(input)?;
        if self.map.len() >= CACHE_LIMIT {
            self.map.clear();
        }
        self.map.insert(key, (input.clone(), out.clone()));
        Ok(out)
    }
}

/// A struct schema with the name, version, doc and parameters of `s` (Connect's
/// `SchemaUtil.copySchemaBasics` into `SchemaBuilder.struct()`): required, no default, no
/// fields yet.
pub fn struct_basics(s: &Schema) -> Schema {
    let mut out = Schema::new(SchemaType::Struct, false);
    out.name = s.name.clone();
    out.version = s.version;
    out.doc = s.doc.clone();
    out.parameters = s.parameters.clone();
    out
}

/// The positional values of a struct value (an empty slice for anything else).
pub fn struct_values(v: &Value) -> &[Value] {
    match v {
        Value::Struct(vs) => vs,
        _ => &[],
    }
}

/// Field `i` of struct value `values` shaped by `schema`, as Connect's `Struct.get` reads it
/// when `with_default` (a null field whose schema has a default reads as the default) and as
/// `Struct.getWithoutDefault` otherwise.
pub fn field_value(schema: &Schema, values: &[Value], i: usize, with_default: bool) -> Value {
    let v = values.get(i).cloned().unwrap_or(Value::Null);
    if v.is_null() && with_default {
        if let Some(d) = schema.fields.get(i).and_then(|f| f.schema.default.clone()) {
            return d;
        }
    }
    v
}

/// Parses a Connect `LIST` value: comma-separated, each item trimmed; empty text is an empty
/// list.
pub fn list(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    text.split(',').map(|s| s.trim().to_string()).collect()
}

/// The error of a record a Connect transform cannot handle, naming the class variant and the
/// alias, as the task failure Kafka Connect would report it.
pub fn data_error(class: &str, alias: &str, msg: impl std::fmt::Display) -> Error {
    Error::transform(format!("{class} (transforms.{alias}): {msg}"))
}

/// The short class name for messages (`InsertField$Value`).
pub fn short_class(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_suffix_names_the_side() {
        assert_eq!(
            Side::of_class("org.apache.kafka.connect.transforms.Cast$Key"),
            Some(("org.apache.kafka.connect.transforms.Cast", Side::Key))
        );
        assert_eq!(
            Side::of_class("x.Cast$Value").map(|x| x.1),
            Some(Side::Value)
        );
        assert_eq!(Side::of_class("x.Cast"), None);
    }

    #[test]
    fn lists_split_on_commas_and_trim() {
        assert_eq!(list(" a, b ,c"), ["a", "b", "c"]);
        assert!(list("  ").is_empty());
        assert_eq!(list("a,,b"), ["a", "", "b"]);
    }

    #[test]
    fn field_value_substitutes_defaults_only_when_asked() {
        let mut with_default = Schema::new(SchemaType::Int32, true);
        with_default.default = Some(Value::Int(5));
        let s = Schema::structure(
            "s",
            false,
            vec![crate::event::Field::new("a", with_default)],
        );
        assert_eq!(field_value(&s, &[Value::Null], 0, true), Value::Int(5));
        assert_eq!(field_value(&s, &[Value::Null], 0, false), Value::Null);
        assert_eq!(field_value(&s, &[Value::Int(1)], 0, true), Value::Int(1));
    }

    #[test]
    fn the_cache_derives_once_per_input_schema() {
        let mut c: SchemaCache = SchemaCache::default();
        let input = Arc::new(Schema::new(SchemaType::Int32, false));
        let mut calls = 0;
        for _ in 0..3 {
            c.get_or_try(&input, |s| {
                calls += 1;
                Ok(Arc::new(s.clone()))
            })
            .unwrap();
        }
        assert_eq!(calls, 1);
    }
}
