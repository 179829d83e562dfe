//! Signals: Debezium's commands to a running connector (`execute-snapshot`, `stop-snapshot`,
//! `pause-snapshot`, `resume-snapshot`, `log`, and the incremental snapshot's own
//! `snapshot-window-open` / `snapshot-window-close` watermarks), as they arrive from any
//! channel: a row of the signal table, a Kafka record, a line of the signal file, or a REST
//! request.
//!
//! This module is the model and the parser only (no I/O). A signal is `id`, `type` and `data`
//! (JSON text); [`Signal::action`] reads it the way Debezium 3.6.1 does and says what is
//! wrong when it cannot, so that the caller logs it and goes on: a malformed signal is never a
//! stop and never a silent no-op.

use regex::Regex;
use serde_json::Value as Json;

/// Where a signal came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// An insert (or, with `insert_delete`, a delete) on `signal.data.collection`.
    Source,
    /// A record on `signal.kafka.topic`.
    Kafka,
    /// A line of `signal.file`.
    File,
    /// `POST /connectors/<name>/signals` on pgcdc's REST API.
    Rest,
}

impl Channel {
    /// The channel's name as `signal.enabled.channels` spells it (`rest` for pgcdc's own).
    pub fn name(self) -> &'static str {
        match self {
            Channel::Source => "source",
            Channel::Kafka => "kafka",
            Channel::File => "file",
            Channel::Rest => "rest",
        }
    }
}

/// One signal as received: `id` (may be empty for a Kafka record without one), `type`, and
/// `data` as JSON text (empty: `{}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// The signal's id: the correlation id of the snapshot it starts.
    pub id: String,
    /// Its `type`.
    pub kind: String,
    /// Its `data`, JSON text.
    pub data: String,
    /// Where it came from.
    pub channel: Channel,
}

/// `execute-snapshot`'s and `stop-snapshot`'s `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotKind {
    /// Chunks read while the stream goes on.
    Incremental,
    /// The stream pauses while the tables are read.
    Blocking,
}

/// One `additional-conditions` entry: tables whose `schema.table` the pattern matches (whole
/// name, any case) are read with `filter` (incremental: a SQL condition; blocking: a SELECT).
#[derive(Debug, Clone)]
pub struct AdditionalCondition {
    /// `data-collection`.
    pub collection: Regex,
    /// `filter`.
    pub filter: String,
}

/// What an `execute-snapshot` signal asks for.
#[derive(Debug, Clone)]
pub struct SnapshotRequest {
    /// `type` (default incremental).
    pub kind: SnapshotKind,
    /// `data-collections`: regular expressions on `schema.table`, trimmed, in order.
    pub collections: Vec<String>,
    /// `additional-conditions`.
    pub conditions: Vec<AdditionalCondition>,
    /// `surrogate-key`: the column chunks are ordered by instead of the primary key.
    pub surrogate_key: Option<String>,
}

impl SnapshotRequest {
    /// The filter of the first condition whose pattern matches `collection` (`schema.table`).
    pub fn filter_for(&self, collection: &str) -> Option<&str> {
        self.conditions
            .iter()
            .find(|c| c.collection.is_match(collection))
            .map(|c| c.filter.as_str())
            .filter(|f| !f.is_empty())
    }
}

/// What a signal asks the connector to do.
#[derive(Debug, Clone)]
pub enum Action {
    /// `execute-snapshot`.
    ExecuteSnapshot(SnapshotRequest),
    /// `stop-snapshot`: the listed tables (all when empty) leave the snapshot.
    StopSnapshot {
        /// `type` (default incremental).
        kind: SnapshotKind,
        /// `data-collections` (empty: every table).
        collections: Vec<String>,
    },
    /// `pause-snapshot`.
    PauseSnapshot,
    /// `resume-snapshot`.
    ResumeSnapshot,
    /// `log`: `message` logged at INFO (`{}` in it is replaced by the offsets).
    Log(String),
    /// `snapshot-window-open`: the chunk whose id starts the signal's id opens its window.
    OpenWindow,
    /// `snapshot-window-close`: that chunk's window closes.
    CloseWindow,
}

/// Signal type names, as Debezium registers its actions.
pub const EXECUTE_SNAPSHOT: &str = "execute-snapshot";
/// `stop-snapshot`.
pub const STOP_SNAPSHOT: &str = "stop-snapshot";
/// `pause-snapshot`.
pub const PAUSE_SNAPSHOT: &str = "pause-snapshot";
/// `resume-snapshot`.
pub const RESUME_SNAPSHOT: &str = "resume-snapshot";
/// `log`.
pub const LOG: &str = "log";
/// The open watermark's type.
pub const WINDOW_OPEN: &str = "snapshot-window-open";
/// The close watermark's type.
pub const WINDOW_CLOSE: &str = "snapshot-window-close";

