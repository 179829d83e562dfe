//! The worker: the connectors one process runs, by name, as Kafka Connect's herder keeps
//! them: each with its config, its target state (started, paused, stopped) and its
//! [`Connector`]. The REST API ([`crate::rest`]) is a thin layer over the operations here.
//!
//! Invariants:
//! - operations that start or stop a connector run one at a time (each takes the
//!   connector's control lock, a fair mutex); a target state or config and its stored copy
//!   change together under the connector's state lock, so the store holds what took effect
//!   last; a status read waits at most for that write (it reads through a
//!   [`ConnectorHandle`]);
//! - changes run in tasks of their own: a client that disconnects leaves none half done, and
//!   a deleted connector is never started again by a change that took it before the delete;
//! - a paused or stopped connector has no run: its replication connection is closed, so no
//!   status update is owed to PostgreSQL, and its slot keeps the WAL from its confirmed LSN;
//! - in `serve` ([`Mode::Serve`]) every change of a connector's config or target state is
//!   written to the config store before it is applied, so a restarted process comes back
//!   with the same connectors in the same states.

mod offsets;
mod store;
mod validation;
mod view;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::config::{self, RawConfig};
use crate::error::ErrorKind;
use crate::pipeline::{self, Connector, ConnectorHandle, ConnectorState};

pub use store::ConfigStore;
pub use validation::{validate as validate_config, ValidatedKey, Validation};
pub use view::{ConnectorInfo, StatusView, TaskView};

/// What a connector is meant to be doing, as Kafka Connect's target states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    /// Running (`RUNNING`).
    Started,
    /// Paused: no run, task kept (`PAUSED`).
    Paused,
    /// Stopped: no run, no task (`STOPPED`).
    Stopped,
}

impl TargetState {
    /// Connect's name (`RUNNING`, `PAUSED`, `STOPPED`), as `initial_state` takes it.
    pub fn connect_name(self) -> &'static str {
        match self {
            TargetState::Started => "RUNNING",
            TargetState::Paused => "PAUSED",
            TargetState::Stopped => "STOPPED",
        }
    }

    /// Parses Connect's name, case-insensitively.
    pub fn from_connect_name(s: &str) -> Option<TargetState> {
        [
            TargetState::Started,
            TargetState::Paused,
            TargetState::Stopped,
        ]
        .into_iter()
        .find(|t| t.connect_name().eq_ignore_ascii_case(s))
    }
}

/// How the process runs its connectors.
#[derive(Debug)]
pub enum Mode {
    /// `pgcdc run`: one connector from a file; none can be created or deleted over REST.
    Run,
    /// `pgcdc serve`: connectors are created, changed and deleted over REST and kept in the
    /// store.
    Serve(ConfigStore),
}

/// A refused operation, with the HTTP status Kafka Connect answers it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerError {
    /// 400, 404, 405 or 409.
    pub status: u16,
    /// Connect's `message`.
    pub message: String,
}

impl WorkerError {
    /// A refusal with Connect's `status` and `message`.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        WorkerError {
            status,
            message: message.into(),
        }
    }
    /// Connect's answer for a connector it does not have (reads, config, delete).
    pub fn unknown_connector(name: &str) -> Self {
        WorkerError::new(404, format!("Connector {name} not found"))
    }
}

/// The result of a worker operation.
pub type WorkerResult<T> = std::result::Result<T, WorkerError>;

/// One connector of the worker.
struct Entry {
    name: String,
    state: Mutex<EntryState>,
    /// Serialises the operations that start and stop the connector.
    control: tokio::sync::Mutex<Connector>,
}

struct EntryState {
    raw: RawConfig,
    /// The validated config of the current connector.
    config: Arc<config::ConnectorConfig>,
    target: TargetState,
    handle: ConnectorHandle,
    /// A task restart asked for over REST is under way.
    restarting: bool,
    /// Deleted: operations that took the entry before the delete leave it stopped and
    /// stored nowhere.
    deleted: bool,
}

