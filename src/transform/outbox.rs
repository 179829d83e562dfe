//! `io.debezium.transforms.outbox.EventRouter`: every option and processing rule of Debezium
//! 3.6.1 (see `docs/transforms.md`, "Outbox", for the user view).
//!
//! Per record, in Debezium's order:
//! 1. a tombstone (null value) is dropped;
//! 2. a record that is not a change-event envelope (schema name not ending in `.Envelope`:
//!    logical messages, transaction records) passes through unchanged;
//! 3. `op=d` is dropped; `op=u` is dropped with a warning (`table.op.invalid.behavior=warn`),
//!    an error-level log (`error`) or fails the connector (`fatal`);
//! 4. `op=c` and `op=r` (snapshot rows) are routed from the `after` row; any other envelope
//!    (a truncate has no `after`) fails;
//! 5. the routed record: topic = `route.topic.regex`/`route.topic.replacement` applied to the
//!    `route.by.field` value (the raw value when the regex does not match it entirely);
//!    key = `table.field.event.key` with its column schema; value = the payload with its
//!    column schema, or, when some additional field is placed in the `envelope`, a struct
//!    `{payload, <aliases>}` named `<namespace>.<route value>.Value` (versioned by
//!    `table.field.event.schema.version`); headers = the original ones, `id`, then `header`
//!    placements; partition from a `partition` placement; timestamp from
//!    `table.field.event.timestamp` (Timestamp, MicroTimestamp or NanoTimestamp) or the
//!    envelope's `ts_ms`; a null or blank payload with `route.tombstone.on.empty.payload`
//!    gives a tombstone (null value and schema) with the same key.
//!
//! Deliberate difference: a change event of a table without the payload column passes
//! through unchanged (Debezium fails the task on it and expects a predicate restricting the
//! router to the outbox topic). So a config that applies the router to every table, like the
//! seed's, works as meant; records of outbox tables are routed exactly as Debezium routes them.
//!
//! Debezium's value-schema cache is reproduced: the struct schema is built once per payload
//! schema (or per schema-version value) and reused, so its name carries the route value of
//! the first event that built it.

use std::collections::HashMap;
use std::sync::Arc;

use super::json_expand::{self, EmptyArrayBehavior, ExpandError, NullBehavior};
use super::regex_router::TopicRewrite;
use super::{field, is_envelope, Declared, Options, RecordKind, Transformation};
use crate::error::{Error, Result};
use crate::event::{ConnectRecord, Field, Header, Schema, SchemaType, Value};

/// Where an additional column goes (`table.fields.additional.placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A record header named by the alias.
    Header,
    /// A field of the value struct named by the alias.
    Envelope,
    /// The Kafka partition (an int32 column; the alias is ignored).
    Partition,
}

/// One `column:placement[:alias]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdditionalField {
    /// Column name.
    pub column: String,
    /// Placement.
    pub placement: Placement,
    /// Header or field name (the column name when no alias is given).
    pub alias: String,
}

/// `table.field.additional.missing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingBehavior {
    /// A listed column absent from the row fails the record (default).
    Error,
    /// A listed column absent from the row is skipped.
    Ignore,
}

/// `table.op.invalid.behavior`: what an UPDATE of an outbox row does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidOpBehavior {
    /// Dropped with a warning (default).
    Warn,
    /// Dropped with an error-level log.
    Error,
    /// The connector fails.
    Fatal,
}

/// The EventRouter's validated options.
#[derive(Debug, Clone)]
pub struct RouterOptions {
    /// `table.field.event.id` (default `id`): its value becomes header `id`.
    pub field_id: String,
    /// `table.field.event.key` (default `aggregateid`): the record key.
    pub field_key: String,
    /// `table.field.event.payload` (default `payload`): the record value.
    pub field_payload: String,
    /// `table.field.event.timestamp`: the record timestamp column (default: envelope `ts_ms`).
    pub field_timestamp: Option<String>,
    /// `table.field.event.schema.version`: int32 column giving the value schema's version.
    pub field_schema_version: Option<String>,
    /// `table.fields.additional.placement`.
    pub additional: Vec<AdditionalField>,
    /// `table.field.additional.missing`.
    pub missing: MissingBehavior,
    /// `route.by.field` (default `aggregatetype`).
    pub route_by: String,
    /// `route.topic.regex` + `route.topic.replacement`.
    pub route: TopicRewrite,
    /// `route.tombstone.on.empty.payload` (default false).
    pub tombstone_on_empty: bool,
    /// `table.op.invalid.behavior` (default warn).
    pub invalid_op: InvalidOpBehavior,
    /// `table.expand.json.payload` (default false).
    pub expand_json: bool,
    /// `table.json.payload.null.behavior` (default ignore).
    pub json_nulls: NullBehavior,
    /// `table.json.payload.empty.array.behavior` (Debezium 3.7; default ignore, 3.6.1's behaviour).
    pub json_empty_arrays: EmptyArrayBehavior,
}

