//! The replication slot and the publication: `plugin.name`, `slot.*`, `publication.*`,
//! `replica.identity.autoset.values` and `status.update.interval.ms`.

use std::time::Duration;

use regex::Regex;

use super::checker::Checker;
use super::keys::{
    FLUSH_LSN_SOURCE, LSN_FLUSH_MODE, LSN_FLUSH_TIMEOUT_ACTION, LSN_FLUSH_TIMEOUT_MS,
    OFFSET_MISMATCH_STRATEGY, PGOUTPUT_BINARY, PGOUTPUT_STREAMING, PGOUTPUT_STREAMING_MEMORY_BYTES,
    PGOUTPUT_STREAMING_SPILL_DIR, PGOUTPUT_STREAMING_SPILL_MAX_BYTES, PLUGIN_NAME,
    PUBLICATION_AUTOCREATE_MODE, PUBLICATION_NAME, PUBLISH_VIA_PARTITION_ROOT,
    REPLICA_IDENTITY_AUTOSET_VALUES, SLOT_DROP_ON_STOP, SLOT_FAILOVER, SLOT_MAX_RETRIES, SLOT_NAME,
    SLOT_RETRY_DELAY_MS, SLOT_STREAM_PARAMS, STATUS_UPDATE_INTERVAL_MS, XMIN_FETCH_INTERVAL_MS,
};
use crate::util::full_match_regex;

/// Default `slot.name`.
pub const DEFAULT_SLOT_NAME: &str = "debezium";
/// Default `publication.name`.
pub const DEFAULT_PUBLICATION_NAME: &str = "dbz_publication";
/// Default `status.update.interval.ms`.
pub const DEFAULT_STATUS_UPDATE_INTERVAL_MS: u64 = 10_000;

/// `publication.autocreate.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublicationAutocreateMode {
    /// `CREATE PUBLICATION ... FOR ALL TABLES` when missing.
    AllTables,
    /// Never create; a missing publication is an error.
    Disabled,
    /// Create or update `FOR TABLE` with the tables matching the filters.
    Filtered,
    /// Create a publication with no tables.
    NoTables,
}

/// A replica identity to set (`replica.identity.autoset.values`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaIdentity {
    /// `DEFAULT`: the primary key.
    Default,
    /// `FULL`: the whole row.
    Full,
    /// `NOTHING`.
    Nothing,
    /// `INDEX <name>`: `USING INDEX <name>`.
    Index(String),
}

impl ReplicaIdentity {
    /// The `ALTER TABLE ... REPLICA IDENTITY` clause (the index name quoted).
    pub fn sql(&self) -> String {
        match self {
            ReplicaIdentity::Default => "DEFAULT".into(),
            ReplicaIdentity::Full => "FULL".into(),
            ReplicaIdentity::Nothing => "NOTHING".into(),
            ReplicaIdentity::Index(i) => format!("USING INDEX {}", crate::util::quote_ident(i)),
        }
    }

    /// Parses `DEFAULT`, `FULL`, `NOTHING` or `INDEX <name>` (any case).
    fn parse(identity: &str) -> Option<ReplicaIdentity> {
        let upper = identity.to_ascii_uppercase();
        match upper.as_str() {
            "DEFAULT" => Some(ReplicaIdentity::Default),
            "FULL" => Some(ReplicaIdentity::Full),
            "NOTHING" => Some(ReplicaIdentity::Nothing),
            _ => match upper.strip_prefix("INDEX ") {
                Some(_) if !identity[6..].trim().is_empty() => {
                    Some(ReplicaIdentity::Index(identity[6..].trim().to_string()))
                }
                _ => None,
            },
        }
    }
}

/// The settings of this area.
pub(super) struct Slot {
    pub(super) slot_name: String,
    pub(super) pgoutput_binary: bool,
    pub(super) pgoutput_streaming: Option<StreamingLimits>,
    pub(super) slot_drop_on_stop: bool,
    pub(super) slot_failover: bool,
    pub(super) slot_max_retries: i64,
    pub(super) slot_retry_delay: Duration,
    pub(super) publication_name: String,
    pub(super) publication_autocreate_mode: PublicationAutocreateMode,
    pub(super) publish_via_partition_root: bool,
    pub(super) replica_identity_autoset: Vec<(Regex, ReplicaIdentity)>,
    pub(super) status_update_interval: Duration,
    pub(super) stream_params: Vec<(String, String)>,
    pub(super) lsn_flush_manual: bool,
    pub(super) lsn_flush_timeout: Duration,
    pub(super) lsn_flush_timeout_action: LsnFlushTimeoutAction,
    pub(super) offset_mismatch: OffsetMismatchStrategy,
    pub(super) xmin_fetch_interval: Duration,
}

