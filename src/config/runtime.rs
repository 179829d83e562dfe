//! How the connector runs: the queue between the replication reader and the converter
//! (`max.queue.size`; its bytes are in [`super::memory`]), restarts (`errors.max.retries`,
//! `retriable.restart.connector.wait.ms`) and where offsets are kept: a compacted Kafka topic
//! (`offsets.storage.topic`, the connector-level name of Kafka Connect's KIP-618, or the
//! worker's `offset.storage.topic`, with `offset.storage.partitions` and
//! `offset.storage.replication.factor` for creating it) or a local file
//! (`offset.storage.file.filename`), written every `offset.flush.interval.ms`; and the labels
//! its metrics carry (`custom.metric.tags`); the waits before a snapshot and before
//! streaming (`snapshot.delay.ms`, `streaming.delay.ms`); and the most tables it may capture
//! (`guardrail.collections.max`, `guardrail.collections.limit.action`).

use std::path::PathBuf;
use std::time::Duration;

use super::checker::Checker;
use super::keys::{
    CUSTOM_METRIC_TAGS, ERRORS_MAX_RETRIES, GUARDRAIL_COLLECTIONS_LIMIT_ACTION,
    GUARDRAIL_COLLECTIONS_MAX, MAX_QUEUE_SIZE, OFFSETS_STORAGE_TOPIC, OFFSET_FLUSH_INTERVAL_MS,
    OFFSET_STORAGE_FILE_FILENAME, OFFSET_STORAGE_PARTITIONS, OFFSET_STORAGE_REPLICATION_FACTOR,
    OFFSET_STORAGE_TOPIC, RETRIABLE_RESTART_CONNECTOR_WAIT_MS, SNAPSHOT_DELAY_MS,
    STREAMING_DELAY_MS,
};

/// Default `max.queue.size` (records between the replication reader and the converter).
pub const DEFAULT_MAX_QUEUE_SIZE: usize = 8192;
/// Default `offset.storage.file.filename`.
pub const DEFAULT_OFFSET_FILE: &str = "data/offsets.json";
/// Default `offset.flush.interval.ms`.
pub const DEFAULT_OFFSET_FLUSH_INTERVAL_MS: u64 = 10_000;
/// Default `retriable.restart.connector.wait.ms`.
pub const DEFAULT_RESTART_WAIT_MS: u64 = 10_000;
/// Default `offset.storage.partitions`, Kafka Connect's.
pub const DEFAULT_OFFSET_STORAGE_PARTITIONS: i32 = 25;

/// A Kafka topic that keeps the offsets, as Kafka Connect keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsTopicConfig {
    /// The topic.
    pub topic: String,
    /// Partitions when pgcdc creates it (`offset.storage.partitions`, default 25).
    pub partitions: i32,
    /// Replication factor when pgcdc creates it (`offset.storage.replication.factor`, -1:
    /// the broker's default).
    pub replication_factor: i32,
}

/// The settings of this area.
pub(super) struct Runtime {
    pub(super) offset_file: PathBuf,
    pub(super) offsets_topic: Option<OffsetsTopicConfig>,
    pub(super) offset_flush_interval: Duration,
    pub(super) max_queue_size: usize,
    pub(super) errors_max_retries: i64,
    pub(super) restart_wait: Duration,
    pub(super) custom_metric_tags: Vec<(String, String)>,
    pub(super) snapshot_delay: Duration,
    pub(super) streaming_delay: Duration,
    pub(super) guardrail: Option<Guardrail>,
}

/// `guardrail.collections.max` (when above 0) and what exceeding it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guardrail {
    /// The most tables the connector may capture.
    pub max: u32,
    /// `guardrail.collections.limit.action=fail`: stop at start; `warn` (the default) logs.
    pub fail: bool,
}

/// Reads the runtime settings.
pub(super) fn parse(c: &mut Checker<'_>) -> Runtime {
    Runtime {
        offset_file: PathBuf::from(c.string(OFFSET_STORAGE_FILE_FILENAME, DEFAULT_OFFSET_FILE)),
        offsets_topic: offsets_topic(c),
        offset_flush_interval: Duration::from_millis(c.int(
            OFFSET_FLUSH_INTERVAL_MS,
            DEFAULT_OFFSET_FLUSH_INTERVAL_MS,
            1,
        )),
        max_queue_size: c.int(MAX_QUEUE_SIZE, DEFAULT_MAX_QUEUE_SIZE, 1),
        errors_max_retries: c.int(ERRORS_MAX_RETRIES, -1i64, -1i64),
        restart_wait: Duration::from_millis(c.int(
            RETRIABLE_RESTART_CONNECTOR_WAIT_MS,
            DEFAULT_RESTART_WAIT_MS,
            0,
        )),
        custom_metric_tags: metric_tags(c),
        snapshot_delay: Duration::from_millis(c.int(SNAPSHOT_DELAY_MS, 0u64, 0u64)),
        streaming_delay: Duration::from_millis(c.int(STREAMING_DELAY_MS, 0u64, 0u64)),
        guardrail: guardrail(c),
    }
}

