//! The crash loop: pgcdc (the binary) is killed with SIGKILL at random moments while a writer
//! commits inserts, updates, deletes, primary-key changes and outbox rows, in transactions
//! of 1 to 10,000 rows; then a checker reads every topic and compares it, key by key and
//! version by version, with what the writer committed.
//!
//! The first kills land in snapshots, on purpose: each waits until the process's `/metrics`
//! say its snapshot is reading the tables. The first lands in the initial snapshot; the next
//! ones in the snapshots the following starts take again on the existing slot, and the slot's
//! confirmed position must move forward at each (the transactions a snapshot's first pass
//! publishes are confirmed before its tables are read), or a crash loop landing in snapshots
//! would replay ever more. The other kills land right after a big transaction commits, at
//! random, while the broker is paused, and while an incremental snapshot reads its chunks
//! (each such kill follows an `execute-snapshot` signal for `a` and `b` written to the signal
//! table; the restarted run resumes the snapshot from the offsets). Per table it reports:
//! - **lost**: a committed version that never arrived (must be 0). Versions a snapshot
//!   collapses (the row's first version, when a later one arrived) are not lost;
//! - **out of order**: a key whose versions first arrive out of commit order (must be 0);
//! - **duplicated**: a version that arrived more than once. A duplicate is allowed when it
//!   was published again after a kill, from a transaction that ended after the position
//!   PostgreSQL had confirmed at that kill (or by a snapshot taken again), or when an
//!   incremental snapshot read it (reading the current state again is what it is asked for);
//!   any other is a failure.
//!
//! In exactly-once mode (`exactly.once.source.support=enabled`, offsets in a topic, the
//! checker reading committed records only) no duplicate at all is allowed.
//!
//! With streamed transactions (`pgcdc.pgoutput.streaming=true`, the database's
//! `logical_decoding_work_mem` at 64 kB and pgcdc's memory bound at 256 KiB, so that the big
//! transactions are streamed by the server and held by pgcdc partly in spill files), the kills
//! that follow a big transaction land from its start on: while the server streams it, while
//! pgcdc holds it, and while it is published.
//!
//! It also reports the output volume: records written to the topics (aborted ones included)
//! and records a consumer reads, per change committed, so that a crash loop that publishes
//! ever more (a livelock) shows as a number.
//!
//! CI runs about 200,000 changes with 20 kills, in each mode. `scripts/crash-loop.sh` runs the long
//! version (1,000,000 changes, 100 kills); `PGCDC_TEST_CRASH_CHANGES`, `PGCDC_TEST_CRASH_KILLS`,
//! `PGCDC_TEST_CRASH_SEED` and `PGCDC_TEST_CRASH_ROWS` set the figures. The snapshots are read
//! by one connection in at-least-once mode and by two (`snapshot.max.threads=2`) in exactly-once
//! mode; `PGCDC_TEST_CRASH_SNAPSHOT_THREADS` sets it for both.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio_postgres::Client;

use crate::harness::*;

const T: Duration = Duration::from_secs(300);
const TABLES: [&str; 3] = ["a", "b", "ob"];

/// `GET path` on 127.0.0.1:`port` (HTTP/1.0, no keep-alive): the body, or `None` when the
/// server does not answer (yet).
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
}

/// The sum of the samples in Prometheus text `text` whose lines start with `prefix` (a metric
/// name and the opening brace of its labels); `None` when there is none.
fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(|a, b| a + b)
}

/// The run's figures, from the environment.
#[derive(Debug, Clone, Copy)]
struct Params {
    changes: u64,
    kills: u32,
    /// The first kills, each inside a snapshot.
    snapshot_kills: u32,
    seed: u64,
    rows: i64,
    /// `snapshot.max.threads`; 0: the mode's default.
    snapshot_threads: u64,
}

impl Params {
    fn from_env() -> Params {
        let var = |k: &str, d: u64| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        Params {
            changes: var("PGCDC_TEST_CRASH_CHANGES", 200_000),
            kills: var("PGCDC_TEST_CRASH_KILLS", 20) as u32,
            snapshot_kills: var("PGCDC_TEST_CRASH_SNAPSHOT_KILLS", 3) as u32,
            seed: var("PGCDC_TEST_CRASH_SEED", now),
            rows: var("PGCDC_TEST_CRASH_ROWS", 20_000) as i64,
            snapshot_threads: var("PGCDC_TEST_CRASH_SNAPSHOT_THREADS", 0),
        }
    }
}

