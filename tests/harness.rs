//! Test harness: real PostgreSQL and Kafka started by `scripts/services.sh`, one database,
//! slot, publication and set of topics per test, and helpers that wait on conditions with
//! timeouts (never fixed sleeps).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use pgcdc::config::RawConfig;
use pgcdc::pipeline::RunStats;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Headers;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tokio::sync::watch;
use tokio_postgres::{Client, NoTls};

/// Where the services are (from `scripts/services.sh env`, with the same defaults).
pub struct Env {
    pub pg_host: String,
    pub pg_port: u16,
    pub pg_user: String,
    pub pg_password: String,
    pub pg_ca: Option<String>,
    pub kafka: String,
    pub kafka_fault: String,
    /// The schema registry's Confluent-compatible API (Apicurio's `/apis/ccompat/v7`).
    pub registry: String,
    pub services: PathBuf,
}

pub fn env() -> &'static Env {
    static E: OnceLock<Env> = OnceLock::new();
    E.get_or_init(|| {
        let v = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        Env {
            pg_host: v("PGCDC_TEST_PG_HOST", "127.0.0.1"),
            pg_port: v("PGCDC_TEST_PG_PORT", "54329")
                .parse()
                .expect("PGCDC_TEST_PG_PORT"),
            pg_user: v("PGCDC_TEST_PG_SUPERUSER", "postgres"),
            pg_password: v("PGCDC_TEST_PG_PASSWORD", "postgres"),
            pg_ca: std::env::var("PGCDC_TEST_PG_CA").ok().or_else(|| {
                Some(
                    root.join("target/services/pg/certs/ca.pem")
                        .to_string_lossy()
                        .into_owned(),
                )
            }),
            kafka: v("PGCDC_TEST_KAFKA", "127.0.0.1:59092"),
            kafka_fault: v("PGCDC_TEST_KAFKA_FAULT", "127.0.0.1:59094"),
            registry: v(
                "PGCDC_TEST_REGISTRY",
                "http://127.0.0.1:58081/apis/ccompat/v7",
            ),
            services: std::env::var("PGCDC_TEST_SERVICES")
                .map(PathBuf::from)
                .unwrap_or_else(|_| root.join("scripts/services.sh")),
        }
    })
}

