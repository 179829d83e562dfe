//! Row changes (Insert, Update, Delete, Truncate) into change events, as Debezium's
//! PostgreSQL connector shapes them: key from the emitted image, `before` from the old tuple
//! the replica identity sends, a key change noticed by comparing the old and new keys.
//!
//! Changes of relations that are not captured (their Relation message was filtered) are
//! dropped here by design; `skipped.operations` drops the configured operations, and
//! `skip.messages.without.change` an update whose `before` (REPLICA IDENTITY FULL) equals its
//! `after` over the columns the records carry, as Debezium compares its value structs;
//! `post.processors` re-selects unavailable and null values of inserts and updates
//! ([`super::reselect`]). A
//! change of a relation whose Relation message never arrived is a protocol error.

use std::sync::Arc;

use crate::error::Result;
use crate::event::{ChangeEvent, Op};
use crate::lsn::Lsn;
use crate::pg::pgoutput::{OldTuple, Tuple};
use crate::pg::relation::{Image, TableSchema};
use crate::sink::Sink;

use super::processor::Processor;
use super::relations::Catalog;

/// Row values of one image: one value per column of the table.
type Row = Vec<crate::event::Value>;

/// What a change carries: the key of the emitted image, the old key when it differs (a
/// primary-key change), and the row images.
#[derive(Default)]
struct Images {
    key: Option<Row>,
    old_key: Option<Row>,
    before: Option<Row>,
    after: Option<Row>,
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// An Insert: one `c` event.
    pub(super) async fn insert(&mut self, lsn: Lsn, relation_id: u32, new: Tuple) -> Result<()> {
        let Some(table) = self.table(relation_id)? else {
            return Ok(());
        };
        let signal_table = self.is_signal_table(&table);
        if self.config.skipped_operations.create && !signal_table {
            return Ok(());
        }
        let Some(after) = self.tolerate(self.row(&table, &new, None, Image::New), &table, lsn)?
        else {
            return Ok(());
        };
        if signal_table {
            self.source_signal(lsn, Op::Create, &after).await?;
            if self.config.skipped_operations.create {
                return Ok(());
            }
        }
        let images = Images {
            key: table.key_of(&after),
            after: Some(after),
            ..Images::default()
        };
        let mut ev = self.event(&table, Op::Create, lsn, images)?;
        self.reselect(&table, &new, &mut ev).await?;
        self.emit_change(ev).await
    }

    /// An Update: one `u` event, or the delete / tombstone / create of a key change (split
    /// by the envelope code).
    pub(super) async fn update(
        &mut self,
        lsn: Lsn,
        relation_id: u32,
        old: Option<OldTuple>,
        new: Tuple,
    ) -> Result<()> {
        let Some(table) = self.table(relation_id)? else {
            return Ok(());
        };
        if self.config.skipped_operations.update {
            return Ok(());
        }
        let old_full = match &old {
            Some(OldTuple::Full(t)) => Some(t),
            _ => None,
        };
        let images = (|| {
            let after = self.row(&table, &new, old_full, Image::New)?;
            let before = match &old {
                Some(OldTuple::Full(t)) | Some(OldTuple::Key(t)) => {
                    Some(self.row(&table, t, None, Image::Old)?)
                }
                None => None,
            };
            Ok((after, before))
        })();
        let Some((after, before)) = self.tolerate(images, &table, lsn)? else {
            return Ok(());
        };
        let key = table.key_of(&after);
        let old_key = before
            .as_ref()
            .and_then(|b| table.key_of(b))
            .filter(|k| Some(k) != key.as_ref());
        let images = Images {
            key,
            old_key,
            before,
            after: Some(after),
        };
        let mut ev = self.event(&table, Op::Update, lsn, images)?;
        if self.config.skip_messages_without_change && ev.before.as_ref() == ev.after.as_ref() {
            tracing::debug!(relation = %table.full_name(), %lsn,
                "update without a change in the captured columns skipped (skip.messages.without.change)");
            return Ok(());
        }
        self.reselect(&table, &new, &mut ev).await?;
        self.emit_change(ev).await
    }

