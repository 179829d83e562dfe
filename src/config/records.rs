//! Record-level settings: transaction metadata, heartbeats, message key columns, column
//! filters, masks, truncation and source type propagation.
//!
//! Topic names follow Debezium 3.6.1's default topic naming strategy: the transaction topic
//! is `<topic.prefix><topic.delimiter><topic.transaction>` and the heartbeat topic is
//! `topic.heartbeat.name` when set, else `<topic.heartbeat.prefix><topic.delimiter><topic.prefix>`.

use std::time::Duration;

use regex::Regex;

use super::checker::Checker;
use super::keys::{
    COLUMN_EXCLUDE_LIST, COLUMN_INCLUDE_LIST, COLUMN_MASK_PREFIX, COLUMN_PROPAGATE_SOURCE_TYPE,
    COLUMN_TRUNCATE_PREFIX, DATATYPE_PROPAGATE_SOURCE_TYPE, HEARTBEAT_ACTION_QUERY,
    HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOPICS_PREFIX, MESSAGE_KEY_COLUMNS,
    NOTIFICATION_ENABLED_CHANNELS, NOTIFICATION_SINK_TOPIC_NAME, PROVIDE_TRANSACTION_METADATA,
    TOPIC_HEARTBEAT_NAME, TOPIC_HEARTBEAT_PREFIX, TOPIC_TRANSACTION,
};

/// Debezium's default `topic.heartbeat.prefix` (and `heartbeat.topics.prefix`).
pub const DEFAULT_HEARTBEAT_TOPIC_PREFIX: &str = "__debezium-heartbeat";
/// Debezium's default `topic.transaction`.
pub const DEFAULT_TRANSACTION_TOPIC: &str = "transaction";

/// Heartbeat settings (`heartbeat.interval.ms` > 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatConfig {
    /// `heartbeat.interval.ms`: the least time between two scheduled heartbeats.
    pub interval: Duration,
    /// The heartbeat topic.
    pub topic: String,
    /// `heartbeat.action.query`: SQL run on a connection of its own with every heartbeat.
    pub action_query: Option<String>,
}

/// Record-level features configured for the connector.
#[derive(Debug, Clone, Default)]
pub struct RecordConfig {
    /// `provide.transaction.metadata`: BEGIN/END records and the envelope `transaction` block.
    pub transaction_metadata: bool,
    /// The transaction metadata topic.
    pub transaction_topic: String,
    /// Heartbeats, when `heartbeat.interval.ms` > 0.
    pub heartbeat: Option<HeartbeatConfig>,
    /// Key columns, column filters and column mappers.
    pub columns: ColumnRules,
    /// `notification.enabled.channels`: where the initial snapshot's notifications go.
    pub notifications: NotificationChannels,
}

/// `notification.enabled.channels` (and `notification.sink.topic.name`): Debezium's
/// notification channels pgcdc implements. Nothing enabled: no notifications.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotificationChannels {
    /// `log`: each notification as an INFO line.
    pub log: bool,
    /// `sink`: each notification as a record on this topic.
    pub sink_topic: Option<String>,
}

impl NotificationChannels {
    /// Whether any channel is enabled.
    pub fn any(&self) -> bool {
        self.log || self.sink_topic.is_some()
    }
}

/// A `MessageDigest` algorithm of `column.mask.hash.<algorithm>.with.salt.<salt>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlgorithm {
    /// `MD5`.
    Md5,
    /// `SHA-1` (`SHA`, `SHA1`).
    Sha1,
    /// `SHA-224`.
    Sha224,
    /// `SHA-256`.
    Sha256,
    /// `SHA-384`.
    Sha384,
    /// `SHA-512`.
    Sha512,
}

impl HashAlgorithm {
    /// The algorithm for a Java `MessageDigest` name (case-insensitive), or `None`.
    pub fn from_java_name(name: &str) -> Option<HashAlgorithm> {
        Some(match name.to_ascii_uppercase().as_str() {
            "MD5" => HashAlgorithm::Md5,
            "SHA" | "SHA1" | "SHA-1" => HashAlgorithm::Sha1,
            "SHA224" | "SHA-224" => HashAlgorithm::Sha224,
            "SHA256" | "SHA-256" => HashAlgorithm::Sha256,
            "SHA384" | "SHA-384" => HashAlgorithm::Sha384,
            "SHA512" | "SHA-512" => HashAlgorithm::Sha512,
            _ => return None,
        })
    }
}

