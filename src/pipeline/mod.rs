//! The pipeline: wires the source (PostgreSQL), the event model, transforms, the converter,
//! the Kafka sink and the ack tracker together, and runs one connector until it stops.
//!
//! Start-up, in order: check the server (wal_level), create or align the publication, look
//! up the slot, read the offset file, decide whether to snapshot (`snapshot.mode`), create the
//! slot if missing (exporting its snapshot), take the snapshot on that exported snapshot and
//! wait until Kafka has acknowledged every snapshot record, then stream from the slot.
//!
//! While streaming, the replication reader ([`crate::pg::stream`]) owns the socket; this
//! module's processing loop turns messages into records, produces them, and reports
//! transactions to the ack tracker. The flushable LSN moves only over fully acknowledged
//! transactions, so a crash anywhere leads to redelivery, never loss.

mod validate;

pub use validate::validate_config;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_postgres::Client;

use crate::config::{ConnectorConfig, SnapshotMode};
use crate::convert::RecordConverter;
use crate::error::{Error, ErrorKind, HeartbeatAction, Result};
use crate::event::envelope::{change_records, message_record, message_value_schema, RecordOptions};
use crate::event::meta::{self, TransactionCounters};
use crate::event::{ChangeEvent, ConnectRecord, Op, SourceInfo, Value};
use crate::lsn::Lsn;
use crate::offsets::ack::{AckTracker, CommitInfo, TxSeq};
use crate::offsets::store::{OffsetStore, Offsets};
use crate::pg::pgoutput::{Message, OldTuple, Relation};
use crate::pg::relation::{self, Image, RelationCache, TableSchema};
use crate::pg::stream::{run_reader, QueueBytes, ReaderSettings, StreamEvent};
use crate::pg::wire::WireConnection;
use crate::pg::PG_EPOCH_OFFSET_MICROS;
use crate::pg::{setup, snapshot};
use crate::sink::kafka::KafkaSink;
use crate::transform::{apply_chain, build_chain, Stage};

/// How long a graceful stop waits for outstanding Kafka acknowledgements.
pub const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(30);
/// Target size of one snapshot fetch: rows per fetch shrink for wide rows.
pub const SNAPSHOT_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// How long start-up waits for a first answer from Kafka.
pub const KAFKA_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Counters of one run, for logs and tests.
#[derive(Debug, Default, Clone, Copy)]
pub struct RunStats {
    /// Snapshot rows emitted.
    pub snapshot_rows: u64,
    /// Change events emitted while streaming.
    pub change_events: u64,
    /// Records handed to Kafka.
    pub records: u64,
    /// Transactions processed.
    pub transactions: u64,
}

struct OpenTx {
    seq: TxSeq,
    xid: u32,
    commit_time_us: i64,
    origin: Option<(String, u64)>,
    /// Event counters for transaction metadata (`provide.transaction.metadata`).
    counters: TransactionCounters,
}

/// Heartbeat state: the topic and when the next scheduled heartbeat is due.
struct HeartbeatState {
    topic: Arc<str>,
    interval: Duration,
    action_query: Option<String>,
    /// The connection `heartbeat.action.query` runs on, opened at its first use; a
    /// connection of its own, as in Debezium, so that a slow or failing query does not
    /// touch the catalog lookups.
    action_conn: Option<Client>,
    next_due: tokio::time::Instant,
}

struct Processor {
    config: Arc<ConnectorConfig>,
    sql: Client,
    relations: RelationCache,
    record_opts: RecordOptions,
    transforms: Vec<Stage>,
    converter: RecordConverter,
    sink: KafkaSink,
    tracker: Arc<AckTracker>,
    name: Arc<str>,
    db: Arc<str>,
    tx: Option<OpenTx>,
    last_commit_lsn: Option<u64>,
    last_commit_time_us: Option<i64>,
    message_schema: Arc<crate::event::Schema>,
    /// The transaction metadata topic, when `provide.transaction.metadata` is on.
    transaction_topic: Option<Arc<str>>,
    heartbeat: Option<HeartbeatState>,
    /// The newest position up to which everything was processed with no transaction open
    /// (last commit end, or a keepalive's `wal_end` seen while idle): what an idle heartbeat
    /// may confirm.
    idle_position: u64,
    last_commit: CommitInfo,
    /// Table size of Debezium's per-transaction collection map, which only grows during a
    /// run (it decides the order of `data_collections`).
    tx_map_capacity: usize,
    stats: RunStats,
}

impl Processor {
    /// Produces the records of one change event for transaction `seq`.
    async fn emit(&mut self, ev: ChangeEvent, seq: TxSeq) -> Result<()> {
        let lsn = ev.source.lsn.unwrap_or(0);
        for mut record in change_records(ev, &self.record_opts) {
            self.add_transaction_block(&mut record, lsn);
            self.send_record(record, seq).await?;
        }
        Ok(())
    }

    /// With `provide.transaction.metadata`, counts a streamed change record that has a value
    /// (tombstones are not counted, as in Debezium) and fills its envelope's `transaction`
    /// block: id `<xid>:<lsn>`, total and per-table order.
    fn add_transaction_block(&mut self, record: &mut ConnectRecord, lsn: u64) {
        if self.transaction_topic.is_none() {
            return;
        }
        let (Some(tx), Some(table), Some(Value::Struct(fields))) = (
            self.tx.as_mut(),
            record.table.as_ref(),
            record.value.as_mut(),
        ) else {
            return;
        };
        let collection = format!("{}.{}", table.schema, table.table);
        let (total, order) = tx.counters.table_event(&collection);
        if let Some(slot) = fields.get_mut(3) {
            *slot = meta::transaction_block(meta::transaction_id(tx.xid, lsn), total, order);
        }
    }

