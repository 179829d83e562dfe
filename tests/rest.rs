//! The REST API, metrics and health of a live `pgcdc run` and `pgcdc serve` (the binary)
//! against real PostgreSQL and Kafka: the seed's monitoring commands verbatim, the worker-mode
//! lifecycle, a failed task's trace and restart, credentials, validation and log levels.
//! Shapes and messages are those a Kafka Connect 4.3 distributed worker answers.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{
    base_config, end_offsets, env, fault_broker_lock, read_until, unique, wait_for, PausedBroker,
    Rec, TestDb,
};

const T: Duration = Duration::from_secs(60);

/// A pgcdc process with its REST port, its stderr lines collected.
struct Pgcdc {
    child: Child,
    scheme: &'static str,
    port: u16,
    lines: Receiver<String>,
}

/// A test that fails leaves no process behind (it would hold its slot and its database).
impl Drop for Pgcdc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Pgcdc {
    /// Starts `pgcdc ARGS --listeners http://127.0.0.1:0` and waits for its REST port.
    fn start(args: &[&str], envs: &[(&str, &str)]) -> Pgcdc {
        Pgcdc::start_on("http://127.0.0.1:0", args, envs)
    }

    /// Starts `pgcdc ARGS --listeners LISTENER` (on 127.0.0.1, port 0) and waits for its REST
    /// port.
    fn start_on(listener: &str, args: &[&str], envs: &[(&str, &str)]) -> Pgcdc {
        let scheme = if listener.starts_with("https") {
            "https"
        } else {
            "http"
        };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgcdc"));
        cmd.args(args)
            .args(["--listeners", listener])
            .env("PGCDC_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start pgcdc");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var_os("PGCDC_TEST_LOG").is_some() {
                    eprintln!("pgcdc: {line}");
                }
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + T;
        let port = loop {
            let line = lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("pgcdc never said where its REST API listens");
            if let Some(at) = line.find("REST API listening") {
                let addr = line[at..].split("://127.0.0.1:").nth(1).unwrap_or("");
                let port: String = addr.chars().take_while(char::is_ascii_digit).collect();
                break port.parse::<u16>().expect("a port in the listening line");
            }
        };
        Pgcdc {
            child,
            scheme,
            port,
            lines,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{path}", self.scheme, self.port)
    }

    /// Sends SIGTERM and returns the exit code.
    fn stop(mut self) -> i32 {
        // SAFETY: kill(2) on our child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        status.code().unwrap_or(-1)
    }

    /// `true` while the process runs.
    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits for a log line containing `text`.
    fn wait_line(&self, text: &str) -> String {
        let deadline = Instant::now() + T;
        loop {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no log line with {text:?}"));
            if line.contains(text) {
                return line;
            }
        }
    }
}

/// An HTTP answer: status, `Location` header, body (JSON when it parses).
#[derive(Debug)]
struct Answer {
    status: u16,
    location: Option<String>,
    body: Value,
    text: String,
}

/// `curl -X METHOD url` with an optional JSON body and headers.
fn http(method: &str, url: &str, body: Option<&Value>, headers: &[&str]) -> Answer {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-i", "-X", method, url]);
    if url.starts_with("https://") {
        // The test services' CA signed the certificate the HTTPS tests serve.
        cmd.args(["--cacert", env().pg_ca.as_deref().expect("the test CA")]);
    }
    if let Some(b) = body {
        cmd.args([
            "-H",
            "Content-Type: application/json",
            "--data",
            &b.to_string(),
        ]);
    }
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.output().expect("curl");
    let raw = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let (head, text) = raw.split_once("\n\n").unwrap_or((&raw, ""));
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status from {method} {url}: {raw}"));
    let location = head
        .lines()
        .find_map(|l| l.strip_prefix("location: ").map(str::to_string));
    Answer {
        status,
        location,
        body: serde_json::from_str(text).unwrap_or(Value::Null),
        text: text.to_string(),
    }
}

/// `METHOD /connectors/{name}/{action}` with no body or credentials (pause, stop, restarts).
fn connector_call(p: &Pgcdc, method: &str, name: &str, action: &str) -> Answer {
    http(
        method,
        &p.url(&format!("/connectors/{name}/{action}")),
        None,
        &[],
    )
}

fn get(p: &Pgcdc, path: &str) -> Answer {
    http("GET", &p.url(path), None, &[])
}

/// Waits until `GET /connectors/{name}/status` shows `connector` and `tasks` states.
async fn wait_states(p: &Pgcdc, name: &str, connector: &str, tasks: &[&str]) -> Value {
    let path = format!("/connectors/{name}/status");
    wait_for(&format!("{name} {connector} {tasks:?}"), T, || async {
        let s = get(p, &path).body;
        let task_states: Vec<&str> = s["tasks"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["state"].as_str()).collect())
            .unwrap_or_default();
        (s["connector"]["state"] == connector && task_states == tasks).then_some(s.clone())
    })
    .await
}

