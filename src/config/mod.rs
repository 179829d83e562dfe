//! Connector configuration: loading, key policy, typed values and validation.
//!
//! Input is a Kafka Connect connector JSON (`{"name": ..., "config": {...}}`, or a flat JSON
//! map) or a `.properties` file with Debezium's property names. Values are then overridden,
//! in this order of precedence (highest first):
//! 1. `--set key=value` on the command line;
//! 2. environment variables `PGCDC_<KEY>` (the key upper-cased, `.` and `-` as `_`, e.g.
//!    `PGCDC_DATABASE_HOSTNAME`, `PGCDC_BOOTSTRAP_SERVERS`);
//! 3. the config file;
//! 4. the standard PostgreSQL variables `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
//!    `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY` for `database.*`;
//! 5. Debezium's defaults.
//!
//! [`ConnectorConfig::from_map`] checks everything before anything connects and reports every
//! problem at once, each naming the key, the value (never for secrets) and what is allowed.

pub mod keys;
pub mod records;
mod source;
pub mod values;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

use crate::error::{Error, Result};
use crate::util::{full_match_regex, split_regex_list};
use keys::KeyStatus;
use values::{BinaryMode, DecimalMode, HstoreMode, IntervalMode, TimePrecisionMode, ValueOptions};

pub use source::{
    attribute_env_values, env_name, load_file, parse_config_text, parse_properties, parse_set,
    ConfigSource,
};

/// The raw key/value configuration, after overrides.
pub type RawConfig = BTreeMap<String, String>;

/// Default `slot.name`.
pub const DEFAULT_SLOT_NAME: &str = "debezium";
/// Default `publication.name`.
pub const DEFAULT_PUBLICATION_NAME: &str = "dbz_publication";
/// Default `status.update.interval.ms`.
pub const DEFAULT_STATUS_UPDATE_INTERVAL_MS: u64 = 10_000;
/// Default `max.queue.size` (records between the replication reader and the converter).
pub const DEFAULT_MAX_QUEUE_SIZE: usize = 8192;
/// Default byte bound of that queue when `max.queue.size.in.bytes` is 0 (Debezium: unbounded).
pub const DEFAULT_MAX_QUEUE_BYTES: usize = 64 * 1024 * 1024;
/// Default `snapshot.fetch.size`.
pub const DEFAULT_SNAPSHOT_FETCH_SIZE: usize = 10_240;
/// Default `offset.storage.file.filename`.
pub const DEFAULT_OFFSET_FILE: &str = "data/offsets.json";
/// Default `offset.flush.interval.ms`.
pub const DEFAULT_OFFSET_FLUSH_INTERVAL_MS: u64 = 10_000;
/// Default `retriable.restart.connector.wait.ms`.
pub const DEFAULT_RESTART_WAIT_MS: u64 = 10_000;
/// Default `connection.validation.timeout.ms`.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 60_000;
/// The JsonConverter class name, the only converter implemented.
pub const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";
/// The only `connector.class` accepted.
pub const CONNECTOR_CLASS: &str = "io.debezium.connector.postgresql.PostgresConnector";
/// The EventRouter transform class.
pub const EVENT_ROUTER: &str = crate::transform::EVENT_ROUTER;

/// libpq `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// Plain first, TLS if the server insists.
    Allow,
    /// TLS if the server offers it, else plain (the default).
    Prefer,
    /// TLS, certificate not verified.
    Require,
    /// TLS, certificate chain verified against the root certificates.
    VerifyCa,
    /// TLS, chain and host name verified.
    VerifyFull,
}

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

/// `snapshot.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// Snapshot when no completed snapshot is recorded, then stream.
    Initial,
    /// Snapshot when no completed snapshot is recorded, then stop; no slot is created.
    InitialOnly,
    /// Never snapshot; stream only.
    NoData,
    /// Snapshot at every start, then stream.
    Always,
    /// Like initial, and also when the slot is missing or lost.
    WhenNeeded,
}

/// `snapshot.isolation.mode`, used when a snapshot cannot use the slot's exported snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotIsolationMode {
    /// `SERIALIZABLE, READ ONLY, DEFERRABLE`.
    Serializable,
    /// `REPEATABLE READ, READ ONLY`.
    RepeatableRead,
    /// `READ COMMITTED, READ ONLY`.
    ReadCommitted,
    /// `READ UNCOMMITTED, READ ONLY`.
    ReadUncommitted,
}

/// `event.converting.failure.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvertingFailureMode {
    /// Stop with an error naming the relation, column and type.
    Fail,
    /// Log a warning naming the relation, column and type, and emit null (Debezium's default),
    /// when set explicitly.
    Warn,
    /// The key is not set: as [`ConvertingFailureMode::Warn`], except that a `numeric` NaN or
    /// ±Infinity in `decimal.handling.mode=precise` (which a Decimal cannot hold) stops the
    /// connector naming the column and the fix, instead of becoming null.
    Default,
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
}