    /// Emits a heartbeat when one is due (or when `force`), then runs
    /// `heartbeat.action.query`. Inside a transaction the heartbeat counts as one of its
    /// records; otherwise it is a unit of its own that completes at the idle position, so
    /// that its acknowledgement lets the slot advance, never past unacknowledged records.
    async fn heartbeat(&mut self, force: bool) -> Result<()> {
        let Some(hb) = self.heartbeat.as_mut() else {
            return Ok(());
        };
        let now = tokio::time::Instant::now();
        if !force {
            if now < hb.next_due {
                return Ok(());
            }
            hb.next_due = now + hb.interval;
        }
        let record = meta::heartbeat_record(
            &hb.topic,
            &self.config.topic_prefix,
            crate::event::envelope::now_nanos() / 1_000_000,
        );
        let query = hb.action_query.clone();
        match self.tx.as_ref().map(|t| t.seq) {
            Some(seq) => self.send_record(record, seq).await?,
            None => {
                let seq = self.tracker.begin();
                self.send_record(record, seq).await?;
                self.tracker.commit(
                    seq,
                    CommitInfo {
                        end_lsn: self.idle_position,
                        ..self.last_commit
                    },
                );
            }
        }
        tracing::debug!(lsn = %Lsn(self.idle_position), in_transaction = self.tx.is_some(), "heartbeat");
        if let Some(q) = query {
            self.heartbeat_action(&q).await?;
        }
        Ok(())
    }

    /// Runs `heartbeat.action.query` on the heartbeat connection (opened when first needed).
    /// What a failure does is Debezium 3.6.1's rule for PostgreSQL, from the classifier
    /// ([`crate::error::heartbeat_action`]): stop, restart, or log and go on streaming.
    async fn heartbeat_action(&mut self, query: &str) -> Result<()> {
        let Some(hb) = self.heartbeat.as_mut() else {
            return Ok(());
        };
        if hb.action_conn.as_ref().is_none_or(Client::is_closed) {
            hb.action_conn = Some(crate::pg::sql::connect(&self.config.database).await?);
        }
        let Some(conn) = hb.action_conn.as_ref() else {
            return Ok(());
        };
        let Err(e) = conn.batch_execute(query).await else {
            return Ok(());
        };
        let code = e.as_db_error().map(|d| d.code().code().to_string());
        match crate::error::heartbeat_action(code.as_deref()) {
            // Fatal whatever the code means on a data connection: Debezium's rule.
            HeartbeatAction::Stop => Err(Error::new(
                ErrorKind::Sql,
                format!(
                    "heartbeat.action.query failed: PostgreSQL error {}",
                    code.as_deref().unwrap_or("")
                ),
            )
            .with_source(e)),
            HeartbeatAction::Restart => Err(Error::connection(format!(
                "heartbeat.action.query failed (SQLSTATE {})",
                code.as_deref().unwrap_or("none: connection lost")
            ))
            .with_source(e)),
            HeartbeatAction::Continue => {
                tracing::warn!(
                    sqlstate = code.as_deref().unwrap_or(""),
                    "heartbeat.action.query failed; continuing, as Debezium does for this error"
                );
                Ok(())
            }
        }
    }

    /// Transforms, converts and produces one record for transaction `seq`.
    async fn send_record(&mut self, record: ConnectRecord, seq: TxSeq) -> Result<()> {
        if let Some(record) = apply_chain(&mut self.transforms, record)? {
            let kafka_record = self.converter.convert(&record);
            self.sink.send(&kafka_record, seq).await?;
            self.stats.records += 1;
        }
        Ok(())
    }

