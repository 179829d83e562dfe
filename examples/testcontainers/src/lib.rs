//! The testcontainers recipe for pgcdc: start the image next to the test's PostgreSQL and
//! Kafka and return once it streams.
//!
//! The whole config comes from `PGCDC_<KEY>` environment variables (the key in upper case, `.`
//! and `-` as `_`), so no file needs mounting; `--config /dev/null` is an empty config file.
//! The wait is on pgcdc's readiness endpoint, `GET /health/ready`: it answers 200 once the
//! slot exists and the connector takes its snapshot or streams, and 503 while it connects or
//! retries. Once it streams, every committed change reaches Kafka.
//!
//! On a bridge network the image's port 8083 is published and probed on the mapped port (what
//! testcontainers' own `WaitFor::http` does, without its HTTP client); on the host network
//! (services running on the host, as in pgcdc's CI) the REST API takes a free port of the
//! host, since every container there shares the host's ports.

use std::time::{Duration, Instant};

use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt, TestcontainersError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The port the image's REST API listens on (`PGCDC_LISTENERS=http://0.0.0.0:8083`).
const REST_PORT: u16 = 8083;

/// How long [`start_pgcdc`] waits for `GET /health/ready` to answer 200.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

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
/// `prefix` capturing `tables` (a `table.include.list`), and waits up to two minutes until
/// `GET /health/ready` answers 200 (it streams). The container stops when the returned value
/// is dropped. Errors: the container cannot start, exits, or is not ready in time (with the
/// last readiness answer or log lines).
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
    let host_network = services.network == "host";
    let listen_port = if host_network {
        free_host_port()?
    } else {
        REST_PORT
    };
    let request = GenericImage::new(repo, tag)
        .with_cmd(["run", "--config", "/dev/null"])
        .with_env_var("PGCDC_LISTENERS", format!("http://0.0.0.0:{listen_port}"));
    let mut request = if host_network {
        // The host network is a network mode, not a network testcontainers may create.
        request.with_host_config_modifier(|host| host.network_mode = Some("host".into()))
    } else {
        request.with_network(services.network.clone())
    };
    for (key, value) in settings {
        request = request.with_env_var(format!("PGCDC_{key}"), value);
    }
    let container = request.start().await?;
    let (host, port) = if host_network {
        ("127.0.0.1".to_string(), listen_port)
    } else {
        let host = container.get_host().await?.to_string();
        (host, container.get_host_port_ipv4(REST_PORT).await?)
    };
    wait_until_ready(&container, &host, port).await?;
    Ok(container)
}

/// A port no one listens on at the moment, for pgcdc's REST API on the host network.
fn free_host_port() -> Result<u16, TestcontainersError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Polls `GET /health/ready` at `host:port` until it answers 200. Errors: the container
/// exits first (its last log lines say why), or [`STARTUP_TIMEOUT`] passes (with the last
/// answer, which names what the connector is doing).
async fn wait_until_ready(
    container: &ContainerAsync<GenericImage>,
    host: &str,
    port: u16,
) -> Result<(), TestcontainersError> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    loop {
        let last = match readiness(host, port).await {
            Ok((200, _)) => return Ok(()),
            Ok((status, body)) => format!("{status} {body}"),
            Err(e) => e.to_string(),
        };
        if !container.is_running().await? {
            let stderr = container.stderr_to_vec().await.unwrap_or_default();
            let stderr = String::from_utf8_lossy(&stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
            return Err(TestcontainersError::other(format!(
                "pgcdc exited before it was ready; its last log lines:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )));
        }
        if Instant::now() >= deadline {
            return Err(TestcontainersError::other(format!(
                "GET /health/ready did not answer 200 within {} s; last answer: {last}",
                STARTUP_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One `GET /health/ready`: the status code and body.
async fn readiness(host: &str, port: u16) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect((host, port)).await?;
    let request =
        format!("GET /health/ready HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer within 5 s"))??;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer")
        })?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.trim().to_string()))
}
