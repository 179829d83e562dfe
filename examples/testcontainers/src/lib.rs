//! The testcontainers recipe for pgcdc: start the image next to the test's PostgreSQL and
//! Kafka and return once it streams.
//!
//! The whole config comes from `PGCDC_<KEY>` environment variables (the key in upper case, `.`
//! and `-` as `_`), so no file needs mounting; `--config /dev/null` is an empty config file.
//! pgcdc logs `streaming started` once the slot exists, the snapshot (if any) is in Kafka and
//! changes flow: from then on, every committed change reaches Kafka.

use std::time::Duration;

use testcontainers::core::WaitFor;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt, TestcontainersError};

/// Where pgcdc finds the test's services, as seen from inside its container.
#[derive(Debug, Clone)]
pub struct Services {
    /// PostgreSQL host (a network alias, or 127.0.0.1 on the host network).
    pub pg_host: String,
    /// PostgreSQL port.
    pub pg_port: u16,
    /// Database, user and password.
    pub database: String,
    pub user: String,
    pub password: String,
    /// Kafka `bootstrap.servers`.
    pub kafka: String,
    /// A Docker network to join (`host`, or the network the services' containers share).
    pub network: String,
}

/// Starts `image` (`name:tag`, e.g. `pgcdc:dev`) as connector `name` with topic prefix
/// `prefix` capturing `tables` (a `table.include.list`), and waits up to two minutes until it
/// streams. The container stops when the returned value is dropped.
pub async fn start_pgcdc(
    image: &str,
    services: &Services,
    name: &str,
    prefix: &str,
    tables: &str,
) -> Result<ContainerAsync<GenericImage>, TestcontainersError> {
    let (repo, tag) = image.rsplit_once(':').unwrap_or((image, "latest"));
    let settings = [
        ("NAME", name.to_string()),
        ("DATABASE_HOSTNAME", services.pg_host.clone()),
        ("DATABASE_PORT", services.pg_port.to_string()),
        ("DATABASE_DBNAME", services.database.clone()),
        ("DATABASE_USER", services.user.clone()),
        ("DATABASE_PASSWORD", services.password.clone()),
        ("BOOTSTRAP_SERVERS", services.kafka.clone()),
        ("TOPIC_PREFIX", prefix.to_string()),
        ("SLOT_NAME", prefix.replace(['-', '.'], "_")),
        ("TABLE_INCLUDE_LIST", tables.to_string()),
        // The offsets live in Kafka: nothing to mount, and a restarted container resumes.
        ("OFFSETS_STORAGE_TOPIC", format!("{prefix}-offsets")),
    ];
    let request = GenericImage::new(repo, tag)
        .with_wait_for(WaitFor::message_on_stderr("streaming started"))
        .with_cmd(["run", "--config", "/dev/null"])
        .with_startup_timeout(Duration::from_secs(120));
    let mut request = if services.network == "host" {
        // The host network is a network mode, not a network testcontainers may create.
        request.with_host_config_modifier(|host| host.network_mode = Some("host".into()))
    } else {
        request.with_network(services.network.clone())
    };
    for (key, value) in settings {
        request = request.with_env_var(format!("PGCDC_{key}"), value);
    }
    request.start().await
}
