//! The end of a streaming run, in order: stop the reader from taking in more, wait (at most
//! [`SHUTDOWN_FLUSH_TIMEOUT`]) for outstanding acknowledgements while the reader keeps
//! sending status updates, write the offsets, let the reader send the final status update
//! (which confirms only what the offsets hold) and end the stream, and with
//! `slot.drop.on.stop` drop the slot and this connector's offsets.
//!
//! An error from the main loop wins over one from the reader; records still unacknowledged
//! at the end are sent again after a restart (they were never confirmed).

use crate::config::ConnectorConfig;
use crate::error::Result;
use crate::pg::setup;
use crate::sink::Sink;

use super::relations::Catalog;
use super::startup::Started;
use super::stream::Streaming;
use super::SHUTDOWN_FLUSH_TIMEOUT;

/// Ends a streaming run whose main loop returned `result`: [`drain`], then with
/// `slot.drop.on.stop` drops the slot and this connector's offsets.
pub async fn finish<S: Sink>(
    config: &ConnectorConfig,
    started: &mut Started<S>,
    streaming: Streaming,
    result: Result<()>,
) -> Result<()> {
    drain(started, streaming, result).await?;
    if config.slot_drop_on_stop {
        drop_slot_and_offsets(config, started).await?;
    }
    Ok(())
}

/// Stops the reader, waits for outstanding acknowledgements, stores the offsets and lets the
/// reader send the final status update. Errors: `result`'s, then the offsets store's and the
/// reader's.
pub async fn drain<S: Sink, C: Catalog>(
    started: &mut Started<S, C>,
    streaming: Streaming,
    result: Result<()>,
) -> Result<()> {
    streaming.stop_reading();
    let flushed = started.processor.sink().flush(SHUTDOWN_FLUSH_TIMEOUT).await;
    // Stored before the final status update, which confirms only what is stored.
    let tracker = started.processor.tracker().clone();
    let saved = started.offsets.save_completed(&tracker).await;
    streaming.drained();
    let reader_result = streaming.join_reader().await;
    saved?;
    if !flushed && result.is_ok() {
        tracing::warn!(
            in_flight = tracker.in_flight(),
            "stopped with records still unacknowledged; they will be sent again on restart"
        );
    }
    let counters = &started.processor.counters;
    let stats = counters.snapshot();
    tracing::info!(
        flushed_lsn = %tracker.flushable(),
        transactions = stats.transactions,
        events = stats.change_events,
        records = stats.records,
        registry_calls = stats.registry_calls,
        reader_queue_bytes_max = counters.queue_bytes().1,
        producer_queue_bytes_max = counters.delivery_stats().queued_bytes_max(),
        snapshot_batch_bytes_max = counters.snapshot_batch_bytes_max(),
        "stopped"
    );
    result?;
    reader_result
}

/// `slot.drop.on.stop`: the position the offsets hold is gone with the slot, so the entry
/// goes too, and the next start begins again with a snapshot instead of refusing to stream
/// from a new slot.
async fn drop_slot_and_offsets<S: Sink>(
    config: &ConnectorConfig,
    started: &Started<S>,
) -> Result<()> {
    setup::drop_slot(started.processor.catalog(), &config.slot_name, 50).await?;
    let storage = started.offsets.storage();
    storage.clear().await?;
    tracing::info!(slot = %config.slot_name, offsets = %storage.describe(),
        "dropped the slot and this connector's offsets (slot.drop.on.stop=true)");
    Ok(())
}
