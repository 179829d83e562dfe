//! Blocking snapshots (`execute-snapshot` with `"type": "blocking"`): the stream pauses, the
//! listed tables are read as in an initial snapshot, and the stream goes on.
//!
//! Per-key order holds without reading anything twice. Between transactions the snapshot is
//! taken (one transaction, `pg_current_snapshot()` and the WAL insert position `L2` after
//! it, as the [`super::fence`] takes it). The snapshot sees exactly the transactions that
//! committed before it, and pgoutput sends transactions in commit order, so the stream goes
//! on (publishing as usual) while the transactions it sends are ones the snapshot sees; the
//! first one it does not see, or the first at or past `L2` (or a keepalive past `L2` while
//! nothing is open), is put back, and the tables are read then. Every change before the
//! snapshot rows is contained in them, every change after them is newer. A snapshot that sees
//! a committed transaction as still running is taken again (as the fence does).
//!
//! The rows go out as one unit, with the `Initial Snapshot` notifications (Debezium sends
//! those for blocking snapshots too) and `source.snapshot` markers; the unit confirms no new
//! position and writes no offsets (streaming's offsets stay where they were). A crash during
//! the read loses the request once the signal's transaction was confirmed, as in Debezium:
//! send it again.

use std::sync::Arc;

use tokio_postgres::Client;

use crate::config::SelectOverride;
use crate::error::Result;
use crate::event::signal::{Signal, SnapshotRequest};
use crate::pg::pgoutput::Message;
use crate::pg::setup::{self, CatalogTable};
use crate::pg::stream::StreamEvent;
use crate::sink::{Sink, Unit};

use super::fence::SnapshotFence;
use super::processor::Processor;
use super::relations::Catalog;

/// The blocking snapshot of a run, if one is requested or under way.
#[derive(Default)]
pub(super) struct Blocking {
    /// Requested, in order; each taken at a boundary between transactions once the one
    /// before it is done (at most [`MAX_PENDING`]).
    pending: std::collections::VecDeque<Request>,
    /// Taken: the stream runs on until it leaves what the snapshot sees.
    draining: Option<Draining>,
}

impl std::fmt::Debug for Blocking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocking")
            .field("pending", &self.pending.len())
            .field("draining", &self.draining.is_some())
            .finish()
    }
}

/// How many blocking snapshots may wait for their turn.
const MAX_PENDING: usize = 16;

/// What a blocking `execute-snapshot` asked for.
struct Request {
    id: String,
    /// `data-collections`: regular expressions on `schema.table`.
    collections: Vec<regex::Regex>,
    /// `additional-conditions`: a full SELECT per matching table.
    conditions: Vec<(regex::Regex, String)>,
}

/// A blocking snapshot taken and waiting for the stream to leave what it sees.
struct Draining {
    request: Request,
    client: Arc<Client>,
    /// The snapshot transaction's xid and start time (µs).
    tx: (i64, i64),
    fence: SnapshotFence,
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// A blocking `execute-snapshot`: remembered until a boundary between transactions after
    /// the ones requested before it. Beyond [`MAX_PENDING`] waiting it is skipped with a warning.
    pub(super) fn request_blocking(&mut self, signal: &Signal, req: SnapshotRequest) {
        if self.blocking.pending.len() >= MAX_PENDING {
            tracing::warn!(
                id = %signal.id,
                "signal skipped: {MAX_PENDING} blocking snapshots already wait; send it again once they complete"
            );
            return;
        }
        let regex = |p: &str| crate::util::full_match_regex(p, true).ok();
        let collections = req.collections.iter().filter_map(|c| regex(c)).collect();
        let conditions = req
            .conditions
            .iter()
            .map(|c| (c.collection.clone(), c.filter.clone()))
            .collect();
        tracing::info!(id = %signal.id, tables = %req.collections.join(","),
            "blocking snapshot requested: the stream pauses at the next transaction boundary while the tables are read");
        self.blocking.pending.push_back(Request {
            id: signal.id.clone(),
            collections,
            conditions,
        });
    }

    /// Whether a requested blocking snapshot can be taken now (no transaction is open).
    pub fn blocking_due(&self) -> bool {
        !self.blocking.pending.is_empty() && self.blocking.draining.is_none() && self.tx.is_none()
    }

    /// Takes the requested blocking snapshot (see the module docs).
    pub async fn start_blocking(&mut self) -> Result<()> {
        let Some(request) = self.blocking.pending.pop_front() else {
            return Ok(());
        };
        let client = crate::pg::sql::connect_for_snapshot(&self.config.database).await?;
        let (tx, fence) =
            super::fence::take_snapshot(&client, &self.config, self.server_version).await?;
        tracing::info!(id = %request.id, lsn = %fence.position(),
            "blocking snapshot taken: streaming on until the transactions it sees are published");
        self.blocking.draining = Some(Draining {
            request,
            client: Arc::new(client),
            tx,
            fence,
        });
        Ok(())
    }

