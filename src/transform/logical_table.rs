//! Debezium's `io.debezium.transforms.ByLogicalTableRouter`: routes the records of several
//! physical tables (shards, partitions) to one logical topic, as Debezium 3.6.1 does.
//!
//! - `topic.regex` (required) must match the whole topic; the topic becomes `topic.replacement`
//!   (Java `$1` syntax) applied to it. Records of other topics pass unchanged.
//! - The key (when there is one) gets the schema name `<new topic>.Key` and, with
//!   `key.enforce.uniqueness=true` (the default), a required string field `key.field.name`
//!   (default `__dbz__physicalTableIdentifier`) holding the old topic, or the
//!   `key.field.regex` / `key.field.replacement` rewrite of it.
//! - A change event's `before`/`after` schema becomes `<new topic>.Value` and the envelope
//!   `<new topic>.Envelope`; tombstones and other records only change topic and key.
//! - `schema.name.adjustment.mode` (`none`, the default here, or `avro`) applies to those
//!   names; `logical.table.cache.size` is accepted (pgcdc's caches are bounded on their own).

use std::sync::Arc;

use super::regex_router::TopicRewrite;
use super::side::{data_error, SchemaCache};
use super::{is_envelope, Declared, Options, RecordKind, Transformation};
use crate::config::keys::{TOPIC_REGEX, TOPIC_REPLACEMENT};
use crate::error::Result;
use crate::event::{ConnectRecord, Field, Schema, SchemaType, Value};
use crate::util::NameAdjustment;

/// `io.debezium.transforms.ByLogicalTableRouter`.
pub const BY_LOGICAL_TABLE_ROUTER: &str = "io.debezium.transforms.ByLogicalTableRouter";

/// The transform with its caches.
#[derive(Debug, Clone)]
pub struct ByLogicalTableRouter {
    alias: String,
    topic: TopicRewrite,
    unique_keys: bool,
    key_field: String,
    key_rewrite: Option<TopicRewrite>,
    names: NameAdjustment,
    key_schemas: SchemaCache,
    envelopes: SchemaCache,
}

impl ByLogicalTableRouter {
    fn fail(&self, msg: impl std::fmt::Display) -> crate::error::Error {
        data_error("ByLogicalTableRouter", &self.alias, msg)
    }
}