/// Parses `replica.identity.autoset.values`: `<table regex>:<identity>` entries separated by
/// commas, the identity one of `DEFAULT`, `FULL`, `NOTHING`, `INDEX <name>` (any case).
fn parse_replica_identity_autoset(c: &mut Checker<'_>) -> Vec<(Regex, ReplicaIdentity)> {
    const KEY: &str = "replica.identity.autoset.values";
    let Some(v) = c.get(KEY).map(str::to_string) else {
        return Vec::new();
    };
    if v.trim().is_empty() {
        c.problems.push(format!(
            "{KEY} is empty: give <table regex>:<identity> entries, e.g. public.orders:FULL, or remove the key"
        ));
        return Vec::new();
    }
    let mut out = Vec::new();
    for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((table, identity)) = entry.split_once(':') else {
            c.problems.push(format!(
                "{KEY}: {entry:?} is not <table regex>:<identity> (identity DEFAULT, FULL, NOTHING or INDEX <name>)"
            ));
            continue;
        };
        let identity = identity.trim();
        let upper = identity.to_ascii_uppercase();
        let parsed = match upper.as_str() {
            "DEFAULT" => Some(ReplicaIdentity::Default),
            "FULL" => Some(ReplicaIdentity::Full),
            "NOTHING" => Some(ReplicaIdentity::Nothing),
            _ => match upper.strip_prefix("INDEX ") {
                Some(_) if !identity[6..].trim().is_empty() => {
                    Some(ReplicaIdentity::Index(identity[6..].trim().to_string()))
                }
                _ => None,
            },
        };
        let Some(parsed) = parsed else {
            c.problems.push(format!(
                "{KEY}: {identity:?} (for {table}) is not a replica identity: use DEFAULT, FULL, NOTHING or INDEX <name>"
            ));
            continue;
        };
        if table.contains(' ') || table.is_empty() {
            c.problems.push(format!(
                "{KEY}: {table:?} is not a table regex (no spaces or colons)"
            ));
            continue;
        }
        match full_match_regex(table, true) {
            Ok(r) => out.push((r, parsed)),
            Err(e) => c.problems.push(format!(
                "{KEY}: {table:?} is not a valid regular expression: {e}"
            )),
        }
    }
    out
}

/// Change operations, for `skipped.operations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkippedOperations {
    /// `c`
    pub create: bool,
    /// `u`
    pub update: bool,
    /// `d`
    pub delete: bool,
    /// `t`
    pub truncate: bool,
}

/// Schema and table include/exclude filters: comma-separated, case-insensitive regular
/// expressions that must match the whole name (Java `Matcher.matches()`), `\,` for a comma.
#[derive(Debug, Clone, Default)]
pub struct TableFilters {
    /// `schema.include.list`
    pub schema_include: Vec<Regex>,
    /// `schema.exclude.list`
    pub schema_exclude: Vec<Regex>,
    /// `table.include.list` (matched against `schema.table`)
    pub table_include: Vec<Regex>,
    /// `table.exclude.list`
    pub table_exclude: Vec<Regex>,
    /// `table.ignore.builtin`
    pub ignore_builtin: bool,
}

impl TableFilters {
    /// `true` when changes of `schema`.`table` are captured.
    pub fn is_captured(&self, schema: &str, table: &str) -> bool {
        if self.ignore_builtin
            && (schema == "pg_catalog"
                || schema == "information_schema"
                || schema.starts_with("pg_temp")
                || table == "spatial_ref_sys")
        {
            return false;
        }
        if !self.schema_include.is_empty()
            && !self.schema_include.iter().any(|r| r.is_match(schema))
        {
            return false;
        }
        if self.schema_exclude.iter().any(|r| r.is_match(schema)) {
            return false;
        }
        let full = format!("{schema}.{table}");
        if !self.table_include.is_empty() && !self.table_include.iter().any(|r| r.is_match(&full)) {
            return false;
        }
        !self.table_exclude.iter().any(|r| r.is_match(&full))
    }
}

/// `message.prefix.include.list` / `message.prefix.exclude.list`: anchored, case-insensitive
/// regular expressions on the prefix of logical decoding messages.
#[derive(Debug, Clone, Default)]
pub struct MessageFilters {
    /// `message.prefix.include.list`
    pub include: Vec<Regex>,
    /// `message.prefix.exclude.list`
    pub exclude: Vec<Regex>,
}

impl MessageFilters {
    /// `true` when messages with `prefix` are emitted.
    pub fn is_captured(&self, prefix: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(prefix)))
            && !self.exclude.iter().any(|r| r.is_match(prefix))
    }
}

/// A configured single message transform (`transforms.<alias>.*`).
#[derive(Debug, Clone)]
pub struct TransformConfig {
    /// The alias from `transforms`.
    pub alias: String,
    /// The transform class and its validated options.
    pub spec: crate::transform::TransformSpec,
    /// `transforms.<alias>.predicate`: the predicate's alias and the predicate.
    pub predicate: Option<(String, crate::transform::predicate::Predicate)>,
    /// `transforms.<alias>.negate`: apply the transform where the predicate is false.
    pub negate: bool,
}

/// Kafka producer settings.
#[derive(Debug, Clone)]
pub struct KafkaConfig {
    /// `bootstrap.servers`.
    pub bootstrap_servers: String,
    /// librdkafka properties from `producer.*` and `producer.override.*` (the latter win),
    /// with Java client names translated where they differ.
    pub producer: Vec<(String, String)>,
    /// `topic.creation.enable`: create missing topics before producing to them.
    pub topic_creation_enable: bool,
    /// `topic.creation.default.partitions` (-1: the broker's default).
    pub topic_partitions: i32,
    /// `topic.creation.default.replication.factor` (-1: the broker's default).
    pub topic_replication_factor: i32,
}