/// A small xorshift generator: the run is repeatable from its seed (the writer's choices;
/// the kills' timing also depends on the machine).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// A change as the checker orders it: version `v` of a row is `2v`, its deletion `2v + 1`.
type Ordinal = i64;

fn ordinal(ver: i64, deleted: bool) -> Ordinal {
    2 * ver + i64::from(deleted)
}

/// What the writer committed.
#[derive(Default)]
struct Truth {
    /// Per (table, key): the ordinals committed, in commit order.
    keys: HashMap<(String, i64), Vec<Ordinal>>,
    /// Per transaction id: the WAL insert position right after its COMMIT returned (the end
    /// of its commit record, with one writer).
    ended_at: HashMap<i64, u64>,
    /// Keys that existed before the connector first started (their first version may be
    /// collapsed by a snapshot).
    preexisting: HashSet<(String, i64)>,
    changes: u64,
    /// The WAL insert position just before the COMMIT of the newest committed transaction:
    /// its commit record ends past it.
    last_commit_from: u64,
}

/// The writer's state: live keys per table and the next new key.
struct Writer {
    client: Client,
    rng: Rng,
    live: HashMap<&'static str, Vec<i64>>,
    next_id: i64,
    truth: Arc<Mutex<Truth>>,
    /// Told when a big transaction begins its writes.
    big_started: Arc<Notify>,
}

impl Writer {
    /// One transaction of a randomly chosen kind; returns the changes it made and whether it
    /// was big.
    async fn transaction(&mut self) -> (u64, bool) {
        self.client.batch_execute("BEGIN").await.unwrap();
        let xid: i64 = self
            .client
            .query_one("SELECT txid_current()", &[])
            .await
            .unwrap()
            .get(0);
        let table = if self.rng.below(2) == 0 { "a" } else { "b" };
        let roll = self.rng.below(100);
        let mut events: Vec<(String, i64, Ordinal)> = Vec::new();
        let mut big = false;
        if roll < 40 {
            let n = self.rng.range(1, 10) as usize;
            let ids = self.pick(table, n);
            events.extend(self.update(table, &ids).await);
        } else if roll < 55 {
            let n = self.rng.range(1, 20) as i64;
            events.extend(self.insert(table, n).await);
        } else if roll < 63 {
            let n = self.rng.range(1, 5) as usize;
            let ids = self.pick(table, n);
            for row in self
                .client
                .query(
                    &format!("DELETE FROM {table} WHERE id = ANY($1) RETURNING id, ver"),
                    &[&ids],
                )
                .await
                .unwrap()
            {
                events.push((
                    table.into(),
                    row.get(0),
                    ordinal(row.get::<_, i32>(1) as i64, true),
                ));
            }
            self.forget(table, &ids);
        } else if roll < 71 {
            // Primary-key changes: a delete of the old key and a create of the new one.
            let n = self.rng.range(1, 3) as usize;
            let ids = self.pick(table, n);
            for old in ids {
                let new = self.next_id;
                self.next_id += 1;
                let row = self
                    .client
                    .query_one(
                        &format!(
                            "UPDATE {table} SET id = $1, ver = ver + 1 WHERE id = $2 RETURNING ver"
                        ),
                        &[&new, &old],
                    )
                    .await
                    .unwrap();
                let ver = row.get::<_, i32>(0) as i64;
                events.push((table.into(), old, ordinal(ver - 1, true)));
                events.push((table.into(), new, ordinal(ver, false)));
                self.forget(table, &[old]);
                self.live.get_mut(table).unwrap().push(new);
            }
        } else if roll < 91 {
            // The outbox pattern: an event row inserted and deleted in the same transaction.
            let n = self.rng.range(1, 5) as i64;
            let first = self.next_id;
            self.next_id += n;
            self.client.execute(
                "INSERT INTO ob SELECT g, 1, 'event' FROM generate_series($1::int8, $2::int8) g",
                &[&first, &(first + n - 1)],
            )
            .await
            .unwrap();
            self.client
                .execute(
                    "DELETE FROM ob WHERE id BETWEEN $1 AND $2",
                    &[&first, &(first + n - 1)],
                )
                .await
                .unwrap();
            for id in first..first + n {
                events.push(("ob".into(), id, ordinal(1, false)));
                events.push(("ob".into(), id, ordinal(1, true)));
            }
        } else {
            big = true;
            self.big_started.notify_waiters();
            let n = self.rng.range(1000, 10_000) as i64;
            if self.rng.below(2) == 0 {
                events.extend(self.insert(table, n).await);
            } else {
                let ids = self.pick(table, n as usize);
                events.extend(self.update(table, &ids).await);
            }
        }
        let before_commit: i64 = self
            .client
            .query_one("SELECT (pg_current_wal_insert_lsn() - '0/0')::int8", &[])
            .await
            .unwrap()
            .get(0);
        self.client.batch_execute("COMMIT").await.unwrap();
        let ended: i64 = self
            .client
            .query_one("SELECT (pg_current_wal_insert_lsn() - '0/0')::int8", &[])
            .await
            .unwrap()
            .get(0);
        let n = events.len() as u64;
        let mut truth = self.truth.lock().unwrap();
        truth.ended_at.insert(xid & 0xFFFF_FFFF, ended as u64);
        truth.last_commit_from = before_commit as u64;
        truth.changes += n;
        for (t, id, o) in events {
            truth.keys.entry((t, id)).or_default().push(o);
        }
        (n, big)
    }

