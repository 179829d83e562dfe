//! The pipeline: the one module that wires the source (PostgreSQL), the event model,
//! transforms, the converter, the sink and the ack tracker together, and runs a connector.
//!
//! A run, in order ([`run`]):
//! 1. [`startup`]: check the server (wal_level), create or align the publication, read the
//!    offsets and the slot, and decide what to do ([`plan::plan_start`], a pure function of
//!    `snapshot.mode`, the slot's state and the offsets); then reach Kafka and create the slot
//!    when the plan says so, exporting its snapshot;
//! 2. [`snapshot`]: read every captured table on that exported snapshot and wait until Kafka
//!    has acknowledged every snapshot record;
//! 3. [`stream`]: stream from the slot. The replication reader ([`crate::pg::stream`]) owns
//!    the socket and keeps answering keepalives; the main loop hands each message to the
//!    [`processor::Processor`], which turns it into records and sends them to the
//!    [`crate::sink::Sink`];
//! 4. [`shutdown`]: stop reading, wait (bounded) for outstanding acknowledgements, send the
//!    final status update.
//!
//! The flushable LSN moves only over fully acknowledged transactions ([`crate::offsets::ack`]),
//! so a crash anywhere leads to redelivery, never loss. [`connector::Connector`] is the value
//! an owner starts, stops, restarts and observes; its supervision loop restarts a run after a
//! retriable error.
//!
//! Where things are: [`processor`] dispatches pgoutput messages; [`changes`] turns row
//! changes into change events; [`relations`] keeps the relation cache and reads the catalog
//! through the [`relations::Catalog`] seam; [`heartbeat`] emits heartbeats; [`validate_config`]
//! checks a whole config.

// Functions here stay short enough to read in one sitting (also checked by
// `architecture::no_pipeline_function_is_longer_than_the_limit`).
#![warn(clippy::too_many_lines)]

mod blocking;
pub mod changes;
pub mod cluster;
pub mod connector;
mod counters;
pub mod fence;
pub mod heartbeat;
mod incremental;
pub mod messages;
pub mod notifications;
pub mod offsets;
mod parallel;
pub mod plan;
pub mod preflight;
pub mod processor;
mod progress;
pub mod relations;
pub mod reselect;
pub mod resume;
pub mod shutdown;
pub mod signals;
pub mod slot_monitor;
pub mod snapshot;
pub mod startup;
pub mod stream;
mod table_ranges;
mod validate;
pub mod watchdog;
pub mod xmin;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::config::ConnectorConfig;
use crate::error::Result;

pub use connector::{Connector, ConnectorHandle, ConnectorState, ConnectorStatus, Stopper};
pub use counters::{Counters, RunStats, SlotGauges, SnapshotProgress, TableProgress};
pub use validate::{check_config, validate_config};

/// How long a graceful stop waits for outstanding Kafka acknowledgements.
pub const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(30);
/// How long start-up waits for a first answer from Kafka.
pub const KAFKA_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// `tokio::spawn` in the current tracing span, so a run's helper tasks (the replication reader,
/// the slot monitor, the watchdog, background offset writes) log with their connector's name.
pub(crate) fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    use tracing::Instrument;
    tokio::spawn(future.in_current_span())
}

/// Waits `delay` (`snapshot.delay.ms` or `streaming.delay.ms`, for `what`) unless a stop is
/// requested first. `true` to go on, `false` when stopped.
async fn wait(shutdown: &mut watch::Receiver<bool>, delay: Duration, what: &str) -> Result<bool> {
    if delay.is_zero() {
        return Ok(true);
    }
    tracing::info!(
        delay_ms = delay.as_millis() as u64,
        "waiting {what}.delay.ms before the {what} starts"
    );
    let waited = until_stopped(shutdown, async {
        tokio::time::sleep(delay).await;
        Ok(())
    })
    .await?;
    Ok(waited.is_some())
}

/// Runs a start-up step that is safe to abandon (it creates nothing a later start relies on),
/// unless a stop is requested first (`None`).
async fn until_stopped<T>(
    shutdown: &mut watch::Receiver<bool>,
    step: impl std::future::Future<Output = Result<T>>,
) -> Result<Option<T>> {
    if *shutdown.borrow() {
        return Ok(None);
    }
    tokio::select! {
        biased;
        _ = shutdown.changed() => {
            tracing::info!("stop requested during start-up");
            Ok(None)
        }
        r = step => r.map(Some),
    }
}

/// Runs the connector once, until `shutdown` flips to true (graceful stop) or an error; no
/// restarts (a [`Connector`] adds those). Returns the counters of this run.
pub async fn run(
    config: Arc<ConnectorConfig>,
    shutdown: watch::Receiver<bool>,
) -> Result<RunStats> {
    let counters = Arc::new(Counters::default());
    run_counted(config, shutdown, counters.clone()).await?;
    Ok(counters.snapshot())
}

/// [`run`], counting into `counters`.
pub(crate) async fn run_counted(
    config: Arc<ConnectorConfig>,
    mut shutdown: watch::Receiver<bool>,
    counters: Arc<Counters>,
) -> Result<()> {
    let Some(config) = until_stopped(&mut shutdown, startup::on_primary(config)).await? else {
        return Ok(());
    };
    let Some(prepared) = until_stopped(&mut shutdown, startup::prepare(&config)).await? else {
        return Ok(());
    };
    let connecting =
        startup::connect_kafka(&config, prepared.resume_lsn(), counters.delivery_stats());
    let Some(sink) = until_stopped(&mut shutdown, connecting).await? else {
        return Ok(());
    };
    // Before the slot is created: a stop during the wait leaves nothing behind.
    if prepared.takes_snapshot() && !wait(&mut shutdown, config.snapshot_delay, "snapshot").await? {
        return Ok(());
    }
    let mut started = startup::start(&config, prepared, sink, counters).await?;
    if let Some(snapshot) = started.snapshot.take() {
        let done = snapshot::run(&mut started, &snapshot, &mut shutdown).await?;
        if !done {
            return Ok(());
        }
    } else {
        started.processor.notify_snapshot_skipped().await?;
    }
    let Some(repl) = started.replication.take() else {
        tracing::info!("snapshot.mode=initial_only: snapshot done, not streaming");
        return Ok(());
    };
    // The snapshot's records are acknowledged and its offsets stored: a stop now resumes
    // with streaming.
    if !wait(&mut shutdown, config.streaming_delay, "streaming").await? {
        return Ok(());
    }
    let mut streaming = stream::start(&config, &mut started, repl).await?;
    started.processor.resume_incremental_after_restart().await?;
    started
        .processor
        .counters
        .slot_watch()
        .ensure(&config.database, &config.slot_name);
    let result = stream::run(&mut started, &mut streaming, &mut shutdown).await;
    started.processor.counters.set_connected(false);
    shutdown::finish(&config, &mut started, streaming, result.map(|_| ())).await
}
