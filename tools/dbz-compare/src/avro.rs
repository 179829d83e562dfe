//! Records in Confluent's Avro wire format (magic byte 0, 4-byte big-endian schema id, Avro
//! binary body) turned into JSON documents the comparer already knows how to walk:
//! `{"schema": <the schema registered under that id, as the registry returns it>,
//!   "payload": <the decoded datum>}`.
//!
//! The datum is written the way Kafka Connect's JsonConverter writes a payload, so the
//! normalisation and the deliberate-difference paths of the JSON passes (`value.payload.…`)
//! apply unchanged: records as objects in field order, a union as its branch's value, maps as
//! objects in the order they were written, bytes and fixed as base64. The schema is compared as
//! registered: every name, `connect.*` property, default and logical type, in its order.
//!
//! The decoder is written against the Avro specification and walks the registered schema
//! itself, so a map keeps the order its entries were written in (part of what is compared).
//! It never panics on input: a truncated body or an unknown type is an error naming the offset.

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::{Map, Value};

/// One schema registry (Confluent's API or Apicurio's `/apis/ccompat/v7`) and the schemas
/// fetched from it, by id.
pub struct Registry {
    url: String,
    agent: ureq::Agent,
    schemas: HashMap<u32, Value>,
}

impl Registry {
    /// `url`: the registry's base URL, e.g. `http://127.0.0.1:58084/apis/ccompat/v7`.
    pub fn new(url: &str) -> Registry {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(15)))
            .build()
            .into();
        Registry {
            url: url.trim_end_matches('/').to_string(),
            agent,
            schemas: HashMap::new(),
        }
    }

    fn schema(&mut self, id: u32) -> Result<&Value, String> {
        if !self.schemas.contains_key(&id) {
            let url = format!("{}/schemas/ids/{id}", self.url);
            let body = self
                .agent
                .get(&url)
                .call()
                .map_err(|e| format!("GET {url}: {e}"))?
                .body_mut()
                .read_to_string()
                .map_err(|e| format!("GET {url}: {e}"))?;
            let answer: Value =
                serde_json::from_str(&body).map_err(|e| format!("GET {url}: {e}"))?;
            let text = answer
                .get("schema")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("GET {url}: no schema in {body}"))?;
            let schema: Value =
                serde_json::from_str(text).map_err(|e| format!("schema {id}: {e}"))?;
            self.schemas.insert(id, schema);
        }
        Ok(&self.schemas[&id])
    }

    /// The JSON document for one key or value in Confluent's wire format.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        if bytes.len() < 5 || bytes[0] != 0 {
            return Err(format!(
                "not Confluent's Avro wire format (first byte {:?}, {} bytes)",
                bytes.first(),
                bytes.len()
            ));
        }
        let id = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        let schema = self.schema(id)?.clone();
        let mut names = HashMap::new();
        collect_names(&schema, "", &mut names);
        let mut r = Reader {
            buf: &bytes[5..],
            pos: 0,
            names: &names,
        };
        let payload = r
            .datum(&schema, "")
            .map_err(|e| format!("schema id {id}: {e}"))?;
        if r.pos != r.buf.len() {
            return Err(format!(
                "schema id {id}: {} bytes left after the datum",
                r.buf.len() - r.pos
            ));
        }
        let mut doc = Map::new();
        doc.insert("schema".into(), schema);
        doc.insert("payload".into(), payload);
        serde_json::to_vec(&Value::Object(doc)).map_err(|e| e.to_string())
    }
}

const PRIMITIVES: [&str; 8] = [
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

/// The full name of a named type defined by `s` inside namespace `ns`, and its own namespace.
fn full_name(s: &Map<String, Value>, ns: &str) -> Option<(String, String)> {
    let name = s.get("name")?.as_str()?;
    let full = if name.contains('.') {
        name.to_string()
    } else {
        match s.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => format!("{n}.{name}"),
            Some(_) => name.to_string(),
            None if !ns.is_empty() => format!("{ns}.{name}"),
            None => name.to_string(),
        }
    };
    let own_ns = full
        .rsplit_once('.')
        .map(|(n, _)| n.to_string())
        .unwrap_or_default();
    Some((full, own_ns))
}

