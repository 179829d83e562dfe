//! The catalog of configuration keys and how each is treated.
//!
//! Policy (see the README, "Configuration"):
//! - a key pgcdc implements is used ([`KeyStatus::Implemented`]);
//! - a key that only means something inside Kafka Connect is accepted and has no effect
//!   ([`KeyStatus::Framework`]);
//! - a key Debezium knows but pgcdc does not implement yet is a startup error, unless its value
//!   is Debezium's default ([`KeyStatus::NotImplemented`]): silently different output is worse
//!   than no output;
//! - any other key gives a warning naming the closest known key.

/// How a key is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStatus {
    /// Used by pgcdc.
    Implemented,
    /// Meaningful only inside Kafka Connect or Debezium's JVM; accepted, no effect.
    Framework,
    /// Known to Debezium, not implemented; allowed only with Debezium's default value (if any).
    NotImplemented(Option<&'static str>),
}

use KeyStatus::*;

/// Exact keys. Defaults are Debezium 3.6.1's (`None` = no default: any value is an error).
pub const KEYS: &[(&str, KeyStatus)] = &[
    // Kafka Connect framework
    ("name", Implemented),
    ("connector.class", Implemented),
    ("tasks.max", Framework),
    ("key.converter", Implemented),
    ("value.converter", Implemented),
    ("header.converter", Implemented),
    ("key.converter.schemas.enable", Implemented),
    ("value.converter.schemas.enable", Implemented),
    ("transforms", Implemented),
    ("predicates", Implemented),
    ("config.action.reload", Framework),
    ("errors.tolerance", NotImplemented(Some("none"))),
    ("errors.log.enable", Framework),
    ("errors.log.include.messages", Framework),
    ("errors.retry.timeout", NotImplemented(Some("0"))),
    ("errors.retry.delay.max.ms", Framework),
    ("exactly.once.support", NotImplemented(Some("requested"))),
    ("transaction.boundary", NotImplemented(Some("poll"))),
    ("offsets.storage.topic", NotImplemented(None)),
    ("topic.creation.enable", Implemented),
    ("topic.creation.groups", NotImplemented(Some(""))),
    ("topic.creation.default.partitions", Implemented),
    ("topic.creation.default.replication.factor", Implemented),
    // pgcdc's own (documented in the README)
    ("bootstrap.servers", Implemented),
    ("offset.storage.file.filename", Implemented),
    ("offset.flush.interval.ms", Implemented),
    // database connection
    ("database.hostname", Implemented),
    ("database.port", Implemented),
    ("database.user", Implemented),
    ("database.password", Implemented),
    ("database.dbname", Implemented),
    ("database.sslmode", Implemented),
    ("database.sslrootcert", Implemented),
    ("database.sslcert", Implemented),
    ("database.sslkey", Implemented),
    ("database.sslpassword", NotImplemented(None)),
    ("database.sslfactory", NotImplemented(None)),
    ("database.tcpKeepAlive", Implemented),
    ("database.initial.statements", NotImplemented(None)),
    ("database.query.timeout.ms", NotImplemented(Some("600000"))),
    ("database.connection.factory.class", NotImplemented(None)),
    ("connection.validation.timeout.ms", Implemented),
    // slot and publication
    ("plugin.name", Implemented),
    ("slot.name", Implemented),
    ("slot.drop.on.stop", Implemented),
    ("slot.failover", NotImplemented(Some("false"))),
    ("slot.stream.params", NotImplemented(None)),
    ("slot.max.retries", NotImplemented(Some("6"))),
    ("slot.retry.delay.ms", NotImplemented(Some("10000"))),
    ("publication.name", Implemented),
    ("publication.autocreate.mode", Implemented),
    ("publish.via.partition.root", NotImplemented(Some("false"))),
    ("replica.identity.autoset.values", Implemented),
    ("status.update.interval.ms", Implemented),
    ("lsn.flush.mode", NotImplemented(Some("connector"))),
    ("flush.lsn.source", NotImplemented(Some("true"))),
    ("lsn.flush.timeout.ms", NotImplemented(Some("30000"))),
    ("lsn.flush.timeout.action", NotImplemented(Some("fail"))),
    (
        "offset.mismatch.strategy",
        NotImplemented(Some("no_validation")),
    ),
    ("xmin.fetch.interval.ms", NotImplemented(Some("0"))),
    ("read.only", NotImplemented(Some("false"))),
    ("internal.create.slot.command.timeout", Framework),
    // filters
    ("schema.include.list", Implemented),
    ("schema.exclude.list", Implemented),
    ("table.include.list", Implemented),
    ("table.exclude.list", Implemented),
    ("column.include.list", Implemented),
    ("column.exclude.list", Implemented),
    ("table.ignore.builtin", Implemented),
    ("message.prefix.include.list", Implemented),
    ("message.prefix.exclude.list", Implemented),
    (
        "skip.messages.without.change",
        NotImplemented(Some("false")),
    ),
    ("message.key.columns", Implemented),
    // topics
    ("topic.prefix", Implemented),
    (
        "topic.naming.strategy",
        NotImplemented(Some("io.debezium.schema.SchemaTopicNamingStrategy")),
    ),
    ("topic.delimiter", Implemented),
    ("topic.cache.size", Framework),
    ("topic.heartbeat.prefix", Implemented),
    ("topic.heartbeat.name", Implemented),
    ("topic.transaction", Implemented),
    ("heartbeat.topics.prefix", Implemented),
    // snapshot
    ("snapshot.mode", Implemented),
    (
        "snapshot.mode.configuration.based.snapshot.data",
        NotImplemented(Some("false")),
    ),
    (
        "snapshot.mode.configuration.based.snapshot.schema",
        NotImplemented(Some("false")),
    ),
    (
        "snapshot.mode.configuration.based.start.stream",
        NotImplemented(Some("false")),
    ),
    (
        "snapshot.mode.configuration.based.snapshot.on.schema.error",
        NotImplemented(Some("false")),
    ),
    (
        "snapshot.mode.configuration.based.snapshot.on.data.error",
        NotImplemented(Some("false")),
    ),
    ("snapshot.mode.custom.name", NotImplemented(None)),
    ("snapshot.isolation.mode", Implemented),
    ("snapshot.locking.mode", NotImplemented(Some("none"))),
    ("snapshot.locking.mode.custom.name", NotImplemented(None)),
    ("snapshot.lock.timeout.ms", NotImplemented(Some("10000"))),
    ("snapshot.query.mode", NotImplemented(Some("select_all"))),
    ("snapshot.query.mode.custom.name", NotImplemented(None)),
    ("snapshot.include.collection.list", NotImplemented(None)),
    ("snapshot.select.statement.overrides", NotImplemented(None)),
    ("snapshot.fetch.size", Implemented),
    ("snapshot.max.threads", NotImplemented(Some("1"))),
    ("snapshot.max.threads.multiplier", NotImplemented(Some("1"))),
    ("legacy.snapshot.max.threads", NotImplemented(Some("false"))),
    (
        "snapshot.tables.order.by.row.count",
        NotImplemented(Some("disabled")),
    ),
    ("snapshot.delay.ms", NotImplemented(Some("0"))),
    ("streaming.delay.ms", NotImplemented(Some("0"))),
    (
        "incremental.snapshot.chunk.size",
        NotImplemented(Some("1024")),
    ),
    (
        "incremental.snapshot.watermarking.strategy",
        NotImplemented(Some("insert_insert")),
    ),
    (
        "incremental.snapshot.allow.schema.changes",
        NotImplemented(Some("false")),
    ),
    // value representation
    ("decimal.handling.mode", Implemented),
    ("time.precision.mode", Implemented),
    ("binary.handling.mode", Implemented),
    ("interval.handling.mode", Implemented),
    ("hstore.handling.mode", Implemented),
    ("money.fraction.digits", Implemented),
    ("include.unknown.datatypes", Implemented),
    ("unavailable.value.placeholder", Implemented),
    ("schema.name.adjustment.mode", NotImplemented(Some("none"))),
    ("field.name.adjustment.mode", NotImplemented(Some("none"))),
    ("tombstones.on.delete", Implemented),
    ("skipped.operations", Implemented),
    ("column.propagate.source.type", Implemented),
    ("datatype.propagate.source.type", Implemented),
    ("converters", NotImplemented(None)),
    ("post.processors", NotImplemented(None)),
    ("schema.refresh.mode", Implemented),
    (
        "sourceinfo.struct.maker",
        NotImplemented(Some(
            "io.debezium.connector.postgresql.PostgresSourceInfoStructMaker",
        )),
    ),
    ("extended.headers.enabled", Implemented),
    ("provide.transaction.metadata", Implemented),
    (
        "transaction.metadata.factory",
        NotImplemented(Some(
            "io.debezium.pipeline.txmetadata.DefaultTransactionMetadataFactory",
        )),
    ),
    // runtime
    ("max.batch.size", Framework),
    ("max.queue.size", Implemented),
    ("max.queue.size.in.bytes", Implemented),
    ("poll.interval.ms", Framework),
    ("queue.provider.type", NotImplemented(Some("memory"))),
    ("query.fetch.size", Framework),
    ("heartbeat.interval.ms", Implemented),
    ("heartbeat.action.query", Implemented),
    ("retriable.restart.connector.wait.ms", Implemented),
    ("errors.max.retries", Implemented),
    (
        "event.processing.failure.handling.mode",
        NotImplemented(Some("fail")),
    ),
    ("event.converting.failure.handling.mode", Implemented),
    ("executor.shutdown.timeout.ms", Framework),
    ("custom.metric.tags", NotImplemented(None)),
    ("statistics.metrics.enabled", Framework),
    ("guardrail.collections.max", NotImplemented(Some("0"))),
    (
        "guardrail.collections.limit.action",
        NotImplemented(Some("warn")),
    ),
    ("custom.sanitize.pattern", Framework),
    ("signal.data.collection", NotImplemented(None)),
    ("signal.enabled.channels", NotImplemented(Some("source"))),
    ("signal.poll.interval.ms", NotImplemented(Some("5000"))),
    ("signal.kafka.topic", NotImplemented(None)),
    ("notification.enabled.channels", NotImplemented(None)),
    // legacy names (Debezium 1.x) that users still carry: see RENAMED
    ("database.server.name", NotImplemented(None)),
    ("table.whitelist", NotImplemented(None)),
    ("table.blacklist", NotImplemented(None)),
    ("schema.whitelist", NotImplemented(None)),
    ("schema.blacklist", NotImplemented(None)),
    ("column.whitelist", NotImplemented(None)),
    ("column.blacklist", NotImplemented(None)),
];

