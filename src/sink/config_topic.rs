//! Connector configs in a compacted Kafka topic (`config.storage.topic`), in the records Kafka
//! Connect's distributed workers write there, so the topic reads the same to Connect's tools:
//!
//! - key `connector-<name>`, value `{"properties":{...}}` (the config as given, placeholders
//!   unresolved); a tombstone when the connector is deleted;
//! - key `target-state-<name>`, value `{"state":"STARTED"}` or `{"state":"PAUSED"}`, and for a
//!   stopped connector `{"state":"PAUSED","state.v2":"STOPPED"}` (Connect 3.5+, readable by
//!   older workers as paused); a tombstone on delete.
//!
//! The topic has one partition (Connect refuses any other count, since the order of the
//! records is the order of the changes) and is compacted; pgcdc creates it so when it is
//! missing. Start-up reads it from the beginning to its end; each write waits for the broker's
//! acknowledgement (`acks=all`, idempotent), so a change that returns is stored. One `pgcdc
//! serve` process owns a topic: a second worker on the same topic would not see the first's
//! changes until it restarts.

use std::collections::BTreeMap;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use rdkafka::producer::{FutureProducer, FutureRecord};
use serde_json::{json, Value as Json};

use super::offsets_topic::{
    base_client, create_compacted, kafka_error, read_to_end, reader, OFFSETS_TOPIC_TIMEOUT,
};
use crate::config::{ConfigTopicConfig, RawConfig};
use crate::error::{Error, Result};

/// A connector's target state as the config topic spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredTarget {
    /// `STARTED`.
    Started,
    /// `PAUSED`.
    Paused,
    /// `STOPPED` (`state.v2`).
    Stopped,
}

/// One stored connector: its config as given and its target state (`Started` when the topic
/// holds no target-state record for it).
pub type StoredConnector = (String, RawConfig, StoredTarget);

const CONNECTOR_PREFIX: &str = "connector-";
const TARGET_STATE_PREFIX: &str = "target-state-";

/// The config topic of one `pgcdc serve` worker.
pub struct KafkaConfigStore {
    topic: String,
    producer: FutureProducer,
    client: ClientConfig,
}

impl std::fmt::Debug for KafkaConfigStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaConfigStore")
            .field("topic", &self.topic)
            .finish()
    }
}

impl KafkaConfigStore {
    /// Opens the store, creating the topic (1 partition, compacted) when it is missing.
    /// Errors: the brokers cannot be reached, the topic cannot be created, or it has more
    /// than one partition.
    pub async fn open(config: &ConfigTopicConfig) -> Result<KafkaConfigStore> {
        let client = base_client(&config.kafka);
        let mut producer_config = client.clone();
        producer_config
            .set("client.id", "pgcdc-configs")
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("linger.ms", "0")
            .set(
                "message.timeout.ms",
                OFFSETS_TOPIC_TIMEOUT.as_millis().to_string(),
            );
        let producer: FutureProducer = producer_config.create().map_err(|e| {
            Error::kafka("cannot create the config topic's producer").with_source(e)
        })?;
        let store = KafkaConfigStore {
            topic: config.topic.clone(),
            producer,
            client,
        };
        store.ensure_topic(config.replication_factor).await?;
        Ok(store)
    }

    /// Where the configs are, for messages.
    pub fn describe(&self) -> String {
        format!("the config topic {}", self.topic)
    }

    async fn ensure_topic(&self, replication_factor: i32) -> Result<()> {
        create_compacted(&self.client, "config", &self.topic, 1, replication_factor).await
    }

    /// Every connector the topic holds, sorted by name. Blocks the calling thread while it
    /// reads. Errors: the topic cannot be read, has more than one partition, or holds a
    /// connector record that is not `{"properties":{...}}` of strings.
    pub fn load(&self) -> Result<Vec<StoredConnector>> {
        let consumer = reader(&self.client, "pgcdc-configs-reader")?;
        let metadata = consumer
            .fetch_metadata(Some(&self.topic), OFFSETS_TOPIC_TIMEOUT)
            .map_err(|e| kafka_error(format!("cannot read the metadata of {}", self.topic), e))?;
        let partitions = metadata
            .topics()
            .iter()
            .find(|t| t.name() == self.topic)
            .map_or(0, |t| t.partitions().len());
        if partitions > 1 {
            return Err(Error::config(format!(
                "the config topic {} has {partitions} partitions: it must have exactly one, so that changes are read in the order they were made (as Kafka Connect requires); use another topic",
                self.topic
            )));
        }
        let mut configs: BTreeMap<String, Option<Json>> = BTreeMap::new();
        let mut targets: BTreeMap<String, Option<Json>> = BTreeMap::new();
        let mut bad: Option<String> = None;
        read_to_end(&consumer, &self.topic, |key, value| {
            let Some(key) = key.and_then(|k| std::str::from_utf8(k).ok()) else {
                return;
            };
            let parsed = value.map(serde_json::from_slice::<Json>);
            let parsed = match parsed {
                Some(Err(e)) => {
                    bad.get_or_insert(format!("record {key}: not JSON ({e})"));
                    return;
                }
                Some(Ok(v)) => Some(v),
                None => None,
            };
            if let Some(name) = key.strip_prefix(CONNECTOR_PREFIX) {
                configs.insert(name.to_string(), parsed);
            } else if let Some(name) = key.strip_prefix(TARGET_STATE_PREFIX) {
                targets.insert(name.to_string(), parsed);
            }
            // Connect's task, commit and session-key records: pgcdc has no use for them.
        })?;
        if let Some(why) = bad {
            return Err(self.corrupt(&why));
        }
        let mut out = Vec::new();
        for (name, value) in configs {
            let Some(value) = value else { continue };
            let raw = properties(&value)
                .map_err(|why| self.corrupt(&format!("record {CONNECTOR_PREFIX}{name}: {why}")))?;
            let target = match targets.get(&name).cloned().flatten() {
                None => StoredTarget::Started,
                Some(v) => target_of(&v).ok_or_else(|| {
                    self.corrupt(&format!(
                        "record {TARGET_STATE_PREFIX}{name}: {v} is not a target state"
                    ))
                })?,
            };
            out.push((name, raw, target));
        }
        Ok(out)
    }

