//! `io.debezium.transforms.ExtractNewRecordState` as Debezium 3.6.1 runs it: replaces each
//! change-event envelope by its row state.
//!
//! Options:
//! - `delete.tombstone.handling.mode` (default `tombstone`):
//!   `drop` drops deletes and tombstones; `tombstone` drops the tombstone and turns the delete
//!   into a record whose value is null but whose value schema is the row schema (so JSON with
//!   schemas shows `"payload":null`); `delete-to-tombstone` turns the delete into a real
//!   tombstone (null schema and value) and drops the original tombstone; `rewrite` emits the
//!   `before` row with `__deleted="true"` (and `"false"` on other rows), dropping tombstones;
//!   `rewrite-with-tombstone` does the same and keeps tombstones;
//! - `route.by.field`: the row column whose (non-blank) value becomes the topic;
//! - `add.fields` / `add.fields.prefix` (default `__`): envelope fields copied into the row
//!   (`op`, `ts_ms`, `source.lsn`, `transaction.id`, an unqualified name is looked up in
//!   `source`; `name:alias` renames), as optional fields named `<prefix><name>` or
//!   `<prefix><struct>_<name>`;
//! - `add.headers` / `add.headers.prefix`: the same as headers (a tombstone gets only `op`,
//!   as `"d"`);
//! - `replace.null.with.default`: accepted; with pgcdc's JsonConverter (which writes defaults
//!   for nulls) both values give the same bytes.
//!
//! Every row record leaves with a required struct schema (Debezium rebuilds the schema to add
//! fields, even when there are none to add), except a `tombstone`-mode delete, whose schema is
//! the optional row schema. Records that are not envelopes pass through unchanged.
//!
//! Not implemented (startup error): `drop.fields.header.name` and its companion options, and the
//! options removed before 3.6.1 (`drop.tombstones`, `delete.handling.mode`).

use std::collections::HashMap;
use std::sync::Arc;

use super::{field, is_envelope, Declared, Options, RecordKind, Transformation};
use crate::error::{Error, Result};
use crate::event::{ConnectRecord, Field, Header, Schema, SchemaType, Value};

/// `delete.tombstone.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteMode {
    /// `drop`.
    Drop,
    /// `tombstone` (default).
    Tombstone,
    /// `rewrite`.
    Rewrite,
    /// `rewrite-with-tombstone`.
    RewriteWithTombstone,
    /// `delete-to-tombstone`.
    DeleteToTombstone,
}

/// A field of the envelope named in `add.fields` / `add.headers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRef {
    /// Hosting struct (`source`, `transaction`, ...) or `None` for the envelope itself.
    pub parent: Option<String>,
    /// Field name.
    pub field: String,
    /// Output field or header name (prefix included).
    pub name: String,
}

impl FieldRef {
    fn parse(prefix: &str, spec: &str) -> std::result::Result<Self, String> {
        let parts: Vec<&str> = spec.split(':').collect();
        if parts.len() > 2 {
            return Err(format!("{spec:?} has more than one ':'"));
        }
        let path: Vec<&str> = parts[0].split('.').collect();
        let field = if path.len() == 1 { path[0] } else { path[1] }.to_string();
        let parent = if path.len() == 1 {
            match field.as_str() {
                "id" | "data_collection_order" | "total_order" => Some("transaction".to_string()),
                "op" | "ts_ms" | "ts_us" | "ts_ns" => None,
                "updateDescription" => Some("updateDescription".to_string()),
                _ => Some("source".to_string()),
            }
        } else {
            Some(path[0].to_string())
        };
        let name = match parts.get(1) {
            Some(alias) => format!("{prefix}{alias}"),
            None if path.len() == 1 => format!("{prefix}{field}"),
            None => format!("{prefix}{}_{field}", path[0]),
        };
        Ok(FieldRef {
            parent,
            field,
            name,
        })
    }

