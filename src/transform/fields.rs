//! Kafka Connect's field transforms, each on the key (`$Key`) or the value (`$Value`):
//! `InsertField`, `ReplaceField`, `MaskField`, `ExtractField`, `HoistField`,
//! `SetSchemaMetadata`, and `ValueToKey` (value to key, no variant). Options and output are
//! Kafka Connect 4.3's (`org.apache.kafka.connect.transforms.*`).
//!
//! Records here always carry schemas, except Kafka nulls (a null key, a tombstone). Where
//! Connect passes a null through, so does pgcdc. Where Connect fails the task on a null
//! (`MaskField`, `ValueToKey`, `HeaderFrom` require a map when there is no schema), pgcdc passes
//! the null through unchanged: a deliberate difference, listed in `docs/differences.md`. `HoistField`
//! wraps a null into a schemaless map, as Connect does.
//!
//! A derived struct schema takes the name, version, doc and parameters of its input and is
//! required (Connect's `SchemaUtil.copySchemaBasics` into a new struct builder).

use std::sync::Arc;

use super::side::{data_error, field_value, list, struct_basics, struct_values};
use super::side::{SchemaCache, Side};
use super::{Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::{ConnectRecord, Field, Schema, SchemaType, Value};

/// `replace.null.with.default`, which most Connect transforms have (default true).
fn replace_null_with_default(o: &mut Options<'_>) -> bool {
    o.boolean("replace.null.with.default", true)
}

/// A required Connect `LIST` option that may be neither empty nor hold an item twice
/// (`ValidList.anyNonDuplicateValues(false, false)`); `None` after reporting the problem.
pub(crate) fn required_list(o: &mut Options<'_>, name: &str) -> Option<Vec<String>> {
    let Some(text) = o.get(name) else {
        o.problem(name, " is required");
        return None;
    };
    let items = list(text);
    unique_list(o, name, items, false)
}

/// Checks a Connect `LIST` for empty items and duplicates; `allow_empty` lets the list itself
/// be empty.
fn unique_list(
    o: &mut Options<'_>,
    name: &str,
    items: Vec<String>,
    allow_empty: bool,
) -> Option<Vec<String>> {
    if items.is_empty() && !allow_empty {
        o.problem(name, " must list at least one item");
        return None;
    }
    if items.iter().any(String::is_empty) {
        o.problem(name, " has an empty item");
        return None;
    }
    for (i, a) in items.iter().enumerate() {
        if items[..i].contains(a) {
            o.problem(name, format!(" lists {a:?} twice"));
            return None;
        }
    }
    Some(items)
}

/// An optional Connect `LIST` option (empty when unset), without duplicates.
fn optional_list(o: &mut Options<'_>, name: &str) -> Vec<String> {
    let items = o.get(name).map(list).unwrap_or_default();
    unique_list(o, name, items, true).unwrap_or_default()
}

/// The struct value of `side`, or the error Connect's `requireStruct` raises.
fn require_struct<'r>(
    side: Side,
    r: &'r ConnectRecord,
    what: &str,
    class: &str,
    alias: &str,
) -> Result<(&'r Arc<Schema>, &'r [Value])> {
    match (side.schema(r), side.value(r)) {
        (Some(s), Some(v @ Value::Struct(_))) if s.ty == SchemaType::Struct => {
            Ok((s, struct_values(v)))
        }
        _ => Err(data_error(
            class,
            alias,
            format!(
                "only a struct {} is supported for [{what}] (topic {})",
                side.name().to_lowercase(),
                r.topic
            ),
        )),
    }
}

/// The values of every field of `schema`, defaults substituted when `with_default`.
fn all_fields(schema: &Schema, values: &[Value], with_default: bool) -> Vec<Value> {
    (0..schema.fields.len())
        .map(|i| field_value(schema, values, i, with_default))
        .collect()
}

/// Adds `field` to struct schema `s`, refusing a name it already has (Connect's
/// `SchemaBuilder.field` fails the same way).
fn push_field(s: &mut Schema, name: &str, schema: Schema) -> std::result::Result<(), String> {
    if s.field_index(name).is_some() {
        return Err(format!(
            "cannot add field {name:?}: the schema already has a field of that name"
        ));
    }
    s.fields.push(Field::new(name, schema));
    Ok(())
}

