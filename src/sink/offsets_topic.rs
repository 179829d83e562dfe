//! Offsets in a compacted Kafka topic, as Kafka Connect keeps a source connector's offsets
//! in its offsets topic: key `["<connector name>",{"server":"<topic.prefix>"}]`, value the
//! offset map (JSON, schemas off), on the partition Connect's producer picks for the key
//! (murmur2 of the key bytes, as the Java client). A deleted entry is a record with a null
//! value (a tombstone), as Connect's offset reset writes it.
//!
//! Reading takes the last record of our key over every partition, from the beginning to the
//! end of the topic as it was when the read started, reading committed records only (in
//! exactly-once mode the offsets are written in Kafka transactions). Writing waits for the broker's
//! acknowledgement (`acks=all`), so a save that returns has been stored.
//!
//! The clients use the connector's producer security settings, so a secured cluster needs
//! no extra configuration.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

use crate::config::{KafkaConfig, OffsetsTopicConfig};
use crate::error::{Error, Result};
use crate::offsets::store::{cluster_key, offset_key, ClusterIdentity, Offsets};

/// How long one read, write or topic check of the offsets topic may take.
pub const OFFSETS_TOPIC_TIMEOUT: Duration = Duration::from_secs(30);

/// One connector's offsets in an offsets topic.
pub struct KafkaOffsetStore {
    topic: String,
    key: String,
    cluster_key: String,
    producer: FutureProducer,
    client: ClientConfig,
}

impl std::fmt::Debug for KafkaOffsetStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaOffsetStore")
            .field("topic", &self.topic)
            .field("key", &self.key)
            .finish()
    }
}

/// The settings every client of the offsets topic shares: the brokers and the producer's
/// security settings (librdkafka names).
pub fn base_client(kafka: &KafkaConfig) -> ClientConfig {
    let mut c = ClientConfig::new();
    // librdkafka names the setting as Kafka Connect does.
    c.set(
        crate::config::keys::BOOTSTRAP_SERVERS,
        &kafka.bootstrap_servers,
    );
    for (k, v) in &kafka.producer {
        if k.starts_with("security.") || k.starts_with("sasl.") || k.starts_with("ssl.") {
            c.set(k, v);
        }
    }
    c
}

pub(super) fn kafka_error(what: String, e: rdkafka::error::KafkaError) -> Error {
    Error::connection(what).with_source(e)
}

impl KafkaOffsetStore {
    /// The store of connector `name` with topic prefix `server` in `topic`, which is created
    /// (compacted) when it does not exist and `create` says so.
    pub async fn open(
        kafka: &KafkaConfig,
        topic: &OffsetsTopicConfig,
        name: &str,
        server: &str,
        create: bool,
    ) -> Result<KafkaOffsetStore> {
        let client = base_client(kafka);
        let mut producer_config = client.clone();
        producer_config
            .set("client.id", "pgcdc-offsets")
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("partitioner", "murmur2_random")
            .set("linger.ms", "0");
        let producer: FutureProducer = producer_config.create().map_err(|e| {
            Error::kafka("cannot create the offsets topic's producer").with_source(e)
        })?;
        let store = KafkaOffsetStore {
            topic: topic.topic.clone(),
            key: offset_key(name, server),
            cluster_key: cluster_key(name, server),
            producer,
            client,
        };
        if create {
            store.ensure_topic(topic).await?;
        }
        Ok(store)
    }

    /// Where the offsets are, for messages.
    pub fn describe(&self) -> String {
        format!("the offsets topic {}", self.topic)
    }

    /// Checks that the topic is still compacted only (see [`verify_compacted`]): a topic that
    /// was deleted and then created again by the brokers on a write is not. Errors: it is
    /// not (a config error with the fix), or the brokers cannot be reached.
    pub async fn verify_compacted(&self) -> Result<()> {
        let admin = admin_client(&self.client, "offsets")?;
        verify_compacted(&admin, "offsets", &self.topic).await
    }

    /// Creates the topic (compacted, `offset.storage.partitions`,
    /// `offset.storage.replication.factor`) unless it exists.
    async fn ensure_topic(&self, topic: &OffsetsTopicConfig) -> Result<()> {
        create_compacted(
            &self.client,
            "offsets",
            &topic.topic,
            topic.partitions,
            topic.replication_factor,
        )
        .await
    }