    /// Whether a PostgreSQL change event can have this field: `op`, `ts_*`, a field of the
    /// source block or of the transaction block.
    fn may_exist(&self) -> bool {
        match self.parent.as_deref() {
            None => matches!(self.field.as_str(), "op" | "ts_ms" | "ts_us" | "ts_ns"),
            Some("source") => crate::event::envelope::source_schema()
                .field_index(&self.field)
                .is_some(),
            Some("transaction") => matches!(
                self.field.as_str(),
                "id" | "total_order" | "data_collection_order"
            ),
            // Other structs of the envelope (before, after, ...): any field may be there.
            Some(_) => true,
        }
    }

    /// The schema the added field gets: the referenced field's type, name, version, doc and
    /// parameters, optional, without default. `Ok(None)` when the field does not exist (it is
    /// then skipped, as in Debezium).
    fn schema(&self, env_schema: &Schema) -> std::result::Result<Option<Schema>, String> {
        let parent = match &self.parent {
            None => env_schema,
            Some(p) => match env_schema.field_index(p) {
                Some(i) => &env_schema.fields[i].schema,
                None => return Err(format!("the envelope has no {p} struct")),
            },
        };
        let f = parent
            .field_index(&self.field)
            .map(|i| &parent.fields[i].schema)
            .or_else(|| {
                env_schema
                    .field_index(&self.field)
                    .map(|i| &env_schema.fields[i].schema)
            });
        let Some(f) = f else { return Ok(None) };
        if matches!(f.ty, SchemaType::Struct | SchemaType::Map) {
            return Err(format!(
                "{} is a {}, which pgcdc cannot add",
                self.field,
                f.ty.json_name()
            ));
        }
        let mut s = Schema::new(f.ty, true);
        s.name = f.name.clone();
        s.version = f.version;
        s.doc = f.doc.clone();
        s.parameters = f.parameters.clone();
        s.items = f.items.clone();
        Ok(Some(s))
    }

    /// The referenced value (without default substitution).
    fn value(&self, env_schema: &Schema, env: &Value) -> Value {
        let parent = match &self.parent {
            None => Some((env_schema, env)),
            Some(p) => field(env_schema, env, p),
        };
        match parent {
            None | Some((_, Value::Null)) => Value::Null,
            Some((ps, pv)) => field(ps, pv, &self.field)
                .or_else(|| field(env_schema, env, &self.field))
                .map(|(_, v)| v.clone())
                .unwrap_or(Value::Null),
        }
    }
}

/// Validated options.
#[derive(Debug, Clone)]
pub struct UnwrapOptions {
    /// `delete.tombstone.handling.mode`.
    pub mode: DeleteMode,
    /// `route.by.field` (`None` when empty).
    pub route_by: Option<String>,
    /// `add.fields` with `add.fields.prefix` applied.
    pub add_fields: Vec<FieldRef>,
    /// `add.headers` with `add.headers.prefix` applied.
    pub add_headers: Vec<FieldRef>,
}