/// PostgreSQL connection settings. `Debug` hides the password.
#[derive(Clone)]
pub struct DatabaseConfig {
    /// `database.hostname`
    pub hostname: String,
    /// `database.port`
    pub port: u16,
    /// `database.user`
    pub user: String,
    /// `database.password` (never logged).
    pub password: Option<String>,
    /// `database.dbname`
    pub dbname: String,
    /// `database.sslmode`
    pub sslmode: SslMode,
    /// `database.sslrootcert`
    pub sslrootcert: Option<PathBuf>,
    /// `database.sslcert`
    pub sslcert: Option<PathBuf>,
    /// `database.sslkey`
    pub sslkey: Option<PathBuf>,
    /// `database.tcpKeepAlive`
    pub tcp_keepalive: bool,
    /// `connection.validation.timeout.ms`, used as the connect timeout.
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("hostname", &self.hostname)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[hidden]"))
            .field("dbname", &self.dbname)
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .field("sslcert", &self.sslcert)
            .field("sslkey", &self.sslkey)
            .field("tcp_keepalive", &self.tcp_keepalive)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// The validated connector configuration.
#[derive(Debug, Clone)]
pub struct ConnectorConfig {
    /// Connector `name`.
    pub name: String,
    /// Connection settings.
    pub database: DatabaseConfig,
    /// `slot.name`
    pub slot_name: String,
    /// `slot.drop.on.stop`
    pub slot_drop_on_stop: bool,
    /// `publication.name`
    pub publication_name: String,
    /// `publication.autocreate.mode`
    pub publication_autocreate_mode: PublicationAutocreateMode,
    /// `replica.identity.autoset.values`: the identity to set at start on captured tables whose
    /// `schema.table` matches (whole name, case-insensitive), in config order.
    pub replica_identity_autoset: Vec<(Regex, ReplicaIdentity)>,
    /// Table filters.
    pub filters: TableFilters,
    /// Logical decoding message prefix filters.
    pub message_filters: MessageFilters,
    /// `topic.prefix`
    pub topic_prefix: String,
    /// `topic.delimiter`
    pub topic_delimiter: String,
    /// `tombstones.on.delete`
    pub tombstones_on_delete: bool,
    /// `skipped.operations`
    pub skipped_operations: SkippedOperations,
    /// `status.update.interval.ms`
    pub status_update_interval: Duration,
    /// `snapshot.mode`
    pub snapshot_mode: SnapshotMode,
    /// `snapshot.isolation.mode`
    pub snapshot_isolation_mode: SnapshotIsolationMode,
    /// `snapshot.fetch.size`
    pub snapshot_fetch_size: usize,
    /// Value representation modes and the TOAST placeholder.
    pub values: ValueOptions,
    /// `event.converting.failure.handling.mode`
    pub converting_failure: ConvertingFailureMode,
    /// `include.unknown.datatypes`: emit columns of unmapped types as their text through
    /// `binary.handling.mode` instead of stopping.
    pub include_unknown_datatypes: bool,
    /// `key.converter.schemas.enable`
    pub key_schemas_enable: bool,
    /// `value.converter.schemas.enable`
    pub value_schemas_enable: bool,
    /// `extended.headers.enabled`
    pub extended_headers: bool,
    /// Transforms in `transforms` order.
    pub transforms: Vec<TransformConfig>,
    /// Kafka producer settings.
    pub kafka: KafkaConfig,
    /// `offset.storage.file.filename`
    pub offset_file: PathBuf,
    /// `offset.flush.interval.ms`
    pub offset_flush_interval: Duration,
    /// `max.queue.size`
    pub max_queue_size: usize,
    /// `max.queue.size.in.bytes` (0 becomes [`DEFAULT_MAX_QUEUE_BYTES`]).
    pub max_queue_bytes: usize,
    /// `errors.max.retries` (-1: unlimited).
    pub errors_max_retries: i64,
    /// `retriable.restart.connector.wait.ms`
    pub restart_wait: Duration,
    /// Record-level features: transaction metadata, heartbeats.
    pub records: records::RecordConfig,
}

/// A warning found while loading (unknown key, deprecated value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning(pub String);

struct Checker<'a> {
    raw: &'a RawConfig,
    problems: Vec<String>,
}

