//! A PostgreSQL frontend connection over the wire protocol, for what tokio-postgres does not
//! do: `replication=database` sessions, the replication commands (IDENTIFY_SYSTEM,
//! CREATE_REPLICATION_SLOT, START_REPLICATION) and the CopyBoth stream.
//!
//! Start-up pins the session settings that change the text output of values
//! ([`SESSION_SETTINGS`]), authenticates with trust, cleartext, md5 or SCRAM-SHA-256, and
//! negotiates TLS per `sslmode`. Frames are parsed by hand with bounds checks; frontend
//! messages are built with `postgres-protocol`.
//!
//! Streaming protocol: see "Streaming Replication Protocol" in the PostgreSQL docs. XLogData
//! (`w`) carries one pgoutput message; primary keepalive (`k`) carries the server's WAL end
//! and a reply-requested flag; our standby status update (`r`) reports write/flush/apply LSNs.

use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
use postgres_protocol::message::frontend;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::TcpStream;

use crate::config::{DatabaseConfig, SslMode};
use crate::error::{sqlstate, Error, ErrorKind, Result, SqlContext};

/// Session settings sent at start-up on every connection, so that value text is stable
/// whatever the server, database or role defaults say.
pub const SESSION_SETTINGS: &[(&str, &str)] = &[
    ("DateStyle", "ISO"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("extra_float_digits", "3"),
    ("bytea_output", "hex"),
    ("client_encoding", "UTF8"),
];

/// The transport: plain TCP or TLS over TCP.
pub enum Stream {
    /// Unencrypted.
    Plain(TcpStream),
    /// TLS via rustls.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
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
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// An ErrorResponse or NoticeResponse from the server.
#[derive(Debug, Clone, Default)]
pub struct ServerError {
    /// Severity (`ERROR`, `FATAL`, ...).
    pub severity: String,
    /// SQLSTATE code.
    pub code: String,
    /// Primary message.
    pub message: String,
    /// Detail, if any.
    pub detail: Option<String>,
    /// Hint, if any.
    pub hint: Option<String>,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.severity, self.code, self.message)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        if let Some(h) = &self.hint {
            write!(f, " hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ServerError {}

fn parse_error_fields(mut body: &[u8]) -> ServerError {
    let mut e = ServerError::default();
    while let Some((&field, rest)) = body.split_first() {
        if field == 0 {
            break;
        }
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let value = String::from_utf8_lossy(&rest[..end]).into_owned();
        match field {
            b'V' => e.severity = value,
            b'S' if e.severity.is_empty() => e.severity = value,
            b'C' => e.code = value,
            b'M' => e.message = value,
            b'D' => e.detail = Some(value),
            b'H' => e.hint = Some(value),
            _ => {}
        }
        body = &rest[(end + 1).min(rest.len())..];
    }
    e
}

/// A server error on this connection, classified by its SQLSTATE ([`crate::error`]).
pub fn server_error(context: &str, e: ServerError) -> Error {
    Error::from_sqlstate(&e.code, SqlContext::Connection, format!("{context}: {e}")).with_source(e)
}

/// Result rows of a simple query, as text.
#[derive(Debug, Clone, Default)]
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows; `None` is SQL NULL.
    pub rows: Vec<Vec<Option<String>>>,
}

impl QueryResult {
    /// Value of column `name` in row `row`.
    pub fn get(&self, row: usize, name: &str) -> Option<&str> {
        let col = self.columns.iter().position(|c| c == name)?;
        self.rows.get(row)?.get(col)?.as_deref()
    }
}

/// A connection speaking the wire protocol directly.
pub struct WireConnection {
    stream: Stream,
    buf: BytesMut,
    /// ParameterStatus values reported by the server at start-up.
    pub parameters: HashMap<String, String>,
}

const MAX_FRAME: usize = 1 << 30;

async fn tcp_connect(db: &DatabaseConfig) -> Result<TcpStream> {
    let addr = format!("{}:{}", db.hostname, db.port);
    let stream = tokio::time::timeout(db.connect_timeout, TcpStream::connect(&addr))
        .await
        .map_err(|_| {
            Error::connection(format!(
                "timed out connecting to PostgreSQL at {addr} after {} ms (connection.validation.timeout.ms)",
                db.connect_timeout.as_millis()
            ))
        })?
        .map_err(|e| Error::connection(format!("cannot connect to PostgreSQL at {addr}")).with_source(e))?;
    stream.set_nodelay(true).ok();
    if db.tcp_keepalive {
        let sock = socket2::SockRef::from(&stream);
        sock.set_keepalive(true).ok();
    }
    Ok(stream)
}

impl WireConnection {
    /// Connects and authenticates; `replication` adds `replication=database`.
    ///
    /// Errors: [`ErrorKind::Connection`] for network failures, [`ErrorKind::Auth`] for refused
    /// credentials or a missing password, [`ErrorKind::Config`] for TLS setup problems.
    pub async fn connect(db: &DatabaseConfig, replication: bool) -> Result<WireConnection> {
        match db.sslmode {
            SslMode::Allow => match Self::connect_with(db, replication, false).await {
                Err(e) if e.kind() == ErrorKind::Auth => {
                    Self::connect_with(db, replication, true).await
                }
                other => other,
            },
            SslMode::Disable => Self::connect_with(db, replication, false).await,
            _ => Self::connect_with(db, replication, true).await,
        }
    }

    async fn connect_with(
        db: &DatabaseConfig,
        replication: bool,
        try_tls: bool,
    ) -> Result<WireConnection> {
        let mut tcp = tcp_connect(db).await?;
        let tls = if try_tls {
            crate::pg::tls::client_config(db)?
        } else {
            None
        };
        let stream = match tls {
            None => Stream::Plain(tcp),
            Some(tls) => {
                let mut req = BytesMut::new();
                frontend::ssl_request(&mut req);
                tcp.write_all(&req).await.map_err(Error::network_io)?;
                let mut answer = [0u8; 1];
                tcp.read_exact(&mut answer)
                    .await
                    .map_err(Error::network_io)?;
                match answer[0] {
                    b'S' => {
                        let name = crate::pg::tls::server_name(&db.hostname)?;
                        let connector = tokio_rustls::TlsConnector::from(tls);
                        let s = connector.connect(name, tcp).await.map_err(|e| {
                            if let Some(msg) = crate::pg::tls::certificate_problem(&e, db) {
                                return Error::config(msg).with_source(e);
                            }
                            Error::connection(format!(
                                "TLS handshake with {}:{} failed (database.sslmode={})",
                                db.hostname,
                                db.port,
                                sslmode_name(db.sslmode)
                            ))
                            .with_source(e)
                        })?;
                        Stream::Tls(Box::new(s))
                    }
                    b'N' if matches!(db.sslmode, SslMode::Prefer | SslMode::Allow) => Stream::Plain(tcp),
                    b'N' => {
                        return Err(Error::new(
                            ErrorKind::Server,
                            format!(
                                "the server at {}:{} does not accept TLS, but database.sslmode={} requires it (enable ssl on the server or lower sslmode)",
                                db.hostname,
                                db.port,
                                sslmode_name(db.sslmode)
                            ),
                        ))
                    }
                    other => return Err(Error::protocol(format!("unexpected answer 0x{other:02x} to the TLS request"))),
                }
            }
        };
        let mut conn = WireConnection {
            stream,
            buf: BytesMut::with_capacity(64 * 1024),
            parameters: HashMap::new(),
        };
        conn.startup(db, replication).await?;
        Ok(conn)
    }

    async fn startup(&mut self, db: &DatabaseConfig, replication: bool) -> Result<()> {
        let mut params: Vec<(&str, &str)> = vec![
            ("user", &db.user),
            ("database", &db.dbname),
            ("application_name", "pgcdc"),
        ];
        if replication {
            params.push(("replication", "database"));
        }
        params.extend_from_slice(SESSION_SETTINGS);
        let mut out = BytesMut::new();
        frontend::startup_message(params.iter().copied(), &mut out)
            .map_err(|e| Error::config("invalid connection parameter").with_source(e))?;
        self.stream
            .write_all(&out)
            .await
            .map_err(Error::network_io)?;

        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, body) = self.read_frame().await?;
            match tag {
                b'R' => {
                    let mut b = body.clone();
                    if b.len() < 4 {
                        return Err(Error::protocol("truncated authentication request"));
                    }
                    let code = b.get_i32();
                    match code {
                        0 => {}
                        3 => {
                            let pw = self.password(db)?;
                            self.send(|buf| frontend::password_message(pw.as_bytes(), buf)).await?;
                        }
                        5 => {
                            if b.len() < 4 {
                                return Err(Error::protocol("truncated md5 salt"));
                            }
                            let mut salt = [0u8; 4];
                            b.copy_to_slice(&mut salt);
                            let pw = self.password(db)?;
                            let hash = postgres_protocol::authentication::md5_hash(db.user.as_bytes(), pw.as_bytes(), salt);
                            self.send(|buf| frontend::password_message(hash.as_bytes(), buf)).await?;
                        }
                        10 => {
                            let mechanisms: Vec<&[u8]> = b.split(|&c| c == 0).filter(|m| !m.is_empty()).collect();
                            if !mechanisms.contains(&&b"SCRAM-SHA-256"[..]) {
                                return Err(Error::new(
                                    ErrorKind::Auth,
                                    "the server offers no supported SASL mechanism (SCRAM-SHA-256 is supported)",
                                ));
                            }
                            let pw = self.password(db)?;
                            let s = ScramSha256::new(pw.as_bytes(), ChannelBinding::unsupported());
                            let first = s.message().to_vec();
                            self.send(|buf| frontend::sasl_initial_response("SCRAM-SHA-256", &first, buf)).await?;
                            scram = Some(s);
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| Error::protocol("SASL continue without SASL start"))?;
                            s.update(&b).map_err(|e| Error::new(ErrorKind::Auth, "SCRAM authentication failed").with_source(e))?;
                            let msg = s.message().to_vec();
                            self.send(|buf| frontend::sasl_response(&msg, buf)).await?;
                        }
                        12 => {
                            let mut s = scram.take().ok_or_else(|| Error::protocol("SASL final without SASL start"))?;
                            s.finish(&b).map_err(|e| {
                                Error::new(ErrorKind::Auth, "SCRAM authentication failed: the server's proof is wrong").with_source(e)
                            })?;
                        }
                        2 => return Err(Error::new(ErrorKind::Auth, "the server asks for Kerberos V5 authentication, which pgcdc does not support")),
                        7 | 8 => return Err(Error::new(ErrorKind::Auth, "the server asks for GSSAPI authentication, which pgcdc does not support")),
                        9 => return Err(Error::new(ErrorKind::Auth, "the server asks for SSPI authentication, which pgcdc does not support")),
                        other => return Err(Error::protocol(format!("unknown authentication request {other}"))),
                    }
                }
                b'E' => {
                    return Err(server_error(
                        &format!(
                            "PostgreSQL at {}:{} refused the connection as user {}",
                            db.hostname, db.port, db.user
                        ),
                        parse_error_fields(&body),
                    ))
                }
                b'S' => {
                    let mut parts = body.split(|&c| c == 0);
                    let k = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
                    let v = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
                    self.parameters.insert(k, v);
                }
                b'K' | b'N' => {}
                b'Z' => return Ok(()),
                other => {
                    return Err(Error::protocol(format!(
                        "unexpected message {:?} during start-up",
                        other as char
                    )))
                }
            }
        }
    }

    fn password(&self, db: &DatabaseConfig) -> Result<String> {
        db.password.clone().ok_or_else(|| {
            Error::new(
                ErrorKind::Auth,
                format!(
                    "the server asks for a password for user {} but none is set (database.password, PGCDC_DATABASE_PASSWORD or PGPASSWORD)",
                    db.user
                ),
            )
        })
    }

    async fn send(&mut self, f: impl FnOnce(&mut BytesMut) -> std::io::Result<()>) -> Result<()> {
        let mut out = BytesMut::new();
        f(&mut out).map_err(|e| Error::protocol("cannot encode a message").with_source(e))?;
        self.stream
            .write_all(&out)
            .await
            .map_err(Error::network_io)?;
        Ok(())
    }

    async fn read_frame(&mut self) -> Result<(u8, Bytes)> {
        loop {
            if let Some(frame) = split_frame(&mut self.buf)? {
                return Ok(frame);
            }
            let n = self
                .stream
                .read_buf(&mut self.buf)
                .await
                .map_err(Error::network_io)?;
            if n == 0 {
                return Err(Error::connection("PostgreSQL closed the connection"));
            }
        }
    }

    /// The server's `server_version_num`-style number (e.g. 150018), from start-up parameters.
    pub fn server_version_num(&self) -> u32 {
        let v = self
            .parameters
            .get("server_version")
            .map(String::as_str)
            .unwrap_or("0");
        let mut nums = v
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u32>().unwrap_or(0));
        let major = nums.next().unwrap_or(0);
        let minor = nums.next().unwrap_or(0);
        major * 10000 + minor
    }

    /// Runs `sql` with the simple query protocol and returns the rows of the last result.
    pub async fn simple_query(&mut self, sql: &str) -> Result<QueryResult> {
        self.send(|buf| frontend::query(sql, buf)).await?;
        let mut result = QueryResult::default();
        let mut error = None;
        loop {
            let (tag, body) = self.read_frame().await?;
            match tag {
                b'T' => {
                    result = QueryResult {
                        columns: parse_row_description(&body)?,
                        rows: Vec::new(),
                    };
                }
                b'D' => result.rows.push(parse_data_row(&body)?),
                b'E' => error = Some(parse_error_fields(&body)),
                b'C' | b'I' | b'N' | b'S' => {}
                b'Z' => break,
                other => {
                    return Err(Error::protocol(format!(
                        "unexpected message {:?} in a query response",
                        other as char
                    )))
                }
            }
        }
        match error {
            Some(e) => Err(server_error(
                &format!("command failed: {}", first_words(sql)),
                e,
            )),
            None => Ok(result),
        }
    }

    /// Sends `START_REPLICATION ...` and waits for CopyBothResponse; returns the two halves
    /// of the stream.
    pub async fn start_replication(
        mut self,
        command: &str,
    ) -> Result<(ReplicationReader, ReplicationWriter)> {
        self.send(|buf| frontend::query(command, buf)).await?;
        loop {
            let (tag, body) = self.read_frame().await?;
            match tag {
                b'W' => break,
                b'E' => {
                    return Err(server_error(
                        "START_REPLICATION failed",
                        parse_error_fields(&body),
                    ))
                }
                b'N' | b'S' => {}
                other => {
                    return Err(Error::protocol(format!(
                        "unexpected message {:?} after START_REPLICATION",
                        other as char
                    )))
                }
            }
        }
        let (rd, wr) = tokio::io::split(self.stream);
        Ok((
            ReplicationReader { rd, buf: self.buf },
            ReplicationWriter { wr },
        ))
    }

    /// Sends Terminate and closes the connection.
    pub async fn close(mut self) {
        let mut out = BytesMut::new();
        frontend::terminate(&mut out);
        let _ = self.stream.write_all(&out).await;
        let _ = self.stream.shutdown().await;
    }
}

fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn split_frame(buf: &mut BytesMut) -> Result<Option<(u8, Bytes)>> {
    if buf.len() < 5 {
        return Ok(None);
    }
    let tag = buf[0];
    let len = i32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
    if len < 4 || len as usize > MAX_FRAME {
        return Err(Error::protocol(format!(
            "invalid message length {len} for message {:?}",
            tag as char
        )));
    }
    let total = 1 + len as usize;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let mut frame = buf.split_to(total);
    frame.advance(5);
    Ok(Some((tag, frame.freeze())))
}

fn parse_row_description(body: &[u8]) -> Result<Vec<String>> {
    let mut b = body;
    if b.len() < 2 {
        return Err(Error::protocol("truncated RowDescription"));
    }
    let n = u16::from_be_bytes([b[0], b[1]]) as usize;
    b = &b[2..];
    let mut cols = Vec::with_capacity(n);
    for _ in 0..n {
        let end = b
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| Error::protocol("truncated RowDescription"))?;
        cols.push(String::from_utf8_lossy(&b[..end]).into_owned());
        let skip = end + 1 + 18;
        if b.len() < skip {
            return Err(Error::protocol("truncated RowDescription"));
        }
        b = &b[skip..];
    }
    Ok(cols)
}

fn parse_data_row(body: &[u8]) -> Result<Vec<Option<String>>> {
    let mut b = body;
    if b.len() < 2 {
        return Err(Error::protocol("truncated DataRow"));
    }
    let n = u16::from_be_bytes([b[0], b[1]]) as usize;
    b = &b[2..];
    let mut row = Vec::with_capacity(n);
    for _ in 0..n {
        if b.len() < 4 {
            return Err(Error::protocol("truncated DataRow"));
        }
        let len = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        b = &b[4..];
        if len < 0 {
            row.push(None);
        } else {
            let len = len as usize;
            if b.len() < len {
                return Err(Error::protocol("truncated DataRow"));
            }
            row.push(Some(String::from_utf8_lossy(&b[..len]).into_owned()));
            b = &b[len..];
        }
    }
    Ok(row)
}