impl UnwrapOptions {
    /// Reads and checks every option; problems go to `o`.
    pub fn parse(o: &mut Options<'_>) -> Option<Self> {
        for (old, hint) in [
            (
                "drop.tombstones", "use delete.tombstone.handling.mode (drop.tombstones=true with delete.handling.mode=drop is drop; =false with rewrite is rewrite-with-tombstone)"),
            (
                "delete.handling.mode", "use delete.tombstone.handling.mode (none → tombstone, drop → drop, rewrite → rewrite)"),
            ("delete.handling.tombstone.mode", "the option is delete.tombstone.handling.mode"),
        ] {
            if let Some(v) = o.raw(old) {
                o.problem(old, format!("={v} was removed before Debezium 3.6.1, which ignores it: {hint}"));
            }
        }
        let mode = o.choice(
            "delete.tombstone.handling.mode",
            DeleteMode::Tombstone,
            &[
                ("drop", DeleteMode::Drop),
                ("tombstone", DeleteMode::Tombstone),
                ("rewrite", DeleteMode::Rewrite),
                ("rewrite-with-tombstone", DeleteMode::RewriteWithTombstone),
                ("delete-to-tombstone", DeleteMode::DeleteToTombstone),
            ],
        );
        let route_by = o.get("route.by.field").map(str::to_string);
        // The prefixes may legitimately be empty: read them raw.
        let fields_prefix = o.raw("add.fields.prefix").unwrap_or("__").to_string();
        let headers_prefix = o.raw("add.headers.prefix").unwrap_or("__").to_string();
        let mut refs = |name: &str, prefix: &str| -> Vec<FieldRef> {
            let Some(v) = o.get(name) else {
                return Vec::new();
            };
            let mut out = Vec::new();
            for spec in v.split(',').map(str::trim) {
                match FieldRef::parse(prefix, spec) {
                    Ok(r) => out.push(r),
                    Err(e) => o.problem(name, format!("={v} is invalid: {e}")),
                }
            }
            out
        };
        let add_fields = refs("add.fields", &fields_prefix);
        let add_headers = refs("add.headers", &headers_prefix);
        for (key, list) in [("add.fields", &add_fields), ("add.headers", &add_headers)] {
            let mut names: Vec<&str> = Vec::new();
            for f in list {
                if names.contains(&f.name.as_str()) {
                    o.problem(
                        key,
                        format!(
                            " names {:?} twice: give one of the fields another alias (field:alias)",
                            f.name
                        ),
                    );
                }
                names.push(&f.name);
                if !f.may_exist() {
                    let shown = match &f.parent {
                        Some(p) => format!("{p}.{}", f.field),
                        None => f.field.clone(),
                    };
                    o.warnings.push(format!(
                        "{}: {shown} is not a field of PostgreSQL change events (op, ts_ms, ts_us, ts_ns, source.*, transaction.*): it is skipped, as in Debezium",
                        o.key(key)
                    ));
                }
            }
        }
        let _ = o.boolean("replace.null.with.default", true);
        let why = "it acts on a header listing fields to drop, which pgcdc never produces";
        o.only_default("drop.fields.header.name", "", why);
        o.only_default("drop.fields.from.key", "false", why);
        o.only_default("drop.fields.keep.schema.compatible", "true", why);
        Some(UnwrapOptions {
            mode,
            route_by,
            add_fields,
            add_headers,
        })
    }
}

/// Cache key of an output schema: envelope schema address, op, and 1 for a `before` image.
type SchemaKey = (usize, String, u8);

/// The transform with its schema cache.
#[derive(Debug)]
pub struct ExtractNewRecordState {
    alias: String,
    o: UnwrapOptions,
    /// (envelope schema address, op, image) → output schema; the Arc of the envelope schema
    /// is kept so the address stays valid.
    schemas: HashMap<SchemaKey, (Arc<Schema>, Arc<Schema>)>,
}

const CACHE_LIMIT: usize = 4096;

impl ExtractNewRecordState {
    /// A transform configured under `transforms.<alias>`.
    pub fn new(alias: &str, o: UnwrapOptions) -> Self {
        ExtractNewRecordState {
            alias: alias.to_string(),
            o,
            schemas: HashMap::new(),
        }
    }

    /// The error of a record this transform cannot unwrap.
    fn fail(&self, msg: impl std::fmt::Display) -> Error {
        Error::conversion(format!(
            "ExtractNewRecordState (transforms.{}): {msg}",
            self.alias
        ))
    }
}

