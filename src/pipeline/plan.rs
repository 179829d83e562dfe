//! The start-up decision, as a pure function: given `snapshot.mode`, the state of the slot
//! and what the offsets say, whether to drop a lost slot, create the slot, take a snapshot
//! and stream, or refuse to start because changes would be lost.
//!
//! The rules (Debezium's, made explicit):
//! - a slot the server invalidated (`wal_status = lost`) has lost changes: only
//!   `when_needed` may drop it, create a new one and take a new snapshot; every other mode
//!   refuses to start;
//! - a missing slot where the offsets say streaming had begun means the changes since then
//!   are gone: only modes that take a new snapshot (`always`, `when_needed`) may create a new
//!   slot and carry on (`initial_only` never streams, so it does not care);
//! - `initial` and `initial_only` snapshot until a snapshot is recorded as complete,
//!   `always` at every start, `no_data` never, `when_needed` also when the slot is missing;
//! - every mode but `initial_only` streams, creating the slot when it is missing.
//!
//! Before that, [`check_slot_position`] compares an existing slot with the offsets as
//! `offset.mismatch.strategy` says: with `trust_offset`, a slot whose `restart_lsn` has passed
//! the offsets' last processed LSN no longer holds the WAL between (it was re-created, or
//! advanced by something else), which only `when_needed` (a new snapshot) gets past; a slot
//! behind the offsets may be advanced to them.

use crate::config::{OffsetMismatchStrategy, SnapshotMode};
use crate::lsn::Lsn;
use crate::offsets::store::Offsets;

/// The replication slot as start-up found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// No slot with the configured name.
    Absent,
    /// The slot exists and can be read.
    Present,
    /// The server invalidated the slot (`wal_status = lost`).
    Lost,
}

/// What the stored offsets say about earlier runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetsState {
    /// No offsets for this connector (or an entry with no position).
    Absent,
    /// A snapshot started and did not complete.
    SnapshotIncomplete,
    /// The snapshot completed (or was never needed) and streaming had begun.
    Streaming,
}

impl OffsetsState {
    /// Classifies stored offsets.
    pub fn of(offsets: Option<&Offsets>) -> OffsetsState {
        match offsets {
            None => OffsetsState::Absent,
            Some(o) if o.snapshot_done() => OffsetsState::Streaming,
            Some(o) if o.lsn.is_some() || o.lsn_commit.is_some() || o.lsn_proc.is_some() => {
                OffsetsState::SnapshotIncomplete
            }
            Some(_) => OffsetsState::Absent,
        }
    }
}

/// What start-up does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartPlan {
    /// Drop the invalidated slot first (then it is absent).
    pub drop_lost_slot: bool,
    /// Create the slot (exporting its snapshot).
    pub create_slot: bool,
    /// Take a snapshot before streaming.
    pub snapshot: bool,
    /// Stream from the slot after the snapshot (if any).
    pub stream: bool,
}

/// Why start-up refuses to go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartRefusal {
    /// The slot was invalidated and the mode does not allow a new snapshot.
    SlotLost,
    /// The slot is missing although the offsets say streaming had begun, and the mode does
    /// not take a new snapshot: changes since then may be lost.
    PositionLost,
}

/// Decides how a run starts. Pure: see the module docs for the rules.
pub fn plan_start(
    mode: SnapshotMode,
    slot: SlotState,
    offsets: OffsetsState,
) -> Result<StartPlan, StartRefusal> {
    let stream = mode != SnapshotMode::InitialOnly;
    let drop_lost_slot = match (slot, mode) {
        (SlotState::Lost, SnapshotMode::WhenNeeded) => true,
        (SlotState::Lost, _) => return Err(StartRefusal::SlotLost),
        _ => false,
    };
    let slot_missing = slot != SlotState::Present;
    let snapshot_done = offsets == OffsetsState::Streaming;
    let position_lost = match mode {
        SnapshotMode::Initial => snapshot_done,
        SnapshotMode::NoData => offsets != OffsetsState::Absent,
        SnapshotMode::Always | SnapshotMode::WhenNeeded | SnapshotMode::InitialOnly => false,
    };
    if stream && slot_missing && position_lost {
        return Err(StartRefusal::PositionLost);
    }
    let snapshot = match mode {
        SnapshotMode::Always => true,
        SnapshotMode::NoData => false,
        SnapshotMode::Initial | SnapshotMode::InitialOnly => !snapshot_done,
        SnapshotMode::WhenNeeded => !snapshot_done || slot_missing,
    };
    Ok(StartPlan {
        drop_lost_slot,
        create_slot: stream && slot_missing,
        snapshot,
        stream,
    })
}

/// How an existing slot's position stands against the stored offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotPosition {
    /// Nothing to do: stream from the slot, skipping what the offsets say was published.
    Fine,
    /// The slot's `restart_lsn` is past the offsets' last processed LSN: the WAL between is
    /// gone, and with it any change the offsets do not cover.
    WalGone {
        /// The slot's `restart_lsn`.
        restart: Lsn,
        /// The offsets' `lsn_proc`.
        processed: Lsn,
    },
    /// The slot is behind the offsets: advance it to `to` (the offsets' commit position)
    /// before streaming.
    Advance {
        /// Where to advance the slot.
        to: Lsn,
    },
}

