//! Ordered acknowledgement tracking, O(1) per record.
//!
//! Transactions enter in commit order ([`AckTracker::begin`]); each produced record adds one
//! outstanding count to its transaction ([`AckTracker::add`]) and each delivery report removes
//! it ([`AckTracker::ack`]). When the Commit has been seen ([`AckTracker::commit`]) and the
//! count is zero, the transaction is complete. The flushable LSN advances over the completed
//! prefix of the queue, to the end LSN of its newest member, and never moves back.
//!
//! With no transaction open and nothing in flight, a keepalive's `wal_end` may be confirmed
//! ([`AckTracker::idle`]), so a slot whose tables are idle does not pin WAL.
//!
//! A hold ([`AckTracker::hold`]) caps what [`AckTracker::flushable`] reports, while the
//! pipeline replays a stretch of the slot it must be able to read again (see
//! [`crate::pipeline::fence`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::lsn::Lsn;

/// The token of a tracked unit (a transaction, the snapshot, a heartbeat): its sequence
/// number, carried by each of its records as the delivery opaque.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckToken(pub u64);

#[derive(Debug)]
struct Tx {
    outstanding: u64,
    /// While records of it wait: when it last made progress (its first waiting record was
    /// sent, or one of its records was acknowledged).
    waiting_since: Option<Instant>,
    /// End LSN once the Commit was processed; `None` while open.
    end_lsn: Option<Lsn>,
    info: CommitInfo,
}

/// What is known about the newest completed transaction, for the offset file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitInfo {
    /// End LSN of the transaction.
    pub end_lsn: Lsn,
    /// Transaction id.
    pub xid: u32,
    /// Commit time, µs since the Unix epoch.
    pub commit_time_us: i64,
    /// The unit completes a snapshot at `end_lsn` (the initial snapshot on a new slot, or the
    /// marker of a snapshot on an existing one): its offsets say the snapshot completed.
    pub completes_snapshot: bool,
    /// The unit only moves the confirmed position past WAL with nothing to publish (a
    /// heartbeat between transactions, at the idle position): no commit-to-acknowledgement
    /// latency is observed, and its position is never written to the offsets. A position
    /// reached while idle can lie inside a transaction still open on the server (whose
    /// changes before it commit later): as `lsn_proc`, Debezium would take them for
    /// published after a switch back and skip them.
    pub idle: bool,
    /// The unit is a transaction that a snapshot on an existing slot contains, published by
    /// its first pass with every transaction before it (see `pipeline::fence`): it may
    /// complete, be stored and be confirmed before the snapshot completes, and its offsets
    /// still say the snapshot is in progress. A crash during the snapshot then resumes the
    /// slot after it, instead of replaying everything since the snapshot first began.
    pub before_snapshot: bool,
    /// A running incremental snapshot's progress once this unit is published (its offsets
    /// carry it), shared by the units that do not move it.
    pub incremental: Option<std::sync::Arc<crate::offsets::incremental::IncrementalProgress>>,
    /// An initial snapshot in progress, with the tables it completed (see
    /// [`crate::offsets::initial`]): set on the snapshot's checkpoints (the unit that ends as
    /// a table is complete) and on the transactions published ahead of it, whose offsets then
    /// say the snapshot is in progress and which tables need not be read again.
    pub initial: Option<std::sync::Arc<crate::offsets::initial::InitialProgress>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Sequence number of `txs[0]`.
    front_seq: u64,
    txs: VecDeque<Tx>,
    last_completed: Option<CommitInfo>,
    failure: Option<Arc<Error>>,
    in_flight: u64,
    /// Delivery reports received, ever.
    acked_total: u64,
    /// Commit to acknowledgement of completed transactions.
    latency: AckLatency,
}

