//! A snapshot taken on a slot that already exists, kept in per-key commit order.
//!
//! A slot created by this run exports its snapshot, so the snapshot and the stream meet
//! exactly. A slot that already exists (a restart after a crash or stop during the initial
//! snapshot, `snapshot.mode=always`, offsets lost while the slot stayed) cannot: the new
//! snapshot is taken now, while the slot still holds every change since its confirmed position
//! `L0`. Streaming those changes after the snapshot would move rows back to older versions;
//! skipping them by LSN would lose what only the slot holds (an outbox row inserted and
//! deleted meanwhile). So the run goes in three passes, fenced by the snapshot's transaction
//! visibility (`pg_current_snapshot()`, the set of transactions it sees) and the WAL insert
//! position `L2` read after the snapshot was taken:
//!
//! 1. **before**: stream from `L0` and publish each transaction the snapshot sees (it
//!    committed before the snapshot, so its changes come first); skip the others. Every such
//!    transaction's commit record starts before `L2`, so the pass ends at the first BEGIN at
//!    or past `L2`, or a keepalive past it between transactions (as `pg_recvlogical --endpos`
//!    does);
//! 2. read the tables in the snapshot transaction;
//! 3. **after**: stream again from `L0` (nothing was confirmed meanwhile) and publish each
//!    transaction the snapshot does not see; skip those pass 1 published. At `L2` the fence
//!    is passed: from there every transaction is new.
//!
//! Per key this is commit order: a transaction the snapshot does not see cannot have changed
//! a row before one it sees committed and released its row locks. Every transaction is
//! published once. Until pass 3 has passed `L2` and Kafka acknowledged everything before, the
//! offsets say the snapshot is incomplete, so a crash anywhere takes the snapshot again.
//!
//! What a crash does not repeat: the transactions pass 1 publishes before it skips any (in
//! practice all it publishes: the snapshot sees exactly the transactions that committed
//! before it was taken, which come first in commit order) form a prefix of the slot that is
//! complete whatever the snapshot reads. Their units are marked
//! [`CommitInfo::before_snapshot`]: the hold on the confirmed LSN rises over them as they
//! commit, the offsets store them (still saying the snapshot is in progress; exactly-once,
//! in their own Kafka transactions), and the end of pass 1 waits for them to be acknowledged
//! and confirms them before the tables are read. The next start then takes its snapshot
//! from there (`L0` moves forward), so a crash loop whose kills keep landing in snapshots
//! replays only what was written since the last attempt, instead of everything since the
//! first one. Transactions the fence skips get idle units ([`CommitInfo::idle`]): they only
//! move the confirmed position (within the hold) and are never written to the offsets.

use std::time::Duration;

use tokio::sync::watch;

use crate::config::ConnectorConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::{AckToken, CommitInfo};
use crate::pg::setup;
use crate::pg::snapshot as cursor;
use crate::pg::wire::WireConnection;
use crate::sink::{Sink, Unit};

use super::processor::Processor;
use super::relations::Catalog;
use super::startup::Started;
use super::stream::{self, StreamEnd};
use super::{shutdown, snapshot};

/// How long pass 3 waits for the slot to be released by pass 1's walsender.
const SLOT_RELEASE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the end of pass 1 waits for Kafka to acknowledge what it published.
const PREFIX_STORE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a snapshot is taken again while it sees committed transactions as running.
const COMMITTED_INVISIBLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The transactions a snapshot sees, from `pg_current_snapshot()` (`xmin:xmax:xip,...`,
/// 64-bit epoch-extended transaction ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XidSnapshot {
    xmin: u64,
    xmax: u64,
    /// In progress when the snapshot was taken (sorted).
    xip: Vec<u64>,
}

