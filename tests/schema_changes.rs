//! Schema changes as events (`include.schema.changes=true` with pgcdc's schema capture): the
//! DDL of captured tables reaches the `topic.prefix` topic in Debezium's schema change record
//! shape, acknowledged before the rows written after it; rolled-back DDL and tables outside
//! the filters give none; installing needs a superuser and says so.

use std::process::Command;
use std::time::Duration;

use pgcdc::pg::schema_capture;

use crate::harness::*;

const T: Duration = Duration::from_secs(60);

/// Installs the capture in `db` (the harness's role is a superuser).
async fn install(db: &TestDb) {
    schema_capture::install(&db.client)
        .await
        .unwrap_or_else(|e| panic!("install: {e}"));
}

/// The `tableChanges` of a schema change record.
fn table_changes(r: &Rec) -> Vec<serde_json::Value> {
    r.value_json().unwrap()["payload"]["tableChanges"]
        .as_array()
        .unwrap()
        .clone()
}

/// Column names of one `tableChanges` element.
fn column_names(change: &serde_json::Value) -> Vec<String> {
    change["table"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_of_captured_tables_is_published_in_order_with_its_rows_and_nothing_else() {
    let db = TestDb::create("ddl").await;
    db.exec(
        "CREATE TABLE t (id int8 PRIMARY KEY, v text); CREATE TABLE other (id int8 PRIMARY KEY); \
         INSERT INTO t VALUES (1, 'a')",
    )
    .await;
    install(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("ddl");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("include.schema.changes".into(), "true".into());
    raw.insert("table.include.list".into(), "public.t".into());
    let run = start(&raw);
    let topic = format!("{prefix}.public.t");
    read_n(&env().kafka, &topic, 1, T).await;

    db.exec(
        "BEGIN; ALTER TABLE t ADD COLUMN c int4 NOT NULL DEFAULT 5; \
         INSERT INTO t VALUES (2, 'b', 7); COMMIT",
    )
    .await;
    db.exec("BEGIN; ALTER TABLE t ADD COLUMN rolled_back int4; ROLLBACK")
        .await;
    db.exec("ALTER TABLE other ADD COLUMN q int4").await;
    // Any role may emit a message with the capture's prefix: one that is not the capture's
    // is skipped (with a warning), never a stop.
    db.exec("SELECT pg_logical_emit_message(true, 'pgcdc.schema_change', 'not json')")
        .await;
    db.exec("ALTER TABLE t RENAME COLUMN v TO w; INSERT INTO t VALUES (3, 'c', 8)")
        .await;
    db.exec("ALTER TABLE t RENAME TO t2; INSERT INTO t2 VALUES (4, 'd', 9)")
        .await;

    let schema = read_n(&env().kafka, &prefix, 3, T).await;
    let rows = read_n(&env().kafka, &topic, 3, T).await;
    let ddl: Vec<String> = schema
        .iter()
        .map(|r| {
            r.value_json().unwrap()["payload"]["ddl"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(ddl[0].contains("ADD COLUMN c"), "{ddl:?}");
    assert!(ddl[1].contains("RENAME COLUMN v TO w"), "{ddl:?}");
    assert!(ddl[2].contains("RENAME TO t2"), "{ddl:?}");
    for r in &schema {
        assert_eq!(r.partition, 0);
        let key = r.key_json().unwrap();
        assert_eq!(key["payload"], serde_json::json!({"databaseName": db.name}));
        assert_eq!(
            key["schema"]["name"],
            "io.debezium.connector.postgresql.SchemaChangeKey"
        );
        let v = r.value_json().unwrap();
        assert_eq!(
            v["schema"]["name"],
            "io.debezium.connector.postgresql.SchemaChangeValue"
        );
        assert_eq!(v["payload"]["databaseName"], db.name.as_str());
        assert_eq!(v["payload"]["schemaName"], "public");
        assert_eq!(v["payload"]["source"]["connector"], "postgresql");
    }
    let added = &table_changes(&schema[0])[0];
    assert_eq!(added["type"], "ALTER");
    assert_eq!(added["id"], r#""public"."t""#);
    assert_eq!(column_names(added), ["id", "v", "c"]);
    let c = &added["table"]["columns"][2];
    assert_eq!(c["typeName"], "int4");
    assert_eq!(c["jdbcType"], 4);
    assert_eq!(c["optional"], false);
    assert_eq!(c["defaultValueExpression"], "5");
    assert_eq!(c["position"], 3);
    assert_eq!(
        added["table"]["primaryKeyColumnNames"],
        serde_json::json!(["id"])
    );
    assert_eq!(
        column_names(&table_changes(&schema[1])[0]),
        ["id", "w", "c"]
    );
    // Renames: the new id (and the new column names), the old ones in pgcdc's headers. A
    // renamed table's record comes although only its old name is captured.
    assert_eq!(
        schema[1].header("pgcdc.schema.renamedColumns").as_deref(),
        Some(r#"{"\"public\".\"t\"":[["v","w"]]}"#)
    );
    assert_eq!(schema[1].header("pgcdc.schema.previousIds"), None);
    assert_eq!(table_changes(&schema[2])[0]["id"], r#""public"."t2""#);
    assert_eq!(
        schema[2].header("pgcdc.schema.previousIds").as_deref(),
        Some(r#"{"\"public\".\"t2\"":"\"public\".\"t\""}"#)
    );
    assert_eq!(
        schema[0]
            .header("__debezium.context.connectorLogicalName")
            .as_deref(),
        Some(prefix.as_str())
    );

    // Each DDL's record comes before the rows written after it. Its `source.lsn` is where its
    // WAL record ends: rows before the DDL are below it, rows after it at or above it.
    let lsn = |r: &Rec| {
        r.value_json().unwrap()["payload"]["source"]["lsn"]
            .as_i64()
            .unwrap()
    };
    let lsns = |rs: &[Rec]| rs.iter().map(lsn).collect::<Vec<_>>();
    let (s, r) = (lsns(&schema), lsns(&rows));
    assert!(
        r[0] < s[0] && s[0] <= r[1] && r[1] < s[1] && s[1] <= r[2],
        "{s:?} {r:?}"
    );
    let after = rows[1].value_json().unwrap()["payload"]["after"].clone();
    assert_eq!(after["c"], 7, "{after}");
    assert!(
        schema[0].timestamp <= rows[1].timestamp,
        "the schema change was appended after the row that needs it"
    );
    run.stop().await.expect("graceful stop");
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_capture_install_is_idempotent_refuses_a_non_superuser_and_uninstalls() {
    let db = TestDb::create("capture").await;
    let role = unique("capture_user");
    db.exec(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'pw'; GRANT ALL ON DATABASE {} TO {role}",
        db.name
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("capture");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    // The capture commands need the database settings only.
    raw.remove("bootstrap.servers");
    let file = dir.path().join("connector.json");
    let config: serde_json::Map<String, serde_json::Value> = raw
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    std::fs::write(
        &file,
        serde_json::json!({ "name": prefix, "config": config }).to_string(),
    )
    .unwrap();
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_pgcdc"))
            .arg("schema-capture")
            .args(args)
            .arg("--config")
            .arg(&file)
            .env("PGCDC_LOG", "warn")
            .output()
            .expect("run pgcdc");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (code, out) = cli(&["status"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not installed"), "{out}");
    // A schema pgcdc the capture did not create is refused: its SECURITY DEFINER functions
    // must not reach objects that others control.
    db.exec("CREATE SCHEMA pgcdc").await;
    let (code, out) = cli(&["install"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("a schema named pgcdc exists"), "{out}");
    db.exec("DROP SCHEMA pgcdc").await;
    let mut wants_changes = raw.clone();
    wants_changes.insert("include.schema.changes".into(), "true".into());
    wants_changes.insert("bootstrap.servers".into(), env().kafka.clone());
    let (_, report) = crate::preflight::validate(&wants_changes);
    let warning = crate::preflight::finding(&report, "WARNING", "schema-capture");
    assert!(
        warning.len() == 1 && warning[0].contains("pgcdc schema-capture install"),
        "{report}"
    );
    let user = format!("database.user={role}");
    let (code, out) = cli(&["install", "--set", &user, "--set", "database.password=pw"]);
    assert_eq!(code, 78, "{out}");
    assert!(out.contains("superuser"), "{out}");
    for _ in 0..2 {
        let (code, out) = cli(&["install"]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("installed, version 1"), "{out}");
    }
    let (code, out) = cli(&["status"]);
    assert_eq!(code, 0, "{out}");
    let (_, report) = crate::preflight::validate(&wants_changes);
    assert_eq!(
        crate::preflight::finding(&report, "ok", "schema-capture").len(),
        1,
        "{report}"
    );
    // Uninstalling removes what the install created, and nothing else.
    db.exec("CREATE TABLE pgcdc.kept (x int); INSERT INTO pgcdc.kept VALUES (1)")
        .await;
    let (code, out) = cli(&["uninstall"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("not installed"), "{out}");
    db.exec("SELECT x FROM pgcdc.kept; DROP SCHEMA pgcdc CASCADE")
        .await;
    let status = schema_capture::status(&db.client).await.unwrap();
    assert!(status.version.is_none() && status.enabled_triggers.is_empty());
    db.exec(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
        .await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_change_records_are_written_in_avro_with_registered_schemas() {
    let db = TestDb::create("ddl_avro").await;
    db.exec("CREATE TABLE t (id int8 PRIMARY KEY, e text); INSERT INTO t VALUES (1, 'a')")
        .await;
    install(&db).await;
    db.exec("CREATE TYPE mood AS ENUM ('sad', 'ok')").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("ddl_avro");
    let mut raw = crate::avro::avro_config(&db, &prefix, dir.path(), &env().registry);
    raw.insert("include.schema.changes".into(), "true".into());
    let run = start(&raw);
    // The snapshot has read t (the DROP below waits for its lock).
    read_n(&env().kafka, &format!("{prefix}.public.t"), 1, T).await;
    db.exec("ALTER TABLE t ADD COLUMN m mood, ADD COLUMN n numeric(7,3) DEFAULT 0; DROP TABLE t")
        .await;
    let records = read_n(&env().kafka, &prefix, 2, T).await;
    let (_, key) = crate::avro::decode(records[0].key.as_deref().unwrap());
    assert_eq!(key, serde_json::json!({"databaseName": db.name}));
    let (_, alter) = crate::avro::decode(records[0].value.as_deref().unwrap());
    let change = &alter["tableChanges"][0];
    assert_eq!(change["type"], "ALTER");
    let columns = change["table"]["columns"].as_array().unwrap();
    assert_eq!(columns[2]["enumValues"], serde_json::json!(["sad", "ok"]));
    assert_eq!(columns[3]["length"], 7);
    assert_eq!(columns[3]["scale"], 3);
    assert_eq!(columns[3]["typeExpression"], "numeric(7,3)");
    let (_, drop) = crate::avro::decode(records[1].value.as_deref().unwrap());
    assert_eq!(drop["tableChanges"][0]["type"], "DROP");
    assert_eq!(drop["tableChanges"][0]["table"], serde_json::Value::Null);
    run.stop().await.expect("graceful stop");
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_writes_the_schema_change_in_the_transaction_of_its_rows() {
    let db = TestDb::create("ddl_eos").await;
    db.exec("CREATE TABLE t (id int8 PRIMARY KEY, v int8); INSERT INTO t VALUES (1, 1)")
        .await;
    install(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("ddl_eos");
    let mut raw = crate::exactly_once::eos_config(&db, &prefix, dir.path(), "poll");
    raw.insert("include.schema.changes".into(), "true".into());
    let run = start(&raw);
    let topic = format!("{prefix}.public.t");
    read_n(&env().kafka, &topic, 1, T).await;
    db.exec(
        "BEGIN; INSERT INTO t VALUES (2, 2); ALTER TABLE t ADD COLUMN w int8; \
         INSERT INTO t VALUES (3, 3, 3); COMMIT",
    )
    .await;
    // read_committed: both appear, once the Kafka transaction that holds them commits.
    let schema = read_n(&env().kafka, &prefix, 1, T).await;
    let rows = read_n(&env().kafka, &topic, 3, T).await;
    let payload = schema[0].value_json().unwrap();
    assert_eq!(payload["tableChanges"][0]["type"], "ALTER", "{payload}");
    let tx = |r: &Rec| r.value_json().unwrap()["source"]["txId"].as_i64();
    assert_eq!(tx(&schema[0]), tx(&rows[2]));
    assert_eq!(rows[2].value_json().unwrap()["after"]["w"], 3);
    run.stop().await.expect("graceful stop");
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_a_partitioned_table_reaches_its_captured_partitions() {
    let db = TestDb::create("ddl_parts").await;
    db.exec(
        "CREATE TABLE p (id int8, d date, PRIMARY KEY (id, d)) PARTITION BY RANGE (d); \
         CREATE TABLE p1 PARTITION OF p FOR VALUES FROM ('2020-01-01') TO ('2021-01-01'); \
         CREATE SCHEMA gone; CREATE TABLE gone.x (id int8 PRIMARY KEY); \
         INSERT INTO p VALUES (1, '2020-02-02'); INSERT INTO gone.x VALUES (1)",
    )
    .await;
    install(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("ddl_parts");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("include.schema.changes".into(), "true".into());
    raw.insert("table.include.list".into(), "public.p1,gone.x".into());
    raw.insert("column.exclude.list".into(), "public.p1.secret".into());
    let run = start(&raw);
    // The snapshot has read both tables before the DDL.
    read_n(&env().kafka, &format!("{prefix}.public.p1"), 1, T).await;
    read_n(&env().kafka, &format!("{prefix}.gone.x"), 1, T).await;
    db.exec("ALTER TABLE p ADD COLUMN note text, ADD COLUMN secret text")
        .await;
    db.exec("CREATE TABLE p2 PARTITION OF p FOR VALUES FROM ('2021-01-01') TO ('2022-01-01')")
        .await;
    db.exec("DROP SCHEMA gone CASCADE").await;
    let records = read_n(&env().kafka, &prefix, 2, T).await;
    let ids = |r: &Rec| -> Vec<(String, String)> {
        table_changes(r)
            .iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap().into(),
                    c["id"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    // p itself and the uncaptured p2 are left out, and so is the excluded column; the dropped
    // schema's table is a DROP.
    assert_eq!(
        ids(&records[0]),
        [("ALTER".into(), r#""public"."p1""#.into())]
    );
    assert_eq!(
        column_names(&table_changes(&records[0])[0]),
        ["id", "d", "note"]
    );
    assert_eq!(ids(&records[1]), [("DROP".into(), r#""gone"."x""#.into())]);
    run.stop().await.expect("graceful stop");
    db.cleanup().await;
}

/// Sends `body` (JSON) to the test registry with `method`; returns the answer as JSON.
fn registry_send(method: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let url = format!("{}{path}", env().registry);
    let request = match method {
        "PUT" => ureq::put(&url),
        _ => ureq::post(&url),
    };
    let mut resp = request
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send(body.to_string())
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
}

/// Each common column change, as pgcdc writes its Avro schemas, judged by the registry under
/// BACKWARD, FORWARD and FULL; pgcdc's own explanation of a refusal agrees with each verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_common_column_change_gets_the_registrys_verdict_that_pgcdc_explains() {
    // (table, column definition before, DDL, row after, compatible under B, F, FULL)
    let cases: [(&str, &str, &str, &str, [bool; 3]); 7] = [
        (
            "add_nullable",
            "a int4",
            "ADD COLUMN b int4",
            "1, 1, 1",
            [true, true, true],
        ),
        (
            "add_default",
            "a int4",
            "ADD COLUMN b int4 NOT NULL DEFAULT 5",
            "1, 1, 1",
            [true, true, true],
        ),
        (
            "drop",
            "a int4, b int4",
            "DROP COLUMN b",
            "1, 1",
            [true, true, true],
        ),
        (
            "rename",
            "a int4",
            "RENAME COLUMN a TO b",
            "1, 1",
            [true, true, true],
        ),
        (
            "widen",
            "a int4",
            "ALTER COLUMN a TYPE int8",
            "1, 1",
            [true, false, false],
        ),
        (
            "narrow",
            "a int8",
            "ALTER COLUMN a TYPE int4",
            "1, 1",
            [false, true, false],
        ),
        (
            "not_null",
            "a int4",
            "ALTER COLUMN a SET NOT NULL",
            "1, 1",
            [false, true, false],
        ),
    ];
    let db = TestDb::create("ddl_evo").await;
    for (table, columns, ..) in &cases {
        db.exec(&format!(
            "CREATE TABLE {table} (id int4 PRIMARY KEY, {columns}); \
             INSERT INTO {table} SELECT 0, 0{}",
            if columns.contains(',') { ", 0" } else { "" }
        ))
        .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("ddl_evo");
    let raw = crate::avro::avro_config(&db, &prefix, dir.path(), &env().registry);
    let run = start(&raw);
    let subject = |table: &str| format!("{prefix}.public.{table}-value");
    for (table, ..) in &cases {
        read_n(&env().kafka, &format!("{prefix}.public.{table}"), 1, T).await;
        let none = serde_json::json!({"compatibility": "NONE"});
        registry_send("PUT", &format!("/config/{}", subject(table)), &none);
    }
    for (table, _, ddl, row, _) in &cases {
        db.exec(&format!(
            "ALTER TABLE {table} {ddl}; INSERT INTO {table} VALUES ({row})"
        ))
        .await;
        read_n(&env().kafka, &format!("{prefix}.public.{table}"), 2, T).await;
    }
    run.stop().await.expect("graceful stop");
    for (table, _, ddl, _, expected) in &cases {
        let s = subject(table);
        let text = |v: u32| {
            crate::avro::registry_get(&format!("/subjects/{s}/versions/{v}"))["schema"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let (old, new) = (text(1), text(2));
        for (level, want) in ["BACKWARD", "FORWARD", "FULL"].iter().zip(expected) {
            registry_send(
                "PUT",
                &format!("/config/{s}"),
                &serde_json::json!({ "compatibility": level }),
            );
            let verdict = registry_send(
                "POST",
                &format!("/compatibility/subjects/{s}/versions/1"),
                &serde_json::json!({ "schema": new }),
            );
            let compatible = verdict["is_compatible"].as_bool().unwrap();
            let why = pgcdc::registry::evolution::explain(Some(level), &old, &new);
            assert_eq!(
                compatible, *want,
                "{ddl} under {level}: the registry said {verdict}"
            );
            assert_eq!(
                why.is_empty(),
                compatible,
                "{ddl} under {level}: pgcdc explains {why:?}"
            );
        }
    }
    db.cleanup().await;
}