impl Signal {
    /// What the signal asks for. Errors: a sentence saying what is wrong with it and how to
    /// write it instead (the caller logs it with the signal's id and channel and goes on).
    pub fn action(&self) -> Result<Action, String> {
        let data = self.data_json()?;
        match self.kind.as_str() {
            EXECUTE_SNAPSHOT => execute_snapshot(&data).map(Action::ExecuteSnapshot),
            STOP_SNAPSHOT => Ok(Action::StopSnapshot {
                kind: snapshot_kind(&data)?,
                collections: string_list(&data, "data-collections")?,
            }),
            PAUSE_SNAPSHOT => Ok(Action::PauseSnapshot),
            RESUME_SNAPSHOT => Ok(Action::ResumeSnapshot),
            LOG => match data.get("message").and_then(Json::as_str) {
                Some(m) if !m.is_empty() => Ok(Action::Log(m.to_string())),
                _ => Err("a log signal needs data {\"message\": \"...\"}".to_string()),
            },
            WINDOW_OPEN => Ok(Action::OpenWindow),
            WINDOW_CLOSE => Ok(Action::CloseWindow),
            other => Err(format!(
                "the type {other:?} is not a signal pgcdc knows: use execute-snapshot, stop-snapshot, pause-snapshot, resume-snapshot or log"
            )),
        }
    }

    /// `data` as a JSON object (empty text: `{}`).
    fn data_json(&self) -> Result<Json, String> {
        let text = self.data.trim();
        if text.is_empty() {
            return Ok(Json::Object(Default::default()));
        }
        match serde_json::from_str::<Json>(text) {
            Ok(v @ Json::Object(_)) => Ok(v),
            Ok(_) => Err("its data is not a JSON object".to_string()),
            Err(e) => Err(format!("its data is not valid JSON ({e})")),
        }
    }
}

/// `execute-snapshot`'s data.
fn execute_snapshot(data: &Json) -> Result<SnapshotRequest, String> {
    let collections = string_list(data, "data-collections")?;
    if collections.iter().any(String::is_empty) {
        return Err(
            "data-collections has an empty entry: give <schema>.<table> names or regular expressions"
                .to_string(),
        );
    }
    if collections.is_empty() {
        return Err(
            "execute-snapshot needs data-collections: a non-empty array of <schema>.<table> names or regular expressions"
                .to_string(),
        );
    }
    for c in &collections {
        crate::util::full_match_regex(c, false).map_err(|e| {
            format!("data-collections entry {c:?} is not a valid regular expression: {e}")
        })?;
    }
    let mut conditions = Vec::new();
    match data.get("additional-conditions") {
        None | Some(Json::Null) => {}
        Some(Json::Array(items)) => {
            for item in items {
                conditions.push(additional_condition(item)?);
            }
        }
        Some(_) => return Err(
            "additional-conditions must be an array of {\"data-collection\": ..., \"filter\": ...}"
                .to_string(),
        ),
    }
    let surrogate_key = match data.get("surrogate-key") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) if s.trim().is_empty() => None,
        Some(Json::String(s)) => Some(s.trim().to_string()),
        Some(_) => return Err("surrogate-key must be a column name (a string)".to_string()),
    };
    Ok(SnapshotRequest {
        kind: snapshot_kind(data)?,
        collections,
        conditions,
        surrogate_key,
    })
}

/// One `additional-conditions` entry.
fn additional_condition(item: &Json) -> Result<AdditionalCondition, String> {
    let collection = item.get("data-collection").and_then(Json::as_str);
    let filter = item.get("filter").and_then(Json::as_str);
    let (Some(collection), Some(filter)) = (collection, filter) else {
        return Err(
            "each additional-conditions entry needs \"data-collection\" and \"filter\" strings"
                .to_string(),
        );
    };
    let collection = crate::util::full_match_regex(collection.trim(), true).map_err(|e| {
        format!("additional-conditions data-collection {collection:?} is not a valid regular expression: {e}")
    })?;
    Ok(AdditionalCondition {
        collection,
        filter: filter.to_string(),
    })
}

