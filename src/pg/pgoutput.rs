//! Sans-io decoder for the `pgoutput` logical replication message format (protocol version 1).
//!
//! Input is the payload of one XLogData message (one pgoutput message); output is a
//! [`Message`]. The decoder never panics: every read is bounds-checked, and a message that
//! ends early ([`DecodeError::Incomplete`]) is told apart from one whose content is invalid
//! ([`DecodeError::Malformed`]). Column values stay as [`Bytes`] slices of the input, so
//! decoding copies nothing.
//!
//! Source: "Logical Replication Message Formats" in the PostgreSQL documentation.

use bytes::Bytes;

use crate::lsn::Lsn;

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The message ended before a field that its format requires.
    #[error(
        "pgoutput message {tag:?} is truncated: needed {needed} more byte(s) at offset {offset}"
    )]
    Incomplete {
        /// The message tag.
        tag: char,
        /// Byte offset where the read failed.
        offset: usize,
        /// Missing bytes.
        needed: usize,
    },
    /// The content breaks the format (unknown tag, bad tuple kind, bad string).
    #[error("malformed pgoutput message {tag:?}: {reason}")]
    Malformed {
        /// The message tag.
        tag: char,
        /// What is wrong.
        reason: String,
    },
}

/// One column of a Relation message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationColumn {
    /// `true` when the column is part of the replica identity (flag bit 1).
    pub is_key: bool,
    /// Column name.
    pub name: String,
    /// Type OID.
    pub type_oid: u32,
    /// Type modifier (`atttypmod`), `-1` when none.
    pub type_modifier: i32,
}

/// Relation ('R'): the shape of a table, sent before its first change in a session and
/// again after every schema change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    /// Relation OID.
    pub id: u32,
    /// Schema name.
    pub namespace: String,
    /// Table name.
    pub name: String,
    /// Replica identity setting: `d` default, `n` nothing, `f` full, `i` index.
    pub replica_identity: u8,
    /// Columns in table order (dropped and, before PG 18, generated columns are absent).
    pub columns: Vec<RelationColumn>,
}

/// One value of a TupleData.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TupleValue {
    /// SQL NULL ('n').
    Null,
    /// Unchanged TOASTed value, not sent ('u').
    UnchangedToast,
    /// Text output of the type ('t').
    Text(Bytes),
    /// Binary send format ('b'), only with the `binary` option.
    Binary(Bytes),
}

/// A row image: one value per relation column.
pub type Tuple = Vec<TupleValue>;

/// Old row image of an Update or Delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OldTuple {
    /// 'K': only the replica-identity columns are set, others are Null.
    Key(Tuple),
    /// 'O': the full old row (REPLICA IDENTITY FULL).
    Full(Tuple),
}

/// A decoded pgoutput message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// 'B': start of a transaction.
    Begin {
        /// LSN of the commit record (not its end).
        final_lsn: Lsn,
        /// Commit time, microseconds since 2000-01-01.
        commit_time: i64,
        /// Transaction id.
        xid: u32,
    },
    /// 'C': end of a transaction.
    Commit {
        /// Flags (unused, 0).
        flags: u8,
        /// LSN of the commit record.
        commit_lsn: Lsn,
        /// End LSN of the transaction: the position to confirm once it is delivered.
        end_lsn: Lsn,
        /// Commit time, microseconds since 2000-01-01.
        commit_time: i64,
    },
    /// 'O': the transaction came from another origin.
    Origin {
        /// Commit LSN on the origin server.
        commit_lsn: Lsn,
        /// Origin name.
        name: String,
    },
    /// 'R': table shape.
    Relation(Relation),
    /// 'Y': a non-built-in data type used by a following Relation.
    Type {
        /// Type OID.
        id: u32,
        /// Schema of the type.
        namespace: String,
        /// Type name.
        name: String,
    },
    /// 'I': a new row.
    Insert {
        /// Relation OID.
        relation_id: u32,
        /// New row.
        new: Tuple,
    },
    /// 'U': a changed row.
    Update {
        /// Relation OID.
        relation_id: u32,
        /// Old row or key, when the replica identity sends it.
        old: Option<OldTuple>,
        /// New row; unchanged TOASTed values are [`TupleValue::UnchangedToast`].
        new: Tuple,
    },
    /// 'D': a removed row.
    Delete {
        /// Relation OID.
        relation_id: u32,
        /// Old row or key.
        old: OldTuple,
    },
    /// 'T': one TRUNCATE statement over one or more tables.
    Truncate {
        /// Option bits: 1 = CASCADE, 2 = RESTART IDENTITY.
        options: u8,
        /// Truncated relation OIDs.
        relation_ids: Vec<u32>,
    },
    /// 'M': a logical decoding message (`pg_logical_emit_message`).
    LogicalMessage {
        /// `true` when emitted inside a transaction.
        transactional: bool,
        /// LSN of the message.
        lsn: Lsn,
        /// Prefix given by the writer.
        prefix: String,
        /// Content bytes.
        content: Bytes,
    },
}

