//! Exactly-once delivery: how the Kafka sink maps the pipeline's units onto Kafka
//! transactions (Kafka Connect's KIP-618, with its names).
//!
//! A Kafka transaction opens at the first record after the previous one committed and holds
//! whole units: PostgreSQL transactions, heartbeats, logical messages, and the snapshot. It
//! ends only between units, where `transaction.boundary` says ([`TransactionBoundary`]), and
//! its last record is the connector's offsets record in the offsets topic, saying what the
//! transaction covers. So a `read_committed` consumer sees every PostgreSQL transaction whole
//! or not at all, and the offsets a restart reads describe exactly what was committed.
//!
//! Invariants:
//! - a unit is reported complete to the [`AckTracker`] only once its Kafka transaction has
//!   committed, so the LSN confirmed to PostgreSQL follows committed Kafka transactions;
//! - while a snapshot is not complete (the tracker is held, see `pipeline::fence`), a Kafka
//!   transaction ends only after the unit that completes the snapshot, or after transactions
//!   published ahead of it ([`CommitInfo::before_snapshot`]), never with the snapshot's rows
//!   alone: a crash before the end aborts the rows and what followed them, which the next
//!   start publishes again without a duplicate;
//! - the offsets record never moves back below the offsets loaded at start (`floor`);
//! - a snapshot's checkpoint (see `pipeline::snapshot`) may end a Kafka transaction, whose
//!   offsets record then lists the tables completed: the records of a table are committed
//!   with the record that says it is complete, or aborted with it.

use std::time::{Duration, Instant};

use crate::config::{ExactlyOnceConfig, TransactionBoundary};
use crate::lsn::Lsn;
use crate::offsets::ack::{AckToken, CommitInfo};
use crate::offsets::store::Offsets;

/// Where and how the offsets record of each Kafka transaction is written.
#[derive(Debug, Clone)]
pub struct TransactionSettings {
    /// `transaction.boundary`, `max.batch.size` and the `transactional.id`.
    pub config: ExactlyOnceConfig,
    /// The offsets topic.
    pub offsets_topic: String,
    /// This connector's key in it (`["<name>",{"server":"<topic.prefix>"}]`).
    pub offsets_key: String,
    /// `transaction.timeout.ms`: the broker aborts a transaction open longer.
    pub timeout: Duration,
}

/// The fraction of `transaction.timeout.ms` after which an open transaction is given up by
/// pgcdc itself, with an error that says why, before the broker aborts it.
const TIMEOUT_MARGIN: f64 = 0.9;

/// The state of the open Kafka transaction, and what it covers.
#[derive(Debug)]
pub struct KafkaTransaction {
    settings: TransactionSettings,
    /// When the open Kafka transaction began (`None`: none is open).
    opened: Option<Instant>,
    /// Units begun and not yet closed.
    open_units: u64,
    /// Units closed in the open Kafka transaction, in order, with their commit info.
    pending: Vec<(AckToken, CommitInfo)>,
    /// Records sent in the open Kafka transaction.
    records: usize,
    /// The commit position of the last offsets written (at first, the loaded offsets').
    written: Option<Lsn>,
}

