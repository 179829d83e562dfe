//! Kafka Connect's `TimestampConverter$Key` / `$Value` and `TimestampRouter`, as Kafka 4.3 does
//! them (dates formatted and parsed by [`super::date_format`], in UTC).
//!
//! `TimestampConverter` converts one field (`field`), or the whole key or value when `field` is
//! empty, to `target.type` `string` (with `format`), `unix` (int64 in `unix.precision`),
//! `Date`, `Time` or `Timestamp` (Connect's logical types). The source form comes from the
//! schema: Connect's `Timestamp`/`Date`/`Time`, a string (parsed with `format`), or an int64
//! (unix time in `unix.precision`, so Debezium's `MicroTimestamp` needs
//! `unix.precision=microseconds`). Any other schema (Debezium's int32 `io.debezium.time.Date`)
//! is an error naming the field, as Connect fails the task. A converted field loses its
//! default, as in Connect.
//!
//! `TimestampRouter` sets the topic to `topic.format` (default `${topic}-${timestamp}`) with the
//! record timestamp formatted by `timestamp.format` (default `yyyyMMdd`). Debezium's change
//! events carry no record timestamp (the outbox EventRouter's do), so, as in Connect, a record
//! without one stops the connector with an error saying so.

use std::sync::Arc;

use super::date_format::DateFormat;
use super::side::{data_error, field_value, struct_basics, SchemaCache, Side};
use super::{Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::{ConnectRecord, Field, Schema, SchemaType, Value};

const DATE: &str = "org.apache.kafka.connect.data.Date";
const TIME: &str = "org.apache.kafka.connect.data.Time";
const TIMESTAMP: &str = "org.apache.kafka.connect.data.Timestamp";
const DAY_MS: i64 = 86_400_000;

/// A timestamp representation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    Text,
    Unix,
    Date,
    Time,
    Timestamp,
}

/// `unix.precision`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Precision {
    Seconds,
    Millis,
    Micros,
    Nanos,
}

/// The transform with its schema cache.
#[derive(Debug, Clone)]
pub struct TimestampConverter {
    class: String,
    alias: String,
    side: Side,
    field: String,
    target: Form,
    format: Option<DateFormat>,
    precision: Precision,
    with_default: bool,
    cache: SchemaCache,
}

impl TimestampConverter {
    fn target_schema(&self, optional: bool) -> Schema {
        target_schema(self.target, optional)
    }

    /// `v` (shaped by `s`) in the target form.
    fn convert(&self, s: &Schema, v: &Value) -> std::result::Result<Value, String> {
        if v.is_null() {
            return Ok(Value::Null);
        }
        let source = match (s.name.as_deref(), s.ty) {
            (Some(TIMESTAMP), _) => Form::Timestamp,
            (Some(DATE), _) => Form::Date,
            (Some(TIME), _) => Form::Time,
            (_, SchemaType::String) => Form::Text,
            (_, SchemaType::Int64) => Form::Unix,
            _ => {
                return Err(format!(
                    "schema {} {} does not correspond to a known timestamp type format",
                    s.ty.json_name(),
                    s.name.as_deref().unwrap_or("")
                ))
            }
        };
        let ms = match (source, v) {
            (Form::Date, Value::Int(d)) => d * DAY_MS,
            (Form::Time | Form::Timestamp, Value::Int(ms)) => *ms,
            (Form::Unix, Value::Int(x)) => match self.precision {
                Precision::Seconds => x.saturating_mul(1000),
                Precision::Millis => *x,
                Precision::Micros => x / 1000,
                Precision::Nanos => x / 1_000_000,
            },
            (Form::Text, v) => {
                let f = self
                    .format
                    .as_ref()
                    .ok_or("a string timestamp needs the format option to be parsed")?;
                f.parse(v.as_str().unwrap_or_default())?
            }
            _ => return Err("the value does not match its schema".into()),
        };
        Ok(match self.target {
            Form::Text => Value::String(
                self.format
                    .as_ref()
                    .map(|f| f.format(ms))
                    .unwrap_or_default(),
            ),
            Form::Unix => Value::Int(match self.precision {
                Precision::Seconds => ms / 1000,
                Precision::Millis => ms,
                Precision::Micros => ms.saturating_mul(1000),
                Precision::Nanos => ms.saturating_mul(1_000_000),
            }),
            Form::Date => Value::Int(ms.div_euclid(DAY_MS)),
            Form::Time => Value::Int(ms.rem_euclid(DAY_MS)),
            Form::Timestamp => Value::Int(ms),
        })
    }
}