/// Every named type (record, enum, fixed) defined in `s`, by full name.
fn collect_names(s: &Value, ns: &str, out: &mut HashMap<String, Value>) {
    match s {
        Value::Array(branches) => branches.iter().for_each(|b| collect_names(b, ns, out)),
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("record" | "error" | "enum" | "fixed") => {
                let Some((full, own_ns)) = full_name(o, ns) else {
                    return;
                };
                out.entry(full).or_insert_with(|| s.clone());
                if let Some(Value::Array(fields)) = o.get("fields") {
                    for f in fields {
                        if let Some(t) = f.get("type") {
                            collect_names(t, &own_ns, out);
                        }
                    }
                }
            }
            Some("array") => o
                .get("items")
                .iter()
                .for_each(|t| collect_names(t, ns, out)),
            Some("map") => o
                .get("values")
                .iter()
                .for_each(|t| collect_names(t, ns, out)),
            _ => {}
        },
        _ => {}
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    names: &'a HashMap<String, Value>,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let Some(end) = end else {
            return Err(format!("truncated at byte {} (wanted {n} more)", self.pos));
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn long(&mut self) -> Result<i64, String> {
        let mut v: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = self.take(1)?[0];
            if shift == 63 && b > 1 {
                return Err(format!("varint too long at byte {}", self.pos));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
            }
        }
        Err(format!("varint too long at byte {}", self.pos))
    }

    fn len(&mut self) -> Result<usize, String> {
        let n = self.long()?;
        usize::try_from(n).map_err(|_| format!("negative length {n} at byte {}", self.pos))
    }

    fn float(v: f64) -> Value {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(format!("{v}")))
    }

    /// Items of an array or map: blocks of `count` items (a negative count is followed by the
    /// block's size in bytes), ended by a zero count.
    fn blocks(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            let mut n = self.long()?;
            if n == 0 {
                return Ok(());
            }
            if n < 0 {
                n = n.checked_neg().ok_or("bad block count")?;
                self.long()?;
            }
            for _ in 0..n {
                item(self)?;
            }
        }
    }

    fn datum(&mut self, s: &Value, ns: &str) -> Result<Value, String> {
        match s {
            Value::String(t) => self.named(t, ns),
            Value::Array(branches) => {
                let i = self.long()?;
                let b = usize::try_from(i)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| format!("union branch {i} out of range"))?;
                self.datum(b, ns)
            }
            Value::Object(o) => {
                let t = o.get("type").ok_or("a schema object without a type")?;
                match t.as_str() {
                    Some("record" | "error") => {
                        let (_, own_ns) = full_name(o, ns).ok_or("a record without a name")?;
                        let mut out = Map::new();
                        for f in o
                            .get("fields")
                            .and_then(Value::as_array)
                            .ok_or("a record without fields")?
                        {
                            let name = f
                                .get("name")
                                .and_then(Value::as_str)
                                .ok_or("a field without a name")?;
                            let v = self
                                .datum(f.get("type").ok_or("a field without a type")?, &own_ns)?;
                            out.insert(name.to_string(), v);
                        }
                        Ok(Value::Object(out))
                    }
                    Some("enum") => {
                        let i = self.long()?;
                        let syms = o
                            .get("symbols")
                            .and_then(Value::as_array)
                            .ok_or("an enum without symbols")?;
                        usize::try_from(i)
                            .ok()
                            .and_then(|i| syms.get(i))
                            .cloned()
                            .ok_or_else(|| format!("enum index {i} out of range"))
                    }
                    Some("fixed") => {
                        let n = o
                            .get("size")
                            .and_then(Value::as_u64)
                            .ok_or("a fixed without a size")?
                            as usize;
                        Ok(Value::String(
                            base64::engine::general_purpose::STANDARD.encode(self.take(n)?),
                        ))
                    }
                    Some("array") => {
                        let items = o.get("items").ok_or("an array without items")?;
                        let mut out = Vec::new();
                        self.blocks(|r| {
                            out.push(r.datum(items, ns)?);
                            Ok(())
                        })?;
                        Ok(Value::Array(out))
                    }
                    Some("map") => {
                        let values = o.get("values").ok_or("a map without values")?;
                        let mut out = Map::new();
                        self.blocks(|r| {
                            let n = r.len()?;
                            let k = String::from_utf8(r.take(n)?.to_vec())
                                .map_err(|e| e.to_string())?;
                            let v = r.datum(values, ns)?;
                            out.insert(k, v);
                            Ok(())
                        })?;
                        Ok(Value::Object(out))
                    }
                    Some(p) => self.named(p, ns),
                    None => self.datum(t, ns),
                }
            }
            other => Err(format!("not a schema: {other}")),
        }
    }

    fn named(&mut self, t: &str, ns: &str) -> Result<Value, String> {
        Ok(match t {
            "null" => Value::Null,
            "boolean" => Value::Bool(self.take(1)?[0] != 0),
            "int" | "long" => Value::from(self.long()?),
            "float" => Self::float(f64::from(f32::from_le_bytes(
                self.take(4)?.try_into().unwrap(),
            ))),
            "double" => Self::float(f64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            "bytes" => {
                let n = self.len()?;
                Value::String(base64::engine::general_purpose::STANDARD.encode(self.take(n)?))
            }
            "string" => {
                let n = self.len()?;
                Value::String(String::from_utf8(self.take(n)?.to_vec()).map_err(|e| e.to_string())?)
            }
            name => {
                debug_assert!(!PRIMITIVES.contains(&name));
                let qualified = if name.contains('.') || ns.is_empty() {
                    name.to_string()
                } else {
                    format!("{ns}.{name}")
                };
                let def = self
                    .names
                    .get(&qualified)
                    .or_else(|| self.names.get(name))
                    .ok_or_else(|| format!("unknown type {name}"))?
                    .clone();
                return self.datum(&def, ns);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zz(v: i64) -> Vec<u8> {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            let b = (u & 0x7f) as u8;
            u >>= 7;
            if u == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn records_unions_maps_and_references_decode_in_written_order() {
        let schema: Value = serde_json::from_str(
            r#"{"type":"record","name":"V","namespace":"a.b","fields":[
                {"name":"id","type":"int"},
                {"name":"m","type":["null",{"type":"map","values":"string"}]},
                {"name":"inner","type":{"type":"record","name":"I","fields":[{"name":"x","type":"long"}]}},
                {"name":"again","type":["null","I"]},
                {"name":"d","type":"double"}]}"#,
        )
        .unwrap();
        let mut names = HashMap::new();
        collect_names(&schema, "", &mut names);
        let mut body = zz(-3);
        body.extend(zz(1)); // union branch: the map
        body.extend(zz(2)); // a block of two entries
        for (k, v) in [("z", "1"), ("a", "2")] {
            body.extend(zz(k.len() as i64));
            body.extend(k.bytes());
            body.extend(zz(v.len() as i64));
            body.extend(v.bytes());
        }
        body.extend(zz(0));
        body.extend(zz(300));
        body.extend(zz(1));
        body.extend(zz(-1));
        body.extend(1.5f64.to_le_bytes());
        let mut r = Reader {
            buf: &body,
            pos: 0,
            names: &names,
        };
        let v = r.datum(&schema, "").unwrap();
        assert_eq!(r.pos, body.len());
        assert_eq!(
            v.to_string(),
            r#"{"id":-3,"m":{"z":"1","a":"2"},"inner":{"x":300},"again":{"x":-1},"d":1.5}"#
        );
        // A truncated body is an error, not a panic.
        let mut r = Reader {
            buf: &body[..body.len() - 3],
            pos: 0,
            names: &names,
        };
        assert!(r.datum(&schema, "").unwrap_err().contains("truncated"));
    }
}
