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
