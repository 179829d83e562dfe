//! `GET /metrics`: Debezium's streaming and snapshot metrics under the names Debezium's own
//! Prometheus JMX exporter rules give them (`debezium_metrics_<MBean attribute>` with the
//! labels `plugin="postgres"`, `name=<topic.prefix>`, `context="streaming"|"snapshot"`, and
//! `table` for `RowsScanned`), so dashboards built for Debezium keep working; and pgcdc's own
//! (`pgcdc_*`: LSNs, records, restarts), labelled with the connector's name. Every value is
//! read at scrape time from the connectors' live counters.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::App;
use std::sync::Arc;

use crate::pipeline::{ConnectorState, ConnectorStatus, Counters, SnapshotProgress};
use crate::worker::{TargetState, Worker};

pub(super) fn routes() -> Router<App> {
    Router::new().route("/metrics", get(metrics))
}

async fn metrics(State(app): State<App>) -> Response {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Collector(app.worker.clone())));
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, &registry).is_err() {
        return super::error(500, "the metrics could not be encoded");
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// Reads every connector's counters at scrape time.
struct Collector(Worker);

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Collector")
    }
}

/// One connector's values at scrape time, each read once.
struct Sample {
    connector: String,
    server: String,
    status: ConnectorStatus,
    counters: Arc<Counters>,
    snapshot: SnapshotProgress,
    target: TargetState,
    /// See [`crate::pipeline::ConnectorHandle::down_seconds`].
    down_seconds: Option<f64>,
    queue_capacity: i64,
    /// `custom.metric.tags`, added to the Debezium metrics' labels.
    tags: Vec<(String, String)>,
}

type Labels = Vec<(String, String)>;

impl Sample {
    fn debezium(&self, context: &str) -> Labels {
        let mut labels = vec![
            ("plugin".into(), "postgres".into()),
            ("name".into(), escaped(&self.server)),
            ("context".into(), context.into()),
        ];
        labels.extend(self.tags.iter().map(|(k, v)| (k.clone(), escaped(v))));
        labels
    }
    fn own(&self) -> Labels {
        vec![("connector".into(), escaped(&self.connector))]
    }
}

/// A label value as the text format writes it: the encoder writes values as given, so a
/// backslash, a double quote or a line feed (legal in table names and tags) would end the
/// value early and let the rest pass for other series.
fn escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Writes one metric family: a descriptor, then one value per label set.
fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    values: Vec<(Labels, M)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in values {
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn gauges(
    encoder: &mut DescriptorEncoder,
    samples: &[Sample],
    name: &str,
    help: &str,
    value: impl Fn(&Sample) -> Option<(Labels, i64)>,
) -> Result<(), std::fmt::Error> {
    let values = samples
        .iter()
        .filter_map(&value)
        .map(|(l, v)| (l, ConstGauge::new(v)))
        .collect();
    family(encoder, name, help, MetricType::Gauge, values)
}

impl prometheus_client::collector::Collector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let samples: Vec<Sample> = self
            .0
            .handles()
            .into_iter()
            .map(|(connector, config, handle, target)| Sample {
                status: handle.status(),
                down_seconds: handle.down_seconds(),
                counters: handle.counters(),
                snapshot: handle.counters().snapshot_progress(),
                server: config.topic_prefix.clone(),
                queue_capacity: config.max_queue_size as i64,
                tags: config.custom_metric_tags.clone(),
                connector,
                target,
            })
            .collect();
        streaming(&mut encoder, &samples)?;
        snapshot(&mut encoder, &samples)?;
        own(&mut encoder, &samples)
    }
}