/// A name unique to this test process: `<tag>_<pid>_<n>` in lower case.
pub fn unique(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}_{}_{}",
        tag.to_lowercase(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub async fn connect(dbname: &str) -> Client {
    let e = env();
    let conn = format!(
        "host={} port={} user={} password={} dbname={} application_name=pgcdc-test",
        e.pg_host, e.pg_port, e.pg_user, e.pg_password, dbname
    );
    let (client, connection) = tokio_postgres::connect(&conn, NoTls)
        .await
        .unwrap_or_else(|err| {
            panic!(
            "cannot connect to the test PostgreSQL ({conn}); run scripts/services.sh start: {err}")
        });
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A database of its own for one test.
pub struct TestDb {
    pub name: String,
    pub client: Client,
}

impl TestDb {
    pub async fn create(tag: &str) -> TestDb {
        let name = format!("t_{}", unique(tag));
        let admin = connect("postgres").await;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create test database");
        let client = connect(&name).await;
        TestDb { name, client }
    }

    pub async fn exec(&self, sql: &str) {
        self.client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("SQL failed: {sql}: {e:?}"));
    }

    /// `pg_current_wal_insert_lsn()` as u64 (not the write position, which lags with
    /// synchronous_commit=off).
    pub async fn current_lsn(&self) -> u64 {
        let row = self
            .client
            .query_one("SELECT (pg_current_wal_insert_lsn() - '0/0')::int8", &[])
            .await
            .unwrap();
        row.get::<_, i64>(0) as u64
    }

    /// Waits (up to 2 minutes) until the connector has created `slot`: from then on, every
    /// committed change reaches it.
    pub async fn wait_for_slot(&self, slot: &str) {
        wait_for(
            &format!("slot {slot} to be created"),
            Duration::from_secs(120),
            || async { (self.confirmed_flush(slot).await > 0).then_some(()) },
        )
        .await;
    }

    /// Waits (up to 2 minutes) until `slot` is confirmed at or past `lsn`, naming `what`.
    pub async fn wait_confirmed(&self, slot: &str, lsn: u64, what: &str) {
        wait_for(what, Duration::from_secs(120), || async {
            (self.confirmed_flush(slot).await >= lsn).then_some(())
        })
        .await;
    }

    /// The slot's `confirmed_flush_lsn` as u64 (0 if absent).
    pub async fn confirmed_flush(&self, slot: &str) -> u64 {
        let row = self
            .client
            .query_opt(
                "SELECT (confirmed_flush_lsn - '0/0')::int8 FROM pg_replication_slots WHERE slot_name = $1", &[&slot])
            .await
            .unwrap();
        row.and_then(|r| r.get::<_, Option<i64>>(0)).unwrap_or(0) as u64
    }

    /// (walsender pid, reply_time as µs) of the active walsender on `slot`, if any.
    pub async fn walsender(&self, slot: &str) -> Option<(i32, i64)> {
        let row = self
            .client
            .query_opt(
                "SELECT r.pid, (extract(epoch from r.reply_time) * 1000000)::int8 FROM pg_stat_replication r \
                 JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = $1",
                &[&slot],
            )
            .await
            .unwrap();
        row.map(|r| (r.get(0), r.get::<_, Option<i64>>(1).unwrap_or(0)))
    }

    /// Drops this database's slots and the database (best effort).
    pub async fn cleanup(self) {
        drop(self.client);
        let admin = connect("postgres").await;
        let _ = admin
            .batch_execute(&format!(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = '{0}' AND active_pid IS NOT NULL; \
                 SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '{0}' AND NOT active;",
                self.name
            ))
            .await;
        let _ = admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await;
    }
}

/// The connector's own entry of an offsets file's JSON: pgcdc keeps the cluster its offsets
/// belong to in another entry, whose key names `"pgcdc":"cluster"`.
pub fn own_offsets(file: &serde_json::Value) -> Option<&serde_json::Value> {
    file.as_object()?
        .iter()
        .find(|(k, _)| !k.contains(r#""pgcdc":"cluster""#))
        .map(|(_, v)| v)
}

/// A config for `db` with a unique slot and topic prefix, fast status updates, a private
/// offset file, and the given Kafka brokers.
pub fn base_config(
    db: &TestDb,
    prefix: &str,
    brokers: &str,
    offsets_dir: &std::path::Path,
) -> RawConfig {
    let e = env();
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: &str| {
        m.insert(k.to_string(), v.to_string());
    };
    put("name", prefix);
    put(
        "connector.class",
        "io.debezium.connector.postgresql.PostgresConnector",
    );
    put("plugin.name", "pgoutput");
    put("database.hostname", &e.pg_host);
    put("database.port", &e.pg_port.to_string());
    put("database.user", &e.pg_user);
    put("database.password", &e.pg_password);
    put("database.dbname", &db.name);
    put("slot.name", prefix);
    put("topic.prefix", prefix);
    put("status.update.interval.ms", "200");
    put("offset.flush.interval.ms", "200");
    put("bootstrap.servers", brokers);
    put(
        "offset.storage.file.filename",
        &offsets_dir.join("offsets.json").to_string_lossy(),
    );
    put("retriable.restart.connector.wait.ms", "200");
    m
}

/// A [`pgcdc::pipeline::Connector`] (with its restarts) for `raw`, not started.
pub fn connector(raw: &RawConfig) -> pgcdc::pipeline::Connector {
    init_logging();
    let (config, _) = pgcdc::pipeline::validate_config(raw)
        .unwrap_or_else(|e| panic!("test config invalid: {}", e.message()));
    pgcdc::pipeline::Connector::new(Arc::new(config))
}

/// A connector running in this process.
pub struct Running {
    stop: watch::Sender<bool>,
    pub handle: tokio::task::JoinHandle<pgcdc::Result<RunStats>>,
}

/// Logs from the connectors under test, when `PGCDC_TEST_LOG` is set (e.g. `debug`).
pub fn init_logging() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        if let Ok(filter) = std::env::var("PGCDC_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_test_writer()
                .try_init();
        }
    });
}

