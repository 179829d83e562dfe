//! The seed's connector config (config/pedidos-cdc.json) end to end: orders pass through as
//! change events, outbox rows are routed by the EventRouter.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;
use pgcdc::config::RawConfig;

const T: Duration = Duration::from_secs(60);

/// A test database with the seed's schema (`migrations/001_loja.sql`).
pub(crate) async fn seed_db(tag: &str) -> TestDb {
    let db = TestDb::create(tag).await;
    let migration = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations/001_loja.sql"
    ))
    .unwrap();
    db.exec(&migration).await;
    db
}

/// `base` (connection keys, the cluster-wide slot name, a per-test topic prefix: what a user
/// supplies with --set) with the seed file `config/pedidos-cdc.json` under it, unchanged.
pub(crate) fn with_seed_file(mut base: RawConfig) -> RawConfig {
    let file = pgcdc::config::load_file(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/pedidos-cdc.json"
    )))
    .unwrap();
    base.remove("name");
    for (k, v) in file {
        base.entry(k).or_insert(v);
    }
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_config_publishes_orders_and_routes_outbox_events_written_in_one_transaction() {
    let db = seed_db("seed").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("loja");
    let raw = with_seed_file(base_config(&db, &prefix, &env().kafka, dir.path()));
    assert_eq!(
        raw["transforms.outbox.type"],
        "io.debezium.transforms.outbox.EventRouter"
    );
    assert_eq!(raw["table.include.list"], "public.pedidos,public.outbox");
    let aggregate = unique("pedido");
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;

    db.exec(&format!(
        "BEGIN;
         INSERT INTO pedidos (id, cliente_id, total) VALUES (1, 42, 99.90);
         INSERT INTO outbox VALUES ('6f1c2d3e-0000-4000-8000-000000000001', '{aggregate}', '1', 'PedidoCriado',
                                    '{{\"pedido\": 1, \"total\": 99.90}}');
         COMMIT;
         DELETE FROM outbox;
         UPDATE pedidos SET status = 'pago' WHERE id = 1;
         DELETE FROM pedidos WHERE id = 1;"
    ))
    .await;

    let orders = read_n(&env().kafka, &format!("{prefix}.public.pedidos"), 4, T).await;
    let ops: Vec<String> = orders
        .iter()
        .map(|r| {
            r.payload()["op"]
                .as_str()
                .unwrap_or("tombstone")
                .to_string()
        })
        .collect();
    assert_eq!(ops, ["c", "u", "d", "tombstone"]);
    let after = &orders[0].payload()["after"];
    assert_eq!(after["cliente_id"], json!(42));
    assert_eq!(after["status"], json!("novo"));
    assert_eq!(
        after["total"],
        json!("JwY="),
        "99.90 at scale 2 is unscaled 9990 = 0x2706"
    );

    let topic = format!("outbox.event.{aggregate}");
    let events = read_n(&env().kafka, &topic, 1, T).await;
    let e = &events[0];
    assert_eq!(
        e.key_str(),
        r#"{"schema":{"type":"string","optional":false},"payload":"1"}"#
    );
    assert_eq!(
        String::from_utf8(e.value.clone().unwrap()).unwrap(),
        r#"{"schema":{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1},"payload":"{\"total\": 99.90, \"pedido\": 1}"}"#
    );
    assert_eq!(
        e.header("id").as_deref(),
        Some("6f1c2d3e-0000-4000-8000-000000000001")
    );
    assert!(e.timestamp.is_some());
    // The delete of the outbox row is dropped; nothing else lands on the outbox topic and the
    // table's own topic is not used for routed rows.
    let marker = unique("m");
    db.exec(&format!(
        "INSERT INTO outbox VALUES ('6f1c2d3e-0000-4000-8000-000000000002', '{aggregate}', '{marker}', 'Marker', NULL)"
    ))
    .await;
    let events = read_until(&env().kafka, &topic, T, move |r| {
        r.iter().any(|x| x.key_str().contains(&marker))
    })
    .await;
    assert_eq!(
        events.len(),
        2,
        "only the two inserts are routed: {events:?}"
    );
    assert_eq!(
        events[1].payload(),
        json!(null),
        "a NULL payload is a null value with the payload schema"
    );
    c.stop().await.unwrap();
    db.cleanup().await;
}
