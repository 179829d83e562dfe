//! The initial snapshot: `snapshot.mode`, `snapshot.isolation.mode`, `snapshot.fetch.size`,
//! which captured tables it reads (`snapshot.include.collection.list`), in which order
//! (`snapshot.tables.order.by.row.count`), and with which query
//! (`snapshot.select.statement.overrides`), by how many connections (`snapshot.max.threads`).

use regex::Regex;

use super::checker::Checker;
use super::keys::{
    LEGACY_SNAPSHOT_MAX_THREADS, SNAPSHOT_FETCH_SIZE, SNAPSHOT_INCLUDE_COLLECTION_LIST,
    SNAPSHOT_ISOLATION_MODE, SNAPSHOT_MAX_THREADS, SNAPSHOT_MAX_THREADS_MULTIPLIER, SNAPSHOT_MODE,
    SNAPSHOT_SELECT_STATEMENT_OVERRIDES, SNAPSHOT_SELECT_STATEMENT_OVERRIDES_PREFIX,
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
    pub(super) select_overrides: Vec<SelectOverride>,
    pub(super) threads: SnapshotThreads,
}

/// `snapshot.max.threads` and its companions: how many connections read a snapshot's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotThreads {
    /// `snapshot.max.threads`: connections reading at once, each in the same snapshot (1:
    /// the snapshot connection reads every table itself).
    pub threads: usize,
    /// `snapshot.max.threads.multiplier`: ctid-range chunks per table per thread.
    pub multiplier: usize,
    /// `legacy.snapshot.max.threads`: Debezium's one-table-per-thread mode. pgcdc splits every
    /// table into chunks either way (the tables stay one after another, so the
    /// `source.snapshot` markers stay exact); the key is accepted and noted at start.
    pub legacy: bool,
}

/// The most connections `snapshot.max.threads` may ask for.
pub const MAX_SNAPSHOT_THREADS: usize = 64;

/// A table's `snapshot.select.statement.overrides.<schema>.<table>` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectOverride {
    /// The table's schema.
    pub schema: String,
    /// The table.
    pub table: String,
    /// The query, trailing semicolons removed.
    pub query: String,
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
        select_overrides: select_overrides(c),
        threads: threads(c),
    }
}

/// `snapshot.max.threads` (1 to [`MAX_SNAPSHOT_THREADS`]), its multiplier (at least 1) and
/// `legacy.snapshot.max.threads`.
fn threads(c: &mut Checker<'_>) -> SnapshotThreads {
    let mut threads = c.int(SNAPSHOT_MAX_THREADS, 1usize, 1);
    if threads > MAX_SNAPSHOT_THREADS {
        c.problem(format!(
            "{SNAPSHOT_MAX_THREADS}={threads} is too large: each thread is a database connection; use at most {MAX_SNAPSHOT_THREADS}"
        ));
        threads = 1;
    }
    SnapshotThreads {
        threads,
        multiplier: c.int(SNAPSHOT_MAX_THREADS_MULTIPLIER, 1usize, 1),
        legacy: c.boolean(LEGACY_SNAPSHOT_MAX_THREADS, false),
    }
}

/// `snapshot.select.statement.overrides` lists `<schema>.<table>` (or `<db>.<schema>.<table>`,
/// the database part ignored, as Debezium matches it), each with its query in
/// `snapshot.select.statement.overrides.<entry>`. A listed table without its query is skipped
/// with a warning, as in Debezium; a query whose table is not listed is a problem (it would
/// silently do nothing).
fn select_overrides(c: &mut Checker<'_>) -> Vec<SelectOverride> {
    let listed = c.names(SNAPSHOT_SELECT_STATEMENT_OVERRIDES);
    let raw = c.raw;
    for k in raw.keys() {
        if let Some(entry) = k.strip_prefix(SNAPSHOT_SELECT_STATEMENT_OVERRIDES_PREFIX) {
            if !listed.iter().any(|l| l == entry) {
                c.problem(format!(
                    "{k} is set but {entry} is not listed in {SNAPSHOT_SELECT_STATEMENT_OVERRIDES}, so the query would not be used: add it to the list"
                ));
            }
        }
    }
    let mut out = Vec::new();
    for entry in listed {
        let key = format!("{SNAPSHOT_SELECT_STATEMENT_OVERRIDES_PREFIX}{entry}");
        let Some(query) = c
            .get(&key)
            .map(|q| q.trim().trim_end_matches(';').trim().to_string())
        else {
            c.warn(format!(
                "{SNAPSHOT_SELECT_STATEMENT_OVERRIDES} lists {entry} but {key} is not set: the table is read whole"
            ));
            continue;
        };
        let parts: Vec<String> = entry
            .split('.')
            .map(|p| p.trim().trim_matches('"').to_string())
            .collect();
        let (schema, table) = match parts.as_slice() {
            [s, t] | [_, s, t] => (s.clone(), t.clone()),
            _ => {
                c.problem(format!(
                    "{SNAPSHOT_SELECT_STATEMENT_OVERRIDES}: {entry:?} is not <schema>.<table>"
                ));
                continue;
            }
        };
        if query.is_empty() {
            c.problem(format!(
                "{key} is empty: give a SELECT statement or remove it"
            ));
            continue;
        }
        out.push(SelectOverride {
            schema,
            table,
            query,
        });
    }
    out
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
