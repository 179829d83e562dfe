//! `pgcdc health`: a client of this process's own `GET /health/ready`, for container health
//! checks in images that have no HTTP client (the pgcdc image has none: Debian slim).
//!
//! It speaks plain HTTP/1.1 to the worker's listener (a wildcard bind address is probed on
//! loopback). An `https://` listener is refused with the command that probes it instead: the
//! probe would need the listener's trust store, which a health check should not carry.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::WorkerConfig;
use crate::error::{Error, Result};

/// How long the whole probe may take: connect, request, answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The readiness answer: HTTP status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// 200 when every connector meant to run streams or snapshots, 503 otherwise.
    pub status: u16,
    /// The JSON body (`{"status":"ready"}`, or the connectors that are not).
    pub body: String,
}

/// Asks the listener of `worker` for `GET /health/ready`. Errors: an `https://` listener or
/// port 0 (config errors naming the fix); no answer within [`PROBE_TIMEOUT`], or an answer
/// that is not HTTP (connection errors).
pub async fn ready(worker: &WorkerConfig) -> Result<Readiness> {
    if worker.tls_keystore.is_some() {
        return Err(Error::config(format!(
            "pgcdc health speaks plain HTTP and {} is an https listener: probe it with curl --cacert <CA file> {}/health/ready",
            worker.listener, worker.listener
        )));
    }
    if worker.bind_port == 0 {
        return Err(Error::config(format!(
            "listeners={} has port 0 (any free port): give the port the worker listens on with --listeners http://HOST:PORT",
            worker.listener
        )));
    }
    let host = probe_host(&worker.bind_host);
    let addr = format!("{host}:{}", worker.bind_port);
    let exchange = async {
        let mut stream = TcpStream::connect((host, worker.bind_port)).await?;
        let request = format!(
            "GET /health/ready HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = match tokio::time::timeout(PROBE_TIMEOUT, exchange).await {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => {
            return Err(
                Error::connection(format!("no answer from the REST API at {addr}")).with_source(e),
            )
        }
        Err(_) => {
            return Err(Error::connection(format!(
                "no answer from the REST API at {addr} within {} s",
                PROBE_TIMEOUT.as_secs()
            )))
        }
    };
    parse_answer(&answer).ok_or_else(|| {
        Error::connection(format!(
            "the answer from {addr} is not HTTP: is listeners the pgcdc REST API?"
        ))
    })
}

/// Where to probe a listener bound to `bind_host`: loopback for a wildcard address.
fn probe_host(bind_host: &str) -> &str {
    match bind_host {
        "0.0.0.0" | "" => "127.0.0.1",
        "::" | "[::]" => "::1",
        h => h.trim_start_matches('[').trim_end_matches(']'),
    }
}

/// The status and body of an HTTP/1.1 answer (not chunked: axum sends a length for JSON).
/// `None` when it is not one.
fn parse_answer(answer: &[u8]) -> Option<Readiness> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status_line = head.lines().next()?;
    let mut parts = status_line.split_whitespace();
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let status = parts.next()?.parse().ok()?;
    Some(Readiness {
        status,
        body: body.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_status_and_body_of_an_answer() {
        let a = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(
            parse_answer(a),
            Some(Readiness {
                status: 503,
                body: "{}".into()
            })
        );
        assert_eq!(parse_answer(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(parse_answer(b""), None);
        assert_eq!(parse_answer(b"HTTP/1.1 abc\r\n\r\n"), None);
    }

    #[test]
    fn a_wildcard_listener_is_probed_on_loopback() {
        assert_eq!(probe_host("0.0.0.0"), "127.0.0.1");
        assert_eq!(probe_host("[::]"), "::1");
        assert_eq!(probe_host("10.0.0.5"), "10.0.0.5");
    }

    #[tokio::test]
    async fn https_and_port_zero_are_refused_with_the_fix() {
        let mut w = WorkerConfig {
            bind_port: 0,
            ..WorkerConfig::default()
        };
        let e = ready(&w).await.unwrap_err();
        assert!(
            e.to_string().contains("--listeners http://HOST:PORT"),
            "{e}"
        );
        w.bind_port = 8083;
        w.tls_keystore = Some("/k.pem".into());
        let e = ready(&w).await.unwrap_err();
        assert!(e.to_string().contains("curl"), "{e}");
    }
}
