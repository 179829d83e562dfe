//! Logical decoding messages (`pg_logical_emit_message`, PostgreSQL 14+) into records on
//! `<topic.prefix>.message`, as Debezium writes them.
//!
//! A transactional message belongs to its transaction's unit and counts in its transaction
//! metadata (each message a data collection of its own, Debezium's
//! `LogicalDecodingMessageId`). A non-transactional message is a unit of its own that
//! completes at the message's position; Debezium records it as the last completed position,
//! which its own `source.sequence` already shows.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::event::envelope::message_record;
use crate::event::schema_change::{schema_change_record, SchemaChange};
use crate::event::{meta, Value};
use crate::lsn::Lsn;
use crate::offsets::ack::CommitInfo;
use crate::pg::schema_capture::SCHEMA_CHANGE_PREFIX;
use crate::pg::types::encode_binary;
use crate::sink::{Sink, Unit};

use super::processor::Processor;
use super::relations::Catalog;

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// A logical decoding message that arrived in the XLogData at `lsn`; `message_lsn` is the
    /// position the message itself carries.
    pub(super) async fn logical_message(
        &mut self,
        lsn: Lsn,
        message_lsn: Lsn,
        transactional: bool,
        prefix: String,
        content: Bytes,
    ) -> Result<()> {
        if transactional && prefix == SCHEMA_CHANGE_PREFIX && self.config.include_schema_changes {
            self.schema_change(lsn, &content).await?;
        }
        if !self.config.message_filters.is_captured(&prefix) {
            return Ok(());
        }
        let content = encode_binary(content.to_vec(), self.config.values.binary);
        if !transactional {
            self.progress.message_unit(lsn);
        }
        let (token, own_unit) = match (&self.tx, transactional) {
            (Some(tx), true) => (tx.unit.token(), None),
            (None, true) => {
                return Err(Error::protocol(
                    "transactional logical message outside a transaction",
                ))
            }
            (_, false) => {
                let unit = Unit::open(&mut self.sink);
                (unit.token(), Some(unit))
            }
        };
        let ts_us = self.message_time(transactional);
        let tx_id = match (&self.tx, transactional) {
            (Some(tx), true) => Some(tx.xid as i64),
            _ => None,
        };
        let source = self.source.info(
            ts_us,
            None,
            self.progress.last_commit_lsn(),
            lsn,
            tx_id,
            None,
        );
        let mut record = message_record(
            &self.config.topic_prefix,
            &source,
            &prefix,
            content,
            self.message_schema.clone(),
        );
        if transactional {
            self.count_message(&mut record, lsn);
        }
        self.send_record(record, token).await?;
        if let Some(unit) = own_unit {
            self.complete_own_unit(unit, message_lsn.max(lsn), ts_us);
        }
        self.counters.add_change_event(None, ts_us);
        Ok(())
    }

    /// A schema capture message (`include.schema.changes`): publishes its schema change record
    /// in the transaction's unit, holding the tables the filters capture, and waits until
    /// Kafka has acknowledged it, so that no row record after the DDL is sent before it.
    /// A message with the capture's prefix that the capture did not write (any role may call
    /// `pg_logical_emit_message`) is skipped with a warning naming its LSN: stopping on it
    /// would let any role stop the connector for good. Errors: the record was not delivered.
    async fn schema_change(&mut self, lsn: Lsn, content: &[u8]) -> Result<()> {
        let Some(change) = self.readable_schema_change(lsn, content) else {
            return Ok(());
        };
        let Some(tx) = &self.tx else {
            return Err(Error::protocol(
                "transactional logical message outside a transaction",
            ));
        };
        let (token, xid) = (tx.unit.token(), tx.xid);
        let ts_us = self.message_time(true);
        let source = self.source.info(
            ts_us,
            None,
            self.progress.last_commit_lsn(),
            lsn,
            Some(xid as i64),
            None,
        );
        let filters = &self.config.filters;
        let now_ms = crate::event::envelope::now_nanos() / 1_000_000;
        let Some(record) = schema_change_record(
            &self.config.topic_prefix,
            &source,
            &change,
            |schema, table| filters.is_captured(schema, table),
            now_ms,
            &self.output.options.context_headers,
        ) else {
            return Ok(());
        };
        tracing::info!(
            %lsn,
            tag = change.tag,
            tables = change.tables.len(),
            "publishing a schema change record"
        );
        self.send_record(record, token).await?;
        self.wait_acknowledged("a schema change record was not acknowledged")
            .await
    }

    /// The capture message at `lsn`, its tables' columns filtered as the row events' are
    /// (`column.include.list` / `column.exclude.list`); `None`, with a warning, for a message
    /// the capture did not write.
    fn readable_schema_change(&self, lsn: Lsn, content: &[u8]) -> Option<SchemaChange> {
        let mut change = match SchemaChange::parse(content) {
            Ok(change) => change,
            Err(e) => {
                tracing::warn!(
                    %lsn,
                    "skipped a logical message with the schema capture's prefix that is not a schema change pgcdc reads: {}",
                    e.message()
                );
                return None;
            }
        };
        let columns = &self.config.records.columns;
        for t in &mut change.tables {
            let prefix = format!("{}.{}.", t.schema, t.table);
            t.columns
                .retain(|c| columns.includes_column(&format!("{prefix}{}", c.name)));
        }
        Some(change)
    }

    /// `source.ts_ms` of a message: its transaction's commit time, or for a non-transactional
    /// one the last commit time seen (the clock when there was none).
    fn message_time(&self, transactional: bool) -> i64 {
        match (&self.tx, transactional) {
            (Some(tx), true) => tx.commit_time_us,
            _ => self
                .progress
                .last_commit_time_us()
                .unwrap_or_else(|| crate::event::envelope::now_nanos() / 1000),
        }
    }

    /// Counts a transactional message in the transaction metadata and fills its
    /// `transaction` block.
    fn count_message(&mut self, record: &mut crate::event::ConnectRecord, lsn: Lsn) {
        if self.transaction_topic.is_none() || !matches!(record.value, Some(Value::Struct(_))) {
            return;
        }
        if let Some(tx) = self.tx.as_mut() {
            let (total, order) = tx.counters.message_event();
            let block = meta::transaction_block(meta::transaction_id(tx.xid, lsn), total, order);
            meta::set_transaction_block(record, block);
        }
    }

    /// Completes the unit of a non-transactional message at `end_lsn`.
    fn complete_own_unit(&mut self, unit: Unit, end_lsn: Lsn, ts_us: i64) {
        unit.commit(
            &mut self.sink,
            CommitInfo {
                end_lsn,
                xid: 0,
                commit_time_us: ts_us,
                completes_snapshot: false,
                idle: false,
                before_snapshot: false,
                incremental: self.incremental.progress(),
                initial: None,
            },
        );
        if self.tx.is_none() {
            self.note_idle_position(end_lsn);
        }
    }
}