// ---------------------------------------------------------------------------------------
// InsertField

/// A field InsertField adds: its name, and whether it is optional (`name?`, the default) or
/// required (`name!`).
#[derive(Debug, Clone, PartialEq)]
struct Insertion {
    name: String,
    optional: bool,
}

impl Insertion {
    fn parse(spec: &str) -> Insertion {
        if let Some(n) = spec.strip_suffix('?') {
            Insertion {
                name: n.into(),
                optional: true,
            }
        } else if let Some(n) = spec.strip_suffix('!') {
            Insertion {
                name: n.into(),
                optional: false,
            }
        } else {
            Insertion {
                name: spec.into(),
                optional: true,
            }
        }
    }
}

/// `InsertField$Key` / `InsertField$Value`: adds the topic, the partition, the record timestamp
/// and a static string as fields. `offset.field` is refused: it needs a sink record, and on a
/// source record Connect fails the task.
#[derive(Debug, Clone)]
pub struct InsertField {
    class: String,
    alias: String,
    side: Side,
    topic: Option<Insertion>,
    partition: Option<Insertion>,
    timestamp: Option<Insertion>,
    static_field: Option<Insertion>,
    static_value: String,
    /// The inserted fields in Connect's order, with their schemas (derived once, at parse).
    insertions: Vec<(Insertion, Schema)>,
    with_default: bool,
    cache: SchemaCache,
}

impl InsertField {
    /// The inserted fields in Connect's order, with their schemas.
    fn derive_insertions(&self) -> Vec<(Insertion, Schema)> {
        let mut out = Vec::new();
        if let Some(i) = &self.topic {
            out.push((i.clone(), Schema::new(SchemaType::String, i.optional)));
        }
        if let Some(i) = &self.partition {
            out.push((i.clone(), Schema::new(SchemaType::Int32, i.optional)));
        }
        if let Some(i) = &self.timestamp {
            let ts = Schema::new(SchemaType::Int64, i.optional)
                .named("org.apache.kafka.connect.data.Timestamp");
            out.push((i.clone(), ts));
        }
        if let Some(i) = &self.static_field {
            out.push((i.clone(), Schema::new(SchemaType::String, i.optional)));
        }
        out
    }
}