/// The samples of `GET /metrics`, parsed by Prometheus' own Python parser.
async fn metrics(p: &Pgcdc) -> Vec<Value> {
    let text = get(p, "/metrics").text;
    let root = env!("CARGO_MANIFEST_DIR");
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(format!("{root}/scripts/metrics/parse.sh"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("scripts/metrics/parse.sh");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "Prometheus' parser refused GET /metrics: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The value of the sample `name` whose labels include `labels`.
fn sample(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .and_then(|s| s["value"].as_f64())
}

/// A connector config for `db` named `name`, as Connect's request body.
fn connector_body(db: &TestDb, name: &str, prefix: &str, dir: &Path) -> Value {
    let mut raw = base_config(db, prefix, &env().kafka, dir);
    raw.insert("name".into(), name.into());
    raw.insert("table.include.list".into(), "public.pedidos".into());
    raw.insert("publication.name".into(), prefix.into());
    raw.insert("publication.autocreate.mode".into(), "filtered".into());
    json!({"name": name, "config": raw})
}

async fn pedidos_db(tag: &str) -> TestDb {
    let db = TestDb::create(tag).await;
    db.exec("CREATE TABLE pedidos (id int PRIMARY KEY, note text)")
        .await;
    db
}

/// `pgcdc run` answers the seed's three monitoring commands, run verbatim (the port aside),
/// as a Kafka Connect worker answers them; its metrics parse and move with the workload; it
/// creates no connector over REST; SIGTERM ends it with 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_monitoring_commands_get_a_connect_workers_answers_from_pgcdc_run() {
    let db = pedidos_db("restseed").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("restseed");
    let mut body = connector_body(&db, "pedidos-cdc", &prefix, dir.path());
    // A double quote in a tag: the text format must escape it for the parser to read it.
    body["config"]["custom.metric.tags"] = json!("env=ci,team=da\"ta");
    let file = dir.path().join("pedidos-cdc.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let p = Pgcdc::start(&["run", "--config", file.to_str().unwrap()], &[]);
    wait_states(&p, "pedidos-cdc", "RUNNING", &["RUNNING"]).await;
    // RUNNING covers the snapshot too (as in Connect): the changes below must be streamed.
    p.wait_line("streaming started");

    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rest/seed-monitoring.sh"
    ))
    .unwrap();
    let commands: Vec<String> = script
        .split("\n\n")
        .map(|block| {
            block
                .lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
                .replace("localhost:8083", &format!("localhost:{}", p.port))
        })
        .filter(|c| !c.trim().is_empty())
        .collect();
    assert_eq!(commands.len(), 3, "{commands:?}");
    let run = |c: &str| {
        let out = Command::new("bash").args(["-c", c]).output().unwrap();
        assert!(out.status.success(), "{c}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let health: Value = serde_json::from_str(&run(&commands[0])).unwrap();
    assert_eq!(
        health,
        json!({"name": "pedidos-cdc", "connector": "RUNNING", "tasks": ["RUNNING"]})
    );
    assert_eq!(run(&commands[1]).trim(), "null", "no trace while running");
    assert_eq!(
        run(&commands[2]),
        r#"{"error_code":404,"message":"Unknown task: pedidos-cdc-2"}"#,
        "Connect's distributed worker answers a missing task so"
    );

    // Metrics: parsed by Prometheus' parser, and moving with the workload.
    // One transaction (a multi-statement simple query).
    db.exec(
        "INSERT INTO pedidos VALUES (1, 'a'), (2, 'b'); UPDATE pedidos SET note = 'c' WHERE id = 1; DELETE FROM pedidos WHERE id = 2")
        .await;
    let streaming = [
        ("plugin", "postgres"),
        ("name", prefix.as_str()),
        ("context", "streaming"),
        // custom.metric.tags
        ("env", "ci"),
        ("team", "da\"ta"),
    ];
    // The events are counted when processed, the commit-to-ack latency when Kafka acknowledges
    // the transaction: wait for both.
    let acked = [("connector", "pedidos-cdc")];
    let samples = wait_for(
        "metrics to count the changes and their acknowledgement",
        T,
        || async {
            let s = metrics(&p).await;
            (sample(&s, "debezium_metrics_TotalNumberOfEventsSeen", &streaming) == Some(4.0)
                && sample(&s, "pgcdc_commit_to_ack_seconds_count", &acked)
                    .is_some_and(|n| n >= 1.0))
            .then_some(s)
        },
    )
    .await;
    for (name, want) in [
        ("debezium_metrics_TotalNumberOfCreateEventsSeen", 2.0),
        ("debezium_metrics_TotalNumberOfUpdateEventsSeen", 1.0),
        ("debezium_metrics_TotalNumberOfDeleteEventsSeen", 1.0),
        ("debezium_metrics_NumberOfCommittedTransactions", 1.0),
        ("debezium_metrics_Connected", 1.0),
        ("debezium_metrics_QueueTotalCapacity", 8192.0),
    ] {
        assert_eq!(sample(&samples, name, &streaming), Some(want), "{name}");
    }
    let behind = sample(
        &samples,
        "debezium_metrics_MilliSecondsBehindSource",
        &streaming,
    );
    assert!(
        behind.is_some_and(|b| (0.0..60_000.0).contains(&b)),
        "{behind:?}"
    );
    let snapshot = [("name", prefix.as_str()), ("context", "snapshot")];
    assert_eq!(
        sample(&samples, "debezium_metrics_SnapshotCompleted", &snapshot),
        Some(1.0)
    );
    assert_eq!(
        sample(&samples, "debezium_metrics_TotalTableCount", &snapshot),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &samples,
            "debezium_metrics_RowsScanned",
            &[("table", "public.pedidos")]
        ),
        Some(0.0)
    );
    let own = [("connector", "pedidos-cdc")];
    assert!(sample(&samples, "pgcdc_records_sent_total", &own).is_some_and(|n| n >= 4.0));
    let remaining = sample(
        &samples,
        "debezium_metrics_QueueRemainingCapacity",
        &streaming,
    );
    assert!(
        remaining.is_some_and(|r| r > 0.0 && r <= 8192.0),
        "{remaining:?}"
    );
    // The streamed transaction (the snapshot's unit is not a latency).
    let latencies = sample(&samples, "pgcdc_commit_to_ack_seconds_count", &own);
    assert_eq!(latencies, Some(1.0));
    let inf = [("connector", "pedidos-cdc"), ("le", "+Inf")];
    assert_eq!(
        sample(&samples, "pgcdc_commit_to_ack_seconds_bucket", &inf),
        Some(1.0)
    );
    let sum = sample(&samples, "pgcdc_commit_to_ack_seconds_sum", &own).unwrap();
    assert!((0.0..60.0).contains(&sum), "{sum}");
    let confirmed = wait_for(
        "the confirmed LSN metric to pass the last commit",
        T,
        || async {
            let s = metrics(&p).await;
            let lsn = sample(&s, "pgcdc_confirmed_lsn", &own)?;
            (lsn >= sample(&s, "pgcdc_processed_lsn", &own)?).then_some(lsn)
        },
    )
    .await;
    assert!(confirmed > 0.0);

    // Pause and resume racing (as scripts that fire both do) never end `run`.
    for _ in 0..10 {
        let calls: Vec<_> = ["pause", "resume", "stop", "resume"]
            .iter()
            .map(|a| {
                let url = p.url(&format!("/connectors/pedidos-cdc/{a}"));
                std::thread::spawn(move || http("PUT", &url, None, &[]).status)
            })
            .collect();
        for c in calls {
            assert!(matches!(c.join().unwrap(), 202 | 204));
        }
    }
    // Whichever request landed last, a resume brings it back.
    let resume = p.url("/connectors/pedidos-cdc/resume");
    assert!(matches!(http("PUT", &resume, None, &[]).status, 202));
    wait_states(&p, "pedidos-cdc", "RUNNING", &["RUNNING"]).await;
    db.exec("INSERT INTO pedidos VALUES (3, 'after the races')")
        .await;
    let topic = format!("{prefix}.public.pedidos");
    read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|r| r.payload()["after"]["id"] == 3)
    })
    .await;

    // `run` serves its one connector: creating another is refused, not silently done.
    let refused = http(
        "POST",
        &p.url("/connectors"),
        Some(&connector_body(&db, "other", "other", dir.path())),
        &[],
    );
    assert_eq!(refused.status, 405, "{refused:?}");
    assert!(refused.body["message"]
        .as_str()
        .unwrap()
        .contains("pgcdc serve"));
    assert_eq!(get(&p, "/health/ready").status, 200);
    // `pgcdc health` (the image's HEALTHCHECK) asks the same, and fails where nothing answers.
    let probe = |listener: String| {
        Command::new(env!("CARGO_BIN_EXE_pgcdc"))
            .args(["health", "--listeners", &listener])
            .env("PGCDC_LOG", "warn")
            .output()
            .unwrap()
    };
    let ok = probe(p.url(""));
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("\"ready\""),
        "{ok:?}"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let refused = probe(format!("http://127.0.0.1:{port}"));
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no answer from the REST API"),
        "{refused:?}"
    );
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}

