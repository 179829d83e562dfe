//! The initial snapshot: every captured table read in one snapshot transaction (on the
//! snapshot the new slot exported, so snapshot and stream meet with no gap and no overlap)
//! and emitted as `op: r` events with Debezium's `source.snapshot` markers.
//!
//! Before the snapshot starts, the offsets say a snapshot is in progress; only once Kafka has
//! acknowledged every snapshot record do they say it completed. On the way, at most every
//! `offset.flush.interval.ms`, a checkpoint at the end of a table waits until Kafka has
//! acknowledged everything sent (exactly-once: commits the Kafka transaction) and records the
//! tables completed so far in the offsets (see [`crate::offsets::initial`]). A stop request or
//! a crash means the next start takes the snapshot again on the same slot, reading only the
//! tables not recorded. A fatal error drops the slot this run created, which would otherwise
//! only retain WAL (and with it the recorded tables' later changes: the next start then reads
//! every table again).

use std::sync::Arc;

use tokio::sync::watch;
use tokio_postgres::Client;

use crate::config::{ConnectorConfig, SnapshotIsolationMode, SnapshotTableOrder};
use crate::error::{Error, Result};
use crate::event::{ChangeEvent, Op};
use crate::lsn::Lsn;
use crate::offsets::ack::CommitInfo;
use crate::offsets::initial::InitialProgress;
use crate::offsets::store::Offsets;
use crate::pg::relation::{self, TableSchema};
use crate::pg::setup::{self, CatalogTable};
use crate::pg::snapshot as cursor;
use crate::sink::{Sink, Unit};

use super::notifications;
use super::offsets::OffsetSaver;
use super::processor::Processor;
use super::relations::Catalog;
use super::startup::{SnapshotJob, Started};
use super::table_ranges::{RangeProgress, TablePlan};
use super::SHUTDOWN_FLUSH_TIMEOUT;

