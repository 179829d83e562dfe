//! Start-up: everything before the snapshot and the stream.
//!
//! [`prepare`] talks to PostgreSQL only: it reads the offsets, checks the server, creates or
//! aligns the publication, applies replica identities, looks the slot up, checks that the
//! slot can be used by this connector, and asks [`plan_start`] what to do. [`connect_kafka`]
//! then reaches Kafka (failing fast on bad producer settings, refused credentials or
//! certificates, or unreachable brokers). Both can be cancelled by a stop request: nothing is
//! created before [`start`], which builds the processor, opens the replication connection and
//! creates the slot when the plan says so.

use std::sync::Arc;

use tokio_postgres::Client;

use crate::config::keys::{
    HEARTBEAT_ACTION_QUERY, INCLUDE_SCHEMA_CHANGES, REPLICA_IDENTITY_AUTOSET_VALUES, SLOT_FAILOVER,
};
use crate::config::ConnectorConfig;
use crate::error::{Error, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::{AckTracker, DeliveryStats};
use crate::offsets::store::offset_key;
use crate::offsets::store::Offsets;
use crate::pg::setup::{self, ServerInfo, SlotInfo};
use crate::pg::wire::WireConnection;
use crate::sink::kafka::{transaction_timeout, KafkaSink};
use crate::sink::transactions::TransactionSettings;
use crate::sink::Sink;

use super::offsets::{OffsetSaver, OffsetStorage};
use super::plan::{
    check_slot_position, plan_start, OffsetsState, SlotPosition, SlotState, StartPlan, StartRefusal,
};
use super::processor::{Processor, ProcessorStart};
use super::relations::Catalog;
use super::resume::ResumeFilter;
use super::watchdog::{self, Watchdog};
use super::xmin::SlotXmin;
use super::{Counters, KAFKA_CONNECT_TIMEOUT};

/// What [`prepare`] found and decided.
pub struct Prepared {
    sql: Client,
    server: ServerInfo,
    store: OffsetStorage,
    offsets: Option<Offsets>,
    /// The slot (after dropping a lost one, `None`).
    slot: Option<SlotInfo>,
    plan: StartPlan,
}

/// The initial snapshot to take: on the snapshot exported by the slot this run created, or
/// (when the slot already existed) in a transaction of `snapshot.isolation.mode`.
#[derive(Debug)]
pub struct SnapshotJob {
    /// The exported snapshot's name.
    pub exported: Option<String>,
    /// Whether this run created the slot (a snapshot that cannot complete then drops it).
    pub created_slot: bool,
}

/// A started run: the processor with its sink (Kafka, in a connector; the memory sink in the
/// main loop's unit tests), the replication connection when it streams, and what remains to
/// do.
pub struct Started<S: Sink = KafkaSink, C: Catalog = Client> {
    /// The processor (in a connector, its catalog is the SQL connection of this run).
    pub processor: Processor<S, C>,
    /// The server's version and settings.
    pub server: ServerInfo,
    /// The offsets store and what was last written to it.
    pub offsets: OffsetSaver,
    /// The replication connection, when the run streams.
    pub replication: Option<WireConnection>,
    /// The position streaming starts from (and the snapshot's position).
    pub start_lsn: Lsn,
    /// The snapshot to take first, if any.
    pub snapshot: Option<SnapshotJob>,
    /// Logs a Kafka that stops acknowledging, for as long as the run lasts.
    pub watchdog: Watchdog,
}

/// `config` narrowed to the first writable primary of a `database.hostname` list (see
/// [`crate::pg::sql::choose_primary`]): every connection of the run goes to it.
pub async fn on_primary(config: Arc<ConnectorConfig>) -> Result<Arc<ConnectorConfig>> {
    if config.database.other_hosts.is_empty() {
        return Ok(config);
    }
    let database = crate::pg::sql::choose_primary(&config.database).await?;
    let mut narrowed = (*config).clone();
    narrowed.database = database;
    Ok(Arc::new(narrowed))
}

/// On a standby (PostgreSQL 16+ decodes there): refuses what would have to write, which a
/// standby cannot (Debezium documents the same limits).
async fn check_standby(config: &ConnectorConfig, sql: &tokio_postgres::Client) -> Result<()> {
    let action = config
        .records
        .heartbeat
        .as_ref()
        .and_then(|h| h.action_query.as_ref());
    if action.is_some() {
        return Err(Error::config(format!(
            "{HEARTBEAT_ACTION_QUERY} is set, but the server is a standby, where a query cannot write: remove it, or run the heartbeat query on the primary some other way (a standby's slot advances with the primary's WAL)"
        )));
    }
    if !config.replica_identity_autoset.is_empty() {
        return Err(Error::config(format!(
            "{REPLICA_IDENTITY_AUTOSET_VALUES} is set, but the server is a standby, where ALTER TABLE cannot run: set the replica identities on the primary and remove the key"
        )));
    }
    let name = &config.publication_name;
    let published = sql
        .query_opt("SELECT 1 FROM pg_publication WHERE pubname = $1", &[name])
        .await?;
    if published.is_none() {
        return Err(Error::server(format!(
            "publication {name} does not exist on this standby, which cannot create it: create it on the primary (CREATE PUBLICATION ... FOR ALL TABLES, or FOR TABLE ...); it reaches the standby with the WAL"
        )));
    }
    tracing::info!(
        "the server is a standby: decoding there (the slot must be created on this standby; the publication comes from the primary)"
    );
    Ok(())
}

/// Checks the server and the slot and decides how to start (see [`plan_start`]).
pub async fn prepare(config: &ConnectorConfig) -> Result<Prepared> {
    let store = OffsetStorage::open(config).await?;
    let offsets = store.load().await?;
    let needs_stream = config.snapshot_mode != crate::config::SnapshotMode::InitialOnly;
    let sql = crate::pg::sql::connect(&config.database).await?;
    let wanted = (config.pgoutput_binary, config.pgoutput_streaming.is_some());
    let server = setup::check_server(&sql, needs_stream, wanted).await?;
    if server.in_recovery {
        check_standby(config, &sql).await?;
    }
    super::cluster::check_cluster(config, &store, &sql, offsets.as_ref()).await?;
    if config.include_schema_changes {
        warn_without_capture(config, &sql).await?;
    }
    setup::ensure_publication(&sql, config).await?;
    if config.pgoutput_binary && needs_stream {
        setup::check_binary_sendable(&sql, &config.publication_name).await?;
    }
    setup::apply_replica_identity_autoset(&sql, config).await?;
    setup::warn_replica_identity(&sql, config).await?;
    setup::check_guardrail(&sql, config).await?;
    let found = setup::find_slot(&sql, &config.slot_name, server.version_num).await?;
    let (mut slot, waited) = wait_for_slot(config, &sql, server.version_num, found).await?;
    let offsets = if waited { store.load().await? } else { offsets };
    let position = slot_position(config, slot.as_ref(), offsets.as_ref(), needs_stream);
    let offsets = match position {
        SlotPosition::WalGone { restart, processed } => {
            wal_gone(config, &store, restart, processed)?;
            None
        }
        _ => offsets,
    };
    let plan = decide(config, &store, slot.as_ref(), offsets.as_ref())?;
    tracing::info!(
        slot = %config.slot_name,
        slot_exists = slot.is_some(),
        slot_lsn = %slot.as_ref().and_then(|s| s.confirmed_flush).unwrap_or(Lsn(0)),
        offsets = offsets.is_some(),
        snapshot_mode = ?config.snapshot_mode,
        create_slot = plan.create_slot,
        snapshot = plan.snapshot,
        stream = plan.stream,
        "start-up decision"
    );
    warn_offsets_lost(config, &store, slot.as_ref(), offsets.as_ref(), &plan);
    if resumes_after_offsets(&plan) {
        check_offsets_not_ahead(&sql, config, &store, offsets.as_ref()).await?;
        if let SlotPosition::Advance { to } = position {
            advance_slot(config, &sql, to).await;
            slot = setup::find_slot(&sql, &config.slot_name, server.version_num).await?;
        }
    }
    if plan.drop_lost_slot {
        tracing::warn!(slot = %config.slot_name,
            "replication slot was invalidated (wal_status=lost); snapshot.mode=when_needed: dropping it, re-creating it and taking a new snapshot");
        setup::drop_slot(&sql, &config.slot_name, 10).await?;
        slot = None;
    }
    Ok(Prepared {
        sql,
        server,
        store,
        offsets,
        slot,
        plan,
    })
}

/// While another replication connection streams the slot (another pgcdc, or Debezium), checks
/// again every `slot.retry.delay.ms`, up to `slot.max.retries` times (negative: for ever, as a
/// standby does), then fails. Returns the slot as last found, and whether it waited (the
/// offsets the other instance kept writing must then be read again).
async fn wait_for_slot(
    config: &ConnectorConfig,
    sql: &Client,
    version_num: u32,
    mut slot: Option<SlotInfo>,
) -> Result<(Option<SlotInfo>, bool)> {
    let mut checks: i64 = 0;
    while let Some(s) = slot.as_ref() {
        check_slot_usable(config, s)?;
        if !s.active {
            break;
        }
        if config.slot_max_retries >= 0 && checks >= config.slot_max_retries {
            return Err(slot_still_in_use(config, s, checks));
        }
        checks += 1;
        tracing::info!(
            slot = %config.slot_name,
            walsender_pid = s.active_pid.unwrap_or(0),
            check = checks,
            retry_ms = config.slot_retry_delay.as_millis() as u64,
            "replication slot is in use by another replication connection; waiting for it (a standby takes over when the other stops)"
        );
        tokio::time::sleep(config.slot_retry_delay).await;
        slot = setup::find_slot(sql, &config.slot_name, version_num).await?;
    }
    if checks > 0 {
        tracing::info!(slot = %config.slot_name, "replication slot is free: taking over");
    }
    Ok((slot, checks > 0))
}

/// The error after `slot.max.retries` checks found the slot still in use.
fn slot_still_in_use(config: &ConnectorConfig, s: &SlotInfo, checks: i64) -> Error {
    Error::server(format!(
        "replication slot {} is still in use by another replication connection (walsender PID {}; pg_stat_replication shows its client) after {checks} checks {} ms apart (slot.max.retries, slot.retry.delay.ms): stop the other consumer, use another slot.name, or set slot.max.retries=-1 to run this instance as a standby that takes over when the other stops",
        config.slot_name,
        s.active_pid.unwrap_or(0),
        config.slot_retry_delay.as_millis()
    ))
}

/// A slot of another plugin or database cannot be used (one in use elsewhere may free up:
/// see [`wait_for_slot`]).
fn check_slot_usable(config: &ConnectorConfig, s: &SlotInfo) -> Result<()> {
    let db = &config.database.dbname;
    if s.plugin.as_deref() != Some("pgoutput") || s.database.as_deref() != Some(db.as_str()) {
        return Err(Error::server(format!(
            "replication slot {} exists for plugin {} in database {}, not pgoutput in {}: use another slot.name",
            config.slot_name,
            s.plugin.as_deref().unwrap_or("?"),
            s.database.as_deref().unwrap_or("?"),
            db
        )));
    }
    Ok(())
}

/// How the existing slot stands against the offsets of a run that streams after a completed
/// snapshot (see [`check_slot_position`]); `Fine` when either is missing or the slot is lost
/// (the plan deals with those).
fn slot_position(
    config: &ConnectorConfig,
    slot: Option<&SlotInfo>,
    offsets: Option<&Offsets>,
    needs_stream: bool,
) -> SlotPosition {
    let (Some(slot), Some(offsets)) = (slot, offsets) else {
        return SlotPosition::Fine;
    };
    let usable = slot.wal_status.as_deref() != Some("lost");
    if !needs_stream || !usable || OffsetsState::of(Some(offsets)) != OffsetsState::Streaming {
        return SlotPosition::Fine;
    }
    check_slot_position(
        config.offset_mismatch,
        slot.restart_lsn,
        slot.confirmed_flush,
        offsets,
        config.lsn_flush_manual,
    )
}

/// The slot no longer holds the WAL after the offsets: with `snapshot.mode=when_needed` the
/// offsets are set aside and a new snapshot is taken (as Debezium does); otherwise start-up
/// fails with what to do.
fn wal_gone(
    config: &ConnectorConfig,
    store: &OffsetStorage,
    restart: Lsn,
    processed: Lsn,
) -> Result<()> {
    let what = format!(
        "replication slot {} has moved past the stored offsets: its restart_lsn is {restart}, but the offsets in {} say changes were processed up to {processed}, so the WAL between is gone (was the slot re-created, or advanced by something else?)",
        config.slot_name,
        store.describe()
    );
    if config.snapshot_mode == crate::config::SnapshotMode::WhenNeeded {
        tracing::warn!(slot = %config.slot_name, restart_lsn = %restart, offsets_lsn = %processed,
            "{what}; snapshot.mode=when_needed: taking a new snapshot");
        return Ok(());
    }
    Err(Error::server(format!(
        "{what}. If pgcdc wrote these offsets, this is expected after idle periods (pgcdc confirms idle WAL past its offsets; nothing is lost): use offset.mismatch.strategy=no_validation or trust_greater_lsn. Otherwise set snapshot.mode=when_needed to take a new snapshot, or offset.mismatch.strategy=trust_slot if the slot's position is right (changes between the two positions are then not published)"
    )))
}

/// Advances the slot to the offsets (`trust_offset`, `trust_greater_lsn`). A refusal is
/// logged and start-up goes on: the stored offsets still skip what was published, as they
/// do when the slot lags.
async fn advance_slot(config: &ConnectorConfig, sql: &Client, to: Lsn) {
    if let Err(e) = setup::advance_slot(sql, &config.slot_name, to).await {
        tracing::warn!(slot = %config.slot_name, lsn = %to, error = %e.one_line(),
            "could not advance the replication slot to the stored offsets (offset.mismatch.strategy={}); streaming from the slot's own position, skipping what the offsets say was published",
            config.offset_mismatch.name());
    }
}

/// Runs [`plan_start`] and turns a refusal into the error that says what to do.
fn decide(
    config: &ConnectorConfig,
    store: &OffsetStorage,
    slot: Option<&SlotInfo>,
    offsets: Option<&Offsets>,
) -> Result<StartPlan> {
    let slot_state = match slot {
        None => SlotState::Absent,
        Some(s) if s.wal_status.as_deref() == Some("lost") => SlotState::Lost,
        Some(_) => SlotState::Present,
    };
    let plan = plan_start(config.snapshot_mode, slot_state, OffsetsState::of(offsets));
    plan.map_err(|refusal| match refusal {
        StartRefusal::SlotLost => Error::server(format!(
            "replication slot {} was invalidated by the server (wal_status=lost, usually max_slot_wal_keep_size): changes since its position are gone. Drop the slot and restart with snapshot.mode=when_needed (or always) to take a new snapshot",
            config.slot_name
        )),
        StartRefusal::PositionLost => Error::server(format!(
            "replication slot {} does not exist, but the offsets in {} say streaming had started: changes made since then may be lost. Use snapshot.mode=when_needed (or always) to take a new snapshot, or remove the offsets entry to start over",
            config.slot_name,
            store.describe()
        )),
    })
}

/// Whether streaming continues from an existing slot: then the stored offsets say what was
/// already published (see [`super::resume`]); a snapshot on it streams the slot first too
/// (see [`super::fence`]).
fn resumes_after_offsets(plan: &StartPlan) -> bool {
    plan.stream && !plan.create_slot
}

/// Stored offsets past the server's current WAL position come from another server or
/// cluster (or a restored backup): resuming after them would skip every new transaction.
async fn check_offsets_not_ahead(
    sql: &Client,
    config: &ConnectorConfig,
    store: &OffsetStorage,
    offsets: Option<&Offsets>,
) -> Result<()> {
    let Some(stored) = offsets
        .map(ResumeFilter::from_offsets)
        .and_then(|f| f.skip_before())
    else {
        return Ok(());
    };
    let current = setup::current_wal_lsn(sql).await?;
    if stored > current {
        return Err(Error::server(format!(
            "the offsets in {} say LSN {stored} was published, but the server's WAL is only at {current}: they belong to another server or cluster (or the server was restored from a backup). Point pgcdc at the right server, or remove this connector's offsets (name {}, topic.prefix {}; DELETE /connectors/<name>/offsets while it is stopped) and start again: without offsets, snapshot.mode decides (initial takes a new snapshot, no_data streams from the slot)",
            store.describe(),
            config.name,
            config.topic_prefix
        )));
    }
    Ok(())
}

/// The resume filter for a run: the stored offsets', when streaming continues from an
/// existing slot; otherwise one that skips nothing.
fn resume_filter(
    config: &ConnectorConfig,
    plan: &StartPlan,
    offsets: Option<&Offsets>,
    slot_lsn: Lsn,
) -> ResumeFilter {
    let filter = match offsets {
        Some(o) if resumes_after_offsets(plan) => ResumeFilter::from_offsets(o),
        _ => ResumeFilter::off(),
    };
    match filter.skip_before() {
        Some(stored) if stored > slot_lsn => tracing::info!(
            slot = %config.slot_name,
            slot_lsn = %slot_lsn,
            offsets_lsn = %stored,
            "the slot is behind the stored offsets (Debezium confirms the slot only after Kafka Connect flushes its offsets): transactions the server re-sends up to the stored position were published before and are skipped"
        ),
        Some(stored) if stored < slot_lsn => tracing::info!(
            slot = %config.slot_name,
            slot_lsn = %slot_lsn,
            offsets_lsn = %stored,
            "the slot is ahead of the stored offsets: streaming resumes from the slot (expected after pgcdc confirmed idle WAL; had the slot been re-created or advanced by something else, changes between the two positions would not be published: offset.mismatch.strategy=trust_offset checks for that)"
        ),
        _ => {}
    }
    filter
}

impl Prepared {
    /// Whether this run takes a snapshot before streaming.
    pub fn takes_snapshot(&self) -> bool {
        self.plan.snapshot
    }

    /// The position the slot resumes from: its confirmed flush LSN (zero without a slot).
    pub fn resume_lsn(&self) -> Lsn {
        self.slot
            .as_ref()
            .and_then(|s| s.confirmed_flush)
            .unwrap_or(Lsn::ZERO)
    }
}

/// Reaches Kafka: creates the producer (failing fast on bad settings) and checks that the
/// brokers answer, with the ack tracker starting at `resume_lsn`. Nothing is created on
/// either server yet, so this step can be cancelled.
pub async fn connect_kafka(
    config: &ConnectorConfig,
    resume_lsn: Lsn,
    stats: Arc<DeliveryStats>,
) -> Result<KafkaSink> {
    let tracker = Arc::new(AckTracker::with_stats(resume_lsn, stats));
    let sink = KafkaSink::new(&config.kafka, tracker, transaction_settings(config))?;
    sink.check_connection(KAFKA_CONNECT_TIMEOUT).await?;
    Ok(sink)
}

/// Exactly-once: the Kafka transactions' settings, with the offsets record's topic and key.
fn transaction_settings(config: &ConnectorConfig) -> Option<TransactionSettings> {
    let eos = config.exactly_once.as_ref()?;
    let topic = config.offsets_topic.as_ref()?;
    Some(TransactionSettings {
        config: eos.clone(),
        offsets_topic: topic.topic.clone(),
        offsets_key: offset_key(&config.name, &config.topic_prefix),
        timeout: transaction_timeout(&config.kafka),
    })
}

/// A slot that exists while the offsets do not is what losing the offsets looks like (a
/// container restarted without its volume, a deleted topic, another offset store): the plan
/// follows `snapshot.mode` as Debezium does, and this says so at WARN, with what will happen.
fn warn_offsets_lost(
    config: &ConnectorConfig,
    store: &OffsetStorage,
    slot: Option<&SlotInfo>,
    offsets: Option<&Offsets>,
    plan: &StartPlan,
) {
    if slot.is_none() || offsets.is_some() {
        return;
    }
    let what = if plan.snapshot {
        "a new snapshot will publish every row again"
    } else {
        "streaming resumes from the slot, without a snapshot"
    };
    tracing::warn!(
        slot = %config.slot_name,
        offsets = %store.describe(),
        "replication slot exists but no offsets are stored for this connector (lost, or kept somewhere else?): {what}, as snapshot.mode={} decides",
        snapshot_mode_name(config.snapshot_mode)
    );
}

/// `snapshot.mode`'s name.
fn snapshot_mode_name(mode: crate::config::SnapshotMode) -> &'static str {
    use crate::config::SnapshotMode::*;
    match mode {
        Initial => "initial",
        InitialOnly => "initial_only",
        NoData => "no_data",
        Always => "always",
        WhenNeeded => "when_needed",
    }
}

