//! Streaming: the main loop.
//!
//! [`start`] issues START_REPLICATION and spawns the replication reader
//! ([`crate::pg::stream::run_reader`]), which owns the socket, answers keepalives and sends
//! status updates with the tracker's flushable LSN on a timer, whatever this loop is doing.
//! [`run`] is the loop that takes the reader's output through a bounded queue and hands it
//! to the processor. It is a biased `select!`; its branches, in priority order:
//! 1. a stop request: ends the loop before anything else is taken in;
//! 2. the offsets timer: the offsets (a file, or a record Kafka acknowledges) must not
//!    starve under a busy stream;
//! 3. the heartbeat timer: wakes the loop while nothing arrives, so scheduled heartbeats go
//!    out on an idle stream;
//! 4. new input from the reader, last: everything above must stay responsive however much
//!    input waits. Handling one message may wait on Kafka (backpressure) for as long as the
//!    broker is away; a stop request cancels that wait (the partial transaction is never
//!    confirmed, so it is sent again after a restart).
//!
//! After each turn the loop sends a heartbeat if one is due (Debezium checks after every
//! event) and stops at the first delivery failure, or at a unit left open (see
//! [`crate::sink::Unit`]).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::config::keys::SLOT_STREAM_PARAMS;
use crate::config::ConnectorConfig;
use crate::error::{Error, Result};
use crate::lsn::Lsn;
use crate::pg::setup;
use crate::pg::stream::{queue_shape, run_reader, QueueBytes, ReaderSettings, StreamEvent};
use crate::pg::wire::{ReplicationReader, ReplicationWriter, WireConnection};
use crate::sink::Sink;

use super::fence::FenceEvent;
use super::processor::Processor;
use super::relations::Catalog;
use super::startup::Started;
use super::SHUTDOWN_FLUSH_TIMEOUT;

/// The longest a completed transaction waits to be stored: only stored transactions are
/// confirmed to PostgreSQL, and they should be within about a second.
const OFFSETS_AT_LEAST_EVERY: Duration = Duration::from_secs(1);

/// The least silence (while waiting on the socket, replies asked for) after which the
/// replication connection is taken for dead.
const MIN_DEAD_AFTER: Duration = Duration::from_secs(10);

/// A running replication reader and the queue from it.
pub struct Streaming {
    input: mpsc::Receiver<Vec<StreamEvent>>,
    /// The rest of the chunk taken from `input` last.
    chunk: VecDeque<StreamEvent>,
    bytes: Arc<QueueBytes>,
    reader_shutdown: watch::Sender<bool>,
    drained: watch::Sender<bool>,
    reader: JoinHandle<Result<()>>,
    /// Items per chunk of `input`, for the queue gauge.
    chunk_len: usize,
    counters: Arc<super::Counters>,
    /// The `kafka` and `file` signal channels' readers, for as long as the stream runs.
    _signal_channels: super::signals::SignalChannels,
}

impl Streaming {
    /// Stops the reader from taking in more; it keeps sending status updates until
    /// [`Streaming::drained`] (or its drain timeout).
    pub fn stop_reading(&self) {
        let _ = self.reader_shutdown.send(true);
    }

    /// Tells the reader everything that will be acknowledged was: it sends the final status
    /// update and ends the stream.
    pub fn drained(&self) {
        let _ = self.drained.send(true);
    }

    /// The next item from the reader: from the chunk taken last, else from the next chunk
    /// (`None`: the reader ended). Cancel-safe: nothing is taken until it is returned.
    async fn next(&mut self) -> Option<StreamEvent> {
        loop {
            if let Some(ev) = self.chunk.pop_front() {
                return Some(ev);
            }
            self.chunk = self.input.recv().await?.into();
            // Events waiting: this chunk and the chunks behind it (counted full).
            let queued = self.input.len() * self.chunk_len + self.chunk.len();
            self.counters.set_queued(queued);
            self.counters
                .set_queue_bytes(self.bytes.used(), self.bytes.high_water());
        }
    }

    /// True when no item from the reader waits.
    fn idle(&self) -> bool {
        self.chunk.is_empty() && self.input.is_empty()
    }

