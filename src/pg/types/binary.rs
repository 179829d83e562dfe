//! Binary values: `bytea` (hex output format, as the session pins `bytea_output`), text of
//! types without a mapping, and bit strings (`bit(n)`, `varbit(n)`), with bytes written per
//! `binary.handling.mode` ([`encode_binary`]).

use base64::Engine;

use crate::config::values::BinaryMode;
use crate::event::{Schema, SchemaType, Value};
use crate::util::decode_hex;

/// The Connect schema of bytes per `binary.handling.mode` (`bytea`, and types without a
/// mapping under `include.unknown.datatypes`).
pub(super) fn binary_schema(mode: BinaryMode) -> Schema {
    match mode {
        BinaryMode::Bytes => Schema::new(SchemaType::Bytes, false),
        _ => Schema::new(SchemaType::String, false),
    }
}

/// Encodes bytes per `binary.handling.mode`.
pub fn encode_binary(bytes: Vec<u8>, mode: BinaryMode) -> Value {
    match mode {
        BinaryMode::Bytes => Value::Bytes(bytes),
        BinaryMode::Base64 => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        BinaryMode::Base64UrlSafe => {
            Value::String(base64::engine::general_purpose::URL_SAFE.encode(bytes))
        }
        BinaryMode::Hex => Value::String(lower_hex(&bytes)),
    }
}

/// Lower-case hex of `bytes`, two digits a byte.
pub fn lower_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 0xF) as usize] as char);
    }
    s
}

/// Parses `bytea` hex output (`\x0102ff`).
pub fn parse_bytea(text: &str) -> Result<Vec<u8>, String> {
    let hex = text
        .strip_prefix("\\x")
        .ok_or("bytea is not in hex output format (bytea_output=hex)")?;
    if hex.len() % 2 != 0 {
        return Err("bytea hex text has an odd number of digits".into());
    }
    decode_hex(hex).ok_or_else(|| "bytea hex text has a non-hex digit".into())
}

/// Debezium's `io.debezium.data.Bits` bytes: the bit string read as an unsigned binary number
/// (first character most significant), written least-significant byte first in the fewest
/// bytes that hold the highest set bit (zero gives no bytes).
pub fn bits_to_bytes(text: &str) -> Result<Vec<u8>, String> {
    let bits = text.as_bytes();
    if !bits.iter().all(|b| *b == b'0' || *b == b'1') {
        return Err("not a bit string".into());
    }
    let mut out = Vec::with_capacity(bits.len() / 8 + 1);
    let mut chunk_end = bits.len();
    while chunk_end > 0 {
        let start = chunk_end.saturating_sub(8);
        let mut byte = 0u8;
        for b in &bits[start..chunk_end] {
            byte = (byte << 1) | (b - b'0');
        }
        out.push(byte);
        chunk_end = start;
    }
    while out.last() == Some(&0) {
        out.pop();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg::types::{oid, ColumnType};

    #[test]
    fn bit_strings_are_little_endian_minimal_bytes() {
        assert_eq!(bits_to_bytes("11").unwrap(), vec![0x03]);
        assert_eq!(bits_to_bytes("1000000").unwrap(), vec![0x40]);
        assert_eq!(
            bits_to_bytes("000000110000001000000001").unwrap(),
            vec![0x01, 0x02, 0x03]
        );
        assert_eq!(bits_to_bytes("00").unwrap(), Vec::<u8>::new());
        assert_eq!(
            bits_to_bytes("1000000000000000000000000000000000000000000000000000000000000000")
                .unwrap(),
            vec![0, 0, 0, 0, 0, 0, 0, 0x80]
        );
        assert_eq!(
            bits_to_bytes("111011010001000110000001000000001").unwrap(),
            vec![0x01, 0x02, 0x23, 0xda, 0x01]
        );
        assert_eq!(ColumnType::from_oid(oid::BIT, 1), Some(ColumnType::Bit));
        assert_eq!(
            ColumnType::from_oid(oid::VARBIT, -1),
            Some(ColumnType::Bits(2147483647))
        );
    }
}