impl Message {
    /// Short name of the message kind, for logs and offsets (`INSERT`, `COMMIT`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Message::Begin { .. } => "BEGIN",
            Message::Commit { .. } => "COMMIT",
            Message::Origin { .. } => "ORIGIN",
            Message::Relation(_) => "RELATION",
            Message::Type { .. } => "TYPE",
            Message::Insert { .. } => "INSERT",
            Message::Update { .. } => "UPDATE",
            Message::Delete { .. } => "DELETE",
            Message::Truncate { .. } => "TRUNCATE",
            Message::LogicalMessage { .. } => "MESSAGE",
        }
    }
}

struct Reader<'a> {
    buf: &'a Bytes,
    pos: usize,
    tag: char,
}

impl<'a> Reader<'a> {
    fn need(&self, n: usize) -> Result<(), DecodeError> {
        let left = self.buf.len().saturating_sub(self.pos);
        if left < n {
            return Err(DecodeError::Incomplete {
                tag: self.tag,
                offset: self.pos,
                needed: n - left,
            });
        }
        Ok(())
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        self.need(1)?;
        let v = self.buf[self.pos];
        self.pos += 1;
        Ok(v)
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        self.need(2)?;
        let v = u16::from_be_bytes([self.buf[self.pos], self.buf[self.pos + 1]]);
        self.pos += 2;
        Ok(v)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.need(4)?;
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.buf[self.pos..self.pos + 4]);
        self.pos += 4;
        Ok(u32::from_be_bytes(b))
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(self.u32()? as i32)
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.need(8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buf[self.pos..self.pos + 8]);
        self.pos += 8;
        Ok(u64::from_be_bytes(b))
    }
    fn lsn(&mut self) -> Result<Lsn, DecodeError> {
        self.u64().map(Lsn)
    }
    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(self.u64()? as i64)
    }
    fn bytes(&mut self, n: usize) -> Result<Bytes, DecodeError> {
        self.need(n)?;
        let v = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(v)
    }
    /// NUL-terminated UTF-8 string.
    fn cstr(&mut self) -> Result<String, DecodeError> {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(DecodeError::Incomplete {
                tag: self.tag,
                offset: self.buf.len(),
                needed: 1,
            })?;
        let s = std::str::from_utf8(&rest[..end])
            .map_err(|_| self.malformed("a name is not valid UTF-8"))?;
        self.pos += end + 1;
        Ok(s.to_string())
    }
    fn malformed(&self, reason: impl Into<String>) -> DecodeError {
        DecodeError::Malformed {
            tag: self.tag,
            reason: reason.into(),
        }
    }
    fn tuple(&mut self) -> Result<Tuple, DecodeError> {
        let n = self.u16()? as usize;
        // Each column takes at least one byte: refuse counts the input cannot hold.
        self.need(n)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let kind = self.u8()?;
            out.push(match kind {
                b'n' => TupleValue::Null,
                b'u' => TupleValue::UnchangedToast,
                b't' | b'b' => {
                    let len = self.i32()?;
                    if len < 0 {
                        return Err(self.malformed(format!("negative column length {len}")));
                    }
                    let data = self.bytes(len as usize)?;
                    if kind == b't' {
                        TupleValue::Text(data)
                    } else {
                        TupleValue::Binary(data)
                    }
                }
                other => {
                    return Err(self.malformed(format!("unknown tuple column kind 0x{other:02x}")))
                }
            });
        }
        Ok(out)
    }
    fn finish(&self) -> Result<(), DecodeError> {
        if self.pos != self.buf.len() {
            return Err(self.malformed(format!(
                "{} unexpected trailing byte(s)",
                self.buf.len() - self.pos
            )));
        }
        Ok(())
    }
}

/// Decodes one pgoutput message of protocol version 1 (the payload of one XLogData message).
///
/// Errors: [`DecodeError::Incomplete`] when `buf` ends early, [`DecodeError::Malformed`] for an
/// unknown tag or invalid content (including the messages of protocol version 2 and later,
/// which [`decode_streaming`] reads). Never panics.
pub fn decode(buf: &Bytes) -> Result<Message, DecodeError> {
    let (tag, mut r) = open(buf)?;
    if is_v2_tag(tag) {
        return Err(r.malformed(
            "message of pgoutput protocol version 2 or later (streaming or two-phase), which was not requested",
        ));
    }
    let msg = body(&mut r, tag)?;
    r.finish()?;
    Ok(msg)
}

