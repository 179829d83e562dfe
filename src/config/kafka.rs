//! Kafka: `bootstrap.servers`, the producer settings (`producer.*` and `producer.override.*`,
//! Java client names translated to librdkafka's, the delivery guarantees that cannot be
//! weakened) and topic creation (`topic.creation.*`).
//!
//! Whether librdkafka itself accepts each producer setting is the sink's to say
//! (`crate::sink::kafka::invalid_producer_settings`), checked with the rest of the
//! configuration by `crate::pipeline::validate_config`.

use std::collections::BTreeMap;

use super::checker::Checker;
use super::kafka_security::{self, Written};
use super::keys::{
    BOOTSTRAP_SERVERS, PRODUCER_OVERRIDE_PREFIX, PRODUCER_PREFIX,
    TOPIC_CREATION_DEFAULT_PARTITIONS, TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR,
    TOPIC_CREATION_ENABLE,
};

/// Kafka producer settings. `Debug` hides secret values (passwords, private keys).
#[derive(Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// `bootstrap.servers`.
    pub bootstrap_servers: String,
    /// librdkafka properties from `producer.*` and `producer.override.*` (the latter win),
    /// with Java client names translated where they differ.
    pub producer: Vec<(String, String)>,
    /// `topic.creation.enable`: create missing topics before producing to them.
    pub topic_creation_enable: bool,
    /// `topic.creation.default.partitions` (-1: the broker's default).
    pub topic_partitions: i32,
    /// `topic.creation.default.replication.factor` (-1: the broker's default).
    pub topic_replication_factor: i32,
}

impl std::fmt::Debug for KafkaConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let producer: Vec<(&str, &str)> = self
            .producer
            .iter()
            .map(|(k, v)| {
                let shown = if super::keys::is_secret(k) {
                    "[hidden]"
                } else {
                    v.as_str()
                };
                (k.as_str(), shown)
            })
            .collect();
        f.debug_struct("KafkaConfig")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("producer", &producer)
            .field("topic_creation_enable", &self.topic_creation_enable)
            .field("topic_partitions", &self.topic_partitions)
            .field("topic_replication_factor", &self.topic_replication_factor)
            .finish()
    }
}

/// The settings of this area.
pub(super) struct Kafka {
    pub(super) config: KafkaConfig,
    /// librdkafka property → the key the user wrote for it.
    pub(super) written_as: BTreeMap<String, String>,
}

/// Reads the Kafka settings.
pub(super) fn parse(c: &mut Checker<'_>) -> Kafka {
    let (mut producer, written_as) = producer_settings(c);
    let bootstrap_servers = producer
        .remove(BOOTSTRAP_SERVERS)
        .or_else(|| c.get(BOOTSTRAP_SERVERS).map(str::to_string))
        .unwrap_or_default();
    if bootstrap_servers.is_empty() {
        c.problem(format!(
            "{BOOTSTRAP_SERVERS} is required: the Kafka brokers as host:port[,host:port] (or PGCDC_BOOTSTRAP_SERVERS, or --set {BOOTSTRAP_SERVERS}=...)"
        ));
    }
    let config = KafkaConfig {
        bootstrap_servers,
        producer: producer.into_iter().collect(),
        topic_creation_enable: c.boolean(TOPIC_CREATION_ENABLE, true),
        topic_partitions: c.int(TOPIC_CREATION_DEFAULT_PARTITIONS, -1i32, -1i32),
        topic_replication_factor: c.int(TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR, -1i32, -1i32),
    };
    for (key, n) in [
        (TOPIC_CREATION_DEFAULT_PARTITIONS, config.topic_partitions),
        (
            TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR,
            config.topic_replication_factor,
        ),
    ] {
        if n == 0 {
            c.problem(format!(
                "{key}=0 is invalid: use -1 (the broker's default) or a number >= 1"
            ));
        }
    }
    if config
        .bootstrap_servers
        .split(',')
        .any(|b| b.trim().is_empty())
        && !config.bootstrap_servers.is_empty()
    {
        c.problem(format!(
            "{BOOTSTRAP_SERVERS}={:?} has an empty entry: list the brokers as host:port[,host:port]",
            config.bootstrap_servers
        ));
    }
    guarantees(c, &config.producer);
    Kafka { config, written_as }
}

