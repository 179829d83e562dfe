//! Debezium's own PostgreSQL connector test cases, run against real PostgreSQL and Kafka.
//!
//! The cases are in `tests/fixtures/conformance/debezium-conformance.jsonl` (one JSON object
//! per line: setup SQL, connector config, statements, expected events; the value notation
//! `$b64`, `$decimal`, `$float`, `$bytes_hex`, `$bytes_utf8` and the schema notation are
//! described in `tests/fixtures/conformance/README.md`). `expectations.json` next to it says,
//! per case, what pgcdc does when that is not simply "passes as written": a deliberate
//! difference or a Debezium 3.6.1 value (with the expected events replaced), a feature that is
//! not implemented yet (the test then checks the connector refuses the config with an error
//! naming it), or another test that covers the case.
//!
//! Each case gets its own database, slot, publication and topic prefix. Up to four run at a
//! time. `PGCDC_CONFORMANCE=DBZ-T-01,DBZ-T-02` runs only those cases.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Headers;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde_json::{json, Value as J};

use crate::harness::*;

const CASES: &str = include_str!("fixtures/conformance/debezium-conformance.jsonl");
const BUG_CASES: &str = include_str!("fixtures/conformance/bug-cases.jsonl");
const EXPECTATIONS: &str = include_str!("fixtures/conformance/expectations.json");
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a case waits for the connector to confirm what a statement wrote: the slot's
/// walsender decodes every database's WAL, which under a loaded CI run takes a while.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(180);

/// One case, with its expectation applied.
#[derive(Debug, Clone)]
struct Case {
    id: String,
    setup: Vec<String>,
    config: BTreeMap<String, String>,
    statements: Vec<String>,
    expected: Vec<J>,
    /// Queries that must return true (polled until the read timeout) while the connector runs.
    assert_sql: Vec<String>,
    status: Status,
}

#[derive(Debug, Clone, PartialEq)]
enum Status {
    /// Runs and must match (as written, or with the expectation's replacements).
    Run,
    /// Not implemented: the connector must refuse the config with an error containing this.
    Refused(String),
    /// Covered by another test, named in `expectations.json`.
    Elsewhere(String),
    /// pgcdc deliberately stops with an error containing this (where Debezium drops data).
    Fails(String),
    /// Not run here, for the reason given (listed in the table and the README).
    NotRun(String),
}

/// What happened to one case.
#[derive(Debug)]
enum Outcome {
    Pass,
    Refused,
    Elsewhere(String),
    FailsAsMeant,
    NotRun(String),
    Fail(Vec<String>),
}

fn load_cases() -> Vec<Case> {
    let expectations: serde_json::Map<String, J> =
        serde_json::from_str(EXPECTATIONS).expect("expectations.json is JSON");
    let mut cases = Vec::new();
    for line in CASES
        .lines()
        .chain(BUG_CASES.lines())
        .filter(|l| !l.trim().is_empty())
    {
        let c: J = serde_json::from_str(line).expect("a case is JSON");
        let base_id = c["id"].as_str().expect("id").to_string();
        let base = expectations.get(&base_id).cloned().unwrap_or(json!({}));
        // A case with variants (other configs of the same test) runs once per variant.
        let variants: Vec<(String, J)> = match base.get("variants").and_then(|v| v.as_object()) {
            Some(vs) => vs
                .iter()
                .map(|(name, v)| {
                    let mut merged = base.clone();
                    merged.as_object_mut().unwrap().remove("variants");
                    for (k, x) in v.as_object().expect("a variant is an object") {
                        merged[k] = x.clone();
                    }
                    (format!("{base_id}/{name}"), merged)
                })
                .collect(),
            None => vec![(base_id.clone(), base)],
        };
        for (id, e) in variants {
            let pick = |k: &str| e.get(k).cloned().unwrap_or_else(|| c[k].clone());
            let strings = |v: J| -> Vec<String> {
                v.as_array()
                    .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                    .unwrap_or_default()
            };
            let mut config = BTreeMap::new();
            for (k, v) in c["config"].as_object().unwrap() {
                config.insert(k.clone(), config_value(v));
            }
            if let Some(o) = e.get("config").and_then(|o| o.as_object()) {
                for (k, v) in o {
                    if v.is_null() {
                        config.remove(k);
                    } else {
                        config.insert(k.clone(), config_value(v));
                    }
                }
            }
            let status = match e.get("status").and_then(|s| s.as_str()) {
                None | Some("pass") | Some("deliberate") | Some("debezium-3.6.1") => Status::Run,
                Some("not-implemented") => Status::Refused(
                    e["error"]
                        .as_str()
                        .expect("a not-implemented case names the error")
                        .to_string(),
                ),
                Some("elsewhere") => {
                    Status::Elsewhere(e["test"].as_str().expect("test").to_string())
                }
                Some("fails") => Status::Fails(
                    e["error"]
                        .as_str()
                        .expect("a failing case names the error")
                        .to_string(),
                ),
                Some("not-run") => {
                    Status::NotRun(e["reason"].as_str().expect("reason").to_string())
                }
                Some(other) => panic!("{id}: unknown status {other}"),
            };
            if matches!(
                e.get("status").and_then(|s| s.as_str()),
                Some("deliberate") | Some("debezium-3.6.1") | Some("elsewhere") | Some("fails")
            ) {
                assert!(
                    e.get("reason").and_then(|r| r.as_str()).is_some(),
                    "{id}: give the reason"
                );
            }
            cases.push(Case {
                id,
                setup: strings(pick("setup_sql")),
                config,
                statements: strings(pick("statements_sql")),
                expected: pick("expected_events")
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                assert_sql: strings(e.get("assert_sql").cloned().unwrap_or(J::Null)),
                status,
            });
        }
    }
    cases
}