    async fn on_relation(&mut self, rel: Relation) -> Result<()> {
        if !self.config.filters.is_captured(&rel.namespace, &rel.name) {
            self.relations.insert(rel.id, None);
            return Ok(());
        }
        let published: Vec<(String, u32, i32)> = rel
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.type_oid, c.type_modifier))
            .collect();
        let oids: Vec<u32> = published.iter().map(|p| p.1).collect();
        let mut catalog = relation::read_table_catalog(
            &self.sql,
            rel.id,
            &oids,
            self.config.records.columns.needs_source_types(),
        )
        .await?;
        if catalog.columns.is_empty() {
            // The table is gone from the catalog (dropped after these changes were written):
            // fall back to the key flags of the Relation message, which are the replica
            // identity columns at the time of the change.
            tracing::warn!(
                relation = %format!("{}.{}", rel.namespace, rel.name),
                "table no longer exists in the catalog; using the replica identity of the Relation message as key, without NOT NULL or default information"
            );
            catalog.key = rel
                .columns
                .iter()
                .filter(|c| c.is_key)
                .map(|c| c.name.clone())
                .collect();
        }
        let table = relation::build_table(
            &self.config,
            rel.id,
            &rel.namespace,
            &rel.name,
            &published,
            &catalog,
        )?;
        tracing::debug!(relation = %table.full_name(), columns = table.columns.len(), key = table.key.len(), "relation");
        self.relations.insert(rel.id, Some(Arc::new(table)));
        Ok(())
    }

    fn table(&self, relation_id: u32) -> Result<Option<Arc<TableSchema>>> {
        match self.relations.get(&relation_id) {
            Some(t) => Ok(t.clone()),
            None => Err(Error::protocol(format!(
                "change for relation OID {relation_id} arrived before its Relation message"
            ))),
        }
    }

    fn source(&self, lsn: u64) -> Result<SourceInfo> {
        let tx = self
            .tx
            .as_ref()
            .ok_or_else(|| Error::protocol("row change outside a transaction"))?;
        let sequence = match self.last_commit_lsn {
            Some(c) => format!("[\"{c}\",\"{lsn}\"]"),
            None => format!("[null,\"{lsn}\"]"),
        };
        Ok(SourceInfo {
            name: self.name.clone(),
            db: self.db.clone(),
            ts_us: tx.commit_time_us,
            snapshot: None,
            sequence: Some(sequence),
            tx_id: Some(tx.xid as i64),
            lsn: Some(lsn),
            origin: tx.origin.as_ref().map(|o| o.0.clone()),
            origin_lsn: tx.origin.as_ref().map(|o| o.1),
        })
    }

    fn seq(&self) -> Result<TxSeq> {
        self.tx
            .as_ref()
            .map(|t| t.seq)
            .ok_or_else(|| Error::protocol("row change outside a transaction"))
    }

    async fn on_message(&mut self, lsn: u64, message: Message) -> Result<()> {
        let opts = self.config.values.clone();
        let failure = self.config.converting_failure;
        let skipped = self.config.skipped_operations;
        match message {
            Message::Begin {
                xid, commit_time, ..
            } => {
                if self.tx.is_some() {
                    return Err(Error::protocol(format!(
                        "BEGIN at LSN {} inside an open transaction",
                        Lsn(lsn)
                    )));
                }
                let commit_time_us = commit_time + PG_EPOCH_OFFSET_MICROS;
                let seq = self.tracker.begin();
                self.tx = Some(OpenTx {
                    seq,
                    xid,
                    commit_time_us,
                    origin: None,
                    counters: TransactionCounters::with_capacity(self.tx_map_capacity),
                });
                if let Some(topic) = self.transaction_topic.clone() {
                    let record = meta::begin_record(
                        &topic,
                        meta::transaction_id(xid, lsn),
                        commit_time_us.div_euclid(1000),
                    );
                    self.send_record(record, seq).await?;
                }
            }
            Message::Commit { end_lsn, .. } => {
                let tx = self
                    .tx
                    .take()
                    .ok_or_else(|| Error::protocol("COMMIT without BEGIN"))?;
                self.tx_map_capacity = tx.counters.capacity();
                if let Some(topic) = self.transaction_topic.clone() {
                    let record = meta::end_record(
                        &topic,
                        meta::transaction_id(tx.xid, lsn),
                        tx.commit_time_us.div_euclid(1000),
                        &tx.counters,
                    );
                    self.send_record(record, tx.seq).await?;
                }
                self.tracker.commit(
                    tx.seq,
                    CommitInfo {
                        end_lsn,
                        xid: tx.xid,
                        commit_time_us: tx.commit_time_us,
                    },
                );
                self.last_commit_lsn = Some(end_lsn);
                self.last_commit_time_us = Some(tx.commit_time_us);
                self.last_commit = CommitInfo {
                    end_lsn,
                    xid: tx.xid,
                    commit_time_us: tx.commit_time_us,
                };
                self.idle_position = self.idle_position.max(end_lsn);
                self.stats.transactions += 1;
            }
            Message::Origin { commit_lsn, name } => {
                if let Some(tx) = self.tx.as_mut() {
                    tx.origin = Some((name, commit_lsn));
                }
            }
            Message::Relation(rel) => self.on_relation(rel).await?,
            Message::Type { .. } => {}
            Message::Insert { relation_id, new } => {
                let Some(table) = self.table(relation_id)? else {
                    return Ok(());
                };
                if skipped.create {
                    return Ok(());
                }
                let after = table.row_from_tuple(&new, None, Image::New, &opts, failure)?;
                let key = table.key_of(&after);
                let ev = ChangeEvent {
                    table: table.descriptor.clone(),
                    op: Op::Create,
                    key,
                    old_key: None,
                    before: None,
                    after: Some(table.value_row(after)),
                    source: self.source(lsn)?,
                };
                let seq = self.seq()?;
                self.emit(ev, seq).await?;
                self.stats.change_events += 1;
            }
            Message::Update {
                relation_id,
                old,
                new,
            } => {
                let Some(table) = self.table(relation_id)? else {
                    return Ok(());
                };
                if skipped.update {
                    return Ok(());
                }
                let old_full = match &old {
                    Some(OldTuple::Full(t)) => Some(t),
                    _ => None,
                };
                let after = table.row_from_tuple(&new, old_full, Image::New, &opts, failure)?;
                let before = match &old {
                    Some(OldTuple::Full(t)) | Some(OldTuple::Key(t)) => {
                        Some(table.row_from_tuple(t, None, Image::Old, &opts, failure)?)
                    }
                    None => None,
                };
                let key = table.key_of(&after);
                let old_key = before
                    .as_ref()
                    .and_then(|b| table.key_of(b))
                    .filter(|k| Some(k) != key.as_ref());
                let ev = ChangeEvent {
                    table: table.descriptor.clone(),
                    op: Op::Update,
                    key,
                    old_key,
                    before: before.map(|b| table.value_row(b)),
                    after: Some(table.value_row(after)),
                    source: self.source(lsn)?,
                };
                let seq = self.seq()?;
                self.emit(ev, seq).await?;
                self.stats.change_events += 1;
            }
            Message::Delete { relation_id, old } => {
                let Some(table) = self.table(relation_id)? else {
                    return Ok(());
                };
                if skipped.delete {
                    return Ok(());
                }
                let tuple = match &old {
                    OldTuple::Full(t) | OldTuple::Key(t) => t,
                };
                let before = table.row_from_tuple(tuple, None, Image::Old, &opts, failure)?;
                let key = table.key_of(&before);
                let ev = ChangeEvent {
                    table: table.descriptor.clone(),
                    op: Op::Delete,
                    key,
                    old_key: None,
                    before: Some(table.value_row(before)),
                    after: None,
                    source: self.source(lsn)?,
                };
                let seq = self.seq()?;
                self.emit(ev, seq).await?;
                self.stats.change_events += 1;
            }
            Message::Truncate { relation_ids, .. } => {
                if skipped.truncate {
                    return Ok(());
                }
                for relation_id in relation_ids {
                    let Some(table) = self.table(relation_id)? else {
                        continue;
                    };
                    let ev = ChangeEvent {
                        table: table.descriptor.clone(),
                        op: Op::Truncate,
                        key: None,
                        old_key: None,
                        before: None,
                        after: None,
                        source: self.source(lsn)?,
                    };
                    let seq = self.seq()?;
                    self.emit(ev, seq).await?;
                    self.stats.change_events += 1;
                }
            }
            Message::LogicalMessage {
                transactional,
                lsn: message_lsn,
                prefix,
                content,
            } => {
                if !self.config.message_filters.is_captured(&prefix) {
                    return Ok(());
                }
                let content = crate::pg::types::encode_binary(content.to_vec(), opts.binary);
                // A non-transactional message is its own unit: Debezium records it as the last
                // completed position, which its own source.sequence already shows.
                if !transactional {
                    self.last_commit_lsn = Some(lsn);
                }
                let (seq, own_tx) = match (&self.tx, transactional) {
                    (Some(tx), true) => (tx.seq, false),
                    (None, true) => {
                        return Err(Error::protocol(
                            "transactional logical message outside a transaction",
                        ))
                    }
                    (_, false) => (self.tracker.begin(), true),
                };
                let source = SourceInfo {
                    name: self.name.clone(),
                    db: self.db.clone(),
                    ts_us: match (&self.tx, transactional) {
                        (Some(tx), true) => tx.commit_time_us,
                        _ => self
                            .last_commit_time_us
                            .unwrap_or_else(|| crate::event::envelope::now_nanos() / 1000),
                    },
                    snapshot: None,
                    sequence: Some(match self.last_commit_lsn {
                        Some(c) => format!("[\"{c}\",\"{lsn}\"]"),
                        None => format!("[null,\"{lsn}\"]"),
                    }),
                    tx_id: if transactional {
                        self.tx.as_ref().map(|t| t.xid as i64)
                    } else {
                        None
                    },
                    lsn: Some(lsn),
                    origin: None,
                    origin_lsn: None,
                };
                let mut record = message_record(
                    &self.config.topic_prefix,
                    &source,
                    &prefix,
                    content,
                    self.message_schema.clone(),
                );
                // A transactional message counts in the transaction metadata, each message a
                // data collection of its own (Debezium's LogicalDecodingMessageId).
                if let (true, Some(tx), Some(Value::Struct(fields))) = (
                    self.transaction_topic.is_some() && transactional,
                    self.tx.as_mut(),
                    record.value.as_mut(),
                ) {
                    let (total, order) = tx.counters.message_event();
                    if let Some(slot) = fields.get_mut(3) {
                        *slot = meta::transaction_block(
                            meta::transaction_id(tx.xid, lsn),
                            total,
                            order,
                        );
                    }
                }
                self.send_record(record, seq).await?;
                if own_tx {
                    let end_lsn = message_lsn.max(lsn);
                    self.tracker.commit(
                        seq,
                        CommitInfo {
                            end_lsn,
                            xid: 0,
                            commit_time_us: source.ts_us,
                        },
                    );
                    if self.tx.is_none() {
                        self.idle_position = self.idle_position.max(end_lsn);
                    }
                }
                self.stats.change_events += 1;
            }
        }
        Ok(())
    }

    /// Reads every captured table in the snapshot transaction and emits `op: r` events with
    /// Debezium's `source.snapshot` markers (first, first_in_data_collection, true,
    /// last_in_data_collection, last). The snapshot is one tracked "transaction" that
    /// completes at `position`.
    async fn snapshot(
        &mut self,
        snap_sql: &Client,
        exported: Option<&str>,
        position: Lsn,
        version_num: u32,
    ) -> Result<()> {
        let (snapshot_xid, start_us) = snapshot::begin(
            snap_sql,
            exported,
            self.config.snapshot_isolation_mode,
            version_num,
        )
        .await?;
        let tables = setup::captured_tables(snap_sql, &self.config).await?;
        tracing::info!(tables = tables.len(), lsn = %position, "snapshot started");
        let seq = self.tracker.begin();
        let opts = self.config.values.clone();
        let failure = self.config.converting_failure;
        // One event is held back so the markers of the last rows can be decided.
        let mut pending: Option<(ChangeEvent, bool, bool, usize)> = None; // event, first overall, first in table, table index
        let mut first_overall = true;
        for (ti, t) in tables.iter().enumerate() {
            let columns = relation::catalog_columns(snap_sql, t.oid).await?;
            let published: Vec<(String, u32, i32)> = columns
                .iter()
                .filter(|c| !c.generated)
                .map(|c| (c.name.clone(), c.type_oid, c.typmod))
                .collect();
            let oids: Vec<u32> = published.iter().map(|p| p.1).collect();
            let (types, source_types) = relation::column_types(
                snap_sql,
                &oids,
                self.config.records.columns.needs_source_types(),
            )
            .await?;
            let catalog = relation::TableCatalog {
                columns,
                key: relation::catalog_key(snap_sql, t.oid).await?,
                types,
                source_types,
            };
            let table = relation::build_table(
                &self.config,
                t.oid,
                &t.schema,
                &t.table,
                &published,
                &catalog,
            )?;
            let names: Vec<String> = published.iter().map(|p| p.0.clone()).collect();
            snapshot::open_cursor(snap_sql, &t.schema, &t.table, &names).await?;
            let mut first_in_table = true;
            let mut rows_in_table = 0u64;
            // Rows per fetch: snapshot.fetch.size, lowered for wide rows so that one batch
            // stays near SNAPSHOT_BATCH_BYTES.
            let mut fetch = self.config.snapshot_fetch_size.min(64);
            loop {
                let rows = snapshot::fetch(snap_sql, fetch, names.len()).await?;
                if rows.is_empty() {
                    break;
                }
                let bytes: usize = rows
                    .iter()
                    .flat_map(|r| r.iter())
                    .map(|v| v.as_ref().map_or(1, String::len))
                    .sum();
                let per_row = (bytes / rows.len()).max(1);
                fetch = (SNAPSHOT_BATCH_BYTES / per_row).clamp(1, self.config.snapshot_fetch_size);
                for row in rows {
                    let refs: Vec<Option<&str>> = row.iter().map(|v| v.as_deref()).collect();
                    let after = table.row_from_text(&refs, &opts, failure)?;
                    let key = table.key_of(&after);
                    let ev = ChangeEvent {
                        table: table.descriptor.clone(),
                        op: Op::Read,
                        key,
                        old_key: None,
                        before: None,
                        after: Some(table.value_row(after)),
                        source: SourceInfo {
                            name: self.name.clone(),
                            db: self.db.clone(),
                            ts_us: start_us,
                            snapshot: Some("true"),
                            sequence: Some(format!("[null,\"{}\"]", position.0)),
                            tx_id: Some(snapshot_xid),
                            lsn: Some(position.0),
                            origin: None,
                            origin_lsn: None,
                        },
                    };
                    if let Some((mut prev, f, fi, pti)) = pending.take() {
                        prev.source.snapshot = Some(marker(f, fi, false, pti != ti));
                        self.emit(prev, seq).await?;
                    }
                    pending = Some((ev, first_overall, first_in_table, ti));
                    first_overall = false;
                    first_in_table = false;
                    rows_in_table += 1;
                    self.stats.snapshot_rows += 1;
                }
            }
            snapshot::close_cursor(snap_sql).await?;
            tracing::info!(table = %table.full_name(), rows = rows_in_table, "snapshot of table done");
        }
        if let Some((mut prev, f, fi, _)) = pending.take() {
            prev.source.snapshot = Some(marker(f, fi, true, true));
            self.emit(prev, seq).await?;
        }
        snap_sql.batch_execute("COMMIT").await?;
        self.tracker.commit(
            seq,
            CommitInfo {
                end_lsn: position.0,
                xid: snapshot_xid as u32,
                commit_time_us: start_us,
            },
        );
        Ok(())
    }
}

