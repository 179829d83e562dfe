//! The parallel snapshot (`snapshot.max.threads` > 1): each table is split into ranges of its
//! `ctid`s (see [`super::table_ranges`]), read by several connections that all import the
//! snapshot transaction's snapshot (`pg_export_snapshot()` / `SET TRANSACTION SNAPSHOT`), so
//! the parallel snapshot sees exactly the rows the serial one would. The readers also convert
//! their rows (transform chain, converters, registry ids) on their own tasks; the pipeline
//! sends what they made and, at checkpoints, records how far each range was sent.
//!
//! Invariants:
//! - the ranges of a table cover its file once, the last one open-ended, so every row version
//!   the snapshot sees is read exactly once; each range is read in `ctid` order (checked);
//! - tables are read one after another, so the records of two tables never interleave;
//! - Debezium's `source.snapshot` markers stay exact: a reader hands the first and the last
//!   row of each range over unconverted, the first before the range's other rows. The
//!   pipeline marks the first of them it gets as the table's first record
//!   (`first_in_data_collection`, or `first`) and holds a range end back until another
//!   range's first or last row arrives (that range ends later) or the table ends (then it is
//!   the table's `last_in_data_collection`, or the snapshot's `last`);
//! - a checkpoint claims, for each range, only rows the pipeline has sent (a held range end is
//!   not), so a resumed snapshot reads the rest and nothing twice;
//! - every queue is bounded: the readers' channel holds at most two batches per reader, each
//!   sized so that all of them stay within the snapshot's share of `pgcdc.buffer.memory.bytes`
//!   ([`crate::config::memory::MemoryBudget::snapshot_batch_bytes`]); a reader hands its
//!   converted records over once they reach the same size, in buffers that go round between
//!   the readers and the pipeline ([`BatchPool`]) instead of being allocated per batch.

use std::sync::atomic::{AtomicUsize, Ordering};
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
use crate::pg::snapshot::{self as cursor, Tid};
use crate::sink::Sink;

use super::processor::{Processor, RecordOutput, SourceContext};
use super::relations::Catalog;
use super::snapshot::{
    marker, next_fetch_size, next_tid, snapshot_event, Checkpoints, ProgressLog, SnapshotTx,
};
use super::table_ranges::{RangeProgress, TablePlan};
use super::Counters;

/// The oldest server with TID range scans: before it, each range would read the whole table,
/// so the snapshot stays serial.
const MIN_SERVER_VERSION: u32 = cursor::TID_RANGE_SERVER_VERSION;

/// The reader connections of one snapshot, each in the snapshot transaction's snapshot, with
/// the output each converts with. Empty when the snapshot is serial.
pub(super) struct Readers {
    idle: Vec<(Client, RecordOutput)>,
    /// Ranges per table: `snapshot.max.threads` × `snapshot.max.threads.multiplier`.
    ranges_per_table: usize,
    /// The converted records' buffers, for every table of the snapshot.
    pool: Arc<BatchPool>,
}

impl Readers {
    /// No readers: every table is read on the snapshot connection.
    pub(super) fn serial() -> Self {
        Readers {
            idle: Vec::new(),
            ranges_per_table: 1,
            pool: Arc::new(BatchPool::new(0, 0)),
        }
    }

    /// Whether tables are split over reader connections.
    pub(super) fn parallel(&self) -> bool {
        !self.idle.is_empty()
    }

    /// How many ranges a table is split into (1 when serial).
    pub(super) fn ranges_per_table(&self) -> usize {
        self.ranges_per_table
    }
}

/// What a reader hands to the pipeline about range `range` of the table's plan.
enum ReaderOut {
    /// The range's first row (unconverted: the pipeline marks it), at `ctid` `Tid`, when the
    /// range has more than one row; before any other row of the range.
    Head(usize, Box<ChangeEvent>, Tid),
    /// Converted records of rows after the range's first (marker `true`), how many rows they
    /// are, and the `ctid` of the last.
    Records(usize, KafkaBatch, u64, Tid),
    /// The range's last row (unconverted), at `ctid` `Tid`: the range is read.
    Tail(usize, Box<ChangeEvent>, Tid),
    /// The range has no row.
    Empty(usize),
}

/// One table's parallel read: what every reader needs.
struct TableJob {
    table: Arc<TableSchema>,
    columns: Vec<String>,
    plan: TablePlan,
    /// The next range of `plan` to read.
    next: AtomicUsize,
    tx: SnapshotTx,
    config: Arc<ConnectorConfig>,
    source: SourceContext,
    counters: Arc<Counters>,
    pool: Arc<BatchPool>,
}