impl<'a> Checker<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        self.raw.get(key).map(|s| s.trim())
    }
    fn string(&self, key: &str, default: &str) -> String {
        self.get(key)
            .filter(|s| !s.is_empty())
            .unwrap_or(default)
            .to_string()
    }
    fn required(&mut self, key: &str, hint: &str) -> String {
        match self.get(key).filter(|s| !s.is_empty()) {
            Some(v) => v.to_string(),
            None => {
                self.problems.push(format!("{key} is required: {hint}"));
                String::new()
            }
        }
    }
    fn boolean(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None | Some("") => default,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(v) => {
                self.problems.push(format!(
                    "{key}={v} is invalid: allowed values are true, false"
                ));
                default
            }
        }
    }
    fn int<T: std::str::FromStr + Copy + PartialOrd + std::fmt::Display>(
        &mut self,
        key: &str,
        default: T,
        min: T,
    ) -> T {
        match self.get(key) {
            None | Some("") => default,
            Some(v) => match v.parse::<T>() {
                Ok(n) if n >= min => n,
                _ => {
                    self.problems.push(format!(
                        "{key}={v} is invalid: expected an integer >= {min}"
                    ));
                    default
                }
            },
        }
    }
    fn choice<T: Copy>(&mut self, key: &str, default: T, allowed: &[(&str, T)]) -> T {
        match self.get(key) {
            None | Some("") => default,
            Some(v) => match allowed
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(v))
            {
                Some((_, t)) => *t,
                None => {
                    let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
                    self.problems.push(format!(
                        "{key}={v} is invalid: allowed values are {}",
                        names.join(", ")
                    ));
                    default
                }
            },
        }
    }
    fn regex_list(&mut self, key: &str) -> Vec<Regex> {
        let Some(v) = self.get(key).filter(|s| !s.is_empty()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for pattern in split_regex_list(v) {
            match full_match_regex(&pattern, true) {
                Ok(r) => out.push(r),
                Err(e) => self.problems.push(format!(
                    "{key}: {pattern:?} is not a valid regular expression: {e}"
                )),
            }
        }
        out
    }
}

/// Java client producer property names that librdkafka spells differently.
fn translate_producer_key(key: &str, value: &str) -> Option<(String, String)> {
    match key {
        "buffer.memory" => value.parse::<u64>().ok().map(|b| {
            (
                "queue.buffering.max.kbytes".into(),
                (b / 1024).max(1).to_string(),
            )
        }),
        "delivery.timeout.ms" => Some(("message.timeout.ms".into(), value.into())),
        "max.block.ms" => None,
        "key.serializer" | "value.serializer" => None,
        "max.request.size" => Some(("message.max.bytes".into(), value.into())),
        _ => Some((key.into(), value.into())),
    }
}

impl ConnectorConfig {
    /// Validates `raw` and builds the typed config. Returns the config and the warnings, or a
    /// [`crate::error::ErrorKind::Config`] error listing every problem, one per line.
    pub fn from_map(raw: &RawConfig) -> Result<(ConnectorConfig, Vec<ConfigWarning>)> {
        let mut warnings = Vec::new();
        let mut c = Checker {
            raw,
            problems: Vec::new(),
        };

        // Key policy first.
        for (key, value) in raw {
            let shown = if keys::is_secret(key) {
                "[hidden]".to_string()
            } else {
                value.clone()
            };
            if let Some((_, now)) = keys::RENAMED.iter().find(|(old, _)| old == key) {
                c.problems.push(format!(
                    "{key} was removed in Debezium 2.0 (which ignores it): use {now} instead"
                ));
                continue;
            }
            match keys::status(key) {
                Some(KeyStatus::Implemented) | Some(KeyStatus::Framework) => {}
                Some(KeyStatus::NotImplemented(default)) => {
                    let is_default = default
                        .map(|d| d.eq_ignore_ascii_case(value.trim()))
                        .unwrap_or(false);
                    if !is_default {
                        let hint = match default {
                            Some(d) if !d.is_empty() => {
                                format!("remove it or set it to Debezium's default {d:?}")
                            }
                            _ => "remove it".to_string(),
                        };
                        c.problems.push(format!(
                            "{key}={shown} is a Debezium/Kafka Connect setting that pgcdc does not implement yet: {hint} (output would otherwise differ from Debezium's)"
                        ));
                    }
                }
                None => {
                    let hint = keys::closest(key)
                        .map(|k| format!("; did you mean {k}?"))
                        .unwrap_or_default();
                    warnings.push(ConfigWarning(format!(
                        "unknown configuration key {key} is ignored{hint}"
                    )));
                }
            }
        }

        let class = c.string("connector.class", CONNECTOR_CLASS);
        if class != CONNECTOR_CLASS {
            c.problems.push(format!(
                "connector.class={class} is invalid: pgcdc only runs {CONNECTOR_CLASS}"
            ));
        }
        match c.get("plugin.name") {
            None | Some("") => {}
            Some(v) if v.eq_ignore_ascii_case("pgoutput") => {}
            Some(v) => c.problems.push(format!(
                "plugin.name={v} is invalid: pgcdc only supports pgoutput, PostgreSQL's built-in plugin (set plugin.name=pgoutput or remove it)"
            )),
        }
        let name = c.string("name", "pgcdc");

        let sslmode = c.choice(
            "database.sslmode",
            SslMode::Prefer,
            &[
                ("disable", SslMode::Disable),
                ("allow", SslMode::Allow),
                ("prefer", SslMode::Prefer),
                ("require", SslMode::Require),
                ("verify-ca", SslMode::VerifyCa),
                ("verify-full", SslMode::VerifyFull),
            ],
        );
        let database = DatabaseConfig {
            hostname: c.required(
                "database.hostname",
                "the PostgreSQL host (or set PGHOST, or --set database.hostname=...)",
            ),
            port: match c.get("database.port").map(str::trim) {
                None | Some("") => 5432,
                Some(v) => v
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p >= 1)
                    .unwrap_or_else(|| {
                        c.problems.push(format!(
                            "database.port={v} is invalid: expected a TCP port from 1 to 65535"
                        ));
                        5432
                    }),
            },
            user: c.required(
                "database.user",
                "a role with LOGIN and REPLICATION (or set PGUSER, or --set database.user=...)",
            ),
            password: c.get("database.password").map(str::to_string),
            dbname: c.required(
                "database.dbname",
                "the database to capture (or set PGDATABASE)",
            ),
            sslmode,
            sslrootcert: c
                .get("database.sslrootcert")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            sslcert: c
                .get("database.sslcert")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            sslkey: c
                .get("database.sslkey")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            tcp_keepalive: c.boolean("database.tcpKeepAlive", true),
            connect_timeout: Duration::from_millis(c.int(
                "connection.validation.timeout.ms",
                DEFAULT_CONNECT_TIMEOUT_MS,
                1,
            )),
        };
        if database.sslcert.is_some() != database.sslkey.is_some() {
            c.problems.push("database.sslcert and database.sslkey must be set together (client certificate and its key)".into());
        }

