//! `table.expand.json.payload`: turns a JSON text payload into a Connect struct, inferring the
//! schema from the document exactly as Debezium 3.6.1's outbox `JsonSchemaData` does.
//!
//! Inference rules (facts of Debezium 3.6.1):
//! - string → optional string; boolean → optional boolean;
//! - number: an integer that fits in 32 bits → optional int32, in 64 bits → optional int64,
//!   anything else (fractions, exponents, wider integers) → optional float64;
//! - object → optional struct named after its path (`payload`, `payload.address`, ...), one
//!   field per member in document order; members whose schema is absent are left out;
//! - array: empty → no schema (the member is dropped), unless `empty_array` is
//!   [`EmptyArrayBehavior::OptionalString`] (an optional array of optional strings);
//!   non-empty → optional array whose item schema comes from the first non-null element; all
//!   non-null elements must have the same JSON type (and numbers the same schema); an array of
//!   objects gets the union of the objects' fields (for a field seen with different schemas,
//!   the first wins unless it was bytes);
//! - null → no schema (dropped), or optional bytes with [`NullBehavior::OptionalBytes`].
//!
//! Values then follow the schema; a value that does not fit its schema (say an int64 under an
//! int32 field merged from another array element) fails the record, as Debezium's converter
//! would fail it.
//!
//! Differences: Debezium merges the object schemas of an array in `HashSet` order, which depends
//! on the JVM run; pgcdc merges them in array order. Parsing stops after the first JSON value,
//! as Jackson's `readTree` does.

use crate::event::{Field, Schema, SchemaType, Value};

/// `table.json.payload.null.behavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullBehavior {
    /// `ignore` (default): a JSON null gets no schema; the member is dropped.
    Ignore,
    /// `optional_bytes`: a JSON null is an optional bytes field holding null.
    OptionalBytes,
}

/// `table.json.payload.empty.array.behavior` (a Debezium 3.7 option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyArrayBehavior {
    /// `ignore` (default, and Debezium 3.6.1's only behaviour): an empty array is dropped.
    Ignore,
    /// `optional_string`: an empty array is an optional array of optional strings.
    OptionalString,
}

/// A parsed JSON value, members in document order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits in i32.
    Int(i32),
    /// An integer that fits in i64 but not i32.
    Long(i64),
    /// An integer wider than 64 bits (Jackson's BigInteger node).
    BigInt,
    /// A number with a fraction or an exponent.
    Double(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object; a repeated member name keeps its first position and its last value.
    Object(Vec<(String, Json)>),
}

/// Why a payload could not be expanded.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpandError {
    /// Not JSON, or a schema could not be inferred: Debezium logs a warning and leaves the
    /// payload unchanged.
    Skip(String),
    /// The schema was inferred but a value does not fit it: Debezium emits a record its
    /// converter then rejects, so the record fails.
    Fail(String),
}

/// Expands `text` (a payload string) into a struct schema and value. `root` is the payload
/// column name, which names the top-level struct.
pub fn expand(
    text: &str,
    root: &str,
    nulls: NullBehavior,
    empty_arrays: EmptyArrayBehavior,
) -> Result<(Schema, Value), ExpandError> {
    if !(text.starts_with('{') || text.starts_with('[')) {
        return Err(ExpandError::Skip(
            "the payload does not start with '{' or '['".into(),
        ));
    }
    let doc = parse(text).map_err(ExpandError::Skip)?;
    let inf = Inference {
        nulls,
        empty_arrays,
    };
    let schema = inf
        .schema(Some(root), &doc)
        .map_err(ExpandError::Skip)?
        .ok_or_else(|| ExpandError::Skip("the payload has no schema".into()))?;
    if schema.ty != SchemaType::Struct {
        return Err(ExpandError::Fail(
            "the payload is a JSON array: Debezium builds an array schema for it but cannot convert the value (only JSON objects can be expanded)".into(),
        ));
    }
    let value = to_value(&doc, &schema).map_err(ExpandError::Fail)?;
    Ok((schema, value))
}

struct Inference {
    nulls: NullBehavior,
    empty_arrays: EmptyArrayBehavior,
}

fn optional(ty: SchemaType) -> Schema {
    Schema::new(ty, true)
}

