//! Kafka Connect's header transforms: `InsertHeader` (a literal header on every record),
//! `DropHeaders` (removes headers by name) and `HeaderFrom$Key` / `HeaderFrom$Value` (copies or
//! moves fields into headers), as Connect 4.3 does them.
//!
//! `InsertHeader` reads its literal as Connect's `Values.parseString` does for the literals
//! people write: `true`/`false`, `null`, numbers (the smallest integer type that holds a
//! whole number, a `float` for a fraction, so `1.0` is written `1`), ISO dates, and text.
//! Literals Connect would parse as arrays, maps, times or several tokens are refused at
//! startup (pgcdc does not reproduce that parser).
//!
//! `HeaderFrom` on a Kafka null (a tombstone, a null key) passes the record through, where
//! Connect fails the task: a deliberate difference, listed in `docs/differences.md`.

use std::sync::Arc;

use super::fields::required_list;
use super::side::{data_error, field_value, list, struct_basics, SchemaCache, Side};
use super::{Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::{ConnectRecord, Header, Schema, SchemaType, Value};

/// `InsertHeader`: adds header `header` with the value `value.literal` to every record.
#[derive(Debug, Clone)]
pub struct InsertHeader {
    header: Arc<str>,
    schema: Arc<Schema>,
    value: Value,
}

impl Transformation for InsertHeader {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(_: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let header = o.raw("header");
        let literal = o.raw("value.literal");
        let (Some(header), Some(literal)) = (header, literal) else {
            if header.is_none() {
                o.problem("header", " is required: the name of the header to add");
            }
            if literal.is_none() {
                o.problem("value.literal", " is required: the header's value");
            }
            return None;
        };
        match literal_value(literal) {
            Ok((schema, value)) => Some(InsertHeader {
                header: Arc::from(header),
                schema: Arc::new(schema),
                value,
            }),
            Err(e) => {
                o.problem("value.literal", format!("={literal}: {e}"));
                None
            }
        }
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        r.headers.push(Header {
            key: self.header.clone(),
            schema: self.schema.clone(),
            value: self.value.clone(),
        });
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

/// The schema and value Connect's `Values.parseString` gives `text`, for the literals pgcdc
/// reproduces.
fn literal_value(text: &str) -> std::result::Result<(Schema, Value), String> {
    let string = || {
        Ok((
            Schema::new(SchemaType::String, false),
            Value::String(text.into()),
        ))
    };
    let t = text.trim();
    if text.is_empty() || t.is_empty() {
        return string();
    }
    match t {
        "true" => return Ok((Schema::new(SchemaType::Boolean, false), Value::Bool(true))),
        "false" => return Ok((Schema::new(SchemaType::Boolean, false), Value::Bool(false))),
        "null" => return Ok((Schema::new(SchemaType::String, true), Value::Null)),
        _ => {}
    }
    let first = t.as_bytes()[0];
    if first == b'[' || first == b'{' {
        return Err(
            "Kafka Connect would read this as an array or a map, which pgcdc does not reproduce: give a plain text value".into());
    }
    if !(first.is_ascii_digit() || first == b'+' || first == b'-') {
        return string();
    }
    if is_iso_date(t) {
        return string();
    }
    number_value(t).ok_or_else(|| {
        "Kafka Connect would read this as a number, a time or several values, which pgcdc does not reproduce: give a plain number or a text that does not start with a digit or a sign".to_string()
    })
}

fn is_iso_date(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// A plain decimal number (`[+-]digits[.digits][e[+-]digits]`) as `Values.parseAsNumber`
/// types it: a whole number within ±10^19 that fits a long is the smallest integer type
/// holding it; a number with a fraction is a float when finite as one.
fn number_value(t: &str) -> Option<(Schema, Value)> {
    let (mant, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().ok()?),
        None => (t, 0),
    };
    let unsigned = mant.strip_prefix(['+', '-']).unwrap_or(mant);
    let (int_part, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if (int_part.is_empty() && frac.is_empty())
        || !int_part.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let scale = frac.len() as i32 - exp;
    let value: f64 = t.parse().ok()?;
    let whole = value == value.trunc();
    let digits = format!("{int_part}{frac}");
    let nonzero = digits.bytes().any(|c| c != b'0');
    let abs = value.abs();
    if whole && abs <= 1e19 && !(abs < 1.0 && nonzero) {
        // Exact: the integer value of the digits.
        let scale_down = scale.max(0) as u32;
        let n: i128 = digits.parse().ok()?;
        let n = if scale >= 0 {
            n / 10i128.checked_pow(scale_down)?
        } else {
            n.checked_mul(10i128.checked_pow((-scale) as u32)?)?
        };
        let n = if mant.starts_with('-') { -n } else { n };
        let n = i64::try_from(n).ok()?;
        let ty = if i8::try_from(n).is_ok() {
            SchemaType::Int8
        } else if i16::try_from(n).is_ok() {
            SchemaType::Int16
        } else if i32::try_from(n).is_ok() {
            SchemaType::Int32
        } else {
            SchemaType::Int64
        };
        return Some((Schema::new(ty, false), Value::Int(n)));
    }
    let single: f32 = t.parse().ok()?;
    if single.is_finite() && scale != 0 {
        return Some((
            Schema::new(SchemaType::Float32, false),
            Value::Float32(single),
        ));
    }
    if value.is_finite() && scale != 0 {
        return Some((
            Schema::new(SchemaType::Float64, false),
            Value::Float64(value),
        ));
    }
    None
}

/// The required `operation` option of HeaderFrom and HeaderToValue: `Some(true)` for `move`,
/// `Some(false)` for `copy`, `None` after recording the problem.
fn operation(o: &mut Options<'_>, any_case: bool) -> Option<bool> {
    let value = o.raw("operation");
    let normalised = value.map(|v| {
        if any_case {
            v.to_ascii_lowercase()
        } else {
            v.to_string()
        }
    });
    match (value, normalised.as_deref()) {
        (_, Some("move")) => Some(true),
        (_, Some("copy")) => Some(false),
        (Some(v), _) => {
            o.problem(
                "operation",
                format!("={v} is invalid: allowed values are move, copy"),
            );
            None
        }
        (None, _) => {
            o.problem("operation", " is required: move or copy");
            None
        }
    }
}

/// `DropHeaders`: removes every header whose name is listed in `headers`.
#[derive(Debug, Clone)]
pub struct DropHeaders {
    names: Vec<String>,
}

impl Transformation for DropHeaders {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(_: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        Some(DropHeaders {
            names: required_list(o, "headers")?,
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        r.headers
            .retain(|h| !self.names.iter().any(|n| **n == *h.key));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

/// `HeaderFrom$Key` / `HeaderFrom$Value`: adds a header per listed field (`fields` →
/// `headers`, pairwise) with the field's value and schema; `operation=move` also removes the
/// fields, `copy` keeps them.
#[derive(Debug, Clone)]
pub struct HeaderFrom {
    class: String,
    alias: String,
    side: Side,
    fields: Vec<String>,
    headers: Vec<Arc<str>>,
    moving: bool,
    with_default: bool,
    /// Input schema → (output schema, header schemas in `fields` order).
    cache: SchemaCache<(Arc<Schema>, HeaderSources)>,
}

/// The field index and schema of each header HeaderFrom adds, in `fields` order.
type HeaderSources = Arc<[(usize, Arc<Schema>)]>;

impl Transformation for HeaderFrom {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let fields = o.get("fields").map(list).unwrap_or_default();
        let headers = o.get("headers").map(list).unwrap_or_default();
        // Kafka's ValidString.in: exact case.
        let moving = operation(o, false);
        let with_default = o.boolean("replace.null.with.default", true);
        for (name, l) in [("fields", &fields), ("headers", &headers)] {
            if l.is_empty() {
                o.problem(name, " must list at least one item");
            }
        }
        if fields.len() != headers.len() {
            o.problem(
                "headers",
                format!(
                    " must have as many items as fields ({} fields, {} headers)",
                    fields.len(),
                    headers.len()
                ),
            );
        }
        if fields.is_empty() || fields.len() != headers.len() {
            return None;
        }
        Some(HeaderFrom {
            class: class.into(),
            alias: alias.into(),
            side,
            fields,
            headers: headers.iter().map(|h| Arc::from(h.as_str())).collect(),
            moving: moving?,
            with_default,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let (Some(schema), Some(_)) = (self.side.schema(&r).cloned(), self.side.value(&r)) else {
            return Ok(Some(r));
        };
        let topic = r.topic.clone();
        let fail = |e: String| data_error(&self.class, &self.alias, format!("{e} (topic {topic})"));
        if schema.ty != SchemaType::Struct {
            return Err(fail(format!(
                "only a struct is supported for [header {}]",
                if self.moving { "move" } else { "copy" }
            )));
        }
        let (fields, moving) = (&self.fields, self.moving);
        let (moved_schema, header_schemas) = self
            .cache
            .get_or_try(&schema, |s| {
                let mut hs = Vec::new();
                for f in fields {
                    let i = s
                        .field_index(f)
                        .ok_or_else(|| format!("field {f:?} is not in the schema"))?;
                    hs.push((i, Arc::new(s.fields[i].schema.clone())));
                }
                let mut out = struct_basics(s);
                out.fields = s
                    .fields
                    .iter()
                    .filter(|f| !fields.contains(&f.name))
                    .cloned()
                    .collect();
                let out = if moving {
                    Arc::new(out)
                } else {
                    Arc::new(s.clone())
                };
                Ok((out, hs.into()))
            })
            .map_err(fail)?;
        let value = self.side.take(&mut r).unwrap_or(Value::Null);
        let vs = match &value {
            Value::Struct(vs) => vs.as_slice(),
            _ => &[],
        };
        for ((i, hs), name) in header_schemas.iter().zip(&self.headers) {
            r.headers.push(Header {
                key: name.clone(),
                schema: hs.clone(),
                value: field_value(&schema, vs, *i, self.with_default),
            });
        }
        if self.moving {
            let kept: Vec<Value> = (0..schema.fields.len())
                .filter(|i| !header_schemas.iter().any(|(h, _)| h == i))
                .map(|i| field_value(&schema, vs, i, self.with_default))
                .collect();
            self.side
                .set(&mut r, Some(moved_schema), Some(Value::Struct(kept)));
        } else {
            self.side.set(&mut r, Some(schema), Some(value));
        }
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

/// `io.debezium.transforms.HeaderToValue`.
pub const HEADER_TO_VALUE: &str = "io.debezium.transforms.HeaderToValue";

/// Debezium's `HeaderToValue`: adds a value field per listed header present on the record
/// (`headers` → `fields`, pairwise), with the header's schema and value; `operation=move` also
/// removes those headers, `copy` keeps them. Tombstones and records without any of the headers
/// pass unchanged. As in Debezium 3.6.1, the value schema is derived once per input schema from
/// the first record that has headers to add: a later record of that schema with a header the
/// first lacked is an error naming the field. A field `parent.child` goes into the struct
/// field `parent` (rebuilt as Connect's `copySchemaBasics` does, with `child` appended), or, when
/// the value has no field `parent`, into a new optional struct `parent` after the top-level
/// additions; a primitive `parent` is an error, as in Debezium. Names nested deeper than one
/// level are refused at start.
#[derive(Debug, Clone)]
pub struct HeaderToValue {
    alias: String,
    headers: Vec<String>,
    fields: Vec<String>,
    moving: bool,
    cache: SchemaCache,
}

impl Transformation for HeaderToValue {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let alias = d.alias;
        let headers = o.get("headers").map(list).unwrap_or_default();
        let fields = o.get("fields").map(list).unwrap_or_default();
        // Debezium's enumerated values: any case.
        let moving = operation(o, true);
        for (name, l) in [("headers", &headers), ("fields", &fields)] {
            if l.is_empty() {
                o.problem(name, " is required");
            } else if l.iter().any(|x| x.is_empty() || x.contains(' ')) {
                o.problem(name, " must not hold empty items or items with spaces");
            }
        }
        if let Some(f) = fields.iter().find(|f| f.matches('.').count() > 1) {
            o.problem(
                "fields",
                format!(
                    " holds {f:?}, a field name nested deeper than one level, which pgcdc does not implement: use top-level fields or parent.child"),
            );
        }
        if let Some(f) = fields
            .iter()
            .find(|f| nested(f).is_some_and(|(p, c)| p.is_empty() || c.is_empty()))
        {
            o.problem(
                "fields",
                format!(" holds {f:?}, which names an empty field: write parent.child"),
            );
        }
        if let Some(h) = headers
            .iter()
            .enumerate()
            .find(|(i, h)| headers[..*i].contains(h))
            .map(|(_, h)| h)
        {
            o.problem(
                "headers",
                format!(" lists {h:?} twice: only its first field would get the header's value"),
            );
        }
        if !headers.is_empty() && headers.len() != fields.len() {
            o.problem(
                "fields",
                format!(
                    " must have as many items as headers ({} headers, {} fields)",
                    headers.len(),
                    fields.len()
                ),
            );
        }
        let moving = moving?;
        if headers.is_empty() || headers.len() != fields.len() || !o.problems.is_empty() {
            return None;
        }
        Some(HeaderToValue {
            alias: alias.into(),
            headers,
            fields,
            moving,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if Side::Value.value(&r).is_none() {
            return Ok(Some(r));
        }
        let topic = r.topic.clone();
        let fail =
            |e: String| data_error("HeaderToValue", &self.alias, format!("{e} (topic {topic})"));
        let (Some(schema), Some(Value::Struct(_))) = (r.value_schema.clone(), r.value.as_ref())
        else {
            return Err(fail(
                "only a struct value is supported for [Header field insertion]".into(),
            ));
        };
        // (field, schema, value) per matching header, in header order.
        let entries: Vec<(&str, Arc<Schema>, Value)> = r
            .headers
            .iter()
            .filter_map(|h| {
                let i = self.headers.iter().position(|n| **n == *h.key)?;
                Some((self.fields[i].as_str(), h.schema.clone(), h.value.clone()))
            })
            .collect();
        if entries.is_empty() {
            return Ok(Some(r));
        }
        let out_schema = self
            .cache
            .get_or_try(&schema, |s| with_entries(s, &entries).map(Arc::new))
            .map_err(fail)?;
        let Some(Value::Struct(vs)) = r.value.take() else {
            return Ok(Some(r));
        };
        let out = fill(&schema, &vs, &out_schema, entries).map_err(fail)?;
        if self.moving {
            let names = &self.headers;
            r.headers.retain(|h| !names.iter().any(|n| **n == *h.key));
        }
        r.value_schema = Some(out_schema);
        r.value = Some(Value::Struct(out));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        &[RecordKind::ChangeEvent, RecordKind::Other]
    }
}

/// A header's value going to field `name` (`parent.child` for a nested one).
type Entry<'a> = (&'a str, Arc<Schema>, Value);

/// `name` split into its parent field and the child field, when nested.
fn nested(name: &str) -> Option<(&str, &str)> {
    name.split_once('.')
}

/// The value schema with the fields of `entries` added (Debezium's
/// `ConnectRecordUtil.makeNewSchema`, one nesting level): into existing struct fields, then at
/// the top level, then new optional parent structs.
fn with_entries(s: &Schema, entries: &[Entry<'_>]) -> std::result::Result<Schema, String> {
    let mut out = struct_basics(s);
    for f in &s.fields {
        let children: Vec<&Entry<'_>> = entries
            .iter()
            .filter(|e| nested(e.0).is_some_and(|(p, _)| p == f.name))
            .collect();
        if children.is_empty() {
            out.fields.push(f.clone());
            continue;
        }
        if f.schema.ty != SchemaType::Struct {
            return Err(format!(
                "field '{}' is a primitive type, not a struct: cannot add nested field '{}'",
                f.name, children[0].0
            ));
        }
        let mut child = struct_basics(&f.schema);
        child.fields = f.schema.fields.clone();
        for (name, hs, _) in children {
            let c = nested(name).map_or(*name, |(_, c)| c);
            if child.field_index(c).is_none() {
                child
                    .fields
                    .push(crate::event::Field::new(c, hs.as_ref().clone()));
            }
        }
        out.fields
            .push(crate::event::Field::new(f.name.clone(), child));
    }
    for (name, hs, _) in entries.iter().filter(|e| nested(e.0).is_none()) {
        if out.field_index(name).is_none() {
            out.fields
                .push(crate::event::Field::new(*name, hs.as_ref().clone()));
        }
    }
    let mut parents: Vec<&str> = Vec::new();
    for (name, _, _) in entries {
        if let Some((p, _)) = nested(name) {
            if s.field_index(p).is_none() && !parents.contains(&p) {
                parents.push(p);
            }
        }
    }
    for p in parents {
        let mut parent = Schema::new(SchemaType::Struct, true);
        for (name, hs, _) in entries {
            if let Some((q, c)) = nested(name) {
                if q == p && parent.field_index(c).is_none() {
                    parent
                        .fields
                        .push(crate::event::Field::new(c, hs.as_ref().clone()));
                }
            }
        }
        out.fields.push(crate::event::Field::new(p, parent));
    }
    Ok(out)
}

/// The value of `out` (from [`with_entries`]) for the original struct `vs` of `schema`:
/// each original field (its default for a null, as `Struct.get` gives), a nested field's
/// parent rebuilt with its children when not null, the entries' values.
fn fill(
    schema: &Schema,
    vs: &[Value],
    out: &Schema,
    entries: Vec<Entry<'_>>,
) -> std::result::Result<Vec<Value>, String> {
    let missing = |name: &str| {
        format!(
            "{name} is not a valid field name: the value schema was derived from an earlier record without header {name:?}"
        )
    };
    let mut values: Vec<Value> = (0..schema.fields.len())
        .map(|i| field_value(schema, vs, i, true))
        .collect();
    values.resize(out.fields.len(), Value::Null);
    for (name, _, v) in entries {
        match nested(name) {
            None => {
                let i = out.field_index(name).ok_or_else(|| missing(name))?;
                values[i] = v;
            }
            Some((p, c)) => {
                let i = out.field_index(p).ok_or_else(|| missing(name))?;
                let child_schema = &out.fields[i].schema;
                let j = child_schema.field_index(c).ok_or_else(|| missing(name))?;
                let original = schema.field_index(p);
                let slot = &mut values[i];
                if slot.is_null() {
                    if original.is_some() {
                        // A null parent stays null (Debezium adds nothing to it).
                        continue;
                    }
                    *slot = Value::Struct(vec![Value::Null; child_schema.fields.len()]);
                }
                if let Value::Struct(cs) = slot {
                    if let Some(o) = original.filter(|_| cs.len() < child_schema.fields.len()) {
                        let inner = &schema.fields[o].schema;
                        let mut filled: Vec<Value> = (0..cs.len())
                            .map(|k| field_value(inner, cs, k, true))
                            .collect();
                        filled.resize(child_schema.fields.len(), Value::Null);
                        *cs = filled;
                    }
                    cs[j] = v;
                }
            }
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(t: &str) -> String {
        let (s, v) = literal_value(t).unwrap();
        crate::convert::header::render(&s, &v)
            .map(|b| String::from_utf8(b.into_owned()).unwrap())
            .unwrap_or_else(|| "<null>".into())
    }

    #[test]
    fn literals_render_as_connect_parses_them() {
        assert_eq!(lit("hello world"), "hello world");
        assert_eq!(lit("42"), "42");
        assert_eq!(lit("+007"), "7");
        assert_eq!(lit("1.0"), "1");
        assert_eq!(lit("1e3"), "1000");
        assert_eq!(lit("1.5"), "1.5");
        assert_eq!(lit("12345678.9"), "1.2345679E7");
        assert_eq!(lit("0.1"), "0.1");
        assert_eq!(lit("true"), "true");
        assert_eq!(lit("null"), "<null>");
        assert_eq!(lit("2024-01-31"), "2024-01-31");
        assert_eq!(lit(""), "");
        assert!(literal_value("[1,2]").is_err());
        assert!(literal_value("5 apples").is_err());
    }

    #[test]
    fn integer_literals_take_the_smallest_type() {
        let ty = |t: &str| literal_value(t).unwrap().0.ty;
        assert_eq!(ty("100"), SchemaType::Int8);
        assert_eq!(ty("1000"), SchemaType::Int16);
        assert_eq!(ty("100000"), SchemaType::Int32);
        assert_eq!(ty("10000000000"), SchemaType::Int64);
    }

    #[test]
    fn header_to_value_adds_nested_fields_into_a_struct_or_a_new_one() {
        let string = || Arc::new(Schema::new(SchemaType::String, false));
        let src = Schema::structure(
            "Src",
            true,
            vec![crate::event::Field::new(
                "name",
                Schema::new(SchemaType::String, false),
            )],
        );
        let env = Schema::structure(
            "Env",
            false,
            vec![
                crate::event::Field::new("id", Schema::new(SchemaType::Int32, false)),
                crate::event::Field::new("src", src),
            ],
        );
        let entries = || -> Vec<Entry<'static>> {
            vec![
                ("src.h", string(), Value::String("v1".into())),
                ("meta.a", string(), Value::String("v2".into())),
                ("top", string(), Value::String("v3".into())),
            ]
        };
        let out = with_entries(&env, &entries()).unwrap();
        let names: Vec<&str> = out.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["id", "src", "top", "meta"]);
        let src_out = &out.fields[1].schema;
        assert_eq!(src_out.name.as_deref(), Some("Src"));
        assert!(
            !src_out.optional,
            "copySchemaBasics: required, as in Connect"
        );
        assert_eq!(src_out.fields[1].name, "h");
        assert!(out.fields[3].schema.optional && out.fields[3].schema.name.is_none());
        let vs = vec![
            Value::Int(1),
            Value::Struct(vec![Value::String("n".into())]),
        ];
        let filled = fill(&env, &vs, &out, entries()).unwrap();
        assert_eq!(
            filled,
            vec![
                Value::Int(1),
                Value::Struct(vec![Value::String("n".into()), Value::String("v1".into())]),
                Value::String("v3".into()),
                Value::Struct(vec![Value::String("v2".into())]),
            ]
        );
        // A null parent stays null.
        let filled = fill(&env, &[Value::Int(1), Value::Null], &out, entries()).unwrap();
        assert_eq!(filled[1], Value::Null);
        let err = with_entries(&env, &[("id.x", string(), Value::Null)]).unwrap_err();
        assert!(err.contains("field 'id' is a primitive type"), "{err}");
    }

    #[test]
    fn header_to_value_refuses_duplicate_headers_and_empty_or_deep_field_names() {
        let refused = |headers: &str, fields: &str| {
            crate::transform::testutil::configs(&[
                ("transforms", "h"),
                ("transforms.h.type", HEADER_TO_VALUE),
                ("transforms.h.headers", headers),
                ("transforms.h.fields", fields),
            ])
            .expect_err("refused")
        };
        let m = refused("a,a", "x,y");
        assert!(m.contains("transforms.h.headers lists \"a\" twice"), "{m}");
        for fields in [".x,y", "x.,y"] {
            let m = refused("a,b", fields);
            assert!(m.contains("which names an empty field"), "{m}");
        }
        let m = refused("a", "meta.y.z");
        assert!(
            m.contains("holds \"meta.y.z\", a field name nested deeper"),
            "{m}"
        );
    }
}
