//! Signals and incremental snapshots while streaming: chunks between watermarks in the signal
//! table, per-key order against concurrent writes, progress in the offsets across a restart,
//! notifications, and the Kafka signal channel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::harness::*;

const T: Duration = Duration::from_secs(120);

/// The signal table Debezium's documentation gives.
const SIGNAL_TABLE: &str =
    "CREATE TABLE public.dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))";

/// Bumps `ver` of rows 1..=`hot` in turn, one transaction each, and inserts a new row every
/// fifth turn (ids from `next`); returns the next unused id.
async fn write_versions(dbname: String, hot: i64, mut next: i64, stop: Arc<AtomicBool>) -> i64 {
    let client = connect(&dbname).await;
    let mut turn = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let id = (turn % hot + 1) as i32;
        client
            .execute("UPDATE v SET ver = ver + 1 WHERE id = $1", &[&id])
            .await
            .unwrap();
        if turn % 5 == 0 {
            client
                .execute("INSERT INTO v VALUES ($1, 1, 'n')", &[&(next as i32)])
                .await
                .unwrap();
            next += 1;
        }
        turn += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    next
}

/// [`write_versions`] running in a task until [`Writes::stop`].
struct Writes {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<i64>,
}

impl Writes {
    /// Starts writing to `db`'s table `v`: `hot` rows bumped in turn, new ids from `next`.
    fn start(db: &TestDb, hot: i64, next: i64) -> Writes {
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(write_versions(db.name.clone(), hot, next, stop.clone()));
        Writes { stop, task }
    }

    /// Stops writing; returns the next unused id.
    async fn stop(self) -> i64 {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap()
    }
}

/// The notifications on `notes` up to a `COMPLETED` one.
async fn until_completed(notes: &str) -> Vec<Rec> {
    let completed = |r: &[Rec]| r.iter().any(|x| x.payload()["type"] == json!("COMPLETED"));
    read_until(&env().kafka, notes, T, completed).await
}

/// Inserts the sentinel row 999999 into `v` and reads `topic` up to it.
async fn through_sentinel(db: &TestDb, topic: &str) -> Vec<Rec> {
    db.exec("INSERT INTO v VALUES (999999, 1, 'sentinel')")
        .await;
    read_until(&env().kafka, topic, T, |r| {
        r.iter()
            .any(|x| x.payload()["after"]["id"] == json!(999999))
    })
    .await
}

/// The incremental snapshot's notifications among `recs` (a start without a snapshot also
/// sends the initial snapshot's `SKIPPED`).
fn incremental_only(recs: Vec<Rec>) -> Vec<Rec> {
    recs.into_iter()
        .filter(|r| r.payload()["aggregate_type"] == json!("Incremental Snapshot"))
        .collect()
}

/// Checks per-key order over `recs` of table `v`: for each id, the versions (`ver`) it
/// arrives with never go back, whether from the stream or the incremental snapshot. Returns
/// each id's versions in arrival order and how many incremental snapshot records came.
fn check_order(recs: &[Rec]) -> (HashMap<i64, Vec<i64>>, usize) {
    let mut seen: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut incremental = 0;
    for r in recs {
        let p = r.payload();
        if p["after"].is_null() {
            continue;
        }
        let (id, ver) = (
            p["after"]["id"].as_i64().unwrap(),
            p["after"]["ver"].as_i64().unwrap(),
        );
        if p["op"] == json!("r") {
            assert_eq!(p["source"]["snapshot"], json!("incremental"));
            assert_eq!(
                p["source"]["txId"],
                json!(null),
                "incremental rows carry no txId"
            );
            assert_eq!(
                p["source"]["lsn"],
                json!(null),
                "incremental rows carry no lsn"
            );
            incremental += 1;
        }
        let versions = seen.entry(id).or_default();
        if let Some(last) = versions.last() {
            assert!(
                ver >= *last,
                "row {id}: version {ver} ({}) arrived after version {last}: {versions:?}",
                p["op"]
            );
        }
        versions.push(ver);
    }
    (seen, incremental)
}