/// What a column mapper rule does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnMapperKind {
    /// `column.truncate.to.N.chars`.
    Truncate(usize),
    /// `column.mask.with.N.chars`.
    Mask(usize),
    /// `column.mask.hash.[v2.]<algorithm>.with.salt.<salt>`.
    Hash {
        /// Digest.
        algorithm: HashAlgorithm,
        /// Salt.
        salt: String,
        /// The `v2` variant (hash of the UTF-8 text instead of its Java serialization).
        v2: bool,
    },
    /// `column.propagate.source.type` / `datatype.propagate.source.type`.
    PropagateType,
}

/// A column mapper rule: regular expressions on column names (`schema.table.column`) or on
/// data types (`schema.table.typname`).
#[derive(Debug, Clone)]
pub struct ColumnMapperRule {
    /// Patterns; any match selects the column.
    pub patterns: Vec<Regex>,
    /// `true`: the patterns match `schema.table.typname`; `false`: `schema.table.column`.
    pub by_datatype: bool,
    /// The mapper.
    pub kind: ColumnMapperKind,
}

impl ColumnMapperRule {
    /// `true` when the rule selects the column called `name` (`schema.table.column`) whose
    /// type is `datatype` (`schema.table.typname`).
    pub fn matches(&self, name: &str, datatype: &str) -> bool {
        let subject = if self.by_datatype { datatype } else { name };
        self.patterns.iter().any(|p| p.is_match(subject))
    }
}

/// Column-level settings.
#[derive(Debug, Clone, Default)]
pub struct ColumnRules {
    /// `message.key.columns`, one pattern per listed column (`<table regex>.<column>`).
    pub key_columns: Vec<Regex>,
    /// `column.include.list`.
    pub include: Vec<Regex>,
    /// `column.exclude.list`.
    pub exclude: Vec<Regex>,
    /// Mapper rules in Debezium's order of precedence (the first match wins): truncation,
    /// masks, column type propagation, data type propagation, hashes, v2 hashes.
    pub mappers: Vec<ColumnMapperRule>,
}

impl ColumnRules {
    /// `true` when the value keeps the column `schema.table.column`.
    pub fn includes_column(&self, full_name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(full_name)))
            && !self.exclude.iter().any(|r| r.is_match(full_name))
    }

    /// `true` when any rule needs the source types of a table's columns.
    pub fn needs_source_types(&self) -> bool {
        !self.mappers.is_empty()
    }
}

/// Reads the record-level keys. Problems and warnings (keys that Debezium 3.6.1 accepts but
/// does not use) go to the checker.
pub(super) fn parse(c: &mut Checker<'_>, topic_prefix: &str, delimiter: &str) -> RecordConfig {
    let transaction_metadata = c.boolean(PROVIDE_TRANSACTION_METADATA, false);
    let transaction_topic = format!(
        "{topic_prefix}{delimiter}{}",
        c.string(TOPIC_TRANSACTION, DEFAULT_TRANSACTION_TOPIC)
    );
    RecordConfig {
        transaction_metadata,
        transaction_topic,
        heartbeat: heartbeat(c, topic_prefix, delimiter),
        columns: parse_columns(c),
        notifications: notifications(c),
    }
}

/// `notification.enabled.channels`: `log` and `sink` (which needs
/// `notification.sink.topic.name`, as in Debezium); `jmx` is refused (no JVM, so no MBean to
/// read them from), as are names Debezium does not know (custom channels are Java code).
fn notifications(c: &mut Checker<'_>) -> NotificationChannels {
    let mut out = NotificationChannels::default();
    for channel in c.names(NOTIFICATION_ENABLED_CHANNELS) {
        match channel.as_str() {
            "log" => out.log = true,
            "sink" => match c.get(NOTIFICATION_SINK_TOPIC_NAME).filter(|t| !t.trim().is_empty()) {
                Some(topic) => {
                    if let Some(why) = crate::util::topic_name_problem(topic.trim()) {
                        c.problem(format!("{NOTIFICATION_SINK_TOPIC_NAME}: {why}"));
                    }
                    out.sink_topic = Some(topic.trim().to_string());
                }
                None => c.problem(format!(
                    "{NOTIFICATION_ENABLED_CHANNELS} lists sink, which needs {NOTIFICATION_SINK_TOPIC_NAME}: the topic the notifications are written to"
                )),
            },
            "jmx" => c.problem(format!(
                "{NOTIFICATION_ENABLED_CHANNELS}: the jmx channel needs a JVM, which pgcdc is not: use log or sink (and the /metrics endpoint for the snapshot's progress)"
            )),
            other => c.problem(format!(
                "{NOTIFICATION_ENABLED_CHANNELS}: {other:?} is not a notification channel pgcdc has (log, sink; a custom channel is Java code, which cannot run in pgcdc)"
            )),
        }
    }
    out
}

