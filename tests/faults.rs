//! Faults between pgcdc and its servers: each is noticed, named and recovered from, and
//! nothing committed is lost.

use std::sync::Arc;
use std::time::{Duration, Instant};

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
    // The limit follows the server's wal_sender_timeout (one and a half of it, 10 s at least).
    db.exec(&format!(
        "ALTER DATABASE {} SET wal_sender_timeout = '4s'",
        db.name
    ))
    .await;
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
    // 1.5 × 4 s is below the floor of 10 s, which applies, plus a status interval.
    assert!(
        noticed < Duration::from_secs(20),
        "noticed after {noticed:?}"
    );
    proxy.cut(false);
    db.cleanup().await;
}

/// The same cut under a connector with restarts: while the network stays cut, each reconnect
/// attempt (to a proxy that accepts TCP and never answers, as a hung server or a dropping
/// firewall) fails within `pgcdc.database.connect.timeout.ms` and is retried, with the reason
/// in the status; it reconnects once the network heals, and the change committed during the
/// cut arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_network_cut_the_connector_reconnects_and_loses_nothing() {
    let db = TestDb::create("cutheal").await;
    db.exec("CREATE TABLE public.k (id int PRIMARY KEY)").await;
    db.exec(&format!(
        "ALTER DATABASE {} SET wal_sender_timeout = '4s'",
        db.name
    ))
    .await;
    let proxy = CutProxy::start(format!("{}:{}", env().pg_host, env().pg_port)).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("cutheal");
    let mut raw = through(&proxy, &db, &prefix, dir.path());
    raw.insert("errors.max.retries".into(), "-1".into());
    raw.insert("pgcdc.database.connect.timeout.ms".into(), "2000".into());
    let mut c = connector(&raw);
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
    let timed_out = wait_for("a reconnect attempt to time out", T, || async {
        c.status()
            .last_error
            .filter(|e| e.contains("timed out after 2000 ms opening a"))
    })
    .await;
    assert!(
        timed_out.contains("pgcdc.database.connect.timeout.ms"),
        "{timed_out}"
    );
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
    let FirstAndStandby {
        mut first,
        first_walsender: first_pid,
        mut standby,
        ..
    } = first_and_standby(&db, &prefix, &config, dir.path()).await;

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

/// A topic that does not exist, with topic creation off in pgcdc and on the brokers (the fault
/// broker has `auto.create.topics.enable=false`): a clear error naming the topic and both
/// settings, instead of records waiting for a topic that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_topic_with_creation_off_everywhere_is_a_clear_error() {
    let _lock = fault_broker_lock().await;
    let db = TestDb::create("notopic").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("notopic");
    let mut raw = base_config(&db, &prefix, &env().kafka_fault, dir.path());
    raw.insert("topic.creation.enable".into(), "false".into());
    raw.insert("snapshot.mode".into(), "no_data".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1)").await;
    let e = c.expect_error(Duration::from_secs(60)).await;
    let msg = e.one_line();
    assert!(
        msg.contains(&format!("topic {prefix}.public.t does not exist")),
        "{msg}"
    );
    assert!(msg.contains("auto.create.topics.enable=false"), "{msg}");
    db.cleanup().await;
}

