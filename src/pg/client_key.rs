//! The client certificate's private key (`database.sslkey`), in the forms libpq and the
//! PostgreSQL JDBC driver (Debezium's) read:
//! - PEM: PKCS#8 (`BEGIN PRIVATE KEY`), PKCS#1 RSA or SEC1 EC keys, and an encrypted PKCS#8 key
//!   (`BEGIN ENCRYPTED PRIVATE KEY`) decrypted with `database.sslpassword`;
//! - DER PKCS#8 (the JDBC driver's `.pk8` files), plain or encrypted with
//!   `database.sslpassword`.
//!
//! Encrypted keys use PBES2 (PBKDF2 or scrypt, with AES-CBC), what
//! `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes. Anything else (an OpenSSL "traditional"
//! encrypted PEM, PBES1, PKCS#12) is an error that says how to convert the key. The password is
//! never logged.

use std::path::Path;

use pkcs8::der::Decode;
use pkcs8::{EncryptedPrivateKeyInfo, PrivateKeyInfo};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::{Error, Result};

/// What to run to turn a key into one pgcdc reads.
const CONVERT: &str =
    "convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc -in <key> -out <key.pem>` (or -nocrypt for an unencrypted key)";

/// Reads the private key in `bytes` (the contents of `path`, for messages), decrypting it with
/// `password` when it is encrypted. Errors: a form pgcdc cannot read, an encrypted key without
/// `database.sslpassword`, a wrong password.
pub fn read_client_key(
    bytes: &[u8],
    path: &Path,
    password: Option<&str>,
) -> Result<PrivateKeyDer<'static>> {
    let shown = path.display();
    if bytes.starts_with(b"-----BEGIN") || bytes.windows(10).any(|w| w == b"-----BEGIN") {
        return read_pem(bytes, path, password);
    }
    if let Ok(info) = EncryptedPrivateKeyInfo::from_der(bytes) {
        return decrypt(&info, path, password);
    }
    if PrivateKeyInfo::from_der(bytes).is_ok() {
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            bytes.to_vec(),
        )));
    }
    Err(Error::config(format!(
        "database.sslkey {shown} is neither a PEM key nor a DER PKCS#8 key pgcdc can read (encrypted keys must use PBES2, not PBES1 or PKCS#12 ciphers such as -v1 PBE-SHA1-3DES; a PKCS#12 file is not read either): {CONVERT}"
    )))
}

/// A PEM key: encrypted PKCS#8 is decrypted; the rest goes to `rustls_pemfile`.
fn read_pem(bytes: &[u8], path: &Path, password: Option<&str>) -> Result<PrivateKeyDer<'static>> {
    let shown = path.display();
    let text = String::from_utf8_lossy(bytes);
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let (_, der) = pkcs8::der::pem::decode_vec(text.trim().as_bytes()).map_err(|e| {
            Error::config(format!(
                "database.sslkey {shown}: its ENCRYPTED PRIVATE KEY block is not valid PEM: {e}"
            ))
        })?;
        let info = EncryptedPrivateKeyInfo::from_der(&der).map_err(|e| {
            Error::config(format!(
                "database.sslkey {shown}: its ENCRYPTED PRIVATE KEY block is not PKCS#8: {e}"
            ))
        })?;
        return decrypt(&info, path, password);
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(Error::config(format!(
            "database.sslkey {shown} is encrypted in OpenSSL's traditional PEM form, which pgcdc does not decrypt: {CONVERT}"
        )));
    }
    rustls_pemfile::private_key(&mut &bytes[..])
        .map_err(|e| {
            Error::config(format!("database.sslkey {shown} is not a PEM private key"))
                .with_source(e)
        })?
        .ok_or_else(|| {
            Error::config(format!(
                "database.sslkey {shown} contains no PEM private key"
            ))
        })
}

/// Decrypts an encrypted PKCS#8 key with `database.sslpassword`.
fn decrypt(
    info: &EncryptedPrivateKeyInfo<'_>,
    path: &Path,
    password: Option<&str>,
) -> Result<PrivateKeyDer<'static>> {
    let shown = path.display();
    let Some(password) = password else {
        return Err(Error::config(format!(
            "database.sslkey {shown} is encrypted: set database.sslpassword to its password"
        )));
    };
    if info.encryption_algorithm.pbes2().is_none() {
        return Err(Error::config(format!(
            "database.sslkey {shown} is encrypted with PBES1 (such as -v1 PBE-MD5-DES), which pgcdc does not decrypt: {CONVERT}"
        )));
    }
    let doc = info.decrypt(password).map_err(|_| {
        Error::config(format!(
            "database.sslkey {shown} could not be decrypted with database.sslpassword: a wrong password, or an unsupported cipher ({CONVERT})"
        ))
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        doc.as_bytes().to_vec(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture keys (tests/fixtures/keys/README.md), password `key-pass`.
    fn key(name: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/keys/");
        std::fs::read(format!("{dir}{name}")).unwrap()
    }

    fn read(name: &str, password: Option<&str>) -> Result<PrivateKeyDer<'static>> {
        read_client_key(&key(name), Path::new(name), password)
    }

    fn der(k: &PrivateKeyDer<'_>) -> Vec<u8> {
        k.secret_der().to_vec()
    }

    #[test]
    fn every_supported_form_reads_as_the_same_key() {
        let plain = der(&read("plain.pk8", None).unwrap());
        assert_eq!(der(&read("plain.pem", None).unwrap()), plain);
        for name in ["encrypted.pem", "encrypted.pk8"] {
            assert_eq!(der(&read(name, Some("key-pass")).unwrap()), plain, "{name}");
        }
        // A password given for an unencrypted key is not needed and does no harm (libpq).
        assert_eq!(der(&read("plain.pem", Some("x")).unwrap()), plain);
    }

    #[test]
    fn what_cannot_be_read_says_what_to_do() {
        let msg = |name: &str, p: Option<&str>| read(name, p).unwrap_err().to_string();
        assert!(
            msg("encrypted.pem", None).contains("is encrypted: set database.sslpassword"),
            "{}",
            msg("encrypted.pem", None)
        );
        let wrong = msg("encrypted.pk8", Some("nope"));
        assert!(
            wrong.contains("could not be decrypted with database.sslpassword"),
            "{wrong}"
        );
        assert!(!wrong.contains("nope"), "the password is never shown");
        let pbes1 = msg("pbes1.pk8", Some("key-pass"));
        assert!(
            pbes1.contains("must use PBES2") && pbes1.contains("openssl pkcs8 -topk8"),
            "{pbes1}"
        );
        assert!(msg("traditional.pem", Some("key-pass")).contains("traditional PEM form"));
        let junk = read_client_key(b"\x30\x03\x02\x01\x05", Path::new("k"), None)
            .unwrap_err()
            .to_string();
        assert!(
            junk.contains("neither a PEM key nor a DER PKCS#8 key"),
            "{junk}"
        );
    }
}