        let slot_name = c.string("slot.name", DEFAULT_SLOT_NAME);
        if !Regex::new("^[a-z0-9_]{1,63}$")
            .expect("static regex")
            .is_match(&slot_name)
        {
            c.problems.push(format!(
                "slot.name={slot_name} is invalid: a replication slot name has 1 to 63 characters among lower-case letters, digits and underscore"
            ));
        }
        let topic_prefix = c.required(
            "topic.prefix",
            "the logical server name that starts every topic name",
        );
        if !topic_prefix.is_empty()
            && !Regex::new(r"^[a-zA-Z0-9_.\-]+$")
                .expect("static regex")
                .is_match(&topic_prefix)
        {
            c.problems.push(format!(
                "topic.prefix={topic_prefix} is invalid: use only letters, digits, '.', '_' and '-'"
            ));
        }

        let filters = TableFilters {
            schema_include: c.regex_list("schema.include.list"),
            schema_exclude: c.regex_list("schema.exclude.list"),
            table_include: c.regex_list("table.include.list"),
            table_exclude: c.regex_list("table.exclude.list"),
            ignore_builtin: c.boolean("table.ignore.builtin", true),
        };
        let message_filters = MessageFilters {
            include: c.regex_list("message.prefix.include.list"),
            exclude: c.regex_list("message.prefix.exclude.list"),
        };
        for (inc, exc) in [
            ("schema.include.list", "schema.exclude.list"),
            ("table.include.list", "table.exclude.list"),
            ("message.prefix.include.list", "message.prefix.exclude.list"),
        ] {
            if c.get(inc).is_some_and(|v| !v.is_empty())
                && c.get(exc).is_some_and(|v| !v.is_empty())
            {
                c.problems.push(format!(
                    "{inc} and {exc} cannot both be set: use one of them"
                ));
            }
        }

        let mut snapshot_mode = c.choice(
            "snapshot.mode",
            SnapshotMode::Initial,
            &[
                ("initial", SnapshotMode::Initial),
                ("initial_only", SnapshotMode::InitialOnly),
                ("no_data", SnapshotMode::NoData),
                ("always", SnapshotMode::Always),
                ("when_needed", SnapshotMode::WhenNeeded),
                ("never", SnapshotMode::NoData),
            ],
        );
        match c.get("snapshot.mode") {
            Some(v) if v.eq_ignore_ascii_case("never") => {
                snapshot_mode = SnapshotMode::NoData;
                warnings.push(ConfigWarning(
                    "snapshot.mode=never was removed in Debezium 3.3; it is read as no_data (set snapshot.mode=no_data)".into(),
                ));
            }
            Some(v)
                if ["configuration_based", "custom"]
                    .iter()
                    .any(|m| m.eq_ignore_ascii_case(v)) =>
            {
                c.problems.retain(|p| !p.starts_with("snapshot.mode="));
                c.problems.push(format!(
                    "snapshot.mode={v} is a Debezium mode that pgcdc does not implement yet: use initial, initial_only, no_data, always or when_needed"
                ));
            }
            _ => {}
        }

        let time = c.choice(
            "time.precision.mode",
            TimePrecisionMode::Adaptive,
            &[
                ("adaptive", TimePrecisionMode::Adaptive),
                (
                    "adaptive_time_microseconds",
                    TimePrecisionMode::AdaptiveTimeMicroseconds,
                ),
                ("connect", TimePrecisionMode::Connect),
                ("microseconds", TimePrecisionMode::Microseconds),
                ("nanoseconds", TimePrecisionMode::Nanoseconds),
                ("isostring", TimePrecisionMode::IsoString),
            ],
        );
        let placeholder_text = c.string(
            "unavailable.value.placeholder",
            "__debezium_unavailable_value",
        );
        let placeholder = match placeholder_text.strip_prefix("hex:") {
            Some(hex) => match crate::util::decode_hex(hex) {
                Some(b) => b,
                None => {
                    c.problems.push(format!("unavailable.value.placeholder={placeholder_text} is invalid: after 'hex:' give an even number of hexadecimal digits"));
                    Vec::new()
                }
            },
            None => placeholder_text.into_bytes(),
        };
        let values = ValueOptions {
            decimal: c.choice(
                "decimal.handling.mode",
                DecimalMode::Precise,
                &[
                    ("precise", DecimalMode::Precise),
                    ("double", DecimalMode::Double),
                    ("string", DecimalMode::String),
                ],
            ),
            time,
            binary: c.choice(
                "binary.handling.mode",
                BinaryMode::Bytes,
                &[
                    ("bytes", BinaryMode::Bytes),
                    ("base64", BinaryMode::Base64),
                    ("base64-url-safe", BinaryMode::Base64UrlSafe),
                    ("hex", BinaryMode::Hex),
                ],
            ),
            placeholder,
            interval: c.choice(
                "interval.handling.mode",
                IntervalMode::Numeric,
                &[
                    ("numeric", IntervalMode::Numeric),
                    ("string", IntervalMode::String),
                ],
            ),
            money_fraction_digits: c.int("money.fraction.digits", 2u32, 0u32),
            hstore: c.choice(
                "hstore.handling.mode",
                HstoreMode::Json,
                &[("json", HstoreMode::Json), ("map", HstoreMode::Map)],
            ),
        };

