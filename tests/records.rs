//! Record-level features: transaction metadata, heartbeats, message keys, column filters,
//! masks and truncation, and source type propagation, each checked against Debezium's JSON.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

const T: Duration = Duration::from_secs(90);

const TX_KEY_SCHEMA: &str = concat!(
    r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"}],"#,
    r#""optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey","#,
    r#""version":1}"#,
);
const TX_VALUE_SCHEMA: &str = concat!(
    r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"status"},"#,
    r#"{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":true,"#,
    r#""field":"event_count"},{"type":"array","items":{"type":"struct","#,
    r#""fields":[{"type":"string","optional":false,"field":"data_collection"},{"type":"int64","#,
    r#""optional":false,"field":"event_count"}],"optional":true,"name":"event.collection","#,
    r#""version":1},"optional":true,"field":"data_collections"},{"type":"int64","#,
    r#""optional":false,"field":"ts_ms"}],"optional":false,"#,
    r#""name":"io.debezium.connector.common.TransactionMetadataValue","version":1}"#,
);

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
        json!({
            "type":"struct","fields":[{"type":"string","optional":false,"field":"id"},
            {"type":"int64","optional":false,"field":"total_order"},{"type":"int64",
            "optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block",
            "version":1,"field":"transaction"})
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

const HB_KEY_SCHEMA: &str = concat!(
    r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"#,
    r#""optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1}"#,
);
const HB_VALUE_SCHEMA: &str = concat!(
    r#"{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"#,
    r#""optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1}"#,
);

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

/// Heartbeats between transactions confirm an idle slot's position, but never write it to the
/// offsets: a position reached while idle can lie inside a transaction still open on the
/// server, and Debezium, resuming from such offsets after a switch back, would skip that
/// transaction's earlier changes. The stored offset stays at the last transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_confirm_an_idle_slot_without_writing_idle_positions_to_the_offsets() {
    let db = TestDb::create("hbidle").await;
    db.exec(
        "CREATE TABLE public.captured (id int PRIMARY KEY); CREATE TABLE public.busy (id bigserial PRIMARY KEY, pad text)",
    ).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hbidle");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("publication.autocreate.mode".into(), "filtered".into());
    raw.insert("publication.name".into(), prefix.clone());
    raw.insert("table.include.list".into(), "public.captured".into());
    raw.insert("heartbeat.interval.ms".into(), "200".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    // Other tests write WAL on the same server, so the insert's own position is only known to
    // lie after this one (the position after it may already include their writes).
    let before_insert = db.current_lsn().await;
    db.exec("INSERT INTO captured VALUES (1)").await;
    let offsets = dir.path().join("offsets.json");
    let stored = || {
        let text = std::fs::read_to_string(&offsets).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        find_key(&v, "lsn")?.as_u64()
    };
    wait_for("the insert's offsets to be stored", T, || async {
        stored().filter(|l| *l > before_insert).map(|_| ())
    })
    .await;
    let at_insert = stored().unwrap();
    db.exec("INSERT INTO busy (pad) SELECT repeat('x', 100) FROM generate_series(1, 2000)")
        .await;
    let after_busy = db.current_lsn().await;
    read_n(
        &env().kafka,
        &format!("__debezium-heartbeat.{prefix}"),
        3,
        T,
    )
    .await;
    wait_for(
        "the slot to be confirmed past the busy writes",
        T,
        || async { (db.confirmed_flush(&prefix).await >= after_busy).then_some(()) },
    )
    .await;
    c.stop().await.unwrap();
    assert_eq!(
        stored(),
        Some(at_insert),
        "the offsets stay at the last transaction"
    );
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

const S1S2_SETUP: &str = "CREATE SCHEMA s1; CREATE SCHEMA s2;
    CREATE TABLE s1.a (pk SERIAL, aa integer, PRIMARY KEY(pk));
    CREATE TABLE s2.a (pk SERIAL, aa integer, bb varchar(20), PRIMARY KEY(pk));
    INSERT INTO s1.a (aa) VALUES (1); INSERT INTO s2.a (aa) VALUES (1);";

/// The schema of the value field `field` of a schemas-enabled envelope, as compact JSON.
fn field_schema(rec: &Rec, field: &str) -> String {
    let v = rec.value_json().unwrap();
    let fields = v["schema"]["fields"][1]["fields"]
        .as_array()
        .unwrap()
        .clone();
    let f = fields
        .iter()
        .find(|f| f["field"] == json!(field))
        .unwrap_or_else(|| panic!("no field {field} in {fields:?}"));
    serde_json::to_string(f).unwrap()
}

/// The field names of the value's row schema.
fn row_fields(rec: &Rec) -> Vec<String> {
    let v = rec.value_json().unwrap();
    v["schema"]["fields"][1]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_key_columns_replace_or_create_the_key() {
    // DBZ-T-107, plus a table without a primary key given one, and streamed rows.
    let db = TestDb::create("msgkey").await;
    db.exec(S1S2_SETUP).await;
    db.exec(
        "CREATE TABLE s1.nokey (code text NOT NULL, v int); ALTER TABLE s1.nokey REPLICA IDENTITY FULL; INSERT INTO s1.nokey VALUES ('x', 1)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("msgkey");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("schema.include.list".into(), "s1,s2".into());
    raw.insert(
        "message.key.columns".into(),
        "(.*)1.a:pk,aa; s1.nokey:code".into(),
    );
    let c = start(&raw);
    let s1 = read_n(&env().kafka, &format!("{prefix}.s1.a"), 1, T).await;
    let s2 = read_n(&env().kafka, &format!("{prefix}.s2.a"), 1, T).await;
    let nk = read_n(&env().kafka, &format!("{prefix}.s1.nokey"), 1, T).await;
    assert_eq!(
        s1[0].key_str(),
        format!(
            r#"{{"schema":{{"type":"struct","fields":[{{"type":"int32","optional":false,"default":0,"field":"pk"}},{{"type":"int32","optional":true,"field":"aa"}}],"optional":false,"name":"{prefix}.s1.a.Key"}},"payload":{{"pk":1,"aa":1}}}}"#
        )
    );
    assert_eq!(
        s2[0].key_str(),
        format!(
            r#"{{"schema":{{"type":"struct","fields":[{{"type":"int32","optional":false,"default":0,"field":"pk"}}],"optional":false,"name":"{prefix}.s2.a.Key"}},"payload":{{"pk":1}}}}"#
        )
    );
    assert_eq!(nk[0].key_json().unwrap()["payload"], json!({"code": "x"}));
    // Streamed changes use the same key, the value keeps every column.
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO s1.a (aa) VALUES (7); DELETE FROM s1.nokey")
        .await;
    let s1 = read_n(&env().kafka, &format!("{prefix}.s1.a"), 2, T).await;
    assert_eq!(
        s1[1].key_json().unwrap()["payload"],
        json!({"pk": 2, "aa": 7})
    );
    assert_eq!(s1[1].payload()["after"], json!({"pk": 2, "aa": 7}));
    let nk = read_n(&env().kafka, &format!("{prefix}.s1.nokey"), 3, T).await;
    assert_eq!(nk[1].key_json().unwrap()["payload"], json!({"code": "x"}));
    assert_eq!(nk[1].payload()["op"], json!("d"));
    assert_eq!(nk[2].value, None, "tombstone with the custom key");
    assert_eq!(nk[2].key_json().unwrap()["payload"], json!({"code": "x"}));
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masked_columns_carry_the_mask_in_every_image() {
    // DBZ-T-136.
    let db = TestDb::create("mask").await;
    db.exec(S1S2_SETUP).await;
    db.exec("ALTER TABLE s2.a REPLICA IDENTITY FULL").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("mask");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("column.mask.with.5.chars".into(), "s2.a.bb".into());
    let c = start(&raw);
    let topic = format!("{prefix}.s2.a");
    read_n(&env().kafka, &topic, 1, T).await;
    db.wait_for_slot(&prefix).await;
    db.exec(
        "INSERT INTO s2.a (aa,bb) VALUES (1, 'test'); UPDATE s2.a SET aa=2, bb='hello' WHERE pk=2;",
    )
    .await;
    let recs = read_n(&env().kafka, &topic, 3, T).await;
    c.assert_running();
    let afters: Vec<serde_json::Value> =
        recs.iter().map(|r| r.payload()["after"].clone()).collect();
    assert_eq!(
        afters,
        vec![
            json!({"pk":1,"aa":1,"bb":"*****"}),
            json!({"pk":2,"aa":1,"bb":"*****"}),
            json!({"pk":2,"aa":2,"bb":"*****"}),
        ]
    );
    assert_eq!(
        recs[2].payload()["before"],
        json!({"pk":2,"aa":1,"bb":"*****"})
    );
    assert_eq!(
        field_schema(&recs[0], "bb"),
        r#"{"type":"string","optional":true,"parameters":{"masked":"true"},"field":"bb"}"#
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashed_columns_match_debeziums_digest() {
    // DBZ-T-137.
    let db = TestDb::create("hash").await;
    db.exec(S1S2_SETUP).await;
    db.exec("CREATE TABLE s2.b (pk SERIAL, bb varchar(255), PRIMARY KEY(pk));")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hash");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert(
        "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K".into(),
        "s2.a.bb, s2.b.bb".into(),
    );
    let c = start(&raw);
    let topic = format!("{prefix}.s2.a");
    read_n(&env().kafka, &topic, 1, T).await;
    db.wait_for_slot(&prefix).await;
    db.exec(
        "INSERT INTO s2.a (aa,bb) VALUES (1, 'test'); UPDATE s2.a SET aa=2, bb='hello' WHERE pk=2; INSERT INTO s2.b (bb) VALUES ('hello');")
        .await;
    let recs = read_n(&env().kafka, &topic, 3, T).await;
    let b = read_n(&env().kafka, &format!("{prefix}.s2.b"), 1, T).await;
    c.assert_running();
    let bbs: Vec<serde_json::Value> = recs
        .iter()
        .map(|r| r.payload()["after"]["bb"].clone())
        .collect();
    assert_eq!(
        bbs,
        vec![
            json!(null),
            json!("8e68c68edbbac316dfe2"),
            json!("b4d39ab0d198fb4cac8b")
        ]
    );
    assert_eq!(
        b[0].payload()["after"],
        json!({"pk":1,"bb":"b4d39ab0d198fb4cac8b2f023da74f670bcaf192dcc79b5d6361b7ae6b2fafdf"})
    );
    assert_eq!(b[0].payload()["before"], json!(null));
    assert_eq!(
        field_schema(&b[0], "bb"),
        r#"{"type":"string","optional":true,"parameters":{"masked":"true"},"field":"bb"}"#
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_column_include_list_shapes_the_value_but_not_the_key() {
    // DBZ-T-139.
    let db = TestDb::create("colinc").await;
    db.exec(S1S2_SETUP).await;
    db.exec(
        "ALTER TABLE s1.a ADD COLUMN bb integer; ALTER TABLE s1.a ADD COLUMN cc char(12); INSERT INTO s1.a (aa, bb) VALUES (2, 2);")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("colinc");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("column.mask.with.5.chars".into(), ".+cc".into());
    raw.insert("column.include.list".into(), ".+aa,.+cc".into());
    let c = start(&raw);
    let topic = format!("{prefix}.s1.a");
    let recs = read_n(&env().kafka, &topic, 2, T).await;
    assert_eq!(row_fields(&recs[0]), ["aa", "cc"]);
    assert_eq!(recs[0].payload()["after"], json!({"aa":1,"cc":"*****"}));
    assert_eq!(recs[1].payload()["after"], json!({"aa":2,"cc":"*****"}));
    assert_eq!(recs[1].key_json().unwrap()["payload"], json!({"pk": 2}));
    // Streaming: the same shape; an excluded column's change still produces an event.
    db.wait_for_slot(&prefix).await;
    db.exec("UPDATE s1.a SET bb = 3 WHERE pk = 2").await;
    let recs = read_n(&env().kafka, &topic, 3, T).await;
    assert_eq!(recs[2].payload()["after"], json!({"aa":2,"cc":"*****"}));
    assert_eq!(recs[2].payload()["op"], json!("u"));
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn excluded_columns_and_truncation() {
    let db = TestDb::create("colexc").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY, secret text, note text, code varchar(2), n int, b bytea)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("colexc");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("column.exclude.list".into(), "public.t.secret".into());
    raw.insert(
        "column.truncate.to.3.chars".into(),
        "public.t.note,public.t.code,public.t.n,public.t.b".into(),
    );
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1, 'hide me', 'žšabcdef', 'ab', 123456, '\\x0102030405')")
        .await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.t"), 1, T).await;
    assert_eq!(row_fields(&recs[0]), ["id", "note", "code", "n", "b"]);
    assert_eq!(
        recs[0].payload()["after"],
        json!({"id":1,"note":"žša","code":"ab","n":123456,"b":"AQID"})
    );
    // As Debezium: the parameter wherever the column may be longer than the cut (text, int4
    // with length 10, bytea), not on varchar(2).
    assert_eq!(
        field_schema(&recs[0], "note"),
        r#"{"type":"string","optional":true,"parameters":{"truncateLength":"3"},"field":"note"}"#
    );
    assert_eq!(
        field_schema(&recs[0], "code"),
        r#"{"type":"string","optional":true,"field":"code"}"#
    );
    assert_eq!(
        field_schema(&recs[0], "n"),
        r#"{"type":"int32","optional":true,"parameters":{"truncateLength":"3"},"field":"n"}"#
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_excluded_column_of_an_unsupported_type_does_not_stop_the_table() {
    let db = TestDb::create("colexctype").await;
    db.exec("CREATE TABLE public.docs (id int PRIMARY KEY, body text, tsv tsquery)")
        .await;
    db.exec("INSERT INTO docs VALUES (1, 'snap', 'snapshot & row')")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("colexctype");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("column.exclude.list".into(), "public.docs.tsv".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO docs VALUES (2, 'stream', 'streamed & row')")
        .await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.docs"), 2, T).await;
    for (r, (id, body, op)) in recs.iter().zip([(1, "snap", "r"), (2, "stream", "c")]) {
        assert_eq!(row_fields(r), ["id", "body"]);
        assert_eq!(r.payload()["after"], json!({"id": id, "body": body}));
        assert_eq!(r.payload()["op"], json!(op));
    }
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_type_stops_the_snapshot_naming_the_fix_and_leaves_no_slot_behind() {
    let db = TestDb::create("unsuptype").await;
    db.exec("CREATE TABLE public.docs (id int PRIMARY KEY, tsv tsquery)")
        .await;
    db.exec("INSERT INTO docs VALUES (1, 'a & row')").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("unsuptype");
    let raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let c = start(&raw);
    let err = c.expect_error(T).await;
    let msg = err.one_line();
    assert!(
        msg.contains("column tsv has type tsquery")
            && msg.contains("include.unknown.datatypes=true")
            && msg.contains("column.exclude.list"),
        "{msg}"
    );
    assert!(!err.is_retriable(), "{msg}");
    // The slot created for the snapshot would only retain WAL: it is gone.
    assert_eq!(
        db.confirmed_flush(&prefix).await,
        0,
        "slot {prefix} left behind"
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_column_types_propagate_by_column_name() {
    // DBZ-T-23 (without the citext column, which the case does not check).
    let db = TestDb::create("propcol").await;
    db.exec(
        "CREATE TABLE string_table (pk SERIAL, vc VARCHAR(2), vcv CHARACTER VARYING(2), ch CHARACTER(4), c CHAR(3), t TEXT, b BYTEA, bnn BYTEA NOT NULL, PRIMARY KEY(pk))")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("propcol");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("column.propagate.source.type".into(), ".*vc.*".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec(
        "INSERT INTO string_table (vc, vcv, ch, c, t, b, bnn) VALUES ('žš', 'bb', 'cdef', 'abc', 'some text', E'\\\\000\\\\001\\\\002'::bytea, E'\\\\003\\\\004\\\\005'::bytea)")
        .await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.string_table"), 1, T).await;
    assert_eq!(recs[0].payload()["after"]["vc"], json!("žš"));
    for f in ["vc", "vcv"] {
        assert_eq!(
            field_schema(&recs[0], f),
            format!(
                r#"{{"type":"string","optional":true,"parameters":{{"__debezium.source.column.type":"VARCHAR","__debezium.source.column.length":"2","__debezium.source.column.scale":"0","__debezium.source.column.name":"{f}"}},"field":"{f}"}}"#
            )
        );
    }
    assert_eq!(
        field_schema(&recs[0], "ch"),
        r#"{"type":"string","optional":true,"field":"ch"}"#
    );
    // The key schema never carries mapper parameters.
    assert_eq!(
        recs[0].key_json().unwrap()["schema"]["fields"][0],
        json!({"type":"int32","optional":false,"default":0,"field":"pk"})
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_column_types_propagate_by_data_type() {
    // DBZ-T-25.
    let db = TestDb::create("propdt").await;
    db.exec(
        "CREATE TABLE test_table (id SERIAL, c1 INT, c2 INT, c3a NUMERIC(5,2), c3b VARCHAR(128), f1 float(10), f2 decimal(8,4), primary key (id))")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("propdt");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert(
        "datatype.propagate.source.type".into(),
        r".+\.NUMERIC,.+\.VARCHAR,.+\.FLOAT4".into(),
    );
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO test_table (id,c1,c2,c3a,c3b,f1,f2) values (1, 123, 456, 789.01, 'test', 1.228, 234.56);")
        .await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.test_table"), 1, T).await;
    let r = &recs[0];
    assert_eq!(
        field_schema(r, "id"),
        r#"{"type":"int32","optional":false,"default":0,"field":"id"}"#
    );
    assert_eq!(
        field_schema(r, "c1"),
        r#"{"type":"int32","optional":true,"field":"c1"}"#
    );
    assert_eq!(
        field_schema(r, "c3a"),
        concat!(
            r#"{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","#,
            r#""version":1,"parameters":{"scale":"2","connect.decimal.precision":"5","#,
            r#""__debezium.source.column.type":"NUMERIC","__debezium.source.column.length":"5","#,
            r#""__debezium.source.column.scale":"2","__debezium.source.column.name":"c3a"},"#,
            r#""field":"c3a"}"#,
        )
    );
    assert_eq!(
        field_schema(r, "c3b"),
        concat!(
            r#"{"type":"string","optional":true,"#,
            r#""parameters":{"__debezium.source.column.type":"VARCHAR","#,
            r#""__debezium.source.column.length":"128","__debezium.source.column.scale":"0","#,
            r#""__debezium.source.column.name":"c3b"},"field":"c3b"}"#,
        )
    );
    assert_eq!(
        field_schema(r, "f1"),
        concat!(
            r#"{"type":"float","optional":true,"parameters":{"__debezium.source.column.type":"FLOAT4","#,
            r#""__debezium.source.column.length":"8","__debezium.source.column.scale":"8","#,
            r#""__debezium.source.column.name":"f1"},"field":"f1"}"#,
        )
    );
    assert_eq!(
        field_schema(r, "f2"),
        concat!(
            r#"{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","#,
            r#""version":1,"parameters":{"scale":"4","connect.decimal.precision":"8","#,
            r#""__debezium.source.column.type":"NUMERIC","__debezium.source.column.length":"8","#,
            r#""__debezium.source.column.scale":"4","__debezium.source.column.name":"f2"},"field":"f2"}"#,
        )
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_heartbeat_action_query_follows_debeziums_sqlstate_policy() {
    // 42P01 (undefined table) stops the connector; other errors (here 22012, division by
    // zero) are logged and streaming goes on.
    let db = TestDb::create("hbfail").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hbfail");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("heartbeat.interval.ms".into(), "100".into());
    raw.insert("heartbeat.action.query".into(), "SELECT 1/0".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    read_n(
        &env().kafka,
        &format!("__debezium-heartbeat.{prefix}"),
        2,
        T,
    )
    .await;
    db.exec("INSERT INTO t VALUES (1)").await;
    read_n(&env().kafka, &format!("{prefix}.public.t"), 1, T).await;
    c.assert_running();
    c.stop().await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hbfail");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("heartbeat.interval.ms".into(), "100".into());
    raw.insert(
        "heartbeat.action.query".into(),
        "INSERT INTO no_such_table VALUES (1)".into(),
    );
    raw.insert("snapshot.mode".into(), "no_data".into());
    let c = start(&raw);
    // An undefined table in the action query is fatal.
    let err = c.expect_error(T).await;
    assert!(
        err.message().contains("heartbeat.action.query failed") && err.message().contains("42P01"),
        "{}",
        err.message()
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propagated_types_of_domains_enums_and_enum_arrays() {
    // DBZ-T-73/74/76 (enum, enum array) and DBZ-T-80/82 (domain, domain of a domain).
    let db = TestDb::create("propdom").await;
    db.exec(
        "CREATE DOMAIN numeric82 AS numeric(8,2); CREATE DOMAIN numericex AS numeric82;
         CREATE TYPE test_type AS ENUM ('V1','V2');
         CREATE TABLE alias_table (pk SERIAL, value numericex, mood test_type NOT NULL, moods test_type[] NOT NULL, PRIMARY KEY (pk));",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("propdom");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("decimal.handling.mode".into(), "double".into());
    raw.insert(
        "column.propagate.source.type".into(),
        "public.alias_table.value,public.alias_table.mood.*".into(),
    );
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO alias_table (value, mood, moods) VALUES (123.45, 'V2', '{V1,V2}')")
        .await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.alias_table"), 1, T).await;
    let r = &recs[0];
    assert_eq!(
        r.payload()["after"],
        json!({"pk":1,"value":123.45,"mood":"V2","moods":["V1","V2"]})
    );
    assert_eq!(
        field_schema(r, "value"),
        concat!(
            r#"{"type":"double","optional":true,"#,
            r#""parameters":{"__debezium.source.column.type":"NUMERICEX","#,
            r#""__debezium.source.column.length":"8","__debezium.source.column.scale":"2","#,
            r#""__debezium.source.column.name":"value"},"field":"value"}"#,
        )
    );
    let tail = |field: &str| -> Vec<(String, String)> {
        let f: serde_json::Value = serde_json::from_str(&field_schema(r, field)).unwrap();
        let params = f["parameters"].as_object().unwrap();
        let all: Vec<(String, String)> = params
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        // The type's own parameters (an enum's `allowed`) come first.
        if field == "mood" {
            assert_eq!(all[0], ("allowed".to_string(), "V1,V2".to_string()));
        }
        all[all.len() - 4..].to_vec()
    };
    let expect = |ty: &str, name: &str| -> Vec<(String, String)> {
        [
            ("__debezium.source.column.type", ty),
            ("__debezium.source.column.length", "2147483647"),
            ("__debezium.source.column.scale", "0"),
            ("__debezium.source.column.name", name),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    };
    assert_eq!(tail("mood"), expect("TEST_TYPE", "mood"));
    assert_eq!(tail("moods"), expect("_TEST_TYPE", "moods"));
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// `skip.messages.without.change`: with REPLICA IDENTITY FULL, an update whose captured
/// columns are all unchanged (only an excluded column changed, or nothing at all) is dropped;
/// one that changes a captured column is a `u` record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_without_a_change_in_the_captured_columns_are_skipped_when_asked() {
    let db = TestDb::create("skipnochange").await;
    db.exec(
        "CREATE TABLE public.t (id int PRIMARY KEY, v text, touched timestamptz);
         ALTER TABLE public.t REPLICA IDENTITY FULL",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("skipnochange");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("skip.messages.without.change".into(), "true".into());
    raw.insert("column.exclude.list".into(), "public.t.touched".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1, 'a', now())").await;
    db.exec("UPDATE t SET touched = now() + interval '1 hour' WHERE id = 1")
        .await;
    db.exec("UPDATE t SET v = v WHERE id = 1").await;
    db.exec("UPDATE t SET v = 'b' WHERE id = 1").await;
    db.exec("INSERT INTO t VALUES (2, 'marker', now())").await;
    let recs = read_until(&env().kafka, &format!("{prefix}.public.t"), T, |r| {
        r.iter().any(|r| r.payload()["after"]["id"] == 2)
    })
    .await;
    let seen: Vec<(Value, Value)> = recs
        .iter()
        .map(|r| (r.payload()["op"].clone(), r.payload()["after"]["v"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (json!("c"), json!("a")),
            (json!("u"), json!("b")),
            (json!("c"), json!("marker"))
        ]
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// `slot.stream.params` reaches `START_REPLICATION`: `origin=none` (PostgreSQL 16+) keeps
/// streaming; a server that does not know the option refuses it, and the error names the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_stream_params_reach_pgoutput() {
    let db = TestDb::create("streamparams").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY)").await;
    let version: i32 = db
        .client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await
        .unwrap()
        .get(0);
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("streamparams");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("slot.stream.params".into(), "origin=none".into());
    let c = start(&raw);
    if version >= 160000 {
        db.wait_for_slot(&prefix).await;
        db.exec("INSERT INTO t VALUES (1)").await;
        read_n(&env().kafka, &format!("{prefix}.public.t"), 1, T).await;
        c.stop().await.unwrap();
    } else {
        let err = c.expect_error(T).await;
        let msg = err.one_line();
        assert!(
            msg.contains("slot.stream.params passes origin") && msg.contains("origin"),
            "{msg}"
        );
        assert!(!err.is_retriable(), "{msg}");
    }
    db.cleanup().await;
}

/// `guardrail.collections.max`: with `fail`, a start capturing more tables than the limit stops
/// with a config error naming both numbers; with `warn` (the default) it streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_collections_guardrail_fails_or_warns_above_its_limit() {
    let db = TestDb::create("guardrail").await;
    db.exec(
        "CREATE TABLE public.a (id int PRIMARY KEY); CREATE TABLE public.b (id int PRIMARY KEY)",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("guardrail");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("guardrail.collections.max".into(), "1".into());
    raw.insert("guardrail.collections.limit.action".into(), "fail".into());
    let err = start(&raw).expect_error(T).await;
    assert_eq!(
        err.kind(),
        pgcdc::error::ErrorKind::Config,
        "{}",
        err.one_line()
    );
    assert!(
        err.message()
            .contains("2 tables are captured, but guardrail.collections.max is 1"),
        "{}",
        err.one_line()
    );
    raw.insert("guardrail.collections.limit.action".into(), "warn".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO a VALUES (1)").await;
    read_n(&env().kafka, &format!("{prefix}.public.a"), 1, T).await;
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// `post.processors` with Debezium's ReselectColumnsPostProcessor: an update that leaves a
/// TOASTed column unchanged gets its real value read again by the row's key (text and binary
/// tuples); a column the include list leaves out keeps the placeholder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reselect_post_processor_fills_unchanged_toasted_values() {
    let db = TestDb::create("reselect").await;
    db.exec(
        "CREATE TABLE public.t (id int PRIMARY KEY, small text, big text, other text);
         ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL;
         ALTER TABLE t ALTER COLUMN other SET STORAGE EXTERNAL",
    )
    .await;
    for binary in ["false", "true"] {
        let dir = tempfile::tempdir().unwrap();
        let prefix = unique("reselect");
        let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
        raw.insert("pgcdc.pgoutput.binary".into(), binary.into());
        raw.insert("snapshot.mode".into(), "no_data".into());
        raw.insert("post.processors".into(), "reselector".into());
        raw.insert(
            "post.processors.reselector.type".into(),
            "io.debezium.processors.reselect.ReselectColumnsPostProcessor".into(),
        );
        raw.insert(
            "post.processors.reselector.reselect.columns.include.list".into(),
            "public.t:big".into(),
        );
        let c = start(&raw);
        db.wait_for_slot(&prefix).await;
        db.exec(
            "DELETE FROM t; INSERT INTO t VALUES (1, 'a', repeat('x', 10000), repeat('y', 10000))",
        )
        .await;
        db.exec("UPDATE t SET small = 'b' WHERE id = 1").await;
        let recs = read_until(&env().kafka, &format!("{prefix}.public.t"), T, |r| {
            r.iter().any(|r| r.payload()["op"] == "u")
        })
        .await;
        let u = recs
            .iter()
            .find(|r| r.payload()["op"] == "u")
            .unwrap()
            .payload();
        assert_eq!(u["after"]["small"], "b", "binary={binary}");
        assert_eq!(
            u["after"]["big"].as_str().map(str::len),
            Some(10000),
            "binary={binary}: re-selected"
        );
        assert_eq!(
            u["after"]["other"], "__debezium_unavailable_value",
            "binary={binary}: not in the include list"
        );
        c.stop().await.unwrap();
    }
    db.cleanup().await;
}

/// `lsn.flush.mode=manual`: status updates keep flowing (the server sees the written position
/// move) but the slot's confirmed position never moves: something else advances it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_lsn_flush_mode_never_confirms_a_position() {
    let db = TestDb::create("lsnmanual").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("lsnmanual");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("lsn.flush.mode".into(), "manual".into());
    raw.insert("snapshot.mode".into(), "no_data".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    let start_lsn = confirmed_flush_lsn(&db, &prefix).await;
    db.exec("INSERT INTO t SELECT generate_series(1, 50)").await;
    let after_insert: String = db
        .client
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .await
        .unwrap()
        .get(0);
    read_n(&env().kafka, &format!("{prefix}.public.t"), 50, T).await;
    // The written position reaches past the insert: status updates flow.
    let deadline = Instant::now() + T;
    loop {
        let written: Option<bool> = db
            .client
            .query_one(
                "SELECT bool_or(s.write_lsn >= $2::text::pg_lsn) FROM pg_stat_replication s \
                 JOIN pg_replication_slots r ON r.active_pid = s.pid WHERE r.slot_name = $1",
                &[&prefix, &after_insert],
            )
            .await
            .unwrap()
            .get(0);
        if written == Some(true) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no status update reported the write position"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        confirmed_flush_lsn(&db, &prefix).await,
        start_lsn,
        "the slot did not move"
    );
    c.stop().await.unwrap();
    assert_eq!(
        confirmed_flush_lsn(&db, &prefix).await,
        start_lsn,
        "not even at the final status update"
    );
    db.cleanup().await;
}

/// `event.processing.failure.handling.mode=warn`: a change whose row cannot be converted (a
/// two-dimensional array, which stops the connector by default) is skipped with a warning,
/// and the changes after it arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processing_failure_mode_warn_skips_a_change_that_cannot_be_converted() {
    let db = TestDb::create("procfail").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY, a int[])")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("procfail");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert(
        "event.processing.failure.handling.mode".into(),
        "warn".into(),
    );
    raw.insert("snapshot.mode".into(), "no_data".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1, '{{1,2},{3,4}}')").await;
    db.exec("INSERT INTO t VALUES (2, '{5,6}')").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.t"), 1, T).await;
    assert_eq!(recs[0].payload()["after"], json!({"id": 2, "a": [5, 6]}));
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// The slot's `confirmed_flush_lsn`, as text.
async fn confirmed_flush_lsn(db: &TestDb, slot: &str) -> String {
    db.client
        .query_one(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1",
            &[&slot],
        )
        .await
        .unwrap()
        .get(0)
}

/// `xmin.fetch.interval.ms`: streamed events carry the slot's `catalog_xmin` in
/// `source.xmin`, snapshot records do not, and with the default (0) it stays null.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xmin_fetch_interval_puts_the_slots_catalog_xmin_in_streamed_events() {
    let db = TestDb::create("xminfetch").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
        .await;
    for (interval, fetched) in [("100", true), ("0", false)] {
        let dir = tempfile::tempdir().unwrap();
        let prefix = unique("xminfetch");
        let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
        raw.insert("xmin.fetch.interval.ms".into(), interval.into());
        let c = start(&raw);
        db.wait_for_slot(&prefix).await;
        db.exec("INSERT INTO t VALUES (2); DELETE FROM t WHERE id = 2")
            .await;
        let records = read_until(
            &env().kafka,
            &format!("{prefix}.public.t"),
            T,
            |recs: &[Rec]| {
                recs.iter()
                    .any(|r| r.value.is_some() && r.payload()["op"] == "d")
            },
        )
        .await;
        c.stop().await.unwrap();
        let catalog_xmin: i64 = db
            .client
            .query_one(
                "SELECT catalog_xmin::text::int8 FROM pg_replication_slots WHERE slot_name = $1",
                &[&prefix],
            )
            .await
            .unwrap()
            .get(0);
        let values: Vec<_> = records.iter().filter(|r| r.value.is_some()).collect();
        let snapshot = values.iter().find(|r| r.payload()["op"] == "r").unwrap();
        assert!(
            snapshot.payload()["source"]["xmin"].is_null(),
            "snapshot records carry no xmin"
        );
        for r in values.iter().filter(|r| r.payload()["op"] != "r") {
            let xmin = &r.payload()["source"]["xmin"];
            if fetched {
                let x = xmin
                    .as_i64()
                    .unwrap_or_else(|| panic!("xmin missing: {xmin}"));
                assert!(
                    x > 0 && x <= catalog_xmin,
                    "xmin {x}, slot catalog_xmin {catalog_xmin}"
                );
            } else {
                assert!(xmin.is_null(), "{xmin}");
            }
        }
        db.exec(&format!("SELECT pg_drop_replication_slot('{prefix}')"))
            .await;
    }
    db.cleanup().await;
}
