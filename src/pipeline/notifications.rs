//! `notification.enabled.channels`: Debezium's notifications about the initial snapshot
//! (aggregate type `Initial Snapshot`), on the `log` channel (an INFO line with Debezium's
//! text) and the `sink` channel (a record on `notification.sink.topic.name`, through the
//! transform chain and the converters like every record, in the unit it belongs to).
//!
//! The types and their additional data are Debezium 3.6.1's for a snapshot that reads the
//! tables one after the other: `STARTED`; per table `IN_PROGRESS`
//! (`current_collection_in_progress`, `data_collections`: the snapshot's tables in Java
//! `HashSet` order) before its rows and `TABLE_SCAN_COMPLETED` (`scanned_collection`,
//! `data_collections` in capture order, `total_rows_scanned`, `status` `SUCCEEDED`) after
//! them; `COMPLETED`; and `SKIPPED` on a start that takes no snapshot. Every one carries
//! `connector_name` (the topic prefix). `ABORTED` is logged only: a snapshot that fails
//! publishes nothing more.

use std::sync::Arc;

use crate::error::Result;
use crate::event::meta::Notification;
use crate::offsets::ack::AckToken;
use crate::sink::{Sink, Unit};
use crate::util::{java_hash_map_order, JAVA_HASH_MAP_INITIAL_CAPACITY};

use super::processor::Processor;
use super::relations::Catalog;

/// Debezium's aggregate type of the initial snapshot's notifications.
pub const INITIAL_SNAPSHOT: &str = "Initial Snapshot";
/// Debezium's aggregate type of the incremental snapshot's notifications.
pub const INCREMENTAL_SNAPSHOT: &str = "Incremental Snapshot";

/// `data_collections` of an `IN_PROGRESS` notification: the snapshot's tables
/// (`schema.table`) in the iteration order of the Java `HashSet` Debezium copies them into,
/// joined with commas.
pub fn hash_set_list(tables: &[String]) -> String {
    let order = java_hash_map_order(
        tables.iter().map(String::as_str),
        JAVA_HASH_MAP_INITIAL_CAPACITY,
    );
    let ordered: Vec<&str> = order.into_iter().map(|i| tables[i].as_str()).collect();
    ordered.join(",")
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// Sends an `Initial Snapshot` notification of `kind` with `data` on the enabled
    /// channels; the sink channel's record joins unit `token`. Nothing when no channel is
    /// enabled.
    pub async fn notify(
        &mut self,
        kind: &'static str,
        data: Vec<(&'static str, String)>,
        token: AckToken,
    ) -> Result<()> {
        self.notify_as(INITIAL_SNAPSHOT, None, kind, data, token)
            .await
    }

    /// Sends a notification of `aggregate` type and `kind` with `data` (and `connector_name`)
    /// on the enabled channels; `id` is its id (`None`: a random one). The sink channel's
    /// record joins unit `token`.
    pub async fn notify_as(
        &mut self,
        aggregate: &'static str,
        id: Option<String>,
        kind: &'static str,
        data: Vec<(&'static str, String)>,
        token: AckToken,
    ) -> Result<()> {
        let channels = &self.config.records.notifications;
        if !channels.any() {
            return Ok(());
        }
        let log = channels.log;
        let sink_topic = channels.sink_topic.clone();
        let n = Notification::new(
            aggregate,
            kind,
            data,
            &self.config.topic_prefix,
            id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            crate::util::unix_micros() / 1000,
        );
        if log {
            tracing::info!("[Notification Service]  {}", n.log_text());
        }
        if let Some(topic) = sink_topic.as_deref() {
            let record = n.record(&Arc::from(topic));
            self.send_record(record, token).await?;
        }
        Ok(())
    }

    /// A new `Initial Snapshot` notification of `kind` (a random id, the time now).
    fn notification(&self, kind: &'static str, data: Vec<(&'static str, String)>) -> Notification {
        Notification::new(
            INITIAL_SNAPSHOT,
            kind,
            data,
            &self.config.topic_prefix,
            uuid::Uuid::new_v4().to_string(),
            crate::util::unix_micros() / 1000,
        )
    }

    /// `ABORTED`: the snapshot failed or was stopped. On the log channel only: nothing more of
    /// that snapshot is published.
    pub fn log_snapshot_aborted(&self) {
        if !self.config.records.notifications.log {
            return;
        }
        let n = self.notification("ABORTED", Vec::new());
        tracing::info!("[Notification Service]  {}", n.log_text());
    }

    /// `SKIPPED`: this start takes no snapshot. Outside any transaction, as a unit of its
    /// own that completes at the idle position.
    pub async fn notify_snapshot_skipped(&mut self) -> Result<()> {
        if !self.config.records.notifications.any() {
            return Ok(());
        }
        let unit = Unit::open(&mut self.sink);
        self.notify("SKIPPED", Vec::new(), unit.token()).await?;
        let info = self.idle_unit_info();
        unit.commit(&mut self.sink, info);
        Ok(())
    }
}