/// `type`: `incremental` (the default) or `blocking`, any case.
fn snapshot_kind(data: &Json) -> Result<SnapshotKind, String> {
    match data.get("type") {
        None | Some(Json::Null) => Ok(SnapshotKind::Incremental),
        Some(Json::String(s)) if s.eq_ignore_ascii_case("incremental") => {
            Ok(SnapshotKind::Incremental)
        }
        Some(Json::String(s)) if s.eq_ignore_ascii_case("blocking") => Ok(SnapshotKind::Blocking),
        Some(other) => Err(format!(
            "the snapshot type {other} is not incremental or blocking"
        )),
    }
}

/// A field that is an array of strings (absent or null: empty), each trimmed.
fn string_list(data: &Json, field: &str) -> Result<Vec<String>, String> {
    match data.get(field) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(|s| s.trim().to_string())
                    .ok_or_else(|| format!("{field} must be an array of strings"))
            })
            .collect(),
        Some(_) => Err(format!("{field} must be an array of strings")),
    }
}

/// The text of a `log` signal's message: each `{}` (an SLF4J placeholder in Debezium) is
/// replaced by `offsets` the first time, as Debezium passes the offsets as its one argument.
pub fn log_text(message: &str, offsets: &str) -> String {
    message.replacen("{}", offsets, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(kind: &str, data: &str) -> Signal {
        Signal {
            id: "s1".into(),
            kind: kind.into(),
            data: data.into(),
            channel: Channel::Source,
        }
    }

    #[test]
    fn execute_snapshot_reads_debeziums_fields() {
        let s = signal(
            EXECUTE_SNAPSHOT,
            r#"{"data-collections": [" public.a ", "inv\\..*"], "type": "INCREMENTAL",
               "additional-conditions": [{"data-collection": "PUBLIC.A", "filter": "x > 1"}],
               "surrogate-key": "code"}"#,
        );
        let Ok(Action::ExecuteSnapshot(r)) = s.action() else {
            panic!("not an execute-snapshot: {:?}", s.action())
        };
        assert_eq!(r.kind, SnapshotKind::Incremental);
        assert_eq!(r.collections, ["public.a", "inv\\..*"]);
        assert_eq!(r.filter_for("public.a"), Some("x > 1"));
        assert_eq!(r.filter_for("public.b"), None);
        assert_eq!(r.surrogate_key.as_deref(), Some("code"));
        let blocking = signal(
            EXECUTE_SNAPSHOT,
            r#"{"data-collections":["a.b"],"type":"blocking"}"#,
        );
        assert!(matches!(
            blocking.action(),
            Ok(Action::ExecuteSnapshot(SnapshotRequest {
                kind: SnapshotKind::Blocking,
                ..
            }))
        ));
    }

    #[test]
    fn malformed_signals_say_what_is_wrong() {
        let cases = [
            (EXECUTE_SNAPSHOT, "{}", "needs data-collections"),
            (
                EXECUTE_SNAPSHOT,
                r#"{"data-collections": [" "]}"#,
                "an empty entry",
            ),
            (
                EXECUTE_SNAPSHOT,
                r#"{"data-collections": []}"#,
                "needs data-collections",
            ),
            (
                EXECUTE_SNAPSHOT,
                r#"{"data-collections": "a.b"}"#,
                "array of strings",
            ),
            (
                EXECUTE_SNAPSHOT,
                r#"{"data-collections": ["a.b"], "type": "full"}"#,
                "not incremental or blocking",
            ),
            (
                EXECUTE_SNAPSHOT,
                r#"{"data-collections": ["("]}"#,
                "not a valid regular expression",
            ),
            (EXECUTE_SNAPSHOT, "{not json", "not valid JSON"),
            (EXECUTE_SNAPSHOT, "[1]", "not a JSON object"),
            (LOG, "{}", "needs data {\"message\""),
            ("snapshot-please", "{}", "not a signal pgcdc knows"),
        ];
        for (kind, data, expected) in cases {
            let e = signal(kind, data).action().expect_err(data);
            assert!(e.contains(expected), "{kind} {data}: {e}");
        }
    }

    #[test]
    fn stop_pause_resume_and_log() {
        assert!(matches!(
            signal(STOP_SNAPSHOT, "").action(),
            Ok(Action::StopSnapshot { kind: SnapshotKind::Incremental, collections }) if collections.is_empty()
        ));
        assert!(matches!(
            signal(PAUSE_SNAPSHOT, "").action(),
            Ok(Action::PauseSnapshot)
        ));
        assert!(signal(RESUME_SNAPSHOT, "null").action().is_err());
        assert!(matches!(
            signal(LOG, r#"{"message": "at {}"}"#).action(),
            Ok(Action::Log(m)) if log_text(&m, "{lsn=1}") == "at {lsn=1}"
        ));
    }
}
