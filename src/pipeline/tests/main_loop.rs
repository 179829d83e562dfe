//! The main loop ([`crate::pipeline::stream::run`]) itself, on synthetic pgoutput input, with
//! the memory sink and the fixture catalog: the stop, offsets-timer, heartbeat and input
//! branches, a sink failure in the middle of a unit, and acknowledgements out of order. The
//! loop runs in a task of its own, as in a connector; the test feeds its input queue, sees the
//! sink through a [`MemoryRemote`], and the offsets through the file store.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::*;
use crate::error::Error;
use crate::pg::pgoutput::Relation;
use crate::pg::setup::ServerInfo;
use crate::pg::stream::StreamEvent;
use crate::pipeline::offsets::{OffsetSaver, OffsetStorage};
use crate::pipeline::shutdown;
use crate::pipeline::startup::Started;
use crate::pipeline::stream::{self, StreamEnd, Streaming};
use crate::sink::memory::MemoryRemote;

/// How long a condition may take to hold.
const WAIT: Duration = Duration::from_secs(10);

type TestStarted = Started<MemorySink, FixtureCatalog>;

/// The OID of the one table of the synthetic stream, `public.t (id int4 PRIMARY KEY)`.
const REL: u32 = 16_384;

/// A started run on the memory sink, streaming from LSN 0, with offsets in a file under a
/// temporary directory.
struct Run {
    input: mpsc::Sender<Vec<StreamEvent>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<Ended>,
    remote: MemoryRemote,
    tracker: Arc<AckTracker>,
    stored: Arc<std::sync::atomic::AtomicU64>,
    _dir: tempfile::TempDir,
}

impl Run {
    /// Starts the main loop with the test defaults plus `extra`, acknowledging per `mode`;
    /// `fail` makes the sink's first record fail with it.
    async fn start(extra: &[(&str, &str)], mode: AckMode, fail: Option<Error>) -> Run {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("offsets.json");
        let file = file.to_string_lossy().into_owned();
        let mut settings = vec![("offset.storage.file.filename", file.as_str())];
        settings.extend_from_slice(extra);
        let config = test_config(&settings);
        let tracker = Arc::new(AckTracker::new(Lsn::ZERO));
        let mut sink = MemorySink::new(tracker.clone(), mode);
        if let Some(e) = fail {
            sink.fail_next(e);
        }
        let remote = sink.remote();
        let counters = Arc::new(Counters::default());
        let start = ProcessorStart::default();
        let catalog = FixtureCatalog::new();
        let processor = Processor::new(config.clone(), catalog, sink, counters.clone(), start)
            .expect("processor");
        let storage = OffsetStorage::open(&config).await.expect("offsets file");
        let offsets = OffsetSaver::new(storage, Lsn::ZERO, None, false);
        let stored = offsets.stored();
        let started = Started {
            watchdog: crate::pipeline::watchdog::start(tracker.clone()),
            processor,
            server: ServerInfo {
                version_num: 150_000,
                wal_level: "logical".into(),
                in_recovery: false,
            },
            offsets,
            replication: None,
            start_lsn: Lsn::ZERO,
            snapshot: None,
        };
        let (input, rx) = mpsc::channel(4);
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run_loop(
            started,
            Streaming::from_channel(rx, counters),
            stop_rx,
        ));
        Run {
            input,
            stop,
            task,
            remote,
            tracker,
            stored,
            _dir: dir,
        }
    }

    /// Queues `events` as one chunk, as the reader does.
    async fn feed(&self, events: Vec<StreamEvent>) {
        self.input.send(events).await.expect("the loop takes input");
    }

    /// The end of the newest transaction the offsets store holds.
    fn stored(&self) -> Lsn {
        Lsn(self.stored.load(Ordering::Acquire))
    }

    /// Requests a stop and returns how the loop ended and the run it leaves.
    async fn stop(self) -> (Result<StreamEnd>, TestStarted) {
        let (end, started, _) = self.stop_with_stream().await;
        (end, started)
    }

    /// Requests a stop and returns how the loop ended, the run and its stream (to finish).
    async fn stop_with_stream(self) -> Ended {
        self.stop.send(true).expect("the loop listens");
        joined(self.task).await
    }

    /// Waits for the loop to end by itself.
    async fn end(self) -> (Result<StreamEnd>, TestStarted) {
        let (end, started, _) = joined(self.task).await;
        (end, started)
    }
}

