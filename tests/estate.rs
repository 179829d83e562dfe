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
