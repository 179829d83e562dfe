//! Signals and incremental snapshots while streaming, as Debezium 3.6.1 does them (the DBLog
//! watermark algorithm).
//!
//! A signal arrives from any channel ([`crate::event::signal`]); `execute-snapshot` queues tables
//! and reads the first chunk. Reading a chunk ([`Processor::read_chunk`]), on the run's SQL
//! connection and in the main loop (the stream waits, the reader keeps answering the
//! server):
//! 1. inserts the open watermark `<chunk id>-open` into the signal table (autocommit);
//! 2. reads up to `incremental.snapshot.chunk.size` rows in key order after the last chunk's
//!    end (the first chunk from the table's start; the table's largest key is read first and
//!    bounds every later chunk) into the window, in memory (bounded by the chunk size);
//! 3. inserts the close watermark `<chunk id>-close` (`insert_insert`) or deletes the open
//!    row (`insert_delete`).
//!
//! The stream then reaches the open watermark (the window opens), the changes committed
//! while the chunk was read (each removes its key from the window: the stream's version is
//! at least as new), and the close watermark: the rows left in the window are emitted as
//! `op: r` records with `source.snapshot` = `incremental`, in the close watermark
//! transaction's unit, and the next chunk is read. So for any key no snapshot record comes
//! after a newer streamed change (invariant 1's per-key order).
//!
//! Progress goes into the offsets of every unit published while the snapshot runs, in
//! Debezium's shape ([`crate::offsets::incremental`]), as it stood when the last window
//! closed: a restart reads the next chunk, and watermarks of chunks read before the restart
//! (their ids are unknown now) are ignored. A table ends when a chunk comes back empty.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::signals::WatermarkStrategy;
use crate::error::Result;
use crate::event::envelope::change_records;
use crate::event::signal::{self, Action, Signal, SnapshotKind, SnapshotRequest};
use crate::event::{ChangeEvent, Op, Value};
use crate::lsn::Lsn;
use crate::offsets::ack::AckToken;
use crate::offsets::incremental::{IncrementalProgress, QueuedTable};
use crate::offsets::java_keys::JavaValue;
use crate::pg::relation::TableSchema;
use crate::sink::{Sink, Unit};
use crate::util::{quote_ident, quote_literal};

use super::fence::SnapshotFence;
use super::notifications::INCREMENTAL_SNAPSHOT;
use super::processor::Processor;
use super::relations::Catalog;

/// The incremental snapshot's state in a run.
#[derive(Debug, Default)]
pub(super) struct Incremental {
    /// The progress when the last window closed: what the offsets carry. `None`: no
    /// incremental snapshot runs.
    committed: Option<Arc<IncrementalProgress>>,
    /// The progress after the last chunk read (committed when its window closes).
    current: Option<IncrementalProgress>,
    /// The chunk read and waiting for its window, if any.
    window: Option<Window>,
    /// `pause-snapshot` was received (not stored: a restart resumes, as in Debezium).
    paused: bool,
    /// `stop-snapshot` requests, applied before the next chunk.
    stops: Vec<String>,
    /// The table being read, prepared.
    table: Option<Arc<ChunkTable>>,
    /// Rows read from the current table so far.
    rows_scanned: u64,
    /// When the current chunk's open watermark was written (Java `Instant` text).
    opened_at: String,
}

impl Incremental {
    /// Restores a snapshot that was running at the last stop (from the offsets).
    pub(super) fn restored(progress: Option<IncrementalProgress>) -> Incremental {
        Incremental {
            committed: progress.clone().map(Arc::new),
            current: progress,
            ..Incremental::default()
        }
    }

    /// The progress the next unit's offsets carry.
    pub(super) fn progress(&self) -> Option<Arc<IncrementalProgress>> {
        self.committed.clone()
    }

    /// Whether an incremental snapshot runs.
    pub(super) fn running(&self) -> bool {
        self.current.as_ref().is_some_and(|p| !p.tables.is_empty())
    }

    /// A streamed change of `table` with `key`: while the window is open, the key's row
    /// leaves it (the stream's version is at least as new as the chunk's).
    pub(super) fn streamed(&mut self, table: &str, key: &[Value]) {
        let Some(w) = self
            .window
            .as_mut()
            .filter(|w| w.open && w.table.id == table)
        else {
            return;
        };
        if let Some(i) = w.index.remove(&key_text(key)) {
            w.rows[i] = None;
        }
    }
}

/// A chunk read, waiting for its window: the rows in key order, by key.
#[derive(Debug)]
struct Window {
    id: String,
    open: bool,
    /// `read.only`: the snapshot taken before the chunk was read; the window closes at the
    /// first event it does not see (see [`super::blocking::past`]) instead of at a watermark.
    bound: Option<SnapshotFence>,
    table: Arc<ChunkTable>,
    rows: Vec<Option<Vec<Value>>>,
    index: HashMap<String, usize>,
}

/// The table being read: its schema, columns and the key the chunks follow.
#[derive(Debug)]
struct ChunkTable {
    /// `schema.table`.
    id: String,
    schema: Arc<TableSchema>,
    /// Published columns, in order.
    columns: Vec<String>,
    /// The chunk key: the surrogate key, else the record key's columns.
    order: Vec<KeyColumn>,
    /// `(filter)` of `additional-conditions`, if any.
    condition: Option<String>,
}

/// One column of the chunk key.
#[derive(Debug)]
struct KeyColumn {
    name: String,
    /// The column may hold NULL.
    nullable: bool,
    type_name: String,
    position: usize,
    java: JavaKind,
}

/// The Java class PostgreSQL's JDBC driver gives a key column (what Debezium stores).
#[derive(Debug, Clone, Copy)]
enum JavaKind {
    Int,
    Long,
    Uuid,
    Str,
}

