//! The frame parser, sans-io: backend messages cut out of a byte buffer and decoded, with
//! bounds checks on every length, so that no input makes it panic (bad input is a
//! [`ErrorKind::Protocol`](crate::error::ErrorKind::Protocol) error).
//!
//! It covers what the wire connection reads: message framing ([`split_frame`]),
//! RowDescription and DataRow of simple-query results, ParameterStatus, ErrorResponse /
//! NoticeResponse fields ([`ServerError`], classified by [`server_error`]), and the frames
//! of the replication stream ([`parse_replication_frame`]).

use bytes::{Buf, Bytes, BytesMut};

use crate::error::{sqlstate, Error, Result, SqlContext};
use crate::lsn::Lsn;

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

/// The fields of an ErrorResponse or NoticeResponse body. Fields it does not use are skipped;
/// a missing terminator ends the body.
pub(super) fn parse_error_fields(mut body: &[u8]) -> ServerError {
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

/// The longest backend message accepted (1 GiB, PostgreSQL's own limit on a field).
const MAX_FRAME: usize = 1 << 30;

/// Takes the next complete backend message out of `buf`: its tag and body (`None` when more
/// bytes are needed). A length below 4 or above [`MAX_FRAME`] is a protocol error.
pub(super) fn split_frame(buf: &mut BytesMut) -> Result<Option<(u8, Bytes)>> {
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

/// The column names of a RowDescription body.
pub(super) fn parse_row_description(body: &[u8]) -> Result<Vec<String>> {
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

/// The values of a DataRow body, as text; `None` is SQL NULL.
pub(super) fn parse_data_row(body: &[u8]) -> Result<Vec<Option<String>>> {
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

/// The name and value of a ParameterStatus body (empty when missing).
pub(super) fn parse_parameter_status(body: &[u8]) -> (String, String) {
    let mut parts = body.split(|&c| c == 0);
    let k = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let v = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    (k, v)
}

/// A frame of the replication stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicationFrame {
    /// XLogData: one pgoutput message.
    XLogData {
        /// Start LSN of the data (for a change, the change's LSN; for a Commit, its end LSN).
        wal_start: Lsn,
        /// Current end of WAL on the server.
        wal_end: Lsn,
        /// Server clock, µs since 2000-01-01.
        send_time: i64,
        /// The pgoutput message.
        data: Bytes,
    },
    /// Primary keepalive.
    Keepalive {
        /// Current end of WAL on the server.
        wal_end: Lsn,
        /// Server clock, µs since 2000-01-01.
        send_time: i64,
        /// The server wants a status update now (it is nearing `wal_sender_timeout`).
        reply_requested: bool,
    },
    /// The server ended the stream.
    CopyDone,
}

/// Takes the next complete replication-stream frame out of `buf` (`None` when more bytes are
/// needed). ErrorResponse becomes an error classified by SQLSTATE; a CommandComplete or
/// ReadyForQuery (the server ending COPY on shutdown) is a retriable connection error.
pub fn parse_replication_frame(buf: &mut BytesMut) -> Result<Option<ReplicationFrame>> {
    loop {
        let Some((tag, body)) = split_frame(buf)? else {
            return Ok(None);
        };
        match tag {
            b'd' => return parse_copy_data(body).map(Some),
            b'c' => return Ok(Some(ReplicationFrame::CopyDone)),
            b'E' => return Err(replication_error(&body)),
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

/// The replication message inside a CopyData body: XLogData (`w`) or primary keepalive
/// (`k`).
fn parse_copy_data(mut body: Bytes) -> Result<ReplicationFrame> {
    if body.is_empty() {
        return Err(Error::protocol("empty CopyData message"));
    }
    let kind = body.get_u8();
    match kind {
        b'w' => {
            if body.len() < 24 {
                return Err(Error::protocol("truncated XLogData header"));
            }
            let wal_start = Lsn(body.get_u64());
            let wal_end = Lsn(body.get_u64());
            let send_time = body.get_i64();
            Ok(ReplicationFrame::XLogData {
                wal_start,
                wal_end,
                send_time,
                data: body,
            })
        }
        b'k' => {
            if body.len() < 17 {
                return Err(Error::protocol("truncated primary keepalive"));
            }
            Ok(ReplicationFrame::Keepalive {
                wal_end: Lsn(body.get_u64()),
                send_time: body.get_i64(),
                reply_requested: body.get_u8() == 1,
            })
        }
        other => Err(Error::protocol(format!(
            "unknown replication message kind {:?}",
            other as char
        ))),
    }
}

/// What ends a stream with binary tuples when a published table has a column whose type has no
/// binary send function inside an array (the walsender fails on such a row).
const BINARY_SEND_MISSING: &str =
    "the replication stream failed (with pgcdc.pgoutput.binary=true, a table in the publication has a column the server cannot send in binary form, such as an array of an isn type; pgcdc checks the publication's tables at start, so the column was added since, or the table joined the publication since: set pgcdc.pgoutput.binary=false, or leave the table out of the publication, e.g. publication.autocreate.mode=filtered with a new publication.name)";

/// The error an ErrorResponse in the replication stream ends it with.
fn replication_error(body: &[u8]) -> Error {
    let e = parse_error_fields(body);
    // pgoutput looks the publication up with the catalog as it was when each
    // change was written: one dropped (and maybe re-created) since the slot's
    // position is missing there for good, whatever exists now.
    let context = if e.code == sqlstate::UNDEFINED_OBJECT && e.message.contains("publication") {
        "the replication stream failed (the publication did not exist, as decoding sees the catalog, when the changes still in the slot were written: it was dropped, or created after the slot; the slot cannot be read past them. Drop the slot and restart with snapshot.mode=when_needed to take a new snapshot)"
    } else if e.code == sqlstate::UNDEFINED_FUNCTION && e.message.contains("binary output function")
    {
        BINARY_SEND_MISSING
    } else {
        "the replication stream failed"
    };
    server_error(context, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

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
                wal_end: Lsn(42),
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
                wal_start: Lsn(100),
                wal_end: Lsn(200),
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
    fn a_type_without_a_binary_send_function_gets_the_cause_and_the_fix() {
        let body =
            b"SERROR\0VERROR\0C42883\0Mno binary output function available for type isbn\0\0";
        let mut buf = BytesMut::from(&frame(b'E', body)[..]);
        let msg = parse_replication_frame(&mut buf).unwrap_err().one_line();
        assert!(
            msg.contains("pgcdc.pgoutput.binary=false") && msg.contains("isbn"),
            "{msg}"
        );
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

    #[test]
    fn query_results_and_parameters_are_parsed() {
        let mut desc = 2u16.to_be_bytes().to_vec();
        for name in ["slot_name", "consistent_point"] {
            desc.extend_from_slice(name.as_bytes());
            desc.push(0);
            desc.extend_from_slice(&[0; 18]);
        }
        assert_eq!(
            parse_row_description(&desc).unwrap(),
            ["slot_name", "consistent_point"]
        );
        let mut row = 2u16.to_be_bytes().to_vec();
        row.extend_from_slice(&(-1i32).to_be_bytes());
        row.extend_from_slice(&3i32.to_be_bytes());
        row.extend_from_slice(b"0/1");
        assert_eq!(
            parse_data_row(&row).unwrap(),
            [None, Some("0/1".to_string())]
        );
        assert_eq!(
            parse_parameter_status(b"server_version\x0015.4\0"),
            ("server_version".to_string(), "15.4".to_string())
        );
        let e = parse_error_fields(b"SERROR\0Mboom\0Dmore\0Hfix it\0\0");
        assert_eq!(e.to_string(), "ERROR : boom (more) hint: fix it");
    }

    /// Every prefix of well-formed messages, and bytes that are not messages at all, give a
    /// result (a value, `None` or an error) and never a panic.
    #[test]
    fn truncated_or_garbage_input_never_panics() {
        let mut keepalive = vec![b'k'];
        keepalive.extend_from_slice(&[0xff; 17]);
        let mut xlog = vec![b'w'];
        xlog.extend_from_slice(&[0x7f; 24]);
        let bodies: [&[u8]; 4] = [
            &keepalive,
            &xlog,
            b"SERROR\0C42704\0Mpublication \"p\"\0\0",
            &[0xff, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
        ];
        for body in bodies {
            for cut in 0..=body.len() {
                let part = &body[..cut];
                let _ = parse_row_description(part);
                let _ = parse_data_row(part);
                let _ = parse_parameter_status(part);
                let _ = parse_error_fields(part);
                for tag in [b'd', b'E', b'N', b'c', b'C', b'x'] {
                    let mut buf = BytesMut::from(&frame(tag, part)[..]);
                    let _ = parse_replication_frame(&mut buf);
                    // A frame whose length claims more than there is waits for more bytes.
                    let mut whole = frame(tag, body);
                    whole.truncate(5 + cut);
                    let mut buf = BytesMut::from(&whole[..]);
                    let _ = parse_replication_frame(&mut buf);
                }
            }
        }
        for len in [i32::MIN, -1, 0, 3, i32::MAX] {
            let mut bytes = vec![b'd'];
            bytes.extend_from_slice(&len.to_be_bytes());
            let mut buf = BytesMut::from(&bytes[..]);
            assert!(parse_replication_frame(&mut buf).is_err(), "length {len}");
        }
    }
}
