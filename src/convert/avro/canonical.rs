//! The structure of an Avro schema, to tell whether a schema registered by someone else (the
//! latest version of a subject, for `use.latest.version`) writes the same bytes as the schema
//! pgcdc derives for a record.
//!
//! The form is Avro's Parsing Canonical Form (full names, only `name`, `type`, `fields`,
//! `symbols`, `items`, `values` and `size`, in that order, primitives as plain strings, a named
//! type written once and then referred to by full name) with the logical type attributes kept
//! (`logicalType`, `precision`, `scale`): two schemas with the same form encode every value
//! identically and mean the same by it. Documentation, defaults, aliases and other properties
//! (`connect.*`) do not matter.

use serde_json::Value;

const PRIMITIVES: [&str; 8] = [
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

/// The form of the Avro schema `text` (JSON). Errors: not JSON, or not a schema (a type
/// missing, a named type without a name, an unknown reference).
pub fn structure(text: &str) -> Result<String, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut w = Form {
        out: String::with_capacity(text.len()),
        defined: Vec::new(),
    };
    w.schema(&json, "")?;
    Ok(w.out)
}

struct Form {
    out: String,
    defined: Vec<String>,
}

impl Form {
    fn schema(&mut self, s: &Value, space: &str) -> Result<(), String> {
        match s {
            Value::String(name) => self.reference(name, space),
            Value::Array(branches) => {
                self.out.push('[');
                for (i, b) in branches.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.schema(b, space)?;
                }
                self.out.push(']');
                Ok(())
            }
            Value::Object(o) => {
                let ty = o.get("type").ok_or("a schema object without a type")?;
                let Some(ty) = ty.as_str() else {
                    // {"type": {...}} or {"type": [...]}: the inner schema.
                    return self.schema(ty, space);
                };
                match ty {
                    "record" | "error" | "enum" | "fixed" => self.named(o, ty, space),
                    "array" => {
                        self.out.push_str("{\"type\":\"array\",\"items\":");
                        self.schema(o.get("items").ok_or("an array without items")?, space)?;
                        self.out.push('}');
                        Ok(())
                    }
                    "map" => {
                        self.out.push_str("{\"type\":\"map\",\"values\":");
                        self.schema(o.get("values").ok_or("a map without values")?, space)?;
                        self.out.push('}');
                        Ok(())
                    }
                    p if PRIMITIVES.contains(&p) => {
                        match o.get("logicalType") {
                            None => push_string(&mut self.out, p),
                            Some(l) => {
                                self.out.push_str("{\"type\":");
                                push_string(&mut self.out, p);
                                self.logical(o, l);
                                self.out.push('}');
                            }
                        }
                        Ok(())
                    }
                    other => self.reference(other, space),
                }
            }
            other => Err(format!("not a schema: {other}")),
        }
    }

    fn logical(&mut self, o: &serde_json::Map<String, Value>, l: &Value) {
        self.out.push_str(",\"logicalType\":");
        self.out.push_str(&l.to_string());
        for k in ["precision", "scale"] {
            if let Some(v) = o.get(k) {
                self.out.push_str(&format!(",\"{k}\":{v}"));
            }
        }
    }

    fn reference(&mut self, name: &str, space: &str) -> Result<(), String> {
        if PRIMITIVES.contains(&name) {
            push_string(&mut self.out, name);
            return Ok(());
        }
        let full = qualify(name, None, space);
        if !self.defined.contains(&full) {
            return Err(format!("unknown type {name}"));
        }
        push_string(&mut self.out, &full);
        Ok(())
    }

    fn named(
        &mut self,
        o: &serde_json::Map<String, Value>,
        ty: &str,
        space: &str,
    ) -> Result<(), String> {
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("a {ty} without a name"))?;
        let full = qualify(name, o.get("namespace").and_then(Value::as_str), space);
        let own_space = full.rsplit_once('.').map_or("", |(n, _)| n).to_string();
        self.defined.push(full.clone());
        self.out.push_str("{\"name\":");
        push_string(&mut self.out, &full);
        self.out.push_str(",\"type\":");
        push_string(&mut self.out, if ty == "error" { "error" } else { ty });
        match ty {
            "enum" => {
                self.out.push_str(",\"symbols\":");
                self.out
                    .push_str(&o.get("symbols").cloned().unwrap_or_default().to_string());
            }
            "fixed" => {
                self.out.push_str(",\"size\":");
                self.out
                    .push_str(&o.get("size").cloned().unwrap_or_default().to_string());
                if let Some(l) = o.get("logicalType") {
                    self.logical(o, l);
                }
            }
            _ => {
                self.out.push_str(",\"fields\":[");
                let fields = o
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or("a record without fields")?;
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let fname = f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("a field without a name")?;
                    self.out.push_str("{\"name\":");
                    push_string(&mut self.out, fname);
                    self.out.push_str(",\"type\":");
                    self.schema(f.get("type").ok_or("a field without a type")?, &own_space)?;
                    self.out.push('}');
                }
                self.out.push(']');
            }
        }
        self.out.push('}');
        Ok(())
    }
}

/// The full name of `name` written with `namespace` (if any) inside `space`.
fn qualify(name: &str, namespace: Option<&str>, space: &str) -> String {
    if name.contains('.') {
        return name.to_string();
    }
    let ns = namespace.unwrap_or(space);
    if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}.{name}")
    }
}

fn push_string(out: &mut String, s: &str) {
    out.push_str(&Value::String(s.to_string()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_defaults_and_properties_do_not_matter_names_and_types_do() {
        let a = r#"{"type":"record","name":"Value","namespace":"srv.public.t","fields":[
            {"name":"id","type":"int"},
            {"name":"d","type":["null",{"type":"bytes","scale":2,"precision":10,"connect.version":1,"logicalType":"decimal"}],"default":null},
            {"name":"again","type":["null",{"type":"record","name":"Inner","fields":[{"name":"x","type":{"type":"long"}}]}]},
            {"name":"ref","type":["null","Inner"]}],"connect.name":"srv.public.t.Value"}"#;
        let b = r#"{"type":"record","name":"srv.public.t.Value","doc":"registered by hand","fields":[
            {"name":"id","type":{"type":"int","connect.type":"int32"},"doc":"the key"},
            {"name":"d","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}]},
            {"name":"again","type":["null",{"type":"record","name":"srv.public.t.Inner","fields":[{"name":"x","type":"long"}]}]},
            {"name":"ref","type":["null","srv.public.t.Inner"]}]}"#;
        let form = structure(a).unwrap();
        assert_eq!(form, structure(b).unwrap());
        assert_eq!(
            form,
            r#"{"name":"srv.public.t.Value","type":"record","fields":[{"name":"id","type":"int"},{"name":"d","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}]},{"name":"again","type":["null",{"name":"srv.public.t.Inner","type":"record","fields":[{"name":"x","type":"long"}]}]},{"name":"ref","type":["null","srv.public.t.Inner"]}]}"#
        );
        // A scale, a field's name or a union's order changes the form.
        for changed in [
            a.replace("\"scale\":2", "\"scale\":3"),
            a.replace("\"name\":\"id\"", "\"name\":\"key\""),
            a.replace("[\"null\",\"Inner\"]", "[\"Inner\",\"null\"]"),
        ] {
            assert_ne!(structure(&changed).unwrap(), form, "{changed}");
        }
        assert!(structure("{\"type\":\"record\"}").is_err());
        assert!(structure("[\"null\",\"Nowhere\"]")
            .unwrap_err()
            .contains("unknown type"));
    }
}