/// A key's identity in the window.
fn key_text(key: &[Value]) -> String {
    format!("{key:?}")
}

/// The status of a table whose reading ended.
const SUCCEEDED: &str = "SUCCEEDED";

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// A signal from any channel, acted on now (between transactions, or inside the
    /// transaction that carries it for the signal table). A malformed one is logged with
    /// what is wrong and skipped.
    pub async fn signal(&mut self, signal: Signal, lsn: Option<Lsn>) -> Result<()> {
        let action = match signal.action() {
            Ok(a) => a,
            Err(why) => {
                tracing::warn!(id = %signal.id, kind = %signal.kind, channel = signal.channel.name(),
                    "signal skipped: {why}");
                return Ok(());
            }
        };
        let (token, unit) = self.signal_unit();
        let r = self.act(&signal, action, lsn, token).await;
        self.close_signal_unit(unit);
        r
    }

    /// Commits a unit of its own that [`Processor::signal_unit`] opened, at the idle
    /// position.
    fn close_signal_unit(&mut self, unit: Option<Unit>) {
        if let Some(unit) = unit {
            let info = self.idle_unit_info();
            unit.commit(&mut self.sink, info);
        }
    }

    /// Whether `table` is `signal.data.collection`.
    pub(super) fn is_signal_table(&self, table: &TableSchema) -> bool {
        self.config
            .signals
            .is_signal_table(&table.descriptor.schema, &table.descriptor.table)
    }

    /// A change of the signal table (an insert; with `insert_delete`, a delete, which closes
    /// the window of the open watermark it removes): a signal of the `source` channel, acted
    /// on before the row's own record is sent. Its three columns are `id`, `type` and `data`.
    pub(super) async fn source_signal(&mut self, lsn: Lsn, op: Op, row: &[Value]) -> Result<()> {
        if op == Op::Delete && self.config.signals.watermarking != WatermarkStrategy::InsertDelete {
            return Ok(());
        }
        if row.len() != 3 {
            tracing::warn!(columns = row.len(), %lsn,
                "signal skipped: the signal table must have exactly three columns (id, type, data)");
            return Ok(());
        }
        let text = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Shared(s) => Some(s.to_string()),
            _ => None,
        };
        let id = text(&row[0]).unwrap_or_default();
        let signal = if op == Op::Delete {
            Signal {
                id: id.replace("open", "close"),
                kind: signal::WINDOW_CLOSE.to_string(),
                data: String::new(),
                channel: signal::Channel::Source,
            }
        } else {
            Signal {
                id,
                kind: text(&row[1]).unwrap_or_default(),
                data: text(&row[2]).unwrap_or_default(),
                channel: signal::Channel::Source,
            }
        };
        if !self.config.signals.source
            && !matches!(
                signal.kind.as_str(),
                signal::WINDOW_OPEN | signal::WINDOW_CLOSE
            )
        {
            tracing::warn!(
                id = %signal.id,
                "signal in the signal table skipped: signal.enabled.channels does not list source"
            );
            return Ok(());
        }
        self.signal(signal, Some(lsn)).await
    }

    /// The unit a signal's records join: the open transaction's, else a unit of its own
    /// (committed at the idle position once the signal is handled).
    fn signal_unit(&mut self) -> (AckToken, Option<Unit>) {
        match &self.tx {
            Some(tx) => (tx.unit.token(), None),
            None => {
                let unit = Unit::open(&mut self.sink);
                (unit.token(), Some(unit))
            }
        }
    }

    async fn act(
        &mut self,
        signal: &Signal,
        action: Action,
        lsn: Option<Lsn>,
        token: AckToken,
    ) -> Result<()> {
        match action {
            Action::ExecuteSnapshot(req) if req.kind == SnapshotKind::Blocking => {
                self.request_blocking(signal, req);
                Ok(())
            }
            Action::ExecuteSnapshot(req) => self.execute_incremental(signal, req, token).await,
            Action::StopSnapshot { kind, collections } => {
                self.stop_incremental(kind, collections);
                Ok(())
            }
            Action::PauseSnapshot => self.set_paused(true, token).await,
            Action::ResumeSnapshot => self.set_paused(false, token).await,
            Action::Log(message) => {
                let offsets = self.offsets_text();
                tracing::info!(target: "pgcdc::signal", "{}", signal::log_text(&message, &offsets));
                Ok(())
            }
            Action::OpenWindow => {
                self.open_window(&signal.id);
                Ok(())
            }
            Action::CloseWindow => self.close_window(&signal.id, lsn, token).await,
        }
    }

    /// The last committed position, as the offsets of a `log` signal show it.
    fn offsets_text(&self) -> String {
        let info = self.progress.last_commit();
        format!("{{lsn_commit={}, txId={}}}", info.end_lsn.0, info.xid)
    }

    /// `execute-snapshot` (incremental): queues the tables its `data-collections` match among
    /// the captured ones (a name matching none is kept as written, and skipped when read);
    /// starts reading when no snapshot ran.
    async fn execute_incremental(
        &mut self,
        signal: &Signal,
        req: SnapshotRequest,
        token: AckToken,
    ) -> Result<()> {
        if self.config.signals.table.is_none() && !self.config.signals.read_only {
            tracing::warn!(id = %signal.id,
                "signal skipped: an incremental snapshot needs signal.data.collection (its watermarks are written there)");
            return Ok(());
        }
        let problem = if self.config.signals.read_only {
            None
        } else {
            self.signal_table_problem().await?
        };
        if let Some(why) = problem {
            tracing::warn!(id = %signal.id, "signal skipped: {why}");
            return Ok(());
        }
        let captured = self.catalog.captured_tables(&self.config).await?;
        let tables = expand(&req, &captured);
        tracing::info!(id = %signal.id, tables = %tables.iter().map(|t| t.id.as_str()).collect::<Vec<_>>().join(","),
            surrogate_key = req.surrogate_key.as_deref().unwrap_or("PK of table will be used"),
            "incremental snapshot requested");
        let was_running = self.incremental.running();
        if !was_running {
            self.counters.snapshot_started(Vec::new());
        }
        let names: Vec<String> = tables.iter().map(|t| t.id.clone()).collect();
        self.counters.snapshot_tables_added(&names);
        let current = self
            .incremental
            .current
            .get_or_insert_with(Default::default);
        current.tables.extend(tables);
        current.correlation_id = Some(signal.id.clone()).filter(|s| !s.is_empty());
        if was_running {
            return Ok(());
        }
        let data = self.incremental_collections();
        self.notify_incremental("STARTED", vec![("data_collections", data)], token)
            .await?;
        self.read_chunk(token).await
    }

    /// `stop-snapshot`: queued, applied before the next chunk.
    fn stop_incremental(&mut self, kind: SnapshotKind, collections: Vec<String>) {
        if kind != SnapshotKind::Incremental {
            tracing::info!("stop-snapshot of a blocking snapshot: nothing to stop");
            return;
        }
        if !self.incremental.running() {
            tracing::warn!("no incremental snapshot runs: stop-snapshot ignored");
            return;
        }
        if collections.is_empty() {
            self.incremental.stops.push(".*".to_string());
        } else {
            self.incremental.stops.extend(collections);
        }
    }

    /// `pause-snapshot` (`paused`) or `resume-snapshot` of a running snapshot: a change of
    /// state is logged, shown in `SnapshotPaused` and notified; a resume reads the next chunk
    /// unless a window waits.
    async fn set_paused(&mut self, paused: bool, token: AckToken) -> Result<()> {
        if !self.incremental.running() || self.incremental.paused == paused {
            return Ok(());
        }
        let (verb, kind) = if paused {
            ("pausing", "PAUSED")
        } else {
            ("resuming", "RESUMED")
        };
        tracing::info!("{verb} incremental snapshot");
        self.incremental.paused = paused;
        self.counters.snapshot_paused(paused);
        let data = self.incremental_collections();
        self.notify_incremental(kind, vec![("data_collections", data)], token)
            .await?;
        if !paused && self.incremental.window.is_none() {
            self.read_chunk(token).await?;
        }
        Ok(())
    }

    /// After a restart: a snapshot the offsets say runs reads its next chunk.
    pub async fn resume_incremental_after_restart(&mut self) -> Result<()> {
        if !self.incremental.running() || self.incremental.window.is_some() {
            return Ok(());
        }
        tracing::info!("incremental snapshot in progress: reading the next chunk");
        let names: Vec<String> = self
            .incremental
            .current
            .iter()
            .flat_map(|p| p.tables.iter().map(|t| t.id.clone()))
            .collect();
        self.counters.snapshot_started(Vec::new());
        self.counters.snapshot_tables_added(&names);
        let (token, unit) = self.signal_unit();
        let r = self.read_chunk(token).await;
        self.close_signal_unit(unit);
        r
    }

    fn open_window(&mut self, id: &str) {
        match self.incremental.window.as_mut() {
            Some(w) if id.starts_with(&w.id) => w.open = true,
            _ => tracing::info!(id, "window open for a chunk this run did not read: ignored"),
        }
    }

    /// The close watermark: emits the rows left in the window, commits the progress, and
    /// reads the next chunk.
    async fn close_window(&mut self, id: &str, lsn: Option<Lsn>, token: AckToken) -> Result<()> {
        let matches = self
            .incremental
            .window
            .as_ref()
            .is_some_and(|w| id.starts_with(&w.id));
        if !matches {
            tracing::info!(
                id,
                "window close for a chunk this run did not read: ignored"
            );
            return Ok(());
        }
        let Some(w) = self.incremental.window.take() else {
            return Ok(());
        };
        self.finish_window(w, lsn.unwrap_or(Lsn::ZERO), token).await
    }

    /// A window closed (at `lsn`): its rows go out, the progress is committed (the offsets
    /// of later units carry it) and the next chunk is read.
    async fn finish_window(&mut self, w: Window, lsn: Lsn, token: AckToken) -> Result<()> {
        let emitted = self.emit_window(w, lsn, token).await?;
        tracing::debug!(rows = emitted, "incremental snapshot window closed");
        self.incremental.committed = self
            .incremental
            .current
            .clone()
            .filter(|p| !p.tables.is_empty())
            .map(Arc::new);
        self.read_chunk(token).await
    }

    /// Emits the window's remaining rows as `op: r` incremental records.
    async fn emit_window(&mut self, w: Window, lsn: Lsn, token: AckToken) -> Result<u64> {
        let mut n = 0;
        for row in w.rows.into_iter().flatten() {
            let ev = self.incremental_event(&w.table.schema, row, lsn);
            for record in change_records(ev, &self.output.options) {
                self.send_record(record, token).await?;
            }
            self.counters.add_snapshot_row();
            n += 1;
        }
        Ok(n)
    }

    /// The `op: r` event of one incremental row: `source.snapshot` = `incremental`, the time
    /// now, `sequence` from the stream's position, no `txId`, `lsn` or `xmin`.
    fn incremental_event(&self, table: &TableSchema, row: Vec<Value>, lsn: Lsn) -> ChangeEvent {
        let mut source = self.source.info(
            crate::util::unix_micros(),
            Some("incremental"),
            self.progress.last_commit_lsn(),
            lsn,
            None,
            None,
        );
        source.lsn = None;
        source.tx_id = None;
        source.xmin = None;
        ChangeEvent {
            table: table.descriptor.clone(),
            op: Op::Read,
            key: table.key_of(&row),
            old_key: None,
            before: None,
            after: Some(table.value_row(row)),
            source,
        }
    }

    /// `data_collections` of the notifications: the queued tables, joined with commas.
    fn incremental_collections(&self) -> String {
        self.incremental
            .current
            .as_ref()
            .map(|p| {
                p.tables
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    }

    async fn notify_incremental(
        &mut self,
        kind: &'static str,
        data: Vec<(&'static str, String)>,
        token: AckToken,
    ) -> Result<()> {
        let id = self
            .incremental
            .current
            .as_ref()
            .and_then(|p| p.correlation_id.clone());
        self.notify_as(INCREMENTAL_SNAPSHOT, id, kind, data, token)
            .await
    }

    /// Reads the next chunk between two watermarks (see the module docs), moving through
    /// tables that are done, empty or cannot be read (each with its notification).
    async fn read_chunk(&mut self, token: AckToken) -> Result<()> {
        self.apply_stops(token).await?;
        if !self.incremental.running() {
            return self.finish_incremental();
        }
        if self.incremental.paused {
            tracing::info!("incremental snapshot paused");
            return Ok(());
        }
        let chunk_id = uuid::Uuid::new_v4().to_string();
        let read_only = self.config.signals.read_only;
        let mut bound = None;
        let opened = if read_only {
            self.read_only_bound().await.map(|b| bound = Some(b))
        } else {
            self.write_open_watermark(&chunk_id).await
        };
        if let Err(e) = opened {
            return self.abort_incremental(e, token).await;
        }
        while self.incremental.running() {
            match self.next_chunk_rows(token).await? {
                ChunkRead::TableDone => continue,
                ChunkRead::Rows(table, rows) => {
                    self.counters.snapshot_chunk(Some(chunk_id.clone()));
                    let mut w = window(chunk_id.clone(), table, rows);
                    w.bound = bound.take();
                    self.incremental.window = Some(w);
                    break;
                }
            }
        }
        if !read_only {
            if let Err(e) = self.write_close_watermark(&chunk_id).await {
                return self.abort_incremental(e, token).await;
            }
        }
        if !self.incremental.running() {
            self.finish_incremental()?;
        }
        Ok(())
    }

    /// `read.only`: the transactions a chunk about to be read sees at least (the snapshot and
    /// the WAL insert position now, before its queries: a transaction committed in between is
    /// in the rows and streamed again after them, as the same version).
    async fn read_only_bound(&mut self) -> Result<SnapshotFence> {
        let v = self.catalog.visibility(self.server_version).await?;
        SnapshotFence::from_visibility(&v)
    }

    /// The bound of a read-only chunk's window, if one waits.
    pub(super) fn incremental_bound(&self) -> Option<&SnapshotFence> {
        self.incremental
            .window
            .as_ref()
            .and_then(|w| w.bound.as_ref())
    }

    /// A read-only chunk's window ends (the stream left what its read sees): its rows go out,
    /// the progress is committed and the next chunk is read.
    pub(super) async fn close_bounded_window(&mut self) -> Result<()> {
        if self.incremental_bound().is_none() {
            return Ok(());
        }
        let Some(w) = self.incremental.window.take() else {
            return Ok(());
        };
        let (token, unit) = self.signal_unit();
        let position = self.progress.idle_position();
        let r = self.finish_window(w, position, token).await;
        self.close_signal_unit(unit);
        r
    }

    /// A watermark cannot be written (the signal table is missing, has other columns, or the
    /// connector's user may not write it): the snapshot cannot go on, so it ends with an
    /// `ABORTED` notification naming its tables and an error line with the fix; streaming goes
    /// on. A lost connection is returned (the run restarts and resumes the snapshot).
    async fn abort_incremental(&mut self, e: crate::error::Error, token: AckToken) -> Result<()> {
        if e.is_retriable() {
            return Err(e);
        }
        let tables = self.incremental_collections();
        tracing::error!(tables = %tables, error = %e.one_line(),
            "incremental snapshot aborted: its watermark could not be written to signal.data.collection, which must be a table of three text columns (id, type, data) the connector's user may INSERT into and DELETE from; fix it and send the signal again");
        self.incremental.window = None;
        self.notify_incremental("ABORTED", vec![("data_collections", tables)], token)
            .await?;
        self.incremental.current = None;
        self.incremental.committed = None;
        self.incremental.table = None;
        self.counters.snapshot_chunk(None);
        self.counters.snapshot_ended(false);
        Ok(())
    }

    /// Once no table is left: the offsets stop carrying the snapshot.
    fn finish_incremental(&mut self) -> Result<()> {
        if self.incremental.window.is_none() && self.incremental.current.is_some() {
            self.incremental.current = None;
            self.incremental.committed = None;
            self.incremental.table = None;
            self.counters.snapshot_ended(true);
        }
        Ok(())
    }

    /// Applies queued `stop-snapshot` requests: matching tables leave the queue (the one
    /// being read too), with an `ABORTED` notification listing them.
    async fn apply_stops(&mut self, token: AckToken) -> Result<()> {
        let stops = std::mem::take(&mut self.incremental.stops);
        if stops.is_empty() {
            return Ok(());
        }
        let Some(current) = self.incremental.current.as_mut() else {
            return Ok(());
        };
        let mut stopped = Vec::new();
        let patterns: Vec<regex::Regex> = stops
            .iter()
            .filter_map(|s| crate::util::full_match_regex(s, false).ok())
            .collect();
        let first = current.tables.first().map(|t| t.id.clone());
        current.tables.retain(|t| {
            let stop = patterns.iter().any(|p| p.is_match(&t.id));
            if stop {
                stopped.push(t.id.clone());
            }
            !stop
        });
        if current.tables.first().map(|t| &t.id) != first.as_ref() {
            current.chunk_end = None;
            current.maximum_key = None;
            self.incremental.table = None;
            self.incremental.rows_scanned = 0;
        }
        tracing::info!(tables = %stopped.join(","), "tables removed from the incremental snapshot");
        self.notify_incremental(
            "ABORTED",
            vec![("data_collections", stopped.join(","))],
            token,
        )
        .await?;
        let current = self.incremental.current.as_ref();
        if current.is_some_and(|p| p.tables.is_empty()) {
            self.incremental.committed = None;
            self.counters.snapshot_ended(false);
        }
        Ok(())
    }

    async fn write_open_watermark(&mut self, chunk_id: &str) -> Result<()> {
        self.incremental.opened_at = java_instant(crate::util::unix_micros());
        let data = format!(
            "{{\"openWindowTimestamp\": \"{}\"}}",
            self.incremental.opened_at
        );
        let sql = format!(
            "INSERT INTO {} VALUES ({}, {}, {})",
            self.signal_table_sql(),
            quote_literal(&format!("{chunk_id}-open")),
            quote_literal(signal::WINDOW_OPEN),
            quote_literal(&data)
        );
        self.catalog.query_text(&sql).await.map(|_| ())
    }

    async fn write_close_watermark(&mut self, chunk_id: &str) -> Result<()> {
        let sql = match self.config.signals.watermarking {
            WatermarkStrategy::InsertDelete => format!(
                "DELETE FROM {} WHERE id = {}",
                self.signal_table_sql(),
                quote_literal(&format!("{chunk_id}-open"))
            ),
            WatermarkStrategy::InsertInsert => {
                let now = java_instant(crate::util::unix_micros());
                let opened = &self.incremental.opened_at;
                format!(
                    "INSERT INTO {} VALUES ({}, {}, {})",
                    self.signal_table_sql(),
                    quote_literal(&format!("{chunk_id}-close")),
                    quote_literal(signal::WINDOW_CLOSE),
                    quote_literal(&format!(
                        "{{\"openWindowTimestamp\": \"{opened}\", \"closeWindowTimestamp\": \"{now}\"}}"
                    ))
                )
            }
        };
        // Committed with a WAL flush whatever synchronous_commit says, so that the walsender
        // sends the window at once (with synchronous_commit=off it would wait up to
        // wal_writer_delay, per chunk).
        let sql = format!("BEGIN; SET LOCAL synchronous_commit TO on; {sql}; COMMIT");
        let r = self.catalog.query_text(&sql).await.map(|_| ());
        if r.is_err() {
            // A failed statement leaves the transaction open: end it.
            let _ = self.catalog.query_text("ROLLBACK").await;
        }
        r
    }

    /// What keeps the signal table from holding the watermarks (it must exist and have three
    /// columns), if anything.
    async fn signal_table_problem(&mut self) -> Result<Option<String>> {
        let sql = format!(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass({}) AND attnum > 0 AND NOT attisdropped",
            quote_literal(&self.signal_table_sql())
        );
        let rows = self.catalog.query_text(&sql).await?;
        let n: i64 = rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(match n {
            3 => None,
            0 => Some(
                "signal.data.collection does not exist: create it as (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"
                    .to_string(),
            ),
            n => Some(format!(
                "signal.data.collection has {n} columns; an incremental snapshot writes its watermarks there as three text columns (id, type, data)"
            )),
        })
    }

    /// `"schema"."table"` of `signal.data.collection`.
    fn signal_table_sql(&self) -> String {
        match &self.config.signals.table {
            Some((s, t)) => format!("{}.{}", quote_ident(s), quote_ident(t)),
            None => String::new(),
        }
    }

    /// Runs one query of the incremental snapshot on the current table: `Ok(None)` when the
    /// server refuses it (a filter naming no column, a table dropped meanwhile, stored progress
    /// that no longer fits the table's key): the table is skipped with `SQL_EXCEPTION`, as
    /// Debezium skips it, and streaming goes on. A lost connection is an error (the run
    /// restarts and resumes the snapshot).
    async fn chunk_query(
        &mut self,
        table: &ChunkTable,
        sql: &str,
        token: AckToken,
    ) -> Result<Option<Vec<Vec<Option<String>>>>> {
        match self.catalog.query_text(sql).await {
            Ok(rows) => Ok(Some(rows)),
            Err(e) if e.is_retriable() => Err(e),
            Err(e) => {
                tracing::warn!(table = %table.id, error = %e.one_line(),
                    "SQL error while executing incremental snapshot for the table, skipping it and continuing streaming");
                self.table_done("SQL_EXCEPTION", token).await?;
                Ok(None)
            }
        }
    }

    /// Reads the current table's next chunk; `TableDone` when the table ended (or cannot be
    /// read), after its `TABLE_SCAN_COMPLETED` notification.
    async fn next_chunk_rows(&mut self, token: AckToken) -> Result<ChunkRead> {
        let table = match self.prepare_table().await? {
            Ok(t) => t,
            Err(status) => {
                self.table_done(status, token).await?;
                return Ok(ChunkRead::TableDone);
            }
        };
        let progress = self.incremental.current.clone().unwrap_or_default();
        if progress.maximum_key.is_none() {
            let Some(max) = self
                .chunk_query(&table, &max_key_sql(&table), token)
                .await?
            else {
                return Ok(ChunkRead::TableDone);
            };
            let Some(row) = max.first() else {
                tracing::info!(table = %table.id, "incremental snapshot of the table finished: it is empty");
                self.table_done("EMPTY", token).await?;
                return Ok(ChunkRead::TableDone);
            };
            let key = java_key(&table, row, true);
            tracing::info!(table = %table.id, "incremental snapshot of the table will end at its largest key now");
            if let Some(p) = self.incremental.current.as_mut() {
                p.maximum_key = Some(key);
            }
        }
        let progress = self.incremental.current.clone().unwrap_or_default();
        let sql = chunk_sql(&table, &progress, self.config.signals.chunk_size);
        let Some(rows) = self.chunk_query(&table, &sql, token).await? else {
            return Ok(ChunkRead::TableDone);
        };
        if rows.is_empty() {
            self.table_done(SUCCEEDED, token).await?;
            return Ok(ChunkRead::TableDone);
        }
        let last = java_key(
            &table,
            rows.last().map(Vec::as_slice).unwrap_or_default(),
            false,
        );
        self.incremental.rows_scanned += rows.len() as u64;
        self.counters.snapshot_rows(&table.id, rows.len() as u64);
        let converted = self.convert_chunk(&table, &rows)?;
        let max = progress.maximum_key.clone().unwrap_or_default();
        if let Some(p) = self.incremental.current.as_mut() {
            p.chunk_end = Some(last.clone());
        }
        let data = vec![
            ("data_collections", self.incremental_collections()),
            ("current_collection_in_progress", table.id.clone()),
            ("maximum_key", key_display(&max)),
            ("last_processed_key", key_display(&last)),
        ];
        self.notify_incremental("IN_PROGRESS", data, token).await?;
        Ok(ChunkRead::Rows(table, converted))
    }

    /// Converts a chunk's text rows to row values.
    fn convert_chunk(
        &self,
        table: &ChunkTable,
        rows: &[Vec<Option<String>>],
    ) -> Result<Vec<Vec<Value>>> {
        rows.iter()
            .map(|r| {
                let refs: Vec<Option<&str>> = r.iter().map(|v| v.as_deref()).collect();
                table.schema.row_from_text(
                    &refs,
                    &self.config.values,
                    self.config.converting_failure,
                )
            })
            .collect()
    }

    /// The table at the head of the queue, prepared once; `Err(status)` when it cannot be
    /// read incrementally (`UNKNOWN_SCHEMA`: it does not exist or is not captured;
    /// `NO_PRIMARY_KEY`).
    async fn prepare_table(
        &mut self,
    ) -> Result<std::result::Result<Arc<ChunkTable>, &'static str>> {
        let Some(queued) = self
            .incremental
            .current
            .as_ref()
            .and_then(|p| p.tables.first().cloned())
        else {
            return Ok(Err("UNKNOWN_SCHEMA"));
        };
        if let Some(t) = self.incremental.table.clone().filter(|t| t.id == queued.id) {
            return Ok(Ok(t));
        }
        let Some((schema, table)) = queued.id.split_once('.') else {
            tracing::warn!(table = %queued.id, "incremental snapshot skips the table: not <schema>.<table>");
            return Ok(Err("UNKNOWN_SCHEMA"));
        };
        let found = match self
            .catalog
            .captured_table(&self.config, schema, table)
            .await
        {
            Ok(found) => found,
            Err(e) if e.is_retriable() => return Err(e),
            Err(e) => {
                tracing::warn!(table = %queued.id, error = %e.one_line(),
                    "incremental snapshot skips the table: its schema cannot be read");
                return Ok(Err("UNKNOWN_SCHEMA"));
            }
        };
        let Some((ts, columns)) = found else {
            tracing::warn!(
                table = %queued.id,
                "incremental snapshot skips the table: it does not exist or is not captured (add it to table.include.list first, and to the publication when publication.autocreate.mode=disabled)"
            );
            return Ok(Err("UNKNOWN_SCHEMA"));
        };
        let order = match chunk_key(&ts, &queued) {
            Ok(o) if !o.is_empty() => o,
            Ok(_) => {
                tracing::warn!(table = %queued.id,
                    "incremental snapshot skips the table: it has no primary key (give a surrogate-key in the signal, or message.key.columns)");
                return Ok(Err("NO_PRIMARY_KEY"));
            }
            Err(why) => {
                tracing::warn!(table = %queued.id, "incremental snapshot skips the table: {why}");
                return Ok(Err("UNKNOWN_SCHEMA"));
            }
        };
        let t = Arc::new(ChunkTable {
            id: queued.id.clone(),
            schema: Arc::new(ts),
            columns,
            order,
            condition: queued.condition.clone(),
        });
        if let Some(status) = self.null_keys(&t).await? {
            return Ok(Err(status));
        }
        self.incremental.table = Some(t.clone());
        self.incremental.rows_scanned = 0;
        Ok(Ok(t))
    }

    /// Rows whose chunk key has a NULL (possible only with `message.key.columns` or a
    /// `surrogate-key` on nullable columns) cannot be read in key order: such a table is
    /// skipped (`SKIPPED`) with a warning naming the columns, never read in part. `None` when
    /// the key is NOT NULL or no row has a NULL in it now.
    async fn null_keys(&mut self, t: &ChunkTable) -> Result<Option<&'static str>> {
        let nullable: Vec<&KeyColumn> = t.order.iter().filter(|k| k.nullable).collect();
        if nullable.is_empty() {
            return Ok(None);
        }
        let test = nullable
            .iter()
            .map(|k| format!("{} IS NULL", quote_ident(&k.name)))
            .collect::<Vec<_>>()
            .join(" OR ");
        let sql = format!("SELECT 1 FROM {} WHERE {test} LIMIT 1", table_sql(t));
        match self.catalog.query_text(&sql).await {
            Ok(rows) if rows.is_empty() => Ok(None),
            Ok(_) => {
                let names: Vec<&str> = nullable.iter().map(|k| k.name.as_str()).collect();
                tracing::warn!(table = %t.id, columns = %names.join(","),
                    "incremental snapshot skips the table: rows have NULL in its key columns, which cannot be read in key order; give a surrogate-key column that is NOT NULL and unique");
                Ok(Some("SKIPPED"))
            }
            Err(e) if e.is_retriable() => Err(e),
            Err(e) => {
                tracing::warn!(table = %t.id, error = %e.one_line(),
                    "SQL error while executing incremental snapshot for the table, skipping it and continuing streaming");
                Ok(Some("SQL_EXCEPTION"))
            }
        }
    }

    /// A table's reading ended with `status`: `TABLE_SCAN_COMPLETED`, then the next table
    /// (and `COMPLETED` after the last).
    async fn table_done(&mut self, status: &'static str, token: AckToken) -> Result<()> {
        let Some(current) = self.incremental.current.as_mut() else {
            return Ok(());
        };
        let scanned = current
            .tables
            .first()
            .map(|t| t.id.clone())
            .unwrap_or_default();
        let data = vec![
            ("data_collections", self.incremental_collections()),
            ("scanned_collection", scanned.clone()),
            (
                "total_rows_scanned",
                self.incremental.rows_scanned.to_string(),
            ),
            ("status", status.to_string()),
        ];
        tracing::info!(table = %scanned, rows = self.incremental.rows_scanned, status,
            "incremental snapshot of the table done");
        self.notify_incremental("TABLE_SCAN_COMPLETED", data, token)
            .await?;
        self.counters.snapshot_table_done();
        self.counters.snapshot_chunk(None);
        if let Some(current) = self.incremental.current.as_mut() {
            if !current.tables.is_empty() {
                current.tables.remove(0);
            }
            current.chunk_end = None;
            current.maximum_key = None;
        }
        self.incremental.table = None;
        self.incremental.rows_scanned = 0;
        if !self.incremental.running() {
            tracing::info!("incremental snapshot completed");
            self.notify_incremental("COMPLETED", Vec::new(), token)
                .await?;
        }
        Ok(())
    }
}

