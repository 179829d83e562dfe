//! Connect values in Avro's binary encoding, for the schema [`super::schema`] makes of their
//! Connect schema: straight from the Connect value to bytes, without an intermediate tree.
//!
//! Avro binary: `int` and `long` as zig-zag varints, `float`/`double` little-endian IEEE-754,
//! `boolean` one byte, `string`/`bytes` a length then the bytes, records their fields in
//! order, arrays and maps one block (count, items, then 0; an empty one is just 0), a union
//! the branch index then the value. An optional schema is a union whose `null` branch is
//! first, or second when the schema (not a struct) has a default value. A map with keys that
//! are not plain strings is an array of key/value records.
//!
//! A null value of a schema that has a default is written as the default, as Kafka Connect's
//! `Struct.get` gives it to `AvroData`.

use crate::event::{Schema, SchemaType, Value};

/// Appends the Avro encoding of `v` (of Connect schema `s`) to `out`; with `record_alone`, an
/// optional struct `s` is encoded as its record, not as a union
/// ([`super::schema::top_level_record_alone`]). The error names the field path (`after.id`)
/// whose value does not fit its schema.
pub fn encode(s: &Schema, v: &Value, out: &mut Vec<u8>, record_alone: bool) -> Result<(), String> {
    let r = if record_alone && !v.is_null() {
        base(s, v, out)
    } else {
        value(s, v, out)
    };
    r.map_err(|path| path.join("."))
}

/// The field path of a value that does not fit, innermost last (collected on the way out).
type Path = Vec<String>;

fn value(s: &Schema, v: &Value, out: &mut Vec<u8>) -> Result<(), Path> {
    let v = match (v, &s.default) {
        (Value::Null, Some(d)) => d,
        _ => v,
    };
    if s.optional {
        let (null_index, value_index) = if super::schema::default_first(s) {
            (1, 0)
        } else {
            (0, 1)
        };
        if v.is_null() {
            long(null_index, out);
            return Ok(());
        }
        long(value_index, out);
    } else if v.is_null() {
        return Err(vec![format!("(null in a required {:?} value)", s.ty)]);
    }
    base(s, v, out)
}