impl Entry {
    fn lock(&self) -> std::sync::MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The connectors of this process.
#[derive(Clone)]
pub struct Worker {
    inner: Arc<Inner>,
}

struct Inner {
    id: String,
    mode: Mode,
    /// What a connector config takes from the worker file when it does not set it.
    defaults: RawConfig,
    connectors: Mutex<BTreeMap<String, Arc<Entry>>>,
}

impl Worker {
    /// A worker with no connector. `id` is its `worker_id` in status answers (Connect's
    /// advertised `host:port`).
    pub fn new(id: String, mode: Mode) -> Worker {
        Worker::with_defaults(id, mode, RawConfig::new())
    }

    /// [`Worker::new`], where connector configs given over REST take the worker file's
    /// `defaults` (`bootstrap.servers`, `producer.*`) for the keys they do not set, as
    /// Connect's source tasks take their producer settings from the worker. The configs are
    /// stored and shown as given.
    pub fn with_defaults(id: String, mode: Mode, defaults: RawConfig) -> Worker {
        Worker {
            inner: Arc::new(Inner {
                id,
                mode,
                defaults,
                connectors: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The `worker_id` of status answers.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// `true` in `pgcdc serve`.
    pub fn serves(&self) -> bool {
        matches!(self.inner.mode, Mode::Serve(_))
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Entry>>> {
        self.inner
            .connectors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn entry(&self, name: &str) -> WorkerResult<Arc<Entry>> {
        self.entry_or(name, |n| format!("Connector {n} not found"))
    }

    /// The entry, or a 404 with Connect's message for the endpoint (`message(name)`): its
    /// herder words it differently for reads, restarts and target states.
    fn entry_or(&self, name: &str, message: impl Fn(&str) -> String) -> WorkerResult<Arc<Entry>> {
        self.map()
            .get(name)
            .cloned()
            .ok_or_else(|| WorkerError::new(404, message(name)))
    }

    /// The connectors' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.map().keys().cloned().collect()
    }

    /// Handles of every connector with its name and validated config, for the metrics.
    pub fn handles(
        &self,
    ) -> Vec<(
        String,
        Arc<config::ConnectorConfig>,
        ConnectorHandle,
        TargetState,
    )> {
        self.map()
            .values()
            .map(|e| {
                let s = e.lock();
                (e.name.clone(), s.config.clone(), s.handle.clone(), s.target)
            })
            .collect()
    }

    /// Adds a connector whose config `validated` already checked (the CLI's `run`, and
    /// `serve` when it loads its store), and starts it unless `target` says otherwise.
    pub async fn add(
        &self,
        raw: RawConfig,
        validated: pipeline::Connector,
        target: TargetState,
    ) -> WorkerResult<()> {
        self.add_stored(raw, validated, target, None).await
    }

    /// [`Worker::add`]; with `store`, the config is stored once the name is taken (so two
    /// requests that race for one name never both write it), and the name is released again
    /// when the store refuses it.
    async fn add_stored(
        &self,
        raw: RawConfig,
        validated: pipeline::Connector,
        target: TargetState,
        store: Option<&ConfigStore>,
    ) -> WorkerResult<()> {
        let name = validated.config().name.clone();
        let stored_raw = store.map(|_| raw.clone());
        let entry = Arc::new(Entry {
            name: name.clone(),
            state: Mutex::new(EntryState {
                raw,
                config: validated.config().clone(),
                target,
                handle: validated.handle(),
                restarting: false,
                deleted: false,
            }),
            control: tokio::sync::Mutex::new(validated),
        });
        {
            let mut map = self.map();
            if map.contains_key(&name) {
                return Err(WorkerError::new(
                    409,
                    format!("Connector {name} already exists"),
                ));
            }
            map.insert(name.clone(), entry.clone());
        }
        if let (Some(store), Some(raw)) = (store, stored_raw) {
            if let Err(e) = store.save(&name, &raw, target) {
                self.map().remove(&name);
                return Err(internal(e));
            }
        }
        {
            let s = entry.lock();
            let c = &s.config;
            tracing::info!(
                connector = %entry.name,
                version = env!("CARGO_PKG_VERSION"),
                topic_prefix = %c.topic_prefix,
                slot = %c.slot_name,
                publication = %c.publication_name,
                snapshot_mode = ?c.snapshot_mode,
                state = target.connect_name(),
                "connector added"
            );
        }
        apply(&entry).await;
        Ok(())
    }

    /// Logs one status line per running connector every `interval`: events per second since
    /// the last line, ms behind the source, the processed and confirmed LSNs. Runs until the
    /// process ends.
    pub fn spawn_status_log(&self, interval: std::time::Duration) {
        let worker = self.clone();
        tokio::spawn(async move {
            let mut last: BTreeMap<String, u64> = BTreeMap::new();
            let mut tick = tokio::time::interval(interval);
            tick.tick().await;
            loop {
                tick.tick().await;
                worker.log_status(interval, &mut last);
            }
        });
    }

    fn log_status(&self, interval: std::time::Duration, last: &mut BTreeMap<String, u64>) {
        for (name, _, handle, target) in self.handles() {
            let status = handle.status();
            let seen = status.stats.change_events + status.stats.snapshot_rows;
            let before = last.insert(name.clone(), seen).unwrap_or(seen);
            if target != TargetState::Started || status.state != ConnectorState::Running {
                continue;
            }
            let c = handle.counters();
            let rate = (seen.saturating_sub(before)) as f64 / interval.as_secs_f64();
            tracing::info!(
                connector = %name,
                events_per_s = rate.round() as u64,
                events = seen,
                ms_behind_source = c.behind_source_ms(),
                processed_lsn = %c.processed_lsn().map(|l| l.to_string()).unwrap_or_else(|| "none".into()),
                confirmed_lsn = %c.confirmed_lsn().map(|l| l.to_string()).unwrap_or_else(|| "none".into()),
                "status"
            );
        }
    }

    /// `POST /connectors`: creates a connector from `raw` (its `name` key is set), in
    /// `target`. Errors: 405 in `run`, 409 when the name exists, 400 for an invalid config.
    pub async fn create(&self, raw: RawConfig, target: TargetState) -> WorkerResult<()> {
        let store = self.store()?;
        let connector = validate(&self.effective(&raw))?;
        self.add_stored(raw, connector, target, Some(store)).await
    }

    /// `PUT /connectors/{name}/config`: creates the connector (`Ok(true)`) or replaces its
    /// config and restarts it (`Ok(false)`), keeping its target state.
    pub async fn put_config(&self, name: &str, raw: RawConfig) -> WorkerResult<bool> {
        let store = self.store()?;
        let connector = validate(&self.effective(&raw))?;
        let Ok(entry) = self.entry(name) else {
            self.add_stored(raw, connector, TargetState::Started, Some(store))
                .await?;
            return Ok(true);
        };
        // The whole change under the control lock, so two PUTs are stored and applied in the
        // same order.
        let mut control = entry.control.lock().await;
        {
            // The config and its stored copy change together (see set_target).
            let mut s = entry.lock();
            if s.deleted {
                return Err(WorkerError::unknown_connector(name));
            }
            store.save(name, &raw, s.target).map_err(internal)?;
            s.raw = raw;
        }
        stop_quietly(&mut control).await;
        {
            let mut s = entry.lock();
            s.config = connector.config().clone();
            s.handle = connector.handle();
        }
        *control = connector;
        drop(control);
        apply(&entry).await;
        Ok(false)
    }

    /// `PATCH /connectors/{name}/config` (Connect 3.8+, KIP-477): the stored config with the
    /// keys of `set` set and those of `remove` removed, applied as `PUT .../config` applies a
    /// whole config. Errors: 404 for an unknown connector, as [`Worker::put_config`] otherwise.
    pub async fn patch_config(
        &self,
        name: &str,
        set: RawConfig,
        remove: &[String],
    ) -> WorkerResult<()> {
        // Connect's 404 for a connector it does not have comes first, in `run` too.
        let mut raw = self.entry(name)?.lock().raw.clone();
        self.store()?;
        for key in remove {
            raw.remove(key);
        }
        raw.extend(set);
        raw.insert(config::keys::NAME.to_string(), name.to_string());
        self.put_config(name, raw).await.map(|_| ())
    }

    /// `DELETE /connectors/{name}`: stops the connector (gracefully) and forgets it. Its
    /// slot, publication and offsets stay, as with Debezium.
    pub async fn delete(&self, name: &str) -> WorkerResult<()> {
        let store = self.store()?;
        let entry = self.entry(name)?;
        {
            let mut s = entry.lock();
            s.deleted = true;
            s.target = TargetState::Stopped;
        }
        store.remove(name).map_err(internal)?;
        self.map().remove(name);
        stop_quietly(&mut *entry.control.lock().await).await;
        Ok(())
    }

    /// `PUT .../pause`, `.../resume`, `.../stop`: sets the target state and applies it in the
    /// background (Connect answers before the state changes).
    pub fn set_target(&self, name: &str, target: TargetState) -> WorkerResult<()> {
        let entry = self.entry_or(name, |n| format!("Unknown connector {n}"))?;
        let before = {
            // The target and its stored copy change together, under the entry's lock, so
            // requests that race are stored in the order they took effect.
            let mut s = entry.lock();
            if s.target == target {
                return Ok(());
            }
            if let Mode::Serve(store) = &self.inner.mode {
                store.save(name, &s.raw, target).map_err(internal)?;
            }
            std::mem::replace(&mut s.target, target)
        };
        // A stopped connector has no task: resuming it creates a fresh one, as in Connect,
        // so a task that had failed starts again; resuming a paused one does not restart a
        // failed task (a restart does).
        let fresh = before == TargetState::Stopped;
        tokio::spawn(async move { apply_fresh(&entry, fresh).await });
        Ok(())
    }

    /// `POST /connectors/{name}/restart`. Connect restarts the connector object, which in
    /// pgcdc holds nothing; the task restarts with `include_tasks` (every task, or only a
    /// failed one with `only_failed`). Returns the status with the task to restart shown
    /// `RESTARTING` when tasks were asked for (Connect's 202 answer), `None` otherwise.
    pub fn restart(
        &self,
        name: &str,
        include_tasks: bool,
        only_failed: bool,
    ) -> WorkerResult<Option<StatusView>> {
        let entry = self.entry_or(name, |n| format!("Unknown connector: {n}"))?;
        if !include_tasks && !only_failed {
            return Ok(None);
        }
        let failed = entry.lock().handle.status().state == ConnectorState::Failed;
        let restart_task = include_tasks && (!only_failed || failed);
        let target = entry.lock().target;
        if restart_task && target == TargetState::Started {
            self.restart_entry(entry.clone());
        }
        // The connector object restarts too unless only failed instances were asked for
        // (pgcdc's connector object never fails).
        let shown = view::Restarting {
            connector: include_tasks && !only_failed,
            task: restart_task,
        };
        Ok(Some(view::status(&entry, self.id(), shown)))
    }

    /// `POST /connectors/{name}/tasks/{id}/restart`. Errors: 404 for an unknown connector or
    /// task (pgcdc's connectors have one task, 0, as Debezium's PostgreSQL connector).
    pub fn restart_task(&self, name: &str, task: &str) -> WorkerResult<()> {
        let entry = self.entry_or(name, |n| format!("Unknown connector: {n}"))?;
        check_task(&entry, task, |n, t| format!("Unknown task: {n}-{t}"))?;
        self.restart_entry(entry);
        Ok(())
    }

    fn restart_entry(&self, entry: Arc<Entry>) {
        entry.lock().restarting = true;
        tokio::spawn(async move {
            let mut control = entry.control.lock().await;
            stop_quietly(&mut control).await;
            if entry.lock().target == TargetState::Started {
                if let Err(e) = control.start() {
                    tracing::warn!(connector = %entry.name, error = %e.one_line(), "restart failed");
                }
            }
            entry.lock().restarting = false;
        });
    }

    /// The connector's info (`GET /connectors/{name}`), secrets hidden.
    pub fn info(&self, name: &str) -> WorkerResult<ConnectorInfo> {
        Ok(view::info(&*self.entry(name)?))
    }

    /// The connector's status (`GET /connectors/{name}/status`).
    pub fn status(&self, name: &str) -> WorkerResult<StatusView> {
        let entry = self.entry_or(name, |n| format!("No status found for connector {n}"))?;
        Ok(view::status(&entry, self.id(), view::Restarting::default()))
    }

    /// One task's status. Errors: 404 for an unknown connector or task.
    pub fn task_status(&self, name: &str, task: &str) -> WorkerResult<TaskView> {
        let no_status = |n: &str, t: &str| format!("No status found for task {n}-{t}");
        let entry = self.entry_or(name, |n| no_status(n, task))?;
        check_task(&entry, task, no_status)?;
        view::status(&entry, self.id(), view::Restarting::default())
            .tasks
            .into_iter()
            .next()
            .ok_or_else(|| WorkerError::new(404, no_status(name, task)))
    }

    /// The topics the connector has written to (`GET /connectors/{name}/topics`); none for
    /// a connector the worker does not have, as Connect answers.
    pub fn topics(&self, name: &str) -> Vec<String> {
        self.entry(name)
            .map(|e| e.lock().handle.topics())
            .unwrap_or_default()
    }

    /// Forgets the topics `name` has written to (`PUT .../topics/reset`). A connector the
    /// worker does not have: nothing to forget, as Connect answers.
    pub fn reset_topics(&self, name: &str) {
        if let Ok(e) = self.entry(name) {
            e.lock().handle.reset_topics();
        }
    }

    /// Queues `signal` for connector `name` (pgcdc's `POST /connectors/{name}/signals`; Kafka
    /// Connect has no such endpoint). Errors: 404 for a connector the worker does not have,
    /// 409 when its signal inbox is full.
    pub fn signal(&self, name: &str, signal: crate::pipeline::signals::Signal) -> WorkerResult<()> {
        let entry = self.entry(name)?;
        let handle = entry.lock().handle.clone();
        handle
            .signal(signal)
            .map_err(|why| WorkerError::new(409, why))
    }

    /// The connector's state and failure, for `pgcdc run`'s exit: `None` while it has not
    /// ended on its own.
    pub fn ended(&self, name: &str) -> Option<Option<ErrorKind>> {
        let entry = self.entry(name).ok()?;
        let s = entry.lock();
        let st = s.handle.status();
        if s.restarting || s.target != TargetState::Started {
            return None;
        }
        match st.state {
            // A failure always has a kind; `Internal` only if that ever did not hold.
            ConnectorState::Failed => Some(Some(st.failure.unwrap_or(ErrorKind::Internal))),
            // Only a run that ended on its own (initial_only): a stop asked for over REST keeps
            // the process up, however the requests interleave.
            ConnectorState::Stopped if st.ended_on_its_own => Some(None),
            _ => None,
        }
    }

    /// `true` when `name`'s run ended on its own (`snapshot.mode=initial_only` done): nothing
    /// left to do, not a failure.
    pub fn finished(&self, name: &str) -> bool {
        self.entry(name)
            .map(|e| e.lock().handle.status().ended_on_its_own)
            .unwrap_or(false)
    }

    /// `true` while `name`'s current run streams or takes its snapshot (`false` while it
    /// connects, and for an unknown connector).
    pub fn working(&self, name: &str) -> bool {
        self.entry(name)
            .map(|e| e.lock().handle.working())
            .unwrap_or(false)
    }

    /// How long `name`'s records have waited for Kafka without progress (`None`: nothing
    /// waits, or an unknown connector).
    pub fn unacknowledged_wait(&self, name: &str) -> Option<std::time::Duration> {
        self.entry(name)
            .ok()
            .and_then(|e| e.lock().handle.unacknowledged_wait())
    }

    /// A receiver of `name`'s state changes (`None` for an unknown connector).
    pub fn subscribe(&self, name: &str) -> Option<tokio::sync::watch::Receiver<ConnectorState>> {
        self.entry(name).ok().map(|e| e.lock().handle.subscribe())
    }

    /// Stops every connector gracefully (process shutdown); their target states are kept.
    pub async fn shutdown(&self) {
        let entries: Vec<Arc<Entry>> = self.map().values().cloned().collect();
        // All at once: each stop may wait up to its flush timeout.
        let stops: Vec<_> = entries
            .into_iter()
            .map(|e| tokio::spawn(async move { stop_quietly(&mut *e.control.lock().await).await }))
            .collect();
        for stop in stops {
            let _ = stop.await;
        }
    }

    /// Loads the store's connectors (`serve` at start-up). A stored config that no longer
    /// validates is skipped with an error in the log, so one bad file does not keep the
    /// others down; it stays in the store to be fixed with `PUT .../config`.
    pub async fn load_stored(&self) -> crate::error::Result<usize> {
        let Mode::Serve(store) = &self.inner.mode else {
            return Ok(0);
        };
        let mut loaded = 0;
        for (name, raw, target) in store.load()? {
            match validate(&self.effective(&raw)) {
                Ok(c) => {
                    if target != TargetState::Started {
                        c.watch_slot();
                    }
                    match self.add(raw, c, target).await {
                        Ok(()) => loaded += 1,
                        Err(e) => {
                            tracing::error!(connector = %name, error = %e.message, "stored connector not loaded")
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(connector = %name, error = %e.message,
                        "stored connector config is invalid; not started (fix it with PUT /connectors/{name}/config)");
                }
            }
        }
        Ok(loaded)
    }

    /// `raw` with the worker's connector defaults under it (what the connector runs with).
    pub fn effective(&self, raw: &RawConfig) -> RawConfig {
        let mut merged = self.inner.defaults.clone();
        merged.extend(raw.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged
    }

    fn store(&self) -> WorkerResult<&ConfigStore> {
        match &self.inner.mode {
            Mode::Serve(store) => Ok(store),
            Mode::Run => Err(WorkerError::new(
                405,
                "pgcdc run serves the one connector of its config file: start pgcdc serve to create, change or delete connectors over REST",
            )),
        }
    }
}

/// Validates a connector config as `pgcdc run` does (config providers resolved from the
/// environment). Errors: 400 with every problem, and for a name the REST paths cannot carry.
fn validate(raw: &RawConfig) -> WorkerResult<Connector> {
    if let Some(name) = raw.get(config::keys::NAME) {
        let unusable = name.contains('/')
            || name.trim().is_empty()
            || name.trim() != name
            || name.chars().any(char::is_control)
            || !store::name_fits(name);
        if unusable {
            return Err(WorkerError::new(
                400,
                format!(
                    "connector name {name:?} cannot be used over REST (a name needs a visible character, no '/', no control character or surrounding blank, and at most {} bytes once letters, digits, - and _ are kept and other bytes written as %XX): choose another name",
                    store::MAX_STEM_BYTES),
            ));
        }
    }
    let bad = |e: crate::error::Error| WorkerError::new(400, without_cli_hints(&e.report()));
    let resolved = config::resolve_providers(raw, &|name| std::env::var(name).ok()).map_err(bad)?;
    let (cfg, warnings) = pipeline::validate_config(&resolved).map_err(bad)?;
    for w in warnings {
        tracing::warn!(connector = %cfg.name, "{}", w.0);
    }
    Ok(Connector::new(Arc::new(cfg)))
}

/// `message` without the hints that only the command line can follow: `(or set PGUSER, or
/// --set database.user=...)`, `(or PGCDC_BOOTSTRAP_SERVERS, ...)`. Over REST every setting goes
/// in the connector's `"config"`; the environment and `--set` apply to `pgcdc run` only.
fn without_cli_hints(message: &str) -> String {
    const HINTS: [&str; 2] = [" (or set ", " (or PGCDC_"];
    let mut out = message.to_string();
    while let Some(start) = HINTS.iter().filter_map(|h| out.find(h)).min() {
        let Some(len) = out[start..].find(')') else {
            break;
        };
        out.replace_range(start..=start + len, "");
    }
    out
}

/// Refuses a task id other than 0 (and task 0 of a stopped connector), with Connect's
/// message for the endpoint (`message(connector, task)`).
fn check_task(
    entry: &Entry,
    task: &str,
    message: impl Fn(&str, &str) -> String,
) -> WorkerResult<()> {
    let stopped = entry.lock().target == TargetState::Stopped;
    if task == "0" && !stopped {
        Ok(())
    } else {
        Err(WorkerError::new(404, message(&entry.name, task)))
    }
}

fn internal(e: crate::error::Error) -> WorkerError {
    WorkerError::new(500, e.one_line())
}

/// Starts or stops the connector as its target state says.
async fn apply(entry: &Entry) {
    apply_fresh(entry, false).await;
}

/// [`apply`]; `fresh`: a failed connector is started again too (a task created anew).
async fn apply_fresh(entry: &Entry, fresh: bool) {
    let mut control = entry.control.lock().await;
    let target = entry.lock().target;
    match target {
        TargetState::Started => {
            let state = control.status().state;
            let startable = matches!(state, ConnectorState::Unassigned | ConnectorState::Stopped)
                || (fresh && state == ConnectorState::Failed);
            if startable {
                // A failed run's task is collected first.
                stop_quietly(&mut control).await;
                if let Err(e) = control.start() {
                    tracing::warn!(connector = %entry.name, error = %e.one_line(), "could not start");
                }
            }
        }
        TargetState::Paused | TargetState::Stopped => {
            stop_quietly(&mut control).await;
            tracing::info!(connector = %entry.name, state = target.connect_name(), "connector target state applied");
        }
    }
}

/// Stops a started connector and waits for it; the error that ended its last run (if any) is
/// in its status already. A connector never started is left alone (a stop request would
/// otherwise wait for its first run and end it at once).
async fn stop_quietly(c: &mut Connector) {
    if c.is_started() {
        let _ = c.stop().await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rest_messages_drop_the_command_line_hints() {
        let m =
            "invalid configuration:\n  database.user is required: a role with LOGIN and REPLICATION (or set PGUSER, or --set database.user=...)\n  bootstrap.servers is required: the Kafka brokers as host:port[,host:port] (or PGCDC_BOOTSTRAP_SERVERS, or --set bootstrap.servers=...)\n  database.dbname is required: the database to capture (or set PGDATABASE)";
        assert_eq!(
            super::without_cli_hints(m),
            "invalid configuration:\n  database.user is required: a role with LOGIN and REPLICATION\n  bootstrap.servers is required: the Kafka brokers as host:port[,host:port]\n  database.dbname is required: the database to capture"
        );
        assert_eq!(super::without_cli_hints("x (unclosed"), "x (unclosed");
    }

    use super::*;

    fn raw(name: &str, slot: &str) -> RawConfig {
        [
            ("name", name),
            ("database.hostname", "localhost"),
            ("database.user", "u"),
            ("database.dbname", "shop"),
            ("topic.prefix", "cap"),
            ("slot.name", slot),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn worker(dir: &std::path::Path, defaults: RawConfig) -> Worker {
        let store = ConfigStore::Dir(store::DirStore::open(dir).unwrap());
        Worker::with_defaults("w:1".into(), Mode::Serve(store), defaults)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_creates_of_one_name_store_the_config_of_the_one_that_won() {
        let dir = tempfile::tempdir().unwrap();
        let defaults: RawConfig = [("bootstrap.servers".to_string(), "k:9092".to_string())].into();
        let w = worker(dir.path(), defaults);
        let (a, b) = tokio::join!(
            w.create(raw("c", "slot_a"), TargetState::Stopped),
            w.create(raw("c", "slot_b"), TargetState::Stopped)
        );
        let (won, lost) = match (&a, &b) {
            (Ok(()), Err(e)) => ("slot_a", e),
            (Err(e), Ok(())) => ("slot_b", e),
            other => panic!("exactly one create wins: {other:?}"),
        };
        assert_eq!(lost.status, 409);
        let stored = w.store().unwrap().load().unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].1.get("slot.name").map(String::as_str), Some(won));
        // Stored as given: the worker's default is not written into it.
        assert!(!stored[0].1.contains_key("bootstrap.servers"));
        assert_eq!(w.map()["c"].lock().config.kafka.bootstrap_servers, "k:9092");
    }

    #[tokio::test]
    async fn a_config_without_brokers_and_no_worker_default_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let w = worker(dir.path(), RawConfig::new());
        let e = w
            .create(raw("c", "s"), TargetState::Stopped)
            .await
            .unwrap_err();
        assert_eq!(e.status, 400);
        assert!(
            e.message.contains("bootstrap.servers is required"),
            "{}",
            e.message
        );
        assert!(w.store().unwrap().load().unwrap().is_empty());
    }
}