/// The table's place in the snapshot, for its markers: its index in the snapshot's order and
/// whether it is the last table.
pub(super) type TablePlace = (usize, bool);

/// The range ends the pipeline holds back: the table's last record is not known until every
/// range is read.
struct HeldTail {
    /// Whether a row of the table went out (or is held) already.
    started: bool,
    /// The held range end: its event, whether it is the table's first row, its range.
    row: Option<(ChangeEvent, bool, usize)>,
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
            cursor::scan_in_order(&client).await?;
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
        let batch_bytes = self.config.memory.snapshot_batch_bytes(threads.threads);
        Ok(Readers {
            idle,
            ranges_per_table,
            // Each reader fills one, two per reader wait in the channel, the pipeline sends one.
            pool: Arc::new(BatchPool::new(batch_bytes, 3 * threads.threads + 1)),
        })
    }

    /// Reads `table` (its published `columns`) in the ranges of `plan` over the readers, at
    /// `place` in the snapshot; with `checkpoints` (the table read in file `filenode`), a due
    /// checkpoint records how far each range was sent. Returns the rows read.
    pub(super) async fn snapshot_table_parallel(
        &mut self,
        readers: &mut Readers,
        (table, columns, plan): (TableSchema, Vec<String>, TablePlan),
        (place, tx): (TablePlace, &mut SnapshotTx),
        mut checkpoints: Option<(&mut Checkpoints<'_>, u32)>,
        progress: &mut ProgressLog,
    ) -> Result<u64> {
        tracing::debug!(table = %table.full_name(), ranges = plan.ranges.len(), "snapshot splits the table");
        let mut sent = RangeProgress::new(&plan);
        let job = Arc::new(TableJob {
            table: Arc::new(table),
            columns,
            plan,
            next: AtomicUsize::new(0),
            tx: *tx,
            config: self.config.clone(),
            source: self.source.clone(),
            counters: self.counters.clone(),
            pool: readers.pool.clone(),
        });
        let (out, mut incoming) = mpsc::channel(2 * readers.idle.len());
        let mut tasks = JoinSet::new();
        for (client, output) in readers.idle.drain(..) {
            tasks.spawn(read_ranges(client, output, job.clone(), out.clone()));
        }
        drop(out);
        let mut held = HeldTail {
            started: false,
            row: None,
        };
        let mut rows = 0u64;
        let full = job.table.full_name();
        while let Some(message) = incoming.recv().await {
            let read = (place, &mut held, &mut sent, &*job.pool);
            rows += self.publish_read(message?, read, tx).await?;
            progress.batch(&self.counters, rows);
            if let Some((c, filenode)) = checkpoints.as_mut() {
                self.checkpoint_in_table(c, tx, (&full, *filenode), &sent)
                    .await?;
            }
        }
        if let Some((last, first_in_table, _)) = held.row.take() {
            let (index, last_table) = place;
            self.emit(
                mark(last, (index, first_in_table), (last_table, true)),
                tx.token,
            )
            .await?;
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
        Ok(rows)
    }

    /// Publishes what a reader handed over as part of the snapshot's unit, marking range
    /// ends, and notes in `sent` what was sent; returns its rows.
    async fn publish_read(
        &mut self,
        message: ReaderOut,
        (place, held, sent, pool): (TablePlace, &mut HeldTail, &mut RangeProgress, &BatchPool),
        tx: &SnapshotTx,
    ) -> Result<u64> {
        let index = place.0;
        match message {
            ReaderOut::Head(range, ev, tid) => {
                // A held range end is not the table's last (this range ends later), and may be
                // its first: it goes out before this row.
                self.release_tail(held, index, sent, tx).await?;
                self.counters.add_snapshot_row();
                let first_in_table = !std::mem::replace(&mut held.started, true);
                self.emit(mark(*ev, (index, first_in_table), (false, false)), tx.token)
                    .await?;
                sent.sent_before(range, tid.next());
                Ok(1)
            }
            ReaderOut::Records(range, records, rows, last) => {
                for record in records.iter() {
                    self.sink.send(&record, tx.token).await?;
                    self.counters.add_record();
                }
                pool.give(records);
                sent.sent_before(range, last.next());
                Ok(rows)
            }
            ReaderOut::Tail(range, ev, tid) => {
                self.release_tail(held, index, sent, tx).await?;
                self.counters.add_snapshot_row();
                let first_in_table = !std::mem::replace(&mut held.started, true);
                sent.sent_before(range, tid);
                held.row = Some((*ev, first_in_table, range));
                Ok(1)
            }
            ReaderOut::Empty(range) => {
                sent.finished(range);
                Ok(0)
            }
        }
    }

    /// Sends the held range end of table `index`, if any: it is not the table's last. Its
    /// range is then wholly sent.
    async fn release_tail(
        &mut self,
        held: &mut HeldTail,
        index: usize,
        sent: &mut RangeProgress,
        tx: &SnapshotTx,
    ) -> Result<()> {
        if let Some((row, first_in_table, range)) = held.row.take() {
            self.emit(mark(row, (index, first_in_table), (false, false)), tx.token)
                .await?;
            sent.finished(range);
        }
        Ok(())
    }
}

/// `ev` with its `source.snapshot` marker: `(table index, first row of the table)`,
/// `(last table, last row of the table)`.
fn mark(
    mut ev: ChangeEvent,
    (index, first_in_table): (usize, bool),
    (last_table, last_in_table): (bool, bool),
) -> ChangeEvent {
    let first = first_in_table && index == 0;
    let last = last_in_table && last_table;
    ev.source.snapshot = Some(marker(first, first_in_table, last, last_in_table));
    ev
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

/// A reader: takes ranges of `job` until none is left, reading each through a cursor on
/// `client` and handing its rows over on `out`. A failure is handed over too and ends it.
/// Returns the connection and the output for the next table.
async fn read_ranges(
    client: Client,
    mut output: RecordOutput,
    job: Arc<TableJob>,
    out: mpsc::Sender<Result<ReaderOut>>,
) -> (Client, RecordOutput) {
    loop {
        let range = job.next.fetch_add(1, Ordering::Relaxed);
        if range >= job.plan.ranges.len() {
            break;
        }
        if let Err(e) = read_range(&client, &mut output, &job, range, &out).await {
            let _ = out.send(Err(e)).await;
            break;
        }
    }
    (client, output)
}

/// Reads range `range` of the plan in `ctid` order: its first and last rows go out
/// unconverted, the rows between as converted records, in batches.
async fn read_range(
    client: &Client,
    output: &mut RecordOutput,
    job: &TableJob,
    range: usize,
    out: &mpsc::Sender<Result<ReaderOut>>,
) -> Result<()> {
    let t = &job.table;
    let full = t.full_name();
    let source = job.plan.source(range);
    let (schema, name) = (&t.descriptor.schema, &t.descriptor.table);
    cursor::open_cursor(client, schema, name, &job.columns, source).await?;
    let width = job.columns.len();
    let mut fetch = job.config.snapshot_fetch_size.min(64);
    let mut pending: Option<(ChangeEvent, Tid)> = None;
    let mut head_sent = false;
    let mut last_tid = None;
    let mut batch = Batch::new(range, &job.pool);
    loop {
        let rows = cursor::fetch(client, fetch, width + 1).await?;
        if rows.is_empty() {
            break;
        }
        let readers = job.config.snapshot_threads.threads;
        fetch = next_fetch_size(&rows, &job.config, &job.counters, readers);
        for row in rows {
            let tid = next_tid(&full, &row[width], last_tid)?;
            last_tid = Some(tid);
            let ev = snapshot_event(t, &row[..width], &job.tx, &job.source, &job.config)?;
            let Some((previous, at)) = pending.replace((ev, tid)) else {
                continue;
            };
            if !head_sent {
                head_sent = true;
                hand_over(out, ReaderOut::Head(range, Box::new(previous), at)).await?;
                continue;
            }
            batch.add(previous, at, output, &job.counters).await?;
            if batch.records.bytes() >= job.pool.batch_bytes {
                batch.hand_over(out, &job.counters, &job.pool).await?;
            }
        }
        batch.hand_over(out, &job.counters, &job.pool).await?;
    }
    job.pool.give(batch.records);
    cursor::close_cursor(client).await?;
    let end = match pending {
        Some((last, at)) => ReaderOut::Tail(range, Box::new(last), at),
        None => ReaderOut::Empty(range),
    };
    hand_over(out, end).await
}

/// Records a reader converted and has not handed over yet.
struct Batch {
    range: usize,
    records: KafkaBatch,
    rows: u64,
    /// The `ctid` of the last row.
    last: Option<Tid>,
}

impl Batch {
    fn new(range: usize, pool: &BatchPool) -> Self {
        Batch {
            range,
            records: pool.take(),
            rows: 0,
            last: None,
        }
    }

    /// Converts `ev` (a row at `ctid` `at`, neither first nor last of its range: marker
    /// `true`) into the batch.
    async fn add(
        &mut self,
        ev: ChangeEvent,
        at: Tid,
        output: &mut RecordOutput,
        counters: &Counters,
    ) -> Result<()> {
        for record in change_records(ev, &output.options) {
            output.render(record, counters, &mut self.records).await?;
        }
        self.rows += 1;
        self.last = Some(at);
        Ok(())
    }

    /// Hands the rows converted so far over (if any), counting them, and starts over.
    async fn hand_over(
        &mut self,
        out: &mpsc::Sender<Result<ReaderOut>>,
        counters: &Counters,
        pool: &BatchPool,
    ) -> Result<()> {
        let Some(last) = self.last else {
            return Ok(());
        };
        let batch = std::mem::replace(self, Batch::new(self.range, pool));
        counters.add_snapshot_rows(batch.rows);
        let message = ReaderOut::Records(batch.range, batch.records, batch.rows, last);
        hand_over(out, message).await
    }
}

/// Sends `message` to the pipeline. Errors: the pipeline stopped listening (it failed or
/// was stopped), which ends the reader.
async fn hand_over(out: &mpsc::Sender<Result<ReaderOut>>, message: ReaderOut) -> Result<()> {
    out.send(Ok(message)).await.map_err(|_| {
        Error::new(
            crate::error::ErrorKind::Internal,
            "the snapshot stopped reading",
        )
    })
}

/// The buffers of converted records that go round between the readers and the pipeline: a
/// reader takes one, fills it to `batch_bytes` and hands it over; the pipeline sends its
/// records and gives it back. Reusing them keeps the snapshot's memory at the buffers that can
/// exist at once: allocated and freed per batch, on different threads, the allocator kept
/// far more of them than were ever in use.
#[derive(Debug)]
struct BatchPool {
    /// The bytes after which a reader hands its records over (the snapshot's batch size).
    batch_bytes: usize,
    /// How many buffers are kept: as many as can exist at once.
    keep: usize,
    free: Mutex<Vec<KafkaBatch>>,
}

/// Room for the record that takes a buffer past `batch_bytes`, so that it does not grow.
const BATCH_HEADROOM_BYTES: usize = 64 * 1024;

impl BatchPool {
    fn new(batch_bytes: usize, keep: usize) -> Self {
        BatchPool {
            batch_bytes,
            keep,
            free: Mutex::new(Vec::with_capacity(keep)),
        }
    }

    /// An empty buffer: a kept one, or a new one with room for a batch.
    fn take(&self) -> KafkaBatch {
        let kept = self.free.lock().map(|mut free| free.pop()).unwrap_or(None);
        kept.unwrap_or_else(|| KafkaBatch::with_capacity(self.batch_bytes + BATCH_HEADROOM_BYTES))
    }

    /// Gives `batch` back, emptied, unless enough are kept.
    fn give(&self, mut batch: KafkaBatch) {
        batch.clear();
        if let Ok(mut free) = self.free.lock() {
            if free.len() < self.keep {
                free.push(batch);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_hands_back_emptied_buffers_and_keeps_at_most_its_limit() {
        let pool = BatchPool::new(1024, 2);
        let topic: Arc<str> = Arc::from("t");
        let mut batches: Vec<KafkaBatch> = (0..3).map(|_| pool.take()).collect();
        for b in &mut batches {
            let record = crate::convert::KafkaRecord {
                topic: "t",
                partition: None,
                key: Some(b"k"),
                value: Some(&[7u8; 2000]),
                headers: Vec::new(),
                timestamp: None,
            };
            b.push(&record, &topic);
        }
        let grown = batches[0].capacity();
        assert!(
            grown >= 2001,
            "a new buffer has room for its batch: {grown}"
        );
        for b in batches {
            pool.give(b);
        }
        assert_eq!(
            pool.free.lock().unwrap().len(),
            2,
            "the third buffer is dropped"
        );
        let again = pool.take();
        assert!(
            again.is_empty() && again.bytes() == 0,
            "a kept buffer comes back empty"
        );
        assert!(again.capacity() >= 2001, "and keeps its capacity");
    }
}