/// Debezium's default `route.topic.regex`.
pub const DEFAULT_ROUTE_REGEX: &str = "(?<routedByValue>.*)";
/// Debezium's default `route.topic.replacement`.
pub const DEFAULT_ROUTE_REPLACEMENT: &str = "outbox.event.${routedByValue}";

impl RouterOptions {
    /// Reads and checks every option; problems go to `o`.
    pub fn parse(o: &mut Options<'_>) -> Option<Self> {
        let field_id = o.string("table.field.event.id", "id");
        let field_key = o.string("table.field.event.key", "aggregateid");
        // Accepted, no effect in Debezium 3.x (use a placement to emit the type).
        let _ = o.raw("table.field.event.type");
        let field_payload = o.string("table.field.event.payload", "payload");
        let field_timestamp = o.get("table.field.event.timestamp").map(str::to_string);
        let field_schema_version = o
            .get("table.field.event.schema.version")
            .map(str::to_string);
        let additional = additional_placements(o);
        let missing = o.choice(
            "table.field.additional.missing",
            MissingBehavior::Error,
            &[
                ("error", MissingBehavior::Error),
                ("ignore", MissingBehavior::Ignore),
            ],
        );
        let route_by = o.string("route.by.field", "aggregatetype");
        let route = route_rewrite(o);
        let tombstone_on_empty = o.boolean("route.tombstone.on.empty.payload", false);
        let invalid_op = o.choice(
            "table.op.invalid.behavior",
            InvalidOpBehavior::Warn,
            &[
                ("warn", InvalidOpBehavior::Warn),
                ("error", InvalidOpBehavior::Error),
                ("fatal", InvalidOpBehavior::Fatal),
            ],
        );
        let (expand_json, json_nulls, json_empty_arrays) = json_expansion(o);
        let envelope_fields = additional
            .iter()
            .any(|a| a.placement == Placement::Envelope);
        note_options_without_effect(o, expand_json, envelope_fields);
        check_envelope_aliases(o, &additional);
        Some(RouterOptions {
            field_id,
            field_key,
            field_payload,
            field_timestamp,
            field_schema_version,
            additional,
            missing,
            route_by,
            route: route?,
            tombstone_on_empty,
            invalid_op,
            expand_json,
            json_nulls,
            json_empty_arrays,
        })
    }
}

/// `table.fields.additional.placement`, or nothing (with a problem) when it is invalid.
fn additional_placements(o: &mut Options<'_>) -> Vec<AdditionalField> {
    match o.raw("table.fields.additional.placement") {
        None => Vec::new(),
        Some(v) => match parse_placements(v) {
            Ok(a) => a,
            Err(e) => {
                o.problem(
                    "table.fields.additional.placement",
                    format!("={v} is invalid: {e}"),
                );
                Vec::new()
            }
        },
    }
}

/// `route.topic.regex` with `route.topic.replacement`, or `None` (with a problem naming the
/// one at fault).
fn route_rewrite(o: &mut Options<'_>) -> Option<TopicRewrite> {
    let regex = o.string("route.topic.regex", DEFAULT_ROUTE_REGEX);
    let replacement = o.string("route.topic.replacement", DEFAULT_ROUTE_REPLACEMENT);
    match TopicRewrite::new(&regex, &replacement) {
        Ok(r) => Some(r),
        Err(e) => {
            let which = if e.contains("regular expression") {
                ("route.topic.regex", &regex)
            } else {
                ("route.topic.replacement", &replacement)
            };
            o.problem(which.0, format!("={} {e}", which.1));
            None
        }
    }
}

