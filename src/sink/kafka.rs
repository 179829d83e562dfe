//! The Kafka producer (librdkafka via rdkafka) with delivery tracking.
//!
//! Settings pgcdc always applies, because the guarantees depend on them:
//! - `acks=all` and `enable.idempotence=true`: a record counts as delivered only once every
//!   in-sync replica has it, and retries neither duplicate nor reorder within a partition;
//! - `partitioner=murmur2_random`: keyed records land on the partition Kafka's Java client
//!   would choose (murmur2 of the key bytes), so a team switching from Debezium keeps its
//!   per-key order; librdkafka's default (CRC32) would not;
//! - `message.timeout.ms=0` (retry forever, as Kafka Connect's `delivery.timeout.ms` of
//!   `Integer.MAX_VALUE`), unless overridden: a broker outage is backpressure, not loss;
//! - `max.in.flight.requests.per.connection=1`, as Kafka Connect sets for every source task.
//!   With more requests in flight, brokers before Kafka 4.5 can lose the first records sent to
//!   a partition: a producer's first request refused with a retriable error (the broker is
//!   still taking up leadership of a just created topic, or the ISR is short) is followed by
//!   a second one that the broker appends, since it accepts any first sequence number from a
//!   producer it holds no state for (KAFKA-15591); librdkafka then reports the refused
//!   records as delivered, "implicitly acked" by the later success. One request at a time
//!   makes a retried request always the next one the broker sees.
//!
//! Bounded memory: librdkafka's own queue is capped (`queue.buffering.max.messages`,
//! `queue.buffering.max.kbytes`); when it is full, [`KafkaSink::send`] waits for delivery
//! reports instead of failing, which pauses intake upstream.
//!
//! Every record carries its transaction's sequence number as the delivery opaque; the
//! delivery callback reports it to the [`AckTracker`].

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, Message};
use tokio::sync::Notify;

use crate::config::{KafkaConfig, DEFAULT_TRANSACTION_TIMEOUT_MS};
use crate::convert::KafkaRecord;
use crate::error::{classify_kafka_delivery, Error, ErrorKind, Result};
use crate::offsets::ack::{AckToken, AckTracker, CommitInfo, ErrorStage};

use super::kafka_admin::KafkaAdmin;
use super::transactions::{KafkaTransaction, TransactionSettings};
use super::Sink;
use crate::lsn::Lsn;

/// `queue.buffering.max.kbytes` when the producer settings lack it: 16 MiB, sixteen full 1 MB
/// batches. A parsed config always has it: half of `pgcdc.buffer.memory.bytes` (see
/// [`crate::config::memory`]), 16 MiB by default. With one request in flight that keeps every
/// batch full during a bulk drain (`scripts/bench.sh` drained as fast with it as with 64 MiB).
pub const DEFAULT_QUEUE_KBYTES: usize = 16 * 1024;

/// Defaults applied before user `producer.*` settings.
pub const PRODUCER_DEFAULTS: &[(&str, &str)] = &[
    // Kafka's 5 ms. 1 ms cuts the p99 from commit to broker at 10,000 events/s from 12.7 to
    // 4.9 ms (scripts/bench-latency.sh), but halves the batches of a CPU-bound drain: the
    // broker then spent 8.9 instead of 4.8 CPU-s on the wide workload of
    // scripts/bench-compare.sh, and pgcdc drained it at 15,800 instead of 26,200 events/s.
    ("linger.ms", "5"),
    ("batch.size", "1000000"),
    ("compression.type", "none"),
    // 20,000 messages: with small records (Avro's 250 B) librdkafka's queue filled up to its
    // message bound before its byte bound, and each queued message costs librdkafka more than
    // its bytes (peak RSS 88 MiB with 100,000; 44 MiB with 20,000, at the same events/s in
    // scripts/bench-avro.sh). One request is in flight at a time, so 20,000 keep it full.
    ("queue.buffering.max.messages", "20000"),
    ("queue.buffering.max.kbytes", "16384"),
    ("message.timeout.ms", "0"),
    ("client.id", "pgcdc"),
];

/// Settings forced after user settings (validated earlier so users get a clear error).
pub const PRODUCER_FORCED: &[(&str, &str)] = &[
    ("acks", "all"),
    ("enable.idempotence", "true"),
    ("partitioner", "murmur2_random"),
    ("max.in.flight.requests.per.connection", "1"),
];

/// Bytes a produce request adds around one record (request, topic and batch headers).
const REQUEST_OVERHEAD: usize = 1024;

/// A record key for an error message: its text (lossy; of a JSON key with a schema, the
/// payload), at most 120 characters.
pub fn describe_key(key: Option<&[u8]>) -> String {
    let Some(key) = key else {
        return "null".into();
    };
    let payload = serde_json::from_slice::<serde_json::Value>(key)
        .ok()
        .and_then(|v| {
            v.get("payload")
                .filter(|_| v.get("schema").is_some())
                .cloned()
        });
    let text = match payload {
        Some(p) => std::borrow::Cow::Owned(p.to_string()),
        None => String::from_utf8_lossy(key),
    };
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.into_owned(),
    }
}