/// Debezium's marker precedence: last > first > last_in_data_collection >
/// first_in_data_collection > true.
fn marker(first: bool, first_in_table: bool, last: bool, last_in_table: bool) -> &'static str {
    if last {
        "last"
    } else if first {
        "first"
    } else if last_in_table {
        "last_in_data_collection"
    } else if first_in_table {
        "first_in_data_collection"
    } else {
        "true"
    }
}

/// Runs the connector once, until `shutdown` flips to true (graceful stop) or an error.
pub async fn run(
    config: Arc<ConnectorConfig>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<RunStats> {
    let db = &config.database;
    let store = OffsetStore::new(&config.offset_file, &config.name, &config.topic_prefix);
    let offsets = store.load()?;
    let needs_stream = config.snapshot_mode != SnapshotMode::InitialOnly;

    let sql = crate::pg::sql::connect(db).await?;
    let server = setup::check_server(&sql, needs_stream).await?;
    setup::ensure_publication(&sql, &config).await?;
    setup::apply_replica_identity_autoset(&sql, &config).await?;
    setup::warn_replica_identity(&sql, &config).await?;

    let mut slot = setup::find_slot(&sql, &config.slot_name, server.version_num).await?;
    if let Some(s) = &slot {
        if s.plugin.as_deref() != Some("pgoutput")
            || s.database.as_deref() != Some(db.dbname.as_str())
        {
            return Err(Error::server(format!(
                "replication slot {} exists for plugin {} in database {}, not pgoutput in {}: use another slot.name",
                config.slot_name,
                s.plugin.as_deref().unwrap_or("?"),
                s.database.as_deref().unwrap_or("?"),
                db.dbname
            )));
        }
        if s.active {
            return Err(Error::connection(format!(
                "replication slot {} is in use by another replication connection (walsender PID {}; pg_stat_replication shows its client): stop the other consumer or use another slot.name",
                config.slot_name,
                s.active_pid.unwrap_or(0)
            )));
        }
    }
    let snapshot_done = offsets
        .as_ref()
        .map(Offsets::snapshot_done)
        .unwrap_or(false);
    let slot_lost = slot.as_ref().and_then(|s| s.wal_status.as_deref()) == Some("lost");
    if slot_lost {
        if config.snapshot_mode == SnapshotMode::WhenNeeded {
            tracing::warn!(slot = %config.slot_name, "replication slot was invalidated (wal_status=lost); snapshot.mode=when_needed: dropping it, re-creating it and taking a new snapshot");
            setup::drop_slot(&sql, &config.slot_name, 10).await?;
            slot = None;
        } else {
            return Err(Error::server(format!(
                "replication slot {} was invalidated by the server (wal_status=lost, usually max_slot_wal_keep_size): changes since its position are gone. Drop the slot and restart with snapshot.mode=when_needed (or always) to take a new snapshot",
                config.slot_name
            )));
        }
    }
    // A missing slot where the offsets show a stream position means changes since then are
    // gone: only modes that take a new snapshot may create a new slot and carry on.
    let had_position = offsets
        .as_ref()
        .is_some_and(|o| o.lsn.is_some() || o.lsn_commit.is_some() || o.lsn_proc.is_some());
    let position_lost = match config.snapshot_mode {
        SnapshotMode::Initial => snapshot_done,
        SnapshotMode::NoData => had_position,
        SnapshotMode::Always | SnapshotMode::WhenNeeded | SnapshotMode::InitialOnly => false,
    };
    if needs_stream && slot.is_none() && position_lost {
        return Err(Error::server(format!(
            "replication slot {} does not exist, but the offsets in {} say streaming had started: changes made since then may be lost. Use snapshot.mode=when_needed (or always) to take a new snapshot, or remove the offsets entry to start over",
            config.slot_name,
            store.path().display()
        )));
    }
    let take_snapshot = match config.snapshot_mode {
        SnapshotMode::Always => true,
        SnapshotMode::NoData => false,
        SnapshotMode::Initial | SnapshotMode::InitialOnly => !snapshot_done,
        SnapshotMode::WhenNeeded => !snapshot_done || slot.is_none(),
    };

    // Kafka first: fail fast on bad producer settings or unreachable brokers.
    let start_lsn_hint = slot
        .as_ref()
        .and_then(|s| s.confirmed_flush)
        .unwrap_or(Lsn::ZERO);
    let tracker = Arc::new(AckTracker::new(start_lsn_hint.0));
    let sink = KafkaSink::new(&config.kafka, tracker.clone())?;
    sink.check_connection(KAFKA_CONNECT_TIMEOUT).await?;

    let run_id = uuid::Uuid::new_v4().to_string();
    let mut processor = Processor {
        config: config.clone(),
        sql,
        relations: RelationCache::new(),
        record_opts: RecordOptions::new(
            config.tombstones_on_delete,
            config.extended_headers,
            &config.topic_prefix,
            &run_id,
        ),
        transforms: build_chain(&config.transforms)?,
        converter: RecordConverter::new(config.key_schemas_enable, config.value_schemas_enable),
        sink,
        tracker: tracker.clone(),
        name: Arc::from(config.topic_prefix.as_str()),
        db: Arc::from(db.dbname.as_str()),
        tx: None,
        last_commit_lsn: offsets.as_ref().and_then(|o| o.lsn_commit),
        last_commit_time_us: None,
        message_schema: message_value_schema(
            config.values.binary != crate::config::values::BinaryMode::Bytes,
        ),
        transaction_topic: config.records.transaction_metadata.then(|| {
            Arc::from(crate::event::sanitize_topic(
                &config.records.transaction_topic,
            ))
        }),
        heartbeat: config.records.heartbeat.as_ref().map(|h| HeartbeatState {
            topic: Arc::from(crate::event::sanitize_topic(&h.topic)),
            interval: h.interval,
            action_query: h.action_query.clone(),
            action_conn: None,
            next_due: tokio::time::Instant::now() + h.interval,
        }),
        idle_position: start_lsn_hint.0,
        tx_map_capacity: meta::JAVA_HASH_MAP_INITIAL_CAPACITY,
        last_commit: CommitInfo {
            end_lsn: start_lsn_hint.0,
            ..Default::default()
        },
        stats: RunStats::default(),
    };

    // Replication connection; create the slot when missing (exporting its snapshot).
    let mut repl = if needs_stream {
        Some(WireConnection::connect(db, true).await?)
    } else {
        None
    };
    let mut exported: Option<String> = None;
    let mut start_lsn = start_lsn_hint;
    let created_slot = repl.is_some() && slot.is_none();
    if let (Some(conn), None) = (repl.as_mut(), slot.as_ref()) {
        let r = conn
            .simple_query(&setup::create_slot_command(&config.slot_name))
            .await?;
        start_lsn = r
            .get(0, "consistent_point")
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                Error::protocol("CREATE_REPLICATION_SLOT returned no consistent point")
            })?;
        exported = r.get(0, "snapshot_name").map(str::to_string);
        tracker.idle(start_lsn.0);
        processor.idle_position = start_lsn.0;
        tracing::info!(slot = %config.slot_name, lsn = %start_lsn, "created replication slot");
    }

    if take_snapshot {
        store.save(&Offsets {
            lsn: Some(start_lsn.0),
            snapshot: Some("INITIAL".into()),
            snapshot_completed: false,
            ..Default::default()
        })?;
        let snap_sql = crate::pg::sql::connect(db).await?;
        let mut stop = shutdown.clone();
        let snapshot = tokio::select! {
            biased;
            _ = stop.changed() => {
                // The offsets still say the snapshot is in progress: the next start redoes it.
                tracing::info!(rows = processor.stats.snapshot_rows, "stop requested during the snapshot; it will be taken again on the next start");
                processor.sink.flush(SHUTDOWN_FLUSH_TIMEOUT).await;
                return Ok(processor.stats);
            }
            r = processor.snapshot(&snap_sql, exported.as_deref(), start_lsn, server.version_num) => r,
        };
        if let Err(e) = snapshot {
            // A slot this run created for a snapshot that cannot complete would only retain
            // WAL until someone runs pgcdc again: drop it; the next start creates a new one
            // and takes the snapshot again. (Retriable errors restart and reuse it.)
            if created_slot && !e.is_retriable() {
                drop(repl);
                drop(snap_sql);
                match setup::drop_slot(&processor.sql, &config.slot_name, 50).await {
                    Ok(()) => {
                        tracing::info!(slot = %config.slot_name, "snapshot failed: dropped the replication slot this run created, so it does not retain WAL")
                    }
                    Err(d) => {
                        tracing::warn!(slot = %config.slot_name, error = %d.one_line(), "snapshot failed and the replication slot this run created could not be dropped: it retains WAL until pgcdc runs again or it is dropped")
                    }
                }
            }
            return Err(e);
        }
        let snapshot_acked = tokio::select! {
            biased;
            _ = stop.changed() => {
                tracing::info!("stop requested while waiting for Kafka to acknowledge the snapshot; it will be taken again on the next start");
                return Ok(processor.stats);
            }
            ok = processor.sink.flush(Duration::MAX) => ok,
        };
        if !snapshot_acked {
            return Err(Error::kafka(tracker.failure().unwrap_or_else(|| {
                "snapshot records were not acknowledged".into()
            })));
        }
        store.save(&Offsets {
            lsn: Some(start_lsn.0),
            lsn_commit: Some(start_lsn.0),
            snapshot: Some("INITIAL".into()),
            snapshot_completed: true,
            ..Default::default()
        })?;
        tracing::info!(rows = processor.stats.snapshot_rows, lsn = %start_lsn, "snapshot completed and acknowledged");
        // Debezium sends a heartbeat (and runs the action query) as soon as a snapshot is
        // complete, whatever the interval.
        processor.idle_position = processor.idle_position.max(start_lsn.0);
        processor.heartbeat(true).await?;
        if repl.is_none() && processor.heartbeat.is_some() {
            processor.sink.flush(SHUTDOWN_FLUSH_TIMEOUT).await;
        }
    }
    let Some(mut repl) = repl else {
        tracing::info!("snapshot.mode=initial_only: snapshot done, not streaming");
        return Ok(processor.stats);
    };

    // Streaming.
    let r = repl.simple_query("SHOW wal_sender_timeout").await?;
    let wal_sender_timeout = r
        .rows
        .first()
        .and_then(|row| row.first())
        .and_then(|v| v.as_deref())
        .and_then(setup::parse_pg_duration_ms)
        .unwrap_or(60_000);
    let mut status_interval = config.status_update_interval;
    if wal_sender_timeout > 0 {
        status_interval =
            status_interval.min(Duration::from_millis((wal_sender_timeout / 2).max(1)));
    }
    // Logical decoding messages exist in pgoutput from PostgreSQL 14.
    let messages = server.version_num >= 140000;
    let command = setup::start_replication_command(
        &config.slot_name,
        start_lsn,
        &config.publication_name,
        messages,
    );
    let (reader, writer) = repl.start_replication(&command).await?;
    tracing::info!(slot = %config.slot_name, lsn = %start_lsn, status_interval_ms = status_interval.as_millis() as u64, "streaming started");

    let (tx, mut rx) = mpsc::channel::<StreamEvent>(config.max_queue_size);
    let bytes = Arc::new(QueueBytes::new(config.max_queue_bytes));
    let (reader_shutdown_tx, reader_shutdown_rx) = watch::channel(false);
    let (drained_tx, drained_rx) = watch::channel(false);
    let reader_task = tokio::spawn(run_reader(
        reader,
        writer,
        tx,
        bytes.clone(),
        tracker.clone(),
        ReaderSettings {
            status_interval,
            drain_timeout: SHUTDOWN_FLUSH_TIMEOUT,
        },
        reader_shutdown_rx,
        drained_rx,
    ));

    let mut offsets_tick = tokio::time::interval(config.offset_flush_interval);
    offsets_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut saved_commit: Option<u64> = None;
    let save_offsets = |saved: &mut Option<u64>, tracker: &AckTracker| -> Result<()> {
        if let Some(c) = tracker.last_completed() {
            if *saved != Some(c.end_lsn) {
                store.save(&Offsets {
                    lsn: Some(c.end_lsn),
                    lsn_proc: Some(c.end_lsn),
                    lsn_commit: Some(c.end_lsn),
                    tx_id: Some(c.xid as i64),
                    ts_usec: Some(c.commit_time_us),
                    message_type: Some("COMMIT".into()),
                    snapshot: None,
                    snapshot_completed: false,
                })?;
                *saved = Some(c.end_lsn);
            }
        }
        Ok(())
    };

    let result: Result<()> = async {
        loop {
            tokio::select! {
                biased;
                _ = shutdown.changed() => {
                    tracing::info!("stop requested");
                    return Ok(());
                }
                ev = rx.recv() => match ev {
                    None => return Ok(()),
                    Some(StreamEvent::Message { lsn, message, size }) => {
                        // Handling a message can wait on Kafka for as long as the broker is
                        // away; a stop request cancels it (the partial transaction is never
                        // confirmed, so it is sent again after a restart).
                        let r = tokio::select! {
                            biased;
                            _ = shutdown.changed() => {
                                tracing::info!("stop requested while waiting on Kafka");
                                bytes.release(size);
                                return Ok(());
                            }
                            r = processor.on_message(lsn, message) => r,
                        };
                        bytes.release(size);
                        r?;
                    }
                    Some(StreamEvent::Keepalive { wal_end }) => {
                        if processor.tx.is_none() {
                            tracker.idle(wal_end);
                            processor.idle_position = processor.idle_position.max(wal_end);
                        }
                    }
                },
                // Scheduled heartbeats while nothing arrives.
                _ = tokio::time::sleep_until(processor.heartbeat.as_ref().map_or_else(tokio::time::Instant::now, |h| h.next_due)), if processor.heartbeat.is_some() => {}
                _ = offsets_tick.tick() => save_offsets(&mut saved_commit, &tracker)?,
            }
            // Debezium checks for a due heartbeat after every event, commit and idle loop.
            if processor.heartbeat.is_some() {
                let r = tokio::select! {
                    biased;
                    _ = shutdown.changed() => {
                        tracing::info!("stop requested while sending a heartbeat");
                        return Ok(());
                    }
                    r = processor.heartbeat(false) => r,
                };
                r?;
            }
            if let Some(f) = tracker.failure() {
                return Err(Error::kafka(f));
            }
        }
    }
    .await;

    // Stop reading, drain acknowledgements (bounded), final status update.
    let _ = reader_shutdown_tx.send(true);
    let flushed = processor.sink.flush(SHUTDOWN_FLUSH_TIMEOUT).await;
    let _ = drained_tx.send(true);
    let reader_result = reader_task
        .await
        .map_err(|e| Error::protocol(format!("replication reader task failed: {e}")))?;
    save_offsets(&mut saved_commit, &tracker)?;
    if !flushed && result.is_ok() {
        tracing::warn!(
            in_flight = tracker.in_flight(),
            "stopped with records still unacknowledged; they will be sent again on restart"
        );
    }
    tracing::info!(
        flushed_lsn = %Lsn(tracker.flushable()),
        transactions = processor.stats.transactions,
        events = processor.stats.change_events,
        records = processor.stats.records,
        "stopped"
    );
    match (result, reader_result) {
        (Err(e), _) => Err(e),
        (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(())) => {
            if config.slot_drop_on_stop {
                setup::drop_slot(&processor.sql, &config.slot_name, 50).await?;
                // The position the offsets hold is gone with the slot: the next start begins
                // again, with a snapshot, instead of refusing to stream from a new slot.
                store.clear()?;
                tracing::info!(slot = %config.slot_name, offsets = %store.path().display(), "dropped the slot and this connector's offsets (slot.drop.on.stop=true)");
            }
            Ok(processor.stats)
        }
    }
}

