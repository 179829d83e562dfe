//! The signal channels other than the signal table: `kafka` (a consumer of partition 0 of
//! `signal.kafka.topic`, records keyed by `topic.prefix`), `file` (`signal.file`, one JSON
//! signal per line, the file emptied once read) and pgcdc's REST endpoint
//! (`POST /connectors/<name>/signals`). They feed one bounded inbox per connector
//! ([`SignalInbox`]), which the main loop reads between transactions.
//!
//! A signal is acted on once: the Kafka channel commits its position as it reads (as
//! Debezium's does) and the file is emptied. A malformed record or line is logged with what
//! is wrong and skipped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;
use tokio::sync::{mpsc, Mutex};

use crate::config::signals::KafkaSignalChannel;
use crate::config::ConnectorConfig;
pub use crate::event::signal::{Channel, Signal};

/// How many signals may wait for the main loop; a REST request beyond it is refused.
pub const INBOX_CAPACITY: usize = 64;

/// The connector's signal inbox, shared by its runs and its REST handle.
#[derive(Debug)]
pub struct SignalInbox {
    tx: mpsc::Sender<Signal>,
    rx: Mutex<mpsc::Receiver<Signal>>,
}

impl Default for SignalInbox {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel(INBOX_CAPACITY);
        SignalInbox {
            tx,
            rx: Mutex::new(rx),
        }
    }
}

impl SignalInbox {
    /// Queues `signal` for the connector. Errors: the inbox is full (the connector is not
    /// taking signals: stopped, or busy with a long chunk).
    pub fn offer(&self, signal: Signal) -> Result<(), String> {
        self.tx.try_send(signal).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => format!(
                "{INBOX_CAPACITY} signals already wait for the connector: try again once it has taken them"
            ),
            mpsc::error::TrySendError::Closed(_) => "the connector takes no signals".to_string(),
        })
    }

    /// The receiving end, held by the run's main loop while it streams.
    pub(super) async fn receiver(&self) -> tokio::sync::MutexGuard<'_, mpsc::Receiver<Signal>> {
        self.rx.lock().await
    }

    fn sender(&self) -> mpsc::Sender<Signal> {
        self.tx.clone()
    }
}

/// The running `kafka` and `file` channel readers of a run; they stop when dropped.
#[derive(Debug, Default)]
pub struct SignalChannels {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for SignalChannels {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Starts the readers of the enabled `kafka` and `file` channels, feeding `inbox`.
pub fn start_channels(config: &ConnectorConfig, inbox: &SignalInbox) -> SignalChannels {
    let mut channels = SignalChannels::default();
    if let Some(path) = &config.signals.file {
        tracing::info!(
            file = %path.display(),
            "file signal channel: reading signals from the file (keep it writable only by whom may send signals)"
        );
        channels.tasks.push(super::spawn(read_file(
            path.clone(),
            config.signals.poll_interval,
            inbox.sender(),
        )));
    }
    if let Some(kafka) = &config.signals.kafka {
        let stop = channels.stop.clone();
        let (kafka, prefix, tx) = (kafka.clone(), config.topic_prefix.clone(), inbox.sender());
        channels.tasks.push(super::spawn(async move {
            let r = tokio::task::spawn_blocking(move || read_kafka(&kafka, &prefix, &tx, &stop)).await;
            if let Ok(Err(e)) = r {
                tracing::error!(error = %e, "kafka signal channel stopped: signals sent to it are not read");
            }
        }));
    }
    channels
}

/// The file channel: every `interval`, reads the file's lines, empties it, and queues each
/// signal (`{"id": ..., "type": ..., "data": {...}}`).
async fn read_file(path: PathBuf, interval: Duration, tx: mpsc::Sender<Signal>) {
    let mut tick = tokio::time::interval(interval);
    loop {
        tick.tick().await;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) if !t.trim().is_empty() => t,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read the signal file");
                continue;
            }
        };
        if let Err(e) = std::fs::write(&path, b"") {
            tracing::warn!(file = %path.display(), error = %e,
                "cannot empty the signal file: its signals are not acted on (they would repeat)");
            continue;
        }
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match parse_signal_json(line, Channel::File) {
                Ok(s) => {
                    tracing::info!(id = %s.id, kind = %s.kind, "signal read from the signal file");
                    if tx.send(s).await.is_err() {
                        return;
                    }
                }
                Err(why) => {
                    tracing::warn!(file = %path.display(), "signal file line skipped: {why}")
                }
            }
        }
    }
}

