//! Transactions that PostgreSQL streams while they run, held until they commit.
//!
//! With `pgcdc.pgoutput.streaming=true` pgcdc asks pgoutput for protocol version 2 with the
//! `streaming` option: a transaction whose changes outgrow the server's
//! `logical_decoding_work_mem` is sent in blocks (Stream Start ... Stream Stop) while it runs,
//! instead of being spilled to disk under `pg_replslot/` and decoded at commit. Blocks of
//! several transactions interleave, and a transaction or one of its subtransactions may abort.
//!
//! pgcdc publishes exactly what protocol 1 gives: each transaction whole, in commit order,
//! nothing of an aborted (sub)transaction. So this module holds each streamed transaction's
//! data messages, as received (bytes and XLogData LSN), until its Stream Commit, and then
//! replays them ([`Replay`]) to be decoded and published like a protocol 1 transaction.
//!
//! Invariants:
//! - **Bounded memory**: the messages held in memory, over all open transactions, never
//!   exceed [`StreamingLimits::memory_bytes`] (counted with a fixed overhead per message).
//!   A transaction that does not fit goes on in its own spill file, in order: its memory part
//!   comes first, its file part after.
//! - **Bounded disk**: the spill files never hold more than
//!   [`StreamingLimits::spill_max_bytes`]; a transaction that needs more, or a failed write (a
//!   full disk), is an error that stops the connector. Nothing is confirmed past it: the slot
//!   sends the transaction again after the fix.
//! - **Never part of a transaction**: a block that continues a transaction whose first block
//!   was not received, or a commit of a transaction never started, is a protocol error.
//! - **Subtransaction aborts** drop the subtransaction's first message and everything after
//!   it, as PostgreSQL's own apply worker does (a subtransaction's changes, its children's
//!   included, are contiguous up to its abort).
//! - Spill files are unnamed temporary files: they vanish when pgcdc exits, even when killed.
//!
//! Sans-io apart from the spill files; no Kafka, no async.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use bytes::Bytes;

use crate::config::keys::{
    PGOUTPUT_STREAMING, PGOUTPUT_STREAMING_MEMORY_BYTES, PGOUTPUT_STREAMING_SPILL_DIR,
    PGOUTPUT_STREAMING_SPILL_MAX_BYTES,
};
pub use crate::config::StreamingLimits;
use crate::error::{Error, ErrorKind, IoContext, Result};
use crate::lsn::Lsn;

/// Bytes counted per message held in memory beyond its own (its LSN, the handle, the vector).
const MESSAGE_OVERHEAD: usize = 48;
/// Bytes per message in a spill file beyond its own: its LSN (8) and length (4).
const SPILL_HEADER: u64 = 12;

/// Counts over the run, for logs and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamingStats {
    /// Streamed transactions that committed and were replayed.
    pub committed: u64,
    /// Streamed transactions that aborted.
    pub aborted: u64,
    /// Committed transactions that needed a spill file.
    pub spilled: u64,
    /// Bytes written to spill files.
    pub spill_bytes: u64,
}

/// Where a subtransaction's first message is: how many messages came before it, and the
/// spill file's length then.
#[derive(Debug, Clone, Copy)]
struct Mark {
    subxid: u32,
    messages: usize,
    spill_len: u64,
}

/// A spill file being written.
struct Spill {
    file: BufWriter<File>,
    len: u64,
    messages: usize,
    /// The LSN of the first change (not a Relation or Type message) in the file, and how many
    /// messages come before it there.
    first_change: Option<(Lsn, usize)>,
}

/// One open streamed transaction.
struct Held {
    first_lsn: Lsn,
    /// The Origin message of the transaction's first block, if it came from another origin.
    origin: Option<Bytes>,
    memory: Vec<(Lsn, Bytes)>,
    memory_bytes: usize,
    spill: Option<Spill>,
    subxacts: Vec<Mark>,
}

impl Held {
    fn messages(&self) -> usize {
        self.memory.len() + self.spill.as_ref().map_or(0, |s| s.messages)
    }
}

/// The open streamed transactions of one replication session (see the module docs).
pub struct StreamedTransactions {
    limits: StreamingLimits,
    open: HashMap<u32, Held>,
    /// The transaction of the current block, between Stream Start and Stream Stop.
    block: Option<u32>,
    memory_used: usize,
    spill_used: u64,
    stats: StreamingStats,
}

