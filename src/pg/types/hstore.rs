//! The `hstore` extension type in its text form (`"k"=>"v", "k2"=>NULL`), written per
//! `hstore.handling.mode` as JSON text or a Connect map.
//!
//! Invariant: pairs come out in the order a `java.util.HashMap<String, String>` iterates
//! them, as Debezium builds hstore values through such a map; the order comes from
//! [`crate::util::java_hash_map_order`], the one implementation of that order.

use crate::config::values::HstoreMode;
use crate::event::{Schema, SchemaType, Value};
use crate::util::{java_hash_map_order, JAVA_HASH_MAP_INITIAL_CAPACITY};

/// The Connect schema of `hstore` per `hstore.handling.mode`.
pub(super) fn hstore_schema(mode: HstoreMode) -> Schema {
    use SchemaType as T;
    match mode {
        HstoreMode::Json => Schema::new(T::String, false).named("io.debezium.data.Json"),
        HstoreMode::Map => {
            let mut m = Schema::new(T::Map, false);
            m.keys = Some(Box::new(Schema::new(T::String, false)));
            m.items = Some(Box::new(Schema::new(T::String, true)));
            m
        }
    }
}

/// The value of `hstore` output text per `hstore.handling.mode`, pairs in Java `HashMap`
/// order.
pub(super) fn hstore_value(text: &str, mode: HstoreMode) -> Result<Value, String> {
    Ok(hstore_pairs_value(parse_hstore(text)?, mode))
}

/// The value of hstore pairs (in the type's own order) per `hstore.handling.mode`, pairs in
/// Java `HashMap` order.
pub(super) fn hstore_pairs_value(pairs: Vec<(String, Option<String>)>, mode: HstoreMode) -> Value {
    let pairs = java_hashmap_order(pairs);
    match mode {
        HstoreMode::Json => Value::String(hstore_json(&pairs)),
        HstoreMode::Map => Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (Value::String(k), v.map_or(Value::Null, Value::String)))
                .collect(),
        ),
    }
}

/// Parses hstore output text (`"k"=>"v", "k2"=>NULL`) into pairs in text order.
pub fn parse_hstore(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let key = quoted(&mut chars)?;
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') || chars.next() != Some('>') {
            return Err("hstore: expected =>".into());
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let value = if chars.peek() == Some(&'"') {
            Some(quoted(&mut chars)?)
        } else {
            let word: String =
                std::iter::from_fn(|| chars.next_if(|c| c.is_alphabetic())).collect();
            if !word.eq_ignore_ascii_case("null") {
                return Err("hstore: expected a quoted value or NULL".into());
            }
            None
        };
        pairs.push((key, value));
    }
}

/// Reads one double-quoted hstore string, with `\` escaping the next character.
fn quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    if chars.next() != Some('"') {
        return Err("hstore: expected a quoted string".into());
    }
    let mut out = String::new();
    loop {
        match chars.next() {
            Some('\\') => match chars.next() {
                Some(c) => out.push(c),
                None => return Err("hstore: unterminated escape".into()),
            },
            Some('"') => return Ok(out),
            Some(c) => out.push(c),
            None => return Err("hstore: unterminated string".into()),
        }
    }
}

/// Orders `pairs` (inserted in this order) as a `java.util.HashMap<String, String>` iterates
/// them: by bucket of the spread `String.hashCode()` in the table size the map grows to, ties in
/// insertion order. Debezium builds hstore values through such a map, so its JSON text and
/// Connect map follow this order.
pub fn java_hashmap_order<V>(pairs: Vec<(String, V)>) -> Vec<(String, V)> {
    let order = java_hash_map_order(
        pairs.iter().map(|(k, _)| k.as_str()),
        JAVA_HASH_MAP_INITIAL_CAPACITY,
    );
    // `order` lists pair indices in iteration order: rank each pair by its place in it.
    let mut rank = vec![0; order.len()];
    for (place, &index) in order.iter().enumerate() {
        rank[index] = place;
    }
    let mut ranked: Vec<(usize, (String, V))> = rank.into_iter().zip(pairs).collect();
    ranked.sort_by_key(|(place, _)| *place);
    ranked.into_iter().map(|(_, p)| p).collect()
}

/// Compact JSON text of an hstore, as Jackson writes a `Map<String, String>`.
fn hstore_json(pairs: &[(String, Option<String>)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(k, &mut out);
        out.push(':');
        match v {
            Some(v) => json_string(v, &mut out),
            None => out.push_str("null"),
        }
    }
    out.push('}');
    out
}

/// Appends `s` as a JSON string literal, escaped as Jackson escapes it.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::values::ValueOptions;
    use crate::pg::types::ColumnType;

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn hstore_text_parses_with_escapes_and_nulls() {
        assert_eq!(
            parse_hstore(r#""a"=>"1", "b c"=>NULL, "q"=>"x \"y\" \\ z", "e"=>"""#).unwrap(),
            vec![
                ("a".to_string(), Some("1".to_string())),
                ("b c".to_string(), None),
                ("q".to_string(), Some(r#"x "y" \ z"#.to_string())),
                ("e".to_string(), Some(String::new())),
            ]
        );
        assert_eq!(parse_hstore("").unwrap(), vec![]);
        assert!(parse_hstore(r#""a"=>"#).is_err());
        assert!(parse_hstore(r#""a"=>"unterminated"#).is_err());
        assert!(parse_hstore(r#""a" "b""#).is_err());
    }

    #[test]
    fn hstore_json_follows_java_hashmap_order() {
        // Debezium's own test expects key5 before key4 (java.util.HashMap iteration order).
        let opts = opts();
        assert_eq!(
            ColumnType::Hstore
                .parse(r#""key4"=>"val4", "key5"=>NULL"#, &opts)
                .unwrap(),
            Value::String(r#"{"key5":null,"key4":"val4"}"#.into())
        );
        // More than 12 keys: the table grows to 32 buckets.
        let many: Vec<(String, ())> = (0..13).map(|i| (format!("k{i}"), ())).collect();
        let order: Vec<String> = java_hashmap_order(many).into_iter().map(|p| p.0).collect();
        // What `new HashMap<>()` with k0..k12 put in order iterates as, on Java 17.
        assert_eq!(order.join(","), "k0,k1,k2,k3,k4,k5,k11,k6,k10,k7,k8,k12,k9");
    }
}