    /// The last offsets stored for this connector, if any (a tombstone means none).
    pub async fn load(&self) -> Result<Option<Offsets>> {
        let consumer = reader(&self.client, "pgcdc-offsets-reader")?;
        let topic = self.topic.clone();
        let key = self.key.clone();
        let last = tokio::task::spawn_blocking(move || read_last(&consumer, &topic, &key))
            .await
            .map_err(|e| Error::kafka(format!("the offsets reader failed: {e}")))??;
        match last {
            None | Some(None) => Ok(None),
            Some(Some(value)) => {
                let json: serde_json::Value = serde_json::from_slice(&value).map_err(|e| {
                    Error::kafka(format!(
                        "the offsets of this connector in {} are not JSON: fix or delete the record (Kafka Connect's offsets REST API, or a tombstone for its key)",
                        self.describe()
                    ))
                    .with_source(e)
                })?;
                Offsets::from_json(&json).map(Some).map_err(|problem| {
                    Error::config(format!(
                        "the offsets of this connector in {}: {problem}. Fix or delete the record (Kafka Connect's offsets REST API, or a tombstone for its key)",
                        self.describe()
                    ))
                })
            }
        }
    }

    /// Stores `offsets`, waiting for the broker's acknowledgement.
    pub async fn save(&self, offsets: &Offsets) -> Result<()> {
        self.write(&self.key, Some(offsets.value_bytes())).await
    }

    /// Deletes this connector's offsets and its cluster (a tombstone for each key).
    pub async fn clear(&self) -> Result<()> {
        self.write(&self.key, None).await?;
        self.write(&self.cluster_key, None).await
    }

    /// The cluster this connector's offsets were written against, if recorded.
    pub async fn load_cluster(&self) -> Result<Option<ClusterIdentity>> {
        let consumer = reader(&self.client, "pgcdc-offsets-reader")?;
        let topic = self.topic.clone();
        let key = self.cluster_key.clone();
        let last = tokio::task::spawn_blocking(move || read_last(&consumer, &topic, &key))
            .await
            .map_err(|e| Error::kafka(format!("the offsets reader failed: {e}")))??;
        let Some(Some(value)) = last else {
            return Ok(None);
        };
        let json: serde_json::Value = serde_json::from_slice(&value).unwrap_or_default();
        ClusterIdentity::from_json(&json).map(Some).map_err(|problem| {
            Error::config(format!(
                "the cluster entry of this connector in {} (key {}): {problem}. Delete it (a tombstone for its key): pgcdc then records the server it connects to",
                self.describe(),
                self.cluster_key
            ))
        })
    }

    /// Records the cluster this connector's offsets are written against.
    pub async fn save_cluster(&self, cluster: &ClusterIdentity) -> Result<()> {
        let bytes = serde_json::to_vec(&cluster.to_json()).unwrap_or_default();
        self.write(&self.cluster_key, Some(bytes)).await
    }

    async fn write(&self, key: &str, value: Option<Vec<u8>>) -> Result<()> {
        let mut record: FutureRecord<'_, str, [u8]> = FutureRecord::to(&self.topic).key(key);
        if let Some(v) = value.as_deref() {
            record = record.payload(v);
        }
        let Err((e, _)) = self.producer.send(record, OFFSETS_TOPIC_TIMEOUT).await else {
            return Ok(());
        };
        // A partition that is gone: the topic was deleted, and perhaps created again by the
        // brokers with their defaults. That is refused with the fix, not retried for ever.
        if matches!(
            e.rdkafka_error_code(),
            Some(RDKafkaErrorCode::UnknownPartition | RDKafkaErrorCode::UnknownTopicOrPartition)
        ) {
            self.verify_compacted().await?;
        }
        Err(kafka_error(
            format!("cannot write the offsets to {}", self.describe()),
            e,
        ))
    }
}

/// An admin client for the `what` topic (`offsets`, `config`).
fn admin_client(client: &ClientConfig, what: &str) -> Result<AdminClient<DefaultClientContext>> {
    let mut admin_config = client.clone();
    admin_config.set("client.id", format!("pgcdc-{what}-admin"));
    admin_config
        .create()
        .map_err(|e| Error::kafka("cannot create an admin client").with_source(e))
}

