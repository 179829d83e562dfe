//! The two halves of a started replication stream (CopyBoth): the reader, which buffers
//! socket bytes and hands out parsed frames, and the writer, which sends standby status
//! updates, CopyDone and Terminate.

use bytes::{BufMut, BytesMut};
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};

use super::frame::{parse_replication_frame, ReplicationFrame};
use super::transport::Stream;
use crate::error::{Error, Result};
use crate::lsn::Lsn;

/// Splits a connection in CopyBoth mode into its halves; `buf` holds bytes already read
/// past CopyBothResponse.
pub(super) fn split(stream: Stream, buf: BytesMut) -> (ReplicationReader, ReplicationWriter) {
    let (rd, wr) = tokio::io::split(stream);
    (ReplicationReader { rd, buf }, ReplicationWriter { wr })
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

/// A standby status update (`r` in CopyData) sent at `now` (µs since the PostgreSQL epoch),
/// not asking the server for a reply.
fn status_update(write: Lsn, flush: Lsn, apply: Lsn, now: i64, reply: bool) -> BytesMut {
    let mut out = BytesMut::with_capacity(40);
    out.put_u8(b'd');
    out.put_i32(4 + 1 + 8 * 4 + 1);
    out.put_u8(b'r');
    out.put_u64(write.0);
    out.put_u64(flush.0);
    out.put_u64(apply.0);
    out.put_i64(now);
    out.put_u8(u8::from(reply));
    out
}

impl ReplicationWriter {
    /// Sends a standby status update: `write`, `flush` and `apply` LSNs (flush is what the
    /// server records as the slot's `confirmed_flush_lsn`); with `reply`, the server answers
    /// at once with a keepalive (how a silent connection is told from a dead one).
    pub async fn send_status(
        &mut self,
        write: Lsn,
        flush: Lsn,
        apply: Lsn,
        reply: bool,
    ) -> Result<()> {
        let out = status_update(write, flush, apply, pg_now_micros(), reply);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_update_carries_the_three_lsns_and_the_reply_flag() {
        let out = status_update(Lsn(0x1_0000_0003), Lsn(2), Lsn(1), 7, false);
        let mut want = vec![b'd', 0, 0, 0, 38, b'r'];
        want.extend_from_slice(&0x1_0000_0003u64.to_be_bytes());
        want.extend_from_slice(&2u64.to_be_bytes());
        want.extend_from_slice(&1u64.to_be_bytes());
        want.extend_from_slice(&7i64.to_be_bytes());
        want.push(0);
        assert_eq!(&out[..], &want[..]);
        let asking = status_update(Lsn(0x1_0000_0003), Lsn(2), Lsn(1), 7, true);
        assert_eq!(asking[..asking.len() - 1], want[..want.len() - 1]);
        assert_eq!(asking.last(), Some(&1));
    }
}