/// `table.expand.json.payload` and its two behaviours.
fn json_expansion(o: &mut Options<'_>) -> (bool, NullBehavior, EmptyArrayBehavior) {
    let expand_json = o.boolean("table.expand.json.payload", false);
    let json_nulls = o.choice(
        "table.json.payload.null.behavior",
        NullBehavior::Ignore,
        &[
            ("ignore", NullBehavior::Ignore),
            ("optional_bytes", NullBehavior::OptionalBytes),
        ],
    );
    let json_empty_arrays = o.choice(
        "table.json.payload.empty.array.behavior",
        EmptyArrayBehavior::Ignore,
        &[
            ("ignore", EmptyArrayBehavior::Ignore),
            ("optional_string", EmptyArrayBehavior::OptionalString),
        ],
    );
    (expand_json, json_nulls, json_empty_arrays)
}

/// Warnings for options set where they have no effect, and refusals of the tracing options
/// at values other than Debezium's defaults.
fn note_options_without_effect(o: &mut Options<'_>, expand_json: bool, envelope_fields: bool) {
    o.needs(
        "table.json.payload.null.behavior",
        expand_json,
        "table.expand.json.payload=true",
    );
    o.needs(
        "table.json.payload.empty.array.behavior",
        expand_json,
        "table.expand.json.payload=true",
    );
    o.needs(
        "table.field.event.schema.version",
        envelope_fields,
        "a field placed in the envelope (table.fields.additional.placement=<column>:envelope:<alias>): only then is a value struct built",
    );
    const NO_TRACING: &str =
        "pgcdc has no OpenTelemetry tracing; Debezium uses these options only with OpenTelemetry on its classpath";
    o.only_default(
        "tracing.span.context.field",
        "tracingspancontext",
        NO_TRACING,
    );
    o.only_default("tracing.operation.name", "debezium-read", NO_TRACING);
    o.only_default("tracing.with.context.field.only", "false", NO_TRACING);
}

/// Two fields placed in the envelope under one name (or under `payload`) are a problem.
fn check_envelope_aliases(o: &mut Options<'_>, additional: &[AdditionalField]) {
    let mut aliases: Vec<&str> = vec!["payload"];
    for a in additional
        .iter()
        .filter(|a| a.placement == Placement::Envelope)
    {
        if aliases.contains(&a.alias.as_str()) {
            o.problem(
                "table.fields.additional.placement",
                format!(
                    " places two fields named {:?} in the envelope (the value struct already has a field of that name): give one a different alias",
                    a.alias
                ),
            );
        }
        aliases.push(&a.alias);
    }
}

/// Parses `column:placement[:alias]` entries (whitespace around items tolerated; a trailing
/// empty part counts as absent, as Java's `split` drops it).
fn parse_placements(v: &str) -> std::result::Result<Vec<AdditionalField>, String> {
    let mut out = Vec::new();
    for item in v.split(',') {
        let mut parts: Vec<&str> = item.split(':').map(str::trim).collect();
        while parts.len() > 1 && parts.last() == Some(&"") {
            parts.pop();
        }
        if parts.len() != 2 && parts.len() != 3 {
            return Err(format!(
                "{:?} is not column:placement or column:placement:alias (a comma-separated list is expected)",
                item.trim()
            ));
        }
        if parts[0].is_empty() {
            return Err(format!("{:?} has an empty column name", item.trim()));
        }
        let placement = match parts[1].to_ascii_lowercase().as_str() {
            "header" => Placement::Header,
            "envelope" => Placement::Envelope,
            "partition" => Placement::Partition,
            other => {
                return Err(format!(
                    "{:?} has placement {other:?}: allowed are header, envelope, partition",
                    item.trim()
                ))
            }
        };
        let alias = match parts.get(2) {
            Some(a) if !a.is_empty() => a.to_string(),
            _ => parts[0].to_string(),
        };
        out.push(AdditionalField {
            column: parts[0].to_string(),
            placement,
            alias,
        });
    }
    Ok(out)
}

/// Schemas shared between the records of one envelope schema (one table version), so that
/// the converter's per-schema byte cache is hit.
#[derive(Debug)]
struct TableSchemas {
    _envelope: Arc<Schema>,
    payload: Arc<Schema>,
    payload_key: Vec<u8>,
    columns: HashMap<String, Arc<Schema>>,
}

