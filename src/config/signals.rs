//! Signals and incremental snapshots: `signal.data.collection`, `signal.enabled.channels`
//! (`source`, `kafka`, `file`), `signal.poll.interval.ms`, the Kafka channel's
//! `signal.kafka.*` and `signal.consumer.*`, the file channel's `signal.file`, and
//! `incremental.snapshot.chunk.size` / `incremental.snapshot.watermarking.strategy`.
//!
//! Defaults are Debezium 3.6.1's: channels `source`; the Kafka channel reads
//! `<topic.prefix>-signal` as group `kafka-signal`; the file channel reads `file-signals.txt`;
//! chunks of 1024 rows, opened and closed by two inserted rows (`insert_insert`).

use std::path::PathBuf;
use std::time::Duration;

use super::checker::Checker;
use super::keys::{
    INCREMENTAL_SNAPSHOT_CHUNK_SIZE, INCREMENTAL_SNAPSHOT_WATERMARKING_STRATEGY, READ_ONLY,
    SIGNAL_CONSUMER_PREFIX, SIGNAL_DATA_COLLECTION, SIGNAL_ENABLED_CHANNELS, SIGNAL_FILE,
    SIGNAL_KAFKA_BOOTSTRAP_SERVERS, SIGNAL_KAFKA_GROUP_ID, SIGNAL_KAFKA_POLL_TIMEOUT_MS,
    SIGNAL_KAFKA_TOPIC, SIGNAL_POLL_INTERVAL_MS,
};

/// Default `incremental.snapshot.chunk.size`.
pub const DEFAULT_INCREMENTAL_CHUNK_SIZE: usize = 1024;

/// `incremental.snapshot.watermarking.strategy`: how a chunk's window is marked in the signal
/// table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkStrategy {
    /// Two inserted rows per chunk: `snapshot-window-open`, then `snapshot-window-close`.
    InsertInsert,
    /// One inserted row opens the window; deleting it closes the window.
    InsertDelete,
}

/// The Kafka signal channel: a consumer of partition 0 of `signal.kafka.topic`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaSignalChannel {
    /// `signal.kafka.topic` (default `<topic.prefix>-signal`).
    pub topic: String,
    /// `signal.kafka.bootstrap.servers`.
    pub bootstrap_servers: String,
    /// `signal.kafka.groupId` (default `kafka-signal`).
    pub group_id: String,
    /// `signal.kafka.poll.timeout.ms` (default 0).
    pub poll_timeout: Duration,
    /// The brokers and `signal.consumer.*` security settings, as librdkafka properties.
    pub client: super::kafka::KafkaConfig,
}

/// Where signals come from, and how incremental snapshots are chunked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalConfig {
    /// `signal.data.collection` as (schema, table): the signal table. Always captured.
    pub table: Option<(String, String)>,
    /// `source` is enabled: the signal table's inserts are signals.
    pub source: bool,
    /// The Kafka channel, when enabled.
    pub kafka: Option<KafkaSignalChannel>,
    /// The file channel (`signal.file`, default `file-signals.txt`), when enabled.
    pub file: Option<PathBuf>,
    /// `signal.poll.interval.ms`: how often the Kafka and file channels are read.
    pub poll_interval: Duration,
    /// `incremental.snapshot.chunk.size`: rows per chunk.
    pub chunk_size: usize,
    /// `incremental.snapshot.watermarking.strategy`.
    pub watermarking: WatermarkStrategy,
    /// `read.only`: incremental snapshots write nothing to the database; each chunk's window
    /// is bounded by the transactions its read sees instead of watermark rows.
    pub read_only: bool,
}

impl SignalConfig {
    /// Whether `schema.table` is the signal table (names compared exactly, as Debezium does).
    pub fn is_signal_table(&self, schema: &str, table: &str) -> bool {
        self.table
            .as_ref()
            .is_some_and(|(s, t)| s == schema && t == table)
    }
}

