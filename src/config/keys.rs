//! The catalog of configuration keys and how each is treated.
//!
//! Policy (see `docs/configuration.md`):
//! - a key pgcdc implements is used ([`KeyStatus::Implemented`]);
//! - a key that only means something inside Kafka Connect is accepted and has no effect
//!   ([`KeyStatus::Framework`]);
//! - a key Debezium knows but pgcdc does not implement yet is a startup error, unless its value
//!   is Debezium's default ([`KeyStatus::NotImplemented`]): silently different output is worse
//!   than no output;
//! - a key that names Java plugin classes is a startup error saying that such code cannot run
//!   in pgcdc and what to use instead ([`KeyStatus::JavaCode`]);
//! - any other key gives a warning naming the closest known key.
//!
//! Every key name is written once, here: each row of [`KEYS`] and [`PREFIXES`] declares a
//! constant (`DATABASE_HOSTNAME` for `database.hostname`, `TRANSFORMS_PREFIX` for the
//! `transforms.` family) together with its status, and every parser uses the constants. A unit
//! test below fails when a string literal elsewhere in `src/` is exactly a registered name.

/// How a key is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStatus {
    /// Used by pgcdc.
    Implemented,
    /// Meaningful only inside Kafka Connect or Debezium's JVM; accepted, no effect.
    Framework,
    /// Known to Debezium, not implemented; allowed only with Debezium's default value (if any).
    NotImplemented(Option<&'static str>),
    /// Names Java classes (a user's plugin code), which cannot run in pgcdc; allowed only with
    /// Debezium's default value (if any). The text says what to do instead.
    JavaCode(Option<&'static str>, &'static str),
}

use KeyStatus::*;

