//! Exactly-once delivery into Kafka, with Kafka Connect's names (KIP-618): the worker switch
//! `exactly.once.source.support` (`disabled`, `preparing`, `enabled`), the connector's
//! `exactly.once.support` (`requested`, `required`), `transaction.boundary` (`poll`,
//! `interval` with `transaction.boundary.interval.ms`, `connector`), `max.batch.size` (the
//! record bound of a `poll` transaction) and the worker's `group.id`, from which the producer's
//! `transactional.id` is made as Connect makes it: `<group.id>-<connector name>-<task>`, task 0.
//!
//! Exactly-once needs the offsets in Kafka (`offsets.storage.topic` or
//! `offset.storage.topic`): the offsets record is written in the same Kafka transaction as the
//! records it covers.

use std::time::Duration;

use super::checker::Checker;
use super::keys::{
    EXACTLY_ONCE_SOURCE_SUPPORT, EXACTLY_ONCE_SUPPORT, GROUP_ID, MAX_BATCH_SIZE,
    OFFSETS_STORAGE_TOPIC, OFFSET_STORAGE_TOPIC, TRANSACTION_BOUNDARY,
    TRANSACTION_BOUNDARY_INTERVAL_MS,
};

/// Default `group.id` (Kafka Connect's sample distributed worker uses `connect-cluster`; a
/// team moving from Connect sets its own so that both fence each other).
pub const DEFAULT_GROUP_ID: &str = "pgcdc";
/// Default `max.batch.size` (Debezium's).
pub const DEFAULT_MAX_BATCH_SIZE: usize = 2048;
/// The producer's `transaction.timeout.ms` unless set: the brokers' default
/// `transaction.max.timeout.ms` (15 minutes), so that a snapshot fits in one transaction.
pub const DEFAULT_TRANSACTION_TIMEOUT_MS: u64 = 900_000;

/// `transaction.boundary`: where a Kafka transaction ends. Each one holds whole PostgreSQL
/// transactions (and the snapshot whole), whatever the boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionBoundary {
    /// At the first PostgreSQL transaction boundary once no more input is waiting, or once
    /// the Kafka transaction holds `max.batch.size` records (Connect: each `poll()` batch).
    Poll,
    /// At the first PostgreSQL transaction boundary once `transaction.boundary.interval.ms`
    /// has passed since the Kafka transaction began.
    Interval(Duration),
    /// One PostgreSQL transaction per Kafka transaction (the connector defines them).
    Connector,
}

/// The exactly-once settings, when the worker switch is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactlyOnceConfig {
    /// `<group.id>-<name>-0`.
    pub transactional_id: String,
    /// `transaction.boundary`.
    pub boundary: TransactionBoundary,
    /// `max.batch.size`: with `poll`, the records after which the transaction ends at the
    /// next PostgreSQL transaction boundary.
    pub max_batch_size: usize,
}

/// Reads the exactly-once keys. `None` unless `exactly.once.source.support=enabled`.
/// `offset_flush_interval` is the default of `transaction.boundary.interval.ms`, as in
/// Connect; `has_offsets_topic` whether the offsets are kept in Kafka; `producer` the
/// producer settings (a `transactional.id` of the user's is refused).
pub(super) fn parse(
    c: &mut Checker<'_>,
    name: &str,
    offset_flush_interval: Duration,
    has_offsets_topic: bool,
    producer: &[(String, String)],
) -> Option<ExactlyOnceConfig> {
    #[derive(Clone, Copy, PartialEq)]
    enum Worker {
        Disabled,
        Preparing,
        Enabled,
    }
    let worker = c.choice(
        EXACTLY_ONCE_SOURCE_SUPPORT,
        Worker::Disabled,
        &[
            ("disabled", Worker::Disabled),
            ("preparing", Worker::Preparing),
            ("enabled", Worker::Enabled),
        ],
    );
    let required = c.choice(
        EXACTLY_ONCE_SUPPORT,
        false,
        &[("requested", false), ("required", true)],
    );
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Poll,
        Interval,
        Connector,
    }
    let kind = c.choice(
        TRANSACTION_BOUNDARY,
        Kind::Poll,
        &[
            ("poll", Kind::Poll),
            ("interval", Kind::Interval),
            ("connector", Kind::Connector),
        ],
    );
    let interval_ms = c.int(
        TRANSACTION_BOUNDARY_INTERVAL_MS,
        offset_flush_interval.as_millis() as u64,
        1,
    );
    if kind != Kind::Interval && c.get(TRANSACTION_BOUNDARY_INTERVAL_MS).is_some() {
        c.warn(format!(
            "{TRANSACTION_BOUNDARY_INTERVAL_MS} has no effect unless {TRANSACTION_BOUNDARY}=interval"
        ));
    }
    let max_batch_size = c.int(MAX_BATCH_SIZE, DEFAULT_MAX_BATCH_SIZE, 1);
    let group_id = c.string(GROUP_ID, DEFAULT_GROUP_ID);
    if producer.iter().any(|(k, _)| k == "transactional.id") {
        c.problem(format!(
            "producer transactional.id is set by pgcdc, as Kafka Connect sets it: <{GROUP_ID}>-<name>-0; remove the setting (set {GROUP_ID} and {EXACTLY_ONCE_SOURCE_SUPPORT}=enabled instead)"
        ));
    }
    match worker {
        Worker::Enabled => {}
        Worker::Disabled | Worker::Preparing => {
            if required {
                c.problem(format!(
                    "{EXACTLY_ONCE_SUPPORT}=required but {EXACTLY_ONCE_SOURCE_SUPPORT} is not enabled: set {EXACTLY_ONCE_SOURCE_SUPPORT}=enabled (with an offsets topic), or {EXACTLY_ONCE_SUPPORT}=requested"
                ));
            }
            return None;
        }
    }
    if !has_offsets_topic {
        c.problem(format!(
            "{EXACTLY_ONCE_SOURCE_SUPPORT}=enabled writes the offsets in the same Kafka transaction as the records: set {OFFSETS_STORAGE_TOPIC} (or {OFFSET_STORAGE_TOPIC}) to keep them in Kafka"
        ));
    }
    if group_id.trim().is_empty() {
        c.problem(format!(
            "{GROUP_ID} is empty: it names the producer's transactional.id (<{GROUP_ID}>-<name>-0)"
        ));
    }
    let boundary = match kind {
        Kind::Poll => TransactionBoundary::Poll,
        Kind::Interval => TransactionBoundary::Interval(Duration::from_millis(interval_ms)),
        Kind::Connector => TransactionBoundary::Connector,
    };
    Some(ExactlyOnceConfig {
        transactional_id: format!("{group_id}-{name}-0"),
        boundary,
        max_batch_size,
    })
}
