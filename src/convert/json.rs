//! Kafka Connect's `JsonConverter`, byte for byte.
//!
//! With `schemas.enable=true` each key and value becomes `{"schema":<schema>,"payload":<data>}`;
//! with `false` only the payload. A part whose schema and value are both absent (tombstone
//! value, keyless key) is a Kafka null, not JSON. The rules reproduced here, from Kafka's
//! `JsonConverter`/`JsonSchema` and Jackson:
//! - schema keys in the order `type`, `fields`|`items`|`keys`+`values`, `optional`, `name`,
//!   `version`, `doc`, `parameters`, `default`, `field`; `optional` always written;
//! - struct fields in schema order, every field written; a null value whose schema has a
//!   default is written as the default (`replace.null.with.default=true`, the default);
//! - BYTES and Decimal as standard base64; float and double with Java's `Double.toString`
//!   form (`1.0`, `1.0E7`, `1.0E-4`) and `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! - maps with string keys as objects, other maps as arrays of `[key, value]` pairs;
//! - strings escaped as Jackson does (`\"`, `\\`, `\b\t\n\f\r`, other controls `\u00XX`).
//!
//! The schema half of every record of a relation is identical, so its bytes are built once per
//! schema object and reused.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;

use crate::event::{Schema, SchemaType, Value};

/// Serialises Connect schemas and values as `JsonConverter` does.
#[derive(Debug)]
pub struct JsonConverter {
    schemas_enable: bool,
    replace_null_with_default: bool,
    /// Schema bytes per schema object (keyed by address; the `Arc` kept here keeps it valid).
    cache: HashMap<usize, (Arc<Schema>, Vec<u8>)>,
}

/// Upper bound on cached schema encodings before the cache is cleared.
const SCHEMA_CACHE_LIMIT: usize = 4096;

impl JsonConverter {
    /// A converter; `schemas_enable` is the converter's `schemas.enable` property.
    pub fn new(schemas_enable: bool) -> Self {
        JsonConverter {
            schemas_enable,
            replace_null_with_default: true,
            cache: HashMap::new(),
        }
    }