impl TableSchemas {
    /// The schemas of the table of `env_schema` (whose `after` row is `row`), made on its first
    /// record; a full cache is cleared before a new table enters it.
    fn cached<'c>(
        cache: &'c mut HashMap<usize, TableSchemas>,
        env_schema: &Arc<Schema>,
        row: &Schema,
        payload_column: &str,
    ) -> &'c mut TableSchemas {
        let key_ptr = Arc::as_ptr(env_schema) as usize;
        if cache.len() >= CACHE_LIMIT && !cache.contains_key(&key_ptr) {
            cache.clear();
        }
        cache.entry(key_ptr).or_insert_with(|| {
            let idx = row.field_index(payload_column).unwrap_or(0);
            let payload = row.fields[idx].schema.clone();
            let mut payload_key = Vec::new();
            crate::convert::json::write_schema(&payload, None, &mut payload_key);
            TableSchemas {
                _envelope: env_schema.clone(),
                payload: Arc::new(payload),
                payload_key,
                columns: HashMap::new(),
            }
        })
    }

    /// The shared schema of column `name` of `row`; `None` when the row has no such column.
    fn column(&mut self, row: &Schema, name: &str) -> Option<Arc<Schema>> {
        if let Some(s) = self.columns.get(name) {
            return Some(s.clone());
        }
        let i = row.field_index(name)?;
        let s = Arc::new(row.fields[i].schema.clone());
        self.columns.insert(name.to_string(), s.clone());
        Some(s)
    }
}

/// Bound of each cache; beyond it the cache is cleared (Debezium bounds its payload-schema
/// cache at 10,000 entries with LRU eviction).
const CACHE_LIMIT: usize = 10_000;

/// The value `cache` holds for `key`, else the one `make` gives, stored (a full cache is
/// cleared first); a failing `make` stores nothing.
fn cached<Q, K, V>(
    cache: &mut HashMap<K, V>,
    key: &Q,
    make: impl FnOnce() -> Result<V>,
) -> Result<V>
where
    Q: ToOwned<Owned = K> + Eq + std::hash::Hash + ?Sized,
    K: std::borrow::Borrow<Q> + Eq + std::hash::Hash,
    V: Clone,
{
    if let Some(v) = cache.get(key) {
        return Ok(v.clone());
    }
    let v = make()?;
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(key.to_owned(), v.clone());
    Ok(v)
}

/// The value-struct schemas built so far (Debezium's value-schema cache): the first record
/// that needs one builds it, so its name carries that record's route value.
#[derive(Debug, Default)]
struct ValueSchemas {
    /// Per payload schema (its JSON), without `table.field.event.schema.version`.
    by_payload: HashMap<Vec<u8>, Arc<Schema>>,
    /// Per schema version value, with `table.field.event.schema.version`.
    by_version: HashMap<Option<i64>, Arc<Schema>>,
}

impl ValueSchemas {
    /// The value-struct schema of `row`, cached per schema version when
    /// `table.field.event.schema.version` is set, else per payload schema (`table_payload_key`
    /// identifies the payload column's schema when the payload was not expanded).
    fn get(
        &mut self,
        row: &OutboxRow<'_>,
        o: &RouterOptions,
        payload: &Payload,
        table_payload_key: &[u8],
    ) -> Result<Arc<Schema>> {
        let route_value = row.route_value(&o.route_by)?.unwrap_or_default();
        let build = || row.value_struct_schema(o, route_value, &payload.schema);
        match &o.field_schema_version {
            Some(column) => {
                let version = row.schema_version(column)?;
                cached(&mut self.by_version, &version, || {
                    let mut s = build()?;
                    s.version = version.map(|v| v as i32);
                    Ok(Arc::new(s))
                })
            }
            None => {
                let key = payload.expanded_key.as_deref().unwrap_or(table_payload_key);
                cached(&mut self.by_payload, key, || build().map(Arc::new))
            }
        }
    }
}

/// What the routed record keeps of the change record.
struct Source<'a> {
    topic: &'a str,
    table: Option<Arc<crate::event::TableDescriptor>>,
    op: Option<crate::event::Op>,
    headers: Vec<Header>,
}

/// The EventRouter with its caches.
#[derive(Debug)]
pub struct EventRouter {
    alias: String,
    o: RouterOptions,
    only_headers: bool,
    tables: HashMap<usize, TableSchemas>,
    value_schemas: ValueSchemas,
    topics: HashMap<String, Arc<str>>,
}

/// The error of a record the router configured under `transforms.<alias>` cannot route.
fn fail(alias: &str, msg: impl std::fmt::Display) -> Error {
    Error::conversion(format!("outbox EventRouter (transforms.{alias}): {msg}"))
}

