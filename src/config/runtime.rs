//! How the connector runs: the queue between the replication reader and the converter
//! (`max.queue.size`, `max.queue.size.in.bytes`), restarts (`errors.max.retries`,
//! `retriable.restart.connector.wait.ms`) and the offsets file
//! (`offset.storage.file.filename`, `offset.flush.interval.ms`).

use std::path::PathBuf;
use std::time::Duration;

use super::checker::Checker;
use super::keys::{
    ERRORS_MAX_RETRIES, MAX_QUEUE_SIZE, MAX_QUEUE_SIZE_IN_BYTES, OFFSET_FLUSH_INTERVAL_MS,
    OFFSET_STORAGE_FILE_FILENAME, RETRIABLE_RESTART_CONNECTOR_WAIT_MS,
};

/// Default `max.queue.size` (records between the replication reader and the converter).
pub const DEFAULT_MAX_QUEUE_SIZE: usize = 8192;
/// Default byte bound of that queue when `max.queue.size.in.bytes` is 0 (Debezium: unbounded).
pub const DEFAULT_MAX_QUEUE_BYTES: usize = 64 * 1024 * 1024;
/// Default `offset.storage.file.filename`.
pub const DEFAULT_OFFSET_FILE: &str = "data/offsets.json";
/// Default `offset.flush.interval.ms`.
pub const DEFAULT_OFFSET_FLUSH_INTERVAL_MS: u64 = 10_000;
/// Default `retriable.restart.connector.wait.ms`.
pub const DEFAULT_RESTART_WAIT_MS: u64 = 10_000;

/// The settings of this area.
pub(super) struct Runtime {
    pub(super) offset_file: PathBuf,
    pub(super) offset_flush_interval: Duration,
    pub(super) max_queue_size: usize,
    pub(super) max_queue_bytes: usize,
    pub(super) errors_max_retries: i64,
    pub(super) restart_wait: Duration,
}

/// Reads the runtime settings.
pub(super) fn parse(c: &mut Checker<'_>) -> Runtime {
    let max_queue_bytes = c.int(MAX_QUEUE_SIZE_IN_BYTES, 0usize, 0usize);
    Runtime {
        offset_file: PathBuf::from(c.string(OFFSET_STORAGE_FILE_FILENAME, DEFAULT_OFFSET_FILE)),
        offset_flush_interval: Duration::from_millis(c.int(
            OFFSET_FLUSH_INTERVAL_MS,
            DEFAULT_OFFSET_FLUSH_INTERVAL_MS,
            1,
        )),
        max_queue_size: c.int(MAX_QUEUE_SIZE, DEFAULT_MAX_QUEUE_SIZE, 1),
        max_queue_bytes: if max_queue_bytes == 0 {
            DEFAULT_MAX_QUEUE_BYTES
        } else {
            max_queue_bytes
        },
        errors_max_retries: c.int(ERRORS_MAX_RETRIES, -1i64, -1i64),
        restart_wait: Duration::from_millis(c.int(
            RETRIABLE_RESTART_CONNECTOR_WAIT_MS,
            DEFAULT_RESTART_WAIT_MS,
            0,
        )),
    }
}