    /// Serialises one record part into `out` (cleared first). Returns `false` for a Kafka
    /// null (no schema and no value), leaving `out` empty.
    pub fn serialize(
        &mut self,
        schema: Option<&Arc<Schema>>,
        value: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> bool {
        out.clear();
        let value = value.filter(|v| !v.is_null());
        if schema.is_none() && value.is_none() {
            return false;
        }
        if self.schemas_enable {
            out.extend_from_slice(b"{\"schema\":");
            match schema {
                Some(s) => {
                    let key = Arc::as_ptr(s) as usize;
                    if !self.cache.contains_key(&key) {
                        if self.cache.len() >= SCHEMA_CACHE_LIMIT {
                            self.cache.clear();
                        }
                        let mut bytes = Vec::with_capacity(1024);
                        write_schema(s, None, &mut bytes);
                        self.cache.insert(key, (s.clone(), bytes));
                    }
                    out.extend_from_slice(&self.cache[&key].1);
                }
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(b",\"payload\":");
            self.write_payload(schema.map(|s| &**s), value, out);
            out.push(b'}');
        } else {
            self.write_payload(schema.map(|s| &**s), value, out);
        }
        true
    }

    fn write_payload(&self, schema: Option<&Schema>, value: Option<&Value>, out: &mut Vec<u8>) {
        match (schema, value) {
            (Some(s), v) => write_value(
                s,
                v.unwrap_or(&Value::Null),
                self.replace_null_with_default,
                out,
            ),
            (None, Some(v)) => write_schemaless(v, out),
            (None, None) => out.extend_from_slice(b"null"),
        }
    }
}

/// Writes a schema as `JsonConverter.asJsonSchema` does; `field` is the enclosing field name.
pub fn write_schema(s: &Schema, field: Option<&str>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(s.ty.json_name().as_bytes());
    out.push(b'"');
    match s.ty {
        SchemaType::Struct => {
            out.extend_from_slice(b",\"fields\":[");
            for (i, f) in s.fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_schema(&f.schema, Some(&f.name), out);
            }
            out.push(b']');
        }
        SchemaType::Array => {
            out.extend_from_slice(b",\"items\":");
            if let Some(items) = &s.items {
                write_schema(items, None, out);
            } else {
                out.extend_from_slice(b"null");
            }
        }
        SchemaType::Map => {
            out.extend_from_slice(b",\"keys\":");
            match &s.keys {
                Some(k) => write_schema(k, None, out),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(b",\"values\":");
            match &s.items {
                Some(v) => write_schema(v, None, out),
                None => out.extend_from_slice(b"null"),
            }
        }
        _ => {}
    }
    out.extend_from_slice(if s.optional {
        b",\"optional\":true"
    } else {
        b",\"optional\":false"
    });
    if let Some(name) = &s.name {
        out.extend_from_slice(b",\"name\":");
        write_str(name, out);
    }
    if let Some(v) = s.version {
        out.extend_from_slice(b",\"version\":");
        out.extend_from_slice(v.to_string().as_bytes());
    }
    if let Some(doc) = &s.doc {
        out.extend_from_slice(b",\"doc\":");
        write_str(doc, out);
    }
    if !s.parameters.is_empty() {
        out.extend_from_slice(b",\"parameters\":{");
        for (i, (k, v)) in s.parameters.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(k, out);
            out.push(b':');
            write_str(v, out);
        }
        out.push(b'}');
    }
    if let Some(d) = &s.default {
        out.extend_from_slice(b",\"default\":");
        write_value(s, d, true, out);
    }
    if let Some(f) = field {
        out.extend_from_slice(b",\"field\":");
        write_str(f, out);
    }
    out.push(b'}');
}

/// Writes `value` shaped by `schema`, substituting defaults for nulls when asked.
pub fn write_value(
    schema: &Schema,
    value: &Value,
    replace_null_with_default: bool,
    out: &mut Vec<u8>,
) {
    if value.is_null() {
        match (&schema.default, replace_null_with_default) {
            (Some(d), true) if !d.is_null() => write_value(schema, d, false, out),
            _ => out.extend_from_slice(b"null"),
        }
        return;
    }
    match (schema.ty, value) {
        (SchemaType::Struct, Value::Struct(values)) => {
            out.push(b'{');
            for (i, f) in schema.fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(&f.name, out);
                out.push(b':');
                write_value(
                    &f.schema,
                    values.get(i).unwrap_or(&Value::Null),
                    replace_null_with_default,
                    out,
                );
            }
            out.push(b'}');
        }
        (SchemaType::Array, Value::Array(items)) => {
            out.push(b'[');
            let item_schema = schema.items.as_deref();
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match item_schema {
                    Some(s) => write_value(s, v, replace_null_with_default, out),
                    None => write_schemaless(v, out),
                }
            }
            out.push(b']');
        }
        (SchemaType::Map, Value::Map(pairs)) => {
            let string_keys = schema
                .keys
                .as_ref()
                .map(|k| k.ty == SchemaType::String)
                .unwrap_or(false);
            let vs = schema.items.as_deref();
            if string_keys {
                out.push(b'{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(k.as_str().unwrap_or(""), out);
                    out.push(b':');
                    match vs {
                        Some(s) => write_value(s, v, replace_null_with_default, out),
                        None => write_schemaless(v, out),
                    }
                }
                out.push(b'}');
            } else {
                out.push(b'[');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.push(b'[');
                    match schema.keys.as_deref() {
                        Some(s) => write_value(s, k, replace_null_with_default, out),
                        None => write_schemaless(k, out),
                    }
                    out.push(b',');
                    match vs {
                        Some(s) => write_value(s, v, replace_null_with_default, out),
                        None => write_schemaless(v, out),
                    }
                    out.push(b']');
                }
                out.push(b']');
            }
        }
        _ => write_schemaless(value, out),
    }
}

/// Writes a value without a schema (used for primitives, where the value decides the form).
fn write_schemaless(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
        Value::Float32(f) => write_java_float(*f as f64, true, out),
        Value::Float64(f) => write_java_float(*f, false, out),
        Value::String(s) => write_str(s, out),
        Value::Shared(s) => write_str(s, out),
        Value::Bytes(b) => {
            out.push(b'"');
            out.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(b)
                    .as_bytes(),
            );
            out.push(b'"');
        }
        // Without a schema a struct's field names are unknown: its values form an array.
        Value::Array(items) | Value::Struct(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_schemaless(v, out);
            }
            out.push(b']');
        }
        Value::Map(pairs) => {
            out.push(b'{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(k.as_str().unwrap_or(""), out);
                out.push(b':');
                write_schemaless(v, out);
            }
            out.push(b'}');
        }
    }
}