impl StreamedTransactions {
    /// An empty holding area with these bounds.
    pub fn new(limits: StreamingLimits) -> Self {
        StreamedTransactions {
            limits,
            open: HashMap::new(),
            block: None,
            memory_used: 0,
            spill_used: 0,
            stats: StreamingStats::default(),
        }
    }

    /// Whether a block is open (data messages then carry a transaction id).
    pub fn in_block(&self) -> bool {
        self.block.is_some()
    }

    /// Counts so far.
    pub fn stats(&self) -> StreamingStats {
        self.stats
    }

    /// Bytes held in memory now.
    pub fn memory_used(&self) -> usize {
        self.memory_used
    }

    /// The LSN of the first message of the oldest open transaction: nothing at or past it may
    /// be confirmed to the server while that transaction is open.
    pub fn oldest_open_lsn(&self) -> Option<Lsn> {
        self.open.values().map(|h| h.first_lsn).min()
    }

    /// Stream Start of `xid` at `lsn`. Errors: a block already open, a first block for a
    /// transaction already open, or a later block for one whose first block never came.
    pub fn start(&mut self, xid: u32, first_segment: bool, lsn: Lsn) -> Result<()> {
        if let Some(open) = self.block {
            return Err(Error::protocol(format!(
                "Stream Start of transaction {xid} at LSN {lsn} inside the block of transaction {open}"
            )));
        }
        match (first_segment, self.open.contains_key(&xid)) {
            (true, false) => {
                self.open.insert(
                    xid,
                    Held {
                        first_lsn: lsn,
                        origin: None,
                        memory: Vec::new(),
                        memory_bytes: 0,
                        spill: None,
                        subxacts: Vec::new(),
                    },
                );
            }
            (false, true) => {}
            (true, true) => {
                return Err(Error::protocol(format!(
                    "Stream Start at LSN {lsn} says it begins transaction {xid}, which is already open"
                )))
            }
            (false, false) => {
                return Err(Error::protocol(format!(
                    "Stream Start at LSN {lsn} continues transaction {xid}, whose first block this session did not receive: pgcdc never publishes part of a transaction"
                )))
            }
        }
        self.block = Some(xid);
        Ok(())
    }

    /// The Origin message (`payload`) of the open block's transaction: kept, the first one, to
    /// be handed on after its BEGIN. Errors when no block is open.
    pub fn origin(&mut self, lsn: Lsn, payload: &[u8]) -> Result<()> {
        let Some(top) = self.block else {
            return Err(Error::protocol(format!(
                "an Origin message at LSN {lsn} outside a stream block"
            )));
        };
        let held = self
            .open
            .get_mut(&top)
            .expect("an open block's transaction is held");
        held.origin
            .get_or_insert_with(|| Bytes::copy_from_slice(payload));
        Ok(())
    }

    /// Stream Stop. Errors when no block is open.
    pub fn stop(&mut self, lsn: Lsn) -> Result<()> {
        if self.block.take().is_none() {
            return Err(Error::protocol(format!(
                "Stream Stop at LSN {lsn} without a Stream Start"
            )));
        }
        Ok(())
    }

