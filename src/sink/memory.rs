//! An in-memory [`Sink`] for tests: it keeps every record it is sent, in order, and reports
//! deliveries to the ack tracker either at once or when the test says so, in any order.
//!
//! It honours the sink contract: a record is counted at the tracker before it is "delivered",
//! each delivery is reported once, and after [`MemorySink::fail_next`] no later record is
//! accepted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::convert::KafkaRecord;
use crate::error::{Error, Result};
use crate::offsets::ack::{AckToken, AckTracker, CommitInfo};

use super::Sink;

/// A record as the memory sink keeps it: owned copies of what a Kafka producer would get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRecord {
    /// Topic.
    pub topic: String,
    /// Explicit partition, if any.
    pub partition: Option<i32>,
    /// Key bytes (`None`: a null key).
    pub key: Option<Vec<u8>>,
    /// Value bytes (`None`: a tombstone).
    pub value: Option<Vec<u8>>,
    /// Headers in order.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// Record timestamp in ms, if set.
    pub timestamp: Option<i64>,
    /// The unit it was sent in.
    pub token: AckToken,
}

/// When the memory sink acknowledges records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckMode {
    /// Each record is acknowledged as soon as it is sent.
    Immediate,
    /// Records wait until the test calls [`MemorySink::ack`] or [`MemorySink::ack_all`].
    Manual,
}

/// The in-memory sink.
#[derive(Debug)]
pub struct MemorySink {
    tracker: Arc<AckTracker>,
    mode: AckMode,
    /// Every record sent, in order.
    pub records: Vec<SentRecord>,
    /// Indices into `records` not yet acknowledged (manual mode).
    unacked: VecDeque<usize>,
    fail_next: Option<Error>,
}

impl MemorySink {
    /// A sink reporting to `tracker`, acknowledging per `mode`.
    pub fn new(tracker: Arc<AckTracker>, mode: AckMode) -> Self {
        MemorySink {
            tracker,
            mode,
            records: Vec::new(),
            unacked: VecDeque::new(),
            fail_next: None,
        }
    }

    /// Acknowledges the record at `index` in [`MemorySink::records`] (manual mode). Returns
    /// `false` when it is not waiting for an acknowledgement.
    pub fn ack(&mut self, index: usize) -> bool {
        let Some(pos) = self.unacked.iter().position(|&i| i == index) else {
            return false;
        };
        self.unacked.remove(pos);
        self.tracker.ack(self.records[index].token);
        true
    }

    /// Acknowledges every waiting record, oldest first.
    pub fn ack_all(&mut self) {
        while let Some(i) = self.unacked.pop_front() {
            self.tracker.ack(self.records[i].token);
        }
    }

    /// Indices of the records still waiting for an acknowledgement.
    pub fn unacked(&self) -> Vec<usize> {
        self.unacked.iter().copied().collect()
    }

    /// Makes the next record's delivery fail with `error`, as a broker refusing it (or
    /// timing it out) would.
    pub fn fail_next(&mut self, error: Error) {
        self.fail_next = Some(error);
    }
}

impl Sink for MemorySink {
    fn begin(&mut self) -> AckToken {
        self.tracker.begin()
    }

    async fn send(&mut self, record: &KafkaRecord<'_>, token: AckToken) -> Result<()> {
        if let Some(f) = self.tracker.failure() {
            return Err(f.copy());
        }
        self.tracker.add(token);
        self.records.push(SentRecord {
            topic: record.topic.to_string(),
            partition: record.partition,
            key: record.key.map(<[u8]>::to_vec),
            value: record.value.map(<[u8]>::to_vec),
            headers: record
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_deref().map(<[u8]>::to_vec)))
                .collect(),
            timestamp: record.timestamp,
            token,
        });
        if let Some(reason) = self.fail_next.take() {
            self.tracker.fail(reason);
        } else {
            match self.mode {
                AckMode::Immediate => self.tracker.ack(token),
                AckMode::Manual => self.unacked.push_back(self.records.len() - 1),
            }
        }
        Ok(())
    }

    fn commit(&mut self, token: AckToken, info: CommitInfo) {
        self.tracker.commit(token, info);
    }

    async fn flush(&mut self, _timeout: Duration) -> bool {
        self.unacked.is_empty() && self.tracker.failure().is_none()
    }

    fn failure(&self) -> Option<Arc<Error>> {
        self.tracker.failure()
    }

    fn tracker(&self) -> &Arc<AckTracker> {
        &self.tracker
    }
}
