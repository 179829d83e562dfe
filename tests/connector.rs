//! The connector as a value: started, observed, restarted and stopped by its owner, with the
//! state names Kafka Connect uses, and its supervision loop retrying connection errors.

use std::time::{Duration, Instant};

use pgcdc::pipeline::ConnectorState;

use crate::harness::*;

const T: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_reports_its_state_and_counters_and_survives_a_restart() {
    let db = TestDb::create("conn").await;
    db.exec("CREATE TABLE public.c (id int PRIMARY KEY, v text)")
        .await;
    db.exec("INSERT INTO c SELECT g, 'snap' FROM generate_series(1, 20) g")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("conn");
    let raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let mut c = connector(&raw);
    assert_eq!(c.status().state, ConnectorState::Unassigned);
    c.start().expect("start");
    assert!(
        c.start().is_err(),
        "a running connector cannot be started twice"
    );
    let offsets = dir.path().join("offsets.json");
    // While a snapshot runs the offsets hold only `lsn`; `lsn_commit` comes with completion.
    wait_for("the snapshot to be recorded as complete", T, || async {
        let text = std::fs::read_to_string(&offsets).unwrap_or_default();
        text.contains("\"lsn_commit\"").then_some(())
    })
    .await;
    assert_eq!(c.status().stats.snapshot_rows, 20);
    assert_eq!(c.status().state, ConnectorState::Running);
    db.wait_for_slot(&prefix).await;

    c.restart().await.expect("restart");
    db.exec("INSERT INTO c VALUES (21, 'streamed')").await;
    wait_for("the streamed change", T, || async {
        (c.status().stats.change_events == 1).then_some(())
    })
    .await;
    let status = c.status();
    assert_eq!(status.state, ConnectorState::Running);
    assert_eq!(
        status.stats.snapshot_rows, 20,
        "the restart resumed, no new snapshot"
    );
    assert_eq!(status.last_error, None);

    let stats = c.stop().await.expect("graceful stop");
    assert_eq!(stats.records, 21, "20 snapshot rows and one insert");
    assert_eq!(c.status().state, ConnectorState::Stopped);
    let records = read_n(&env().kafka, &format!("{prefix}.public.c"), 21, T).await;
    assert_eq!(records.len(), 21);
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_errors_are_retried_up_to_errors_max_retries_then_the_connector_fails() {
    let db = TestDb::create("connretry").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("connretry");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    // Nothing listens there: every attempt is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    raw.insert("database.port".into(), port.to_string());
    raw.insert("errors.max.retries".into(), "2".into());
    raw.insert("retriable.restart.connector.wait.ms".into(), "100".into());
    let mut c = connector(&raw);
    c.start().unwrap();
    let err = tokio::time::timeout(T, c.wait())
        .await
        .expect("the connector gives up")
        .unwrap_err();
    assert!(err.is_retriable(), "{}", err.one_line());
    assert!(
        err.message().contains("giving up after 2 restart(s)"),
        "{}",
        err.one_line()
    );
    let status = c.status();
    assert_eq!(status.state, ConnectorState::Failed);
    assert_eq!(status.restarts, 2);
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("cannot connect"),
        "{status:?}"
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fatal_error_fails_the_connector_without_a_retry() {
    let db = TestDb::create("connfatal").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("connfatal");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("publication.autocreate.mode".into(), "disabled".into());
    raw.insert("publication.name".into(), format!("{prefix}_missing"));
    let mut c = connector(&raw);
    c.start().unwrap();
    let err = tokio::time::timeout(T, c.wait())
        .await
        .expect("the connector stops")
        .unwrap_err();
    assert!(!err.is_retriable(), "{}", err.one_line());
    let status = c.status();
    assert_eq!(status.state, ConnectorState::Failed);
    assert_eq!(status.restarts, 0);
    assert_eq!(status.last_error.as_deref(), Some(err.one_line().as_str()));
    db.cleanup().await;
}

/// A stop requested while start-up waits for a Kafka that does not answer ends the process at
/// once, with exit 0, and without a restart after the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_kafka_is_unreachable_exits_at_once_without_a_restart() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let db = TestDb::create("connsigterm").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("connsigterm");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let kafka = closed.local_addr().unwrap().to_string();
    drop(closed);
    let raw = base_config(&db, &prefix, &kafka, dir.path());
    let file = dir.path().join("connector.json");
    std::fs::write(&file, serde_json::to_string(&raw).unwrap()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgcdc"))
        .args(["run", "--config", file.to_str().unwrap()])
        .env("PGCDC_LISTENERS", "http://127.0.0.1:0")
        .env("PGCDC_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The publication is set up before Kafka is reached: wait for librdkafka's complaint.
    let deadline = Instant::now() + T;
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("no sign of the Kafka check");
        if line.contains("Kafka client") || line.contains("librdkafka") {
            break;
        }
    }
    let signalled = Instant::now();
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let took = signalled.elapsed();
    assert!(status.success(), "exit status {status:?}");
    assert!(took < Duration::from_secs(5), "the stop took {took:?}");
    // The lines written after the signal, until the pipe closes.
    let mut after = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        after.push(line);
    }
    assert!(
        !after.iter().any(|l| l.contains("restarting the connector")),
        "a restart after the stop request: {after:?}"
    );
    db.cleanup().await;
}

/// `database.initial.statements` run on every SQL connection pgcdc opens (here each inserts a
/// marker row, its `;;` a semicolon inside a literal); a statement the server refuses stops
/// the connector, naming it by its place in the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_statements_run_on_each_sql_connection_and_a_refused_one_stops_the_connector() {
    let db = TestDb::create("initstmt").await;
    db.exec("CREATE TABLE t (id int PRIMARY KEY); CREATE TABLE marker (note text)")
        .await;
    db.exec("INSERT INTO t VALUES (1)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("initstmt");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("table.include.list".into(), "public.t".into());
    raw.insert(
        "database.initial.statements".into(),
        "SET application_name = 'pgcdc-initial';INSERT INTO public.marker VALUES ('a;;b')".into(),
    );
    let running = start(&raw);
    read_n(&env().kafka, &format!("{prefix}.public.t"), 1, T).await;
    let row = db
        .client
        .query_one("SELECT count(*), min(note) FROM marker", &[])
        .await
        .unwrap();
    let (count, note): (i64, Option<String>) = (row.get(0), row.get(1));
    assert!(count >= 1, "the statements ran");
    assert_eq!(note.as_deref(), Some("a;b"));
    running.stop().await.expect("clean stop");

    raw.insert(
        "database.initial.statements".into(),
        "SET application_name = 'x'; SELECT * FROM no_such_table".into(),
    );
    let failing = start(&raw);
    let err = failing.expect_error(T).await;
    let msg = err.one_line();
    assert!(
        msg.contains("statement 2 of database.initial.statements") && msg.contains("42P01"),
        "{msg}"
    );
    assert!(!err.is_retriable(), "{msg}");
    db.cleanup().await;
}