/// Writes a JSON string with Jackson's escaping.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push(b'"');
    let bytes = s.as_bytes();
    // Controls, quote and backslash are escaped; so is every character outside the Basic
    // Multilingual Plane (4-byte UTF-8, lead byte 0xF0-0xF4), which Jackson writes as a
    // surrogate pair of \uXXXX escapes as Kafka Connect's JsonConverter uses it.
    let needs_escape = |b: u8| b < 0x20 || b == b'"' || b == b'\\' || b >= 0xF0;
    let push_u = |out: &mut Vec<u8>, unit: u32| {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[((unit >> shift) & 0xF) as usize]);
        }
    };
    let mut start = 0;
    while let Some(off) = bytes[start..].iter().position(|&b| needs_escape(b)) {
        let i = start + off;
        out.extend_from_slice(&bytes[start..i]);
        let b = bytes[i];
        if b >= 0xF0 {
            let c = s[i..].chars().next().map_or(0xFFFD, u32::from);
            let v = c - 0x10000;
            push_u(out, 0xD800 + (v >> 10));
            push_u(out, 0xDC00 + (v & 0x3FF));
            start = i + 4;
            continue;
        }
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0D => out.extend_from_slice(b"\\r"),
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xF) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Writes a float or double as Java's `Float.toString`/`Double.toString` (shortest
/// round-tripping digits), or as the JSON strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
pub fn write_java_float(v: f64, single: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(java_float_string(v, single).as_bytes());
}

/// The text [`write_java_float`] writes (with quotes for non-finite values).
pub fn java_float_string(v: f64, single: bool) -> String {
    let text = crate::util::java_float_text(v, single);
    if v.is_finite() {
        text
    } else {
        format!("\"{text}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Field;

    #[test]
    fn doubles_print_as_java_double_to_string() {
        let cases = [
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1.5, "1.5"),
            (0.001, "0.001"),
            (1e-4, "1.0E-4"),
            (1e7, "1.0E7"),
            (9999999.0, "9999999.0"),
            (1.234e10, "1.234E10"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (123456.789, "123456.789"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (5e-324, "4.9E-324"),
            (1e23, "1.0E23"),
            (3e10, "3.0E10"),
            (0.2, "0.2"),
        ];
        for (v, want) in cases {
            assert_eq!(java_float_string(v, false), want, "{v}");
        }
        assert_eq!(java_float_string(f64::NAN, false), "\"NaN\"");
        assert_eq!(java_float_string(f64::NEG_INFINITY, false), "\"-Infinity\"");
        assert_eq!(java_float_string(-0.0, false), "-0.0");
    }

    #[test]
    fn floats_use_single_precision_shortest_digits() {
        assert_eq!(java_float_string(2.71f32 as f64, true), "2.71");
        assert_eq!(java_float_string(1.1f32 as f64, true), "1.1");
        assert_eq!(java_float_string(1e10f32 as f64, true), "1.0E10");
        assert_eq!(java_float_string(f32::from_bits(1) as f64, true), "1.4E-45");
    }

    #[test]
    fn strings_escape_as_jackson_does() {
        let mut out = Vec::new();
        write_str("a\"b\\c\n\u{1}\u{1f}é/😀", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"b\\c\n\u0001\u001Fé/\uD83D\uDE00""#
        );
    }

    #[test]
    fn schema_attributes_follow_json_converter_key_order() {
        let mut field = Schema::new(SchemaType::Bytes, true)
            .named("org.apache.kafka.connect.data.Decimal")
            .param("scale", "2")
            .param("connect.decimal.precision", "10");
        field.default = Some(Value::Bytes(vec![0]));
        let s = Schema::structure("p.s.t.Value", true, vec![Field::new("balance", field)]);
        let mut out = Vec::new();
        write_schema(&s, None, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"type":"struct","fields":[{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"default":"AA==","field":"balance"}],"optional":true,"name":"p.s.t.Value"}"#
        );
    }

    #[test]
    fn null_field_with_default_is_written_as_the_default() {
        let mut id = Schema::new(SchemaType::Int32, false);
        id.default = Some(Value::Int(0));
        let s = Arc::new(Schema::structure("k", false, vec![Field::new("id", id)]));
        let mut c = JsonConverter::new(false);
        let mut out = Vec::new();
        assert!(c.serialize(Some(&s), Some(&Value::Struct(vec![Value::Null])), &mut out));
        assert_eq!(out, br#"{"id":0}"#);
    }

    #[test]
    fn absent_schema_and_value_is_a_kafka_null() {
        let mut c = JsonConverter::new(true);
        let mut out = Vec::new();
        assert!(!c.serialize(None, None, &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn schemas_enabled_wraps_schema_and_payload() {
        let s = Arc::new(Schema::new(SchemaType::String, true));
        let mut c = JsonConverter::new(true);
        let mut out = Vec::new();
        c.serialize(Some(&s), Some(&Value::String("x".into())), &mut out);
        assert_eq!(
            out,
            br#"{"schema":{"type":"string","optional":true},"payload":"x"}"#
        );
    }
}
