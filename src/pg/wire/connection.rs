//! The wire connection: connect (transport, then start-up and authentication), simple
//! queries, START_REPLICATION (which turns the connection into the two halves of a
//! replication stream) and close.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::frame::{
    parse_data_row, parse_error_fields, parse_row_description, server_error, split_frame,
};
use super::replication::{ReplicationReader, ReplicationWriter};
use super::transport::{self, Stream};
use crate::config::{DatabaseConfig, SslMode};
use crate::error::{Error, ErrorKind, Result};

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

impl WireConnection {
    /// Connects and authenticates; `replication` adds `replication=database`.
    ///
    /// Errors: [`ErrorKind::Connection`] for network failures, [`ErrorKind::Auth`] for refused
    /// credentials or a missing password, [`ErrorKind::Config`] for TLS setup problems.
    pub async fn connect(db: &DatabaseConfig, replication: bool) -> Result<WireConnection> {
        let what = if replication { "replication" } else { "SQL" };
        tracing::debug!(host = %db.hostname, port = db.port, connection = what, "connecting to PostgreSQL");
        let attempt = Self::connect_negotiated(db, replication);
        tokio::time::timeout(db.connect_timeout, attempt)
            .await
            .map_err(|_| crate::pg::connect_timed_out(db, what))?
    }

    /// [`WireConnection::connect`] without its time limit: `sslmode=allow` tries plain text
    /// first, then TLS when the server refuses it.
    async fn connect_negotiated(db: &DatabaseConfig, replication: bool) -> Result<WireConnection> {
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
        let stream = transport::open(db, try_tls).await?;
        let mut conn = WireConnection {
            stream,
            buf: BytesMut::with_capacity(64 * 1024),
            parameters: HashMap::new(),
        };
        super::auth::startup(&mut conn, db, replication).await?;
        Ok(conn)
    }

    /// Writes `bytes` to the server.
    pub(super) async fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream
            .write_all(bytes)
            .await
            .map_err(Error::network_io)
    }

    /// Encodes a frontend message with `f` and writes it to the server.
    pub(super) async fn send(
        &mut self,
        f: impl FnOnce(&mut BytesMut) -> std::io::Result<()>,
    ) -> Result<()> {
        let mut out = BytesMut::new();
        f(&mut out).map_err(|e| Error::protocol("cannot encode a message").with_source(e))?;
        self.write(&out).await
    }

    /// The next backend message (tag and body), reading from the socket as needed.
    pub(super) async fn read_frame(&mut self) -> Result<(u8, Bytes)> {
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
        Ok(super::replication::split(self.stream, self.buf))
    }

    /// Sends Terminate and closes the connection.
    pub async fn close(mut self) {
        let mut out = BytesMut::new();
        frontend::terminate(&mut out);
        let _ = self.stream.write_all(&out).await;
        let _ = self.stream.shutdown().await;
    }
}

/// The first words of a statement, to name it in an error without quoting values.
fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
