//! Fuzz target of the pgoutput decoder: `decode` must never panic, and a message it accepts
//! must be self-delimiting (its strict prefixes are `Incomplete`, never `Ok` or `Malformed`).
//! The decoders of protocol 2 with `streaming` on must never panic either, and a data message
//! of a stream block they accept is self-delimiting too.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use pgcdc::pg::pgoutput::{decode, decode_in_block, decode_streaming, DecodeError};

fuzz_target!(|data: &[u8]| {
    let buf = Bytes::copy_from_slice(data);
    let _ = decode_streaming(&buf, false);
    let _ = decode_streaming(&buf, true);
    if decode_in_block(&buf).is_ok() {
        for n in 0..buf.len().min(256) {
            assert!(matches!(
                decode_in_block(&buf.slice(..n)),
                Err(DecodeError::Incomplete { .. })
            ));
        }
    }
    if decode(&buf).is_ok() {
        // Every prefix for short inputs; a few for long ones, to keep executions fast.
        let len = buf.len();
        let cuts: Vec<usize> = if len <= 256 {
            (0..len).collect()
        } else {
            vec![0, 1, len / 2, len - 2, len - 1]
        };
        for n in cuts {
            let r = decode(&buf.slice(..n));
            assert!(
                matches!(r, Err(DecodeError::Incomplete { .. })),
                "prefix {n} of an accepted {len}-byte message gave {r:?}"
            );
        }
    }
});