/// `pgcdc.pgoutput.streaming` and its bounds: how pgcdc holds the transactions PostgreSQL
/// streams while they run (pgoutput protocol 2) until they commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamingLimits {
    /// `pgcdc.pgoutput.streaming.memory.bytes`: the most bytes of streamed messages held in
    /// memory, over all open transactions (default 32 MiB); the rest goes to spill files.
    pub memory_bytes: usize,
    /// `pgcdc.pgoutput.streaming.spill.dir`: where the spill files go (default: the system's
    /// temporary directory). Files are unnamed: they vanish when pgcdc exits, even killed.
    pub spill_dir: std::path::PathBuf,
    /// `pgcdc.pgoutput.streaming.spill.max.bytes`: the most bytes in spill files at once
    /// (default 16 GiB); a transaction that needs more stops the connector with an error.
    pub spill_max_bytes: u64,
}

/// Default of `pgcdc.pgoutput.streaming.memory.bytes`.
pub const DEFAULT_STREAMING_MEMORY_BYTES: usize = 32 << 20;
/// Default of `pgcdc.pgoutput.streaming.spill.max.bytes`.
pub const DEFAULT_STREAMING_SPILL_MAX_BYTES: u64 = 16 << 30;

/// The streaming settings, `None` unless `pgcdc.pgoutput.streaming=true`.
fn streaming(c: &mut Checker<'_>) -> Option<StreamingLimits> {
    let on = c.boolean(PGOUTPUT_STREAMING, false);
    let memory_bytes = c.int(
        PGOUTPUT_STREAMING_MEMORY_BYTES,
        DEFAULT_STREAMING_MEMORY_BYTES,
        0,
    );
    let spill_max_bytes = c.int(
        PGOUTPUT_STREAMING_SPILL_MAX_BYTES,
        DEFAULT_STREAMING_SPILL_MAX_BYTES,
        0,
    );
    let spill_dir = match c.get(PGOUTPUT_STREAMING_SPILL_DIR) {
        Some(d) if !d.trim().is_empty() => std::path::PathBuf::from(d.trim()),
        _ => std::env::temp_dir(),
    };
    if !on {
        return None;
    }
    if !spill_dir.is_dir() {
        c.problem(format!(
            "{PGOUTPUT_STREAMING_SPILL_DIR}={} is not a directory: create it, or point the key at one where pgcdc may write (a streamed transaction larger than {PGOUTPUT_STREAMING_MEMORY_BYTES} is held there until it commits)",
            spill_dir.display()
        ));
    }
    Some(StreamingLimits {
        memory_bytes,
        spill_dir,
        spill_max_bytes,
    })
}

/// `offset.mismatch.strategy`: what start-up does when the stored offsets and the slot's
/// position disagree (Debezium 3.x's `OffsetSlotMismatchStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetMismatchStrategy {
    /// `no_validation` (the default): stream from the slot, skipping what the offsets say was
    /// published. (Debezium also checks the slot's `restart_lsn` here; pgcdc does not, since
    /// it confirms idle WAL past its stored offsets by design.)
    NoValidation,
    /// `trust_offset`: fail (or, with `snapshot.mode=when_needed`, take a new snapshot) when
    /// the slot's `restart_lsn` has passed the offsets (the WAL between is gone: a re-created
    /// slot), and advance a slot that is behind the offsets to them before streaming
    /// (`pg_replication_slot_advance`).
    TrustOffset,
    /// `trust_slot`: the slot is authoritative: no check; a slot ahead of the offsets is
    /// followed.
    TrustSlot,
    /// `trust_greater_lsn`: no check, and a slot behind the offsets is advanced to them:
    /// streaming starts at the greater of the two.
    TrustGreaterLsn,
}

impl OffsetMismatchStrategy {
    /// Whether start-up checks that the slot still holds the WAL after the offsets.
    pub fn validates(self) -> bool {
        self == Self::TrustOffset
    }

    /// Whether start-up advances a slot that is behind the offsets.
    pub fn advances_slot(self) -> bool {
        matches!(self, Self::TrustOffset | Self::TrustGreaterLsn)
    }