impl Inference {
    fn schema(&self, key: Option<&str>, node: &Json) -> Result<Option<Schema>, String> {
        Ok(match node {
            Json::Str(_) => Some(optional(SchemaType::String)),
            Json::Bool(_) => Some(optional(SchemaType::Boolean)),
            Json::Int(_) => Some(optional(SchemaType::Int32)),
            Json::Long(_) => Some(optional(SchemaType::Int64)),
            Json::BigInt | Json::Double(_) => Some(optional(SchemaType::Float64)),
            Json::Null => match self.nulls {
                NullBehavior::OptionalBytes => Some(optional(SchemaType::Bytes)),
                NullBehavior::Ignore => None,
            },
            Json::Array(items) if items.is_empty() => match self.empty_arrays {
                EmptyArrayBehavior::OptionalString => {
                    Some(Schema::array(optional(SchemaType::String), true))
                }
                EmptyArrayBehavior::Ignore => None,
            },
            Json::Array(items) => Some(Schema::array(self.item_schema(key, items)?, true)),
            Json::Object(members) => {
                let mut s = Schema::new(SchemaType::Struct, true);
                s.name = key.map(str::to_string);
                for (name, v) in members {
                    let child_key = match key {
                        Some(k) if !k.trim().is_empty() => format!("{k}.{name}"),
                        _ => name.clone(),
                    };
                    if let Some(fs) = self.schema(Some(&child_key), v)? {
                        if s.field_index(name).is_none() {
                            s.fields.push(Field::new(name.clone(), fs));
                        }
                    }
                }
                Some(s)
            }
        })
    }

    fn item_schema(&self, key: Option<&str>, items: &[Json]) -> Result<Schema, String> {
        let sample = self.first_element(items)?;
        if matches!(sample, Json::Object(_)) {
            let mut distinct: Vec<Schema> = Vec::new();
            for e in items {
                if let Json::Object(_) = e {
                    if let Some(s) = self.schema(key, e)? {
                        if !distinct.contains(&s) {
                            distinct.push(s);
                        }
                    }
                }
            }
            let mut merged: Option<Schema> = None;
            for s in distinct {
                merged = Some(match merged {
                    None => s,
                    Some(left) => merge(left, s),
                });
            }
            merged.ok_or_else(|| "an array of objects has no schema".to_string())
        } else {
            self.schema(None, sample)?
                .ok_or_else(|| "an array has members of no recognised schema".to_string())
        }
    }

    /// The first non-null element, after checking that all non-null elements have one JSON
    /// type (and numbers one schema).
    fn first_element<'a>(&self, items: &'a [Json]) -> Result<&'a Json, String> {
        let mut first: Option<&Json> = None;
        for e in items {
            if matches!(e, Json::Null) {
                continue;
            }
            let f = *first.get_or_insert(e);
            if kind(f) != kind(e) {
                return Err(format!(
                    "an array is not homogeneous ({} and {})",
                    kind(f),
                    kind(e)
                ));
            }
            if kind(f) == "number" && number_schema(f) != number_schema(e) {
                return Err("an array mixes number types".into());
            }
        }
        Ok(first.unwrap_or(&Json::Null))
    }
}