impl XidSnapshot {
    /// Parses `pg_current_snapshot()::text` (or `txid_current_snapshot()::text`).
    ///
    /// # Errors
    /// A protocol error naming the text when it is not `xmin:xmax:xip,...`.
    pub fn parse(text: &str) -> Result<XidSnapshot> {
        let bad = || Error::protocol(format!("unexpected pg_current_snapshot() value {text:?}"));
        let mut parts = text.trim().splitn(3, ':');
        let mut next = || parts.next().ok_or_else(bad);
        let xmin: u64 = next()?.parse().map_err(|_| bad())?;
        let xmax: u64 = next()?.parse().map_err(|_| bad())?;
        let list = next()?;
        let mut xip = list
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u64>().map_err(|_| bad()))
            .collect::<Result<Vec<u64>>>()?;
        if xmin > xmax {
            return Err(bad());
        }
        xip.sort_unstable();
        Ok(XidSnapshot { xmin, xmax, xip })
    }

    /// What a row's 32-bit `xmin` can tell of the snapshot, for a filter in SQL (see
    /// [`cursor::XidWindow`]: from its `xmin` on, subtransactions of the running transactions
    /// are not listed, so nothing from there counts as seen).
    pub fn window(&self) -> cursor::XidWindow {
        cursor::XidWindow {
            xmin: self.xmin as u32,
        }
    }

    /// Whether the snapshot sees (the commit of) transaction `xid`, a 32-bit id as pgoutput's
    /// BEGIN carries it; the epoch is taken as the one nearest the snapshot's `xmax`.
    pub fn sees(&self, xid: u32) -> bool {
        let full = self.extend(xid);
        full < self.xmin || (full < self.xmax && self.xip.binary_search(&full).is_err())
    }

    /// `xid` with the epoch that puts it within 2^31 of `xmax`.
    fn extend(&self, xid: u32) -> u64 {
        const HALF: i64 = 1 << 31;
        let low = (self.xmax & 0xFFFF_FFFF) as i64;
        let mut delta = xid as i64 - low;
        if delta > HALF {
            delta -= 1 << 32;
        } else if delta < -HALF {
            delta += 1 << 32;
        }
        (self.xmax as i64 + delta).max(0) as u64
    }
}

/// Which pass the fence is in (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Pass 1: publish what the snapshot sees, until `L2`.
    Before,
    /// Pass 3: publish what the snapshot does not see; off once `L2` is passed.
    After,
}

/// What the fence says about a transaction, at its BEGIN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceStep {
    /// Publish it.
    Keep,
    /// Skip it whole: the other pass publishes it.
    Skip,
    /// Pass 1 is over: this transaction (and everything after) belongs to pass 3.
    End,
    /// Pass 3 passed `L2`: publish this transaction; the snapshot can be recorded complete
    /// once everything before it is acknowledged.
    Passed,
}

/// The fence of one snapshot on an existing slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFence {
    snapshot: XidSnapshot,
    /// The WAL insert position read after the snapshot was taken (`L2`).
    position: Lsn,
    pass: Pass,
    /// Transactions skipped in this pass.
    skipped: u64,
}

impl SnapshotFence {
    /// Whether the snapshot sees (the commit of) transaction `xid` (see [`XidSnapshot::sees`]).
    pub fn sees(&self, xid: u32) -> bool {
        self.snapshot.sees(xid)
    }

    /// A fence for pass 1 from what a snapshot transaction sees: its transactions, and its
    /// WAL insert position as a record boundary (see [`record_boundary`]).
    ///
    /// # Errors
    /// A protocol error when the snapshot text cannot be read.
    pub fn from_visibility(v: &cursor::Visibility) -> Result<SnapshotFence> {
        let position = record_boundary(v.insert_lsn, v.block_size, v.segment_size);
        Ok(SnapshotFence::new(
            XidSnapshot::parse(&v.snapshot)?,
            position,
        ))
    }

    /// A fence for pass 1.
    pub fn new(snapshot: XidSnapshot, position: Lsn) -> SnapshotFence {
        SnapshotFence {
            snapshot,
            position,
            pass: Pass::Before,
            skipped: 0,
        }
    }

    /// The same fence for pass 3.
    pub fn after(&self) -> SnapshotFence {
        SnapshotFence {
            pass: Pass::After,
            skipped: 0,
            ..self.clone()
        }
    }

    /// `L2`.
    pub fn position(&self) -> Lsn {
        self.position
    }

    /// The pass.
    pub fn pass(&self) -> Pass {
        self.pass
    }

    /// Transactions skipped in this pass so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Whether pass 1 has published every transaction so far (skipped none): the published
    /// ones are then a prefix of the slot, which may be confirmed before the snapshot
    /// completes (see the module docs).
    pub fn prefix_unbroken(&self) -> bool {
        self.pass == Pass::Before && self.skipped == 0
    }

