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
//! [`ConnectorConfig::parse`] checks every connector-level key before anything connects and
//! returns every problem at once, each naming the key, the value (never for secrets) and what
//! is allowed. Key names and their policy are in [`keys`]; each area of the configuration is
//! read by a module of its own, in this order (the order of the problems): the key policy,
//! the connection, the slot and publication, the connector and the shape of its output, the
//! capture filters, the snapshot, the value modes, the transforms (as Kafka Connect reads
//! them), Kafka, the record settings and the runtime.
//!
//! This is the bottom layer: it knows nothing of transform classes or of librdkafka. The
//! options of each transform class are checked by `crate::transform`, and
//! `crate::pipeline::validate_config` reports those problems and the producer settings
//! librdkafka refuses together with these, in one error.

mod checker;
mod connection;
mod connector;
pub mod converters;
mod exactly_once;
mod filters;
mod kafka;
mod kafka_security;
pub mod keys;
pub mod memory;
mod policy;
mod post_processors;
mod providers;
pub mod records;
mod runtime;
pub mod signals;
mod slot;
mod snapshot;
mod source;
mod transforms;
pub mod values;
mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

use crate::error::{Error, Result};
use checker::Checker;
use values::ValueOptions;

pub use connection::{DatabaseConfig, SslMode, DEFAULT_CONNECT_TIMEOUT_MS};
pub use connector::CONNECTOR_CLASS;
pub use converters::{
    AvroConverterConfig, ConverterConfig, RegistryApi, RegistryAuth, SubjectNameStrategy,
    APICURIO_AVRO_CONVERTER, CONFLUENT_AVRO_CONVERTER, JSON_CONVERTER,
};
pub use exactly_once::{ExactlyOnceConfig, TransactionBoundary, DEFAULT_TRANSACTION_TIMEOUT_MS};
pub use filters::{MessageFilters, SkippedOperations, TableFilters};
pub use kafka::KafkaConfig;
pub use post_processors::{ReselectConfig, RESELECT_COLUMNS};
pub use providers::{resolve_providers, DIRECTORY_PROVIDER, ENV_PROVIDER, FILE_PROVIDER};
pub use runtime::{
    Guardrail, OffsetsTopicConfig, DEFAULT_MAX_QUEUE_SIZE, DEFAULT_OFFSET_FILE,
    DEFAULT_OFFSET_FLUSH_INTERVAL_MS, DEFAULT_OFFSET_STORAGE_PARTITIONS, DEFAULT_RESTART_WAIT_MS,
};
pub use slot::{
    LsnFlushTimeoutAction, OffsetMismatchStrategy, PublicationAutocreateMode, ReplicaIdentity,
    StreamingLimits, DEFAULT_PUBLICATION_NAME, DEFAULT_SLOT_NAME,
    DEFAULT_STATUS_UPDATE_INTERVAL_MS, DEFAULT_STREAMING_MEMORY_BYTES,
    DEFAULT_STREAMING_SPILL_MAX_BYTES,
};
pub use snapshot::{
    SelectOverride, SnapshotIsolationMode, SnapshotMode, SnapshotTableOrder, SnapshotThreads,
    DEFAULT_SNAPSHOT_FETCH_SIZE, MAX_SNAPSHOT_THREADS,
};
pub use source::{
    attribute_env_values, env_name, load_file, parse_config_text, parse_properties, parse_set,
    utf8_environment, ConfigSource,
};
pub use transforms::{PredicateConfig, TransformConfig};
pub use values::ConvertingFailureMode;
pub use worker::{
    ConfigTopicConfig, RestAuth, WorkerConfig, DEFAULT_CONFIG_STORAGE_DIR, DEFAULT_LISTENER,
    DEFAULT_STATUS_LOG_INTERVAL,
};

/// The raw key/value configuration, after overrides.
pub type RawConfig = BTreeMap<String, String>;

