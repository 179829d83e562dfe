//! `io.debezium.transforms.outbox.EventRouter`: every option and processing rule of Debezium
//! 3.6.1 (see the README's outbox section for the user view).
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
use super::{field, is_envelope, Options};
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
        let additional = match o.raw("table.fields.additional.placement") {
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
        };
        let missing = o.choice(
            "table.field.additional.missing",
            MissingBehavior::Error,
            &[
                ("error", MissingBehavior::Error),
                ("ignore", MissingBehavior::Ignore),
            ],
        );
        let route_by = o.string("route.by.field", "aggregatetype");
        let regex = o.string("route.topic.regex", DEFAULT_ROUTE_REGEX);
        let replacement = o.string("route.topic.replacement", DEFAULT_ROUTE_REPLACEMENT);
        let route = match TopicRewrite::new(&regex, &replacement) {
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
        };
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
        let envelope_fields = additional
            .iter()
            .any(|a| a.placement == Placement::Envelope);
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
        const NO_TRACING: &str = "pgcdc has no OpenTelemetry tracing; Debezium uses these options only with OpenTelemetry on its classpath";
        o.only_default(
            "tracing.span.context.field",
            "tracingspancontext",
            NO_TRACING,
        );
        o.only_default("tracing.operation.name", "debezium-read", NO_TRACING);
        o.only_default("tracing.with.context.field.only", "false", NO_TRACING);

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
    value_schemas: HashMap<Vec<u8>, Arc<Schema>>,
    versioned: HashMap<Option<i64>, Arc<Schema>>,
    topics: HashMap<String, Arc<str>>,
}

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
            value_schemas: HashMap::new(),
            versioned: HashMap::new(),
            topics: HashMap::new(),
        }
    }

    /// Routes one record; `Ok(None)` drops it. Errors (the connector stops) name columns and
    /// options, never row values.
    pub fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
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
                            format_args!("unexpected UPDATE of an outbox row on {} (table.op.invalid.behavior=fatal)", r.topic),
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

    fn route(
        &mut self,
        r: Source<'_>,
        env_schema: &Arc<Schema>,
        env: &Value,
        row: &Schema,
        after: &Value,
    ) -> Result<ConnectRecord> {
        let alias = self.alias.clone();
        let o = &self.o;
        let col = |name: &str| field(row, after, name);
        let missing = |name: &str| {
            fail(
                &alias,
                format_args!("{name} is not a valid field name of the row"),
            )
        };

        let key_ptr = Arc::as_ptr(env_schema) as usize;
        if self.tables.len() >= CACHE_LIMIT && !self.tables.contains_key(&key_ptr) {
            self.tables.clear();
        }
        let tables = self.tables.entry(key_ptr).or_insert_with(|| {
            let idx = row.field_index(&o.field_payload).unwrap_or(0);
            let payload = row.fields[idx].schema.clone();
            let mut payload_key = Vec::new();
            crate::convert::json::write_schema(&payload, None, &mut payload_key);
            TableSchemas {
                _envelope: env_schema.clone(),
                payload: Arc::new(payload),
                payload_key,
                columns: HashMap::new(),
            }
        });

        // Record timestamp.
        let env_ts = match field(env_schema, env, "ts_ms") {
            Some((_, Value::Int(ms))) => Some(*ms),
            _ => None,
        };
        let timestamp = match &o.field_timestamp {
            None => env_ts,
            Some(name) => {
                let Some((s, v)) = col(name) else {
                    return Err(fail(&alias, format_args!("unable to find timestamp field {name} in the row (table.field.event.timestamp)")));
                };
                if s.ty != SchemaType::Int64 {
                    return Err(fail(&alias, format_args!(
                        "timestamp field {name} is of type {}, not int64: table.field.event.timestamp needs a column of type timestamp (io.debezium.time.Timestamp, MicroTimestamp or NanoTimestamp); timestamptz is a string",
                        s.ty.json_name()
                    )));
                }
                match v {
                    Value::Int(t) => match s.name.as_deref() {
                        Some("io.debezium.time.Timestamp") => Some(*t),
                        Some("io.debezium.time.MicroTimestamp") => Some(*t / 1_000),
                        Some("io.debezium.time.NanoTimestamp") => Some(*t / 1_000_000),
                        Some(other) => return Err(fail(&alias, format_args!("unsupported type {other} of timestamp field {name}"))),
                        None => return Err(fail(&alias, format_args!("timestamp field {name} is an int64 without a logical type; a Timestamp, MicroTimestamp or NanoTimestamp is needed"))),
                    },
                    _ => env_ts,
                }
            }
        };

        // Event id header.
        let (_, id_value) = col(&o.field_id).ok_or_else(|| missing(&o.field_id))?;
        let id_schema = tables
            .column(row, &o.field_id)
            .ok_or_else(|| missing(&o.field_id))?;
        let mut headers = r.headers;
        headers.push(Header {
            key: Arc::from("id"),
            schema: id_schema,
            value: id_value.clone(),
        });

        // Payload, expanded when configured.
        let (_, raw_payload) = col(&o.field_payload).ok_or_else(|| missing(&o.field_payload))?;
        let mut payload = raw_payload.clone();
        let mut payload_schema = tables.payload.clone();
        let mut payload_key: Option<Vec<u8>> = None;
        if o.expand_json {
            match raw_payload {
                Value::String(_) | Value::Shared(_) => {
                    let text = raw_payload.as_str().unwrap_or_default();
                    match json_expand::expand(
                        text,
                        &o.field_payload,
                        o.json_nulls,
                        o.json_empty_arrays,
                    ) {
                        Ok((s, v)) => {
                            let mut k = Vec::new();
                            crate::convert::json::write_schema(&s, None, &mut k);
                            payload_key = Some(k);
                            payload_schema = Arc::new(s);
                            payload = v;
                        }
                        Err(ExpandError::Skip(why)) => tracing::warn!(
                            transform = %alias, topic = %r.topic,
                            "outbox EventRouter: JSON expansion failed, payload left unchanged: {why}"
                        ),
                        Err(ExpandError::Fail(why)) => {
                            return Err(fail(
                                &alias,
                                format_args!("table.expand.json.payload: {why}"),
                            ))
                        }
                    }
                }
                Value::Null => {}
                _ => tracing::warn!(
                    transform = %alias, topic = %r.topic,
                    "outbox EventRouter: table.expand.json.payload is on but the payload is not a string"
                ),
            }
        }

        // Value schema (when some field goes to the envelope).
        let value_schema = if self.only_headers {
            None
        } else {
            let route_value = match col(&o.route_by) {
                Some((s, v)) if s.ty == SchemaType::String => {
                    v.as_str().unwrap_or_default().to_string()
                }
                Some((s, _)) => {
                    return Err(fail(
                        &alias,
                        format_args!(
                            "route.by.field {} is of type {}, not string",
                            o.route_by,
                            s.ty.json_name()
                        ),
                    ))
                }
                None => return Err(missing(&o.route_by)),
            };
            let build = |payload_schema: &Arc<Schema>| -> Result<Schema> {
                let base = row.name.as_deref();
                let name = match base {
                    Some(n) => match n.rfind('.') {
                        Some(i) => format!("{}{route_value}.{}", &n[..=i], &n[i + 1..]),
                        None => format!("{route_value}.{n}"),
                    },
                    None => route_value.clone(),
                };
                let mut fields = vec![Field::new("payload", (**payload_schema).clone())];
                for a in o
                    .additional
                    .iter()
                    .filter(|a| a.placement == Placement::Envelope)
                {
                    match row.field_index(&a.column) {
                        Some(i) => fields.push(Field::new(a.alias.clone(), row.fields[i].schema.clone())),
                        None if o.missing == MissingBehavior::Ignore => {}
                        None => return Err(fail(&alias, format_args!("unable to find field {} in the row (table.fields.additional.placement)", a.column))),
                    }
                }
                Ok(Schema::structure(name, false, fields))
            };
            Some(match &o.field_schema_version {
                Some(vcol) => {
                    let version = match col(vcol) {
                        Some((s, v)) if s.ty == SchemaType::Int32 => match v {
                            Value::Int(i) => Some(*i),
                            _ => None,
                        },
                        Some((s, _)) => return Err(fail(&alias, format_args!("table.field.event.schema.version column {vcol} is of type {}, not int32", s.ty.json_name()))),
                        None => return Err(missing(vcol)),
                    };
                    match self.versioned.get(&version) {
                        Some(s) => s.clone(),
                        None => {
                            let mut s = build(&payload_schema)?;
                            s.version = version.map(|v| v as i32);
                            let s = Arc::new(s);
                            if self.versioned.len() >= CACHE_LIMIT {
                                self.versioned.clear();
                            }
                            self.versioned.insert(version, s.clone());
                            s
                        }
                    }
                }
                None => {
                    let k = payload_key.as_ref().unwrap_or(&tables.payload_key);
                    match self.value_schemas.get(k) {
                        Some(s) => s.clone(),
                        None => {
                            let s = Arc::new(build(&payload_schema)?);
                            if self.value_schemas.len() >= CACHE_LIMIT {
                                self.value_schemas.clear();
                            }
                            self.value_schemas.insert(k.clone(), s.clone());
                            s
                        }
                    }
                }
            })
        };

        // Additional fields.
        let mut partition = None;
        for a in &o.additional {
            let found = col(&a.column);
            if found.is_none() && o.missing == MissingBehavior::Ignore {
                continue;
            }
            match a.placement {
                Placement::Envelope => {}
                Placement::Header => {
                    let (_, v) = found.ok_or_else(|| missing(&a.column))?;
                    let schema = tables
                        .column(row, &a.column)
                        .ok_or_else(|| missing(&a.column))?;
                    headers.push(Header {
                        key: Arc::from(a.alias.as_str()),
                        schema,
                        value: v.clone(),
                    });
                }
                Placement::Partition => {
                    let (s, v) = found.ok_or_else(|| missing(&a.column))?;
                    if s.ty != SchemaType::Int32 {
                        return Err(fail(
                            &alias,
                            format_args!(
                                "partition column {} is of type {}, not int32",
                                a.column,
                                s.ty.json_name()
                            ),
                        ));
                    }
                    partition = match v {
                        Value::Int(p) => Some(*p as i32),
                        _ => None,
                    };
                }
            }
        }

        let is_empty = match &payload {
            Value::Null => true,
            Value::String(_) | Value::Shared(_) => payload
                .as_str()
                .unwrap_or_default()
                .trim_matches(|c: char| c <= ' ')
                .is_empty(),
            _ => false,
        };
        let (value_schema, value) = if is_empty && o.tombstone_on_empty {
            (None, None)
        } else {
            match value_schema {
                None => (Some(payload_schema), Some(payload)),
                Some(vs) => {
                    let mut values = Vec::with_capacity(vs.fields.len());
                    values.push(payload);
                    for f in &vs.fields[1..] {
                        let a = o
                            .additional
                            .iter()
                            .find(|a| a.placement == Placement::Envelope && a.alias == f.name);
                        let v = match a {
                            Some(a) => match col(&a.column) {
                                Some((_, v)) => v.clone(),
                                None if o.missing == MissingBehavior::Ignore => Value::Null,
                                None => return Err(missing(&a.column)),
                            },
                            None => Value::Null,
                        };
                        values.push(v);
                    }
                    (Some(vs), Some(Value::Struct(values)))
                }
            }
        };

        // Key and topic.
        let (_, key) = col(&o.field_key).ok_or_else(|| missing(&o.field_key))?;
        let key_schema = tables
            .column(row, &o.field_key)
            .ok_or_else(|| missing(&o.field_key))?;
        let route_value = match col(&o.route_by) {
            Some((s, v)) if s.ty == SchemaType::String => match v.as_str() {
                Some(t) => t,
                None => {
                    return Err(fail(
                        &alias,
                        format_args!(
                            "route.by.field {} is NULL in a row; it names the destination topic",
                            o.route_by
                        ),
                    ))
                }
            },
            Some((s, _)) => {
                return Err(fail(
                    &alias,
                    format_args!(
                        "route.by.field {} is of type {}, not string",
                        o.route_by,
                        s.ty.json_name()
                    ),
                ))
            }
            None => return Err(missing(&o.route_by)),
        };
        let topic = match self.topics.get(route_value) {
            Some(t) => t.clone(),
            None => {
                let t: Arc<str> = Arc::from(
                    o.route
                        .rewrite(route_value)
                        .unwrap_or_else(|| route_value.to_string()),
                );
                if self.topics.len() >= CACHE_LIMIT {
                    self.topics.clear();
                }
                self.topics.insert(route_value.to_string(), t.clone());
                t
            }
        };
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

#[cfg(test)]
mod route_tests;
#[cfg(test)]
mod tests;