/// Delivery callback context.
pub struct SinkContext {
    tracker: Arc<AckTracker>,
    delivered: Arc<Notify>,
    client_log: Arc<ClientLog>,
    /// Whether the producer is transactional (a fenced one stops as [`ErrorKind::Fenced`]).
    transactional: bool,
}

/// Rate-limited logging of librdkafka's own log lines and global errors: a broker that is down
/// makes librdkafka report the same error many times a second; each distinct message is
/// logged at most once per [`CLIENT_LOG_INTERVAL`], with a count of the repeats suppressed.
#[derive(Default)]
pub struct ClientLog {
    last: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, u64)>>,
    /// The last client error retrying cannot fix (failed authentication, a refused TLS
    /// handshake), classified: kind, fix, and librdkafka's reason.
    fatal: std::sync::Mutex<Option<(ErrorKind, &'static str, String)>>,
}

/// How long one metadata request of the start-up check waits; between attempts the check
/// looks for an error retrying cannot fix.
const CONNECTION_CHECK_STEP: Duration = Duration::from_secs(1);

/// Minimum time between two log lines with the same librdkafka message.
pub const CLIENT_LOG_INTERVAL: Duration = Duration::from_secs(30);

impl ClientLog {
    fn should_log(&self, key: &str) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        match last.get_mut(key) {
            Some((at, suppressed)) if now.duration_since(*at) < CLIENT_LOG_INTERVAL => {
                *suppressed += 1;
                None
            }
            Some((at, suppressed)) => {
                let n = *suppressed;
                *at = now;
                *suppressed = 0;
                Some(n)
            }
            None => {
                if last.len() > 1000 {
                    last.clear();
                }
                last.insert(key.to_string(), (now, 0));
                Some(0)
            }
        }
    }

    pub(super) fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        // librdkafka's debug lines only come when its `debug` property asks for them: all of
        // them are wanted then.
        if matches!(level, RDKafkaLogLevel::Info | RDKafkaLogLevel::Debug) {
            tracing::debug!(target: "librdkafka", facility = fac, "{message}");
            return;
        }
        // Connection failures repeat per retry with different timings in the text; key on
        // the facility and the text before any digits so repeats collapse.
        let key: String = format!(
            "{fac}:{}",
            message
                .split(|c: char| c.is_ascii_digit())
                .next()
                .unwrap_or(message)
        );
        let Some(suppressed) = self.should_log(&key) else {
            return;
        };
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::warn!(target: "librdkafka", facility = fac, repeats_suppressed = suppressed, "{message}")
            }
            RDKafkaLogLevel::Warning | RDKafkaLogLevel::Notice => {
                tracing::info!(target: "librdkafka", facility = fac, repeats_suppressed = suppressed, "{message}")
            }
            RDKafkaLogLevel::Info | RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", facility = fac, "{message}")
            }
        }
    }

    pub(super) fn error(&self, error: KafkaError, reason: &str) {
        let code = error.rdkafka_error_code().map(|c| c as i32).unwrap_or(0);
        if let Some((kind, fix)) = crate::error::classify_kafka_client(code) {
            let mut fatal = self.fatal.lock().unwrap_or_else(|p| p.into_inner());
            *fatal = Some((kind, fix, reason.to_string()));
        }
        let key = format!("error:{code}");
        if let Some(suppressed) = self.should_log(&key) {
            tracing::warn!(target: "librdkafka", repeats_suppressed = suppressed, "Kafka client: {error}: {reason}");
        }
    }
}

impl ClientContext for SinkContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        self.client_log.log(level, fac, log_message);
    }
    fn error(&self, error: KafkaError, reason: &str) {
        self.tracker
            .stats()
            .count_error(ErrorStage::Client, &error_name(&error));
        self.client_log.error(error, reason);
    }
}

/// librdkafka's name of an error (`MessageTimedOut`, `BrokerTransportFailure`), for the
/// error counts.
fn error_name(e: &KafkaError) -> String {
    match e.rdkafka_error_code() {
        Some(code) => format!("{code:?}"),
        None => "Other".into(),
    }
}

/// Key, value and header bytes of a record: what librdkafka counts against
/// `queue.buffering.max.kbytes`.
fn record_bytes(key: Option<&[u8]>, value: Option<&[u8]>, headers: usize) -> u64 {
    (key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len) + headers) as u64
}

/// A record's delivery opaque: its unit's sequence number in the low [`DeliveryTag::SEQ_BITS`]
/// bits and the bytes of its headers in the high bits, so that the delivery report, on
/// librdkafka's thread, need not read the headers back to count them (that read was 3 % of
/// pgcdc's CPU in the bulk bench). Header bytes of [`DeliveryTag::HEADERS_UNKNOWN`] or more
/// are counted by reading the headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DeliveryTag(usize);

const _: () = assert!(
    usize::BITS == 64,
    "the delivery opaque packs two numbers into 64 bits"
);

impl DeliveryTag {
    /// Bits of the sequence number: 2^44 units, 5 years at 100,000 transactions a second.
    const SEQ_BITS: u32 = 44;
    /// The largest header byte count the tag holds, which also means "count them".
    const HEADERS_UNKNOWN: usize = (1 << (64 - Self::SEQ_BITS)) - 1;