    /// A stream fed by `input` instead of a replication reader, for the main loop's tests:
    /// the loop ends when `input` closes, as it does when the reader ends.
    #[cfg(test)]
    pub(super) fn from_channel(
        input: mpsc::Receiver<Vec<StreamEvent>>,
        counters: Arc<super::Counters>,
    ) -> Streaming {
        let (reader_shutdown, _) = watch::channel(false);
        let (drained, _) = watch::channel(false);
        Streaming {
            input,
            chunk: VecDeque::new(),
            bytes: Arc::new(QueueBytes::new(usize::MAX)),
            reader_shutdown,
            drained,
            reader: tokio::spawn(async { Ok(()) }),
            chunk_len: 1,
            counters,
            _signal_channels: Default::default(),
        }
    }

    /// Waits for the reader to end and returns its result.
    pub async fn join_reader(self) -> Result<()> {
        self.reader.await.map_err(|e| {
            let msg = format!("replication reader task failed: {e}");
            Error::new(crate::error::ErrorKind::Internal, msg)
        })?
    }
}

/// Starts replication from the slot at the run's start position and spawns the reader.
pub async fn start<S: Sink, C: Catalog>(
    config: &ConnectorConfig,
    started: &mut Started<S, C>,
    mut repl: WireConnection,
) -> Result<Streaming> {
    let timing = reader_timing(config, &mut repl).await?;
    let status_interval = timing.status_interval;
    let (reader, writer) = start_replication(config, started, repl, status_interval).await?;
    let (chunk_len, chunks) = queue_shape(config.max_queue_size);
    let (tx, input) = mpsc::channel::<Vec<StreamEvent>>(chunks);
    let bytes = Arc::new(QueueBytes::new(config.memory.reader_queue));
    let (reader_shutdown, reader_shutdown_rx) = watch::channel(false);
    let (drained, drained_rx) = watch::channel(false);
    let tracker = started.processor.tracker().clone();
    let stored = started.offsets.stored();
    let counters = started.processor.counters.clone();
    // lsn.flush.mode=manual: status updates keep flowing but confirm nothing (an invalid
    // flush position, which the server ignores), as Debezium's driver then sends.
    let manual = config.lsn_flush_manual;
    if manual {
        tracing::info!(slot = %config.slot_name,
            "lsn.flush.mode=manual: pgcdc does not confirm positions to the slot; something else must advance it");
    }
    let confirmable = move || {
        if manual {
            return Lsn::ZERO;
        }
        let lsn = tracker.confirmable(Lsn(stored.load(Ordering::Acquire)));
        counters.set_confirmed(lsn);
        lsn
    };
    let reader = super::spawn(run_reader(
        reader,
        writer,
        tx,
        bytes.clone(),
        Arc::new(confirmable),
        ReaderSettings {
            status_interval,
            dead_after: timing.dead_after,
            drain_timeout: SHUTDOWN_FLUSH_TIMEOUT,
            flush_timeout: config.lsn_flush_timeout,
            flush_timeout_action: config.lsn_flush_timeout_action,
            chunk_len,
            streaming: config.pgoutput_streaming.clone(),
            server_version: started.server.version_num,
        },
        reader_shutdown_rx,
        drained_rx,
    ));
    Ok(Streaming {
        input,
        chunk: VecDeque::new(),
        bytes,
        reader_shutdown,
        drained,
        reader,
        chunk_len,
        counters: started.processor.counters.clone(),
        _signal_channels: super::signals::start_channels(
            config,
            started.processor.counters.signals(),
        ),
    })
}

/// Sends `START_REPLICATION` with the pgoutput options the config asks for, and logs it.
async fn start_replication<S: Sink, C: Catalog>(
    config: &ConnectorConfig,
    started: &mut Started<S, C>,
    repl: WireConnection,
    status_interval: Duration,
) -> Result<(ReplicationReader, ReplicationWriter)> {
    // Logical decoding messages exist in pgoutput from PostgreSQL 14 (and binary tuples,
    // which start-up refuses on older servers).
    let options = setup::PgoutputOptions {
        messages: started.server.version_num >= 140000,
        binary: config.pgoutput_binary,
        streaming: config.pgoutput_streaming.is_some(),
        extra: config.slot_stream_params.clone(),
    };
    let binary = options.binary;
    let command = setup::start_replication_command(
        &config.slot_name,
        started.start_lsn,
        &config.publication_name,
        options,
    );
    let (reader, writer) = repl.start_replication(&command).await.map_err(|e| {
        if config.slot_stream_params.is_empty() {
            e
        } else {
            let names: Vec<&str> = config
                .slot_stream_params
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            e.with_context(&format!(
                "{SLOT_STREAM_PARAMS} passes {} to pgoutput: check that this server knows them",
                names.join(", ")
            ))
        }
    })?;
    started.processor.counters.set_connected(true);
    tracing::info!(
        slot = %config.slot_name,
        lsn = %started.start_lsn,
        binary_tuples = binary,
        streaming = config.pgoutput_streaming.is_some(),
        status_interval_ms = status_interval.as_millis() as u64,
        "streaming started"
    );
    Ok((reader, writer))
}