/// Creates `topic` (compacted, `partitions`, `replication_factor`; -1: the broker's default)
/// unless it exists, then checks that it is compacted only ([`verify_compacted`]); `what`
/// names it in messages (`offsets`: "the offsets topic"). Errors: the brokers cannot be
/// reached, refuse to create it, or the topic is not compacted.
pub(super) async fn create_compacted(
    client: &ClientConfig,
    what: &str,
    topic: &str,
    partitions: i32,
    replication_factor: i32,
) -> Result<()> {
    let admin = admin_client(client, what)?;
    let new = NewTopic::new(
        topic,
        partitions,
        TopicReplication::Fixed(replication_factor),
    )
    .set("cleanup.policy", "compact");
    let opts = AdminOptions::new().operation_timeout(Some(OFFSETS_TOPIC_TIMEOUT));
    let results = admin
        .create_topics([&new], &opts)
        .await
        .map_err(|e| kafka_error(format!("cannot create the {what} topic {topic}"), e))?;
    for r in results {
        match r {
            Ok(_) => tracing::info!(topic = %topic, partitions, "created the {what} topic (compacted)"),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((_, code)) => {
                return Err(Error::kafka(format!(
                    "the {what} topic {topic} does not exist and pgcdc could not create it: {code} (create it with {partitions} partition(s) and cleanup.policy=compact, or allow pgcdc's principal to create it)"
                )))
            }
        }
    }
    verify_compacted(&admin, what, topic).await
}

/// Refuses a `what` topic whose `cleanup.policy` is not `compact` alone, as Kafka Connect's
/// worker refuses its offsets and config topics: with `delete` (a topic the brokers created
/// on a write, for example after it was deleted) the records expire after the retention time,
/// and a restart then finds no offsets (or configs) and starts over. A principal that may not
/// describe the topic's configs is not checked (as Connect). Errors: a config error naming the
/// topic, its policy and the fix; a connection error when the brokers do not answer.
pub(super) async fn verify_compacted(
    admin: &AdminClient<DefaultClientContext>,
    what: &str,
    topic: &str,
) -> Result<()> {
    let opts = AdminOptions::new().request_timeout(Some(OFFSETS_TOPIC_TIMEOUT));
    let results = admin
        .describe_configs(&[ResourceSpecifier::Topic(topic)], &opts)
        .await
        .map_err(|e| {
            kafka_error(
                format!("cannot read the configs of the {what} topic {topic}"),
                e,
            )
        })?;
    let Some(Ok(resource)) = results.into_iter().next() else {
        tracing::debug!(
            topic,
            "cannot describe the {what} topic's configs; its cleanup.policy is not checked"
        );
        return Ok(());
    };
    let Some(policy) = resource.get("cleanup.policy").and_then(|e| e.value.clone()) else {
        return Ok(());
    };
    if compact_only(&policy) {
        return Ok(());
    }
    let lost = match what {
        "config" => "the connector configs it holds expire after the topic's retention time, and a restart of serve would then not know its connectors",
        _ =>
            "this connector's offsets expire after the topic's retention time, and a restart would then not know what it published (it would snapshot again or skip changes, as snapshot.mode decides)",
    };
    Err(Error::config(format!(
        "the {what} topic {topic} has cleanup.policy={policy}, but it must be compact: {lost}. Set it (kafka-configs.sh --alter --entity-type topics --entity-name {topic} --add-config cleanup.policy=compact) or name another, compacted topic; a topic deleted while pgcdc runs is created again by the brokers with their defaults, which is how this usually happens"
    )))
}

/// Whether a `cleanup.policy` value is `compact` alone (Connect refuses `compact,delete` too).
fn compact_only(policy: &str) -> bool {
    let parts: Vec<&str> = policy
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    parts == ["compact"]
}

/// A consumer that reads a topic from its beginning (committed records only, ends of
/// partitions reported), named `id`. Errors: librdkafka refuses the settings.
pub(super) fn reader(client: &ClientConfig, id: &str) -> Result<BaseConsumer<ReaderContext>> {
    let mut consumer_config = client.clone();
    consumer_config
        .set("client.id", id)
        // librdkafka names the setting as Kafka Connect's worker does.
        .set(crate::config::keys::GROUP_ID, id)
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true");
    consumer_config
        .create_with_context(ReaderContext)
        .map_err(|e| Error::kafka(format!("cannot create a reader ({id})")).with_source(e))
}

/// The offsets reader's client context: the end of a partition, which the reader asks to be
/// told about, is not an error to log.
pub(super) struct ReaderContext;

