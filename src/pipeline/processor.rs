//! The processor: turns each pgoutput message into records and sends them to the sink, in
//! commit order, grouping them in units for the ack tracker.
//!
//! One [`Processor`] exists per run. It is generic over the [`Sink`] (Kafka in production,
//! memory in unit tests) and the [`Catalog`] (a SQL connection in production, a fixed table in
//! unit tests), so that everything from a decoded message to the bytes of a record can be
//! tested without PostgreSQL or Kafka.
//!
//! Invariants:
//! - every record of a transaction is sent under that transaction's unit, and the unit is
//!   committed (at the transaction's end LSN) only after the last of them was sent, so the
//!   confirmed LSN never passes an unacknowledged record;
//! - a keepalive's position is only recorded between transactions;
//! - messages of kinds the processor does not expect where they arrive (a change outside a
//!   transaction, a BEGIN inside one) are protocol errors, never skipped.
//!
//! Row changes are handled in [`super::changes`], logical decoding messages in
//! [`super::messages`], Relation messages in [`super::relations`], heartbeats in
//! [`super::heartbeat`] and the snapshot in [`super::snapshot`].

use std::collections::HashSet;
use std::sync::Arc;

use crate::config::values::BinaryMode;
use crate::config::ConnectorConfig;
use crate::convert::{KafkaBatch, RecordConverter};
use crate::error::{Error, Result};
use crate::event::envelope::{change_records, message_value_schema, RecordOptions};
use crate::event::meta::{self, TransactionCounters};
use crate::event::{
    sanitize_topic, topic_name_problem, ChangeEvent, ConnectRecord, Schema, SourceInfo, Value,
};
use crate::lsn::Lsn;
use crate::offsets::ack::{AckToken, AckTracker, CommitInfo};
use crate::pg::pgoutput::Message;
use crate::pg::relation::RelationCache;
use crate::pg::PG_EPOCH_OFFSET_MICROS;
use crate::registry::Registries;
use crate::sink::{Sink, Unit};
use crate::transform::{apply_chain, build_chain, Stage};

use super::fence::{FenceState, FenceStep};
use super::heartbeat::Heartbeat;
use super::progress::Progress;
use super::relations::Catalog;
use super::resume::{ResumeFilter, TxSkip};
use super::xmin::SlotXmin;
use super::Counters;

/// The transaction being processed: between its BEGIN and its COMMIT.
#[derive(Debug)]
pub(super) struct OpenTx {
    /// Its unit at the sink.
    pub(super) unit: Unit,
    pub(super) xid: u32,
    /// Commit time, µs since the Unix epoch.
    pub(super) commit_time_us: i64,
    /// Replication origin name and the commit LSN on the origin, from an Origin message.
    pub(super) origin: Option<(String, Lsn)>,
    /// Event counters for transaction metadata (`provide.transaction.metadata`).
    pub(super) counters: TransactionCounters,
    /// What of it was published before this run (see [`super::resume`]).
    pub(super) skip: TxSkip,
    /// A snapshot on an existing slot contains it and every transaction before it was
    /// published (see [`CommitInfo::before_snapshot`]).
    pub(super) before_snapshot: bool,
    /// The fence skips it (the snapshot's other pass publishes it): its unit only moves the
    /// confirmed position, as an idle unit (see [`CommitInfo::idle`]), and its end is never
    /// written to the offsets.
    pub(super) fenced_out: bool,
}

/// The `source` block's connector-wide fields, and the one place that builds source blocks.
#[derive(Debug, Clone)]
pub(super) struct SourceContext {
    /// `name`: the topic prefix.
    name: Arc<str>,
    /// `db`: the database name.
    db: Arc<str>,
    /// The slot's `catalog_xmin` for streamed events (`xmin.fetch.interval.ms`).
    xmin: Option<Arc<SlotXmin>>,
}

impl SourceContext {
    /// The source block of an event at `lsn`: `sequence` is `[last_commit, lsn]` as decimal
    /// strings (`null` first when nothing was committed yet).
    pub(super) fn info(
        &self,
        ts_us: i64,
        snapshot: Option<&'static str>,
        last_commit: Option<Lsn>,
        lsn: Lsn,
        tx_id: Option<i64>,
        origin: Option<&(String, Lsn)>,
    ) -> SourceInfo {
        let sequence = match last_commit {
            Some(c) => format!("[\"{}\",\"{}\"]", c.0, lsn.0),
            None => format!("[null,\"{}\"]", lsn.0),
        };
        SourceInfo {
            name: self.name.clone(),
            db: self.db.clone(),
            ts_us,
            snapshot,
            sequence: Some(sequence),
            tx_id,
            lsn: Some(lsn),
            origin: origin.map(|o| o.0.clone()),
            origin_lsn: origin.map(|o| o.1),
            xmin: match snapshot {
                None => self.xmin.as_ref().and_then(|x| x.get()),
                Some(_) => None,
            },
        }
    }
}