    /// The key's value.
    pub fn name(self) -> &'static str {
        match self {
            Self::NoValidation => "no_validation",
            Self::TrustOffset => "trust_offset",
            Self::TrustSlot => "trust_slot",
            Self::TrustGreaterLsn => "trust_greater_lsn",
        }
    }
}

/// `lsn.flush.timeout.action`: what happens when a status update (the write that confirms a
/// position to PostgreSQL) takes longer than `lsn.flush.timeout.ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LsnFlushTimeoutAction {
    /// `fail` (the default): end the stream with an error (the connector restarts as
    /// `errors.max.retries` allows).
    Fail,
    /// `warn`: log a warning and keep waiting for the write.
    Warn,
    /// `ignore`: keep waiting for the write, logging at DEBUG.
    Ignore,
}

/// Reads the slot and publication settings.
pub(super) fn parse(c: &mut Checker<'_>) -> Slot {
    match c.get(PLUGIN_NAME) {
        None | Some("") => {}
        Some(v) if v.eq_ignore_ascii_case("pgoutput") => {}
        Some(v) => c.problem(format!(
            "{PLUGIN_NAME}={v} is invalid: pgcdc only supports pgoutput, PostgreSQL's built-in plugin (set {PLUGIN_NAME}=pgoutput or remove it)"
        )),
    }
    let slot_name = c.string(SLOT_NAME, DEFAULT_SLOT_NAME);
    if !Regex::new("^[a-z0-9_]{1,63}$")
        .expect("static regex")
        .is_match(&slot_name)
    {
        c.problem(format!(
            "{SLOT_NAME}={slot_name} is invalid: a replication slot name has 1 to 63 characters among lower-case letters, digits and underscore"
        ));
    }
    Slot {
        slot_name,
        pgoutput_binary: c.boolean(PGOUTPUT_BINARY, false),
        pgoutput_streaming: streaming(c),
        slot_drop_on_stop: c.boolean(SLOT_DROP_ON_STOP, false),
        slot_failover: c.boolean(SLOT_FAILOVER, false),
        slot_max_retries: c.int(SLOT_MAX_RETRIES, 6i64, -1i64),
        slot_retry_delay: Duration::from_millis(c.int(SLOT_RETRY_DELAY_MS, 10_000u64, 1)),
        publication_name: c.string(PUBLICATION_NAME, DEFAULT_PUBLICATION_NAME),
        publish_via_partition_root: c.boolean(PUBLISH_VIA_PARTITION_ROOT, false),
        publication_autocreate_mode: c.choice(
            PUBLICATION_AUTOCREATE_MODE,
            PublicationAutocreateMode::AllTables,
            &[
                ("all_tables", PublicationAutocreateMode::AllTables),
                ("disabled", PublicationAutocreateMode::Disabled),
                ("filtered", PublicationAutocreateMode::Filtered),
                ("no_tables", PublicationAutocreateMode::NoTables),
            ],
        ),
        replica_identity_autoset: replica_identity_autoset(c),
        status_update_interval: Duration::from_millis(c.int(
            STATUS_UPDATE_INTERVAL_MS,
            DEFAULT_STATUS_UPDATE_INTERVAL_MS,
            1,
        )),
        stream_params: stream_params(c),
        lsn_flush_manual: lsn_flush_manual(c),
        lsn_flush_timeout: Duration::from_millis(c.int(LSN_FLUSH_TIMEOUT_MS, 30_000u64, 1)),
        lsn_flush_timeout_action: c.choice(
            LSN_FLUSH_TIMEOUT_ACTION,
            LsnFlushTimeoutAction::Fail,
            &[
                ("fail", LsnFlushTimeoutAction::Fail),
                ("warn", LsnFlushTimeoutAction::Warn),
                ("ignore", LsnFlushTimeoutAction::Ignore),
            ],
        ),
        offset_mismatch: c.choice(
            OFFSET_MISMATCH_STRATEGY,
            OffsetMismatchStrategy::NoValidation,
            &[
                ("no_validation", OffsetMismatchStrategy::NoValidation),
                ("trust_offset", OffsetMismatchStrategy::TrustOffset),
                ("trust_slot", OffsetMismatchStrategy::TrustSlot),
                ("trust_greater_lsn", OffsetMismatchStrategy::TrustGreaterLsn),
            ],
        ),
        xmin_fetch_interval: Duration::from_millis(c.int(XMIN_FETCH_INTERVAL_MS, 0u64, 0)),
    }
}