/// Builds the processor on `sink`, and opens the replication connection (creating the slot)
/// when the plan streams.
pub async fn start<S: Sink>(
    config: &Arc<ConnectorConfig>,
    prepared: Prepared,
    sink: S,
    counters: Arc<Counters>,
) -> Result<Started<S>> {
    let resume_lsn = prepared.resume_lsn();
    let Prepared {
        sql,
        server,
        store,
        offsets,
        slot: _,
        plan,
    } = prepared;
    let floor = offsets
        .as_ref()
        .filter(|o| o.snapshot_done())
        .and_then(|o| o.lsn_commit);
    let start = ProcessorStart {
        resume_lsn,
        last_commit_lsn: offsets.as_ref().and_then(|o| o.lsn_commit),
        resume: resume_filter(config, &plan, offsets.as_ref(), resume_lsn),
        incremental: offsets
            .as_ref()
            .filter(|o| o.snapshot_done() && plan.stream)
            .and_then(|o| o.incremental.clone()),
        initial: offsets
            .as_ref()
            .filter(|_| plan.snapshot && plan.stream && !plan.create_slot)
            .filter(|o| !o.snapshot_done())
            .and_then(|o| o.initial.clone()),
        server_version: server.version_num,
    };
    let offsets = OffsetSaver::new(store, resume_lsn, floor, sink.is_transactional());
    let mut sink = sink;
    sink.attach_offsets(offsets.stored(), floor);
    let failover = plan.create_slot && failover_slot(config, &sql, server.version_num).await?;
    let mut processor = Processor::new(config.clone(), sql, sink, counters, start)?;
    processor.counters.set_tracker(processor.tracker().clone());
    let mut replication = if plan.stream {
        Some(WireConnection::connect(&config.database, true).await?)
    } else {
        None
    };
    let mut start_lsn = resume_lsn;
    let mut exported = None;
    if let (Some(conn), true) = (replication.as_mut(), plan.create_slot) {
        let (lsn, snapshot_name) = create_slot(conn, config, failover).await?;
        start_lsn = lsn;
        exported = snapshot_name;
        processor.tracker().idle(lsn);
        processor.note_idle_position(lsn);
    }
    if plan.stream {
        if let Some(xmin) = SlotXmin::start(config).await? {
            processor.set_slot_xmin(xmin);
        }
    }
    let watchdog = watchdog::start(processor.tracker().clone());
    Ok(Started {
        watchdog,
        processor,
        server,
        offsets,
        replication,
        start_lsn,
        snapshot: plan.snapshot.then_some(SnapshotJob {
            exported,
            created_slot: plan.create_slot,
        }),
    })
}