    fn new(seq: AckToken, header_bytes: usize) -> Self {
        let seq = seq.0 as usize & ((1 << Self::SEQ_BITS) - 1);
        DeliveryTag(seq | header_bytes.min(Self::HEADERS_UNKNOWN) << Self::SEQ_BITS)
    }

    fn seq(self) -> AckToken {
        AckToken((self.0 & ((1 << Self::SEQ_BITS) - 1)) as u64)
    }

    /// The header bytes, or `None` when they were too many to hold.
    fn header_bytes(self) -> Option<usize> {
        Some(self.0 >> Self::SEQ_BITS).filter(|&b| b < Self::HEADERS_UNKNOWN)
    }
}

impl ProducerContext for SinkContext {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, tag: usize) {
        let tag = DeliveryTag(tag);
        let msg = match result {
            Ok(m) => m,
            Err((_, m)) => m,
        };
        let headers = tag.header_bytes().unwrap_or_else(|| {
            msg.headers().map_or(0, |h| {
                h.iter()
                    .map(|x| x.key.len() + x.value.map_or(0, <[u8]>::len))
                    .sum()
            })
        });
        self.tracker
            .stats()
            .reported(record_bytes(msg.key(), msg.payload(), headers));
        match result {
            Ok(_) => self.tracker.ack(tag.seq()),
            Err((e, msg)) => {
                let hint = match e.rdkafka_error_code() {
                    Some(RDKafkaErrorCode::MessageSizeTooLarge) => {
                        " (the broker or topic limit is lower: raise the topic's max.message.bytes or the broker's message.max.bytes, or exclude the table)"
                    }
                    Some(RDKafkaErrorCode::TopicAuthorizationFailed) => " (grant pgcdc's principal WRITE on the topic)",
                    Some(RDKafkaErrorCode::MessageTimedOut) => {
                        " (it waited longer than delivery.timeout.ms: leave delivery.timeout.ms unset, so pgcdc waits for Kafka for ever, or raise it; a restart sends it again)"
                    }
                    _ => "",
                };
                let size = msg.key().map_or(0, <[u8]>::len) + msg.payload().map_or(0, <[u8]>::len);
                let code = e.rdkafka_error_code().map(|c| c as i32);
                let kind = classify_kafka_delivery(code, self.transactional);
                let reason = format!(
                    "Kafka did not accept a record for topic {} with key {} ({size} bytes): {e}{hint}",
                    msg.topic(),
                    describe_key(msg.key())
                );
                self.tracker
                    .stats()
                    .count_error(ErrorStage::Delivery, &error_name(e));
                tracing::error!(topic = msg.topic(), error = %e, "delivery failed; progress stops here");
                self.tracker.fail(Error::new(kind, reason));
            }
        }
        self.delivered.notify_waiters();
    }
}

/// The Kafka sink.
pub struct KafkaSink {
    producer: ThreadedProducer<SinkContext>,
    admin: KafkaAdmin,
    config: KafkaConfig,
    known_topics: HashSet<String>,
    tracker: Arc<AckTracker>,
    delivered: Arc<Notify>,
    /// The producer queue's capacity in bytes (`queue.buffering.max.kbytes` × 1024).
    queue_max_bytes: usize,
    /// The clients' log, which also keeps the last client error retrying cannot fix.
    client_log: Arc<ClientLog>,
    /// Exactly-once: the open Kafka transaction (`None`: at-least-once).
    txn: Option<KafkaTransaction>,
    /// Exactly-once: the commit position the offsets store holds, raised after each Kafka
    /// transaction commits (shared with the replication reader, see
    /// [`AckTracker::confirmable`]).
    stored: Option<Arc<AtomicU64>>,
}

fn client_config(config: &KafkaConfig, transactions: Option<&TransactionSettings>) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &config.bootstrap_servers);
    for (k, v) in PRODUCER_DEFAULTS {
        c.set(*k, *v);
    }
    if let Some(t) = transactions {
        c.set("transaction.timeout.ms", t.timeout.as_millis().to_string());
    }
    for (k, v) in &config.producer {
        c.set(k, v);
    }
    for (k, v) in PRODUCER_FORCED {
        c.set(*k, *v);
    }
    if let Some(t) = transactions {
        c.set("transactional.id", &t.config.transactional_id);
        // librdkafka requires records to time out within the transaction's timeout; retrying
        // for ever (0) is not allowed with transactions.
        let limit = t.timeout.as_millis() as u64;
        let message = c
            .get("message.timeout.ms")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if message == 0 || message > limit {
            c.set("message.timeout.ms", limit.to_string());
        }
    }
    c
}

/// The `transaction.timeout.ms` a producer with `config` uses: the user's
/// `producer.override.transaction.timeout.ms`, or [`DEFAULT_TRANSACTION_TIMEOUT_MS`].
pub fn transaction_timeout(config: &KafkaConfig) -> Duration {
    let ms = config
        .producer
        .iter()
        .find(|(k, _)| k == "transaction.timeout.ms")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_TRANSACTION_TIMEOUT_MS);
    Duration::from_millis(ms)
}