impl ClientContext for ReaderContext {
    fn error(&self, error: KafkaError, reason: &str) {
        if !matches!(error, KafkaError::PartitionEOF(_))
            && error.rdkafka_error_code() != Some(RDKafkaErrorCode::PartitionEOF)
        {
            tracing::warn!(target: "librdkafka", "offsets reader: {error}: {reason}");
        }
    }
}

impl ConsumerContext for ReaderContext {}

/// The low and high watermarks of a partition. A topic created a moment ago may have no
/// leader yet: that answer is retried (every 200 ms) until [`OFFSETS_TOPIC_TIMEOUT`].
fn watermarks(
    consumer: &BaseConsumer<ReaderContext>,
    topic: &str,
    partition: i32,
) -> Result<(i64, i64)> {
    let deadline = std::time::Instant::now() + OFFSETS_TOPIC_TIMEOUT;
    loop {
        match consumer.fetch_watermarks(topic, partition, OFFSETS_TOPIC_TIMEOUT) {
            Ok(w) => return Ok(w),
            Err(e)
                if matches!(
                    e.rdkafka_error_code(),
                    Some(
                        RDKafkaErrorCode::NotLeaderForPartition
                            | RDKafkaErrorCode::LeaderNotAvailable
                            | RDKafkaErrorCode::UnknownTopicOrPartition
                    )
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(kafka_error(format!("cannot read the end of {topic}"), e)),
        }
    }
}

/// Reads every partition of `topic` from the beginning up to its end at the time of the call
/// and returns the last value of `key` (`Some(None)`: a tombstone), if any.
fn read_last(
    consumer: &BaseConsumer<ReaderContext>,
    topic: &str,
    key: &str,
) -> Result<Option<Option<Vec<u8>>>> {
    let mut last = None;
    read_to_end(consumer, topic, |k, v| {
        if k == Some(key.as_bytes()) {
            last = Some(v.map(<[u8]>::to_vec));
        }
    })?;
    Ok(last)
}

/// Reads every partition of `topic` from the beginning up to its end at the time of the call,
/// giving each record's key and value (`None`: a tombstone) to `each`, in order within a
/// partition. Errors: metadata, watermarks or records cannot be read, or the read takes more
/// than [`OFFSETS_TOPIC_TIMEOUT`].
pub(super) fn read_to_end(
    consumer: &BaseConsumer<ReaderContext>,
    topic: &str,
    mut each: impl FnMut(Option<&[u8]>, Option<&[u8]>),
) -> Result<()> {
    let metadata = consumer
        .fetch_metadata(Some(topic), OFFSETS_TOPIC_TIMEOUT)
        .map_err(|e| kafka_error(format!("cannot read the metadata of {topic}"), e))?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic)
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    let mut ends = std::collections::HashMap::new();
    let mut assignment = TopicPartitionList::new();
    for p in &partitions {
        let (low, high) = watermarks(consumer, topic, *p)?;
        if high > low {
            ends.insert(*p, high);
            assignment
                .add_partition_offset(topic, *p, Offset::Beginning)
                .map_err(|e| kafka_error(format!("cannot read {topic}"), e))?;
        }
    }
    if ends.is_empty() {
        return Ok(());
    }
    consumer
        .assign(&assignment)
        .map_err(|e| kafka_error(format!("cannot read {topic}"), e))?;
    let deadline = std::time::Instant::now() + OFFSETS_TOPIC_TIMEOUT;
    while !ends.is_empty() {
        if std::time::Instant::now() > deadline {
            return Err(Error::connection(format!(
                "reading the topic {topic} took more than {} s",
                OFFSETS_TOPIC_TIMEOUT.as_secs()
            )));
        }
        let Some(msg) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        // Read committed: the end of a partition may be a transaction marker, which is never
        // delivered, or an open transaction, which is not committed; either way the
        // partition's end is reported instead.
        let msg = match msg {
            Err(KafkaError::PartitionEOF(p)) => {
                ends.remove(&p);
                continue;
            }
            other => other.map_err(|e| kafka_error(format!("cannot read {topic}"), e))?,
        };
        each(msg.key(), msg.payload());
        if ends
            .get(&msg.partition())
            .is_some_and(|end| msg.offset() + 1 >= *end)
        {
            ends.remove(&msg.partition());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compact_alone_is_a_compacted_offsets_topic() {
        assert!(compact_only("compact"));
        assert!(compact_only(" compact "));
        for refused in ["delete", "compact,delete", "delete,compact", ""] {
            assert!(!compact_only(refused), "{refused:?}");
        }
    }
}