    /// Bumps the version of rows `ids` of `table`.
    async fn update(&self, table: &str, ids: &[i64]) -> Vec<(String, i64, Ordinal)> {
        let sql = format!("UPDATE {table} SET ver = ver + 1 WHERE id = ANY($1) RETURNING id, ver");
        let rows = self.client.query(&sql, &[&ids]).await.unwrap();
        rows.iter()
            .map(|row| {
                let ver = row.get::<_, i32>(1) as i64;
                (table.to_string(), row.get(0), ordinal(ver, false))
            })
            .collect()
    }

    async fn insert(&mut self, table: &'static str, n: i64) -> Vec<(String, i64, Ordinal)> {
        let first = self.next_id;
        self.next_id += n;
        self.client.execute(
            &format!("INSERT INTO {table} SELECT g, 1, md5(g::text) FROM generate_series($1::int8, $2::int8) g"),
            &[&first, &(first + n - 1)],
        )
        .await
        .unwrap();
        self.live.get_mut(table).unwrap().extend(first..first + n);
        (first..first + n)
            .map(|id| (table.to_string(), id, ordinal(1, false)))
            .collect()
    }

    /// Up to `n` distinct live keys of `table`.
    fn pick(&mut self, table: &str, n: usize) -> Vec<i64> {
        let live = &self.live[table];
        if live.is_empty() {
            return Vec::new();
        }
        let mut out = HashSet::new();
        for _ in 0..n.min(live.len()) * 2 {
            out.insert(live[self.rng.below(live.len() as u64) as usize]);
            if out.len() >= n {
                break;
            }
        }
        out.into_iter().collect()
    }

    fn forget(&mut self, table: &str, ids: &[i64]) {
        let gone: HashSet<i64> = ids.iter().copied().collect();
        self.live
            .get_mut(table)
            .unwrap()
            .retain(|id| !gone.contains(id));
    }
}

/// What one run of the connector left behind when it was killed.
struct Kill {
    /// The kill landed while the snapshot read the tables.
    in_snapshot: bool,
    /// [`Truth::last_commit_from`] when the run it ended was started: that run's snapshot
    /// contains the transaction, so its first pass confirms past this position.
    committed_before_start: u64,
    /// The slot's confirmed position after the kill.
    confirmed: u64,
    /// Each topic partition's end offset after the kill: later records come from later runs.
    ends: HashMap<(String, i32), i64>,
}

/// The connector process.
struct Process {
    config: std::path::PathBuf,
}

impl Process {
    /// Starts pgcdc with its REST API on a free port (for `/metrics`).
    fn spawn(&self) -> Running {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_pgcdc"))
            .args(["run", "--config", self.config.to_str().unwrap()])
            .env("PGCDC_LISTENERS", format!("http://127.0.0.1:{port}"))
            .env("PGCDC_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start pgcdc");
        Running(child, port)
    }
}

/// A running pgcdc process (and its REST port), killed if the test ends (or fails) while it
/// runs.
struct Running(Child, u16);

impl Running {
    /// Waits until the process's `/metrics` say its snapshot reads the tables
    /// (`SnapshotRunning` 1, some rows scanned). Panics after `T`.
    async fn wait_snapshot_reading(&mut self) {
        self.wait_snapshot(false).await;
    }

