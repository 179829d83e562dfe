//! dbz-compare: the comparer of the Debezium differential harness (scripts/debezium/run.sh).
//!
//! Reads every topic of a connector (`<prefix>.*`, `__debezium-heartbeat.<prefix>`, plus any
//! `--include-prefix`) from two brokers from the beginning, pairs the records per topic and
//! partition in offset order (aligned on key and op, so a lone record does not shift the rest),
//! and compares key bytes, value bytes and headers after blanking
//! only volatile fields. Side A is the reference (Debezium), side B the candidate (pgcdc).
//! With a schema registry per side (`--registry-a`, `--registry-b`), keys and values are Avro in
//! Confluent's wire format and are compared as the schema each registry holds for them plus the
//! decoded datum (see avro.rs).
//!
//! Subcommands:
//!   compare        the comparison and its report (exit 1 when anything differs)
//!   wait           wait until each named topic holds a record of transaction --txid on each side
//!   delete-topics  delete the topics with the given prefixes (clean slate on a shared broker)
//!   switch-check   the verdict of the switch run (scripts/debezium/switch.sh), see switch.rs

mod avro;
mod json;
mod switch;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

use json::{Kind, Node};

#[derive(Parser)]
#[command(
    about = "Compare Debezium's and pgcdc's Kafka records, byte for byte after normalising volatile fields"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compare all topics of the connector on both brokers.
    Compare(CompareArgs),
    /// Wait until every topic has, on every side, a record whose payload.source.txId is TXID.
    Wait {
        /// NAME=BOOTSTRAP, repeated
        #[arg(long = "side", required = true)]
        sides: Vec<String>,
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
        #[arg(long)]
        txid: String,
        #[arg(long, default_value_t = 180)]
        timeout: u64,
        /// NAME=URL: that side's records are Avro, with their schemas in this registry
        #[arg(long = "registry")]
        registries: Vec<String>,
    },
    /// Check the switch run's topic: nothing lost, no new snapshot, order kept, and what each
    /// phase published again within its rule.
    SwitchCheck(switch::SwitchArgs),
    /// Create topics with a number of partitions (for passes whose transforms pick partitions).
    CreateTopics {
        #[arg(long)]
        brokers: String,
        #[arg(long)]
        partitions: i32,
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
    },
    /// Delete every topic whose name starts with one of the prefixes, and wait until it is gone.
    DeleteTopics {
        #[arg(long)]
        brokers: String,
        #[arg(long = "prefix", required = true)]
        prefixes: Vec<String>,
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
}

fn main() {
    let cli = Cli::parse();
    let rc = match cli.cmd {
        Cmd::Compare(args) => compare(args),
        Cmd::Wait {
            sides,
            topics,
            txid,
            timeout,
            registries,
        } => wait(&sides, &topics, &txid, timeout, &registries),
        Cmd::DeleteTopics {
            brokers,
            prefixes,
            timeout,
        } => delete_topics(&brokers, &prefixes, timeout),
        Cmd::SwitchCheck(args) => switch::switch_check(args),
        Cmd::CreateTopics {
            brokers,
            partitions,
            topics,
        } => create_topics(&brokers, partitions, &topics),
    };
    match rc {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("dbz-compare: ERROR: {e}");
            std::process::exit(2);
        }
    }
}

type Res<T> = Result<T, String>;

fn side(spec: &str) -> Res<(String, String)> {
    spec.split_once('=')
        .map(|(n, b)| (n.to_string(), b.to_string()))
        .ok_or_else(|| format!("expected NAME=BOOTSTRAP, got {spec:?}"))
}

fn consumer(brokers: &str) -> Res<BaseConsumer> {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "dbz-compare")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "earliest")
        .set("allow.auto.create.topics", "false")
        .set("socket.connection.setup.timeout.ms", "5000")
        .create()
        .map_err(|e| format!("consumer for {brokers}: {e}"))
}

/// topic -> partitions, for topics starting with one of the prefixes (or equal to one of `exact`).
fn list_topics(
    c: &BaseConsumer,
    prefixes: &[String],
    exact: &[String],
) -> Res<BTreeMap<String, Vec<i32>>> {
    let md = c
        .fetch_metadata(None, Duration::from_secs(15))
        .map_err(|e| format!("metadata: {e}"))?;
    let mut out = BTreeMap::new();
    for t in md.topics() {
        let name = t.name();
        if prefixes.iter().any(|p| name.starts_with(p.as_str())) || exact.iter().any(|e| e == name)
        {
            let mut ps: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
            ps.sort();
            out.insert(name.to_string(), ps);
        }
    }
    Ok(out)
}

