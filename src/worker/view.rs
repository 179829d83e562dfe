//! What the REST API shows of a connector: Kafka Connect's connector info and status
//! objects, built from the worker's entry (target state) and the connector's own state.
//!
//! The mapping, connector first: the target state gives the connector's state (`RUNNING`,
//! `PAUSED`, `STOPPED`); the one task (id 0) shows the run: `RUNNING`, `RESTARTING` (a REST
//! restart under way, or a wait before retrying a retriable error, with that error as its
//! `trace`), `FAILED` with its `trace`, `UNASSIGNED` (not started, or ended on its own), `PAUSED` while paused. A stopped
//! connector has no task, as in Connect.

use crate::config::{keys, RawConfig};
use crate::pipeline::ConnectorState;

use super::{Entry, TargetState};

/// How a secret value is shown.
pub const HIDDEN: &str = "[hidden]";

/// `GET /connectors/{name}`: name, config (secrets hidden), tasks, type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorInfo {
    /// The connector's name.
    pub name: String,
    /// Its config, secrets replaced by `[hidden]`.
    pub config: RawConfig,
    /// Its task ids (`[0]`, or none while stopped).
    pub tasks: Vec<u32>,
}

/// One task's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskView {
    /// Task id (0).
    pub id: u32,
    /// Connect's state name.
    pub state: &'static str,
    /// The failure, when `FAILED`; the error being retried, when `RESTARTING`.
    pub trace: Option<String>,
}

/// `GET /connectors/{name}/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusView {
    /// The connector's name.
    pub name: String,
    /// The connector's state.
    pub state: &'static str,
    /// Its tasks.
    pub tasks: Vec<TaskView>,
    /// `worker_id` (`host:port`).
    pub worker_id: String,
}

/// A config with secret values hidden.
pub fn masked(raw: &RawConfig) -> RawConfig {
    raw.iter()
        .map(|(k, v)| {
            let v = if keys::is_secret(k) {
                HIDDEN.to_string()
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect()
}

pub(super) fn info(entry: &Entry) -> ConnectorInfo {
    let s = entry.lock();
    ConnectorInfo {
        name: entry.name.clone(),
        config: masked(&s.raw),
        tasks: if s.target == TargetState::Stopped {
            Vec::new()
        } else {
            vec![0]
        },
    }
}

/// What the answer to a restart request shows as `RESTARTING`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Restarting {
    /// The connector.
    pub connector: bool,
    /// The task.
    pub task: bool,
}

/// The status; `restarting`: what to show `RESTARTING` (the answer to a restart).
pub(super) fn status(entry: &Entry, worker_id: &str, restarting: Restarting) -> StatusView {
    let s = entry.lock();
    let run = s.handle.status();
    let task = |state, trace| TaskView {
        id: 0,
        state,
        trace,
    };
    let failed = run.state == ConnectorState::Failed;
    let tasks = match s.target {
        TargetState::Stopped => Vec::new(),
        // A restarting task keeps the trace of the failure it restarts from, as in Connect.
        _ if restarting.task || s.restarting => vec![task("RESTARTING", run.trace.clone())],
        _ if failed => vec![task("FAILED", run.trace.clone())],
        TargetState::Paused => vec![task("PAUSED", None)],
        // Waiting to retry a connection error: the error it retries after, so the reason is
        // visible without the logs (Connect shows no trace here; pgcdc adds one).
        TargetState::Started if run.state == ConnectorState::Restarting => vec![task(
            "RESTARTING",
            run.last_error
                .as_ref()
                .map(|e| format!("Connection error (retrying): {e}")),
        )],
        TargetState::Started => vec![task(
            match run.state {
                ConnectorState::Running => "RUNNING",
                ConnectorState::Restarting => "RESTARTING",
                ConnectorState::Failed => "FAILED",
                ConnectorState::Unassigned | ConnectorState::Stopped => "UNASSIGNED",
            },
            None,
        )],
    };
    StatusView {
        name: entry.name.clone(),
        state: if restarting.connector {
            "RESTARTING"
        } else {
            s.target.connect_name()
        },
        tasks,
        worker_id: worker_id.to_string(),
    }
}