impl EventRouter {
    /// A router configured under `transforms.<alias>`.
    pub fn new(alias: &str, o: RouterOptions) -> Self {
        let only_headers = !o
            .additional
            .iter()
            .any(|a| a.placement == Placement::Envelope);
        EventRouter {
            alias: alias.to_string(),
            o,
            only_headers,
            tables: HashMap::new(),
            value_schemas: ValueSchemas::default(),
            topics: HashMap::new(),
        }
    }
}

impl Transformation for EventRouter {
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        RouterOptions::parse(o).map(|options| EventRouter::new(d.alias, options))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::CHANGES
    }

    /// Routes one record; `Ok(None)` drops it. Errors (the connector stops) name columns and
    /// options, never row values.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let payload_col = self.o.field_payload.as_str();
        if r.value.as_ref().is_none_or(|v| v.is_null()) {
            // Tombstone. pgcdc passes through those of tables without the payload column.
            if let Some(t) = &r.table {
                if t.row_schema.field_index(payload_col).is_none() {
                    return Ok(Some(r));
                }
            }
            return Ok(None);
        }
        if !is_envelope(&r) {
            return Ok(Some(r));
        }
        let (Some(env_schema), Some(env)) = (r.value_schema.clone(), r.value.as_ref()) else {
            return Ok(Some(r));
        };
        let after = field(&env_schema, env, "after");
        if let Some((row, _)) = after {
            if row.field_index(payload_col).is_none() {
                return Ok(Some(r));
            }
        }
        let op = match field(&env_schema, env, "op") {
            None => {
                return Err(fail(
                    &self.alias,
                    "op is not a valid field name of the envelope",
                ))
            }
            Some((_, v)) => v.as_str().map(str::to_string).unwrap_or_default(),
        };
        match op.as_str() {
            "d" => {
                tracing::debug!(transform = %self.alias, topic = %r.topic, "outbox EventRouter: delete ignored");
                return Ok(None);
            }
            "u" => {
                match self.o.invalid_op {
                    InvalidOpBehavior::Warn => tracing::warn!(
                        transform = %self.alias, topic = %r.topic,
                        "outbox EventRouter: unexpected UPDATE of an outbox row ignored (table.op.invalid.behavior=warn)"
                    ),
                    InvalidOpBehavior::Error => tracing::error!(
                        transform = %self.alias, topic = %r.topic,
                        "outbox EventRouter: unexpected UPDATE of an outbox row ignored (table.op.invalid.behavior=error)"
                    ),
                    InvalidOpBehavior::Fatal => {
                        return Err(fail(
                            &self.alias,
                            format_args!(
                                "unexpected UPDATE of an outbox row on {} (table.op.invalid.behavior=fatal)", r.topic),
                        ))
                    }
                }
                return Ok(None);
            }
            _ => {}
        }
        let Some((row, Value::Struct(_))) = after else {
            return Err(fail(
                &self.alias,
                format_args!(
                    "a record of {} with op={op:?} has no after row to route (restrict the router to the outbox table with a predicate)",
                    r.topic
                ),
            ));
        };
        let after_v = after.map(|a| a.1).unwrap_or(&Value::Null);
        let headers = std::mem::take(&mut r.headers);
        let source = Source {
            topic: &r.topic,
            table: r.table.clone(),
            op: r.op,
            headers,
        };
        self.route(source, &env_schema, env, row, after_v).map(Some)
    }
}

impl EventRouter {
    /// The record routed from an outbox row: `row` and `after` are the schema and value of the
    /// `after` image of the envelope `env`. Each step may fail, in this order.
    fn route(
        &mut self,
        r: Source<'_>,
        env_schema: &Arc<Schema>,
        env: &Value,
        row: &Schema,
        after: &Value,
    ) -> Result<ConnectRecord> {
        let o = &self.o;
        let outbox = OutboxRow {
            alias: &self.alias,
            schema: row,
            value: after,
        };
        let tables = TableSchemas::cached(&mut self.tables, env_schema, row, &o.field_payload);
        let timestamp = outbox.timestamp(o.field_timestamp.as_deref(), env_schema, env)?;
        let mut headers = r.headers;
        headers.push(outbox.header(tables, "id", &o.field_id)?);
        let payload = outbox.payload(o, tables, r.topic)?;
        let value_schema = if self.only_headers {
            None
        } else {
            let key = &tables.payload_key;
            Some(self.value_schemas.get(&outbox, o, &payload, key)?)
        };
        let partition = outbox.place_additional(o, tables, &mut headers)?;
        let (value_schema, value) = outbox.value(o, value_schema, payload)?;
        let (key_schema, key) = outbox.shared_column(tables, &o.field_key)?;
        let topic = topic(&mut self.topics, o, &outbox)?;
        Ok(ConnectRecord {
            topic,
            partition,
            key_schema: Some(key_schema),
            key: Some(key.clone()),
            value_schema,
            value,
            headers,
            timestamp,
            table: r.table,
            op: r.op,
        })
    }
}

