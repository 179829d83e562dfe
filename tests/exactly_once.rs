//! Exactly-once mode (`exactly.once.source.support=enabled`): every PostgreSQL transaction
//! reaches `read_committed` consumers whole, once, with the offsets record in the same Kafka
//! transaction; a restart repeats nothing; a zombie producer is fenced.
//! The crash loop in this mode is in `crash.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use pgcdc::config::{ExactlyOnceConfig, KafkaConfig, RawConfig, TransactionBoundary};
use pgcdc::convert::KafkaRecord;
use pgcdc::error::ErrorKind;
use pgcdc::lsn::Lsn;
use pgcdc::offsets::ack::{AckTracker, CommitInfo};
use pgcdc::sink::kafka::KafkaSink;
use pgcdc::sink::transactions::TransactionSettings;
use pgcdc::sink::Sink;

use crate::harness::*;

const T: Duration = Duration::from_secs(60);

/// An exactly-once config for `db` with its own offsets topic.
pub(crate) fn eos_config(
    db: &TestDb,
    prefix: &str,
    dir: &std::path::Path,
    boundary: &str,
) -> RawConfig {
    let mut raw = base_config(db, prefix, &env().kafka, dir);
    raw.remove("offset.storage.file.filename");
    for (k, v) in [
        ("exactly.once.source.support", "enabled"),
        ("offsets.storage.topic", &format!("{prefix}-offsets")),
        ("offset.storage.partitions", "1"),
        ("transaction.boundary", boundary),
        ("key.converter.schemas.enable", "false"),
        ("value.converter.schemas.enable", "false"),
    ] {
        raw.insert(k.into(), v.to_string());
    }
    raw
}

