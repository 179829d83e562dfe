//! Faults between pgcdc and its servers: each is noticed, named and recovered from, and
//! nothing committed is lost.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pgcdc::pipeline::{validate_config, Connector};
use serde_json::json;

use crate::harness::*;

const T: Duration = Duration::from_secs(120);

/// A config whose replication and SQL connections go through `proxy`.
fn through(
    proxy: &CutProxy,
    db: &TestDb,
    prefix: &str,
    dir: &std::path::Path,
) -> pgcdc::config::RawConfig {
    let mut raw = base_config(db, prefix, &env().kafka, dir);
    raw.insert("database.hostname".into(), "127.0.0.1".into());
    raw.insert("database.port".into(), proxy.port.to_string());
    raw
}

/// A cut network under a streaming connector: PostgreSQL goes silent, and pgcdc must say the
/// connection is dead (a retriable error) instead of waiting for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_replication_connection_is_noticed_as_dead() {
    let db = TestDb::create("cut").await;
    db.exec("CREATE TABLE public.k (id int PRIMARY KEY)").await;
    let proxy = CutProxy::start(format!("{}:{}", env().pg_host, env().pg_port)).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("cut");
    let c = start(&through(&proxy, &db, &prefix, dir.path()));
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO k VALUES (1)").await;
    read_n(&env().kafka, &format!("{prefix}.public.k"), 1, T).await;

    proxy.cut(true);
    let cut_at = Instant::now();
    let err = c.expect_error(Duration::from_secs(60)).await;
    let noticed = cut_at.elapsed();
    assert!(err.is_retriable(), "{}", err.one_line());
    assert!(
        err.one_line().contains("the connection is dead"),
        "{}",
        err.one_line()
    );
    // status.update.interval.ms=200: the floor of 10 s applies, plus a status interval.
    assert!(
        noticed < Duration::from_secs(20),
        "noticed after {noticed:?}"
    );
    proxy.cut(false);
    db.cleanup().await;
}

