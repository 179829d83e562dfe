//! The live counters of a run: what the pipeline has done so far, read by the connector's
//! owner for its status, its logs and the metrics endpoint.
//!
//! Writers are the pipeline's own tasks; readers take a consistent-enough view at any time.
//! Every field is an atomic or a short-held lock, so counting never waits on a reader. Counts
//! only grow within a run; a [`super::Connector`] adds the runs that ended
//! ([`RunStats`]'s `Add`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::slot_monitor::SlotWatch;
use crate::event::Op;
use crate::lsn::Lsn;
use crate::offsets::ack::{AckTracker, DeliveryStats};

/// Counters of one run (or, in a [`super::Connector`], of every run since it was created), for
/// logs, status and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RunStats {
    /// Snapshot rows emitted.
    pub snapshot_rows: u64,
    /// Change events emitted while streaming (row changes, truncates and logical messages).
    pub change_events: u64,
    /// Of those, inserts (`c`).
    pub creates: u64,
    /// Updates (`u`).
    pub updates: u64,
    /// Deletes (`d`).
    pub deletes: u64,
    /// Records handed to Kafka.
    pub records: u64,
    /// Transactions processed.
    pub transactions: u64,
    /// Schema registry calls that returned a schema id (Avro converters): one per subject
    /// and schema version.
    pub registry_calls: u64,
}

impl std::ops::Add for RunStats {
    type Output = RunStats;

    fn add(self, o: RunStats) -> RunStats {
        RunStats {
            snapshot_rows: self.snapshot_rows + o.snapshot_rows,
            change_events: self.change_events + o.change_events,
            creates: self.creates + o.creates,
            updates: self.updates + o.updates,
            deletes: self.deletes + o.deletes,
            records: self.records + o.records,
            transactions: self.transactions + o.transactions,
            registry_calls: self.registry_calls + o.registry_calls,
        }
    }
}

/// The snapshot of one table, as far as it has gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableProgress {
    /// Rows read so far.
    pub rows: u64,
    /// The planner's estimate of the table's rows (`pg_class.reltuples`), when known.
    pub estimate: Option<u64>,
}

/// The snapshot of a run: Debezium's snapshot metrics.
#[derive(Debug, Clone, Default)]
pub struct SnapshotProgress {
    /// Tables the snapshot reads (Debezium's `TotalTableCount`).
    pub total_tables: u64,
    /// Tables not finished yet (`RemainingTableCount`).
    pub remaining_tables: u64,
    /// Rows read per table, by `schema.table` (`RowsScanned`).
    pub tables: BTreeMap<String, TableProgress>,
    /// When it started; `None` when no snapshot ran.
    pub started: Option<Instant>,
    /// How long it took, once completed (`SnapshotDurationInSeconds` then).
    pub duration: Option<std::time::Duration>,
    /// Completed (`SnapshotCompleted`).
    pub completed: bool,
    /// Ended by a stop or an error before completing (`SnapshotAborted`).
    pub aborted: bool,
    /// An incremental snapshot is paused (`SnapshotPaused`).
    pub paused: bool,
    /// The incremental snapshot's current chunk (`ChunkId`), while one is read.
    pub chunk_id: Option<String>,
}

impl SnapshotProgress {
    /// `SnapshotRunning`: started, neither completed nor aborted.
    pub fn running(&self) -> bool {
        self.started.is_some() && !self.completed && !self.aborted
    }

    /// Seconds it has run (or ran), 0 when it never started.
    pub fn seconds(&self) -> f64 {
        match (self.duration, self.started) {
            (Some(d), _) => d.as_secs_f64(),
            (None, Some(s)) => s.elapsed().as_secs_f64(),
            (None, None) => 0.0,
        }
    }
}