/// `pgcdc serve`: create, pause (the slot is released), resume (nothing written meanwhile is
/// lost), stop, offsets, restart of the process (connectors and states come back), task
/// restart and delete, with Connect's codes, bodies and messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_connector_lifecycle_over_rest_and_keeps_connectors_across_restarts() {
    let db = pedidos_db("restlife").await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("connectors");
    let prefix = unique("restlife");
    let name = prefix.clone();
    let topic = format!("{prefix}.public.pedidos");
    let serve = ["serve"];
    let store_env = [("PGCDC_PGCDC_CONFIG_STORAGE_DIR", store.to_str().unwrap())];
    let p = Pgcdc::start(&serve, &store_env);
    assert_eq!(get(&p, "/connectors").body, json!([]));
    let body = connector_body(&db, &name, &prefix, dir.path());
    let created = http("POST", &p.url("/connectors"), Some(&body), &[]);
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(
        created.location,
        Some(p.url(&format!("/connectors/{name}")))
    );
    assert_eq!(created.body["tasks"], json!([]));
    assert_eq!(created.body["config"]["database.password"], "[hidden]");
    let again = http("POST", &p.url("/connectors"), Some(&body), &[]);
    assert_eq!(
        (again.status, again.body["message"].clone()),
        (409, json!(format!("Connector {name} already exists")))
    );
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;
    db.exec("INSERT INTO pedidos VALUES (1, 'before the pause')")
        .await;
    read_until(&env().kafka, &topic, T, |r| !r.is_empty()).await;

    // Pause: 202 with no body, PAUSED, and the slot's connection closed.
    let paused = connector_call(&p, "PUT", &name, "pause");
    assert_eq!((paused.status, paused.text.as_str()), (202, ""));
    wait_states(&p, &name, "PAUSED", &["PAUSED"]).await;
    wait_for("the slot to be released while paused", T, || async {
        db.walsender(&prefix).await.is_none().then_some(())
    })
    .await;
    db.exec("INSERT INTO pedidos VALUES (2, 'while paused')")
        .await;
    let resumed = connector_call(&p, "PUT", &name, "resume");
    assert_eq!(resumed.status, 202);
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;
    read_until(&env().kafka, &topic, T, |r| r.len() >= 2).await;

    // Offsets may change only while stopped.
    let offsets_url = p.url(&format!("/connectors/{name}/offsets"));
    let refused = http("DELETE", &offsets_url, None, &[]);
    assert_eq!(refused.status, 400);
    assert!(refused.body["message"]
        .as_str()
        .unwrap()
        .starts_with("Connectors must be in the STOPPED state"));
    let stopped = connector_call(&p, "PUT", &name, "stop");
    assert_eq!(stopped.status, 204);
    wait_states(&p, &name, "STOPPED", &[]).await;
    assert_eq!(
        get(&p, &format!("/connectors/{name}/tasks")).body,
        json!([])
    );
    let offsets = get(&p, &format!("/connectors/{name}/offsets")).body;
    assert_eq!(
        offsets["offsets"][0]["partition"],
        json!({"server": prefix})
    );
    assert!(
        offsets["offsets"][0]["offset"]["lsn"].as_u64().is_some(),
        "{offsets}"
    );
    let altered = http("PATCH", &offsets_url, Some(&offsets), &[]);
    assert_eq!(altered.status, 200, "{altered:?}");
    assert!(altered.body["message"]
        .as_str()
        .unwrap()
        .contains("altered successfully"));
    assert_eq!(
        get(&p, &format!("/connectors/{name}/offsets")).body,
        offsets
    );

    // The process restarts: the connector comes back, still stopped.
    assert_eq!(p.stop(), 0);
    assert!(store.read_dir().unwrap().count() == 1, "one stored config");
    let p = Pgcdc::start(&serve, &store_env);
    wait_states(&p, &name, "STOPPED", &[]).await;
    // Its slot still holds WAL: the slot metrics are there before it runs again.
    let own = [("connector", name.as_str())];
    wait_for("the stopped connector's slot metrics", T, || async {
        sample(&metrics(&p).await, "pgcdc_slot_retained_wal_bytes", &own).map(|_| ())
    })
    .await;
    assert_eq!(connector_call(&p, "PUT", &name, "resume").status, 202);
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;
    db.exec("INSERT INTO pedidos VALUES (3, 'after the restart')")
        .await;
    let recs = read_until(&env().kafka, &topic, T, |r| r.len() >= 3).await;
    let ids: Vec<i64> = recs
        .iter()
        .filter_map(|r| r.payload()["after"]["id"].as_i64())
        .collect();
    assert_eq!(ids, vec![1, 2, 3], "every change once, in order");

    // A task restart, then a restart of only failed instances (none): 202 with the status.
    let restart = connector_call(&p, "POST", &name, "tasks/0/restart");
    assert_eq!(restart.status, 204);
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;
    let only_failed = http(
        "POST",
        &p.url(&format!(
            "/connectors/{name}/restart?includeTasks=true&onlyFailed=true"
        )),
        None,
        &[],
    );
    assert_eq!(only_failed.status, 202);
    assert_eq!(only_failed.body["tasks"][0]["state"], "RUNNING");

    // Topic tracking: the topic written to; a reset forgets it until the next write.
    let topics =
        |p: &Pgcdc| get(p, &format!("/connectors/{name}/topics")).body[&name]["topics"].clone();
    assert_eq!(topics(&p), json!([topic]));
    assert_eq!(connector_call(&p, "PUT", &name, "topics/reset").status, 202);
    assert_eq!(topics(&p), json!([]));
    db.exec("INSERT INTO pedidos VALUES (4, 'after the reset')")
        .await;
    wait_for("the topic to be noted again", T, || async {
        (topics(&p) == json!([topic])).then_some(())
    })
    .await;

    // Delete: 204, then Connect's 404s, and the stored config is gone.
    let deleted = http("DELETE", &p.url(&format!("/connectors/{name}")), None, &[]);
    assert_eq!(deleted.status, 204);
    let gone = get(&p, &format!("/connectors/{name}"));
    assert_eq!(
        (gone.status, gone.body.clone()),
        (
            404,
            json!({"error_code": 404, "message": format!("Connector {name} not found")})
        )
    );
    let no_status = get(&p, &format!("/connectors/{name}/status"));
    assert_eq!(
        no_status.body["message"],
        format!("No status found for connector {name}")
    );
    assert_eq!(store.read_dir().unwrap().count(), 0);
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}

