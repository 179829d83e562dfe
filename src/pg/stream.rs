//! The replication reader: the one task that owns the replication socket.
//!
//! It reads CopyData frames, decodes pgoutput messages and hands them on through a bounded
//! queue (bounded in records by the channel and in bytes by [`QueueBytes`]). It never waits
//! on Kafka. Items go through the queue in chunks of up to [`ReaderSettings::chunk_len`]:
//! everything decoded and waiting, at once, so that neither side wakes the other for every
//! message (a thread wake-up costs more than converting a row). Its `select!` loop is biased, in this order:
//! 1. shutdown: stop reading; keep answering until the pipeline has drained, then send the
//!    final status update;
//! 2. the status timer: a standby status update every interval, even while the queue is full
//!    and the socket is not being read, so `wal_sender_timeout` never fires on a busy
//!    connector (invariant 2);
//! 3. handing a decoded message to the queue when it has room;
//! 4. reading the socket, only when nothing decoded is waiting.
//!
//! A keepalive that asks for a reply is answered at once, with the flushable LSN (the ack
//! tracker's, passed in as a function so that this module knows nothing of Kafka). A moved
//! flushable LSN is confirmed within [`CONFIRM_INTERVAL`], whatever the status interval, so a
//! crash repeats about a second of work.
//!
//! A dead connection is noticed: while the reader waits on the socket, a status update sent
//! after a status interval of silence asks the server for a reply, and silence past
//! [`ReaderSettings::dead_after`] ends the stream with a retriable connection error (the
//! connector reconnects). Time spent not reading (the queue full) does not count as silence,
//! and any bytes read count as heard.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

use crate::config::LsnFlushTimeoutAction;
use crate::error::{Error, Result};
use crate::lsn::Lsn;
use crate::pg::pgoutput::{self, Message, StreamingMessage};
use crate::pg::streamed::{Replay, StreamedTransactions, StreamingLimits};
use crate::pg::wire::{ReplicationFrame, ReplicationReader, ReplicationWriter};

/// An item handed from the reader to the pipeline.
#[derive(Debug)]
pub enum StreamEvent {
    /// A decoded pgoutput message and the LSN of its XLogData.
    Message {
        /// XLogData start LSN.
        lsn: Lsn,
        /// The message.
        message: Message,
        /// Bytes it occupied on the wire (released from [`QueueBytes`] once processed).
        size: usize,
    },
    /// A keepalive: every message before it has been queued; `wal_end` may be confirmed
    /// when nothing is in flight.
    Keepalive {
        /// Server WAL end.
        wal_end: Lsn,
    },
}

/// Byte accounting of the reader → pipeline queue.
#[derive(Debug)]
pub struct QueueBytes {
    used: AtomicUsize,
    /// The most `used` has been.
    high_water: AtomicUsize,
    limit: usize,
    freed: Notify,
}

impl QueueBytes {
    /// A bound of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        QueueBytes {
            used: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
            limit,
            freed: Notify::new(),
        }
    }
    fn has_room(&self) -> bool {
        let used = self.used.load(Ordering::Acquire);
        used == 0 || used < self.limit
    }
    fn take(&self, n: usize) {
        let now = self.used.fetch_add(n, Ordering::AcqRel) + n;
        self.high_water.fetch_max(now, Ordering::Relaxed);
    }
    /// Bytes of the messages in the queue.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
    /// The most bytes the queue has held at once.
    pub fn high_water(&self) -> usize {
        self.high_water.load(Ordering::Relaxed)
    }
    /// Releases `n` bytes after processing.
    pub fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
        self.freed.notify_one();
    }
}

/// The LSN that may be confirmed to PostgreSQL as flushed, read at every status update.
pub type FlushedLsn = Arc<dyn Fn() -> Lsn + Send + Sync>;

/// The longest a moved flushable LSN waits before it is confirmed.
pub const CONFIRM_INTERVAL: Duration = Duration::from_secs(1);