/// The validated connector configuration.
#[derive(Debug, Clone)]
pub struct ConnectorConfig {
    /// Connector `name`.
    pub name: String,
    /// Connection settings.
    pub database: DatabaseConfig,
    /// `slot.name`
    pub slot_name: String,
    /// `pgcdc.pgoutput.binary` (pgcdc's own key): ask pgoutput for binary tuple data
    /// (PostgreSQL 14+), which costs the walsender less than text output.
    pub pgoutput_binary: bool,
    /// `pgcdc.pgoutput.streaming` (pgcdc's own key) and its bounds: ask pgoutput to stream
    /// large transactions while they run (protocol 2, PostgreSQL 14+); `None` when off.
    pub pgoutput_streaming: Option<StreamingLimits>,
    /// `slot.drop.on.stop`
    pub slot_drop_on_stop: bool,
    /// `slot.failover`: create the slot as a failover slot (PostgreSQL 17+ primaries), which
    /// standbys with `sync_replication_slots=on` keep in step, so it survives a promotion.
    pub slot_failover: bool,
    /// `slot.max.retries`: how many times start-up checks again for a slot another
    /// connection streams (negative: for ever, a standby).
    pub slot_max_retries: i64,
    /// `slot.stream.params`: extra pgoutput options for `START_REPLICATION`, in order.
    pub slot_stream_params: Vec<(String, String)>,
    /// `lsn.flush.mode=manual` (or `flush.lsn.source=false`): never confirm a position to the
    /// slot; something else advances it.
    pub lsn_flush_manual: bool,
    /// `lsn.flush.timeout.ms`: the longest a status update's write may take.
    pub lsn_flush_timeout: std::time::Duration,
    /// `lsn.flush.timeout.action`: what a longer write does.
    pub lsn_flush_timeout_action: LsnFlushTimeoutAction,
    /// `offset.mismatch.strategy`: how start-up reconciles the offsets and the slot.
    pub offset_mismatch: OffsetMismatchStrategy,
    /// `xmin.fetch.interval.ms`: how often the slot's `catalog_xmin` is read for
    /// `source.xmin` (zero: never).
    pub xmin_fetch_interval: std::time::Duration,
    /// `slot.retry.delay.ms`: the wait between those checks.
    pub slot_retry_delay: std::time::Duration,
    /// `publication.name`
    pub publication_name: String,
    /// `publication.autocreate.mode`
    pub publication_autocreate_mode: PublicationAutocreateMode,
    /// `publish.via.partition.root`: a publication pgcdc creates gets
    /// `publish_via_partition_root = true`, so the changes of partitions arrive under their
    /// root table.
    pub publish_via_partition_root: bool,
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
    /// `topic.naming.strategy`: how data change topics are named.
    pub topic_naming: crate::util::TopicNaming,
    /// `tombstones.on.delete`
    pub tombstones_on_delete: bool,
    /// `include.schema.changes`: publish a schema change record to the `topic.prefix` topic
    /// for each table DDL that pgcdc's schema capture wrote into the WAL (see
    /// `pg::schema_capture`). Debezium's PostgreSQL connector ignores the key.
    pub include_schema_changes: bool,
    /// `skipped.operations`
    pub skipped_operations: SkippedOperations,
    /// `skip.messages.without.change`: drop an update whose `before` and `after` are equal
    /// over the columns the records carry (as masked and truncated).
    pub skip_messages_without_change: bool,
    /// `status.update.interval.ms`
    pub status_update_interval: Duration,
    /// `snapshot.mode`
    pub snapshot_mode: SnapshotMode,
    /// `snapshot.isolation.mode`
    pub snapshot_isolation_mode: SnapshotIsolationMode,
    /// `snapshot.fetch.size`
    pub snapshot_fetch_size: usize,
    /// `snapshot.include.collection.list` (matched against `schema.table`): the captured
    /// tables a snapshot reads; empty: all of them.
    pub snapshot_include: Vec<Regex>,
    /// `snapshot.tables.order.by.row.count`
    pub snapshot_table_order: SnapshotTableOrder,
    /// `snapshot.select.statement.overrides`: per-table snapshot queries.
    pub snapshot_select_overrides: Vec<SelectOverride>,
    /// `snapshot.max.threads`, `snapshot.max.threads.multiplier`, `legacy.snapshot.max.threads`.
    pub snapshot_threads: SnapshotThreads,
    /// `post.processors`: the ReselectColumnsPostProcessors, in order.
    pub reselect: Vec<ReselectConfig>,
    /// Value representation modes and the TOAST placeholder.
    pub values: ValueOptions,
    /// `event.converting.failure.handling.mode`
    pub converting_failure: ConvertingFailureMode,
    /// `event.processing.failure.handling.mode` `warn`, `skip` or `ignore`: a change whose row
    /// cannot be converted is skipped with a warning instead of stopping the connector.
    pub processing_failure_skips: bool,
    /// `include.unknown.datatypes`: emit columns of unmapped types as their text through
    /// `binary.handling.mode` instead of stopping.
    pub include_unknown_datatypes: bool,
    /// `key.converter` and its settings.
    pub key_converter: ConverterConfig,
    /// `value.converter` and its settings.
    pub value_converter: ConverterConfig,
    /// `field.name.adjustment.mode` (`avro` when it is `none` and a converter is Avro, as
    /// Debezium does): how column names become field names.
    pub field_name_adjustment: crate::util::NameAdjustment,
    /// `schema.name.adjustment.mode`: how the Key, Value and Envelope schema names are made.
    pub schema_name_adjustment: crate::util::NameAdjustment,
    /// `extended.headers.enabled`
    pub extended_headers: bool,
    /// Transforms in `transforms` order, as Kafka Connect reads them: class names and option
    /// maps, whose meaning `crate::transform` parses and checks.
    pub transforms: Vec<TransformConfig>,
    /// Every predicate listed in `predicates` (used by a transform or not).
    pub predicates: Vec<PredicateConfig>,
    /// Kafka producer settings.
    pub kafka: KafkaConfig,
    /// For each librdkafka property of `kafka.producer`, the key the user wrote for it
    /// (`producer.<name>` or `producer.override.<name>`, Java name before translation), so
    /// that messages about a setting name it as written.
    pub producer_written_as: BTreeMap<String, String>,
    /// `offset.storage.file.filename` (used when there is no offsets topic)
    pub offset_file: PathBuf,
    /// The offsets topic (`offsets.storage.topic` / `offset.storage.topic`), which takes the
    /// place of the file when set.
    pub offsets_topic: Option<OffsetsTopicConfig>,
    /// `offset.flush.interval.ms`
    pub offset_flush_interval: Duration,
    /// `max.queue.size`
    pub max_queue_size: usize,
    /// `pgcdc.buffer.memory.bytes` and its shares: the reader's queue
    /// (`max.queue.size.in.bytes`), the producer queue, the snapshot's batches.
    pub memory: memory::MemoryBudget,
    /// `errors.max.retries` (-1: unlimited).
    pub errors_max_retries: i64,
    /// `custom.metric.tags`: extra labels on the connector's Debezium metrics, in order.
    pub custom_metric_tags: Vec<(String, String)>,
    /// `retriable.restart.connector.wait.ms`
    pub restart_wait: Duration,
    /// `snapshot.delay.ms`: the wait before a snapshot, when the run takes one.
    pub snapshot_delay: Duration,
    /// `streaming.delay.ms`: the wait before streaming starts (after the snapshot, if any).
    pub streaming_delay: Duration,
    /// `guardrail.collections.max` / `guardrail.collections.limit.action`: `None` when off.
    pub guardrail: Option<Guardrail>,
    /// Record-level features: transaction metadata, heartbeats.
    pub records: records::RecordConfig,
    /// Exactly-once delivery (`exactly.once.source.support=enabled`), or `None`:
    /// at-least-once.
    pub exactly_once: Option<ExactlyOnceConfig>,
    /// Signals and incremental snapshots (`signal.*`, `incremental.snapshot.*`).
    pub signals: signals::SignalConfig,
}

