//! Name-based (version 3) UUIDs as Java's `UUID.nameUUIDFromBytes` makes them: Debezium turns
//! the unavailable-value placeholder into one for `uuid[]` columns. Also the `8-4-4-4-12` text
//! of any UUID's bytes.

use super::binary::lower_hex;

/// `java.util.UUID.nameUUIDFromBytes`: the MD5 of `bytes` with the version set to 3 and the
/// IETF variant, as `8-4-4-4-12` lower-case hex.
pub(super) fn uuid_v3(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    let mut d: [u8; 16] = Md5::digest(bytes).into();
    d[6] = (d[6] & 0x0f) | 0x30;
    d[8] = (d[8] & 0x3f) | 0x80;
    uuid_text(&d)
}

/// The lowercase hyphenated text of a UUID's 16 bytes.
pub(super) fn uuid_text(b: &[u8; 16]) -> String {
    let hex = lower_hex(b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_placeholders_are_name_based() {
        // java.util.UUID.nameUUIDFromBytes("__debezium_unavailable_value"), from Debezium's test.
        assert_eq!(
            uuid_v3(b"__debezium_unavailable_value"),
            "b68a35a7-17ad-35b3-af2a-ae46edb4545a"
        );
    }
}
