//! `io.debezium.transforms.outbox.EventRouter` with Debezium's default options.
//!
//! For a record of an outbox table (one whose row has the `payload` column):
//! - a tombstone is dropped; a delete (`d`) is dropped; an update (`u`) is dropped with a
//!   warning (`table.op.invalid.behavior=warn`); a truncate fails;
//! - a create (`c`) or snapshot read (`r`) becomes a record on
//!   `outbox.event.<aggregatetype>` with key = `aggregateid` (with its column schema),
//!   value = `payload` (with its column schema; a jsonb payload is a JSON *string*),
//!   header `id` = the event id, timestamp = the envelope's `ts_ms`.
//!
//! Records of tables without the `payload` column pass through unchanged. Debezium would fail
//! the task on them (it expects a predicate restricting the transform to the outbox topic);
//! pgcdc lets a config that applies the router to every table, like the seed's, work as meant.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::event::{ConnectRecord, Header, Op, Value};

/// Column names (Debezium defaults).
const FIELD_ID: &str = "id";
const FIELD_KEY: &str = "aggregateid";
const FIELD_PAYLOAD: &str = "payload";
const FIELD_ROUTE: &str = "aggregatetype";
const TOPIC_PREFIX: &str = "outbox.event.";

/// The EventRouter with default options.
#[derive(Debug)]
pub struct EventRouter {
    alias: String,
}

impl EventRouter {
    /// A router configured under `transforms.<alias>`.
    pub fn new(alias: &str) -> Self {
        EventRouter {
            alias: alias.to_string(),
        }
    }

    /// Routes one record; `Ok(None)` drops it.
    pub fn apply(&self, r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let Some(table) = r.table.clone() else {
            return Ok(Some(r));
        };
        let row_schema = &table.row_schema;
        let Some(payload_idx) = row_schema.field_index(FIELD_PAYLOAD) else {
            return Ok(Some(r));
        };
        let Some(Value::Struct(envelope)) = &r.value else {
            return Ok(None); // tombstone
        };
        match r.op {
            Some(Op::Delete) => return Ok(None),
            Some(Op::Update) => {
                tracing::warn!(
                    transform = %self.alias,
                    table = %format!("{}.{}", table.schema, table.table),
                    "outbox EventRouter: UPDATE on an outbox table is ignored (table.op.invalid.behavior=warn)"
                );
                return Ok(None);
            }
            Some(Op::Truncate) => {
                return Err(Error::conversion(format!(
                    "outbox EventRouter (transforms.{}) cannot route a TRUNCATE of {}.{}: the envelope has no after row",
                    self.alias, table.schema, table.table
                )))
            }
            _ => {}
        }
        let Some(Value::Struct(after)) = envelope.get(1) else {
            return Err(Error::conversion(format!(
                "outbox EventRouter: record of {}.{} has no after row",
                table.schema, table.table
            )));
        };
        let field = |name: &str| -> Result<usize> {
            row_schema.field_index(name).ok_or_else(|| {
                Error::conversion(format!(
                    "outbox EventRouter (transforms.{}): table {}.{} has a {FIELD_PAYLOAD} column but no {name} column",
                    self.alias, table.schema, table.table
                ))
            })
        };
        let (id_idx, key_idx, route_idx) =
            (field(FIELD_ID)?, field(FIELD_KEY)?, field(FIELD_ROUTE)?);
        let route = match &after[route_idx] {
            Value::String(s) => s.clone(),
            Value::Null => {
                return Err(Error::conversion(format!(
                    "outbox EventRouter: {FIELD_ROUTE} is NULL in a row of {}.{}; it names the destination topic",
                    table.schema, table.table
                )))
            }
            other => format!("{other:?}"),
        };
        let ts_ms = match envelope.get(5) {
            Some(Value::Int(ms)) => Some(*ms),
            _ => None,
        };
        let mut headers = r.headers.clone();
        headers.push(Header {
            key: FIELD_ID.into(),
            schema: Arc::new(row_schema.fields[id_idx].schema.clone()),
            value: after[id_idx].clone(),
        });
        let payload_schema = Arc::new(row_schema.fields[payload_idx].schema.clone());
        Ok(Some(ConnectRecord {
            topic: Arc::from(format!("{TOPIC_PREFIX}{route}")),
            partition: None,
            key_schema: Some(Arc::new(row_schema.fields[key_idx].schema.clone())),
            key: Some(after[key_idx].clone()),
            value_schema: Some(payload_schema),
            value: Some(after[payload_idx].clone()),
            headers,
            timestamp: ts_ms,
            table: r.table.clone(),
            op: r.op,
        }))
    }
}