        // With pgoutput every schema change arrives as a Relation message, so both refresh modes
        // give the same records; the value is still checked.
        c.choice(
            "schema.refresh.mode",
            (),
            &[
                ("columns_diff", ()),
                ("columns_diff_exclude_unchanged_toast", ()),
            ],
        );

        let mut skipped = SkippedOperations {
            truncate: true,
            ..Default::default()
        };
        if let Some(v) = c.get("skipped.operations") {
            // Validated as Debezium's CommonConnectorConfig does: lowercase codes, no empty
            // items, `none` alone.
            skipped = SkippedOperations::default();
            let ops: Vec<&str> = v.split(',').map(str::trim).collect();
            if ops.len() > 1 && ops.contains(&"none") {
                c.problems.push(format!(
                    "skipped.operations={v} is invalid: 'none' cannot be combined with other operations"
                ));
            }
            for op in ops {
                match op {
                    "c" => skipped.create = true,
                    "u" => skipped.update = true,
                    "d" => skipped.delete = true,
                    "t" => skipped.truncate = true,
                    "none" => {}
                    "r" => warnings.push(ConfigWarning(
                        "skipped.operations: r has no effect, as in Debezium: snapshot reads are never skipped".into(),
                    )),
                    other => c.problems.push(format!(
                        "skipped.operations contains {other:?}: allowed values are c, u, d, t, r (lowercase, comma-separated) or none"
                    )),
                }
            }
        }

