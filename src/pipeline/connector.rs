//! A connector as a value: something its owner creates from a config, starts, stops,
//! restarts and observes (state, counters, last error), with no process-global state, so that
//! one process can run several side by side.
//!
//! A started connector runs its supervision loop on the tokio runtime: it runs the pipeline
//! (`run_counted` in [`super`]) and, after a retriable error, waits
//! `retriable.restart.connector.wait.ms` and runs it again, up to `errors.max.retries` times
//! (unlimited by default). A fatal error ends it in [`ConnectorState::Failed`] with the error
//! kept for [`Connector::status`]; a stop request ends it in [`ConnectorState::Stopped`],
//! also while it waits to restart (nothing is in flight then).
//!
//! State names follow Kafka Connect's REST API.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::config::ConnectorConfig;
use crate::error::{Error, ErrorKind, Result};

use super::slot_monitor::SlotWatch;
use super::{run_counted, Counters, RunStats};
use crate::offsets::ack::DeliveryStats;

/// The state of a connector, as Kafka Connect names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectorState {
    /// Created, never started.
    Unassigned,
    /// Running (snapshot or stream).
    Running,
    /// Waiting to restart after a retriable error.
    Restarting,
    /// Stopped on request.
    Stopped,
    /// Ended by a fatal error (or by running out of retries).
    Failed,
}

/// What an owner sees of a connector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorStatus {
    /// The connector's name.
    pub name: String,
    /// Its state.
    pub state: ConnectorState,
    /// The last error (the one that failed it, or the one it is restarting after), as one
    /// line.
    pub last_error: Option<String>,
    /// The error that failed it: its kind, message and fix, one per line (Kafka Connect's
    /// `trace`). `None` unless the state is [`ConnectorState::Failed`].
    pub trace: Option<String>,
    /// The kind of the error that failed it (the CLI's exit status follows it).
    pub failure: Option<ErrorKind>,
    /// `Stopped` because its run ended on its own (`snapshot.mode=initial_only`), not on a
    /// stop request.
    pub ended_on_its_own: bool,
    /// Restarts after retriable errors since it was started.
    pub restarts: u64,
    /// Counters since it was created, over all its runs.
    pub stats: RunStats,
}

/// The part of the status the supervision loop writes.
#[derive(Debug)]
struct Progress {
    state: ConnectorState,
    last_error: Option<String>,
    /// The failing error, as [`ConnectorStatus::trace`] and its kind.
    failure: Option<(ErrorKind, String)>,
    /// See [`ConnectorStatus::ended_on_its_own`].
    ended_on_its_own: bool,
    restarts: u64,
    /// Counters of the runs that ended.
    finished: RunStats,
    /// Counters of the current run (each run logs its own).
    current: Arc<Counters>,
    /// Topics the runs that ended wrote to.
    finished_topics: std::collections::BTreeSet<String>,
    /// Since when the connector has not been at work (streaming or taking its snapshot), as
    /// of the runs that ended: when it was started, or when an earlier run last worked.
    down_since: Instant,
}

/// State shared between a connector and its supervision loop.
#[derive(Debug)]
struct Shared {
    progress: Mutex<Progress>,
    /// The state, for owners that wait on a change ([`ConnectorHandle::subscribe`]).
    state: watch::Sender<ConnectorState>,
    /// What outlives a run: producer queue bytes and Kafka error counts, and the slot watch.
    delivery: Arc<DeliveryStats>,
    slot: Arc<SlotWatch>,
    signals: Arc<super::signals::SignalInbox>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the state and, when given, the last error.
    fn set(&self, state: ConnectorState, error: Option<String>) {
        let mut p = self.lock();
        p.state = state;
        p.ended_on_its_own = false;
        if state != ConnectorState::Failed {
            p.failure = None;
        }
        if error.is_some() {
            p.last_error = error;
        }
        drop(p);
        self.state.send_replace(state);
    }

    /// Ends in [`ConnectorState::Failed`] because of `e`.
    fn fail(&self, e: &Error) {
        let trace = format!(
            "{:?} error: {}\nfix: {}",
            e.kind(),
            e.report(),
            e.kind().policy().fix
        );
        // Everything under the lock before the state is published: an owner woken by the
        // change reads the failure with it.
        let mut p = self.lock();
        p.state = ConnectorState::Failed;
        p.last_error = Some(e.one_line());
        p.failure = Some((e.kind(), trace));
        drop(p);
        self.state.send_replace(ConnectorState::Failed);
    }

