//! The outbox end to end on real PostgreSQL and Kafka: Debezium's PostgreSQL outbox cases
//! (DBZ-T-143..149), BUG-34/35 on real jsonb, and an application writing its data and its
//! outbox events in one transaction through a transform chain with predicates.
//!
//! Topics named by `route.topic.replacement` are global in Kafka, so every test routes to
//! topics carrying its own unique prefix (or a unique aggregate type); the cases' default topic
//! names are checked in the unit tests.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

const T: Duration = Duration::from_secs(60);

const OUTBOX_DDL: &str = "CREATE SCHEMA outboxsmtit;
    CREATE TABLE outboxsmtit.outbox (id uuid not null constraint outbox_pk primary key,
      aggregatetype varchar(255) not null, aggregateid varchar(255) not null,
      type varchar(255) not null, payload jsonb);";

const ALL_FEATURES_DDL: &str = "ALTER TABLE outboxsmtit.outbox add version int not null;
    ALTER TABLE outboxsmtit.outbox add somebooltype boolean not null;
    ALTER TABLE outboxsmtit.outbox add createdat timestamp without time zone not null;
    ALTER TABLE outboxsmtit.outbox add is_deleted boolean default false;";

/// A connector on `db` with the outbox router under alias `outbox` and `opts`, routing to
/// `<prefix>.outbox.event.<aggregatetype>`; returns it with the prefix.
async fn start_router(
    db: &TestDb,
    tag: &str,
    snapshot_mode: &str,
    opts: &[(&str, &str)],
    dir: &std::path::Path,
) -> (Running, String) {
    let prefix = unique(tag);
    let mut raw = base_config(db, &prefix, &env().kafka, dir);
    for (k, v) in [
        ("snapshot.mode", snapshot_mode),
        ("schema.include.list", "outboxsmtit"),
        ("table.include.list", "outboxsmtit\\.outbox"),
        ("transforms", "outbox"),
        (
            "transforms.outbox.type",
            "io.debezium.transforms.outbox.EventRouter",
        ),
    ] {
        raw.insert(k.into(), v.into());
    }
    raw.insert(
        "transforms.outbox.route.topic.replacement".into(),
        format!("{prefix}.outbox.event.${{routedByValue}}"),
    );
    for (k, v) in opts {
        raw.insert(format!("transforms.outbox.{k}"), v.to_string());
    }
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    (c, prefix)
}

fn text(b: &Option<Vec<u8>>) -> Option<String> {
    b.as_ref().map(|b| String::from_utf8(b.clone()).unwrap())
}