        for (key, default) in [
            ("key.converter", JSON_CONVERTER),
            ("value.converter", JSON_CONVERTER),
        ] {
            let v = c.string(key, default);
            if v != JSON_CONVERTER {
                c.problems.push(format!("{key}={v} is not implemented yet: pgcdc writes {JSON_CONVERTER} output (remove it or set it to {JSON_CONVERTER})"));
            }
        }
        let header_converter = c.string(
            "header.converter",
            "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        );
        if header_converter != "org.apache.kafka.connect.storage.SimpleHeaderConverter" {
            c.problems.push(format!(
                "header.converter={header_converter} is not implemented yet: pgcdc writes headers as org.apache.kafka.connect.storage.SimpleHeaderConverter does"
            ));
        }

        let transforms = parse_transforms(&mut c, &mut warnings);

        // Kafka: producer.* then producer.override.* (the latter win).
        let mut producer = BTreeMap::new();
        // librdkafka name -> the key the user wrote, for error messages.
        let mut written_as: BTreeMap<String, String> = BTreeMap::new();
        for prefix in ["producer.", "producer.override."] {
            for (k, v) in raw.iter() {
                if let Some(name) = k.strip_prefix(prefix) {
                    if prefix == "producer." && name.starts_with("override.") {
                        continue;
                    }
                    if name == "buffer.memory" && v.trim().parse::<u64>().is_err() {
                        c.problems.push(format!(
                            "{k}={v} is invalid: the producer's buffer in bytes, a whole number >= 1024"
                        ));
                        continue;
                    }
                    if let Some((lk, lv)) = translate_producer_key(name, v.trim()) {
                        written_as.insert(lk.clone(), k.clone());
                        producer.insert(lk, lv);
                    }
                }
            }
        }
        let bootstrap_servers = producer
            .remove("bootstrap.servers")
            .or_else(|| c.get("bootstrap.servers").map(str::to_string))
            .unwrap_or_default();
        if bootstrap_servers.is_empty() {
            c.problems.push(
                "bootstrap.servers is required: the Kafka brokers as host:port[,host:port] (or PGCDC_BOOTSTRAP_SERVERS, or --set bootstrap.servers=...)".into(),
            );
        }
        let kafka = KafkaConfig {
            bootstrap_servers,
            producer: producer.into_iter().collect(),
            topic_creation_enable: c.boolean("topic.creation.enable", true),
            topic_partitions: c.int("topic.creation.default.partitions", -1i32, -1i32),
            topic_replication_factor: c.int(
                "topic.creation.default.replication.factor",
                -1i32,
                -1i32,
            ),
        };
        for (key, n) in [
            ("topic.creation.default.partitions", kafka.topic_partitions),
            (
                "topic.creation.default.replication.factor",
                kafka.topic_replication_factor,
            ),
        ] {
            if n == 0 {
                c.problems.push(format!(
                    "{key}=0 is invalid: use -1 (the broker's default) or a number >= 1"
                ));
            }
        }
        if kafka
            .bootstrap_servers
            .split(',')
            .any(|b| b.trim().is_empty())
            && !kafka.bootstrap_servers.is_empty()
        {
            c.problems.push(format!(
                "bootstrap.servers={:?} has an empty entry: list the brokers as host:port[,host:port]",
                kafka.bootstrap_servers
            ));
        }
        for (lk, why) in crate::sink::kafka::invalid_producer_settings(&kafka.producer) {
            let user_key = written_as.get(&lk).cloned().unwrap_or(lk);
            c.problems
                .push(format!("{user_key} is not a valid producer setting: {why}"));
        }
        for (k, v) in &kafka.producer {
            if k == "acks" && v != "all" && v != "-1" {
                c.problems.push(format!("producer acks={v} is invalid: pgcdc confirms a position to PostgreSQL only after acks=all"));
            }
            if k == "enable.idempotence" && v == "false" {
                c.problems.push("producer enable.idempotence=false is invalid: retries would reorder or duplicate records within a partition".into());
            }
            if (k == "max.in.flight.requests.per.connection" || k == "max.in.flight")
                && v.trim() != "1"
            {
                c.problems.push(format!(
                    "producer {k}={v} is invalid: pgcdc keeps one produce request in flight per broker, as Kafka Connect does, because with more a broker before Kafka 4.5 can drop the first records sent to a new partition while the client reports them delivered (KAFKA-15591); remove the setting"
                ));
            }
            if k == "partitioner" && v != "murmur2_random" {
                c.problems.push(format!(
                    "producer partitioner={v} is invalid: pgcdc uses murmur2_random so that keys land on the partitions the Java client picks"
                ));
            }
        }

        let max_queue_bytes = c.int("max.queue.size.in.bytes", 0usize, 0usize);
        let topic_delimiter = c.string("topic.delimiter", ".");
        let record_config = records::parse(&mut c, &topic_prefix, &topic_delimiter, &mut warnings);
        let config = ConnectorConfig {
            name,
            database,
            slot_name,
            slot_drop_on_stop: c.boolean("slot.drop.on.stop", false),
            publication_name: c.string("publication.name", DEFAULT_PUBLICATION_NAME),
            publication_autocreate_mode: c.choice(
                "publication.autocreate.mode",
                PublicationAutocreateMode::AllTables,
                &[
                    ("all_tables", PublicationAutocreateMode::AllTables),
                    ("disabled", PublicationAutocreateMode::Disabled),
                    ("filtered", PublicationAutocreateMode::Filtered),
                    ("no_tables", PublicationAutocreateMode::NoTables),
                ],
            ),
            replica_identity_autoset: parse_replica_identity_autoset(&mut c),
            filters,
            message_filters,
            topic_prefix,
            topic_delimiter,
            tombstones_on_delete: c.boolean("tombstones.on.delete", true),
            skipped_operations: skipped,
            status_update_interval: Duration::from_millis(c.int(
                "status.update.interval.ms",
                DEFAULT_STATUS_UPDATE_INTERVAL_MS,
                1,
            )),
            snapshot_mode,
            snapshot_isolation_mode: c.choice(
                "snapshot.isolation.mode",
                SnapshotIsolationMode::Serializable,
                &[
                    ("serializable", SnapshotIsolationMode::Serializable),
                    ("repeatable_read", SnapshotIsolationMode::RepeatableRead),
                    ("read_committed", SnapshotIsolationMode::ReadCommitted),
                    ("read_uncommitted", SnapshotIsolationMode::ReadUncommitted),
                ],
            ),
            snapshot_fetch_size: c.int("snapshot.fetch.size", DEFAULT_SNAPSHOT_FETCH_SIZE, 1),
            values,
            converting_failure: c.choice(
                "event.converting.failure.handling.mode",
                ConvertingFailureMode::Default,
                &[
                    ("fail", ConvertingFailureMode::Fail),
                    ("warn", ConvertingFailureMode::Warn),
                ],
            ),
            include_unknown_datatypes: c.boolean("include.unknown.datatypes", false),
            key_schemas_enable: c.boolean("key.converter.schemas.enable", true),
            value_schemas_enable: c.boolean("value.converter.schemas.enable", true),
            extended_headers: c.boolean("extended.headers.enabled", true),
            transforms,
            kafka,
            offset_file: PathBuf::from(
                c.string("offset.storage.file.filename", DEFAULT_OFFSET_FILE),
            ),
            offset_flush_interval: Duration::from_millis(c.int(
                "offset.flush.interval.ms",
                DEFAULT_OFFSET_FLUSH_INTERVAL_MS,
                1,
            )),
            max_queue_size: c.int("max.queue.size", DEFAULT_MAX_QUEUE_SIZE, 1),
            max_queue_bytes: if max_queue_bytes == 0 {
                DEFAULT_MAX_QUEUE_BYTES
            } else {
                max_queue_bytes
            },
            errors_max_retries: c.int("errors.max.retries", -1i64, -1i64),
            restart_wait: Duration::from_millis(c.int(
                "retriable.restart.connector.wait.ms",
                DEFAULT_RESTART_WAIT_MS,
                0,
            )),
            records: record_config,
        };
        if c.problems.is_empty() {
            Ok((config, warnings))
        } else {
            let n = c.problems.len();
            let mut msg = format!(
                "invalid configuration ({n} problem{}):",
                if n == 1 { "" } else { "s" }
            );
            for p in &c.problems {
                msg.push_str("\n  - ");
                msg.push_str(p);
            }
            // A misspelt key is often why a required one is "missing": show the warnings too.
            if !warnings.is_empty() {
                msg.push_str("\nwarnings:");
                for w in &warnings {
                    msg.push_str("\n  - ");
                    msg.push_str(&w.0);
                }
            }
            Err(Error::config(msg))
        }
    }
}

