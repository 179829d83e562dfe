//! Offsets in a Kafka topic, as Kafka Connect keeps them for Debezium: the record's key and
//! value bytes, its partition, a compacted topic, and a restart that resumes from them.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::ClientConfig;

use crate::harness::*;

const T: Duration = Duration::from_secs(120);

/// The topic's `cleanup.policy`.
async fn cleanup_policy(topic: &str) -> Option<String> {
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &env().kafka)
        .create()
        .expect("admin");
    let results = admin
        .describe_configs([&ResourceSpecifier::Topic(topic)], &AdminOptions::new())
        .await
        .expect("describe configs");
    results
        .into_iter()
        .flatten()
        .flat_map(|r| r.entries)
        .find(|e| e.name == "cleanup.policy")
        .and_then(|e| e.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_in_a_topic_are_connects_bytes_on_connects_partition_and_survive_a_restart() {
    let db = TestDb::create("offtopic").await;
    db.exec(
        "CREATE TABLE public.o (id int PRIMARY KEY, v text); INSERT INTO o SELECT g, 'snap' FROM generate_series(1, 5) g")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("offtopic");
    let offsets_topic = format!("{prefix}-offsets");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.remove("offset.storage.file.filename");
    raw.insert("offsets.storage.topic".into(), offsets_topic.clone());
    raw.insert("offset.storage.partitions".into(), "3".into());
    let data = format!("{prefix}.public.o");

    let c = start(&raw);
    read_n(&env().kafka, &data, 5, T).await;
    db.exec("INSERT INTO o VALUES (6, 'streamed')").await;
    read_n(&env().kafka, &data, 6, T).await;
    let stats = c.stop().await.unwrap();
    assert_eq!(stats.snapshot_rows, 5);
    assert!(
        !dir.path().join("offsets.json").exists(),
        "no offsets file when a topic keeps them"
    );

    let key = format!(r#"["{prefix}",{{"server":"{prefix}"}}]"#);
    let records = read_until(&env().kafka, &offsets_topic, T, {
        let key = key.clone();
        move |recs: &[Rec]| {
            recs.iter().any(|r| {
                r.key.as_deref() == Some(key.as_bytes())
                    && r.value_json().is_some_and(|v| {
                        v.get("lsn_commit").is_some() && v.get("snapshot").is_none()
                    })
            })
        }
    })
    .await;
    let ours: Vec<&Rec> = records
        .iter()
        .filter(|r| r.key.as_deref() == Some(key.as_bytes()))
        .collect();
    // Besides its offsets, pgcdc records the cluster they were written against under a key of
    // its own (which Debezium never reads), on Kafka Connect's partition for that key.
    let cluster_key = format!(r#"["{prefix}",{{"server":"{prefix}","pgcdc":"cluster"}}]"#);
    let cluster: Vec<&Rec> = records
        .iter()
        .filter(|r| r.key.as_deref() == Some(cluster_key.as_bytes()))
        .collect();
    assert_eq!(
        ours.len() + cluster.len(),
        records.len(),
        "only this connector's records"
    );
    let recorded = cluster
        .last()
        .expect("the cluster is recorded")
        .value_json()
        .unwrap();
    assert!(
        recorded["system_identifier"].is_string() && recorded["timeline"].is_u64(),
        "{recorded}"
    );
    assert_eq!(
        cluster[0].partition,
        java_partition(cluster_key.as_bytes(), 3)
    );
    for r in &ours {
        assert_eq!(
            r.partition,
            java_partition(key.as_bytes(), 3),
            "Kafka Connect's partition for the key"
        );
    }
    let last = ours.last().unwrap();
    let value = String::from_utf8(last.value.clone().unwrap()).unwrap();
    let fields: Vec<String> = last
        .value_json()
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        fields,
        [
            "lsn_proc",
            "messageType",
            "lsn_commit",
            "lsn",
            "txId",
            "ts_usec"
        ],
        "Debezium's offset map in its HashMap's order: {value}"
    );
    assert!(
        !value.contains(' '),
        "compact JSON as Connect writes it: {value}"
    );
    assert_eq!(
        cleanup_policy(&offsets_topic).await.as_deref(),
        Some("compact")
    );

    // A restart reads the topic: the snapshot is done, streaming resumes.
    let c = start(&raw);
    db.exec("INSERT INTO o VALUES (7, 'after restart')").await;
    read_until(&env().kafka, &data, T, |recs: &[Rec]| {
        recs.iter()
            .any(|r| r.value.is_some() && r.payload()["after"]["id"] == 7)
    })
    .await;
    let stats = c.stop().await.unwrap();
    assert_eq!(stats.snapshot_rows, 0, "no new snapshot after a restart");
    db.cleanup().await;
}

/// Writes `offsets` (a Debezium offset map) as this connector's entry of the offsets file.
fn write_offsets_file(dir: &std::path::Path, prefix: &str, offsets: serde_json::Value) {
    let key = format!(r#"["{prefix}",{{"server":"{prefix}"}}]"#);
    let file = serde_json::json!({ key: offsets });
    std::fs::write(dir.join("offsets.json"), file.to_string()).unwrap();
}

/// The situation after Debezium stops: its slot confirmed less than its offsets say it
/// published, and it stopped inside a transaction. pgcdc resumes from those offsets and
/// publishes exactly what Debezium had not: not the transactions the offsets cover, not the
/// first change of the partly published one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_from_debezium_offsets_ahead_of_the_slot_publishes_only_what_was_not_published() {
    let db = TestDb::create("resume").await;
    db.exec("CREATE TABLE public.r (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("resume");
    let raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let data = format!("{prefix}.public.r");
    // A first run creates the slot and records the (empty) snapshot as complete.
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    wait_for("the snapshot to be recorded", T, || async {
        let text = std::fs::read_to_string(dir.path().join("offsets.json")).unwrap_or_default();
        text.contains("\"lsn_commit\"").then_some(())
    })
    .await;
    c.stop().await.unwrap();

    // While nothing reads the slot: five transactions "Debezium published", then one it
    // published up to its first row, then two it never saw.
    for id in 1..=5 {
        db.exec(&format!("INSERT INTO r VALUES ({id})")).await;
    }
    let commit = db.current_lsn().await;
    let mut client = connect(&db.name).await;
    let tx = client.transaction().await.unwrap();
    tx.execute("INSERT INTO r VALUES (6)", &[]).await.unwrap();
    let row = tx
        .query_one(
            "SELECT (pg_current_wal_insert_lsn() - '0/0')::int8, (txid_current() % 4294967296)::int8",
            &[],
        )
        .await
        .unwrap();
    let (after_first, xid): (i64, i64) = (row.get(0), row.get(1));
    tx.execute("INSERT INTO r VALUES (7), (8)", &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    db.exec("INSERT INTO r VALUES (9); INSERT INTO r VALUES (10)")
        .await;
    // Debezium's record for its last delivered change: row 6, before row 7's position.
    let proc_ = after_first as u64 - 1;
    write_offsets_file(
        dir.path(),
        &prefix,
        serde_json::json!({"lsn_proc": proc_, "messageType": "INSERT", "lsn_commit": commit,
                           "lsn": proc_, "txId": xid, "ts_usec": 1}),
    );
    assert!(
        db.confirmed_flush(&prefix).await < commit,
        "the slot is behind the offsets"
    );

    let c = start(&raw);
    let records = read_until(&env().kafka, &data, T, |recs: &[Rec]| {
        recs.iter()
            .any(|r| r.value.is_some() && r.payload()["after"]["id"] == 10)
    })
    .await;
    c.stop().await.unwrap();
    let ids: Vec<i64> = records
        .iter()
        .filter_map(|r| {
            r.value_json()
                .map(|_| r.payload()["after"]["id"].as_i64().unwrap())
        })
        .collect();
    assert_eq!(ids, [7, 8, 9, 10], "exactly the changes after the offsets");
    db.cleanup().await;
}

/// Offsets from another server (or a restored backup) point past the server's WAL: pgcdc
/// refuses them instead of skipping every new change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_past_the_servers_wal_are_refused() {
    let db = TestDb::create("ahead").await;
    db.exec("CREATE TABLE public.a (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("ahead");
    let raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    c.stop().await.unwrap();
    let far = db.current_lsn().await + (1 << 40);
    write_offsets_file(
        dir.path(),
        &prefix,
        serde_json::json!({"lsn_proc": far, "messageType": "COMMIT", "lsn_commit": far,
                           "lsn": far, "txId": 1, "ts_usec": 1}),
    );
    let err = start(&raw).expect_error(T).await;
    let msg = err.to_string();
    assert!(
        msg.contains("belong to another server") && msg.contains("offsets"),
        "{msg}"
    );
    assert!(!err.is_retriable());
    db.cleanup().await;
}

/// The `lsn_proc` of this connector's entry in the offsets file (0 if absent).
fn stored_lsn_proc(dir: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(dir.join("offsets.json")).unwrap_or_default();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    // The connector's offsets (pgcdc keeps its cluster in another entry of the file).
    file.as_object()
        .and_then(|o| o.values().find_map(|v| v["lsn_proc"].as_u64()))
        .unwrap_or(0)
}

/// A slot dropped and created again by someone else is ahead of the offsets: the changes in
/// between are gone. With `offset.mismatch.strategy=trust_offset` pgcdc refuses to start and
/// says what to do, unless `snapshot.mode=when_needed`, which takes a new snapshot;
/// `trust_slot` follows the slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_recreated_past_the_offsets_is_refused_unless_a_snapshot_or_the_strategy_covers_it()
{
    let db = TestDb::create("recreated").await;
    db.exec("CREATE TABLE public.r (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("recreated");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let data = format!("{prefix}.public.r");
    let recreate = |lost: i32| {
        let (db, prefix) = (&db, &prefix);
        async move {
            db.exec(&format!("SELECT pg_drop_replication_slot('{prefix}')"))
                .await;
            db.exec(&format!("INSERT INTO r VALUES ({lost})")).await;
            db.exec(&format!(
                "SELECT pg_create_logical_replication_slot('{prefix}', 'pgoutput')"
            ))
            .await;
        }
    };
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO r VALUES (1)").await;
    read_n(&env().kafka, &data, 1, T).await;
    c.stop().await.unwrap();
    recreate(2).await;

    raw.insert("offset.mismatch.strategy".into(), "trust_offset".into());
    let err = start(&raw).expect_error(T).await;
    let msg = err.to_string();
    assert!(
        msg.contains("has moved past the stored offsets")
            && msg.contains("restart_lsn")
            && msg.contains("snapshot.mode=when_needed")
            && msg.contains("offset.mismatch.strategy=trust_slot"),
        "{msg}"
    );
    assert!(!err.is_retriable());

    let mut when_needed = raw.clone();
    when_needed.insert("snapshot.mode".into(), "when_needed".into());
    let c = start(&when_needed);
    let records = read_until(&env().kafka, &data, T, |recs: &[Rec]| {
        recs.iter().any(|r| {
            r.value.is_some() && r.payload()["op"] == "r" && r.payload()["after"]["id"] == 2
        })
    })
    .await;
    assert_eq!(
        records
            .iter()
            .filter(|r| r.value.is_some() && r.payload()["op"] == "r")
            .count(),
        2
    );
    c.stop().await.unwrap();

    recreate(3).await;
    let mut trust_slot = raw.clone();
    trust_slot.insert("offset.mismatch.strategy".into(), "trust_slot".into());
    let c = start(&trust_slot);
    db.wait_confirmed(&prefix, db.current_lsn().await, "the slot to be streamed")
        .await;
    db.exec("INSERT INTO r VALUES (4)").await;
    let records = read_until(&env().kafka, &data, T, |recs: &[Rec]| {
        recs.iter()
            .any(|r| r.value.is_some() && r.payload()["after"]["id"] == 4)
    })
    .await;
    assert!(
        !records
            .iter()
            .any(|r| r.value.is_some() && r.payload()["after"]["id"] == 3),
        "the row written while no slot existed is not in the stream"
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// A slot left behind the offsets (here by `lsn.flush.mode=manual`) is advanced to them by
/// `trust_offset` before streaming, so the server does not send the published transactions
/// again; `no_validation` streams them again and skips them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_offset_advances_a_slot_behind_the_offsets() {
    for (strategy, resent) in [("trust_offset", false), ("no_validation", true)] {
        let db = TestDb::create("advance").await;
        db.exec("CREATE TABLE public.a (id int PRIMARY KEY)").await;
        let dir = tempfile::tempdir().unwrap();
        let prefix = unique("advance");
        let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
        let data = format!("{prefix}.public.a");
        raw.insert("lsn.flush.mode".into(), "manual".into());
        let c = start(&raw);
        db.wait_for_slot(&prefix).await;
        db.exec("INSERT INTO a VALUES (1); INSERT INTO a VALUES (2)")
            .await;
        // The offsets hold commit positions: past this one, they cover the third insert.
        let before_third = db.current_lsn().await;
        db.exec("INSERT INTO a VALUES (3)").await;
        read_n(&env().kafka, &data, 3, T).await;
        wait_for("the offsets to cover the three inserts", T, || async {
            (stored_lsn_proc(dir.path()) > before_third).then_some(())
        })
        .await;
        c.stop().await.unwrap();
        assert!(
            db.confirmed_flush(&prefix).await < before_third,
            "manual: the slot stayed behind"
        );

        raw.remove("lsn.flush.mode");
        raw.insert("offset.mismatch.strategy".into(), strategy.into());
        let c = start(&raw);
        db.wait_confirmed(
            &prefix,
            stored_lsn_proc(dir.path()),
            "the slot to reach the offsets",
        )
        .await;
        let stats = c.stop().await.unwrap();
        assert_eq!(
            stats.change_events, 0,
            "{strategy}: nothing published twice"
        );
        assert_eq!(
            stats.transactions > 0,
            resent,
            "{strategy}: the server sent the published transactions again: {}",
            stats.transactions
        );
        db.cleanup().await;
    }
}

/// An offsets topic whose records would expire (`cleanup.policy=delete`) is refused: at start,
/// as Kafka Connect's worker refuses it, and while running, when the topic was deleted and the
/// brokers created it again on the next write with their defaults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offsets_topic_that_is_not_compacted_is_refused_at_start_and_when_recreated() {
    let db = TestDb::create("offpolicy").await;
    db.exec("CREATE TABLE public.o (id int PRIMARY KEY); INSERT INTO o VALUES (1)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("offpolicy");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.remove("offset.storage.file.filename");
    let data = format!("{prefix}.public.o");

    // At start: a topic made with the brokers' defaults.
    let deleting = format!("{prefix}-deleting");
    create_topic_with(&env().kafka, &deleting, 1, &[("cleanup.policy", "delete")]).await;
    raw.insert("offsets.storage.topic".into(), deleting.clone());
    let e = start(&raw).expect_error(T).await;
    let msg = e.report();
    assert_eq!(e.kind(), pgcdc::error::ErrorKind::Config, "{msg}");
    assert!(
        msg.contains(&format!(
            "offsets topic {deleting} has cleanup.policy=delete"
        )) && msg.contains("--add-config cleanup.policy=compact"),
        "{msg}"
    );

    // While running: the compacted topic pgcdc made is deleted, and the next offsets write
    // makes the brokers create it again (auto.create.topics.enable), not compacted.
    let offsets_topic = format!("{prefix}-offsets");
    raw.insert("offsets.storage.topic".into(), offsets_topic.clone());
    let mut c = connector(&raw);
    c.start().unwrap();
    read_n(&env().kafka, &data, 1, T).await;
    assert_eq!(
        cleanup_policy(&offsets_topic).await.as_deref(),
        Some("compact")
    );
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &env().kafka)
        .create()
        .expect("admin");
    admin
        .delete_topics(&[&offsets_topic], &AdminOptions::new())
        .await
        .expect("delete the offsets topic");
    let mut id = 2;
    let wait = c.wait();
    tokio::pin!(wait);
    let e = loop {
        // Each change moves the offsets, whose write re-creates the topic.
        db.exec(&format!("INSERT INTO o VALUES ({id})")).await;
        id += 1;
        if let Ok(ended) = tokio::time::timeout(Duration::from_millis(100), &mut wait).await {
            break ended.expect_err("the connector fails");
        }
        assert!(id < 600, "the run kept going on a re-created offsets topic");
    };
    assert_eq!(e.kind(), pgcdc::error::ErrorKind::Config);
    let msg = e.report();
    assert!(
        msg.contains(&format!(
            "offsets topic {offsets_topic} has cleanup.policy=delete"
        )),
        "{msg}"
    );
    db.cleanup().await;
}