    /// Decides a transaction at its BEGIN (`final_lsn`: where its commit record starts).
    pub fn on_begin(&mut self, final_lsn: Lsn, xid: u32) -> FenceStep {
        if final_lsn >= self.position {
            return self.at_position();
        }
        let publish_here = self.snapshot.sees(xid) == (self.pass == Pass::Before);
        if publish_here {
            FenceStep::Keep
        } else {
            self.skipped += 1;
            FenceStep::Skip
        }
    }

    /// Decides a non-transactional logical message at `lsn`: it has no snapshot visibility,
    /// so pass 1 publishes those before `L2` and pass 3 those at or after it.
    pub fn on_message_outside_transaction(&mut self, lsn: Lsn) -> FenceStep {
        match (lsn >= self.position, self.pass) {
            (true, _) => self.at_position(),
            (false, Pass::Before) => FenceStep::Keep,
            (false, Pass::After) => FenceStep::Skip,
        }
    }

    /// A keepalive between transactions: a `wal_end` at or past `L2` means every transaction
    /// committed before it has been seen.
    pub fn on_idle(&mut self, wal_end: Lsn) -> Option<FenceStep> {
        (wal_end >= self.position).then(|| self.at_position())
    }

    fn at_position(&self) -> FenceStep {
        match self.pass {
            Pass::Before => FenceStep::End,
            Pass::After => FenceStep::Passed,
        }
    }
}

/// What the fence reported to the main loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceEvent {
    /// Pass 1 is over: end this stream (nothing after it was handled).
    Reached,
    /// Pass 3 passed `L2`: the snapshot is complete once unit `marker` (committed at `L2`,
    /// after every unit before the fence) is acknowledged.
    Passed {
        /// The marker unit.
        marker: AckToken,
        /// `L2`.
        position: Lsn,
    },
}

/// The processor's fence, and what it has to report.
#[derive(Debug, Default)]
pub struct FenceState {
    fence: Option<SnapshotFence>,
    event: Option<FenceEvent>,
    /// Once pass 1 ended: how many transactions it skipped.
    first_pass_skipped: Option<u64>,
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// Puts a fence in place (`None`: no fence).
    pub fn set_fence(&mut self, fence: Option<SnapshotFence>) {
        self.fence = FenceState {
            fence,
            event: None,
            first_pass_skipped: None,
        };
    }

    /// What the fence reported since the last call.
    pub fn take_fence_event(&mut self) -> Option<FenceEvent> {
        self.fence.event.take()
    }

    /// Pass 1 has ended: nothing more is handled in this stream.
    pub(super) fn fence_reached(&self) -> bool {
        self.fence.event == Some(FenceEvent::Reached)
    }

    /// The fence's decision on a transaction's BEGIN ([`FenceStep::End`] is reported).
    pub(super) fn fence_begin(&mut self, final_lsn: Lsn, xid: u32) -> FenceStep {
        let Some(fence) = self.fence.fence.as_mut() else {
            return FenceStep::Keep;
        };
        let step = fence.on_begin(final_lsn, xid);
        self.fence_report(step);
        step
    }

    /// Whether pass 1 ended having published every transaction it saw, so that what it
    /// published is a prefix of the slot that the offsets can describe (the snapshot may then
    /// record its completed tables, see [`crate::offsets::initial`]).
    pub(super) fn first_pass_published_a_prefix(&self) -> bool {
        self.fence.first_pass_skipped == Some(0)
    }

    /// Whether a fence's pass 1 runs and has skipped no transaction yet.
    pub(super) fn fence_prefix_unbroken(&self) -> bool {
        self.fence
            .fence
            .as_ref()
            .is_some_and(SnapshotFence::prefix_unbroken)
    }

    /// Whether the fence skips a non-transactional logical message at `lsn`.
    pub(super) fn fence_skips_outside_transaction(&mut self, lsn: Lsn) -> bool {
        let Some(fence) = self.fence.fence.as_mut() else {
            return false;
        };
        let step = fence.on_message_outside_transaction(lsn);
        self.fence_report(step);
        matches!(step, FenceStep::Skip | FenceStep::End)
    }

    /// A keepalive's `wal_end` between transactions.
    pub(super) fn fence_idle(&mut self, wal_end: Lsn) {
        if let Some(step) = self.fence.fence.as_mut().and_then(|f| f.on_idle(wal_end)) {
            self.fence_report(step);
        }
    }

