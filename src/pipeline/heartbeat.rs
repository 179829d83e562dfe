//! Heartbeats (`heartbeat.interval.ms`): a record on the heartbeat topic when one is due,
//! checked after every message and on a timer while nothing arrives (as Debezium checks after
//! every event, commit and idle loop), and `heartbeat.action.query` after each.
//!
//! Inside a transaction a heartbeat counts as one of its records. Between transactions it is
//! a unit of its own that completes at the idle position, so that its acknowledgement lets the
//! slot advance over changes to tables nobody captures, never past unacknowledged records.

use std::time::Duration;

use tokio::time::Instant;
use tokio_postgres::Client;

use crate::config::{ConnectorConfig, DatabaseConfig};
use crate::error::{Error, ErrorKind, HeartbeatAction, Result};
use crate::event::envelope::now_nanos;
use crate::event::{meta, sanitize_topic};
use crate::offsets::ack::CommitInfo;
use crate::sink::{Sink, Unit};

use super::processor::Processor;
use super::relations::Catalog;

/// Heartbeat state: the topic, when the next scheduled heartbeat is due, and the action
/// query with its connection.
#[derive(Debug)]
pub struct Heartbeat {
    topic: std::sync::Arc<str>,
    interval: Duration,
    next_due: Instant,
    action: Option<ActionQuery>,
}

/// `heartbeat.action.query` and the connection it runs on: one of its own, opened at its
/// first use, as in Debezium, so that a slow or failing query does not touch the catalog
/// lookups.
struct ActionQuery {
    query: String,
    database: DatabaseConfig,
    conn: Option<Client>,
}

impl std::fmt::Debug for ActionQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionQuery")
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl Heartbeat {
    /// The heartbeat of `config`, or `None` when `heartbeat.interval.ms` is 0.
    pub fn new(config: &ConnectorConfig) -> Option<Heartbeat> {
        let h = config.records.heartbeat.as_ref()?;
        Some(Heartbeat {
            topic: std::sync::Arc::from(sanitize_topic(&h.topic)),
            interval: h.interval,
            next_due: Instant::now() + h.interval,
            action: h.action_query.as_ref().map(|q| ActionQuery {
                query: q.clone(),
                database: config.database.clone(),
                conn: None,
            }),
        })
    }

    /// When the next scheduled heartbeat is due.
    pub fn next_due(&self) -> Instant {
        self.next_due
    }

    /// Whether a heartbeat goes out now: always when `force`, otherwise when one is due
    /// (which schedules the next one an interval later).
    fn take_due(&mut self, force: bool) -> bool {
        if force {
            return true;
        }
        let now = Instant::now();
        if now < self.next_due {
            return false;
        }
        self.next_due = now + self.interval;
        true
    }
}

impl ActionQuery {
    /// Runs the query. What a failure does is Debezium 3.6.1's rule for PostgreSQL, from the
    /// classifier ([`crate::error::heartbeat_action`]): stop, restart, or log and go on.
    async fn run(&mut self) -> Result<()> {
        if self.conn.as_ref().is_none_or(Client::is_closed) {
            self.conn = Some(crate::pg::sql::connect(&self.database).await?);
        }
        let Some(conn) = self.conn.as_ref() else {
            return Ok(());
        };
        let Err(e) = conn.batch_execute(&self.query).await else {
            return Ok(());
        };
        let code = e.as_db_error().map(|d| d.code().code().to_string());
        match crate::error::heartbeat_action(code.as_deref()) {
            // Fatal whatever the code means on a data connection: Debezium's rule.
            HeartbeatAction::Stop => Err(Error::new(
                ErrorKind::Sql,
                format!(
                    "heartbeat.action.query failed: PostgreSQL error {}",
                    code.as_deref().unwrap_or("")
                ),
            )
            .with_source(e)),
            HeartbeatAction::Restart => Err(Error::connection(format!(
                "heartbeat.action.query failed (SQLSTATE {})",
                code.as_deref().unwrap_or("none: connection lost")
            ))
            .with_source(e)),
            HeartbeatAction::Continue => {
                tracing::warn!(
                    sqlstate = code.as_deref().unwrap_or(""),
                    "heartbeat.action.query failed; continuing, as Debezium does for this error"
                );
                Ok(())
            }
        }
    }
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// Whether heartbeats are on (`heartbeat.interval.ms` > 0).
    pub fn heartbeat_enabled(&self) -> bool {
        self.heartbeat.is_some()
    }

    /// When the next scheduled heartbeat is due, if heartbeats are on.
    pub fn heartbeat_due(&self) -> Option<Instant> {
        self.heartbeat.as_ref().map(Heartbeat::next_due)
    }

    /// How a unit outside any transaction (a heartbeat, a notification) completes: at the
    /// idle position, as an idle unit (confirmed, never written to the offsets).
    pub(super) fn idle_unit_info(&self) -> CommitInfo {
        CommitInfo {
            end_lsn: self.progress.idle_position(),
            completes_snapshot: false,
            idle: true,
            before_snapshot: false,
            initial: None,
            ..self.progress.last_commit()
        }
    }

    /// Emits a heartbeat when one is due (or at once when `force`), then runs
    /// `heartbeat.action.query`.
    pub async fn heartbeat(&mut self, force: bool) -> Result<()> {
        let Some(hb) = self.heartbeat.as_mut() else {
            return Ok(());
        };
        if !hb.take_due(force) {
            return Ok(());
        }
        let record = meta::heartbeat_record(
            &hb.topic,
            &self.config.topic_prefix,
            now_nanos() / 1_000_000,
        );
        match self.tx.as_ref().map(|t| t.unit.token()) {
            Some(token) => self.send_record(record, token).await?,
            None => {
                let unit = Unit::open(&mut self.sink);
                self.send_record(record, unit.token()).await?;
                let info = self.idle_unit_info();
                unit.commit(&mut self.sink, info);
            }
        }
        tracing::debug!(lsn = %self.progress.idle_position(), in_transaction = self.tx.is_some(), "heartbeat");
        match self.heartbeat.as_mut().and_then(|h| h.action.as_mut()) {
            Some(action) => action.run().await,
            None => Ok(()),
        }
    }
}