/// A frame of the replication stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicationFrame {
    /// XLogData: one pgoutput message.
    XLogData {
        /// Start LSN of the data (for a change, the change's LSN; for a Commit, its end LSN).
        wal_start: u64,
        /// Current end of WAL on the server.
        wal_end: u64,
        /// Server clock, µs since 2000-01-01.
        send_time: i64,
        /// The pgoutput message.
        data: Bytes,
    },
    /// Primary keepalive.
    Keepalive {
        /// Current end of WAL on the server.
        wal_end: u64,
        /// Server clock, µs since 2000-01-01.
        send_time: i64,
        /// The server wants a status update now (it is nearing `wal_sender_timeout`).
        reply_requested: bool,
    },
    /// The server ended the stream.
    CopyDone,
}

/// The reading half of a replication stream. [`ReplicationReader::fill`] is cancel-safe,
/// so it can sit in a `select!` next to timers.
pub struct ReplicationReader {
    rd: ReadHalf<Stream>,
    buf: BytesMut,
}

/// Bytes asked for per read; the buffer grows only for a larger single frame.
const READ_CHUNK: usize = 256 * 1024;

impl ReplicationReader {
    /// Reads more bytes from the socket into the buffer. Cancel-safe. Errors when the
    /// connection closes.
    pub async fn fill(&mut self) -> Result<()> {
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        let n = self
            .rd
            .read_buf(&mut self.buf)
            .await
            .map_err(Error::network_io)?;
        if n == 0 {
            return Err(Error::connection(
                "PostgreSQL closed the replication connection",
            ));
        }
        Ok(())
    }