/// Heartbeats, when `heartbeat.interval.ms` > 0.
fn heartbeat(c: &mut Checker<'_>, topic_prefix: &str, delimiter: &str) -> Option<HeartbeatConfig> {
    let interval_ms = c.int(HEARTBEAT_INTERVAL_MS, 0u64, 0u64);
    let heartbeat_prefix = c.string(TOPIC_HEARTBEAT_PREFIX, DEFAULT_HEARTBEAT_TOPIC_PREFIX);
    if let Some(v) = c
        .get(HEARTBEAT_TOPICS_PREFIX)
        .filter(|v| !v.is_empty() && *v != DEFAULT_HEARTBEAT_TOPIC_PREFIX)
    {
        c.warn(format!(
            "{HEARTBEAT_TOPICS_PREFIX}={v} has no effect on the heartbeat topic in Debezium 3.6.1 (nor in pgcdc): set {TOPIC_HEARTBEAT_PREFIX}={v} instead"
        ));
    }
    let heartbeat_topic = match c.get(TOPIC_HEARTBEAT_NAME).filter(|v| !v.is_empty()) {
        Some(name) => name.to_string(),
        None => format!("{heartbeat_prefix}{delimiter}{topic_prefix}"),
    };
    let action_query = c
        .get(HEARTBEAT_ACTION_QUERY)
        .filter(|q| !q.is_empty())
        .map(str::to_string);
    if action_query.is_some() && interval_ms == 0 {
        c.warn(format!(
            "{HEARTBEAT_ACTION_QUERY} is set but {HEARTBEAT_INTERVAL_MS} is 0: the query never runs (set {HEARTBEAT_INTERVAL_MS})"
        ));
    }
    (interval_ms > 0).then(|| HeartbeatConfig {
        interval: Duration::from_millis(interval_ms),
        topic: heartbeat_topic,
        action_query,
    })
}

fn anchored(pattern: &str) -> std::result::Result<Regex, String> {
    crate::util::full_match_regex(pattern, true)
}

/// `message.key.columns`: `<table regex>:<column>[,<column>...]` entries separated by `;`;
/// each listed column becomes the pattern `<table regex>.<column>` on `schema.table.column`.
fn parse_key_columns(c: &mut Checker<'_>) -> Vec<Regex> {
    let Some(v) = c.get(MESSAGE_KEY_COLUMNS).filter(|v| !v.is_empty()) else {
        return Vec::new();
    };
    let entry = Regex::new(r"^\s*([^:]+):([^:,]+(,[^:,]+)*)\s*$").expect("static regex");
    let mut out = Vec::new();
    for part in v.split(';') {
        let Some(m) = entry.captures(part) else {
            c.problem(format!(
                "{MESSAGE_KEY_COLUMNS}: {part:?} is invalid: each entry is <fully-qualified table regex>:<column>[,<column>...], entries separated by ';'"
            ));
            continue;
        };
        for col in m[2].split(',') {
            let pattern = format!("{}.{}", &m[1], col.trim());
            match anchored(&pattern) {
                Ok(r) => out.push(r),
                Err(e) => c.problem(format!(
                    "{MESSAGE_KEY_COLUMNS}: {pattern:?} is not a valid regular expression: {e}"
                )),
            }
        }
    }
    out
}

/// Key columns, column filters and column mappers.
fn parse_columns(c: &mut Checker<'_>) -> ColumnRules {
    let key_columns = parse_key_columns(c);
    let include = c.regex_list(COLUMN_INCLUDE_LIST);
    let exclude = c.regex_list(COLUMN_EXCLUDE_LIST);
    if !include.is_empty() && !exclude.is_empty() {
        c.problem(format!(
            "{COLUMN_INCLUDE_LIST} and {COLUMN_EXCLUDE_LIST} cannot both be set: use one of them"
        ));
    }
    ColumnRules {
        key_columns,
        include,
        exclude,
        mappers: parse_mappers(c),
    }
}

