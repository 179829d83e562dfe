//! Insert, update, delete, primary-key update, TOAST and NULL round trips, each checked
//! against the exact Debezium JSON.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

const T: Duration = Duration::from_secs(60);

const TYPES_DDL: &str = "CREATE TABLE public.types (
    id serial PRIMARY KEY,
    b bool, i2 int2, i4 int4 NOT NULL DEFAULT 7, i8 int8, f4 real, f8 double precision,
    n numeric(10,2), nu numeric, t text, vc varchar(20), c char(3), by bytea, u uuid,
    j json, jb jsonb, d date, tm time, tm3 time(3), ts timestamp, ts3 timestamp(3),
    tz timestamptz, tz0 timestamptz(0), ai int[], at text[]
)";

const TYPES_INSERT: &str =
    "INSERT INTO public.types (b, i2, i4, i8, f4, f8, n, nu, t, vc, c, by, u, j, jb, d, tm, tm3, ts, ts3, tz, tz0, ai, at)
    VALUES (true, -2, 4, 8000000000, 1.5, -2.25, 12.34, 10.1111, 'héllo \"q\"', 'abc', 'x', '\\x0102ff',
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": 1}', '{\"b\":[1,2]}', '2016-11-04', '04:05:06.789',
            '04:05:06.789', '2018-06-20 15:13:16.945104', '2018-06-20 15:13:16.945',
            '2016-11-04 13:51:30.123456+02', '2016-11-04 13:51:30+02', '{1,NULL,3}', '{a,\"b c\"}')";

fn source(prefix: &str, db: &str, table: &str) -> serde_json::Value {
    json!({"version":"3.6.1.Final","connector":"postgresql","name":prefix,"ts_ms":"<volatile>","snapshot":"false",
           "db":db,"sequence":"<volatile>","ts_us":"<volatile>","ts_ns":"<volatile>","schema":"public","table":table,
           "txId":"<volatile>","lsn":"<volatile>","xmin":null,"origin":null,"origin_lsn":null})
}