    /// What an owner sees.
    fn status(&self, name: &str) -> ConnectorStatus {
        let stats = self.stats();
        let p = self.lock();
        ConnectorStatus {
            name: name.to_string(),
            state: p.state,
            last_error: p.last_error.clone(),
            trace: p.failure.as_ref().map(|(_, t)| t.clone()),
            failure: p.failure.as_ref().map(|(k, _)| *k),
            ended_on_its_own: p.ended_on_its_own,
            restarts: p.restarts,
            stats,
        }
    }

    /// Fresh counters for a new run; the previous run's are added to the total.
    fn new_run(&self) -> Arc<Counters> {
        let mut p = self.lock();
        if let Some(worked) = p.current.last_working() {
            p.down_since = p.down_since.max(worked);
        }
        let ended = p.current.snapshot();
        p.finished = p.finished + ended;
        let topics = p.current.topics();
        p.finished_topics.extend(topics);
        p.current = Arc::new(Counters::for_run(
            self.delivery.clone(),
            self.slot.clone(),
            self.signals.clone(),
        ));
        p.current.clone()
    }

    /// Counters over every run, the current one included.
    fn stats(&self) -> RunStats {
        let p = self.lock();
        p.finished + p.current.snapshot()
    }

    /// The live counters of the current run.
    fn current(&self) -> Arc<Counters> {
        self.lock().current.clone()
    }

    /// See [`ConnectorHandle::down_seconds`].
    fn down_seconds(&self) -> Option<f64> {
        let p = self.lock();
        if !matches!(
            p.state,
            ConnectorState::Running | ConnectorState::Restarting
        ) {
            return None;
        }
        if p.current.working() {
            return Some(0.0);
        }
        let since = match p.current.last_working() {
            Some(worked) => p.down_since.max(worked),
            None => p.down_since,
        };
        Some(since.elapsed().as_secs_f64())
    }
}

/// A cheap, cloneable view of a [`Connector`] that reads its status and counters and asks it
/// to stop without owning it (the REST API and the metrics hold these while the owner starts
/// and stops the connector).
#[derive(Debug, Clone)]
pub struct ConnectorHandle {
    name: String,
    shared: Arc<Shared>,
}

impl ConnectorHandle {
    /// What the connector is doing now.
    pub fn status(&self) -> ConnectorStatus {
        self.shared.status(&self.name)
    }

    /// The live counters of the current run (snapshot progress, last event, LSNs).
    pub fn counters(&self) -> Arc<Counters> {
        self.shared.current()
    }

    /// The topics the connector has written to since it was created, sorted.
    pub fn topics(&self) -> Vec<String> {
        let p = self.shared.lock();
        let mut all: std::collections::BTreeSet<String> = p.finished_topics.clone();
        all.extend(p.current.topics());
        all.into_iter().collect()
    }

    /// Seconds a started connector (`RUNNING` or `RESTARTING`) has been neither streaming nor
    /// taking its snapshot: connecting to PostgreSQL or Kafka, or waiting to retry after an
    /// error. `Some(0.0)` while it works, `None` when it is not meant to run (paused, stopped,
    /// failed, never started). Unlike the state, it keeps growing across retries that never
    /// get as far as streaming (Kafka unreachable for an hour reads 3600, not "RUNNING").
    pub fn down_seconds(&self) -> Option<f64> {
        self.shared.down_seconds()
    }

    /// `true` while the connector's current run streams or takes its snapshot.
    pub fn working(&self) -> bool {
        self.shared.current().working()
    }

    /// How long the current run's records have waited for Kafka without progress (`None`:
    /// nothing waits).
    pub fn unacknowledged_wait(&self) -> Option<std::time::Duration> {
        self.shared.current().unacknowledged_wait()
    }

    /// Forgets the topics the connector has written to (Kafka Connect's
    /// `PUT /connectors/{name}/topics/reset`); each comes back when it is next written to.
    pub fn reset_topics(&self) {
        let mut p = self.shared.lock();
        p.finished_topics.clear();
        p.current.reset_topics();
    }

    /// Queues a signal for the connector (pgcdc's REST signal endpoint). Errors: the inbox is
    /// full, with the reason.
    pub fn signal(
        &self,
        signal: crate::pipeline::signals::Signal,
    ) -> std::result::Result<(), String> {
        self.shared.signals.offer(signal)
    }

    /// A receiver that sees every change of the connector's state.
    pub fn subscribe(&self) -> watch::Receiver<ConnectorState> {
        self.shared.state.subscribe()
    }
}

/// One connector: its config, and its supervision task while it runs.
#[derive(Debug)]
pub struct Connector {
    config: Arc<ConnectorConfig>,
    shared: Arc<Shared>,
    stop: Arc<watch::Sender<bool>>,
    task: Option<JoinHandle<Result<()>>>,
}