/// Waits (up to [`WAIT`]) for the loop's task to end.
async fn joined(task: JoinHandle<Ended>) -> Ended {
    tokio::time::timeout(WAIT, task)
        .await
        .expect("the loop ends in time")
        .expect("the loop task")
}

/// How the loop ended, the run it leaves, and its stream.
type Ended = (Result<StreamEnd>, TestStarted, Streaming);

async fn run_loop(
    mut started: TestStarted,
    mut streaming: Streaming,
    mut stop: watch::Receiver<bool>,
) -> Ended {
    let end = stream::run(&mut started, &mut streaming, &mut stop).await;
    (end, started, streaming)
}

/// Waits until `f` holds, naming `what` when it does not within [`WAIT`].
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn message(lsn: u64, message: Message) -> StreamEvent {
    StreamEvent::Message {
        lsn: Lsn(lsn),
        message,
        size: 0,
    }
}

/// The table's shape, as pgoutput sends it before the table's first change.
fn relation() -> Message {
    Message::Relation(Relation {
        id: REL,
        namespace: "public".into(),
        name: "t".into(),
        replica_identity: b'd',
        columns: vec![RelationColumn {
            is_key: true,
            name: "id".into(),
            type_oid: 23,
            type_modifier: -1,
        }],
    })
}

/// The end LSN of synthetic transaction `n` (1, 2, ...).
fn end_of(n: u64) -> Lsn {
    Lsn(n * 1_000 + 950)
}

/// Transaction `n` (at LSNs `n * 1000` onwards) inserting `ids`, without its commit when
/// `commit` is false; the first transaction carries the Relation message.
fn transaction(n: u64, ids: &[i32], commit: bool) -> Vec<StreamEvent> {
    let base = n * 1_000;
    let commit_lsn = Lsn(base + 900);
    let mut out = vec![message(
        base,
        Message::Begin {
            final_lsn: commit_lsn,
            commit_time: 0,
            xid: 700 + n as u32,
        },
    )];
    if n == 1 {
        out.push(message(base + 1, relation()));
    }
    for (i, id) in ids.iter().enumerate() {
        let new = vec![TupleValue::Text(id.to_string().into_bytes().into())];
        let insert = Message::Insert {
            relation_id: REL,
            new,
        };
        out.push(message(base + 10 + i as u64, insert));
    }
    if commit {
        let end = Message::Commit {
            flags: 0,
            commit_lsn,
            end_lsn: end_of(n),
            commit_time: 0,
        };
        out.push(message(base + 900, end));
    }
    out
}

/// The records the loop sent to the topic of `public.t`.
fn row_records(started: &mut TestStarted) -> Vec<Json> {
    let sink = started.processor.sink();
    sink.records
        .iter()
        .filter(|r| r.topic == "cap.public.t")
        .map(|r| json(&r.value))
        .collect()
}