fn envelope(
    before: serde_json::Value,
    after: serde_json::Value,
    source: serde_json::Value,
    op: &str,
) -> serde_json::Value {
    json!({
        "before":before,"after":after,"source":source,"transaction":null,"op":op,"ts_ms":"<ts>",
        "ts_us":"<ts>","ts_ns":"<ts>"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_core_type_is_emitted_with_debeziums_schema_and_value() {
    let db = TestDb::create("types").await;
    db.exec(TYPES_DDL).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("types");
    let raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec(TYPES_INSERT).await;
    db.exec("INSERT INTO public.types (id) VALUES (2)").await;
    let topic = format!("{prefix}.public.types");
    let recs = read_n(&env().kafka, &topic, 2, T).await;
    c.assert_running();

    // Key bytes, exactly.
    assert_eq!(
        recs[0].key_str(),
        format!(
            r#"{{"schema":{{"type":"struct","fields":[{{"type":"int32","optional":false,"default":0,"field":"id"}}],"optional":false,"name":"{topic}.Key"}},"payload":{{"id":1}}}}"#
        )
    );
    // Row schema, exactly.
    let value = recs[0].value_json().unwrap();
    let row_schema = serde_json::to_string(&value["schema"]["fields"][1]).unwrap();
    let expected_row_schema = format!(
        concat!(
            r#"{{"type":"struct","fields":["#,
            r#"{{"type":"int32","optional":false,"default":0,"field":"id"}},"#,
            r#"{{"type":"boolean","optional":true,"field":"b"}},"#,
            r#"{{"type":"int16","optional":true,"field":"i2"}},"#,
            r#"{{"type":"int32","optional":false,"default":7,"field":"i4"}},"#,
            r#"{{"type":"int64","optional":true,"field":"i8"}},"#,
            r#"{{"type":"float","optional":true,"field":"f4"}},"#,
            r#"{{"type":"double","optional":true,"field":"f8"}},"#,
            r#"{{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{{"scale":"2","connect.decimal.precision":"10"}},"field":"n"}},"#,
            r#"{{"type":"struct","fields":[{{"type":"int32","optional":false,"field":"scale"}},{{"type":"bytes","optional":false,"field":"value"}}],"optional":true,"name":"io.debezium.data.VariableScaleDecimal","version":1,"doc":"Variable scaled decimal","field":"nu"}},"#,
            r#"{{"type":"string","optional":true,"field":"t"}},"#,
            r#"{{"type":"string","optional":true,"field":"vc"}},"#,
            r#"{{"type":"string","optional":true,"field":"c"}},"#,
            r#"{{"type":"bytes","optional":true,"field":"by"}},"#,
            r#"{{"type":"string","optional":true,"name":"io.debezium.data.Uuid","version":1,"field":"u"}},"#,
            r#"{{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1,"field":"j"}},"#,
            r#"{{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1,"field":"jb"}},"#,
            r#"{{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1,"field":"d"}},"#,
            r#"{{"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","version":1,"field":"tm"}},"#,
            r#"{{"type":"int32","optional":true,"name":"io.debezium.time.Time","version":1,"field":"tm3"}},"#,
            r#"{{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"ts"}},"#,
            r#"{{"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"field":"ts3"}},"#,
            r#"{{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,"field":"tz"}},"#,
            r#"{{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,"field":"tz0"}},"#,
            r#"{{"type":"array","items":{{"type":"int32","optional":true}},"optional":true,"field":"ai"}},"#,
            r#"{{"type":"array","items":{{"type":"string","optional":true}},"optional":true,"field":"at"}}"#,
            r#"],"optional":true,"name":"{}.Value","field":"after"}}"#
        ),
        topic
    );
    assert_eq!(row_schema, expected_row_schema);
    assert_eq!(value["schema"]["name"], json!(format!("{topic}.Envelope")));
    assert_eq!(value["schema"]["version"], json!(2));

    let after = json!({
        "id":1,"b":true,"i2":-2,"i4":4,"i8":8000000000i64,"f4":1.5,"f8":-2.25,"n":"BNI=",
        "nu":{"scale":4,"value":"AYr3"},"t":"héllo \"q\"","vc":"abc","c":"x  ","by":"AQL/",
        "u":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11","j":"{\"a\": 1}","jb":"{\"b\": [1, 2]}",
        "d":17109,"tm":14706789000i64,"tm3":14706789,"ts":1529507596945104i64,"ts3":1529507596945i64,
        "tz":"2016-11-04T11:51:30.123456Z","tz0":"2016-11-04T11:51:30Z","ai":[1,null,3],"at":["a","b c"]
    });
    assert_eq!(
        normalize(recs[0].payload()),
        envelope(json!(null), after, source(&prefix, &db.name, "types"), "c")
    );
    let nulls = json!({
        "id":2,"b":null,"i2":null,"i4":7,"i8":null,"f4":null,"f8":null,"n":null,"nu":null,"t":null,"vc":null,"c":null,
        "by":null,"u":null,"j":null,"jb":null,"d":null,"tm":null,"tm3":null,"ts":null,"ts3":null,"tz":null,"tz0":null,
        "ai":null,"at":null
    });
    assert_eq!(
        normalize(recs[1].payload()),
        envelope(json!(null), nulls, source(&prefix, &db.name, "types"), "c")
    );
    // The raw value text is compact JSON, as JsonConverter writes it.
    let text = String::from_utf8(recs[0].value.clone().unwrap()).unwrap();
    assert!(text.starts_with(
        r#"{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","optional":false,"default":0,"field":"id"}"#), "{text}");
    assert!(text.contains(r#""f4":1.5,"f8":-2.25,"n":"BNI=""#), "{text}");
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_delete_and_primary_key_change_follow_debezium_record_shapes() {
    let db = TestDb::create("upd").await;
    db.exec(
        "CREATE TABLE public.items (id int PRIMARY KEY, name text NOT NULL, qty int NOT NULL DEFAULT 1, note text)",
    ).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("upd");
    let c = start(&base_config(&db, &prefix, &env().kafka, dir.path()));
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO items VALUES (1, 'one', 5, 'n1'), (2, 'two', 6, NULL)")
        .await;
    db.exec("UPDATE items SET name = 'uno' WHERE id = 1").await;
    db.exec("DELETE FROM items WHERE id = 1").await;
    db.exec("UPDATE items SET id = 20 WHERE id = 2").await;
    let topic = format!("{prefix}.public.items");
    // c, c, u, d, tombstone, d(pk), tombstone(pk), c(pk)
    let recs = read_n(&env().kafka, &topic, 8, T).await;
    let src = source(&prefix, &db.name, "items");
    let key = |r: &Rec| r.key_json().unwrap()["payload"].clone();

    assert_eq!(
        normalize(recs[2].payload()),
        envelope(
            json!(null),
            json!({"id":1,"name":"uno","qty":5,"note":"n1"}),
            src.clone(),
            "u"
        ),
        "REPLICA IDENTITY DEFAULT: an update has before = null"
    );
    assert_eq!(
        normalize(recs[3].payload()),
        envelope(
            json!({"id":1,"name":"","qty":1,"note":null}),
            json!(null),
            src.clone(),
            "d"
        ),
        "delete before: key set, NOT NULL columns get their default or type fallback, others null"
    );
    assert_eq!(key(&recs[3]), json!({"id":1}));
    assert!(recs[4].value.is_none(), "tombstone has a Kafka null value");
    assert_eq!(
        recs[4].key, recs[3].key,
        "tombstone key bytes equal the delete's"
    );

    // Primary-key change: delete (newkey header), tombstone (newkey header), create (oldkey header).
    assert_eq!(recs[5].payload()["op"], json!("d"));
    assert_eq!(key(&recs[5]), json!({"id":2}));
    assert_eq!(
        recs[5].payload()["before"],
        json!({"id":2,"name":"","qty":1,"note":null})
    );
    assert_eq!(
        recs[5].header("__debezium.newkey").as_deref(),
        Some(r#"{"id":20}"#)
    );
    assert!(recs[6].value.is_none());
    assert_eq!(recs[6].key, recs[5].key);
    assert_eq!(
        recs[6].header("__debezium.newkey").as_deref(),
        Some(r#"{"id":20}"#)
    );
    assert_eq!(
        normalize(recs[7].payload()),
        envelope(
            json!(null),
            json!({"id":20,"name":"two","qty":6,"note":null}),
            src.clone(),
            "c"
        )
    );
    assert_eq!(key(&recs[7]), json!({"id":20}));
    assert_eq!(
        recs[7].header("__debezium.oldkey").as_deref(),
        Some(r#"{"id":2}"#)
    );
    assert_eq!(
        recs[5].payload()["source"]["lsn"],
        recs[7].payload()["source"]["lsn"],
        "all three share one source block"
    );

    // Context headers on every data record, in Debezium's order, after the event's own.
    let names: Vec<&str> = recs[5].headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "__debezium.newkey",
            "__debezium.context.connectorLogicalName",
            "__debezium.context.taskId",
            "__debezium.context.connectorName",
            "__debezium.context.runId"
        ]
    );
    assert_eq!(
        recs[0]
            .header("__debezium.context.connectorLogicalName")
            .as_deref(),
        Some(prefix.as_str())
    );
    assert_eq!(
        recs[0]
            .header("__debezium.context.connectorName")
            .as_deref(),
        Some("postgresql")
    );
    assert_eq!(
        recs[0].header("__debezium.context.taskId").as_deref(),
        Some("0")
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_toast_becomes_the_placeholder_unless_replica_identity_full_supplies_it() {
    let db = TestDb::create("toast").await;
    db.exec("CREATE TABLE public.docs (id int PRIMARY KEY, n int, body text, tags text[])")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("toast");
    let c = start(&base_config(&db, &prefix, &env().kafka, dir.path()));
    db.wait_for_slot(&prefix).await;
    // Incompressible text well over the TOAST threshold.
    db.exec(
        "INSERT INTO docs SELECT 1, 0, string_agg(md5(random()::text), ''), \
         ARRAY(SELECT md5(random()::text) FROM generate_series(1, 400)) FROM generate_series(1, 400)",
    )
    .await;
    db.exec("UPDATE docs SET n = 1 WHERE id = 1").await;
    db.exec("ALTER TABLE docs REPLICA IDENTITY FULL").await;
    db.exec("UPDATE docs SET n = 2 WHERE id = 1").await;
    let topic = format!("{prefix}.public.docs");
    let recs = read_n(&env().kafka, &topic, 3, T).await;
    let body = recs[0].payload()["after"]["body"].clone();
    assert_eq!(body.as_str().unwrap().len(), 400 * 32);
    let after1 = &recs[1].payload()["after"];
    assert_eq!(after1["n"], json!(1));
    assert_eq!(after1["body"], json!("__debezium_unavailable_value"));
    assert_eq!(after1["tags"], json!(["__debezium_unavailable_value"]));
    let p2 = recs[2].payload();
    assert_eq!(p2["after"]["n"], json!(2));
    assert_eq!(
        p2["after"]["body"], body,
        "FULL identity: the old value fills the unchanged column"
    );
    assert_eq!(p2["before"]["n"], json!(1));
    assert_eq!(p2["before"]["body"], body);
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tombstones_and_truncates_follow_their_settings() {
    let db = TestDb::create("tomb").await;
    db.exec(
        "CREATE TABLE public.a (id int PRIMARY KEY); CREATE TABLE public.b (id int PRIMARY KEY)",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("tomb");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("tombstones.on.delete".into(), "false".into());
    raw.insert("skipped.operations".into(), "none".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO a VALUES (1); INSERT INTO b VALUES (1); DELETE FROM a WHERE id = 1")
        .await;
    db.exec("TRUNCATE a, b").await;
    db.exec("INSERT INTO a VALUES (9)").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.a"), 4, T).await;
    let ops: Vec<String> = recs
        .iter()
        .map(|r| {
            r.payload()["op"]
                .as_str()
                .unwrap_or("tombstone")
                .to_string()
        })
        .collect();
    assert_eq!(
        ops,
        ["c", "d", "t", "c"],
        "no tombstone after the delete; a truncate record"
    );
    assert!(recs[2].key.is_none(), "a truncate record has a null key");
    assert_eq!(recs[2].payload()["before"], json!(null));
    let b = read_n(&env().kafka, &format!("{prefix}.public.b"), 2, T).await;
    assert_eq!(
        b[1].payload()["op"],
        json!("t"),
        "one truncate record per table"
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_disabled_writes_only_the_payload() {
    let db = TestDb::create("noschema").await;
    db.exec("CREATE TABLE public.s (id bigint PRIMARY KEY, v text)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("noschema");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("key.converter.schemas.enable".into(), "false".into());
    raw.insert("value.converter.schemas.enable".into(), "false".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO s VALUES (5, 'x')").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.s"), 1, T).await;
    assert_eq!(recs[0].key_str(), r#"{"id":5}"#);
    let v = recs[0].value_json().unwrap();
    assert_eq!(v["after"], json!({"id":5,"v":"x"}));
    assert!(v.get("schema").is_none());
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_of_an_unsupported_type_stops_the_connector_naming_table_column_and_type() {
    let db = TestDb::create("unsup").await;
    db.exec("CREATE TABLE public.geo (id int PRIMARY KEY, p lseg, ci circle)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("unsup");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO geo VALUES (1, '[(1,2),(3,4)]', '<(0,0),1>')")
        .await;
    let committed = db.current_lsn().await;
    let err = c.expect_error(T).await;
    let msg = err.one_line();
    assert!(
        msg.contains("table public.geo: column p has type lseg, column ci has type circle"),
        "{msg}"
    );
    assert!(msg.contains("table.exclude.list"), "{msg}");
    assert!(
        db.confirmed_flush(&prefix).await < committed,
        "the row was not confirmed"
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logical_decoding_messages_are_published_on_the_message_topic() {
    let db = TestDb::create("msg").await;
    db.exec("CREATE TABLE public.m (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("msg");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("message.prefix.exclude.list".into(), "skip.*".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("SELECT pg_logical_emit_message(false, 'audit', 'hello')")
        .await;
    db.exec("SELECT pg_logical_emit_message(false, 'skipped', 'not published')")
        .await;
    db.exec(
        "BEGIN; INSERT INTO m VALUES (1); SELECT pg_logical_emit_message(true, 'audit', '\\x00ff'::bytea); COMMIT",
    ).await;
    let recs = read_n(&env().kafka, &format!("{prefix}.message"), 2, T).await;
    assert_eq!(recs.len(), 2, "the excluded prefix is not published");
    assert_eq!(
        recs[0].key_str(),
        r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"field":"prefix"}],"optional":false,"name":"io.debezium.connector.postgresql.MessageKey","version":1},"payload":{"prefix":"audit"}}"#
    );
    let v = recs[0].value_json().unwrap();
    let fields: Vec<&str> = v["schema"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["op", "ts_ms", "source", "transaction", "message"]);
    assert_eq!(
        v["schema"]["name"],
        json!("io.debezium.connector.postgresql.MessageValue")
    );
    let p0 = recs[0].payload();
    assert_eq!(p0["op"], json!("m"));
    assert_eq!(
        p0["message"],
        json!({"prefix":"audit","content":"aGVsbG8="})
    );
    assert_eq!(p0["source"]["schema"], json!(""));
    assert_eq!(p0["source"]["table"], json!(""));
    assert_eq!(p0["source"]["txId"], json!(null), "non-transactional");
    let p1 = recs[1].payload();
    assert_eq!(p1["message"], json!({"prefix":"audit","content":"AP8="}));
    assert!(
        p1["source"]["txId"].as_i64().is_some(),
        "transactional messages carry the xid"
    );
    assert!(
        recs[0].headers.is_empty(),
        "message records have no context headers"
    );
    let committed = db.current_lsn().await;
    wait_for("messages confirmed", T, || async {
        (db.confirmed_flush(&prefix).await >= committed).then_some(())
    })
    .await;
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enums_domains_money_intervals_bits_network_and_extension_types_are_emitted() {
    let db = TestDb::create("moretypes").await;
    db.exec(
        "CREATE EXTENSION citext; CREATE EXTENSION ltree;
         CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
         CREATE DOMAIN price AS numeric(8,2);
         CREATE DOMAIN cash AS money;
         CREATE TABLE public.x (
            id int PRIMARY KEY, m money, c cash, iv interval, tz timetz, b1 bit(1), b bit(7),
            vb varbit, ip inet, net cidr, mac macaddr, mac8 macaddr8, doc xml, md mood,
            mds mood[], p price, ci citext, path ltree, ips inet[])",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("moretypes");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "initial".into());
    db.exec(
        "INSERT INTO x VALUES (1, '$1,234.11', '7.25', '1 year 2 mons 3 days 04:05:06.78', '13:51:30.123789+02',
           '1', '1000000', '101', '192.168.2.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
           '<a>b</a>', 'ok', '{sad,happy}', 12.5, 'MiXeD', 'Top.Science', '{127.0.0.1,::1}')",
    )
    .await;
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec(
        "INSERT INTO x (id, m, iv, tz, md) VALUES (2, '($0.50)', '-1 days +02:03:00', '23:00:00-02', 'happy')",
    )
    .await;
    let topic = format!("{prefix}.public.x");
    let recs = read_n(&env().kafka, &topic, 2, T).await;
    let after = recs[0].payload()["after"].clone();
    assert_eq!(recs[0].payload()["op"], json!("r"));
    assert_eq!(
        after,
        json!({
            "id":1,"m":"AeIT","c":"AtU=","iv":37091106780000i64,"tz":"11:51:30.123789Z","b1":true,"b":"QA==",
            "vb":"BQ==","ip":"192.168.2.1/24","net":"10.0.0.0/8","mac":"08:00:2b:01:02:03",
            "mac8":"08:00:2b:01:02:03:04:05","doc":"<a>b</a>","md":"ok","mds":["sad","happy"],
            "p":"BOI=","ci":"MiXeD","path":"Top.Science","ips":["127.0.0.1","::1"]
        })
    );
    let streamed = recs[1].payload()["after"].clone();
    assert_eq!(
        streamed["m"],
        json!("zg=="),
        "($0.50) is -0.50, unscaled -50"
    );
    assert_eq!(streamed["iv"], json!(-86_400_000_000i64 + 7_380_000_000));
    assert_eq!(streamed["tz"], json!("01:00:00Z"));
    assert_eq!(streamed["md"], json!("happy"));
    let value = recs[0].value_json().unwrap();
    let field = |name: &str| {
        value["schema"]["fields"][1]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["field"] == json!(name))
            .unwrap()
            .clone()
    };
    assert_eq!(
        field("md"),
        json!({
            "type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,
            "parameters":{"allowed":"sad,ok,happy"},"field":"md"})
    );
    assert_eq!(
        field("m"),
        json!({
            "type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",
            "version":1,"parameters":{"scale":"2"},"field":"m"})
    );
    assert_eq!(
        field("p")["parameters"],
        json!({"scale":"2","connect.decimal.precision":"8"}),
        "a domain over numeric(8,2) keeps its precision and scale"
    );
    assert_eq!(field("b")["parameters"], json!({"length":"7"}));
    assert_eq!(field("vb")["parameters"], json!({"length":"2147483647"}));
    assert_eq!(field("iv")["name"], json!("io.debezium.time.MicroDuration"));
    assert_eq!(field("tz")["name"], json!("io.debezium.time.ZonedTime"));
    assert_eq!(field("doc")["name"], json!("io.debezium.data.Xml"));
    assert_eq!(field("path")["name"], json!("io.debezium.data.Ltree"));
    assert_eq!(
        field("mds")["items"]["name"],
        json!("io.debezium.data.Enum")
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_unknown_datatypes_emits_unmapped_values_as_their_text() {
    let db = TestDb::create("unknown").await;
    db.exec("CREATE TABLE public.u (id int PRIMARY KEY, q tsquery, c circle)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("unknown");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("include.unknown.datatypes".into(), "true".into());
    raw.insert("binary.handling.mode".into(), "base64".into());
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO u VALUES (1, 'fat & cat', '<(10,20),10>')")
        .await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.u"), 1, T).await;
    let after = &recs[0].payload()["after"];
    assert_eq!(
        after["q"],
        json!("J2ZhdCcgJiAnY2F0Jw=="),
        "base64 of PostgreSQL's text 'fat' & 'cat'"
    );
    // A geometric type: the JDBC driver's text Debezium emits, numbers as Java doubles.
    assert_eq!(
        after["c"],
        json!("PCgxMC4wLDIwLjApLDEwLjA+"),
        "base64 of <(10.0,20.0),10.0>"
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}
