//! The parallel snapshot (`snapshot.max.threads` > 1): each table is split into ranges of its
//! heap pages, read by several connections that all import the snapshot transaction's
//! snapshot (`pg_export_snapshot()` / `SET TRANSACTION SNAPSHOT`), so the parallel snapshot
//! sees exactly the rows the serial one would. The readers also convert their rows (transform
//! chain, converters, registry ids) on their own tasks; the pipeline sends what they made.
//!
//! Invariants:
//! - the page ranges of a table cover all its pages once, the last one open-ended, so every
//!   row version the snapshot sees is read exactly once;
//! - tables are read one after another, so the records of two tables never interleave;
//! - Debezium's `source.snapshot` markers stay exact: a reader converts only the rows between
//!   the first and the last of its range and hands those two over unconverted. Each range's
//!   first row reaches the pipeline before its other rows, so the first row the pipeline gets
//!   for a table is the table's first record (`first_in_data_collection`, or `first`), and
//!   the last range boundary it gets is held back until the table is done (the table's
//!   `last_in_data_collection`, or the snapshot's `last`);
//! - every queue is bounded: the readers' channel holds at most two batches per reader, each
//!   about `SNAPSHOT_BATCH_BYTES` of rows.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_postgres::Client;

use crate::config::ConnectorConfig;
use crate::convert::KafkaBatch;
use crate::error::{Error, Result};
use crate::event::envelope::change_records;
use crate::event::ChangeEvent;
use crate::pg::relation::TableSchema;
use crate::pg::snapshot::{self as cursor, CursorSource, PageRange};
use crate::sink::Sink;

use super::processor::{Processor, RecordOutput, SourceContext};
use super::relations::Catalog;
use super::snapshot::{next_fetch_size, snapshot_event, HeldBack, ProgressLog, SnapshotTx};
use super::Counters;

/// The oldest server with TID range scans: before it, each page range would read the whole
/// table, so the snapshot stays serial.
const MIN_SERVER_VERSION: u32 = cursor::TID_RANGE_SERVER_VERSION;

/// The reader connections of one snapshot, each in the snapshot transaction's snapshot, with
/// the output each converts with. Empty when the snapshot is serial.
pub(super) struct Readers {
    idle: Vec<(Client, RecordOutput)>,
    /// Page ranges per table: `snapshot.max.threads` × `snapshot.max.threads.multiplier`.
    ranges_per_table: usize,
}

impl Readers {
    /// No readers: every table is read on the snapshot connection.
    pub(super) fn serial() -> Self {
        Readers {
            idle: Vec::new(),
            ranges_per_table: 1,
        }
    }

    /// Whether tables are split over reader connections.
    pub(super) fn parallel(&self) -> bool {
        !self.idle.is_empty()
    }
}

/// What a reader hands to the pipeline.
enum ReaderOut {
    /// The first or the last row of a page range, unconverted (its marker is not known yet).
    Boundary(Box<ChangeEvent>),
    /// Converted records of rows between them (marker `true`), and how many rows they are.
    Records(KafkaBatch, u64),
}