/// A signal written as JSON: `{"id": "...", "type": "...", "data": {...}}`. Errors: what is
/// wrong with it.
pub fn parse_signal_json(text: &str, channel: Channel) -> Result<Signal, String> {
    let v: Json = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let Json::Object(o) = v else {
        return Err("not a JSON object {\"id\": ..., \"type\": ..., \"data\": {...}}".to_string());
    };
    let kind = o
        .get("type")
        .and_then(Json::as_str)
        .ok_or("it has no \"type\" string")?
        .to_string();
    let data = match o.get("data") {
        None | Some(Json::Null) => String::new(),
        Some(d @ Json::Object(_)) => d.to_string(),
        Some(_) => return Err("its \"data\" is not a JSON object".to_string()),
    };
    let id = match o.get("id") {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Number(n)) => n.to_string(),
        None | Some(Json::Null) => String::new(),
        Some(_) => return Err("its \"id\" is not a string".to_string()),
    };
    Ok(Signal {
        id,
        kind,
        data,
        channel,
    })
}

/// The Kafka channel: polls partition 0 of the signal topic until `stop`, queueing each
/// record keyed by the topic prefix. Errors: the consumer cannot be created.
fn read_kafka(
    kafka: &KafkaSignalChannel,
    prefix: &str,
    tx: &mpsc::Sender<Signal>,
    stop: &AtomicBool,
) -> Result<(), String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Message, Offset, TopicPartitionList};
    let mut client = crate::sink::kafka_client_settings(&kafka.client);
    client
        .set(crate::config::keys::GROUP_ID, &kafka.group_id)
        .set("client.id", uuid::Uuid::new_v4().to_string())
        .set("enable.auto.commit", "true")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "10000");
    let consumer: BaseConsumer = client
        .create()
        .map_err(|e| format!("cannot create the consumer: {e}"))?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&kafka.topic, 0, Offset::Stored)
        .map_err(|e| e.to_string())?;
    consumer.assign(&tpl).map_err(|e| e.to_string())?;
    tracing::info!(topic = %kafka.topic, "kafka signal channel: reading signals");
    let poll = kafka.poll_timeout.max(Duration::from_millis(100));
    while !stop.load(Ordering::Acquire) {
        let Some(message) = consumer.poll(poll) else {
            continue;
        };
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(topic = %kafka.topic, error = %e, "kafka signal channel: read failed; retrying");
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        let key = message.key().map(String::from_utf8_lossy);
        if key.as_deref() != Some(prefix) {
            tracing::info!(topic = %kafka.topic, offset = message.offset(),
                "kafka signal skipped: its key is not the connector's topic.prefix");
            continue;
        }
        let Some(value) = message.payload().filter(|p| !p.is_empty()) else {
            continue;
        };
        match parse_signal_json(&String::from_utf8_lossy(value), Channel::Kafka) {
            Ok(s) => {
                if tx.blocking_send(s).is_err() {
                    break;
                }
            }
            Err(why) => tracing::warn!(topic = %kafka.topic, offset = message.offset(),
                "kafka signal skipped: {why}"),
        }
    }
    let _ = consumer.commit_consumer_state(rdkafka::consumer::CommitMode::Sync);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_as_json_are_read_or_named_wrong() {
        let s = parse_signal_json(
            r#"{"id":"a1","type":"execute-snapshot","data":{"data-collections":["public.t"]}}"#,
            Channel::File,
        )
        .unwrap();
        assert_eq!(s.id, "a1");
        assert_eq!(s.kind, "execute-snapshot");
        assert_eq!(s.data, r#"{"data-collections":["public.t"]}"#);
        for (bad, why) in [
            ("nope", "not valid JSON"),
            ("[]", "not a JSON object"),
            (r#"{"id":"x"}"#, "no \"type\""),
            (r#"{"type":"log","data":"m"}"#, "not a JSON object"),
            (r#"{"id":{},"type":"log"}"#, "\"id\" is not a string"),
        ] {
            let e = parse_signal_json(bad, Channel::Kafka).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_full_inbox_refuses_with_a_reason() {
        let inbox = SignalInbox::default();
        let s =
            parse_signal_json(r#"{"type":"log","data":{"message":"m"}}"#, Channel::Rest).unwrap();
        for _ in 0..INBOX_CAPACITY {
            inbox.offer(s.clone()).unwrap();
        }
        assert!(inbox.offer(s).unwrap_err().contains("already wait"));
    }
}