    /// The next complete frame in the buffer, if any. A server error ends the stream with an
    /// error carrying the SQLSTATE.
    pub fn next_frame(&mut self) -> Result<Option<ReplicationFrame>> {
        parse_replication_frame(&mut self.buf)
    }

    /// Bytes buffered but not yet parsed.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

/// The writing half of a replication stream.
pub struct ReplicationWriter {
    wr: WriteHalf<Stream>,
}

/// Current time as µs since the PostgreSQL epoch.
pub fn pg_now_micros() -> i64 {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    unix - crate::pg::PG_EPOCH_OFFSET_MICROS
}

impl ReplicationWriter {
    /// Sends a standby status update: `write`, `flush` and `apply` LSNs (flush is what the
    /// server records as the slot's `confirmed_flush_lsn`).
    pub async fn send_status(&mut self, write: u64, flush: u64, apply: u64) -> Result<()> {
        let mut out = BytesMut::with_capacity(40);
        out.put_u8(b'd');
        out.put_i32(4 + 1 + 8 * 4 + 1);
        out.put_u8(b'r');
        out.put_u64(write);
        out.put_u64(flush);
        out.put_u64(apply);
        out.put_i64(pg_now_micros());
        out.put_u8(0);
        self.wr.write_all(&out).await.map_err(Error::network_io)?;
        self.wr.flush().await.map_err(Error::network_io)?;
        Ok(())
    }