/// What reading the current table gave.
enum ChunkRead {
    /// The table ended (or was skipped): go on with the next.
    TableDone,
    /// A chunk of rows.
    Rows(Arc<ChunkTable>, Vec<Vec<Value>>),
}

/// A window over `rows`, indexed by their record keys.
fn window(id: String, table: Arc<ChunkTable>, rows: Vec<Vec<Value>>) -> Window {
    let mut index = HashMap::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        if let Some(k) = table.schema.key_of(row) {
            index.insert(key_text(&k), i);
        }
    }
    Window {
        id,
        open: false,
        bound: None,
        table,
        rows: rows.into_iter().map(Some).collect(),
        index,
    }
}

/// The tables `req` names: each pattern matched (whole name, case-sensitive, as Debezium)
/// against the captured tables, or kept as written when it matches none; each once.
fn expand(req: &SnapshotRequest, captured: &[String]) -> Vec<QueuedTable> {
    let mut ids: Vec<String> = Vec::new();
    for pattern in &req.collections {
        let matched: Vec<&String> = match crate::util::full_match_regex(pattern, false) {
            Ok(r) => captured.iter().filter(|t| r.is_match(t)).collect(),
            Err(_) => Vec::new(),
        };
        if matched.is_empty() {
            ids.push(pattern.clone());
        }
        ids.extend(matched.into_iter().cloned());
    }
    let mut seen = std::collections::HashSet::new();
    ids.retain(|i| seen.insert(i.clone()));
    ids.into_iter()
        .map(|id| QueuedTable {
            condition: req.filter_for(&id).map(|f| format!("({f})")),
            surrogate_key: req.surrogate_key.clone(),
            id,
        })
        .collect()
}