/// (id, op, v) of each change record (tombstones left out).
fn changes(records: &[Rec]) -> Vec<(i64, String, i64)> {
    records
        .iter()
        .filter_map(|r| {
            let v = r.value_json()?;
            let row = if v["op"] == "d" {
                &v["before"]
            } else {
                &v["after"]
            };
            Some((
                row["id"].as_i64()?,
                v["op"].as_str()?.to_string(),
                row["v"].as_i64()?,
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_publishes_each_change_once_across_restarts_with_its_offsets() {
    for boundary in ["poll", "connector", "interval"] {
        let db = TestDb::create("eos").await;
        db.exec(
            "CREATE TABLE t (id int8 PRIMARY KEY, v int8 NOT NULL); \
             INSERT INTO t SELECT g, 0 FROM generate_series(1, 5) g",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let prefix = unique("eos");
        let mut raw = eos_config(&db, &prefix, dir.path(), boundary);
        if boundary == "interval" {
            raw.insert("transaction.boundary.interval.ms".into(), "300".into());
        }
        let topic = format!("{prefix}.public.t");
        let run = start(&raw);
        read_n(&env().kafka, &topic, 5, T).await;
        for i in 0..3 {
            db.exec(&format!(
                "BEGIN; INSERT INTO t SELECT g, 1 FROM generate_series({0}, {0} + 9) g; UPDATE t SET v = v + 1 WHERE id = 1; COMMIT",
                100 + 10 * i
            ))
            .await;
        }
        read_n(&env().kafka, &topic, 5 + 33, T).await;
        run.stop().await.expect("graceful stop");

        // Written while stopped, then a restart: each change once, nothing again.
        db.exec("INSERT INTO t VALUES (500, 1); UPDATE t SET v = 10 WHERE id = 2")
            .await;
        let run = start(&raw);
        let records = read_n(&env().kafka, &topic, 5 + 33 + 2, T).await;
        // A position read before the insert: one read after it may include other tests' WAL,
        // which this connector's offsets never reach.
        let before = db.current_lsn().await;
        db.exec("INSERT INTO t VALUES (501, 1)").await;
        let end = db.current_lsn().await;
        db.wait_confirmed(&prefix, end, "the last insert").await;
        run.stop().await.expect("graceful stop");
        let records = read_until(&env().kafka, &topic, T, move |r| r.len() > records.len()).await;
        let got = changes(&records);
        let mut seen = HashMap::new();
        for c in &got {
            *seen.entry(c.clone()).or_insert(0) += 1;
        }
        let dups: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(dups.is_empty(), "{boundary}: duplicates {dups:?}");
        assert_eq!(got.len(), 5 + 33 + 3, "{boundary}: {got:?}");
        assert_eq!(got.last(), Some(&(501, "c".into(), 1)), "{boundary}");

        // The offsets topic holds this connector's position, written in the transactions.
        let offsets = read_until(&env().kafka, &format!("{prefix}-offsets"), T, move |r| {
            r.last()
                .and_then(Rec::value_json)
                .and_then(|v| v["lsn_commit"].as_u64())
                .is_some_and(|lsn| lsn > before)
        })
        .await;
        let last = offsets.last().unwrap();
        assert_eq!(
            last.key_str(),
            format!(r#"["{prefix}",{{"server":"{prefix}"}}]"#)
        );
        let value = last.value_json().unwrap();
        assert!(
            value["lsn_commit"].as_u64().unwrap() > before && value["snapshot"].is_null(),
            "{boundary}: {value}"
        );
        db.cleanup().await;
    }
}

/// A transactional sink for `transactional_id` writing offsets to `offsets_topic`.
async fn sink(transactional_id: &str, offsets_topic: &str) -> KafkaSink {
    let config = KafkaConfig {
        bootstrap_servers: env().kafka.clone(),
        producer: Vec::new(),
        topic_creation_enable: true,
        topic_partitions: 1,
        topic_replication_factor: -1,
    };
    let settings = TransactionSettings {
        config: ExactlyOnceConfig {
            transactional_id: transactional_id.into(),
            boundary: TransactionBoundary::Connector,
            max_batch_size: 2048,
        },
        offsets_topic: offsets_topic.into(),
        offsets_key: "[\"zombie\",{\"server\":\"z\"}]".into(),
        timeout: Duration::from_secs(60),
    };
    let tracker = Arc::new(AckTracker::new(Lsn(1)));
    let sink = KafkaSink::new(&config, tracker, Some(settings)).expect("sink");
    sink.check_connection(T).await.expect("init transactions");
    sink
}

async fn send(sink: &mut KafkaSink, topic: &str, key: &str, end: u64) {
    let token = sink.begin();
    let record = KafkaRecord {
        topic,
        partition: None,
        key: Some(key.as_bytes()),
        value: Some(b"{}"),
        headers: Vec::new(),
        timestamp: None,
    };
    sink.send(&record, token).await.expect("send");
    sink.commit(
        token,
        CommitInfo {
            end_lsn: Lsn(end),
            ..CommitInfo::default()
        },
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zombie_is_fenced_and_its_open_transaction_never_becomes_visible() {
    let topic = unique("fenced");
    let offsets = format!("{topic}-offsets");
    create_topic(&env().kafka, &topic, 1).await;
    create_topic(&env().kafka, &offsets, 1).await;
    let id = unique("txid");

    let mut first = sink(&id, &offsets).await;
    send(&mut first, &topic, "committed", 10).await;
    assert!(first.flush(T).await, "the first transaction commits");
    assert_eq!(first.tracker().flushable(), Lsn(10));
    send(&mut first, &topic, "zombie", 20).await;

    // Another instance takes over the transactional id: the first is fenced.
    let mut second = sink(&id, &offsets).await;
    assert!(!first.flush(T).await, "a fenced producer cannot commit");
    let failure = first.failure().expect("the failure is reported");
    assert_eq!(
        failure.kind(),
        ErrorKind::Fenced,
        "a fenced producer stops: {}",
        failure.report()
    );
    assert!(
        !failure.is_retriable(),
        "a restart would fence the other instance"
    );
    let text = failure.report();
    assert!(text.contains("fenced") && text.contains(&id), "{text}");
    assert_eq!(
        first.tracker().flushable(),
        Lsn(10),
        "nothing more confirmed"
    );
    drop(first);

    send(&mut second, &topic, "successor", 30).await;
    assert!(second.flush(T).await, "the new instance commits");
    let records = read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|r| r.key_str() == "successor")
    })
    .await;
    let keys: Vec<String> = records.iter().map(Rec::key_str).collect();
    assert_eq!(
        keys,
        ["committed", "successor"],
        "read_committed sees no zombie record"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_instance_is_fenced_by_the_standby_that_took_over_and_nothing_is_repeated() {
    const ROWS: i64 = 200_000;

    let db = TestDb::create("zombie").await;
    db.exec("CREATE TABLE public.z (id int8 PRIMARY KEY, pad text)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("zombie");
    let mut raw = eos_config(&db, &prefix, dir.path(), "poll");
    raw.insert("slot.max.retries".into(), "-1".into());
    raw.insert("slot.retry.delay.ms".into(), "200".into());
    let config = dir.path().join("connector.json");
    std::fs::write(
        &config,
        serde_json::json!({"name": prefix, "config": raw}).to_string(),
    )
    .unwrap();
    let FirstAndStandby {
        mut first,
        first_walsender: first_pid,
        first_log,
        mut standby,
        standby_log,
    } = first_and_standby(&db, &prefix, &config, dir.path()).await;

    // One big transaction; the first instance is paused while its Kafka transaction is open
    // (records written, uncommitted), and its walsender ended, as wal_sender_timeout would.
    let topic = format!("{prefix}.public.z");
    db.exec(&format!(
        "INSERT INTO z SELECT g, repeat('x', 200) FROM generate_series(1, {ROWS}) g"
    ))
    .await;
    wait_for("uncommitted records of the big transaction", T, || async {
        let ends = end_offsets(&env().kafka, std::slice::from_ref(&topic)).await;
        (ends.values().sum::<i64>() > 2000).then_some(())
    })
    .await;
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(first.id() as i32, libc::SIGSTOP) };
    db.exec(&format!("SELECT pg_terminate_backend({first_pid})"))
        .await;
    let paused = std::time::Instant::now();
    wait_for("the standby to take over", T, || async {
        db.walsender(&prefix)
            .await
            .filter(|(pid, _)| *pid != first_pid)
    })
    .await;
    let takeover = paused.elapsed();
    wait_for(
        "the standby to start its transactional producer",
        T,
        || async {
            std::fs::read_to_string(&standby_log)
                .unwrap_or_default()
                .contains("transactional producer ready")
                .then_some(())
        },
    )
    .await;

    // The zombie wakes up with its open transaction and buffered changes. Whatever it notices
    // first, it writes nothing: its producer was fenced (it stops saying so), or its
    // replication connection is gone and it restarts, to wait for the slot as a standby (it
    // takes no producer before it has the slot, so it cannot fence the new instance).
    let before_wake = std::fs::read_to_string(&first_log).unwrap().len();
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(first.id() as i32, libc::SIGCONT) };
    let outcome = wait_for("the zombie to stop or wait for the slot", T, || async {
        let log = std::fs::read_to_string(&first_log).unwrap();
        let after = &log[before_wake..];
        if after.contains("fenced") {
            Some("fenced")
        } else if after.contains("replication slot is in use by another replication connection") {
            Some("waiting for the slot")
        } else {
            None
        }
    })
    .await;
    eprintln!("the zombie, woken: {outcome}");

    db.exec("INSERT INTO z VALUES (-1, 'sentinel')").await;
    let records = read_until(&env().kafka, &topic, Duration::from_secs(300), |r| {
        r.last()
            .and_then(Rec::value_json)
            .is_some_and(|v| v["after"]["id"] == -1)
    })
    .await;
    let mut count: HashMap<i64, u32> = HashMap::new();
    for r in &records {
        if let Some(id) = r.value_json().and_then(|v| v["after"]["id"].as_i64()) {
            *count.entry(id).or_default() += 1;
        }
    }
    let missing = (1..=ROWS).filter(|i| !count.contains_key(i)).count();
    let repeated = count.values().filter(|n| **n > 1).count();
    assert_eq!(
        (missing, repeated, records.len() as i64),
        (0, 0, ROWS + 1),
        "read_committed: each change once"
    );
    eprintln!("standby took over {takeover:?} after the first instance's walsender ended");
    let _ = first.kill();
    let _ = first.wait();
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(standby.id() as i32, libc::SIGTERM) };
    assert!(standby.wait().unwrap().success(), "graceful stop exits 0");
    db.cleanup().await;
}