/// An execute-snapshot signal of `public.v` (chunks of 100 rows) while writes stream: every
/// row arrives, no key's versions go back, the offsets carry the snapshot's progress in
/// Debezium's shape so that a restart in the middle resumes it, and the notifications follow
/// Debezium's order with the signal's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incremental_snapshot_while_writes_stream_keeps_each_keys_order_and_resumes_after_a_restart(
) {
    incremental_snapshot_with_writes_and_a_restart(false).await;
}

/// The same in exactly-once mode: the snapshot's progress rides in the offsets record of each
/// Kafka transaction, and `read_committed` sees every key in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incremental_snapshot_in_exactly_once_mode_keeps_its_progress_in_the_kafka_transactions()
{
    incremental_snapshot_with_writes_and_a_restart(true).await;
}

async fn incremental_snapshot_with_writes_and_a_restart(exactly_once: bool) {
    const ROWS: i64 = 6_000;
    const HOT: i64 = 50;
    let db = TestDb::create("incr").await;
    db.exec(&format!(
        "CREATE TABLE public.v (id int PRIMARY KEY, ver int NOT NULL, pad text); {SIGNAL_TABLE}; \
         INSERT INTO v SELECT g, 1, repeat('p', 100) FROM generate_series(1, {ROWS}) g"
    ))
    .await;
    // Every close watermark also changes one row of each chunk, in its own transaction and
    // before it in the WAL: the window must give way to the stream's newer version.
    db.exec(
        "CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           IF NEW.type = 'snapshot-window-close' THEN UPDATE v SET ver = ver + 1 WHERE id % 100 = 7; END IF; \
           RETURN NEW; END $$; \
         CREATE TRIGGER bump BEFORE INSERT ON dbz_signal FOR EACH ROW EXECUTE FUNCTION bump()",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("incr");
    let notes = format!("{prefix}.notifications");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("table.include.list".into(), "public.v".into());
    raw.insert("signal.data.collection".into(), "public.dbz_signal".into());
    raw.insert("incremental.snapshot.chunk.size".into(), "20".into());
    raw.insert("notification.enabled.channels".into(), "sink".into());
    raw.insert("notification.sink.topic.name".into(), notes.clone());
    let offsets_topic = format!("{prefix}-offsets");
    if exactly_once {
        raw.remove("offset.storage.file.filename");
        raw.insert("exactly.once.source.support".into(), "enabled".into());
        raw.insert("offsets.storage.topic".into(), offsets_topic.clone());
        raw.insert("offset.storage.partitions".into(), "1".into());
    }
    let stored_offsets = || async {
        if exactly_once {
            let recs = read_until(&env().kafka, &offsets_topic, T, |r| !r.is_empty()).await;
            let last = recs.last().unwrap();
            String::from_utf8_lossy(last.value.as_deref().unwrap_or_default()).to_string()
        } else {
            std::fs::read_to_string(dir.path().join("offsets.json")).unwrap()
        }
    };
    let topic = format!("{prefix}.public.v");

    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    let writes = Writes::start(&db, HOT, ROWS + 1);
    db.exec(
        r#"INSERT INTO dbz_signal VALUES ('sig-1', 'execute-snapshot', '{"data-collections": ["public\\.v"], "type": "incremental"}')"#,
    )
    .await;
    // Stop in the middle of the snapshot.
    let some = at_least(500, |x| value_has(x, br#""snapshot":"incremental""#));
    read_until(&env().kafka, &topic, T, some).await;
    c.stop().await.unwrap();
    let offsets = stored_offsets().await;
    assert!(
        offsets.contains("incremental_snapshot_collections")
            && offsets.contains("incremental_snapshot_primary_key")
            && offsets.contains(r#"\"incremental_snapshot_collections_id\":\"public.v\""#)
            && offsets.contains("sig-1"),
        "the offsets carry the running snapshot: {offsets}"
    );

    // The restart resumes at the next chunk and completes.
    let c = start(&raw);
    let notifications = incremental_only(until_completed(&notes).await);
    let next = writes.stop().await;
    let recs = through_sentinel(&db, &topic).await;
    c.stop().await.unwrap();
    let offsets = stored_offsets().await;
    assert!(
        !offsets.contains("incremental_snapshot_collections"),
        "a completed snapshot leaves the offsets: {offsets}"
    );

    let (seen, incremental) = check_order(&recs);
    for id in 1..next {
        assert!(seen.contains_key(&id), "row {id} never arrived");
    }
    assert!(
        incremental as i64 >= ROWS - HOT - ROWS / 100,
        "the snapshot read the rows the stream did not change ({incremental})"
    );
    let kinds: Vec<String> = notifications
        .iter()
        .map(|r| r.payload()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("STARTED"));
    assert_eq!(
        &kinds[kinds.len() - 2..],
        ["TABLE_SCAN_COMPLETED", "COMPLETED"]
    );
    assert!(kinds.iter().filter(|k| *k == "IN_PROGRESS").count() >= 250);
    let started = notifications[0].payload();
    assert_eq!(started["aggregate_type"], "Incremental Snapshot");
    assert_eq!(started["id"], "sig-1");
    assert_eq!(started["additional_data"]["data_collections"], "public.v");
    let scan = notifications[kinds.len() - 2].payload();
    assert_eq!(scan["additional_data"]["status"], "SUCCEEDED");
    assert_eq!(scan["additional_data"]["scanned_collection"], "public.v");
    db.cleanup().await;
}

/// The Kafka signal channel with `insert_delete` watermarks: a signal keyed by another
/// connector's prefix is skipped, ours is acted on; `additional-conditions` limits the rows
/// read; a table without a primary key is skipped with `NO_PRIMARY_KEY`; the watermark rows
/// leave the signal table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_signals_with_insert_delete_watermarks_and_additional_conditions() {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let db = TestDb::create("incrk").await;
    db.exec(&format!(
        "CREATE TABLE public.v (id int PRIMARY KEY, ver int NOT NULL, pad text); \
         CREATE TABLE public.nokey (n int); {SIGNAL_TABLE}; \
         INSERT INTO v SELECT g, 1, 'p' FROM generate_series(1, 500) g; INSERT INTO nokey VALUES (1)"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("incrk");
    let notes = format!("{prefix}.notifications");
    let signals = format!("{prefix}-signal");
    create_topic(&env().kafka, &signals, 1).await;
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("signal.data.collection".into(), "public.dbz_signal".into());
    raw.insert("signal.enabled.channels".into(), "source,kafka".into());
    raw.insert("signal.kafka.bootstrap.servers".into(), env().kafka.clone());
    raw.insert("signal.kafka.groupId".into(), format!("{prefix}-signals"));
    raw.insert(
        "incremental.snapshot.watermarking.strategy".into(),
        "insert_delete".into(),
    );
    raw.insert("incremental.snapshot.chunk.size".into(), "64".into());
    raw.insert("notification.enabled.channels".into(), "sink".into());
    raw.insert("notification.sink.topic.name".into(), notes.clone());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;

    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &env().kafka)
        .create()
        .unwrap();
    let send = |key: String, value: String| {
        let producer = producer.clone();
        let topic = signals.clone();
        async move {
            producer
                .send(
                    FutureRecord::to(&topic).key(&key).payload(&value),
                    Duration::from_secs(10),
                )
                .await
                .unwrap();
        }
    };
    send(
        "someone-else".into(),
        r#"{"id":"x","type":"execute-snapshot","data":{"data-collections":["public.v"]}}"#.into(),
    )
    .await;
    let ours = concat!(
        r#"{"id":"k-1","type":"execute-snapshot","data":{"data-collections":["public.v","public.nokey"],"#,
        r#""additional-conditions":[{"data-collection":"public.v","filter":"id <= 300"}]}}"#
    );
    send(prefix.clone(), ours.into()).await;
    let notifications = incremental_only(until_completed(&notes).await);
    let ids: Vec<String> = notifications
        .iter()
        .map(|r| r.payload()["id"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        ids.iter().all(|i| i == "k-1"),
        "only the signal keyed by the topic prefix ran: {ids:?}"
    );
    let statuses: Vec<String> = notifications
        .iter()
        .filter(|r| r.payload()["type"] == json!("TABLE_SCAN_COMPLETED"))
        .map(|r| {
            r.payload()["additional_data"]["status"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(statuses, ["SUCCEEDED", "NO_PRIMARY_KEY"]);
    db.exec("INSERT INTO v VALUES (100000, 1, 'sentinel')")
        .await;
    let topic = format!("{prefix}.public.v");
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter()
            .any(|x| x.payload()["after"]["id"] == json!(100000))
    })
    .await;
    c.stop().await.unwrap();
    let reads: Vec<i64> = recs
        .iter()
        .filter(|r| r.payload()["op"] == json!("r"))
        .map(|r| r.payload()["after"]["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        reads,
        (1..=300).collect::<Vec<_>>(),
        "the filter's rows, in key order, once"
    );
    let left: i64 = db
        .client
        .query_one("SELECT count(*) FROM dbz_signal", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "insert_delete removes each open watermark");
    db.cleanup().await;
}

/// Tables an incremental snapshot cannot read are skipped, each with its status, and the
/// stream goes on (as Debezium skips them): a filter the server refuses (`SQL_EXCEPTION`), rows
/// with NULL in a nullable `message.key.columns` key (`SKIPPED`, never a partial read), a table
/// that does not exist (`UNKNOWN_SCHEMA`); the readable table is read whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_an_incremental_snapshot_cannot_read_are_skipped_with_their_status() {
    let db = TestDb::create("incrbad").await;
    db.exec(&format!(
        "CREATE TABLE public.t_ok (id int PRIMARY KEY); CREATE TABLE public.t_bad (id int PRIMARY KEY); \
         CREATE TABLE public.t_null (v int UNIQUE, w int); {SIGNAL_TABLE}; \
         INSERT INTO t_ok SELECT generate_series(1, 50); INSERT INTO t_bad SELECT generate_series(1, 10); \
         INSERT INTO t_null VALUES (1, 1), (NULL, 2), (3, 3)"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("incrbad");
    let notes = format!("{prefix}.notifications");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    for (k, v) in [
        ("snapshot.mode", "no_data"),
        ("signal.data.collection", "public.dbz_signal"),
        ("message.key.columns", "public.t_null:v"),
        ("notification.enabled.channels", "sink"),
        ("notification.sink.topic.name", &notes),
    ] {
        raw.insert(k.into(), v.into());
    }
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec(
        r#"INSERT INTO dbz_signal VALUES ('bad-1', 'execute-snapshot', '{"data-collections": ["public.t_ok", "public.t_bad", "public.t_null", "public.t_gone"], "additional-conditions": [{"data-collection": "public.t_bad", "filter": "nosuchcol > 1"}]}')"#,
    )
    .await;
    let n = incremental_only(until_completed(&notes).await);
    let statuses: HashMap<String, String> = n
        .iter()
        .filter(|r| r.payload()["type"] == json!("TABLE_SCAN_COMPLETED"))
        .map(|r| {
            let d = &r.payload()["additional_data"];
            (
                d["scanned_collection"].as_str().unwrap().to_string(),
                d["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: HashMap<String, String> = [
        ("public.t_ok", "SUCCEEDED"),
        ("public.t_bad", "SQL_EXCEPTION"),
        ("public.t_null", "SKIPPED"),
        ("public.t_gone", "UNKNOWN_SCHEMA"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(statuses, expected);
    // The stream went on, and t_ok was read whole.
    db.exec("INSERT INTO t_ok VALUES (1000)").await;
    let recs = read_until(&env().kafka, &format!("{prefix}.public.t_ok"), T, |r| {
        r.iter().any(|x| x.payload()["after"]["id"] == json!(1000))
    })
    .await;
    let reads = recs
        .iter()
        .filter(|r| r.payload()["op"] == json!("r"))
        .count();
    assert_eq!(reads, 50);
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// A blocking snapshot while writes stream: the listed table is read whole with the initial
/// snapshot's markers and notifications, every streamed version arrives once, and no key's
/// versions go back (the stream runs on to the end of what the snapshot contains before its
/// rows, and everything after them is newer). An `additional-conditions` SELECT limits the rows.
/// Two connections read `v` in page ranges (`snapshot.max.threads=2`) in the snapshot's snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_snapshot_while_writes_stream_keeps_each_keys_order() {
    const ROWS: i64 = 3_000;
    const HOT: i64 = 40;
    let db = TestDb::create("block").await;
    db.exec(&format!(
        "CREATE TABLE public.v (id int PRIMARY KEY, ver int NOT NULL, pad text); \
         CREATE TABLE public.w (id int PRIMARY KEY); {SIGNAL_TABLE}; \
         INSERT INTO v SELECT g, 1, 'p' FROM generate_series(1, {ROWS}) g; \
         INSERT INTO w SELECT generate_series(1, 10)"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("block");
    let notes = format!("{prefix}.notifications");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    for (k, v) in [
        ("snapshot.mode", "no_data"),
        ("signal.data.collection", "public.dbz_signal"),
        ("notification.enabled.channels", "sink"),
        ("notification.sink.topic.name", &notes),
        // Every SQL connection, the blocking snapshot's too, takes 300 ms to open: the writer
        // commits many transactions between the signal and the snapshot, which the stream
        // must publish before the snapshot's rows.
        ("database.initial.statements", "SELECT pg_sleep(0.3)"),
        ("snapshot.max.threads", "2"),
    ] {
        raw.insert(k.into(), v.into());
    }
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    let writes = Writes::start(&db, HOT, ROWS + 1);
    db.exec(
        r#"INSERT INTO dbz_signal VALUES ('blk-1', 'execute-snapshot', '{"data-collections": ["public\\.(v|w)"], "type": "blocking", "additional-conditions": [{"data-collection": "public.w", "filter": "SELECT * FROM public.w WHERE id <= 5"}]}')"#,
    )
    .await;
    let n = until_completed(&notes).await;
    let next = writes.stop().await;
    let topic = format!("{prefix}.public.v");
    let recs = through_sentinel(&db, &topic).await;
    c.stop().await.unwrap();

    let kinds: Vec<String> = n
        .iter()
        .filter(|r| r.payload()["aggregate_type"] == json!("Initial Snapshot"))
        .map(|r| r.payload()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "SKIPPED",
            "STARTED",
            "IN_PROGRESS",
            "TABLE_SCAN_COMPLETED",
            "IN_PROGRESS",
            "TABLE_SCAN_COMPLETED",
            "COMPLETED"
        ]
    );
    // Per key: versions never go back, each streamed version once.
    let mut seen: HashMap<i64, Vec<(i64, String)>> = HashMap::new();
    for r in &recs {
        let p = r.payload();
        let (id, ver) = (
            p["after"]["id"].as_i64().unwrap(),
            p["after"]["ver"].as_i64().unwrap(),
        );
        let op = p["op"].as_str().unwrap().to_string();
        let versions = seen.entry(id).or_default();
        if let Some((last, _)) = versions.last() {
            assert!(
                ver >= *last,
                "row {id}: version {ver} ({op}) after {last}: {versions:?}"
            );
        }
        versions.push((ver, op));
    }
    for id in 1..next {
        assert!(seen.contains_key(&id), "row {id} never arrived");
    }
    let reads: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.payload()["op"] == json!("r"))
        .collect();
    let read_ids: std::collections::HashSet<i64> = reads
        .iter()
        .map(|r| r.payload()["after"]["id"].as_i64().unwrap())
        .collect();
    assert_eq!(reads.len(), read_ids.len(), "each row read once");
    assert!(
        (1..=ROWS).all(|id| read_ids.contains(&id)),
        "every row read"
    );
    assert_eq!(reads[0].payload()["source"]["snapshot"], json!("first"));
    for (id, versions) in &seen {
        let streamed: Vec<i64> = versions
            .iter()
            .filter(|(_, op)| op == "u")
            .map(|(v, _)| *v)
            .collect();
        let mut unique = streamed.clone();
        unique.dedup();
        assert_eq!(
            streamed, unique,
            "row {id}: a streamed version twice: {versions:?}"
        );
    }
    let w = read_n(&env().kafka, &format!("{prefix}.public.w"), 5, T).await;
    assert_eq!(
        w.last().unwrap().payload()["source"]["snapshot"],
        json!("last")
    );
    db.cleanup().await;
}

/// `read.only=true`: an incremental snapshot that writes nothing to the database (no signal
/// table; the signal comes from the file channel). Each chunk's window is bounded by the
/// transactions its read sees: while writes stream, every row arrives and no key's versions go
/// back; the database holds no watermark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_incremental_snapshot_writes_nothing_and_keeps_each_keys_order() {
    const ROWS: i64 = 3_000;
    const HOT: i64 = 50;
    let db = TestDb::create("incrro").await;
    db.exec(&format!(
        "CREATE TABLE public.v (id int PRIMARY KEY, ver int NOT NULL, pad text); \
         INSERT INTO v SELECT g, 1, 'p' FROM generate_series(1, {ROWS}) g"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("incrro");
    let notes = format!("{prefix}.notifications");
    let signal_file = dir.path().join("signals.txt");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    for (k, v) in [
        ("snapshot.mode", "no_data"),
        ("read.only", "true"),
        ("signal.enabled.channels", "file"),
        ("signal.file", signal_file.to_str().unwrap()),
        ("signal.poll.interval.ms", "100"),
        ("incremental.snapshot.chunk.size", "20"),
        ("notification.enabled.channels", "sink"),
        ("notification.sink.topic.name", &notes),
    ] {
        raw.insert(k.into(), v.into());
    }
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    let writes = Writes::start(&db, HOT, ROWS + 1);
    let signal =
        r#"{"id":"ro-1","type":"execute-snapshot","data":{"data-collections":["public.v"]}}"#;
    std::fs::write(&signal_file, format!("{signal}\n")).unwrap();
    let n = incremental_only(until_completed(&notes).await);
    let next = writes.stop().await;
    let topic = format!("{prefix}.public.v");
    let recs = through_sentinel(&db, &topic).await;
    c.stop().await.unwrap();
    let (seen, incremental) = check_order(&recs);
    for id in 1..next {
        assert!(seen.contains_key(&id), "row {id} never arrived");
    }
    assert!(incremental as i64 >= ROWS - HOT, "{incremental} rows read");
    assert_eq!(n[0].payload()["id"], "ro-1");
    assert_eq!(n.last().unwrap().payload()["type"], "COMPLETED");
    db.cleanup().await;
}

/// A blocking snapshot whose query the server refuses ends with a warning, never a stop: the
/// stream goes on and a second blocking snapshot, with a bare condition, reads its rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_snapshot_the_server_refuses_ends_and_the_stream_goes_on() {
    let db = TestDb::create("blockbad").await;
    db.exec(&format!(
        "CREATE TABLE public.w (id int PRIMARY KEY); {SIGNAL_TABLE}; INSERT INTO w SELECT generate_series(1, 10)"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("blockbad");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("signal.data.collection".into(), "public.dbz_signal".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec(
        r#"INSERT INTO dbz_signal VALUES ('b-1', 'execute-snapshot', '{"data-collections": ["public.w"], "type": "blocking", "additional-conditions": [{"data-collection": "public.w", "filter": "SELECT nosuchcol FROM public.w"}]}')"#,
    )
    .await;
    db.exec(
        r#"INSERT INTO dbz_signal VALUES ('b-2', 'execute-snapshot', '{"data-collections": ["public.w"], "type": "blocking", "additional-conditions": [{"data-collection": "public.w", "filter": "id <= 3"}]}')"#,
    )
    .await;
    db.exec("INSERT INTO w VALUES (100)").await;
    let topic = format!("{prefix}.public.w");
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|x| x.payload()["after"]["id"] == json!(100))
            && r.iter().filter(|x| x.payload()["op"] == json!("r")).count() >= 3
    })
    .await;
    let reads: Vec<i64> = recs
        .iter()
        .filter(|r| r.payload()["op"] == json!("r"))
        .map(|r| r.payload()["after"]["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        reads,
        [1, 2, 3],
        "the second snapshot's rows, after the first failed"
    );
    assert!(c.stop().await.is_ok(), "the connector was still running");
    db.cleanup().await;
}