/// Starts `pipeline::run` (no automatic restarts: any error ends the task).
pub fn start(raw: &RawConfig) -> Running {
    init_logging();
    let (config, warnings) = pgcdc::pipeline::validate_config(raw)
        .unwrap_or_else(|e| panic!("test config invalid: {}", e.message()));
    assert!(
        warnings.is_empty(),
        "unexpected config warnings: {warnings:?}"
    );
    let (stop, rx) = watch::channel(false);
    let handle = tokio::spawn(pgcdc::pipeline::run(Arc::new(config), rx));
    Running { stop, handle }
}

impl Running {
    /// Requests a graceful stop and returns the run's result.
    pub async fn stop(self) -> pgcdc::Result<RunStats> {
        let _ = self.stop.send(true);
        tokio::time::timeout(Duration::from_secs(60), self.handle)
            .await
            .expect("connector did not stop within 60 s")
            .expect("task")
    }

    /// Waits (up to `timeout`) for the connector to end on its own and returns its error;
    /// panics if it keeps running or ends without one.
    pub async fn expect_error(self, timeout: Duration) -> pgcdc::Error {
        match tokio::time::timeout(timeout, self.handle).await {
            Err(_) => panic!("the connector should stop within {timeout:?}"),
            Ok(joined) => match joined.expect("task") {
                Ok(stats) => panic!("the connector ended without an error: {stats:?}"),
                Err(e) => e,
            },
        }
    }

    /// Panics with the connector's error if it has ended.
    pub fn assert_running(&self) {
        assert!(
            !self.handle.is_finished(),
            "the connector stopped unexpectedly"
        );
    }
}

/// Polls `f` every 100 ms until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A consumed Kafka record.
#[derive(Debug, Clone)]
pub struct Rec {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp: Option<i64>,
}

impl Rec {
    pub fn key_str(&self) -> String {
        self.key
            .as_deref()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .unwrap_or_default()
    }
    pub fn value_json(&self) -> Option<serde_json::Value> {
        self.value
            .as_deref()
            .map(|v| serde_json::from_slice(v).expect("value is JSON"))
    }
    pub fn key_json(&self) -> Option<serde_json::Value> {
        self.key
            .as_deref()
            .map(|v| serde_json::from_slice(v).expect("key is JSON"))
    }
    /// The `payload` of a schemas-enabled value.
    pub fn payload(&self) -> serde_json::Value {
        self.value_json()
            .map(|v| v["payload"].clone())
            .unwrap_or(serde_json::Value::Null)
    }
    pub fn header(&self, key: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }
}

/// The distinct `after.id` values of `recs` (schemas-enabled change events).
pub fn after_ids(recs: &[Rec]) -> std::collections::HashSet<i64> {
    recs.iter()
        .filter_map(|x| x.payload()["after"]["id"].as_i64())
        .collect()
}

/// Reads every record of `topic` from the beginning until `predicate(records)` holds, or
/// panics after `timeout`.
pub async fn read_until(
    brokers: &str,
    topic: &str,
    timeout: Duration,
    predicate: impl Fn(&[Rec]) -> bool + Send + 'static,
) -> Vec<Rec> {
    read_until_with(brokers, topic, Isolation::Committed, timeout, predicate).await
}

/// Which records a reader sees: all, or only those of committed Kafka transactions
/// (librdkafka's default, what [`read_until`] reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Uncommitted,
    Committed,
}