/// Creates the slot on the replication connection, exporting its snapshot. Returns the
/// consistent point and the exported snapshot's name.
async fn create_slot(
    conn: &mut WireConnection,
    config: &ConnectorConfig,
    failover: bool,
) -> Result<(Lsn, Option<String>)> {
    let r = conn
        .simple_query(&setup::create_slot_command(&config.slot_name, failover))
        .await?;
    let lsn: Lsn = r
        .get(0, "consistent_point")
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::protocol("CREATE_REPLICATION_SLOT returned no consistent point"))?;
    let exported = r.get(0, "snapshot_name").map(str::to_string);
    tracing::info!(slot = %config.slot_name, lsn = %lsn, failover, "created replication slot");
    Ok((lsn, exported))
}

/// Whether the slot is created as a failover slot: `slot.failover=true` on a PostgreSQL 17+
/// primary. Elsewhere a normal slot is created, as Debezium does, with a warning that it will
/// not survive a failover.
async fn failover_slot(
    config: &ConnectorConfig,
    sql: &tokio_postgres::Client,
    version_num: u32,
) -> Result<bool> {
    if !config.slot_failover {
        return Ok(false);
    }
    let standby: bool = sql
        .query_one("SELECT pg_is_in_recovery()", &[])
        .await?
        .get(0);
    if version_num >= 170000 && !standby {
        return Ok(true);
    }
    let why = if standby {
        "a standby cannot create failover slots".to_string()
    } else {
        format!("PostgreSQL {version_num} has no failover slots (17 and later do)")
    };
    tracing::warn!(slot = %config.slot_name,
        "{SLOT_FAILOVER}=true, but {why}: creating a normal slot, which will not survive a failover to a standby");
    Ok(false)
}

/// `include.schema.changes=true` with no current schema capture in the database: a warning
/// with the fix (row events are not affected; no schema change record will come).
async fn warn_without_capture(config: &ConnectorConfig, sql: &Client) -> Result<()> {
    let status = crate::pg::schema_capture::status(sql).await?;
    if !status.is_current() {
        tracing::warn!(
            database = config.database.dbname,
            "{INCLUDE_SCHEMA_CHANGES}=true, but the schema capture is {}: no schema change record will be published until `pgcdc schema-capture install` runs",
            status.describe()
        );
    }
    Ok(())
}