/// Where a record goes after it is built: the transform chain, then the converters.
#[derive(Debug)]
pub(super) struct RecordOutput {
    pub(super) options: RecordOptions,
    transforms: Vec<Stage>,
    converter: RecordConverter,
    /// The schema registries of Avro converters.
    registries: Registries,
    /// Topics already checked against Kafka's naming rules.
    checked_topics: HashSet<Arc<str>>,
}

impl RecordOutput {
    /// The output of `config`'s records with `options`: its transform chain, converters and
    /// registry clients. Errors: a transform that cannot be built.
    fn new(config: &ConnectorConfig, options: RecordOptions) -> Result<Self> {
        Ok(RecordOutput {
            options,
            transforms: build_chain(&config.transforms)?,
            converter: RecordConverter::with(&config.key_converter, &config.value_converter),
            registries: Registries::new(&config.key_converter, &config.value_converter),
            checked_topics: HashSet::new(),
        })
    }

    /// A second output with the same options and its own transforms, converters and registry
    /// clients, for a task that converts records in parallel (the parallel snapshot's
    /// readers). The records it makes are the bytes this one would make.
    pub(super) fn fork(&self, config: &ConnectorConfig) -> Result<Self> {
        Self::new(config, self.options.clone())
    }

    /// Runs `record` through the transform chain, checks its topic and obtains the registry
    /// ids its schemas lack. `None`: a transform dropped it. Errors: a transform's, a topic
    /// Kafka refuses, the registry's.
    pub(super) async fn prepare(
        &mut self,
        record: ConnectRecord,
        counters: &Counters,
    ) -> Result<Option<ConnectRecord>> {
        let Some(record) = apply_chain(&mut self.transforms, record)? else {
            return Ok(None);
        };
        if self.check_topic(&record)? {
            counters.add_topic(&record.topic);
        }
        while let Some(request) = self.converter.missing_schema(&record)? {
            let obtained = self
                .registries
                .schema_id(request.is_key, &request.subject, &request.schema)
                .await?;
            if let Some(latest) = &obtained.latest_schema {
                self.converter.check_latest(&request, obtained.id, latest)?;
            }
            self.converter.set_schema_id(&record, request, obtained.id);
            counters.add_registry_call();
        }
        Ok(Some(record))
    }

    /// [`Self::prepare`], then the record's bytes, appended to `batch` (nothing when a
    /// transform dropped it).
    pub(super) async fn render(
        &mut self,
        record: ConnectRecord,
        counters: &Counters,
        batch: &mut KafkaBatch,
    ) -> Result<()> {
        if let Some(record) = self.prepare(record, counters).await? {
            batch.push(&self.converter.convert(&record)?, &record.topic);
        }
        Ok(())
    }

    /// Whether `record`'s topic is new to this run (`true` the first time). Refuses a record whose topic Kafka would refuse (too long, a character it does not
    /// allow), naming the table it came from: a config error, never a cut name that could
    /// merge two tables' records.
    fn check_topic(&mut self, record: &ConnectRecord) -> Result<bool> {
        if self.checked_topics.contains(&record.topic) {
            return Ok(false);
        }
        if let Some(problem) = topic_name_problem(&record.topic) {
            let source = match &record.table {
                Some(t) => format!("the records of table {}.{}", t.schema, t.table),
                None => "records".to_string(),
            };
            return Err(Error::config(format!(
                "{source} would go to a topic Kafka refuses: {problem}. Shorten topic.prefix (or the transaction, heartbeat or routing topic settings), or route the table to another topic with a transform"
            )));
        }
        self.checked_topics.insert(record.topic.clone());
        Ok(true)
    }
}