/// The producer settings librdkafka refuses, each as (librdkafka property, librdkafka's
/// reason), checked one by one without creating a client or contacting a broker.
pub fn invalid_producer_settings(settings: &[(String, String)]) -> Vec<(String, String)> {
    settings
        .iter()
        .filter_map(|(k, v)| {
            let mut c = ClientConfig::new();
            c.set(k, v);
            c.create_native_config().err().map(|e| {
                let mut why = match e {
                    KafkaError::ClientConfig(_, desc, _, _) => desc.trim().to_string(),
                    other => other.to_string(),
                };
                if crate::config::keys::is_secret(k) && !v.is_empty() {
                    why = why.replace(v.as_str(), "[hidden]");
                }
                (k.clone(), why)
            })
        })
        .collect()
}

pub(super) fn producer_error(e: KafkaError) -> Error {
    Error::kafka(format!(
        "invalid Kafka producer setting (producer.* / producer.override.*): {e}"
    ))
    .with_source(e)
}

impl KafkaSink {
    /// Creates the producer and admin client; with `transactions`, a transactional producer
    /// (exactly-once, see [`super::transactions`]). Fails on an invalid producer property (the
    /// message names it); does not contact the brokers yet.
    pub fn new(
        config: &KafkaConfig,
        tracker: Arc<AckTracker>,
        transactions: Option<TransactionSettings>,
    ) -> Result<KafkaSink> {
        let delivered = Arc::new(Notify::new());
        let client_log = Arc::new(ClientLog::default());
        let context = SinkContext {
            tracker: tracker.clone(),
            delivered: delivered.clone(),
            client_log: client_log.clone(),
            transactional: transactions.is_some(),
        };
        let client = client_config(config, transactions.as_ref());
        let queue_max_bytes = client
            .get("queue.buffering.max.kbytes")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(DEFAULT_QUEUE_KBYTES)
            .saturating_mul(1024);
        let producer: ThreadedProducer<SinkContext> = client
            .create_with_context(context)
            .map_err(producer_error)?;
        let admin = KafkaAdmin::new(config, client_log.clone())?;
        Ok(KafkaSink {
            producer,
            admin,
            config: config.clone(),
            known_topics: HashSet::new(),
            tracker,
            delivered,
            queue_max_bytes,
            client_log,
            txn: transactions.map(KafkaTransaction::new),
            stored: None,
        })
    }