impl Transformation for TimestampConverter {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let field = o.raw("field").unwrap_or("").to_string();
        let target = match o.raw("target.type") {
            Some("string") => Some(Form::Text),
            Some("unix") => Some(Form::Unix),
            Some("Date") => Some(Form::Date),
            Some("Time") => Some(Form::Time),
            Some("Timestamp") => Some(Form::Timestamp),
            Some(v) => {
                o.problem(
                    "target.type",
                    format!(
                        "={v} is invalid: allowed values are string, unix, Date, Time, Timestamp"
                    ),
                );
                None
            }
            None => {
                o.problem(
                    "target.type",
                    " is required: string, unix, Date, Time or Timestamp",
                );
                None
            }
        };
        let precision = match o.raw("unix.precision") {
            None | Some("milliseconds") => Precision::Millis,
            Some("seconds") => Precision::Seconds,
            Some("microseconds") => Precision::Micros,
            Some("nanoseconds") => Precision::Nanos,
            Some(v) => {
                o.problem(
                    "unix.precision",
                    format!("={v} is invalid: allowed values are nanoseconds, microseconds, milliseconds, seconds"),
                );
                Precision::Millis
            }
        };
        let format = match o.get("format") {
            None => None,
            Some(p) => match DateFormat::new(p) {
                Ok(f) => Some(f),
                Err(e) => {
                    o.problem("format", format!("={p}: {e}"));
                    return None;
                }
            },
        };
        let with_default = o.boolean("replace.null.with.default", true);
        let target = target?;
        if target == Form::Text && format.is_none() {
            o.problem(
                "format",
                " is required when target.type=string: a SimpleDateFormat pattern",
            );
            return None;
        }
        Some(TimestampConverter {
            class: class.into(),
            alias: alias.into(),
            side,
            field,
            target,
            format,
            precision,
            with_default,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let Some(schema) = self.side.schema(&r).cloned() else {
            // Schemaless: only Kafka nulls reach here, and they stay null.
            return Ok(Some(r));
        };
        let topic = r.topic.clone();
        let fail = |e: String| data_error(&self.class, &self.alias, format!("{e} (topic {topic})"));
        let value = self.side.take(&mut r);
        if self.field.is_empty() {
            let out = Arc::new(self.target_schema(schema.optional));
            let v = match value {
                None => None,
                Some(v) => Some(self.convert(&schema, &v).map_err(fail)?),
            };
            self.side.set(&mut r, Some(out), v.filter(|v| !v.is_null()));
            return Ok(Some(r));
        }
        if schema.ty != SchemaType::Struct {
            return Err(fail(
                "only a struct is supported for [converting timestamp formats]".into(),
            ));
        }
        let (field, target) = (&self.field, self.target);
        let out_schema = self
            .cache
            .get_or_try(&schema, |s| {
                let mut out = struct_basics(s);
                out.optional = s.optional;
                for f in &s.fields {
                    let fs = if f.name == *field {
                        target_schema(target, f.schema.optional)
                    } else {
                        f.schema.clone()
                    };
                    out.fields.push(Field::new(f.name.clone(), fs));
                }
                Ok(Arc::new(out))
            })
            .map_err(fail)?;
        let Some(Value::Struct(vs)) = value else {
            self.side.set(&mut r, Some(out_schema), None);
            return Ok(Some(r));
        };
        let mut out = Vec::with_capacity(vs.len());
        for (i, f) in schema.fields.iter().enumerate() {
            let v = field_value(&schema, &vs, i, self.with_default);
            out.push(if f.name == self.field {
                self.convert(&f.schema, &v)
                    .map_err(|e| fail(format!("field {:?}: {e}", f.name)))?
            } else {
                v
            });
        }
        self.side
            .set(&mut r, Some(out_schema), Some(Value::Struct(out)));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

/// The schema of `target`, optional or not (Connect's logical types carry version 1).
fn target_schema(target: Form, optional: bool) -> Schema {
    match target {
        Form::Text => Schema::new(SchemaType::String, optional),
        Form::Unix => Schema::new(SchemaType::Int64, optional),
        Form::Date => Schema::new(SchemaType::Int32, optional).named(DATE),
        Form::Time => Schema::new(SchemaType::Int32, optional).named(TIME),
        Form::Timestamp => Schema::new(SchemaType::Int64, optional).named(TIMESTAMP),
    }
}

/// `TimestampRouter`: the topic from `topic.format` with `${topic}` and `${timestamp}`.
#[derive(Debug, Clone)]
pub struct TimestampRouter {
    alias: String,
    topic_format: String,
    format: DateFormat,
}

impl Transformation for TimestampRouter {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let alias = d.alias;
        let topic_format = o.string("topic.format", "${topic}-${timestamp}");
        let pattern = o.string("timestamp.format", "yyyyMMdd");
        match DateFormat::new(&pattern) {
            Ok(format) => Some(TimestampRouter {
                alias: alias.into(),
                topic_format,
                format,
            }),
            Err(e) => {
                o.problem("timestamp.format", format!("={pattern}: {e}"));
                None
            }
        }
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let Some(ts) = r.timestamp else {
            return Err(data_error(
                "TimestampRouter",
                &self.alias,
                format!(
                    "timestamp missing on a record of topic {}: change events carry none (records of the outbox EventRouter do); route those only, with a predicate",
                    r.topic
                ),
            ));
        };
        let topic = self
            .topic_format
            .replace("${topic}", &r.topic)
            .replace("${timestamp}", &self.format.format(ts));
        r.topic = Arc::from(topic.as_str());
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

#[cfg(test)]
mod tests {
    use crate::event::{SchemaType, Value};
    use crate::transform::testutil::*;

    const TC: &str = "org.apache.kafka.connect.transforms.TimestampConverter$Value";

    fn converted(
        field_ty: SchemaType,
        name: Option<&str>,
        v: Value,
        opts: &[(&str, &str)],
    ) -> Result<String, String> {
        let mut s = crate::event::Schema::new(field_ty, true);
        s.name = name.map(str::to_string);
        let t = table(
            "public",
            "t",
            vec![col("id", SchemaType::Int32, false), ("ts".to_string(), s)],
        );
        let mut pairs: Vec<(String, String)> = vec![
            ("transforms".into(), "unwrap,tc".into()),
            (
                "transforms.unwrap.type".into(),
                crate::transform::EXTRACT_NEW_RECORD_STATE.into(),
            ),
            ("transforms.tc.type".into(), TC.into()),
            ("transforms.tc.field".into(), "ts".into()),
        ];
        for (k, v) in opts {
            pairs.push((format!("transforms.tc.{k}"), v.to_string()));
        }
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut c = chain(&refs);
        let r = insert(&t, vec![Value::Int(1), v]);
        crate::transform::apply_chain(&mut c, r)
            .map(|r| render(&r.unwrap(), false).1.unwrap())
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn micro_timestamps_convert_with_the_unix_precision() {
        let out = converted(
            SchemaType::Int64,
            Some("io.debezium.time.MicroTimestamp"),
            Value::Int(1_577_934_245_678_901),
            &[
                ("target.type", "string"),
                ("format", "yyyy-MM-dd HH:mm:ss.SSS"),
                ("unix.precision", "microseconds"),
            ],
        )
        .unwrap();
        assert_eq!(out, r#"{"id":1,"ts":"2020-01-02 03:04:05.678"}"#);
        let out = converted(
            SchemaType::String,
            None,
            Value::String("2020-01-02".into()),
            &[("target.type", "Date"), ("format", "yyyy-MM-dd")],
        )
        .unwrap();
        assert_eq!(out, r#"{"id":1,"ts":18263}"#);
        let out = converted(
            SchemaType::Int64,
            Some("org.apache.kafka.connect.data.Timestamp"),
            Value::Int(1_577_934_245_678),
            &[("target.type", "unix"), ("unix.precision", "seconds")],
        )
        .unwrap();
        assert_eq!(out, r#"{"id":1,"ts":1577934245}"#);
    }

    #[test]
    fn an_int32_debezium_date_is_an_error_naming_the_field() {
        let e = converted(
            SchemaType::Int32,
            Some("io.debezium.time.Date"),
            Value::Int(18263),
            &[("target.type", "Timestamp")],
        )
        .unwrap_err();
        assert!(
            e.contains("field \"ts\"") && e.contains("known timestamp type"),
            "{e}"
        );
    }

    #[test]
    fn the_router_needs_a_record_timestamp() {
        let t = table("public", "t", vec![col("id", SchemaType::Int32, false)]);
        let mut c = chain(&[
            ("transforms", "r"),
            (
                "transforms.r.type",
                "org.apache.kafka.connect.transforms.TimestampRouter",
            ),
            ("transforms.r.topic.format", "${topic}.${timestamp}"),
            ("transforms.r.timestamp.format", "yyyy-MM"),
        ]);
        let mut rec = insert(&t, vec![Value::Int(1)]);
        let e = crate::transform::apply_chain(&mut c, rec.clone()).unwrap_err();
        assert!(e.message().contains("timestamp missing"), "{}", e.message());
        rec.timestamp = Some(1_577_934_245_678);
        let out = crate::transform::apply_chain(&mut c, rec).unwrap().unwrap();
        assert_eq!(&*out.topic, "db.public.t.2020-01");
    }
}
