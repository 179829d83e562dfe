//! Resuming after stored offsets: which of the first streamed transactions were already
//! published, so that a restart, or a switch from Debezium, re-publishes nothing.
//!
//! The slot decides where PostgreSQL starts sending, but the slot can lag the offsets:
//! Debezium confirms an LSN to the server only after Kafka Connect has flushed the offsets
//! (every `offset.flush.interval.ms`), so after Debezium stops the server re-sends
//! transactions whose records are already in Kafka. Debezium skips them on restart using its
//! stored offsets, and so does this filter, with the same offset fields:
//! - `lsn_commit` (`C`, or `lsn_proc` when absent): the end of the last transaction whose
//!   records were all delivered. A transaction whose commit record starts before `C` ended at
//!   or before `C` (commit records do not overlap, and `C` is the end of one), so it is
//!   skipped whole.
//! - `txId` (`X`), `lsn_proc` (`P`) and `messageType`: Kafka Connect stores the offset of the
//!   last acknowledged record, which can sit inside a transaction. The first transaction that
//!   ends after `C` is that transaction when its xid is `X`: its changes at or before `P`
//!   were delivered and are skipped, the rest are published. With `messageType` `COMMIT`
//!   all of it was delivered; with `BEGIN` none of its changes were (only its BEGIN
//!   transaction-metadata record).
//!
//! The filter switches off at the first transaction that ends after `C`, so it costs one
//! comparison per transaction afterwards. pgcdc's own offsets record the end of a completed
//! transaction (`messageType` `COMMIT`), so for them the filter only skips transactions the
//! slot re-sends because the slot lagged. Relation, Type and Origin messages are never
//! skipped (they rebuild state); BEGIN and COMMIT still go through, so the ack tracker
//! confirms past skipped transactions.

use crate::lsn::Lsn;
use crate::offsets::store::Offsets;

/// What to do with the changes of one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxSkip {
    /// Publish every change (the normal case).
    Keep,
    /// Every record of the transaction was published before: skip all of it, including its
    /// transaction-metadata BEGIN and END records.
    All,
    /// The transaction was published up to a position: skip changes at or before `lsn`
    /// (before it, when `inclusive` is false) and its BEGIN metadata record.
    Through {
        /// `lsn_proc` of the stored offsets.
        lsn: Lsn,
        /// Whether a change at exactly `lsn` was published.
        inclusive: bool,
    },
}

impl TxSkip {
    /// Whether a change at `lsn` in this transaction is skipped.
    pub fn skips(&self, lsn: Lsn) -> bool {
        match *self {
            TxSkip::Keep => false,
            TxSkip::All => true,
            TxSkip::Through { lsn: p, inclusive } => lsn < p || (inclusive && lsn == p),
        }
    }

    /// Whether the transaction's BEGIN metadata record is skipped.
    pub fn skips_begin(&self) -> bool {
        *self != TxSkip::Keep
    }

    /// Whether the transaction's END metadata record is skipped.
    pub fn skips_end(&self) -> bool {
        *self == TxSkip::All
    }
}

/// The transaction that was being published when the offsets were stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Partial {
    xid: u32,
    lsn_proc: Lsn,
    message_type: Stage,
}

/// How far the stored offset's transaction got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Only its BEGIN record.
    Begun,
    /// Its changes up to `lsn_proc`.
    Changes,
    /// All of it.
    Committed,
}

/// Skips what the stored offsets say was already published (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResumeFilter {
    active: Option<Active>,
    /// Set when the filter switched off at a transaction's BEGIN: the summary is logged at
    /// that transaction's COMMIT, when its skipped changes are counted.
    report_at_commit: bool,
    /// Transactions skipped whole, and changes skipped, so far.
    skipped_transactions: u64,
    skipped_changes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Active {
    commit: Lsn,
    partial: Option<Partial>,
}

impl ResumeFilter {
    /// A filter that skips nothing (no stored offsets, or a run that takes a snapshot).
    pub fn off() -> ResumeFilter {
        ResumeFilter::default()
    }