fn streaming(e: &mut DescriptorEncoder, samples: &[Sample]) -> Result<(), std::fmt::Error> {
    let s = |x: &Sample| x.debezium("streaming");
    let stats = |x: &Sample| x.status.stats;
    fn c(x: &Sample) -> &Counters {
        &x.counters
    }
    gauges(e, samples,
        "debezium_metrics_TotalNumberOfEventsSeen",
        "Change events seen while streaming, since the connector was created (JMX TotalNumberOfEventsSeen).",
        |x| Some((s(x), stats(x).change_events as i64)))?;
    gauges(
        e,
        samples,
        "debezium_metrics_TotalNumberOfCreateEventsSeen",
        "Inserts seen (JMX TotalNumberOfCreateEventsSeen).",
        |x| Some((s(x), stats(x).creates as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_TotalNumberOfUpdateEventsSeen",
        "Updates seen (JMX TotalNumberOfUpdateEventsSeen).",
        |x| Some((s(x), stats(x).updates as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_TotalNumberOfDeleteEventsSeen",
        "Deletes seen (JMX TotalNumberOfDeleteEventsSeen).",
        |x| Some((s(x), stats(x).deletes as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_NumberOfCommittedTransactions",
        "Transactions processed (JMX NumberOfCommittedTransactions).",
        |x| Some((s(x), stats(x).transactions as i64)),
    )?;
    gauges(e, samples,
        "debezium_metrics_MilliSecondsBehindSource",
        "Ms between the last event's commit and its processing; -1 before the first event (JMX MilliSecondsBehindSource).",
        |x| Some((s(x), c(x).behind_source_ms().unwrap_or(-1))))?;
    gauges(e, samples,
        "debezium_metrics_MilliSecondsSinceLastEvent",
        "Ms since the last event was processed; -1 before the first event (JMX MilliSecondsSinceLastEvent).",
        |x| {
        let since = c(x).last_event_ms().map(|t| (now_ms() - t).max(0)).unwrap_or(-1);
        Some((s(x), since))
    })?;
    gauges(
        e,
        samples,
        "debezium_metrics_Connected",
        "1 while the replication connection streams (JMX Connected).",
        |x| Some((s(x), c(x).connected() as i64)),
    )?;
    gauges(e, samples,
        "debezium_metrics_QueueTotalCapacity",
        "Capacity of the queue between the replication reader and the pipeline, in events (JMX QueueTotalCapacity; max.queue.size).",
        |x| Some((s(x), x.queue_capacity)))?;
    gauges(e, samples,
        "debezium_metrics_QueueRemainingCapacity",
        "Free room in that queue, in events (JMX QueueRemainingCapacity; waiting chunks are counted full).",
        |x| Some((s(x), (x.queue_capacity - c(x).queued() as i64).max(0))))
}

fn snapshot(e: &mut DescriptorEncoder, samples: &[Sample]) -> Result<(), std::fmt::Error> {
    let s = |x: &Sample| x.debezium("snapshot");
    fn p(x: &Sample) -> &SnapshotProgress {
        &x.snapshot
    }
    gauges(
        e,
        samples,
        "debezium_metrics_TotalTableCount",
        "Tables the snapshot reads (JMX TotalTableCount).",
        |x| Some((s(x), p(x).total_tables as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_RemainingTableCount",
        "Tables the snapshot has not finished (JMX RemainingTableCount).",
        |x| Some((s(x), p(x).remaining_tables as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_SnapshotRunning",
        "1 while a snapshot runs (JMX SnapshotRunning).",
        |x| Some((s(x), p(x).running() as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_SnapshotCompleted",
        "1 once the snapshot of this run completed (JMX SnapshotCompleted).",
        |x| Some((s(x), p(x).completed as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_SnapshotAborted",
        "1 when the snapshot of this run was stopped or failed (JMX SnapshotAborted).",
        |x| Some((s(x), p(x).aborted as i64)),
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_SnapshotPaused",
        "1 while an incremental snapshot is paused (JMX SnapshotPaused).",
        |x| Some((s(x), p(x).paused as i64)),
    )?;
    let chunks = samples
        .iter()
        .filter_map(|x| {
            let id = p(x).chunk_id.as_ref()?;
            let mut labels = s(x);
            labels.push(("chunk_id".into(), escaped(id)));
            Some((labels, ConstGauge::new(1)))
        })
        .collect();
    family(
        e,
        "debezium_metrics_ChunkId",
        "1 for the chunk an incremental snapshot reads, its id as the chunk_id label (JMX ChunkId; ChunkFrom, ChunkTo, TableFrom and TableTo are row values and are not exported).",
        MetricType::Gauge,
        chunks,
    )?;
    gauges(
        e,
        samples,
        "debezium_metrics_SnapshotDurationInSeconds",
        "Seconds the snapshot has run or ran (JMX SnapshotDurationInSeconds).",
        |x| Some((s(x), p(x).seconds() as i64)),
    )?;
    let rows = samples
        .iter()
        .flat_map(|x| {
            p(x).tables.iter().map(move |(table, t)| {
                let mut labels = s(x);
                labels.push(("table".into(), escaped(table)));
                (labels, ConstGauge::new(t.rows as i64))
            })
        })
        .collect();
    family(
        e,
        "debezium_metrics_RowsScanned",
        "Rows the snapshot read, per table (JMX RowsScanned).",
        MetricType::Gauge,
        rows,
    )
}

fn own(e: &mut DescriptorEncoder, samples: &[Sample]) -> Result<(), std::fmt::Error> {
    let o = |x: &Sample| x.own();
    let counter =
        |e: &mut DescriptorEncoder, name: &str, help: &str, f: &dyn Fn(&Sample) -> u64| {
            let values = samples
                .iter()
                .map(|x| (o(x), ConstCounter::new(f(x))))
                .collect();
            family(e, name, help, MetricType::Counter, values)
        };
    counter(
        e,
        "pgcdc_records_sent",
        "Records handed to Kafka since the connector was created.",
        &|x| x.status.stats.records,
    )?;
    counter(
        e,
        "pgcdc_snapshot_rows",
        "Snapshot rows emitted since the connector was created.",
        &|x| x.status.stats.snapshot_rows,
    )?;
    counter(
        e,
        "pgcdc_restarts",
        "Restarts after retriable errors since the connector was last started.",
        &|x| x.status.restarts,
    )?;
    counter(
        e,
        "pgcdc_schema_registry_calls",
        "Schema registry calls that returned a schema id.",
        &|x| x.status.stats.registry_calls,
    )?;
    gauges(
        e,
        samples,
        "pgcdc_processed_lsn",
        "End LSN of the last transaction processed, as a number (absent before the first).",
        |x| x.counters.processed_lsn().map(|l| (o(x), l.0 as i64)),
    )?;
    gauges(e, samples,
        "pgcdc_confirmed_lsn",
        "The LSN last reported to PostgreSQL as flushed (the slot's confirmed_flush_lsn follows it), as a number.",
        |x| x.counters.confirmed_lsn().map(|l| (o(x), l.0 as i64)))?;
    gauges(
        e,
        samples,
        "pgcdc_records_in_flight",
        "Records handed to Kafka and not acknowledged yet.",
        |x| x.counters.deliveries().map(|(n, _)| (o(x), n as i64)),
    )?;
    gauges(
        e,
        samples,
        "pgcdc_producer_queue_bytes",
        "Key, value and header bytes of records handed to the Kafka producer and not yet reported (what queue.buffering.max.kbytes, Java buffer.memory, bounds).",
        |x| Some((o(x), x.counters.delivery_stats().queued_bytes() as i64)),
    )?;
    gauges(
        e,
        samples,
        "pgcdc_producer_queue_bytes_max",
        "The most bytes the Kafka producer has held at once since the connector started (its share of pgcdc.buffer.memory.bytes, or queue.buffering.max.kbytes, bounds it).",
        |x| Some((o(x), x.counters.delivery_stats().queued_bytes_max() as i64)),
    )?;
    gauges(
        e,
        samples,
        "pgcdc_reader_queue_bytes",
        "Bytes of replication messages waiting between the reader and the pipeline (bound: max.queue.size.in.bytes, a quarter of pgcdc.buffer.memory.bytes by default).",
        |x| Some((o(x), x.counters.queue_bytes().0 as i64)),
    )?;
    gauges(
        e,
        samples,
        "pgcdc_reader_queue_bytes_max",
        "The most bytes that queue has held at once since the connector started.",
        |x| Some((o(x), x.counters.queue_bytes().1 as i64)),
    )?;
    gauges(
        e,
        samples,
        "pgcdc_snapshot_batch_bytes_max",
        "The most text bytes of one snapshot fetch since the connector started (fetches shrink to stay within the snapshot's share of pgcdc.buffer.memory.bytes).",
        |x| Some((o(x), x.counters.snapshot_batch_bytes_max() as i64)),
    )?;
    let errors = samples
        .iter()
        .flat_map(|x| {
            x.counters
                .delivery_stats()
                .errors()
                .into_iter()
                .map(move |(stage, error, n)| {
                    let mut labels = o(x);
                    labels.push(("stage".into(), stage.name().into()));
                    labels.push(("error".into(), escaped(&error)));
                    (labels, ConstCounter::new(n))
                })
        })
        .collect();
    family(
        e,
        "pgcdc_kafka_errors",
        "Errors Kafka reported since the connector was created, by stage (delivery: a record was not accepted and the task stops; client: a connection or authentication error the client retries) and librdkafka error name.",
        MetricType::Counter,
        errors,
    )?;
    gauges(
        e,
        samples,
        "pgcdc_records_acknowledged",
        "Delivery reports received in the current run.",
        |x| x.counters.deliveries().map(|(_, n)| (o(x), n as i64)),
    )?;
    let slot = |x: &Sample| x.counters.slot();
    gauges(e, samples,
        "pgcdc_server_wal_lsn",
        "The server's current WAL position (pg_current_wal_lsn()), as a number, read every 5 s once the connector has streamed or came back paused or stopped with its worker (also while it is paused or stopped).",
        |x| slot(x).map(|s| (o(x), s.current_wal.0 as i64)))?;
    gauges(
        e,
        samples,
        "pgcdc_slot_lag_bytes",
        "Bytes of WAL between the slot's confirmed_flush_lsn and the server's current position.",
        |x| slot(x).map(|s| (o(x), s.lag_bytes as i64)),
    )?;
    gauges(
        e,
        samples,
        "pgcdc_slot_retained_wal_bytes",
        "Bytes of WAL the slot holds back (from its restart_lsn): what it costs the server's disk.",
        |x| slot(x).map(|s| (o(x), s.retained_bytes as i64)),
    )?;
    gauges(e, samples,
        "pgcdc_unacknowledged_seconds",
        "Seconds records have waited for Kafka's acknowledgement without progress: over the transactions with records not acknowledged yet, the longest time one has gone without an acknowledgement (since its first waiting record was sent, or its last acknowledgement); 0 when none waits. GET /health/ready answers 503 past pgcdc.health.unacknowledged.max.ms (60 s).",
        |x| {
        let wait = x.counters.unacknowledged_wait().unwrap_or_default();
        Some((o(x), wait.as_secs() as i64))
    })?;
    gauges(e, samples,
        "pgcdc_slot_stalled_seconds",
        "Seconds the slot's confirmed position has not moved while WAL was written after it; 0 while it moves or nothing is written. Alert on it before the disk fills.",
        |x| slot(x).map(|s| (o(x), s.stalled_seconds as i64)))?;
    let latency = samples
        .iter()
        .filter_map(|x| x.counters.ack_latency().map(|l| (o(x), Latency(l))))
        .collect();
    family(e,
        "pgcdc_commit_to_ack_seconds",
        "Seconds from a transaction's commit in PostgreSQL until Kafka acknowledged all its records (this run; wall clocks of both hosts).",
        MetricType::Histogram,
        latency)?;
    gauges(e, samples,
        "pgcdc_task_running",
        "1 while the connector's task runs (RUNNING); 0 when paused, stopped, failed or restarting.",
        |x| {
        let running = x.target == TargetState::Started && x.status.state == ConnectorState::Running;
        Some((o(x), running as i64))
    })?;
    gauges(
        e,
        samples,
        "pgcdc_task_restarting",
        "1 while the connector's task waits to retry after a connection error (the error is its trace in GET /connectors/{name}/status).",
        |x| {
            let waiting = x.target == TargetState::Started
                && x.status.state == ConnectorState::Restarting;
            Some((o(x), waiting as i64))
        },
    )?;
    gauges(e, samples,
        "pgcdc_task_down_seconds",
        "Seconds the task of a started connector has been neither streaming nor taking its snapshot (connecting to PostgreSQL or Kafka, or waiting to retry), across retries; 0 while it works; absent when paused, stopped or failed. Alert on it: a connector that cannot reach Kafka alternates RUNNING and RESTARTING, this keeps growing.",
        |x| {
        let down = x.down_seconds.filter(|_| x.target == TargetState::Started)?;
        Some((o(x), down as i64))
    })?;
    gauges(
        e,
        samples,
        "pgcdc_task_failed",
        "1 when the connector's task FAILED (its trace is in GET /connectors/{name}/status).",
        |x| Some((o(x), (x.status.state == ConnectorState::Failed) as i64)),
    )
}

fn now_ms() -> i64 {
    crate::util::unix_micros() / 1000
}

/// A latency histogram as the metrics encoder takes it.
struct Latency(crate::offsets::ack::AckLatency);

impl EncodeMetric for Latency {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        use crate::offsets::ack::ACK_LATENCY_BOUNDS;
        let buckets: Vec<(f64, u64)> = ACK_LATENCY_BOUNDS
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(self.0.buckets.iter().copied())
            .collect();
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.0.sum_seconds,
            self.0.count,
            &buckets,
            None,
        )
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_as_the_text_format_requires() {
        assert_eq!(escaped(r#"public.we"ird\x"#), r#"public.we\"ird\\x"#);
        assert_eq!(escaped("a\n# EOF"), "a\\n# EOF");
        assert_eq!(escaped("plain"), "plain");
    }
}