#[tokio::test]
async fn committed_transactions_go_out_in_order_and_the_offsets_timer_stores_them() {
    let run = Run::start(
        &[("offset.flush.interval.ms", "50")],
        AckMode::Immediate,
        None,
    )
    .await;
    for n in 1..=3 {
        run.feed(transaction(n, &[n as i32 * 10, n as i32 * 10 + 1], true))
            .await;
    }
    until("the offsets to store the third transaction", || {
        run.stored() == end_of(3)
    })
    .await;
    let (end, mut started) = run.stop().await;
    assert_eq!(end.expect("a stop"), StreamEnd::Stopped);
    let ids: Vec<i64> = row_records(&mut started)
        .iter()
        .map(|v| v["after"]["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(ids, [10, 11, 20, 21, 30, 31]);
}

/// A stop while a transaction is half sent: the run's end (the shutdown that follows the loop)
/// stores and confirms the transactions before it, and nothing of the open one.
#[tokio::test]
async fn a_stop_while_a_transaction_is_half_sent_stores_only_what_came_before() {
    let run = Run::start(&[], AckMode::Manual, None).await;
    run.feed(transaction(1, &[1], true)).await;
    run.feed(transaction(2, &[2, 3], false)).await;
    until("the half transaction's records to be sent", || {
        run.remote.sent().len() == 3
    })
    .await;
    let (tracker, remote) = (run.tracker.clone(), run.remote.clone());
    let stored = run.stored.clone();
    let (end, mut started, streaming) = run.stop_with_stream().await;
    assert_eq!(end.as_ref().expect("a stop"), &StreamEnd::Stopped);
    remote.ack_all();
    shutdown::drain(&mut started, streaming, Ok(()))
        .await
        .expect("a clean stop");
    assert_eq!(
        Lsn(stored.load(Ordering::Acquire)),
        end_of(1),
        "stored at the stop"
    );
    assert_eq!(
        tracker.flushable(),
        end_of(1),
        "the open transaction's records were acknowledged, but it never committed"
    );
    assert!(tracker.failure().is_none());
}

/// A stop request that cancels a send blocked on a full sink (here a heartbeat's) abandons
/// that unit: the transaction before it still completes when its acknowledgement arrives, and
/// the shutdown stores it; the stop is clean.
#[tokio::test]
async fn a_stop_that_cancels_a_blocked_send_still_confirms_the_units_before_it() {
    let run = Run::start(&[("heartbeat.interval.ms", "50")], AckMode::Manual, None).await;
    run.feed(transaction(1, &[1], true)).await;
    until("the first transaction's record", || {
        !run.remote.sent().is_empty()
    })
    .await;
    run.remote.pause();
    until("a heartbeat blocked on the sink", || {
        run.remote.waiting() == 1
    })
    .await;
    let (tracker, remote) = (run.tracker.clone(), run.remote.clone());
    let stored = run.stored.clone();
    let (end, mut started, streaming) = run.stop_with_stream().await;
    assert_eq!(end.as_ref().expect("a stop"), &StreamEnd::Stopped);
    assert!(
        tracker.abandoned().is_some(),
        "the heartbeat's unit was left open"
    );
    remote.resume();
    assert!(
        remote.ack(0),
        "the first transaction's record waits for its acknowledgement"
    );
    assert_eq!(tracker.flushable(), end_of(1));
    shutdown::drain(&mut started, streaming, Ok(()))
        .await
        .expect("a clean stop");
    assert_eq!(
        Lsn(stored.load(Ordering::Acquire)),
        end_of(1),
        "stored at the stop"
    );
    assert!(
        tracker.failure().is_none(),
        "abandoning a unit is not a failure"
    );
}

/// A unit left open while the stream goes on (a defect: only a stop or an error may leave
/// one) ends the loop with an error naming it, instead of stalling the confirmed position.
#[tokio::test]
async fn a_unit_left_open_while_the_stream_goes_on_ends_the_loop() {
    let run = Run::start(&[], AckMode::Immediate, None).await;
    run.tracker.abandon(crate::offsets::ack::AckToken(0));
    run.feed(transaction(1, &[1], true)).await;
    let (end, _) = run.end().await;
    let e = end.expect_err("the loop ends with an error");
    assert_eq!(e.kind(), ErrorKind::Internal);
    assert!(e.message().contains("left open"), "{e}");
}

#[tokio::test]
async fn the_offsets_timer_is_not_starved_by_a_sustained_stream() {
    let run = Run::start(
        &[("offset.flush.interval.ms", "20")],
        AckMode::Immediate,
        None,
    )
    .await;
    let input = run.input.clone();
    let (done_tx, mut done) = watch::channel(0u64);
    let feeder = tokio::spawn(async move {
        // Far more input than the queue holds: the loop always has input waiting.
        for n in 1..=20_000u64 {
            if input.send(transaction(n, &[n as i32], true)).await.is_err() {
                break;
            }
            let _ = done_tx.send(n);
        }
    });
    let mut stores = Vec::new();
    until("three offsets writes during the stream", || {
        let lsn = run.stored();
        if lsn > Lsn::ZERO && stores.last() != Some(&lsn) {
            stores.push(lsn);
        }
        stores.len() >= 3
    })
    .await;
    let fed = *done.borrow_and_update();
    assert!(
        fed < 20_000 && !feeder.is_finished(),
        "the offsets were written while input was still waiting (fed {fed})"
    );
    feeder.abort();
    let (end, _) = run.stop().await;
    assert_eq!(end.expect("a stop"), StreamEnd::Stopped);
}

/// Heartbeats go out on their own timer while nothing arrives: twelve at 50 ms take well under
/// a second, where the offsets timer alone (which wakes the loop every second) would take
/// twelve, past [`WAIT`].
#[tokio::test]
async fn heartbeats_go_out_on_their_interval_while_nothing_arrives() {
    let run = Run::start(&[("heartbeat.interval.ms", "50")], AckMode::Immediate, None).await;
    run.feed(transaction(1, &[1], true)).await;
    until("twelve heartbeats on the idle stream", || {
        let sent = run.remote.sent();
        let beats = sent
            .iter()
            .filter(|(topic, _)| topic == "__debezium-heartbeat.cap");
        beats.count() >= 12
    })
    .await;
    let (end, _) = run.stop().await;
    assert_eq!(end.expect("a stop"), StreamEnd::Stopped);
}

#[tokio::test]
async fn a_sink_failure_in_the_middle_of_a_unit_ends_the_loop_with_its_kind() {
    for failure in [
        Error::connection("the broker timed the record out"),
        Error::kafka("the record is too large"),
    ] {
        let kind = failure.kind();
        let run = Run::start(&[], AckMode::Immediate, Some(failure)).await;
        run.feed(transaction(1, &[1, 2, 3], true)).await;
        let tracker = run.tracker.clone();
        let (end, mut started) = run.end().await;
        let e = end.expect_err("the failure ends the loop");
        assert_eq!(e.kind(), kind, "{e}");
        assert_eq!(
            tracker.flushable(),
            Lsn::ZERO,
            "nothing of the unit is confirmed"
        );
        assert_eq!(
            row_records(&mut started).len(),
            1,
            "no record is sent after the failed one"
        );
    }
}

#[tokio::test]
async fn acknowledgements_out_of_order_confirm_only_the_acknowledged_prefix() {
    let run = Run::start(&[("offset.flush.interval.ms", "20")], AckMode::Manual, None).await;
    for n in 1..=3 {
        run.feed(transaction(n, &[n as i32], true)).await;
    }
    until("three records sent", || run.remote.sent().len() == 3).await;
    assert!(run.remote.ack(2) && run.remote.ack(1));
    tokio::task::yield_now().await;
    assert_eq!(
        run.tracker.flushable(),
        Lsn::ZERO,
        "the first is not acknowledged"
    );
    assert_eq!(run.stored(), Lsn::ZERO);
    assert!(run.remote.ack(0));
    assert_eq!(run.tracker.flushable(), end_of(3));
    until("the offsets to store all three", || {
        run.stored() == end_of(3)
    })
    .await;
    let (end, _) = run.stop().await;
    assert_eq!(end.expect("a stop"), StreamEnd::Stopped);
}

#[tokio::test]
async fn a_stop_request_is_taken_before_input_that_waits() {
    let run = Run::start(&[], AckMode::Immediate, None).await;
    run.stop.send(true).expect("the loop listens");
    // Input that arrives with the stop request is not taken in.
    let _ = run.input.try_send(transaction(1, &[1], true));
    let (end, mut started) = run.end().await;
    assert_eq!(end.expect("a stop"), StreamEnd::Stopped);
    assert!(row_records(&mut started).is_empty());
}

#[tokio::test]
async fn the_loop_ends_when_the_reader_ends_after_taking_everything_queued() {
    let run = Run::start(&[], AckMode::Immediate, None).await;
    run.feed(transaction(1, &[1], true)).await;
    run.feed(transaction(2, &[2], true)).await;
    // The reader ends: its queue closes (no stop is requested).
    let Run {
        input,
        task,
        stop: _stop,
        _dir,
        ..
    } = run;
    drop(input);
    let (end, mut started, _) = joined(task).await;
    assert_eq!(end.expect("the reader ended"), StreamEnd::Stopped);
    assert_eq!(row_records(&mut started).len(), 2);
    assert_eq!(started.processor.tracker().flushable(), end_of(2));
}

#[tokio::test]
async fn a_keepalive_on_an_idle_stream_moves_the_confirmable_position() {
    let run = Run::start(&[], AckMode::Immediate, None).await;
    run.feed(transaction(1, &[1], true)).await;
    let wal_end = Lsn(5_000);
    run.feed(vec![StreamEvent::Keepalive { wal_end }]).await;
    until("the keepalive's position to be confirmable", || {
        run.tracker.flushable() == wal_end
    })
    .await;
    let (end, _) = run.stop().await;
    assert_eq!(end.expect("a stop"), StreamEnd::Stopped);
}