/// Runs the connector, restarting it after retriable errors (`errors.max.retries`, with
/// `retriable.restart.connector.wait.ms` between attempts), until a graceful stop or a fatal
/// error.
pub async fn run_with_retries(
    config: Arc<ConnectorConfig>,
    shutdown: watch::Receiver<bool>,
) -> Result<RunStats> {
    let mut attempts: i64 = 0;
    loop {
        match run(config.clone(), shutdown.clone()).await {
            Ok(stats) => return Ok(stats),
            Err(e)
                if e.is_retriable()
                    && (config.errors_max_retries < 0 || attempts < config.errors_max_retries) =>
            {
                attempts += 1;
                tracing::warn!(
                    error = %e.one_line(),
                    attempt = attempts,
                    wait_ms = config.restart_wait.as_millis() as u64,
                    "retriable error; restarting the connector"
                );
                let mut sd = shutdown.clone();
                if *sd.borrow() {
                    return Ok(RunStats::default());
                }
                tokio::select! {
                    _ = tokio::time::sleep(config.restart_wait) => {}
                    // A stop requested while waiting to restart is a graceful stop: nothing
                    // is in flight.
                    _ = sd.changed() => return Ok(RunStats::default()),
                }
            }
            Err(e) => {
                if e.kind() == ErrorKind::Connection && config.errors_max_retries >= 0 {
                    return Err(e.with_context(&format!(
                        "giving up after {attempts} restart(s) (errors.max.retries)"
                    )));
                }
                return Err(e);
            }
        }
    }
}