/// The chunk key of `table`: the surrogate key's column, else the record key's columns.
fn chunk_key(
    table: &TableSchema,
    queued: &QueuedTable,
) -> std::result::Result<Vec<KeyColumn>, String> {
    let indices: Vec<usize> = match &queued.surrogate_key {
        Some(name) => match table.columns.iter().position(|c| &c.name == name) {
            Some(i) => vec![i],
            None => {
                return Err(format!(
                    "surrogate key {name:?} is not a column of the table"
                ))
            }
        },
        None => table.key.clone(),
    };
    Ok(indices
        .into_iter()
        .map(|i| {
            let c = &table.columns[i];
            KeyColumn {
                name: c.name.clone(),
                nullable: c.optional,
                type_name: c.type_name.clone(),
                position: i,
                java: java_kind(&c.type_name),
            }
        })
        .collect())
}

/// The Java class of a key column of type `type_name` (`format_type`).
fn java_kind(type_name: &str) -> JavaKind {
    match type_name {
        "smallint" | "integer" => JavaKind::Int,
        "bigint" => JavaKind::Long,
        "uuid" => JavaKind::Uuid,
        _ => JavaKind::Str,
    }
}

/// A key as stored: the chunk key's values of `row` (the whole row, or, with `key_only`, just
/// the key columns in order).
fn java_key(table: &ChunkTable, row: &[Option<String>], key_only: bool) -> Vec<JavaValue> {
    table
        .order
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let text = row
                .get(if key_only { i } else { k.position })
                .cloned()
                .flatten();
            java_value(k.java, text)
        })
        .collect()
}