    /// Holds one data message of the open block: `payload` as received at `lsn`, of
    /// (sub)transaction `xid`. Errors: no block open, a failed spill write, or the spill bound.
    pub fn push(&mut self, lsn: Lsn, xid: u32, payload: &[u8]) -> Result<()> {
        let Some(top) = self.block else {
            return Err(Error::protocol(format!(
                "a data message of transaction {xid} at LSN {lsn} outside a stream block"
            )));
        };
        let limits = &self.limits;
        let held = self
            .open
            .get_mut(&top)
            .expect("an open block's transaction is held");
        if xid != top && !held.subxacts.iter().rev().any(|m| m.subxid == xid) {
            held.subxacts.push(Mark {
                subxid: xid,
                messages: held.messages(),
                spill_len: held.spill.as_ref().map_or(0, |s| s.len),
            });
        }
        let cost = payload.len() + MESSAGE_OVERHEAD;
        if held.spill.is_none() && self.memory_used + cost <= limits.memory_bytes {
            held.memory.push((lsn, Bytes::copy_from_slice(payload)));
            held.memory_bytes += cost;
            self.memory_used += cost;
            return Ok(());
        }
        let record = SPILL_HEADER + payload.len() as u64;
        if self.spill_used + record > limits.spill_max_bytes {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "streamed transaction {top} needs more than {PGOUTPUT_STREAMING_SPILL_MAX_BYTES}={} bytes of spill files (in {}) besides {PGOUTPUT_STREAMING_MEMORY_BYTES}={} in memory: raise the bound (the disk must hold it), or turn {PGOUTPUT_STREAMING} off (PostgreSQL then spills it under pg_replslot); nothing of it was published or confirmed",
                    limits.spill_max_bytes,
                    limits.spill_dir.display(),
                    limits.memory_bytes
                ),
            ));
        }
        if held.spill.is_none() {
            held.spill = Some(open_spill(limits, top)?);
            tracing::info!(xid = top, lsn = %lsn, memory_bytes = self.memory_used,
                "a streamed transaction outgrew pgcdc.pgoutput.streaming.memory.bytes: holding the rest in a spill file until it commits");
        }
        let spill = held.spill.as_mut().expect("opened above");
        write_record(&mut spill.file, lsn, payload)
            .map_err(|e| spill_error(e, limits, top, "writing"))?;
        if spill.first_change.is_none() && is_change(payload) {
            spill.first_change = Some((lsn, spill.messages));
        }
        spill.len += record;
        spill.messages += 1;
        self.spill_used += record;
        self.stats.spill_bytes += record;
        Ok(())
    }

    /// Stream Abort: drops transaction `xid` whole (`subxid == xid`) or its subtransaction
    /// `subxid` and everything held after its first message. An unknown transaction or an
    /// empty subtransaction is nothing to drop.
    pub fn abort(&mut self, xid: u32, subxid: u32) -> Result<()> {
        if xid == subxid {
            if let Some(held) = self.open.remove(&xid) {
                self.release(&held);
                self.stats.aborted += 1;
            }
            return Ok(());
        }
        let limits = &self.limits;
        let Some(held) = self.open.get_mut(&xid) else {
            return Ok(());
        };
        let Some(at) = held.subxacts.iter().rposition(|m| m.subxid == subxid) else {
            return Ok(());
        };
        let mark = held.subxacts[at];
        held.subxacts.truncate(at);
        if mark.messages < held.memory.len() {
            for (_, b) in held.memory.drain(mark.messages..) {
                let cost = b.len() + MESSAGE_OVERHEAD;
                held.memory_bytes -= cost;
                self.memory_used -= cost;
            }
            if let Some(spill) = held.spill.take() {
                self.spill_used -= spill.len;
            }
            return Ok(());
        }
        if let Some(spill) = held.spill.as_mut() {
            let keep_messages = mark.messages - held.memory.len();
            truncate_spill(spill, mark.spill_len, keep_messages)
                .map_err(|e| spill_error(e, limits, xid, "truncating"))?;
            self.spill_used -= spill.len - mark.spill_len;
            spill.len = mark.spill_len;
        }
        Ok(())
    }

    /// Stream Commit of `xid`: its messages, in order, to decode and publish. Errors: a
    /// commit of a transaction never started, or a spill file that cannot be read back.
    pub fn commit(&mut self, xid: u32, lsn: Lsn) -> Result<Replay> {
        if self.block.is_some() {
            return Err(Error::protocol(format!(
                "Stream Commit of transaction {xid} at LSN {lsn} inside a stream block"
            )));
        }
        let Some(mut held) = self.open.remove(&xid) else {
            return Err(Error::protocol(format!(
                "Stream Commit at LSN {lsn} of transaction {xid}, which this session never saw start: pgcdc never publishes part of a transaction"
            )));
        };
        self.release(&held);
        self.stats.committed += 1;
        let mut spill_bytes = 0;
        let spill_first_change = held
            .spill
            .as_ref()
            .and_then(|s| s.first_change.map(|(lsn, _)| lsn));
        let spill = match held.spill.take() {
            None => None,
            Some(spill) => {
                self.stats.spilled += 1;
                spill_bytes = spill.len;
                let messages = spill.messages;
                let file =
                    rewind(spill).map_err(|e| spill_error(e, &self.limits, xid, "reading"))?;
                Some((file, messages))
            }
        };
        Ok(Replay {
            first_lsn: held.first_lsn,
            origin: held.origin.take(),
            spill_first_change,
            spill_bytes,
            memory: std::mem::take(&mut held.memory).into_iter(),
            spill,
        })
    }

    /// Gives back the memory and spill space of a transaction taken out of `open`.
    fn release(&mut self, held: &Held) {
        self.memory_used -= held.memory_bytes;
        if let Some(spill) = &held.spill {
            self.spill_used -= spill.len;
        }
    }
}

/// The messages of a committed streamed transaction, in the order they came.
pub struct Replay {
    first_lsn: Lsn,
    origin: Option<Bytes>,
    spill_first_change: Option<Lsn>,
    spill_bytes: u64,
    memory: std::vec::IntoIter<(Lsn, Bytes)>,
    spill: Option<(BufReader<File>, usize)>,
}