    fn fence_report(&mut self, step: FenceStep) {
        match step {
            FenceStep::End => {
                let fence = self.fence.fence.take();
                let skipped = fence.as_ref().map_or(0, SnapshotFence::skipped);
                self.fence.first_pass_skipped = Some(skipped);
                tracing::info!(lsn = %fence.map_or(Lsn::ZERO, |f| f.position()), skipped_transactions = skipped,
                    "published the transactions the snapshot contains, in commit order; reading the tables next");
                self.fence.event = Some(FenceEvent::Reached);
            }
            FenceStep::Passed => self.pass_fence(),
            FenceStep::Keep | FenceStep::Skip => {}
        }
    }

    /// Pass 3 reached `L2`: commits the marker unit there and turns the fence off.
    fn pass_fence(&mut self) {
        let Some(fence) = self.fence.fence.take() else {
            return;
        };
        let position = fence.position();
        let marker = Unit::open(&mut self.sink);
        let info = CommitInfo {
            end_lsn: position,
            completes_snapshot: true,
            idle: false,
            before_snapshot: false,
            initial: None,
            ..self.progress.last_commit()
        };
        let marker = marker.commit(&mut self.sink, info);
        tracing::info!(lsn = %position, skipped_transactions = fence.skipped(),
            "streamed past the snapshot's position: every transaction before it is published once");
        self.fence.event = Some(FenceEvent::Passed { marker, position });
    }
}