    /// Checks that the brokers answer (a metadata round trip within `timeout`). A refused
    /// authentication or TLS handshake is reported at once, as the error that says what to
    /// fix (not retried); brokers that do not answer are a connection error (retried).
    pub async fn check_connection(&self, timeout: Duration) -> Result<()> {
        let client = self.producer.client();
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let attempt = CONNECTION_CHECK_STEP
                .min(deadline.saturating_duration_since(std::time::Instant::now()));
            let md = tokio::task::block_in_place(|| client.fetch_metadata(None, attempt));
            let e = match md {
                Ok(md) => {
                    let brokers: Vec<i32> = md.brokers().iter().map(|b| b.id()).collect();
                    self.admin.read_broker_configs(&brokers).await;
                    return self.init_transactions(timeout);
                }
                Err(e) => e,
            };
            if let Some(fatal) = self.fatal_client_error() {
                return Err(fatal);
            }
            // A stop request can cancel the check between attempts.
            tokio::task::yield_now().await;
            if std::time::Instant::now() >= deadline {
                return Err(Error::connection(format!(
                    "cannot reach Kafka at {} within {} ms (bootstrap.servers)",
                    self.config.bootstrap_servers,
                    timeout.as_millis()
                ))
                .with_source(e));
            }
        }
    }

    /// The admin client next to this sink: topic creation and policies, the brokers' limits.
    pub fn admin(&self) -> &KafkaAdmin {
        &self.admin
    }

    /// Exactly-once: registers the `transactional.id` with the brokers, which fences any
    /// earlier producer with the same id (a zombie instance: its open transaction is aborted
    /// and it can write no more). At-least-once: nothing.
    fn init_transactions(&self, timeout: Duration) -> Result<()> {
        let Some(txn) = &self.txn else {
            return Ok(());
        };
        let id = &txn.settings().config.transactional_id;
        let r = tokio::task::block_in_place(|| self.producer.init_transactions(timeout));
        match r {
            Ok(()) => {
                tracing::info!(transactional_id = %id,
                    "exactly-once: transactional producer ready (earlier producers with this id are fenced)");
                Ok(())
            }
            Err(e) => Err(transaction_failure(
                id,
                "cannot start the transactional producer",
                &e,
            )),
        }
    }

    /// Exactly-once: opens a Kafka transaction unless one is open, and stops one that has
    /// been open too close to `transaction.timeout.ms` (the broker would abort it).
    fn ensure_transaction(&mut self) -> Result<()> {
        let Some(txn) = self.txn.as_mut() else {
            return Ok(());
        };
        let now = std::time::Instant::now();
        if let Some(open) = txn.overdue(now) {
            let timeout = txn.settings().timeout;
            let records = txn.records();
            let cause = Error::kafka(format!(
                "a Kafka transaction has been open for {} s with {records} records, too close to transaction.timeout.ms ({} ms): a PostgreSQL transaction (or the snapshot, which is one Kafka transaction in exactly-once mode) takes longer to publish than the brokers let a transaction stay open. It was aborted: read_committed consumers see none of it, and nothing past the last committed transaction is confirmed to PostgreSQL. Raise producer.override.transaction.timeout.ms (up to the brokers' transaction.max.timeout.ms, 15 minutes by default, which can be raised too), or run at-least-once (exactly.once.source.support=disabled)",
                open.as_secs(),
                timeout.as_millis()
            ));
            return Err(self.abort_transaction(cause));
        }
        if txn.is_open() {
            return Ok(());
        }
        let id = txn.settings().config.transactional_id.clone();
        self.producer
            .begin_transaction()
            .map_err(|e| transaction_failure(&id, "cannot begin a Kafka transaction", &e))?;
        txn.opened(now);
        Ok(())
    }

    /// Exactly-once: writes the offsets record and commits the open Kafka transaction, then
    /// reports its units complete. Waits while Kafka is unreachable (a stop request can
    /// cancel the wait: nothing of the transaction is then confirmed). Errors: the broker
    /// aborted the transaction or fenced this producer.
    async fn commit_transaction(&mut self) -> Result<()> {
        self.ensure_transaction()?;
        let Some(txn) = self.txn.as_ref() else {
            return Ok(());
        };
        let id = txn.settings().config.transactional_id.clone();
        let record = txn.offsets_record();
        if let Some((token, offsets)) = &record {
            let settings = txn.settings().clone();
            let value = offsets.value_bytes();
            let r = KafkaRecord {
                topic: &settings.offsets_topic,
                partition: None,
                key: Some(settings.offsets_key.as_bytes()),
                value: Some(&value),
                headers: Vec::new(),
                timestamp: None,
            };
            self.produce(&r, *token).await?;
        }
        // Every record delivered first: librdkafka's commit would flush them itself, but it
        // polls for their reports in steps of 100 ms while this producer's own thread serves
        // them, which costs up to 100 ms per transaction. Records still undelivered after
        // that are left to the commit below, which says whether the transaction can still
        // commit: a broker that stalled past the request timeout leaves it needing an abort
        // (and its records queued until then), which only a commit attempt reports.
        if !self.wait_delivered(COMMIT_ATTEMPT * 5).await {
            if let Some(failure) = Sink::failure(self) {
                return Err(self.abort_transaction(failure.copy()));
            }
            tracing::debug!(transactional_id = %id,
                "committing the Kafka transaction: records not delivered yet; the commit waits for them");
        }
        loop {
            // Short attempts: a stop request can only cancel the commit between them.
            let r =
                tokio::task::block_in_place(|| self.producer.commit_transaction(COMMIT_ATTEMPT));
            match r {
                Ok(()) => break,
                // Records still undelivered (the brokers are away), or the commit itself timed
                // out: both may be retried, which is backpressure.
                Err(e) if commit_retriable(&e) => {
                    tracing::debug!(transactional_id = %id, error = %e,
                        "committing the Kafka transaction: Kafka does not answer yet; retrying");
                    self.ensure_transaction()?;
                    tokio::task::yield_now().await;
                }
                Err(e) => {
                    tracing::error!(transactional_id = %id, error = %e,
                        "the Kafka transaction could not commit; aborting it");
                    let what = "the Kafka transaction could not commit";
                    return Err(self.abort_transaction(transaction_failure(&id, what, &e)));
                }
            }
        }
        let Some(txn) = self.txn.as_mut() else {
            return Ok(());
        };
        let units = txn.committed(record.as_ref().map(|(_, o)| o));
        for (token, info) in units {
            self.tracker.commit(token, info);
        }
        if let (Some(stored), Some(lsn)) = (
            self.stored.as_ref(),
            record.as_ref().and_then(|(_, o)| o.lsn_commit),
        ) {
            stored.fetch_max(lsn.0, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Aborts the open Kafka transaction, if any, because of `cause`, which the ack tracker
    /// records first: the abort purges the records in flight, and their failed deliveries
    /// are its consequences, not the cause the connector must act on. Nothing of the
    /// transaction becomes visible to `read_committed` consumers, and its units never
    /// complete. Returns `cause`.
    fn abort_transaction(&mut self, cause: Error) -> Error {
        self.tracker.fail(cause.copy());
        let Some(txn) = self.txn.as_mut().filter(|t| t.is_open()) else {
            return cause;
        };
        txn.aborted();
        let r = tokio::task::block_in_place(|| {
            self.producer.abort_transaction(Duration::from_secs(10))
        });
        match r {
            Ok(()) => tracing::warn!(
                "aborted the open Kafka transaction: its records are invisible to read_committed consumers and are sent again after a restart"),
            Err(e) => tracing::warn!(error = %e,
                "could not abort the open Kafka transaction; the brokers abort it when the next instance starts, or after transaction.timeout.ms"),
        }
        cause
    }

    /// Refuses a record of `size` bytes over the brokers' request limit, naming its topic
    /// and key: the broker would close the connection on every attempt.
    fn check_request_limit(&self, record: &KafkaRecord<'_>, size: usize) -> Result<()> {
        let limit = self.admin.request_limit();
        if limit == 0 || size + REQUEST_OVERHEAD <= limit {
            return Ok(());
        }
        Err(Error::kafka(format!(
            "a record for topic {} with key {} is {size} bytes, more than the brokers take in one request ({limit} bytes, socket.request.max.bytes): raise socket.request.max.bytes on the brokers (and message.max.bytes), or exclude the table",
            record.topic,
            describe_key(record.key)
        )))
    }

    /// The last client error retrying cannot fix, as the error to stop with.
    fn fatal_client_error(&self) -> Option<Error> {
        let fatal = self
            .client_log
            .fatal
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (kind, fix, reason) = fatal.as_ref()?;
        Some(Error::new(
            *kind,
            format!(
                "Kafka at {} refused pgcdc: {reason} ({fix})",
                self.config.bootstrap_servers
            ),
        ))
    }
}

impl KafkaSink {
    /// Enqueues `record` for unit `seq`. Waits (without limit) while the producer queue is
    /// full: that is backpressure. Any other refusal is an error naming the topic.
    async fn produce(&mut self, record: &KafkaRecord<'_>, seq: AckToken) -> Result<()> {
        // After a record was refused, nothing behind it may land in Kafka ahead of it (an
        // update of a key whose create was refused): stop, and drop what librdkafka still
        // holds unsent. The position confirmed to PostgreSQL stays before the refused record.
        if let Some(f) = Sink::failure(self) {
            self.producer
                .purge(rdkafka::producer::PurgeConfig::default().queue());
            return Err(f.copy());
        }
        if !self.known_topics.contains(record.topic) {
            self.admin.ensure_topic(record.topic).await?;
            self.known_topics.insert(record.topic.to_string());
        }
        let mut headers = OwnedHeaders::new_with_capacity(record.headers.len());
        let mut header_bytes = 0;
        for (k, v) in &record.headers {
            header_bytes += k.len() + v.as_deref().map_or(0, <[u8]>::len);
            headers = headers.insert(Header {
                key: k,
                value: v.as_deref(),
            });
        }
        let tag = DeliveryTag::new(seq, header_bytes);
        let mut br: BaseRecord<'_, [u8], [u8], usize> =
            BaseRecord::with_opaque_to(record.topic, tag.0).headers(headers);
        if let Some(k) = record.key {
            br = br.key(k);
        }
        if let Some(v) = record.value {
            br = br.payload(v);
        }
        if let Some(p) = record.partition {
            br = br.partition(p);
        }
        if let Some(ts) = record.timestamp {
            br = br.timestamp(ts);
        }
        let size =
            record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len) + header_bytes;
        self.check_request_limit(record, size)?;
        self.wait_for_room(size).await?;
        self.tracker.add(seq);
        // Counted before the producer may report it; an error below ends the run, whose next
        // producer starts from an empty queue.
        self.tracker.stats().queued(size as u64);
        // Under backpressure, a waiter for delivery reports is registered before each retry,
        // so a report that frees room between a refused attempt and the wait wakes it at once
        // instead of leaving it to the timeout (one request in flight makes that gap matter).
        let delivered = self.delivered.clone();
        let mut waiter: Option<std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>>> = None;
        loop {
            match self.producer.send(br) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    // A record bigger than the whole queue can never fit. (An empty in-flight
                    // count is no proof: librdkafka may still count delivered messages for a
                    // moment, so a record that fits only waits.)
                    if size > self.queue_max_bytes {
                        return Err(Error::kafka(format!(
                            "a record for topic {} with key {} is {size} bytes, more than the producer queue holds: raise producer.override.queue.buffering.max.kbytes (Java: buffer.memory) above its size, or exclude the table",
                            record.topic,
                            describe_key(record.key)
                        )));
                    }
                    // Backpressure: wait for delivery reports to make room, then retry.
                    br = returned;
                    if let Some(w) = waiter.take() {
                        self.await_report(w).await?;
                    }
                    // Register, then retry: on the first refusal at once, as room may have
                    // been freed before the registration.
                    let mut w = Box::pin(delivered.notified());
                    w.as_mut().enable();
                    waiter = Some(w);
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _)) => {
                    let size =
                        record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len);
                    return Err(Error::kafka(format!(
                        "a record for topic {} with key {} is {size} bytes, more than the producer allows: raise producer.override.max.request.size (librdkafka: message.max.bytes) and the broker's message.max.bytes or the topic's max.message.bytes, or exclude the table",
                        record.topic,
                        describe_key(record.key)
                    )));
                }
                Err((e, _)) => {
                    return Err(Error::kafka(format!(
                        "Kafka refused a record for topic {}",
                        record.topic
                    ))
                    .with_source(e));
                }
            }
        }
    }

    /// Waits until the producer queue has room for a record of `size` bytes of key, value
    /// and headers within `queue.buffering.max.kbytes`. librdkafka counts only values
    /// against that limit, so on its own it let the queue hold about a tenth more than its
    /// share of `pgcdc.buffer.memory.bytes` (3.4 KB records with 171-byte keys); this wait
    /// keeps all of a record's bytes within it. A record always fits an empty queue (one
    /// larger than the whole queue is refused when librdkafka refuses it). Errors: the
    /// producer failed meanwhile.
    async fn wait_for_room(&self, size: usize) -> Result<()> {
        let stats = self.tracker.stats();
        let fits = |queued: u64| queued == 0 || queued as usize + size <= self.queue_max_bytes;
        while !fits(stats.queued_bytes()) {
            // Registered before the count is read again, so a report in between wakes it.
            let notified = self.delivered.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if fits(stats.queued_bytes()) {
                break;
            }
            self.await_report(notified).await?;
        }
        Ok(())
    }

    /// Waits up to 100 ms for `report`, a delivery report's notification registered before
    /// the queue was found full (the bound on the wait covers a report missed anyway).
    /// Errors: the producer failed meanwhile.
    async fn await_report(&self, report: impl std::future::Future<Output = ()>) -> Result<()> {
        let _ = tokio::time::timeout(Duration::from_millis(100), report).await;
        match Sink::failure(self) {
            Some(f) => Err(f.copy()),
            None => Ok(()),
        }
    }

    /// Waits up to `timeout` for every enqueued record's delivery report. Returns whether
    /// all arrived.
    async fn wait_delivered(&mut self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now().checked_add(timeout);
        let delivered = self.delivered.clone();
        loop {
            // Registered before the count is read, so a report in between wakes the wait.
            let notified = delivered.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.producer.in_flight_count() == 0 {
                break;
            }
            if deadline.is_some_and(|d| tokio::time::Instant::now() >= d)
                || self.tracker.failure().is_some()
            {
                return false;
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
        }
        // Every report arrived; one of them may have been a failure.
        self.tracker.failure().is_none()
    }
}