fn kind(j: &Json) -> &'static str {
    match j {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Int(_) | Json::Long(_) | Json::BigInt | Json::Double(_) => "number",
        Json::Str(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn number_schema(j: &Json) -> SchemaType {
    match j {
        Json::Int(_) => SchemaType::Int32,
        Json::Long(_) => SchemaType::Int64,
        _ => SchemaType::Float64,
    }
}

/// Union of two struct schemas: left's fields first; a field already present keeps its schema
/// unless that schema is bytes and the new one is not.
fn merge(left: Schema, right: Schema) -> Schema {
    let mut out = left;
    for f in right.fields {
        match out.field_index(&f.name) {
            None => out.fields.push(f),
            Some(i) => {
                let old = &out.fields[i].schema;
                if *old != f.schema
                    && old.ty == SchemaType::Bytes
                    && f.schema.ty != SchemaType::Bytes
                {
                    out.fields[i] = f;
                }
            }
        }
    }
    out
}

/// Builds the struct value of `doc` under `schema` (a struct schema).
fn to_value(doc: &Json, schema: &Schema) -> Result<Value, String> {
    let Json::Object(members) = doc else {
        return Err("expected a JSON object".into());
    };
    let mut values = Vec::with_capacity(schema.fields.len());
    for f in &schema.fields {
        let v = match members.iter().find(|(n, _)| *n == f.name) {
            // Errors name types only: member names are payload content.
            Some((_, node)) => field_value(node, &f.schema)?,
            None => Value::Null,
        };
        values.push(v);
    }
    Ok(Value::Struct(values))
}

fn field_value(node: &Json, schema: &Schema) -> Result<Value, String> {
    let mismatch = |what: &str| {
        Err(format!(
            "a JSON {what} does not fit the inferred schema type {}",
            schema.ty.json_name()
        ))
    };
    match (node, schema.ty) {
        (Json::Null, _) => Ok(Value::Null),
        (Json::Str(s), SchemaType::String) => Ok(Value::String(s.clone())),
        (Json::Bool(b), SchemaType::Boolean) => Ok(Value::Bool(*b)),
        (Json::Int(i), SchemaType::Int32) => Ok(Value::Int(i64::from(*i))),
        (Json::Long(i), SchemaType::Int64) => Ok(Value::Int(*i)),
        (Json::Double(d), SchemaType::Float64) => Ok(Value::Float64(*d)),
        (Json::Array(items), SchemaType::Array) => {
            let item_schema = schema
                .items
                .as_deref()
                .ok_or_else(|| "array schema without items".to_string())?;
            items
                .iter()
                .map(|i| field_value(i, item_schema))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        (Json::Object(_), SchemaType::Struct) => to_value(node, schema),
        (Json::BigInt, _) => mismatch("integer wider than 64 bits"),
        (other, _) => mismatch(kind(other)),
    }
}

/// Parses one JSON value from the start of `text` (trailing content is ignored, as Jackson's
/// `readTree` ignores it). Errors name the byte offset, never the content.
pub fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    p.ws();
    p.value()
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

/// Nesting limit, so that a hostile payload cannot exhaust the stack.
const MAX_DEPTH: usize = 512;

impl Parser<'_> {
    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("invalid JSON at byte {}: {what}", self.i))
    }

    fn ws(&mut self) {
        while let Some(c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.b[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        match self.b.get(self.i) {
            None => self.err("unexpected end"),
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'"') => self.string().map(Json::Str),
            Some(b't') if self.eat("true") => Ok(Json::Bool(true)),
            Some(b'f') if self.eat("false") => Ok(Json::Bool(false)),
            Some(b'n') if self.eat("null") => Ok(Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.err("unexpected character"),
        }
    }

    fn nested(&mut self, f: fn(&mut Self) -> Result<Json, String>) -> Result<Json, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err("nesting deeper than 512 levels");
        }
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn object(&mut self) -> Result<Json, String> {
        self.i += 1;
        let mut members: Vec<(String, Json)> = Vec::new();
        self.ws();
        if self.eat("}") {
            return Ok(Json::Object(members));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return self.err("expected a member name");
            }
            let name = self.string()?;
            self.ws();
            if !self.eat(":") {
                return self.err("expected ':'");
            }
            self.ws();
            let v = self.value()?;
            match members.iter_mut().find(|(n, _)| *n == name) {
                Some(m) => m.1 = v,
                None => members.push((name, v)),
            }
            self.ws();
            if self.eat(",") {
                continue;
            }
            if self.eat("}") {
                return Ok(Json::Object(members));
            }
            return self.err("expected ',' or '}'");
        }
    }

    fn array(&mut self) -> Result<Json, String> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat("]") {
            return Ok(Json::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            if self.eat(",") {
                continue;
            }
            if self.eat("]") {
                return Ok(Json::Array(items));
            }
            return self.err("expected ',' or ']'");
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let Some(h) = self.b.get(self.i..self.i + 4) else {
            return self.err("truncated \\u escape");
        };
        let s = std::str::from_utf8(h).map_err(|_| "invalid \\u escape".to_string())?;
        let v = u32::from_str_radix(s, 16).or_else(|_| self.err("invalid \\u escape"))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            // The input is a &str and we stopped on ASCII bytes: the slice is valid UTF-8.
            out.push_str(std::str::from_utf8(&self.b[start..self.i]).unwrap_or_default());
            match self.b.get(self.i) {
                None => return self.err("unterminated string"),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let Some(&e) = self.b.get(self.i) else {
                        return self.err("unterminated escape");
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi)
                                && self.b[self.i..].starts_with(b"\\u")
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                } else {
                                    self.i = save;
                                    0xFFFD
                                }
                            } else {
                                hi
                            };
                            out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        }
                        _ => return self.err("invalid escape"),
                    }
                }
                Some(_) => return self.err("control character in a string"),
            }
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.i;
        let mut integral = true;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = |p: &mut Self| {
            let s = p.i;
            while matches!(p.b.get(p.i), Some(b'0'..=b'9')) {
                p.i += 1;
            }
            p.i - s
        };
        if digits(self) == 0 {
            return self.err("expected a digit");
        }
        if self.b.get(self.i) == Some(&b'.') {
            integral = false;
            self.i += 1;
            if digits(self) == 0 {
                return self.err("expected a digit after '.'");
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            integral = false;
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return self.err("expected a digit in the exponent");
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("0");
        if integral {
            return Ok(match text.parse::<i64>() {
                Ok(v) => match i32::try_from(v) {
                    Ok(i) => Json::Int(i),
                    Err(_) => Json::Long(v),
                },
                Err(_) => Json::BigInt,
            });
        }
        text.parse::<f64>()
            .map(Json::Double)
            .or_else(|_| self.err("invalid number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(text: &str, nulls: NullBehavior, arrays: EmptyArrayBehavior) -> (Schema, Value) {
        expand(text, "payload", nulls, arrays).unwrap()
    }

    fn render(schema: &Schema, v: &Value) -> String {
        let mut out = Vec::new();
        crate::convert::json::write_value(schema, v, true, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn schema_json(schema: &Schema) -> String {
        let mut out = Vec::new();
        crate::convert::json::write_schema(schema, None, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_are_classified_as_jackson_classifies_them() {
        assert_eq!(parse("42").unwrap(), Json::Int(42));
        assert_eq!(parse("-2147483648").unwrap(), Json::Int(i32::MIN));
        assert_eq!(parse("2147483648").unwrap(), Json::Long(2_147_483_648));
        assert_eq!(parse("9223372036854775808").unwrap(), Json::BigInt);
        assert_eq!(parse("4.9").unwrap(), Json::Double(4.9));
        assert_eq!(parse("1e2").unwrap(), Json::Double(100.0));
        assert!(parse("01x").is_ok(), "trailing content is ignored");
        assert!(parse("{\"a\":}").is_err());
        assert_eq!(
            parse(r#""a\u00e9\ud83d\ude00""#).unwrap(),
            Json::Str("aé😀".into())
        );
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn repeated_member_keeps_first_position_and_last_value() {
        assert_eq!(
            parse(r#"{"a":1,"b":2,"a":3}"#).unwrap(),
            Json::Object(vec![("a".into(), Json::Int(3)), ("b".into(), Json::Int(2))])
        );
    }

    #[test]
    fn nested_objects_are_named_by_path_and_optional() {
        let (s, v) = ex(
            r#"{"a": {"b": {"c": 1}}, "d": [1, 2]}"#,
            NullBehavior::Ignore,
            EmptyArrayBehavior::Ignore,
        );
        assert_eq!(
            schema_json(&s),
            concat!(
                r#"{"type":"struct","fields":[{"type":"struct","fields":[{"type":"struct","#,
                r#""fields":[{"type":"int32","optional":true,"field":"c"}],"optional":true,"#,
                r#""name":"payload.a.b","field":"b"}],"optional":true,"name":"payload.a","field":"a"},"#,
                r#"{"type":"array","items":{"type":"int32","optional":true},"optional":true,"field":"d"}],"#,
                r#""optional":true,"name":"payload"}"#,
            )
        );
        assert_eq!(render(&s, &v), r#"{"a":{"b":{"c":1}},"d":[1,2]}"#);
    }

    #[test]
    fn bug_34_empty_arrays_and_nulls_are_dropped_by_default_as_debezium_drops_them() {
        // The jsonb text PostgreSQL sends for the BUG-34 payload (keys in jsonb order).
        let text = concat!(
            r#"{"note": null, "lines": [], "total": "19.90", "groups": [{"items": []},"#,
            r#" {"items": [{"qty": 2, "sku": "A1"}]}]}"#,
        );
        let (s, v) = ex(text, NullBehavior::Ignore, EmptyArrayBehavior::Ignore);
        assert_eq!(
            render(&s, &v),
            r#"{"total":"19.90","groups":[{"items":[]},{"items":[{"qty":2,"sku":"A1"}]}]}"#
        );
        assert_eq!(
            schema_json(&s),
            concat!(
                r#"{"type":"struct","fields":[{"type":"string","optional":true,"field":"total"},"#,
                r#"{"type":"array","items":{"type":"struct","fields":[{"type":"array","#,
                r#""items":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"qty"},"#,
                r#"{"type":"string","optional":true,"field":"sku"}],"optional":true,"#,
                r#""name":"payload.groups.items"},"optional":true,"field":"items"}],"optional":true,"#,
                r#""name":"payload.groups"},"optional":true,"field":"groups"}],"optional":true,"#,
                r#""name":"payload"}"#,
            )
        );
    }

    #[test]
    fn bug_34_optional_bytes_and_optional_string_keep_nulls_and_empty_arrays() {
        let text = r#"{"note": null, "lines": [], "total": "19.90"}"#;
        let (s, v) = ex(
            text,
            NullBehavior::OptionalBytes,
            EmptyArrayBehavior::Ignore,
        );
        assert_eq!(render(&s, &v), r#"{"note":null,"total":"19.90"}"#);
        assert_eq!(s.fields[0].schema.ty, SchemaType::Bytes);
        let (s, v) = ex(
            text,
            NullBehavior::OptionalBytes,
            EmptyArrayBehavior::OptionalString,
        );
        assert_eq!(
            render(&s, &v),
            r#"{"note":null,"lines":[],"total":"19.90"}"#
        );
        assert_eq!(
            schema_json(&s.fields[1].schema),
            r#"{"type":"array","items":{"type":"string","optional":true},"optional":true}"#
        );
    }

    #[test]
    fn array_of_objects_gets_the_union_of_their_fields() {
        let (s, v) = ex(
            r#"{"x": [{"a": 1}, {"b": "s"}, null, {"a": 2, "b": "t"}]}"#,
            NullBehavior::Ignore,
            EmptyArrayBehavior::Ignore,
        );
        assert_eq!(
            render(&s, &v),
            r#"{"x":[{"a":1,"b":null},{"a":null,"b":"s"},null,{"a":2,"b":"t"}]}"#
        );
    }

    #[test]
    fn bytes_field_from_a_null_is_replaced_by_a_later_typed_schema() {
        let (s, v) = ex(
            r#"{"x": [{"a": null}, {"a": "s"}]}"#,
            NullBehavior::OptionalBytes,
            EmptyArrayBehavior::Ignore,
        );
        assert_eq!(render(&s, &v), r#"{"x":[{"a":null},{"a":"s"}]}"#);
    }

    #[test]
    fn inconsistent_arrays_leave_the_payload_unchanged() {
        for bad in [
            r#"{"x": [1, "a"]}"#,
            r#"{"x": [1, 2.5]}"#,
            r#"{"x": [null, null]}"#,
            r#"{"x": [[], [1]]}"#,
            "not json",
            " {\"a\": 1}",
            "{\"a\": ",
        ] {
            assert!(
                matches!(
                    expand(
                        bad,
                        "payload",
                        NullBehavior::Ignore,
                        EmptyArrayBehavior::Ignore
                    ),
                    Err(ExpandError::Skip(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn values_that_do_not_fit_the_merged_schema_fail() {
        for bad in [
            r#"{"x": [{"a": 1}, {"a": "s"}]}"#,
            r#"{"x": [{"a": 1}, {"a": 9999999999}]}"#,
            r#"{"big": 99999999999999999999}"#,
            r#"[1, 2]"#,
        ] {
            assert!(
                matches!(
                    expand(
                        bad,
                        "payload",
                        NullBehavior::Ignore,
                        EmptyArrayBehavior::Ignore
                    ),
                    Err(ExpandError::Fail(_))
                ),
                "{bad}"
            );
        }
    }
}
