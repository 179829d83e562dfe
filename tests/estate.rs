//! The PostgreSQL estate: what newer servers and high availability bring (see
//! docs/postgresql-versions.md). These tests run against whichever server the environment
//! names, so scripts/test-matrix.sh runs them on every version of the matrix.

use std::time::Duration;

use crate::harness::*;

const T: Duration = Duration::from_secs(90);

async fn server_version(db: &TestDb) -> i32 {
    db.client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_failover_makes_a_failover_slot_where_the_server_has_them_and_a_normal_one_elsewhere()
{
    let db = TestDb::create("failover").await;
    db.exec("CREATE TABLE public.f (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("failover");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("publication.name".into(), prefix.clone());
    raw.insert("slot.failover".into(), "true".into());
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    if server_version(&db).await >= 170000 {
        let failover: bool = db
            .client
            .query_one(
                "SELECT failover FROM pg_replication_slots WHERE slot_name = $1",
                &[&prefix],
            )
            .await
            .unwrap()
            .get(0);
        assert!(failover, "PostgreSQL 17+: the slot is a failover slot");
    }
    // Older servers get a normal slot (and a warning in the log), which streams as usual.
    db.exec("INSERT INTO f VALUES (1)").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.f"), 1, T).await;
    assert_eq!(recs[0].payload()["after"]["id"], 1);
    running.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_of_another_cluster_or_an_earlier_timeline_are_refused_unless_the_slot_is_trusted()
{
    let db = TestDb::create("cluster").await;
    db.exec("CREATE TABLE public.c (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("cluster");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("publication.name".into(), prefix.clone());
    let topic = format!("{prefix}.public.c");
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO c VALUES (1)").await;
    read_n(&env().kafka, &topic, 1, T).await;
    running.stop().await.unwrap();

    // Beside the connector's offsets (Debezium's map, untouched), its cluster.
    let path = dir.path().join("offsets.json");
    let read = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let cluster_key = format!(r#"["{prefix}",{{"server":"{prefix}","pgcdc":"cluster"}}]"#);
    let own_key = format!(r#"["{prefix}",{{"server":"{prefix}"}}]"#);
    let file = read();
    let real = file[&cluster_key].clone();
    let real_id = real["system_identifier"]
        .as_str()
        .expect("the system identifier")
        .to_string();
    assert!(real_id.parse::<u64>().is_ok(), "{real}");
    assert!(real["timeline"].as_u64() >= Some(1), "{real}");
    let own = file[&own_key].as_object().expect("the connector's offsets");
    assert!(own.contains_key("lsn_commit") && !own.contains_key("system_identifier"));
    let rewrite = |cluster: serde_json::Value| {
        let mut f = read();
        f[&cluster_key] = cluster;
        std::fs::write(&path, f.to_string()).unwrap();
    };

    // Another cluster: refused, naming both and the ways out.
    rewrite(serde_json::json!({"system_identifier": "1", "timeline": real["timeline"]}));
    let msg = start(&raw).expect_error(T).await.to_string();
    assert!(
        msg.contains("cluster 1")
            && msg.contains(&format!("cluster {real_id}"))
            && msg.contains("offset.mismatch.strategy=trust_slot"),
        "{msg}"
    );
    // An earlier timeline than the offsets were written on: refused too.
    rewrite(serde_json::json!({"system_identifier": real_id, "timeline": 999}));
    let msg = start(&raw).expect_error(T).await.to_string();
    assert!(msg.contains("timeline 999"), "{msg}");

    // trust_slot follows this server's slot and records it.
    raw.insert("offset.mismatch.strategy".into(), "trust_slot".into());
    let running = start(&raw);
    db.exec("INSERT INTO c VALUES (2)").await;
    let recs = read_n(&env().kafka, &topic, 2, T).await;
    assert_eq!(recs[1].payload()["after"]["id"], 2);
    running.stop().await.unwrap();
    assert_eq!(read()[&cluster_key], real);
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_list_is_tried_in_order_until_a_writable_primary_answers() {
    let db = TestDb::create("hosts").await;
    db.exec("CREATE TABLE public.h (id int PRIMARY KEY)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("hosts");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert("publication.name".into(), prefix.clone());
    // The first host refuses connections (nothing listens on port 1); the second is the server.
    let host = env().pg_host.clone();
    raw.insert("database.hostname".into(), format!("{host},{host}"));
    raw.insert("database.port".into(), format!("1,{}", env().pg_port));
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO h VALUES (1)").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.h"), 1, T).await;
    assert_eq!(recs[0].payload()["after"]["id"], 1);
    running.stop().await.unwrap();

    // No host answers: a connection error that lists each host and why it was passed over.
    raw.insert("database.port".into(), "1,2".into());
    let err = start(&raw).expect_error(T).await;
    assert!(err.is_retriable(), "the connector retries: {err}");
    let msg = err.to_string();
    assert!(
        msg.contains("none of the hosts of database.hostname is a writable primary")
            && msg.contains(&format!("{host}:1 ("))
            && msg.contains(&format!("{host}:2 (")),
        "{msg}"
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_via_partition_root_puts_partitions_under_the_root_from_the_snapshot_on() {
    let db = TestDb::create("viaroot").await;
    db.exec(
        "CREATE TABLE events (id bigint, created date, payload text, PRIMARY KEY (id, created))
           PARTITION BY RANGE (created);
         CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
         CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
         INSERT INTO events VALUES (1, '2024-03-01', 'snap'), (2, '2025-03-01', 'snap');",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("viaroot");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("publication.name".into(), prefix.clone());
    raw.insert("publish.via.partition.root".into(), "true".into());
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    let via_root: bool = db
        .client
        .query_one(
            "SELECT pubviaroot FROM pg_publication WHERE pubname = $1",
            &[&prefix],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        via_root,
        "the publication is created with publish_via_partition_root"
    );
    // The snapshot first: a partition detached while it runs is read under its own name.
    let root_topic = format!("{prefix}.public.events");
    read_n(&env().kafka, &root_topic, 2, T).await;
    db.exec(
        "INSERT INTO events VALUES (3, '2024-06-01', 'p1'), (4, '2025-06-01', 'p2');
         CREATE TABLE events_2026 (id bigint NOT NULL, created date NOT NULL, payload text,
           PRIMARY KEY (id, created));
         ALTER TABLE events ATTACH PARTITION events_2026 FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
         INSERT INTO events VALUES (5, '2026-02-01', 'attached');",
    )
    .await;
    // PostgreSQL 14's pgoutput keeps sending a detached partition's first changes under its
    // former root (15 and later send them under its own name).
    let detach = server_version(&db).await >= 150000;
    if detach {
        db.exec(
            "ALTER TABLE events DETACH PARTITION events_2024;
             INSERT INTO events_2024 VALUES (6, '2024-09-01', 'detached');",
        )
        .await;
    }
    let root = read_n(&env().kafka, &format!("{prefix}.public.events"), 5, T).await;
    let got: Vec<(String, i64)> = root
        .iter()
        .map(|r| {
            let p = r.payload();
            (
                p["op"].as_str().unwrap().to_string(),
                p["after"]["id"].as_i64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, i64)> = [("r", 1), ("r", 2), ("c", 3), ("c", 4), ("c", 5)]
        .iter()
        .map(|(o, i)| (o.to_string(), *i))
        .collect();
    assert_eq!(
        got, want,
        "the snapshot and the changes of every partition under the root"
    );
    // A detached partition is a table of its own: its changes under its own name from then on.
    if detach {
        let detached = read_n(&env().kafka, &format!("{prefix}.public.events_2024"), 1, T).await;
        assert_eq!(detached[0].payload()["after"]["id"], 6);
        assert_eq!(
            detached.len(),
            1,
            "no snapshot of the partitions under their own names"
        );
    }
    let leaves = end_offsets(&env().kafka, &[format!("{prefix}.public.events_2025")]).await;
    assert_eq!(
        leaves.values().sum::<i64>(),
        0,
        "nothing under a partition's own name"
    );
    running.stop().await.unwrap();
    db.cleanup().await;
}