impl KafkaTransaction {
    /// No transaction open yet.
    pub fn new(settings: TransactionSettings) -> Self {
        KafkaTransaction {
            settings,
            opened: None,
            open_units: 0,
            pending: Vec::new(),
            records: 0,
            written: None,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &TransactionSettings {
        &self.settings
    }

    /// The offsets loaded at start: no offsets record goes below their commit position.
    pub fn set_floor(&mut self, floor: Option<Lsn>) {
        self.written = floor;
    }

    /// Whether a Kafka transaction is open.
    pub fn is_open(&self) -> bool {
        self.opened.is_some()
    }

    /// Notes that a Kafka transaction began at `now`.
    pub fn opened(&mut self, now: Instant) {
        self.opened = Some(now);
        self.records = 0;
    }

    /// A unit opened.
    pub fn unit_opened(&mut self) {
        self.open_units += 1;
    }

    /// A record was sent in the open transaction.
    pub fn record_sent(&mut self) {
        self.records += 1;
    }

    /// Unit `token` closed with `info`; it completes when the Kafka transaction commits.
    pub fn unit_closed(&mut self, token: AckToken, info: CommitInfo) {
        self.open_units = self.open_units.saturating_sub(1);
        self.pending.push((token, info));
    }

    /// Whether the open transaction may commit now: it holds closed units and no unit is half
    /// sent. While a snapshot on an existing slot is incomplete (`held`), only when it holds
    /// the unit that completes the snapshot (and perhaps units after it), or when its newest
    /// unit is a transaction published before the snapshot or a checkpoint of the snapshot
    /// (see [`CommitInfo::before_snapshot`]; units keep their order, so all before it are
    /// too): never with a table's rows before its checkpoint or the transactions after the
    /// snapshot alone.
    pub fn may_commit(&self, held: bool) -> bool {
        if self.pending.is_empty() || self.open_units > 0 {
            return false;
        }
        !held || self.completes_snapshot() || self.newest_before_snapshot()
    }

    /// Whether a closed unit completes the snapshot.
    fn completes_snapshot(&self) -> bool {
        self.pending.iter().any(|(_, i)| i.completes_snapshot)
    }

    /// Whether the newest closed unit that is not idle came before an incomplete snapshot.
    fn newest_before_snapshot(&self) -> bool {
        self.pending
            .iter()
            .rev()
            .find(|(_, i)| !i.idle)
            .is_some_and(|(_, i)| i.before_snapshot)
    }

    /// Whether `transaction.boundary` ends the transaction now: `idle` when no input waits.
    pub fn boundary_due(&self, idle: bool, held: bool, now: Instant) -> bool {
        if !self.may_commit(held) {
            return false;
        }
        if held && self.completes_snapshot() {
            // The unit that completes a snapshot ends its transaction at once.
            return true;
        }
        match self.settings.config.boundary {
            TransactionBoundary::Connector => true,
            TransactionBoundary::Poll => {
                idle || self.records >= self.settings.config.max_batch_size
            }
            TransactionBoundary::Interval(every) => self
                .opened
                .is_some_and(|at| now.saturating_duration_since(at) >= every),
        }
    }

    /// The offsets record to write before committing, as (token whose record it counts as,
    /// offsets); `None` when it would not move the offsets forward.
    pub fn offsets_record(&self) -> Option<(AckToken, Offsets)> {
        // Idle units (heartbeats between transactions) never set the offsets.
        let (token, last) = self.pending.iter().rev().find(|(_, i)| !i.idle)?;
        let forward = self.written.is_none_or(|w| last.end_lsn > w);
        // A snapshot's checkpoint moves the offsets forward by its completed tables.
        let checkpoint = last.initial.is_some();
        (forward || last.completes_snapshot || checkpoint).then(|| (*token, Offsets::after(last)))
    }

    /// The transaction committed, with `written` the offsets it stored (if any): returns its
    /// units, to report complete.
    pub fn committed(&mut self, written: Option<&Offsets>) -> Vec<(AckToken, CommitInfo)> {
        if let Some(lsn) = written.and_then(|o| o.lsn_commit) {
            self.written = Some(self.written.map_or(lsn, |w| w.max(lsn)));
        }
        self.opened = None;
        self.records = 0;
        std::mem::take(&mut self.pending)
    }

    /// The transaction was aborted: its units will never complete.
    pub fn aborted(&mut self) {
        self.opened = None;
        self.records = 0;
        self.pending.clear();
    }

    /// How long the open transaction has been open, when that is past the margin before
    /// `transaction.timeout.ms`.
    pub fn overdue(&self, now: Instant) -> Option<Duration> {
        let open = now.saturating_duration_since(self.opened?);
        (open.as_secs_f64() >= self.settings.timeout.as_secs_f64() * TIMEOUT_MARGIN).then_some(open)
    }

    /// How many records the open transaction holds.
    pub fn records(&self) -> usize {
        self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(boundary: TransactionBoundary) -> KafkaTransaction {
        KafkaTransaction::new(TransactionSettings {
            config: ExactlyOnceConfig {
                transactional_id: "g-c-0".into(),
                boundary,
                max_batch_size: 3,
            },
            offsets_topic: "offsets".into(),
            offsets_key: "k".into(),
            timeout: Duration::from_secs(10),
        })
    }

    fn info(end: u64, completes_snapshot: bool) -> CommitInfo {
        CommitInfo {
            end_lsn: Lsn(end),
            completes_snapshot,
            ..Default::default()
        }
    }

    #[test]
    fn a_transaction_ends_only_between_units() {
        let now = Instant::now();
        let mut t = tx(TransactionBoundary::Connector);
        assert!(!t.boundary_due(true, false, now), "nothing to commit");
        t.opened(now);
        t.unit_opened();
        t.record_sent();
        assert!(
            !t.boundary_due(true, false, now),
            "half a unit is never committed"
        );
        t.unit_closed(AckToken(0), info(100, false));
        assert!(t.boundary_due(false, false, now));
        let units = t.committed(Some(&Offsets::after(&info(100, false))));
        assert_eq!(units.len(), 1);
        assert!(!t.is_open());
    }

    #[test]
    fn idle_units_never_set_the_offsets_record() {
        let mut t = tx(TransactionBoundary::Connector);
        t.opened(Instant::now());
        let heartbeat = CommitInfo {
            idle: true,
            before_snapshot: false,
            ..info(300, false)
        };
        t.unit_closed(AckToken(0), heartbeat.clone());
        assert!(
            t.offsets_record().is_none(),
            "a heartbeat alone writes no offsets"
        );
        t.unit_closed(AckToken(1), info(200, false));
        t.unit_closed(AckToken(2), heartbeat);
        let (token, offsets) = t.offsets_record().unwrap();
        assert_eq!(token, AckToken(1));
        assert_eq!(offsets.lsn_commit, Some(Lsn(200)), "the last transaction's");
    }

    #[test]
    fn poll_ends_when_idle_or_full_and_interval_when_due() {
        let now = Instant::now();
        let mut t = tx(TransactionBoundary::Poll);
        t.opened(now);
        t.unit_opened();
        t.record_sent();
        t.unit_closed(AckToken(0), info(100, false));
        assert!(!t.boundary_due(false, false, now), "input waits, room left");
        assert!(t.boundary_due(true, false, now), "idle");
        for _ in 0..2 {
            t.record_sent();
        }
        assert!(t.boundary_due(false, false, now), "max.batch.size reached");

        let mut t = tx(TransactionBoundary::Interval(Duration::from_secs(5)));
        t.opened(now);
        t.unit_opened();
        t.unit_closed(AckToken(0), info(100, false));
        assert!(!t.boundary_due(true, false, now + Duration::from_secs(4)));
        assert!(t.boundary_due(false, false, now + Duration::from_secs(5)));
    }

    #[test]
    fn an_incomplete_snapshot_stays_in_one_transaction() {
        let now = Instant::now();
        let mut t = tx(TransactionBoundary::Connector);
        t.opened(now);
        for (seq, end) in [(0, 100), (1, 200)] {
            t.unit_opened();
            t.unit_closed(AckToken(seq), info(end, false));
            assert!(
                !t.boundary_due(true, true, now),
                "held: not before the marker"
            );
            assert!(!t.may_commit(true));
        }
        t.unit_opened();
        t.unit_closed(AckToken(2), info(150, true));
        assert!(t.boundary_due(false, true, now), "the marker ends it");
        let (token, offsets) = t.offsets_record().unwrap();
        assert_eq!(token, AckToken(2));
        assert_eq!(offsets, Offsets::snapshot_completed_at(Lsn(150)));
    }

    #[test]
    fn offsets_never_move_back_below_the_floor_and_overdue_is_reported() {
        let now = Instant::now();
        let mut t = tx(TransactionBoundary::Connector);
        t.set_floor(Some(Lsn(500)));
        t.opened(now);
        t.unit_opened();
        t.unit_closed(AckToken(0), info(300, false));
        assert!(t.offsets_record().is_none(), "300 is below the loaded 500");
        t.unit_opened();
        t.unit_closed(AckToken(1), info(600, false));
        let (_, o) = t.offsets_record().unwrap();
        assert_eq!(o.lsn_commit, Some(Lsn(600)));
        assert_eq!(t.overdue(now + Duration::from_secs(8)), None);
        assert_eq!(
            t.overdue(now + Duration::from_secs(9)),
            Some(Duration::from_secs(9))
        );
        t.aborted();
        assert!(t.offsets_record().is_none() && !t.is_open());
    }

    #[test]
    fn the_unit_that_completes_a_snapshot_commits_with_the_units_after_it() {
        // The marker of a snapshot on an existing slot is committed when the stream passes
        // the snapshot's position, at the BEGIN of the transaction that follows: that
        // transaction's unit opens and closes after it, and must not keep the Kafka
        // transaction open for ever.
        let now = Instant::now();
        let mut t = tx(TransactionBoundary::Connector);
        t.opened(now);
        t.unit_opened();
        t.unit_closed(AckToken(0), info(100, false));
        t.unit_opened();
        t.unit_closed(AckToken(1), info(150, true));
        t.unit_opened();
        assert!(!t.may_commit(true), "a unit is half sent");
        t.unit_closed(AckToken(2), info(200, false));
        assert!(
            t.boundary_due(false, true, now),
            "the marker is in it: it ends"
        );
        let (token, offsets) = t.offsets_record().unwrap();
        assert_eq!(token, AckToken(2));
        assert_eq!(offsets.lsn_commit, Some(Lsn(200)));
        assert!(
            offsets.snapshot_done(),
            "past the marker: streaming offsets"
        );
    }

    #[test]
    fn transactions_published_ahead_of_a_snapshot_commit_without_its_rows() {
        let now = Instant::now();
        let ahead = |end| CommitInfo {
            before_snapshot: true,
            ..info(end, false)
        };
        let mut t = tx(TransactionBoundary::Connector);
        t.opened(now);
        t.unit_opened();
        t.unit_closed(AckToken(0), ahead(100));
        assert!(
            t.boundary_due(false, true, now),
            "held, yet ahead of the snapshot"
        );
        let (_, offsets) = t.offsets_record().unwrap();
        assert_eq!(offsets.lsn_commit, Some(Lsn(100)));
        assert!(
            !offsets.snapshot_done(),
            "the snapshot is still in progress"
        );
        t.committed(Some(&offsets));
        // The snapshot's rows (a unit that does not complete it) never commit alone, nor with
        // a transaction published ahead of it before them.
        t.opened(now);
        t.unit_opened();
        t.unit_closed(AckToken(1), ahead(120));
        t.unit_opened();
        t.unit_closed(AckToken(2), info(90, false));
        assert!(!t.may_commit(true), "the rows wait for the marker");
        t.unit_opened();
        t.unit_closed(AckToken(3), info(300, true));
        assert!(t.may_commit(true));
    }

    #[test]
    fn a_snapshot_checkpoint_commits_the_tables_before_it_with_their_names() {
        let now = Instant::now();
        let checkpoint = |tables: &[&str]| CommitInfo {
            before_snapshot: true,
            initial: Some(std::sync::Arc::new(
                crate::offsets::initial::InitialProgress::default()
                    .with(tables.iter().map(|t| t.to_string())),
            )),
            ..info(100, false)
        };
        let mut t = tx(TransactionBoundary::Poll);
        t.set_floor(None);
        for (n, tables) in [&["public.a"][..], &["public.a", "public.b"]]
            .iter()
            .enumerate()
        {
            t.opened(now);
            t.unit_opened();
            t.unit_closed(AckToken(2 * n as u64), info(100, false));
            assert!(
                !t.may_commit(true),
                "a table's rows wait for its checkpoint"
            );
            t.unit_opened();
            t.unit_closed(AckToken(2 * n as u64 + 1), checkpoint(tables));
            assert!(t.may_commit(true), "held, yet a checkpoint");
            // The second checkpoint shares the first's position and still writes its record.
            let (token, offsets) = t.offsets_record().expect("an offsets record");
            assert_eq!(token, AckToken(2 * n as u64 + 1));
            assert!(
                !offsets.snapshot_done(),
                "the snapshot is still in progress"
            );
            assert_eq!(
                offsets.initial.unwrap().completed_tables,
                tables.iter().map(|t| t.to_string()).collect::<Vec<_>>()
            );
            t.committed(Some(&Offsets::after(&checkpoint(tables))));
        }
    }
}