    /// Waits until the snapshot reads the tables, or (with `or_completed`) has read some and
    /// completed; returns whether it was reading.
    async fn wait_snapshot(&mut self, or_completed: bool) -> bool {
        let port = self.1;
        let started = Instant::now();
        loop {
            self.assert_running();
            let text = tokio::task::spawn_blocking(move || http_get(port, "/metrics"))
                .await
                .unwrap()
                .unwrap_or_default();
            let running = metric(&text, "debezium_metrics_SnapshotRunning{") == Some(1.0);
            let completed = metric(&text, "debezium_metrics_SnapshotCompleted{") == Some(1.0);
            let rows = metric(&text, "debezium_metrics_RowsScanned{").unwrap_or(0.0);
            if running && rows > 0.0 {
                return true;
            }
            if or_completed && completed && rows > 0.0 {
                return false;
            }
            assert!(
                started.elapsed() < T,
                "no snapshot reading tables within {T:?}; the last metrics: {}",
                text.lines()
                    .filter(|l| l.starts_with("debezium_metrics_Snapshot")
                        || l.starts_with("debezium_metrics_RowsScanned"))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILL, and waits for the process to end.
    fn kill(&mut self) {
        self.0.kill().expect("kill -9");
        self.0.wait().unwrap();
    }

    /// Panics when the process ended on its own (it only ends when killed or stopped).
    fn assert_running(&mut self) {
        if let Some(status) = self.0.try_wait().unwrap() {
            panic!("pgcdc exited on its own: {status}");
        }
    }

    /// SIGTERM: a graceful stop must exit 0.
    fn terminate(&mut self) {
        // SAFETY: kill(2) on our child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        assert!(self.0.wait().unwrap().success(), "graceful stop exits 0");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_loop_loses_nothing_and_keeps_each_keys_order() {
    crash_loop(Delivery::AtLeastOnce, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_loop_in_exactly_once_mode_loses_nothing_and_duplicates_nothing() {
    crash_loop(Delivery::ExactlyOnce, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_loop_with_streamed_transactions_loses_nothing_and_keeps_each_keys_order() {
    crash_loop(Delivery::AtLeastOnce, true).await;
}

/// The delivery mode under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// Offsets in a file; duplicates allowed after the last confirmed position.
    AtLeastOnce,
    /// `exactly.once.source.support=enabled`, offsets in a topic, read_committed: no
    /// duplicate at all.
    ExactlyOnce,
}

async fn crash_loop(delivery: Delivery, streaming: bool) {
    let _lock = fault_broker_lock().await;
    let p = Params::from_env();
    eprintln!("crash loop ({delivery:?}, streamed transactions: {streaming}): {p:?}");
    let db = TestDb::create("crash").await;
    if streaming {
        // Set before the connector connects: its walsender streams every transaction past
        // 64 kB of changes (the big ones).
        db.exec(&format!(
            "ALTER DATABASE {} SET logical_decoding_work_mem = '64kB'",
            db.name
        ))
        .await;
    }
    db.exec(&format!(
        "CREATE TABLE a (id int8 PRIMARY KEY, ver int NOT NULL, pad text); \
         CREATE TABLE b (id int8 PRIMARY KEY, ver int NOT NULL, pad text); \
         CREATE TABLE ob (id int8 PRIMARY KEY, ver int NOT NULL, payload text); \
         ALTER TABLE a REPLICA IDENTITY FULL; ALTER TABLE b REPLICA IDENTITY FULL; \
         ALTER TABLE ob REPLICA IDENTITY FULL; \
         CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048)); \
         INSERT INTO a SELECT g, 1, md5(g::text) FROM generate_series(1, {0}) g; \
         INSERT INTO b SELECT g, 1, md5(g::text) FROM generate_series(1, {0}) g",
        p.rows
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("crash");
    let brokers = env().kafka_fault.clone();
    let mut raw = base_config(&db, &prefix, &brokers, dir.path());
    raw.remove("status.update.interval.ms");
    for (k, v) in [
        ("key.converter.schemas.enable", "false"),
        ("value.converter.schemas.enable", "false"),
        ("offset.flush.interval.ms", "1000"),
        ("snapshot.fetch.size", "2000"),
        ("signal.data.collection", "public.dbz_signal"),
        ("incremental.snapshot.chunk.size", "250"),
    ] {
        raw.insert(k.into(), v.into());
    }
    let threads = match (p.snapshot_threads, delivery) {
        (0, Delivery::AtLeastOnce) => 1,
        (0, Delivery::ExactlyOnce) => 2,
        (n, _) => n,
    };
    raw.insert("snapshot.max.threads".into(), threads.to_string());
    if streaming {
        raw.insert("pgcdc.pgoutput.streaming".into(), "true".into());
        raw.insert(
            "pgcdc.pgoutput.streaming.memory.bytes".into(),
            "262144".into(),
        );
    }
    if delivery == Delivery::ExactlyOnce {
        raw.remove("offset.storage.file.filename");
        for (k, v) in [
            ("exactly.once.source.support", "enabled"),
            ("offsets.storage.topic", &format!("{prefix}-offsets")),
            ("offset.storage.partitions", "1"),
        ] {
            raw.insert(k.into(), v.to_string());
        }
    }
    let config = dir.path().join("connector.json");
    std::fs::write(&config, json!({"name": prefix, "config": raw}).to_string()).unwrap();
    let process = Process { config };
    let topics: Vec<String> = TABLES
        .iter()
        .map(|t| format!("{prefix}.public.{t}"))
        .collect();

    let truth = Arc::new(Mutex::new(Truth::default()));
    {
        let mut t = truth.lock().unwrap();
        for table in ["a", "b"] {
            for id in 1..=p.rows {
                t.keys.insert((table.into(), id), vec![ordinal(1, false)]);
                t.preexisting.insert((table.into(), id));
            }
        }
    }
    let mut rng = Rng(p.seed | 1);
    let mut child = process.spawn();
    db.wait_for_slot(&prefix).await;

    // The writer runs from the slot's creation to the target number of changes.
    let big_committed = Arc::new(Notify::new());
    let big_started = Arc::new(Notify::new());
    let written = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let mut w = Writer {
            client: connect(&db.name).await,
            rng: Rng(rng.next() | 1),
            live: HashMap::from([("a", (1..=p.rows).collect()), ("b", (1..=p.rows).collect())]),
            next_id: 10 * p.rows + 1,
            truth: truth.clone(),
            big_started: big_started.clone(),
        };
        let (big_committed, written, stop) = (big_committed.clone(), written.clone(), stop.clone());
        let target = p.changes;
        tokio::spawn(async move {
            while written.load(Ordering::Relaxed) < target && !stop.load(Ordering::Relaxed) {
                let (n, big) = w.transaction().await;
                written.fetch_add(n, Ordering::Relaxed);
                if big {
                    big_committed.notify_waiters();
                }
            }
        })
    };

    let mut kills: Vec<Kill> = Vec::new();
    let started = Instant::now();
    // The first run starts before any write.
    let mut committed_before_start = 0;
    let mut incremental_kills = 0;
    for k in 0..p.kills {
        let in_snapshot = k < p.snapshot_kills;
        let paused = match k.wrapping_sub(p.snapshot_kills) % 5 {
            // The first kills land in snapshots: the initial one, then those taken again on
            // the existing slot.
            _ if in_snapshot => {
                child.wait_snapshot_reading().await;
                tokio::time::sleep(Duration::from_millis(rng.range(0, 150))).await;
                None
            }
            1 if streaming => {
                // From the start of a big transaction: while it is streamed and held, or
                // published.
                let _ = tokio::time::timeout(Duration::from_secs(10), big_started.notified()).await;
                tokio::time::sleep(Duration::from_millis(rng.range(0, 600))).await;
                None
            }
            1 => {
                let _ =
                    tokio::time::timeout(Duration::from_secs(10), big_committed.notified()).await;
                tokio::time::sleep(Duration::from_millis(rng.range(20, 400))).await;
                None
            }
            3 => {
                // While an incremental snapshot reads: signalled now (or still running from an
                // earlier signal, resumed by this run from the offsets).
                db.exec(&format!(
                    r#"INSERT INTO dbz_signal VALUES ('crash-{k}', 'execute-snapshot', '{{"data-collections": ["public\\.a", "public\\.b"]}}')"#
                ))
                .await;
                if child.wait_snapshot(true).await {
                    tokio::time::sleep(Duration::from_millis(rng.range(0, 200))).await;
                    incremental_kills += 1;
                }
                None
            }
            2 => {
                tokio::time::sleep(Duration::from_millis(rng.range(300, 1500))).await;
                let paused = PausedBroker::pause();
                tokio::time::sleep(Duration::from_millis(rng.range(300, 2000))).await;
                Some(paused)
            }
            _ => {
                tokio::time::sleep(Duration::from_millis(rng.range(100, 3000))).await;
                None
            }
        };
        child.assert_running();
        child.kill();
        drop(paused);
        wait_for("the slot to be released", T, || async {
            db.walsender(&prefix).await.is_none().then_some(())
        })
        .await;
        kills.push(Kill {
            in_snapshot,
            committed_before_start,
            confirmed: db.confirmed_flush(&prefix).await,
            ends: end_offsets(&brokers, &topics).await,
        });
        committed_before_start = truth.lock().unwrap().last_commit_from;
        child = process.spawn();
    }
    assert_snapshot_kills_made_progress(&kills);
    eprintln!(
        "crash loop: {} kills in {:?}, {} changes written so far",
        kills.len(),
        started.elapsed(),
        written.load(Ordering::Relaxed)
    );
    writer.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    // A sentinel, then a graceful stop once the slot is confirmed past it: pgcdc confirms
    // only what Kafka acknowledged and the offsets hold, so everything before it is out.
    db.exec("INSERT INTO a VALUES (-1, 1, 'sentinel')").await;
    let end = db.current_lsn().await;
    let catch_up = Instant::now();
    while db.confirmed_flush(&prefix).await < end {
        child.assert_running();
        assert!(
            catch_up.elapsed() < Duration::from_secs(900),
            "the last run did not catch up in 15 minutes (the slot is at {:X}, the sentinel at {end:X})",
            db.confirmed_flush(&prefix).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "crash loop: caught up {:?} after the start",
        started.elapsed()
    );
    child.terminate();

    let truth = Arc::new(Arc::try_unwrap(truth).ok().unwrap().into_inner().unwrap());
    let kills = Arc::new(kills);
    let mut failures = Vec::new();
    // Offsets written, aborted records and transaction markers included.
    let written: i64 = end_offsets(&brokers, &topics).await.values().sum();
    let mut read = 0u64;
    for (table, topic) in TABLES.iter().zip(&topics) {
        let ends = end_offsets(&brokers, std::slice::from_ref(topic)).await;
        let (truth, kills, brokers, topic, table) = (
            truth.clone(),
            kills.clone(),
            brokers.clone(),
            topic.clone(),
            table.to_string(),
        );
        let report = tokio::task::spawn_blocking(move || {
            let mut checker = Checker::new(&table);
            for_each_record(&brokers, &topic, &ends, |r| checker.take(r, &truth, &kills));
            checker.finish(&truth)
        })
        .await
        .unwrap();
        eprintln!("crash loop: {report}");
        read += report.records;
        let repeated = report.duplicated - report.restated_by_snapshot;
        if !report.ok() || (delivery == Delivery::ExactlyOnce && repeated > 0) {
            failures.push(report.to_string());
        }
    }
    eprintln!(
        "crash loop: {} changes committed, {} kills ({} in snapshots, {incremental_kills} in incremental snapshots), seed {}",
        truth.changes,
        kills.len(),
        kills.iter().filter(|k| k.in_snapshot).count(),
        p.seed
    );
    let per_change = |n: f64| n / truth.changes.max(1) as f64;
    eprintln!(
        "crash loop: output volume: {written} records written ({:.2} per change committed, aborted ones and transaction markers included), {read} read by the checker ({:.2} per change; snapshot reads included)",
        per_change(written as f64),
        per_change(read as f64)
    );
    if streaming {
        let row = db
            .client
            .query_one(
                "SELECT stream_txns, stream_bytes FROM pg_stat_replication_slots WHERE slot_name = $1",
                &[&prefix],
            )
            .await
            .unwrap();
        let (txns, bytes): (i64, i64) = (row.get(0), row.get(1));
        eprintln!(
            "crash loop: the server streamed {txns} transactions ({bytes} bytes) to the slot"
        );
        assert!(
            txns > 0,
            "no transaction was streamed: this run tested nothing of streaming"
        );
    }
    assert!(
        failures.is_empty(),
        "crash loop failed:\n{}",
        failures.join("\n")
    );
    db.cleanup().await;
}

/// Each kill inside a snapshot taken again on the existing slot (every snapshot kill but the
/// first) must find the slot confirmed past every transaction committed before that run
/// started: its snapshot contains them, and its first pass confirms them before the tables
/// are read. Otherwise every start would replay everything since the first snapshot began,
/// and a crash loop landing in snapshots would publish ever more and never finish one.
fn assert_snapshot_kills_made_progress(kills: &[Kill]) {
    for (i, k) in kills.iter().enumerate().skip(1) {
        if k.in_snapshot {
            assert!(
                k.confirmed > k.committed_before_start,
                "kill {i} landed in a snapshot taken again on the slot, and the slot was at {:X}, not past {:X}, where the last transaction committed before that run started: the transactions that snapshot published first were not confirmed",
                k.confirmed,
                k.committed_before_start
            );
        }
    }
}

/// The checker's counts for one table.
#[derive(Debug, Default)]
struct Report {
    table: String,
    committed: u64,
    records: u64,
    lost: u64,
    out_of_order: u64,
    duplicated: u64,
    /// Of the duplicates, snapshot records of a snapshot taken again.
    duplicated_by_snapshot: u64,
    /// Of those, a snapshot's first read of a version that streaming had published: a
    /// snapshot taken again on an existing slot first publishes the slot's transactions it
    /// contains, then reads the rows, which restate their last version. The only duplicate
    /// allowed in exactly-once mode: the state, not a second delivery of a change event or of
    /// a snapshot read.
    restated_by_snapshot: u64,
    /// Of the duplicates, incremental snapshot reads of a version that had arrived.
    incremental_reads: u64,
    unexplained_duplicates: u64,
    examples: Vec<String>,
}

impl Report {
    fn ok(&self) -> bool {
        self.lost == 0 && self.out_of_order == 0 && self.unexplained_duplicates == 0
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "table {}: {} changes committed, {} records read, lost {}, keys out of order {}, duplicated {} ({} by a snapshot taken again or an incremental one, of which {} restate a version that had arrived, {} read by an incremental snapshot; {} not explained by a kill)",
            self.table,
            self.committed,
            self.records,
            self.lost,
            self.out_of_order,
            self.duplicated,
            self.duplicated_by_snapshot,
            self.restated_by_snapshot,
            self.incremental_reads,
            self.unexplained_duplicates
        )?;
        for e in &self.examples {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// One record as the checker sees it: key, ordinal, transaction id, and the run it came from.
struct Seen {
    id: i64,
    ordinal: Ordinal,
    tx_id: Option<i64>,
    snapshot: bool,
    /// Read by an incremental snapshot (`source.snapshot` = `incremental`).
    incremental: bool,
    run: usize,
}

/// One consumed record: where it is and its value.
struct RecordView<'a> {
    topic: &'a str,
    partition: i32,
    offset: i64,
    value: Option<&'a [u8]>,
}

fn parse_record(r: &RecordView<'_>, kills: &[Kill]) -> Option<Seen> {
    let v: Value = serde_json::from_slice(r.value?).ok()?;
    let op = v["op"].as_str()?;
    let (row, deleted) = if op == "d" {
        (&v["before"], true)
    } else {
        (&v["after"], false)
    };
    let id = row["id"].as_i64()?;
    let ver = row["ver"].as_i64()?;
    let run = kills
        .iter()
        .take_while(|k| {
            k.ends
                .get(&(r.topic.to_string(), r.partition))
                .is_none_or(|end| r.offset >= *end)
        })
        .count();
    Some(Seen {
        id,
        ordinal: ordinal(ver, deleted),
        tx_id: v["source"]["txId"].as_i64(),
        snapshot: op == "r",
        incremental: v["source"]["snapshot"] == "incremental",
        run,
    })
}

/// Reads `topic` from the beginning up to `ends` (its partitions' end offsets), one record at
/// a time, without keeping them: the long run reads tens of millions.
fn for_each_record(
    brokers: &str,
    topic: &str,
    ends: &HashMap<(String, i32), i64>,
    mut f: impl FnMut(&RecordView<'_>),
) {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", unique("check"))
        .set("enable.auto.commit", "false")
        .set("max.partition.fetch.bytes", "16777216")
        .set("fetch.wait.max.ms", "20")
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .create()
        .expect("consumer");
    let mut remaining: HashMap<i32, i64> = ends
        .iter()
        .filter(|((t, _), end)| t == topic && **end > 0)
        .map(|((_, p), end)| (*p, *end))
        .collect();
    if remaining.is_empty() {
        return;
    }
    let mut tpl = TopicPartitionList::new();
    for p in remaining.keys() {
        tpl.add_partition_offset(topic, *p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let deadline = Instant::now() + Duration::from_secs(3600);
    while !remaining.is_empty() {
        assert!(
            Instant::now() < deadline,
            "reading {topic} took over an hour"
        );
        let Some(m) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        // Read committed: a partition may end with a transaction marker, never delivered.
        if let Err(rdkafka::error::KafkaError::PartitionEOF(p)) = m {
            remaining.remove(&p);
            continue;
        }
        let Ok(m) = m else { continue };
        f(&RecordView {
            topic,
            partition: m.partition(),
            offset: m.offset(),
            value: m.payload(),
        });
        if remaining
            .get(&m.partition())
            .is_some_and(|end| m.offset() + 1 >= *end)
        {
            remaining.remove(&m.partition());
        }
    }
}

/// The checker of one table, fed one record at a time.
struct Checker {
    report: Report,
    /// Per key, the ordinals in order of first arrival.
    arrived: HashMap<i64, Vec<Ordinal>>,
    /// The (key, ordinal) pairs a snapshot has read.
    read_by_snapshot: HashSet<(i64, Ordinal)>,
}

impl Checker {
    fn new(table: &str) -> Checker {
        Checker {
            report: Report {
                table: table.into(),
                ..Default::default()
            },
            arrived: HashMap::new(),
            read_by_snapshot: HashSet::new(),
        }
    }

    fn take(&mut self, r: &RecordView<'_>, truth: &Truth, kills: &[Kill]) {
        self.report.records += 1;
        let Some(seen) = parse_record(r, kills) else {
            return;
        };
        if seen.id < 0 {
            return;
        }
        let report = &mut self.report;
        let first = self.arrived.entry(seen.id).or_default();
        // A snapshot's first read of a version already streamed restates it (see
        // `Report::restated_by_snapshot`).
        let restated = seen.snapshot && self.read_by_snapshot.insert((seen.id, seen.ordinal));
        if first.contains(&seen.ordinal) {
            report.duplicated += 1;
            report.duplicated_by_snapshot += u64::from(seen.snapshot);
            report.restated_by_snapshot += u64::from(restated || seen.incremental);
            report.incremental_reads += u64::from(seen.incremental);
            if seen.incremental {
                return;
            }
            if !duplicate_explained(&seen, truth, kills) {
                report.unexplained_duplicates += 1;
                note(
                    report,
                    format!(
                        "key {} ordinal {} again in run {} (txId {:?})",
                        seen.id, seen.ordinal, seen.run, seen.tx_id
                    ),
                );
            }
            return;
        }
        if first.last().is_some_and(|last| seen.ordinal < *last) {
            report.out_of_order += 1;
            note(
                report,
                format!(
                    "key {}: {} first arrived after {:?}",
                    seen.id, seen.ordinal, first
                ),
            );
        }
        first.push(seen.ordinal);
    }

    /// Compares what arrived with what was committed.
    fn finish(mut self, truth: &Truth) -> Report {
        let table = self.report.table.clone();
        for ((t, id), committed) in &truth.keys {
            if *t != table {
                continue;
            }
            self.report.committed += committed.len() as u64;
            let got = self.arrived.get(id).map(Vec::as_slice).unwrap_or(&[]);
            let collapsible = truth.preexisting.contains(&(t.clone(), *id));
            for (i, o) in committed.iter().enumerate() {
                let collapsed = i == 0 && collapsible && got.iter().any(|g| g > o);
                if !got.contains(o) && !collapsed {
                    self.report.lost += 1;
                    let example = format!("key {id}: ordinal {o} lost (arrived: {got:?})");
                    note(&mut self.report, example);
                }
            }
        }
        self.report
    }
}

/// A duplicate is explained by a kill when it came after one, from a snapshot taken again or
/// from a transaction that ended after the position confirmed at that kill.
fn duplicate_explained(seen: &Seen, truth: &Truth, kills: &[Kill]) -> bool {
    if seen.run == 0 {
        return false;
    }
    if seen.snapshot {
        return true;
    }
    let confirmed = kills[seen.run - 1].confirmed;
    seen.tx_id
        .and_then(|x| truth.ended_at.get(&(x & 0xFFFF_FFFF)))
        .is_some_and(|ended| *ended > confirmed)
}

fn note(report: &mut Report, example: String) {
    if report.examples.len() < 10 {
        report.examples.push(example);
    }
}