const CONTEXT_HEADERS: [&str; 4] = [
    "__debezium.context.connectorLogicalName",
    "__debezium.context.taskId",
    "__debezium.context.connectorName",
    "__debezium.context.runId",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbz_t_143_snapshot_and_streamed_outbox_rows_are_routed_with_key_value_and_id_header() {
    let db = TestDb::create("obx143").await;
    db.exec(OUTBOX_DDL).await;
    db.exec(
        "INSERT INTO outboxsmtit.outbox VALUES ('11111111-b015-44a9-9dde-cb36d9002425', 'User', 'snap', 'UserCreated', '{\"n\": 1}'::jsonb)",
    ).await;
    let dir = tempfile::tempdir().unwrap();
    let (c, prefix) = start_router(&db, "obx143", "initial", &[], dir.path()).await;
    db.exec(
        "INSERT INTO outboxsmtit.outbox VALUES ('59a42efd-b015-44a9-9dde-cb36d9002425', 'User', '10711fa5', 'UserCreated', '{}'::jsonb)",
    ).await;
    let topic = format!("{prefix}.outbox.event.User");
    let recs = read_n(&env().kafka, &topic, 2, T).await;
    assert_eq!(
        recs[0].key_str(),
        r#"{"schema":{"type":"string","optional":false},"payload":"snap"}"#
    );
    assert_eq!(
        text(&recs[0].value).unwrap(),
        r#"{"schema":{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1},"payload":"{\"n\": 1}"}"#
    );
    let e = &recs[1];
    assert_eq!(
        e.key_str(),
        r#"{"schema":{"type":"string","optional":false},"payload":"10711fa5"}"#
    );
    assert_eq!(
        text(&e.value).unwrap(),
        r#"{"schema":{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1},"payload":"{}"}"#
    );
    let names: Vec<&str> = e.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names[..4], CONTEXT_HEADERS);
    assert_eq!(names[4..], ["id"]);
    assert_eq!(
        e.header("id").as_deref(),
        Some("59a42efd-b015-44a9-9dde-cb36d9002425")
    );
    assert_eq!(
        e.header("__debezium.context.connectorLogicalName"),
        Some(prefix.clone())
    );
    assert!(
        e.timestamp.is_some_and(|t| t > 1_600_000_000_000),
        "timestamp = envelope ts_ms"
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbz_t_145_event_type_in_the_envelope_makes_the_value_a_struct() {
    let db = TestDb::create("obx145").await;
    db.exec(OUTBOX_DDL).await;
    let dir = tempfile::tempdir().unwrap();
    let (c, prefix) = start_router(
        &db,
        "obx145",
        "no_data",
        &[(
            "table.fields.additional.placement",
            "type:envelope:eventType",
        )],
        dir.path(),
    )
    .await;
    db.exec(
        "INSERT INTO outboxsmtit.outbox VALUES ('d4da2428-8b19-11ea-bc55-0242ac130003', 'User', '9948fcad', 'UserCreated', '{\"email\": \"gh@mefi.in\"}'::jsonb)",
    ).await;
    let recs = read_n(&env().kafka, &format!("{prefix}.outbox.event.User"), 1, T).await;
    assert_eq!(recs[0].key_json().unwrap()["payload"], json!("9948fcad"));
    assert_eq!(
        text(&recs[0].value).unwrap(),
        format!(
            r#"{{"schema":{{"type":"struct","fields":[{{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1,"field":"payload"}},{{"type":"string","optional":false,"field":"eventType"}}],"optional":false,"name":"{prefix}.outboxsmtit.outbox.User.Value"}},"payload":{{"payload":"{{\"email\": \"gh@mefi.in\"}}","eventType":"UserCreated"}}}}"#
        )
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}

const ALL_FEATURES: &str =
    "version:envelope:eventVersion,aggregatetype:envelope:aggregateType,somebooltype:envelope:someBoolType,somebooltype:header,is_deleted:envelope:deleted";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbz_t_146_all_features_schema_version_timestamp_headers_and_defaults() {
    let db = TestDb::create("obx146").await;
    db.exec(OUTBOX_DDL).await;
    db.exec(ALL_FEATURES_DDL).await;
    let dir = tempfile::tempdir().unwrap();
    let opts = [
        ("table.field.event.schema.version", "version"),
        ("table.field.event.timestamp", "createdat"),
        ("table.fields.additional.placement", ALL_FEATURES),
    ];
    let (c, prefix) = start_router(&db, "obx146", "no_data", &opts, dir.path()).await;
    db.exec(
        "INSERT INTO outboxsmtit.outbox VALUES ('f9171eb6-19f3-4579-9206-0e179d2ebad7', 'UserEmail', '7bdf2e9e', 'UserUpdated', '{\"email\": \"gh@mefi.in\"}'::jsonb, 1, true, TIMESTAMP(3) '2019-03-24 20:52:59')",
    ).await;
    let recs = read_n(
        &env().kafka,
        &format!("{prefix}.outbox.event.UserEmail"),
        1,
        T,
    )
    .await;
    let e = &recs[0];
    assert_eq!(e.key_json().unwrap()["payload"], json!("7bdf2e9e"));
    assert_eq!(e.timestamp, Some(1_553_460_779_000));
    assert_eq!(
        text(&e.value).unwrap(),
        format!(
            r#"{{"schema":{{"type":"struct","fields":[{{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1,"field":"payload"}},{{"type":"int32","optional":false,"field":"eventVersion"}},{{"type":"string","optional":false,"field":"aggregateType"}},{{"type":"boolean","optional":false,"field":"someBoolType"}},{{"type":"boolean","optional":true,"default":false,"field":"deleted"}}],"optional":false,"name":"{prefix}.outboxsmtit.outbox.UserEmail.Value","version":1}},"payload":{{"payload":"{{\"email\": \"gh@mefi.in\"}}","eventVersion":1,"aggregateType":"UserEmail","someBoolType":true,"deleted":false}}}}"#
        )
    );
    assert_eq!(
        e.headers.len(),
        6,
        "4 context headers, id, somebooltype: {:?}",
        e.headers
    );
    assert_eq!(
        e.header("id").as_deref(),
        Some("f9171eb6-19f3-4579-9206-0e179d2ebad7")
    );
    assert_eq!(e.header("somebooltype").as_deref(), Some("true"));
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbz_t_148_and_149_null_payload_gives_a_null_payload_struct_or_a_tombstone() {
    let db = TestDb::create("obx148").await;
    db.exec(OUTBOX_DDL).await;
    db.exec(ALL_FEATURES_DDL).await;
    let dir148 = tempfile::tempdir().unwrap();
    let dir149 = tempfile::tempdir().unwrap();
    let placement148 = ALL_FEATURES.replace("aggregateType", "agregateType");
    let base = [
        ("table.field.event.schema.version", "version"),
        ("table.field.event.timestamp", "createdat"),
    ];
    let mut o148 = base.to_vec();
    o148.push(("table.fields.additional.placement", placement148.as_str()));
    let (c148, p148) = start_router(&db, "obx148", "no_data", &o148, dir148.path()).await;
    let mut o149 = base.to_vec();
    o149.push(("table.fields.additional.placement", ALL_FEATURES));
    o149.push(("route.tombstone.on.empty.payload", "true"));
    let (c149, p149) = start_router(&db, "obx149", "no_data", &o149, dir149.path()).await;
    db.exec(
        "INSERT INTO outboxsmtit.outbox VALUES ('a9d76f78-bda6-48d3-97ed-13a146163218', 'UserEmail', 'a9d76f78', 'UserUpdated', null::jsonb, 1, true, TIMESTAMP(3) '2019-03-24 20:52:59', true)",
    ).await;

    let e = &read_n(
        &env().kafka,
        &format!("{p148}.outbox.event.UserEmail"),
        1,
        T,
    )
    .await[0];
    assert_eq!(e.timestamp, Some(1_553_460_779_000));
    assert_eq!(
        e.payload(),
        json!({"payload": null, "eventVersion": 1, "agregateType": "UserEmail", "someBoolType": true, "deleted": true})
    );
    assert_eq!(e.headers.len(), 6);
    assert_eq!(e.header("somebooltype").as_deref(), Some("true"));

    let e = &read_n(
        &env().kafka,
        &format!("{p149}.outbox.event.UserEmail"),
        1,
        T,
    )
    .await[0];
    assert_eq!(e.value, None, "a real tombstone");
    assert_eq!(
        e.key_str(),
        r#"{"schema":{"type":"string","optional":false},"payload":"a9d76f78"}"#
    );
    assert_eq!(e.timestamp, Some(1_553_460_779_000));
    assert_eq!(e.headers.len(), 6);
    assert_eq!(
        e.header("id").as_deref(),
        Some("a9d76f78-bda6-48d3-97ed-13a146163218")
    );
    c148.stop().await.unwrap();
    c149.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bug_34_and_35_expanded_jsonb_null_payloads_deletes_and_updates_on_the_outbox() {
    let db = TestDb::create("obxbug").await;
    db.exec(OUTBOX_DDL).await;
    let dir = tempfile::tempdir().unwrap();
    let opts = [
        ("table.expand.json.payload", "true"),
        ("route.tombstone.on.empty.payload", "true"),
    ];
    let (c, prefix) = start_router(&db, "obxbug", "no_data", &opts, dir.path()).await;
    db.exec(
        r#"INSERT INTO outboxsmtit.outbox VALUES ('6f1c2d3e-0000-4000-8000-000000000001', 'order', '42', 'OrderCreated',
        '{"lines":[],"groups":[{"items":[]},{"items":[{"sku":"A1","qty":2}]}],"note":null,"total":"19.90"}');
      INSERT INTO outboxsmtit.outbox VALUES ('6f1c2d3e-0000-4000-8000-000000000002', 'order', '42', 'OrderDeleted', NULL);
      DELETE FROM outboxsmtit.outbox WHERE aggregateid = '42';
      INSERT INTO outboxsmtit.outbox VALUES ('6f1c2d3e-0000-4000-8000-000000000003', 'order', '43', 'OrderCreated', '{}');
      UPDATE outboxsmtit.outbox SET type = 'x';
      INSERT INTO outboxsmtit.outbox VALUES ('6f1c2d3e-0000-4000-8000-000000000004', 'order', 'last', 'Marker', '{"m": 1}');"#).await;
    let topic = format!("{prefix}.outbox.event.order");
    let recs = read_until(&env().kafka, &topic, T, |r| {
        r.iter().any(|x| x.key_str().contains("last"))
    })
    .await;
    let summary: Vec<(String, Option<String>)> = recs
        .iter()
        .map(|r| {
            (
                r.key_json().unwrap()["payload"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                r.value_json().map(|v| v["payload"].to_string()),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "42".to_string(),
                Some(
                    r#"{"total":"19.90","groups":[{"items":[]},{"items":[{"qty":2,"sku":"A1"}]}]}"#
                        .to_string()
                )
            ),
            ("42".to_string(), None),
            ("43".to_string(), Some("{}".to_string())),
            ("last".to_string(), Some(r#"{"m":1}"#.to_string())),
        ],
        "the delete and the update produce nothing"
    );
    let schema = recs[0].value_json().unwrap()["schema"].clone();
    assert_eq!(schema["name"], json!("payload"));
    assert_eq!(
        schema["fields"][1]["items"]["name"],
        json!("payload.groups")
    );
    c.assert_running();
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_transaction_writes_data_and_outbox_event_and_a_predicated_chain_routes_both() {
    let db = TestDb::create("obxapp").await;
    db.exec("CREATE TABLE accounts (id bigint PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL);").await;
    let migration = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations/002_outbox.sql"
    ))
    .unwrap();
    db.exec(&migration).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("obxapp");
    let aggregate = unique("Account");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    let outbox_topic = format!("{prefix}\\.public\\.outbox");
    for (k, v) in [
        ("snapshot.mode", "no_data"),
        ("table.include.list", "public.accounts,public.outbox"),
        ("transforms", "outbox,unwrap,rename"),
        (
            "transforms.outbox.type",
            "io.debezium.transforms.outbox.EventRouter",
        ),
        ("transforms.outbox.predicate", "isOutbox"),
        ("transforms.outbox.table.field.event.timestamp", "timestamp"),
        (
            "transforms.outbox.table.fields.additional.placement",
            "type:header:eventType",
        ),
        (
            "transforms.unwrap.type",
            "io.debezium.transforms.ExtractNewRecordState",
        ),
        ("transforms.unwrap.predicate", "isOutbox"),
        ("transforms.unwrap.negate", "true"),
        ("transforms.unwrap.add.fields", "op,source.lsn"),
        (
            "transforms.rename.type",
            "org.apache.kafka.connect.transforms.RegexRouter",
        ),
        ("transforms.rename.regex", "outbox\\.event\\.(.*)"),
        ("transforms.rename.replacement", "outbox.event.$1.v1"),
        ("predicates", "isOutbox"),
        (
            "predicates.isOutbox.type",
            "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        ),
        ("predicates.isOutbox.pattern", outbox_topic.as_str()),
    ] {
        raw.insert(k.into(), v.into());
    }
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;

    // The application: data change and event in one transaction; the second event uses the
    // insert-then-delete pattern that keeps the outbox table empty.
    db.exec(&format!(
        "BEGIN;
         INSERT INTO accounts VALUES (1, 'ana', 100);
         INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, \"timestamp\")
           VALUES ('0f000000-0000-4000-8000-000000000001', '{aggregate}', '1', 'AccountOpened',
                   '{{\"owner\": \"ana\", \"balance\": 100}}', TIMESTAMP '2026-01-02 03:04:05.678');
         COMMIT;
         BEGIN;
         UPDATE accounts SET balance = 70 WHERE id = 1;
         INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
           VALUES ('0f000000-0000-4000-8000-000000000002', '{aggregate}', '1', 'AccountDebited', '{{\"amount\": 30}}');
         DELETE FROM outbox WHERE id = '0f000000-0000-4000-8000-000000000002';
         COMMIT;"
    ))
    .await;
    // Markers: the last account row and the last event, so that "nothing else" can be checked.
    db.exec(&format!(
        "BEGIN;
         INSERT INTO accounts VALUES (99, 'marker', 0);
         INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
           VALUES ('0f000000-0000-4000-8000-000000000099', '{aggregate}', '99', 'Marker', '{{}}');
         DELETE FROM outbox;
         COMMIT;"
    ))
    .await;
    let data = read_until(&env().kafka, &format!("{prefix}.public.accounts"), T, |r| {
        r.iter().any(|x| x.key_str().contains("99"))
    })
    .await;
    let rows: Vec<serde_json::Value> = data.iter().map(|r| r.payload()).collect();
    assert_eq!(rows.len(), 3, "insert, update, marker: {rows:?}");
    assert_eq!(rows[0]["owner"], json!("ana"));
    assert_eq!(rows[0]["__op"], json!("c"));
    assert_eq!(rows[1]["balance"], json!(70));
    assert_eq!(rows[1]["__op"], json!("u"));
    assert!(rows[1]["__source_lsn"].as_i64().unwrap() > rows[0]["__source_lsn"].as_i64().unwrap());
    assert_eq!(
        data[0].value_json().unwrap()["schema"]["optional"],
        json!(false)
    );

    let events = read_until(
        &env().kafka,
        &format!("outbox.event.{aggregate}.v1"),
        T,
        |r| {
            r.iter()
                .any(|x| x.header("eventType").as_deref() == Some("Marker"))
        },
    )
    .await;
    assert_eq!(
        events
            .iter()
            .map(|e| e.header("eventType").unwrap())
            .collect::<Vec<_>>(),
        ["AccountOpened", "AccountDebited", "Marker"],
        "one record per inserted event; the deletes produce nothing"
    );
    assert_eq!(
        events[0].payload(),
        json!("{\"owner\": \"ana\", \"balance\": 100}")
    );
    assert_eq!(
        events[0].timestamp,
        Some(1_767_323_045_678),
        "from the timestamp column"
    );
    assert_eq!(events[1].payload(), json!("{\"amount\": 30}"));
    assert!(
        events[1].timestamp.is_some_and(|t| t > 1_767_323_045_678),
        "column default: commit time"
    );
    assert_eq!(events[0].key_json().unwrap()["payload"], json!("1"));
    assert_eq!(
        events[0].partition, events[1].partition,
        "one aggregate, one partition"
    );
    c.assert_running();
    c.stop().await.unwrap();
    db.cleanup().await;
}