/// Where the processor starts: the slot's confirmed position and the offsets' last commit.
#[derive(Debug, Clone, Default)]
pub struct ProcessorStart {
    /// The position the slot resumes from (its confirmed flush LSN, or the new slot's
    /// consistent point).
    pub resume_lsn: Lsn,
    /// `lsn_commit` of the stored offsets: the first element of `source.sequence` until the
    /// first commit of this run.
    pub last_commit_lsn: Option<Lsn>,
    /// What the stored offsets say was already published.
    pub resume: ResumeFilter,
    /// An incremental snapshot the stored offsets say is running.
    pub incremental: Option<crate::offsets::incremental::IncrementalProgress>,
    /// The tables an interrupted initial snapshot completed, when this run takes it again on
    /// the same slot (see [`crate::offsets::initial`]).
    pub initial: Option<crate::offsets::initial::InitialProgress>,
    /// The server's `server_version_num`.
    pub server_version: u32,
}

/// Turns pgoutput messages into records sent to a [`Sink`].
pub struct Processor<S: Sink, C: Catalog> {
    pub(super) config: Arc<ConnectorConfig>,
    pub(super) catalog: C,
    pub(super) relations: RelationCache,
    pub(super) output: RecordOutput,
    pub(super) sink: S,
    pub(super) source: SourceContext,
    pub(super) tx: Option<OpenTx>,
    pub(super) progress: Progress,
    /// The transaction metadata topic, when `provide.transaction.metadata` is on.
    pub(super) transaction_topic: Option<Arc<str>>,
    pub(super) heartbeat: Option<Heartbeat>,
    /// Value schema of logical decoding message records.
    pub(super) message_schema: Arc<Schema>,
    pub(super) counters: Arc<Counters>,
    /// Skips what was published before this run.
    pub(super) resume: ResumeFilter,
    /// The fence of a snapshot on an existing slot (see [`super::fence`]).
    pub(super) fence: FenceState,
    /// Signals' incremental snapshot (see [`super::incremental`]).
    pub(super) incremental: super::incremental::Incremental,
    /// A blocking snapshot requested by a signal (see [`super::blocking`]).
    pub(super) blocking: super::blocking::Blocking,
    /// The server's `server_version_num`.
    pub(super) server_version: u32,
    /// The tables the initial snapshot in progress has completed, in this run or before it
    /// (see [`crate::offsets::initial`]): they are not read again, and the offsets of every
    /// unit published ahead of the snapshot carry them.
    pub(super) initial_progress: Option<Arc<crate::offsets::initial::InitialProgress>>,
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// A processor for `config` that reads the catalog through `catalog`, sends to `sink`
    /// (its ack tracker is the one whose LSN is confirmed) and counts into `counters`.
    pub fn new(
        config: Arc<ConnectorConfig>,
        catalog: C,
        sink: S,
        counters: Arc<Counters>,
        start: ProcessorStart,
    ) -> Result<Self> {
        let run_id = uuid::Uuid::new_v4().to_string();
        let options = RecordOptions::new(
            config.tombstones_on_delete,
            config.extended_headers,
            &config.topic_prefix,
            &run_id,
        );
        let output = RecordOutput::new(&config, options)?;
        let records = &config.records;
        Ok(Processor {
            catalog,
            relations: RelationCache::new(),
            output,
            sink,
            source: SourceContext {
                name: Arc::from(config.topic_prefix.as_str()),
                db: Arc::from(config.database.dbname.as_str()),
                xmin: None,
            },
            tx: None,
            progress: Progress::new(start.resume_lsn, start.last_commit_lsn),
            transaction_topic: records
                .transaction_metadata
                .then(|| Arc::from(sanitize_topic(&records.transaction_topic))),
            heartbeat: Heartbeat::new(&config),
            message_schema: message_value_schema(config.values.binary != BinaryMode::Bytes),
            counters,
            resume: start.resume,
            fence: FenceState::default(),
            incremental: super::incremental::Incremental::restored(start.incremental),
            blocking: Default::default(),
            server_version: start.server_version,
            initial_progress: start.initial.map(Arc::new),
            config,
        })
    }

