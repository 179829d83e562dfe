//! TLS for PostgreSQL connections with rustls, following libpq's `sslmode` semantics:
//! `require` encrypts without verifying the server certificate, `verify-ca` checks the chain
//! against the root certificates, `verify-full` also checks the host name.
//!
//! Root certificates come from `database.sslrootcert` (PEM), or the Mozilla roots bundled with
//! `webpki-roots` when it is not set. A client certificate comes from `database.sslcert` and
//! `database.sslkey` (PEM or DER PKCS#8, encrypted ones decrypted with `database.sslpassword`:
//! see [`super::client_key`]).
//!
//! Both kinds of connection use this configuration: the wire connection runs the SSLRequest
//! negotiation and the handshake itself (`crate::pg::wire`), the tokio-postgres SQL
//! connections through the [`RustlsMakeConnect`] adapter defined here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

use crate::config::{DatabaseConfig, SslMode};
use crate::error::{Error, IoContext, Result};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_pem(path: &std::path::Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        let message = format!("cannot read {what} {} (database.{what})", path.display());
        Error::io(e, IoContext::Config, message)
    })
}

fn root_store(db: &DatabaseConfig) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    match &db.sslrootcert {
        Some(path) => {
            let pem = read_pem(path, "sslrootcert")?;
            let mut n = 0;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| {
                    Error::config(format!(
                        "database.sslrootcert {} is not a PEM certificate file",
                        path.display()
                    ))
                    .with_source(e)
                })?;
                roots.add(cert).map_err(|e| {
                    Error::config(format!(
                        "database.sslrootcert {} holds an unusable certificate",
                        path.display()
                    ))
                    .with_source(e)
                })?;
                n += 1;
            }
            if n == 0 {
                return Err(Error::config(format!(
                    "database.sslrootcert {} contains no PEM certificate",
                    path.display()
                )));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(roots)
}

/// Accepts any server certificate (sslmode `require`), still checking handshake signatures.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Verifies the chain but not the host name (sslmode `verify-ca`).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                ..
            })) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Builds the rustls client configuration for `db.sslmode` (`None` for `disable`).
pub fn client_config(db: &DatabaseConfig) -> Result<Option<Arc<ClientConfig>>> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::config("TLS setup failed").with_source(e))?;
    let builder = match db.sslmode {
        SslMode::Disable => return Ok(None),
        SslMode::Allow | SslMode::Prefer | SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider.clone()))),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let verifier = WebPkiServerVerifier::builder_with_provider(
                Arc::new(root_store(db)?),
                provider.clone(),
            )
            .build()
            .map_err(|e| {
                Error::config("cannot build the TLS certificate verifier").with_source(e)
            })?;
            if db.sslmode == SslMode::VerifyCa {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)))
            } else {
                builder.with_webpki_verifier(verifier)
            }
        }
    };
    let config = match (&db.sslcert, &db.sslkey) {
        (Some(cert), Some(key)) => {
            let cert_pem = read_pem(cert, "sslcert")?;
            let certs: Vec<CertificateDer<'static>> =
                rustls_pemfile::certs(&mut cert_pem.as_slice())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| {
                        Error::config(format!(
                            "database.sslcert {} is not a PEM certificate",
                            cert.display()
                        ))
                        .with_source(e)
                    })?;
            let key_bytes = read_pem(key, "sslkey")?;
            let key =
                super::client_key::read_client_key(&key_bytes, key, db.sslpassword.as_deref())?;
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                Error::config("the client certificate and key do not match").with_source(e)
            })?
        }
        _ => builder.with_no_client_auth(),
    };
    Ok(Some(Arc::new(config)))
}

/// The TLS server name for `host` (an IP address or a DNS name).
pub fn server_name(host: &str) -> Result<ServerName<'static>> {
    ServerName::try_from(host.to_string()).map_err(|_| {
        Error::config(format!(
            "database.hostname={host} is not a valid host name for TLS"
        ))
    })
}

/// When `e` (or an error in its source chain) is a rejected server certificate, the message
/// that says why and how to fix it. A rejected certificate is a setting to change, not a
/// network failure to retry.
pub fn certificate_problem(
    e: &(dyn std::error::Error + 'static),
    db: &DatabaseConfig,
) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let found = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(rustls::Error::InvalidCertificate(why)) = found {
            let fix = if db.sslrootcert.is_some() {
                "check that database.sslrootcert holds the CA that signed the server's certificate, and that database.hostname is a name the certificate lists"
            } else {
                "set database.sslrootcert to the CA that signed the server's certificate (or database.sslmode=require to encrypt without verifying it)"
            };
            return Some(format!(
                "cannot connect to PostgreSQL at {}:{}: the server's TLS certificate was rejected ({why:?}) with database.sslmode={}: {fix}",
                db.hostname,
                db.port,
                crate::pg::wire::sslmode_name(db.sslmode)
            ));
        }
        cur = err.source();
    }
    None
}

/// rustls as a tokio-postgres TLS connector.
#[derive(Clone)]
pub struct RustlsMakeConnect {
    config: Arc<rustls::ClientConfig>,
}

impl RustlsMakeConnect {
    /// A connector handshaking with `config` (from [`client_config`]).
    pub fn new(config: Arc<ClientConfig>) -> Self {
        RustlsMakeConnect { config }
    }
}

/// One TLS handshake for one connection.
pub struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

/// A TLS stream for tokio-postgres.
pub struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> TlsConnect<S> for RustlsConnect {
    type Stream = RustlsStream<S>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let s = tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await?;
            Ok(RustlsStream(s))
        })
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> MakeTlsConnect<S> for RustlsMakeConnect {
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = std::io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> std::io::Result<RustlsConnect> {
        let name = ServerName::try_from(domain.to_string())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        Ok(RustlsConnect {
            config: self.config.clone(),
            name,
        })
    }
}
