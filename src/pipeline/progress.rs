//! What the processor remembers between units, and the only code that moves it: the last
//! commit (the first element of `source.sequence`, the offsets of an idle heartbeat's unit)
//! and the idle position (what an idle heartbeat or a keepalive may confirm).
//!
//! Invariants, checked with `debug_assert!` in debug builds: the idle position never moves
//! back, and the commits of one stream arrive in WAL order (pgoutput sends them so; a snapshot
//! on an existing slot streams the slot twice, see [`Progress::stream_restarted`]).

use crate::lsn::Lsn;
use crate::offsets::ack::CommitInfo;

/// The processor's progress (see the module documentation).
#[derive(Debug, Clone)]
pub(super) struct Progress {
    /// End LSN of the last completed unit, the first element of `source.sequence`.
    last_commit_lsn: Option<Lsn>,
    /// Commit time of the last transaction, µs since the Unix epoch.
    last_commit_time_us: Option<i64>,
    /// The newest position up to which everything was processed with no transaction open (a
    /// commit's end, or a keepalive's `wal_end` seen while idle): what an idle heartbeat may
    /// confirm.
    idle_position: Lsn,
    /// The last committed transaction, for the offsets of an idle heartbeat's unit.
    last_commit: CommitInfo,
    /// The end of the last transaction committed in this stream (not the resumed position).
    stream_commit: Option<Lsn>,
    /// Table size of Debezium's per-transaction collection map, which only grows during a run
    /// (it decides the order of `data_collections`).
    tx_map_capacity: usize,
}

impl Progress {
    /// Progress of a run that resumes at `resume_lsn`, after a stored commit at
    /// `last_commit_lsn` (the stored offsets' `lsn_commit`), if any.
    pub(super) fn new(resume_lsn: Lsn, last_commit_lsn: Option<Lsn>) -> Self {
        Progress {
            last_commit_lsn,
            last_commit_time_us: None,
            idle_position: resume_lsn,
            last_commit: CommitInfo {
                end_lsn: resume_lsn,
                ..Default::default()
            },
            stream_commit: None,
            tx_map_capacity: crate::util::JAVA_HASH_MAP_INITIAL_CAPACITY,
        }
    }

    /// End LSN of the last completed unit (`source.sequence`'s first element).
    pub(super) fn last_commit_lsn(&self) -> Option<Lsn> {
        self.last_commit_lsn
    }

    /// Commit time of the last transaction, µs since the Unix epoch.
    pub(super) fn last_commit_time_us(&self) -> Option<i64> {
        self.last_commit_time_us
    }

    /// What an idle heartbeat may confirm.
    pub(super) fn idle_position(&self) -> Lsn {
        self.idle_position
    }

    /// The last committed transaction.
    pub(super) fn last_commit(&self) -> CommitInfo {
        self.last_commit.clone()
    }

    /// Debezium's per-transaction collection map size so far.
    pub(super) fn tx_map_capacity(&self) -> usize {
        self.tx_map_capacity
    }

    /// A transaction committed: `info` (at `info.end_lsn`, at `info.commit_time_us`), with
    /// its collection map grown to `tx_map_capacity`. Moves the idle position to its end.
    pub(super) fn committed(&mut self, info: CommitInfo, tx_map_capacity: usize) {
        debug_assert!(
            self.stream_commit.is_none_or(|prev| info.end_lsn >= prev),
            "commit at {} after one at {:?} in the same stream: pgoutput sends commits in WAL order",
            info.end_lsn,
            self.stream_commit
        );
        debug_assert!(
            tx_map_capacity >= self.tx_map_capacity,
            "the map only grows"
        );
        self.stream_commit = Some(info.end_lsn);
        self.tx_map_capacity = tx_map_capacity;
        self.last_commit_lsn = Some(info.end_lsn);
        self.last_commit_time_us = Some(info.commit_time_us);
        let end = info.end_lsn;
        self.last_commit = info;
        self.idle(end);
    }

    /// The slot is streamed again from its confirmed position (the last pass of a snapshot on
    /// an existing slot): commits before the previous stream's last one arrive again.
    pub(super) fn stream_restarted(&mut self) {
        self.stream_commit = None;
    }

    /// A non-transactional logical message at `lsn` completed a unit of its own.
    pub(super) fn message_unit(&mut self, lsn: Lsn) {
        self.last_commit_lsn = Some(lsn);
    }

    /// Everything up to `lsn` was processed with no transaction open: the idle position
    /// moves forward to it (never back).
    pub(super) fn idle(&mut self, lsn: Lsn) {
        let moved = self.idle_position.max(lsn);
        debug_assert!(moved >= self.idle_position);
        self.idle_position = moved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_moves_the_idle_position_and_nothing_moves_it_back() {
        let mut p = Progress::new(Lsn(100), Some(Lsn(90)));
        assert_eq!(
            (p.idle_position(), p.last_commit_lsn()),
            (Lsn(100), Some(Lsn(90)))
        );
        p.idle(Lsn(50));
        assert_eq!(p.idle_position(), Lsn(100), "never back");
        let info = CommitInfo {
            end_lsn: Lsn(200),
            commit_time_us: 7,
            ..Default::default()
        };
        p.committed(info, 16);
        assert_eq!(p.idle_position(), Lsn(200));
        assert_eq!(p.last_commit_lsn(), Some(Lsn(200)));
        assert_eq!(p.last_commit_time_us(), Some(7));
        assert_eq!(p.tx_map_capacity(), 16);
        p.message_unit(Lsn(250));
        assert_eq!(p.last_commit_lsn(), Some(Lsn(250)));
        assert_eq!(
            p.idle_position(),
            Lsn(200),
            "a message's unit is not an idle position"
        );
    }

    #[test]
    #[should_panic(expected = "WAL order")]
    #[cfg(debug_assertions)]
    fn commits_out_of_wal_order_are_caught_in_debug_builds() {
        let mut p = Progress::new(Lsn(0), None);
        let at = |end| CommitInfo {
            end_lsn: Lsn(end),
            ..Default::default()
        };
        p.committed(at(300), 16);
        p.stream_restarted();
        p.committed(at(200), 16);
        p.committed(at(100), 16);
    }
}