/// Reads the signal and incremental snapshot settings; `topic_prefix` names the default Kafka
/// signal topic.
pub(super) fn parse(c: &mut Checker<'_>, topic_prefix: &str) -> SignalConfig {
    let table = signal_table(c);
    let read_only = c.boolean(READ_ONLY, false);
    let mut out = SignalConfig {
        read_only,
        table,
        source: false,
        kafka: None,
        file: None,
        poll_interval: Duration::from_millis(c.int(SIGNAL_POLL_INTERVAL_MS, 5000u64, 1)),
        chunk_size: c.int(
            INCREMENTAL_SNAPSHOT_CHUNK_SIZE,
            DEFAULT_INCREMENTAL_CHUNK_SIZE,
            1,
        ),
        watermarking: c.choice(
            INCREMENTAL_SNAPSHOT_WATERMARKING_STRATEGY,
            WatermarkStrategy::InsertInsert,
            &[
                ("insert_insert", WatermarkStrategy::InsertInsert),
                ("insert_delete", WatermarkStrategy::InsertDelete),
            ],
        ),
    };
    let channels = match c.get(SIGNAL_ENABLED_CHANNELS) {
        None | Some("") => vec!["source".to_string()],
        Some(_) => c.names(SIGNAL_ENABLED_CHANNELS),
    };
    for channel in channels {
        match channel.as_str() {
            "source" => out.source = true,
            "kafka" => out.kafka = Some(kafka_channel(c, topic_prefix)),
            "file" => out.file = Some(PathBuf::from(c.string(SIGNAL_FILE, "file-signals.txt"))),
            "jmx" => c.problem(format!(
                "{SIGNAL_ENABLED_CHANNELS}: the jmx channel needs a JVM, which pgcdc is not: use source, kafka or file, or POST the signal to the worker's /connectors/<name>/signals endpoint"
            )),
            other => c.problem(format!(
                "{SIGNAL_ENABLED_CHANNELS}: {other:?} is not a signal channel pgcdc has (source, kafka, file; a custom channel is Java code, which cannot run in pgcdc)"
            )),
        }
    }
    out
}

/// `signal.data.collection`: `<schema>.<table>` (a leading database name, which Debezium
/// allows for other connectors, is refused: it would name another database).
fn signal_table(c: &mut Checker<'_>) -> Option<(String, String)> {
    let v = c.get(SIGNAL_DATA_COLLECTION).filter(|v| !v.is_empty())?;
    let parts: Vec<&str> = v.split('.').map(str::trim).collect();
    match parts.as_slice() {
        [s, t] if !s.is_empty() && !t.is_empty() => Some((s.to_string(), t.to_string())),
        _ => {
            c.problem(format!(
                "{SIGNAL_DATA_COLLECTION}={v} is invalid: give the signal table as <schema>.<table>, for example public.debezium_signal"
            ));
            None
        }
    }
}

/// The Kafka channel's settings; `signal.kafka.bootstrap.servers` is required, as in Debezium.
fn kafka_channel(c: &mut Checker<'_>, topic_prefix: &str) -> KafkaSignalChannel {
    let bootstrap_servers = c.required(
        SIGNAL_KAFKA_BOOTSTRAP_SERVERS,
        "the Kafka brokers the kafka signal channel reads signal.kafka.topic from",
    );
    let consumer: Vec<(String, String)> = c
        .raw
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix(SIGNAL_CONSUMER_PREFIX)
                .map(|p| (p.to_string(), v.trim().to_string()))
        })
        .collect();
    let client = match super::kafka::worker_client(&bootstrap_servers, &consumer) {
        Ok(k) => k,
        Err(problems) => {
            for p in problems {
                c.problem(format!("{SIGNAL_CONSUMER_PREFIX}*: {p}"));
            }
            super::kafka::worker_client("localhost:9092", &[])
                .unwrap_or_else(|_| unreachable_kafka())
        }
    };
    KafkaSignalChannel {
        topic: c.string(SIGNAL_KAFKA_TOPIC, &format!("{topic_prefix}-signal")),
        bootstrap_servers,
        group_id: c.string(SIGNAL_KAFKA_GROUP_ID, "kafka-signal"),
        poll_timeout: Duration::from_millis(c.int(SIGNAL_KAFKA_POLL_TIMEOUT_MS, 0u64, 0)),
        client,
    }
}

/// A placeholder client config for a channel whose settings have problems (the config is
/// refused anyway).
fn unreachable_kafka() -> super::kafka::KafkaConfig {
    super::kafka::KafkaConfig {
        bootstrap_servers: String::new(),
        producer: Vec::new(),
        topic_creation_enable: false,
        topic_partitions: -1,
        topic_replication_factor: -1,
    }
}
