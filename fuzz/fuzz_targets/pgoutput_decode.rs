//! Fuzz target of the pgoutput decoder: `decode` must never panic, and a message it accepts
//! must be self-delimiting (its strict prefixes are `Incomplete`, never `Ok` or `Malformed`).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use pgcdc::pg::pgoutput::{decode, DecodeError};

fuzz_target!(|data: &[u8]| {
    let buf = Bytes::copy_from_slice(data);
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