/// Upper bounds (seconds) of the commit-to-acknowledgement latency buckets; the last bucket is
/// everything above.
pub const ACK_LATENCY_BOUNDS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// A histogram of the time from a transaction's commit in PostgreSQL to the moment Kafka had
/// acknowledged all its records (the wall clocks of both machines, so skew shows in it).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct AckLatency {
    /// Transactions per bucket of [`ACK_LATENCY_BOUNDS`], and one more for the rest.
    pub buckets: [u64; ACK_LATENCY_BOUNDS.len() + 1],
    /// Sum of the latencies, in seconds.
    pub sum_seconds: f64,
    /// Transactions observed.
    pub count: u64,
}

impl AckLatency {
    fn observe(&mut self, seconds: f64) {
        let seconds = seconds.max(0.0);
        let i = ACK_LATENCY_BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(ACK_LATENCY_BOUNDS.len());
        self.buckets[i] += 1;
        self.sum_seconds += seconds;
        self.count += 1;
    }
}

/// Where a Kafka error was reported: a record's delivery report (which stops progress), or
/// the client (brokers unreachable, authentication: retried by the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorStage {
    /// A record's delivery failed.
    Delivery,
    /// The Kafka client reported an error of its connections.
    Client,
}

impl ErrorStage {
    /// `delivery` or `client`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorStage::Delivery => "delivery",
            ErrorStage::Client => "client",
        }
    }
}

/// What the producer holds and the errors Kafka reported, for a connector's whole life (one
/// per connector, shared by the trackers of its runs).
#[derive(Debug, Default)]
pub struct DeliveryStats {
    /// Key, value and header bytes of records handed to the producer and not yet reported.
    queued_bytes: AtomicU64,
    /// The most `queued_bytes` has been.
    queued_bytes_max: AtomicU64,
    /// Errors by (stage, librdkafka error name).
    errors: Mutex<BTreeMap<(ErrorStage, String), u64>>,
}

impl DeliveryStats {
    /// A record of `bytes` was handed to the producer.
    pub fn queued(&self, bytes: u64) {
        let now = self.queued_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.queued_bytes_max.fetch_max(now, Ordering::Relaxed);
    }

    /// A record of `bytes` was reported (delivered or failed).
    pub fn reported(&self, bytes: u64) {
        let _ = self
            .queued_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(bytes))
            });
    }

    /// A new run's producer starts empty (the last run's producer is gone with its queue).
    pub fn new_producer(&self) {
        self.queued_bytes.store(0, Ordering::Relaxed);
    }

    /// Bytes the producer holds (key, value and headers of unreported records).
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes.load(Ordering::Relaxed)
    }

    /// The most bytes the producer has held at once since the connector started: how full its
    /// bound (`queue.buffering.max.kbytes`) got.
    pub fn queued_bytes_max(&self) -> u64 {
        self.queued_bytes_max.load(Ordering::Relaxed)
    }

    /// Counts one error named `error` (librdkafka's name, such as `MessageTimedOut`).
    pub fn count_error(&self, stage: ErrorStage, error: &str) {
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        *errors.entry((stage, error.to_string())).or_default() += 1;
    }

    /// Every error counted so far: (stage, error name, count), sorted.
    pub fn errors(&self) -> Vec<(ErrorStage, String, u64)> {
        let errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        errors
            .iter()
            .map(|((s, e), n)| (*s, e.clone(), *n))
            .collect()
    }
}

/// Tracks produced records per transaction and exposes the flushable LSN.
#[derive(Debug)]
pub struct AckTracker {
    inner: Mutex<Inner>,
    stats: Arc<DeliveryStats>,
    flushable: AtomicU64,
    /// The most [`AckTracker::flushable`] reports while held (`u64::MAX`: no hold).
    limit: AtomicU64,
    /// The first unit dropped while open, plus one (0: none; see [`AckTracker::abandon`]).
    /// Atomic: the main loop reads it after every turn.
    abandoned: AtomicU64,
}

impl AckTracker {
    /// A tracker whose flushable LSN starts at `start` (the slot's confirmed position).
    pub fn new(start: Lsn) -> Self {
        AckTracker::with_stats(start, Arc::default())
    }