/// The destination topic of `row`: `route.topic.regex`/`route.topic.replacement` applied to
/// its `route.by.field` value (the raw value when the regex does not match it entirely),
/// cached per value in `topics`.
fn topic(
    topics: &mut HashMap<String, Arc<str>>,
    o: &RouterOptions,
    row: &OutboxRow<'_>,
) -> Result<Arc<str>> {
    let value = row.topic_value(&o.route_by)?;
    cached(topics, value, || {
        Ok(Arc::from(
            o.route.rewrite(value).unwrap_or_else(|| value.to_string()),
        ))
    })
}

/// The payload of a routed record.
struct Payload {
    /// The payload column's value, or the expanded JSON's.
    value: Value,
    /// Its schema.
    schema: Arc<Schema>,
    /// The expanded schema as JSON, its value-schema cache key; `None` when not expanded (the
    /// table's payload key applies).
    expanded_key: Option<Vec<u8>>,
}

/// The `after` row of an outbox record, read column by column; its errors name the transform.
#[derive(Clone, Copy)]
struct OutboxRow<'a> {
    /// The transform's alias.
    alias: &'a str,
    /// The row schema.
    schema: &'a Schema,
    /// The row value.
    value: &'a Value,
}

impl<'a> OutboxRow<'a> {
    /// Column `name`'s schema and value; `None` when the row has no such column.
    fn col(&self, name: &str) -> Option<(&'a Schema, &'a Value)> {
        field(self.schema, self.value, name)
    }

    /// The error of a row this transform cannot route.
    fn fail(&self, msg: impl std::fmt::Display) -> Error {
        fail(self.alias, msg)
    }

    /// The error of column `name` missing from the row.
    fn missing(&self, name: &str) -> Error {
        self.fail(format_args!("{name} is not a valid field name of the row"))
    }

    /// Column `name`'s schema, shared through `tables`, and value; or the missing-column error.
    fn shared_column(
        &self,
        tables: &mut TableSchemas,
        name: &str,
    ) -> Result<(Arc<Schema>, &'a Value)> {
        let (_, value) = self.col(name).ok_or_else(|| self.missing(name))?;
        let schema = tables
            .column(self.schema, name)
            .ok_or_else(|| self.missing(name))?;
        Ok((schema, value))
    }

    /// Header `key` carrying column `column`, or the missing-column error.
    fn header(&self, tables: &mut TableSchemas, key: &str, column: &str) -> Result<Header> {
        let (schema, value) = self.shared_column(tables, column)?;
        Ok(Header {
            key: Arc::from(key),
            schema,
            value: value.clone(),
        })
    }

    /// The record timestamp in milliseconds: column `column` (`table.field.event.timestamp`)
    /// converted from its Timestamp, MicroTimestamp or NanoTimestamp; the envelope's `ts_ms`
    /// when no column is configured or its value is null.
    fn timestamp(
        &self,
        column: Option<&str>,
        env_schema: &Schema,
        env: &Value,
    ) -> Result<Option<i64>> {
        let env_ts = match field(env_schema, env, "ts_ms") {
            Some((_, Value::Int(ms))) => Some(*ms),
            _ => None,
        };
        let Some(name) = column else {
            return Ok(env_ts);
        };
        let Some((s, v)) = self.col(name) else {
            return Err(self.fail(format_args!(
                "unable to find timestamp field {name} in the row (table.field.event.timestamp)"
            )));
        };
        if s.ty != SchemaType::Int64 {
            return Err(self.fail(format_args!(
                "timestamp field {name} is of type {}, not int64: table.field.event.timestamp needs a column of type timestamp (io.debezium.time.Timestamp, MicroTimestamp or NanoTimestamp); timestamptz is a string",
                s.ty.json_name()
            )));
        }
        let Value::Int(t) = v else {
            return Ok(env_ts);
        };
        match s.name.as_deref() {
            Some("io.debezium.time.Timestamp") => Ok(Some(*t)),
            Some("io.debezium.time.MicroTimestamp") => Ok(Some(*t / 1_000)),
            Some("io.debezium.time.NanoTimestamp") => Ok(Some(*t / 1_000_000)),
            Some(other) => Err(self.fail(format_args!("unsupported type {other} of timestamp field {name}"))),
            None => Err(self.fail(format_args!(
                "timestamp field {name} is an int64 without a logical type; a Timestamp, MicroTimestamp or NanoTimestamp is needed"))),
        }
    }