/// With `config.storage.topic` in the worker file, `serve` keeps connector configs in that
/// topic, in Kafka Connect's records (`connector-<name>` with `{"properties":...}`,
/// `target-state-<name>`, tombstones on delete): a connector posted without
/// `bootstrap.servers` takes the worker's, and comes back after a restart in its target
/// state; a deleted one does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_keeps_connector_configs_in_a_config_topic_as_connect_writes_them() {
    let db = pedidos_db("restcfgtopic").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("restcfgtopic");
    let name = prefix.clone();
    let config_topic = format!("{prefix}.configs");
    let topic = format!("{prefix}.public.pedidos");
    let worker_file = dir.path().join("worker.properties");
    std::fs::write(
        &worker_file,
        format!(
            "bootstrap.servers={}\nconfig.storage.topic={config_topic}\nproducer.linger.ms=5\n",
            env().kafka
        ),
    )
    .unwrap();
    let args = ["serve", "--worker", worker_file.to_str().unwrap()];
    let p = Pgcdc::start(&args, &[]);
    let mut body = connector_body(&db, &name, &prefix, dir.path());
    body["config"]
        .as_object_mut()
        .unwrap()
        .remove("bootstrap.servers");
    let created = http("POST", &p.url("/connectors"), Some(&body), &[]);
    assert_eq!(created.status, 201, "{created:?}");
    assert!(created.body["config"].get("bootstrap.servers").is_none());
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;
    db.exec("INSERT INTO pedidos VALUES (1, 'one')").await;
    read_until(&env().kafka, &topic, T, |r| !r.is_empty()).await;
    let stopped = connector_call(&p, "PUT", &name, "stop");
    assert_eq!(stopped.status, 204);
    wait_states(&p, &name, "STOPPED", &[]).await;
    assert_eq!(p.stop(), 0);

    // The topic holds Connect's records, the stop last.
    let recs = read_until(&env().kafka, &config_topic, T, |r| r.len() >= 4).await;
    let keys: Vec<String> = recs.iter().map(|r| r.key_str()).collect();
    assert_eq!(
        keys,
        [
            format!("target-state-{name}"),
            format!("connector-{name}"),
            format!("target-state-{name}"),
            format!("connector-{name}"),
        ]
    );
    assert_eq!(recs[0].value_json(), Some(json!({"state": "STARTED"})));
    assert_eq!(
        recs[2].value_json(),
        Some(json!({"state": "PAUSED", "state.v2": "STOPPED"}))
    );
    assert_eq!(
        recs[1].value_json().unwrap()["properties"],
        body["config"],
        "the config as given"
    );

    // After a restart: back, stopped; resumed, it goes on from where it was.
    let p = Pgcdc::start(&args, &[]);
    wait_states(&p, &name, "STOPPED", &[]).await;
    let resumed = connector_call(&p, "PUT", &name, "resume");
    assert_eq!(resumed.status, 202);
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;
    db.exec("INSERT INTO pedidos VALUES (2, 'two')").await;
    let out = read_until(&env().kafka, &topic, T, |r| r.len() >= 2).await;
    let ids: Vec<i64> = out
        .iter()
        .filter_map(|r| r.payload()["after"]["id"].as_i64())
        .collect();
    assert_eq!(ids, vec![1, 2]);

    // PATCH (Connect 3.8+): a key set, then removed with null; each is stored and applied.
    let config_url = p.url(&format!("/connectors/{name}/config"));
    let patched = http(
        "PATCH",
        &config_url,
        Some(&json!({"snapshot.fetch.size": "500"})),
        &[],
    );
    assert_eq!(patched.status, 200, "{patched:?}");
    assert_eq!(patched.body["config"]["snapshot.fetch.size"], "500");
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;
    let unpatched = http(
        "PATCH",
        &config_url,
        Some(&json!({"snapshot.fetch.size": null})),
        &[],
    );
    assert_eq!(unpatched.status, 200, "{unpatched:?}");
    let mut shown = body["config"].clone();
    shown["database.password"] = json!("[hidden]");
    assert_eq!(get(&p, &format!("/connectors/{name}/config")).body, shown);
    let missing = http(
        "PATCH",
        &p.url("/connectors/nope/config"),
        Some(&json!({"a": "b"})),
        &[],
    );
    assert_eq!(
        (missing.status, missing.body["message"].clone()),
        (404, json!("Connector nope not found"))
    );
    wait_states(&p, &name, "RUNNING", &["RUNNING"]).await;

    let deleted = http("DELETE", &p.url(&format!("/connectors/{name}")), None, &[]);
    assert_eq!(deleted.status, 204);
    assert_eq!(p.stop(), 0);
    let recs = read_until(&env().kafka, &config_topic, T, |r| r.len() >= 12).await;
    assert_eq!(
        recs[7].value_json().unwrap()["properties"]["snapshot.fetch.size"],
        "500"
    );
    let tail: Vec<(String, bool)> = recs[10..]
        .iter()
        .map(|r| (r.key_str(), r.value.is_none()))
        .collect();
    assert_eq!(
        tail,
        [
            (format!("connector-{name}"), true),
            (format!("target-state-{name}"), true)
        ]
    );
    let p = Pgcdc::start(&args, &[]);
    assert_eq!(get(&p, "/connectors").body, json!([]));
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}