fn java_value(kind: JavaKind, text: Option<String>) -> JavaValue {
    let Some(t) = text else {
        return JavaValue::Null;
    };
    let parsed = match kind {
        JavaKind::Int => t.parse().ok().map(JavaValue::Int),
        JavaKind::Long => t.parse().ok().map(JavaValue::Long),
        JavaKind::Uuid => uuid::Uuid::parse_str(&t).ok().map(|u| {
            let (m, l) = u.as_u64_pair();
            JavaValue::Uuid(m, l)
        }),
        JavaKind::Str => None,
    };
    parsed.unwrap_or(JavaValue::Str(t))
}

/// `maximum_key` / `last_processed_key` of the notifications.
fn key_display(key: &[JavaValue]) -> String {
    key.iter()
        .map(JavaValue::display)
        .collect::<Vec<_>>()
        .join(",")
}

/// `"schema"."table"`.
fn table_sql(table: &ChunkTable) -> String {
    let (s, t) = table.id.split_once('.').unwrap_or(("", &table.id));
    format!("{}.{}", quote_ident(s), quote_ident(t))
}

/// The key columns, quoted, joined with `, ` (each followed by `suffix`).
fn key_list(table: &ChunkTable, suffix: &str) -> String {
    table
        .order
        .iter()
        .map(|k| format!("{}{suffix}", quote_ident(&k.name)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table's largest key: `SELECT <key> FROM t [WHERE (<filter>)] ORDER BY <key> DESC LIMIT 1`.
fn max_key_sql(table: &ChunkTable) -> String {
    let filter = table
        .condition
        .as_deref()
        .map(|c| format!(" WHERE {c}"))
        .unwrap_or_default();
    format!(
        "SELECT {} FROM {}{filter} ORDER BY {} LIMIT 1",
        key_list(table, ""),
        table_sql(table),
        key_list(table, " DESC NULLS LAST")
    )
}

/// The next chunk: the published columns after the last chunk's end, up to the largest key,
/// in key order.
fn chunk_sql(table: &ChunkTable, progress: &IncrementalProgress, limit: usize) -> String {
    let columns = table
        .columns
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let mut conditions = Vec::new();
    if let (Some(end), Some(max)) = (&progress.chunk_end, &progress.maximum_key) {
        let key = format!("ROW({})", key_list(table, ""));
        conditions.push(format!("{key} > {}", row_literal(table, end)));
        conditions.push(format!("{key} <= {}", row_literal(table, max)));
    }
    if let Some(c) = &table.condition {
        conditions.push(c.clone());
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conditions.join(" AND "))
    };
    format!(
        "SELECT {columns} FROM {}{filter} ORDER BY {} LIMIT {limit}",
        table_sql(table),
        key_list(table, "")
    )
}

/// `ROW('v1'::type1, ...)` of a stored key.
fn row_literal(table: &ChunkTable, key: &[JavaValue]) -> String {
    let values: Vec<String> = table
        .order
        .iter()
        .enumerate()
        .map(|(i, k)| match key.get(i).and_then(JavaValue::to_text) {
            Some(t) => format!("{}::{}", quote_literal(&t), k.type_name),
            None => "NULL".to_string(),
        })
        .collect();
    format!("ROW({})", values.join(", "))
}

/// Java's `Instant.toString()` of `micros` since the Unix epoch: UTC, `Z`, and 0, 3 or 6
/// fraction digits.
fn java_instant(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let (y, m, d) = crate::util::civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let base = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        s / 3600,
        s % 3600 / 60,
        s % 60
    );
    if frac == 0 {
        format!("{base}Z")
    } else if frac % 1000 == 0 {
        format!("{base}.{:03}Z", frac / 1000)
    } else {
        format!("{base}.{frac:06}Z")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_written_as_java_writes_them() {
        assert_eq!(java_instant(0), "1970-01-01T00:00:00Z");
        assert_eq!(java_instant(1_500_000), "1970-01-01T00:00:01.500Z");
        assert_eq!(java_instant(1_000_001), "1970-01-01T00:00:01.000001Z");
    }

    #[test]
    fn data_collections_expand_against_the_captured_tables() {
        let req = SnapshotRequest {
            kind: SnapshotKind::Incremental,
            collections: vec!["public\\.a.*".into(), "public.abc".into(), "x.gone".into()],
            conditions: vec![crate::event::signal::AdditionalCondition {
                collection: crate::util::full_match_regex("PUBLIC.ABC", true).unwrap(),
                filter: "n > 1".into(),
            }],
            surrogate_key: None,
        };
        let captured = [
            "public.abc".to_string(),
            "public.ab".into(),
            "public.b".into(),
        ];
        let got = expand(&req, &captured);
        let ids: Vec<&str> = got.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["public.abc", "public.ab", "x.gone"]);
        assert_eq!(got[0].condition.as_deref(), Some("(n > 1)"));
        assert_eq!(got[1].condition, None);
    }

    #[test]
    fn keys_take_the_java_class_the_driver_returns() {
        assert_eq!(
            java_value(JavaKind::Int, Some("7".into())),
            JavaValue::Int(7)
        );
        assert_eq!(
            java_value(JavaKind::Long, Some("7".into())),
            JavaValue::Long(7)
        );
        assert_eq!(
            java_value(JavaKind::Str, Some("7".into())),
            JavaValue::Str("7".into())
        );
        assert_eq!(java_value(JavaKind::Int, None), JavaValue::Null);
        assert!(matches!(
            java_value(
                JavaKind::Uuid,
                Some("01234567-89ab-cdef-fedc-ba9876543210".into())
            ),
            JavaValue::Uuid(0x0123456789abcdef, 0xfedcba9876543210)
        ));
    }
}