    /// The payload column's value and schema, expanded from JSON when
    /// `table.expand.json.payload` is on; a payload that cannot be expanded stays unchanged,
    /// with a warning naming `topic`, or fails.
    fn payload(&self, o: &RouterOptions, tables: &TableSchemas, topic: &str) -> Result<Payload> {
        let (_, raw) = self
            .col(&o.field_payload)
            .ok_or_else(|| self.missing(&o.field_payload))?;
        let unchanged = || Payload {
            value: raw.clone(),
            schema: tables.payload.clone(),
            expanded_key: None,
        };
        if !o.expand_json {
            return Ok(unchanged());
        }
        match raw {
            Value::String(_) | Value::Shared(_) => {}
            Value::Null => return Ok(unchanged()),
            _ => {
                tracing::warn!(
                    transform = %self.alias, topic = %topic,
                    "outbox EventRouter: table.expand.json.payload is on but the payload is not a string"
                );
                return Ok(unchanged());
            }
        }
        let text = raw.as_str().unwrap_or_default();
        match json_expand::expand(text, &o.field_payload, o.json_nulls, o.json_empty_arrays) {
            Ok((schema, value)) => {
                let mut key = Vec::new();
                crate::convert::json::write_schema(&schema, None, &mut key);
                Ok(Payload {
                    value,
                    schema: Arc::new(schema),
                    expanded_key: Some(key),
                })
            }
            Err(ExpandError::Skip(why)) => {
                tracing::warn!(
                    transform = %self.alias, topic = %topic,
                    "outbox EventRouter: JSON expansion failed, payload left unchanged: {why}"
                );
                Ok(unchanged())
            }
            Err(ExpandError::Fail(why)) => {
                Err(self.fail(format_args!("table.expand.json.payload: {why}")))
            }
        }
    }