/// `status.update.interval.ms`, never longer than half the server's `wal_sender_timeout`.
/// The reader's status interval and dead-connection limit.
struct ReaderTiming {
    status_interval: Duration,
    dead_after: Duration,
}

/// `status.update.interval.ms`, never longer than half the server's `wal_sender_timeout`; and
/// the silence after which the connection is taken for dead: one and a half
/// `wal_sender_timeout` (a walsender replaying a large transaction it filters out reads our
/// replies only every half `wal_sender_timeout`), at least three status intervals and
/// [`MIN_DEAD_AFTER`]; 60 s at least when the server has no timeout.
async fn reader_timing(
    config: &ConnectorConfig,
    repl: &mut WireConnection,
) -> Result<ReaderTiming> {
    let r = repl.simple_query("SHOW wal_sender_timeout").await?;
    let wal_sender_timeout = r
        .rows
        .first()
        .and_then(|row| row.first())
        .and_then(|v| v.as_deref())
        .and_then(setup::parse_pg_duration_ms)
        .unwrap_or(60_000);
    let mut interval = config.status_update_interval;
    let server_limit = if wal_sender_timeout > 0 {
        interval = interval.min(Duration::from_millis((wal_sender_timeout / 2).max(1)));
        Duration::from_millis(wal_sender_timeout.saturating_mul(3) / 2)
    } else {
        Duration::from_secs(60)
    };
    Ok(ReaderTiming {
        status_interval: interval,
        dead_after: server_limit.max(interval * 3).max(MIN_DEAD_AFTER),
    })
}

/// Why the main loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// A stop was requested, or the reader ended.
    Stopped,
    /// The first pass of a snapshot on an existing slot reached its fence (see
    /// [`super::fence`]): the rest of this stream belongs to a later pass.
    FenceReached,
}

/// What ended a turn of the loop.
enum Turn {
    /// Go on.
    Continue,
    /// A stop was requested, or the reader ended: leave the loop.
    Stop,
}