/// The Kafka client settings of a worker's own clients (its config topic): `bootstrap.servers`
/// and the Java client's security settings (`security.protocol`, `sasl.*`, `ssl.*`), read and
/// translated as a connector's producer settings are. Errors: every problem, one per entry.
pub fn worker_client(
    bootstrap_servers: &str,
    security: &[(String, String)],
) -> std::result::Result<KafkaConfig, Vec<String>> {
    let mut raw = super::RawConfig::new();
    raw.insert(BOOTSTRAP_SERVERS.to_string(), bootstrap_servers.to_string());
    for (k, v) in security {
        raw.insert(format!("{PRODUCER_PREFIX}{k}"), v.clone());
    }
    let mut c = Checker::new(&raw);
    let kafka = parse(&mut c);
    if c.problems.is_empty() {
        Ok(kafka.config)
    } else {
        // Name the keys as the worker file writes them.
        Err(c
            .problems
            .into_iter()
            .map(|p| p.replace(PRODUCER_PREFIX, ""))
            .collect())
    }
}

/// `producer.*` then `producer.override.*` (the latter win), translated to librdkafka
/// properties (security settings by [`kafka_security`]); with, for each property, the key
/// the user wrote.
fn producer_settings(c: &mut Checker<'_>) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut java: BTreeMap<String, Written> = BTreeMap::new();
    let raw = c.raw;
    for prefix in [PRODUCER_PREFIX, PRODUCER_OVERRIDE_PREFIX] {
        for (k, v) in raw {
            let Some(name) = k.strip_prefix(prefix) else {
                continue;
            };
            if prefix == PRODUCER_PREFIX && k.starts_with(PRODUCER_OVERRIDE_PREFIX) {
                continue;
            }
            let written = Written {
                value: v.clone(),
                key: k.clone(),
            };
            java.insert(name.to_string(), written);
        }
    }
    let mut producer = BTreeMap::new();
    let mut written_as = BTreeMap::new();
    for (lk, lv, key) in kafka_security::translate(&mut java, c) {
        written_as.insert(lk.clone(), key);
        producer.insert(lk, lv);
    }
    for (name, w) in java {
        if name == "buffer.memory" && w.value.trim().parse::<u64>().is_err() {
            c.problem(format!(
                "{}={} is invalid: the producer's buffer in bytes, a whole number >= 1024",
                w.key, w.value
            ));
            continue;
        }
        if let Some((lk, lv)) = translate_producer_key(&name, w.value.trim()) {
            written_as.insert(lk.clone(), w.key);
            producer.insert(lk, lv);
        }
    }
    (producer, written_as)
}

/// Java client producer property names that librdkafka spells differently.
fn translate_producer_key(key: &str, value: &str) -> Option<(String, String)> {
    match key {
        "buffer.memory" => value.parse::<u64>().ok().map(|b| {
            (
                "queue.buffering.max.kbytes".into(),
                (b / 1024).max(1).to_string(),
            )
        }),
        "delivery.timeout.ms" => Some(("message.timeout.ms".into(), value.into())),
        "max.block.ms" => None,
        "key.serializer" | "value.serializer" => None,
        "max.request.size" => Some(("message.max.bytes".into(), value.into())),
        _ => Some((key.into(), value.into())),
    }
}

/// Producer settings that would weaken what pgcdc promises: acknowledged by all replicas,
/// idempotent, one request in flight, the Java client's partitioner.
fn guarantees(c: &mut Checker<'_>, producer: &[(String, String)]) {
    for (k, v) in producer {
        if k == "acks" && v != "all" && v != "-1" {
            c.problem(format!(
                "producer acks={v} is invalid: pgcdc confirms a position to PostgreSQL only after acks=all"));
        }
        if k == "enable.idempotence" && v == "false" {
            c.problem(
                "producer enable.idempotence=false is invalid: retries would reorder or duplicate records within a partition");
        }
        if (k == "max.in.flight.requests.per.connection" || k == "max.in.flight") && v.trim() != "1"
        {
            c.problem(format!(
                "producer {k}={v} is invalid: pgcdc keeps one produce request in flight per broker, as Kafka Connect does, because with more a broker before Kafka 4.5 can drop the first records sent to a new partition while the client reports them delivered (KAFKA-15591); remove the setting"
            ));
        }
        if k == "partitioner" && v != "murmur2_random" {
            c.problem(format!(
                "producer partitioner={v} is invalid: pgcdc uses murmur2_random so that keys land on the partitions the Java client picks"
            ));
        }
    }
}
