//! The transport of a wire-protocol connection: a TCP connection to the server, plain or
//! wrapped in TLS after the SSLRequest negotiation that `database.sslmode` asks for; or, when
//! `database.hostname` is a directory (it starts with `/`), the server's Unix-domain socket
//! in it, `<dir>/.s.PGSQL.<port>`, which is never encrypted (libpq ignores `sslmode` there).
//!
//! The TLS configuration and the certificate checks themselves live in [`crate::pg::tls`];
//! this module only opens the socket and runs the negotiation on it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use crate::config::{DatabaseConfig, SslMode};
use crate::error::{Error, ErrorKind, IoContext, Result};

/// The transport: plain TCP, TLS over TCP, or a Unix-domain socket.
pub enum Stream {
    /// Unencrypted.
    Plain(TcpStream),
    /// TLS via rustls.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// A Unix-domain socket (local, never encrypted).
    Unix(UnixStream),
}

/// The server's Unix-domain socket when `database.hostname` is a socket directory (a path
/// starting with `/`, as libpq reads a host): `<dir>/.s.PGSQL.<port>`.
pub fn socket_path(db: &DatabaseConfig) -> Option<std::path::PathBuf> {
    db.hostname
        .starts_with('/')
        .then(|| std::path::Path::new(&db.hostname).join(format!(".s.PGSQL.{}", db.port)))
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// The libpq name of an sslmode.
pub fn sslmode_name(m: SslMode) -> &'static str {
    match m {
        SslMode::Disable => "disable",
        SslMode::Allow => "allow",
        SslMode::Prefer => "prefer",
        SslMode::Require => "require",
        SslMode::VerifyCa => "verify-ca",
        SslMode::VerifyFull => "verify-full",
    }
}

/// Connects to the server and, with `try_tls` (and an sslmode other than `disable`), asks for
/// TLS: the stream the start-up message is then sent on.
pub(super) async fn open(db: &DatabaseConfig, try_tls: bool) -> Result<Stream> {
    if let Some(path) = socket_path(db) {
        return unix_connect(db, &path).await.map(Stream::Unix);
    }
    let tcp = tcp_connect(db).await?;
    let tls = if try_tls {
        crate::pg::tls::client_config(db)?
    } else {
        None
    };
    match tls {
        None => Ok(Stream::Plain(tcp)),
        Some(tls) => negotiate_tls(tcp, tls, db).await,
    }
}

/// Connects to the Unix-domain socket at `path`, within `pgcdc.database.connect.timeout.ms`.
async fn unix_connect(db: &DatabaseConfig, path: &std::path::Path) -> Result<UnixStream> {
    let shown = path.display();
    tokio::time::timeout(db.connect_timeout, UnixStream::connect(path))
        .await
        .map_err(|_| {
            Error::connection(format!(
                "timed out connecting to PostgreSQL at {shown} after {} ms (pgcdc.database.connect.timeout.ms)",
                db.connect_timeout.as_millis()
            ))
        })?
        .map_err(|e| {
            let what = format!("cannot connect to PostgreSQL at {shown} (database.hostname is a socket directory)");
            Error::io(e, IoContext::Network, what)
        })
}

/// How long sent data may stay unacknowledged before the socket fails (Linux).
#[cfg(target_os = "linux")]
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens the TCP connection, within `pgcdc.database.connect.timeout.ms`.
async fn tcp_connect(db: &DatabaseConfig) -> Result<TcpStream> {
    let addr = format!("{}:{}", db.hostname, db.port);
    let stream = tokio::time::timeout(db.connect_timeout, TcpStream::connect(&addr))
        .await
        .map_err(|_| {
            Error::connection(format!(
                "timed out connecting to PostgreSQL at {addr} after {} ms (pgcdc.database.connect.timeout.ms)",
                db.connect_timeout.as_millis()
            ))
        })?
        .map_err(|e| {
            let what = format!("cannot connect to PostgreSQL at {addr}");
            Error::io(e, IoContext::Network, what)
        })?;
    stream.set_nodelay(true).ok();
    let sock = socket2::SockRef::from(&stream);
    if db.tcp_keepalive {
        // Probes after 15 s of silence, every 5 s, 3 of them: a dead peer is found in about
        // 30 s instead of the system's two hours.
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(Duration::from_secs(15))
            .with_interval(Duration::from_secs(5))
            .with_retries(3);
        sock.set_tcp_keepalive(&keepalive).ok();
    }
    // Data the peer has not acknowledged for this long fails the socket (a cut network
    // under a status update), instead of the kernel retrying for about 15 minutes.
    #[cfg(target_os = "linux")]
    sock.set_tcp_user_timeout(Some(TCP_USER_TIMEOUT)).ok();
    Ok(stream)
}

/// Sends SSLRequest and acts on the answer: `S` starts the TLS handshake, `N` (the server
/// does not do TLS) continues in plain text only where `sslmode` allows it.
async fn negotiate_tls(
    mut tcp: TcpStream,
    tls: Arc<rustls::ClientConfig>,
    db: &DatabaseConfig,
) -> Result<Stream> {
    let mut req = BytesMut::new();
    frontend::ssl_request(&mut req);
    tcp.write_all(&req).await.map_err(Error::network_io)?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer)
        .await
        .map_err(Error::network_io)?;
    match answer[0] {
        b'S' => tls_handshake(tcp, tls, db).await,
        b'N' if matches!(db.sslmode, SslMode::Prefer | SslMode::Allow) => Ok(Stream::Plain(tcp)),
        b'N' => Err(Error::new(
            ErrorKind::Server,
            format!(
                "the server at {}:{} does not accept TLS, but database.sslmode={} requires it (enable ssl on the server or lower sslmode)",
                db.hostname,
                db.port,
                sslmode_name(db.sslmode)
            ),
        )),
        other => Err(Error::protocol(format!(
            "unexpected answer 0x{other:02x} to the TLS request"
        ))),
    }
}

/// The TLS handshake after the server accepted SSLRequest. A rejected certificate is a
/// configuration error ([`crate::pg::tls::certificate_problem`]); any other failure is a
/// connection error.
async fn tls_handshake(
    tcp: TcpStream,
    tls: Arc<rustls::ClientConfig>,
    db: &DatabaseConfig,
) -> Result<Stream> {
    let name = crate::pg::tls::server_name(&db.hostname)?;
    let connector = tokio_rustls::TlsConnector::from(tls);
    let s = connector.connect(name, tcp).await.map_err(|e| {
        if let Some(msg) = crate::pg::tls::certificate_problem(&e, db) {
            return Error::config(msg).with_source(e);
        }
        let what = format!(
            "TLS handshake with {}:{} failed (database.sslmode={})",
            db.hostname,
            db.port,
            sslmode_name(db.sslmode)
        );
        Error::io(e, IoContext::Network, what)
    })?;
    Ok(Stream::Tls(Box::new(s)))
}
