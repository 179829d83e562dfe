//! pgcdc's schema capture: the event triggers that write each table DDL into the WAL as a
//! transactional logical decoding message (prefix [`SCHEMA_CHANGE_PREFIX`]), and the
//! commands that install, remove and inspect them (`pgcdc schema-capture ...`).
//!
//! Logical decoding carries no DDL. The triggers (on `ddl_command_end` and `sql_drop`) call
//! `pg_logical_emit_message(true, ...)` with the command tag, the statement, and each affected
//! table's definition read from the catalog after the command: the message travels inside the
//! transaction that ran the DDL, between the rows before and after it, and disappears with
//! it when it rolls back. `event::schema_change` reads the message. The SQL is in
//! `schema_capture.sql`, installed as one transaction.
//!
//! Installing needs a superuser (`CREATE EVENT TRIGGER` is superuser-only on PostgreSQL 14 to
//! 18); the trigger functions are `SECURITY DEFINER`, so neither the connector's role nor
//! the roles that run DDL need more rights than they have.

use tokio_postgres::Client;

use crate::error::{Error, Result};
use crate::event::schema_change::CAPTURE_FORMAT_VERSION;

/// The logical decoding message prefix of the capture's messages.
pub const SCHEMA_CHANGE_PREFIX: &str = "pgcdc.schema_change";

/// The event triggers the capture installs.
pub const TRIGGERS: [&str; 2] = ["pgcdc_schema_change_ddl", "pgcdc_schema_change_drop"];

const INSTALL_SQL: &str = include_str!("schema_capture.sql");

/// Drops what the install created, one object at a time, and the schema only when nothing
/// else is left in it (never CASCADE: objects others put there, and views on them, stay).
const UNINSTALL_SQL: &str = "DROP EVENT TRIGGER IF EXISTS pgcdc_schema_change_ddl; \
     DROP EVENT TRIGGER IF EXISTS pgcdc_schema_change_drop; \
     DROP FUNCTION IF EXISTS pgcdc.on_ddl_command_end(), pgcdc.on_sql_drop(), \
       pgcdc.emit(text, jsonb), pgcdc.record_state(jsonb), pgcdc.table_definition(oid), \
       pgcdc.is_captured_table(oid), pgcdc.schema_capture_version(); \
     DROP TABLE IF EXISTS pgcdc.schema_state; \
     DO $$ BEGIN \
       IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'pgcdc') \
          AND NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                           WHERE n.nspname = 'pgcdc') \
          AND NOT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
                           WHERE n.nspname = 'pgcdc') \
          AND NOT EXISTS (SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace \
                           WHERE n.nspname = 'pgcdc') THEN \
         DROP SCHEMA pgcdc; \
       END IF; \
     END $$";

/// Whether the capture is installed in a database, and which version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureStatus {
    /// The installed format version (`pgcdc.schema_capture_version()`), if the function exists.
    pub version: Option<i32>,
    /// The capture's event triggers that exist and are enabled.
    pub enabled_triggers: Vec<String>,
}

impl CaptureStatus {
    /// Installed whole, at the version this pgcdc reads.
    pub fn is_current(&self) -> bool {
        self.version == Some(CAPTURE_FORMAT_VERSION as i32)
            && self.enabled_triggers.len() == TRIGGERS.len()
    }

    /// One line for a person: installed at which version, or what is missing and the fix.
    pub fn describe(&self) -> String {
        match (self.version, self.enabled_triggers.len()) {
            (None, 0) => {
                "not installed (run `pgcdc schema-capture install --config FILE` as a superuser)".into()
            }
            (Some(v), n) if n == TRIGGERS.len() && v == CAPTURE_FORMAT_VERSION as i32 => {
                format!("installed, version {v}")
            }
            (v, n) => format!(
                "incomplete or of another version (version {}, {n} of {} event triggers enabled; this pgcdc installs version {CAPTURE_FORMAT_VERSION}): run `pgcdc schema-capture install --config FILE` again",
                v.map_or("none".to_string(), |v| v.to_string()),
                TRIGGERS.len()
            ),
        }
    }
}

/// Installs (or reinstalls) the capture in the connected database, in one transaction, and
/// records the tables that exist now. Errors: the role may not create event triggers (the
/// message says a superuser is needed), or any other refusal with its SQLSTATE.
pub async fn install(client: &Client) -> Result<()> {
    // One simple-query batch: the server runs it as one transaction.
    client
        .batch_execute(INSTALL_SQL)
        .await
        .map_err(|e| refused("install", e))
}

/// Removes the triggers, their functions and the capture's state (the `pgcdc` schema).
/// Errors: as [`install`].
pub async fn uninstall(client: &Client) -> Result<()> {
    // One simple-query batch: the server runs it as one transaction.
    client
        .batch_execute(UNINSTALL_SQL)
        .await
        .map_err(|e| refused("uninstall", e))
}

/// Reads whether the capture is installed. Errors: the catalog query fails.
pub async fn status(client: &Client) -> Result<CaptureStatus> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
              WHERE n.nspname = 'pgcdc' AND p.proname = 'schema_capture_version')",
            &[],
        )
        .await?;
    let version = if row.get::<_, bool>(0) {
        let v = client
            .query_one("SELECT pgcdc.schema_capture_version()", &[])
            .await?;
        Some(v.get::<_, i32>(0))
    } else {
        None
    };
    let rows = client
        .query(
            "SELECT evtname::text FROM pg_event_trigger \
              WHERE evtname = ANY($1) AND evtenabled <> 'D' ORDER BY 1",
            &[&TRIGGERS.to_vec()],
        )
        .await?;
    Ok(CaptureStatus {
        version,
        enabled_triggers: rows.iter().map(|r| r.get(0)).collect(),
    })
}

fn refused(what: &str, e: tokio_postgres::Error) -> Error {
    let permission = e
        .as_db_error()
        .is_some_and(|d| d.code() == &tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE);
    let detail = e
        .as_db_error()
        .map(|d| format!("{} (SQLSTATE {})", d.message(), d.code().code()))
        .unwrap_or_else(|| e.to_string());
    if permission {
        Error::config(format!(
            "the schema capture {what} was refused: {detail}. Event triggers can be created and dropped only by a superuser on PostgreSQL 14 to 18: run this command with a superuser's database.user and database.password (for example with --set), once per database; the connector's own role needs no more rights"
        ))
    } else {
        Error::server(format!("the schema capture {what} failed: {detail}"))
    }
}