    /// The filter for streaming after `offsets`. Offsets with no streaming position (only a
    /// snapshot's `lsn`) skip nothing: a slot created at the snapshot sends nothing before it.
    pub fn from_offsets(offsets: &Offsets) -> ResumeFilter {
        let Some(commit) = offsets.lsn_commit.or(offsets.lsn_proc) else {
            return ResumeFilter::off();
        };
        let partial = match (offsets.tx_id, offsets.lsn_proc) {
            (Some(xid), Some(lsn_proc)) if (0..=u32::MAX as i64).contains(&xid) => Some(Partial {
                xid: xid as u32,
                lsn_proc,
                message_type: match offsets.message_type.as_deref() {
                    Some("COMMIT") => Stage::Committed,
                    Some("BEGIN") => Stage::Begun,
                    _ => Stage::Changes,
                },
            }),
            _ => None,
        };
        ResumeFilter {
            active: Some(Active { commit, partial }),
            ..ResumeFilter::default()
        }
    }

    /// The position before which transactions are skipped whole, while the filter is on.
    pub fn skip_before(&self) -> Option<Lsn> {
        self.active.map(|a| a.commit)
    }

    /// Decides a transaction at its BEGIN (`final_lsn`: where its commit record starts).
    /// The first transaction that ends after the stored position switches the filter off.
    pub fn on_begin(&mut self, final_lsn: Lsn, xid: u32) -> TxSkip {
        let Some(active) = self.active else {
            return TxSkip::Keep;
        };
        if final_lsn < active.commit {
            self.skipped_transactions += 1;
            return TxSkip::All;
        }
        self.active = None;
        let skip = match active.partial {
            Some(p) if p.xid == xid => match p.message_type {
                Stage::Committed => TxSkip::All,
                Stage::Begun => TxSkip::Through {
                    lsn: p.lsn_proc,
                    inclusive: false,
                },
                Stage::Changes => TxSkip::Through {
                    lsn: p.lsn_proc,
                    inclusive: true,
                },
            },
            _ => TxSkip::Keep,
        };
        if skip == TxSkip::All {
            self.skipped_transactions += 1;
        }
        self.report_at_commit = self.skipped_transactions > 0 || skip != TxSkip::Keep;
        skip
    }

    /// At a transaction's COMMIT (`end_lsn`): logs, once, what the filter skipped.
    pub fn on_commit(&mut self, end_lsn: Lsn) {
        if !std::mem::take(&mut self.report_at_commit) {
            return;
        }
        tracing::info!(
            lsn = %end_lsn,
            skipped_transactions = self.skipped_transactions,
            skipped_changes = self.skipped_changes,
            "caught up with the stored offsets: what the server sent again from before them was published already and was skipped"
        );
    }

    /// Whether a non-transactional logical message at `lsn` was published before.
    pub fn skips_outside_transaction(&mut self, lsn: Lsn) -> bool {
        let skip = self.active.is_some_and(|a| lsn < a.commit);
        if skip {
            self.skipped_changes += 1;
        }
        skip
    }

    /// Counts a skipped change.
    pub fn count_skipped_change(&mut self) {
        self.skipped_changes += 1;
    }