/// `lsn.flush.mode` (or the deprecated `flush.lsn.source`): `true` for `manual`, where
/// something else confirms the slot's position and pgcdc never does. `connector_and_driver`
/// is `connector`: pgcdc already confirms a keepalive's WAL end when nothing is in flight, as
/// the driver does there.
fn lsn_flush_manual(c: &mut Checker<'_>) -> bool {
    let mode = c.choice(
        LSN_FLUSH_MODE,
        None,
        &[
            ("connector", Some(false)),
            ("manual", Some(true)),
            ("connector_and_driver", Some(false)),
        ],
    );
    let legacy = c
        .get(FLUSH_LSN_SOURCE)
        .filter(|v| !v.is_empty())
        .map(|_| !c.boolean(FLUSH_LSN_SOURCE, true));
    match (mode, legacy) {
        (Some(m), Some(l)) if m != l => {
            c.problem(format!(
                "{LSN_FLUSH_MODE} and the deprecated {FLUSH_LSN_SOURCE} disagree: keep {LSN_FLUSH_MODE} only"
            ));
            m
        }
        (Some(m), _) => m,
        (None, Some(l)) => {
            c.warn(format!(
                "{FLUSH_LSN_SOURCE} is deprecated (Debezium 3.x): use {LSN_FLUSH_MODE}={}",
                if l { "manual" } else { "connector" }
            ));
            l
        }
        (None, None) => false,
    }
}

/// pgoutput options pgcdc sets itself, or that need a protocol it does not speak.
const OWN_PGOUTPUT_OPTIONS: &[&str] = &[
    "proto_version",
    "publication_names",
    "messages",
    "binary",
    "streaming",
    "two_phase",
];

/// `slot.stream.params`: `name=value` pairs separated by `;`, passed to pgoutput in
/// `START_REPLICATION` (such as `origin=none`, PostgreSQL 16+). Options pgcdc sets itself or
/// cannot decode are refused; the server refuses names it does not know when streaming starts.
fn stream_params(c: &mut Checker<'_>) -> Vec<(String, String)> {
    let Some(text) = c.get(SLOT_STREAM_PARAMS).map(str::to_string) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = part.split_once('=') else {
            c.problem(format!(
                "{SLOT_STREAM_PARAMS}: {part:?} is not name=value (expected name=value;name=value, such as origin=none)"
            ));
            continue;
        };
        let name = name.trim().to_ascii_lowercase();
        if OWN_PGOUTPUT_OPTIONS.contains(&name.as_str()) {
            c.problem(format!(
                "{SLOT_STREAM_PARAMS}: pgcdc sets the pgoutput option {name} itself (or cannot decode what it turns on); remove it"
            ));
            continue;
        }
        out.push((name, value.trim().to_string()));
    }
    out
}

/// Parses `replica.identity.autoset.values`: `<table regex>:<identity>` entries separated by
/// commas, the identity one of `DEFAULT`, `FULL`, `NOTHING`, `INDEX <name>` (any case).
fn replica_identity_autoset(c: &mut Checker<'_>) -> Vec<(Regex, ReplicaIdentity)> {
    const KEY: &str = REPLICA_IDENTITY_AUTOSET_VALUES;
    let Some(v) = c.get(KEY) else {
        return Vec::new();
    };
    if v.is_empty() {
        c.problem(format!(
            "{KEY} is empty: give <table regex>:<identity> entries, e.g. public.orders:FULL, or remove the key"
        ));
        return Vec::new();
    }
    let mut out = Vec::new();
    for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((table, identity)) = entry.split_once(':') else {
            c.problem(format!(
                "{KEY}: {entry:?} is not <table regex>:<identity> (identity DEFAULT, FULL, NOTHING or INDEX <name>)"
            ));
            continue;
        };
        let identity = identity.trim();
        let Some(parsed) = ReplicaIdentity::parse(identity) else {
            c.problem(format!(
                "{KEY}: {identity:?} (for {table}) is not a replica identity: use DEFAULT, FULL, NOTHING or INDEX <name>"
            ));
            continue;
        };
        if table.contains(' ') || table.is_empty() {
            c.problem(format!(
                "{KEY}: {table:?} is not a table regex (no spaces or colons)"
            ));
            continue;
        }
        match full_match_regex(table, true) {
            Ok(r) => out.push((r, parsed)),
            Err(e) => c.problem(format!(
                "{KEY}: {table:?} is not a valid regular expression: {e}"
            )),
        }
    }
    out
}
