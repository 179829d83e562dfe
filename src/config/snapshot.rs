//! The initial snapshot: `snapshot.mode`, `snapshot.isolation.mode`, `snapshot.fetch.size`,
//! which captured tables it reads (`snapshot.include.collection.list`) and in which order
//! (`snapshot.tables.order.by.row.count`).

use regex::Regex;

use super::checker::Checker;
use super::keys::{
    SNAPSHOT_FETCH_SIZE, SNAPSHOT_INCLUDE_COLLECTION_LIST, SNAPSHOT_ISOLATION_MODE, SNAPSHOT_MODE,
    SNAPSHOT_TABLES_ORDER_BY_ROW_COUNT,
};

/// Default `snapshot.fetch.size`.
pub const DEFAULT_SNAPSHOT_FETCH_SIZE: usize = 10_240;

/// `snapshot.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// Snapshot when no completed snapshot is recorded, then stream.
    Initial,
    /// Snapshot when no completed snapshot is recorded, then stop; no slot is created.
    InitialOnly,
    /// Never snapshot; stream only.
    NoData,
    /// Snapshot at every start, then stream.
    Always,
    /// Like initial, and also when the slot is missing or lost.
    WhenNeeded,
}

/// `snapshot.isolation.mode`, used when a snapshot cannot use the slot's exported snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotIsolationMode {
    /// `SERIALIZABLE, READ ONLY, DEFERRABLE`.
    Serializable,
    /// `REPEATABLE READ, READ ONLY`.
    RepeatableRead,
    /// `READ COMMITTED, READ ONLY`.
    ReadCommitted,
    /// `READ UNCOMMITTED, READ ONLY`.
    ReadUncommitted,
}

/// `snapshot.tables.order.by.row.count`: the order the snapshot reads its tables in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotTableOrder {
    /// By schema and name.
    Disabled,
    /// Fewest rows first (the planner's estimate), then by schema and name.
    Ascending,
    /// Most rows first, then by schema and name.
    Descending,
}

/// The settings of this area.
pub(super) struct Snapshot {
    pub(super) mode: SnapshotMode,
    pub(super) isolation_mode: SnapshotIsolationMode,
    pub(super) fetch_size: usize,
    pub(super) include: Vec<Regex>,
    pub(super) table_order: SnapshotTableOrder,
}

/// Reads the snapshot settings.
pub(super) fn parse(c: &mut Checker<'_>) -> Snapshot {
    Snapshot {
        mode: mode(c),
        isolation_mode: c.choice(
            SNAPSHOT_ISOLATION_MODE,
            SnapshotIsolationMode::Serializable,
            &[
                ("serializable", SnapshotIsolationMode::Serializable),
                ("repeatable_read", SnapshotIsolationMode::RepeatableRead),
                ("read_committed", SnapshotIsolationMode::ReadCommitted),
                ("read_uncommitted", SnapshotIsolationMode::ReadUncommitted),
            ],
        ),
        fetch_size: c.int(SNAPSHOT_FETCH_SIZE, DEFAULT_SNAPSHOT_FETCH_SIZE, 1),
        include: c.regex_list(SNAPSHOT_INCLUDE_COLLECTION_LIST),
        table_order: c.choice(
            SNAPSHOT_TABLES_ORDER_BY_ROW_COUNT,
            SnapshotTableOrder::Disabled,
            &[
                ("disabled", SnapshotTableOrder::Disabled),
                ("ascending", SnapshotTableOrder::Ascending),
                ("descending", SnapshotTableOrder::Descending),
            ],
        ),
    }
}

/// `snapshot.mode`: `never` (removed in Debezium 3.3) is read as `no_data` with a warning;
/// Debezium's `configuration_based` and `custom` are not implemented.
fn mode(c: &mut Checker<'_>) -> SnapshotMode {
    match c.get(SNAPSHOT_MODE) {
        Some(v) if v.eq_ignore_ascii_case("never") => {
            c.warn(format!(
                "{SNAPSHOT_MODE}=never was removed in Debezium 3.3; it is read as no_data (set {SNAPSHOT_MODE}=no_data)"
            ));
            SnapshotMode::NoData
        }
        Some(v)
            if ["configuration_based", "custom"]
                .iter()
                .any(|m| m.eq_ignore_ascii_case(v)) =>
        {
            c.problem(format!(
                "{SNAPSHOT_MODE}={v} is a Debezium mode that pgcdc does not implement yet: use initial, initial_only, no_data, always or when_needed"
            ));
            SnapshotMode::Initial
        }
        _ => c.choice(
            SNAPSHOT_MODE,
            SnapshotMode::Initial,
            &[
                ("initial", SnapshotMode::Initial),
                ("initial_only", SnapshotMode::InitialOnly),
                ("no_data", SnapshotMode::NoData),
                ("always", SnapshotMode::Always),
                ("when_needed", SnapshotMode::WhenNeeded),
                // Handled above; listed so that the allowed values name it, as they always did.
                ("never", SnapshotMode::NoData),
            ],
        ),
    }
}