impl Sink for KafkaSink {
    /// Whether this sink writes in Kafka transactions (exactly-once).
    fn is_transactional(&self) -> bool {
        self.txn.is_some()
    }

    /// Exactly-once: the offsets store's position, raised after each commit, and the commit
    /// position of the offsets loaded at start (no offsets record goes below it).
    fn attach_offsets(&mut self, stored: Arc<AtomicU64>, floor: Option<Lsn>) {
        if let Some(txn) = self.txn.as_mut() {
            txn.set_floor(floor);
            self.stored = Some(stored);
        }
    }

    fn begin(&mut self) -> AckToken {
        if let Some(txn) = self.txn.as_mut() {
            txn.unit_opened();
        }
        self.tracker.begin()
    }

    /// Enqueues `record` for unit `seq` (exactly-once: in the open Kafka transaction, which
    /// this opens when needed). Waits while the producer queue is full.
    async fn send(&mut self, record: &KafkaRecord<'_>, seq: AckToken) -> Result<()> {
        self.ensure_transaction()?;
        self.produce(record, seq).await?;
        if let Some(txn) = self.txn.as_mut() {
            txn.record_sent();
        }
        Ok(())
    }

    /// Closes unit `token`. Exactly-once: it completes once its Kafka transaction commits.
    fn commit(&mut self, token: AckToken, info: CommitInfo) {
        match self.txn.as_mut() {
            Some(txn) => txn.unit_closed(token, info),
            None => self.tracker.commit(token, info),
        }
    }