/// A task that fails (its replication connection killed with `errors.max.retries=0`) shows
/// FAILED with its trace while the process stays up and not ready; a restart of failed
/// instances brings it back, and nothing committed meanwhile is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_shows_its_trace_and_a_restart_brings_it_back_with_the_process_up() {
    let db = pedidos_db("restfail").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("restfail");
    let mut body = connector_body(&db, "pedidos-cdc", &prefix, dir.path());
    body["config"]["errors.max.retries"] = json!("0");
    let file = dir.path().join("c.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let store = dir.path().join("connectors");
    let mut p = Pgcdc::start(
        &["serve"],
        &[("PGCDC_PGCDC_CONFIG_STORAGE_DIR", store.to_str().unwrap())],
    );
    assert_eq!(
        http("POST", &p.url("/connectors"), Some(&body), &[]).status,
        201
    );
    wait_states(&p, "pedidos-cdc", "RUNNING", &["RUNNING"]).await;
    // Streaming, not snapshotting: during the snapshot the walsender holds the exported
    // snapshot, and killing it fails the snapshot's reads instead of the connection.
    p.wait_line("streaming started");
    let (pid, _) = wait_for("the walsender", T, || db.walsender(&prefix)).await;
    db.exec(&format!("SELECT pg_terminate_backend({pid})"))
        .await;
    let failed = wait_states(&p, "pedidos-cdc", "RUNNING", &["FAILED"]).await;
    let trace = failed["tasks"][0]["trace"].as_str().unwrap().to_string();
    assert!(trace.starts_with("Connection error: "), "{trace}");
    assert!(trace.contains("\nfix: "), "{trace}");
    assert!(p.alive(), "the process stays up");
    assert_eq!(get(&p, "/health/live").status, 200);
    let ready = get(&p, "/health/ready");
    assert_eq!(
        (
            ready.status,
            ready.body["connectors"]["pedidos-cdc"].clone()
        ),
        (503, json!("FAILED"))
    );
    assert_eq!(get(&p, "/health").body["status"], "healthy");
    db.exec("INSERT INTO pedidos VALUES (1, 'while failed')")
        .await;

    let restart = http(
        "POST",
        &p.url("/connectors/pedidos-cdc/restart?includeTasks=true&onlyFailed=true"),
        None,
        &[],
    );
    assert_eq!(restart.status, 202, "{restart:?}");
    assert_eq!(restart.body["connector"]["state"], "RUNNING");
    assert_eq!(restart.body["tasks"][0]["state"], "RESTARTING");
    wait_states(&p, "pedidos-cdc", "RUNNING", &["RUNNING"]).await;
    let topic = format!("{prefix}.public.pedidos");
    read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|r| r.payload()["after"]["id"] == 1)
    })
    .await;

    // Fails again; this time stop and resume: a stopped connector's task is created anew.
    let (pid, _) = wait_for("the walsender", T, || db.walsender(&prefix)).await;
    db.exec(&format!("SELECT pg_terminate_backend({pid})"))
        .await;
    wait_states(&p, "pedidos-cdc", "RUNNING", &["FAILED"]).await;
    let url = |a: &str| p.url(&format!("/connectors/pedidos-cdc/{a}"));
    assert_eq!(http("PUT", &url("stop"), None, &[]).status, 204);
    wait_states(&p, "pedidos-cdc", "STOPPED", &[]).await;
    db.exec("INSERT INTO pedidos VALUES (2, 'while stopped')")
        .await;
    assert_eq!(http("PUT", &url("resume"), None, &[]).status, 202);
    wait_states(&p, "pedidos-cdc", "RUNNING", &["RUNNING"]).await;
    read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|r| r.payload()["after"]["id"] == 2)
    })
    .await;
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}