/// A slow network (300 ms each way, longer than the test's status interval): streaming goes
/// on, slowly, with no false "dead connection" and nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_network_slows_streaming_without_errors() {
    let db = TestDb::create("slow").await;
    db.exec("CREATE TABLE public.k (id int PRIMARY KEY)").await;
    let proxy = CutProxy::start(format!("{}:{}", env().pg_host, env().pg_port)).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("slow");
    let c = start(&through(&proxy, &db, &prefix, dir.path()));
    db.wait_for_slot(&prefix).await;
    proxy.slow(Duration::from_millis(300));
    for batch in 0..10 {
        db.exec(&format!(
            "INSERT INTO k SELECT g FROM generate_series({}, {}) g",
            batch * 100 + 1,
            batch * 100 + 100
        ))
        .await;
    }
    let recs = read_n(&env().kafka, &format!("{prefix}.public.k"), 1000, T).await;
    assert_eq!(recs.len(), 1000);
    // Past the dead-connection limit (10 s here) with the network still slow.
    let slow_since = Instant::now();
    wait_for("12 s of a slow, idle stream", T, || async {
        (slow_since.elapsed() > Duration::from_secs(12)).then_some(())
    })
    .await;
    c.assert_running();
    proxy.slow(Duration::ZERO);
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// PostgreSQL going away (what a restart does to its connections: every backend ends with
/// SQLSTATE 57P01): the connector reconnects with its restart delay and resumes from the
/// slot, losing nothing committed meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_ending_every_connection_is_retried_and_loses_nothing() {
    let db = TestDb::create("pgaway").await;
    db.exec("CREATE TABLE public.k (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("pgaway");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("errors.max.retries".into(), "-1".into());
    let mut c = connector(&raw);
    c.start().unwrap();
    db.wait_for_slot(&prefix).await;
    let topic = format!("{prefix}.public.k");
    db.exec("INSERT INTO k VALUES (1)").await;
    read_n(&env().kafka, &topic, 1, T).await;
    let admin = connect("postgres").await;
    for id in 2..=4 {
        let before = db.walsender(&prefix).await.map(|w| w.0);
        let ended: i64 = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid() AND (backend_type = 'walsender' OR application_name = 'pgcdc')",
                &[&db.name],
            )
            .await
            .unwrap()
            .get(0);
        assert!(ended >= 1, "pgcdc's connections were found and ended");
        db.exec(&format!("INSERT INTO k VALUES ({id})")).await;
        // A new walsender: the ended one can still hold the slot for a moment after the
        // signal, and the next round must find the new connections to end them.
        wait_for("the connector to stream again", T, || async {
            db.walsender(&prefix).await.filter(|w| Some(w.0) != before)
        })
        .await;
    }
    let recs = read_until(&env().kafka, &topic, T, |r| {
        let ids = after_ids(r);
        (1..=4).all(|i| ids.contains(&i))
    })
    .await;
    assert!(recs.len() >= 4);
    assert!(c.status().restarts >= 1, "it restarted: {:?}", c.status());
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// Kafka down (the broker process stopped) for a minute under a streaming connector: pgcdc
/// waits, confirms nothing Kafka has not acknowledged, keeps running, and delivers
/// everything once the broker is back. `PGCDC_TEST_KAFKA_OUTAGE_S` sets the outage (60 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_down_for_a_minute_then_back_loses_nothing() {
    kafka_down(false).await;
}

/// The same in exactly-once mode: the open Kafka transaction waits out the outage (its
/// commit is retried), and each row arrives once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_down_for_a_minute_in_exactly_once_mode_loses_and_repeats_nothing() {
    kafka_down(true).await;
}