    /// Waits up to `timeout` for the outcome of everything sent. Exactly-once: commits the
    /// open Kafka transaction first when no unit is half sent (and, during a snapshot, when
    /// its last unit completes it).
    async fn flush(&mut self, timeout: Duration) -> bool {
        let commit = self
            .txn
            .as_ref()
            .is_some_and(|t| t.may_commit(self.tracker.is_held()));
        if commit {
            let r = tokio::time::timeout(timeout, self.commit_transaction()).await;
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    self.tracker.fail(e);
                    return false;
                }
                Err(_) => return false,
            }
        }
        self.wait_delivered(timeout).await
    }

    /// Exactly-once: ends the open Kafka transaction here if `transaction.boundary` says so.
    async fn boundary(&mut self, idle: bool) -> Result<()> {
        let due = self.txn.as_ref().is_some_and(|t| {
            t.boundary_due(idle, self.tracker.is_held(), std::time::Instant::now())
        });
        if due {
            self.commit_transaction().await?;
        }
        Ok(())
    }

    /// The first delivery failure; exactly-once, a fatal producer error first (fenced by
    /// another instance: the records purged with it are only its consequence).
    fn failure(&self) -> Option<Arc<Error>> {
        let failure = self.tracker.failure()?;
        if let Some(txn) = &self.txn {
            if let Some((code, reason)) = self.producer.client().fatal_error() {
                let id = &txn.settings().config.transactional_id;
                let what = "Kafka stopped the producer";
                return Some(Arc::new(transaction_error(id, what, Some(code), &reason)));
            }
        }
        Some(failure)
    }

    fn tracker(&self) -> &Arc<AckTracker> {
        &self.tracker
    }
}

