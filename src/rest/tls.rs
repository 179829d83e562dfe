//! The HTTPS listener: TCP connections accepted, each TLS handshake run on its own task (with
//! a deadline, so a client that stalls holds nobody else up), and only completed handshakes
//! handed to the HTTP server. The certificate and private key come from one PEM file, as in
//! Kafka's PEM keystores (`listeners.https.ssl.keystore.location`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::config::keys;
use crate::error::{Error, Result};

/// How long a client may take to complete its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The server's TLS configuration from the PEM keystore at `path` (a private key and its
/// certificate chain, the server's certificate first). Errors: the file cannot be read, or
/// lacks a key or a certificate, or rustls refuses them.
pub fn acceptor(path: &Path) -> Result<TlsAcceptor> {
    let bad = |why: String| {
        Error::config(format!(
            "{}={}: {why}",
            keys::LISTENERS_HTTPS_KEYSTORE_LOCATION,
            path.display()
        ))
    };
    let pem = std::fs::read(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(format!("a certificate cannot be read: {e}")))?;
    if certs.is_empty() {
        return Err(bad(
            "no certificate (-----BEGIN CERTIFICATE-----) in it".into()
        ));
    }
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| bad(format!("the private key cannot be read: {e}")))?
        .ok_or_else(|| {
            bad("no unencrypted private key (-----BEGIN PRIVATE KEY-----) in it".into())
        })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::config("TLS setup failed").with_source(e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(format!("the key and certificate are refused: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A TCP listener that yields TLS streams.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
}

impl TlsListener {
    /// Serves TLS with `acceptor` on `tcp`.
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> TlsListener {
        TlsListener {
            tcp,
            acceptor,
            handshakes: JoinSet::new(),
        }
    }

    fn start_handshake(&mut self, stream: TcpStream, peer: SocketAddr) {
        let acceptor = self.acceptor.clone();
        self.handshakes.spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => Some((tls, peer)),
                Ok(Err(e)) => {
                    tracing::debug!(peer = %peer, error = %e, "REST API: TLS handshake failed");
                    None
                }
                Err(_) => {
                    tracing::debug!(peer = %peer, "REST API: TLS handshake timed out");
                    None
                }
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok((stream, peer)) => self.start_handshake(stream, peer),
                    Err(e) => {
                        // As axum's TCP listener does: a resource error (too many open files)
                        // passes; wait a moment instead of spinning.
                        tracing::debug!(error = %e, "REST API: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    if let Ok(Some(ready)) = done {
                        return ready;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