/// A message of pgoutput protocol version 2 with the `streaming` option on (PostgreSQL 14+),
/// as [`decode_streaming`] reads it.
///
/// Source: "Logical Replication Message Formats" (Stream Start, Stream Stop, Stream Commit,
/// Stream Abort, and the transaction id that data messages carry inside a stream block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamingMessage {
    /// A message outside any stream block: exactly what protocol 1 sends.
    Plain(Message),
    /// 'S': a block of changes of the in-progress transaction `xid` follows.
    StreamStart {
        /// Top-level transaction id.
        xid: u32,
        /// `true` for the transaction's first block.
        first_segment: bool,
    },
    /// 'E': the current block ends.
    StreamStop,
    /// 'c': the streamed transaction `xid` committed.
    StreamCommit {
        /// Top-level transaction id.
        xid: u32,
        /// LSN of the commit record.
        commit_lsn: Lsn,
        /// End LSN of the transaction: the position to confirm once it is delivered.
        end_lsn: Lsn,
        /// Commit time, microseconds since 2000-01-01.
        commit_time: i64,
    },
    /// 'A': the streamed transaction `xid` (when `subxid == xid`) or its subtransaction
    /// `subxid` aborted.
    StreamAbort {
        /// Top-level transaction id.
        xid: u32,
        /// The aborted (sub)transaction.
        subxid: u32,
    },
    /// 'O' inside a stream block: the transaction came from another origin. Sent in a block
    /// without a transaction id; its commit LSN on the origin is not known yet (0).
    InBlockOrigin,
    /// A data message ('R', 'Y', 'I', 'U', 'D', 'T', 'M') inside a stream block, of
    /// transaction or subtransaction `xid`. Its content is decoded later, when the transaction
    /// commits, by [`decode_in_block`] on the same bytes.
    InBlock {
        /// The (sub)transaction the message belongs to.
        xid: u32,
    },
}

/// Decodes one message of protocol version 2 with `streaming` on. `in_block` says whether a
/// Stream Start came without its Stream Stop yet: data messages then carry a transaction id.
/// A data message inside a block is only checked for its tag and transaction id
/// ([`StreamingMessage::InBlock`]); [`decode_in_block`] decodes the rest.
///
/// Errors as [`decode`], and [`DecodeError::Malformed`] for a message that cannot be where it
/// is (a BEGIN inside a block). Never panics.
pub fn decode_streaming(buf: &Bytes, in_block: bool) -> Result<StreamingMessage, DecodeError> {
    let (tag, mut r) = open(buf)?;
    let msg = match tag {
        b'S' => StreamingMessage::StreamStart {
            xid: r.u32()?,
            first_segment: r.u8()? == 1,
        },
        b'E' => StreamingMessage::StreamStop,
        b'c' => {
            let xid = r.u32()?;
            let _flags = r.u8()?;
            StreamingMessage::StreamCommit {
                xid,
                commit_lsn: r.lsn()?,
                end_lsn: r.lsn()?,
                commit_time: r.i64()?,
            }
        }
        b'A' => {
            let (xid, subxid) = (r.u32()?, r.u32()?);
            // Protocol 4 (parallel apply) adds the abort LSN and time.
            if r.buf.len() - r.pos == 16 {
                r.bytes(16)?;
            }
            StreamingMessage::StreamAbort { xid, subxid }
        }
        b'R' | b'Y' | b'I' | b'U' | b'D' | b'T' | b'M' if in_block => {
            return Ok(StreamingMessage::InBlock { xid: r.u32()? });
        }
        b'O' if in_block => {
            body(&mut r, b'O')?;
            StreamingMessage::InBlockOrigin
        }
        _ if in_block => {
            let why = "message that cannot be inside a stream block (between Stream Start and Stream Stop)";
            return Err(r.malformed(why));
        }
        _ if is_v2_tag(tag) => {
            return Err(r.malformed(
                "two-phase message of pgoutput protocol version 3, which was not requested",
            ));
        }
        _ => StreamingMessage::Plain(body(&mut r, tag)?),
    };
    r.finish()?;
    Ok(msg)
}

/// Decodes a data message that arrived inside a stream block
/// ([`StreamingMessage::InBlock`]): its (sub)transaction id and the message as protocol 1
/// would have sent it. Errors as [`decode`]; never panics.
pub fn decode_in_block(buf: &Bytes) -> Result<(u32, Message), DecodeError> {
    let (tag, mut r) = open(buf)?;
    if !matches!(tag, b'R' | b'Y' | b'I' | b'U' | b'D' | b'T' | b'M') {
        return Err(r.malformed("not a data message of a stream block"));
    }
    let xid = r.u32()?;
    let msg = body(&mut r, tag)?;
    r.finish()?;
    Ok((xid, msg))
}

