//! Authentication: the start-up message (with the pinned [`SESSION_SETTINGS`]) and the
//! exchange that follows it until the server is ready for queries — trust, cleartext
//! password, md5 and SCRAM-SHA-256, and a clear refusal for the methods pgcdc does not
//! support (Kerberos V5, GSSAPI, SSPI).
//!
//! Passwords are only ever written to the server; no error or log carries one.

use bytes::{Buf, Bytes, BytesMut};
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
use postgres_protocol::message::frontend;

use super::connection::WireConnection;
use super::frame::{parse_error_fields, parse_parameter_status, server_error};
use crate::config::DatabaseConfig;
use crate::error::{Error, ErrorKind, Result};

/// Session settings sent at start-up on every connection, so that value text is stable
/// whatever the server, database or role defaults say.
pub const SESSION_SETTINGS: &[(&str, &str)] = &[
    ("DateStyle", "ISO"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("extra_float_digits", "3"),
    ("bytea_output", "hex"),
    ("client_encoding", "UTF8"),
];

/// The SASL mechanism pgcdc speaks.
const SCRAM_SHA_256: &str = "SCRAM-SHA-256";

/// Authentication request codes (the first field of an `R` message).
mod code {
    pub const OK: i32 = 0;
    pub const KERBEROS_V5: i32 = 2;
    pub const CLEARTEXT_PASSWORD: i32 = 3;
    pub const MD5_PASSWORD: i32 = 5;
    pub const GSS: i32 = 7;
    pub const GSS_CONTINUE: i32 = 8;
    pub const SSPI: i32 = 9;
    pub const SASL: i32 = 10;
    pub const SASL_CONTINUE: i32 = 11;
    pub const SASL_FINAL: i32 = 12;
}

/// Sends the start-up message and answers the server until ReadyForQuery; ParameterStatus
/// values land in [`WireConnection::parameters`]. `replication` adds
/// `replication=database`.
pub(super) async fn startup(
    conn: &mut WireConnection,
    db: &DatabaseConfig,
    replication: bool,
) -> Result<()> {
    send_startup_message(conn, db, replication).await?;
    let mut scram: Option<ScramSha256> = None;
    loop {
        let (tag, body) = conn.read_frame().await?;
        match tag {
            b'R' => authentication_request(conn, db, body, &mut scram).await?,
            b'E' => {
                return Err(server_error(
                    &format!(
                        "PostgreSQL at {}:{} refused the connection as user {}",
                        db.hostname, db.port, db.user
                    ),
                    parse_error_fields(&body),
                ))
            }
            b'S' => {
                let (k, v) = parse_parameter_status(&body);
                conn.parameters.insert(k, v);
            }
            b'K' | b'N' => {}
            b'Z' => return Ok(()),
            other => {
                return Err(Error::protocol(format!(
                    "unexpected message {:?} during start-up",
                    other as char
                )))
            }
        }
    }
}

async fn send_startup_message(
    conn: &mut WireConnection,
    db: &DatabaseConfig,
    replication: bool,
) -> Result<()> {
    let mut params: Vec<(&str, &str)> = vec![
        ("user", &db.user),
        ("database", &db.dbname),
        ("application_name", "pgcdc"),
    ];
    if replication {
        params.push(("replication", "database"));
    }
    params.extend_from_slice(SESSION_SETTINGS);
    let mut out = BytesMut::new();
    frontend::startup_message(params.iter().copied(), &mut out)
        .map_err(|e| Error::config("invalid connection parameter").with_source(e))?;
    conn.write(&out).await
}

/// Answers one authentication request (`R`); `scram` carries a SCRAM exchange across its
/// three requests.
async fn authentication_request(
    conn: &mut WireConnection,
    db: &DatabaseConfig,
    mut body: Bytes,
    scram: &mut Option<ScramSha256>,
) -> Result<()> {
    if body.len() < 4 {
        return Err(Error::protocol("truncated authentication request"));
    }
    match body.get_i32() {
        code::OK => Ok(()),
        code::CLEARTEXT_PASSWORD => cleartext_password(conn, db).await,
        code::MD5_PASSWORD => md5_password(conn, db, &mut body).await,
        code::SASL => {
            *scram = Some(sasl_start(conn, db, &body).await?);
            Ok(())
        }
        code::SASL_CONTINUE => sasl_continue(conn, scram.as_mut(), &body).await,
        code::SASL_FINAL => sasl_final(scram.take(), &body),
        code::KERBEROS_V5 => Err(unsupported("Kerberos V5")),
        code::GSS | code::GSS_CONTINUE => Err(unsupported("GSSAPI")),
        code::SSPI => Err(unsupported("SSPI")),
        other => Err(Error::protocol(format!(
            "unknown authentication request {other}"
        ))),
    }
}

fn unsupported(method: &str) -> Error {
    Error::new(
        ErrorKind::Auth,
        format!("the server asks for {method} authentication, which pgcdc does not support"),
    )
}

/// The configured password; its absence is an authentication error naming where to set it.
fn password(db: &DatabaseConfig) -> Result<&str> {
    db.password.as_deref().ok_or_else(|| {
        Error::new(
            ErrorKind::Auth,
            format!(
                "the server asks for a password for user {} but none is set (database.password, PGCDC_DATABASE_PASSWORD or PGPASSWORD)",
                db.user
            ),
        )
    })
}

async fn cleartext_password(conn: &mut WireConnection, db: &DatabaseConfig) -> Result<()> {
    let pw = password(db)?;
    conn.send(|buf| frontend::password_message(pw.as_bytes(), buf))
        .await
}

/// `body` holds the 4-byte salt after the request code.
async fn md5_password(
    conn: &mut WireConnection,
    db: &DatabaseConfig,
    body: &mut Bytes,
) -> Result<()> {
    if body.len() < 4 {
        return Err(Error::protocol("truncated md5 salt"));
    }
    let mut salt = [0u8; 4];
    body.copy_to_slice(&mut salt);
    let pw = password(db)?;
    let hash = postgres_protocol::authentication::md5_hash(db.user.as_bytes(), pw.as_bytes(), salt);
    conn.send(|buf| frontend::password_message(hash.as_bytes(), buf))
        .await
}

/// AuthenticationSASL: `mechanisms` lists the server's mechanisms, NUL-terminated. Sends
/// the client-first message and returns the exchange.
async fn sasl_start(
    conn: &mut WireConnection,
    db: &DatabaseConfig,
    mechanisms: &[u8],
) -> Result<ScramSha256> {
    let offered: Vec<&[u8]> = mechanisms
        .split(|&c| c == 0)
        .filter(|m| !m.is_empty())
        .collect();
    if !offered.contains(&SCRAM_SHA_256.as_bytes()) {
        return Err(Error::new(
            ErrorKind::Auth,
            "the server offers no supported SASL mechanism (SCRAM-SHA-256 is supported)",
        ));
    }
    let pw = password(db)?;
    let s = ScramSha256::new(pw.as_bytes(), ChannelBinding::unsupported());
    let first = s.message().to_vec();
    conn.send(|buf| frontend::sasl_initial_response(SCRAM_SHA_256, &first, buf))
        .await?;
    Ok(s)
}

/// AuthenticationSASLContinue: `data` is the server-first message; sends the client-final
/// message.
async fn sasl_continue(
    conn: &mut WireConnection,
    scram: Option<&mut ScramSha256>,
    data: &[u8],
) -> Result<()> {
    let s = scram.ok_or_else(|| Error::protocol("SASL continue without SASL start"))?;
    s.update(data)
        .map_err(|e| Error::new(ErrorKind::Auth, "SCRAM authentication failed").with_source(e))?;
    let msg = s.message().to_vec();
    conn.send(|buf| frontend::sasl_response(&msg, buf)).await
}

/// AuthenticationSASLFinal: `data` is the server-final message, whose proof is checked.
fn sasl_final(scram: Option<ScramSha256>, data: &[u8]) -> Result<()> {
    let mut s = scram.ok_or_else(|| Error::protocol("SASL final without SASL start"))?;
    s.finish(data).map_err(|e| {
        Error::new(
            ErrorKind::Auth,
            "SCRAM authentication failed: the server's proof is wrong",
        )
        .with_source(e)
    })
}
