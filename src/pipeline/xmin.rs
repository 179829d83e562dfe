//! `xmin.fetch.interval.ms`: the slot's `catalog_xmin` in the `source.xmin` of streamed
//! events, as Debezium writes it. Off by default (0): no reads, and `xmin` is null.
//!
//! The value is read once when streaming starts (an error then fails the start, as
//! Debezium's first read would fail its task), then every interval on its own SQL connection
//! in the background, so the stream never waits on the query. A failed background read keeps
//! the last value and is retried on the next tick. Snapshot records carry no `xmin` (nor do
//! Debezium's). The task ends when the last [`SlotXmin`] handle is dropped.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::config::{ConnectorConfig, DatabaseConfig};
use crate::error::Result;
use crate::pg::setup;

/// No value read yet.
const UNKNOWN: i64 = i64::MIN;

/// The slot's last read `catalog_xmin`, refreshed in the background.
#[derive(Debug)]
pub struct SlotXmin {
    value: Arc<AtomicI64>,
    task: JoinHandle<()>,
}

impl SlotXmin {
    /// Reads the slot's `catalog_xmin` now and starts refreshing it every
    /// `xmin.fetch.interval.ms`; `None` when the key is 0. Errors: the connection or the first
    /// query fails.
    pub async fn start(config: &ConnectorConfig) -> Result<Option<SlotXmin>> {
        let interval = config.xmin_fetch_interval;
        if interval.is_zero() {
            return Ok(None);
        }
        let client = crate::pg::sql::connect(&config.database).await?;
        let first = setup::slot_catalog_xmin(&client, &config.slot_name).await?;
        let value = Arc::new(AtomicI64::new(first.unwrap_or(UNKNOWN)));
        let task = super::spawn(refresh(
            client,
            config.database.clone(),
            config.slot_name.clone(),
            interval,
            value.clone(),
        ));
        Ok(Some(SlotXmin { value, task }))
    }

    /// The last value read, if any.
    pub fn get(&self) -> Option<i64> {
        match self.value.load(Ordering::Relaxed) {
            UNKNOWN => None,
            v => Some(v),
        }
    }
}

impl Drop for SlotXmin {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads the slot's `catalog_xmin` every `interval` into `value`, reconnecting after a
/// failed read.
async fn refresh(
    client: tokio_postgres::Client,
    database: DatabaseConfig,
    slot: String,
    interval: Duration,
    value: Arc<AtomicI64>,
) {
    let mut client = Some(client);
    let mut ticker = tokio::time::interval(interval);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        if client.as_ref().is_none_or(|c| c.is_closed()) {
            client = crate::pg::sql::connect(&database).await.ok();
        }
        let Some(c) = client.as_ref() else { continue };
        match setup::slot_catalog_xmin(c, &slot).await {
            Ok(Some(x)) => value.store(x, Ordering::Relaxed),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(slot = %slot, error = %e.one_line(),
                    "reading the slot's catalog_xmin failed; keeping the last value");
                client = None;
            }
        }
    }
}