/// The tags of protocol version 2 and later (streaming and two-phase).
fn is_v2_tag(tag: u8) -> bool {
    matches!(
        tag,
        b'S' | b'E' | b'c' | b'A' | b'b' | b'P' | b'K' | b'r' | b'p'
    )
}

/// The tag of `buf` and a reader positioned after it.
fn open(buf: &Bytes) -> Result<(u8, Reader<'_>), DecodeError> {
    let Some(&tag) = buf.first() else {
        return Err(DecodeError::Incomplete {
            tag: '?',
            offset: 0,
            needed: 1,
        });
    };
    Ok((
        tag,
        Reader {
            buf,
            pos: 1,
            tag: tag as char,
        },
    ))
}

/// The content of a protocol 1 message with tag `tag`, read from `r`.
fn body(r: &mut Reader<'_>, tag: u8) -> Result<Message, DecodeError> {
    let msg = match tag {
        b'B' => Message::Begin {
            final_lsn: r.lsn()?,
            commit_time: r.i64()?,
            xid: r.u32()?,
        },
        b'C' => Message::Commit {
            flags: r.u8()?,
            commit_lsn: r.lsn()?,
            end_lsn: r.lsn()?,
            commit_time: r.i64()?,
        },
        b'O' => Message::Origin {
            commit_lsn: r.lsn()?,
            name: r.cstr()?,
        },
        b'R' => {
            let id = r.u32()?;
            let namespace = r.cstr()?;
            let name = r.cstr()?;
            let replica_identity = r.u8()?;
            let n = r.u16()? as usize;
            r.need(n.saturating_mul(10))?; // flags + NUL + oid + typmod, at least
            let mut columns = Vec::with_capacity(n);
            for _ in 0..n {
                let flags = r.u8()?;
                columns.push(RelationColumn {
                    is_key: flags & 1 == 1,
                    name: r.cstr()?,
                    type_oid: r.u32()?,
                    type_modifier: r.i32()?,
                });
            }
            Message::Relation(Relation {
                id,
                namespace,
                name,
                replica_identity,
                columns,
            })
        }
        b'Y' => Message::Type {
            id: r.u32()?,
            namespace: r.cstr()?,
            name: r.cstr()?,
        },
        b'I' => {
            let relation_id = r.u32()?;
            match r.u8()? {
                b'N' => Message::Insert {
                    relation_id,
                    new: r.tuple()?,
                },
                other => {
                    return Err(r.malformed(format!(
                        "expected 'N' before the new tuple, got 0x{other:02x}"
                    )))
                }
            }
        }
        b'U' => {
            let relation_id = r.u32()?;
            let mut old = None;
            let mut marker = r.u8()?;
            if marker == b'K' || marker == b'O' {
                let t = r.tuple()?;
                old = Some(if marker == b'K' {
                    OldTuple::Key(t)
                } else {
                    OldTuple::Full(t)
                });
                marker = r.u8()?;
            }
            if marker != b'N' {
                return Err(r.malformed(format!(
                    "expected 'N' before the new tuple, got 0x{marker:02x}"
                )));
            }
            Message::Update {
                relation_id,
                old,
                new: r.tuple()?,
            }
        }
        b'D' => {
            let relation_id = r.u32()?;
            let old = match r.u8()? {
                b'K' => OldTuple::Key(r.tuple()?),
                b'O' => OldTuple::Full(r.tuple()?),
                other => {
                    return Err(r.malformed(format!(
                        "expected 'K' or 'O' before the old tuple, got 0x{other:02x}"
                    )))
                }
            };
            Message::Delete { relation_id, old }
        }
        b'T' => {
            let n = r.u32()? as usize;
            let options = r.u8()?;
            r.need(n.saturating_mul(4))?;
            let mut relation_ids = Vec::with_capacity(n);
            for _ in 0..n {
                relation_ids.push(r.u32()?);
            }
            Message::Truncate {
                options,
                relation_ids,
            }
        }
        b'M' => {
            let flags = r.u8()?;
            let lsn = r.lsn()?;
            let prefix = r.cstr()?;
            let len = r.i32()?;
            if len < 0 {
                return Err(r.malformed(format!("negative content length {len}")));
            }
            Message::LogicalMessage {
                transactional: flags & 1 == 1,
                lsn,
                prefix,
                content: r.bytes(len as usize)?,
            }
        }
        other => return Err(r.malformed(format!("unknown message tag 0x{other:02x}"))),
    };
    Ok(msg)
}

#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod tests;