/// Over HTTPS (a PEM keystore, as Kafka's): credentials protect writes, not reads; config
/// validation answers Connect's shape; log levels change at run time. No database is needed:
/// the connector is created stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_need_credentials_validation_has_connects_shape_and_log_levels_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("connectors");
    // The test services' server certificate (CN=localhost, IP 127.0.0.1) and key in one file.
    let certs = Path::new(env().pg_ca.as_deref().unwrap()).parent().unwrap();
    let keystore = dir.path().join("rest-keystore.pem");
    let pem = [
        std::fs::read_to_string(certs.join("server.key")).unwrap(),
        std::fs::read_to_string(certs.join("server.crt")).unwrap(),
    ]
    .concat();
    std::fs::write(&keystore, pem).unwrap();
    let p = Pgcdc::start_on(
        "https://127.0.0.1:0",
        &["serve"],
        &[
            ("PGCDC_PGCDC_CONFIG_STORAGE_DIR", store.to_str().unwrap()),
            ("PGCDC_PGCDC_REST_AUTH_TOKEN", "s3cret"),
            (
                "PGCDC_LISTENERS_HTTPS_SSL_KEYSTORE_LOCATION",
                keystore.to_str().unwrap(),
            ),
            ("PGCDC_LISTENERS_HTTPS_SSL_KEYSTORE_TYPE", "PEM"),
        ],
    );
    assert!(p.url("/").starts_with("https://"));
    // Plain HTTP on the HTTPS port gets no answer.
    let plain = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "5",
            &format!("http://127.0.0.1:{}/", p.port),
        ])
        .output()
        .unwrap();
    assert!(!plain.status.success(), "plain HTTP is not served");
    let mut config = json!({
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.user": "u", "database.password": "pw",
        "database.dbname": "d", "topic.prefix": "authp", "bootstrap.servers": "127.0.0.1:1",
    });
    let body = json!({"name": "authc", "config": config, "initial_state": "STOPPED"});
    let no_token = http("POST", &p.url("/connectors"), Some(&body), &[]);
    assert_eq!(no_token.status, 401, "{no_token:?}");
    let wrong = http(
        "POST",
        &p.url("/connectors"),
        Some(&body),
        &["Authorization: Bearer nope"],
    );
    assert_eq!(wrong.status, 401);
    let ok = http(
        "POST",
        &p.url("/connectors"),
        Some(&body),
        &["Authorization: Bearer s3cret"],
    );
    assert_eq!(ok.status, 201, "{ok:?}");
    assert_eq!(
        ok.location,
        Some(p.url("/connectors/authc")),
        "an https Location"
    );
    let slash = json!({"name": "a/b", "config": config, "initial_state": "STOPPED"});
    let refused = http(
        "POST",
        &p.url("/connectors"),
        Some(&slash),
        &["Authorization: Bearer s3cret"],
    );
    assert_eq!(refused.status, 400, "a name no path can reach: {refused:?}");
    // A connector that cannot reach PostgreSQL waits to retry: RESTARTING, with the error.
    let mut unreachable = config.clone();
    unreachable["database.port"] = json!("1");
    let retrying = json!({"name": "retrying", "config": unreachable});
    let created = http(
        "POST",
        &p.url("/connectors"),
        Some(&retrying),
        &["Authorization: Bearer s3cret"],
    );
    assert_eq!(created.status, 201, "{created:?}");
    let s = wait_states(&p, "retrying", "RUNNING", &["RESTARTING"]).await;
    let trace = s["tasks"][0]["trace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        trace.starts_with("Connection error (retrying): ") && trace.contains(":1"),
        "{trace}"
    );
    let failing = [("connector", "retrying")];
    assert_eq!(
        sample(&metrics(&p).await, "pgcdc_task_restarting", &failing),
        Some(1.0)
    );
    // Retries every 200 ms flip the task between RUNNING and RESTARTING; the time it has not
    // worked keeps growing across them, which is what an alert needs.
    wait_for("pgcdc_task_down_seconds to pass 3 s", T, || async {
        let down = sample(&metrics(&p).await, "pgcdc_task_down_seconds", &failing)?;
        (down >= 3.0).then_some(())
    })
    .await;
    let ready = get(&p, "/health/ready");
    assert_eq!(ready.status, 503, "{ready:?}");
    let shown = ready.body["connectors"]["retrying"]
        .as_str()
        .unwrap_or_default();
    assert!(["CONNECTING", "RESTARTING"].contains(&shown), "{ready:?}");
    let status = get(&p, "/connectors/authc/status").body;
    assert_eq!(status["connector"]["state"], "STOPPED");
    assert_eq!(status["tasks"], json!([]));
    assert_eq!(
        get(&p, "/connectors?expand=info").body["authc"]["info"]["config"]["database.password"],
        "[hidden]"
    );
    assert!(!std::fs::read_to_string(store.join("authc.json"))
        .unwrap()
        .is_empty());

    // Validation: Connect's shape, each problem on its key, an unknown plugin refused.
    config["snapshot.mode"] = json!("bogus");
    config["tabel.include.list"] = json!("public.x");
    let url = p.url(
        "/connector-plugins/io.debezium.connector.postgresql.PostgresConnector/config/validate",
    );
    let v = http(
        "PUT",
        &url,
        Some(&config),
        &["Authorization: Bearer s3cret"],
    )
    .body;
    assert_eq!(
        v["name"],
        "io.debezium.connector.postgresql.PostgresConnector"
    );
    assert_eq!(v["error_count"], 2, "{v}");
    let entry = |k: &str| {
        v["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["value"]["name"] == k)
            .cloned()
            .unwrap_or_else(|| panic!("no entry for {k}"))
    };
    assert!(entry("snapshot.mode")["value"]["errors"][0]
        .as_str()
        .unwrap()
        .contains("bogus"));
    assert!(entry("tabel.include.list")["value"]["errors"][0]
        .as_str()
        .unwrap()
        .contains("did you mean table.include.list"));
    assert_eq!(entry("database.password")["value"]["value"], "[hidden]");
    let other = http(
        "PUT",
        &p.url("/connector-plugins/NoSuchClass/config/validate"),
        Some(&config),
        &["Authorization: Bearer s3cret"],
    );
    assert_eq!(other.status, 400);
    assert_eq!(
        get(&p, "/connector-plugins").body[0]["class"],
        "io.debezium.connector.postgresql.PostgresConnector"
    );

    // Log levels.
    assert_eq!(get(&p, "/admin/loggers").body["root"]["level"], "INFO");
    let set = http(
        "PUT",
        &p.url("/admin/loggers/io.debezium"),
        Some(&json!({"level": "DEBUG"})),
        &["Authorization: Bearer s3cret"],
    );
    assert_eq!(
        (set.status, set.body.clone()),
        (200, json!(["io.debezium"]))
    );
    assert_eq!(get(&p, "/admin/loggers/io.debezium").body["level"], "DEBUG");
    assert_eq!(get(&p, "/admin/loggers/nope").status, 404);

    // Connect's 404 and 405 for paths and methods it does not have.
    assert_eq!(
        get(&p, "/nonexistent-path").body,
        json!({"error_code": 404, "message": "HTTP 404 Not Found"})
    );
    let root = http(
        "DELETE",
        &p.url("/"),
        None,
        &["Authorization: Bearer s3cret"],
    );
    assert_eq!(
        root.body,
        json!({"error_code": 405, "message": "HTTP 405 Method Not Allowed"})
    );
    assert_eq!(get(&p, "/").body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(p.stop(), 0);
}

/// The producer queue's bound counts whole records: with the broker paused and more rows
/// than pgcdc's buffers hold, the queue fills to its share of `pgcdc.buffer.memory.bytes`
/// (half of 4 MiB) and no further, counting keys and headers too (librdkafka's own limit
/// counts values only, which let it hold about a tenth more); once Kafka is back every row
/// arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_producer_queue_holds_its_share_of_the_memory_budget_in_whole_records() {
    let _fault = fault_broker_lock().await;
    let db = pedidos_db("restbound").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("restbound");
    let mut body = connector_body(&db, "bound", &prefix, dir.path());
    body["config"]["bootstrap.servers"] = json!(env().kafka_fault);
    body["config"]["pgcdc.buffer.memory.bytes"] = json!("4194304");
    let file = dir.path().join("c.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let p = Pgcdc::start(&["run", "--config", file.to_str().unwrap()], &[]);
    p.wait_line("streaming started");
    db.exec("INSERT INTO pedidos VALUES (0, 'before the pause')")
        .await;
    let topic = format!("{prefix}.public.pedidos");
    read_until(&env().kafka_fault, &topic, T, |r| !r.is_empty()).await;
    let paused = PausedBroker::pause();
    // About 10 MB of values: more than the producer's 2 MiB and the reader's 1 MiB.
    db.exec("INSERT INTO pedidos SELECT g, repeat('x', 2000) FROM generate_series(1, 4000) g")
        .await;
    let own = [("connector", "bound")];
    let share = 2.0 * 1024.0 * 1024.0;
    wait_for("the producer queue to fill", T, || async {
        let queued = sample(&metrics(&p).await, "pgcdc_producer_queue_bytes", &own)?;
        (queued >= share - 16.0 * 1024.0).then_some(())
    })
    .await;
    let max = sample(&metrics(&p).await, "pgcdc_producer_queue_bytes_max", &own).unwrap();
    assert!(
        max <= share,
        "the producer queue held {max} bytes, more than its {share}-byte share"
    );
    drop(paused);
    let records = read_until(&env().kafka_fault, &topic, T, |r| r.len() >= 4001).await;
    assert_eq!(records.len(), 4001, "every row arrives once Kafka is back");
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}

/// The stall signals: while Kafka does not answer, the slot's confirmed position stands still
/// as WAL grows, and `pgcdc_slot_stalled_seconds` climbs with the lag;
/// `pgcdc_unacknowledged_seconds` climbs, and past `pgcdc.health.unacknowledged.max.ms`
/// `/health/ready` answers 503 saying why. Once Kafka is back all return to normal; while the
/// connector is paused the slot shows as stalled again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stalled_slot_metric_climbs_while_the_broker_is_paused_and_clears_after() {
    let _fault = fault_broker_lock().await;
    let db = pedidos_db("reststall").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("reststall");
    let mut body = connector_body(&db, "stall", &prefix, dir.path());
    body["config"]["bootstrap.servers"] = json!(env().kafka_fault);
    let file = dir.path().join("c.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let p = Pgcdc::start(
        &["run", "--config", file.to_str().unwrap()],
        &[("PGCDC_PGCDC_HEALTH_UNACKNOWLEDGED_MAX_MS", "3000")],
    );
    p.wait_line("streaming started");
    let own = [("connector", "stall")];
    wait_for("the slot monitor's first reading", T, || async {
        sample(&metrics(&p).await, "pgcdc_slot_stalled_seconds", &own).filter(|s| *s == 0.0)
    })
    .await;
    // The topic exists before the pause: a broker paused past its session timeout comes back
    // unregistered for a moment, and creating a topic then fails.
    db.exec("INSERT INTO pedidos VALUES (0, 'before the pause')")
        .await;
    let topic = format!("{prefix}.public.pedidos");
    read_until(&env().kafka_fault, &topic, T, |r| !r.is_empty()).await;
    let paused = PausedBroker::pause();
    db.exec("INSERT INTO pedidos VALUES (1, 'while Kafka is paused')")
        .await;
    let stalled = wait_for("the slot to show as stalled", T, || async {
        let s = metrics(&p).await;
        let stalled = sample(&s, "pgcdc_slot_stalled_seconds", &own)?;
        let lag = sample(&s, "pgcdc_slot_lag_bytes", &own)?;
        (stalled >= 5.0 && lag > 0.0).then_some(stalled)
    })
    .await;
    // The record waits in the producer: its bytes are counted until Kafka answers.
    let queued = sample(&metrics(&p).await, "pgcdc_producer_queue_bytes", &own).unwrap();
    assert!(queued > 0.0, "the paused record's bytes are queued");
    let waited = sample(&metrics(&p).await, "pgcdc_unacknowledged_seconds", &own).unwrap();
    assert!(waited >= 3.0, "the record has waited {waited} s");
    let not_ready = wait_for("readiness to fail while Kafka stalls", T, || async {
        let r = get(&p, "/health/ready");
        (r.status == 503).then_some(r.body)
    })
    .await;
    assert_eq!(
        not_ready["connectors"]["stall"], "WAITING_FOR_KAFKA",
        "{not_ready}"
    );
    let reason = not_ready["reasons"]["stall"].as_str().unwrap_or_default();
    assert!(
        reason.contains("pgcdc.health.unacknowledged.max.ms (3000 ms)"),
        "{not_ready}"
    );
    drop(paused);
    wait_for("the stall to clear once Kafka answers", T, || async {
        let s = metrics(&p).await;
        let clear = sample(&s, "pgcdc_slot_stalled_seconds", &own)? == 0.0
            && sample(&s, "pgcdc_producer_queue_bytes", &own)? == 0.0
            && sample(&s, "pgcdc_unacknowledged_seconds", &own)? == 0.0;
        clear.then_some(())
    })
    .await;
    assert_eq!(get(&p, "/health/ready").status, 200, "ready again");
    assert!(stalled >= 5.0);

    // Paused, the connector reads nothing, but its slot still holds WAL: the slot metrics
    // keep being read, and show the stall.
    let paused = http("PUT", &p.url("/connectors/stall/pause"), None, &[]);
    assert_eq!(paused.status, 202);
    wait_states(&p, "stall", "PAUSED", &["PAUSED"]).await;
    db.exec("INSERT INTO pedidos VALUES (2, 'while the connector is paused')")
        .await;
    wait_for(
        "the paused connector's slot to show as stalled",
        T,
        || async {
            let s = metrics(&p).await;
            let stalled = sample(&s, "pgcdc_slot_stalled_seconds", &own)?;
            let lag = sample(&s, "pgcdc_slot_lag_bytes", &own)?;
            (stalled >= 5.0 && lag > 0.0).then_some(())
        },
    )
    .await;
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}