/// The main loop (see the module docs for its branches). Returns when a stop is requested,
/// the reader ends or a fence is reached; errors are the processor's and the sink's.
pub async fn run<S: Sink, C: Catalog>(
    started: &mut Started<S, C>,
    streaming: &mut Streaming,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<StreamEnd> {
    let interval = started.processor.config.offset_flush_interval;
    let mut offsets_tick = tokio::time::interval(interval.min(OFFSETS_AT_LEAST_EVERY));
    offsets_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let processor = &mut started.processor;
    let inbox = processor.counters.signals().clone();
    let mut signals = inbox.receiver().await;
    loop {
        let heartbeat_due = processor.heartbeat_due();
        let between_transactions = !processor.in_transaction();
        let turn = tokio::select! {
            biased;
            // 1. A stop request.
            _ = shutdown.changed() => {
                tracing::info!("stop requested");
                Turn::Stop
            }
            // 2. Offsets on their interval.
            _ = offsets_tick.tick() => {
                started.offsets.save_completed_in_background(processor.tracker()).await?;
                started.offsets.verify_in_background().await?;
                Turn::Continue
            }
            // 3. A scheduled heartbeat while nothing arrives (sent below).
            _ = sleep_until(heartbeat_due), if heartbeat_due.is_some() => Turn::Continue,
            // 4. A signal of another channel than the signal table.
            Some(signal) = signals.recv(), if between_transactions => {
                handle_signal(processor, signal, shutdown).await?
            }
            // 5. Input from the reader.
            ev = streaming.next() => match ev {
                None => Turn::Stop,
                Some(ev) if processor.snapshot_boundary(&ev) => {
                    // The first event a snapshot taken meanwhile does not contain: its rows
                    // first.
                    let turn = at_snapshot_boundary(processor, &ev, shutdown).await?;
                    streaming.chunk.push_front(ev);
                    turn
                }
                Some(ev) => handle_input(processor, ev, &streaming.bytes, shutdown).await?,
            },
        };
        if let Turn::Stop = turn {
            return Ok(StreamEnd::Stopped);
        }
        match processor.take_fence_event() {
            Some(FenceEvent::Reached) => return Ok(StreamEnd::FenceReached),
            Some(FenceEvent::Passed { marker, position }) => {
                started.offsets.complete_snapshot_after(marker, position);
            }
            None => {}
        }
        if let Turn::Stop = heartbeat_if_due(processor, shutdown).await? {
            return Ok(StreamEnd::Stopped);
        }
        if processor.blocking_due() {
            processor.start_blocking().await?;
        }
        if let Turn::Stop = boundary(processor, streaming.idle(), shutdown).await? {
            return Ok(StreamEnd::Stopped);
        }
        if let Some(f) = processor.sink().failure() {
            return Err(f.copy());
        }
        if let Some(unit) = processor.tracker().abandoned() {
            return Err(left_open(unit));
        }
    }
}

/// The error when a unit was dropped open while the stream went on (a stop or an error ends
/// the loop before this is checked, so this is a defect): nothing from it on could ever be
/// confirmed, so the run ends instead of stalling.
fn left_open(unit: crate::offsets::ack::AckToken) -> Error {
    Error::new(
        crate::error::ErrorKind::Internal,
        format!(
            "unit {} was left open (neither committed nor completed) while the stream went on: nothing from it on could be confirmed; a restart sends it again",
            unit.0
        ),
    )
}

/// Sleeps until `at` (`None`: for ever; the branch is disabled then anyway).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Hands one item from the reader to the processor; a stop request cancels a handler that
/// waits on Kafka.
async fn handle_input<S: Sink, C: Catalog>(
    processor: &mut Processor<S, C>,
    ev: StreamEvent,
    bytes: &QueueBytes,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Turn> {
    match ev {
        StreamEvent::Keepalive { wal_end } => {
            processor.keepalive(wal_end);
            Ok(Turn::Continue)
        }
        StreamEvent::Message { lsn, message, size } => {
            let r = tokio::select! {
                biased;
                _ = shutdown.changed() => {
                    tracing::info!("stop requested while a change waited on Kafka or the schema registry");
                    bytes.release(size);
                    return Ok(Turn::Stop);
                }
                r = processor.handle(lsn, message) => r,
            };
            bytes.release(size);
            r.map(|()| Turn::Continue)
        }
    }
}

/// Reads a blocking snapshot's tables or sends a read-only incremental chunk (see
/// [`super::blocking`]); a stop request cancels it (its rows are never confirmed).
async fn at_snapshot_boundary<S: Sink, C: Catalog>(
    processor: &mut Processor<S, C>,
    ev: &StreamEvent,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Turn> {
    tokio::select! {
        biased;
        _ = shutdown.changed() => {
            tracing::info!("stop requested while a snapshot read its rows");
            Ok(Turn::Stop)
        }
        r = processor.at_snapshot_boundary(ev) => r.map(|()| Turn::Continue),
    }
}

/// Acts on a signal from the inbox; a stop request cancels a chunk read that waits on
/// Kafka.
async fn handle_signal<S: Sink, C: Catalog>(
    processor: &mut Processor<S, C>,
    signal: crate::event::signal::Signal,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Turn> {
    tracing::info!(id = %signal.id, kind = %signal.kind, channel = signal.channel.name(), "signal received");
    tokio::select! {
        biased;
        _ = shutdown.changed() => Ok(Turn::Stop),
        r = processor.signal(signal, None) => r.map(|()| Turn::Continue),
    }
}

/// Lets the sink end its Kafka transaction between turns (exactly-once; `idle`: no input
/// waits); a stop request cancels a commit that waits on Kafka (nothing of it is confirmed).
async fn boundary<S: Sink, C: Catalog>(
    processor: &mut Processor<S, C>,
    idle: bool,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Turn> {
    tokio::select! {
        biased;
        _ = shutdown.changed() => {
            tracing::info!("stop requested while committing a Kafka transaction");
            Ok(Turn::Stop)
        }
        r = processor.sink().boundary(idle) => r.map(|()| Turn::Continue),
    }
}

/// Sends a heartbeat when one is due; a stop request cancels a send that waits on Kafka.
async fn heartbeat_if_due<S: Sink, C: Catalog>(
    processor: &mut Processor<S, C>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Turn> {
    if processor.heartbeat_due().is_none() {
        return Ok(Turn::Continue);
    }
    tokio::select! {
        biased;
        _ = shutdown.changed() => {
            tracing::info!("stop requested while sending a heartbeat");
            Ok(Turn::Stop)
        }
        r = processor.heartbeat(false) => r.map(|()| Turn::Continue),
    }
}