    /// Handles one decoded message that arrived in the XLogData starting at `lsn`.
    pub async fn handle(&mut self, lsn: Lsn, message: Message) -> Result<()> {
        if self.fence_reached() || self.already_published(lsn, &message) {
            return Ok(());
        }
        match message {
            Message::Begin {
                xid,
                commit_time,
                final_lsn,
            } => self.begin(lsn, final_lsn, xid, commit_time).await,
            Message::Commit { end_lsn, .. } => self.commit(lsn, end_lsn).await,
            Message::Origin { commit_lsn, name } => {
                if let Some(tx) = self.tx.as_mut() {
                    tx.origin = Some((name, commit_lsn));
                }
                Ok(())
            }
            Message::Relation(rel) => self.relation(rel).await,
            Message::Type { .. } => Ok(()),
            Message::Insert { relation_id, new } => self.insert(lsn, relation_id, new).await,
            Message::Update {
                relation_id,
                old,
                new,
            } => self.update(lsn, relation_id, old, new).await,
            Message::Delete { relation_id, old } => self.delete(lsn, relation_id, old).await,
            Message::Truncate { relation_ids, .. } => self.truncate(lsn, relation_ids).await,
            Message::LogicalMessage {
                transactional,
                lsn: message_lsn,
                prefix,
                content,
            } => {
                self.logical_message(lsn, message_lsn, transactional, prefix, content)
                    .await
            }
        }
    }

    /// Whether `message` is a change (or logical message) the stored offsets say was
    /// published before this run; counts it when so.
    fn already_published(&mut self, lsn: Lsn, message: &Message) -> bool {
        let skipped = match message {
            Message::Insert { .. }
            | Message::Update { .. }
            | Message::Delete { .. }
            | Message::Truncate { .. } => self.tx.as_ref().is_some_and(|tx| tx.skip.skips(lsn)),
            Message::LogicalMessage {
                transactional: true,
                ..
            } => self.tx.as_ref().is_some_and(|tx| tx.skip.skips(lsn)),
            Message::LogicalMessage {
                transactional: false,
                ..
            } => {
                self.tx.is_none()
                    && (self.fence_skips_outside_transaction(lsn)
                        || self.resume.skips_outside_transaction(lsn))
            }
            _ => false,
        };
        if skipped && self.tx.is_some() {
            self.resume.count_skipped_change();
        }
        skipped
    }

    /// Records a keepalive's `wal_end`: between transactions, everything before it has been
    /// processed, so it may be confirmed once nothing is in flight. It is confirmed to the
    /// slot but not written to the offsets: as an offsets position it would tell Debezium
    /// (after a switch back) that the changes before it were published, and a transaction
    /// still open on the server at `wal_end` has changes before it that commit later.
    pub fn keepalive(&mut self, wal_end: Lsn) {
        if self.tx.is_none() {
            self.fence_idle(wal_end);
            self.sink.tracker().idle(wal_end);
            self.note_idle_position(wal_end);
        }
    }

    /// Gives streamed events the slot's `catalog_xmin` from now on (`xmin.fetch.interval.ms`).
    pub fn set_slot_xmin(&mut self, xmin: SlotXmin) {
        self.source.xmin = Some(Arc::new(xmin));
    }

    /// The slot is about to be streamed again from its confirmed position (see
    /// [`super::progress::Progress::stream_restarted`]).
    pub fn stream_restarted(&mut self) {
        self.progress.stream_restarted();
    }

    /// Moves the idle position (what an idle heartbeat confirms) forward to `lsn`.
    pub fn note_idle_position(&mut self, lsn: Lsn) {
        self.progress.idle(lsn);
    }

    /// The sink.
    pub fn sink(&mut self) -> &mut S {
        &mut self.sink
    }

    /// The catalog.
    pub fn catalog(&self) -> &C {
        &self.catalog
    }

    /// The ack tracker the sink reports to.
    pub fn tracker(&self) -> &Arc<AckTracker> {
        self.sink.tracker()
    }

    /// `true` while a transaction is open (between BEGIN and COMMIT).
    pub fn in_transaction(&self) -> bool {
        self.tx.is_some()
    }

    async fn begin(&mut self, lsn: Lsn, final_lsn: Lsn, xid: u32, commit_time: i64) -> Result<()> {
        if self.tx.is_some() {
            return Err(Error::protocol(format!(
                "BEGIN at LSN {lsn} inside an open transaction"
            )));
        }
        let commit_time_us = commit_time + PG_EPOCH_OFFSET_MICROS;
        let step = self.fence_begin(final_lsn, xid);
        let skip = match step {
            FenceStep::End => return Ok(()),
            FenceStep::Skip => TxSkip::All,
            FenceStep::Keep | FenceStep::Passed => self.resume.on_begin(final_lsn, xid),
        };
        let before_snapshot = step == FenceStep::Keep && self.fence_prefix_unbroken();
        let unit = Unit::open(&mut self.sink);
        let token = unit.token();
        self.tx = Some(OpenTx {
            unit,
            xid,
            commit_time_us,
            origin: None,
            counters: TransactionCounters::with_capacity(self.progress.tx_map_capacity()),
            skip,
            before_snapshot,
            fenced_out: step == FenceStep::Skip,
        });
        if let (Some(topic), false) = (self.transaction_topic.clone(), skip.skips_begin()) {
            let id = meta::transaction_id(xid, lsn);
            let record = meta::begin_record(&topic, id, commit_time_us.div_euclid(1000));
            self.send_record(record, token).await?;
        }
        Ok(())
    }

