//! `tsvector`: Debezium's `io.debezium.data.Tsvector`, a string holding PostgreSQL's text
//! output (`'a' 'cat':3 'fat':2A`). Text tuples carry that text; binary tuples carry the send
//! format, which [`tsvector_text`] turns back into the same text.
//!
//! Invariant: the text is byte for byte `tsvectorout`'s, so snapshot, text and binary tuples
//! give one value.

use super::recv::Reader;
use crate::event::{Schema, SchemaType, Value};

/// The schema of a `tsvector` column: an optional string named `io.debezium.data.Tsvector`,
/// version 1, as Debezium 3.6.1 writes it.
pub(super) fn tsvector_schema() -> Schema {
    Schema::new(SchemaType::String, false).named("io.debezium.data.Tsvector")
}

/// The value of a `tsvector` given as its text output.
pub(super) fn tsvector_value(text: &str) -> Value {
    Value::String(text.to_string())
}

/// PostgreSQL's text output of a `tsvector` in send format (`tsvectorsend`): a 4-byte lexeme
/// count, then per lexeme its bytes and a 0 byte, a 2-byte position count and 2-byte
/// positions (weight in the two high bits, position in the low 14). Errors: truncated or
/// trailing bytes, a lexeme that is not UTF-8.
pub fn tsvector_text(data: &[u8]) -> Result<String, String> {
    let mut r = Reader::new(data);
    let count = r.i32()?;
    if count < 0 {
        return Err("negative tsvector lexeme count".into());
    }
    let mut out = String::new();
    for i in 0..count {
        if i > 0 {
            out.push(' ');
        }
        push_quoted(r.cstring()?, &mut out);
        let positions = r.u16()?;
        for p in 0..positions {
            let word = r.u16()?;
            out.push(if p == 0 { ':' } else { ',' });
            out.push_str(&(word & 0x3fff).to_string());
            match word >> 14 {
                3 => out.push('A'),
                2 => out.push('B'),
                1 => out.push('C'),
                _ => {}
            }
        }
    }
    r.end()?;
    Ok(out)
}

/// A lexeme as `tsvectorout` writes it: in single quotes, with `'` and `\` doubled.
fn push_quoted(lexeme: &str, out: &mut String) {
    super::push_quoted_doubling(lexeme, '\'', out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(lexemes: &[(&str, &[u16])]) -> Vec<u8> {
        let mut b = (lexemes.len() as i32).to_be_bytes().to_vec();
        for (l, pos) in lexemes {
            b.extend_from_slice(l.as_bytes());
            b.push(0);
            b.extend_from_slice(&(pos.len() as u16).to_be_bytes());
            for p in *pos {
                b.extend_from_slice(&p.to_be_bytes());
            }
        }
        b
    }

    #[test]
    fn the_send_format_gives_tsvectorout_text() {
        // 'a' 'cat':3 'fat':2A,4C 'it''s' 'b\\s':1B
        let a = (3u16 << 14) | 2;
        let c = (1u16 << 14) | 4;
        let b = (2u16 << 14) | 1;
        let data = send(&[
            ("a", &[]),
            ("cat", &[3]),
            ("fat", &[a, c]),
            ("it's", &[]),
            ("b\\s", &[b]),
        ]);
        assert_eq!(
            tsvector_text(&data).unwrap(),
            r"'a' 'cat':3 'fat':2A,4C 'it''s' 'b\\s':1B"
        );
        assert_eq!(tsvector_text(&send(&[])).unwrap(), "");
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        let good = send(&[("cat", &[3])]);
        for cut in 0..good.len() {
            assert!(tsvector_text(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = good.clone();
        long.push(1);
        assert!(tsvector_text(&long).is_err());
        assert!(tsvector_text(&(-1i32).to_be_bytes()).is_err());
        assert!(
            tsvector_text(&[0, 0, 0, 1, 0xff, 0, 0, 0]).is_err(),
            "not UTF-8"
        );
    }
}