/// Compares an existing slot (`restart_lsn`, `confirmed_flush_lsn`) with the stored
/// offsets of a run that resumes streaming, as Debezium 3.x does for
/// `offset.mismatch.strategy`: `trust_offset` checks that the slot's `restart_lsn` is at or
/// before the offsets' `lsn_proc` (offsets without `lsn_proc`, such as a snapshot's, pass;
/// Debezium checks under `no_validation` too, which pgcdc's idle WAL confirmation rules out); `trust_offset` and `trust_greater_lsn` advance a slot whose confirmed
/// position is behind the offsets' processed position to their `lsn_commit`, unless
/// `manual_flush` (`lsn.flush.mode=manual`: pgcdc never moves the slot).
pub fn check_slot_position(
    strategy: OffsetMismatchStrategy,
    restart: Option<Lsn>,
    confirmed: Option<Lsn>,
    offsets: &Offsets,
    manual_flush: bool,
) -> SlotPosition {
    if strategy.validates() {
        if let (Some(restart), Some(processed)) = (restart, offsets.lsn_proc) {
            if restart > processed {
                return SlotPosition::WalGone { restart, processed };
            }
        }
    }
    let processed = offsets.lsn_proc.or(offsets.lsn);
    let target = offsets.lsn_commit.or(processed);
    match (processed, target, confirmed) {
        (Some(p), Some(to), Some(c))
            if strategy.advances_slot() && !manual_flush && p > c && to > c =>
        {
            SlotPosition::Advance { to }
        }
        _ => SlotPosition::Fine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OffsetsState::{Absent as NoOffsets, SnapshotIncomplete as Partial, Streaming};
    use SlotState::{Absent as NoSlot, Lost, Present};
    use SnapshotMode::*;

    /// Expected outcome: refusal, or (drop lost slot, create slot, snapshot, stream).
    type Want = Result<(bool, bool, bool, bool), StartRefusal>;

    const LOST: Want = Err(StartRefusal::SlotLost);
    const GONE: Want = Err(StartRefusal::PositionLost);

    /// Every snapshot.mode × slot present / absent / lost × offsets absent / snapshot
    /// incomplete / streaming.
    #[rustfmt::skip]
    const TABLE: &[(SnapshotMode, SlotState, OffsetsState, Want)] = &[
        // mode         slot     offsets     drop   create snap   stream
        (Initial,     Present, NoOffsets, Ok((false, false, true,  true))),
        (Initial,     Present, Partial,   Ok((false, false, true,  true))),
        (Initial,     Present, Streaming, Ok((false, false, false, true))),
        (Initial,     NoSlot,  NoOffsets, Ok((false, true,  true,  true))),
        (Initial,     NoSlot,  Partial,   Ok((false, true,  true,  true))),
        (Initial,     NoSlot,  Streaming, GONE),
        (Initial,     Lost,    NoOffsets, LOST),
        (Initial,     Lost,    Partial,   LOST),
        (Initial,     Lost,    Streaming, LOST),

        (InitialOnly, Present, NoOffsets, Ok((false, false, true,  false))),
        (InitialOnly, Present, Partial,   Ok((false, false, true,  false))),
        (InitialOnly, Present, Streaming, Ok((false, false, false, false))),
        (InitialOnly, NoSlot,  NoOffsets, Ok((false, false, true,  false))),
        (InitialOnly, NoSlot,  Partial,   Ok((false, false, true,  false))),
        (InitialOnly, NoSlot,  Streaming, Ok((false, false, false, false))),
        (InitialOnly, Lost,    NoOffsets, LOST),
        (InitialOnly, Lost,    Partial,   LOST),
        (InitialOnly, Lost,    Streaming, LOST),

        (NoData,      Present, NoOffsets, Ok((false, false, false, true))),
        (NoData,      Present, Partial,   Ok((false, false, false, true))),
        (NoData,      Present, Streaming, Ok((false, false, false, true))),
        (NoData,      NoSlot,  NoOffsets, Ok((false, true,  false, true))),
        (NoData,      NoSlot,  Partial,   GONE),
        (NoData,      NoSlot,  Streaming, GONE),
        (NoData,      Lost,    NoOffsets, LOST),
        (NoData,      Lost,    Partial,   LOST),
        (NoData,      Lost,    Streaming, LOST),

        (Always,      Present, NoOffsets, Ok((false, false, true,  true))),
        (Always,      Present, Partial,   Ok((false, false, true,  true))),
        (Always,      Present, Streaming, Ok((false, false, true,  true))),
        (Always,      NoSlot,  NoOffsets, Ok((false, true,  true,  true))),
        (Always,      NoSlot,  Partial,   Ok((false, true,  true,  true))),
        (Always,      NoSlot,  Streaming, Ok((false, true,  true,  true))),
        (Always,      Lost,    NoOffsets, LOST),
        (Always,      Lost,    Partial,   LOST),
        (Always,      Lost,    Streaming, LOST),

        (WhenNeeded,  Present, NoOffsets, Ok((false, false, true,  true))),
        (WhenNeeded,  Present, Partial,   Ok((false, false, true,  true))),
        (WhenNeeded,  Present, Streaming, Ok((false, false, false, true))),
        (WhenNeeded,  NoSlot,  NoOffsets, Ok((false, true,  true,  true))),
        (WhenNeeded,  NoSlot,  Partial,   Ok((false, true,  true,  true))),
        (WhenNeeded,  NoSlot,  Streaming, Ok((false, true,  true,  true))),
        (WhenNeeded,  Lost,    NoOffsets, Ok((true,  true,  true,  true))),
        (WhenNeeded,  Lost,    Partial,   Ok((true,  true,  true,  true))),
        (WhenNeeded,  Lost,    Streaming, Ok((true,  true,  true,  true))),
    ];

    #[test]
    fn every_mode_slot_and_offsets_combination_has_the_documented_plan() {
        assert_eq!(TABLE.len(), 5 * 3 * 3, "the table covers every combination");
        for &(mode, slot, offsets, want) in TABLE {
            let got = plan_start(mode, slot, offsets)
                .map(|p| (p.drop_lost_slot, p.create_slot, p.snapshot, p.stream));
            assert_eq!(got, want, "{mode:?} / slot {slot:?} / offsets {offsets:?}");
        }
    }

    #[test]
    fn offsets_are_classified_by_snapshot_completion_and_position() {
        use crate::lsn::Lsn;
        assert_eq!(OffsetsState::of(None), OffsetsState::Absent);
        let running = Offsets {
            lsn: Some(Lsn(5)),
            snapshot: Some("INITIAL".into()),
            ..Default::default()
        };
        assert_eq!(
            OffsetsState::of(Some(&running)),
            OffsetsState::SnapshotIncomplete
        );
        let done = Offsets {
            snapshot_completed: true,
            ..running.clone()
        };
        assert_eq!(OffsetsState::of(Some(&done)), OffsetsState::Streaming);
        let streaming = Offsets {
            lsn_commit: Some(Lsn(9)),
            ..Default::default()
        };
        assert_eq!(OffsetsState::of(Some(&streaming)), OffsetsState::Streaming);
        assert_eq!(
            OffsetsState::of(Some(&Offsets::default())),
            OffsetsState::Absent
        );
    }

    fn streamed(proc_: u64, commit: u64) -> Offsets {
        Offsets {
            lsn: Some(Lsn(proc_)),
            lsn_proc: Some(Lsn(proc_)),
            lsn_commit: Some(Lsn(commit)),
            message_type: Some("COMMIT".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_slot_position_check_follows_the_mismatch_strategy() {
        use OffsetMismatchStrategy::*;
        let o = streamed(500, 480);
        let gone = SlotPosition::WalGone {
            restart: Lsn(600),
            processed: Lsn(500),
        };
        // restart_lsn past the offsets: only trust_offset refuses it.
        for (s, want) in [
            (NoValidation, SlotPosition::Fine),
            (TrustOffset, gone),
            (TrustSlot, SlotPosition::Fine),
            (TrustGreaterLsn, SlotPosition::Fine),
        ] {
            assert_eq!(
                check_slot_position(s, Some(Lsn(600)), Some(Lsn(700)), &o, false),
                want,
                "{s:?}"
            );
        }
        // restart_lsn exactly at lsn_proc is fine.
        assert_eq!(
            check_slot_position(TrustOffset, Some(Lsn(500)), Some(Lsn(500)), &o, false),
            SlotPosition::Fine
        );
        // A slot behind the offsets: advanced to lsn_commit by trust_offset and
        // trust_greater_lsn, unless pgcdc never moves the slot.
        let advance = SlotPosition::Advance { to: Lsn(480) };
        for (s, manual, want) in [
            (NoValidation, false, SlotPosition::Fine),
            (TrustOffset, false, advance),
            (TrustSlot, false, SlotPosition::Fine),
            (TrustGreaterLsn, false, advance),
            (TrustOffset, true, SlotPosition::Fine),
        ] {
            assert_eq!(
                check_slot_position(s, Some(Lsn(100)), Some(Lsn(200)), &o, manual),
                want,
                "{s:?} manual={manual}"
            );
        }
        // A snapshot's offsets carry no lsn_proc: nothing to validate.
        let snap = Offsets::snapshot_completed_at(Lsn(300));
        assert_eq!(
            check_slot_position(TrustOffset, Some(Lsn(900)), Some(Lsn(900)), &snap, false),
            SlotPosition::Fine
        );
        assert_eq!(
            check_slot_position(TrustOffset, Some(Lsn(100)), Some(Lsn(200)), &snap, false),
            SlotPosition::Advance { to: Lsn(300) }
        );
    }
}