/// The slot as the server sees it (see [`super::slot_monitor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotGauges {
    /// The server's current WAL position.
    pub current_wal: Lsn,
    /// Bytes between the slot's confirmed position and the server's WAL position.
    pub lag_bytes: u64,
    /// Bytes of WAL the slot retains (from its `restart_lsn`).
    pub retained_bytes: u64,
    /// Seconds its confirmed position has stood still while WAL grew past it.
    pub stalled_seconds: u64,
}

/// The live counters behind [`RunStats`], shared between a running pipeline and its owner,
/// with the gauges of the current run (connection, last event, LSNs, snapshot progress).
#[derive(Debug, Default)]
pub struct Counters {
    snapshot_rows: AtomicU64,
    change_events: AtomicU64,
    creates: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
    records: AtomicU64,
    transactions: AtomicU64,
    registry_calls: AtomicU64,
    /// Wall-clock ms (Unix epoch) when the last change event was processed; 0: none yet.
    last_event_ms: AtomicI64,
    /// Processing time minus commit time of the last change event, in ms.
    behind_source_ms: AtomicI64,
    /// The replication connection streams.
    connected: AtomicBool,
    /// When this run stopped streaming or its snapshot was aborted (see
    /// [`Counters::last_working`]).
    stopped_working: Mutex<Option<Instant>>,
    /// Events waiting in the queue between the replication reader and the pipeline, as of
    /// the last chunk taken from it.
    queued: AtomicU64,
    /// Bytes of the messages in that queue, as of the last chunk taken from it.
    queue_bytes: AtomicU64,
    /// The most bytes that queue has held, since the connector started.
    queue_bytes_max: AtomicU64,
    /// The most text bytes of one snapshot fetch, since the connector started.
    snapshot_batch_bytes_max: AtomicU64,
    /// End LSN of the last transaction processed.
    processed_lsn: AtomicU64,
    /// The LSN last reported to PostgreSQL as flushed.
    confirmed_lsn: AtomicU64,
    /// The server's side of the slot, as the connector's slot monitor last read it.
    slot: Arc<SlotWatch>,
    /// The run's ack tracker, once its sink exists: records in flight and acknowledged.
    tracker: Mutex<Option<Arc<AckTracker>>>,
    delivery: Arc<DeliveryStats>,
    /// The connector's signal inbox (outlives its runs).
    signals: Arc<super::signals::SignalInbox>,
    /// Topics this run has written to.
    topics: Mutex<BTreeSet<String>>,
    /// The topics were reset: the run notes each again at its next record.
    topics_reset: AtomicBool,
    snapshot: Mutex<SnapshotProgress>,
}

fn now_ms() -> i64 {
    crate::util::unix_micros() / 1000
}

