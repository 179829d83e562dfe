//! Sinks: where records go. A sink sees topics, partitions, key and value bytes, headers and
//! ack tokens, never PostgreSQL types.
//!
//! The [`Sink`] trait is the seam between the pipeline and Kafka. The pipeline groups records
//! in *units* (a PostgreSQL transaction, the snapshot, a heartbeat or a non-transactional
//! logical message): it opens a unit with [`Sink::begin`], sends its records with
//! [`Sink::send`], and closes it with [`Sink::commit`]. Every sink reports each record's
//! outcome to the shared [`AckTracker`], which turns completed units into the LSN that may be
//! confirmed to PostgreSQL (invariant 1: an enqueued record is not an acknowledged one).
//!
//! The pipeline holds each open unit as a [`Unit`]: a guard that is committed exactly once,
//! and whose drop while open the ack tracker records ([`AckTracker::abandon`]): the unit can
//! never complete, so nothing from it on is confirmed, and the main loop turns that into an
//! error unless the run is stopping, rather than a silent stall.
//!
//! Unit boundaries pass through the sink so that a transactional sink can map them onto Kafka
//! transactions (begin at the first record of a unit, commit the Kafka transaction before
//! completing the unit, abort it when the pipeline fails), without the pipeline changing.
//!
//! What only Kafka's admin API answers (topic creation and policies, the brokers' limits) is
//! [`kafka_admin::KafkaAdmin`], next to the Kafka sink.
//!
//! Implementations: [`kafka::KafkaSink`] (librdkafka, at-least-once) and [`memory::MemorySink`]
//! (records kept in memory, acknowledgements under the test's control) for unit tests.
//!
//! Kafka also keeps what a worker stores: offsets ([`offsets_topic`]) and `serve`'s connector
//! configs ([`config_topic`]), in the records Kafka Connect writes.

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::convert::KafkaRecord;
use crate::error::{Error, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::{AckToken, AckTracker, CommitInfo};

pub mod config_topic;
pub mod kafka;
pub mod kafka_admin;
pub mod memory;
pub mod offsets_topic;
pub mod transactions;

pub use offsets_topic::base_client as kafka_client_settings;

/// An open unit at a sink (see the module documentation). Records are sent with its
/// [`Unit::token`]; [`Unit::commit`] closes it, exactly once. Dropped while open (a stop
/// request cancelled its send, or an error ended its work half way), it tells the ack tracker
/// ([`AckTracker::abandon`]): the units before it still complete, nothing from it on is
/// confirmed, and its records are sent again after a restart.
#[derive(Debug)]
#[must_use = "a unit is committed with Unit::commit; dropping it open abandons it"]
pub struct Unit {
    token: AckToken,
    tracker: Arc<AckTracker>,
    open: bool,
}

impl Unit {
    /// Opens a unit at `sink` (units complete in the order they were opened).
    pub fn open<S: Sink>(sink: &mut S) -> Unit {
        Unit {
            token: sink.begin(),
            tracker: sink.tracker().clone(),
            open: true,
        }
    }

    /// The token its records are sent with.
    pub fn token(&self) -> AckToken {
        self.token
    }

    /// Closes the unit at `sink`: every record of it has been sent; it completes, at
    /// `info.end_lsn`, once all of them are acknowledged. Returns its token.
    pub fn commit<S: Sink>(mut self, sink: &mut S, info: CommitInfo) -> AckToken {
        self.open = false;
        sink.commit(self.token, info);
        self.token
    }
}

impl Drop for Unit {
    fn drop(&mut self) {
        if self.open {
            self.tracker.abandon(self.token);
        }
    }
}

/// Where records go. See the module documentation for the unit protocol.
///
/// Contract for implementations:
/// - [`Sink::send`] counts the record at the ack tracker before it can be delivered, and the
///   record's delivery is later reported there exactly once (acknowledged or failed);
/// - [`Sink::send`] waits (does not fail) while the sink is full: that is backpressure;
/// - after a failure, no later record may be delivered ahead of the failed one:
///   [`Sink::send`] refuses further records with the failure.
pub trait Sink: Send {
    /// Opens a unit and returns its token (units complete in the order they were opened).
    fn begin(&mut self) -> AckToken;

    /// Sends `record` as part of unit `token`. Waits while the sink is full. Errors: the
    /// record was refused, or an earlier record failed (progress stops there).
    fn send(
        &mut self,
        record: &KafkaRecord<'_>,
        token: AckToken,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Closes unit `token`: every record of it has been sent; it completes, at
    /// `info.end_lsn`, once all of them are acknowledged.
    fn commit(&mut self, token: AckToken, info: CommitInfo);

    /// Waits up to `timeout` for the outcome of every record sent so far. Returns `true` when
    /// all were acknowledged, `false` on timeout or after a delivery failure.
    fn flush(&mut self, timeout: Duration) -> impl Future<Output = bool> + Send;

    /// A point between two turns of the pipeline (`idle`: no input is waiting). A
    /// transactional sink may end its Kafka transaction here; others do nothing.
    fn boundary(&mut self, idle: bool) -> impl Future<Output = Result<()>> + Send {
        let _ = idle;
        async { Ok(()) }
    }

    /// Whether this sink writes in transactions that hold the offsets record too
    /// (exactly-once): the offsets saver then writes nothing itself.
    fn is_transactional(&self) -> bool {
        false
    }

    /// Exactly-once: `stored`, the offsets store's position (raised by the sink after each
    /// commit), and `floor`, the commit position of the offsets loaded at start (no offsets
    /// record goes below it). Other sinks ignore both.
    fn attach_offsets(&mut self, stored: Arc<AtomicU64>, floor: Option<Lsn>) {
        let _ = (stored, floor);
    }

    /// The first delivery failure, if any, with its kind (which decides whether the connector
    /// restarts, stops with a fix, or stops because it was fenced).
    fn failure(&self) -> Option<Arc<Error>>;

    /// The ack tracker this sink reports to (whose flushable LSN is confirmed to PostgreSQL).
    fn tracker(&self) -> &Arc<AckTracker>;
}

#[cfg(test)]
mod tests {
    use super::memory::{AckMode, MemorySink};
    use super::*;
    use crate::convert::KafkaRecord;

    fn record() -> KafkaRecord<'static> {
        KafkaRecord {
            topic: "t",
            partition: None,
            key: Some(b"k"),
            value: Some(b"v"),
            headers: Vec::new(),
            timestamp: None,
        }
    }

    fn info(end: u64) -> CommitInfo {
        CommitInfo {
            end_lsn: Lsn(end),
            ..CommitInfo::default()
        }
    }

    /// A unit dropped open (as a stop request's cancelled send leaves it) never completes:
    /// the units before it still do when their acknowledgements arrive, nothing from it on
    /// is confirmed, and the tracker names it.
    #[tokio::test]
    async fn a_unit_dropped_open_is_abandoned_without_holding_back_the_units_before_it() {
        let tracker = Arc::new(AckTracker::new(Lsn::ZERO));
        let mut sink = MemorySink::new(tracker.clone(), AckMode::Manual);
        let first = Unit::open(&mut sink);
        sink.send(&record(), first.token()).await.unwrap();
        first.commit(&mut sink, info(100));
        assert_eq!(tracker.flushable(), Lsn::ZERO, "not acknowledged yet");

        let forgotten = Unit::open(&mut sink);
        let token = forgotten.token();
        sink.send(&record(), token).await.unwrap();
        drop(forgotten);
        let after = Unit::open(&mut sink);
        sink.send(&record(), after.token()).await.unwrap();
        after.commit(&mut sink, info(300));
        sink.ack_all();
        assert_eq!(tracker.abandoned(), Some(token));
        assert!(
            tracker.failure().is_none(),
            "abandoning is not a delivery failure"
        );
        assert_eq!(
            tracker.flushable(),
            Lsn(100),
            "the unit before completes; nothing from the abandoned one on is confirmed"
        );
    }
}