    fn corrupt(&self, why: &str) -> Error {
        Error::config(format!(
            "{}: {why}; fix it with PUT /connectors/{{name}}/config or write a tombstone for the record's key",
            self.describe()
        ))
    }

    /// Stores `name`'s config and target state (the target state first, so that a crash
    /// between the two never starts a connector meant to be paused or stopped). Blocks the
    /// calling thread until the broker acknowledges both. Errors: a write is refused or times
    /// out.
    pub fn save(&self, name: &str, raw: &RawConfig, target: StoredTarget) -> Result<()> {
        let state = match target {
            StoredTarget::Started => json!({"state": "STARTED"}),
            StoredTarget::Paused => json!({"state": "PAUSED"}),
            StoredTarget::Stopped => json!({"state": "PAUSED", "state.v2": "STOPPED"}),
        };
        self.write(&format!("{TARGET_STATE_PREFIX}{name}"), Some(&state))?;
        self.write(
            &format!("{CONNECTOR_PREFIX}{name}"),
            Some(&json!({ "properties": raw })),
        )
    }

    /// Deletes `name` (tombstones for its config and its target state). Blocks like
    /// [`KafkaConfigStore::save`].
    pub fn remove(&self, name: &str) -> Result<()> {
        self.write(&format!("{CONNECTOR_PREFIX}{name}"), None)?;
        self.write(&format!("{TARGET_STATE_PREFIX}{name}"), None)
    }

    fn write(&self, key: &str, value: Option<&Json>) -> Result<()> {
        let bytes = value.map(|v| serde_json::to_vec(v).unwrap_or_default());
        let mut record: FutureRecord<'_, str, [u8]> = FutureRecord::to(&self.topic).key(key);
        if let Some(b) = bytes.as_deref() {
            record = record.payload(b);
        }
        let delivery = self.producer.send_result(record).map_err(|(e, _)| {
            kafka_error(format!("cannot write {key} to {}", self.describe()), e)
        })?;
        match crate::util::block_on(delivery) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err((e, _))) => Err(kafka_error(
                format!("cannot write {key} to {}", self.describe()),
                e,
            )),
            Err(_) => Err(Error::kafka(format!(
                "the write of {key} to {} was cancelled (the producer is closing)",
                self.describe()
            ))),
        }
    }
}

/// A connector record's config: `{"properties":{"key":"value",...}}`.
fn properties(value: &Json) -> std::result::Result<RawConfig, String> {
    let props = value["properties"]
        .as_object()
        .ok_or("no \"properties\" object")?;
    props
        .iter()
        .map(|(k, v)| match v.as_str() {
            Some(s) => Ok((k.clone(), s.to_string())),
            None => Err(format!("{k} is not a string")),
        })
        .collect()
}

/// A target-state record's state: `state.v2` when present (Connect 3.5+), else `state`.
fn target_of(value: &Json) -> Option<StoredTarget> {
    let state = value["state.v2"].as_str().or(value["state"].as_str())?;
    match state {
        "STARTED" => Some(StoredTarget::Started),
        "PAUSED" => Some(StoredTarget::Paused),
        "STOPPED" => Some(StoredTarget::Stopped),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_states_read_as_connect_writes_them() {
        assert_eq!(
            target_of(&json!({"state": "STARTED"})),
            Some(StoredTarget::Started)
        );
        assert_eq!(
            target_of(&json!({"state": "PAUSED"})),
            Some(StoredTarget::Paused)
        );
        assert_eq!(
            target_of(&json!({"state": "PAUSED", "state.v2": "STOPPED"})),
            Some(StoredTarget::Stopped)
        );
        assert_eq!(target_of(&json!({"state": "RUNNING"})), None);
    }

    #[test]
    fn connector_records_hold_string_properties() {
        let raw = properties(&json!({"properties": {"a": "1", "name": "n"}})).unwrap();
        assert_eq!(raw.get("a").map(String::as_str), Some("1"));
        assert!(properties(&json!({"properties": {"a": 1}}))
            .unwrap_err()
            .contains("a is not a string"));
        assert!(properties(&json!({})).is_err());
    }
}
