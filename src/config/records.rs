//! Record-level settings: transaction metadata, heartbeats.
//!
//! Topic names follow Debezium 3.6.1's default topic naming strategy: the transaction topic
//! is `<topic.prefix><topic.delimiter><topic.transaction>` and the heartbeat topic is
//! `topic.heartbeat.name` when set, else `<topic.heartbeat.prefix><topic.delimiter><topic.prefix>`.

use std::time::Duration;

use super::{Checker, ConfigWarning};

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
    /// `heartbeat.action.query`: SQL run on the regular connection with every heartbeat.
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
}

/// Reads the record-level keys. Problems go to the checker; `warnings` gets notes on keys
/// that Debezium 3.6.1 accepts but does not use.
pub(super) fn parse(
    c: &mut Checker<'_>,
    topic_prefix: &str,
    delimiter: &str,
    warnings: &mut Vec<ConfigWarning>,
) -> RecordConfig {
    let transaction_metadata = c.boolean("provide.transaction.metadata", false);
    let transaction_topic = format!(
        "{topic_prefix}{delimiter}{}",
        c.string("topic.transaction", DEFAULT_TRANSACTION_TOPIC)
    );

    let interval_ms = c.int("heartbeat.interval.ms", 0u64, 0u64);
    let heartbeat_prefix = c.string("topic.heartbeat.prefix", DEFAULT_HEARTBEAT_TOPIC_PREFIX);
    if let Some(v) = c
        .get("heartbeat.topics.prefix")
        .filter(|v| !v.is_empty() && *v != DEFAULT_HEARTBEAT_TOPIC_PREFIX)
    {
        warnings.push(ConfigWarning(format!(
            "heartbeat.topics.prefix={v} has no effect on the heartbeat topic in Debezium 3.6.1 (nor in pgcdc): set topic.heartbeat.prefix={v} instead"
        )));
    }
    let heartbeat_topic = match c.get("topic.heartbeat.name").filter(|v| !v.is_empty()) {
        Some(name) => name.to_string(),
        None => format!("{heartbeat_prefix}{delimiter}{topic_prefix}"),
    };
    let action_query = c
        .get("heartbeat.action.query")
        .filter(|q| !q.is_empty())
        .map(str::to_string);
    if action_query.is_some() && interval_ms == 0 {
        warnings.push(ConfigWarning(
            "heartbeat.action.query is set but heartbeat.interval.ms is 0: the query never runs (set heartbeat.interval.ms)".into(),
        ));
    }
    let heartbeat = (interval_ms > 0).then(|| HeartbeatConfig {
        interval: Duration::from_millis(interval_ms),
        topic: heartbeat_topic,
        action_query,
    });

    RecordConfig {
        transaction_metadata,
        transaction_topic,
        heartbeat,
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{ConnectorConfig, RawConfig};

    fn config(extra: &[(&str, &str)]) -> (ConnectorConfig, Vec<String>) {
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
        let (c, w) = ConnectorConfig::from_map(&raw).unwrap();
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
}
