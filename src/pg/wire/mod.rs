//! A PostgreSQL frontend connection over the wire protocol, for what tokio-postgres does not
//! do: `replication=database` sessions, the replication commands (IDENTIFY_SYSTEM,
//! CREATE_REPLICATION_SLOT, START_REPLICATION) and the CopyBoth stream.
//!
//! Start-up pins the session settings that change the text output of values
//! ([`SESSION_SETTINGS`]), authenticates with trust, cleartext, md5 or SCRAM-SHA-256, and
//! negotiates TLS per `sslmode`. Frames are parsed by hand with bounds checks; frontend
//! messages are built with `postgres-protocol`.
//!
//! Streaming protocol: see "Streaming Replication Protocol" in the PostgreSQL docs. XLogData
//! (`w`) carries one pgoutput message; primary keepalive (`k`) carries the server's WAL end
//! and a reply-requested flag; our standby status update (`r`) reports write/flush/apply LSNs.
//!
//! One module per job:
//! - `transport`: the byte stream (plain TCP or TLS) and the SSLRequest negotiation;
//! - `auth`: the start-up message and the authentication exchange;
//! - `frame`: the sans-io frame parser (backend messages, replication frames, server errors);
//! - `connection`: [`WireConnection`] (connect, simple queries, START_REPLICATION, close);
//! - `replication`: the two halves of a started replication stream.

mod auth;
mod connection;
mod frame;
mod replication;
mod transport;

pub use auth::SESSION_SETTINGS;
pub use connection::{QueryResult, WireConnection};
pub use frame::{parse_replication_frame, server_error, ReplicationFrame, ServerError};
pub use replication::{pg_now_micros, ReplicationReader, ReplicationWriter};
pub use transport::{socket_path, sslmode_name, Stream};