    /// Sends Terminate and shuts the connection down.
    pub async fn send_terminate(&mut self) -> Result<()> {
        let mut out = BytesMut::new();
        frontend::terminate(&mut out);
        self.wr.write_all(&out).await.map_err(Error::network_io)?;
        self.wr.shutdown().await.map_err(Error::network_io)?;
        Ok(())
    }

    /// Ends our side of the CopyBoth stream.
    pub async fn send_copy_done(&mut self) -> Result<()> {
        let mut out = BytesMut::new();
        frontend::copy_done(&mut out);
        self.wr.write_all(&out).await.map_err(Error::network_io)?;
        self.wr.flush().await.map_err(Error::network_io)?;
        Ok(())
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

/// Takes the next complete replication-stream frame out of `buf` (`None` when more bytes are
/// needed). ErrorResponse becomes an error classified by SQLSTATE; a CommandComplete or
/// ReadyForQuery (the server ending COPY on shutdown) is a retriable connection error.
pub fn parse_replication_frame(buf: &mut BytesMut) -> Result<Option<ReplicationFrame>> {
    loop {
        let Some((tag, mut body)) = split_frame(buf)? else {
            return Ok(None);
        };
        match tag {
            b'd' => {
                if body.is_empty() {
                    return Err(Error::protocol("empty CopyData message"));
                }
                let kind = body.get_u8();
                return match kind {
                    b'w' => {
                        if body.len() < 24 {
                            return Err(Error::protocol("truncated XLogData header"));
                        }
                        let wal_start = body.get_u64();
                        let wal_end = body.get_u64();
                        let send_time = body.get_i64();
                        Ok(Some(ReplicationFrame::XLogData {
                            wal_start,
                            wal_end,
                            send_time,
                            data: body,
                        }))
                    }
                    b'k' => {
                        if body.len() < 17 {
                            return Err(Error::protocol("truncated primary keepalive"));
                        }
                        Ok(Some(ReplicationFrame::Keepalive {
                            wal_end: body.get_u64(),
                            send_time: body.get_i64(),
                            reply_requested: body.get_u8() == 1,
                        }))
                    }
                    other => Err(Error::protocol(format!(
                        "unknown replication message kind {:?}",
                        other as char
                    ))),
                };
            }
            b'c' => return Ok(Some(ReplicationFrame::CopyDone)),
            b'E' => {
                let e = parse_error_fields(&body);
                // pgoutput looks the publication up with the catalog as it was when each
                // change was written: one dropped (and maybe re-created) since the slot's
                // position is missing there for good, whatever exists now.
                let context = if e.code == sqlstate::UNDEFINED_OBJECT
                    && e.message.contains("publication")
                {
                    "the replication stream failed (the publication did not exist, as decoding sees the catalog, when the changes still in the slot were written: it was dropped, or created after the slot; the slot cannot be read past them. Drop the slot and restart with snapshot.mode=when_needed to take a new snapshot)"
                } else {
                    "the replication stream failed"
                };
                return Err(server_error(context, e));
            }
            b'N' | b'S' => continue,
            // The server ended the COPY without our asking (it is shutting down): the
            // connection is going away, which is retriable.
            b'C' | b'Z' => {
                return Err(Error::connection(
                    "PostgreSQL ended the replication stream (server shutting down?)",
                ))
            }
            other => {
                return Err(Error::protocol(format!(
                    "unexpected message {:?} in the replication stream",
                    other as char
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn keepalive_and_xlogdata_frames_are_parsed_and_partial_frames_wait() {
        let mut keepalive = vec![b'k'];
        keepalive.extend_from_slice(&42u64.to_be_bytes());
        keepalive.extend_from_slice(&7i64.to_be_bytes());
        keepalive.push(1);
        let mut xlog = vec![b'w'];
        xlog.extend_from_slice(&100u64.to_be_bytes());
        xlog.extend_from_slice(&200u64.to_be_bytes());
        xlog.extend_from_slice(&9i64.to_be_bytes());
        xlog.extend_from_slice(b"B...");
        let mut bytes = frame(b'd', &keepalive);
        bytes.extend(frame(b'd', &xlog));
        let mut buf = BytesMut::from(&bytes[..bytes.len() - 3]);
        assert_eq!(
            parse_replication_frame(&mut buf).unwrap(),
            Some(ReplicationFrame::Keepalive {
                wal_end: 42,
                send_time: 7,
                reply_requested: true
            })
        );
        assert_eq!(
            parse_replication_frame(&mut buf).unwrap(),
            None,
            "incomplete frame waits for more bytes"
        );
        buf.extend_from_slice(&bytes[bytes.len() - 3..]);
        match parse_replication_frame(&mut buf).unwrap() {
            Some(ReplicationFrame::XLogData {
                wal_start: 100,
                wal_end: 200,
                data,
                ..
            }) => assert_eq!(&data[..], b"B..."),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_server_ending_copy_on_shutdown_is_a_retriable_connection_error() {
        let mut buf = BytesMut::from(&frame(b'C', b"COPY 0\0")[..]);
        let err = parse_replication_frame(&mut buf).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection);
        assert!(err.is_retriable());
    }

    #[test]
    fn a_publication_missing_from_decoding_gets_the_cause_and_the_fix() {
        let body = b"SERROR\0VERROR\0C42704\0Mpublication \"p\" does not exist\0\0";
        let mut buf = BytesMut::from(&frame(b'E', body)[..]);
        let err = parse_replication_frame(&mut buf).unwrap_err();
        assert!(!err.is_retriable());
        let msg = err.one_line();
        assert!(
            msg.contains("dropped, or created after the slot")
                && msg.contains("snapshot.mode=when_needed"),
            "{msg}"
        );
    }

    #[test]
    fn server_errors_are_classified_by_sqlstate() {
        let body =
            b"SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0";
        let mut buf = BytesMut::from(&frame(b'E', body)[..]);
        let err = parse_replication_frame(&mut buf).unwrap_err();
        assert!(
            err.is_retriable(),
            "admin shutdown is retriable: {}",
            err.one_line()
        );
        let body = b"SERROR\0VERROR\0C55000\0Mcannot read from logical replication slot\0\0";
        let mut buf = BytesMut::from(&frame(b'E', body)[..]);
        let err = parse_replication_frame(&mut buf).unwrap_err();
        assert!(!err.is_retriable());
        assert!(err.one_line().contains("55000"), "{}", err.one_line());
    }

    #[test]
    fn absurd_frame_lengths_are_protocol_errors() {
        let mut buf = BytesMut::from(&[b'd', 0, 0, 0, 1][..]);
        assert_eq!(
            parse_replication_frame(&mut buf).unwrap_err().kind(),
            ErrorKind::Protocol
        );
    }
}