/// `snapshot.delay.ms` waits before anything is created (no slot yet), `streaming.delay.ms`
/// waits after the snapshot is in Kafka (the slot is not read meanwhile); a stop during
/// either ends the run at once, and the next run goes on from where the first stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_and_streaming_delays_wait_before_each_phase_and_a_stop_cuts_them_short() {
    let db = pedidos_db("delays").await;
    db.exec("INSERT INTO pedidos VALUES (1, 'before')").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("delays");
    let body = connector_body(&db, "delays", &prefix, dir.path());
    let file = dir.path().join("delays.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let run = |delays: &[&str]| {
        let mut args = vec!["run", "--config", file.to_str().unwrap()];
        for d in delays {
            args.extend(["--set", d]);
        }
        Pgcdc::start(&args, &[])
    };
    let topic = format!("{prefix}.public.pedidos");

    let p = run(&["snapshot.delay.ms=600000"]);
    p.wait_line("waiting snapshot.delay.ms");
    assert_eq!(
        db.confirmed_flush(&prefix).await,
        0,
        "no slot while waiting"
    );
    let ready = get(&p, "/health/ready");
    assert_eq!(
        (ready.status, ready.body["connectors"]["delays"].clone()),
        (503, json!("CONNECTING"))
    );
    assert_eq!(p.stop(), 0, "a stop during the wait");

    let p = run(&["streaming.delay.ms=600000"]);
    p.wait_line("waiting streaming.delay.ms");
    let snap = read_until(&env().kafka, &topic, T, |r| !r.is_empty()).await;
    assert_eq!(snap[0].payload()["op"], "r");
    assert!(db.confirmed_flush(&prefix).await > 0, "the slot exists");
    assert_eq!(
        db.walsender(&prefix).await,
        None,
        "nobody reads the slot while waiting"
    );
    assert_eq!(p.stop(), 0);

    // No delays: streaming, without a second snapshot.
    let p = run(&[]);
    p.wait_line("streaming started");
    db.exec("INSERT INTO pedidos VALUES (2, 'after')").await;
    let recs = read_until(&env().kafka, &topic, T, |r| r.len() >= 2).await;
    let ops: Vec<(Value, Value)> = recs
        .iter()
        .map(|r| {
            (
                r.payload()["op"].clone(),
                r.payload()["after"]["id"].clone(),
            )
        })
        .collect();
    assert_eq!(ops, [(json!("r"), json!(1)), (json!("c"), json!(2))]);
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}