impl Drop for Connector {
    /// The slot monitor ends with the connector (deleted, or replaced by a new config).
    fn drop(&mut self) {
        self.shared.slot.stop();
    }
}

/// Asks a connector to stop gracefully, from anywhere (a signal handler, an HTTP request).
#[derive(Debug, Clone)]
pub struct Stopper(Arc<watch::Sender<bool>>);

impl Stopper {
    /// Requests a graceful stop of the connector's current run (without waiting for it).
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

impl Connector {
    /// A connector for a validated `config` (see [`super::validate_config`]), not started.
    pub fn new(config: Arc<ConnectorConfig>) -> Self {
        let delivery = Arc::new(DeliveryStats::default());
        let slot = Arc::new(SlotWatch::default());
        let signals = Arc::new(super::signals::SignalInbox::default());
        Connector {
            config,
            shared: Arc::new(Shared {
                progress: Mutex::new(Progress {
                    state: ConnectorState::Unassigned,
                    last_error: None,
                    failure: None,
                    ended_on_its_own: false,
                    restarts: 0,
                    finished: RunStats::default(),
                    current: Arc::new(Counters::for_run(
                        delivery.clone(),
                        slot.clone(),
                        signals.clone(),
                    )),
                    finished_topics: Default::default(),
                    down_since: Instant::now(),
                }),
                state: watch::channel(ConnectorState::Unassigned).0,
                delivery,
                slot,
                signals,
            }),
            stop: Arc::new(watch::channel(false).0),
            task: None,
        }
    }

    /// Starts watching the connector's slot from the server's side without running it (a
    /// connector that comes back paused or stopped when its worker restarts: its slot still
    /// holds WAL). Runs start the watch themselves once they stream.
    pub fn watch_slot(&self) {
        self.shared
            .slot
            .ensure(&self.config.database, &self.config.slot_name);
    }

    /// The connector's config.
    pub fn config(&self) -> &Arc<ConnectorConfig> {
        &self.config
    }

    /// Starts the connector as a task of the current tokio runtime. Errors: it is already
    /// running.
    pub fn start(&mut self) -> Result<()> {
        let stop_rx = self.begin_run()?;
        let span = tracing::info_span!("connector", name = %self.config.name);
        self.task = Some(tokio::spawn(
            supervise(self.config.clone(), stop_rx, self.shared.clone()).instrument(span),
        ));
        Ok(())
    }

    /// Runs the connector in the calling task until it ends (a stop through a [`Stopper`],
    /// or a fatal error) and returns its counters or the error that ended it. The CLI runs
    /// its one connector this way, on the main thread. Errors also: it is already running.
    /// Cancel-safe: if the future is dropped, the connector is left stopped.
    pub async fn run(&mut self) -> Result<RunStats> {
        let stop_rx = self.begin_run()?;
        let guard = StoppedOnDrop(&self.shared);
        let span = tracing::info_span!("connector", name = %self.config.name);
        let result = supervise(self.config.clone(), stop_rx, self.shared.clone())
            .instrument(span)
            .await;
        drop(guard);
        self.stop.send_replace(false);
        result.map(|()| self.shared.stats())
    }

    /// `true` from [`Connector::start`] until [`Connector::wait`] (or `stop`) has collected
    /// the supervision task: something to stop.
    pub fn is_started(&self) -> bool {
        self.task.is_some()
    }

    /// A handle that stops this connector's runs from elsewhere.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.stop.clone())
    }

    /// Marks the connector as running and returns its stop signal. A stop requested while it
    /// was not running is honoured: the run stops at once (and the request is then used up).
    fn begin_run(&mut self) -> Result<watch::Receiver<bool>> {
        let mut p = self.shared.lock();
        let task_alive = self.task.as_ref().is_some_and(|t| !t.is_finished());
        if task_alive
            || matches!(
                p.state,
                ConnectorState::Running | ConnectorState::Restarting
            )
        {
            return Err(Error::config(format!(
                "connector {} is already running",
                self.config.name
            )));
        }
        p.state = ConnectorState::Running;
        p.last_error = None;
        p.failure = None;
        p.restarts = 0;
        p.down_since = Instant::now();
        self.shared.state.send_replace(ConnectorState::Running);
        let mut rx = self.stop.subscribe();
        if *rx.borrow() {
            rx.mark_changed();
        }
        Ok(rx)
    }

    /// What the connector is doing now.
    pub fn status(&self) -> ConnectorStatus {
        self.shared.status(&self.config.name)
    }

    /// A view of this connector's status and counters that can be kept elsewhere.
    pub fn handle(&self) -> ConnectorHandle {
        ConnectorHandle {
            name: self.config.name.clone(),
            shared: self.shared.clone(),
        }
    }