/// One table's parallel read: what every reader needs.
struct TableJob {
    table: Arc<TableSchema>,
    columns: Vec<String>,
    ranges: Mutex<VecDeque<PageRange>>,
    tx: SnapshotTx,
    config: Arc<ConnectorConfig>,
    source: SourceContext,
    counters: Arc<Counters>,
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// The readers of a snapshot whose transaction is open on `snap_sql`: with
    /// `snapshot.max.threads` > 1 (on PostgreSQL 14+), that many connections, each importing
    /// its snapshot (or, when the isolation mode gives each statement its own snapshot, each
    /// in a transaction of that mode). Errors: a connection or the import failed.
    pub(super) async fn open_readers(&self, snap_sql: &Client) -> Result<Readers> {
        let threads = self.config.snapshot_threads;
        if threads.threads <= 1 {
            return Ok(Readers::serial());
        }
        if self.server_version < MIN_SERVER_VERSION {
            tracing::warn!(server_version = self.server_version,
                "snapshot.max.threads > 1 needs PostgreSQL 14 or later (TID range scans): the snapshot reads its tables serially");
            return Ok(Readers::serial());
        }
        if threads.legacy {
            tracing::info!(
                "legacy.snapshot.max.threads=true: pgcdc reads the tables one after another, each split over the threads, which keeps the source.snapshot markers exact"
            );
        }
        let exported = export_snapshot(snap_sql).await?;
        let mut idle = Vec::with_capacity(threads.threads);
        for _ in 0..threads.threads {
            let client = crate::pg::sql::connect_for_snapshot(&self.config.database).await?;
            let isolation = self.config.snapshot_isolation_mode;
            cursor::begin(&client, exported.as_deref(), isolation, self.server_version).await?;
            idle.push((client, self.output.fork(&self.config)?));
        }
        let ranges_per_table = threads.threads * threads.multiplier;
        if exported.is_some() {
            tracing::info!(
                threads = threads.threads,
                ranges_per_table,
                "snapshot reads each table over several connections in one snapshot"
            );
        } else {
            tracing::info!(threads = threads.threads, ranges_per_table,
                isolation = ?self.config.snapshot_isolation_mode,
                "snapshot reads each table over several connections, each statement in its own snapshot (snapshot.isolation.mode)");
        }
        Ok(Readers {
            idle,
            ranges_per_table: threads.threads * threads.multiplier,
        })
    }

    /// Reads `table` (its published `columns`) in page ranges over the readers, when it has
    /// more than one page. `None`: too small to split, the caller reads it serially. Returns
    /// the rows read.
    pub(super) async fn snapshot_table_parallel(
        &mut self,
        readers: &mut Readers,
        snap_sql: &Client,
        table: TableSchema,
        columns: Vec<String>,
        (index, tx, held): (usize, &SnapshotTx, &mut HeldBack),
        progress: &mut ProgressLog,
    ) -> Result<Option<u64>> {
        let pages = cursor::relation_pages(snap_sql, table.relation_id).await?;
        let ranges = cursor::split_pages(pages, readers.ranges_per_table);
        if ranges.len() < 2 {
            return Ok(None);
        }
        tracing::debug!(table = %table.full_name(), pages, ranges = ranges.len(), "snapshot splits the table");
        let job = Arc::new(TableJob {
            table: Arc::new(table),
            columns,
            ranges: Mutex::new(ranges.into()),
            tx: *tx,
            config: self.config.clone(),
            source: self.source.clone(),
            counters: self.counters.clone(),
        });
        let (out, mut incoming) = mpsc::channel(2 * readers.idle.len());
        let mut tasks = JoinSet::new();
        for (client, output) in readers.idle.drain(..) {
            tasks.spawn(read_ranges(client, output, job.clone(), out.clone()));
        }
        drop(out);
        let mut rows = 0u64;
        while let Some(message) = incoming.recv().await {
            rows += self.publish_read(message?, index, tx, held).await?;
            progress.batch(&self.counters, rows);
        }
        while let Some(joined) = tasks.join_next().await {
            let reader = joined.map_err(|e| {
                Error::new(
                    crate::error::ErrorKind::Internal,
                    format!("a snapshot reader task ended abnormally: {e}"),
                )
            })?;
            readers.idle.push(reader);
        }
        Ok(Some(rows))
    }

    /// Publishes what a reader handed over as part of the snapshot's unit; returns its rows.
    async fn publish_read(
        &mut self,
        message: ReaderOut,
        index: usize,
        tx: &SnapshotTx,
        held: &mut HeldBack,
    ) -> Result<u64> {
        match message {
            ReaderOut::Boundary(ev) => {
                self.counters.add_snapshot_row();
                let first_in_table = !held.table_started(index);
                if let Some(ready) = held.push(*ev, first_in_table, index) {
                    self.emit(ready, tx.token).await?;
                }
                Ok(1)
            }
            ReaderOut::Records(records, rows) => {
                // The table's first row goes out before any other row of it.
                if let Some(first) = held.release_first(index) {
                    self.emit(first, tx.token).await?;
                }
                for record in records.iter() {
                    self.sink.send(&record, tx.token).await?;
                    self.counters.add_record();
                }
                Ok(rows)
            }
        }
    }
}

