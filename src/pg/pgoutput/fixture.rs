//! The captured pgoutput fixture (`tests/fixtures/pgoutput/frames.txt`, written by
//! `scripts/capture-pgoutput.sh` from PostgreSQL 15), for the decoder's tests and the
//! pipeline's: every frame with its LSN, decoded.

use bytes::Bytes;

use super::{decode, Message};
use crate::lsn::Lsn;

const FRAMES: &str = include_str!("../../../tests/fixtures/pgoutput/frames.txt");

/// One line of the fixture: the LSN column of the peek and the message bytes.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// 1-based line number in frames.txt, for failure messages.
    pub(crate) line: usize,
    /// `lsn` column of `pg_logical_slot_peek_binary_changes` (the write location).
    pub(crate) lsn: Lsn,
    /// The message bytes (one XLogData payload).
    pub(crate) bytes: Bytes,
}

fn parse_lsn(s: &str) -> Lsn {
    s.parse().expect("LSN is written as X/Y")
}

pub(crate) fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn frames() -> Vec<Frame> {
    let out: Vec<Frame> = FRAMES
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let (lsn, hex) = l.split_once('\t').expect("<lsn>\\t<hex>");
            Frame {
                line: i + 1,
                lsn: parse_lsn(lsn),
                bytes: Bytes::from(unhex(hex.trim())),
            }
        })
        .collect();
    assert!(!out.is_empty(), "the fixture has no frames");
    out
}

/// Every frame with its decoded message; fails on the first frame that does not decode.
pub(crate) fn decoded() -> Vec<(Frame, Message)> {
    frames()
        .into_iter()
        .map(|f| match decode(&f.bytes) {
            Ok(m) => (f, m),
            Err(e) => panic!("frames.txt line {}: {e:?}", f.line),
        })
        .collect()
}