/// pgcdc's `POST /connectors/{name}/signals` and the file channel drive an incremental
/// snapshot: a REST execute-snapshot starts it, a file pause-snapshot pauses it (no chunk is
/// read while `SnapshotPaused` is 1), a REST resume-snapshot resumes it, a file stop-snapshot
/// stops it (`ABORTED`) before the table is done; a malformed body is a 400 naming what is
/// wrong, an unknown connector a 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_and_file_signals_start_pause_resume_and_stop_an_incremental_snapshot() {
    let db = TestDb::create("restsig").await;
    db.exec(
        "CREATE TABLE v (id int PRIMARY KEY, ver int NOT NULL); \
         CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048)); \
         INSERT INTO v SELECT g, 1 FROM generate_series(1, 20000) g",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("restsig");
    let notes = format!("{prefix}.notifications");
    let signal_file = dir.path().join("signals.txt");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    for (k, v) in [
        ("snapshot.mode", "no_data"),
        ("signal.data.collection", "public.dbz_signal"),
        ("signal.enabled.channels", "source,file"),
        ("signal.file", signal_file.to_str().unwrap()),
        ("signal.poll.interval.ms", "100"),
        ("incremental.snapshot.chunk.size", "20"),
        ("notification.enabled.channels", "sink,log"),
        ("notification.sink.topic.name", &notes),
        ("name", "sig"),
    ] {
        raw.insert(k.into(), v.into());
    }
    let file = dir.path().join("c.json");
    std::fs::write(&file, json!({"name": "sig", "config": raw}).to_string()).unwrap();
    let p = Pgcdc::start(&["run", "--config", file.to_str().unwrap()], &[]);
    p.wait_line("streaming started");

    let url = p.url("/connectors/sig/signals");
    let bad = http("POST", &url, Some(&json!({"data": {}})), &[]);
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(bad.text.contains("no \\\"type\\\""), "{}", bad.text);
    let invalid = json!({"type": "execute-snapshot", "data": {"data-collections": []}});
    let refused = http("POST", &url, Some(&invalid), &[]);
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(
        refused.text.contains("needs data-collections"),
        "{}",
        refused.text
    );
    let unknown = http(
        "POST",
        &p.url("/connectors/nope/signals"),
        Some(&json!({"type": "log", "data": {"message": "m"}})),
        &[],
    );
    assert_eq!(unknown.status, 404);
    let start = json!({"id": "rest-1", "type": "execute-snapshot", "data": {"data-collections": ["public.v"]}});
    let accepted = http("POST", &url, Some(&start), &[]);
    assert_eq!(accepted.status, 202, "{}", accepted.text);
    assert_eq!(accepted.body["id"], "rest-1");
    let topic = format!("{prefix}.public.v");
    read_until(&env().kafka, &topic, T, |r| r.len() >= 100).await;

    std::fs::write(
        &signal_file,
        "{\"id\":\"f-1\",\"type\":\"pause-snapshot\",\"data\":{}}\nnot json\n",
    )
    .unwrap();
    // The file reader reads both lines before the main loop acts on the first.
    p.wait_line("signal file line skipped: not valid JSON");
    p.wait_line("pausing incremental snapshot");
    wait_for("SnapshotPaused=1", T, || async {
        let m = metrics(&p).await;
        (sample(&m, "debezium_metrics_SnapshotPaused", &[]) == Some(1.0)).then_some(())
    })
    .await;
    let m = metrics(&p).await;
    assert_eq!(
        sample(&m, "debezium_metrics_SnapshotRunning", &[]),
        Some(1.0),
        "a paused snapshot runs"
    );
    let rows = sample(&m, "debezium_metrics_RowsScanned", &[("table", "public.v")]);
    assert!(
        rows.is_some_and(|r| r >= 100.0),
        "RowsScanned of public.v: {rows:?}"
    );
    // A window read before the pause may still close; once a row inserted now arrives, it
    // has. From then on only streamed changes arrive until the resume.
    let sentinel =
        |id: i64| move |r: &[Rec]| r.iter().any(|x| x.payload()["after"]["id"] == json!(id));
    db.exec("INSERT INTO v VALUES (100000, 1)").await;
    read_until(&env().kafka, &topic, T, sentinel(100000)).await;
    let ends = || async {
        end_offsets(&env().kafka, std::slice::from_ref(&topic))
            .await
            .values()
            .sum::<i64>()
    };
    let before = ends().await;
    db.exec("INSERT INTO v VALUES (100001, 1)").await;
    read_until(&env().kafka, &topic, T, sentinel(100001)).await;
    assert_eq!(
        ends().await - before,
        1,
        "only the streamed insert arrived while paused"
    );

    let resume = json!({"type": "resume-snapshot"});
    assert_eq!(http("POST", &url, Some(&resume), &[]).status, 202);
    p.wait_line("resuming incremental snapshot");
    let stop = r#"{"id":"f-2","type":"stop-snapshot","data":{"data-collections":["public.v"]}}"#;
    std::fs::write(&signal_file, format!("{stop}\n")).unwrap();
    let aborted = |r: &[Rec]| r.iter().any(|x| x.payload()["type"] == json!("ABORTED"));
    let n = read_until(&env().kafka, &notes, T, aborted).await;
    let kinds: Vec<String> = n
        .iter()
        .filter(|r| r.payload()["aggregate_type"] == json!("Incremental Snapshot"))
        .map(|r| r.payload()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("STARTED"));
    assert!(
        kinds.contains(&"PAUSED".to_string()) && kinds.contains(&"RESUMED".to_string()),
        "{kinds:?}"
    );
    assert!(
        !kinds.contains(&"COMPLETED".to_string()),
        "stopped before the end: {kinds:?}"
    );
    let abort = n
        .iter()
        .find(|x| x.payload()["type"] == json!("ABORTED"))
        .unwrap()
        .payload();
    assert_eq!(abort["additional_data"]["data_collections"], "public.v");
    assert_eq!(abort["id"], "rest-1");
    assert_eq!(
        std::fs::read_to_string(&signal_file).unwrap(),
        "",
        "the file is emptied once read"
    );
    assert_eq!(p.stop(), 0);
    db.cleanup().await;
}