/// Takes the initial snapshot of a started run and waits for Kafka to acknowledge it.
/// Returns `false` when a stop request ended it (the next start takes it again).
///
/// On a slot this run created, the snapshot is the one the slot exported and completes here.
/// On a slot that already existed and will be streamed, the snapshot is fenced (see
/// [`super::fence`]) and is recorded complete later, by the stream. The isolation modes that
/// give each statement its own snapshot cannot be fenced: they keep the old way, and say so.
pub async fn run<S: Sink>(
    started: &mut Started<S>,
    job: &SnapshotJob,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<bool> {
    if job.exported.is_none() && started.replication.is_some() {
        if one_snapshot(started.processor.config.snapshot_isolation_mode) {
            log_resumption(started.processor.initial_progress.as_deref());
            return super::fence::run(started, shutdown).await;
        }
        tracing::warn!(slot = %started.processor.config.slot_name,
            "snapshot.isolation.mode gives each table its own snapshot, so a snapshot on an existing slot cannot be put in commit order with the slot's changes: rows may arrive again after the snapshot in an older version. Use repeatable_read or serializable to keep per-key order");
    }
    if started.processor.initial_progress.take().is_some() {
        tracing::info!(
            "the offsets list tables an interrupted snapshot completed, but this snapshot cannot be put in commit order with the slot's changes: every table is read again"
        );
    }
    run_initial(started, job, shutdown).await
}

/// Logs that a snapshot resumes after the tables an interrupted one completed.
fn log_resumption(progress: Option<&InitialProgress>) {
    if let Some(p) = progress.filter(|p| !p.completed_tables.is_empty()) {
        tracing::info!(
            completed_tables = p.completed_tables.len(),
            "resuming the interrupted initial snapshot: the tables it completed are not read again"
        );
    }
}

/// Whether `snapshot.isolation.mode` reads every table in one snapshot.
fn one_snapshot(mode: SnapshotIsolationMode) -> bool {
    matches!(
        mode,
        SnapshotIsolationMode::Serializable | SnapshotIsolationMode::RepeatableRead
    )
}

/// Records in the offsets that a snapshot at `position` is in progress.
pub(super) async fn save_in_progress<S: Sink>(
    started: &mut Started<S>,
    position: Lsn,
) -> Result<()> {
    started
        .offsets
        .save(&Offsets {
            lsn: Some(position),
            snapshot: Some("INITIAL".into()),
            snapshot_completed: false,
            initial: started.processor.initial_progress.as_deref().cloned(),
            ..Default::default()
        })
        .await
}

/// The snapshot on a slot this run created (or that is not streamed afterwards).
async fn run_initial<S: Sink>(
    started: &mut Started<S>,
    job: &SnapshotJob,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<bool> {
    let snap_sql = crate::pg::sql::connect_for_snapshot(&started.processor.config.database).await?;
    let version = started.server.version_num;
    let isolation = started.processor.config.snapshot_isolation_mode;
    let exported = job.exported.as_deref();
    let tx = cursor::begin(&snap_sql, exported, isolation, version).await?;
    // Without a slot (`initial_only`), the snapshot's records carry the server's WAL position
    // when it began, as Debezium's do; on a slot, the slot's consistent point.
    let position = match started.replication {
        Some(_) => started.start_lsn,
        None => setup::current_wal_lsn(&snap_sql).await?,
    };
    save_in_progress(started, position).await?;
    // A snapshot on the slot it created can be resumed on that slot, fenced.
    let checkpoints = exported.is_some() && started.replication.is_some();
    let read = read_tables(
        started,
        &snap_sql,
        tx,
        position,
        (true, checkpoints),
        shutdown,
    );
    let read = read.await?;
    drop(snap_sql);
    match read {
        None => return Ok(false),
        Some(Err(e)) => {
            drop_created_slot(started, job, &e).await;
            return Err(e);
        }
        Some(Ok(())) => {}
    }
    if !wait_acknowledged(started, shutdown).await? {
        return Ok(false);
    }
    complete(started, position).await?;
    Ok(true)
}

/// Reads every table in the open snapshot transaction `tx` (xid, start time), unless a stop
/// request comes first (`None`: the offsets still say the snapshot is in progress, so the
/// next start redoes it). `completes`: the unit of the tables completes the snapshot (not
/// when a later marker does, see [`super::fence`]); `checkpoints`: completed tables are
/// recorded in the offsets on the way.
pub(super) async fn read_tables<S: Sink>(
    started: &mut Started<S>,
    snap_sql: &Client,
    tx: (i64, i64),
    position: Lsn,
    (completes, checkpoints): (bool, bool),
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Option<Result<()>>> {
    let processor = &mut started.processor;
    let saver = checkpoints.then_some(&mut started.offsets);
    tokio::select! {
        biased;
        _ = shutdown.changed() => {
            tracing::info!(rows = processor.counters.snapshot().snapshot_rows,
                "stop requested during the snapshot; the next start takes it again from its last checkpoint");
            processor.counters.snapshot_ended(false);
            processor.log_snapshot_aborted();
            processor.sink().flush(SHUTDOWN_FLUSH_TIMEOUT).await;
            Ok(None)
        }
        r = processor.snapshot_tables(snap_sql, tx, position, completes, saver) => {
            if r.is_err() {
                processor.counters.snapshot_ended(false);
                processor.log_snapshot_aborted();
            }
            Ok(Some(r))
        }
    }
}

/// After a fatal snapshot error: a slot this run created would only retain WAL until someone
/// runs pgcdc again, so it is dropped; the next start creates a new one and takes the
/// snapshot again. (Retriable errors restart and reuse it.)
async fn drop_created_slot<S: Sink>(started: &mut Started<S>, job: &SnapshotJob, e: &Error) {
    if !job.created_slot || e.is_retriable() {
        return;
    }
    // The slot is active on the replication connection that created it: close that first.
    started.replication = None;
    let slot = &started.processor.config.slot_name;
    match setup::drop_slot(started.processor.catalog(), slot, 50).await {
        Ok(()) => {
            tracing::info!(slot = %slot,
                "snapshot failed: dropped the replication slot this run created, so it does not retain WAL")
        }
        Err(d) => {
            tracing::warn!(slot = %slot, error = %d.one_line(),
                "snapshot failed and the replication slot this run created could not be dropped: it retains WAL until pgcdc runs again or it is dropped")
        }
    }
}

/// Waits, without limit, until Kafka has acknowledged every snapshot record. `Ok(false)`: a
/// stop request came first.
pub(super) async fn wait_acknowledged<S: Sink>(
    started: &mut Started<S>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<bool> {
    let processor = &mut started.processor;
    let acked = tokio::select! {
        biased;
        _ = shutdown.changed() => {
            tracing::info!(
                "stop requested while waiting for Kafka to acknowledge the snapshot; the next start takes it again from its last checkpoint");
            return Ok(false);
        }
        ok = processor.sink().flush(std::time::Duration::MAX) => ok,
    };
    if !acked {
        let reason = processor.sink().failure();
        return Err(match reason {
            Some(f) => f.copy(),
            None => Error::kafka("snapshot records were not acknowledged"),
        });
    }
    Ok(true)
}

/// Records the completed snapshot in the offsets and sends the heartbeat Debezium sends (and
/// runs the action query) as soon as a snapshot is complete, whatever the interval.
async fn complete<S: Sink>(started: &mut Started<S>, position: Lsn) -> Result<()> {
    started
        .offsets
        .save(&Offsets::snapshot_completed_at(position))
        .await?;
    let processor = &mut started.processor;
    tracing::info!(rows = processor.counters.snapshot().snapshot_rows, lsn = %position,
        "snapshot completed and acknowledged");
    processor.counters.snapshot_ended(true);
    processor.note_idle_position(position);
    processor.heartbeat(true).await?;
    if started.replication.is_none() && processor.heartbeat_enabled() {
        processor.sink().flush(SHUTDOWN_FLUSH_TIMEOUT).await;
    }
    Ok(())
}

/// Debezium's `source.snapshot` markers need to know which row is the last of its table, so
/// one row is held back until the next one arrives or the table ends. As Debezium does, the
/// snapshot's `first` is the first row of the first table read and its `last` the last row of
/// the last table (an empty first or last table means no `first` or `last`), so nothing is
/// held from one table to the next.
#[derive(Default)]
pub(super) struct HeldBack {
    /// The held row: its event, whether it is the snapshot's first and its table's first,
    /// and its table's index.
    row: Option<(ChangeEvent, bool, bool, usize)>,
}

impl HeldBack {
    /// Holds `ev` (row of table `table_index`, the index in the snapshot's order) and returns
    /// the previous row, marked.
    pub(super) fn push(
        &mut self,
        ev: ChangeEvent,
        first_in_table: bool,
        table_index: usize,
    ) -> Option<ChangeEvent> {
        let first = first_in_table && table_index == 0;
        let prev = self.row.replace((ev, first, first_in_table, table_index));
        prev.map(|(mut p, f, fi, ti)| {
            p.source.snapshot = Some(marker(f, fi, false, ti != table_index));
            p
        })
    }

    /// At a table's end: its last row, marked (`last` when `last_table`).
    fn end_table(&mut self, last_table: bool) -> Option<ChangeEvent> {
        self.row.take().map(|(mut p, f, fi, _)| {
            p.source.snapshot = Some(marker(f, fi, last_table, true));
            p
        })
    }
}

/// Debezium's marker precedence: last > first > last_in_data_collection >
/// first_in_data_collection > true.
pub(super) fn marker(
    first: bool,
    first_in_table: bool,
    last: bool,
    last_in_table: bool,
) -> &'static str {
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

/// The units of an initial snapshot at the sink. Without an offsets saver, one unit holds
/// every record. With one (a snapshot that can be resumed, see [`crate::offsets::initial`]),
/// a checkpoint at a table's end, at most every `offset.flush.interval.ms`, closes the unit
/// with the tables completed so far and opens the next: units keep their order, so a
/// checkpoint completes only once every record before it is acknowledged.
pub(super) struct Checkpoints<'a> {
    /// The open unit (taken while a checkpoint closes it).
    unit: Option<Unit>,
    saver: Option<&'a mut OffsetSaver>,
    /// The snapshot's `pg_current_snapshot()`, when tables are read in their physical order
    /// (PostgreSQL 14+), so that a checkpoint can record how far one was read.
    snapshot: Option<String>,
    /// What was sent so far: the tables completed before this run and in it, and how far
    /// the table being read was read at the last checkpoint (or before this run).
    progress: InitialProgress,
    interval: std::time::Duration,
    last: std::time::Instant,
}

impl<'a> Checkpoints<'a> {
    /// The snapshot's first `unit`; checkpoints when `saver` is given, at most every
    /// `interval`; inside tables too when the `snapshot` (`pg_current_snapshot()`) is known.
    fn new(
        unit: Unit,
        saver: Option<&'a mut OffsetSaver>,
        (snapshot, progress): (Option<String>, InitialProgress),
        interval: std::time::Duration,
    ) -> Self {
        Checkpoints {
            unit: Some(unit),
            saver,
            snapshot,
            progress,
            interval,
            last: std::time::Instant::now(),
        }
    }

    /// Whether checkpoints can record how far a table read in its physical order was read.
    fn records_tables(&self) -> bool {
        self.saver.is_some() && self.snapshot.is_some()
    }

    /// How far `table` (`schema.table`, in file `filenode`) was read: every row in `ranges`.
    fn table_progress(
        &self,
        table: &str,
        filenode: u32,
        ranges: &[cursor::TidRange],
    ) -> Result<crate::offsets::initial::TableProgress> {
        Ok(crate::offsets::initial::TableProgress {
            table: table.to_string(),
            filenode,
            snapshot: self.snapshot.clone().ok_or_else(|| {
                Error::new(
                    crate::error::ErrorKind::Internal,
                    "a checkpoint inside a table without the snapshot's visibility",
                )
            })?,
            ranges: super::table_ranges::stored(ranges),
        })
    }

    /// The open unit's token.
    fn token(&self) -> Result<crate::offsets::ack::AckToken> {
        self.unit.as_ref().map(Unit::token).ok_or_else(no_unit)
    }

    /// Takes the open unit.
    fn take_unit(&mut self) -> Result<Unit> {
        self.unit.take().ok_or_else(no_unit)
    }

    /// Whether a checkpoint is due.
    fn due(&self) -> bool {
        self.saver.is_some() && self.unit.is_some() && self.last.elapsed() >= self.interval
    }

    /// After a checkpoint: `unit` is the open one.
    fn resume(&mut self, unit: Unit) {
        self.unit = Some(unit);
        self.last = std::time::Instant::now();
    }
}

/// The error of a snapshot whose unit was already closed (a bug).
fn no_unit() -> Error {
    Error::new(
        crate::error::ErrorKind::Internal,
        "the snapshot's unit is closed",
    )
}

/// The snapshot transaction's facts shared by every row.
#[derive(Debug, Clone, Copy)]
pub(super) struct SnapshotTx {
    xid: i64,
    start_us: i64,
    position: Lsn,
    /// Its unit at the sink: every snapshot record.
    pub(super) token: crate::offsets::ack::AckToken,
}

/// The captured tables a snapshot reads, in the order it reads them:
/// `snapshot.include.collection.list` (when set) keeps those whose `schema.table` it matches,
/// and `snapshot.tables.order.by.row.count` sorts them by the planner's row estimate (a table
/// never analysed counts as empty), ties and `disabled` by schema and name.
pub(super) fn snapshot_plan(
    mut tables: Vec<CatalogTable>,
    config: &ConnectorConfig,
) -> Vec<CatalogTable> {
    if !config.snapshot_include.is_empty() {
        tables.retain(|t| {
            let full = format!("{}.{}", t.schema, t.table);
            config.snapshot_include.iter().any(|r| r.is_match(&full))
        });
    }
    let rows = |t: &CatalogTable| t.estimate.unwrap_or(0);
    match config.snapshot_table_order {
        SnapshotTableOrder::Disabled => {}
        SnapshotTableOrder::Ascending => tables.sort_by_key(rows),
        SnapshotTableOrder::Descending => tables.sort_by_key(|t| std::cmp::Reverse(rows(t))),
    }
    tables
}

/// The snapshot's tables (`schema.table`) in Debezium's capture order, which its
/// `TABLE_SCAN_COMPLETED` notifications list: for each `table.include.list` pattern in turn,
/// the tables it matches in name order (each table once); without an include list, all of
/// them in name order.
fn captured_order(tables: &[CatalogTable], config: &ConnectorConfig) -> Vec<String> {
    let mut names: Vec<String> = tables
        .iter()
        .map(|t| format!("{}.{}", t.schema, t.table))
        .collect();
    names.sort();
    let patterns = &config.filters.table_include;
    if patterns.is_empty() {
        return names;
    }
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for p in patterns {
        for n in names.iter().filter(|n| p.is_match(n)) {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// Reads every captured table in the snapshot transaction open on `snap_sql` (its xid
    /// and start time in µs), except those an interrupted snapshot completed, and sends
    /// `op: r` events in a unit that completes at `position`; commits the snapshot
    /// transaction. `completes`: that unit completes the snapshot (see
    /// [`CommitInfo::completes_snapshot`]). With `saver`, checkpoints at table ends record the
    /// tables completed so far (see [`Checkpoints`]).
    pub async fn snapshot_tables(
        &mut self,
        snap_sql: &Client,
        (xid, start_us): (i64, i64),
        position: Lsn,
        completes: bool,
        saver: Option<&mut OffsetSaver>,
    ) -> Result<()> {
        let all = setup::captured_tables(snap_sql, &self.config).await?;
        let tables = self.tables_left(snapshot_plan(all, &self.config));
        let overrides = self.config.snapshot_select_overrides.clone();
        let interval = self.config.offset_flush_interval;
        let ordered = saver.is_some() && self.server_version >= cursor::TID_RANGE_SERVER_VERSION;
        let snapshot = match ordered {
            true => Some(cursor::current_snapshot(snap_sql).await?),
            false => None,
        };
        let unit = Unit::open(&mut self.sink);
        let before = self
            .initial_progress
            .as_deref()
            .cloned()
            .unwrap_or_default();
        let mut checkpoints = Checkpoints::new(unit, saver, (snapshot, before), interval);
        let token = checkpoints.token()?;
        self.read_snapshot_tables(
            snap_sql,
            &tables,
            &overrides,
            (xid, start_us),
            position,
            (token, Some(&mut checkpoints)),
        )
        .await?;
        let unit = checkpoints.take_unit()?;
        let info = CommitInfo {
            end_lsn: position,
            xid: xid as u32,
            commit_time_us: start_us,
            completes_snapshot: completes,
            idle: false,
            before_snapshot: false,
            incremental: None,
            initial: None,
        };
        unit.commit(&mut self.sink, info);
        Ok(())
    }

    /// `tables` without those an interrupted snapshot completed.
    fn tables_left(&self, tables: Vec<CatalogTable>) -> Vec<CatalogTable> {
        let Some(done) = self.initial_progress.as_deref() else {
            return tables;
        };
        let total = tables.len();
        let left: Vec<CatalogTable> = tables
            .into_iter()
            .filter(|t| !done.completed(&t.full_name()))
            .collect();
        tracing::info!(
            tables_left = left.len(),
            tables_completed_before = total - left.len(),
            "the snapshot reads the tables the interrupted one did not complete"
        );
        left
    }

    /// A checkpoint (see [`Checkpoints`]): closes the snapshot's unit with `progress` (every
    /// record it claims was sent), waits until Kafka has acknowledged it (exactly-once:
    /// commits the Kafka transaction, whose offsets record then holds the progress), stores
    /// it, and opens the next unit for `tx`.
    /// Errors: Kafka failed a record, or the offsets could not be written.
    async fn checkpoint(
        &mut self,
        checkpoints: &mut Checkpoints<'_>,
        tx: &mut SnapshotTx,
        progress: InitialProgress,
    ) -> Result<()> {
        let progress = Arc::new(progress);
        let hold = self.sink.tracker().hold_position();
        let info = CommitInfo {
            // No commit time: a checkpoint is not a transaction, it has no delivery latency.
            end_lsn: hold.unwrap_or(tx.position),
            before_snapshot: hold.is_some(),
            initial: Some(progress.clone()),
            ..CommitInfo::default()
        };
        checkpoints.take_unit()?.commit(&mut self.sink, info);
        self.wait_acknowledged("snapshot records were not acknowledged")
            .await?;
        if let Some(saver) = checkpoints.saver.as_deref_mut() {
            saver.save_completed(self.sink.tracker()).await?;
        }
        let reading = progress.table.as_ref();
        tracing::info!(
            completed_tables = progress.completed_tables.len(),
            table = reading.map(|t| t.table.as_str()),
            ranges_read = reading.map(|t| t.ranges.len()),
            "snapshot checkpoint: what was read is acknowledged and recorded in the offsets"
        );
        checkpoints.progress = (*progress).clone();
        self.initial_progress = Some(progress);
        let unit = Unit::open(&mut self.sink);
        tx.token = unit.token();
        checkpoints.resume(unit);
        Ok(())
    }

    /// Reads `tables` in the snapshot transaction open on `snap_sql` (its xid and start time
    /// in µs), each through its query in `overrides` if it has one, and sends `op: r` events
    /// with the `Initial Snapshot` notifications in the caller's unit `token` (with
    /// `checkpoints`, whose unit that is, in the unit each checkpoint opens next); commits
    /// the snapshot transaction.
    pub(super) async fn read_snapshot_tables(
        &mut self,
        snap_sql: &Client,
        tables: &[CatalogTable],
        overrides: &[crate::config::SelectOverride],
        (xid, start_us): (i64, i64),
        position: Lsn,
        (token, mut checkpoints): (crate::offsets::ack::AckToken, Option<&mut Checkpoints<'_>>),
    ) -> Result<()> {
        tracing::info!(tables = tables.len(), lsn = %position, "snapshot started");
        self.counters.snapshot_started(
            tables
                .iter()
                .map(|t| (format!("{}.{}", t.schema, t.table), t.estimate))
                .collect(),
        );
        let mut tx = SnapshotTx {
            xid,
            start_us,
            position,
            token,
        };
        let names: Vec<String> = tables
            .iter()
            .map(|t| format!("{}.{}", t.schema, t.table))
            .collect();
        let in_progress = notifications::hash_set_list(&names);
        let captured = captured_order(tables, &self.config).join(",");
        self.notify("STARTED", Vec::new(), tx.token).await?;
        let mut held = HeldBack::default();
        let mut readers = self.open_readers(snap_sql).await?;
        for (index, t) in tables.iter().enumerate() {
            let name = names[index].clone();
            let progress = vec![
                ("current_collection_in_progress", name.clone()),
                ("data_collections", in_progress.clone()),
            ];
            self.notify("IN_PROGRESS", progress, tx.token).await?;
            let rows = self
                .snapshot_table(
                    snap_sql,
                    &mut readers,
                    t,
                    ((index, index + 1 == tables.len()), &mut tx, &mut held),
                    overrides,
                    checkpoints.as_deref_mut(),
                )
                .await?;
            if let Some(last) = held.end_table(index + 1 == tables.len()) {
                self.emit(last, tx.token).await?;
            }
            // `status` and `data_collections` share a bucket of Debezium's map, where their
            // order follows `Map.of`'s per-JVM random salt: pgcdc keeps `status` first.
            let done = vec![
                ("scanned_collection", name),
                ("total_rows_scanned", rows.to_string()),
                ("status", "SUCCEEDED".to_string()),
                ("data_collections", captured.clone()),
            ];
            self.notify("TABLE_SCAN_COMPLETED", done, tx.token).await?;
            if let Some(c) = checkpoints.as_deref_mut() {
                c.progress = c.progress.with([names[index].clone()]);
                if c.due() {
                    let progress = c.progress.clone();
                    self.checkpoint(c, &mut tx, progress).await?;
                }
            }
        }
        self.notify("COMPLETED", Vec::new(), tx.token).await?;
        drop(readers);
        snap_sql.batch_execute("COMMIT").await?;
        Ok(())
    }

    /// Reads one table at `place` in the snapshot: over the readers in ranges when they are
    /// several and the table has no override query, else on `snap_sql` (in its physical
    /// order when `checkpoints` can record how far, or an interrupted snapshot recorded how
    /// far it read it). Returns the rows read.
    async fn snapshot_table(
        &mut self,
        snap_sql: &Client,
        readers: &mut super::parallel::Readers,
        t: &CatalogTable,
        (place, tx, held): (super::parallel::TablePlace, &mut SnapshotTx, &mut HeldBack),
        overrides: &[crate::config::SelectOverride],
        checkpoints: Option<&mut Checkpoints<'_>>,
    ) -> Result<u64> {
        let needs_source_types = self.config.records.columns.needs_source_types();
        let (published, catalog) =
            relation::read_published_table(snap_sql, t.oid, needs_source_types).await?;
        let table = relation::build_table(
            &self.config,
            t.oid,
            &t.schema,
            &t.table,
            &published,
            &catalog,
        )?;
        let names: Vec<String> = published.iter().map(|p| p.0.clone()).collect();
        let query = overrides
            .iter()
            .find(|o| o.schema == t.schema && o.table == t.table)
            .map(|o| o.query.as_str());
        let full = t.full_name();
        if query.is_some() {
            tracing::info!(table = %full,
                "snapshot reads the table with its snapshot.select.statement.overrides query");
        }
        let progress = ProgressLog::new(full.clone(), t.estimate);
        let part_read = self
            .initial_progress
            .as_deref()
            .and_then(|p| p.table_progress(&full))
            .is_some();
        let checkpoints = checkpoints.filter(|c| c.records_tables());
        let ordered = query.is_none()
            && !t.partitioned
            && self.server_version >= cursor::TID_RANGE_SERVER_VERSION
            && (checkpoints.is_some() || part_read || readers.parallel());
        let mut read = SerialRead {
            table: &table,
            full,
            names: &names,
            index: place.0,
            rows: 0,
            progress,
            ordered: None,
        };
        if !ordered {
            let source = query.map_or(cursor::CursorSource::Table, cursor::CursorSource::Query);
            self.read_serial(snap_sql, source, &mut read, (tx, held), None)
                .await?;
        } else {
            let (plan, filenode) = self
                .plan_table(snap_sql, t, &read.full, readers.ranges_per_table())
                .await?;
            let checkpoints = checkpoints.map(|c| (c, filenode));
            if readers.parallel() && plan.ranges.len() > 1 {
                let what = (table.clone(), names.clone(), plan);
                let progress = &mut read.progress;
                read.rows = self
                    .snapshot_table_parallel(readers, what, (place, tx), checkpoints, progress)
                    .await?;
            } else {
                read.ordered = Some(OrderedRead {
                    sent: RangeProgress::new(&plan),
                    filenode,
                    range: 0,
                });
                let checkpoints = checkpoints.map(|(c, _)| c);
                self.read_ordered(snap_sql, &plan, &mut read, (tx, held), checkpoints)
                    .await?;
            }
        }
        self.counters.snapshot_table_done();
        tracing::info!(table = %table.full_name(), rows = read.rows, "snapshot of table done");
        Ok(read.rows)
    }

    /// Prepares the ordered read of `t` (`full`: `schema.table`) in the snapshot transaction
    /// and plans its ranges, `parts` of them for what is left to read (see
    /// [`super::table_ranges`]): when an interrupted snapshot read part of it in the same
    /// file, first those parts again for the rows written since. Returns the plan and the
    /// table's file.
    async fn plan_table(
        &self,
        snap_sql: &Client,
        t: &CatalogTable,
        full: &str,
        parts: usize,
    ) -> Result<(TablePlan, u32)> {
        let filenode = cursor::begin_ordered_read(snap_sql, t.oid, &t.schema, &t.table).await?;
        let (read_before, window) = self.read_before(full, filenode);
        let pages = match parts {
            1 => 0,
            _ => cursor::relation_pages(snap_sql, t.oid).await?,
        };
        Ok((TablePlan::new(&read_before, window, pages, parts), filenode))
    }

    /// The ranges of table `full` (in file `filenode`) an interrupted snapshot recorded as
    /// read, and what its snapshot saw; none when it recorded none, the table was rewritten
    /// since, or the record cannot be read (each logged).
    fn read_before(
        &self,
        full: &str,
        filenode: u32,
    ) -> (Vec<cursor::TidRange>, Option<cursor::XidWindow>) {
        let Some(p) = self
            .initial_progress
            .as_deref()
            .and_then(|p| p.table_progress(full))
        else {
            return (Vec::new(), None);
        };
        let ranges = super::table_ranges::parse_stored(&p.ranges);
        let window = super::fence::XidSnapshot::parse(&p.snapshot)
            .ok()
            .map(|s| s.window());
        match (ranges, window) {
            (Some(ranges), Some(window)) if p.filenode == filenode => {
                tracing::info!(table = %full, ranges = ranges.len(),
                    "resuming the table where the interrupted snapshot stopped: first the rows written since in the ranges it read, then the rest");
                (ranges, Some(window))
            }
            (Some(_), Some(_)) => {
                tracing::info!(table = %full,
                    "the table was rewritten (VACUUM FULL, CLUSTER, TRUNCATE) since the interrupted snapshot read part of it: reading it whole");
                (Vec::new(), None)
            }
            _ => {
                tracing::warn!(table = %full, snapshot = %p.snapshot, ranges = ?p.ranges,
                    "the offsets' progress of this table (pgcdc_snapshot_table_progress) cannot be read: reading it whole");
                (Vec::new(), None)
            }
        }
    }

    /// Reads a table on `snap_sql` range by range in the order of `plan`, so that
    /// `checkpoints` can record how far (see [`crate::offsets::initial`]).
    async fn read_ordered(
        &mut self,
        snap_sql: &Client,
        plan: &TablePlan,
        read: &mut SerialRead<'_>,
        (tx, held): (&mut SnapshotTx, &mut HeldBack),
        mut checkpoints: Option<&mut Checkpoints<'_>>,
    ) -> Result<()> {
        for range in 0..plan.ranges.len() {
            if let Some(o) = read.ordered.as_mut() {
                o.range = range;
            }
            let source = plan.source(range);
            let c = checkpoints.as_deref_mut();
            self.read_serial(snap_sql, source, read, (&mut *tx, &mut *held), c)
                .await?;
            // The range's last row may still be held back: the next checkpoint follows a batch
            // of a later range (whose first row released it) or the table's end.
            if let Some(o) = read.ordered.as_mut() {
                o.sent.finished(range);
            }
        }
        Ok(())
    }

    /// Reads `source` through one cursor on `snap_sql`, in batches within the snapshot's share
    /// of `pgcdc.buffer.memory.bytes`; with `checkpoints` (and an ordered read), a due
    /// checkpoint after a batch records how far the table was read.
    async fn read_serial(
        &mut self,
        snap_sql: &Client,
        source: cursor::CursorSource<'_>,
        read: &mut SerialRead<'_>,
        (tx, held): (&mut SnapshotTx, &mut HeldBack),
        mut checkpoints: Option<&mut Checkpoints<'_>>,
    ) -> Result<()> {
        let schema = &read.table.descriptor;
        cursor::open_cursor(snap_sql, &schema.schema, &schema.table, read.names, source).await?;
        let width = read.names.len();
        let fetched_width = width + usize::from(source.with_ctid());
        let mut last_tid: Option<cursor::Tid> = None;
        // Rows per fetch: snapshot.fetch.size, lowered for wide rows so that one batch stays
        // within the snapshot's share of pgcdc.buffer.memory.bytes.
        let mut fetch = self.config.snapshot_fetch_size.min(64);
        loop {
            let rows = cursor::fetch(snap_sql, fetch, fetched_width).await?;
            if rows.is_empty() {
                break;
            }
            fetch = next_fetch_size(&rows, &self.config, &self.counters, 1);
            for row in rows {
                if source.with_ctid() {
                    last_tid = Some(next_tid(&read.full, &row[width], last_tid)?);
                }
                let ev = snapshot_event(read.table, &row[..width], tx, &self.source, &self.config)?;
                if let Some(ready) = held.push(ev, read.rows == 0, read.index) {
                    self.emit(ready, tx.token).await?;
                }
                read.rows += 1;
                self.counters.add_snapshot_row();
            }
            read.progress.batch(&self.counters, read.rows);
            let (Some(o), Some(tid)) = (read.ordered.as_mut(), last_tid) else {
                continue;
            };
            // The row at `tid` is held back: every row of the range before it was sent.
            o.sent.sent_before(o.range, tid);
            if let Some(c) = checkpoints.as_deref_mut() {
                let table = (read.full.as_str(), o.filenode);
                self.checkpoint_in_table(c, tx, table, &o.sent).await?;
            }
        }
        cursor::close_cursor(snap_sql).await?;
        Ok(())
    }

    /// A checkpoint inside `table` (`schema.table`, in file `filenode`), if one is due and
    /// `sent` can say what was read (see [`RangeProgress::read_ranges`]).
    pub(super) async fn checkpoint_in_table(
        &mut self,
        c: &mut Checkpoints<'_>,
        tx: &mut SnapshotTx,
        (table, filenode): (&str, u32),
        sent: &RangeProgress,
    ) -> Result<()> {
        if !c.due() {
            return Ok(());
        }
        let Some(ranges) = sent.read_ranges() else {
            return Ok(());
        };
        let at = c.table_progress(table, filenode, &ranges)?;
        let progress = c.progress.reading(at);
        self.checkpoint(c, tx, progress).await
    }
}

/// One table read on the snapshot connection.
struct SerialRead<'a> {
    table: &'a TableSchema,
    /// `schema.table`, as the offsets name it.
    full: String,
    /// The published columns.
    names: &'a [String],
    /// The table's index in the snapshot's order.
    index: usize,
    /// Rows read so far.
    rows: u64,
    progress: ProgressLog,
    /// When the table is read in its physical order: how far.
    ordered: Option<OrderedRead>,
}

/// How far a table read range by range in its physical order was sent.
struct OrderedRead {
    sent: RangeProgress,
    /// The table's file.
    filenode: u32,
    /// The range being read.
    range: usize,
}

/// The `ctid` of the next row of an ordered read of `table`, which must follow `last`.
/// Errors: the server sent something else (a protocol error), or rows out of order (which
/// would make a checkpoint claim rows not sent).
pub(super) fn next_tid(
    table: &str,
    text: &Option<String>,
    last: Option<cursor::Tid>,
) -> Result<cursor::Tid> {
    let tid = text
        .as_deref()
        .and_then(cursor::Tid::parse)
        .ok_or_else(|| {
            Error::protocol(format!(
                "the snapshot of {table} read a row without a ctid ({text:?})"
            ))
        })?;
    if last.is_some_and(|l| tid <= l) {
        return Err(Error::new(
            crate::error::ErrorKind::Internal,
            format!(
                "the snapshot of {table} read its rows out of ctid order ({tid} after {})",
                last.unwrap_or(tid)
            ),
        ));
    }
    Ok(tid)
}

/// Notes a fetched batch's text bytes (a NULL counts one) for the high-water mark and returns
/// the fetch size after it: as many rows of this batch's width as fit in one batch of the
/// snapshot's share of `pgcdc.buffer.memory.bytes` with `readers` readers, within
/// `1..=snapshot.fetch.size`.
pub(super) fn next_fetch_size(
    rows: &[Vec<Option<String>>],
    config: &ConnectorConfig,
    counters: &super::Counters,
    readers: usize,
) -> usize {
    let bytes: usize = rows
        .iter()
        .flat_map(|r| r.iter())
        .map(|v| v.as_ref().map_or(1, String::len))
        .sum();
    counters.note_snapshot_batch(bytes);
    let per_row = (bytes / rows.len().max(1)).max(1);
    let batch_bytes = config.memory.snapshot_batch_bytes(readers);
    (batch_bytes / per_row).clamp(1, config.snapshot_fetch_size)
}

/// The `op: r` event of one snapshot row of `table` (its marker is set when it is released).
/// Errors: a value that does not convert (`event.converting.failure.handling.mode=fail`).
pub(super) fn snapshot_event(
    table: &TableSchema,
    row: &[Option<String>],
    tx: &SnapshotTx,
    source: &super::processor::SourceContext,
    config: &ConnectorConfig,
) -> Result<ChangeEvent> {
    let refs: Vec<Option<&str>> = row.iter().map(|v| v.as_deref()).collect();
    let after = table.row_from_text(&refs, &config.values, config.converting_failure)?;
    let key = table.key_of(&after);
    let source = source.info(
        tx.start_us,
        Some("true"),
        None,
        tx.position,
        Some(tx.xid),
        None,
    );
    Ok(ChangeEvent {
        table: table.descriptor.clone(),
        op: Op::Read,
        key,
        old_key: None,
        before: None,
        after: Some(table.value_row(after)),
        source,
    })
}

/// Logs a table's snapshot progress every [`PROGRESS_LOG_INTERVAL`]: rows, rows/s, the
/// planner's estimate and the time left at the current rate; and counts rows per table.
pub(super) struct ProgressLog {
    table: String,
    estimate: Option<u64>,
    started: std::time::Instant,
    last_log: std::time::Instant,
    counted: u64,
}

/// How often a table's snapshot logs its progress.
const PROGRESS_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

impl ProgressLog {
    fn new(table: String, estimate: Option<u64>) -> Self {
        let now = std::time::Instant::now();
        ProgressLog {
            table,
            estimate,
            started: now,
            last_log: now,
            counted: 0,
        }
    }

    /// After a batch: `rows` read so far in this table.
    pub(super) fn batch(&mut self, counters: &super::Counters, rows: u64) {
        counters.snapshot_rows(&self.table, rows - self.counted);
        self.counted = rows;
        if self.last_log.elapsed() < PROGRESS_LOG_INTERVAL {
            return;
        }
        self.last_log = std::time::Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        let rate = rows as f64 / secs;
        let eta_s = self
            .estimate
            .filter(|&e| e > rows && rate > 0.0)
            .map(|e| ((e - rows) as f64 / rate).round() as u64);
        tracing::info!(
            table = %self.table,
            rows,
            rows_per_s = rate.round() as u64,
            estimated_rows = self.estimate,
            eta_s,
            "snapshot progress"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_follow_debeziums_precedence() {
        assert_eq!(marker(true, true, true, true), "last");
        assert_eq!(marker(true, true, false, true), "first");
        assert_eq!(marker(false, true, false, true), "last_in_data_collection");
        assert_eq!(
            marker(false, true, false, false),
            "first_in_data_collection"
        );
        assert_eq!(marker(false, false, false, false), "true");
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> ConnectorConfig {
        let raw = crate::config::testutil::seed_with(extra);
        ConnectorConfig::from_map(&raw).unwrap().0
    }

    fn tables() -> Vec<CatalogTable> {
        [
            ("a", "big", Some(900)),
            ("a", "small", Some(5)),
            ("b", "new", None),
            ("b", "mid", Some(50)),
        ]
        .into_iter()
        .map(|(s, t, e)| CatalogTable {
            schema: s.into(),
            table: t.into(),
            oid: 1,
            estimate: e,
            partitioned: false,
        })
        .collect()
    }

    fn names(t: &[CatalogTable]) -> Vec<String> {
        t.iter()
            .map(|t| format!("{}.{}", t.schema, t.table))
            .collect()
    }

    #[test]
    fn the_snapshot_reads_the_listed_tables_in_the_order_asked() {
        assert_eq!(
            names(&snapshot_plan(tables(), &config(&[]))),
            ["a.big", "a.small", "b.new", "b.mid"]
        );
        let only_a = config(&[("snapshot.include.collection.list", "a\\..*,b.mid")]);
        assert_eq!(
            names(&snapshot_plan(tables(), &only_a)),
            ["a.big", "a.small", "b.mid"]
        );
        let up = config(&[("snapshot.tables.order.by.row.count", "ascending")]);
        assert_eq!(
            names(&snapshot_plan(tables(), &up)),
            ["b.new", "a.small", "b.mid", "a.big"]
        );
        let down = config(&[("snapshot.tables.order.by.row.count", "descending")]);
        assert_eq!(
            names(&snapshot_plan(tables(), &down)),
            ["a.big", "b.mid", "a.small", "b.new"]
        );
    }
}