async fn kafka_down(exactly_once: bool) {
    let _lock = fault_broker_lock().await;
    let outage = Duration::from_secs(
        std::env::var("PGCDC_TEST_KAFKA_OUTAGE_S")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60),
    );
    let db = TestDb::create("kafkadown").await;
    db.exec("CREATE TABLE public.k (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("kafkadown");
    let mut raw = base_config(&db, &prefix, &env().kafka_fault, dir.path());
    if exactly_once {
        raw.remove("offset.storage.file.filename");
        raw.insert("exactly.once.source.support".into(), "enabled".into());
        raw.insert("offsets.storage.topic".into(), format!("{prefix}-offsets"));
        raw.insert("offset.storage.partitions".into(), "1".into());
    }
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    let topic = format!("{prefix}.public.k");
    db.exec("INSERT INTO k VALUES (1)").await;
    read_n(&env().kafka_fault, &topic, 1, T).await;
    let acked = db.current_lsn().await;
    db.wait_confirmed(&prefix, acked, "the first row confirmed")
        .await;

    services(&["stop", "kafka-fault"]);
    let down = Instant::now();
    for id in 2..=100 {
        db.exec(&format!("INSERT INTO k VALUES ({id})")).await;
    }
    let committed = db.current_lsn().await;
    wait_for("the outage to last", outage + T, || async {
        (down.elapsed() >= outage).then_some(())
    })
    .await;
    if c.handle.is_finished() {
        let e = c.expect_error(T).await;
        panic!("the connector stopped during the outage: {}", e.one_line());
    }
    let confirmed = db.confirmed_flush(&prefix).await;
    assert!(
        confirmed < committed,
        "confirmed {confirmed} past rows Kafka never acknowledged (committed at {committed})"
    );
    services(&["start", "kafka-fault"]);
    let recs = read_until(&env().kafka_fault, &topic, T, |r| {
        let ids = after_ids(r);
        ids.len() == 100
    })
    .await;
    if exactly_once {
        assert_eq!(recs.len(), 100, "read_committed: each row once");
    } else {
        assert!(recs.len() >= 100);
    }
    db.wait_confirmed(&prefix, committed, "everything confirmed after the outage")
        .await;
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// A throwaway PostgreSQL server of the newest installed version, for a test that needs a
/// server-wide setting the shared server must not have (stopped and removed on drop).
struct ScratchPg {
    bin: std::path::PathBuf,
    dir: std::path::PathBuf,
    port: u16,
}

impl ScratchPg {
    /// Runs `program` of the server's binaries as the `postgres` OS user when this is root
    /// (the server refuses to run as root).
    fn run(&self, program: &str, args: &[&str]) -> std::process::Output {
        let path = self.bin.join(program);
        let mut cmd = if unsafe { libc::geteuid() } == 0 {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            std::process::Command::new(&path)
        };
        cmd.args(args)
            .current_dir("/")
            .output()
            .expect("run a PostgreSQL program")
    }

    /// Initialises and starts a server with `settings` (and logical replication), or `None`
    /// when no PostgreSQL server binaries are installed.
    fn start(settings: &[&str]) -> Option<ScratchPg> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let v: u32 = e.file_name().to_str()?.parse().ok()?;
                let bin = e.path().join("bin");
                bin.join("initdb").exists().then_some((v, bin))
            })
            .max_by_key(|(v, _)| *v)?
            .1;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(unique("pgcdc-scratch-pg"));
        let pg = ScratchPg { bin, dir, port };
        let data = pg.dir.to_str().unwrap().to_string();
        let out = pg.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut conf = format!(
            "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{data}'\nwal_level = logical\nfsync = off\n"
        );
        for s in settings {
            conf.push_str(s);
            conf.push('\n');
        }
        let file = pg.dir.join("postgresql.auto.conf");
        let mut all = std::fs::read_to_string(&file).unwrap_or_default();
        all.push_str(&conf);
        std::fs::write(&file, all).unwrap();
        let log = format!("{data}/server.log");
        let out = pg.run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-w", "-t", "60", "start"],
        );
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        Some(pg)
    }

    async fn client(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(
            &format!(
                "host=127.0.0.1 port={} user=postgres dbname=postgres",
                self.port
            ),
            tokio_postgres::NoTls,
        )
        .await
        .expect("connect to the scratch server");
        tokio::spawn(conn);
        client
    }
}