fn base(s: &Schema, v: &Value, out: &mut Vec<u8>) -> Result<(), Path> {
    let mismatch = || vec![format!("(a {:?} value does not fit {:?})", kind(v), s.ty)];
    match (s.ty, v) {
        (
            SchemaType::Int8 | SchemaType::Int16 | SchemaType::Int32 | SchemaType::Int64,
            Value::Int(i),
        ) => long(*i, out),
        (SchemaType::Float32, Value::Float32(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (SchemaType::Float32, Value::Float64(f)) => {
            out.extend_from_slice(&(*f as f32).to_le_bytes())
        }
        (SchemaType::Float64, Value::Float64(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (SchemaType::Float64, Value::Float32(f)) => {
            out.extend_from_slice(&(*f as f64).to_le_bytes())
        }
        (SchemaType::Boolean, Value::Bool(b)) => out.push(*b as u8),
        (SchemaType::String, Value::String(t)) => bytes(t.as_bytes(), out),
        (SchemaType::String, Value::Shared(t)) => bytes(t.as_bytes(), out),
        (SchemaType::Bytes, Value::Bytes(b)) => bytes(b, out),
        (SchemaType::Array, Value::Array(items)) => {
            let item = s.items.as_deref().ok_or_else(mismatch)?;
            block_start(items.len(), out);
            for (i, x) in items.iter().enumerate() {
                value(item, x, out).map_err(|p| within(p, &format!("[{i}]")))?;
            }
            block_end(items.len(), out);
        }
        (SchemaType::Map, Value::Map(pairs)) => {
            let keys = s.keys.as_deref().ok_or_else(mismatch)?;
            let values = s.items.as_deref().ok_or_else(mismatch)?;
            let string_keys = keys.ty == SchemaType::String && !keys.optional;
            block_start(pairs.len(), out);
            for (k, x) in pairs {
                if string_keys {
                    let t = k.as_str().ok_or_else(mismatch)?;
                    bytes(t.as_bytes(), out);
                } else {
                    value(keys, k, out).map_err(|p| within(p, "key"))?;
                }
                value(values, x, out).map_err(|p| within(p, "value"))?;
            }
            block_end(pairs.len(), out);
        }
        (SchemaType::Struct, Value::Struct(values)) => {
            if values.len() != s.fields.len() {
                return Err(mismatch());
            }
            for (f, x) in s.fields.iter().zip(values) {
                value(&f.schema, x, out).map_err(|p| within(p, &f.name))?;
            }
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

fn within(mut p: Path, name: &str) -> Path {
    p.insert(0, name.to_string());
    p
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "integer",
        Value::Float32(_) | Value::Float64(_) => "floating-point",
        Value::String(_) | Value::Shared(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Array(_) => "array",
        Value::Map(_) => "map",
        Value::Struct(_) => "struct",
    }
}

/// The count that opens an array or map block (none for an empty one).
fn block_start(n: usize, out: &mut Vec<u8>) {
    if n > 0 {
        long(n as i64, out);
    }
}

/// The 0 that ends every array or map.
fn block_end(_n: usize, out: &mut Vec<u8>) {
    out.push(0);
}

fn bytes(b: &[u8], out: &mut Vec<u8>) {
    long(b.len() as i64, out);
    out.extend_from_slice(b);
}

/// A zig-zag varint (`int` and `long` share the encoding).
pub fn long(i: i64, out: &mut Vec<u8>) {
    let mut z = ((i << 1) ^ (i >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &Schema, v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode(s, v, &mut out, false).unwrap();
        out
    }

    #[test]
    fn zig_zag_varints_match_the_avro_specification() {
        for (i, want) in [
            (0i64, vec![0u8]),
            (-1, vec![1]),
            (1, vec![2]),
            (-64, vec![0x7f]),
            (64, vec![0x80, 0x01]),
            (i64::MIN, vec![0xff; 9].into_iter().chain([1]).collect()),
        ] {
            let mut out = Vec::new();
            long(i, &mut out);
            assert_eq!(out, want, "{i}");
        }
    }

    #[test]
    fn optional_values_are_union_branches() {
        let s = Schema::new(SchemaType::String, true);
        assert_eq!(enc(&s, &Value::Null), [0]);
        assert_eq!(enc(&s, &Value::String("a".into())), [2, 2, b'a']);
        let mut d = Schema::new(SchemaType::String, true);
        d.default = Some(Value::String("false".into()));
        assert_eq!(enc(&d, &Value::String("a".into())), [0, 2, b'a']);
        assert_eq!(
            enc(&d, &Value::Null),
            [0, 10, b'f', b'a', b'l', b's', b'e'],
            "a null takes the default"
        );
    }

    #[test]
    fn a_value_that_does_not_fit_names_its_field() {
        let s = Schema::structure(
            "a.V",
            false,
            vec![crate::event::Field::new(
                "id",
                Schema::new(SchemaType::Int32, false),
            )],
        );
        let mut out = Vec::new();
        let e = encode(
            &s,
            &Value::Struct(vec![Value::String("x".into())]),
            &mut out,
            false,
        )
        .unwrap_err();
        assert!(e.starts_with("id."), "{e}");
        let e = encode(&s, &Value::Struct(vec![Value::Null]), &mut out, false).unwrap_err();
        assert!(e.contains("null in a required"), "{e}");
    }

    #[test]
    fn arrays_and_maps_are_one_block() {
        let s = Schema::array(Schema::new(SchemaType::Int32, false), false);
        assert_eq!(enc(&s, &Value::Array(vec![])), [0]);
        assert_eq!(
            enc(&s, &Value::Array(vec![Value::Int(1), Value::Int(-1)])),
            [4, 2, 1, 0]
        );
    }
}
