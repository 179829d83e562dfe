//! The processor on captured pgoutput frames (`tests/fixtures/pgoutput/frames.txt`, see
//! `scripts/capture-pgoutput.sh` for the workload) with the memory sink and a fixed catalog:
//! records, their order and bytes, and the LSN that may be confirmed, without PostgreSQL or
//! Kafka.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value as Json;

use super::processor::{Processor, ProcessorStart};
use super::relations::Catalog;
use super::Counters;
use crate::config::{ConnectorConfig, RawConfig};
use crate::error::{ErrorKind, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::AckTracker;
use crate::pg::pgoutput::fixture::decoded;
use crate::pg::pgoutput::{Message, Relation, RelationColumn, TupleValue};
use crate::pg::relation::{CatalogColumn, TableCatalog};
use crate::pg::types::{TypeCatalog, TypeInfo};
use crate::sink::memory::{AckMode, MemorySink, SentRecord};

/// The catalog as the capture's tables have it: primary key `id`, NOT NULL on it, and the
/// `mood` enum.
struct FixtureCatalog {
    types: TypeCatalog,
    lookups: usize,
    /// The re-select queries run (post.processors).
    reselects: Vec<String>,
    /// What a re-select returns.
    reselected: Option<Vec<Option<String>>>,
}

impl FixtureCatalog {
    fn new() -> Self {
        let mut types = TypeCatalog::new();
        for (_, m) in decoded() {
            if let Message::Type { id, name, .. } = m {
                types.insert(
                    id,
                    TypeInfo {
                        name,
                        typtype: b'e',
                        category: b'E',
                        base_oid: 0,
                        base_typmod: -1,
                        elem_oid: 0,
                        enum_labels: vec!["happy".into(), "sad".into()],
                    },
                );
            }
        }
        FixtureCatalog {
            types,
            lookups: 0,
            reselects: Vec::new(),
            reselected: None,
        }
    }
}

impl Catalog for FixtureCatalog {
    async fn table_catalog(
        &mut self,
        relation: &Relation,
        _type_oids: &[u32],
        _source_types: bool,
    ) -> Result<TableCatalog> {
        self.lookups += 1;
        let column = |c: &RelationColumn| CatalogColumn {
            name: c.name.clone(),
            type_oid: c.type_oid,
            typmod: c.type_modifier,
            not_null: c.name == "id",
            default_expr: None,
            type_name: format!("type {}", c.type_oid),
            generated: false,
        };
        Ok(TableCatalog {
            columns: relation.columns.iter().map(column).collect(),
            key: vec!["id".into()],
            types: self.types.clone(),
            source_types: TypeCatalog::new(),
            money_scale: None,
        })
    }

    async fn reselect(
        &mut self,
        query: &str,
        _params: &[crate::pipeline::reselect::KeyParam],
    ) -> Result<Option<Vec<Option<String>>>> {
        self.reselects.push(query.to_string());
        Ok(self.reselected.clone())
    }

    async fn query_text(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        Err(crate::error::Error::server(format!(
            "the fixture catalog runs no SQL: {sql}"
        )))
    }

    async fn captured_table(
        &mut self,
        _config: &crate::config::ConnectorConfig,
        _schema: &str,
        _table: &str,
    ) -> Result<Option<(crate::pg::relation::TableSchema, Vec<String>)>> {
        Ok(None)
    }

    async fn visibility(&mut self, _version_num: u32) -> Result<crate::pg::snapshot::Visibility> {
        Err(crate::error::Error::server(
            "the fixture catalog has no snapshot",
        ))
    }

    async fn captured_tables(
        &mut self,
        _config: &crate::config::ConnectorConfig,
    ) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

type TestProcessor = Processor<MemorySink, FixtureCatalog>;

mod main_loop;

/// A processor with the test defaults plus `extra` settings (schemas off, so records read as
/// plain JSON), acknowledging per `mode`.
fn processor(extra: &[(&str, &str)], mode: AckMode) -> TestProcessor {
    processor_with(extra, mode, ProcessorStart::default())
}

/// [`processor`], starting from `start`.
fn processor_with(extra: &[(&str, &str)], mode: AckMode, start: ProcessorStart) -> TestProcessor {
    let tracker = Arc::new(AckTracker::new(Lsn::ZERO));
    let sink = MemorySink::new(tracker, mode);
    Processor::new(
        test_config(extra),
        FixtureCatalog::new(),
        sink,
        Arc::new(Counters::default()),
        start,
    )
    .expect("processor")
}

/// The test defaults plus `extra` settings (schemas off, so records read as plain JSON).
fn test_config(extra: &[(&str, &str)]) -> Arc<ConnectorConfig> {
    let mut raw = RawConfig::new();
    for (k, v) in [
        ("database.hostname", "localhost"),
        ("database.user", "u"),
        ("database.dbname", "shop"),
        ("topic.prefix", "cap"),
        ("bootstrap.servers", "localhost:9092"),
        ("key.converter.schemas.enable", "false"),
        ("value.converter.schemas.enable", "false"),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    {
        raw.insert(k.to_string(), v.to_string());
    }
    let (config, _) = super::validate_config(&raw).expect("test config");
    Arc::new(config)
}

/// Feeds the captured messages to `p`, in order; returns each message with its LSN.
async fn replay(p: &mut TestProcessor) -> Vec<(Lsn, Message)> {
    let mut seen = Vec::new();
    for (frame, msg) in decoded() {
        p.handle(frame.lsn, msg.clone()).await.expect("handle");
        seen.push((frame.lsn, msg));
    }
    seen
}

fn json(bytes: &Option<Vec<u8>>) -> Json {
    match bytes {
        Some(b) => serde_json::from_slice(b).expect("JSON"),
        None => Json::Null,
    }
}

fn op(r: &SentRecord) -> String {
    json(&r.value)["op"].as_str().unwrap_or("-").to_string()
}

fn header<'a>(r: &'a SentRecord, key: &str) -> Option<&'a [u8]> {
    r.headers
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.as_deref())
}