/// Debezium 1.x names that Debezium 2.0 removed (it ignores them since, so a config that still
/// has them captures more than its author meant), with the key that replaced each.
pub const RENAMED: &[(&str, &str)] = &[
    ("database.server.name", "topic.prefix"),
    ("table.whitelist", "table.include.list"),
    ("table.blacklist", "table.exclude.list"),
    ("schema.whitelist", "schema.include.list"),
    ("schema.blacklist", "schema.exclude.list"),
    ("column.whitelist", "column.include.list"),
    ("column.blacklist", "column.exclude.list"),
];

/// Key families matched by prefix, after exact keys.
pub const PREFIXES: &[(&str, KeyStatus)] = &[
    ("transforms.", Implemented),
    ("producer.override.", Implemented),
    ("producer.", Implemented),
    ("key.converter.", NotImplemented(None)),
    ("value.converter.", NotImplemented(None)),
    ("header.converter.", NotImplemented(None)),
    ("consumer.override.", Framework),
    ("admin.override.", Framework),
    ("predicates.", Implemented),
    ("topic.creation.", NotImplemented(None)),
    ("column.mask.", Implemented),
    ("column.truncate.", Implemented),
    ("snapshot.select.statement.overrides.", NotImplemented(None)),
    ("driver.", NotImplemented(None)),
];

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
}

/// The known key closest to `key` (Levenshtein distance), for "did you mean" warnings.
pub fn closest(key: &str) -> Option<&'static str> {
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
            Some(NotImplemented(None))
        );
        assert_eq!(status("no.such.key"), None);
    }
}
