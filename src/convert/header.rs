//! Kafka Connect's `SimpleHeaderConverter`: header values as text.
//!
//! Strings are written as they are; numbers and booleans as Java prints them; structs, maps
//! and arrays in Connect's `Values.convertToString` form, where nested strings are quoted and
//! escaped (`{"id":1002}`); bytes as base64.

use std::borrow::Cow;

use base64::Engine;

use crate::event::{Schema, SchemaType, Value};

/// Renders a header value as `SimpleHeaderConverter` does. `None` for a null value; a
/// string is borrowed as it is.
pub fn render<'a>(schema: &Schema, value: &'a Value) -> Option<Cow<'a, [u8]>> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(Cow::Borrowed(s.as_bytes())),
        Value::Shared(s) => Some(Cow::Borrowed(s.as_bytes())),
        _ => {
            let mut out = String::new();
            append(schema, value, false, &mut out);
            Some(Cow::Owned(out.into_bytes()))
        }
    }
}

fn append(schema: &Schema, value: &Value, embedded: bool, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::String(_) | Value::Shared(_) => {
            let s = value.as_str().unwrap_or_default();
            if embedded {
                out.push('"');
                out.push_str(&s.replace('\\', "\\\\").replace('"', "\\\""));
                out.push('"');
            } else {
                out.push_str(s);
            }
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float32(f) => {
            out.push_str(crate::convert::json::java_float_string(*f as f64, true).trim_matches('"'))
        }
        Value::Float64(f) => {
            out.push_str(crate::convert::json::java_float_string(*f, false).trim_matches('"'))
        }
        Value::Bytes(b) => {
            let text = base64::engine::general_purpose::STANDARD.encode(b);
            if embedded {
                out.push('"');
                out.push_str(&text);
                out.push('"');
            } else {
                out.push_str(&text);
            }
        }
        Value::Struct(values) => {
            out.push('{');
            for (i, f) in schema.fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                append(
                    &Schema::new(SchemaType::String, false),
                    &Value::String(f.name.clone()),
                    true,
                    out,
                );
                out.push(':');
                let v = values.get(i).unwrap_or(&Value::Null);
                let v = if v.is_null() {
                    f.schema.default.as_ref().unwrap_or(v)
                } else {
                    v
                };
                append(&f.schema, v, true, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            let item_schema = schema
                .items
                .as_deref()
                .cloned()
                .unwrap_or_else(|| Schema::new(SchemaType::String, true));
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                append(&item_schema, v, true, out);
            }
            out.push(']');
        }
        Value::Map(pairs) => {
            out.push('{');
            let ks = schema
                .keys
                .as_deref()
                .cloned()
                .unwrap_or_else(|| Schema::new(SchemaType::String, true));
            let vs = schema
                .items
                .as_deref()
                .cloned()
                .unwrap_or_else(|| Schema::new(SchemaType::String, true));
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                append(&ks, k, true, out);
                out.push(':');
                append(&vs, v, true, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Field;

    #[test]
    fn key_struct_headers_render_json_like() {
        let s = Schema::structure(
            "t.Key",
            false,
            vec![
                Field::new("id", Schema::new(SchemaType::Int32, false)),
                Field::new("code", Schema::new(SchemaType::String, false)),
            ],
        );
        let v = Value::Struct(vec![Value::Int(1002), Value::String("a\"b".into())]);
        assert_eq!(&*render(&s, &v).unwrap(), br#"{"id":1002,"code":"a\"b"}"#);
    }

    #[test]
    fn string_headers_are_plain_text() {
        let s = Schema::new(SchemaType::String, false);
        let v = Value::String("loja".into());
        assert_eq!(&*render(&s, &v).unwrap(), b"loja");
    }
}