impl Transformation for ByLogicalTableRouter {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let alias = d.alias;
        // Its own options, spelled as the connector keys of the regex naming strategies.
        let regex = o.get(TOPIC_REGEX);
        let replacement = o.raw(TOPIC_REPLACEMENT);
        let unique_keys = o.boolean("key.enforce.uniqueness", true);
        let key_field = o.string("key.field.name", "__dbz__physicalTableIdentifier");
        let key_regex = o.get("key.field.regex");
        let key_replacement = o.get("key.field.replacement");
        // The transform's own option, spelled as the connector key.
        let names = o.choice(
            crate::config::keys::SCHEMA_NAME_ADJUSTMENT_MODE,
            NameAdjustment::None,
            &[
                ("none", NameAdjustment::None),
                ("avro", NameAdjustment::Avro),
            ],
        );
        if let Some(v) = o.get("logical.table.cache.size") {
            if v.parse::<u32>().map_or(true, |n| n == 0) {
                o.problem(
                    "logical.table.cache.size",
                    format!("={v} is not a positive integer"),
                );
            }
        }
        let (Some(regex), Some(replacement)) = (regex, replacement) else {
            for (k, v) in [(TOPIC_REGEX, regex), (TOPIC_REPLACEMENT, replacement)] {
                if v.is_none() {
                    o.problem(k, " is required");
                }
            }
            return None;
        };
        let topic = match TopicRewrite::new(regex, replacement) {
            Ok(t) => t,
            Err(e) => {
                o.problem(TOPIC_REGEX, format!("={regex} {e}"));
                return None;
            }
        };
        let key_rewrite = match (key_regex, key_replacement) {
            (None, _) => None,
            (Some(_), None) => {
                o.problem(
                    "key.field.replacement",
                    " must be non-empty if key.field.regex is set",
                );
                return None;
            }
            (Some(r), Some(rep)) => match TopicRewrite::new(r, rep) {
                Ok(t) => Some(t),
                Err(e) => {
                    o.problem("key.field.regex", format!("={r} {e}"));
                    return None;
                }
            },
        };
        Some(ByLogicalTableRouter {
            alias: alias.into(),
            topic,
            unique_keys,
            key_field,
            key_rewrite,
            names,
            key_schemas: SchemaCache::default(),
            envelopes: SchemaCache::default(),
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let Some(new_topic) = self.topic.rewrite(&r.topic).filter(|t| !t.is_empty()) else {
            return Ok(Some(r));
        };
        let old_topic = std::mem::replace(&mut r.topic, Arc::from(new_topic.as_str()));
        if let (Some(ks), Some(k)) = (r.key_schema.clone(), r.key.take()) {
            let Value::Struct(mut values) = k else {
                return Err(self.fail(format!("the key of topic {old_topic} is not a struct")));
            };
            let (names, unique, field) = (self.names, self.unique_keys, &self.key_field);
            let schema = self
                .key_schemas
                .get_or_try(&ks, |s| {
                    let mut out = s.clone();
                    out.ty = SchemaType::Struct;
                    out.name = Some(names.schema(&format!("{new_topic}.Key")));
                    out.default = None;
                    if unique {
                        if out.field_index(field).is_some() {
                            return Err(format!(
                                "the key already has a field {field:?}: set key.field.name to another name"
                            ));
                        }
                        out.fields
                            .push(Field::new(field.clone(), Schema::new(SchemaType::String, false)));
                    }
                    Ok(Arc::new(out))
                })
                .map_err(|e| self.fail(e))?;
            if self.unique_keys {
                let id = self
                    .key_rewrite
                    .as_ref()
                    .and_then(|k| k.rewrite(&old_topic))
                    .unwrap_or_else(|| old_topic.to_string());
                values.resize(ks.fields.len(), Value::Null);
                values.push(Value::String(id));
            }
            r.key_schema = Some(schema);
            r.key = Some(Value::Struct(values));
        }
        if r.value.as_ref().is_none_or(Value::is_null) || !is_envelope(&r) {
            return Ok(Some(r));
        }
        let Some(env) = r.value_schema.clone() else {
            return Ok(Some(r));
        };
        let names = self.names;
        let schema = self
            .envelopes
            .get_or_try(&env, |s| {
                let before = s
                    .field_index("before")
                    .ok_or("the envelope has no before field")?;
                let mut row = s.fields[before].schema.clone();
                row.name = Some(names.schema(&format!("{new_topic}.Value")));
                let mut out = s.clone();
                for f in out.fields.iter_mut() {
                    if f.name == "before" || f.name == "after" {
                        f.schema = row.clone();
                    }
                }
                out.name = Some(names.schema(&format!("{new_topic}.Envelope")));
                Ok(Arc::new(out))
            })
            .map_err(|e| self.fail(e))?;
        r.value_schema = Some(schema);
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

#[cfg(test)]
mod tests {
    use crate::event::{Op, SchemaType, Value};
    use crate::transform::testutil::*;

    fn router(extra: &[(&str, &str)]) -> Vec<crate::transform::Stage> {
        let mut pairs = vec![
            ("transforms", "route"),
            ("transforms.route.type", super::BY_LOGICAL_TABLE_ROUTER),
            ("transforms.route.topic.regex", "db\\.public\\.orders_(.*)"),
            ("transforms.route.topic.replacement", "db.orders"),
        ];
        pairs.extend_from_slice(extra);
        chain(&pairs)
    }

    #[test]
    fn shards_share_a_topic_and_keys_name_their_table() {
        let t = table(
            "public",
            "orders_eu",
            vec![
                col("id", SchemaType::Int32, false),
                col("v", SchemaType::String, true),
            ],
        );
        let recs = records(&t, Op::Delete, Some(vec![Value::Int(1), s("a")]), None, 1);
        let out = run(&mut router(&[]), recs);
        assert!(out.iter().all(|r| &*r.topic == "db.orders"));
        let (k, v) = render(&out[0], true);
        let k = k.unwrap();
        assert!(k.contains(r#""name":"db.orders.Key""#), "{k}");
        assert!(
            k.ends_with(
                r#""payload":{"id":1,"__dbz__physicalTableIdentifier":"db.public.orders_eu"}}"#
            ),
            "{k}"
        );
        let v = v.unwrap();
        assert!(
            v.contains(r#""name":"db.orders.Value""#)
                && v.contains(r#""name":"db.orders.Envelope""#),
            "{v}"
        );
        assert!(
            out[1].value.is_none(),
            "the tombstone stays one, under the new topic"
        );
        let out = run(
            &mut router(&[
                (
                    "transforms.route.key.field.regex",
                    "db\\.public\\.orders_(.*)",
                ),
                ("transforms.route.key.field.replacement", "$1"),
                ("transforms.route.key.field.name", "shard"),
            ]),
            records(&t, Op::Create, None, Some(vec![Value::Int(2), s("b")]), 1),
        );
        assert!(render(&out[0], false)
            .0
            .unwrap()
            .contains(r#""shard":"eu""#));
    }

    #[test]
    fn options_are_checked() {
        let e = configs(&[
            ("transforms", "route"),
            ("transforms.route.type", super::BY_LOGICAL_TABLE_ROUTER),
            ("transforms.route.topic.regex", "x"),
            ("transforms.route.topic.replacement", "y"),
            ("transforms.route.key.field.regex", "x"),
        ])
        .unwrap_err();
        assert!(e.contains("key.field.replacement must be non-empty"), "{e}");
    }
}