impl Transformation for ExtractNewRecordState {
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        UnwrapOptions::parse(o).map(|options| ExtractNewRecordState::new(d.alias, options))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::CHANGES
    }

    /// Unwraps one record; `Ok(None)` drops it.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if r.value.as_ref().is_none_or(|v| v.is_null()) {
            return Ok(self.tombstone(r));
        }
        if !is_envelope(&r) {
            return Ok(Some(r));
        }
        let (Some(env_schema), Some(env)) = (r.value_schema.clone(), r.value.clone()) else {
            return Ok(Some(r));
        };
        self.add_headers(&mut r.headers, &env_schema, &env)?;
        let op = field(&env_schema, &env, "op")
            .and_then(|(_, v)| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let Some((after_schema, after)) = field(&env_schema, &env, "after") else {
            return Err(self.fail("the envelope has no after field"));
        };
        if after.is_null() {
            let before = field(&env_schema, &env, "before");
            return self.delete(r, &env_schema, &env, &op, after_schema, before);
        }
        self.row(r, &env_schema, &env, &op, after.clone()).map(Some)
    }
}

impl ExtractNewRecordState {
    /// The tombstone `r` when `rewrite-with-tombstone` keeps it, given header `"d"` per
    /// `add.headers` entry naming `op`; `None` (dropped) in the other modes.
    fn tombstone(&self, mut r: ConnectRecord) -> Option<ConnectRecord> {
        for h in self
            .o
            .add_headers
            .iter()
            .filter(|h| h.parent.is_none() && h.field == "op")
        {
            r.headers.push(Header {
                key: Arc::from(h.name.as_str()),
                schema: Arc::new(Schema::new(SchemaType::String, false)),
                value: Value::String("d".into()),
            });
        }
        match self.o.mode {
            DeleteMode::RewriteWithTombstone => Some(r),
            _ => None,
        }
    }

    /// Adds a header per `add.headers` field the envelope has; fails on one that cannot be a
    /// header.
    fn add_headers(
        &self,
        headers: &mut Vec<Header>,
        env_schema: &Schema,
        env: &Value,
    ) -> Result<()> {
        for h in &self.o.add_headers {
            if let Some(schema) = h
                .schema(env_schema)
                .map_err(|e| self.fail(format_args!("add.headers: {e}")))?
            {
                headers.push(Header {
                    key: Arc::from(h.name.as_str()),
                    schema: Arc::new(schema),
                    value: h.value(env_schema, env),
                });
            }
        }
        Ok(())
    }

    /// The record of a delete (null `after`) per `delete.tombstone.handling.mode`, routed by
    /// the `before` row; `None` drops it, as it drops a truncate (null `before` too).
    fn delete(
        &mut self,
        mut r: ConnectRecord,
        env_schema: &Arc<Schema>,
        env: &Value,
        op: &str,
        after_schema: &Schema,
        before: Option<(&Schema, &Value)>,
    ) -> Result<Option<ConnectRecord>> {
        let before_v = before.map(|b| b.1).unwrap_or(&Value::Null);
        if before_v.is_null() {
            return Ok(None); // truncate
        }
        let mut out = match self.o.mode {
            DeleteMode::Drop => return Ok(None),
            DeleteMode::Tombstone => {
                r.value_schema = Some(Arc::new(after_schema.clone()));
                r.value = None;
                r
            }
            DeleteMode::DeleteToTombstone => {
                r.value_schema = None;
                r.value = None;
                r
            }
            DeleteMode::Rewrite | DeleteMode::RewriteWithTombstone => {
                let v = before_v.clone();
                self.finish(r, env_schema, env, op, v, Some("true"))?
            }
        };
        if let Some(route) = &self.o.route_by {
            let column = before.and_then(|(s, v)| field(s, v, route));
            if let Some(topic) = self.routed_topic(route, column, "before row")? {
                out.topic = topic;
            }
        }
        Ok(Some(out))
    }

    /// The record of an insert, update or snapshot row: the `after` row (with `__deleted`
    /// `"false"` in the rewrite modes), routed by its own value.
    fn row(
        &mut self,
        r: ConnectRecord,
        env_schema: &Arc<Schema>,
        env: &Value,
        op: &str,
        after: Value,
    ) -> Result<ConnectRecord> {
        let deleted = match self.o.mode {
            DeleteMode::Rewrite | DeleteMode::RewriteWithTombstone => Some("false"),
            _ => None,
        };
        let mut out = self.finish(r, env_schema, env, op, after, deleted)?;
        if let Some(route) = &self.o.route_by {
            let column = match (&out.value_schema, &out.value) {
                (Some(s), Some(v)) => field(s, v, route),
                _ => None,
            };
            if let Some(topic) = self.routed_topic(route, column, "row")? {
                out.topic = topic;
            }
        }
        Ok(out)
    }

