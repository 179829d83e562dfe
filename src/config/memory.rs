//! The memory pgcdc's record buffers may hold: one budget, `pgcdc.buffer.memory.bytes`
//! (default [`DEFAULT_BUFFER_MEMORY_BYTES`], 32 MiB), shared by every buffer between the
//! replication socket and the broker:
//! - **the producer queue**, librdkafka's `queue.buffering.max.kbytes` (Java: `buffer.memory`):
//!   half, unless `producer.override.queue.buffering.max.kbytes` or `buffer.memory` sets it;
//!   in exactly-once mode it also holds the open Kafka transaction's records;
//! - **the reader's queue** of decoded replication messages: a quarter, unless
//!   `max.queue.size.in.bytes` sets it (records: `max.queue.size`);
//! - **the snapshot's fetched rows** (and a parallel snapshot's converted records): a quarter,
//!   split over the batches that can exist at once ([`MemoryBudget::snapshot_batch_bytes`]).
//!
//! Outside it, each with its own setting: streamed transactions held until their commit
//! (`pgcdc.pgoutput.streaming.memory.bytes`, only with `pgcdc.pgoutput.streaming=true`) and
//! the schema caches (one entry per relation version). A single record larger than its share
//! still passes: the reader's queue takes one message whatever its size, and the producer
//! queue's limit is reported with the setting to raise.

use super::checker::Checker;
use super::keys::{BUFFER_MEMORY_BYTES, MAX_QUEUE_SIZE_IN_BYTES};

/// Default `pgcdc.buffer.memory.bytes`: 32 MiB. With it, every workload of
/// `scripts/bench-compare.sh` (3.4 KB, 50-column and 8 KiB TOAST records) stayed under a peak
/// RSS of 64 MiB.
pub const DEFAULT_BUFFER_MEMORY_BYTES: usize = 32 * 1024 * 1024;
/// The smallest budget accepted: 4 MiB.
pub const MIN_BUFFER_MEMORY_BYTES: usize = 4 * 1024 * 1024;
/// librdkafka's setting that bounds its queue in KiB.
pub const PRODUCER_QUEUE_KBYTES: &str = "queue.buffering.max.kbytes";

/// The budget and each buffer's bound, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// `pgcdc.buffer.memory.bytes`.
    pub total: usize,
    /// The reader's queue: `max.queue.size.in.bytes`, or a quarter of the budget.
    pub reader_queue: usize,
    /// The producer queue's share (used unless the producer settings set its size).
    pub producer_queue: usize,
    /// The snapshot's fetched rows, over all its batches.
    pub snapshot: usize,
}

impl MemoryBudget {
    /// The shares of a budget of `total` bytes, with `reader_queue` bytes for the reader's
    /// queue when set (`max.queue.size.in.bytes` above 0).
    pub fn new(total: usize, reader_queue: Option<usize>) -> Self {
        MemoryBudget {
            total,
            reader_queue: reader_queue.unwrap_or(total / 4),
            producer_queue: total / 2,
            snapshot: total / 4,
        }
    }

    /// Target bytes of one snapshot fetch with `readers` readers (`snapshot.max.threads`):
    /// the snapshot's share over the batches that can exist at once, each counted twice (the
    /// server's answer and the rows' text, or a parallel reader's converted records). One
    /// reader fetches one batch at a time; parallel readers each fetch one while two more wait
    /// in the channel to the pipeline. A parallel reader also hands its converted records over
    /// at this size.
    pub fn snapshot_batch_bytes(&self, readers: usize) -> usize {
        let batches = if readers <= 1 { 1 } else { 3 * readers };
        (self.snapshot / (2 * batches)).max(64 * 1024)
    }
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget::new(DEFAULT_BUFFER_MEMORY_BYTES, None)
    }
}

/// Reads `pgcdc.buffer.memory.bytes` and `max.queue.size.in.bytes`.
pub(super) fn parse(c: &mut Checker<'_>) -> MemoryBudget {
    let total = c.int(
        BUFFER_MEMORY_BYTES,
        DEFAULT_BUFFER_MEMORY_BYTES,
        MIN_BUFFER_MEMORY_BYTES,
    );
    let reader_queue = c.int(MAX_QUEUE_SIZE_IN_BYTES, 0usize, 0usize);
    MemoryBudget::new(total, Some(reader_queue).filter(|&b| b > 0))
}

/// Gives the producer queue its share of the budget, unless the producer settings size it
/// (`queue.buffering.max.kbytes`, or Java's `buffer.memory` translated to it).
pub(super) fn bound_producer_queue(producer: &mut Vec<(String, String)>, budget: &MemoryBudget) {
    if producer.iter().any(|(k, _)| k == PRODUCER_QUEUE_KBYTES) {
        return;
    }
    let kbytes = (budget.producer_queue / 1024).max(1);
    producer.push((PRODUCER_QUEUE_KBYTES.into(), kbytes.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_budget_keeps_the_former_producer_queue_and_a_smaller_reader_queue() {
        let b = MemoryBudget::default();
        assert_eq!(b.producer_queue, 16 * 1024 * 1024);
        assert_eq!(b.reader_queue, 8 * 1024 * 1024);
        assert_eq!(b.snapshot, 8 * 1024 * 1024);
        assert_eq!(b.snapshot_batch_bytes(1), 4 * 1024 * 1024);
        // Four readers: twelve batches, each held twice.
        assert_eq!(b.snapshot_batch_bytes(4), 8 * 1024 * 1024 / 24);
    }

    #[test]
    fn an_explicit_reader_queue_and_producer_queue_win() {
        let b = MemoryBudget::new(64 << 20, Some(1 << 20));
        assert_eq!(b.reader_queue, 1 << 20);
        let mut producer = vec![("queue.buffering.max.kbytes".to_string(), "2048".to_string())];
        bound_producer_queue(&mut producer, &b);
        assert_eq!(producer.len(), 1);
        assert_eq!(producer[0].1, "2048");
        let mut producer = Vec::new();
        bound_producer_queue(&mut producer, &b);
        assert_eq!(
            producer,
            vec![("queue.buffering.max.kbytes".into(), "32768".into())]
        );
    }
}
