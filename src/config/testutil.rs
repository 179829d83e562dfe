//! Configs for unit tests: the seed connector config of the project (a Kafka Connect request
//! for an outbox connector) with the connection keys it leaves to the environment added.

use super::{parse_config_text, RawConfig};

/// The seed connector request.
pub(crate) const SEED: &str = r#"{
  "name": "pedidos-cdc",
  "config": {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.hostname": "pg-primary",
    "database.dbname": "loja",
    "plugin.name": "pgoutput",
    "slot.name": "debezium_pedidos",
    "table.include.list": "public.pedidos,public.outbox",
    "topic.prefix": "loja",
    "tombstones.on.delete": "true",
    "transforms": "outbox",
    "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter"
  }
}"#;

/// A raw config of exactly `pairs`.
pub(crate) fn raw(pairs: &[(&str, &str)]) -> RawConfig {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The seed config with `database.user` and `bootstrap.servers` set, plus `extra`.
pub(crate) fn seed_with(extra: &[(&str, &str)]) -> RawConfig {
    let mut raw = parse_config_text(SEED).unwrap();
    raw.insert("database.user".into(), "postgres".into());
    raw.insert("bootstrap.servers".into(), "127.0.0.1:9092".into());
    for (k, v) in extra {
        raw.insert(k.to_string(), v.to_string());
    }
    raw
}