impl Transformation for InsertField {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let topic = o.get("topic.field").map(Insertion::parse);
        let partition = o.get("partition.field").map(Insertion::parse);
        let timestamp = o.get("timestamp.field").map(Insertion::parse);
        let static_field = o.get("static.field").map(Insertion::parse);
        let static_value = o.raw("static.value").map(str::to_string);
        let with_default = replace_null_with_default(o);
        if o.get("offset.field").is_some() {
            o.problem(
                "offset.field",
                " only applies to sink connectors (a source record has no offset; Kafka Connect fails the task): remove it",
            );
            return None;
        }
        let nothing =
            topic.is_none() && partition.is_none() && timestamp.is_none() && static_field.is_none();
        if nothing && !o.has_unread() {
            o.problem(
                "topic.field",
                ": no field insertion configured: set at least one of topic.field, partition.field, timestamp.field, static.field",
            );
            return None;
        }
        if static_field.is_some() && static_value.is_none() {
            o.problem("static.value", " is required when static.field is set");
            return None;
        }
        let mut t = InsertField {
            class: class.into(),
            alias: alias.into(),
            side,
            topic,
            partition,
            timestamp,
            static_field,
            static_value: static_value.unwrap_or_default(),
            insertions: Vec::new(),
            with_default,
            cache: SchemaCache::default(),
        };
        t.insertions = t.derive_insertions();
        Some(t)
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if self.side.value(&r).is_none() || self.side.schema(&r).is_none() {
            return Ok(Some(r));
        }
        let (schema, values) =
            require_struct(self.side, &r, "field insertion", &self.class, &self.alias)?;
        let insertions = &self.insertions;
        let out_schema = self
            .cache
            .get_or_try(schema, |s| {
                let mut out = struct_basics(s);
                out.fields = s.fields.clone();
                for (i, fs) in insertions {
                    push_field(&mut out, &i.name, fs.clone())?;
                }
                Ok(Arc::new(out))
            })
            .map_err(|e| data_error(&self.class, &self.alias, e))?;
        let mut out = all_fields(schema, values, self.with_default);
        let added = [
            self.topic
                .as_ref()
                .map(|_| Value::String(r.topic.to_string())),
            self.partition
                .as_ref()
                .map(|_| r.partition.map_or(Value::Null, |p| Value::Int(p.into()))),
            self.timestamp
                .as_ref()
                .map(|_| r.timestamp.map_or(Value::Null, Value::Int)),
            self.static_field
                .as_ref()
                .map(|_| Value::String(self.static_value.clone())),
        ];
        for ((i, _), v) in insertions.iter().zip(added.into_iter().flatten()) {
            if v.is_null() && !i.optional {
                return Err(data_error(
                    &self.class,
                    &self.alias,
                    format!(
                        "required field {:?} would be null (topic {}): the record has no such value; make the field optional ({}?)",
                        i.name, r.topic, i.name
                    ),
                ));
            }
            out.push(v);
        }
        self.side
            .set(&mut r, Some(out_schema), Some(Value::Struct(out)));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

// ---------------------------------------------------------------------------------------
// ReplaceField

/// `ReplaceField$Key` / `ReplaceField$Value`: keeps (`include`) or drops (`exclude`, which wins)
/// fields and renames them (`renames=old:new,…`).
#[derive(Debug, Clone)]
pub struct ReplaceField {
    class: String,
    alias: String,
    side: Side,
    names: FieldNames,
    with_default: bool,
    cache: SchemaCache<(Arc<Schema>, Arc<[usize]>)>,
}

/// ReplaceField's `exclude`, `include` and `renames`.
#[derive(Debug, Clone)]
struct FieldNames {
    exclude: Vec<String>,
    include: Vec<String>,
    renames: Vec<(String, String)>,
}

impl FieldNames {
    fn keep(&self, name: &str) -> bool {
        !self.exclude.iter().any(|e| e == name)
            && (self.include.is_empty() || self.include.iter().any(|i| i == name))
    }

    fn renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.renames
            .iter()
            .find(|(from, _)| from == name)
            .map_or(name, |(_, to)| to.as_str())
    }
}