/// Reader settings.
#[derive(Debug, Clone)]
pub struct ReaderSettings {
    /// Interval between status updates.
    pub status_interval: Duration,
    /// Silence from the server, while waiting on the socket, after which the connection is
    /// taken for dead.
    pub dead_after: Duration,
    /// Longest wait, after shutdown, for the pipeline to drain before the final status update.
    pub drain_timeout: Duration,
    /// `lsn.flush.timeout.ms`: the longest a status update's write may take.
    pub flush_timeout: Duration,
    /// `lsn.flush.timeout.action`: what a longer write does.
    pub flush_timeout_action: LsnFlushTimeoutAction,
    /// Most items in one chunk handed to the queue (at least 1).
    pub chunk_len: usize,
    /// `pgcdc.pgoutput.streaming`: the stream speaks protocol 2 with `streaming` on, and
    /// streamed transactions are held within these bounds until they commit.
    pub streaming: Option<StreamingLimits>,
    /// `server_version_num`: where a streamed transaction's BEGIN goes depends on it.
    pub server_version: u32,
}

/// The oldest server that sends a transaction's BEGIN only before its first published change
/// (and nothing for a transaction that publishes none).
pub const LAZY_BEGIN_SERVER_VERSION: u32 = 150_000;

/// The chunk length and the queue's capacity in chunks for a bound of `max_items` items
/// (`max.queue.size`): chunks of up to [`MAX_CHUNK_LEN`] items, and never more than
/// `max_items` items in the queue.
pub fn queue_shape(max_items: usize) -> (usize, usize) {
    let chunk_len = MAX_CHUNK_LEN.min(max_items).max(1);
    (chunk_len, (max_items / chunk_len).max(1))
}

/// Most items in one chunk of the reader's queue.
pub const MAX_CHUNK_LEN: usize = 256;