/// Takes a snapshot on an existing slot: pass 1 and pass 2 here, then leaves a new
/// replication connection in `started` for pass 3, which the run streams next (see the
/// module docs). Returns `false` when a stop request ended it (the next start takes the
/// snapshot again).
pub async fn run<S: Sink>(
    started: &mut Started<S>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<bool> {
    let position = started.start_lsn;
    snapshot::save_in_progress(started, position).await?;
    let config = started.processor.config.clone();
    let version = started.server.version_num;
    let snap_sql = crate::pg::sql::connect_for_snapshot(&config.database).await?;
    let (tx, fence) = take_snapshot(&snap_sql, &config, version).await?;
    let fence_lsn = fence.position();
    tracing::info!(slot = %config.slot_name, from = %position, to = %fence_lsn,
        "snapshot on an existing slot: publishing first the slot's transactions the snapshot contains");
    started.processor.tracker().hold(position);
    started.processor.set_fence(Some(fence.clone()));
    if !stream_first_pass(started, &config, shutdown).await? {
        return Ok(false);
    }
    let checkpoints = started.processor.first_pass_published_a_prefix();
    if !checkpoints {
        tracing::info!(
            "the first pass skipped transactions before the snapshot's position: this snapshot records no completed tables, so a crash takes it again whole"
        );
    }
    let read = snapshot::read_tables(
        started,
        &snap_sql,
        tx,
        position,
        (false, checkpoints),
        shutdown,
    );
    match read.await? {
        None => return Ok(false),
        Some(read) => read?,
    }
    drop(snap_sql);
    if !snapshot::wait_acknowledged(started, shutdown).await? {
        started.processor.counters.snapshot_ended(false);
        return Ok(false);
    }
    // The tables are read and acknowledged: the snapshot's metrics say completed (the offsets
    // record it once the stream passes its position).
    started.processor.counters.snapshot_ended(true);
    started.processor.set_fence(Some(fence.after()));
    started.processor.stream_restarted();
    started.replication = Some(reopen_replication(started, &config).await?);
    Ok(true)
}

/// Opens the snapshot transaction and builds its fence. A snapshot that sees a committed
/// transaction as still running (its backend waits after the commit record, for example on
/// a synchronous standby) could miss a change the slot no longer holds: it is taken again
/// until there is none, for up to [`COMMITTED_INVISIBLE_TIMEOUT`].
pub(super) async fn take_snapshot(
    snap_sql: &tokio_postgres::Client,
    config: &ConnectorConfig,
    version: u32,
) -> Result<((i64, i64), SnapshotFence)> {
    let deadline = tokio::time::Instant::now() + COMMITTED_INVISIBLE_TIMEOUT;
    loop {
        let tx = cursor::begin(snap_sql, None, config.snapshot_isolation_mode, version).await?;
        let v = cursor::visibility(snap_sql, version).await?;
        if v.committed_invisible == 0 {
            return Ok((tx, SnapshotFence::from_visibility(&v)?));
        }
        snap_sql.batch_execute("ROLLBACK").await?;
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::connection(format!(
                "for {} s every snapshot saw {} committed transaction(s) as still running (is synchronous replication waiting for a standby?): a snapshot on slot {} must see every transaction the slot has already passed; retrying",
                COMMITTED_INVISIBLE_TIMEOUT.as_secs(),
                v.committed_invisible,
                config.slot_name
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The WAL insert position as the walsender's "sent up to" position would show it: right
/// after a page or segment header, the insert position is past the header, while the end of
/// the last record (what a keepalive reports) is the boundary before it.
pub fn record_boundary(insert: Lsn, block_size: u64, segment_size: u64) -> Lsn {
    const LONG_HEADER: u64 = 40;
    const SHORT_HEADER: u64 = 24;
    if segment_size > LONG_HEADER && insert.0 % segment_size == LONG_HEADER {
        Lsn(insert.0 - LONG_HEADER)
    } else if block_size > SHORT_HEADER && insert.0 % block_size == SHORT_HEADER {
        Lsn(insert.0 - SHORT_HEADER)
    } else {
        insert
    }
}

/// Pass 1: streams until the fence is reached, then ends the stream (the slot stays at its
/// position). `false`: a stop request came first.
async fn stream_first_pass<S: Sink>(
    started: &mut Started<S>,
    config: &ConnectorConfig,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<bool> {
    let repl = started.replication.take().ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "a fenced snapshot needs the replication connection",
        )
    })?;
    let mut streaming = stream::start(config, started, repl).await?;
    match stream::run(started, &mut streaming, shutdown).await {
        Ok(StreamEnd::FenceReached) => {
            streaming.stop_reading();
            if let Err(e) = store_published_prefix(started).await {
                shutdown::finish(config, started, streaming, Err(e)).await?;
                return Ok(false);
            }
            streaming.drained();
            streaming.join_reader().await?;
            Ok(true)
        }
        Ok(StreamEnd::Stopped) => {
            shutdown::finish(config, started, streaming, Ok(())).await?;
            Ok(false)
        }
        Err(e) => {
            shutdown::finish(config, started, streaming, Err(e)).await?;
            Ok(false)
        }
    }
}

/// At the end of pass 1: waits (up to [`PREFIX_STORE_TIMEOUT`]) for Kafka to acknowledge the
/// transactions pass 1 published ahead of the snapshot (exactly-once: commits their Kafka
/// transaction) and stores them, so that the final status update confirms them to the slot
/// and a crash while the tables are read resumes after them.
async fn store_published_prefix<S: Sink>(started: &mut Started<S>) -> Result<()> {
    let processor = &mut started.processor;
    if !processor.sink().flush(PREFIX_STORE_TIMEOUT).await {
        if let Some(f) = processor.sink().failure() {
            return Err(f.copy());
        }
        tracing::info!(
            "Kafka has not acknowledged everything pass 1 published yet: reading the tables now; it is confirmed later"
        );
    }
    started.offsets.save_completed(processor.tracker()).await
}

/// A new replication connection for pass 3, once pass 1's walsender has released the slot.
async fn reopen_replication<S: Sink>(
    started: &Started<S>,
    config: &ConnectorConfig,
) -> Result<WireConnection> {
    let sql = started.processor.catalog();
    let version = started.server.version_num;
    let deadline = tokio::time::Instant::now() + SLOT_RELEASE_TIMEOUT;
    loop {
        match setup::find_slot(sql, &config.slot_name, version).await? {
            None => {
                return Err(Error::server(format!(
                    "replication slot {} was dropped while the snapshot was taken",
                    config.slot_name
                )))
            }
            Some(s) if !s.active => break,
            Some(s) if tokio::time::Instant::now() >= deadline => {
                return Err(Error::connection(format!(
                    "replication slot {} is still in use (walsender PID {}) {}s after the first pass ended",
                    config.slot_name,
                    s.active_pid.unwrap_or(0),
                    SLOT_RELEASE_TIMEOUT.as_secs()
                )))
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    WireConnection::connect(&config.database, true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visibility_follows_xmin_xmax_and_the_in_progress_list() {
        let s = XidSnapshot::parse("100:110:103,107").unwrap();
        assert!(s.sees(99), "below xmin: committed before");
        assert!(s.sees(100) && s.sees(102) && s.sees(109));
        assert!(!s.sees(103) && !s.sees(107), "in progress");
        assert!(!s.sees(110) && !s.sees(5000), "at or past xmax");
    }

    #[test]
    fn thirty_two_bit_ids_take_the_snapshots_epoch() {
        let w = XidSnapshot::parse("4294967400:4294967410:4294967405,4294967401")
            .unwrap()
            .window();
        assert_eq!(w.xmin, 104);
        // Epoch 1: xmax = 2^32 + 10. Transaction 4294967290 (epoch 0) committed before it;
        // transaction 20 (epoch 1) started after it.
        let e1 = 1u64 << 32;
        let s = XidSnapshot::parse(&format!("{}:{}:", e1 + 5, e1 + 10)).unwrap();
        assert!(s.sees(4_294_967_290));
        assert!(s.sees(7));
        assert!(!s.sees(20));
    }

    #[test]
    fn malformed_snapshots_are_protocol_errors() {
        for bad in ["", "1:2", "a:2:", "5:2:", "1:2:x"] {
            assert!(XidSnapshot::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            XidSnapshot::parse("3:9:8,4").unwrap().xip,
            vec![4, 8],
            "sorted"
        );
    }

    #[test]
    fn pass_one_publishes_what_the_snapshot_sees_until_its_position() {
        let s = XidSnapshot::parse("100:110:103").unwrap();
        let mut f = SnapshotFence::new(s, Lsn(0x1000));
        assert_eq!(f.on_begin(Lsn(0x100), 101), FenceStep::Keep);
        assert_eq!(f.on_begin(Lsn(0x200), 103), FenceStep::Skip);
        assert_eq!(f.on_begin(Lsn(0x300), 104), FenceStep::Keep);
        assert_eq!(f.on_begin(Lsn(0x400), 110), FenceStep::Skip);
        assert_eq!(f.on_idle(Lsn(0xFFF)), None);
        assert_eq!(f.on_begin(Lsn(0x1000), 111), FenceStep::End);
        assert_eq!(f.on_idle(Lsn(0x1000)), Some(FenceStep::End));
        assert_eq!(f.skipped(), 2);
        assert_eq!(
            f.on_message_outside_transaction(Lsn(0x500)),
            FenceStep::Keep
        );
    }

    #[test]
    fn pass_three_publishes_the_rest_once() {
        let s = XidSnapshot::parse("100:110:103").unwrap();
        let mut f = SnapshotFence::new(s, Lsn(0x1000)).after();
        assert_eq!(f.pass(), Pass::After);
        assert_eq!(f.on_begin(Lsn(0x100), 101), FenceStep::Skip);
        assert_eq!(f.on_begin(Lsn(0x200), 103), FenceStep::Keep);
        assert_eq!(f.on_begin(Lsn(0x300), 104), FenceStep::Skip);
        assert_eq!(f.on_begin(Lsn(0x400), 110), FenceStep::Keep);
        assert_eq!(f.on_begin(Lsn(0x1000), 111), FenceStep::Passed);
        assert_eq!(
            f.on_message_outside_transaction(Lsn(0x500)),
            FenceStep::Skip
        );
        assert_eq!(
            f.on_message_outside_transaction(Lsn(0x2000)),
            FenceStep::Passed
        );
    }

    #[test]
    fn an_insert_position_just_past_a_header_becomes_the_boundary() {
        let seg = 16 << 20;
        assert_eq!(record_boundary(Lsn(3 * seg + 40), 8192, seg), Lsn(3 * seg));
        assert_eq!(
            record_boundary(Lsn(3 * seg + 8192 + 24), 8192, seg),
            Lsn(3 * seg + 8192)
        );
        assert_eq!(
            record_boundary(Lsn(3 * seg + 8192 + 64), 8192, seg),
            Lsn(3 * seg + 8192 + 64)
        );
    }

    #[test]
    fn every_transaction_is_published_by_exactly_one_pass() {
        let s = XidSnapshot::parse("1000:1040:1003,1010,1021,1039").unwrap();
        let mut before = SnapshotFence::new(s, Lsn(1 << 20));
        let mut after = before.after();
        for (i, xid) in (990u32..1060).enumerate() {
            let at = Lsn(i as u64 * 64);
            let one = before.on_begin(at, xid) == FenceStep::Keep;
            let three = after.on_begin(at, xid) == FenceStep::Keep;
            assert!(one != three, "xid {xid}: pass 1 {one}, pass 3 {three}");
        }
    }
}