/// The end LSNs of the captured transactions, in commit order.
fn commit_ends(msgs: &[(Lsn, Message)]) -> Vec<Lsn> {
    msgs.iter()
        .filter_map(|(_, m)| match m {
            Message::Commit { end_lsn, .. } => Some(*end_lsn),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_captured_stream_becomes_debezium_records_in_commit_order() {
    let mut p = processor(&[], AckMode::Immediate);
    let msgs = replay(&mut p).await;
    let summary: Vec<(String, String)> = p
        .sink()
        .records
        .iter()
        .map(|r| (r.topic.clone(), op(r)))
        .collect();
    let s = |t: &str, o: &str| (t.to_string(), o.to_string());
    assert_eq!(
        summary,
        vec![
            s("cap.public.kinds", "c"),
            s("cap.public.kinds", "c"),
            s("cap.public.kinds", "c"),
            s("cap.public.full_rows", "c"),
            s("cap.public.kinds", "u"),
            // The key change: delete, tombstone, create.
            s("cap.public.kinds", "d"),
            s("cap.public.kinds", "-"),
            s("cap.public.kinds", "c"),
            s("cap.public.full_rows", "u"),
            s("cap.public.docs", "u"),
            s("cap.public.kinds", "d"),
            s("cap.public.kinds", "-"),
            s("cap.public.full_rows", "d"),
            s("cap.public.full_rows", "-"),
            // TRUNCATE is skipped by default (skipped.operations=t).
            s("cap.message", "m"),
            s("cap.message", "m"),
            s("cap.public.kinds", "c"),
        ]
    );
    let first = &p.sink().records[0];
    assert_eq!(first.key.as_deref(), Some(&br#"{"id":1}"#[..]));
    let value = json(&first.value);
    assert_eq!(value["after"]["txt"], "hello");
    assert_eq!(value["after"]["feel"], "happy");
    assert_eq!(value["source"]["db"], "shop");
    assert_eq!(value["source"]["name"], "cap");
    assert_eq!(value["source"]["snapshot"], "false");
    assert_eq!(value["source"]["table"], "kinds");
    // Everything was acknowledged at once: the last commit may be confirmed.
    assert_eq!(p.tracker().flushable(), *commit_ends(&msgs).last().unwrap());
    assert_eq!(p.counters.snapshot().transactions, 10);
    assert_eq!(p.counters.snapshot().records, 17);
}

#[tokio::test]
async fn source_sequence_and_lsn_follow_the_last_commit() {
    let mut p = processor(&[], AckMode::Immediate);
    let msgs = replay(&mut p).await;
    let ends = commit_ends(&msgs);
    // The second transaction's update: sequence starts at the first commit's end.
    let update = json(&p.sink().records[4].value);
    let (lsn, _) = msgs
        .iter()
        .find(|(_, m)| matches!(m, Message::Update { old: None, .. }))
        .unwrap();
    assert_eq!(update["source"]["lsn"], lsn.0);
    assert_eq!(
        update["source"]["sequence"],
        format!("[\"{}\",\"{}\"]", ends[0].0, lsn.0)
    );
    // The insert from a replication origin carries it.
    let origin = json(&p.sink().records.last().unwrap().value);
    assert_eq!(origin["source"]["origin"], "pgcdc_capture_origin");
    assert_eq!(origin["source"]["origin_lsn"], 0x5A5_A5A5);
}

#[tokio::test]
async fn a_primary_key_change_is_a_delete_a_tombstone_and_a_create_with_key_headers() {
    let mut p = processor(&[], AckMode::Immediate);
    replay(&mut p).await;
    let r = &p.sink().records;
    let (delete, tombstone, create) = (&r[5], &r[6], &r[7]);
    assert_eq!(op(delete), "d");
    assert_eq!(delete.key.as_deref(), Some(&br#"{"id":2}"#[..]));
    assert_eq!(
        header(delete, "__debezium.newkey"),
        Some(&br#"{"id":20}"#[..])
    );
    assert_eq!(tombstone.key, delete.key);
    assert_eq!(tombstone.value, None);
    assert_eq!(op(create), "c");
    assert_eq!(create.key.as_deref(), Some(&br#"{"id":20}"#[..]));
    assert_eq!(
        header(create, "__debezium.oldkey"),
        Some(&br#"{"id":2}"#[..])
    );
    // All three records belong to one transaction's unit.
    assert_eq!(delete.token, create.token);
    assert_eq!(tombstone.token, create.token);
}

#[tokio::test]
async fn truncate_gives_one_record_per_captured_table_when_not_skipped() {
    let mut p = processor(&[("skipped.operations", "none")], AckMode::Immediate);
    replay(&mut p).await;
    let truncates: Vec<&SentRecord> = p.sink().records.iter().filter(|r| op(r) == "t").collect();
    let topics: Vec<&str> = truncates.iter().map(|r| r.topic.as_str()).collect();
    assert_eq!(topics, ["cap.public.parent", "cap.public.child"]);
    assert!(truncates.iter().all(|r| r.key.is_none()));
    // With a table filter, the excluded table's truncate is dropped and its catalog never read.
    let mut p = processor(
        &[
            ("skipped.operations", "none"),
            ("table.exclude.list", "public.child"),
        ],
        AckMode::Immediate,
    );
    replay(&mut p).await;
    let topics: Vec<String> = p
        .sink()
        .records
        .iter()
        .filter(|r| op(r) == "t")
        .map(|r| r.topic.clone())
        .collect();
    assert_eq!(topics, ["cap.public.parent"]);
    assert_eq!(p.catalog().lookups, 4, "kinds, full_rows, docs, parent");
}

#[tokio::test]
async fn logical_messages_go_to_the_message_topic_and_a_non_transactional_one_is_its_own_unit() {
    let mut p = processor(&[], AckMode::Manual);
    let msgs = replay(&mut p).await;
    let records = p.sink().records.clone();
    let (tx_msg, raw_msg) = (&records[14], &records[15]);
    assert_eq!(json(&tx_msg.value)["message"]["prefix"], "pgcdc.test");
    assert_eq!(
        tx_msg.key.as_deref(),
        Some(&br#"{"prefix":"pgcdc.test"}"#[..])
    );
    assert_eq!(json(&raw_msg.value)["message"]["content"], "AP9/gA==");
    assert!(json(&raw_msg.value)["source"]["txId"].is_null());
    assert_ne!(raw_msg.token, tx_msg.token);
    // Acknowledge everything up to and including the non-transactional message: the slot
    // may move to that message's position, not further.
    let sink = p.sink();
    for i in 0..=15 {
        assert!(sink.ack(i), "record {i} waits for its ack");
    }
    let (raw_lsn, _) = msgs
        .iter()
        .find(|(_, m)| {
            matches!(
                m,
                Message::LogicalMessage {
                    transactional: false,
                    ..
                }
            )
        })
        .unwrap();
    assert_eq!(p.tracker().flushable(), *raw_lsn);
}

#[tokio::test]
async fn the_flushable_lsn_waits_for_every_record_and_for_earlier_transactions() {
    let mut p = processor(&[], AckMode::Manual);
    let msgs = replay(&mut p).await;
    let ends = commit_ends(&msgs);
    assert_eq!(
        p.tracker().flushable(),
        Lsn::ZERO,
        "nothing acknowledged yet"
    );
    // Acknowledge the second transaction's record (index 4) before the first's four.
    assert!(p.sink().ack(4));
    assert_eq!(
        p.tracker().flushable(),
        Lsn::ZERO,
        "the first transaction is not done"
    );
    for i in [3, 1, 2] {
        assert!(p.sink().ack(i));
        assert_eq!(p.tracker().flushable(), Lsn::ZERO, "record 0 is still out");
    }
    assert!(p.sink().ack(0));
    assert_eq!(
        p.tracker().flushable(),
        ends[1],
        "both transactions are complete: the second's end may be confirmed"
    );
    // The key change's three records: two acknowledged are not enough.
    assert!(p.sink().ack(7));
    assert!(p.sink().ack(5));
    assert_eq!(p.tracker().flushable(), ends[1]);
    assert!(p.sink().ack(6));
    assert_eq!(p.tracker().flushable(), ends[2]);
    p.sink().ack_all();
    assert_eq!(p.tracker().flushable(), *ends.last().unwrap());
}

#[tokio::test]
async fn a_keepalive_is_confirmed_only_between_transactions_with_nothing_in_flight() {
    let mut p = processor(&[], AckMode::Manual);
    let msgs = decoded();
    let (begin_lsn, begin) = (msgs[0].0.lsn, msgs[0].1.clone());
    p.handle(begin_lsn, begin).await.unwrap();
    p.keepalive(Lsn(begin_lsn.0 + 1_000));
    assert_eq!(p.tracker().flushable(), Lsn::ZERO, "a transaction is open");
    for (frame, msg) in &msgs[1..9] {
        p.handle(frame.lsn, msg.clone()).await.unwrap();
    }
    assert!(!p.in_transaction());
    let end = p.progress.idle_position();
    p.keepalive(Lsn(end.0 + 1_000));
    assert_eq!(p.tracker().flushable(), Lsn::ZERO, "records are in flight");
    p.sink().ack_all();
    assert_eq!(p.tracker().flushable(), end);
    let stored = p.tracker().last_completed();
    p.keepalive(Lsn(end.0 + 1_000));
    assert_eq!(p.tracker().flushable(), Lsn(end.0 + 1_000));
    assert_eq!(
        p.tracker().last_completed(),
        stored,
        "the keepalive's position is confirmed, not written to the offsets"
    );
}

#[tokio::test]
async fn a_heartbeat_between_transactions_is_a_unit_that_completes_at_the_idle_position() {
    let mut p = processor(&[("heartbeat.interval.ms", "1000")], AckMode::Manual);
    let msgs = decoded();
    for (frame, msg) in &msgs[..9] {
        p.handle(frame.lsn, msg.clone()).await.unwrap();
    }
    let idle = p.progress.idle_position();
    p.heartbeat(true).await.unwrap();
    let hb = p.sink().records.last().unwrap().clone();
    assert_eq!(hb.topic, "__debezium-heartbeat.cap");
    assert_eq!(hb.key.as_deref(), Some(&br#"{"serverName":"cap"}"#[..]));
    // The heartbeat's unit comes after the transaction's: acknowledging the heartbeat alone
    // confirms nothing.
    let last = p.sink().records.len() - 1;
    assert!(p.sink().ack(last));
    assert_eq!(p.tracker().flushable(), Lsn::ZERO);
    p.sink().ack_all();
    assert_eq!(p.tracker().flushable(), idle);
    // Inside a transaction, a heartbeat is one of its records.
    let (begin_lsn, begin) = (msgs[9].0.lsn, msgs[9].1.clone());
    p.handle(begin_lsn, begin).await.unwrap();
    p.heartbeat(true).await.unwrap();
    let token = p.tx.as_ref().unwrap().unit.token();
    assert_eq!(p.sink().records.last().unwrap().token, token);
}

#[tokio::test]
async fn transaction_metadata_counts_events_per_table_and_fills_the_envelope() {
    let mut p = processor(
        &[("provide.transaction.metadata", "true")],
        AckMode::Immediate,
    );
    replay(&mut p).await;
    let records = &p.sink().records;
    assert_eq!(records[0].topic, "cap.transaction");
    assert_eq!(json(&records[0].value)["status"], "BEGIN");
    let end = records
        .iter()
        .find(|r| r.topic == "cap.transaction" && json(&r.value)["status"] == "END")
        .unwrap();
    let end = json(&end.value);
    assert_eq!(end["event_count"], 4);
    let counts: BTreeMap<String, i64> = end["data_collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["data_collection"].as_str().unwrap().to_string(),
                c["event_count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts["public.kinds"], 3);
    assert_eq!(counts["public.full_rows"], 1);
    let third = json(&records[3].value);
    assert_eq!(third["transaction"]["total_order"], 3);
    assert_eq!(third["transaction"]["data_collection_order"], 3);
}

#[tokio::test]
async fn changes_out_of_place_are_protocol_errors_never_skipped() {
    let msgs = decoded();
    let insert = msgs
        .iter()
        .find(|(_, m)| matches!(m, Message::Insert { .. }))
        .unwrap();
    // A change of a relation never announced.
    let mut p = processor(&[], AckMode::Immediate);
    let err = p.handle(insert.0.lsn, insert.1.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(
        err.message().contains("before its Relation message"),
        "{err}"
    );
    // A change outside a transaction.
    let mut p = processor(&[], AckMode::Immediate);
    for (frame, msg) in &msgs[..9] {
        p.handle(frame.lsn, msg.clone()).await.unwrap();
    }
    let Message::Insert { relation_id, .. } = insert.1 else {
        unreachable!()
    };
    let stray = Message::Insert {
        relation_id,
        new: vec![TupleValue::Null; 10],
    };
    let err = p.handle(Lsn(1), stray).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    // A BEGIN inside a transaction.
    let mut p = processor(&[], AckMode::Immediate);
    p.handle(msgs[0].0.lsn, msgs[0].1.clone()).await.unwrap();
    let err = p
        .handle(msgs[0].0.lsn, msgs[0].1.clone())
        .await
        .unwrap_err();
    assert!(
        err.message().contains("inside an open transaction"),
        "{err}"
    );
}

/// A failed delivery stops progress and later records, and the pipeline's error keeps the
/// failure's kind, which the supervisor's policy reads: a record Kafka refuses is fatal, a
/// record that timed out restarts the connector, a fenced producer stops it.
#[tokio::test]
async fn a_failed_delivery_stops_progress_and_later_records_and_keeps_its_kind() {
    use crate::error::Error;
    for failure in [
        Error::kafka("broker said no"),
        Error::connection("broker timed out"),
        Error::new(ErrorKind::Fenced, "producer fenced"),
    ] {
        let (kind, text) = (failure.kind(), failure.message().to_string());
        let mut p = processor(&[], AckMode::Immediate);
        let msgs = decoded();
        for (frame, msg) in &msgs[..5] {
            p.handle(frame.lsn, msg.clone()).await.unwrap();
        }
        p.sink().fail_next(failure);
        p.handle(msgs[5].0.lsn, msgs[5].1.clone()).await.unwrap();
        p.handle(msgs[6].0.lsn, msgs[6].1.clone()).await.unwrap();
        let err = p
            .handle(msgs[7].0.lsn, msgs[7].1.clone())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), kind, "{err}");
        assert_eq!(err.is_retriable(), kind == ErrorKind::Connection);
        assert!(err.message().contains(&text), "{err}");
        assert_eq!(
            p.sink().records.len(),
            3,
            "nothing was sent after the failed record"
        );
        assert_eq!(p.tracker().flushable(), Lsn::ZERO);
    }
}

/// Resuming inside the third transaction, after its first change, as Kafka Connect stores
/// Debezium's offsets: the first two transactions and that change are skipped, and every
/// later record is the same as in a run from the start.
#[tokio::test]
async fn resuming_after_stored_offsets_skips_exactly_what_was_published() {
    let mut full = processor(&[], AckMode::Immediate);
    let msgs = replay(&mut full).await;
    let ends = commit_ends(&msgs);
    let begins: Vec<(usize, u32)> = msgs
        .iter()
        .enumerate()
        .filter_map(|(i, (_, m))| match m {
            Message::Begin { xid, .. } => Some((i, *xid)),
            _ => None,
        })
        .collect();
    let (third, xid) = begins[2];
    let (first_change, _) = msgs[third + 1..]
        .iter()
        .find(|(_, m)| matches!(m, Message::Update { .. } | Message::Insert { .. }))
        .unwrap();
    let offsets = crate::offsets::store::Offsets {
        lsn: Some(*first_change),
        lsn_proc: Some(*first_change),
        lsn_commit: Some(ends[1]),
        tx_id: Some(xid as i64),
        ts_usec: Some(1),
        message_type: Some("UPDATE".into()),
        snapshot: None,
        snapshot_completed: false,
        incremental: None,
        initial: None,
    };
    let start = ProcessorStart {
        last_commit_lsn: None,
        resume: super::resume::ResumeFilter::from_offsets(&offsets),
        ..ProcessorStart::default()
    };
    let mut resumed = processor_with(&[], AckMode::Immediate, start);
    replay(&mut resumed).await;

    // The records of the full run after the last one at or before the stored position.
    let lsn_of = |r: &SentRecord| json(&r.value)["source"]["lsn"].as_u64();
    let mut published = 0;
    let mut last_lsn = None;
    for (i, r) in full.sink().records.iter().enumerate() {
        last_lsn = lsn_of(r).or(last_lsn); // a tombstone goes with the delete before it
        if last_lsn.is_some_and(|l| l <= first_change.0) {
            published = i + 1;
        }
    }
    assert!(
        published >= 6,
        "the first two transactions and the key change"
    );
    let summary = |p: &mut TestProcessor, from: usize| -> Vec<(String, Option<Vec<u8>>, Json)> {
        p.sink().records[from..]
            .iter()
            .map(|r| {
                // The envelope's own ts_* are the processing time.
                let mut v = json(&r.value);
                if let Some(o) = v.as_object_mut() {
                    o.retain(|k, _| !k.starts_with("ts_"));
                }
                (r.topic.clone(), r.key.clone(), v)
            })
            .collect()
    };
    let expected = summary(&mut full, published);
    assert!(!expected.is_empty());
    assert_eq!(summary(&mut resumed, 0), expected);
    // Skipped transactions still complete: the slot is confirmed past them.
    assert_eq!(resumed.tracker().flushable(), *ends.last().unwrap());
    assert_eq!(resumed.resume.skipped().0, 2);
}

#[tokio::test]
async fn a_topic_name_over_kafkas_limit_stops_with_the_table_named() {
    // "<prefix>.public.kinds": 230 + 13 characters fit; 240 + 13 do not. Cutting the name
    // instead could put two tables' records in one topic.
    let fits = "p".repeat(230);
    let mut p = processor(&[("topic.prefix", &fits)], AckMode::Immediate);
    replay(&mut p).await;
    assert!(!p.sink().records.is_empty());

    let long = "p".repeat(240);
    let mut p = processor(&[("topic.prefix", &long)], AckMode::Immediate);
    let mut error = None;
    for (frame, msg) in decoded() {
        if let Err(e) = p.handle(frame.lsn, msg.clone()).await {
            error = Some(e);
            break;
        }
    }
    let e = error.expect("a topic name over 249 characters must stop the connector");
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(
        e.message().contains("table public.kinds"),
        "{}",
        e.message()
    );
    assert!(e.message().contains("253 characters"), "{}", e.message());
    assert!(
        p.sink().records.is_empty(),
        "nothing was sent under a cut name"
    );
}

#[tokio::test]
async fn pass_one_of_a_fenced_snapshot_confirms_only_the_unbroken_prefix_it_published() {
    use super::fence::{SnapshotFence, XidSnapshot};
    let mut p = processor(&[], AckMode::Manual);
    let msgs = decoded();
    let xids: Vec<u32> = msgs
        .iter()
        .filter_map(|(_, m)| match m {
            Message::Begin { xid, .. } => Some(*xid),
            _ => None,
        })
        .collect();
    assert!(
        xids.len() >= 4,
        "the capture has at least four transactions"
    );
    // The snapshot sees every transaction but the third: pass 1 publishes the first two,
    // skips the third, and publishes the rest, which must stay held.
    let (lo, hi) = (*xids.iter().min().unwrap(), *xids.iter().max().unwrap());
    let snapshot = XidSnapshot::parse(&format!("{lo}:{}:{}", hi + 1, xids[2])).unwrap();
    p.set_fence(Some(SnapshotFence::new(snapshot, Lsn(u64::MAX / 2))));
    p.tracker().hold(Lsn::ZERO);
    let mut seen = Vec::new();
    for (frame, msg) in msgs {
        p.handle(frame.lsn, msg.clone()).await.expect("handle");
        seen.push((frame.lsn, msg));
    }
    let ends = commit_ends(&seen);
    assert_eq!(
        p.tracker().flushable(),
        Lsn::ZERO,
        "nothing acknowledged yet"
    );
    p.sink().ack_all();
    assert_eq!(
        p.tracker().flushable(),
        ends[1],
        "the first two transactions precede every skipped one: confirmable; the rest is held"
    );
    let last = p.tracker().last_completed().unwrap();
    assert_eq!(last.end_lsn, *ends.last().unwrap());
    assert!(
        !last.before_snapshot,
        "a transaction published after a skipped one is not part of the prefix"
    );
    let offsets = crate::offsets::store::Offsets::after(&crate::offsets::ack::CommitInfo {
        before_snapshot: true,
        ..last
    });
    assert!(
        !offsets.snapshot_done() && offsets.lsn_commit == Some(last.end_lsn),
        "offsets of a transaction published ahead of a snapshot say it is still in progress"
    );
}