/// A case's config value as a string: `"precise (default)"` → `precise`, `"initial | no_data"`
/// → `initial` (the first variant).
fn config_value(v: &J) -> String {
    match v {
        // Annotations follow a one-word value; SQL and lists of names are kept whole.
        J::String(s) => {
            let word = |w: &str| !w.trim().contains(' ');
            let s = match s.split_once(" (") {
                Some((v, _)) if word(v) => v,
                _ => s,
            };
            let s = match s.split_once(" | ") {
                Some((v, _)) if word(v) => v,
                _ => s,
            };
            s.trim().to_string()
        }
        other => other.to_string(),
    }
}

/// Random alphanumeric text of `len` characters (xorshift; no dependency needed).
fn random_text(len: usize, seed: u64) -> String {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let c = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                [(x % 62) as usize];
            c as char
        })
        .collect()
}

/// Replaces `<T>`, `<T1>`, ... with 10,000 random characters (TOASTed out of line) and
/// `test_server` (Debezium's test prefix) with the case's prefix.
struct Placeholders(Vec<(String, String)>);

/// The replication origin Debezium's origin test creates. Origins are global to the server and
/// the text and binary runs go at once, so each run gets its own name in its place.
const ORIGIN: &str = "test_origin_dc1";

impl Placeholders {
    fn new(seed: u64) -> Self {
        let mut v = vec![(ORIGIN.to_string(), unique("origin"))];
        for (i, name) in ["<T>", "<T1>", "<T2>", "<T3>"].iter().enumerate() {
            v.push((
                name.to_string(),
                random_text(10_000, seed + i as u64 * 7919),
            ));
        }
        v.push((
            "<100000 random chars>".to_string(),
            random_text(100_000, seed ^ 0xABCD),
        ));
        Placeholders(v)
    }
    fn apply(&self, s: &str) -> String {
        let mut s = s.to_string();
        for (k, v) in &self.0 {
            s = s.replace(k, v);
        }
        s
    }
    fn apply_json(&self, v: &J) -> J {
        match v {
            J::String(s) => J::String(self.apply(s)),
            J::Array(a) => J::Array(a.iter().map(|x| self.apply_json(x)).collect()),
            J::Object(o) => J::Object(
                o.iter()
                    .map(|(k, v)| (self.apply(k), self.apply_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn debezium_conformance_cases() {
    run_conformance(false).await;
}

/// The same cases with binary tuples (`pgcdc.pgoutput.binary=true`): the streamed values come
/// in each type's binary send format and must give the same events.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn debezium_conformance_cases_with_binary_tuples() {
    run_conformance(true).await;
}

async fn run_conformance(binary: bool) {
    let only: Option<Vec<String>> = std::env::var("PGCDC_CONFORMANCE")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let cases: Vec<Case> = load_cases()
        .into_iter()
        .filter(|c| {
            let base = c.id.split('/').next().unwrap_or(&c.id).to_string();
            only.as_ref()
                .is_none_or(|o| o.contains(&c.id) || o.contains(&base))
        })
        .collect();
    assert!(!cases.is_empty(), "no case selected");
    let permits = Arc::new(tokio::sync::Semaphore::new(4));
    let mut set = tokio::task::JoinSet::new();
    for (n, case) in cases.iter().cloned().enumerate() {
        let permits = permits.clone();
        set.spawn(async move {
            let _permit = permits.acquire().await.unwrap();
            let id = case.id.clone();
            // With binary tuples, a type without a mapping (include.unknown.datatypes) has no
            // text to emit: pgcdc refuses the table with an error naming the column.
            let unknown_types = case
                .config
                .get("include.unknown.datatypes")
                .is_some_and(|v| v == "true");
            let outcome = tokio::spawn(run_case(case, n as u64, binary))
                .await
                .unwrap_or_else(|e| {
                    let msg = e
                        .try_into_panic()
                        .ok()
                        .and_then(|p| {
                            p.downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        })
                        .unwrap_or_else(|| "task failed".into());
                    Outcome::Fail(vec![format!("panicked: {msg}")])
                });
            let outcome = match outcome {
                Outcome::Fail(m)
                    if binary
                        && unknown_types
                        && m.iter()
                            .any(|l| l.contains("whose binary form pgcdc cannot read")) =>
                {
                    Outcome::FailsAsMeant
                }
                o => o,
            };
            (id, outcome)
        });
    }
    let mut results: Vec<(String, Outcome)> = Vec::new();
    while let Some(r) = set.join_next().await {
        results.push(r.expect("case task"));
    }
    results.sort_by_key(|(id, _)| {
        let n = id
            .trim_start_matches("DBZ-T-")
            .split('/')
            .next()
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(u32::MAX);
        (n, id.clone())
    });
    let (mut pass, mut refused, mut elsewhere, mut failed) = (0, 0, 0, 0);
    let (mut stops, mut not_run) = (0, 0);
    let mut report = String::new();
    for (id, o) in &results {
        let line = match o {
            Outcome::Pass => {
                pass += 1;
                "pass".to_string()
            }
            Outcome::Refused => {
                refused += 1;
                "refused at startup (not implemented)".to_string()
            }
            Outcome::Elsewhere(t) => {
                elsewhere += 1;
                format!("covered by {t}")
            }
            Outcome::FailsAsMeant => {
                stops += 1;
                "stops with the error meant (deliberate)".to_string()
            }
            Outcome::NotRun(r) => {
                not_run += 1;
                format!("NOT RUN: {r}")
            }
            Outcome::Fail(m) => {
                failed += 1;
                format!("FAIL\n    {}", m.join("\n    "))
            }
        };
        report.push_str(&format!("{id:<10} {line}\n"));
    }
    println!(
        "{report}\nconformance{}: {} cases: {pass} pass, {stops} stop with a deliberate error, {refused} refused as not implemented, {elsewhere} covered by other tests, {not_run} not run, {failed} failed",
        if binary { " (binary tuples)" } else { "" },
        results.len()
    );
    // The failures again, last, so that a log cut in the middle still shows them.
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(id, o)| match o {
            Outcome::Fail(m) => Some(format!(
                "{id}: {}",
                m.iter()
                    .take(6)
                    .map(|l| l.chars().take(600).collect::<String>())
                    .collect::<Vec<_>>()
                    .join(" | ")
            )),
            _ => None,
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} conformance failure(s){}:\n{}",
        failures.len(),
        if binary { " with binary tuples" } else { "" },
        failures.join("\n")
    );
}

async fn run_case(case: Case, n: u64, binary: bool) -> Outcome {
    match &case.status {
        Status::Elsewhere(t) => return Outcome::Elsewhere(t.clone()),
        Status::NotRun(r) => return Outcome::NotRun(r.clone()),
        _ => {}
    }
    let db = TestDb::create("conf").await;
    let ph = Placeholders::new(0x9E37_79B9_7F4A_7C15 ^ (n * 0x1000_0001));
    let outcome = run_in(&case, &db, &ph, binary).await;
    // The origin is the server's, not the database's: drop it (when this case made one).
    let _ = db
        .client
        .execute(
            "SELECT pg_replication_origin_drop(roname) FROM pg_replication_origin WHERE roname = $1",
            &[&ph.apply(ORIGIN)],
        )
        .await;
    db.cleanup().await;
    outcome
}

async fn run_in(case: &Case, db: &TestDb, ph: &Placeholders, binary: bool) -> Outcome {
    db.exec(
        "CREATE EXTENSION IF NOT EXISTS hstore; CREATE EXTENSION IF NOT EXISTS ltree; \
         CREATE EXTENSION IF NOT EXISTS citext; CREATE EXTENSION IF NOT EXISTS isn",
    )
    .await;
    // The version matrix's servers (npm builds) have no PostGIS: scripts/test-matrix.sh says
    // so, and the cases that need it run on the main server only.
    let no_postgis = std::env::var("PGCDC_TEST_PG_NO_POSTGIS").is_ok_and(|v| v == "1");
    if no_postgis
        && case
            .setup
            .iter()
            .any(|s| s.to_lowercase().contains("postgis"))
    {
        return Outcome::NotRun(
            "needs PostGIS, which this server (of the version matrix) lacks".into(),
        );
    }
    for sql in &case.setup {
        if let Err(e) = db.client.batch_execute(&ph.apply(sql)).await {
            return Outcome::Fail(vec![format!("setup SQL failed: {e}: {sql:.200}")]);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("conf");
    let mut raw = base_config(db, &prefix, &env().kafka, dir.path());
    for (k, v) in &case.config {
        if ["topic.prefix", "database.dbname", "plugin.name"].contains(&k.as_str()) {
            continue;
        }
        raw.insert(k.clone(), v.clone());
    }
    if binary {
        raw.insert("pgcdc.pgoutput.binary".into(), "true".into());
    }
    if let Status::Refused(want) = &case.status {
        return match pgcdc::pipeline::validate_config(&raw) {
            Err(e) if e.message().contains(want.as_str()) => Outcome::Refused,
            Err(e) => Outcome::Fail(vec![format!(
                "refused, but the error does not mention {want:?}: {}",
                e.message()
            )]),
            Ok(_) => Outcome::Fail(vec![format!(
                "marked not implemented ({want}) but the config is accepted: update expectations.json"
            )]),
        };
    }
    if let Err(e) = pgcdc::pipeline::validate_config(&raw) {
        return Outcome::Fail(vec![format!("config refused: {}", e.message())]);
    }
    let slot = raw.get("slot.name").cloned().unwrap_or(prefix.clone());
    let snapshot_mode = raw
        .get("snapshot.mode")
        .cloned()
        .unwrap_or("initial".into());
    let mut running = Some(start(&raw));
    if snapshot_mode != "initial_only" {
        let deadline = Instant::now() + READ_TIMEOUT;
        while db.confirmed_flush(&slot).await == 0 {
            if running.as_ref().is_none_or(|r| r.handle.is_finished()) || Instant::now() > deadline
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    for sql in &case.statements {
        let directive = sql.trim();
        if directive == "-- restart connector" || directive == "-- stop connector" {
            if let Some(r) = running.take() {
                if let Err(e) = r.stop().await {
                    return Outcome::Fail(vec![format!("stop failed: {e}")]);
                }
            }
            if directive == "-- stop connector" {
                continue;
            }
        }
        if directive == "-- restart connector" || directive == "-- start connector" {
            running = Some(start(&raw));
        } else if let Err(e) = db.client.batch_execute(&ph.apply(sql)).await {
            return Outcome::Fail(vec![format!("statement failed: {e}: {sql:.200}")]);
        }
        let Some(r) = running.as_ref() else {
            continue;
        };
        if snapshot_mode != "initial_only" {
            // Like Debezium's tests, which consume a statement's events before the next
            // statement: wait until the connector has confirmed everything written so far, so
            // the catalog it reads for a Relation is the one of that statement's time.
            // Going on without it would let a later statement change the catalog first, and
            // the case would fail on a schema detail instead of on the cause: say it plainly.
            let lsn = db.current_lsn().await;
            let deadline = Instant::now() + CONFIRM_TIMEOUT;
            loop {
                let confirmed = db.confirmed_flush(&slot).await;
                if confirmed >= lsn || r.handle.is_finished() {
                    break;
                }
                if Instant::now() > deadline {
                    r.handle.abort();
                    return Outcome::Fail(vec![format!(
                        "the connector did not confirm the WAL written up to statement {sql:.80} ({lsn}) within {CONFIRM_TIMEOUT:?} (slot at {confirmed})"
                    )]);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    let Some(running) = running else {
        return Outcome::Fail(vec!["the statements leave the connector stopped".into()]);
    };
    if let Status::Fails(want) = &case.status {
        let deadline = Instant::now() + READ_TIMEOUT;
        while !running.handle.is_finished() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !running.handle.is_finished() {
            let _ = running.stop().await;
            return Outcome::Fail(vec![format!(
                "expected the connector to stop with {want:?}; it kept running"
            )]);
        }
        return match running.stop().await {
            Err(e) if e.message().contains(want.as_str()) => Outcome::FailsAsMeant,
            Err(e) => Outcome::Fail(vec![format!(
                "stopped, but the error does not mention {want:?}: {}",
                e.message()
            )]),
            Ok(_) => Outcome::Fail(vec![format!(
                "expected an error mentioning {want:?}; the connector ended cleanly"
            )]),
        };
    }
    // Expected events per topic, in order.
    // `test_server`, Debezium's test prefix, stands for this case's prefix in names and values.
    let expected: Vec<J> = case
        .expected
        .iter()
        .map(|e| {
            let text = serde_json::to_string(&ph.apply_json(e)).unwrap();
            serde_json::from_str(&text.replace("test_server", &prefix)).unwrap()
        })
        .collect();
    let mut topics: Vec<String> = Vec::new();
    let mut per_topic: HashMap<String, Vec<J>> = HashMap::new();
    let mut topic =
        default_topic(case.setup.iter().chain(&case.statements)).replace("test_server", &prefix);
    for e in &expected {
        if let Some(t) = e.get("topic").and_then(|t| t.as_str()) {
            topic = t.replace("test_server", &prefix);
        }
        if topic.is_empty() {
            return Outcome::Fail(vec!["the first expected event has no topic".into()]);
        }
        if !topics.contains(&topic) {
            topics.push(topic.clone());
        }
        per_topic.entry(topic.clone()).or_default().push(e.clone());
    }
    let expects_reads = expected.iter().any(|e| e["op"] == "r");
    let wanted: HashMap<String, usize> = per_topic
        .iter()
        .map(|(t, v)| (t.clone(), v.len()))
        .collect();
    let handle_done = {
        let h = &running.handle;
        move || h.is_finished()
    };
    let got = tokio::task::block_in_place(|| collect(&topics, &wanted, expects_reads, handle_done));
    let mut problems = Vec::new();
    for sql in &case.assert_sql {
        let deadline = Instant::now() + READ_TIMEOUT;
        loop {
            let holds = db
                .client
                .query_one(sql.as_str(), &[])
                .await
                .map(|r| r.get::<_, bool>(0))
                .unwrap_or(false);
            if holds {
                break;
            }
            if running.handle.is_finished() || Instant::now() > deadline {
                problems.push(format!("never true: {sql}"));
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    if snapshot_mode == "initial_only" {
        // The connector ends after the snapshot; it must end cleanly.
        if let Err(e) = running.stop().await {
            problems.push(format!("the connector failed: {}", e.message()));
        }
    } else if running.handle.is_finished() {
        match running.stop().await {
            Ok(_) => problems.push("the connector stopped on its own".into()),
            Err(e) => problems.push(format!("the connector failed: {}", e.message())),
        }
    } else if let Err(e) = running.stop().await {
        problems.push(format!("stop failed: {}", e.message()));
    }
    let ctx = Ctx {
        prefix: prefix.clone(),
        db: db.name.clone(),
    };
    for t in &topics {
        let exp = &per_topic[t];
        let act = got.get(t).cloned().unwrap_or_default();
        if act.len() < exp.len() {
            problems.push(format!(
                "{t}: expected {} records, got {}",
                exp.len(),
                act.len()
            ));
        }
        for (i, (e, a)) in exp.iter().zip(act.iter()).enumerate() {
            compare_record(e, a, &ctx, &format!("{t}#{i}"), &mut problems);
        }
    }
    if problems.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(problems)
    }
}

/// The topic of the first table the setup SQL creates (cases leave it out when there is one).
fn default_topic<'a>(setup: impl Iterator<Item = &'a String>) -> String {
    for sql in setup {
        let lower = sql.to_lowercase();
        if let Some(i) = lower.find("create table ") {
            let rest = sql[i + "create table ".len()..].trim_start();
            let rest = rest
                .strip_prefix("IF NOT EXISTS ")
                .or_else(|| rest.strip_prefix("if not exists "))
                .unwrap_or(rest);
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            let qualified = if name.contains('.') {
                name
            } else {
                format!("public.{name}")
            };
            return format!("test_server.{qualified}");
        }
    }
    String::new()
}

/// Reads `topics` from the beginning until each has `wanted` records (snapshot `r` records are
/// left out unless `keep_reads`), the connector has ended, or the timeout passes.
fn collect(
    topics: &[String],
    wanted: &HashMap<String, usize>,
    keep_reads: bool,
    connector_done: impl Fn() -> bool,
) -> HashMap<String, Vec<Rec>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &env().kafka)
        .set("group.id", unique("conf-reader"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .expect("consumer");
    let start = Instant::now();
    let mut out: HashMap<String, Vec<Rec>> = HashMap::new();
    let mut assigned: Vec<String> = Vec::new();
    // Once the connector has ended, what it produced is complete; its topics may still take a
    // moment to show in metadata, so look for them a little longer before giving up.
    let mut ended_at: Option<Instant> = None;
    loop {
        if ended_at.is_none() && connector_done() {
            ended_at = Some(Instant::now());
        }
        let grace_over = ended_at.is_some_and(|t| t.elapsed() > Duration::from_secs(10));
        let done = topics
            .iter()
            .all(|t| out.get(t).map_or(0, |v| v.len()) >= wanted[t]);
        if done || start.elapsed() > READ_TIMEOUT {
            return out;
        }
        if ended_at.is_some() && assigned.len() == topics.len() {
            // Drain what is there, then stop waiting.
            let mut idle = 0;
            while idle < 20 {
                match consumer.poll(Duration::from_millis(100)) {
                    Some(m) => push(&mut out, m.expect("consume"), keep_reads),
                    None => idle += 1,
                }
            }
            return out;
        }
        if assigned.len() < topics.len() {
            let mut changed = false;
            for t in topics {
                if assigned.contains(t) {
                    continue;
                }
                let exists = consumer
                    .fetch_metadata(Some(t), Duration::from_secs(2))
                    .ok()
                    .and_then(|md| {
                        md.topics()
                            .iter()
                            .find(|x| x.name() == t && x.error().is_none())
                            .map(|x| !x.partitions().is_empty())
                    })
                    .unwrap_or(false);
                if exists {
                    assigned.push(t.clone());
                    changed = true;
                }
            }
            if changed {
                let mut tpl = TopicPartitionList::new();
                for t in &assigned {
                    let md = consumer
                        .fetch_metadata(Some(t), Duration::from_secs(5))
                        .expect("metadata");
                    for p in md.topics()[0].partitions() {
                        tpl.add_partition_offset(t, p.id(), Offset::Beginning)
                            .unwrap();
                    }
                }
                // Re-assigning restarts every topic from the beginning.
                out.clear();
                consumer.assign(&tpl).expect("assign");
            }
            if assigned.len() < topics.len() && grace_over {
                return out;
            }
        }
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            push(&mut out, m.expect("consume"), keep_reads);
        }
    }
}

fn push(
    out: &mut HashMap<String, Vec<Rec>>,
    m: rdkafka::message::BorrowedMessage<'_>,
    keep_reads: bool,
) {
    let headers = m
        .headers()
        .map(|h| {
            h.iter()
                .map(|x| (x.key.to_string(), x.value.map(|v| v.to_vec())))
                .collect()
        })
        .unwrap_or_default();
    let rec = Rec {
        topic: m.topic().to_string(),
        partition: m.partition(),
        offset: m.offset(),
        key: m.key().map(|k| k.to_vec()),
        value: m.payload().map(|v| v.to_vec()),
        headers,
        timestamp: m.timestamp().to_millis(),
    };
    if !keep_reads {
        if let Some(v) = rec.value_json() {
            if v["payload"]["op"] == "r" {
                return;
            }
        }
    }
    out.entry(rec.topic.clone()).or_default().push(rec);
}

struct Ctx {
    prefix: String,
    db: String,
}

/// Compares one expected event (the case notation) with one consumed record.
fn compare_record(e: &J, a: &Rec, ctx: &Ctx, at: &str, out: &mut Vec<String>) {
    let value = a.value_json();
    let payload = value.as_ref().map(|v| v["payload"].clone());
    // A tombstone: op null and value null.
    let is_tombstone_expected = match e.get("value") {
        Some(v) => v.is_null(),
        None => e.get("op").is_some_and(|o| o.is_null()),
    };
    if is_tombstone_expected {
        if a.value.is_some() {
            out.push(format!("{at}: expected a tombstone, got a value"));
        }
    } else if let Some(op) = e.get("op").filter(|o| !o.is_null()) {
        let got = payload.as_ref().map(|p| p["op"].clone()).unwrap_or(J::Null);
        if &got != op {
            out.push(format!("{at}: op: expected {op}, got {got}"));
            return;
        }
    }
    if let Some(k) = e.get("key") {
        let got = a
            .key_json()
            .map(|k| k["payload"].clone())
            .unwrap_or(J::Null);
        match_value(k, &got, &format!("{at}.key"), true, out);
    }
    let Some(payload) = payload else {
        return;
    };
    for part in ["before", "after"] {
        if let Some(x) = e.get(part) {
            match_value(x, &payload[part], &format!("{at}.{part}"), false, out);
        }
    }
    if let Some(names) = e.get("after_fields").and_then(|n| n.as_array()) {
        let got: Vec<J> = payload["after"]
            .as_object()
            .map(|o| o.keys().map(|k| J::String(k.clone())).collect())
            .unwrap_or_default();
        if &got != names {
            out.push(format!("{at}.after: fields {got:?}, expected {names:?}"));
        }
    }
    if let Some(src) = e.get("source") {
        let mut src = src.clone();
        if src.get("db").and_then(|d| d.as_str()) == Some("postgres") {
            src["db"] = J::String(ctx.db.clone());
        }
        match_value(
            &src,
            &payload["source"],
            &format!("{at}.source"),
            false,
            out,
        );
    }
    if let Some(v) = e.get("value") {
        if !v.is_null() {
            match_value(v, &payload, &format!("{at}.value"), false, out);
        }
    }
    if let Some(h) = e.get("headers").and_then(|h| h.as_object()) {
        for (name, want) in h {
            match a.header(name) {
                None => out.push(format!("{at}: header {name} missing")),
                Some(text) => {
                    let got: J = serde_json::from_str(&text).unwrap_or(J::String(text));
                    let got = got.get("payload").cloned().unwrap_or(got);
                    match_value(want, &got, &format!("{at}.header[{name}]"), true, out);
                }
            }
        }
    }
    if let Some(types) = e.get("value_schema_types").and_then(|t| t.as_object()) {
        let schema = value
            .as_ref()
            .map(|v| v["schema"].clone())
            .unwrap_or(J::Null);
        let key_schema = a.key_json().map(|k| k["schema"].clone()).unwrap_or(J::Null);
        for (field, spec) in types {
            let s = match field.as_str() {
                "$value" => Some(schema.clone()),
                "$key" => Some(key_schema.clone()),
                f if f.contains('.') => {
                    let (outer, inner) = f.split_once('.').unwrap();
                    field_schema(&schema, outer).and_then(|o| struct_field(&o, inner))
                }
                f => row_field_schema(&schema, f).or_else(|| field_schema(&schema, f)),
            };
            match s {
                None => out.push(format!("{at}: schema of {field} not found")),
                Some(s) => {
                    match_schema(spec, &s, &ctx.prefix, &format!("{at}.schema[{field}]"), out)
                }
            }
        }
    }
}

/// The schema of field `name` of a struct schema.
fn struct_field(s: &J, name: &str) -> Option<J> {
    s["fields"]
        .as_array()?
        .iter()
        .find(|f| f["field"] == name)
        .cloned()
}

/// The schema of an envelope field (e.g. `message`).
fn field_schema(envelope: &J, name: &str) -> Option<J> {
    struct_field(envelope, name)
}

/// The schema of a row column (from `after`, else `before`).
fn row_field_schema(envelope: &J, column: &str) -> Option<J> {
    ["after", "before"]
        .iter()
        .filter_map(|p| struct_field(envelope, p))
        .find_map(|row| struct_field(&row, column))
}

/// Matches an expected value (case notation) against an actual JSON value. `exact` objects must
/// have the same keys; otherwise the expected keys are a subset (cases list only the columns
/// they check).
fn match_value(e: &J, a: &J, at: &str, exact: bool, out: &mut Vec<String>) {
    match e {
        J::Object(o) if o.contains_key("$b64") => {
            if a != &o["$b64"] {
                out.push(format!("{at}: expected {} , got {a}", o["$b64"]));
            }
        }
        J::Object(o) if o.contains_key("$bytes_hex") || o.contains_key("$bytes_utf8") => {
            let bytes = match (o.get("$bytes_hex"), o.get("$bytes_utf8")) {
                (Some(h), _) => hex_bytes(h.as_str().unwrap()),
                (_, Some(u)) => u.as_str().unwrap().as_bytes().to_vec(),
                _ => unreachable!(),
            };
            let want = J::String(base64::engine::general_purpose::STANDARD.encode(bytes));
            if a != &want {
                out.push(format!("{at}: expected {want}, got {a}"));
            }
        }
        J::Object(o) if o.contains_key("$decimal") => {
            let d = o["$decimal"].as_str().unwrap();
            let ok = a.as_str() == Some(d)
                || a.as_f64()
                    .zip(d.parse::<f64>().ok())
                    .is_some_and(|(x, y)| x == y);
            if !ok {
                out.push(format!("{at}: expected decimal {d}, got {a}"));
            }
        }
        J::Object(o) if o.contains_key("$float") => {
            if a != &o["$float"] {
                out.push(format!("{at}: expected {}, got {a}", o["$float"]));
            }
        }
        J::Object(o) if o.contains_key("$range") => {
            let r = o["$range"].as_array().unwrap();
            let (lo, hi) = (r[0].as_i64().unwrap(), r[1].as_i64().unwrap());
            let want: Vec<J> = (lo..=hi).map(|i| json!(i)).collect();
            if a.as_array() != Some(&want) {
                out.push(format!(
                    "{at}: expected the integers {lo}..={hi}, got {a:.200}"
                ));
            }
        }
        J::Object(o) => {
            let Some(ao) = a.as_object() else {
                out.push(format!("{at}: expected an object, got {a:.300}"));
                return;
            };
            for (k, v) in o {
                match ao.get(k) {
                    Some(x) => match_value(v, x, &format!("{at}.{k}"), exact, out),
                    None => out.push(format!("{at}: field {k} missing")),
                }
            }
            if exact {
                for k in ao.keys() {
                    if !o.contains_key(k) {
                        out.push(format!("{at}: unexpected field {k}"));
                    }
                }
            }
        }
        J::Array(ea) => {
            let Some(aa) = a.as_array() else {
                out.push(format!("{at}: expected an array, got {a:.300}"));
                return;
            };
            if ea.len() != aa.len() {
                out.push(format!(
                    "{at}: expected {} elements, got {}",
                    ea.len(),
                    aa.len()
                ));
                return;
            }
            for (i, (x, y)) in ea.iter().zip(aa).enumerate() {
                match_value(x, y, &format!("{at}[{i}]"), exact, out);
            }
        }
        J::Number(n) => {
            let ok = match (n.as_i64(), a.as_i64()) {
                (Some(x), Some(y)) => x == y,
                _ => n.as_f64().is_some() && n.as_f64() == a.as_f64(),
            };
            if !ok {
                out.push(format!("{at}: expected {n}, got {a:.300}"));
            }
        }
        J::String(p) if p == "<txid>:<lsn>" || p == "<same id>" => {
            let ok = a
                .as_str()
                .and_then(|s| s.split_once(':'))
                .is_some_and(|(x, l)| {
                    !x.is_empty()
                        && !l.is_empty()
                        && x.bytes().all(|b| b.is_ascii_digit())
                        && l.bytes().all(|b| b.is_ascii_digit())
                });
            if !ok {
                out.push(format!(
                    "{at}: expected a transaction id <xid>:<lsn>, got {a}"
                ));
            }
        }
        other => {
            if other != a {
                let shown = |v: &J| {
                    let s = v.to_string();
                    if s.len() > 300 {
                        format!(
                            "{}… ({} chars)",
                            s.chars().take(300).collect::<String>(),
                            s.len()
                        )
                    } else {
                        s
                    }
                };
                out.push(format!("{at}: expected {}, got {}", shown(other), shown(a)));
            }
        }
    }
}

fn hex_bytes(h: &str) -> Vec<u8> {
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Matches `[type, name, {optional, default, params, params_include, version}]` against a
/// JsonConverter schema.
fn match_schema(spec: &J, s: &J, prefix: &str, at: &str, out: &mut Vec<String>) {
    let spec = spec.as_array().expect("schema spec is an array");
    let ty = spec[0].as_str().unwrap();
    match_type(ty, s, at, out);
    if let Some(name) = spec[1].as_str() {
        let name = name.replace("test_server", prefix);
        if s["name"].as_str() != Some(name.as_str()) {
            out.push(format!("{at}: name: expected {name}, got {}", s["name"]));
        }
    }
    let Some(opts) = spec.get(2).and_then(|o| o.as_object()) else {
        return;
    };
    if let Some(opt) = opts.get("optional") {
        if &s["optional"] != opt {
            out.push(format!(
                "{at}: optional: expected {opt}, got {}",
                s["optional"]
            ));
        }
    }
    // A listed default is compared; `"default": null` means none; an unlisted one is not checked.
    match opts.get("default") {
        Some(J::Null) if s.get("default").is_some_and(|d| !d.is_null()) => {
            out.push(format!("{at}: unexpected default {}", s["default"]));
        }
        Some(J::Null) => {}
        Some(d) => match s.get("default") {
            None => out.push(format!("{at}: default: expected {d}, got none")),
            Some(x) => match_value(d, x, &format!("{at}.default"), true, out),
        },
        None => {}
    }
    if let Some(v) = opts.get("version") {
        if &s["version"] != v {
            out.push(format!("{at}: version: expected {v}, got {}", s["version"]));
        }
    }
    if let Some(p) = opts.get("params") {
        let got = s.get("parameters").cloned().unwrap_or(json!({}));
        let p = if p.is_null() { &json!({}) } else { p };
        if &got != p {
            out.push(format!("{at}: parameters: expected {p}, got {got}"));
        }
    }
    if let Some(p) = opts.get("params_include").and_then(|p| p.as_object()) {
        for (k, v) in p {
            if s["parameters"][k] != *v {
                out.push(format!(
                    "{at}: parameter {k}: expected {v}, got {}",
                    s["parameters"][k]
                ));
            }
        }
    }
}

/// The case notation's type names for JsonConverter's.
fn connect_type(s: &J) -> String {
    match s["type"].as_str().unwrap_or("?") {
        "float" => "float32".into(),
        "double" => "float64".into(),
        other => other.into(),
    }
}

/// Matches a type in the case notation: `int32`, `struct`, `struct{a:int32,b:bytes?}`,
/// `array<string? io.debezium.data.Json>`, `map<string,string?>`, `array<Geometry?>`,
/// `array<bytes? org.apache.kafka.connect.data.Decimal scale=2 precision=10>`.
fn match_type(ty: &str, s: &J, at: &str, out: &mut Vec<String>) {
    let ty = ty.trim();
    if let Some(inner) = ty.strip_prefix("array<").and_then(|t| t.strip_suffix('>')) {
        if connect_type(s) != "array" {
            out.push(format!("{at}: expected an array, got {}", connect_type(s)));
            return;
        }
        match_element(inner, &s["items"], &format!("{at}[]"), out);
    } else if let Some(inner) = ty.strip_prefix("map<").and_then(|t| t.strip_suffix('>')) {
        if connect_type(s) != "map" {
            out.push(format!("{at}: expected a map, got {}", connect_type(s)));
            return;
        }
        let (k, v) = split_top(inner, ',');
        match_element(&k, &s["keys"], &format!("{at}.keys"), out);
        match_element(&v, &s["values"], &format!("{at}.values"), out);
    } else if let Some(inner) = ty.strip_prefix("struct{").and_then(|t| t.strip_suffix('}')) {
        if connect_type(s) != "struct" {
            out.push(format!("{at}: expected a struct, got {}", connect_type(s)));
            return;
        }
        let fields = s["fields"].as_array().cloned().unwrap_or_default();
        let mut rest = inner.to_string();
        let mut i = 0;
        while !rest.is_empty() {
            let (one, tail) = split_top(&rest, ',');
            let (name, t) = one.split_once(':').expect("field:type");
            match fields.get(i) {
                Some(f) if f["field"] == name => match_element(t, f, &format!("{at}.{name}"), out),
                _ => out.push(format!("{at}: field {i} should be {name}")),
            }
            i += 1;
            rest = tail;
        }
        if i != fields.len() {
            out.push(format!("{at}: expected {i} fields, got {}", fields.len()));
        }
    } else if connect_type(s) != ty {
        out.push(format!(
            "{at}: type: expected {ty}, got {}",
            connect_type(s)
        ));
    }
}

/// An element type: `type[?] [name] [k=v ...]` or `ShortName[?]`.
fn match_element(spec: &str, s: &J, at: &str, out: &mut Vec<String>) {
    let spec = spec.trim();
    if spec.starts_with("array<") || spec.starts_with("map<") || spec.starts_with("struct{") {
        let optional = spec.ends_with('?') && !spec.ends_with(">?") && !spec.ends_with("}?");
        let _ = optional;
        let (body, opt) = match spec.strip_suffix('?') {
            Some(b) => (b, true),
            None => (spec, false),
        };
        match_type(body, s, at, out);
        if s["optional"] != opt {
            out.push(format!(
                "{at}: optional: expected {opt}, got {}",
                s["optional"]
            ));
        }
        return;
    }
    let mut tokens = spec.split_whitespace();
    let first = tokens.next().unwrap_or("");
    let (head, opt) = match first.strip_suffix('?') {
        Some(h) => (h, true),
        None => (first, false),
    };
    if s["optional"] != opt {
        out.push(format!(
            "{at}: optional: expected {opt}, got {}",
            s["optional"]
        ));
    }
    let primitives = [
        "int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes",
        "struct", "array", "map",
    ];
    let mut name: Option<String> = None;
    if primitives.contains(&head) {
        if connect_type(s) != head {
            out.push(format!(
                "{at}: type: expected {head}, got {}",
                connect_type(s)
            ));
        }
    } else {
        name = Some(head.to_string());
    }
    let mut params = serde_json::Map::new();
    for t in tokens {
        match t.split_once('=') {
            Some(("precision", v)) => {
                params.insert("connect.decimal.precision".into(), J::String(v.into()));
            }
            Some((k, v)) => {
                params.insert(k.into(), J::String(v.into()));
            }
            None => name = Some(t.to_string()),
        }
    }
    if let Some(n) = name {
        let got = s["name"].as_str().unwrap_or("");
        if got != n && !got.ends_with(&format!(".{n}")) {
            out.push(format!("{at}: name: expected {n}, got {got:?}"));
        }
    }
    for (k, v) in params {
        if s["parameters"][&k] != v {
            out.push(format!(
                "{at}: parameter {k}: expected {v}, got {}",
                s["parameters"][&k]
            ));
        }
    }
}

/// Splits at the first `sep` outside `<>`/`{}`.
fn split_top(s: &str, sep: char) -> (String, String) {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '<' | '{' => depth += 1,
            '>' | '}' => depth -= 1,
            c if c == sep && depth == 0 => return (s[..i].to_string(), s[i + 1..].to_string()),
            _ => {}
        }
    }
    (s.to_string(), String::new())
}

#[test]
fn conformance_fixture_notation_is_understood() {
    let mut out = Vec::new();
    match_value(
        &json!({"$bytes_hex": "010203"}),
        &json!("AQID"),
        "x",
        true,
        &mut out,
    );
    match_value(
        &json!({"$float": "NaN"}),
        &json!("NaN"),
        "x",
        true,
        &mut out,
    );
    match_type(
        "array<bytes? org.apache.kafka.connect.data.Decimal scale=2 precision=10>",
        &json!({
            "type":"array","items":{"type":"bytes","optional":true,
            "name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2",
            "connect.decimal.precision":"10"}}}),
        "x",
        &mut out,
    );
    match_type(
        "struct{wkb:bytes,srid:int32?}",
        &json!({
            "type":"struct","fields":[{"field":"wkb","type":"bytes","optional":false},
            {"field":"srid","type":"int32","optional":true}]}),
        "x",
        &mut out,
    );
    assert!(out.is_empty(), "{out:?}");
    // And mismatches are reported.
    match_value(&json!({"a": 1}), &json!({"a": 2}), "x", false, &mut out);
    match_type(
        "array<int32?>",
        &json!({"type":"array","items":{"type":"int64","optional":true}}),
        "x",
        &mut out,
    );
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(config_value(&json!("precise (default)")), "precise");
    assert_eq!(config_value(&json!("initial | no_data")), "initial");
}
