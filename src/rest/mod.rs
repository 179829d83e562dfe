//! The REST API: Kafka Connect's endpoints, shapes, state names, status codes and error
//! bodies (`{"error_code":404,"message":...}`), over the [`Worker`]; plus `/metrics`
//! (Prometheus text format) and `/health`, `/health/live`, `/health/ready`.
//!
//! Who may write: every method but GET and HEAD changes state. When the worker config sets
//! credentials (a bearer token, or a user and password), a write must carry them (401
//! otherwise). When it sets none, writes are accepted from loopback peers only (403 for any
//! other peer), unless `pgcdc.rest.unauthenticated.writes=true` says the operator protects the
//! port some other way. Reads need no credentials: status, metrics and health stay open to
//! monitoring.

mod handlers;
mod loggers;
mod metrics;
pub mod probe;
mod tls;

pub use loggers::{ApplyFilter, Loggers};

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, Method, Request, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::config::{RestAuth, WorkerConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::worker::{Worker, WorkerError};

/// What the handlers share.
#[derive(Clone)]
struct App {
    worker: Worker,
    loggers: Loggers,
    auth: RestAuth,
    unauthenticated_writes: bool,
    /// `http` or `https`, for the `Location` of created connectors.
    scheme: &'static str,
    /// `pgcdc.health.unacknowledged.max.ms`.
    unacknowledged_max: std::time::Duration,
}

/// A bound REST listener, not yet serving.
pub struct Listener {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    /// For an `https://` listener.
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Listener {
    /// Binds `config`'s listener. Errors: the address is taken or cannot be bound (a config
    /// error naming `listeners`: another pgcdc or a Connect worker may hold the port).
    pub async fn bind(config: &WorkerConfig) -> Result<Listener> {
        // The keystore is read first: a bad one is a config error before the port is taken.
        let tls = config
            .tls_keystore
            .as_deref()
            .map(tls::acceptor)
            .transpose()?;
        let listener =
            tokio::net::TcpListener::bind((config.bind_host.as_str(), config.bind_port))
                .await
                .map_err(|e| {
                    Error::config(format!(
                        "the REST API cannot listen on {}: {e}. Another pgcdc or a Kafka Connect worker may hold the port: set listeners (--listeners, PGCDC_LISTENERS or the worker file) to a free address, such as http://127.0.0.1:0 for any free port",
                        config.listener
                    ))
                })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::new(ErrorKind::Internal, format!("REST listener address: {e}")))?;
        Ok(Listener {
            listener,
            addr,
            tls,
        })
    }

    /// The bound address (the real port when `listeners` asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves the API for `worker` until the process ends. Logs the address.
    pub async fn serve(self, worker: Worker, config: &WorkerConfig, loggers: Loggers) {
        let app = App {
            worker,
            loggers,
            auth: config.auth.clone(),
            unauthenticated_writes: config.unauthenticated_writes,
            scheme: if self.tls.is_some() { "https" } else { "http" },
            unacknowledged_max: config.unacknowledged_max,
        };
        if app.auth == RestAuth::None
            && !app.unauthenticated_writes
            && !self.addr.ip().is_loopback()
        {
            tracing::warn!(address = %self.addr,
                "the REST API is reachable beyond loopback and no credentials are set: writes are refused from other hosts until pgcdc.rest.auth.token or pgcdc.rest.auth.username/password is set (or pgcdc.rest.unauthenticated.writes=true)");
        }
        tracing::info!(address = %format!("{}://{}", app.scheme, self.addr), "REST API listening");
        let router = router(app);
        let service = router.into_make_service_with_connect_info::<Peer>();
        let served = match self.tls {
            Some(acceptor) => {
                axum::serve(tls::TlsListener::new(self.listener, acceptor), service).await
            }
            None => axum::serve(self.listener, service).await,
        };
        if let Err(e) = served {
            tracing::error!(error = %e, "REST API stopped");
        }
    }
}

fn router(app: App) -> Router {
    handlers::routes()
        .merge(metrics::routes())
        .merge(loggers::routes())
        .fallback(|| async { error(404, "HTTP 404 Not Found") })
        .method_not_allowed_fallback(|| async { error(405, "HTTP 405 Method Not Allowed") })
        .layer(axum::middleware::from_fn_with_state(app.clone(), authorize))
        .with_state(app)
}

/// Connect's error body.
fn error(status: u16, message: impl Into<String>) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::json!({"error_code": status, "message": message.into()});
    (code, axum::Json(body)).into_response()
}

impl IntoResponse for WorkerError {
    fn into_response(self) -> Response {
        error(self.status, self.message)
    }
}

/// The address of a request's peer, over HTTP or HTTPS.
#[derive(Debug, Clone, Copy)]
struct Peer(SocketAddr);

impl
    axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tls::TlsListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, tls::TlsListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

/// The write rule of the module docs.
async fn authorize(
    State(app): State<App>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    request: Request<Body>,
    next: Next,
) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let allowed = match &app.auth {
        RestAuth::None => app.unauthenticated_writes || peer.ip().is_loopback(),
        auth => given.is_some_and(|g| credentials_match(auth, g)),
    };
    if allowed {
        return next.run(request).await;
    }
    if app.auth == RestAuth::None {
        return error(
            403,
            "writes from other hosts need credentials: set pgcdc.rest.auth.token or pgcdc.rest.auth.username/password in the worker config (or pgcdc.rest.unauthenticated.writes=true when the port is protected otherwise)",
        );
    }
    let mut r = error(401, "missing or wrong credentials for a write");
    let scheme = match app.auth {
        RestAuth::Bearer(_) => "Bearer",
        _ => "Basic realm=\"pgcdc\"",
    };
    if let Ok(v) = scheme.parse() {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// `true` when the `Authorization` header value carries `auth`'s credentials.
fn credentials_match(auth: &RestAuth, given: &str) -> bool {
    use base64::Engine;
    let (scheme, value) = given.split_once(' ').unwrap_or((given, ""));
    match auth {
        RestAuth::None => true,
        RestAuth::Bearer(token) => {
            scheme.eq_ignore_ascii_case("bearer") && same(value.trim().as_bytes(), token.as_bytes())
        }
        RestAuth::Basic { username, password } => {
            let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(value.trim()) else {
                return false;
            };
            let expected = format!("{username}:{password}");
            scheme.eq_ignore_ascii_case("basic") && same(&decoded, expected.as_bytes())
        }
    }
}

/// Compares in time independent of where the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_checked_by_scheme_and_value() {
        let bearer = RestAuth::Bearer("s3cret".into());
        assert!(credentials_match(&bearer, "Bearer s3cret"));
        assert!(!credentials_match(&bearer, "Bearer s3cre"));
        assert!(!credentials_match(&bearer, "Basic s3cret"));
        let basic = RestAuth::Basic {
            username: "ops".into(),
            password: "pw".into(),
        };
        // base64("ops:pw")
        assert!(credentials_match(&basic, "Basic b3BzOnB3"));
        assert!(!credentials_match(&basic, "Basic b3BzOnB4"));
        assert!(!credentials_match(&basic, "Basic !!"));
    }
}
