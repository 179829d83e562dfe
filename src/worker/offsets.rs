//! Kafka Connect's offset management (`GET`, `PATCH`, `DELETE /connectors/{name}/offsets`)
//! over the connector's own offsets storage (its topic or its file): read at any time,
//! changed only while the connector is stopped, as Connect requires.
//!
//! The partition is Debezium's, `{"server": <topic.prefix>}`; the offset is the map Debezium
//! writes (`lsn`, `txId`, `ts_usec`, `lsn_proc`, `lsn_commit`, `messageType`, and the
//! snapshot fields). What pgcdc does with an altered offset on its next start is what it does
//! with offsets Debezium left: the slot still decides where PostgreSQL starts sending, and the
//! offsets say what of that was published already.

use serde_json::{json, Value};

use crate::config::ConnectorConfig;
use crate::offsets::store::Offsets;
use crate::pipeline::offsets::OffsetStorage;
use crate::pipeline::ConnectorState;

use super::{Entry, TargetState, Worker, WorkerError, WorkerResult};

impl Worker {
    /// `GET /connectors/{name}/offsets`: `{"offsets":[{"partition":...,"offset":...}]}`, or
    /// an empty list when nothing is stored.
    pub async fn offsets(&self, name: &str) -> WorkerResult<Value> {
        let entry = self.entry(name)?;
        let config = entry.lock().config.clone();
        let storage = OffsetStorage::open_existing(&config)
            .await
            .map_err(internal)?;
        let stored = storage.load().await.map_err(internal)?;
        let list: Vec<Value> = stored
            .iter()
            .map(|o| json!({"partition": partition(&config), "offset": o.to_json()}))
            .collect();
        Ok(json!({ "offsets": list }))
    }

    /// `PATCH /connectors/{name}/offsets` with Connect's body: writes the one partition's
    /// offset (a null offset removes it). Errors: 400 unless stopped, for a body without
    /// offsets, for another partition or an offset that is not Debezium's.
    pub async fn alter_offsets(&self, name: &str, body: &Value) -> WorkerResult<String> {
        let entry = self.entry(name)?;
        let control = entry.control.lock().await;
        require_stopped(&entry, control.status().state)?;
        let config = entry.lock().config.clone();
        let list = body
            .get("offsets")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                WorkerError::new(
                    400,
                    "Partitions / offsets need to be provided for an alter offsets request",
                )
            })?;
        let [item] = list.as_slice() else {
            return Err(WorkerError::new(
                400,
                format!(
                    "a Debezium PostgreSQL connector has one partition, {}: give one offset",
                    partition(&config)
                ),
            ));
        };
        if item.get("partition") != Some(&partition(&config)) {
            return Err(WorkerError::new(
                400,
                format!(
                    "unknown partition {}: this connector's partition is {}",
                    item.get("partition").unwrap_or(&Value::Null),
                    partition(&config)
                ),
            ));
        }
        let storage = open(&config).await?;
        match item.get("offset") {
            None | Some(Value::Null) => storage.clear().await.map_err(internal)?,
            Some(offset) => {
                let offsets = Offsets::from_json(offset)
                    .map_err(|why| WorkerError::new(400, format!("invalid offset: {why}")))?;
                storage.save(&offsets).await.map_err(internal)?;
            }
        }
        drop(control);
        tracing::info!(connector = %name, storage = %storage.describe(), "offsets altered over REST");
        Ok(
            "The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses.".into())
    }

    /// `DELETE /connectors/{name}/offsets`: removes the stored offsets. Errors: 400 unless
    /// stopped.
    pub async fn reset_offsets(&self, name: &str) -> WorkerResult<String> {
        let entry = self.entry(name)?;
        let control = entry.control.lock().await;
        require_stopped(&entry, control.status().state)?;
        let config = entry.lock().config.clone();
        let storage = open(&config).await?;
        storage.clear().await.map_err(internal)?;
        drop(control);
        tracing::info!(connector = %name, storage = %storage.describe(), "offsets reset over REST");
        Ok(
            "The Connect framework-managed offsets for this connector have been reset successfully. However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses.".into())
    }
}

fn partition(config: &ConnectorConfig) -> Value {
    json!({"server": config.topic_prefix})
}

async fn open(config: &ConnectorConfig) -> WorkerResult<OffsetStorage> {
    OffsetStorage::open(config).await.map_err(internal)
}

use super::internal;

/// Connect's refusal to change the offsets of a connector that is not stopped.
fn require_stopped(entry: &Entry, run: ConnectorState) -> WorkerResult<()> {
    let stopped = entry.lock().target == TargetState::Stopped
        && !matches!(run, ConnectorState::Running | ConnectorState::Restarting);
    if stopped {
        Ok(())
    } else {
        Err(WorkerError::new(400, format!(
            "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/{}/stop' endpoint",
            entry.name)))
    }
}