/// [`read_until`] with the consumer's `isolation.level`.
pub async fn read_until_with(
    brokers: &str,
    topic: &str,
    isolation: Isolation,
    timeout: Duration,
    predicate: impl Fn(&[Rec]) -> bool + Send + 'static,
) -> Vec<Rec> {
    let brokers = brokers.to_string();
    let topic = topic.to_string();
    let level = match isolation {
        Isolation::Uncommitted => "read_uncommitted",
        Isolation::Committed => "read_committed",
    };
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", unique("reader"))
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "false")
            .set("max.partition.fetch.bytes", "16777216")
            .set("fetch.wait.max.ms", "20")
            .set("isolation.level", level)
            .create()
            .expect("consumer");
        let start = Instant::now();
        // Wait for the topic to exist.
        let partitions = loop {
            if let Ok(md) = consumer.fetch_metadata(Some(&topic), Duration::from_secs(5)) {
                if let Some(t) = md
                    .topics()
                    .iter()
                    .find(|t| t.name() == topic && t.error().is_none())
                {
                    if !t.partitions().is_empty() {
                        break t.partitions().iter().map(|p| p.id()).collect::<Vec<_>>();
                    }
                }
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for topic {topic} to exist");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut tpl = TopicPartitionList::new();
        for p in &partitions {
            tpl.add_partition_offset(&topic, *p, Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&tpl).unwrap();
        let mut out: Vec<Rec> = Vec::new();
        // The predicate is checked when the topic is drained (a poll returns nothing) and
        // every 2000 records, so costly predicates stay cheap on big topics.
        let mut check = true;
        loop {
            if check && predicate(&out) {
                return out;
            }
            check = false;
            if start.elapsed() > timeout {
                let summary: Vec<String> = out
                    .iter()
                    .map(|r| format!("{}@{}:{}", r.key_str(), r.partition, r.offset))
                    .collect();
                panic!(
                    "timed out after {timeout:?} reading {topic}; got {} records: {summary:?}",
                    out.len()
                );
            }
            let polled = consumer.poll(Duration::from_millis(100));
            if polled.is_none() {
                check = true;
            }
            if let Some(m) = polled {
                // A broker that was just resumed (see PausedBroker) is reported as down for a
                // moment; the client reconnects by itself, so only other errors end the read.
                let m = match m {
                    Err(rdkafka::error::KafkaError::MessageConsumption(
                        rdkafka::types::RDKafkaErrorCode::AllBrokersDown
                        | rdkafka::types::RDKafkaErrorCode::BrokerTransportFailure,
                    )) => continue,
                    other => other.expect("consume"),
                };
                let headers = m
                    .headers()
                    .map(|h| {
                        h.iter()
                            .map(|x| (x.key.to_string(), x.value.map(|v| v.to_vec())))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push(Rec {
                    topic: m.topic().to_string(),
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(|k| k.to_vec()),
                    value: m.payload().map(|v| v.to_vec()),
                    headers,
                    timestamp: m.timestamp().to_millis(),
                });
                check = out.len() % 2000 == 0;
            }
        }
    })
    .await
    .expect("reader thread")
}

/// A [`read_until`] predicate that holds once at least `n` records satisfy `matches`, looking
/// at each record once (a predicate that scans every record at each check costs quadratic
/// time on a big topic).
pub fn at_least(
    n: usize,
    matches: impl Fn(&Rec) -> bool + Send + Sync + 'static,
) -> impl Fn(&[Rec]) -> bool + Send + 'static {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let scanned = AtomicUsize::new(0);
    let found = AtomicUsize::new(0);
    move |records: &[Rec]| {
        let from = scanned.swap(records.len(), Ordering::Relaxed);
        let more = records[from.min(records.len())..]
            .iter()
            .filter(|r| matches(r))
            .count();
        found.fetch_add(more, Ordering::Relaxed) + more >= n
    }
}

/// Whether a record's value bytes contain `needle`.
pub fn value_has(r: &Rec, needle: &[u8]) -> bool {
    r.value
        .as_deref()
        .is_some_and(|v| v.windows(needle.len()).any(|w| w == needle))
}

/// Reads exactly `n` records (waiting up to `timeout`).
pub async fn read_n(brokers: &str, topic: &str, n: usize, timeout: Duration) -> Vec<Rec> {
    read_until(brokers, topic, timeout, move |r| r.len() >= n).await
}

/// Removes the fields that change from run to run (processing and commit times, xids, LSNs)
/// from an envelope payload, so the rest can be compared exactly.
pub fn normalize(mut payload: serde_json::Value) -> serde_json::Value {
    if let Some(o) = payload.as_object_mut() {
        for k in ["ts_ms", "ts_us", "ts_ns"] {
            if o.contains_key(k) {
                o.insert(k.into(), serde_json::Value::String("<ts>".into()));
            }
        }
        if let Some(s) = o.get_mut("source").and_then(|s| s.as_object_mut()) {
            for k in ["ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"] {
                if s.contains_key(k) {
                    s.insert(k.into(), serde_json::Value::String("<volatile>".into()));
                }
            }
        }
    }
    payload
}

/// Runs `scripts/services.sh <args>` and returns stdout.
pub fn services(args: &[&str]) -> String {
    let out = std::process::Command::new(&env().services)
        .args(args)
        .output()
        .expect("run scripts/services.sh");
    assert!(
        out.status.success(),
        "scripts/services.sh {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Serialises the tests that pause or stop the fault broker.
pub async fn fault_broker_lock() -> tokio::sync::MutexGuard<'static, ()> {
    static L: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    L.get_or_init(|| tokio::sync::Mutex::new(())).lock().await
}

/// Pauses the fault broker with SIGSTOP; resumes it (SIGCONT) when dropped, even on panic.
pub struct PausedBroker {
    pid: i32,
}

impl PausedBroker {
    pub fn pause() -> PausedBroker {
        let pid: i32 = services(&["kafka-pid", "kafka-fault"])
            .parse()
            .expect("broker pid");
        // SAFETY: plain kill(2) on a pid we started.
        let rc = unsafe { libc::kill(pid, libc::SIGSTOP) };
        assert_eq!(rc, 0, "SIGSTOP failed");
        PausedBroker { pid }
    }
}

impl Drop for PausedBroker {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe {
            libc::kill(self.pid, libc::SIGCONT);
        }
    }
}

/// Java's `Utils.murmur2` (the default partitioner's hash).
pub fn murmur2(data: &[u8]) -> i32 {
    let length = data.len() as i32;
    let seed: i32 = 0x9747b28c_u32 as i32;
    let m: i32 = 0x5bd1e995;
    let r = 24;
    let mut h: i32 = seed ^ length;
    let length4 = data.len() / 4;
    for i in 0..length4 {
        let i4 = i * 4;
        let mut k: i32 = (data[i4] as i32 & 0xff)
            + ((data[i4 + 1] as i32 & 0xff) << 8)
            + ((data[i4 + 2] as i32 & 0xff) << 16)
            + ((data[i4 + 3] as i32 & 0xff) << 24);
        k = k.wrapping_mul(m);
        k ^= ((k as u32) >> r) as i32;
        k = k.wrapping_mul(m);
        h = h.wrapping_mul(m);
        h ^= k;
    }
    let rem = data.len() % 4;
    let base = data.len() & !3;
    if rem == 3 {
        h ^= (data[base + 2] as i32 & 0xff) << 16;
    }
    if rem >= 2 {
        h ^= (data[base + 1] as i32 & 0xff) << 8;
    }
    if rem >= 1 {
        h ^= data[base] as i32 & 0xff;
        h = h.wrapping_mul(m);
    }
    h ^= ((h as u32) >> 13) as i32;
    h = h.wrapping_mul(m);
    h ^= ((h as u32) >> 15) as i32;
    h
}

/// The partition Kafka's Java client picks for a keyed record.
pub fn java_partition(key: &[u8], partitions: i32) -> i32 {
    (murmur2(key) & 0x7fffffff) % partitions
}

/// Creates `topic` with `partitions` partitions.
pub async fn create_topic(brokers: &str, topic: &str, partitions: i32) {
    create_topic_with(brokers, topic, partitions, &[]).await
}

/// Creates `topic` with `partitions` partitions and the topic configs `configs`.
pub async fn create_topic_with(
    brokers: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin");
    let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        new = new.set(k, v);
    }
    let res = admin
        .create_topics([&new], &AdminOptions::new())
        .await
        .expect("create topic");
    for r in res {
        r.unwrap_or_else(|(t, e)| panic!("create topic {t}: {e}"));
    }
}