    async fn commit(&mut self, lsn: Lsn, end_lsn: Lsn) -> Result<()> {
        let tx = self
            .tx
            .take()
            .ok_or_else(|| Error::protocol("COMMIT without BEGIN"))?;
        if let (Some(topic), false) = (self.transaction_topic.clone(), tx.skip.skips_end()) {
            let record = meta::end_record(
                &topic,
                meta::transaction_id(tx.xid, lsn),
                tx.commit_time_us.div_euclid(1000),
                &tx.counters,
            );
            self.send_record(record, tx.unit.token()).await?;
        }
        let info = CommitInfo {
            end_lsn,
            xid: tx.xid,
            commit_time_us: tx.commit_time_us,
            completes_snapshot: false,
            idle: tx.fenced_out,
            before_snapshot: tx.before_snapshot,
            incremental: self.incremental.progress(),
            initial: if tx.before_snapshot {
                self.initial_progress.clone()
            } else {
                None
            },
        };
        if tx.before_snapshot {
            // Published ahead of the snapshot with all before it: confirmable once acknowledged.
            self.sink.tracker().raise_hold(end_lsn);
        }
        tx.unit.commit(&mut self.sink, info.clone());
        self.resume.on_commit(end_lsn);
        self.progress.committed(info, tx.counters.capacity());
        self.counters.add_transaction(end_lsn);
        Ok(())
    }

    /// The open transaction, or a protocol error naming what arrived outside one.
    pub(super) fn open_tx(&self) -> Result<&OpenTx> {
        self.tx
            .as_ref()
            .ok_or_else(|| Error::protocol("row change outside a transaction"))
    }

    /// Sends the records of one change event as part of unit `token`.
    pub(super) async fn emit(&mut self, ev: ChangeEvent, token: AckToken) -> Result<()> {
        let lsn = ev.source.lsn.unwrap_or(Lsn::ZERO);
        for mut record in change_records(ev, &self.output.options) {
            self.add_transaction_block(&mut record, lsn);
            self.send_record(record, token).await?;
        }
        Ok(())
    }

    /// With `provide.transaction.metadata`, counts a streamed change record that has a value
    /// (tombstones are not counted, as in Debezium) and fills its envelope's `transaction`
    /// block: id `<xid>:<lsn>`, total and per-table order.
    fn add_transaction_block(&mut self, record: &mut ConnectRecord, lsn: Lsn) {
        if self.transaction_topic.is_none() || !matches!(record.value, Some(Value::Struct(_))) {
            return;
        }
        let (Some(tx), Some(table)) = (self.tx.as_mut(), record.table.as_ref()) else {
            return;
        };
        let collection = format!("{}.{}", table.schema, table.table);
        let (total, order) = tx.counters.table_event(&collection);
        let block = meta::transaction_block(meta::transaction_id(tx.xid, lsn), total, order);
        meta::set_transaction_block(record, block);
    }

    /// Waits until Kafka has acknowledged every record sent so far. Errors: the sink's first
    /// delivery failure, or `unacknowledged` (a Kafka error) when the sink gave up without one.
    pub(super) async fn wait_acknowledged(&mut self, unacknowledged: &str) -> Result<()> {
        if self.sink.flush(std::time::Duration::MAX).await {
            return Ok(());
        }
        Err(match self.sink.failure() {
            Some(f) => f.copy(),
            None => Error::kafka(unacknowledged),
        })
    }

    /// Transforms, converts and sends one record as part of unit `token`.
    pub(super) async fn send_record(
        &mut self,
        record: ConnectRecord,
        token: AckToken,
    ) -> Result<()> {
        if self.counters.take_topics_reset() {
            // `PUT .../topics/reset`: each topic is noted again at its next record.
            self.output.checked_topics.clear();
        }
        if let Some(record) = self.output.prepare(record, &self.counters).await? {
            let kafka_record = self.output.converter.convert(&record)?;
            self.sink.send(&kafka_record, token).await?;
            self.counters.add_record();
        }
        Ok(())
    }
}