impl Drop for ScratchPg {
    fn drop(&mut self) {
        let data = self.dir.to_str().unwrap().to_string();
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A slot the server invalidated (`max_slot_wal_keep_size` exceeded while pgcdc was stopped):
/// the next start fails saying the changes since its position are gone and what to do;
/// `snapshot.mode=when_needed` drops it, creates it again and takes a new snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalidated_slot_fails_the_start_and_when_needed_takes_a_new_snapshot() {
    let t0 = Instant::now();
    let Some(pg) = ScratchPg::start(&["max_slot_wal_keep_size = 1MB", "wal_keep_size = 0"]) else {
        panic!("no PostgreSQL server binaries under /usr/lib/postgresql (scripts/services.sh installs them)");
    };
    eprintln!("scratch server up in {:?}", t0.elapsed());
    let sql = pg.client().await;
    sql.batch_execute(
        "CREATE TABLE public.v (id int PRIMARY KEY, pad text); INSERT INTO v VALUES (1, 'a')",
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("invalid");
    let mut raw = pgcdc::config::RawConfig::new();
    for (k, v) in [
        ("name", prefix.as_str()),
        (
            "connector.class",
            "io.debezium.connector.postgresql.PostgresConnector",
        ),
        ("database.hostname", "127.0.0.1"),
        ("database.port", &pg.port.to_string()),
        ("database.user", "postgres"),
        ("database.password", "unused"),
        ("database.dbname", "postgres"),
        ("database.sslmode", "disable"),
        ("slot.name", &prefix),
        ("topic.prefix", &prefix),
        ("status.update.interval.ms", "200"),
        ("offset.flush.interval.ms", "200"),
        ("bootstrap.servers", &env().kafka),
        (
            "offset.storage.file.filename",
            &dir.path().join("offsets.json").to_string_lossy(),
        ),
        ("retriable.restart.connector.wait.ms", "200"),
    ] {
        raw.insert(k.into(), v.to_string());
    }
    let topic = format!("{prefix}.public.v");
    let c = start(&raw);
    read_n(&env().kafka, &topic, 1, T).await;
    sql.batch_execute("INSERT INTO v VALUES (2, 'b')")
        .await
        .unwrap();
    read_n(&env().kafka, &topic, 2, T).await;
    c.stop().await.expect("graceful stop");

    // While pgcdc is stopped: a change only the slot holds, then WAL past the slot's limit.
    sql.batch_execute("INSERT INTO v VALUES (3, 'c')")
        .await
        .unwrap();
    // WAL without table rows: a 1 MB logical message, a segment switch, a checkpoint.
    wait_for("the server to invalidate the slot", T, || async {
        sql.batch_execute(
            "SELECT pg_logical_emit_message(false, 'pgcdc-test', repeat('x', 1048576)); \
             SELECT pg_switch_wal(); CHECKPOINT",
        )
        .await
        .unwrap();
        let status: Option<String> = sql
            .query_one(
                "SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1",
                &[&prefix],
            )
            .await
            .unwrap()
            .get(0);
        (status.as_deref() == Some("lost")).then_some(())
    })
    .await;

    eprintln!("slot invalidated at {:?}", t0.elapsed());
    let e = start(&raw).expect_error(T).await;
    eprintln!("start refused at {:?}", t0.elapsed());
    let text = e.one_line();
    assert!(
        text.contains("invalidated") && text.contains("snapshot.mode=when_needed"),
        "{text}"
    );

    raw.insert("snapshot.mode".into(), "when_needed".into());
    let c = start(&raw);
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter()
            .any(|x| x.payload()["op"] == "r" && x.payload()["after"]["id"] == 3)
    })
    .await;
    // After the first run's two records (row 1 snapshotted, row 2 streamed).
    let snapshot: Vec<i64> = recs[2..]
        .iter()
        .filter(|x| x.payload()["op"] == "r")
        .filter_map(|x| x.payload()["after"]["id"].as_i64())
        .collect();
    assert_eq!(
        snapshot,
        [1, 2, 3],
        "a new snapshot of the table, with the change only the lost slot held"
    );
    c.stop().await.expect("graceful stop");
}

/// Kafka stalled (the broker process stopped with SIGSTOP, as a long GC pause or a frozen VM)
/// under writes, then resumed: the connector recovers by itself and every row arrives once
/// for `read_committed` consumers. During the stall the wait readiness looks at
/// (`pgcdc_unacknowledged_seconds`) climbs; after it, nothing waits.
/// `PGCDC_TEST_KAFKA_STALL_S` sets the stall (60 s; the long run takes 300).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_stalled_in_exactly_once_mode_recovers_by_itself() {
    kafka_stalled(true).await;
}