/// Runs the reader until shutdown or error. `drained` flips to true when the pipeline has
/// flushed everything it will flush; the reader then sends a final status update.
#[allow(clippy::too_many_arguments)]
pub async fn run_reader(
    reader: ReplicationReader,
    writer: ReplicationWriter,
    tx: mpsc::Sender<Vec<StreamEvent>>,
    bytes: Arc<QueueBytes>,
    flushed: FlushedLsn,
    settings: ReaderSettings,
    mut shutdown: watch::Receiver<bool>,
    drained: watch::Receiver<bool>,
) -> Result<()> {
    let mut ticker = tokio::time::interval(settings.status_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut confirm = tokio::time::interval(CONFIRM_INTERVAL.min(settings.status_interval));
    confirm.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut r = Reader {
        reader,
        writer,
        flushed,
        streamed: settings.streaming.clone().map(StreamedTransactions::new),
        replay: None,
        pending: VecDeque::new(),
        received: Lsn::ZERO,
        last_flush_sent: Lsn::ZERO,
        last_heard: Instant::now(),
        settings,
    };
    loop {
        r.decode_buffered().await?;
        if !r.pending.is_empty() {
            // Not reading the socket: silence now says nothing about the connection.
            r.last_heard = Instant::now();
        }
        let room = bytes.has_room();
        tokio::select! {
            biased;
            // 1. Shutdown.
            _ = shutdown.changed() => break,
            // 2. Status updates on a timer, whatever else is happening; a moved flushable
            //    LSN sooner.
            _ = ticker.tick() => {
                r.check_alive()?;
                r.status_update(true).await?
            }
            _ = confirm.tick() => r.confirm_progress().await?,
            // 3. Hand on what is decoded when the queue has room.
            permit = tx.reserve(), if !r.pending.is_empty() && room => {
                let Ok(permit) = permit else { break };
                permit.send(take_chunk(&mut r.pending, r.settings.chunk_len, &bytes));
            }
            _ = bytes.freed.notified(), if !r.pending.is_empty() && !room => {}
            // 4. Read more only when nothing decoded waits.
            res = r.reader.fill(), if r.pending.is_empty() => {
                res?;
                // Bytes count as heard: a huge message arrives in many reads.
                r.last_heard = Instant::now();
            }
        }
    }
    let drain_timeout = r.settings.drain_timeout;
    r.finish(&mut ticker, drained, drain_timeout).await
}

/// What a decoded message of `len` wire bytes occupies in the queue, as counted against
/// `max.queue.size.in.bytes`: its bytes (its values are slices of them), the item around it,
/// and one [`pgoutput::TupleValue`] per column of its tuples. Counting the wire bytes alone
/// undercounted a 50-column row about threefold.
pub(crate) fn queued_size(message: &Message, len: usize) -> usize {
    let columns = match message {
        Message::Insert { new, .. } => new.len(),
        Message::Update { old, new, .. } => new.len() + old.as_ref().map_or(0, old_columns),
        Message::Delete { old, .. } => old_columns(old),
        _ => 0,
    };
    len + std::mem::size_of::<StreamEvent>() + columns * std::mem::size_of::<pgoutput::TupleValue>()
}

fn old_columns(old: &pgoutput::OldTuple) -> usize {
    match old {
        pgoutput::OldTuple::Key(t) | pgoutput::OldTuple::Full(t) => t.len(),
    }
}

/// Takes the oldest of `pending`, up to `chunk_len` items and while the byte bound has room
/// (at least one item), counting the bytes of the messages taken as queued.
fn take_chunk(
    pending: &mut VecDeque<StreamEvent>,
    chunk_len: usize,
    bytes: &QueueBytes,
) -> Vec<StreamEvent> {
    let mut chunk = Vec::with_capacity(pending.len().min(chunk_len));
    while chunk.len() < chunk_len && (chunk.is_empty() || bytes.has_room()) {
        let Some(ev) = pending.pop_front() else {
            break;
        };
        if let StreamEvent::Message { size, .. } = &ev {
            bytes.take(*size);
        }
        chunk.push(ev);
    }
    chunk
}

/// The reader's state between turns of its loop.
struct Reader {
    reader: ReplicationReader,
    writer: ReplicationWriter,
    flushed: FlushedLsn,
    /// With `pgcdc.pgoutput.streaming`: the streamed transactions not committed yet.
    streamed: Option<StreamedTransactions>,
    /// A committed streamed transaction being handed on, and its COMMIT.
    replay: Option<(Replay, StreamEvent)>,
    /// Decoded items not yet handed on.
    pending: VecDeque<StreamEvent>,
    /// The newest WAL position received.
    received: Lsn,
    /// The flush position last reported.
    last_flush_sent: Lsn,
    /// When the server was last heard from (or the reader last stopped reading).
    last_heard: Instant,
    settings: ReaderSettings,
}

impl Reader {
    /// Decodes what is already buffered, a bounded amount at a time; answers a keepalive that
    /// asks for a reply at once.
    async fn decode_buffered(&mut self) -> Result<()> {
        while self.pending.len() < 1024 {
            if self.replay.is_some() {
                self.replay_one()?;
                continue;
            }
            let Some(frame) = self.reader.next_frame()? else {
                break;
            };
            match frame {
                ReplicationFrame::XLogData {
                    wal_start, data, ..
                } => {
                    self.last_heard = Instant::now();
                    self.message(wal_start, &data)?
                }
                ReplicationFrame::Keepalive {
                    wal_end,
                    reply_requested,
                    ..
                } => {
                    self.last_heard = Instant::now();
                    self.received = self.received.max(wal_end);
                    if reply_requested {
                        self.status_update(false).await?;
                    }
                    // Never past the start of a streamed transaction still open.
                    let open = self.streamed.as_ref().and_then(|s| s.oldest_open_lsn());
                    let wal_end = open.map_or(wal_end, |lsn| lsn.min(wal_end));
                    match self.pending.back_mut() {
                        Some(StreamEvent::Keepalive { wal_end: w }) => *w = wal_end,
                        _ => self.pending.push_back(StreamEvent::Keepalive { wal_end }),
                    }
                }
                ReplicationFrame::CopyDone => {
                    return Err(Error::connection(
                        "PostgreSQL ended the replication stream (CopyDone)",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Decodes one XLogData payload that starts at `wal_start`.
    fn message(&mut self, wal_start: Lsn, data: &bytes::Bytes) -> Result<()> {
        self.received = self.received.max(wal_start);
        if self.streamed.is_some() {
            return self.streaming_message(wal_start, data);
        }
        let message = pgoutput::decode(data).map_err(|e| undecodable(wal_start, e))?;
        self.queue(wal_start, message, data.len());
        Ok(())
    }

    fn queue(&mut self, lsn: Lsn, message: Message, len: usize) {
        let size = queued_size(&message, len);
        self.pending
            .push_back(StreamEvent::Message { lsn, message, size });
    }

    /// Decodes one payload of protocol 2 with `streaming` on: plain messages go on at once,
    /// a streamed transaction's are held until its commit starts their replay.
    fn streaming_message(&mut self, wal_start: Lsn, data: &bytes::Bytes) -> Result<()> {
        let streamed = self.streamed.as_mut().expect("streaming is on");
        let decoded = pgoutput::decode_streaming(data, streamed.in_block())
            .map_err(|e| undecodable(wal_start, e))?;
        match decoded {
            StreamingMessage::Plain(message) => self.queue(wal_start, message, data.len()),
            StreamingMessage::StreamStart { xid, first_segment } => {
                streamed.start(xid, first_segment, wal_start)?
            }
            StreamingMessage::StreamStop => streamed.stop(wal_start)?,
            StreamingMessage::InBlock { xid } => streamed.push(wal_start, xid, data)?,
            StreamingMessage::StreamAbort { xid, subxid } => {
                tracing::debug!(xid, subxid, lsn = %wal_start, "a streamed (sub)transaction aborted");
                streamed.abort(xid, subxid)?
            }
            StreamingMessage::InBlockOrigin => streamed.origin(wal_start, data)?,
            StreamingMessage::StreamCommit {
                xid,
                commit_lsn,
                end_lsn,
                commit_time,
            } => {
                let mut replay = streamed.commit(xid, wal_start)?;
                // Where protocol 1 puts the BEGIN: PostgreSQL 15+ sends it before the first
                // change it publishes, and nothing for a transaction that publishes none; 14
                // at the transaction's first change.
                let begin_lsn = if self.settings.server_version >= LAZY_BEGIN_SERVER_VERSION {
                    let Some(lsn) = replay.first_change_lsn() else {
                        let what = "a streamed transaction committed with nothing published";
                        tracing::debug!(xid, commit_lsn = %commit_lsn, "{what}");
                        return Ok(());
                    };
                    lsn
                } else {
                    replay.first_lsn()
                };
                if replay.spill_bytes() > 0 {
                    tracing::info!(xid, commit_lsn = %commit_lsn, spill_bytes = replay.spill_bytes(),
                        "a streamed transaction committed: handing it on from memory and its spill file");
                } else {
                    tracing::debug!(xid, commit_lsn = %commit_lsn, "a streamed transaction committed: handing it on");
                }
                let begin = Message::Begin {
                    final_lsn: commit_lsn,
                    commit_time,
                    xid,
                };
                self.queue(begin_lsn, begin, 0);
                if let Some(origin) = replay.take_origin() {
                    let message =
                        pgoutput::decode(&origin).map_err(|e| undecodable(wal_start, e))?;
                    self.queue(begin_lsn, message, origin.len());
                }
                let commit = Message::Commit {
                    flags: 0,
                    commit_lsn,
                    end_lsn,
                    commit_time,
                };
                let commit = StreamEvent::Message {
                    lsn: wal_start,
                    size: queued_size(&commit, data.len()),
                    message: commit,
                };
                self.replay = Some((replay, commit));
            }
        }
        Ok(())
    }

    /// Hands on the next message of the streamed transaction being replayed, or its COMMIT
    /// at the end.
    fn replay_one(&mut self) -> Result<()> {
        let Some((replay, _)) = self.replay.as_mut() else {
            return Ok(());
        };
        match replay.next_message()? {
            Some((lsn, data)) => {
                let (_, message) =
                    pgoutput::decode_in_block(&data).map_err(|e| undecodable(lsn, e))?;
                self.queue(lsn, message, data.len());
            }
            None => {
                let (_, commit) = self.replay.take().expect("checked above");
                self.pending.push_back(commit);
            }
        }
        Ok(())
    }

    /// Sends a standby status update: written up to what was received, flushed and applied
    /// up to the flushable LSN. With `log`, a moved flush position is logged.
    async fn status_update(&mut self, log: bool) -> Result<()> {
        let flush = (self.flushed)();
        let ask_reply = self.last_heard.elapsed() >= self.settings.status_interval;
        let (timeout, action) = (
            self.settings.flush_timeout,
            self.settings.flush_timeout_action,
        );
        let write = self
            .writer
            .send_status(self.received.max(flush), flush, flush, ask_reply);
        within_flush_timeout(write, timeout, action, flush).await?;
        if log && flush != self.last_flush_sent {
            tracing::debug!(flush_lsn = %flush, "confirmed position to PostgreSQL");
        }
        self.last_flush_sent = flush;
        Ok(())
    }

    /// Sends a status update when the flushable LSN moved since the last one.
    async fn confirm_progress(&mut self) -> Result<()> {
        if (self.flushed)() != self.last_flush_sent {
            self.status_update(true).await?;
        }
        Ok(())
    }

    /// Fails when the server has been silent past `dead_after` while the reader waited on
    /// the socket (replies were asked for meanwhile).
    fn check_alive(&self) -> Result<()> {
        let silent = self.last_heard.elapsed();
        if silent < self.settings.dead_after {
            return Ok(());
        }
        Err(Error::connection(format!(
            "no message from PostgreSQL on the replication connection for {} s, although a reply was asked for: the connection is dead (network cut, or the server gone); reconnecting",
            silent.as_secs()
        )))
    }

    /// Graceful stop: keeps the status updates going until the pipeline has drained (or
    /// `drain_timeout`), reports the final position, and ends the stream cleanly (CopyDone,
    /// a brief wait for the server's CopyDone, Terminate).
    async fn finish(
        mut self,
        ticker: &mut tokio::time::Interval,
        mut drained: watch::Receiver<bool>,
        drain_timeout: Duration,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + drain_timeout;
        while !*drained.borrow() {
            tokio::select! {
                biased;
                _ = drained.changed() => {}
                _ = tokio::time::sleep_until(deadline) => break,
                _ = ticker.tick() => self.status_update(false).await?,
            }
        }
        self.status_update(false).await?;
        tracing::info!(flush_lsn = %self.last_flush_sent, "sent final status update");
        let _ = self.writer.send_copy_done().await;
        let reader = &mut self.reader;
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
        let _ = self.writer.send_terminate().await;
        Ok(())
    }
}

/// The error of a payload that does not decode.
fn undecodable(lsn: Lsn, e: pgoutput::DecodeError) -> Error {
    Error::protocol(format!("cannot decode the pgoutput message at LSN {lsn}")).with_source(e)
}

/// Runs a status update's `write` under `lsn.flush.timeout.ms` (`timeout`): past it, `fail`
/// ends the stream with a connection error (the connection is dropped with the half-written
/// message, and the connector reconnects as `errors.max.retries` allows), `warn` logs a warning
/// and `ignore` a DEBUG line, and both keep waiting for the write: cancelling it would leave
/// half a message on the socket. `lsn` is the position being confirmed, for the messages.
async fn within_flush_timeout<F>(
    write: F,
    timeout: Duration,
    action: LsnFlushTimeoutAction,
    lsn: Lsn,
) -> Result<()>
where
    F: std::future::Future<Output = Result<()>>,
{
    tokio::pin!(write);
    if let Ok(done) = tokio::time::timeout(timeout, &mut write).await {
        return done;
    }
    let ms = timeout.as_millis() as u64;
    match action {
        LsnFlushTimeoutAction::Fail => {
            return Err(Error::connection(format!(
                "confirming LSN {lsn} to PostgreSQL (a status update) did not complete within lsn.flush.timeout.ms={ms}: the replication connection is not taking writes; lsn.flush.timeout.action=fail ends it (warn or ignore keep waiting)"
            )))
        }
        LsnFlushTimeoutAction::Warn => tracing::warn!(
            flush_lsn = %lsn,
            timeout_ms = ms,
            "confirming a position to PostgreSQL is taking longer than lsn.flush.timeout.ms; still waiting, as lsn.flush.timeout.action=warn says"
        ),
        LsnFlushTimeoutAction::Ignore => tracing::debug!(
            flush_lsn = %lsn,
            timeout_ms = ms,
            "confirming a position to PostgreSQL is taking longer than lsn.flush.timeout.ms; still waiting"
        ),
    }
    write.await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keepalive(n: u64) -> StreamEvent {
        StreamEvent::Keepalive { wal_end: Lsn(n) }
    }

    fn message(size: usize) -> StreamEvent {
        StreamEvent::Message {
            lsn: Lsn(1),
            message: Message::Begin {
                final_lsn: Lsn(2),
                commit_time: 0,
                xid: 7,
            },
            size,
        }
    }

    #[test]
    fn a_queued_row_counts_its_decoded_columns_not_only_its_wire_bytes() {
        let row = |n: usize| Message::Insert {
            relation_id: 1,
            new: vec![pgoutput::TupleValue::Text(bytes::Bytes::from_static(b"1")); n],
        };
        let item = std::mem::size_of::<StreamEvent>();
        let column = std::mem::size_of::<pgoutput::TupleValue>();
        assert_eq!(queued_size(&row(50), 300), 300 + item + 50 * column);
        let begin = Message::Begin {
            final_lsn: Lsn(2),
            commit_time: 0,
            xid: 7,
        };
        assert_eq!(queued_size(&begin, 21), 21 + item);
    }

    #[test]
    fn the_queue_never_holds_more_items_than_max_queue_size() {
        assert_eq!(queue_shape(8192), (256, 32));
        assert_eq!(queue_shape(1000), (256, 3));
        assert_eq!(queue_shape(100), (100, 1));
        assert_eq!(queue_shape(1), (1, 1));
        assert_eq!(queue_shape(0), (1, 1));
    }

    #[test]
    fn a_chunk_keeps_order_and_stops_at_its_length_or_the_byte_bound() {
        let bytes = QueueBytes::new(1000);
        let mut pending: VecDeque<StreamEvent> = (0..5).map(keepalive).collect();
        let chunk = take_chunk(&mut pending, 3, &bytes);
        let ends: Vec<u64> = chunk
            .iter()
            .map(|e| match e {
                StreamEvent::Keepalive { wal_end } => wal_end.0,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ends, [0, 1, 2]);
        assert_eq!(pending.len(), 2);

        // Two messages of 600 bytes under a bound of 500: one goes, the second only in the
        // next chunk, which always holds at least one item (the reader asks for one only when
        // the bound has room).
        let bytes = QueueBytes::new(500);
        let mut pending: VecDeque<StreamEvent> = [message(600), message(600)].into();
        assert_eq!(take_chunk(&mut pending, 10, &bytes).len(), 1);
        assert!(!bytes.has_room());
        assert_eq!(
            take_chunk(&mut pending, 10, &bytes).len(),
            1,
            "at least one item"
        );
        bytes.release(1200);
        assert!(bytes.has_room());
    }

    #[tokio::test]
    async fn a_status_update_write_past_the_flush_timeout_fails_or_is_waited_for() {
        let t = Duration::from_millis(30);
        let stuck = std::future::pending::<Result<()>>();
        let err = within_flush_timeout(stuck, t, LsnFlushTimeoutAction::Fail, Lsn(42))
            .await
            .unwrap_err();
        assert!(err.is_retriable());
        let msg = err.to_string();
        assert!(
            msg.contains("0/2A") && msg.contains("lsn.flush.timeout.ms=30"),
            "{msg}"
        );
        for action in [LsnFlushTimeoutAction::Warn, LsnFlushTimeoutAction::Ignore] {
            let slow = async {
                tokio::time::sleep(Duration::from_millis(90)).await;
                Ok(())
            };
            within_flush_timeout(slow, t, action, Lsn(42))
                .await
                .expect("the slow write is waited for");
            let failing = async {
                tokio::time::sleep(Duration::from_millis(60)).await;
                Err(Error::connection("socket closed"))
            };
            assert!(within_flush_timeout(failing, t, action, Lsn(42))
                .await
                .is_err());
        }
        let quick = async { Ok(()) };
        within_flush_timeout(quick, t, LsnFlushTimeoutAction::Fail, Lsn(42))
            .await
            .unwrap();
    }
}