    /// [`AckTracker::new`], counting into the connector's `stats` (whose queue restarts
    /// empty: a tracker comes with a new producer).
    pub fn with_stats(start: Lsn, stats: Arc<DeliveryStats>) -> Self {
        stats.new_producer();
        AckTracker {
            inner: Mutex::new(Inner::default()),
            stats,
            flushable: AtomicU64::new(start.0),
            limit: AtomicU64::new(u64::MAX),
            abandoned: AtomicU64::new(0),
        }
    }

    /// Caps the reported flushable LSN at `lsn` until [`AckTracker::release`].
    pub fn hold(&self, lsn: Lsn) {
        self.limit.store(lsn.0, Ordering::Release);
    }

    /// Raises a hold to `lsn` (never lowers it; nothing when not held): the transactions
    /// before `lsn` may be confirmed while the rest stays held.
    pub fn raise_hold(&self, lsn: Lsn) {
        let _ = self
            .limit
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |limit| {
                (limit != u64::MAX && lsn.0 > limit).then_some(lsn.0)
            });
    }

    /// The position a hold caps the flushable LSN at, if held.
    pub fn hold_position(&self) -> Option<Lsn> {
        let limit = self.limit.load(Ordering::Acquire);
        (limit != u64::MAX).then_some(Lsn(limit))
    }

    /// Ends a hold.
    pub fn release(&self) {
        self.limit.store(u64::MAX, Ordering::Release);
    }

    /// Whether a hold caps the flushable LSN.
    pub fn is_held(&self) -> bool {
        self.limit.load(Ordering::Acquire) != u64::MAX
    }

    /// Whether unit `seq` and every unit begun before it completed.
    pub fn is_completed(&self, seq: AckToken) -> bool {
        seq.0 < self.lock().front_seq
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A poisoned lock only means a panic elsewhere; the counters are still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a transaction (in commit order) and returns its sequence number.
    pub fn begin(&self) -> AckToken {
        let mut g = self.lock();
        let seq = AckToken(g.front_seq + g.txs.len() as u64);
        g.txs.push_back(Tx {
            outstanding: 0,
            waiting_since: None,
            end_lsn: None,
            info: CommitInfo::default(),
        });
        seq
    }

    /// Counts one more produced record of transaction `seq`.
    pub fn add(&self, seq: AckToken) {
        let mut g = self.lock();
        let idx = seq.0.wrapping_sub(g.front_seq) as usize;
        if let Some(tx) = g.txs.get_mut(idx) {
            if tx.outstanding == 0 {
                tx.waiting_since = Some(Instant::now());
            }
            tx.outstanding += 1;
            g.in_flight += 1;
        }
    }

    /// Records a successful delivery report for a record of transaction `seq`.
    pub fn ack(&self, seq: AckToken) {
        let mut g = self.lock();
        let idx = seq.0.wrapping_sub(g.front_seq) as usize;
        if let Some(tx) = g.txs.get_mut(idx) {
            tx.outstanding = tx.outstanding.saturating_sub(1);
            tx.waiting_since = (tx.outstanding > 0).then(Instant::now);
            g.in_flight = g.in_flight.saturating_sub(1);
        }
        g.acked_total += 1;
        self.advance(&mut g);
    }

    /// Records a failed delivery: the tracker stops advancing for good and
    /// [`AckTracker::failure`] reports `error`, with its kind, unless an earlier failure was
    /// recorded (the first one is the cause; later ones are its consequences).
    pub fn fail(&self, error: Error) {
        let mut g = self.lock();
        if g.failure.is_none() {
            g.failure = Some(Arc::new(error));
        }
    }

    /// The first delivery failure, if any.
    pub fn failure(&self) -> Option<Arc<Error>> {
        self.lock().failure.clone()
    }

    /// Records that unit `seq` was dropped while open: it will never complete, so nothing
    /// from it on can be confirmed, while the units before it still complete as their
    /// acknowledgements arrive. On a stop (a cancelled send) that is expected: what was sent
    /// of the unit is sent again after a restart. Anywhere else it is a defect, which the
    /// main loop reports as an error ([`AckTracker::abandoned`]) instead of stalling.
    pub fn abandon(&self, seq: AckToken) {
        let first = seq.0.saturating_add(1);
        let _ = self
            .abandoned
            .compare_exchange(0, first, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The first unit dropped while open, if any.
    pub fn abandoned(&self) -> Option<AckToken> {
        match self.abandoned.load(Ordering::Acquire) {
            0 => None,
            first => Some(AckToken(first - 1)),
        }
    }

    /// Marks transaction `seq` committed at `info.end_lsn`; it completes once all its records
    /// are acknowledged.
    pub fn commit(&self, seq: AckToken, info: CommitInfo) {
        let mut g = self.lock();
        let idx = seq.0.wrapping_sub(g.front_seq) as usize;
        if let Some(tx) = g.txs.get_mut(idx) {
            tx.end_lsn = Some(info.end_lsn);
            tx.info = info;
        }
        self.advance(&mut g);
    }

    fn advance(&self, g: &mut Inner) {
        if g.failure.is_some() {
            return;
        }
        while let Some(front) = g.txs.front() {
            match front.end_lsn {
                Some(end) if front.outstanding == 0 => {
                    let info = front.info.clone();
                    // A snapshot's "commit time" is when it started: not a latency.
                    if !info.completes_snapshot && !info.idle && info.commit_time_us > 0 {
                        g.latency.observe(
                            (crate::util::unix_micros() - info.commit_time_us) as f64 / 1e6,
                        );
                    }
                    g.txs.pop_front();
                    g.front_seq += 1;
                    if end.0 > self.flushable.load(Ordering::Acquire) {
                        self.flushable.store(end.0, Ordering::Release);
                    }
                    // An idle unit (a heartbeat between transactions) moves the flushable
                    // LSN only: its position is not one the offsets may record (see
                    // `CommitInfo::idle`).
                    if !info.idle {
                        g.last_completed = Some(info);
                    }
                }
                _ => break,
            }
        }
    }

    /// Confirms `wal_end` from a keepalive when no transaction is open or unacknowledged.
    /// Returns whether it did.
    pub fn idle(&self, wal_end: Lsn) -> bool {
        let g = self.lock();
        if g.failure.is_some() || !g.txs.is_empty() {
            return false;
        }
        if wal_end.0 > self.flushable.load(Ordering::Acquire) {
            self.flushable.store(wal_end.0, Ordering::Release);
        }
        true
    }

    /// The LSN that may be confirmed to PostgreSQL when the offsets store holds the
    /// transactions up to `stored`: the flushable LSN, unless a completed transaction past
    /// `stored` is not stored yet, then `stored` (never more than the flushable LSN).
    pub fn confirmable(&self, stored: Lsn) -> Lsn {
        let g = self.lock();
        let flushable = self.flushable();
        match &g.last_completed {
            Some(c) if c.end_lsn > stored => flushable.min(stored),
            _ => flushable,
        }
    }

    /// The LSN that may be reported as flushed (capped by a hold).
    pub fn flushable(&self) -> Lsn {
        let limit = self.limit.load(Ordering::Acquire);
        Lsn(self.flushable.load(Ordering::Acquire).min(limit))
    }

    /// The connector's producer queue bytes and Kafka error counts.
    pub fn stats(&self) -> &Arc<DeliveryStats> {
        &self.stats
    }

    /// How long records have waited for Kafka: over the units with records not yet
    /// acknowledged, the longest time one has gone without progress (since its first waiting
    /// record was sent, or its last acknowledgement). `None` when nothing waits. A stalled
    /// broker makes it grow; a busy one that keeps acknowledging does not.
    pub fn unacknowledged_wait(&self) -> Option<Duration> {
        let g = self.lock();
        let now = Instant::now();
        g.txs
            .iter()
            .filter_map(|tx| tx.waiting_since)
            .map(|since| now.saturating_duration_since(since))
            .max()
    }

    /// Records produced and not yet acknowledged.
    pub fn in_flight(&self) -> u64 {
        self.lock().in_flight
    }

    /// The commit-to-acknowledgement latencies of the transactions completed so far.
    pub fn latency(&self) -> AckLatency {
        self.lock().latency.clone()
    }

    /// Records produced and not yet acknowledged, and delivery reports received ever.
    pub fn delivery_progress(&self) -> (u64, u64) {
        let g = self.lock();
        (g.in_flight, g.acked_total)
    }

    /// Transactions open or awaiting acknowledgement.
    pub fn pending_transactions(&self) -> usize {
        self.lock().txs.len()
    }

    /// The newest completed transaction.
    pub fn last_completed(&self) -> Option<CommitInfo> {
        self.lock().last_completed.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_stats_count_queued_bytes_and_errors_by_stage_and_name() {
        let stats = Arc::new(DeliveryStats::default());
        let t = AckTracker::with_stats(Lsn(0), stats.clone());
        t.stats().queued(100);
        t.stats().queued(50);
        t.stats().reported(100);
        assert_eq!(stats.queued_bytes(), 50);
        assert_eq!(stats.queued_bytes_max(), 150);
        t.stats().reported(80);
        assert_eq!(stats.queued_bytes(), 0, "never below zero");
        t.stats().count_error(ErrorStage::Client, "AllBrokersDown");
        t.stats().count_error(ErrorStage::Client, "AllBrokersDown");
        t.stats()
            .count_error(ErrorStage::Delivery, "MessageTimedOut");
        // A new run's tracker keeps the counts and starts with an empty queue.
        stats.queued(7);
        let next = AckTracker::with_stats(Lsn(0), stats.clone());
        assert_eq!(next.stats().queued_bytes(), 0);
        assert_eq!(
            next.stats().errors(),
            vec![
                (ErrorStage::Delivery, "MessageTimedOut".to_string(), 1),
                (ErrorStage::Client, "AllBrokersDown".to_string(), 2),
            ]
        );
    }

    #[test]
    fn latencies_fall_in_the_first_bucket_that_holds_them() {
        let mut l = AckLatency::default();
        for s in [0.001, 0.005, 0.3, 61.0, -1.0] {
            l.observe(s);
        }
        assert_eq!(l.count, 5);
        assert_eq!(l.buckets[0], 3, "0.001, 0.005 and a clock-skewed -1 (as 0)");
        assert_eq!(l.buckets[6], 1, "0.3 <= 0.5");
        assert_eq!(l.buckets[ACK_LATENCY_BOUNDS.len()], 1, "above 60 s");
        assert!((l.sum_seconds - 61.306).abs() < 1e-9);
    }

    fn info(end: u64) -> CommitInfo {
        CommitInfo {
            end_lsn: Lsn(end),
            ..Default::default()
        }
    }

    #[test]
    fn flushable_waits_for_every_record_of_a_transaction() {
        let t = AckTracker::new(Lsn(10));
        let a = t.begin();
        t.add(a);
        t.add(a);
        t.commit(a, info(100));
        assert_eq!(t.flushable(), Lsn(10));
        t.ack(a);
        assert_eq!(t.flushable(), Lsn(10));
        t.ack(a);
        assert_eq!(t.flushable(), Lsn(100));
    }

    #[test]
    fn a_later_transaction_acked_first_does_not_pass_an_earlier_one() {
        let t = AckTracker::new(Lsn(0));
        let a = t.begin();
        t.add(a);
        t.commit(a, info(100));
        let b = t.begin();
        t.add(b);
        t.commit(b, info(200));
        t.ack(b);
        assert_eq!(t.flushable(), Lsn(0), "b is acked but a is not");
        t.ack(a);
        assert_eq!(t.flushable(), Lsn(200));
    }

    #[test]
    fn an_open_transaction_is_never_flushable_even_when_its_records_are_acked() {
        let t = AckTracker::new(Lsn(0));
        let a = t.begin();
        t.add(a);
        t.ack(a);
        assert_eq!(t.flushable(), Lsn(0));
        assert!(
            !t.idle(Lsn(500)),
            "keepalive must not pass an open transaction"
        );
        t.commit(a, info(100));
        assert_eq!(t.flushable(), Lsn(100));
    }

    #[test]
    fn empty_transactions_complete_at_commit() {
        let t = AckTracker::new(Lsn(0));
        let a = t.begin();
        t.commit(a, info(50));
        assert_eq!(t.flushable(), Lsn(50));
    }

    #[test]
    fn keepalive_wal_end_is_confirmed_only_when_idle() {
        let t = AckTracker::new(Lsn(0));
        assert!(t.idle(Lsn(70)));
        assert_eq!(t.flushable(), Lsn(70));
        let a = t.begin();
        t.add(a);
        t.commit(a, info(90));
        assert!(!t.idle(Lsn(120)));
        assert_eq!(t.flushable(), Lsn(70));
        t.ack(a);
        assert!(t.idle(Lsn(120)));
        assert_eq!(t.flushable(), Lsn(120));
        assert!(t.idle(Lsn(60)));
        assert_eq!(t.flushable(), Lsn(120), "never moves back");
    }

    #[test]
    fn a_delivery_failure_freezes_progress() {
        let t = AckTracker::new(Lsn(0));
        let a = t.begin();
        t.add(a);
        t.commit(a, info(100));
        t.fail(Error::kafka("broker said no"));
        t.fail(Error::connection("a consequence"));
        t.ack(a);
        assert_eq!(t.flushable(), Lsn(0));
        assert!(!t.idle(Lsn(200)));
        let failure = t.failure().expect("the failure is kept");
        assert_eq!(
            failure.message(),
            "broker said no",
            "the first failure is the cause"
        );
        assert_eq!(failure.kind(), crate::error::ErrorKind::Kafka);
    }

    #[test]
    fn a_hold_caps_the_flushable_lsn_until_released() {
        let t = AckTracker::new(Lsn(50));
        t.hold(Lsn(50));
        let a = t.begin();
        t.add(a);
        t.commit(a, info(100));
        assert!(!t.is_completed(a));
        t.ack(a);
        assert!(t.is_completed(a) && t.is_held());
        assert_eq!(t.flushable(), Lsn(50));
        assert!(t.idle(Lsn(300)));
        assert_eq!(t.flushable(), Lsn(50));
        t.release();
        assert!(!t.is_held());
        assert_eq!(t.flushable(), Lsn(300));
    }

    #[test]
    fn only_stored_transactions_are_confirmable() {
        let t = AckTracker::new(Lsn(10));
        assert_eq!(t.confirmable(Lsn(10)), Lsn(10));
        let a = t.begin();
        t.add(a);
        t.commit(a, info(100));
        t.ack(a);
        assert_eq!(t.flushable(), Lsn(100));
        assert_eq!(t.confirmable(Lsn(10)), Lsn(10), "completed, not stored yet");
        assert_eq!(t.confirmable(Lsn(100)), Lsn(100));
        assert!(t.idle(Lsn(150)));
        assert_eq!(
            t.confirmable(Lsn(100)),
            Lsn(150),
            "an idle position past the stored commit"
        );
        assert_eq!(
            t.confirmable(Lsn(500)),
            Lsn(150),
            "never past the flushable LSN"
        );
    }

    #[test]
    fn the_unacknowledged_wait_grows_only_while_a_unit_gets_no_acknowledgement() {
        let t = AckTracker::new(Lsn(0));
        assert_eq!(t.unacknowledged_wait(), None, "nothing sent");
        let u = t.begin();
        t.add(u);
        t.add(u);
        std::thread::sleep(Duration::from_millis(30));
        let waited = t.unacknowledged_wait().unwrap();
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        t.ack(u);
        assert!(
            t.unacknowledged_wait().unwrap() < waited,
            "an acknowledgement is progress"
        );
        t.ack(u);
        assert_eq!(t.unacknowledged_wait(), None, "every record acknowledged");
    }
}