    /// A Delete: one `d` event (its tombstone is added by the envelope code).
    pub(super) async fn delete(&mut self, lsn: Lsn, relation_id: u32, old: OldTuple) -> Result<()> {
        let Some(table) = self.table(relation_id)? else {
            return Ok(());
        };
        let signal_table = self.is_signal_table(&table);
        if self.config.skipped_operations.delete && !signal_table {
            return Ok(());
        }
        let (OldTuple::Full(tuple) | OldTuple::Key(tuple)) = &old;
        let Some(before) = self.tolerate(self.row(&table, tuple, None, Image::Old), &table, lsn)?
        else {
            return Ok(());
        };
        if signal_table {
            self.source_signal(lsn, Op::Delete, &before).await?;
            if self.config.skipped_operations.delete {
                return Ok(());
            }
        }
        let images = Images {
            key: table.key_of(&before),
            before: Some(before),
            ..Images::default()
        };
        let ev = self.event(&table, Op::Delete, lsn, images)?;
        self.emit_change(ev).await
    }

    /// A Truncate: one `t` event per captured relation it names.
    pub(super) async fn truncate(&mut self, lsn: Lsn, relation_ids: Vec<u32>) -> Result<()> {
        if self.config.skipped_operations.truncate {
            return Ok(());
        }
        for relation_id in relation_ids {
            let Some(table) = self.table(relation_id)? else {
                continue;
            };
            let ev = self.event(&table, Op::Truncate, lsn, Images::default())?;
            self.emit_change(ev).await?;
        }
        Ok(())
    }

    /// `event.processing.failure.handling.mode`: a row that cannot be converted stops the
    /// connector (`fail`, the default), or its change is skipped (`warn`, `skip`, `ignore`),
    /// always with a warning naming the relation, the LSN and the reason, never the values.
    fn tolerate<T>(&self, row: Result<T>, table: &TableSchema, lsn: Lsn) -> Result<Option<T>> {
        match row {
            Ok(v) => Ok(Some(v)),
            Err(e)
                if self.config.processing_failure_skips
                    && e.kind() == crate::error::ErrorKind::Conversion =>
            {
                tracing::warn!(
                    relation = %table.full_name(),
                    %lsn,
                    reason = %e.one_line(),
                    "change skipped: its row cannot be converted (event.processing.failure.handling.mode)"
                );
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Converts one tuple of `table` into its row values.
    fn row(
        &self,
        table: &TableSchema,
        tuple: &Tuple,
        old_full: Option<&Tuple>,
        image: Image,
    ) -> Result<Row> {
        table.row_from_tuple(
            tuple,
            old_full,
            image,
            &self.config.values,
            self.config.converting_failure,
        )
    }

    /// A streamed change event of the open transaction.
    fn event(
        &self,
        table: &Arc<TableSchema>,
        op: Op,
        lsn: Lsn,
        images: Images,
    ) -> Result<ChangeEvent> {
        let tx = self.open_tx()?;
        let source = self.source.info(
            tx.commit_time_us,
            None,
            self.progress.last_commit_lsn(),
            lsn,
            Some(tx.xid as i64),
            tx.origin.as_ref(),
        );
        Ok(ChangeEvent {
            table: table.descriptor.clone(),
            op,
            key: images.key,
            old_key: images.old_key,
            before: images.before.map(|b| table.value_row(b)),
            after: images.after.map(|a| table.value_row(a)),
            source,
        })
    }

    /// Sends a streamed change event in the open transaction's unit and counts it.
    async fn emit_change(&mut self, ev: ChangeEvent) -> Result<()> {
        let tx = self.open_tx()?;
        let (token, commit_time_us) = (tx.unit.token(), tx.commit_time_us);
        let op = ev.op;
        if self.incremental.running() {
            let table = format!("{}.{}", ev.table.schema, ev.table.table);
            for key in [&ev.key, &ev.old_key].into_iter().flatten() {
                self.incremental.streamed(&table, key);
            }
        }
        self.emit(ev, token).await?;
        self.counters.add_change_event(Some(op), commit_time_us);
        Ok(())
    }
}