#[derive(Clone)]
struct Rec {
    offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

type Tp = (String, i32);

/// Every record of the given topic-partitions, from the low to the high watermark.
fn read_all(
    c: &BaseConsumer,
    topics: &BTreeMap<String, Vec<i32>>,
    timeout: Duration,
) -> Res<BTreeMap<Tp, Vec<Rec>>> {
    let mut out: BTreeMap<Tp, Vec<Rec>> = BTreeMap::new();
    let mut want: BTreeMap<Tp, i64> = BTreeMap::new(); // tp -> high watermark
    let mut tpl = TopicPartitionList::new();
    for (t, ps) in topics {
        for &p in ps {
            let (lo, hi) = c
                .fetch_watermarks(t, p, Duration::from_secs(15))
                .map_err(|e| format!("watermarks of {t}[{p}]: {e}"))?;
            out.insert((t.clone(), p), Vec::new());
            if hi > lo {
                want.insert((t.clone(), p), hi);
                tpl.add_partition_offset(t, p, Offset::Offset(lo))
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    if want.is_empty() {
        return Ok(out);
    }
    c.assign(&tpl).map_err(|e| format!("assign: {e}"))?;
    let deadline = Instant::now() + timeout;
    while !want.is_empty() {
        if Instant::now() > deadline {
            return Err(format!(
                "timed out reading; still missing: {:?}",
                want.keys().collect::<Vec<_>>()
            ));
        }
        let Some(m) = c.poll(Duration::from_millis(500)) else {
            continue;
        };
        let m = match m {
            Ok(m) => m,
            Err(rdkafka::error::KafkaError::PartitionEOF(_)) => continue,
            Err(e) => return Err(format!("consume: {e}")),
        };
        let tp = (m.topic().to_string(), m.partition());
        let Some(&hi) = want.get(&tp) else { continue };
        if m.offset() >= hi {
            continue;
        }
        let mut headers = Vec::new();
        if let Some(h) = m.headers() {
            for hd in h.iter() {
                headers.push((hd.key.to_string(), hd.value.map(|v| v.to_vec())));
            }
        }
        out.get_mut(&tp).unwrap().push(Rec {
            offset: m.offset(),
            key: m.key().map(|k| k.to_vec()),
            value: m.payload().map(|v| v.to_vec()),
            headers,
        });
        if m.offset() + 1 >= hi {
            want.remove(&tp);
        }
    }
    c.unassign().ok();
    Ok(out)
}

/// Replaces every Avro key and value by its JSON document (avro.rs), when the side has a
/// registry.
fn decode_avro(recs: &mut BTreeMap<Tp, Vec<Rec>>, registry: Option<&str>) -> Res<()> {
    let Some(url) = registry else { return Ok(()) };
    let mut reg = avro::Registry::new(url);
    for ((t, p), rs) in recs.iter_mut() {
        for r in rs.iter_mut() {
            for part in [&mut r.key, &mut r.value] {
                if let Some(b) = part.as_mut() {
                    *b = reg
                        .decode(b)
                        .map_err(|e| format!("{t}[{p}] offset {}: {e}", r.offset))?;
                }
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// wait
// ------------------------------------------------------------------------------------------

fn txid_of(value: &[u8]) -> Option<String> {
    let root = json::parse(value).ok()?;
    let payload = root.get("payload")?;
    // An envelope's source.txId, the `__txId` that ExtractNewRecordState adds, or the
    // `source_txId` of an envelope flattened (Flatten with delimiter `_`).
    let tx = match payload.get("source") {
        Some(src) => src.get("txId")?,
        None => payload
            .get("__txId")
            .or_else(|| payload.get("source_txId"))?,
    };
    Some(String::from_utf8_lossy(tx.raw(value)).into_owned())
}

fn wait(
    sides: &[String],
    topics: &[String],
    txid: &str,
    timeout: u64,
    registries: &[String],
) -> Res<i32> {
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(timeout);
    for s in sides {
        let (name, brokers) = side(s)?;
        let mut registry = None;
        for r in registries {
            let (n, url) = side(r)?;
            if n == name {
                registry = Some(avro::Registry::new(&url));
            }
        }
        let c = consumer(&brokers)?;
        let mut missing: BTreeSet<String> = topics.iter().cloned().collect();
        let mut assigned: BTreeSet<String> = BTreeSet::new();
        let mut next: BTreeMap<Tp, i64> = BTreeMap::new();
        let mut last_meta = Instant::now() - Duration::from_secs(10);
        while !missing.is_empty() {
            if Instant::now() > deadline {
                eprintln!(
                    "dbz-compare wait: {name}: after {timeout}s no record of transaction {txid} in: {}",
                    missing.iter().cloned().collect::<Vec<_>>().join(", ")
                );
                return Ok(1);
            }
            // Pick up topics that appeared since the last look.
            if assigned.len() < topics.len() && last_meta.elapsed() > Duration::from_millis(500) {
                last_meta = Instant::now();
                let md = c
                    .fetch_metadata(None, Duration::from_secs(10))
                    .map_err(|e| format!("{name}: metadata: {e}"))?;
                let mut grew = false;
                for t in md.topics() {
                    if topics.iter().any(|x| x == t.name())
                        && !assigned.contains(t.name())
                        && !t.partitions().is_empty()
                    {
                        assigned.insert(t.name().to_string());
                        for p in t.partitions() {
                            next.entry((t.name().to_string(), p.id())).or_insert(0);
                        }
                        grew = true;
                    }
                }
                if grew {
                    let mut tpl = TopicPartitionList::new();
                    for ((t, p), o) in &next {
                        tpl.add_partition_offset(t, *p, Offset::Offset(*o))
                            .map_err(|e| e.to_string())?;
                    }
                    c.assign(&tpl).map_err(|e| format!("{name}: assign: {e}"))?;
                }
            }
            let Some(m) = c.poll(Duration::from_millis(200)) else {
                continue;
            };
            let m = match m {
                Ok(m) => m,
                Err(rdkafka::error::KafkaError::PartitionEOF(_)) => continue,
                Err(e) => return Err(format!("{name}: consume: {e}")),
            };
            next.insert((m.topic().to_string(), m.partition()), m.offset() + 1);
            if let Some(v) = m.payload() {
                let decoded;
                let v = match registry.as_mut() {
                    Some(reg) => {
                        decoded = reg.decode(v).map_err(|e| {
                            format!(
                                "{name}: {}[{}] offset {}: {e}",
                                m.topic(),
                                m.partition(),
                                m.offset()
                            )
                        })?;
                        &decoded[..]
                    }
                    None => v,
                };
                if txid_of(v).as_deref() == Some(txid) {
                    missing.remove(m.topic());
                }
            }
        }
        eprintln!(
            "dbz-compare wait: {name}: all {} topics delivered transaction {txid} ({:.1}s)",
            topics.len(),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(0)
}

// ------------------------------------------------------------------------------------------
// delete-topics
// ------------------------------------------------------------------------------------------

/// Minimal executor for rdkafka's admin futures (no async runtime in this tool).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Th(std::thread::Thread);
    impl Wake for Th {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Th(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

fn create_topics(brokers: &str, partitions: i32, topics: &[String]) -> Res<i32> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .map_err(|e| format!("admin client: {e}"))?;
    let new: Vec<NewTopic> = topics
        .iter()
        .map(|t| NewTopic::new(t, partitions, TopicReplication::Fixed(1)))
        .collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let res =
        block_on(admin.create_topics(&new, &opts)).map_err(|e| format!("create topics: {e}"))?;
    for r in res {
        if let Err((t, e)) = r {
            return Err(format!("create topic {t}: {e}"));
        }
    }
    eprintln!(
        "dbz-compare create-topics: {brokers}: {} topics with {partitions} partitions",
        topics.len()
    );
    Ok(0)
}

fn delete_topics(brokers: &str, prefixes: &[String], timeout: u64) -> Res<i32> {
    let c = consumer(brokers)?;
    let topics = list_topics(&c, prefixes, &[])?;
    if topics.is_empty() {
        eprintln!("dbz-compare delete-topics: {brokers}: nothing to delete");
        return Ok(0);
    }
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .map_err(|e| format!("admin client: {e}"))?;
    let names: Vec<&str> = topics.keys().map(|s| s.as_str()).collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let res =
        block_on(admin.delete_topics(&names, &opts)).map_err(|e| format!("delete topics: {e}"))?;
    for r in res {
        if let Err((t, e)) = r {
            return Err(format!("delete topic {t}: {e}"));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        let left = list_topics(&c, prefixes, &[])?;
        if left.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "topics still listed after {timeout}s: {:?}",
                left.keys().collect::<Vec<_>>()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "dbz-compare delete-topics: {brokers}: deleted {} topics: {}",
        names.len(),
        names.join(", ")
    );
    Ok(0)
}

// ------------------------------------------------------------------------------------------
// compare
// ------------------------------------------------------------------------------------------

#[derive(clap::Args)]
struct CompareArgs {
    /// Reference side (Debezium) as NAME=BOOTSTRAP, e.g. debezium=127.0.0.1:59096
    #[arg(long)]
    a: String,
    /// Candidate side (pgcdc) as NAME=BOOTSTRAP, e.g. pgcdc=127.0.0.1:59092
    #[arg(long)]
    b: String,
    /// topic.prefix of both connectors
    #[arg(long)]
    prefix: String,
    /// Further topic-name prefixes to include (e.g. outbox.event.)
    #[arg(long = "include-prefix")]
    include_prefix: Vec<String>,
    /// Keep source.txId/lsn/sequence/ts_* of streaming records (blank them only on
    /// snapshot records): both connectors read the same WAL, so these must match too.
    #[arg(long)]
    strict_source: bool,
    /// Write every differing record pair as JSON lines to this file
    #[arg(long)]
    dump: Option<String>,
    /// Write the summary as JSON to this file
    #[arg(long)]
    json_out: Option<String>,
    /// Characters of each example to print
    #[arg(long, default_value_t = 600)]
    example_chars: usize,
    /// Seconds to read each side
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// File of deliberate differences: lines `<field path group>\t<reason>`; a record whose
    /// every difference is listed counts as deliberately different, not as a failure
    #[arg(long)]
    deliberate: Option<String>,
    /// Side A's schema registry (Confluent-compatible API): keys and values are Avro
    #[arg(long)]
    registry_a: Option<String>,
    /// Side B's schema registry
    #[arg(long)]
    registry_b: Option<String>,
}

struct Diff {
    /// Grouping key: the path with data-array indices as [].
    group: String,
    /// Exact path in this record.
    path: String,
    a: String,
    b: String,
}

fn text(raw: &[u8], max: usize) -> String {
    let s = String::from_utf8_lossy(raw);
    if s.chars().count() <= max {
        s.into_owned()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}… ({} bytes)", raw.len())
    }
}

const ABSENT: &str = "<absent>";

/// Debezium's notification records (`notification.enabled.channels=sink`): the key's and the
/// value's `id` are random UUIDs and `timestamp` the wall clock, so they are blanked.
fn notification_paths(part: &str, root: &Node, doc: &[u8]) -> Vec<String> {
    let name = root
        .get("schema")
        .and_then(|s| s.get("name"))
        .and_then(|n| n.as_str(doc));
    match name.as_deref() {
        Some("io.debezium.connector.common.NotificationKey") => vec![format!("{part}.payload.id")],
        Some("io.debezium.connector.common.Notification") => vec![
            format!("{part}.payload.id"),
            format!("{part}.payload.timestamp"),
        ],
        _ => Vec::new(),
    }
}

/// Paths of volatile fields (relative to the value root) to blank in this record.
fn volatile_paths(root: &Node, doc: &[u8], strict: bool) -> Vec<String> {
    let mut out = notification_paths("value", root, doc);
    if !out.is_empty() {
        return out;
    }
    let Some(payload) = root.get("payload") else {
        return out;
    };
    for f in ["ts_ms", "ts_us", "ts_ns"] {
        out.push(format!("value.payload.{f}"));
    }
    let snapshot = payload
        .get("source")
        .and_then(|s| s.get("snapshot"))
        .or_else(|| payload.get("__snapshot"))
        .or_else(|| payload.get("source_snapshot"))
        .and_then(|s| s.as_str(doc))
        .map(|s| s != "false")
        .unwrap_or(false);
    if !strict || snapshot {
        for f in ["ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"] {
            out.push(format!("value.payload.source.{f}"));
        }
        // The same fields in an envelope flattened with delimiter `_` (Flatten).
        for f in ["ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"] {
            out.push(format!("value.payload.source_{f}"));
        }
        // The same fields flattened by ExtractNewRecordState's add.fields.
        for f in [
            "__txId",
            "__lsn",
            "__sequence",
            "__source_ts_ms",
            "__source_ts_us",
            "__source_ts_ns",
        ] {
            out.push(format!("value.payload.{f}"));
        }
    }
    out
}

/// The byte string with the volatile spans replaced by "~" (for the byte-level verdict).
fn blank(doc: &[u8], root: &Node, paths: &[String]) -> Vec<u8> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for p in paths {
        let mut n = Some(root);
        let rel = p.split_once('.').map_or(p.as_str(), |(_, rest)| rest);
        for part in rel.split('.') {
            n = n.and_then(|x| x.get(part));
        }
        if let Some(n) = n {
            spans.push((n.start, n.end));
        }
    }
    spans.sort();
    let mut out = Vec::with_capacity(doc.len());
    let mut i = 0;
    for (s, e) in spans {
        if s < i {
            continue;
        }
        out.extend_from_slice(&doc[i..s]);
        out.extend_from_slice(b"\"~\"");
        i = e;
    }
    out.extend_from_slice(&doc[i..]);
    out
}

/// Name of an element of a Connect schema's `fields` array (`field`) or of an Avro record's
/// (`name`, beside its `type`), if it is one.
fn field_name(n: &Node, doc: &[u8]) -> Option<String> {
    n.get("field")
        .or_else(|| n.get("type").and(n.get("name")))
        .and_then(|f| f.as_str(doc))
}

struct Walk<'a> {
    ad: &'a [u8],
    bd: &'a [u8],
    skip: &'a BTreeSet<String>,
    max: usize,
    out: Vec<Diff>,
}

impl Walk<'_> {
    fn push(&mut self, group: &str, path: &str, a: String, b: String) {
        self.out.push(Diff {
            group: group.to_string(),
            path: path.to_string(),
            a,
            b,
        });
    }

    fn node(&mut self, group: &str, path: &str, a: &Node, b: &Node) {
        if self.skip.contains(path) {
            return;
        }
        match (&a.kind, &b.kind) {
            (Kind::Obj(ma), Kind::Obj(mb)) => {
                let na: Vec<&str> = ma.iter().map(|(k, _)| k.as_str()).collect();
                let nb: Vec<&str> = mb.iter().map(|(k, _)| k.as_str()).collect();
                for (k, v) in ma {
                    match mb.iter().find(|(kb, _)| kb == k) {
                        Some((_, vb)) => {
                            self.node(&format!("{group}.{k}"), &format!("{path}.{k}"), v, vb)
                        }
                        None => {
                            let t = text(v.raw(self.ad), self.max);
                            self.push(
                                &format!("{group}.{k}"),
                                &format!("{path}.{k}"),
                                t,
                                ABSENT.into(),
                            )
                        }
                    }
                }
                for (k, v) in mb {
                    if !ma.iter().any(|(ka, _)| ka == k) {
                        let t = text(v.raw(self.bd), self.max);
                        self.push(
                            &format!("{group}.{k}"),
                            &format!("{path}.{k}"),
                            ABSENT.into(),
                            t,
                        );
                    }
                }
                let common_a: Vec<&str> = na.iter().copied().filter(|k| nb.contains(k)).collect();
                let common_b: Vec<&str> = nb.iter().copied().filter(|k| na.contains(k)).collect();
                if common_a != common_b {
                    self.push(
                        &format!("{group}{{member order}}"),
                        &format!("{path}{{member order}}"),
                        na.join(","),
                        nb.join(","),
                    );
                }
            }
            (Kind::Arr(ia), Kind::Arr(ib)) => {
                let named_a: Option<Vec<String>> =
                    ia.iter().map(|n| field_name(n, self.ad)).collect();
                let named_b: Option<Vec<String>> =
                    ib.iter().map(|n| field_name(n, self.bd)).collect();
                if let (Some(fa), Some(fb)) = (&named_a, &named_b) {
                    if !fa.is_empty() || !fb.is_empty() {
                        // A Connect schema's fields: match by field name.
                        for (i, name) in fa.iter().enumerate() {
                            let g = format!("{group}[{name}]");
                            let p = format!("{path}[{name}]");
                            match fb.iter().position(|x| x == name) {
                                Some(j) => self.node(&g, &p, &ia[i], &ib[j]),
                                None => {
                                    let t = text(ia[i].raw(self.ad), self.max);
                                    self.push(&g, &p, t, ABSENT.into())
                                }
                            }
                        }
                        for (j, name) in fb.iter().enumerate() {
                            if !fa.contains(name) {
                                let t = text(ib[j].raw(self.bd), self.max);
                                self.push(
                                    &format!("{group}[{name}]"),
                                    &format!("{path}[{name}]"),
                                    ABSENT.into(),
                                    t,
                                );
                            }
                        }
                        let ca: Vec<&String> = fa.iter().filter(|x| fb.contains(x)).collect();
                        let cb: Vec<&String> = fb.iter().filter(|x| fa.contains(x)).collect();
                        if ca != cb {
                            self.push(
                                &format!("{group}{{field order}}"),
                                &format!("{path}{{field order}}"),
                                fa.join(","),
                                fb.join(","),
                            );
                        }
                        return;
                    }
                }
                if ia.len() != ib.len() {
                    let (ta, tb) = (
                        text(a.raw(self.ad), self.max),
                        text(b.raw(self.bd), self.max),
                    );
                    self.push(
                        &format!("{group}{{length}}"),
                        &format!("{path}{{length}}"),
                        ta,
                        tb,
                    );
                    return;
                }
                for (i, (x, y)) in ia.iter().zip(ib).enumerate() {
                    self.node(&format!("{group}[]"), &format!("{path}[{i}]"), x, y);
                }
            }
            _ => {
                let (ra, rb) = (a.raw(self.ad), b.raw(self.bd));
                if ra != rb {
                    let (ta, tb) = (text(ra, self.max), text(rb, self.max));
                    self.push(group, path, ta, tb);
                }
            }
        }
    }
}

/// Differences of one JSON part (key or value); `root` is "key" or "value".
fn diff_json(
    root: &str,
    a: Option<&[u8]>,
    b: Option<&[u8]>,
    strict: bool,
    max: usize,
) -> Vec<Diff> {
    let show = |x: Option<&[u8]>| x.map(|v| text(v, max)).unwrap_or_else(|| "<null>".into());
    let (a, b) = match (a, b) {
        (None, None) => return vec![],
        (Some(a), Some(b)) => (a, b),
        _ => {
            return vec![Diff {
                group: format!("{root}{{null}}"),
                path: format!("{root}{{null}}"),
                a: show(a),
                b: show(b),
            }]
        }
    };
    let (na, nb) = match (json::parse(a), json::parse(b)) {
        (Ok(x), Ok(y)) => (x, y),
        _ => {
            if a == b {
                return vec![];
            }
            return vec![Diff {
                group: format!("{root}{{not json}}"),
                path: format!("{root}{{not json}}"),
                a: show(Some(a)),
                b: show(Some(b)),
            }];
        }
    };
    let mut skip: BTreeSet<String> = BTreeSet::new();
    let (pa, pb) = if root == "value" {
        (
            volatile_paths(&na, a, strict),
            volatile_paths(&nb, b, strict),
        )
    } else {
        (
            notification_paths(root, &na, a),
            notification_paths(root, &nb, b),
        )
    };
    skip.extend(pa.iter().cloned());
    skip.extend(pb.iter().cloned());
    let mut w = Walk {
        ad: a,
        bd: b,
        skip: &skip,
        max,
        out: Vec::new(),
    };
    w.node(root, root, &na, &nb);
    let mut out = w.out;
    if out.is_empty() {
        let all: Vec<String> = skip.iter().cloned().collect();
        let _ = (&pa, &pb);
        if blank(a, &na, &all) != blank(b, &nb, &all) {
            out.push(Diff {
                group: format!("{root}{{bytes: whitespace or formatting}}"),
                path: format!("{root}{{bytes}}"),
                a: show(Some(a)),
                b: show(Some(b)),
            });
        }
    }
    out
}

const RUN_ID: &str = "__debezium.context.runId";

fn diff_headers(
    a: &[(String, Option<Vec<u8>>)],
    b: &[(String, Option<Vec<u8>>)],
    max: usize,
) -> Vec<Diff> {
    let mut out = Vec::new();
    let na: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
    let nb: Vec<&str> = b.iter().map(|(k, _)| k.as_str()).collect();
    if na != nb {
        out.push(Diff {
            group: "header{names}".into(),
            path: "header{names}".into(),
            a: format!("[{}]", na.join(", ")),
            b: format!("[{}]", nb.join(", ")),
        });
    }
    // Pair the n-th occurrence of a name on one side with the n-th on the other.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, va) in a {
        let n = seen.entry(k.as_str()).or_insert(0);
        let vb = b.iter().filter(|(kb, _)| kb == k).nth(*n).map(|(_, v)| v);
        *n += 1;
        let Some(vb) = vb else { continue };
        if k == RUN_ID {
            // Random per task start: only its presence and form (a UUID) matter.
            let ok = |v: &Option<Vec<u8>>| v.as_ref().map(|x| x.len() == 36).unwrap_or(false);
            if ok(va) != ok(vb) {
                let s = |v: &Option<Vec<u8>>| {
                    v.as_ref().map(|x| text(x, max)).unwrap_or("<null>".into())
                };
                out.push(Diff {
                    group: format!("header.{k}"),
                    path: format!("header.{k}"),
                    a: s(va),
                    b: s(vb),
                });
            }
            continue;
        }
        if va != vb {
            let s =
                |v: &Option<Vec<u8>>| v.as_ref().map(|x| text(x, max)).unwrap_or("<null>".into());
            out.push(Diff {
                group: format!("header.{k}"),
                path: format!("header.{k}"),
                a: s(va),
                b: s(vb),
            });
        }
    }
    out
}

fn rec_json(r: &Rec) -> serde_json::Value {
    let s = |v: &Option<Vec<u8>>| match v {
        Some(x) => serde_json::Value::String(String::from_utf8_lossy(x).into_owned()),
        None => serde_json::Value::Null,
    };
    serde_json::json!({
        "offset": r.offset,
        "key": s(&r.key),
        "value": s(&r.value),
        "headers": r.headers.iter().map(|(k, v)| serde_json::json!([k, s(v)])).collect::<Vec<_>>(),
    })
}

/// What pairs a record with its counterpart on the other side: the key bytes and the
/// envelope's `op` (or ExtractNewRecordState's `__op`), and whether the value is a tombstone.
fn align_key(r: &Rec) -> Vec<u8> {
    let mut k = r.key.clone().unwrap_or_else(|| b"<null>".to_vec());
    k.push(0);
    match r.value.as_deref() {
        None => k.extend_from_slice(b"<tombstone>"),
        Some(v) => {
            if let Ok(root) = json::parse(v) {
                let payload = root.get("payload");
                if let Some(op) = payload.and_then(|p| p.get("op").or_else(|| p.get("__op"))) {
                    k.extend_from_slice(op.raw(v));
                }
            }
        }
    }
    k
}

/// Pairs the records of one topic-partition: a longest common subsequence of [`align_key`]s,
/// then, between two matches, the leftovers of both sides in order. A record with no
/// counterpart (one side has more there) comes back with `None` on the other side, so one
/// missing or duplicated record does not shift every pair after it. Very long partitions
/// (over 2,000 × 2,000 records) are paired by position.
fn align(xa: &[Rec], xb: &[Rec]) -> Vec<(Option<usize>, Option<usize>)> {
    let (n, m) = (xa.len(), xb.len());
    let mut out = Vec::with_capacity(n.max(m));
    if n.saturating_mul(m) > 4_000_000 || (n == m && xa.iter().zip(xb).all(|(x, y)| x.key == y.key))
    {
        for i in 0..n.max(m) {
            out.push(((i < n).then_some(i), (i < m).then_some(i)));
        }
        return out;
    }
    let ka: Vec<Vec<u8>> = xa.iter().map(align_key).collect();
    let kb: Vec<Vec<u8>> = xb.iter().map(align_key).collect();
    // l[i][j]: LCS length of ka[i..] and kb[j..].
    let mut l = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            l[i][j] = if ka[i] == kb[j] {
                l[i + 1][j + 1] + 1
            } else {
                l[i + 1][j].max(l[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let (mut ga, mut gb): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    let flush = |ga: &mut Vec<usize>,
                 gb: &mut Vec<usize>,
                 out: &mut Vec<(Option<usize>, Option<usize>)>| {
        for k in 0..ga.len().max(gb.len()) {
            out.push((ga.get(k).copied(), gb.get(k).copied()));
        }
        ga.clear();
        gb.clear();
    };
    while i < n && j < m {
        if ka[i] == kb[j] && l[i][j] == l[i + 1][j + 1] + 1 {
            flush(&mut ga, &mut gb, &mut out);
            out.push((Some(i), Some(j)));
            i += 1;
            j += 1;
        } else if l[i + 1][j] >= l[i][j + 1] {
            ga.push(i);
            i += 1;
        } else {
            gb.push(j);
            j += 1;
        }
    }
    ga.extend(i..n);
    gb.extend(j..m);
    flush(&mut ga, &mut gb, &mut out);
    out
}

/// Whether `r` repeats the record just before it byte for byte (key, value, headers): a
/// producer's retry of a request whose acknowledgement was lost, which Kafka Connect's
/// non-idempotent producer may write twice (at least once).
fn repeats_previous(recs: &[Rec], i: usize) -> bool {
    i > 0 && {
        let (p, r) = (&recs[i - 1], &recs[i]);
        p.key == r.key && p.value == r.value && p.headers == r.headers
    }
}

#[derive(Default)]
struct TopicStat {
    a: usize,
    b: usize,
    paired: usize,
    identical: usize,
}

struct Group {
    count: usize,
    topics: BTreeSet<String>,
    example: (String, i64, i64, String, String, String), // topic[p], offA, offB, path, a, b
}

fn compare(args: CompareArgs) -> Res<i32> {
    let t0 = Instant::now();
    let (an, ab) = side(&args.a)?;
    let (bn, bb) = side(&args.b)?;
    let mut prefixes = vec![format!("{}.", args.prefix)];
    prefixes.extend(args.include_prefix.iter().cloned());
    let exact = vec![format!("__debezium-heartbeat.{}", args.prefix)];
    let timeout = Duration::from_secs(args.timeout);

    let ca = consumer(&ab)?;
    let cb = consumer(&bb)?;
    let ta = list_topics(&ca, &prefixes, &exact)?;
    let tb = list_topics(&cb, &prefixes, &exact)?;
    let mut ra = read_all(&ca, &ta, timeout).map_err(|e| format!("{an}: {e}"))?;
    let mut rb = read_all(&cb, &tb, timeout).map_err(|e| format!("{bn}: {e}"))?;
    decode_avro(&mut ra, args.registry_a.as_deref()).map_err(|e| format!("{an}: {e}"))?;
    decode_avro(&mut rb, args.registry_b.as_deref()).map_err(|e| format!("{bn}: {e}"))?;

    let mut tps: BTreeSet<Tp> = ra.keys().cloned().collect();
    tps.extend(rb.keys().cloned());
    let empty: Vec<Rec> = Vec::new();
    let mut stats: BTreeMap<Tp, TopicStat> = BTreeMap::new();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut only: Vec<(String, &str, i64, String)> = Vec::new(); // topic, side, offset, value
                                                                 // A's records that repeat the one before them and have no counterpart in B: Kafka
                                                                 // Connect's producer is not idempotent, so a retried request can be written twice.
    let mut dup_a: Vec<(String, i64)> = Vec::new(); // topic, offset
    let mut dump = match &args.dump {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{p}: {e}"))?,
        )),
        None => None,
    };
    let max = args.example_chars;
    // Deliberate differences: group path -> reason.
    let deliberate: BTreeMap<String, String> = match &args.deliberate {
        None => BTreeMap::new(),
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| format!("{p}: {e}"))?
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (path, reason) = l.split_once('\t').unwrap_or((l, ""));
                (path.trim().to_string(), reason.trim().to_string())
            })
            .collect(),
    };
    let mut deliberately_different = 0usize;

    for tp in &tps {
        let xa = ra.get(tp).unwrap_or(&empty);
        let xb = rb.get(tp).unwrap_or(&empty);
        let st = stats.entry(tp.clone()).or_default();
        st.a = xa.len();
        st.b = xb.len();
        let tname = format!("{}[{}]", tp.0, tp.1);
        for (ia, ib) in align(xa, xb) {
            let (x, y) = match (ia, ib) {
                (Some(ia), Some(ib)) => (&xa[ia], &xb[ib]),
                (Some(ia), None) => {
                    let x = &xa[ia];
                    if repeats_previous(xa, ia) {
                        dup_a.push((tname.clone(), x.offset));
                    } else {
                        only.push((
                            tname.clone(),
                            "A",
                            x.offset,
                            x.value
                                .as_deref()
                                .map(|v| text(v, 200))
                                .unwrap_or("<null>".into()),
                        ));
                    }
                    continue;
                }
                (None, Some(ib)) => {
                    let y = &xb[ib];
                    let note = if repeats_previous(xb, ib) {
                        "[repeats the record before it] "
                    } else {
                        ""
                    };
                    only.push((
                        tname.clone(),
                        "B",
                        y.offset,
                        format!(
                            "{note}{}",
                            y.value
                                .as_deref()
                                .map(|v| text(v, 200))
                                .unwrap_or("<null>".into())
                        ),
                    ));
                    continue;
                }
                (None, None) => continue,
            };
            st.paired += 1;
            let mut diffs = Vec::new();
            if x.key != y.key {
                // Empty when the keys differ only in volatile fields (a notification's id).
                diffs.extend(diff_json(
                    "key",
                    x.key.as_deref(),
                    y.key.as_deref(),
                    false,
                    max,
                ));
            }
            diffs.extend(diff_json(
                "value",
                x.value.as_deref(),
                y.value.as_deref(),
                args.strict_source,
                max,
            ));
            diffs.extend(diff_headers(&x.headers, &y.headers, max));
            if diffs.is_empty() {
                st.identical += 1;
                continue;
            }
            if !deliberate.is_empty() && diffs.iter().all(|d| deliberate.contains_key(&d.group)) {
                deliberately_different += 1;
            }
            let mut groups_here: BTreeSet<&str> = BTreeSet::new();
            for d in &diffs {
                if !groups_here.insert(d.group.as_str()) {
                    continue;
                }
                let g = groups.entry(d.group.clone()).or_insert_with(|| Group {
                    count: 0,
                    topics: BTreeSet::new(),
                    example: (
                        tname.clone(),
                        x.offset,
                        y.offset,
                        d.path.clone(),
                        d.a.clone(),
                        d.b.clone(),
                    ),
                });
                g.count += 1;
                g.topics.insert(tp.0.clone());
            }
            if let Some(w) = dump.as_mut() {
                let line = serde_json::json!({
                    "topic": tp.0, "partition": tp.1,
                    "diffs": diffs.iter().map(|d| serde_json::json!({"path": d.path, "a": d.a, "b": d.b})).collect::<Vec<_>>(),
                    "a": rec_json(x), "b": rec_json(y),
                });
                writeln!(w, "{line}").map_err(|e| e.to_string())?;
            }
        }
    }
    if let Some(mut w) = dump {
        w.flush().map_err(|e| e.to_string())?;
    }

    // ---- report ----
    let mut r = String::new();
    let mode = if args.strict_source {
        "payload.ts_*; source.ts_*/txId/lsn/sequence on snapshot records only (--strict-source)"
    } else {
        "payload.ts_*, source.ts_*, source.txId, source.lsn, source.sequence"
    };
    let _ = writeln!(
        r,
        "dbz-compare: A = {an} ({ab}), B = {bn} ({bb}), topics {}*",
        prefixes.join("*, ")
    );
    let _ = writeln!(
        r,
        "normalised: value {mode}; header {RUN_ID} (presence only); keys byte for byte"
    );
    let _ = writeln!(r);
    let w = tps
        .iter()
        .map(|(t, p)| t.len() + format!("{p}").len() + 2)
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        r,
        "{:<w$}  {:>7}  {:>7}  {:>7}  {:>9}",
        "topic[partition]", "A recs", "B recs", "paired", "identical"
    );
    let (mut sa, mut sb, mut sp, mut si) = (0, 0, 0, 0);
    for ((t, p), s) in &stats {
        let _ = writeln!(
            r,
            "{:<w$}  {:>7}  {:>7}  {:>7}  {:>9}",
            format!("{t}[{p}]"),
            s.a,
            s.b,
            s.paired,
            s.identical
        );
        sa += s.a;
        sb += s.b;
        sp += s.paired;
        si += s.identical;
    }
    let _ = writeln!(
        r,
        "{:<w$}  {:>7}  {:>7}  {:>7}  {:>9}",
        "TOTAL", sa, sb, sp, si
    );
    let pct = if sp > 0 {
        100.0 * si as f64 / sp as f64
    } else {
        0.0
    };
    let only_a = only.iter().filter(|o| o.1 == "A").count();
    let only_b = only.len() - only_a;
    let _ = writeln!(r);
    let _ = writeln!(
        r,
        "records compared: {sp}   identical: {si} ({pct:.1}%)   only in A ({an}): {only_a}   only in B ({bn}): {only_b}{}",
        if dup_a.is_empty() { String::new() } else { format!("   repeated in A: {}", dup_a.len()) }
    );
    let other = sp - si - deliberately_different;
    if !deliberate.is_empty() {
        let dpct = if sp > 0 {
            100.0 * (si + deliberately_different) as f64 / sp as f64
        } else {
            0.0
        };
        let _ = writeln!(
            r,
            "deliberately different (every difference listed in the deliberate file): {deliberately_different}   identical or deliberate: {dpct:.1}%   other differences: {other}"
        );
    }
    if !groups.is_empty() {
        let mut gs: Vec<(&String, &Group)> = groups.iter().collect();
        gs.sort_by(|x, y| y.1.count.cmp(&x.1.count).then(x.0.cmp(y.0)));
        let _ = writeln!(r);
        let _ = writeln!(
            r,
            "differences by field path (records affected, topics affected, path):"
        );
        for (k, g) in &gs {
            let why = deliberate
                .get(*k)
                .map(|r| format!("   [deliberate: {r}]"))
                .unwrap_or_default();
            let _ = writeln!(r, "  {:>6}  {:>3}  {}{}", g.count, g.topics.len(), k, why);
        }
        let _ = writeln!(r);
        let _ = writeln!(r, "first example of each:");
        for (k, g) in &gs {
            let (t, oa, ob, path, a, b) = &g.example;
            let _ = writeln!(
                r,
                "- {k}\n    at {path} in {t}, A offset {oa}, B offset {ob}\n    A: {a}\n    B: {b}"
            );
        }
    }
    if !dup_a.is_empty() {
        let _ = writeln!(r);
        let _ = writeln!(
            r,
            "{} record(s) of A repeat the record before them byte for byte, with no counterpart in B (a producer retry written twice; Kafka Connect's producer is at-least-once, not idempotent). Not counted as differences:",
            dup_a.len()
        );
        for (t, o) in dup_a.iter().take(20) {
            let _ = writeln!(r, "  A {t} offset {o}");
        }
    }
    if !only.is_empty() {
        let _ = writeln!(r);
        let _ = writeln!(r, "records on one side only (first 20):");
        for (t, s, o, v) in only.iter().take(20) {
            let _ = writeln!(r, "  {s} {t} offset {o}: {v}");
        }
    }
    let _ = writeln!(r);
    let _ = writeln!(r, "({:.1}s)", t0.elapsed().as_secs_f64());
    print!("{r}");

    if let Some(p) = &args.json_out {
        let j = serde_json::json!({
            "a": {"name": an, "bootstrap": ab}, "b": {"name": bn, "bootstrap": bb},
            "strict_source": args.strict_source,
            "records_a": sa, "records_b": sb, "compared": sp, "identical": si, "identical_pct": pct,
            "only_a": only_a, "only_b": only_b, "repeated_a": dup_a.len(),
            "topics": stats.iter().map(|((t, p), s)| serde_json::json!({"topic": t, "partition": p, "a": s.a, "b": s.b, "paired": s.paired, "identical": s.identical})).collect::<Vec<_>>(),
            "differences": groups.iter().map(|(k, g)| serde_json::json!({
                "path": k, "records": g.count, "topics": g.topics.iter().collect::<Vec<_>>(),
                "example": {"topic": g.example.0, "offset_a": g.example.1, "offset_b": g.example.2, "path": g.example.3, "a": g.example.4, "b": g.example.5},
            })).collect::<Vec<_>>(),
        });
        std::fs::write(p, serde_json::to_string_pretty(&j).unwrap())
            .map_err(|e| format!("{p}: {e}"))?;
    }
    Ok(if other == 0 && only.is_empty() { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(offset: i64, key: &str, op: &str) -> Rec {
        Rec {
            offset,
            key: Some(key.as_bytes().to_vec()),
            value: Some(format!("{{\"payload\":{{\"op\":\"{op}\",\"o\":{offset}}}}}").into_bytes()),
            headers: Vec::new(),
        }
    }

    fn pairs(a: &[Rec], b: &[Rec]) -> Vec<(Option<i64>, Option<i64>)> {
        align(a, b)
            .into_iter()
            .map(|(i, j)| (i.map(|i| a[i].offset), j.map(|j| b[j].offset)))
            .collect()
    }

    #[test]
    fn a_missing_first_record_does_not_shift_the_others() {
        let a = vec![
            rec(0, "1", "r"),
            rec(1, "2", "r"),
            rec(2, "1", "u"),
            rec(3, "3", "c"),
        ];
        let b = vec![rec(0, "2", "r"), rec(1, "1", "u"), rec(2, "3", "c")];
        assert_eq!(
            pairs(&a, &b),
            vec![
                (Some(0), None),
                (Some(1), Some(0)),
                (Some(2), Some(1)),
                (Some(3), Some(2))
            ]
        );
    }

    #[test]
    fn leftovers_between_matches_pair_in_order_and_a_repeat_is_recognised() {
        // Same keys, one value differs (paired, compared later); A repeats its record 1.
        let a = vec![
            rec(0, "1", "c"),
            rec(1, "2", "c"),
            rec(2, "2", "c"),
            rec(3, "1", "d"),
        ];
        let mut a2 = a.clone();
        a2[2].value = a2[1].value.clone();
        a2[2].offset = 2;
        let b = vec![rec(0, "1", "c"), rec(1, "2", "c"), rec(2, "1", "d")];
        let p = pairs(&a2, &b);
        assert_eq!(p.iter().filter(|(_, y)| y.is_none()).count(), 1, "{p:?}");
        let lone = align(&a2, &b)
            .into_iter()
            .find(|(_, j)| j.is_none())
            .unwrap()
            .0
            .unwrap();
        assert!(repeats_previous(&a2, lone));
        assert!(!repeats_previous(&a, 2), "a different value is no repeat");
        // Keys that do not match at all are paired by position.
        let c = vec![rec(0, "9", "c"), rec(1, "8", "c")];
        assert_eq!(
            pairs(&a[..2], &c),
            vec![(Some(0), Some(0)), (Some(1), Some(1))]
        );
    }
}
