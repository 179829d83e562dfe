//! The initial snapshot: consistent with the stream through the slot's exported snapshot.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgcdc::error::ErrorKind;
use serde_json::json;

use crate::harness::*;

const T: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_then_stream_has_no_gap_and_no_duplicate() {
    snapshot_then_stream(1).await;
}

/// The same with the table read by three connections in the slot's exported snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_snapshot_then_stream_has_no_gap_and_no_duplicate() {
    snapshot_then_stream(3).await;
}

async fn snapshot_then_stream(threads: usize) {
    let db = TestDb::create("snap").await;
    db.exec("CREATE TABLE public.s (id int PRIMARY KEY, v text); CREATE TABLE public.z (id int PRIMARY KEY)").await;
    db.exec("INSERT INTO s SELECT g, 'pre' FROM generate_series(1, 3000) g; INSERT INTO z VALUES (1), (2)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("snap");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.fetch.size".into(), "500".into());
    raw.insert("snapshot.max.threads".into(), threads.to_string());

    // Writes keep arriving while the connector starts, snapshots and streams.
    let writer_db = db.name.clone();
    let stop_writing = Arc::new(AtomicBool::new(false));
    let stop_flag = stop_writing.clone();
    let writer = tokio::spawn(async move {
        let client = connect(&writer_db).await;
        let mut next = 3001;
        while !stop_flag.load(Ordering::Relaxed) && next < 6000 {
            client
                .batch_execute(&format!(
                    "INSERT INTO s VALUES ({next}, 'live'), ({}, 'live')",
                    next + 1
                ))
                .await
                .unwrap();
            next += 2;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        next
    });
    wait_for("writes before the slot exists", T, || async {
        let n: i64 = db
            .client
            .query_one("SELECT count(*) FROM s WHERE v = 'live'", &[])
            .await
            .unwrap()
            .get(0);
        (n >= 20).then_some(())
    })
    .await;
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    // Let the writer run on past the snapshot start, then stop it and add a sentinel.
    wait_for("streamed writes", T, || async {
        let n: i64 = db
            .client
            .query_one("SELECT count(*) FROM s WHERE v = 'live'", &[])
            .await
            .unwrap()
            .get(0);
        (n > 400).then_some(())
    })
    .await;
    stop_writing.store(true, Ordering::Relaxed);
    let last = writer.await.unwrap();
    db.exec("INSERT INTO s VALUES (100000, 'sentinel')").await;

    let topic = format!("{prefix}.public.s");
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter()
            .any(|x| x.payload()["after"]["id"] == json!(100000))
    })
    .await;
    let mut seen: HashMap<i64, Vec<String>> = HashMap::new();
    for r in &recs {
        let p = r.payload();
        seen.entry(p["after"]["id"].as_i64().unwrap())
            .or_default()
            .push(p["op"].as_str().unwrap().to_string());
    }
    let expected: Vec<i64> = (1..last).chain([100000]).collect();
    for id in &expected {
        let ops = seen
            .get(id)
            .unwrap_or_else(|| panic!("row {id} missing (gap)"));
        assert_eq!(
            ops.len(),
            1,
            "row {id} delivered {} times: {ops:?} (overlap)",
            ops.len()
        );
        if *id <= 3000 {
            assert_eq!(ops[0], "r", "pre-existing row {id} comes from the snapshot");
        }
    }
    assert_eq!(seen.len(), expected.len());
    assert!(
        seen.values().any(|o| o[0] == "c"),
        "some rows were streamed"
    );

    // Snapshot markers across the two tables (public.s, then public.z in name order).
    let z = read_n(&env().kafka, &format!("{prefix}.public.z"), 2, T).await;
    let snap: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.payload()["op"] == json!("r"))
        .collect();
    assert_eq!(snap[0].payload()["source"]["snapshot"], json!("first"));
    assert_eq!(snap[1].payload()["source"]["snapshot"], json!("true"));
    assert_eq!(
        snap.last().unwrap().payload()["source"]["snapshot"],
        json!("last_in_data_collection")
    );
    assert_eq!(
        z[0].payload()["source"]["snapshot"],
        json!("first_in_data_collection")
    );
    assert_eq!(z[1].payload()["source"]["snapshot"], json!("last"));
    let streamed = recs
        .iter()
        .find(|r| r.payload()["op"] == json!("c"))
        .unwrap();
    assert_eq!(streamed.payload()["source"]["snapshot"], json!("false"));
    assert_eq!(snap[0].payload()["before"], json!(null));
    assert!(
        snap[0].header("__debezium.context.runId").is_some(),
        "snapshot rows carry the context headers"
    );
    let snapshot_rows = snap.len();
    c.stop().await.unwrap();

    // A restart does not snapshot again (the offsets record completion).
    db.exec("INSERT INTO s VALUES (100001, 'after-restart')")
        .await;
    let c = start(&raw);
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter()
            .any(|x| x.payload()["after"]["id"] == json!(100001))
    })
    .await;
    let reads = recs
        .iter()
        .filter(|r| r.payload()["op"] == json!("r"))
        .count();
    assert_eq!(reads, snapshot_rows, "no second snapshot");
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_data_mode_streams_without_snapshot() {
    let db = TestDb::create("nodata").await;
    db.exec("CREATE TABLE public.s (id int PRIMARY KEY); INSERT INTO s VALUES (1), (2)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("nodata");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO s VALUES (3)").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.s"), 1, T).await;
    assert_eq!(recs[0].payload()["op"], json!("c"));
    assert_eq!(recs[0].payload()["after"]["id"], json!(3));
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// `initial_only` (no slot): the records carry the server's WAL position when the snapshot
/// began, as Debezium's do (it reads the current WAL location), not 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_only_records_carry_the_wal_position_of_the_snapshot() {
    let db = TestDb::create("inonly").await;
    db.exec("CREATE TABLE public.s (id int PRIMARY KEY); INSERT INTO s VALUES (1), (2)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("inonly");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "initial_only".into());
    let before = db.current_lsn().await;
    let c = start(&raw);
    let recs = read_n(&env().kafka, &format!("{prefix}.public.s"), 2, T).await;
    c.stop().await.unwrap();
    let after = db.current_lsn().await;
    for r in &recs {
        let lsn = r.payload()["source"]["lsn"].as_u64().unwrap();
        assert!(
            (before..=after).contains(&lsn),
            "source.lsn {lsn} between {before} and {after}"
        );
    }
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captured_tables_an_existing_publication_leaves_out_are_named() {
    let db = TestDb::create("pubgap").await;
    db.exec(
        "CREATE TABLE public.a (id int PRIMARY KEY); CREATE TABLE public.b (id int PRIMARY KEY); \
         CREATE TABLE public.p (id int, k int, PRIMARY KEY (id, k)) PARTITION BY LIST (k); \
         CREATE TABLE public.p1 PARTITION OF public.p FOR VALUES IN (1); \
         CREATE PUBLICATION pubgap FOR TABLE public.a, public.p WITH (publish_via_partition_root = true)",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("pubgap");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("publication.name".into(), "pubgap".into());
    let (config, _) = pgcdc::pipeline::validate_config(&raw).unwrap();
    // b is missing; the partition p1 is published through its root.
    assert_eq!(
        pgcdc::pg::setup::unpublished_tables(&db.client, &config)
            .await
            .unwrap(),
        ["public.b"]
    );
    db.exec("ALTER PUBLICATION pubgap ADD TABLE public.b").await;
    assert!(pgcdc::pg::setup::unpublished_tables(&db.client, &config)
        .await
        .unwrap()
        .is_empty());
    db.cleanup().await;
}

/// A snapshot record the broker refuses (the topic's `max.message.bytes` is lower than the
/// row) stops the connector, and the offsets never say the snapshot completed: the next start
/// takes it again instead of streaming past the missing row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_with_a_refused_record_is_not_recorded_as_complete() {
    let db = TestDb::create("snaprefused").await;
    db.exec("CREATE TABLE public.r (id int PRIMARY KEY, body text)")
        .await;
    db.exec("INSERT INTO r SELECT g, 'small' FROM generate_series(1, 5) g")
        .await;
    db.exec("INSERT INTO r VALUES (6, repeat('x', 20000))")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("snaprefused");
    let topic = format!("{prefix}.public.r");
    create_topic_with(&env().kafka, &topic, 1, &[("max.message.bytes", "10000")]).await;
    let c = start(&base_config(&db, &prefix, &env().kafka, dir.path()));
    let err = c.expect_error(T).await;
    assert!(err.one_line().contains(&topic), "{}", err.one_line());
    assert_eq!(
        err.kind(),
        ErrorKind::Kafka,
        "a record too large for the topic is fatal, with the fix: {}",
        err.one_line()
    );
    assert!(
        err.one_line().contains("max.message.bytes"),
        "{}",
        err.one_line()
    );
    let offsets = std::fs::read_to_string(dir.path().join("offsets.json")).unwrap_or_default();
    assert!(
        !offsets.contains("lsn_commit") && !offsets.contains("\"snapshot_completed\": true"),
        "the snapshot must still be recorded as in progress, but the offsets say: {offsets}"
    );
    db.cleanup().await;
}

/// Restarts during the snapshot: the first inside the initial snapshot, the second inside the
/// snapshot the next start takes again on the slot that already holds every change since the
/// first start. Each key's versions must still first arrive in commit order (none after a
/// newer one), and none may be lost: not an update committed while no connector ran, nor an
/// outbox row inserted and deleted meanwhile, which only the slot holds. The second start
/// must confirm the transactions it published ahead of its snapshot before reading the
/// tables, so that a crash loop landing in snapshots still moves the slot forward; and the
/// third must complete (in exactly-once mode too, with no change delivered twice to a
/// `read_committed` consumer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_during_the_snapshot_keep_each_keys_versions_in_commit_order() {
    restarts_during_the_snapshot(false, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_during_the_snapshot_in_exactly_once_mode_commit_and_repeat_nothing() {
    restarts_during_the_snapshot(true, 1).await;
}

/// The same with `snapshot.max.threads=3`: the readers import the fenced snapshot of an
/// existing slot, and their records go into the same Kafka transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_during_a_parallel_snapshot_in_exactly_once_mode_commit_and_repeat_nothing() {
    restarts_during_the_snapshot(true, 3).await;
}

async fn restarts_during_the_snapshot(exactly_once: bool, threads: usize) {
    const ROWS: i64 = 40_000;
    const HOT: i64 = 40;
    let db = TestDb::create("fence").await;
    db.exec(
        "CREATE TABLE public.v (id int PRIMARY KEY, ver int NOT NULL, pad text); \
         CREATE TABLE public.ob (id bigserial PRIMARY KEY, payload text)",
    )
    .await;
    db.exec(&format!(
        "INSERT INTO v SELECT g, 1, repeat('p', 200) FROM generate_series(1, {ROWS}) g"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("fence");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.fetch.size".into(), "200".into());
    raw.insert("snapshot.max.threads".into(), threads.to_string());
    let isolation = delivery(&mut raw, &prefix, exactly_once);
    let topic = format!("{prefix}.public.v");
    let sum_hot = || async {
        db.client
            .query_one("SELECT sum(ver) FROM v WHERE id <= $1", &[&(HOT as i32)])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };

    // 1. Stopped inside the initial snapshot, while writes go on.
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    let stop_writing = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_versions(db.name.clone(), HOT, stop_writing.clone()));
    // Read uncommitted: in exactly-once mode the snapshot's rows commit only at its end.
    read_until_with(&env().kafka, &topic, Isolation::Uncommitted, T, |r| {
        r.len() >= 500
    })
    .await;
    let first = c.stop().await.unwrap();
    assert!(
        (first.snapshot_rows as i64) < ROWS,
        "the first run must stop inside its snapshot (it read {} rows)",
        first.snapshot_rows
    );
    // Writes go on while no connector runs.
    let committed = sum_hot().await;
    wait_for("writes while stopped", T, || async {
        (sum_hot().await > committed + 50).then_some(())
    })
    .await;

    // 2. The snapshot is taken again on the existing slot: its first pass publishes what the
    // slot holds and the snapshot contains, which must be confirmed before the tables are read.
    let written = db.current_lsn().await;
    let c = start(&raw);
    db.wait_confirmed(
        &prefix,
        written,
        "the transactions published ahead of the snapshot",
    )
    .await;
    let second = c.stop().await.unwrap();
    assert!(
        (second.snapshot_rows as i64) < ROWS,
        "the second run must stop inside its snapshot (it read {} rows)",
        second.snapshot_rows
    );
    let committed = sum_hot().await;
    wait_for("writes while stopped", T, || async {
        (sum_hot().await > committed + 50).then_some(())
    })
    .await;

    // 3. The third start completes the snapshot and streams on.
    let c = start(&raw);
    let reads = at_least(ROWS as usize, |x| value_has(x, br#""op":"r""#));
    read_until_with(&env().kafka, &topic, isolation, T, reads).await;
    stop_writing.store(true, Ordering::Relaxed);
    let outbox_ids = writer.await.unwrap();
    let sentinel = HOT + 1;
    db.exec(&format!("UPDATE v SET ver = -1 WHERE id = {sentinel}"))
        .await;
    let end = db.current_lsn().await;
    db.wait_confirmed(&prefix, end, "the sentinel after the snapshot")
        .await;

    let sentinel_seen = at_least(1, |x| value_has(x, br#""ver":-1"#));
    let recs = read_until_with(&env().kafka, &topic, isolation, T, sentinel_seen).await;
    assert_eq!(after_ids(&recs).len() as i64, ROWS, "every row arrived");
    check_versions(&db, &recs, "v", HOT, exactly_once).await;

    let want = outbox_ids.len();
    let ob = read_until_with(
        &env().kafka,
        &format!("{prefix}.public.ob"),
        isolation,
        T,
        move |r| r.iter().filter(|x| x.payload()["op"] == json!("c")).count() >= want,
    )
    .await;
    let created: std::collections::HashSet<i64> = ob
        .iter()
        .filter(|x| x.payload()["op"] == json!("c"))
        .map(|x| x.payload()["after"]["id"].as_i64().unwrap())
        .collect();
    for id in &outbox_ids {
        assert!(created.contains(id),
            "outbox row {id}, inserted and deleted while the connector was stopped or restarting, was lost");
    }
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// Bumps `ver` of rows 1..=`hot` in turn, one transaction each, and every tenth turn inserts
/// an outbox row and deletes it in a second transaction; returns the outbox ids.
async fn write_versions(dbname: String, hot: i64, stop: Arc<AtomicBool>) -> Vec<i64> {
    let client = connect(&dbname).await;
    let mut ids = Vec::new();
    let mut turn = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let id = (turn % hot + 1) as i32;
        client
            .execute("UPDATE v SET ver = ver + 1 WHERE id = $1", &[&id])
            .await
            .unwrap();
        if turn % 10 == 0 {
            let row = client
                .query_one("INSERT INTO ob (payload) VALUES ('e') RETURNING id", &[])
                .await
                .unwrap();
            let ob: i64 = row.get(0);
            client
                .execute("DELETE FROM ob WHERE id = $1", &[&ob])
                .await
                .unwrap();
            ids.push(ob);
        }
        turn += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    ids
}

/// `snapshot.include.collection.list`: the snapshot reads only the captured tables it lists;
/// the others are streamed from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_reads_only_the_tables_snapshot_include_collection_list_names() {
    let db = TestDb::create("snapinc").await;
    db.exec(
        "CREATE TABLE public.a (id int PRIMARY KEY); CREATE TABLE public.b (id int PRIMARY KEY);
         INSERT INTO a VALUES (1), (2); INSERT INTO b VALUES (1), (2)",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("snapinc");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("table.include.list".into(), "public.a,public.b".into());
    raw.insert("snapshot.include.collection.list".into(), "public.a".into());
    raw.insert(
        "snapshot.tables.order.by.row.count".into(),
        "descending".into(),
    );
    let c = start(&raw);
    let a = read_n(&env().kafka, &format!("{prefix}.public.a"), 2, T).await;
    assert!(a.iter().all(|r| r.payload()["op"] == "r"));
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO b VALUES (3)").await;
    let b = read_n(&env().kafka, &format!("{prefix}.public.b"), 1, T).await;
    let ops: Vec<(String, i64)> = b
        .iter()
        .map(|r| {
            let p = r.payload();
            (
                p["op"].as_str().unwrap().to_string(),
                p["after"]["id"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ops, [("c".to_string(), 3)], "b was not snapshotted");
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// `snapshot.select.statement.overrides`: the snapshot reads a table through its query (rows
/// filtered, a column left out reads as null); a query returning a column the table lacks stops
/// the connector with a config error naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_reads_a_table_through_its_select_override() {
    let db = TestDb::create("snapsel").await;
    db.exec(
        "CREATE TABLE public.a (id int PRIMARY KEY, v text, w text);
         INSERT INTO a VALUES (1, 'one', 'x'), (2, 'two', 'y'), (3, 'three', 'z')",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("snapsel");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert(
        "snapshot.select.statement.overrides".into(),
        "public.a".into(),
    );
    raw.insert(
        "snapshot.select.statement.overrides.public.a".into(),
        "SELECT id, v FROM public.a WHERE id >= 2 ORDER BY id;".into(),
    );
    let c = start(&raw);
    let recs = read_n(&env().kafka, &format!("{prefix}.public.a"), 2, T).await;
    let rows: Vec<serde_json::Value> = recs.iter().map(|r| r.payload()["after"].clone()).collect();
    assert_eq!(
        rows,
        [
            json!({"id": 2, "v": "two", "w": null}),
            json!({"id": 3, "v": "three", "w": null})
        ]
    );
    c.stop().await.unwrap();

    let prefix = unique("snapselbad");
    let dir = tempfile::tempdir().unwrap();
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert(
        "snapshot.select.statement.overrides".into(),
        "public.a".into(),
    );
    raw.insert(
        "snapshot.select.statement.overrides.public.a".into(),
        "SELECT id, v AS nope FROM public.a".into(),
    );
    let err = start(&raw).expect_error(T).await;
    assert_eq!(
        err.kind(),
        pgcdc::error::ErrorKind::Config,
        "{}",
        err.one_line()
    );
    assert!(
        err.message().contains("returns column \"nope\""),
        "{}",
        err.one_line()
    );
    db.cleanup().await;
}

/// `notification.enabled.channels=sink`: the snapshot's notifications on their topic, in
/// Debezium's order (STARTED, per table IN_PROGRESS and TABLE_SCAN_COMPLETED with its row
/// count, COMPLETED), and SKIPPED on a start without a snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_notifications_go_to_the_sink_topic_and_a_start_without_snapshot_says_skipped() {
    let db = TestDb::create("notes").await;
    db.exec(
        "CREATE TABLE public.a (id int PRIMARY KEY); CREATE TABLE public.b (id int PRIMARY KEY); INSERT INTO a VALUES (1), (2); INSERT INTO b VALUES (1)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("notes");
    let topic = format!("{prefix}.notifications");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("notification.enabled.channels".into(), "log,sink".into());
    raw.insert("notification.sink.topic.name".into(), topic.clone());
    let c = start(&raw);
    let records = read_n(&env().kafka, &topic, 6, T).await;
    c.stop().await.unwrap();
    let kinds: Vec<String> = records
        .iter()
        .map(|r| r.payload()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "STARTED",
            "IN_PROGRESS",
            "TABLE_SCAN_COMPLETED",
            "IN_PROGRESS",
            "TABLE_SCAN_COMPLETED",
            "COMPLETED"
        ]
    );
    let scan_a = records[2].payload();
    assert_eq!(scan_a["aggregate_type"], "Initial Snapshot");
    assert_eq!(scan_a["additional_data"]["scanned_collection"], "public.a");
    assert_eq!(scan_a["additional_data"]["total_rows_scanned"], "2");
    assert_eq!(
        scan_a["additional_data"]["data_collections"],
        "public.a,public.b"
    );
    assert_eq!(scan_a["additional_data"]["connector_name"], prefix.as_str());
    assert_eq!(
        records[2].key_json().unwrap()["payload"]["id"],
        scan_a["id"]
    );
    let c = start(&raw);
    let records = read_n(&env().kafka, &topic, 7, T).await;
    c.stop().await.unwrap();
    assert_eq!(records[6].payload()["type"], "SKIPPED");
    db.cleanup().await;
}

/// `snapshot.max.threads`: a table of many pages is read in page ranges by several connections
/// in one snapshot. Every row arrives once, with the key and value the serial snapshot gives;
/// the records of the table interleave, and the `source.snapshot` markers stay exact (the
/// table's first record `first_in_data_collection`, not `first`, since the empty table `e` is
/// read first, as Debezium marks it; its last `last_in_data_collection`; a one-page table read
/// after it ends the snapshot with `last`). Table `o` has one row in its first range and the
/// others at its end: that range's only row, handed over first, is the table's first record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_snapshot_reads_every_row_once_as_the_serial_snapshot_does() {
    let db = TestDb::create("psnap").await;
    db.exec(
        "CREATE TABLE public.p (id int PRIMARY KEY, n int, txt text, ts timestamptz, \
           num numeric(10,2), j jsonb, u uuid) WITH (autovacuum_enabled = false);
         CREATE TABLE public.q (id int PRIMARY KEY, v text);
         CREATE TABLE public.e (id int PRIMARY KEY);
         CREATE TABLE public.o (id int PRIMARY KEY, v text);
         INSERT INTO o SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
         DELETE FROM o WHERE id BETWEEN 2 AND 18500;
         INSERT INTO p SELECT g, g % 7, md5(g::text), '2026-01-01'::timestamptz + g * interval '1 s', \
           g / 100.0, jsonb_build_object('g', g), md5(g::text)::uuid FROM generate_series(1, 20000) g;
         DELETE FROM p WHERE id % 10 = 3;
         UPDATE p SET txt = 'updated' WHERE id % 1000 = 1;
         INSERT INTO q SELECT g, 'q' FROM generate_series(1, 5) g",
    )
    .await;
    db.exec("VACUUM o").await;
    let alive: i64 = db
        .client
        .query_one("SELECT count(*) FROM p", &[])
        .await
        .unwrap()
        .get(0);
    let pages: i64 = db
        .client
        .query_one("SELECT pg_relation_size('p') / 8192", &[])
        .await
        .unwrap()
        .get(0);
    assert!(pages > 40, "p spans many pages ({pages})");
    let dir = tempfile::tempdir().unwrap();

    let snapshot_of = |threads: &'static str| {
        let prefix = unique("psnap");
        let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
        raw.insert(
            "offset.storage.file.filename".into(),
            dir.path()
                .join(format!("{prefix}.json"))
                .to_string_lossy()
                .into(),
        );
        raw.insert("snapshot.max.threads".into(), threads.into());
        raw.insert("snapshot.max.threads.multiplier".into(), "3".into());
        (prefix, raw)
    };
    let (serial_prefix, serial_raw) = snapshot_of("1");
    let c = start(&serial_raw);
    let serial = read_n(
        &env().kafka,
        &format!("{serial_prefix}.public.p"),
        alive as usize,
        T,
    )
    .await;
    c.stop().await.unwrap();
    let (prefix, raw) = snapshot_of("4");
    let c = start(&raw);
    let p = read_n(
        &env().kafka,
        &format!("{prefix}.public.p"),
        alive as usize,
        T,
    )
    .await;
    let q = read_n(&env().kafka, &format!("{prefix}.public.q"), 5, T).await;
    let o = read_n(&env().kafka, &format!("{prefix}.public.o"), 1_501, T).await;
    let stats = c.stop().await.unwrap();
    assert_eq!(
        stats.snapshot_rows as i64,
        alive + 5 + 1_501,
        "rows counted"
    );

    // Every row once, each with the serial snapshot's key and value.
    let by_id = |recs: &[Rec]| -> HashMap<i64, (serde_json::Value, serde_json::Value)> {
        recs.iter()
            .map(|r| {
                let p = r.payload();
                let key = r.key_json().unwrap()["payload"].clone();
                (
                    p["after"]["id"].as_i64().unwrap(),
                    (key, p["after"].clone()),
                )
            })
            .collect()
    };
    let (got, want) = (by_id(&p), by_id(&serial));
    assert_eq!(p.len() as i64, alive, "one record per row");
    assert_eq!(got.len() as i64, alive, "no row twice");
    assert_eq!(got, want, "the serial snapshot's keys and values");

    // Read in parallel: the ids do not arrive in the serial (physical) order.
    let order = |recs: &[Rec]| -> Vec<i64> {
        recs.iter()
            .map(|r| r.payload()["after"]["id"].as_i64().unwrap())
            .collect()
    };
    assert_ne!(order(&p), order(&serial), "the ranges interleave");

    // Markers.
    let markers = |recs: &[Rec]| -> Vec<String> {
        recs.iter()
            .map(|r| {
                r.payload()["source"]["snapshot"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let pm = markers(&p);
    assert_eq!(pm[0], "first_in_data_collection");
    assert_eq!(pm[pm.len() - 1], "last_in_data_collection");
    assert!(
        pm[1..pm.len() - 1].iter().all(|m| m == "true"),
        "middle markers"
    );
    let om = markers(&o);
    assert_eq!(om[0], "first_in_data_collection", "o: {:?}", &om[..3]);
    assert_eq!(om[om.len() - 1], "last_in_data_collection");
    assert!(
        om[1..om.len() - 1].iter().all(|m| m == "true"),
        "o: middle markers"
    );
    let qm = markers(&q);
    assert_eq!(
        qm,
        ["first_in_data_collection", "true", "true", "true", "last"]
    );
    db.cleanup().await;
}

/// An interrupted initial snapshot resumes where it was: the second start does not read the
/// table the first completed, and reads the table it was reading from where the first
/// stopped (plus the rows written before that point since), on the same slot; every key's
/// versions still arrive in commit order, every change once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_snapshot_resumes_where_it_was() {
    resumes_where_it_was(false, 1).await;
}

/// The same in exactly-once mode: `read_committed` consumers see every row of the table the
/// first run was reading once (the rows changed since, a second time in their new version).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_snapshot_in_exactly_once_mode_resumes_where_it_was() {
    resumes_where_it_was(true, 1).await;
}

/// The same with `snapshot.max.threads=2`: the table being read was read in two ranges at
/// once, each recorded as far as it was committed; the second run reads both rests (over two
/// connections again) and, in the parts read, only the rows written since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_parallel_snapshot_in_exactly_once_mode_resumes_where_each_range_was() {
    resumes_where_it_was(true, 2).await;
}

async fn resumes_where_it_was(exactly_once: bool, threads: usize) {
    const ROWS_A: i64 = 3_000;
    const ROWS_B: i64 = 20_000;
    const HOT: i64 = 30;
    let db = TestDb::create("resume").await;
    db.exec(&format!(
        "CREATE TABLE public.a (id int PRIMARY KEY, ver int NOT NULL); \
         CREATE TABLE public.b (id int PRIMARY KEY, ver int NOT NULL, pad text); \
         INSERT INTO a SELECT g, 1 FROM generate_series(1, {ROWS_A}) g; \
         INSERT INTO b SELECT g, 1, repeat('p', 100) FROM generate_series(1, {ROWS_B}) g"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("resume");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.fetch.size".into(), "100".into());
    raw.insert("snapshot.max.threads".into(), threads.to_string());
    // A checkpoint at every table's end and after every fetch of a table read in order (each
    // waits for Kafka, which also slows the first run down enough to stop it inside table b).
    raw.insert("offset.flush.interval.ms".into(), "1".into());
    let isolation = delivery(&mut raw, &prefix, exactly_once);
    let (topic_a, topic_b) = (format!("{prefix}.public.a"), format!("{prefix}.public.b"));
    let reads = |n: i64| at_least(n as usize, |x| value_has(x, br#""op":"r""#));

    // 1. Stopped once table a is recorded complete and (read in order) part of table b,
    // while writes go on.
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    let stop_writing = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(bump_both(db.name.clone(), HOT, stop_writing.clone()));
    if exactly_once {
        // Rows are committed with the checkpoint that records them.
        let committed_b = reads(2_000);
        read_until_with(&env().kafka, &topic_b, Isolation::Committed, T, committed_b).await;
    } else {
        let file = dir.path().join("offsets.json");
        wait_for("part of table b recorded in the offsets", T, || async {
            let text = std::fs::read_to_string(&file).ok()?;
            let stored: serde_json::Value = serde_json::from_str(&text).ok()?;
            let offsets = own_offsets(&stored)?.clone();
            let completed = offsets["pgcdc_snapshot_completed_tables"] == json!(r#"["public.a"]"#);
            // At least 2,000 rows of b (about 90 to a page) recorded.
            let reading_b = offsets["pgcdc_snapshot_table_progress"]
                .as_str()
                .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
                .filter(|p| p["table"] == json!("public.b"))
                .map(|p| recorded_pages(&p["ranges"]))
                .is_some_and(|pages| pages >= 22);
            (completed && reading_b).then_some(())
        })
        .await;
    }
    let first = c.stop().await.unwrap();
    assert!(
        (first.snapshot_rows as i64) < ROWS_A + ROWS_B,
        "the first run must stop inside table b (it read {} rows)",
        first.snapshot_rows
    );
    let sum_hot = || async {
        db.client
            .query_one("SELECT sum(ver) FROM a WHERE id <= $1", &[&(HOT as i32)])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    let committed = sum_hot().await;
    wait_for("writes while stopped", T, || async {
        (sum_hot().await > committed + 20).then_some(())
    })
    .await;
    // Rows from the part of b not read yet (from full pages) move into its first pages,
    // which were read: the next start must read them there (they are new there since the
    // first snapshot). VACUUM frees the space once no snapshot of the server (another test
    // creating its slot, say) still needs the deleted rows.
    db.exec("DELETE FROM b WHERE id BETWEEN 100 AND 300").await;
    let next = std::sync::atomic::AtomicI32::new(19_001);
    wait_for("updated rows moved into b's first pages", T, || async {
        db.exec("VACUUM b").await;
        let from = next.fetch_sub(20, Ordering::Relaxed);
        let sql = "UPDATE b SET ver = ver + 1 WHERE id BETWEEN $1 AND $1 + 19 \
                   AND (ctid::text::point)[0] >= 20 RETURNING (ctid::text::point)[0] < 20";
        let rows = db.client.query(sql, &[&from]).await.unwrap();
        rows.iter().any(|r| r.get::<_, bool>(0)).then_some(())
    })
    .await;

    // What the first run recorded, shown if the second one reads more than the rest of b.
    let recorded = std::fs::read_to_string(dir.path().join("offsets.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|stored| own_offsets(&stored).cloned())
        .map(|o| o["pgcdc_snapshot_table_progress"].to_string());

    // 2. The second start reads only table b and streams on.
    let c = start(&raw);
    read_until_with(&env().kafka, &topic_b, isolation, T, reads(ROWS_B)).await;
    stop_writing.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    db.exec(&format!(
        "UPDATE a SET ver = -1 WHERE id = {0}; UPDATE b SET ver = -1 WHERE id = {0}",
        HOT + 1
    ))
    .await;
    let end = db.current_lsn().await;
    db.wait_confirmed(&prefix, end, "the sentinels after the snapshot")
        .await;
    let second = c.stop().await.unwrap();
    assert!(
        (second.snapshot_rows as i64) < ROWS_B - 1_000,
        "the second run reads the rest of table b only ({} rows; the first read {}, and recorded {recorded:?})",
        second.snapshot_rows,
        first.snapshot_rows
    );
    for (topic, table, rows) in [(&topic_a, "a", ROWS_A), (&topic_b, "b", ROWS_B)] {
        let sentinel = at_least(1, |x| value_has(x, br#""ver":-1"#));
        let recs = read_until_with(&env().kafka, topic, isolation, T, sentinel).await;
        check_versions(&db, &recs, table, HOT, exactly_once).await;
        let mut reads: HashMap<i64, usize> = HashMap::new();
        for r in recs.iter().filter(|r| r.payload()["op"] == json!("r")) {
            *reads
                .entry(r.payload()["after"]["id"].as_i64().unwrap())
                .or_default() += 1;
        }
        assert_eq!(reads.len() as i64, rows, "table {table}: every row read");
        if exactly_once || table == "a" {
            // Only a row written since the first run read it is read again (in its new
            // version, after the change that made it: check_versions checks the order).
            let again: Vec<_> = reads
                .iter()
                .filter(|(id, n)| **n > 1 && **id > HOT)
                .collect();
            assert!(
                again.is_empty(),
                "table {table}: rows read twice: {again:?}"
            );
        }
    }
    db.cleanup().await;
}

/// A row changed inside a `SAVEPOINT` of a transaction that was running when the interrupted
/// snapshot was taken carries its subtransaction's id, which `pg_current_snapshot()` does not
/// list: the resumed snapshot still reads it again, in the version that transaction committed,
/// after the change (as the row updated at the transaction's top level).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_snapshot_reads_again_rows_a_subtransaction_changed_while_it_was_interrupted() {
    let db = TestDb::create("subxact").await;
    db.exec(
        "CREATE TABLE public.b (id int PRIMARY KEY, ver int NOT NULL, pad text) \
           WITH (fillfactor = 50); \
         INSERT INTO b SELECT g, 1, repeat('p', 100) FROM generate_series(1, 20000) g; \
         CREATE TABLE public.other (id int PRIMARY KEY); INSERT INTO other VALUES (1)",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("subxact");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("table.include.list".into(), "public.b".into());
    raw.insert("snapshot.fetch.size".into(), "100".into());
    raw.insert("offset.flush.interval.ms".into(), "1".into());
    let file = dir.path().join("offsets.json");
    let progress = || -> Option<serde_json::Value> {
        let stored: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).ok()?).ok()?;
        let p = own_offsets(&stored)?["pgcdc_snapshot_table_progress"].clone();
        serde_json::from_str(p.as_str()?).ok()
    };
    // 1. Stopped inside the table.
    let c = start(&raw);
    wait_for("part of the table recorded", T, || async {
        progress()
            .filter(|p| recorded_pages(&p["ranges"]) >= 22)
            .map(|_| ())
    })
    .await;
    c.stop().await.unwrap();
    let first = progress().unwrap()["snapshot"].clone();
    // 2. A transaction changes row 2 at its top level and row 1 in a savepoint, and stays open
    // (another one commits after it, so that the next snapshot's xmax passes its ids) while a
    // second run takes its snapshot and records it.
    let writer = connect(&db.name).await;
    writer
        .batch_execute(
            "BEGIN; UPDATE b SET ver = 2 WHERE id = 2; SAVEPOINT s; \
             UPDATE b SET ver = 2 WHERE id = 1; RELEASE s",
        )
        .await
        .unwrap();
    db.exec("UPDATE other SET id = 2").await;
    let c = start(&raw);
    wait_for("the second run's snapshot recorded", T, || async {
        progress()
            .filter(|p| p["snapshot"] != first && p["table"] == json!("public.b"))
            .map(|_| ())
    })
    .await;
    c.stop().await.unwrap();
    writer.batch_execute("COMMIT").await.unwrap();
    // The updates stayed in the first page (HOT, the pages are half empty), which was read.
    let pages: Vec<i32> = db
        .client
        .query(
            "SELECT (ctid::text::point)[0]::int FROM b WHERE id <= 2",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(pages, [0, 0]);
    // 3. The third run completes the snapshot: rows 1 and 2 are read again in version 2.
    let c = start(&raw);
    let topic = format!("{prefix}.public.b");
    // Both rows read again in version 2 (`"ver":2` only in those records and the updates).
    let reread = at_least(2, |r| {
        value_has(r, br#""op":"r""#) && value_has(r, br#""ver":2"#)
    });
    let recs = read_until_with(&env().kafka, &topic, Isolation::Uncommitted, T, reread).await;
    c.stop().await.unwrap();
    for id in [1, 2] {
        let ops: Vec<String> = recs
            .iter()
            .map(|r| r.payload())
            .filter(|p| p["after"]["id"] == json!(id))
            .map(|p| format!("{}{}", p["op"].as_str().unwrap(), p["after"]["ver"]))
            .collect();
        assert_eq!(
            ops.last().map(String::as_str),
            Some("r2"),
            "row {id}: {ops:?}"
        );
    }
    db.cleanup().await;
}

/// How many pages the ranges of a `pgcdc_snapshot_table_progress` record as read (an
/// open-ended range counts none).
fn recorded_pages(ranges: &serde_json::Value) -> u64 {
    let page = |v: &serde_json::Value| -> Option<u64> {
        let text = v.as_str()?.trim_start_matches('(');
        text.split(',').next()?.parse().ok()
    };
    ranges
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some(page(&r[1])?.saturating_sub(page(&r[0])?)))
        .sum()
}

/// Sets `raw` up for exactly-once delivery (offsets in the topic `<prefix>-offsets`) when
/// `exactly_once`; returns the isolation a consumer of the connector's topics reads with.
fn delivery(raw: &mut pgcdc::config::RawConfig, prefix: &str, exactly_once: bool) -> Isolation {
    if !exactly_once {
        return Isolation::Uncommitted;
    }
    raw.remove("offset.storage.file.filename");
    raw.insert("exactly.once.source.support".into(), "enabled".into());
    raw.insert("offsets.storage.topic".into(), format!("{prefix}-offsets"));
    raw.insert("offset.storage.partitions".into(), "1".into());
    Isolation::Committed
}

/// Bumps `ver` of rows 1..=`hot` of tables a and b in turn, one transaction each.
async fn bump_both(dbname: String, hot: i64, stop: Arc<AtomicBool>) {
    let client = connect(&dbname).await;
    let mut turn = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let id = (turn % hot + 1) as i32;
        let table = if turn % 2 == 0 { "a" } else { "b" };
        client
            .execute(
                &format!("UPDATE {table} SET ver = ver + 1 WHERE id = $1"),
                &[&id],
            )
            .await
            .unwrap();
        turn += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// For `table`'s rows 1..=`hot` in `recs`: the versions first arrive in increasing order, and
/// every version since the slot was created (all rows were at version 1) arrives; exactly-once,
/// no change arrives twice.
async fn check_versions(db: &TestDb, recs: &[Rec], table: &str, hot: i64, exactly_once: bool) {
    let finals: HashMap<i64, i64> = db
        .client
        .query(
            &format!("SELECT id, ver FROM {table} WHERE id <= $1"),
            &[&(hot as i32)],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get::<_, i32>(0) as i64, row.get::<_, i32>(1) as i64))
        .collect();
    let mut first_seen: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut changes: HashMap<(i64, i64), usize> = HashMap::new();
    for r in recs.iter().filter(|r| !r.payload()["after"].is_null()) {
        let payload = r.payload();
        let (id, ver) = (
            payload["after"]["id"].as_i64().unwrap(),
            payload["after"]["ver"].as_i64().unwrap(),
        );
        if payload["op"] != json!("r") {
            *changes.entry((id, ver)).or_default() += 1;
        }
        let versions = first_seen.entry(id).or_default();
        if ver == -1 || versions.contains(&ver) {
            continue;
        }
        if let Some(newest) = versions.last() {
            assert!(
                ver > *newest,
                "{table} row {id}: version {ver} first arrived after version {newest}"
            );
        }
        versions.push(ver);
    }
    for (id, last) in &finals {
        let streamed: Vec<i64> = first_seen[id].iter().copied().filter(|v| *v >= 2).collect();
        assert_eq!(
            streamed,
            (2..=*last).collect::<Vec<_>>(),
            "{table} row {id}: every version since the slot was created, in order"
        );
    }
    if exactly_once {
        let twice: Vec<_> = changes.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{table}: changes seen twice: {twice:?}");
    }
}