/// `pg_export_snapshot()` of the transaction on `snap_sql`, when its isolation level gives it
/// one snapshot (repeatable read, serializable); `None` otherwise (each statement has its own
/// snapshot, and so will each reader's).
async fn export_snapshot(snap_sql: &Client) -> Result<Option<String>> {
    let level: String = snap_sql
        .query_one("SELECT current_setting('transaction_isolation')", &[])
        .await?
        .get(0);
    if level != "repeatable read" && level != "serializable" {
        return Ok(None);
    }
    let row = snap_sql
        .query_one("SELECT pg_export_snapshot()", &[])
        .await?;
    Ok(Some(row.get(0)))
}

/// A reader: takes page ranges of `job` until none is left, reading each through a cursor on
/// `client` and handing its rows over on `out`. A failure is handed over too and ends it.
/// Returns the connection and the output for the next table.
async fn read_ranges(
    client: Client,
    mut output: RecordOutput,
    job: Arc<TableJob>,
    out: mpsc::Sender<Result<ReaderOut>>,
) -> (Client, RecordOutput) {
    loop {
        let range = job
            .ranges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let Some(range) = range else { break };
        if let Err(e) = read_range(&client, &mut output, &job, range, &out).await {
            let _ = out.send(Err(e)).await;
            break;
        }
    }
    (client, output)
}

/// Reads one page range: its first and last rows go out as boundaries, the rows between as
/// converted records, in batches.
async fn read_range(
    client: &Client,
    output: &mut RecordOutput,
    job: &TableJob,
    range: PageRange,
    out: &mpsc::Sender<Result<ReaderOut>>,
) -> Result<()> {
    let t = &job.table;
    let read = CursorSource::Pages(range);
    cursor::open_cursor(
        client,
        &t.descriptor.schema,
        &t.descriptor.table,
        &job.columns,
        read,
    )
    .await?;
    let mut fetch = job.config.snapshot_fetch_size.min(64);
    let mut pending: Option<ChangeEvent> = None;
    let mut first_sent = false;
    loop {
        let rows = cursor::fetch(client, fetch, job.columns.len()).await?;
        if rows.is_empty() {
            break;
        }
        fetch = next_fetch_size(&rows, job.config.snapshot_fetch_size);
        let mut batch = Batch::default();
        for row in rows {
            let ev = snapshot_event(t, &row, &job.tx, &job.source, &job.config)?;
            let Some(previous) = pending.replace(ev) else {
                continue;
            };
            if !first_sent {
                first_sent = true;
                hand_over(out, Ok(ReaderOut::Boundary(Box::new(previous)))).await?;
                continue;
            }
            for record in change_records(previous, &output.options) {
                output
                    .render(record, &job.counters, &mut batch.records)
                    .await?;
            }
            batch.rows += 1;
            if batch.records.bytes() >= RECORDS_BATCH_BYTES {
                batch.hand_over(out, &job.counters).await?;
            }
        }
        batch.hand_over(out, &job.counters).await?;
    }
    cursor::close_cursor(client).await?;
    if let Some(last) = pending {
        hand_over(out, Ok(ReaderOut::Boundary(Box::new(last)))).await?;
    }
    Ok(())
}

/// Records a reader converted and has not handed over yet.
#[derive(Default)]
struct Batch {
    records: KafkaBatch,
    rows: u64,
}

/// The key and value bytes after which a reader hands its converted records over: the
/// readers' channel then holds at most `2 × readers` of these.
const RECORDS_BATCH_BYTES: usize = 512 * 1024;

impl Batch {
    /// Hands the rows converted so far over (if any), counting them, and starts over.
    async fn hand_over(
        &mut self,
        out: &mpsc::Sender<Result<ReaderOut>>,
        counters: &Counters,
    ) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let batch = std::mem::take(self);
        counters.add_snapshot_rows(batch.rows);
        hand_over(out, Ok(ReaderOut::Records(batch.records, batch.rows))).await
    }
}

/// Sends `message` to the pipeline. Errors: the pipeline stopped listening (it failed or
/// was stopped), which ends the reader.
async fn hand_over(
    out: &mpsc::Sender<Result<ReaderOut>>,
    message: Result<ReaderOut>,
) -> Result<()> {
    out.send(message).await.map_err(|_| {
        Error::new(
            crate::error::ErrorKind::Internal,
            "the snapshot stopped reading",
        )
    })
}