async fn kafka_stalled(exactly_once: bool) {
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
    let _lock = fault_broker_lock().await;
    let stall = Duration::from_secs(
        std::env::var("PGCDC_TEST_KAFKA_STALL_S")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60),
    );
    let db = TestDb::create("kafkastall").await;
    db.exec("CREATE TABLE public.k (id int8 PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("kafkastall");
    let mut raw = base_config(&db, &prefix, &env().kafka_fault, dir.path());
    if exactly_once {
        raw.remove("offset.storage.file.filename");
        raw.insert("exactly.once.source.support".into(), "enabled".into());
        raw.insert("offsets.storage.topic".into(), format!("{prefix}-offsets"));
        raw.insert("offset.storage.partitions".into(), "1".into());
    }
    raw.insert("errors.max.retries".into(), "-1".into());
    let mut c = connector(&raw);
    c.start().unwrap();
    db.wait_for_slot(&prefix).await;
    let topic = format!("{prefix}.public.k");
    db.exec("INSERT INTO k VALUES (0)").await;
    read_n(&env().kafka_fault, &topic, 1, T).await;

    // Writes go on before, during and after the stall.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicI64::new(0));
    let writer = {
        let (stop, written, name) = (stop.clone(), written.clone(), db.name.clone());
        tokio::spawn(async move {
            let client = connect(&name).await;
            let mut id = 1i64;
            while !stop.load(Ordering::Relaxed) {
                client
                    .execute("INSERT INTO k VALUES ($1)", &[&id])
                    .await
                    .unwrap();
                written.store(id, Ordering::Relaxed);
                id += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let paused = PausedBroker::pause();
    let paused_at = Instant::now();
    let waited = stall.saturating_sub(Duration::from_secs(10));
    // Under a loaded machine the first record after the pause may reach the producer late:
    // the wait is measured from there, so the broker may stay paused longer than `stall`.
    let patience = stall + Duration::from_secs(30);
    wait_for(
        "records to wait for the stalled broker",
        patience,
        || async {
            c.handle()
                .unacknowledged_wait()
                .filter(|w| *w >= waited)
                .map(|_| ())
        },
    )
    .await;
    tokio::time::sleep(stall.saturating_sub(paused_at.elapsed())).await;
    drop(paused);
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let last = written.load(Ordering::Relaxed);
    let end = db.current_lsn().await;
    db.wait_confirmed(&prefix, end, "every row written confirmed after the stall")
        .await;
    let isolation = if exactly_once {
        Isolation::Committed
    } else {
        Isolation::Uncommitted
    };
    let want = (last + 1) as usize;
    let recs = read_until_with(&env().kafka_fault, &topic, isolation, T, move |r| {
        r.len() >= want
    })
    .await;
    let ids = after_ids(&recs);
    assert_eq!(ids.len(), want, "every row arrived");
    if exactly_once {
        assert_eq!(recs.len(), want, "read_committed: each row once");
    }
    assert_eq!(
        c.handle().unacknowledged_wait(),
        None,
        "nothing waits after the stall"
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// A record whose delivery times out (`delivery.timeout.ms` passes while the broker is
/// stalled) stops the connector with the fix, as Kafka Connect fails the task, instead of
/// restarting it while the stalled broker may still hold the old producer's requests (which
/// could then land after newer ones). Nothing past it is confirmed: a restart once the broker
/// is back sends everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_timeout_stops_the_connector_with_the_fix_and_loses_nothing() {
    let _lock = fault_broker_lock().await;
    let db = TestDb::create("dlvtimeout").await;
    db.exec("CREATE TABLE public.k (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("dlvtimeout");
    let mut raw = base_config(&db, &prefix, &env().kafka_fault, dir.path());
    raw.insert(
        "producer.override.delivery.timeout.ms".into(),
        "3000".into(),
    );
    raw.insert("errors.max.retries".into(), "-1".into());
    let mut c = connector(&raw);
    c.start().unwrap();
    db.wait_for_slot(&prefix).await;
    let topic = format!("{prefix}.public.k");
    db.exec("INSERT INTO k VALUES (0)").await;
    read_n(&env().kafka_fault, &topic, 1, T).await;

    let paused = PausedBroker::pause();
    for id in 1..=20 {
        db.exec(&format!("INSERT INTO k VALUES ({id})")).await;
    }
    let committed = db.current_lsn().await;
    let e = tokio::time::timeout(T, c.wait())
        .await
        .expect("the connector stops within the timeout")
        .expect_err("the timed-out record stops the connector");
    assert_eq!(e.kind(), pgcdc::ErrorKind::Kafka, "{}", e.one_line());
    assert!(
        e.one_line().contains("delivery.timeout.ms"),
        "the error names the setting: {}",
        e.one_line()
    );
    assert_eq!(c.status().restarts, 0, "a delivery timeout is not retried");
    let confirmed = db.confirmed_flush(&prefix).await;
    assert!(
        confirmed < committed,
        "confirmed {confirmed} past rows Kafka never acknowledged"
    );
    drop(paused);

    raw.remove("producer.override.delivery.timeout.ms");
    let again = start(&raw);
    read_until(&env().kafka_fault, &topic, T, |r| {
        let ids = after_ids(r);
        ids.len() == 21
    })
    .await;
    db.wait_confirmed(&prefix, committed, "every row confirmed after the restart")
        .await;
    again.stop().await.unwrap();
    db.cleanup().await;
}
