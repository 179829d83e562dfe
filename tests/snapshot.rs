//! The initial snapshot: consistent with the stream through the slot's exported snapshot.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::harness::*;

const T: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_then_stream_has_no_gap_and_no_duplicate() {
    let db = TestDb::create("snap").await;
    db.exec("CREATE TABLE public.s (id int PRIMARY KEY, v text); CREATE TABLE public.z (id int PRIMARY KEY)").await;
    db.exec("INSERT INTO s SELECT g, 'pre' FROM generate_series(1, 3000) g; INSERT INTO z VALUES (1), (2)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("snap");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.fetch.size".into(), "500".into());

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
    let offsets = std::fs::read_to_string(dir.path().join("offsets.json")).unwrap_or_default();
    assert!(
        !offsets.contains("lsn_commit") && !offsets.contains("\"snapshot_completed\": true"),
        "the snapshot must still be recorded as in progress, but the offsets say: {offsets}"
    );
    db.cleanup().await;
}