    /// The text of the `route.by.field` column (`None` when null), or the error of a missing
    /// or non-string column.
    fn route_value(&self, route_by: &str) -> Result<Option<&'a str>> {
        match self.col(route_by) {
            Some((s, v)) if s.ty == SchemaType::String => Ok(v.as_str()),
            Some((s, _)) => Err(self.fail(format_args!(
                "route.by.field {route_by} is of type {}, not string",
                s.ty.json_name()
            ))),
            None => Err(self.missing(route_by)),
        }
    }

    /// The `route.by.field` value that names the destination topic; a null one fails.
    fn topic_value(&self, route_by: &str) -> Result<&'a str> {
        self.route_value(route_by)?.ok_or_else(|| {
            self.fail(format_args!(
                "route.by.field {route_by} is NULL in a row; it names the destination topic"
            ))
        })
    }

    /// The value of the int32 `table.field.event.schema.version` column `column` (`None` when
    /// null), or the error of a missing or non-int32 column.
    fn schema_version(&self, column: &str) -> Result<Option<i64>> {
        match self.col(column) {
            Some((s, v)) if s.ty == SchemaType::Int32 => Ok(match v {
                Value::Int(i) => Some(*i),
                _ => None,
            }),
            Some((s, _)) => Err(self.fail(format_args!(
                "table.field.event.schema.version column {column} is of type {}, not int32",
                s.ty.json_name()
            ))),
            None => Err(self.missing(column)),
        }
    }

    /// The value struct's schema, named after `route_value`: field `payload` of
    /// `payload_schema`, then each `envelope` placement under its alias with its column's
    /// schema (an absent column fails, or is left out with `table.field.additional.missing`
    /// `ignore`).
    fn value_struct_schema(
        &self,
        o: &RouterOptions,
        route_value: &str,
        payload_schema: &Schema,
    ) -> Result<Schema> {
        let name = value_schema_name(self.schema.name.as_deref(), route_value);
        let mut fields = vec![Field::new("payload", payload_schema.clone())];
        for a in o
            .additional
            .iter()
            .filter(|a| a.placement == Placement::Envelope)
        {
            match self.schema.field_index(&a.column) {
                Some(i) => fields.push(Field::new(
                    a.alias.clone(),
                    self.schema.fields[i].schema.clone(),
                )),
                None if o.missing == MissingBehavior::Ignore => {}
                None => {
                    return Err(self.fail(format_args!(
                        "unable to find field {} in the row (table.fields.additional.placement)",
                        a.column
                    )))
                }
            }
        }
        Ok(Schema::structure(name, false, fields))
    }

    /// Applies the `header` and `partition` placements: adds their headers to `headers` and
    /// returns the partition, the last `partition` placement's value (`None` when there is
    /// none or it is null). Absent columns fail, or are skipped with
    /// `table.field.additional.missing=ignore`.
    fn place_additional(
        &self,
        o: &RouterOptions,
        tables: &mut TableSchemas,
        headers: &mut Vec<Header>,
    ) -> Result<Option<i32>> {
        let mut partition = None;
        for a in &o.additional {
            if self.col(&a.column).is_none() && o.missing == MissingBehavior::Ignore {
                continue;
            }
            match a.placement {
                Placement::Envelope => {}
                Placement::Header => headers.push(self.header(tables, &a.alias, &a.column)?),
                Placement::Partition => partition = self.partition(&a.column)?,
            }
        }
        Ok(partition)
    }

    /// The value of int32 column `column` as a partition (`None` when null), or the error of a
    /// missing or non-int32 column.
    fn partition(&self, column: &str) -> Result<Option<i32>> {
        let (s, v) = self.col(column).ok_or_else(|| self.missing(column))?;
        if s.ty != SchemaType::Int32 {
            return Err(self.fail(format_args!(
                "partition column {column} is of type {}, not int32",
                s.ty.json_name()
            )));
        }
        Ok(match v {
            Value::Int(p) => Some(*p as i32),
            _ => None,
        })
    }

    /// The record's value schema and value: neither for a blank payload with
    /// `route.tombstone.on.empty.payload`; else the payload alone, or with `value_schema` the
    /// value struct.
    fn value(
        &self,
        o: &RouterOptions,
        value_schema: Option<Arc<Schema>>,
        payload: Payload,
    ) -> Result<(Option<Arc<Schema>>, Option<Value>)> {
        if is_blank(&payload.value) && o.tombstone_on_empty {
            return Ok((None, None));
        }
        match value_schema {
            None => Ok((Some(payload.schema), Some(payload.value))),
            Some(vs) => {
                let value = self.value_struct(o, &vs, payload.value)?;
                Ok((Some(vs), Some(value)))
            }
        }
    }

    /// The value struct of schema `vs`: `payload`, then for each further field of `vs` the
    /// value of the `envelope` placement of that alias (null when there is none, or its column
    /// is absent and `table.field.additional.missing=ignore`).
    fn value_struct(&self, o: &RouterOptions, vs: &Schema, payload: Value) -> Result<Value> {
        let mut values = Vec::with_capacity(vs.fields.len());
        values.push(payload);
        for f in &vs.fields[1..] {
            let a = o
                .additional
                .iter()
                .find(|a| a.placement == Placement::Envelope && a.alias == f.name);
            let v = match a {
                Some(a) => match self.col(&a.column) {
                    Some((_, v)) => v.clone(),
                    None if o.missing == MissingBehavior::Ignore => Value::Null,
                    None => return Err(self.missing(&a.column)),
                },
                None => Value::Null,
            };
            values.push(v);
        }
        Ok(Value::Struct(values))
    }
}

/// The value struct's name: the row schema's name with `route_value` inserted before its last
/// part (`db.public.outbox.Value` → `db.public.outbox.<route value>.Value`).
fn value_schema_name(row_name: Option<&str>, route_value: &str) -> String {
    match row_name {
        Some(n) => match n.rfind('.') {
            Some(i) => format!("{}{route_value}.{}", &n[..=i], &n[i + 1..]),
            None => format!("{route_value}.{n}"),
        },
        None => route_value.to_string(),
    }
}

/// Whether a payload is null or text of only blanks and control characters (as Java's
/// `trim` sees them).
fn is_blank(payload: &Value) -> bool {
    match payload {
        Value::Null => true,
        Value::String(_) | Value::Shared(_) => payload
            .as_str()
            .unwrap_or_default()
            .trim_matches(|c: char| c <= ' ')
            .is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod route_tests;
#[cfg(test)]
mod tests;
