//! The replication reader: the one task that owns the replication socket.
//!
//! It reads CopyData frames, decodes pgoutput messages and hands them on through a bounded
//! queue (bounded in records by the channel and in bytes by [`QueueBytes`]). It never waits
//! on Kafka. Its `select!` loop is biased, in this order:
//! 1. shutdown: stop reading; keep answering until the pipeline has drained, then send the
//!    final status update;
//! 2. the status timer: a standby status update every interval, even while the queue is full
//!    and the socket is not being read, so `wal_sender_timeout` never fires on a busy
//!    connector (invariant 2);
//! 3. handing a decoded message to the queue when it has room;
//! 4. reading the socket, only when nothing decoded is waiting.
//!
//! A keepalive that asks for a reply is answered at once, with the tracker's flushable LSN.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Notify};

use crate::error::{Error, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::AckTracker;
use crate::pg::pgoutput::{self, Message};
use crate::pg::wire::{ReplicationFrame, ReplicationReader, ReplicationWriter};

/// An item handed from the reader to the pipeline.
#[derive(Debug)]
pub enum StreamEvent {
    /// A decoded pgoutput message and the LSN of its XLogData.
    Message {
        /// XLogData start LSN.
        lsn: u64,
        /// The message.
        message: Message,
        /// Bytes it occupied on the wire (released from [`QueueBytes`] once processed).
        size: usize,
    },
    /// A keepalive: every message before it has been queued; `wal_end` may be confirmed
    /// when nothing is in flight.
    Keepalive {
        /// Server WAL end.
        wal_end: u64,
    },
}

/// Byte accounting of the reader → pipeline queue.
#[derive(Debug)]
pub struct QueueBytes {
    used: AtomicUsize,
    limit: usize,
    freed: Notify,
}

impl QueueBytes {
    /// A bound of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        QueueBytes {
            used: AtomicUsize::new(0),
            limit,
            freed: Notify::new(),
        }
    }
    fn has_room(&self) -> bool {
        let used = self.used.load(Ordering::Acquire);
        used == 0 || used < self.limit
    }
    fn take(&self, n: usize) {
        self.used.fetch_add(n, Ordering::AcqRel);
    }
    /// Releases `n` bytes after processing.
    pub fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
        self.freed.notify_one();
    }
}

/// Reader settings.
#[derive(Debug, Clone)]
pub struct ReaderSettings {
    /// Interval between status updates.
    pub status_interval: Duration,
    /// Longest wait, after shutdown, for the pipeline to drain before the final status update.
    pub drain_timeout: Duration,
}

/// Runs the reader until shutdown or error. `drained` flips to true when the pipeline has
/// flushed everything it will flush; the reader then sends a final status update.
#[allow(clippy::too_many_arguments)]
pub async fn run_reader(
    mut reader: ReplicationReader,
    mut writer: ReplicationWriter,
    tx: mpsc::Sender<StreamEvent>,
    bytes: Arc<QueueBytes>,
    tracker: Arc<AckTracker>,
    settings: ReaderSettings,
    mut shutdown: watch::Receiver<bool>,
    mut drained: watch::Receiver<bool>,
) -> Result<()> {
    let mut pending: VecDeque<StreamEvent> = VecDeque::new();
    let mut ticker = tokio::time::interval(settings.status_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut received: u64 = 0;
    let mut last_flush_sent: u64 = 0;
    loop {
        // Decode what is already buffered, a bounded amount at a time.
        while pending.len() < 1024 {
            let Some(frame) = reader.next_frame()? else {
                break;
            };
            match frame {
                ReplicationFrame::XLogData {
                    wal_start: Lsn(wal_start),
                    data,
                    ..
                } => {
                    let size = data.len() + 25;
                    let message = pgoutput::decode(&data).map_err(|e| {
                        Error::protocol(format!(
                            "cannot decode the pgoutput message at LSN {}",
                            Lsn(wal_start)
                        ))
                        .with_source(e)
                    })?;
                    received = received.max(wal_start);
                    pending.push_back(StreamEvent::Message {
                        lsn: wal_start,
                        message,
                        size,
                    });
                }
                ReplicationFrame::Keepalive {
                    wal_end: Lsn(wal_end),
                    reply_requested,
                    ..
                } => {
                    received = received.max(wal_end);
                    if reply_requested {
                        let flush = tracker.flushable();
                        writer
                            .send_status(Lsn(received.max(flush)), Lsn(flush), Lsn(flush))
                            .await?;
                        last_flush_sent = flush;
                    }
                    match pending.back_mut() {
                        Some(StreamEvent::Keepalive { wal_end: w }) => *w = wal_end,
                        _ => pending.push_back(StreamEvent::Keepalive { wal_end }),
                    }
                }
                ReplicationFrame::CopyDone => {
                    return Err(Error::connection(
                        "PostgreSQL ended the replication stream (CopyDone)",
                    ));
                }
            }
        }
        let room = bytes.has_room();
        tokio::select! {
            biased;
            // 1. Shutdown.
            _ = shutdown.changed() => break,
            // 2. Status updates on a timer, whatever else is happening.
            _ = ticker.tick() => {
                let flush = tracker.flushable();
                writer.send_status(Lsn(received.max(flush)), Lsn(flush), Lsn(flush)).await?;
                if flush != last_flush_sent {
                    tracing::debug!(flush_lsn = %Lsn(flush), "confirmed position to PostgreSQL");
                    last_flush_sent = flush;
                }
            }
            // 3. Hand on a decoded message when the queue has room.
            permit = tx.reserve(), if !pending.is_empty() && room => {
                let Ok(permit) = permit else { break };
                if let Some(ev) = pending.pop_front() {
                    if let StreamEvent::Message { size, .. } = &ev {
                        bytes.take(*size);
                    }
                    permit.send(ev);
                }
            }
            _ = bytes.freed.notified(), if !pending.is_empty() && !room => {}
            // 4. Read more only when nothing decoded waits.
            r = reader.fill(), if pending.is_empty() => r?,
        }
    }
    // Graceful stop: keep the status updates going until the pipeline has drained, then
    // report the final position.
    let deadline = tokio::time::Instant::now() + settings.drain_timeout;
    while !*drained.borrow() {
        tokio::select! {
            biased;
            _ = drained.changed() => {}
            _ = tokio::time::sleep_until(deadline) => break,
            _ = ticker.tick() => {
                let flush = tracker.flushable();
                writer.send_status(Lsn(received.max(flush)), Lsn(flush), Lsn(flush)).await?;
            }
        }
    }
    let flush = tracker.flushable();
    writer
        .send_status(Lsn(received.max(flush)), Lsn(flush), Lsn(flush))
        .await?;
    tracing::info!(flush_lsn = %Lsn(flush), "sent final status update");
    // End the stream cleanly: CopyDone, wait briefly for the server's CopyDone, Terminate.
    let _ = writer.send_copy_done().await;
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match reader.next_frame() {
                Ok(Some(ReplicationFrame::CopyDone)) | Err(_) => break,
                Ok(Some(_)) => continue,
                Ok(None) => {
                    if reader.fill().await.is_err() {
                        break;
                    }
                }
            }
        }
    })
    .await;
    let _ = writer.send_terminate().await;
    Ok(())
}