/// `guardrail.collections.max` and `guardrail.collections.limit.action`.
fn guardrail(c: &mut Checker<'_>) -> Option<Guardrail> {
    let max = c.int(GUARDRAIL_COLLECTIONS_MAX, 0u32, 0u32);
    let fail = c.choice(
        GUARDRAIL_COLLECTIONS_LIMIT_ACTION,
        false,
        &[("warn", false), ("fail", true)],
    );
    (max > 0).then_some(Guardrail { max, fail })
}

/// Label names the metrics give themselves, which a tag may not take.
const METRIC_LABELS: &[&str] = &["plugin", "name", "context", "table", "connector", "le"];

/// `custom.metric.tags`: `k1=v1,k2=v2`, each key a Prometheus label name the metrics do not
/// use themselves.
fn metric_tags(c: &mut Checker<'_>) -> Vec<(String, String)> {
    let Some(text) = c.get(CUSTOM_METRIC_TAGS).map(str::to_string) else {
        return Vec::new();
    };
    let mut tags: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            c.problem(format!(
                "{CUSTOM_METRIC_TAGS}: {part:?} is not key=value (expected k1=v1,k2=v2)"
            ));
            continue;
        };
        let k = k.trim();
        let valid = k
            .chars()
            .next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && k.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            && !k.starts_with("__");
        if !valid || METRIC_LABELS.contains(&k) || tags.iter().any(|(t, _)| t == k) {
            c.problem(format!(
                "{CUSTOM_METRIC_TAGS}: {k:?} cannot be a metric label (letters, digits and _, not starting with a digit or __, not repeated, and none of {})",
                METRIC_LABELS.join(", ")
            ));
            continue;
        }
        tags.push((k.to_string(), v.trim().to_string()));
    }
    tags
}

/// The offsets topic, when `offsets.storage.topic` or `offset.storage.topic` names one.
fn offsets_topic(c: &mut Checker<'_>) -> Option<OffsetsTopicConfig> {
    let connector = c.get(OFFSETS_STORAGE_TOPIC).filter(|v| !v.is_empty());
    let worker = c.get(OFFSET_STORAGE_TOPIC).filter(|v| !v.is_empty());
    let topic = match (connector, worker) {
        (None, None) => {
            for key in [OFFSET_STORAGE_PARTITIONS, OFFSET_STORAGE_REPLICATION_FACTOR] {
                if c.get(key).is_some() {
                    c.warn(format!(
                        "{key} has no effect without {OFFSETS_STORAGE_TOPIC} (or {OFFSET_STORAGE_TOPIC})"
                    ));
                }
            }
            return None;
        }
        (Some(a), Some(b)) if a != b => {
            c.problem(format!(
                "{OFFSETS_STORAGE_TOPIC}={a} and {OFFSET_STORAGE_TOPIC}={b} name two different offsets topics: keep one"
            ));
            a
        }
        (Some(t), _) | (None, Some(t)) => t,
    };
    if c.get(OFFSET_STORAGE_FILE_FILENAME).is_some() {
        c.warn(format!(
            "{OFFSET_STORAGE_FILE_FILENAME} has no effect: the offsets are kept in the topic {topic}"
        ));
    }
    let partitions = c.int(
        OFFSET_STORAGE_PARTITIONS,
        DEFAULT_OFFSET_STORAGE_PARTITIONS,
        1,
    );
    let replication_factor = c.int(OFFSET_STORAGE_REPLICATION_FACTOR, -1i32, -1i32);
    if replication_factor == 0 {
        c.problem(format!(
            "{OFFSET_STORAGE_REPLICATION_FACTOR}=0 is invalid: use -1 (the broker's default) or a number >= 1"
        ));
    }
    Some(OffsetsTopicConfig {
        topic: topic.to_string(),
        partitions,
        replication_factor,
    })
}