/// A TCP proxy to `upstream` that can cut the network without closing connections, as a
/// blackholed route does: while cut, nothing is read or forwarded in either direction (what
/// the peers send waits in their buffers), and after the cut heals everything flows again.
pub struct CutProxy {
    pub port: u16,
    cut: watch::Sender<bool>,
    delay_ms: Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl CutProxy {
    pub async fn start(upstream: String) -> CutProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, cut_rx) = watch::channel(false);
        let delay_ms = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let delay = delay_ms.clone();
        let task = tokio::spawn(async move {
            while let Ok((down, _)) = listener.accept().await {
                let Ok(up) = tokio::net::TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (dr, dw) = down.into_split();
                let (ur, uw) = up.into_split();
                tokio::spawn(pump(dr, uw, cut_rx.clone(), delay.clone()));
                tokio::spawn(pump(ur, dw, cut_rx.clone(), delay.clone()));
            }
        });
        CutProxy {
            port,
            cut,
            delay_ms,
            task,
        }
    }

    /// Delays every chunk by `delay`, each way (a slow network).
    pub fn slow(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// Cuts (`true`) or heals (`false`) the network.
    pub fn cut(&self, on: bool) {
        let _ = self.cut.send(on);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut cut: watch::Receiver<bool>,
    delay_ms: Arc<std::sync::atomic::AtomicU64>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        while *cut.borrow_and_update() {
            if cut.changed().await.is_err() {
                return;
            }
        }
        let n = tokio::select! {
            r = from.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            // A cut while waiting: stop reading at once.
            _ = cut.changed() => continue,
        };
        let delay = delay_ms.load(Ordering::Relaxed);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        // Data read just before a cut waits until it heals.
        while *cut.borrow_and_update() {
            if cut.changed().await.is_err() {
                return;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The end offset (high watermark) of every partition of `topics` that exist, by
/// (topic, partition).
pub async fn end_offsets(
    brokers: &str,
    topics: &[String],
) -> std::collections::HashMap<(String, i32), i64> {
    let brokers = brokers.to_string();
    let topics = topics.to_vec();
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", unique("ends"))
            .create()
            .expect("consumer");
        let mut out = std::collections::HashMap::new();
        for topic in topics {
            // A broker that was just resumed may not answer the first request.
            let start = Instant::now();
            let md = loop {
                match consumer.fetch_metadata(Some(&topic), Duration::from_secs(10)) {
                    Ok(md) => break md,
                    Err(e) if start.elapsed() > Duration::from_secs(60) => {
                        panic!("metadata of {topic}: {e}")
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(200)),
                }
            };
            let Some(t) = md
                .topics()
                .iter()
                .find(|t| t.name() == topic && t.error().is_none())
            else {
                continue;
            };
            for p in t.partitions() {
                let start = Instant::now();
                let (_, high) = loop {
                    match consumer.fetch_watermarks(&topic, p.id(), Duration::from_secs(10)) {
                        Ok(w) => break w,
                        Err(e) if start.elapsed() > Duration::from_secs(60) => {
                            panic!("watermarks of {topic}: {e}")
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(200)),
                    }
                };
                out.insert((topic.clone(), p.id()), high);
            }
        }
        out
    })
    .await
    .expect("watermarks thread")
}

/// Two pgcdc processes (the binary) on the connector file `config`, logging at INFO into
/// `first.log` and `standby.log` in `dir`: the first streams the slot, the second waits for it
/// as a standby (the config sets `slot.max.retries=-1`).
pub struct FirstAndStandby {
    pub first: std::process::Child,
    /// The walsender serving the first.
    pub first_walsender: i32,
    pub first_log: std::path::PathBuf,
    pub standby: std::process::Child,
    pub standby_log: std::path::PathBuf,
}

/// Starts [`FirstAndStandby`]: returns once the first streams and the standby says it waits.
pub async fn first_and_standby(
    db: &TestDb,
    slot: &str,
    config: &std::path::Path,
    dir: &std::path::Path,
) -> FirstAndStandby {
    let spawn = |log: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_pgcdc"))
            .args(["run", "--config", config.to_str().unwrap()])
            .env("PGCDC_LISTENERS", "http://127.0.0.1:0")
            .env("PGCDC_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("start pgcdc")
    };
    let timeout = Duration::from_secs(120);
    let first_log = dir.join("first.log");
    let first = spawn(&first_log);
    db.wait_for_slot(slot).await;
    let (first_walsender, _) = wait_for("the first instance to stream", timeout, || async {
        db.walsender(slot).await
    })
    .await;
    let standby_log = dir.join("standby.log");
    let standby = spawn(&standby_log);
    wait_for("the standby to wait for the slot", timeout, || async {
        std::fs::read_to_string(&standby_log)
            .unwrap_or_default()
            .contains("replication slot is in use by another replication connection; waiting")
            .then_some(())
    })
    .await;
    FirstAndStandby {
        first,
        first_walsender,
        first_log,
        standby,
        standby_log,
    }
}