/// The column mapper rules in Debezium's order of precedence: truncation, masks, column type
/// propagation, data type propagation, hashes, v2 hashes (several keys of one kind: in key
/// order).
fn parse_mappers(c: &mut Checker<'_>) -> Vec<ColumnMapperRule> {
    // By precedence group: truncation, masks, hashes, v2 hashes.
    let mut groups: [Vec<ColumnMapperRule>; 4] = Default::default();
    let raw = c.raw;
    let keys = raw
        .keys()
        .filter(|k| k.starts_with(COLUMN_MASK_PREFIX) || k.starts_with(COLUMN_TRUNCATE_PREFIX));
    for key in keys {
        let (group, kind) = match mapper_kind(key) {
            Ok(k) => k,
            Err(problem) => {
                c.problem(problem);
                continue;
            }
        };
        groups[group].push(ColumnMapperRule {
            patterns: c.regex_list(key),
            by_datatype: false,
            kind,
        });
    }
    let [truncate, mask, hash, hash_v2] = groups;
    let mut mappers = truncate;
    mappers.extend(mask);
    for (key, by_datatype) in [
        (COLUMN_PROPAGATE_SOURCE_TYPE, false),
        (DATATYPE_PROPAGATE_SOURCE_TYPE, true),
    ] {
        let patterns = c.regex_list(key);
        if !patterns.is_empty() {
            mappers.push(ColumnMapperRule {
                patterns,
                by_datatype,
                kind: ColumnMapperKind::PropagateType,
            });
        }
    }
    mappers.extend(hash);
    mappers.extend(hash_v2);
    mappers
}