/// A warning found while loading (unknown key, deprecated value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning(pub String);

impl ConnectorConfig {
    /// Reads `raw` into the typed config, checking every connector-level key. Returns the
    /// config (a value that has a problem is left at its default), the problems (each naming
    /// its key) and the warnings. Transform options and what librdkafka accepts are not
    /// checked here: `crate::pipeline::validate_config` does the complete check.
    pub fn parse(raw: &RawConfig) -> (ConnectorConfig, Vec<String>, Vec<ConfigWarning>) {
        let mut c = Checker::new(raw);
        policy::check(&mut c);
        let database = connection::parse(&mut c);
        let slot = slot::parse(&mut c);
        let connector = connector::parse(&mut c);
        let mut filters = filters::parse(&mut c);
        let signals = signals::parse(&mut c, &connector.topic_prefix);
        filters.tables.signal_table = signals.table.clone();
        let snapshot = snapshot::parse(&mut c);
        let values = values::parse(&mut c);
        let (transforms, predicates) = transforms::parse(&mut c);
        let mut kafka = kafka::parse(&mut c);
        let records = records::parse(&mut c, &connector.topic_prefix, &connector.topic_delimiter);
        let runtime = runtime::parse(&mut c);
        let memory = memory::parse(&mut c);
        memory::bound_producer_queue(&mut kafka.config.producer, &memory);
        let reselect = post_processors::parse(&mut c);
        let exactly_once = exactly_once::parse(
            &mut c,
            &connector.name,
            runtime.offset_flush_interval,
            runtime.offsets_topic.is_some(),
            &kafka.config.producer,
        );
        let config = ConnectorConfig {
            name: connector.name,
            database,
            slot_name: slot.slot_name,
            pgoutput_binary: slot.pgoutput_binary,
            pgoutput_streaming: slot.pgoutput_streaming,
            slot_drop_on_stop: slot.slot_drop_on_stop,
            slot_failover: slot.slot_failover,
            slot_max_retries: slot.slot_max_retries,
            slot_stream_params: slot.stream_params,
            lsn_flush_manual: slot.lsn_flush_manual,
            lsn_flush_timeout: slot.lsn_flush_timeout,
            lsn_flush_timeout_action: slot.lsn_flush_timeout_action,
            offset_mismatch: slot.offset_mismatch,
            xmin_fetch_interval: slot.xmin_fetch_interval,
            slot_retry_delay: slot.slot_retry_delay,
            publication_name: slot.publication_name,
            publication_autocreate_mode: slot.publication_autocreate_mode,
            publish_via_partition_root: slot.publish_via_partition_root,
            replica_identity_autoset: slot.replica_identity_autoset,
            filters: filters.tables,
            message_filters: filters.messages,
            topic_prefix: connector.topic_prefix,
            topic_delimiter: connector.topic_delimiter,
            topic_naming: connector.topic_naming,
            tombstones_on_delete: connector.tombstones_on_delete,
            include_schema_changes: connector.include_schema_changes,
            skipped_operations: filters.skipped_operations,
            skip_messages_without_change: filters.skip_messages_without_change,
            status_update_interval: slot.status_update_interval,
            snapshot_mode: snapshot.mode,
            snapshot_isolation_mode: snapshot.isolation_mode,
            snapshot_fetch_size: snapshot.fetch_size,
            snapshot_include: snapshot.include,
            snapshot_table_order: snapshot.table_order,
            snapshot_select_overrides: snapshot.select_overrides,
            snapshot_threads: snapshot.threads,
            reselect,
            values: values.options,
            converting_failure: values.converting_failure,
            processing_failure_skips: values.processing_failure_skips,
            include_unknown_datatypes: values.include_unknown_datatypes,
            key_converter: connector.key_converter,
            value_converter: connector.value_converter,
            field_name_adjustment: connector.field_name_adjustment,
            schema_name_adjustment: connector.schema_name_adjustment,
            extended_headers: connector.extended_headers,
            transforms,
            predicates,
            kafka: kafka.config,
            producer_written_as: kafka.written_as,
            offset_file: runtime.offset_file,
            offsets_topic: runtime.offsets_topic,
            offset_flush_interval: runtime.offset_flush_interval,
            max_queue_size: runtime.max_queue_size,
            memory,
            errors_max_retries: runtime.errors_max_retries,
            custom_metric_tags: runtime.custom_metric_tags,
            restart_wait: runtime.restart_wait,
            snapshot_delay: runtime.snapshot_delay,
            streaming_delay: runtime.streaming_delay,
            guardrail: runtime.guardrail,
            records,
            exactly_once,
            signals,
        };
        (config, c.problems, c.warnings)
    }