    /// Whether `ev` is the first event after what a snapshot taken meanwhile (a blocking
    /// snapshot, or a read-only incremental chunk) sees: the caller puts it back and runs
    /// [`Processor::at_snapshot_boundary`] first.
    pub fn snapshot_boundary(&self, ev: &StreamEvent) -> bool {
        if self.tx.is_some() {
            return false;
        }
        let blocking = self.blocking.draining.as_ref().map(|d| &d.fence);
        blocking
            .into_iter()
            .chain(self.incremental_bound())
            .any(|fence| past(fence, ev))
    }

    /// Reads the blocking snapshot's tables, or sends a read-only incremental chunk's rows,
    /// whichever `ev` (see [`Processor::snapshot_boundary`]) ended.
    pub async fn at_snapshot_boundary(&mut self, ev: &StreamEvent) -> Result<()> {
        let blocking = self.blocking.draining.as_ref().map(|d| &d.fence);
        if blocking.is_some_and(|f| past(f, ev)) {
            return self.run_blocking().await;
        }
        self.close_bounded_window().await
    }

    /// Reads the blocking snapshot's tables and sends their rows (see the module docs).
    pub async fn run_blocking(&mut self) -> Result<()> {
        let Some(d) = self.blocking.draining.take() else {
            return Ok(());
        };
        let all = setup::captured_tables(&d.client, &self.config).await?;
        let (tables, overrides) = blocking_tables(all, &d.request);
        if tables.is_empty() {
            tracing::warn!(
                id = %d.request.id,
                "blocking snapshot: no captured table matches its data-collections; nothing read"
            );
            d.client.batch_execute("ROLLBACK").await?;
            return Ok(());
        }
        let position = self.progress.idle_position();
        let unit = Unit::open(&mut self.sink);
        let read = self
            .read_snapshot_tables(
                &d.client,
                &tables,
                &overrides,
                d.tx,
                position,
                (unit.token(), None),
            )
            .await;
        let info = self.idle_unit_info();
        unit.commit(&mut self.sink, info);
        match read {
            Ok(()) => {
                self.counters.snapshot_ended(true);
                tracing::info!(id = %d.request.id, tables = tables.len(), lsn = %position,
                    "blocking snapshot completed: streaming goes on");
                Ok(())
            }
            // A lost connection restarts the run; anything else (a refused query) ends this
            // snapshot, as Debezium ends it, and streaming goes on.
            Err(e) if e.is_retriable() => Err(e),
            Err(e) => {
                self.counters.snapshot_ended(false);
                self.log_snapshot_aborted();
                tracing::warn!(id = %d.request.id, error = %e.one_line(),
                    "blocking snapshot failed, the rows read so far are published; streaming goes on (send the signal again once fixed)");
                Ok(())
            }
        }
    }
}

/// The query of an `additional-conditions` entry: Debezium wants a full SELECT for a blocking
/// snapshot; a bare condition (what an incremental snapshot takes) reads the table through it.
fn blocking_query(t: &CatalogTable, filter: &str) -> String {
    let f = filter.trim().trim_end_matches(';').trim();
    let is_select = f.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select"));
    if is_select {
        f.to_string()
    } else {
        format!(
            "SELECT * FROM {}.{} WHERE {f}",
            crate::util::quote_ident(&t.schema),
            crate::util::quote_ident(&t.table)
        )
    }
}

/// Whether `ev` comes after everything `fence`'s snapshot sees: a BEGIN of a transaction it
/// does not see or at or past its position, a logical message or a keepalive at or past it.
pub(super) fn past(fence: &SnapshotFence, ev: &StreamEvent) -> bool {
    let position = fence.position();
    match ev {
        StreamEvent::Keepalive { wal_end } => *wal_end >= position,
        StreamEvent::Message { lsn, message, .. } => match message {
            Message::Begin { xid, final_lsn, .. } => *final_lsn >= position || !fence.sees(*xid),
            Message::LogicalMessage { .. } => *lsn >= position,
            _ => false,
        },
    }
}

/// The captured tables the request names, by schema and name, and the SELECT of each table an
/// `additional-conditions` entry names.
fn blocking_tables(
    all: Vec<CatalogTable>,
    request: &Request,
) -> (Vec<CatalogTable>, Vec<SelectOverride>) {
    let mut tables: Vec<CatalogTable> = all
        .into_iter()
        .filter(|t| {
            let name = format!("{}.{}", t.schema, t.table);
            request.collections.iter().any(|r| r.is_match(&name))
        })
        .collect();
    tables.sort();
    let overrides = tables
        .iter()
        .filter_map(|t| {
            let name = format!("{}.{}", t.schema, t.table);
            let (_, filter) = request.conditions.iter().find(|(r, _)| r.is_match(&name))?;
            Some(SelectOverride {
                schema: t.schema.clone(),
                table: t.table.clone(),
                query: blocking_query(t, filter),
            })
        })
        .collect();
    (tables, overrides)
}