/// What the mapper key `key` (`column.truncate.*` or `column.mask.*`) configures, with its
/// precedence group (0 truncation, 1 masks, 2 hashes, 3 v2 hashes), or the problem with it.
fn mapper_kind(key: &str) -> Result<(usize, ColumnMapperKind), String> {
    let n_chars = |rest: &str| {
        rest.strip_suffix(".chars")
            .and_then(|n| n.parse::<usize>().ok())
    };
    let truncate = key
        .strip_prefix(COLUMN_TRUNCATE_PREFIX)
        .and_then(|r| r.strip_prefix("to."));
    let mask = key.strip_prefix(COLUMN_MASK_PREFIX);
    let kind = if let Some(rest) = truncate {
        n_chars(rest).map(|n| (0, ColumnMapperKind::Truncate(n)))
    } else if let Some(rest) = mask.and_then(|r| r.strip_prefix("with.")) {
        n_chars(rest).map(|n| (1, ColumnMapperKind::Mask(n)))
    } else if let Some(rest) = mask.and_then(|r| r.strip_prefix("hash.")) {
        let (v2, rest) = match rest.strip_prefix("v2.") {
            Some(r) => (true, r),
            None => (false, rest),
        };
        match rest.split_once(".with.salt.") {
            Some((algo, salt)) if !algo.contains('.') && !salt.is_empty() => {
                let algorithm = HashAlgorithm::from_java_name(algo).ok_or_else(|| {
                    format!(
                        "{key}: hash algorithm {algo:?} is not supported: use MD5, SHA-1, SHA-224, SHA-256, SHA-384 or SHA-512")
                })?;
                let salt = salt.to_string();
                Some((
                    2 + usize::from(v2),
                    ColumnMapperKind::Hash {
                        algorithm,
                        salt,
                        v2,
                    },
                ))
            }
            _ => None,
        }
    } else {
        None
    };
    kind.ok_or_else(|| {
        format!(
            "{key} is not a column mapper key: use column.truncate.to.<N>.chars, column.mask.with.<N>.chars or column.mask.hash.[v2.]<algorithm>.with.salt.<salt>")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConnectorConfig, RawConfig};

    /// A minimal valid config plus `extra`.
    fn raw(extra: &[(&str, &str)]) -> RawConfig {
        let mut raw: RawConfig = [
            ("database.hostname", "h"),
            ("database.user", "u"),
            ("database.dbname", "d"),
            ("topic.prefix", "p"),
            ("bootstrap.servers", "k:1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in extra {
            raw.insert(k.to_string(), v.to_string());
        }
        raw
    }

    fn config(extra: &[(&str, &str)]) -> (ConnectorConfig, Vec<String>) {
        let (c, w) = ConnectorConfig::from_map(&raw(extra)).unwrap();
        (c, w.into_iter().map(|w| w.0).collect())
    }

    #[test]
    fn record_features_are_off_by_default() {
        let (c, w) = config(&[]);
        assert!(w.is_empty());
        assert!(!c.records.transaction_metadata);
        assert_eq!(c.records.transaction_topic, "p.transaction");
        assert!(c.records.heartbeat.is_none());
    }

    #[test]
    fn topics_follow_debeziums_naming_strategy() {
        let (c, _) = config(&[
            ("topic.delimiter", "_"),
            ("topic.transaction", "tx"),
            ("heartbeat.interval.ms", "1000"),
            ("topic.heartbeat.prefix", "hb"),
        ]);
        assert_eq!(c.records.transaction_topic, "p_tx");
        let hb = c.records.heartbeat.unwrap();
        assert_eq!(hb.topic, "hb_p");
        assert_eq!(hb.interval.as_millis(), 1000);
        let (c, _) = config(&[
            ("heartbeat.interval.ms", "1"),
            ("topic.heartbeat.name", "shared-heartbeats"),
        ]);
        assert_eq!(c.records.heartbeat.unwrap().topic, "shared-heartbeats");
    }

    #[test]
    fn the_legacy_heartbeat_prefix_is_accepted_with_a_warning_and_no_effect() {
        let (c, w) = config(&[
            ("heartbeat.interval.ms", "10"),
            ("heartbeat.topics.prefix", "old"),
        ]);
        assert_eq!(c.records.heartbeat.unwrap().topic, "__debezium-heartbeat.p");
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("topic.heartbeat.prefix=old"), "{w:?}");
    }

    #[test]
    fn an_action_query_without_an_interval_is_a_warning() {
        let (c, w) = config(&[("heartbeat.action.query", "SELECT 1")]);
        assert!(c.records.heartbeat.is_none());
        assert!(w[0].contains("heartbeat.interval.ms"), "{w:?}");
    }

    fn problems(extra: &[(&str, &str)]) -> String {
        ConnectorConfig::from_map(&raw(extra))
            .expect_err("config should be rejected")
            .message()
            .to_string()
    }

    #[test]
    fn message_key_columns_become_one_pattern_per_column() {
        let (c, _) = config(&[(
            "message.key.columns",
            "(.*)1.a:pk,aa;inventory.customers:id",
        )]);
        let k = &c.records.columns.key_columns;
        assert_eq!(k.len(), 3);
        assert!(k[0].is_match("s1.a.pk") && k[1].is_match("S1.A.AA"));
        assert!(!k[0].is_match("s2.a.pk"));
        assert!(k[2].is_match("inventory.customers.id"));
        let msg = problems(&[("message.key.columns", "inventory.customers")]);
        assert!(msg.contains("message.key.columns"), "{msg}");
    }

    #[test]
    fn mapper_rules_follow_debeziums_precedence() {
        let (c, _) = config(&[
            ("column.mask.hash.SHA-256.with.salt.x", "s.t.a"),
            ("datatype.propagate.source.type", ".+\\.VARCHAR"),
            ("column.mask.with.3.chars", "s.t.b"),
            ("column.truncate.to.5.chars", "s.t.c"),
            ("column.propagate.source.type", "s.t.d"),
            ("column.mask.hash.v2.MD5.with.salt.y.z", "s.t.e"),
        ]);
        let kinds: Vec<&ColumnMapperKind> =
            c.records.columns.mappers.iter().map(|r| &r.kind).collect();
        assert_eq!(
            kinds,
            vec![
                &ColumnMapperKind::Truncate(5),
                &ColumnMapperKind::Mask(3),
                &ColumnMapperKind::PropagateType,
                &ColumnMapperKind::PropagateType,
                &ColumnMapperKind::Hash {
                    algorithm: HashAlgorithm::Sha256,
                    salt: "x".into(),
                    v2: false
                },
                &ColumnMapperKind::Hash {
                    algorithm: HashAlgorithm::Md5,
                    salt: "y.z".into(),
                    v2: true
                },
            ]
        );
        assert!(c.records.columns.mappers[3].by_datatype);
        assert!(c.records.columns.mappers[3].matches("s.t.x", "s.t.varchar"));
    }

    #[test]
    fn bad_column_keys_are_reported() {
        let msg = problems(&[
            ("column.mask.with.five.chars", "s.t.a"),
            ("column.mask.hash.WHIRLPOOL.with.salt.x", "s.t.a"),
            ("column.include.list", "s.t.a"),
            ("column.exclude.list", "s.t.b"),
        ]);
        assert!(
            msg.contains("column.mask.with.five.chars is not a column mapper key"),
            "{msg}"
        );
        assert!(msg.contains("\"WHIRLPOOL\" is not supported"), "{msg}");
        assert!(msg.contains("cannot both be set"), "{msg}");
    }
}
