//! An in-memory [`Sink`] for tests: it keeps every record it is sent, in order, and reports
//! deliveries to the ack tracker either at once or when the test says so, in any order.
//!
//! It honours the sink contract: a record is counted at the tracker before it is "delivered",
//! each delivery is reported once, and after [`MemorySink::fail_next`] no later record is
//! accepted.
//!
//! A [`MemoryRemote`] sees what was sent and acknowledges records while the pipeline owns the
//! sink (a test of the main loop, which runs in a task of its own).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

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
    shared: Arc<Mutex<Shared>>,
    paused: Arc<watch::Sender<bool>>,
    fail_next: Option<Error>,
}

/// What a [`MemoryRemote`] shares with its sink.
#[derive(Debug, Default)]
struct Shared {
    /// Topic and unit of every record sent, in order (indices as in `records`).
    sent: Vec<(String, AckToken)>,
    /// Indices of the records not yet acknowledged (manual mode), oldest first.
    unacked: VecDeque<usize>,
    /// Sends waiting while the sink is paused.
    waiting: usize,
}

/// A handle on a [`MemorySink`] for another task: what was sent, and acknowledgements in any
/// order. Indices are those of [`MemorySink::records`].
#[derive(Debug, Clone)]
pub struct MemoryRemote {
    tracker: Arc<AckTracker>,
    shared: Arc<Mutex<Shared>>,
    paused: Arc<watch::Sender<bool>>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemoryRemote {
    /// The topic and unit of every record sent so far, in order.
    pub fn sent(&self) -> Vec<(String, AckToken)> {
        lock(&self.shared).sent.clone()
    }

    /// Acknowledges the record at `index` (manual mode). Returns `false` when it is not
    /// waiting for an acknowledgement.
    pub fn ack(&self, index: usize) -> bool {
        let mut g = lock(&self.shared);
        let Some(pos) = g.unacked.iter().position(|&i| i == index) else {
            return false;
        };
        g.unacked.remove(pos);
        self.tracker.ack(g.sent[index].1);
        true
    }

    /// Acknowledges every waiting record, oldest first.
    pub fn ack_all(&self) {
        let mut g = lock(&self.shared);
        while let Some(i) = g.unacked.pop_front() {
            self.tracker.ack(g.sent[i].1);
        }
    }

    /// Indices of the records still waiting for an acknowledgement.
    pub fn unacked(&self) -> Vec<usize> {
        lock(&self.shared).unacked.iter().copied().collect()
    }

    /// Makes every send wait until [`MemoryRemote::resume`], as a full producer queue does.
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    /// Lets waiting and later sends through.
    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// How many sends wait while the sink is paused.
    pub fn waiting(&self) -> usize {
        lock(&self.shared).waiting
    }
}

impl MemorySink {
    /// A sink reporting to `tracker`, acknowledging per `mode`.
    pub fn new(tracker: Arc<AckTracker>, mode: AckMode) -> Self {
        MemorySink {
            tracker,
            mode,
            records: Vec::new(),
            shared: Arc::default(),
            paused: Arc::new(watch::Sender::new(false)),
            fail_next: None,
        }
    }

    /// A handle that sees and acknowledges this sink's records from another task.
    pub fn remote(&self) -> MemoryRemote {
        MemoryRemote {
            tracker: self.tracker.clone(),
            shared: self.shared.clone(),
            paused: self.paused.clone(),
        }
    }

    /// Acknowledges the record at `index` in [`MemorySink::records`] (manual mode). Returns
    /// `false` when it is not waiting for an acknowledgement.
    pub fn ack(&mut self, index: usize) -> bool {
        self.remote().ack(index)
    }

    /// Acknowledges every waiting record, oldest first.
    pub fn ack_all(&mut self) {
        self.remote().ack_all()
    }

    /// Indices of the records still waiting for an acknowledgement.
    pub fn unacked(&self) -> Vec<usize> {
        self.remote().unacked()
    }

    /// Makes the next record's delivery fail with `error`, as a broker refusing it (or
    /// timing it out) would.
    pub fn fail_next(&mut self, error: Error) {
        self.fail_next = Some(error);
    }

    /// Waits while a [`MemoryRemote`] has paused the sink (cancel-safe: nothing is sent yet).
    async fn wait_while_paused(&self) {
        let mut paused = self.paused.subscribe();
        if !*paused.borrow_and_update() {
            return;
        }
        let _counted = Waiting::new(&self.shared);
        let _ = paused.wait_for(|p| !*p).await;
    }
}

/// Counts one send in [`Shared::waiting`] from its creation until it is dropped (also when
/// the send is cancelled).
struct Waiting<'a>(&'a Mutex<Shared>);

impl<'a> Waiting<'a> {
    fn new(shared: &'a Mutex<Shared>) -> Self {
        lock(shared).waiting += 1;
        Waiting(shared)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(self.0).waiting -= 1;
    }
}

impl Sink for MemorySink {
    fn begin(&mut self) -> AckToken {
        self.tracker.begin()
    }

    async fn send(&mut self, record: &KafkaRecord<'_>, token: AckToken) -> Result<()> {
        self.wait_while_paused().await;
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
        let mut shared = lock(&self.shared);
        shared.sent.push((record.topic.to_string(), token));
        if let Some(reason) = self.fail_next.take() {
            self.tracker.fail(reason);
        } else {
            match self.mode {
                AckMode::Immediate => self.tracker.ack(token),
                AckMode::Manual => shared.unacked.push_back(self.records.len() - 1),
            }
        }
        Ok(())
    }

    fn commit(&mut self, token: AckToken, info: CommitInfo) {
        self.tracker.commit(token, info);
    }

    async fn flush(&mut self, _timeout: Duration) -> bool {
        lock(&self.shared).unacked.is_empty() && self.tracker.failure().is_none()
    }

    fn failure(&self) -> Option<Arc<Error>> {
        self.tracker.failure()
    }

    fn tracker(&self) -> &Arc<AckTracker> {
        &self.tracker
    }
}