/// Splits a Connect alias list (`a, b`), reporting empty and duplicate aliases.
fn alias_list(c: &mut Checker<'_>, key: &str) -> Vec<String> {
    let Some(list) = c.get(key).filter(|s| !s.is_empty()) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for a in list.split(',').map(str::trim) {
        if a.is_empty() {
            c.problems.push(format!("{key}={list} has an empty alias"));
        } else if out.iter().any(|x| x == a) {
            c.problems
                .push(format!("{key}={list} lists alias {a:?} twice"));
        } else {
            out.push(a.to_string());
        }
    }
    out
}

/// The options under `<prefix>` (prefix removed), without `skip`.
fn options_under(raw: &RawConfig, prefix: &str, skip: &[&str]) -> BTreeMap<String, String> {
    raw.iter()
        .filter_map(|(k, v)| {
            let opt = k.strip_prefix(prefix)?;
            (!skip.contains(&opt)).then(|| (opt.to_string(), v.clone()))
        })
        .collect()
}

/// `predicates` and `transforms`, as Kafka Connect reads them: every alias needs a `type`;
/// a transform's `predicate` must name a listed predicate; `negate` needs a `predicate`.
fn parse_transforms(
    c: &mut Checker<'_>,
    warnings: &mut Vec<ConfigWarning>,
) -> Vec<TransformConfig> {
    use crate::transform::{predicate::Predicate, TransformSpec};
    let raw = c.raw;
    let predicate_aliases = alias_list(c, "predicates");
    let mut predicates = Vec::new();
    for alias in &predicate_aliases {
        let prefix = format!("predicates.{alias}.");
        let type_key = format!("{prefix}type");
        let Some(ty) = c.get(&type_key).filter(|s| !s.is_empty()) else {
            c.problems.push(format!(
                "{type_key} is required: the class of predicate {alias:?}"
            ));
            continue;
        };
        match Predicate::parse(ty, &prefix, &options_under(raw, &prefix, &["type"])) {
            Ok(p) => predicates.push((alias.clone(), p)),
            Err(problems) => c.problems.extend(problems),
        }
    }
    for k in raw.keys() {
        if let Some(rest) = k.strip_prefix("predicates.") {
            let alias = rest.split('.').next().unwrap_or("");
            if !predicate_aliases.iter().any(|a| {
                rest.strip_prefix(a.as_str())
                    .is_some_and(|r| r.starts_with('.'))
            }) {
                c.problems.push(format!(
                    "{k} belongs to predicate {alias:?}, which is not listed in predicates"
                ));
            }
        }
    }

    let aliases = alias_list(c, "transforms");
    if aliases.is_empty() {
        if let Some(k) = raw.keys().find(|k| k.starts_with("transforms.")) {
            c.problems.push(format!(
                "{k} is set but transforms is empty: list the transform aliases in transforms"
            ));
        }
        return Vec::new();
    }
    let mut out = Vec::new();
    for alias in &aliases {
        let prefix = format!("transforms.{alias}.");
        let type_key = format!("{prefix}type");
        let Some(ty) = c.get(&type_key).filter(|s| !s.is_empty()) else {
            c.problems.push(format!(
                "{type_key} is required: the class of transform {alias:?}"
            ));
            continue;
        };
        let negate = c.boolean(&format!("{prefix}negate"), false);
        let predicate = match c
            .get(&format!("{prefix}predicate"))
            .filter(|s| !s.is_empty())
        {
            None => {
                if c.get(&format!("{prefix}negate")).is_some() {
                    c.problems.push(format!(
                        "{prefix}negate is set but there is no {prefix}predicate defining a predicate to negate"
                    ));
                }
                None
            }
            Some(p) => match predicates.iter().find(|(a, _)| a == p) {
                Some(found) => Some(found.clone()),
                None => {
                    if !predicate_aliases.iter().any(|a| a == p) {
                        c.problems.push(format!(
                            "{prefix}predicate={p} names a predicate that is not listed in predicates"
                        ));
                    }
                    None
                }
            },
        };
        let opts = options_under(raw, &prefix, &["type", "predicate", "negate"]);
        match TransformSpec::parse(ty, &prefix, &opts) {
            Ok((spec, notes)) => {
                warnings.extend(notes.into_iter().map(ConfigWarning));
                out.push(TransformConfig {
                    alias: alias.clone(),
                    spec,
                    predicate,
                    negate,
                })
            }
            Err(problems) => c.problems.extend(problems),
        }
    }
    for k in raw.keys() {
        if let Some(rest) = k.strip_prefix("transforms.") {
            let alias = rest.split('.').next().unwrap_or("");
            // Kafka Connect matches `transforms.<alias>.` as a prefix, so an alias may hold dots.
            if !aliases.iter().any(|a| {
                rest.strip_prefix(a.as_str())
                    .is_some_and(|r| r.starts_with('.'))
            }) {
                c.problems.push(format!(
                    "{k} belongs to transform {alias:?}, which is not listed in transforms"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