    /// [`ConnectorConfig::parse`] as a result: the config and the warnings, or a
    /// [`crate::error::ErrorKind::Config`] error listing every connector-level problem, one per
    /// line (see [`invalid_config`]).
    ///
    /// This checks the connector keys only: a transform's own options and the producer
    /// settings librdkafka refuses are checked by `pipeline::validate_config`, which is what
    /// runs a connector; use that one to accept a config.
    pub fn from_map(raw: &RawConfig) -> Result<(ConnectorConfig, Vec<ConfigWarning>)> {
        let (config, problems, warnings) = ConnectorConfig::parse(raw);
        if problems.is_empty() {
            Ok((config, warnings))
        } else {
            Err(invalid_config(&problems, &warnings))
        }
    }

    /// The key the user wrote for the librdkafka producer property `property` (see
    /// [`ConnectorConfig::producer_written_as`]); the property itself when it has none.
    pub fn producer_key_written<'a>(&'a self, property: &'a str) -> &'a str {
        self.producer_written_as
            .get(property)
            .map_or(property, String::as_str)
    }
}

/// The [`crate::error::ErrorKind::Config`] error for `problems` (not empty): `invalid
/// configuration (N problems):`, each problem on a line of its own, then the warnings, since
/// a misspelt key is often why a required one is "missing".
pub fn invalid_config(problems: &[String], warnings: &[ConfigWarning]) -> Error {
    let n = problems.len();
    let mut msg = format!(
        "invalid configuration ({n} problem{}):",
        if n == 1 { "" } else { "s" }
    );
    for p in problems {
        msg.push_str("\n  - ");
        msg.push_str(p);
    }
    if !warnings.is_empty() {
        msg.push_str("\nwarnings:");
        for w in warnings {
            msg.push_str("\n  - ");
            msg.push_str(&w.0);
        }
    }
    Error::config(msg)
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests;
