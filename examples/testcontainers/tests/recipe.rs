//! The recipe against the PostgreSQL and Kafka that scripts/services.sh runs on this machine
//! (so the container joins the host network): pgcdc starts, streams, and a row inserted
//! afterwards is in Kafka, which the slot shows: pgcdc confirms a position to PostgreSQL only
//! once Kafka has acknowledged every record before it.

use std::time::{Duration, Instant};

use pgcdc_testcontainers::{start_pgcdc, Services};

fn var(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgcdc_starts_next_to_postgres_and_kafka_and_streams() {
    let services = Services {
        pg_host: "127.0.0.1".into(),
        pg_port: var("PGCDC_TEST_PG_PORT", "54329").parse().unwrap(),
        database: format!("tc{}", std::process::id()),
        user: "postgres".into(),
        password: var("PGCDC_TEST_PG_PASSWORD", "postgres"),
        kafka: var("PGCDC_TEST_KAFKA", "127.0.0.1:59092"),
        network: "host".into(),
    };
    let prefix = services.database.clone();
    let connect = |dbname: String| {
        let url = format!(
            "host=127.0.0.1 port={} user=postgres password={} dbname={dbname}",
            services.pg_port, services.password
        );
        async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect to PostgreSQL");
            tokio::spawn(conn);
            client
        }
    };
    let admin = connect("postgres".into()).await;
    admin
        .batch_execute(&format!("CREATE DATABASE {}", services.database))
        .await
        .unwrap();
    let pg = connect(services.database.clone()).await;
    let table = "items";
    pg.batch_execute(&format!("CREATE TABLE public.{table} (id int PRIMARY KEY)"))
        .await
        .unwrap();

    let image = var("PGCDC_IMAGE", "localhost/pgcdc:dev");
    let started = Instant::now();
    let pgcdc = start_pgcdc(
        &image,
        &services,
        &prefix,
        &prefix,
        &format!("public.{table}"),
    )
    .await
    .expect("pgcdc streams");
    println!(
        "pgcdc streaming {} ms after start",
        started.elapsed().as_millis()
    );

    pg.batch_execute(&format!("INSERT INTO public.{table} VALUES (1)"))
        .await
        .unwrap();
    let row = pg
        .query_one("SELECT pg_current_wal_insert_lsn()::text", &[])
        .await
        .unwrap();
    let after_insert: String = row.get(0);
    let slot = prefix.clone();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let row = pg
            .query_one(
                "SELECT confirmed_flush_lsn >= $1::text::pg_lsn FROM pg_replication_slots WHERE slot_name = $2",
                &[&after_insert, &slot],
            )
            .await
            .unwrap();
        if row.get::<_, Option<bool>>(0) == Some(true) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the insert was not confirmed within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pgcdc.stop().await.expect("stop pgcdc");
    drop(pgcdc);
    drop(pg);
    // Dropping the database drops its (now inactive) slot.
    admin
        .batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", services.database))
        .await
        .unwrap();
}