impl Transformation for ReplaceField {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let exclude = optional_list(o, "exclude");
        let include = optional_list(o, "include");
        let mut renames: Vec<(String, String)> = Vec::new();
        for m in o.get("renames").map(list).unwrap_or_default() {
            let parts: Vec<&str> = m.split(':').collect();
            if parts.len() != 2 {
                o.problem(
                    "renames",
                    format!(" has an invalid rename mapping {m:?}: use old:new pairs, e.g. foo:bar,abc:xyz"),
                );
                return None;
            }
            renames.retain(|(from, _)| from != parts[0]);
            renames.push((parts[0].into(), parts[1].into()));
        }
        let with_default = replace_null_with_default(o);
        Some(ReplaceField {
            class: class.into(),
            alias: alias.into(),
            side,
            names: FieldNames {
                exclude,
                include,
                renames,
            },
            with_default,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if self.side.value(&r).is_none() || self.side.schema(&r).is_none() {
            return Ok(Some(r));
        }
        let (schema, values) =
            require_struct(self.side, &r, "field replacement", &self.class, &self.alias)?;
        let this = &self.names;
        let (out_schema, kept) = self
            .cache
            .get_or_try(schema, |s| {
                let mut out = struct_basics(s);
                let mut kept = Vec::new();
                for (i, f) in s.fields.iter().enumerate() {
                    if this.keep(&f.name) {
                        push_field(&mut out, this.renamed(&f.name), f.schema.clone())?;
                        kept.push(i);
                    }
                }
                Ok((Arc::new(out), kept.into()))
            })
            .map_err(|e| data_error(&self.class, &self.alias, e))?;
        let out = kept
            .iter()
            .map(|&i| field_value(schema, values, i, self.with_default))
            .collect();
        self.side
            .set(&mut r, Some(out_schema), Some(Value::Struct(out)));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

// ---------------------------------------------------------------------------------------
// MaskField

/// `MaskField$Key` / `MaskField$Value`: replaces the listed fields' non-null values with the
/// type's empty value (0, false, "", an empty array or map), or with `replacement` converted to
/// the field's type (numbers, decimals and strings only). Bytes and structs cannot be masked
/// (an error, as in Connect).
#[derive(Debug, Clone)]
pub struct MaskField {
    class: String,
    alias: String,
    side: Side,
    fields: Vec<String>,
    replacement: Option<String>,
    with_default: bool,
}

impl Transformation for MaskField {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let fields = required_list(o, "fields");
        let replacement = match o.raw("replacement") {
            Some("") => {
                o.problem(
                    "replacement",
                    " must not be empty: remove it or give a value",
                );
                return None;
            }
            r => r.map(str::to_string),
        };
        let with_default = replace_null_with_default(o);
        Some(MaskField {
            class: class.into(),
            alias: alias.into(),
            side,
            fields: fields?,
            replacement,
            with_default,
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if self.side.value(&r).is_none() {
            return Ok(Some(r));
        }
        let (schema, values) =
            require_struct(self.side, &r, "mask fields", &self.class, &self.alias)?;
        let schema = schema.clone();
        let mut out = all_fields(&schema, values, self.with_default);
        for (f, v) in schema.fields.iter().zip(out.iter_mut()) {
            if v.is_null() || !self.fields.contains(&f.name) {
                continue;
            }
            *v = match &self.replacement {
                None => empty_value(&f.schema),
                Some(text) => replacement_value(&f.schema, text),
            }
            .map_err(|e| {
                data_error(
                    &self.class,
                    &self.alias,
                    format!("field {:?} (topic {}): {e}", f.name, r.topic),
                )
            })?;
        }
        self.side
            .set(&mut r, Some(schema), Some(Value::Struct(out)));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

const DECIMAL: &str = "org.apache.kafka.connect.data.Decimal";

fn is_decimal(s: &Schema) -> bool {
    s.ty == SchemaType::Bytes && s.name.as_deref() == Some(DECIMAL)
}

/// The value MaskField masks with: the empty value of the field's Java type.
fn empty_value(s: &Schema) -> std::result::Result<Value, String> {
    Ok(match s.ty {
        SchemaType::Boolean => Value::Bool(false),
        SchemaType::Int8 | SchemaType::Int16 | SchemaType::Int32 | SchemaType::Int64 => {
            Value::Int(0)
        }
        SchemaType::Float32 => Value::Float32(0.0),
        SchemaType::Float64 => Value::Float64(0.0),
        SchemaType::String => Value::String(String::new()),
        SchemaType::Bytes if is_decimal(s) => Value::Bytes(vec![0]),
        SchemaType::Array => Value::Array(Vec::new()),
        SchemaType::Map => Value::Map(Vec::new()),
        SchemaType::Bytes => return Err("cannot mask a value of type bytes".into()),
        SchemaType::Struct => return Err("cannot mask a value of type struct".into()),
    })
}

/// `replacement` converted to the field's type, as MaskField converts it.
fn replacement_value(s: &Schema, text: &str) -> std::result::Result<Value, String> {
    let logical_date = matches!(
        s.name.as_deref(),
        Some(
            "org.apache.kafka.connect.data.Date"
                | "org.apache.kafka.connect.data.Time"
                | "org.apache.kafka.connect.data.Timestamp"
        )
    );
    let bad = || {
        format!(
            "unable to convert the replacement {text:?} to {}",
            s.ty.json_name()
        )
    };
    let int = |min: i64, max: i64| {
        text.parse::<i64>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .map(Value::Int)
            .ok_or_else(bad)
    };
    match s.ty {
        _ if logical_date => {
            Err("cannot mask a date or time value with a custom replacement".into())
        }
        SchemaType::Int8 => int(i8::MIN.into(), i8::MAX.into()),
        SchemaType::Int16 => int(i16::MIN.into(), i16::MAX.into()),
        SchemaType::Int32 => int(i32::MIN.into(), i32::MAX.into()),
        SchemaType::Int64 => int(i64::MIN, i64::MAX),
        SchemaType::Float32 => text
            .trim()
            .parse::<f32>()
            .map(Value::Float32)
            .map_err(|_| bad()),
        SchemaType::Float64 => text
            .trim()
            .parse::<f64>()
            .map(Value::Float64)
            .map_err(|_| bad()),
        SchemaType::String => Ok(Value::String(text.into())),
        SchemaType::Bytes if is_decimal(s) => decimal_replacement(s, text),
        other => Err(format!(
            "cannot mask a value of type {} with a custom replacement",
            other.json_name()
        )),
    }
}

/// A decimal replacement: its scale must be the column's (Connect fails the record otherwise).
fn decimal_replacement(s: &Schema, text: &str) -> std::result::Result<Value, String> {
    let scale: usize = s
        .parameters
        .iter()
        .find(|(k, _)| k == "scale")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let (int_part, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() != scale {
        return Err(format!(
            "the replacement {text:?} has {} decimal places but the field's scale is {scale}",
            frac.len()
        ));
    }
    let unscaled: i128 = format!("{int_part}{frac}")
        .parse()
        .map_err(|_| format!("the replacement {text:?} is not a decimal number"))?;
    Ok(Value::Bytes(twos_complement(unscaled)))
}

/// Minimal big-endian two's-complement bytes of `v` (Java's `BigInteger.toByteArray`).
fn twos_complement(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

// ---------------------------------------------------------------------------------------
// ValueToKey

/// `ValueToKey`: the key becomes a struct (unnamed, required) of the listed value fields, in
/// the listed order. A field the value lacks is an error naming it.
#[derive(Debug, Clone)]
pub struct ValueToKey {
    class: String,
    alias: String,
    fields: Vec<String>,
    with_default: bool,
    cache: SchemaCache<(Arc<Schema>, Arc<[usize]>)>,
}

impl Transformation for ValueToKey {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias) = (d.class, d.alias);
        let fields = required_list(o, "fields");
        let with_default = replace_null_with_default(o);
        Some(ValueToKey {
            class: class.into(),
            alias: alias.into(),
            fields: fields?,
            with_default,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if Side::Value.value(&r).is_none() {
            return Ok(Some(r));
        }
        let (schema, values) = require_struct(
            Side::Value,
            &r,
            "copying fields from value to key",
            &self.class,
            &self.alias,
        )?;
        let fields = &self.fields;
        let (key_schema, idx) = self
            .cache
            .get_or_try(schema, |s| {
                let mut key = Schema::new(SchemaType::Struct, false);
                let mut idx = Vec::new();
                for f in fields {
                    let i = s
                        .field_index(f)
                        .ok_or_else(|| format!("field does not exist: {f}"))?;
                    key.fields
                        .push(Field::new(f.clone(), s.fields[i].schema.clone()));
                    idx.push(i);
                }
                Ok((Arc::new(key), idx.into()))
            })
            .map_err(|e| {
                data_error(&self.class, &self.alias, format!("{e} (topic {})", r.topic))
            })?;
        let key = idx
            .iter()
            .map(|&i| field_value(schema, values, i, self.with_default))
            .collect();
        r.key_schema = Some(key_schema);
        r.key = Some(Value::Struct(key));
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

// ---------------------------------------------------------------------------------------
// ExtractField

/// `ExtractField$Key` / `ExtractField$Value`: the key or value becomes one of its fields
/// (`field`; with `field.syntax.version=V2` a dotted path, backticks quoting a name that
/// holds dots). A field the schema lacks is an error naming it.
#[derive(Debug, Clone)]
pub struct ExtractField {
    class: String,
    alias: String,
    side: Side,
    path: Vec<String>,
    with_default: bool,
    cache: SchemaCache<(Arc<Schema>, Arc<[usize]>)>,
}

impl Transformation for ExtractField {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let field = o.raw("field");
        let v2 = o.choice(
            "field.syntax.version",
            false,
            &[("V1", false), ("V2", true)],
        );
        let with_default = replace_null_with_default(o);
        let Some(field) = field else {
            o.problem("field", " is required: the name of the field to extract");
            return None;
        };
        let path = if v2 {
            match field_path_v2(field) {
                Ok(p) => p,
                Err(e) => {
                    o.problem("field", format!("={field}: {e}"));
                    return None;
                }
            }
        } else {
            vec![field.to_string()]
        };
        Some(ExtractField {
            class: class.into(),
            alias: alias.into(),
            side,
            path,
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
        let path = &self.path;
        let (field_schema, idx) = self
            .cache
            .get_or_try(&schema, |s| {
                let mut cur = s;
                let mut idx = Vec::new();
                for step in path {
                    let i = (cur.ty == SchemaType::Struct)
                        .then(|| cur.field_index(step))
                        .flatten()
                        .ok_or_else(|| format!("unknown field: {}", path.join(".")))?;
                    idx.push(i);
                    cur = &cur.fields[i].schema;
                }
                Ok((Arc::new(cur.clone()), idx.into()))
            })
            .map_err(|e| {
                data_error(&self.class, &self.alias, format!("{e} (topic {})", r.topic))
            })?;
        let mut cur_schema: &Schema = &schema;
        let mut value = self.side.take(&mut r).unwrap_or(Value::Null);
        for (n, &i) in idx.iter().enumerate() {
            let last = n + 1 == idx.len();
            let with_default = !last || self.with_default;
            value = match value {
                Value::Struct(vs) => field_value(cur_schema, &vs, i, with_default),
                _ => Value::Null,
            };
            cur_schema = &cur_schema.fields[i].schema;
        }
        let value = (!value.is_null()).then_some(value);
        self.side.set(&mut r, Some(field_schema), value);
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

/// Splits a `field.syntax.version=V2` path: steps separated by dots; a step in backticks may
/// hold dots, and a backslash before a backtick keeps it.
fn field_path_v2(path: &str) -> std::result::Result<Vec<String>, String> {
    let b = path.as_bytes();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            match path[i..].find('.') {
                Some(d) => {
                    steps.push(path[i..i + d].to_string());
                    i += d + 1;
                }
                None => {
                    steps.push(path[i..].to_string());
                    i = b.len();
                }
            }
            continue;
        }
        let open = i;
        i += 1;
        let mut field = String::new();
        let mut start = i;
        loop {
            let Some(rel) = path[i..].find('`') else {
                return Err(format!(
                    "incomplete backtick pair in path at position {open}: add a backslash before the backtick to escape it"
                ));
            };
            i += rel;
            let escaped = b[i - 1] == b'\\';
            if i + 1 >= b.len() {
                if escaped {
                    return Err(format!(
                        "incomplete backtick pair in path at position {open}: add a backslash before the backtick to escape it"
                    ));
                }
                field.push_str(&path[start..i]);
                steps.push(std::mem::take(&mut field));
                i += 1;
                break;
            }
            if b[i + 1] != b'.' {
                i += 1;
                continue;
            }
            if escaped {
                field.push_str(&path[start..i - 1]);
                field.push('`');
                i += 1;
                start = i;
                continue;
            }
            field.push_str(&path[start..i]);
            steps.push(std::mem::take(&mut field));
            i += 2;
            break;
        }
    }
    if path.ends_with('.') {
        steps.push(String::new());
    }
    Ok(steps)
}

// ---------------------------------------------------------------------------------------
// HoistField

/// `HoistField$Key` / `HoistField$Value`: wraps the key or value in a struct (unnamed,
/// required) with one field, `field`. A Kafka null becomes a schemaless map `{field: null}`,
/// as in Connect.
#[derive(Debug, Clone)]
pub struct HoistField {
    side: Side,
    field: String,
    cache: SchemaCache,
}

impl Transformation for HoistField {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let side = d.side;
        let Some(field) = o.raw("field") else {
            o.problem("field", " is required: the name of the field to create");
            return None;
        };
        Some(HoistField {
            side,
            field: field.to_string(),
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let value = self.side.take(&mut r);
        match self.side.schema(&r).cloned() {
            None => {
                let map = vec![(
                    Value::String(self.field.clone()),
                    value.unwrap_or(Value::Null),
                )];
                self.side.set(&mut r, None, Some(Value::Map(map)));
            }
            Some(schema) => {
                let field = &self.field;
                let out = self
                    .cache
                    .get_or_try(&schema, |s| {
                        let mut out = Schema::new(SchemaType::Struct, false);
                        out.fields.push(Field::new(field.clone(), s.clone()));
                        Ok(Arc::new(out))
                    })
                    .unwrap_or_else(|_| unreachable!("deriving a hoisted schema cannot fail"));
                let v = Value::Struct(vec![value.unwrap_or(Value::Null)]);
                self.side.set(&mut r, Some(out), Some(v));
            }
        }
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

// ---------------------------------------------------------------------------------------
// SetSchemaMetadata

/// `SetSchemaMetadata$Key` / `SetSchemaMetadata$Value`: sets the schema's name
/// (`schema.name`) and/or version (`schema.version`).
#[derive(Debug, Clone)]
pub struct SetSchemaMetadata {
    class: String,
    alias: String,
    side: Side,
    name: Option<String>,
    version: Option<i32>,
    with_default: bool,
    cache: SchemaCache,
}

impl Transformation for SetSchemaMetadata {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let (class, alias, side) = (d.class, d.alias, d.side);
        let name = o.get("schema.name").map(str::to_string);
        let version = match o.get("schema.version") {
            None => None,
            Some(v) => match v.parse::<i32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    o.problem("schema.version", format!("={v} is not a 32-bit integer"));
                    return None;
                }
            },
        };
        let with_default = replace_null_with_default(o);
        if name.is_none() && version.is_none() {
            o.problem(
                "schema.name",
                ": neither schema.name nor schema.version is set: set at least one",
            );
            return None;
        }
        Some(SetSchemaMetadata {
            class: class.into(),
            alias: alias.into(),
            side,
            name,
            version,
            with_default,
            cache: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let Some(schema) = self.side.schema(&r).cloned() else {
            if self.side.value(&r).is_none() {
                return Ok(Some(r));
            }
            return Err(data_error(
                &self.class,
                &self.alias,
                format!(
                    "a schema is required for [updating schema metadata] (topic {})",
                    r.topic
                ),
            ));
        };
        let (name, version) = (&self.name, self.version);
        let out = self
            .cache
            .get_or_try(&schema, |s| {
                let mut out = s.clone();
                if let Some(n) = name {
                    out.name = Some(n.clone());
                }
                if let Some(v) = version {
                    out.version = Some(v);
                }
                Ok(Arc::new(out))
            })
            .unwrap_or_else(|_| unreachable!("setting schema metadata cannot fail"));
        let value = match self.side.take(&mut r) {
            Some(Value::Struct(vs)) => {
                Some(Value::Struct(all_fields(&schema, &vs, self.with_default)))
            }
            other => other,
        };
        self.side.set(&mut r, Some(out), value);
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_paths_split_on_dots_and_honour_backticks() {
        assert_eq!(field_path_v2("after.id").unwrap(), ["after", "id"]);
        assert_eq!(field_path_v2("`a.b`.c").unwrap(), ["a.b", "c"]);
        assert_eq!(field_path_v2("x.`a.b`").unwrap(), ["x", "a.b"]);
        assert_eq!(field_path_v2("a.").unwrap(), ["a", ""]);
        assert!(field_path_v2("`a.b").is_err());
    }

    #[test]
    fn twos_complement_is_java_big_integer_bytes() {
        assert_eq!(twos_complement(0), [0]);
        assert_eq!(twos_complement(128), [0, 128]);
        assert_eq!(twos_complement(-1), [0xff]);
        assert_eq!(twos_complement(-129), [0xff, 0x7f]);
        assert_eq!(twos_complement(1234), [0x04, 0xd2]);
    }

    #[test]
    fn decimal_replacements_must_have_the_column_scale() {
        let s = Schema::new(SchemaType::Bytes, true)
            .named(DECIMAL)
            .param("scale", "2");
        assert_eq!(
            replacement_value(&s, "12.34").unwrap(),
            Value::Bytes(vec![0x04, 0xd2])
        );
        assert!(replacement_value(&s, "12.3").is_err());
    }
}