    /// Transactions skipped whole and changes skipped so far.
    pub fn skipped(&self) -> (u64, u64) {
        (self.skipped_transactions, self.skipped_changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(commit: u64, proc_: u64, xid: i64, message_type: &str) -> Offsets {
        Offsets {
            lsn: Some(Lsn(proc_)),
            lsn_proc: Some(Lsn(proc_)),
            lsn_commit: Some(Lsn(commit)),
            tx_id: Some(xid),
            ts_usec: Some(1),
            message_type: Some(message_type.into()),
            snapshot: None,
            snapshot_completed: false,
            incremental: None,
            initial: None,
        }
    }

    #[test]
    fn transactions_ending_before_the_stored_commit_are_skipped_whole() {
        // Debezium stopped inside transaction 771 (last delivered change at 0x200), after
        // transaction 770 ended at 0x100.
        let mut f = ResumeFilter::from_offsets(&offsets(0x100, 0x200, 771, "INSERT"));
        assert_eq!(f.on_begin(Lsn(0x80), 769), TxSkip::All);
        assert_eq!(f.on_begin(Lsn(0xF0), 770), TxSkip::All);
        let t = f.on_begin(Lsn(0x300), 771);
        assert_eq!(
            t,
            TxSkip::Through {
                lsn: Lsn(0x200),
                inclusive: true
            }
        );
        assert!(t.skips(Lsn(0x1F0)) && t.skips(Lsn(0x200)) && !t.skips(Lsn(0x210)));
        assert!(t.skips_begin() && !t.skips_end());
        // Off after the first transaction past the stored commit.
        assert_eq!(f.on_begin(Lsn(0x50), 771), TxSkip::Keep);
        assert_eq!(f.skip_before(), None);
        assert_eq!(f.skipped().0, 2);
    }

    #[test]
    fn a_commit_record_starting_at_the_stored_commit_is_not_skipped() {
        // The next commit record may start exactly where the last delivered one ended.
        let mut f = ResumeFilter::from_offsets(&offsets(0x100, 0x100, 770, "COMMIT"));
        assert_eq!(f.on_begin(Lsn(0x100), 771), TxSkip::Keep);
    }

    #[test]
    fn pgcdc_offsets_mark_a_completed_transaction() {
        let mut f = ResumeFilter::from_offsets(&offsets(0x100, 0x100, 770, "COMMIT"));
        assert_eq!(f.on_begin(Lsn(0xC0), 770), TxSkip::All);
        assert_eq!(f.on_begin(Lsn(0x180), 771), TxSkip::Keep);
    }

    #[test]
    fn a_committed_partial_transaction_is_skipped_whole() {
        let mut f = ResumeFilter::from_offsets(&offsets(0x100, 0x200, 771, "COMMIT"));
        let t = f.on_begin(Lsn(0x300), 771);
        assert_eq!(t, TxSkip::All);
        assert!(t.skips_end());
    }

    #[test]
    fn after_a_begin_record_no_change_was_published() {
        let mut f = ResumeFilter::from_offsets(&offsets(0x100, 0x200, 771, "BEGIN"));
        let t = f.on_begin(Lsn(0x300), 771);
        assert!(!t.skips(Lsn(0x200)) && t.skips(Lsn(0x1FF)) && t.skips_begin());
    }

    #[test]
    fn another_transaction_after_the_stored_commit_is_kept() {
        let mut f = ResumeFilter::from_offsets(&offsets(0x100, 0x200, 771, "UPDATE"));
        assert_eq!(f.on_begin(Lsn(0x300), 900), TxSkip::Keep);
    }

    #[test]
    fn snapshot_only_offsets_and_missing_lsn_commit() {
        let snap = Offsets {
            lsn: Some(Lsn(0x100)),
            snapshot: Some("INITIAL".into()),
            snapshot_completed: true,
            ..Offsets::default()
        };
        let mut f = ResumeFilter::from_offsets(&snap);
        assert_eq!(f.on_begin(Lsn(0x10), 1), TxSkip::Keep);
        // Debezium's loading rule: no lsn_commit means lsn_proc.
        let mut o = offsets(0, 0x200, 771, "INSERT");
        o.lsn_commit = None;
        let mut f = ResumeFilter::from_offsets(&o);
        assert_eq!(f.on_begin(Lsn(0x1F0), 770), TxSkip::All);
    }

    #[test]
    fn non_transactional_messages_before_the_stored_commit_are_skipped() {
        let mut f = ResumeFilter::from_offsets(&offsets(0x100, 0x100, 770, "COMMIT"));
        assert!(f.skips_outside_transaction(Lsn(0xF0)));
        assert!(!f.skips_outside_transaction(Lsn(0x100)));
        assert!(!ResumeFilter::off().skips_outside_transaction(Lsn(1)));
    }
}
