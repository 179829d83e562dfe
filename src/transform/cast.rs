//! Kafka Connect's `Cast$Key` / `Cast$Value`: casts fields (`spec=field:type,…`) or the whole
//! key or value (`spec=type`) to `int8`, `int16`, `int32`, `int64`, `float32`, `float64`,
//! `boolean` or `string`, as Connect 4.3 does:
//!
//! - numbers narrow as Java's `Number.xxxValue()` (wrapping integers, saturating floats,
//!   NaN to 0); booleans are 1/0; strings parse as Java's `parseXxx` (an unparsable string is
//!   an error); a number is `true` when not 0; a string is `true` when it is `true` in any case;
//! - to `string`: numbers and booleans as Java prints them, decimals as `BigDecimal.toString`,
//!   bytes as base64, Connect `Date`/`Time`/`Timestamp` values in Connect's ISO form;
//! - a cast field loses its schema name and parameters (a new plain schema) but keeps its
//!   optionality and its default (cast too); a whole-value cast keeps the name;
//! - structs, arrays and maps cannot be cast (an error naming the field).
//!
//! Kafka nulls pass through.

use std::sync::Arc;

use base64::Engine;

use super::side::{data_error, field_value, list, struct_basics, SchemaCache, Side};
use super::{Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::{ConnectRecord, Field, Schema, SchemaType, Value};

const TARGETS: &[(&str, SchemaType)] = &[
    ("int8", SchemaType::Int8),
    ("int16", SchemaType::Int16),
    ("int32", SchemaType::Int32),
    ("int64", SchemaType::Int64),
    ("float32", SchemaType::Float32),
    ("float64", SchemaType::Float64),
    ("boolean", SchemaType::Boolean),
    ("string", SchemaType::String),
];

/// What `spec` casts.
#[derive(Debug, Clone)]
enum Spec {
    Whole(SchemaType),
    Fields(Vec<(String, SchemaType)>),
}

/// The transform with its schema cache.
#[derive(Debug, Clone)]
pub struct Cast {
    class: String,
    alias: String,
    side: Side,
    spec: Spec,
    with_default: bool,
    cache: SchemaCache,
}

fn target(name: &str) -> Option<SchemaType> {
    TARGETS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
        .map(|(_, t)| *t)
}

impl Transformation for Cast {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let spec = o.get("spec").map(list).unwrap_or_default();
        let with_default = o.boolean("replace.null.with.default", true);
        if spec.is_empty() {
            o.problem(
                "spec",
                " is required: field:type pairs, or one type for the whole value",
            );
            return None;
        }
        let names: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
        let mut fields = Vec::new();
        let mut whole = None;
        for m in &spec {
            let parts: Vec<&str> = m.split(':').collect();
            let ty_name = match parts.as_slice() {
                [ty] => ty,
                [_, ty] => ty,
                _ => {
                    o.problem(
                        "spec",
                        format!(" has an invalid mapping {m:?}: use field:type"),
                    );
                    return None;
                }
            };
            let Some(ty) = target(ty_name) else {
                o.problem(
                    "spec",
                    format!(
                        " cannot cast to {:?}: the types are {}",
                        ty_name.trim(),
                        names.join(", ")
                    ),
                );
                return None;
            };
            match parts.as_slice() {
                [_] => whole = Some(ty),
                _ => {
                    let f = parts[0].trim().to_string();
                    fields.retain(|(n, _): &(String, SchemaType)| *n != f);
                    fields.push((f, ty));
                }
            }
        }
        let spec = match whole {
            Some(_) if spec.len() > 1 => {
                o.problem(
                    "spec",
                    " casts the whole value, so it may hold only that one type",
                );
                return None;
            }
            Some(ty) => Spec::Whole(ty),
            None => Spec::Fields(fields),
        };
        Some(Cast {
            class: class.into(),
            alias: alias.into(),
            side,
            spec,
            with_default,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let Some(schema) = self.side.schema(&r).cloned() else {
            return Ok(Some(r));
        };
        if self.side.value(&r).is_none() {
            return Ok(Some(r));
        }
        let topic = r.topic.clone();
        let fail = |e: String| data_error(&self.class, &self.alias, format!("{e} (topic {topic})"));
        let spec = &self.spec;
        let out_schema = self
            .cache
            .get_or_try(&schema, |s| cast_schema(s, spec).map(Arc::new))
            .map_err(fail)?;
        let value = self.side.take(&mut r).unwrap_or(Value::Null);
        let out = match &self.spec {
            Spec::Whole(ty) => cast(&schema, &value, *ty).map_err(fail)?,
            Spec::Fields(casts) => {
                let Value::Struct(vs) = &value else {
                    return Err(fail("only a struct is supported for [cast types]".into()));
                };
                let mut out = Vec::with_capacity(vs.len());
                for (i, f) in schema.fields.iter().enumerate() {
                    let v = field_value(&schema, vs, i, self.with_default);
                    out.push(match casts.iter().find(|(n, _)| *n == f.name) {
                        Some((_, ty)) => cast(&f.schema, &v, *ty)
                            .map_err(|e| fail(format!("field {:?}: {e}", f.name)))?,
                        None => v,
                    });
                }
                Value::Struct(out)
            }
        };
        self.side.set(&mut r, Some(out_schema), Some(out));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

/// The schema after the casts of `spec`.
fn cast_schema(s: &Schema, spec: &Spec) -> std::result::Result<Schema, String> {
    let mut out = match spec {
        Spec::Whole(ty) => {
            let mut out = struct_basics(s);
            out.ty = *ty;
            out
        }
        Spec::Fields(casts) => {
            if s.ty != SchemaType::Struct {
                return Err("only a struct is supported for [cast types]".into());
            }
            let mut out = struct_basics(s);
            for f in &s.fields {
                let fs = match casts.iter().find(|(n, _)| *n == f.name) {
                    None => f.schema.clone(),
                    Some((_, ty)) => {
                        let mut c = Schema::new(*ty, f.schema.optional);
                        if let Some(d) = &f.schema.default {
                            c.default = Some(
                                cast(&f.schema, d, *ty)
                                    .map_err(|e| format!("field {:?}: default: {e}", f.name))?,
                            );
                        }
                        c
                    }
                };
                out.fields.push(Field::new(f.name.clone(), fs));
            }
            out
        }
    };
    out.optional = s.optional;
    if let Some(d) = &s.default {
        out.default = Some(cast(s, d, out.ty)?);
    }
    Ok(out)
}

/// Connect's logical types carried as `java.util.Date`.
const CONNECT_DATE: &str = "org.apache.kafka.connect.data.Date";
const CONNECT_TIME: &str = "org.apache.kafka.connect.data.Time";
const CONNECT_TIMESTAMP: &str = "org.apache.kafka.connect.data.Timestamp";
const CONNECT_DECIMAL: &str = "org.apache.kafka.connect.data.Decimal";

/// A value read as the Java object Connect holds: what `Cast` casts from.
enum Java {
    Int(i64),
    Float(f64, bool),
    Bool(bool),
    Str(String),
    Bytes(Vec<u8>),
    Decimal(i128, u32),
    /// A `java.util.Date`, in ms since the epoch.
    Date(i64),
}

fn java_of(s: &Schema, v: &Value) -> std::result::Result<Java, String> {
    let name = s.name.as_deref();
    Ok(match (s.ty, v) {
        (SchemaType::Int32, Value::Int(d)) if name == Some(CONNECT_DATE) => Java::Date(d * 86_400_000),
        (SchemaType::Int32 | SchemaType::Int64, Value::Int(ms))
            if matches!(name, Some(CONNECT_TIME | CONNECT_TIMESTAMP)) =>
        {
            Java::Date(*ms)
        }
        (
            SchemaType::Int8 | SchemaType::Int16 | SchemaType::Int32 | SchemaType::Int64,
            Value::Int(i),
        ) => Java::Int(*i),
        (SchemaType::Float32, Value::Float32(f)) => Java::Float(*f as f64, true),
        (SchemaType::Float64, Value::Float64(f)) => Java::Float(*f, false),
        (SchemaType::Boolean, Value::Bool(b)) => Java::Bool(*b),
        (SchemaType::String, v) => Java::Str(v.as_str().unwrap_or_default().to_string()),
        (SchemaType::Bytes, Value::Bytes(b)) if name == Some(CONNECT_DECIMAL) => {
            let scale = s
                .parameters
                .iter()
                .find(|(k, _)| k == "scale")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            Java::Decimal(unscaled(b)?, scale)
        }
        (SchemaType::Bytes, Value::Bytes(b)) => Java::Bytes(b.clone()),
        (ty, _) => {
            return Err(format!(
                "Cast does not support casting from {}: the supported types are int8, int16, int32, int64, float32, float64, boolean, string, bytes",
                ty.json_name()
            ))
        }
    })
}

/// A two's-complement big-endian unscaled decimal that fits 128 bits.
fn unscaled(b: &[u8]) -> std::result::Result<i128, String> {
    if b.len() > 16 {
        return Err("a decimal with more than 38 digits cannot be cast".into());
    }
    let mut v: i128 = if b.first().is_some_and(|x| x & 0x80 != 0) {
        -1
    } else {
        0
    };
    for &x in b {
        v = (v << 8) | x as i128;
    }
    Ok(v)
}

/// Java's `BigDecimal.toString` of `unscaled × 10^-scale`.
fn big_decimal_text(unscaled: i128, scale: u32) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let adjusted = digits.len() as i64 - 1 - scale as i64;
    if adjusted >= -6 {
        if scale == 0 {
            return format!("{sign}{digits}");
        }
        let scale = scale as usize;
        if digits.len() > scale {
            let (i, f) = digits.split_at(digits.len() - scale);
            format!("{sign}{i}.{f}")
        } else {
            format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        format!("{sign}{mantissa}E{adjusted}")
    }
}

/// The decimal as an integer (truncated toward zero), `None` when it does not fit.
fn decimal_integer(unscaled: i128, scale: u32) -> Option<i128> {
    10i128.checked_pow(scale).map(|p| unscaled / p)
}

fn decimal_double(unscaled: i128, scale: u32) -> f64 {
    format!("{unscaled}e-{scale}").parse().unwrap_or(f64::NAN)
}

/// Connect's `Values.dateFormatFor(date).format(date)` in UTC: a time of day below one day
/// since the epoch, a date at a day boundary, a timestamp otherwise.
fn date_text(ms: i64) -> String {
    const DAY: i64 = 86_400_000;
    let days = ms.div_euclid(DAY);
    let in_day = ms.rem_euclid(DAY);
    let (y, m, d) = crate::util::civil_from_days(days);
    let time = format!(
        "{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    );
    if ms < DAY {
        time
    } else if ms % DAY == 0 {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{time}")
    }
}

fn parse_java_float(s: &str) -> Option<f64> {
    let t = s.trim();
    let t = t.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(t);
    match t {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ if t.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) => t.parse().ok(),
        _ => None,
    }
}

/// `value` (shaped by `s`) cast to `ty`.
fn cast(s: &Schema, value: &Value, ty: SchemaType) -> std::result::Result<Value, String> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    let j = java_of(s, value)?;
    // A logical date is cast as its encoded number unless it becomes a string.
    let j = match (j, ty) {
        (Java::Date(ms), t) if t != SchemaType::String => match s.name.as_deref() {
            Some(CONNECT_DATE) => Java::Int(ms.div_euclid(86_400_000)),
            _ => Java::Int(ms),
        },
        (j, _) => j,
    };
    let out_of_range = |text: &str| {
        format!(
            "value ({text}) was out of range for the requested type {}",
            ty.json_name()
        )
    };
    let integer = |j: &Java| -> std::result::Result<i128, String> {
        match j {
            Java::Int(i) => Ok(*i as i128),
            // Java's (long) cast of a double: saturating, NaN to 0.
            Java::Float(f, _) => Ok(*f as i64 as i128),
            Java::Bool(b) => Ok(*b as i128),
            Java::Decimal(u, sc) => decimal_integer(*u, *sc)
                .ok_or_else(|| "the decimal is too large to cast".to_string()),
            Java::Str(t) => t.parse::<i128>().map_err(|_| out_of_range(t)),
            Java::Bytes(_) | Java::Date(_) => {
                Err(format!("cannot cast bytes to {}", ty.json_name()))
            }
        }
    };
    Ok(match ty {
        SchemaType::Int8 | SchemaType::Int16 | SchemaType::Int32 | SchemaType::Int64 => {
            let (min, max): (i128, i128) = match ty {
                SchemaType::Int8 => (i8::MIN.into(), i8::MAX.into()),
                SchemaType::Int16 => (i16::MIN.into(), i16::MAX.into()),
                SchemaType::Int32 => (i32::MIN.into(), i32::MAX.into()),
                _ => (i64::MIN.into(), i64::MAX.into()),
            };
            let v = match &j {
                // Java narrows a double to int first for byte/short/int, to long for long.
                Java::Float(f, _) if ty != SchemaType::Int64 => *f as i32 as i128,
                Java::Str(t) => {
                    let v = integer(&j)?;
                    if v < min || v > max {
                        return Err(out_of_range(t));
                    }
                    v
                }
                _ => integer(&j)?,
            };
            Value::Int(match ty {
                SchemaType::Int8 => v as i8 as i64,
                SchemaType::Int16 => v as i16 as i64,
                SchemaType::Int32 => v as i32 as i64,
                _ => v as i64,
            })
        }
        SchemaType::Float32 | SchemaType::Float64 => {
            let f = match &j {
                Java::Int(i) => *i as f64,
                Java::Float(f, _) => *f,
                Java::Bool(b) => *b as u8 as f64,
                Java::Decimal(u, sc) => decimal_double(*u, *sc),
                Java::Str(t) => parse_java_float(t).ok_or_else(|| out_of_range(t))?,
                Java::Bytes(_) | Java::Date(_) => {
                    return Err(format!("cannot cast bytes to {}", ty.json_name()))
                }
            };
            if ty == SchemaType::Float32 {
                // Java rounds once to float from the integer, the decimal or the text.
                let single = match &j {
                    Java::Int(i) => *i as f32,
                    Java::Decimal(u, sc) => format!("{u}e-{sc}").parse().unwrap_or(f32::NAN),
                    Java::Str(t) if f.is_finite() => {
                        let t = t.trim();
                        t.strip_suffix(['f', 'F', 'd', 'D'])
                            .unwrap_or(t)
                            .parse()
                            .unwrap_or(f as f32)
                    }
                    _ => f as f32,
                };
                Value::Float32(single)
            } else {
                Value::Float64(f)
            }
        }
        SchemaType::Boolean => Value::Bool(match &j {
            Java::Int(i) => *i != 0,
            Java::Float(f, _) => *f as i64 != 0,
            Java::Bool(b) => *b,
            Java::Decimal(u, sc) => decimal_integer(*u, *sc).is_some_and(|v| v as i64 != 0),
            Java::Str(t) => t.eq_ignore_ascii_case("true"),
            Java::Bytes(_) | Java::Date(_) => return Err("cannot cast bytes to boolean".into()),
        }),
        SchemaType::String => Value::String(match j {
            Java::Int(i) => i.to_string(),
            Java::Float(f, single) => crate::util::java_float_text(f, single),
            Java::Bool(b) => b.to_string(),
            Java::Decimal(u, sc) => big_decimal_text(u, sc),
            Java::Str(t) => t,
            Java::Bytes(b) => base64::engine::general_purpose::STANDARD.encode(b),
            Java::Date(ms) => date_text(ms),
        }),
        other => return Err(format!("cannot cast to {}", other.json_name())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(ty: SchemaType) -> Schema {
        Schema::new(ty, true)
    }

    #[test]
    fn integers_narrow_as_java_does() {
        let s = int(SchemaType::Int64);
        assert_eq!(
            cast(&s, &Value::Int(300), SchemaType::Int8).unwrap(),
            Value::Int(44)
        );
        assert_eq!(
            cast(&s, &Value::Int(-1), SchemaType::Int16).unwrap(),
            Value::Int(-1)
        );
        let f = int(SchemaType::Float64);
        assert_eq!(
            cast(&f, &Value::Float64(1e20), SchemaType::Int32).unwrap(),
            Value::Int(i32::MAX as i64)
        );
        assert_eq!(
            cast(&f, &Value::Float64(f64::NAN), SchemaType::Int64).unwrap(),
            Value::Int(0)
        );
        assert_eq!(
            cast(&f, &Value::Float64(1e10), SchemaType::Int8).unwrap(),
            Value::Int(-1),
            "(byte)(int)1e10 is (byte)Integer.MAX_VALUE"
        );
    }

    #[test]
    fn strings_parse_and_print_as_java_does() {
        let s = int(SchemaType::String);
        assert_eq!(
            cast(&s, &Value::String("42".into()), SchemaType::Int16).unwrap(),
            Value::Int(42)
        );
        assert!(cast(&s, &Value::String("300".into()), SchemaType::Int8).is_err());
        assert_eq!(
            cast(&s, &Value::String("TRUE".into()), SchemaType::Boolean).unwrap(),
            Value::Bool(true)
        );
        let f = int(SchemaType::Float32);
        assert_eq!(
            cast(&f, &Value::Float32(0.1), SchemaType::String).unwrap(),
            Value::String("0.1".into())
        );
        let b = int(SchemaType::Bytes);
        assert_eq!(
            cast(&b, &Value::Bytes(vec![1, 2, 3]), SchemaType::String).unwrap(),
            Value::String("AQID".into())
        );
        assert!(cast(&b, &Value::Bytes(vec![1]), SchemaType::Int32).is_err());
    }

    #[test]
    fn decimals_print_as_big_decimal_to_string() {
        assert_eq!(big_decimal_text(12345, 2), "123.45");
        assert_eq!(big_decimal_text(-5, 3), "-0.005");
        assert_eq!(big_decimal_text(1, 7), "1E-7");
        assert_eq!(big_decimal_text(12, 8), "1.2E-7");
        assert_eq!(big_decimal_text(7, 0), "7");
        assert_eq!(decimal_integer(-12345, 2), Some(-123));
        assert_eq!(decimal_double(12345, 2), 123.45);
    }

    #[test]
    fn connect_dates_print_in_iso_form() {
        assert_eq!(date_text(0), "00:00:00.000Z");
        assert_eq!(date_text(86_400_000 * 19_000), "2022-01-08");
        assert_eq!(
            date_text(86_400_000 * 19_000 + 1),
            "2022-01-08T00:00:00.001Z"
        );
    }

    #[test]
    fn structs_cannot_be_cast() {
        let s = Schema::structure("x", false, vec![]);
        assert!(cast(&s, &Value::Struct(vec![]), SchemaType::String).is_err());
    }
}