impl Counters {
    /// The current values.
    pub fn snapshot(&self) -> RunStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RunStats {
            snapshot_rows: get(&self.snapshot_rows),
            change_events: get(&self.change_events),
            creates: get(&self.creates),
            updates: get(&self.updates),
            deletes: get(&self.deletes),
            records: get(&self.records),
            transactions: get(&self.transactions),
            registry_calls: get(&self.registry_calls),
        }
    }

    /// Wall-clock time of the last change event, in ms since the Unix epoch (`None`: none
    /// yet in this run).
    pub fn last_event_ms(&self) -> Option<i64> {
        Some(self.last_event_ms.load(Ordering::Relaxed)).filter(|&t| t > 0)
    }

    /// Ms between the last change event's commit and its processing (Debezium's
    /// `MilliSecondsBehindSource`); `None` before the first event.
    pub fn behind_source_ms(&self) -> Option<i64> {
        self.last_event_ms()
            .map(|_| self.behind_source_ms.load(Ordering::Relaxed))
    }

    /// Events waiting between the replication reader and the pipeline (chunks behind the
    /// current one counted full), as of the last chunk the pipeline took.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Bytes waiting in the queue between the replication reader and the pipeline, and the
    /// most it has held since the connector started (its bound: `max.queue.size.in.bytes`, a
    /// quarter of `pgcdc.buffer.memory.bytes` by default).
    pub fn queue_bytes(&self) -> (u64, u64) {
        (
            self.queue_bytes.load(Ordering::Relaxed),
            self.queue_bytes_max.load(Ordering::Relaxed),
        )
    }

    /// The most text bytes one snapshot fetch has held since the connector started.
    pub fn snapshot_batch_bytes_max(&self) -> u64 {
        self.snapshot_batch_bytes_max.load(Ordering::Relaxed)
    }

    /// The replication connection is streaming (Debezium's `Connected`).
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    /// The run does its work: it streams, or takes its snapshot.
    pub fn working(&self) -> bool {
        self.connected() || self.with_snapshot(|s| s.running())
    }

    /// The last instant this run was working ([`Counters::working`]): now while it works, the
    /// moment it stopped streaming (or its snapshot ended) after that; `None` when it never
    /// got that far (still connecting, or it failed before).
    pub fn last_working(&self) -> Option<Instant> {
        if self.working() {
            return Some(Instant::now());
        }
        let stopped = *self
            .stopped_working
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // A snapshot that completed hands over to streaming: between the two the run is
        // still at work.
        stopped.or_else(|| self.with_snapshot(|s| s.completed).then(Instant::now))
    }

    /// End LSN of the last transaction processed, if any.
    pub fn processed_lsn(&self) -> Option<Lsn> {
        Some(self.processed_lsn.load(Ordering::Relaxed))
            .filter(|&l| l > 0)
            .map(Lsn)
    }

    /// The highest LSN reported to PostgreSQL as flushed in this run, if any.
    pub fn confirmed_lsn(&self) -> Option<Lsn> {
        Some(self.confirmed_lsn.load(Ordering::Relaxed))
            .filter(|&l| l > 0)
            .map(Lsn)
    }

    /// The slot as the server saw it at the last check, if it was read (also while the
    /// connector is paused or stopped).
    pub fn slot(&self) -> Option<SlotGauges> {
        self.slot.gauges()
    }

    /// Counters of a new run of a connector whose delivery stats and slot watch outlive its
    /// runs.
    pub(crate) fn for_run(
        delivery: Arc<DeliveryStats>,
        slot: Arc<SlotWatch>,
        signals: Arc<super::signals::SignalInbox>,
    ) -> Counters {
        Counters {
            delivery,
            slot,
            signals,
            ..Counters::default()
        }
    }

    /// The connector's signal inbox (see [`super::signals`]).
    pub fn signals(&self) -> &Arc<super::signals::SignalInbox> {
        &self.signals
    }

    /// The connector's slot watch.
    pub(crate) fn slot_watch(&self) -> &Arc<SlotWatch> {
        &self.slot
    }

    /// How long records of this run have waited for Kafka without progress (see
    /// [`AckTracker::unacknowledged_wait`]); `None` when nothing waits or there is no producer.
    pub fn unacknowledged_wait(&self) -> Option<std::time::Duration> {
        let t = self.tracker.lock().unwrap_or_else(|p| p.into_inner());
        t.as_ref().and_then(|t| t.unacknowledged_wait())
    }

    /// The commit-to-acknowledgement latencies of this run, once its producer exists.
    pub fn ack_latency(&self) -> Option<crate::offsets::ack::AckLatency> {
        let t = self.tracker.lock().unwrap_or_else(|p| p.into_inner());
        t.as_ref().map(|t| t.latency())
    }

    /// (records handed to Kafka and not acknowledged yet, delivery reports received), once the
    /// run's producer exists.
    pub fn deliveries(&self) -> Option<(u64, u64)> {
        let t = self.tracker.lock().unwrap_or_else(|p| p.into_inner());
        t.as_ref().map(|t| t.delivery_progress())
    }

    /// The topics this run has written to.
    pub fn topics(&self) -> BTreeSet<String> {
        self.topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The snapshot's progress.
    pub fn snapshot_progress(&self) -> SnapshotProgress {
        self.snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn with_snapshot<R>(&self, f: impl FnOnce(&mut SnapshotProgress) -> R) -> R {
        f(&mut self.snapshot.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The run ended: if it had been working, it stopped now (unless it had stopped before).
    pub(crate) fn run_ended(&self) {
        self.set_connected(false);
        let mut stopped = self
            .stopped_working
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if stopped.is_none() && self.with_snapshot(|s| s.started.is_some()) {
            *stopped = Some(Instant::now());
        }
    }

    pub(crate) fn add_snapshot_row(&self) {
        self.snapshot_rows.fetch_add(1, Ordering::Relaxed);
    }
    /// Counts `n` snapshot rows at once.
    pub(crate) fn add_snapshot_rows(&self, n: u64) {
        self.snapshot_rows.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a streamed change event of kind `op` (`None`: a logical message) committed at
    /// `commit_time_us` (µs since the Unix epoch).
    pub(crate) fn add_change_event(&self, op: Option<Op>, commit_time_us: i64) {
        self.change_events.fetch_add(1, Ordering::Relaxed);
        match op {
            Some(Op::Create) => self.creates.fetch_add(1, Ordering::Relaxed),
            Some(Op::Update) => self.updates.fetch_add(1, Ordering::Relaxed),
            Some(Op::Delete) => self.deletes.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let now = now_ms();
        self.last_event_ms.store(now, Ordering::Relaxed);
        self.behind_source_ms
            .store((now - commit_time_us / 1000).max(0), Ordering::Relaxed);
    }
    pub(crate) fn add_record(&self) {
        self.records.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn add_transaction(&self, end_lsn: Lsn) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
        self.processed_lsn.store(end_lsn.0, Ordering::Relaxed);
    }
    pub(crate) fn add_registry_call(&self) {
        self.registry_calls.fetch_add(1, Ordering::Relaxed);
    }
    /// The connector's producer queue bytes and Kafka error counts (kept across runs).
    pub fn delivery_stats(&self) -> Arc<DeliveryStats> {
        self.delivery.clone()
    }
    pub(crate) fn set_tracker(&self, tracker: Arc<AckTracker>) {
        *self.tracker.lock().unwrap_or_else(|p| p.into_inner()) = Some(tracker);
    }
    /// Notes a position reported as flushed. The highest is kept: a report may go back (an
    /// idle keepalive's WAL end confirmed before a transaction that completes after it is
    /// stored), which PostgreSQL ignores, as the slot never moves back.
    pub(crate) fn set_confirmed(&self, lsn: Lsn) {
        self.confirmed_lsn.fetch_max(lsn.0, Ordering::Relaxed);
    }
    pub(crate) fn set_queued(&self, events: usize) {
        self.queued.store(events as u64, Ordering::Relaxed);
    }
    /// Notes the reader queue's bytes now and the most it has held in this run.
    pub(crate) fn set_queue_bytes(&self, bytes: usize, high_water: usize) {
        self.queue_bytes.store(bytes as u64, Ordering::Relaxed);
        self.queue_bytes_max
            .fetch_max(high_water as u64, Ordering::Relaxed);
    }
    /// Notes the text bytes of one snapshot fetch.
    pub(crate) fn note_snapshot_batch(&self, bytes: usize) {
        self.snapshot_batch_bytes_max
            .fetch_max(bytes as u64, Ordering::Relaxed);
    }
    pub(crate) fn set_connected(&self, on: bool) {
        let was = self.connected.swap(on, Ordering::Relaxed);
        if was && !on {
            self.note_stopped_working();
        }
    }
    fn note_stopped_working(&self) {
        *self
            .stopped_working
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }
    /// Forgets the topics written to so far (Kafka Connect's `PUT .../topics/reset`); the run
    /// notes each again when it next writes to it.
    pub(crate) fn reset_topics(&self) {
        self.topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.topics_reset.store(true, Ordering::Relaxed);
    }
    /// `true` once after [`Counters::reset_topics`] (one atomic load per record otherwise).
    pub(crate) fn take_topics_reset(&self) -> bool {
        self.topics_reset.load(Ordering::Relaxed)
            && self.topics_reset.swap(false, Ordering::Relaxed)
    }
    /// Notes a topic written to (called once per topic and run, and again after a reset).
    pub(crate) fn add_topic(&self, topic: &str) {
        self.topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(topic.to_string());
    }

    /// A snapshot of `tables` (`schema.table`, with their row estimates) starts.
    pub(crate) fn snapshot_started(&self, tables: Vec<(String, Option<u64>)>) {
        self.with_snapshot(|s| {
            *s = SnapshotProgress {
                total_tables: tables.len() as u64,
                remaining_tables: tables.len() as u64,
                tables: tables
                    .into_iter()
                    .map(|(t, estimate)| (t, TableProgress { rows: 0, estimate }))
                    .collect(),
                started: Some(Instant::now()),
                ..SnapshotProgress::default()
            };
        });
    }
    /// `rows` more rows of `table` were read.
    pub(crate) fn snapshot_rows(&self, table: &str, rows: u64) {
        self.with_snapshot(|s| {
            if let Some(t) = s.tables.get_mut(table) {
                t.rows += rows;
            }
        });
    }
    /// An incremental snapshot is paused (`true`) or resumed.
    pub(crate) fn snapshot_paused(&self, paused: bool) {
        self.with_snapshot(|s| s.paused = paused);
    }
    /// The incremental snapshot reads chunk `id` (`None`: between tables, or done).
    pub(crate) fn snapshot_chunk(&self, id: Option<String>) {
        self.with_snapshot(|s| s.chunk_id = id);
    }
    /// More tables join a running incremental snapshot.
    pub(crate) fn snapshot_tables_added(&self, tables: &[String]) {
        self.with_snapshot(|s| {
            for t in tables {
                if s.tables
                    .insert(t.clone(), TableProgress::default())
                    .is_none()
                {
                    s.total_tables += 1;
                    s.remaining_tables += 1;
                }
            }
        });
    }
    /// `table` is read completely.
    pub(crate) fn snapshot_table_done(&self) {
        self.with_snapshot(|s| s.remaining_tables = s.remaining_tables.saturating_sub(1));
    }
    /// The snapshot ended: completed (`true`) or aborted.
    pub(crate) fn snapshot_ended(&self, completed: bool) {
        self.with_snapshot(|s| {
            s.duration = s.started.map(|t| t.elapsed());
            s.completed = completed;
            s.aborted = !completed;
        });
        if !completed {
            self.note_stopped_working();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn last_working_follows_the_snapshot_and_the_stream_and_stops_with_the_run() {
        let c = Counters::default();
        assert!(!c.working());
        assert_eq!(c.last_working(), None, "still connecting");

        c.snapshot_started(vec![("public.t".into(), None)]);
        assert!(c.working());
        c.snapshot_ended(true);
        let handing_over = c.last_working().unwrap();
        assert!(handing_over.elapsed() < Duration::from_secs(1));

        c.set_connected(true);
        assert!(c.working());
        c.set_connected(false);
        let stopped = c.last_working().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            c.last_working(),
            Some(stopped),
            "it does not advance once stopped"
        );
        c.run_ended();
        assert_eq!(c.last_working(), Some(stopped));
    }

    #[test]
    fn a_run_that_fails_after_its_snapshot_stopped_working_when_it_ended() {
        let c = Counters::default();
        c.snapshot_started(vec![]);
        c.snapshot_ended(true);
        c.run_ended();
        let ended = c.last_working().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(c.last_working(), Some(ended));

        let aborted = Counters::default();
        aborted.snapshot_started(vec![]);
        aborted.snapshot_ended(false);
        let at = aborted.last_working().unwrap();
        aborted.run_ended();
        assert_eq!(aborted.last_working(), Some(at));
    }
}