/// Declares one constant per row (documented with `$what` and the name) and the table of
/// (name, status) rows, in the order written.
macro_rules! registry {
    (
        $(#[$table_doc:meta])*
        $table:ident, $what:literal {
            $( $name:ident = $key:literal => $status:expr, )*
        }
    ) => {
        $(
            #[doc = concat!($what, " `", $key, "`.")]
            pub const $name: &str = $key;
        )*
        $(#[$table_doc])*
        pub const $table: &[(&str, KeyStatus)] = &[ $( ($name, $status), )* ];
    };
}

registry! {
    /// Exact keys. Defaults are Debezium 3.6.1's (`None` = no default: any value is an error).
    KEYS, "Key" {
        // Kafka Connect framework
        NAME = "name" => Implemented,
        CONNECTOR_CLASS = "connector.class" => Implemented,
        TASKS_MAX = "tasks.max" => Framework,
        KEY_CONVERTER = "key.converter" => Implemented,
        VALUE_CONVERTER = "value.converter" => Implemented,
        HEADER_CONVERTER = "header.converter" => Implemented,
        KEY_CONVERTER_SCHEMAS_ENABLE = "key.converter.schemas.enable" => Implemented,
        VALUE_CONVERTER_SCHEMAS_ENABLE = "value.converter.schemas.enable" => Implemented,
        TRANSFORMS = "transforms" => Implemented,
        CONFIG_PROVIDERS = "config.providers" => Implemented,
        PREDICATES = "predicates" => Implemented,
        CONFIG_ACTION_RELOAD = "config.action.reload" => Framework,
        ERRORS_TOLERANCE = "errors.tolerance" => NotImplemented(Some("none")),
        ERRORS_LOG_ENABLE = "errors.log.enable" => Framework,
        ERRORS_LOG_INCLUDE_MESSAGES = "errors.log.include.messages" => Framework,
        ERRORS_RETRY_TIMEOUT = "errors.retry.timeout" => NotImplemented(Some("0")),
        ERRORS_RETRY_DELAY_MAX_MS = "errors.retry.delay.max.ms" => Framework,
        EXACTLY_ONCE_SUPPORT = "exactly.once.support" => Implemented,
        TRANSACTION_BOUNDARY = "transaction.boundary" => Implemented,
        TRANSACTION_BOUNDARY_INTERVAL_MS = "transaction.boundary.interval.ms" => Implemented,
        OFFSETS_STORAGE_TOPIC = "offsets.storage.topic" => Implemented,
        TOPIC_CREATION_ENABLE = "topic.creation.enable" => Implemented,
        TOPIC_CREATION_GROUPS = "topic.creation.groups" => NotImplemented(Some("")),
        TOPIC_CREATION_DEFAULT_PARTITIONS = "topic.creation.default.partitions" => Implemented,
        TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR = "topic.creation.default.replication.factor"
            => Implemented,
        // pgcdc's own (documented in docs/configuration.md)
        BOOTSTRAP_SERVERS = "bootstrap.servers" => Implemented,
        OFFSET_STORAGE_FILE_FILENAME = "offset.storage.file.filename" => Implemented,
        OFFSET_STORAGE_TOPIC = "offset.storage.topic" => Implemented,
        OFFSET_STORAGE_PARTITIONS = "offset.storage.partitions" => Implemented,
        OFFSET_STORAGE_REPLICATION_FACTOR = "offset.storage.replication.factor" => Implemented,
        OFFSET_FLUSH_INTERVAL_MS = "offset.flush.interval.ms" => Implemented,
        EXACTLY_ONCE_SOURCE_SUPPORT = "exactly.once.source.support" => Implemented,
        GROUP_ID = "group.id" => Implemented,
        // database connection
        DATABASE_HOSTNAME = "database.hostname" => Implemented,
        DATABASE_PORT = "database.port" => Implemented,
        DATABASE_USER = "database.user" => Implemented,
        DATABASE_PASSWORD = "database.password" => Implemented,
        DATABASE_DBNAME = "database.dbname" => Implemented,
        DATABASE_SSLMODE = "database.sslmode" => Implemented,
        DATABASE_SSLROOTCERT = "database.sslrootcert" => Implemented,
        DATABASE_SSLCERT = "database.sslcert" => Implemented,
        DATABASE_SSLKEY = "database.sslkey" => Implemented,
        DATABASE_SSLPASSWORD = "database.sslpassword" => Implemented,
        DATABASE_SSLFACTORY =
            "database.sslfactory" => JavaCode(
                None,
                "use database.sslmode with database.sslrootcert, database.sslcert and database.sslkey"
            ),
        DATABASE_TCP_KEEP_ALIVE = "database.tcpKeepAlive" => Implemented,
        DATABASE_INITIAL_STATEMENTS = "database.initial.statements" => Implemented,
        DATABASE_QUERY_TIMEOUT_MS = "database.query.timeout.ms" => Implemented,
        DATABASE_CONNECTION_FACTORY_CLASS = "database.connection.factory.class"
            => JavaCode(None,
                "remove it: pgcdc opens its PostgreSQL connections itself (database.* keys, database.sslmode)"),
        CONNECTION_VALIDATION_TIMEOUT_MS = "connection.validation.timeout.ms" => Implemented,
        DATABASE_CONNECT_TIMEOUT_MS = "pgcdc.database.connect.timeout.ms" => Implemented,
        // slot and publication
        PLUGIN_NAME = "plugin.name" => Implemented,
        PGOUTPUT_BINARY = "pgcdc.pgoutput.binary" => Implemented,
        PGOUTPUT_STREAMING = "pgcdc.pgoutput.streaming" => Implemented,
        PGOUTPUT_STREAMING_MEMORY_BYTES = "pgcdc.pgoutput.streaming.memory.bytes" => Implemented,
        PGOUTPUT_STREAMING_SPILL_DIR = "pgcdc.pgoutput.streaming.spill.dir" => Implemented,
        PGOUTPUT_STREAMING_SPILL_MAX_BYTES = "pgcdc.pgoutput.streaming.spill.max.bytes" => Implemented,
        ACCEPT_UNKNOWN_KEYS = "pgcdc.accept.unknown.keys" => Implemented,
        SLOT_NAME = "slot.name" => Implemented,
        SLOT_DROP_ON_STOP = "slot.drop.on.stop" => Implemented,
        SLOT_FAILOVER = "slot.failover" => Implemented,
        SLOT_STREAM_PARAMS = "slot.stream.params" => Implemented,
        SLOT_MAX_RETRIES = "slot.max.retries" => Implemented,
        SLOT_RETRY_DELAY_MS = "slot.retry.delay.ms" => Implemented,
        PUBLICATION_NAME = "publication.name" => Implemented,
        PUBLICATION_AUTOCREATE_MODE = "publication.autocreate.mode" => Implemented,
        PUBLISH_VIA_PARTITION_ROOT = "publish.via.partition.root" => Implemented,
        REPLICA_IDENTITY_AUTOSET_VALUES = "replica.identity.autoset.values" => Implemented,
        STATUS_UPDATE_INTERVAL_MS = "status.update.interval.ms" => Implemented,
        LSN_FLUSH_MODE = "lsn.flush.mode" => Implemented,
        FLUSH_LSN_SOURCE = "flush.lsn.source" => Implemented,
        LSN_FLUSH_TIMEOUT_MS = "lsn.flush.timeout.ms" => Implemented,
        LSN_FLUSH_TIMEOUT_ACTION = "lsn.flush.timeout.action" => Implemented,
        OFFSET_MISMATCH_STRATEGY = "offset.mismatch.strategy" => Implemented,
        XMIN_FETCH_INTERVAL_MS = "xmin.fetch.interval.ms" => Implemented,
        READ_ONLY = "read.only" => Implemented,
        INTERNAL_CREATE_SLOT_COMMAND_TIMEOUT = "internal.create.slot.command.timeout" => Framework,
        // filters
        SCHEMA_INCLUDE_LIST = "schema.include.list" => Implemented,
        SCHEMA_EXCLUDE_LIST = "schema.exclude.list" => Implemented,
        TABLE_INCLUDE_LIST = "table.include.list" => Implemented,
        TABLE_EXCLUDE_LIST = "table.exclude.list" => Implemented,
        COLUMN_INCLUDE_LIST = "column.include.list" => Implemented,
        COLUMN_EXCLUDE_LIST = "column.exclude.list" => Implemented,
        TABLE_IGNORE_BUILTIN = "table.ignore.builtin" => Implemented,
        MESSAGE_PREFIX_INCLUDE_LIST = "message.prefix.include.list" => Implemented,
        MESSAGE_PREFIX_EXCLUDE_LIST = "message.prefix.exclude.list" => Implemented,
        SKIP_MESSAGES_WITHOUT_CHANGE = "skip.messages.without.change" => Implemented,
        MESSAGE_KEY_COLUMNS = "message.key.columns" => Implemented,
        // topics
        TOPIC_PREFIX = "topic.prefix" => Implemented,
        TOPIC_NAMING_STRATEGY = "topic.naming.strategy" => Implemented,
        TOPIC_DELIMITER = "topic.delimiter" => Implemented,
        TOPIC_REGEX = "topic.regex" => Implemented,
        TOPIC_REPLACEMENT = "topic.replacement" => Implemented,
        TOPIC_KEY_ENFORCE_UNIQUENESS = "topic.key.enforce.uniqueness" => Implemented,
        TOPIC_KEY_FIELD_NAME = "topic.key.field.name" => Implemented,
        TOPIC_KEY_FIELD_REGEX = "topic.key.field.regex" => Implemented,
        TOPIC_KEY_FIELD_REPLACEMENT = "topic.key.field.replacement" => Implemented,
        TOPIC_CACHE_SIZE = "topic.cache.size" => Framework,
        TOPIC_HEARTBEAT_PREFIX = "topic.heartbeat.prefix" => Implemented,
        TOPIC_HEARTBEAT_NAME = "topic.heartbeat.name" => Implemented,
        TOPIC_TRANSACTION = "topic.transaction" => Implemented,
        HEARTBEAT_TOPICS_PREFIX = "heartbeat.topics.prefix" => Implemented,
        // snapshot
        SNAPSHOT_MODE = "snapshot.mode" => Implemented,
        SNAPSHOT_MODE_CONFIGURATION_BASED_SNAPSHOT_DATA = "snapshot.mode.configuration.based.snapshot.data"
            => NotImplemented(Some("false")),
        SNAPSHOT_MODE_CONFIGURATION_BASED_SNAPSHOT_SCHEMA = "snapshot.mode.configuration.based.snapshot.schema"
            => NotImplemented(Some("false")),
        SNAPSHOT_MODE_CONFIGURATION_BASED_START_STREAM = "snapshot.mode.configuration.based.start.stream"
            => NotImplemented(Some("false")),
        SNAPSHOT_MODE_CONFIGURATION_BASED_SNAPSHOT_ON_SCHEMA_ERROR =
            "snapshot.mode.configuration.based.snapshot.on.schema.error"
            => NotImplemented(Some("false")),
        SNAPSHOT_MODE_CONFIGURATION_BASED_SNAPSHOT_ON_DATA_ERROR =
            "snapshot.mode.configuration.based.snapshot.on.data.error"
            => NotImplemented(Some("false")),
        SNAPSHOT_MODE_CUSTOM_NAME =
            "snapshot.mode.custom.name" => JavaCode(
                None,
                "use a built-in snapshot.mode (initial, always, no_data, initial_only, when_needed, never)"
            ),
        SNAPSHOT_ISOLATION_MODE = "snapshot.isolation.mode" => Implemented,
        SNAPSHOT_LOCKING_MODE = "snapshot.locking.mode" => NotImplemented(Some("none")),
        SNAPSHOT_LOCKING_MODE_CUSTOM_NAME = "snapshot.locking.mode.custom.name"
            => JavaCode(None, "remove it: pgcdc's snapshot reads an exported snapshot without table locks"),
        SNAPSHOT_LOCK_TIMEOUT_MS = "snapshot.lock.timeout.ms" => NotImplemented(Some("10000")),
        SNAPSHOT_QUERY_MODE = "snapshot.query.mode" => NotImplemented(Some("select_all")),
        SNAPSHOT_QUERY_MODE_CUSTOM_NAME =
            "snapshot.query.mode.custom.name" => JavaCode(
                None,
                "remove it and use snapshot.select.statement.overrides for per-table queries"
            ),
        SNAPSHOT_INCLUDE_COLLECTION_LIST = "snapshot.include.collection.list" => Implemented,
        SNAPSHOT_SELECT_STATEMENT_OVERRIDES = "snapshot.select.statement.overrides" => Implemented,
        SNAPSHOT_FETCH_SIZE = "snapshot.fetch.size" => Implemented,
        SNAPSHOT_MAX_THREADS = "snapshot.max.threads" => Implemented,
        SNAPSHOT_MAX_THREADS_MULTIPLIER = "snapshot.max.threads.multiplier" => Implemented,
        LEGACY_SNAPSHOT_MAX_THREADS = "legacy.snapshot.max.threads" => Implemented,
        SNAPSHOT_TABLES_ORDER_BY_ROW_COUNT = "snapshot.tables.order.by.row.count" => Implemented,
        SNAPSHOT_DELAY_MS = "snapshot.delay.ms" => Implemented,
        STREAMING_DELAY_MS = "streaming.delay.ms" => Implemented,
        INCREMENTAL_SNAPSHOT_CHUNK_SIZE = "incremental.snapshot.chunk.size" => Implemented,
        INCREMENTAL_SNAPSHOT_WATERMARKING_STRATEGY = "incremental.snapshot.watermarking.strategy"
            => Implemented,
        INCREMENTAL_SNAPSHOT_ALLOW_SCHEMA_CHANGES = "incremental.snapshot.allow.schema.changes"
            => NotImplemented(Some("false")),
        // value representation
        DECIMAL_HANDLING_MODE = "decimal.handling.mode" => Implemented,
        TIME_PRECISION_MODE = "time.precision.mode" => Implemented,
        BINARY_HANDLING_MODE = "binary.handling.mode" => Implemented,
        INTERVAL_HANDLING_MODE = "interval.handling.mode" => Implemented,
        HSTORE_HANDLING_MODE = "hstore.handling.mode" => Implemented,
        MONEY_FRACTION_DIGITS = "money.fraction.digits" => Implemented,
        INCLUDE_UNKNOWN_DATATYPES = "include.unknown.datatypes" => Implemented,
        UNAVAILABLE_VALUE_PLACEHOLDER = "unavailable.value.placeholder" => Implemented,
        SCHEMA_NAME_ADJUSTMENT_MODE = "schema.name.adjustment.mode" => Implemented,
        FIELD_NAME_ADJUSTMENT_MODE = "field.name.adjustment.mode" => Implemented,
        TOMBSTONES_ON_DELETE = "tombstones.on.delete" => Implemented,
        INCLUDE_SCHEMA_CHANGES = "include.schema.changes" => Implemented,
        SKIPPED_OPERATIONS = "skipped.operations" => Implemented,
        COLUMN_PROPAGATE_SOURCE_TYPE = "column.propagate.source.type" => Implemented,
        DATATYPE_PROPAGATE_SOURCE_TYPE = "datatype.propagate.source.type" => Implemented,
        CONVERTERS =
            "converters" => JavaCode(
                None,
                "use pgcdc's built-in mappings (decimal.handling.mode, time.precision.mode, binary.handling.mode, hstore.handling.mode, interval.handling.mode, column.propagate.source.type) or a transform"
            ),
        POST_PROCESSORS = "post.processors" => Implemented,
        SCHEMA_REFRESH_MODE = "schema.refresh.mode" => Implemented,
        SOURCEINFO_STRUCT_MAKER = "sourceinfo.struct.maker"
            => JavaCode(Some(
                "io.debezium.connector.postgresql.PostgresSourceInfoStructMaker"), "remove it: pgcdc writes Debezium's PostgreSQL source block; reshape it with a transform (ReplaceField, InsertField)"),
        EXTENDED_HEADERS_ENABLED = "extended.headers.enabled" => Implemented,
        PROVIDE_TRANSACTION_METADATA = "provide.transaction.metadata" => Implemented,
        TRANSACTION_METADATA_FACTORY = "transaction.metadata.factory"
            => JavaCode(Some(
                "io.debezium.pipeline.txmetadata.DefaultTransactionMetadataFactory"), "remove it: pgcdc writes Debezium's default transaction metadata (provide.transaction.metadata)"),
        // runtime
        MAX_BATCH_SIZE = "max.batch.size" => Implemented,
        MAX_QUEUE_SIZE = "max.queue.size" => Implemented,
        MAX_QUEUE_SIZE_IN_BYTES = "max.queue.size.in.bytes" => Implemented,
        BUFFER_MEMORY_BYTES = "pgcdc.buffer.memory.bytes" => Implemented,
        POLL_INTERVAL_MS = "poll.interval.ms" => Framework,
        QUEUE_PROVIDER_TYPE =
            "queue.provider.type" => JavaCode(
                Some("memory"),
                "remove it: pgcdc's queue is in memory and bounded by max.queue.size and max.queue.size.in.bytes"
            ),
        QUERY_FETCH_SIZE = "query.fetch.size" => Framework,
        HEARTBEAT_INTERVAL_MS = "heartbeat.interval.ms" => Implemented,
        HEARTBEAT_ACTION_QUERY = "heartbeat.action.query" => Implemented,
        RETRIABLE_RESTART_CONNECTOR_WAIT_MS = "retriable.restart.connector.wait.ms" => Implemented,
        ERRORS_MAX_RETRIES = "errors.max.retries" => Implemented,
        EVENT_PROCESSING_FAILURE_HANDLING_MODE = "event.processing.failure.handling.mode"
            => Implemented,
        EVENT_CONVERTING_FAILURE_HANDLING_MODE = "event.converting.failure.handling.mode"
            => Implemented,
        EXECUTOR_SHUTDOWN_TIMEOUT_MS = "executor.shutdown.timeout.ms" => Framework,
        CUSTOM_METRIC_TAGS = "custom.metric.tags" => Implemented,
        STATISTICS_METRICS_ENABLED = "statistics.metrics.enabled" => Framework,
        GUARDRAIL_COLLECTIONS_MAX = "guardrail.collections.max" => Implemented,
        GUARDRAIL_COLLECTIONS_LIMIT_ACTION = "guardrail.collections.limit.action" => Implemented,
        CUSTOM_SANITIZE_PATTERN = "custom.sanitize.pattern" => Framework,
        SIGNAL_DATA_COLLECTION = "signal.data.collection" => Implemented,
        SIGNAL_ENABLED_CHANNELS = "signal.enabled.channels" => Implemented,
        SIGNAL_POLL_INTERVAL_MS = "signal.poll.interval.ms" => Implemented,
        SIGNAL_KAFKA_TOPIC = "signal.kafka.topic" => Implemented,
        SIGNAL_KAFKA_BOOTSTRAP_SERVERS = "signal.kafka.bootstrap.servers" => Implemented,
        SIGNAL_KAFKA_GROUP_ID = "signal.kafka.groupId" => Implemented,
        SIGNAL_KAFKA_POLL_TIMEOUT_MS = "signal.kafka.poll.timeout.ms" => Implemented,
        SIGNAL_FILE = "signal.file" => Implemented,
        NOTIFICATION_ENABLED_CHANNELS = "notification.enabled.channels" => Implemented,
        NOTIFICATION_SINK_TOPIC_NAME = "notification.sink.topic.name" => Implemented,
        // legacy names (Debezium 1.x) that users still carry: see RENAMED
        DATABASE_SERVER_NAME = "database.server.name" => NotImplemented(None),
        TABLE_WHITELIST = "table.whitelist" => NotImplemented(None),
        TABLE_BLACKLIST = "table.blacklist" => NotImplemented(None),
        SCHEMA_WHITELIST = "schema.whitelist" => NotImplemented(None),
        SCHEMA_BLACKLIST = "schema.blacklist" => NotImplemented(None),
        COLUMN_WHITELIST = "column.whitelist" => NotImplemented(None),
        COLUMN_BLACKLIST = "column.blacklist" => NotImplemented(None),
    }
}

/// Debezium 1.x names that Debezium 2.0 removed (it ignores them since, so a config that still
/// has them captures more than its author meant), with the key that replaced each.
pub const RENAMED: &[(&str, &str)] = &[
    (DATABASE_SERVER_NAME, TOPIC_PREFIX),
    (TABLE_WHITELIST, TABLE_INCLUDE_LIST),
    (TABLE_BLACKLIST, TABLE_EXCLUDE_LIST),
    (SCHEMA_WHITELIST, SCHEMA_INCLUDE_LIST),
    (SCHEMA_BLACKLIST, SCHEMA_EXCLUDE_LIST),
    (COLUMN_WHITELIST, COLUMN_INCLUDE_LIST),
    (COLUMN_BLACKLIST, COLUMN_EXCLUDE_LIST),
];

registry! {
    /// Key families matched by prefix, after exact keys.
    PREFIXES, "Keys starting with" {
        TRANSFORMS_PREFIX = "transforms." => Implemented,
        CONFIG_PROVIDERS_PREFIX = "config.providers." => Implemented,
        PRODUCER_OVERRIDE_PREFIX = "producer.override." => Implemented,
        PRODUCER_PREFIX = "producer." => Implemented,
        KEY_CONVERTER_PREFIX = "key.converter." => Implemented,
        VALUE_CONVERTER_PREFIX = "value.converter." => Implemented,
        HEADER_CONVERTER_PREFIX = "header.converter." => NotImplemented(None),
        CONSUMER_OVERRIDE_PREFIX = "consumer.override." => Framework,
        ADMIN_OVERRIDE_PREFIX = "admin.override." => Framework,
        PREDICATES_PREFIX = "predicates." => Implemented,
        POST_PROCESSORS_PREFIX = "post.processors." => Implemented,
        TOPIC_CREATION_PREFIX = "topic.creation." => NotImplemented(None),
        COLUMN_MASK_PREFIX = "column.mask." => Implemented,
        COLUMN_TRUNCATE_PREFIX = "column.truncate." => Implemented,
        SNAPSHOT_SELECT_STATEMENT_OVERRIDES_PREFIX = "snapshot.select.statement.overrides."
            => Implemented,
        DRIVER_PREFIX = "driver." => NotImplemented(None),
        SIGNAL_CONSUMER_PREFIX = "signal.consumer." => Implemented,
    }
}

registry! {
    /// Keys of a worker properties file (`pgcdc serve --worker FILE`, `pgcdc run --worker
    /// FILE`): the process's REST API and where `serve` keeps connector configs. Connect's
    /// names where Connect has the setting; `pgcdc.` for pgcdc's own.
    WORKER_KEYS, "Worker key" {
        LISTENERS = "listeners" => Implemented,
        LISTENERS_HTTPS_KEYSTORE_LOCATION = "listeners.https.ssl.keystore.location" => Implemented,
        LISTENERS_HTTPS_KEYSTORE_TYPE = "listeners.https.ssl.keystore.type" => Implemented,
        LISTENERS_HTTPS_KEY_PASSWORD = "listeners.https.ssl.key.password" => Implemented,
        REST_ADVERTISED_HOST_NAME = "rest.advertised.host.name" => Implemented,
        REST_ADVERTISED_PORT = "rest.advertised.port" => Implemented,
        REST_AUTH_TOKEN = "pgcdc.rest.auth.token" => Implemented,
        REST_AUTH_USERNAME = "pgcdc.rest.auth.username" => Implemented,
        REST_AUTH_PASSWORD = "pgcdc.rest.auth.password" => Implemented,
        REST_UNAUTHENTICATED_WRITES = "pgcdc.rest.unauthenticated.writes" => Implemented,
        CONFIG_STORAGE_DIR = "pgcdc.config.storage.dir" => Implemented,
        STATUS_LOG_INTERVAL_MS = "pgcdc.status.log.interval.ms" => Implemented,
        HEALTH_UNACKNOWLEDGED_MAX_MS = "pgcdc.health.unacknowledged.max.ms" => Implemented,
        PLUGIN_PATH = "plugin.path" => Framework,
        PLUGIN_DISCOVERY = "plugin.discovery" => Framework,
        CONFIG_STORAGE_TOPIC = "config.storage.topic" => Implemented,
        CONFIG_STORAGE_REPLICATION_FACTOR = "config.storage.replication.factor" => Implemented,
        STATUS_STORAGE_TOPIC = "status.storage.topic" => Framework,
    }
}

/// The status of `key`, or `None` when it is unknown.
pub fn status(key: &str) -> Option<KeyStatus> {
    if let Some((_, s)) = KEYS.iter().find(|(k, _)| *k == key) {
        return Some(*s);
    }
    PREFIXES
        .iter()
        .find(|(p, _)| key.starts_with(p))
        .map(|(_, s)| *s)
}

/// `true` for keys whose values must never be printed.
pub fn is_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.ends_with("password")
        || k.ends_with("secret")
        || k.contains("sasl.jaas.config")
        || k.contains("basic.auth.user.info")
        || k.ends_with("bearer.auth.token")
        || k.ends_with("rest.auth.token")
        // May carry user:password.
        || k.ends_with("schema.registry.url")
        || k.ends_with("apicurio.registry.url")
        // Private keys as PEM text (Java's and librdkafka's names).
        || k.ends_with("ssl.keystore.key")
        || k.ends_with("ssl.key.pem")
}

/// The known key closest to `key` (Levenshtein distance), for "did you mean" warnings. Keys
/// much longer than any known key get no suggestion (the search is quadratic in length).
pub fn closest(key: &str) -> Option<&'static str> {
    if key.len() > 128 {
        return None;
    }
    crate::util::closest_of(
        key,
        KEYS.iter()
            .map(|(k, _)| *k)
            .filter(|k| !RENAMED.iter().any(|(old, _)| old == k)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_key_is_suggested_for_a_typo() {
        assert_eq!(closest("tombstone.on.delete"), Some("tombstones.on.delete"));
        assert_eq!(closest("databse.hostname"), Some("database.hostname"));
        assert_eq!(closest("completely.unrelated.thing.here"), None);
    }

    #[test]
    fn prefixes_classify_families() {
        assert_eq!(status("producer.override.linger.ms"), Some(Implemented));
        assert_eq!(status("column.mask.with.5.chars"), Some(Implemented));
        assert_eq!(
            status("snapshot.select.statement.overrides.public.t"),
            Some(Implemented)
        );
        assert_eq!(status("driver.foo"), Some(NotImplemented(None)));
        assert_eq!(status("no.such.key"), None);
    }
}