    /// The topic `route.by.field` column `column` (of the `row_name`) gives: `None` keeps the
    /// record's topic (a null or blank value); a missing or non-string column fails.
    fn routed_topic(
        &self,
        route: &str,
        column: Option<(&Schema, &Value)>,
        row_name: &str,
    ) -> Result<Option<Arc<str>>> {
        let (schema, value) = column.ok_or_else(|| {
            self.fail(format_args!(
                "route.by.field {route} is not a field of the {row_name}"
            ))
        })?;
        if schema.ty != SchemaType::String {
            return Err(self.fail(format_args!(
                "route.by.field {route} is not a string column"
            )));
        }
        Ok(value
            .as_str()
            .filter(|t| !t.trim().is_empty())
            .map(Arc::from))
    }

    /// The row record: `row` with `__deleted` when `deleted` is set, then the `add.fields`.
    fn finish(
        &mut self,
        mut r: ConnectRecord,
        env_schema: &Arc<Schema>,
        env: &Value,
        op: &str,
        row: Value,
        deleted: Option<&str>,
    ) -> Result<ConnectRecord> {
        let image = if deleted == Some("true") { 1 } else { 0 };
        let key = (Arc::as_ptr(env_schema) as usize, op.to_string(), image);
        let schema = match self.schemas.get(&key) {
            Some((_, s)) => s.clone(),
            None => {
                let row_field = if image == 1 { "before" } else { "after" };
                let Some(i) = env_schema.field_index(row_field) else {
                    return Err(self.fail(format_args!("the envelope has no {row_field} field")));
                };
                let base = &env_schema.fields[i].schema;
                let mut s = Schema::new(SchemaType::Struct, false);
                s.name = base.name.clone();
                s.version = base.version;
                s.doc = base.doc.clone();
                s.parameters = base.parameters.clone();
                s.fields = base.fields.clone();
                if deleted.is_some() {
                    s.fields.push(Field::new(
                        "__deleted",
                        Schema::new(SchemaType::String, true),
                    ));
                }
                for f in &self.o.add_fields {
                    if let Some(fs) = f
                        .schema(env_schema)
                        .map_err(|e| self.fail(format_args!("add.fields: {e}")))?
                    {
                        if s.field_index(&f.name).is_some() {
                            return Err(self.fail(format_args!(
                                "add.fields: the row already has a field named {}",
                                f.name
                            )));
                        }
                        s.fields.push(Field::new(f.name.clone(), fs));
                    }
                }
                let s = Arc::new(s);
                if self.schemas.len() >= CACHE_LIMIT {
                    self.schemas.clear();
                }
                self.schemas.insert(key, (env_schema.clone(), s.clone()));
                s
            }
        };
        let Value::Struct(mut values) = row else {
            return Err(self.fail("the row image is not a struct"));
        };
        let row_len = schema.fields.len()
            - usize::from(deleted.is_some())
            - self
                .o
                .add_fields
                .iter()
                .filter(|f| schema.field_index(&f.name).is_some())
                .count();
        values.resize(row_len, Value::Null);
        if let Some(d) = deleted {
            values.push(Value::String(d.to_string()));
        }
        for f in &self.o.add_fields {
            if schema.field_index(&f.name).is_some() {
                values.push(f.value(env_schema, env));
            }
        }
        r.value_schema = Some(schema);
        r.value = Some(Value::Struct(values));
        Ok(r)
    }
}

#[cfg(test)]
mod apply_tests;
#[cfg(test)]
mod tests;