impl Replay {
    /// The LSN of the transaction's first block (where PostgreSQL 14 puts a transaction's
    /// BEGIN: its first change, published or not).
    pub fn first_lsn(&self) -> Lsn {
        self.first_lsn
    }

    /// The LSN of the first change held, Relation and Type messages aside (they come with no
    /// LSN of their own in a block): where PostgreSQL 15+ puts a transaction's BEGIN, since it
    /// sends it before the first change it publishes. `None` when no change is held: the
    /// transaction published nothing.
    pub fn first_change_lsn(&self) -> Option<Lsn> {
        let slice = self.memory.as_slice();
        let in_memory = slice
            .iter()
            .find(|(_, m)| is_change(m))
            .map(|(lsn, _)| *lsn);
        in_memory.or(self.spill_first_change)
    }

    /// The transaction's Origin message, if it came from another origin.
    pub fn take_origin(&mut self) -> Option<Bytes> {
        self.origin.take()
    }

    /// Bytes of the transaction in its spill file (0: all in memory).
    pub fn spill_bytes(&self) -> u64 {
        self.spill_bytes
    }

    /// The next message and its XLogData LSN; `None` at the end. Errors: a spill file that
    /// cannot be read back.
    pub fn next_message(&mut self) -> Result<Option<(Lsn, Bytes)>> {
        if let Some(m) = self.memory.next() {
            return Ok(Some(m));
        }
        let Some((file, left)) = self.spill.as_mut() else {
            return Ok(None);
        };
        if *left == 0 {
            self.spill = None;
            return Ok(None);
        }
        *left -= 1;
        read_record(file).map(Some).map_err(|e| {
            Error::io(
                e,
                IoContext::File,
                "reading back the spill file of a streamed transaction failed",
            )
        })
    }
}

/// Whether a held message is a change (or a logical message), not a Relation or Type message.
fn is_change(payload: &[u8]) -> bool {
    !matches!(payload.first(), Some(b'R' | b'Y'))
}

/// A new unnamed spill file in the configured directory.
fn open_spill(limits: &StreamingLimits, xid: u32) -> Result<Spill> {
    let file = tempfile::tempfile_in(&limits.spill_dir)
        .map_err(|e| spill_error(e, limits, xid, "creating"))?;
    Ok(Spill {
        file: BufWriter::with_capacity(256 << 10, file),
        len: 0,
        messages: 0,
        first_change: None,
    })
}

fn write_record(w: &mut impl Write, lsn: Lsn, payload: &[u8]) -> std::io::Result<()> {
    w.write_all(&lsn.0.to_be_bytes())?;
    w.write_all(&(payload.len() as u32).to_be_bytes())?;
    w.write_all(payload)
}

fn read_record(r: &mut impl Read) -> std::io::Result<(Lsn, Bytes)> {
    let mut head = [0u8; 12];
    r.read_exact(&mut head)?;
    let lsn = Lsn(u64::from_be_bytes(head[..8].try_into().expect("8 bytes")));
    let len = u32::from_be_bytes(head[8..].try_into().expect("4 bytes")) as usize;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok((lsn, Bytes::from(payload)))
}

/// Cuts a spill file back to `len` bytes holding `messages` messages.
fn truncate_spill(spill: &mut Spill, len: u64, messages: usize) -> std::io::Result<()> {
    spill.file.flush()?;
    let file = spill.file.get_mut();
    file.set_len(len)?;
    file.seek(SeekFrom::Start(len))?;
    spill.messages = messages;
    if spill
        .first_change
        .is_some_and(|(_, before)| before >= messages)
    {
        spill.first_change = None;
    }
    Ok(())
}

/// The spill file, flushed, to be read from its start.
fn rewind(spill: Spill) -> std::io::Result<BufReader<File>> {
    let mut file = spill.file.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::Start(0))?;
    Ok(BufReader::with_capacity(256 << 10, file))
}

fn spill_error(e: std::io::Error, limits: &StreamingLimits, xid: u32, doing: &str) -> Error {
    Error::io(
        e,
        IoContext::File,
        format!(
            "{doing} the spill file of streamed transaction {xid} in {} failed: free space there or point {PGOUTPUT_STREAMING_SPILL_DIR} elsewhere; nothing of the transaction was published or confirmed, so the slot sends it again",
            limits.spill_dir.display()
        ),
    )
}

#[cfg(test)]
mod tests;