    /// Asks a running connector to stop gracefully (without waiting for it).
    pub fn request_stop(&self) {
        self.stop.send_replace(true);
    }

    /// Stops the connector gracefully and waits for it: see [`Connector::wait`].
    pub async fn stop(&mut self) -> Result<RunStats> {
        self.request_stop();
        self.wait().await
    }

    /// Waits until the connector ends (a stop, or a fatal error) and returns its counters or
    /// the error that ended it. A connector that is not running returns at once.
    /// Cancel-safe: dropping the future leaves the connector running and stoppable.
    pub async fn wait(&mut self) -> Result<RunStats> {
        let Some(task) = self.task.as_mut() else {
            return Ok(self.shared.stats());
        };
        let joined = task.await;
        self.task = None;
        self.stop.send_replace(false);
        match joined {
            Ok(r) => r.map(|()| self.shared.stats()),
            Err(e) => {
                let msg = format!("connector {} task ended abnormally: {e}", self.config.name);
                let e = Error::new(ErrorKind::Internal, msg);
                self.shared.fail(&e);
                Err(e)
            }
        }
    }

    /// Stops the connector (gracefully) and starts it again. A stop that ends in an error
    /// does not prevent the restart; the error is returned after it.
    pub async fn restart(&mut self) -> Result<()> {
        let stopped = self.stop().await;
        self.start()?;
        stopped.map(|_| ())
    }
}

/// Leaves a connector whose [`Connector::run`] future was dropped in
/// [`ConnectorState::Stopped`], so that it can run again.
struct StoppedOnDrop<'a>(&'a Shared);

impl Drop for StoppedOnDrop<'_> {
    fn drop(&mut self) {
        let mut p = self.0.lock();
        if matches!(
            p.state,
            ConnectorState::Running | ConnectorState::Restarting
        ) {
            p.state = ConnectorState::Stopped;
            drop(p);
            self.0.state.send_replace(ConnectorState::Stopped);
        }
    }
}

/// The supervision loop: runs the pipeline, restarting it after retriable errors.
async fn supervise(
    config: Arc<ConnectorConfig>,
    shutdown: watch::Receiver<bool>,
    shared: Arc<Shared>,
) -> Result<()> {
    let mut attempts: i64 = 0;
    loop {
        let counters = shared.new_run();
        let result = run_counted(config.clone(), shutdown.clone(), counters.clone()).await;
        counters.run_ended();
        let e = match result {
            Ok(()) => {
                let on_its_own = !*shutdown.borrow();
                shared.set(ConnectorState::Stopped, None);
                if on_its_own {
                    shared.lock().ended_on_its_own = true;
                    // Published again so an owner woken by the first change reads the flag.
                    shared.state.send_replace(ConnectorState::Stopped);
                }
                return Ok(());
            }
            Err(e) => e,
        };
        if e.is_retriable() && *shutdown.borrow() {
            // The run was stopping anyway (a broker unreachable while a stop was requested).
            tracing::info!(error = %e.one_line(), "stopped");
            shared.set(ConnectorState::Stopped, None);
            return Ok(());
        }
        let may_retry = config.errors_max_retries < 0 || attempts < config.errors_max_retries;
        if !e.is_retriable() || !may_retry {
            let e = give_up(&config, e, attempts);
            tracing::error!(error = %e.one_line(), fix = e.kind().policy().fix, "connector failed");
            shared.fail(&e);
            return Err(e);
        }
        attempts += 1;
        shared.lock().restarts += 1;
        shared.set(ConnectorState::Restarting, Some(e.one_line()));
        tracing::warn!(
            error = %e.one_line(),
            attempt = attempts,
            wait_ms = config.restart_wait.as_millis() as u64,
            "retriable error; restarting the connector"
        );
        if !wait_to_restart(&config, shutdown.clone()).await {
            shared.set(ConnectorState::Stopped, None);
            return Ok(());
        }
        shared.set(ConnectorState::Running, None);
    }
}

/// The error a connector fails with: a connection error after the last allowed retry says
/// so.
fn give_up(config: &ConnectorConfig, e: Error, attempts: i64) -> Error {
    if e.kind() == ErrorKind::Connection && config.errors_max_retries >= 0 {
        e.with_context(&format!(
            "giving up after {attempts} restart(s) (errors.max.retries)"
        ))
    } else {
        e
    }
}

/// Waits `retriable.restart.connector.wait.ms`. Returns `false` when a stop was requested
/// (before or during the wait): a graceful stop, since nothing is in flight.
async fn wait_to_restart(config: &ConnectorConfig, mut shutdown: watch::Receiver<bool>) -> bool {
    if *shutdown.borrow() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep(config.restart_wait) => true,
        _ = shutdown.changed() => false,
    }
}