/// The same cut under a connector with restarts: it reconnects once the network heals, and
/// the change committed during the cut arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_network_cut_the_connector_reconnects_and_loses_nothing() {
    let db = TestDb::create("cutheal").await;
    db.exec("CREATE TABLE public.k (id int PRIMARY KEY)").await;
    let proxy = CutProxy::start(format!("{}:{}", env().pg_host, env().pg_port)).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("cutheal");
    let mut raw = through(&proxy, &db, &prefix, dir.path());
    raw.insert("errors.max.retries".into(), "-1".into());
    raw.insert("connection.validation.timeout.ms".into(), "2000".into());
    init_logging();
    let (config, _) = validate_config(&raw).unwrap_or_else(|e| panic!("{}", e.message()));
    let mut c = Connector::new(Arc::new(config));
    c.start().unwrap();
    db.wait_for_slot(&prefix).await;
    let topic = format!("{prefix}.public.k");
    db.exec("INSERT INTO k VALUES (1)").await;
    read_n(&env().kafka, &topic, 1, T).await;

    proxy.cut(true);
    db.exec("INSERT INTO k VALUES (2)").await;
    wait_for("the connector to notice the dead connection", T, || async {
        c.status()
            .last_error
            .filter(|e| e.contains("the connection is dead"))
    })
    .await;
    proxy.cut(false);
    db.exec("INSERT INTO k VALUES (3)").await;
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|x| x.payload()["after"]["id"] == json!(3))
    })
    .await;
    let ids: Vec<i64> = recs
        .iter()
        .map(|r| r.payload()["after"]["id"].as_i64().unwrap())
        .collect();
    assert!(
        ids.contains(&2),
        "the change committed during the cut: {ids:?}"
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// Two instances with the same config: the second waits while the first streams (the slot
/// has one active consumer; `slot.max.retries=-1` makes waiting for ever the explicit
/// choice), and takes over within 10 s of the first being killed, from the offsets the first
/// kept in Kafka, losing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_takes_over_within_ten_seconds_of_a_kill_and_loses_nothing() {
    use std::process::Stdio;
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

    let db = TestDb::create("standby").await;
    db.exec("CREATE TABLE public.s (id int8 PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("standby");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.remove("offset.storage.file.filename");
    raw.insert("offsets.storage.topic".into(), format!("{prefix}-offsets"));
    raw.insert("slot.max.retries".into(), "-1".into());
    raw.insert("slot.retry.delay.ms".into(), "1000".into());
    let config = dir.path().join("connector.json");
    std::fs::write(&config, json!({"name": prefix, "config": raw}).to_string()).unwrap();
    let spawn = |log: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_pgcdc"))
            .args(["run", "--config", config.to_str().unwrap()])
            .env("PGCDC_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("start pgcdc")
    };
    let mut first = spawn(&dir.path().join("first.log"));
    db.wait_for_slot(&prefix).await;
    let (first_pid, _) = wait_for("the first instance to stream", T, || async {
        db.walsender(&prefix).await
    })
    .await;
    let standby_log = dir.path().join("standby.log");
    let mut standby = spawn(&standby_log);
    wait_for("the standby to wait for the slot", T, || async {
        std::fs::read_to_string(&standby_log)
            .unwrap_or_default()
            .contains("replication slot is in use by another replication connection; waiting")
            .then_some(())
    })
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let last = Arc::new(AtomicI64::new(0));
    let writer = {
        let (stop, last, name) = (stop.clone(), last.clone(), db.name.clone());
        tokio::spawn(async move {
            let client = connect(&name).await;
            let mut id = 0i64;
            while !stop.load(Ordering::Relaxed) {
                id += 1;
                client
                    .execute("INSERT INTO s VALUES ($1)", &[&id])
                    .await
                    .unwrap();
                last.store(id, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    wait_for("writes", T, || async {
        (last.load(Ordering::Relaxed) > 200).then_some(())
    })
    .await;
    first.kill().expect("kill -9");
    first.wait().unwrap();
    let killed = Instant::now();
    wait_for("the standby to take over", T, || async {
        db.walsender(&prefix)
            .await
            .filter(|(pid, _)| *pid != first_pid)
    })
    .await;
    let takeover = killed.elapsed();
    wait_for("writes after the takeover", T, || async {
        (last.load(Ordering::Relaxed) > 600).then_some(())
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    db.exec("INSERT INTO s VALUES (-1)").await;
    let topic = format!("{prefix}.public.s");
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|x| x.payload()["after"]["id"] == json!(-1))
    })
    .await;
    let ids: std::collections::HashSet<i64> = recs
        .iter()
        .filter_map(|r| r.payload()["after"]["id"].as_i64())
        .collect();
    let written = last.load(Ordering::Relaxed);
    let missing: Vec<i64> = (1..=written).filter(|i| !ids.contains(i)).collect();
    assert!(missing.is_empty(), "lost across the takeover: {missing:?}");
    let snapshots = recs
        .iter()
        .filter(|r| r.payload()["op"] == json!("r"))
        .count();
    assert_eq!(
        snapshots, 0,
        "the standby resumed from the offsets, with no snapshot"
    );
    eprintln!("standby took over {takeover:?} after the kill");
    assert!(
        takeover < Duration::from_secs(10),
        "takeover took {takeover:?}"
    );
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(standby.id() as i32, libc::SIGTERM) };
    assert!(standby.wait().unwrap().success());
    db.cleanup().await;
}

/// Without `slot.max.retries=-1`, a slot another connection keeps streaming fails the second
/// connector after its checks (Debezium's default is 6, 10 s apart), saying how to run a
/// standby instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_in_use_fails_after_slot_max_retries() {
    let db = TestDb::create("inuse").await;
    db.exec("CREATE TABLE public.s (id int8 PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("inuse");
    let raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let first = start(&raw);
    db.wait_for_slot(&prefix).await;
    wait_for("the first connector to stream", T, || async {
        db.walsender(&prefix).await
    })
    .await;
    let other = tempfile::tempdir().unwrap();
    let mut raw2 = base_config(&db, &prefix, &env().kafka, other.path());
    raw2.insert("slot.max.retries".into(), "2".into());
    raw2.insert("slot.retry.delay.ms".into(), "200".into());
    let second = start(&raw2);
    let e = second.expect_error(Duration::from_secs(30)).await;
    assert!(!e.is_retriable(), "{}", e.one_line());
    let msg = e.one_line();
    assert!(msg.contains("after 2 checks 200 ms apart"), "{msg}");
    assert!(msg.contains("slot.max.retries=-1"), "{msg}");
    first.assert_running();
    first.stop().await.unwrap();
    db.cleanup().await;
}
