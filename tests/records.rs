//! Record-level features: transaction metadata, heartbeats, message keys, column filters,
//! masks and truncation, and source type propagation, each checked against Debezium's JSON.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::*;

const T: Duration = Duration::from_secs(90);

const TX_KEY_SCHEMA: &str = r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"}],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey","version":1}"#;
const TX_VALUE_SCHEMA: &str = r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"status"},{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":true,"field":"event_count"},{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":false,"field":"data_collection"},{"type":"int64","optional":false,"field":"event_count"}],"optional":true,"name":"event.collection","version":1},"optional":true,"field":"data_collections"},{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataValue","version":1}"#;

/// `"<xid>:<lsn>"` split into its parts.
fn tx_id_parts(id: &str) -> (i64, i64) {
    let (x, l) = id.split_once(':').expect("id is <xid>:<lsn>");
    (x.parse().unwrap(), l.parse().unwrap())
}

/// The exact value bytes of a BEGIN/END record, with `ts_ms` given.
fn tx_value(payload: serde_json::Value) -> String {
    format!(r#"{{"schema":{TX_VALUE_SCHEMA},"payload":{payload}}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_metadata_brackets_each_transaction_and_orders_its_events() {
    // DBZ-T-133, plus a primary-key change and a delete in a second transaction.
    let db = TestDb::create("txmeta").await;
    db.exec(
        "CREATE SCHEMA s1; CREATE SCHEMA s2;
         CREATE TABLE s1.a (pk SERIAL, aa integer, PRIMARY KEY(pk));
         CREATE TABLE s2.a (pk SERIAL, aa integer, bb varchar(20), PRIMARY KEY(pk));
         INSERT INTO s1.a (aa) VALUES (1); INSERT INTO s2.a (aa) VALUES (1);",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("txmeta");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("provide.transaction.metadata".into(), "true".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("BEGIN; INSERT INTO s1.a (aa) VALUES (1); INSERT INTO s2.a (aa) VALUES (1); COMMIT;")
        .await;
    db.exec("BEGIN; UPDATE s1.a SET pk = 10 WHERE pk = 1; DELETE FROM s1.a WHERE pk = 2; COMMIT;")
        .await;
    let tx_topic = format!("{prefix}.transaction");
    let txs = read_n(&env().kafka, &tx_topic, 4, T).await;
    let s1 = read_n(&env().kafka, &format!("{prefix}.s1.a"), 6, T).await;
    let s2 = read_n(&env().kafka, &format!("{prefix}.s2.a"), 1, T).await;
    c.assert_running();
    assert_eq!(txs.len(), 4, "BEGIN and END of two transactions");

    // First transaction: BEGIN, s1.a insert, s2.a insert, END.
    let begin = txs[0].payload();
    let end = txs[1].payload();
    let begin_id = begin["id"].as_str().unwrap().to_string();
    let end_id = end["id"].as_str().unwrap().to_string();
    let (xid, begin_lsn) = tx_id_parts(&begin_id);
    let (end_xid, end_lsn) = tx_id_parts(&end_id);
    assert_eq!(xid, end_xid);
    assert_eq!(
        txs[0].key_str(),
        format!(r#"{{"schema":{TX_KEY_SCHEMA},"payload":{{"id":"{begin_id}"}}}}"#)
    );
    assert_eq!(
        txs[1].key_str(),
        format!(r#"{{"schema":{TX_KEY_SCHEMA},"payload":{{"id":"{end_id}"}}}}"#)
    );
    let ts = begin["ts_ms"].as_i64().unwrap();
    assert_eq!(
        String::from_utf8(txs[0].value.clone().unwrap()).unwrap(),
        tx_value(
            json!({"status":"BEGIN","id":begin_id,"event_count":null,"data_collections":null,"ts_ms":ts})
        )
    );
    assert_eq!(
        String::from_utf8(txs[1].value.clone().unwrap()).unwrap(),
        tx_value(
            json!({"status":"END","id":end_id,"event_count":2,"data_collections":[
            {"data_collection":"s1.a","event_count":1},{"data_collection":"s2.a","event_count":1}],"ts_ms":ts})
        )
    );
    assert!(txs[0].headers.is_empty() && txs[1].headers.is_empty());
    // ts_ms is the commit time, as in the events' source block.
    let ins1 = s1[0].payload();
    let ins2 = s2[0].payload();
    assert_eq!(ins1["source"]["ts_ms"].as_i64().unwrap(), ts);
    for (p, total) in [(&ins1, 1), (&ins2, 2)] {
        let lsn = p["source"]["lsn"].as_i64().unwrap();
        assert_eq!(p["source"]["txId"].as_i64().unwrap(), xid);
        // PostgreSQL 15+ sends BEGIN with the first change (empty transactions are skipped),
        // so the BEGIN id may carry that change's LSN.
        assert!(
            begin_lsn <= lsn && lsn < end_lsn,
            "{begin_lsn} {lsn} {end_lsn}"
        );
        assert_eq!(
            p["transaction"],
            json!({"id": format!("{xid}:{lsn}"), "total_order": total, "data_collection_order": 1})
        );
    }
    // The envelope schema's transaction field is the optional event.block struct.
    let schema = s1[0].value_json().unwrap()["schema"]["fields"][3].clone();
    assert_eq!(
        schema,
        json!({"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":false,"field":"total_order"},{"type":"int64","optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block","version":1,"field":"transaction"})
    );

    // Second transaction: pk change (delete + tombstone + create) and delete (+ tombstone):
    // three counted events, tombstones not counted.
    let end2 = txs[3].payload();
    let xid2 = tx_id_parts(txs[2].payload()["id"].as_str().unwrap()).0;
    assert_eq!(
        end2["data_collections"],
        json!([{"data_collection":"s1.a","event_count":3}])
    );
    assert_eq!(end2["event_count"], json!(3));
    let orders: Vec<(String, Option<i64>, Option<i64>)> = s1[1..]
        .iter()
        .map(|r| {
            let p = r.payload();
            (
                p["op"].as_str().unwrap_or("tombstone").to_string(),
                p["transaction"]["total_order"].as_i64(),
                p["transaction"]["data_collection_order"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        orders,
        vec![
            ("d".to_string(), Some(1), Some(1)),
            ("tombstone".to_string(), None, None),
            ("c".to_string(), Some(2), Some(2)),
            ("d".to_string(), Some(3), Some(3)),
            ("tombstone".to_string(), None, None),
        ]
    );
    for r in s1[1..].iter().filter(|r| r.value.is_some()) {
        let p = r.payload();
        let lsn = p["source"]["lsn"].as_i64().unwrap();
        assert_eq!(p["transaction"]["id"], json!(format!("{xid2}:{lsn}")));
    }
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactional_logical_message_counts_in_the_transaction_metadata() {
    // DBZ-T-118.
    let db = TestDb::create("txmsg").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("txmsg");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("provide.transaction.metadata".into(), "true".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("SELECT pg_logical_emit_message(true, 'txn_foo', 'txn_bar')")
        .await;
    db.exec("SELECT pg_logical_emit_message(false, 'plain', 'x')")
        .await;
    let txs = read_n(&env().kafka, &format!("{prefix}.transaction"), 2, T).await;
    let msgs = read_n(&env().kafka, &format!("{prefix}.message"), 2, T).await;
    c.assert_running();
    let begin = txs[0].payload();
    assert_eq!(begin["status"], json!("BEGIN"));
    let (xid, _) = tx_id_parts(begin["id"].as_str().unwrap());
    let m = msgs[0].payload();
    let lsn = m["source"]["lsn"].as_i64().unwrap();
    assert_eq!(
        m["transaction"],
        json!({"id": format!("{xid}:{lsn}"), "total_order": 1, "data_collection_order": 1})
    );
    assert_eq!(
        m["message"],
        json!({"prefix":"txn_foo","content":"dHhuX2Jhcg=="})
    );
    let end = txs[1].payload();
    assert_eq!(end["status"], json!("END"));
    assert_eq!(end["event_count"], json!(1));
    assert_eq!(
        end["data_collections"],
        json!([{"data_collection":"LOGICAL_DECODING_MESSAGE","event_count":1}])
    );
    // A non-transactional message is outside any transaction.
    assert_eq!(msgs[1].payload()["transaction"], json!(null));
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_metadata_is_off_by_default() {
    let db = TestDb::create("txoff").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("txoff");
    let raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1)").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.t"), 1, T).await;
    assert_eq!(recs[0].payload()["transaction"], json!(null));
    c.stop().await.unwrap();
    let consumer_topics = list_topics(&env().kafka);
    assert!(
        !consumer_topics.contains(&format!("{prefix}.transaction")),
        "no transaction topic without provide.transaction.metadata"
    );
    db.cleanup().await;
}

const HB_KEY_SCHEMA: &str = r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1}"#;
const HB_VALUE_SCHEMA: &str = r#"{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_follow_the_interval_and_run_the_action_query() {
    // DBZ-T-124 and DBZ-T-125: a heartbeat right after the snapshot, then every interval,
    // each running heartbeat.action.query.
    let db = TestDb::create("hb").await;
    db.exec(
        "CREATE TABLE test_table (id SERIAL, text TEXT);
         INSERT INTO test_table (text) VALUES ('mydata');
         CREATE TABLE test_heartbeat_table (text TEXT);",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hb");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("heartbeat.interval.ms".into(), "100".into());
    raw.insert(
        "heartbeat.action.query".into(),
        "INSERT INTO test_heartbeat_table (text) VALUES ('test_heartbeat');".into(),
    );
    raw.insert("table.include.list".into(), "public.test_table".into());
    let started = Instant::now();
    let c = start(&raw);
    let snap = read_n(&env().kafka, &format!("{prefix}.public.test_table"), 1, T).await;
    assert_eq!(snap[0].payload()["op"], json!("r"));
    assert_eq!(snap[0].key, None, "no primary key: null key");
    wait_for("the action query to run on heartbeats", T, || async {
        let n: i64 = db
            .client
            .query_one("SELECT count(*) FROM test_heartbeat_table", &[])
            .await
            .unwrap()
            .get(0);
        (n >= 3).then_some(())
    })
    .await;
    let topic = format!("__debezium-heartbeat.{prefix}");
    let hbs = read_n(&env().kafka, &topic, 3, T).await;
    c.assert_running();
    let elapsed = started.elapsed().as_millis() as i64;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for h in &hbs {
        assert_eq!(h.partition, 0);
        assert_eq!(
            h.key_str(),
            format!(r#"{{"schema":{HB_KEY_SCHEMA},"payload":{{"serverName":"{prefix}"}}}}"#)
        );
        let ts = h.payload()["ts_ms"].as_i64().unwrap();
        assert!(
            ts <= now_ms && ts >= now_ms - elapsed - 1000,
            "ts_ms is wall-clock time"
        );
        assert_eq!(
            String::from_utf8(h.value.clone().unwrap()).unwrap(),
            format!(r#"{{"schema":{HB_VALUE_SCHEMA},"payload":{{"ts_ms":{ts}}}}}"#)
        );
        assert!(h.headers.is_empty());
    }
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_follows_the_snapshot_at_once_and_honours_the_topic_settings() {
    let db = TestDb::create("hbsnap").await;
    db.exec("CREATE TABLE t1 (pk SERIAL, aa integer, PRIMARY KEY(pk)); INSERT INTO t1 VALUES (default, 11)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hbsnap");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("heartbeat.interval.ms".into(), "300000".into());
    raw.insert("topic.heartbeat.prefix".into(), format!("hbp_{prefix}"));
    raw.insert("topic.delimiter".into(), "_".into());
    let c = start(&raw);
    let snap = read_n(&env().kafka, &format!("{prefix}_public_t1"), 1, T).await;
    assert_eq!(snap[0].payload()["source"]["snapshot"], json!("last"));
    let hb = read_n(&env().kafka, &format!("hbp_{prefix}_{prefix}"), 1, T).await;
    assert_eq!(hb[0].partition, 0);
    assert_eq!(
        hb[0].key_json().unwrap()["payload"],
        json!({"serverName": prefix})
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_move_the_stored_offset_of_an_idle_slot() {
    let db = TestDb::create("hbidle").await;
    db.exec("CREATE TABLE public.captured (id int PRIMARY KEY); CREATE TABLE public.busy (id bigserial PRIMARY KEY, pad text)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hbidle");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("publication.autocreate.mode".into(), "filtered".into());
    raw.insert("publication.name".into(), prefix.clone());
    raw.insert("table.include.list".into(), "public.captured".into());
    raw.insert("heartbeat.interval.ms".into(), "200".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO busy (pad) SELECT repeat('x', 100) FROM generate_series(1, 2000)")
        .await;
    let after_busy = db.current_lsn().await;
    let offsets = dir.path().join("offsets.json");
    wait_for("the stored offset to pass the busy writes", T, || async {
        let text = std::fs::read_to_string(&offsets).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let lsn = find_key(&v, "lsn")?.as_u64()?;
        (lsn >= after_busy).then_some(())
    })
    .await;
    assert!(db.confirmed_flush(&prefix).await >= after_busy);
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_never_confirm_records_kafka_has_not_acknowledged() {
    let _lock = fault_broker_lock().await;
    let db = TestDb::create("hbgate").await;
    db.exec("CREATE TABLE public.g (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hbgate");
    let mut raw = base_config(&db, &prefix, &env().kafka_fault, dir.path());
    raw.insert("heartbeat.interval.ms".into(), "300".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO g VALUES (1)").await;
    let topic = format!("{prefix}.public.g");
    read_n(&env().kafka_fault, &topic, 1, T).await;
    let hb_topic = format!("__debezium-heartbeat.{prefix}");
    read_n(&env().kafka_fault, &hb_topic, 1, T).await;

    let paused = PausedBroker::pause();
    db.exec("INSERT INTO g SELECT generate_series(2, 50)").await;
    let committed = db.current_lsn().await;
    // Heartbeats keep being produced (every 300 ms) while the rows wait: none may confirm them.
    let (_, mut last_reply) = db.walsender(&prefix).await.expect("walsender");
    let mut replies = 0;
    let deadline = Instant::now() + T;
    while replies < 5 {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for status updates"
        );
        let (_, reply) = db.walsender(&prefix).await.expect("walsender");
        let flushed = db.confirmed_flush(&prefix).await;
        assert!(
            flushed < committed,
            "confirmed_flush_lsn {flushed} passed unacknowledged rows (commit at {committed})"
        );
        if reply > last_reply {
            replies += 1;
            last_reply = reply;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.assert_running();
    drop(paused);
    let recs = read_n(&env().kafka_fault, &topic, 50, T).await;
    let ids: HashSet<i64> = recs
        .iter()
        .map(|r| r.payload()["after"]["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 50);
    wait_for("the slot moves past the rows", T, || async {
        (db.confirmed_flush(&prefix).await >= committed).then_some(())
    })
    .await;
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// The first value under `key` anywhere in `v`.
fn find_key<'a>(v: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m
            .get(key)
            .or_else(|| m.values().find_map(|x| find_key(x, key))),
        serde_json::Value::Array(a) => a.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

/// Topic names on `brokers`.
fn list_topics(brokers: &str) -> Vec<String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("consumer");
    let md = consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("metadata");
    md.topics().iter().map(|t| t.name().to_string()).collect()
}
