//! Snapshot reads: a repeatable-read transaction (on the slot's exported snapshot when the
//! slot was just created, so the snapshot and the stream meet with no gap and no overlap),
//! and per-table cursors that fetch rows as text in bounded batches.

use tokio_postgres::{Client, SimpleQueryMessage};

use crate::config::SnapshotIsolationMode;
use crate::error::{Error, Result};
use crate::lsn::Lsn;
use crate::util::{quote_ident, quote_literal};

/// Opens the snapshot transaction. With `exported`, it imports that snapshot (REPEATABLE READ,
/// as `SET TRANSACTION SNAPSHOT` requires); otherwise it uses `snapshot.isolation.mode`.
/// Returns the snapshot transaction id (64-bit, epoch-extended) and the transaction start
/// time in µs since the Unix epoch.
pub async fn begin(
    client: &Client,
    exported: Option<&str>,
    isolation: SnapshotIsolationMode,
    version_num: u32,
) -> Result<(i64, i64)> {
    match exported {
        Some(name) => client
            .batch_execute(&format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT {}",
                quote_literal(name)
            ))
            .await
            .map_err(|e| lost_export(e, name))?,
        None => {
            let level = match isolation {
                SnapshotIsolationMode::Serializable => "SERIALIZABLE, READ ONLY, DEFERRABLE",
                SnapshotIsolationMode::RepeatableRead => "REPEATABLE READ, READ ONLY",
                SnapshotIsolationMode::ReadCommitted => "READ COMMITTED, READ ONLY",
                SnapshotIsolationMode::ReadUncommitted => "READ UNCOMMITTED, READ ONLY",
            };
            client
                .batch_execute(&format!("BEGIN ISOLATION LEVEL {level}"))
                .await?
        }
    }
    let xid_fn = if version_num >= 130000 {
        "pg_current_xact_id()::text::int8"
    } else {
        "txid_current()"
    };
    let row = client
        .query_one(
            &format!("SELECT {xid_fn}, (extract(epoch from current_timestamp) * 1000000)::int8"),
            &[],
        )
        .await?;
    Ok((row.get(0), row.get(1)))
}

/// The error of importing the exported snapshot `name`: a connection error (retried) when the
/// export is gone with the replication connection that made it, else as classified.
fn lost_export(e: tokio_postgres::Error, name: &str) -> Error {
    let lost = e
        .as_db_error()
        .is_some_and(|db| crate::error::is_lost_exported_snapshot(db.code().code()));
    if lost {
        Error::connection(format!(
            "the slot's exported snapshot {name} is gone: the replication connection that created the slot ended before the snapshot began; the connector restarts and snapshots on the slot as it stands"
        ))
        .with_source(e)
    } else {
        e.into()
    }
}

/// Declares a cursor over `columns` of `schema.table`, or, with `query`
/// (`snapshot.select.statement.overrides`), over those columns of the query's result, matched
/// by name as Debezium matches them: a column the query leaves out reads as NULL, a column the
/// table does not have is a config error naming it.
pub async fn open_cursor(
    client: &Client,
    schema: &str,
    table: &str,
    columns: &[String],
    query: Option<&str>,
) -> Result<()> {
    let source = match query {
        None => format!("{}.{}", quote_ident(schema), quote_ident(table)),
        Some(q) => format!("({q}) AS pgcdc_override"),
    };
    let present: Option<Vec<String>> = match query {
        None => None,
        Some(_) => {
            let stmt = client
                .prepare(&format!("SELECT * FROM {source} LIMIT 0"))
                .await
                .map_err(|e| match e.as_db_error() {
                    Some(db) => Error::config(format!(
                        "the snapshot query of {schema}.{table} (snapshot.select.statement.overrides) is refused by the server: {}",
                        db.message()
                    )),
                    None => e.into(),
                })?;
            let names: Vec<String> = stmt
                .columns()
                .iter()
                .map(|c| c.name().to_string())
                .collect();
            if let Some(bad) = names.iter().find(|n| !columns.contains(n)) {
                return Err(Error::config(format!(
                    "the snapshot query of {schema}.{table} (snapshot.select.statement.overrides) returns column {bad:?}, which is not a captured column of the table ({})",
                    columns.join(", ")
                )));
            }
            Some(names)
        }
    };
    let cols = columns
        .iter()
        .map(|c| match &present {
            Some(names) if !names.contains(c) => "NULL".to_string(),
            _ => quote_ident(c),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let cols = if cols.is_empty() {
        "NULL".to_string()
    } else {
        cols
    };
    client
        .batch_execute(&format!(
            "DECLARE pgcdc_snapshot NO SCROLL CURSOR FOR SELECT {cols} FROM {source}"
        ))
        .await?;
    Ok(())
}

/// Fetches up to `n` rows from the cursor as text (`None` is NULL). An empty result means
/// the table is done.
pub async fn fetch(client: &Client, n: usize, width: usize) -> Result<Vec<Vec<Option<String>>>> {
    let msgs = client
        .simple_query(&format!("FETCH {n} FROM pgcdc_snapshot"))
        .await?;
    let mut rows = Vec::new();
    for m in msgs {
        if let SimpleQueryMessage::Row(r) = m {
            rows.push((0..width).map(|i| r.get(i).map(str::to_string)).collect());
        }
    }
    Ok(rows)
}

/// Closes the cursor.
pub async fn close_cursor(client: &Client) -> Result<()> {
    client.batch_execute("CLOSE pgcdc_snapshot").await?;
    Ok(())
}

/// What the open snapshot transaction sees, for the fence (see `pipeline::fence`).
#[derive(Debug, Clone)]
pub struct Visibility {
    /// `pg_current_snapshot()::text` (`xmin:xmax:xip,...`).
    pub snapshot: String,
    /// The WAL insert position after the snapshot was taken: past the commit record of every
    /// transaction the snapshot sees.
    pub insert_lsn: Lsn,
    /// `wal_block_size`, in bytes.
    pub block_size: u64,
    /// `wal_segment_size`, in bytes.
    pub segment_size: u64,
    /// Transactions the snapshot sees as running although they have committed (their
    /// backends still wait, for example for a synchronous standby).
    pub committed_invisible: i64,
}

/// In the open snapshot transaction: its transaction visibility and the WAL position (see
/// [`Visibility`]).
pub async fn visibility(client: &Client, version_num: u32) -> Result<Visibility> {
    let (snapshot_fn, invisible) = if version_num >= 130000 {
        (
            "pg_current_snapshot()",
            "(SELECT count(*) FROM pg_snapshot_xip(pg_current_snapshot()) x WHERE pg_xact_status(x) = 'committed')",
        )
    } else {
        (
            "txid_current_snapshot()",
            "(SELECT count(*) FROM txid_snapshot_xip(txid_current_snapshot()) x WHERE txid_status(x) = 'committed')",
        )
    };
    let row = client
        .query_one(
            &format!(
                "SELECT {snapshot_fn}::text, pg_current_wal_insert_lsn()::text, \
                 current_setting('wal_block_size')::int8, \
                 pg_size_bytes(current_setting('wal_segment_size'))::int8, {invisible}"
            ),
            &[],
        )
        .await?;
    let lsn: String = row.get(1);
    let insert_lsn = lsn
        .parse()
        .map_err(|_| Error::protocol(format!("unexpected pg_current_wal_insert_lsn() {lsn:?}")))?;
    Ok(Visibility {
        snapshot: row.get(0),
        insert_lsn,
        block_size: row.get::<_, i64>(2).max(1) as u64,
        segment_size: row.get::<_, i64>(3).max(1) as u64,
        committed_invisible: row.get(4),
    })
}