/// An error of the transactional producer, classified: fenced (another instance took over
/// the `transactional.id`), refused by ACLs, a timeout the brokers refuse, or an aborted
/// transaction (retriable: a restart sends it again).
fn transaction_error(id: &str, what: &str, code: Option<RDKafkaErrorCode>, reason: &str) -> Error {
    let fenced = classify_kafka_delivery(code.map(|c| c as i32), true) == ErrorKind::Fenced;
    match code {
        _ if fenced => Error::new(ErrorKind::Fenced, format!(
            "{what}: this producer was fenced: another pgcdc instance (or Kafka Connect task) with transactional.id {id} took over, so this one stops without writing anything more; its open transaction was aborted"
        )),
        Some(RDKafkaErrorCode::TransactionalIdAuthorizationFailed) => Error::kafka(format!(
            "{what}: Kafka refused transactional.id {id}: grant pgcdc's principal WRITE and DESCRIBE on the transactional id (and IDEMPOTENT_WRITE on the cluster for older brokers)"
        )),
        Some(RDKafkaErrorCode::InvalidTransactionTimeout) => Error::kafka(format!(
            "{what}: the brokers refuse the producer's transaction.timeout.ms as longer than their transaction.max.timeout.ms: set producer.override.transaction.timeout.ms to at most that, or raise transaction.max.timeout.ms on the brokers"
        )),
        _ => Error::connection(format!(
            "{what} (transactional.id {id}): {reason}; the transaction was aborted, so read_committed consumers see none of it, and it is sent again after the restart"
        )),
    }
}

/// How long one attempt to commit a Kafka transaction blocks (the commit is retried while it
/// times out; a stop request is seen between attempts).
const COMMIT_ATTEMPT: Duration = Duration::from_secs(1);

/// Whether a failed commit may be tried again: records not delivered yet, or a retriable
/// error that does not require an abort.
fn commit_retriable(e: &KafkaError) -> bool {
    match e {
        KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut) => true,
        KafkaError::Transaction(t) => t.is_retriable() && !t.txn_requires_abort(),
        _ => false,
    }
}

/// [`transaction_error`] of a client error.
fn transaction_failure(id: &str, what: &str, e: &KafkaError) -> Error {
    transaction_error(id, what, e.rdkafka_error_code(), &e.to_string())
}

impl Drop for KafkaSink {
    fn drop(&mut self) {
        // An open transaction is aborted so that read_committed consumers are not held up
        // until the brokers time it out.
        if self.txn.as_ref().is_some_and(KafkaTransaction::is_open) {
            if let Some(t) = self.txn.as_mut() {
                t.aborted();
            }
            let _ = self.producer.abort_transaction(Duration::from_secs(5));
        }
        let _ = self.producer.flush(Duration::from_millis(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delivery_tag_carries_the_sequence_and_the_header_bytes() {
        let tag = DeliveryTag::new(AckToken(123_456_789), 311);
        assert_eq!(tag.seq(), AckToken(123_456_789));
        assert_eq!(tag.header_bytes(), Some(311));
        let largest_seq = AckToken((1 << DeliveryTag::SEQ_BITS) - 1);
        let tag = DeliveryTag::new(largest_seq, DeliveryTag::HEADERS_UNKNOWN - 1);
        assert_eq!(tag.seq(), largest_seq);
        assert_eq!(tag.header_bytes(), Some(DeliveryTag::HEADERS_UNKNOWN - 1));
        // Too many header bytes to hold: the report reads the headers instead.
        let tag = DeliveryTag::new(AckToken(7), 5 << 20);
        assert_eq!(tag.seq(), AckToken(7));
        assert_eq!(tag.header_bytes(), None);
    }

    #[test]
    fn keys_in_errors_are_their_payload_and_short() {
        let with_schema = br#"{"schema":{"type":"struct"},"payload":{"id":7}}"#;
        assert_eq!(describe_key(Some(with_schema)), r#"{"id":7}"#);
        assert_eq!(describe_key(Some(b"plain")), "plain");
        assert_eq!(describe_key(None), "null");
        let long = "k".repeat(300);
        assert_eq!(describe_key(Some(long.as_bytes())).len(), 123);
    }

    #[test]
    fn the_guarantees_survive_user_producer_settings() {
        let config = KafkaConfig {
            bootstrap_servers: "k:1".into(),
            producer: vec![
                ("max.in.flight.requests.per.connection".into(), "5".into()),
                ("acks".into(), "1".into()),
                ("linger.ms".into(), "20".into()),
            ],
            topic_creation_enable: true,
            topic_partitions: -1,
            topic_replication_factor: -1,
        };
        let c = client_config(&config, None);
        assert_eq!(c.get("max.in.flight.requests.per.connection"), Some("1"));
        assert_eq!(c.get("acks"), Some("all"));
        assert_eq!(c.get("enable.idempotence"), Some("true"));
        assert_eq!(c.get("linger.ms"), Some("20"), "other settings pass");
        let queue = DEFAULT_QUEUE_KBYTES.to_string();
        assert_eq!(
            c.get("queue.buffering.max.kbytes"),
            Some(queue.as_str()),
            "the default queue bound is the one the sink counts with"
        );
    }
}
