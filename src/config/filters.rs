//! What is captured: schema and table include/exclude lists, `table.ignore.builtin`, the
//! logical decoding message prefix filters and `skipped.operations`. (Column filters are
//! record settings: [`super::records`].)

use regex::Regex;

use super::checker::Checker;
use super::keys::{
    MESSAGE_PREFIX_EXCLUDE_LIST, MESSAGE_PREFIX_INCLUDE_LIST, SCHEMA_EXCLUDE_LIST,
    SCHEMA_INCLUDE_LIST, SKIPPED_OPERATIONS, SKIP_MESSAGES_WITHOUT_CHANGE, TABLE_EXCLUDE_LIST,
    TABLE_IGNORE_BUILTIN, TABLE_INCLUDE_LIST,
};

/// Change operations, for `skipped.operations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkippedOperations {
    /// `c`
    pub create: bool,
    /// `u`
    pub update: bool,
    /// `d`
    pub delete: bool,
    /// `t`
    pub truncate: bool,
}

/// Schema and table include/exclude filters: comma-separated, case-insensitive regular
/// expressions that must match the whole name (Java `Matcher.matches()`), `\,` for a comma.
#[derive(Debug, Clone, Default)]
pub struct TableFilters {
    /// `schema.include.list`
    pub schema_include: Vec<Regex>,
    /// `schema.exclude.list`
    pub schema_exclude: Vec<Regex>,
    /// `table.include.list` (matched against `schema.table`)
    pub table_include: Vec<Regex>,
    /// `table.exclude.list`
    pub table_exclude: Vec<Regex>,
    /// `table.ignore.builtin`
    pub ignore_builtin: bool,
    /// `signal.data.collection` as (schema, table): captured whatever the filters say, as
    /// Debezium adds it to its table filter, so that its inserts are seen in the stream.
    pub signal_table: Option<(String, String)>,
}

/// The table where pgcdc's schema capture keeps the names it last saw (`pg::schema_capture`):
/// unlogged, so never in the stream, and left out of snapshots with the built-in tables
/// (`table.ignore.builtin`).
pub const CAPTURE_STATE_TABLE: (&str, &str) = ("pgcdc", "schema_state");

impl TableFilters {
    /// `true` when changes of `schema`.`table` are captured.
    pub fn is_captured(&self, schema: &str, table: &str) -> bool {
        if self
            .signal_table
            .as_ref()
            .is_some_and(|(s, t)| s == schema && t == table)
        {
            return true;
        }
        if self.ignore_builtin
            && (schema == "pg_catalog"
                || schema == "information_schema"
                || schema.starts_with("pg_temp")
                || table == "spatial_ref_sys"
                || (schema, table) == CAPTURE_STATE_TABLE)
        {
            return false;
        }
        if !self.schema_include.is_empty()
            && !self.schema_include.iter().any(|r| r.is_match(schema))
        {
            return false;
        }
        if self.schema_exclude.iter().any(|r| r.is_match(schema)) {
            return false;
        }
        let full = format!("{schema}.{table}");
        if !self.table_include.is_empty() && !self.table_include.iter().any(|r| r.is_match(&full)) {
            return false;
        }
        !self.table_exclude.iter().any(|r| r.is_match(&full))
    }
}

/// `message.prefix.include.list` / `message.prefix.exclude.list`: anchored, case-insensitive
/// regular expressions on the prefix of logical decoding messages.
#[derive(Debug, Clone, Default)]
pub struct MessageFilters {
    /// `message.prefix.include.list`
    pub include: Vec<Regex>,
    /// `message.prefix.exclude.list`
    pub exclude: Vec<Regex>,
}

impl MessageFilters {
    /// `true` when messages with `prefix` are emitted.
    pub fn is_captured(&self, prefix: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(prefix)))
            && !self.exclude.iter().any(|r| r.is_match(prefix))
    }
}

/// The settings of this area.
pub(super) struct Filters {
    pub(super) tables: TableFilters,
    pub(super) messages: MessageFilters,
    pub(super) skipped_operations: SkippedOperations,
    pub(super) skip_messages_without_change: bool,
}

/// Reads the capture filters.
pub(super) fn parse(c: &mut Checker<'_>) -> Filters {
    let tables = TableFilters {
        schema_include: c.regex_list(SCHEMA_INCLUDE_LIST),
        schema_exclude: c.regex_list(SCHEMA_EXCLUDE_LIST),
        table_include: c.regex_list(TABLE_INCLUDE_LIST),
        table_exclude: c.regex_list(TABLE_EXCLUDE_LIST),
        ignore_builtin: c.boolean(TABLE_IGNORE_BUILTIN, true),
        signal_table: None,
    };
    let messages = MessageFilters {
        include: c.regex_list(MESSAGE_PREFIX_INCLUDE_LIST),
        exclude: c.regex_list(MESSAGE_PREFIX_EXCLUDE_LIST),
    };
    for (inc, exc) in [
        (SCHEMA_INCLUDE_LIST, SCHEMA_EXCLUDE_LIST),
        (TABLE_INCLUDE_LIST, TABLE_EXCLUDE_LIST),
        (MESSAGE_PREFIX_INCLUDE_LIST, MESSAGE_PREFIX_EXCLUDE_LIST),
    ] {
        if c.get(inc).is_some_and(|v| !v.is_empty()) && c.get(exc).is_some_and(|v| !v.is_empty()) {
            c.problem(format!(
                "{inc} and {exc} cannot both be set: use one of them"
            ));
        }
    }
    Filters {
        tables,
        messages,
        skipped_operations: skipped_operations(c),
        skip_messages_without_change: c.boolean(SKIP_MESSAGES_WITHOUT_CHANGE, false),
    }
}

/// `skipped.operations`, validated as Debezium's CommonConnectorConfig does: lowercase codes,
/// no empty items, `none` alone. Unset: truncates are skipped.
fn skipped_operations(c: &mut Checker<'_>) -> SkippedOperations {
    let Some(v) = c.get(SKIPPED_OPERATIONS) else {
        return SkippedOperations {
            truncate: true,
            ..Default::default()
        };
    };
    let mut skipped = SkippedOperations::default();
    let ops: Vec<&str> = v.split(',').map(str::trim).collect();
    if ops.len() > 1 && ops.contains(&"none") {
        c.problem(format!(
            "{SKIPPED_OPERATIONS}={v} is invalid: 'none' cannot be combined with other operations"
        ));
    }
    for op in ops {
        match op {
            "c" => skipped.create = true,
            "u" => skipped.update = true,
            "d" => skipped.delete = true,
            "t" => skipped.truncate = true,
            "none" => {}
            "r" => c.warn(format!(
                "{SKIPPED_OPERATIONS}: r has no effect, as in Debezium: snapshot reads are never skipped"
            )),
            other => c.problem(format!(
                "{SKIPPED_OPERATIONS} contains {other:?}: allowed values are c, u, d, t, r (lowercase, comma-separated) or none"
            )),
        }
    }
    skipped
}
