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
        Some(name) => {
            client
                .batch_execute(&format!(
                    "BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT {}",
                    quote_literal(name)
                ))
                .await?
        }
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

/// Declares a cursor over `columns` of `schema.table`.
pub async fn open_cursor(
    client: &Client,
    schema: &str,
    table: &str,
    columns: &[String],
) -> Result<()> {
    let cols = columns
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let cols = if cols.is_empty() {
        "NULL".to_string()
    } else {
        cols
    };
    client
        .batch_execute(&format!(
            "DECLARE pgcdc_snapshot NO SCROLL CURSOR FOR SELECT {cols} FROM {}.{}",
            quote_ident(schema),
            quote_ident(table)
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

/// In the open snapshot transaction: its transaction visibility as
/// `pg_current_snapshot()::text` (`xmin:xmax:xip,...`), and the WAL insert position now,
/// which is past the commit record of every transaction the snapshot sees.
pub async fn visibility(client: &Client, version_num: u32) -> Result<(String, Lsn)> {
    let snapshot_fn = if version_num >= 130000 {
        "pg_current_snapshot()"
    } else {
        "txid_current_snapshot()"
    };
    let row = client
        .query_one(
            &format!("SELECT {snapshot_fn}::text, pg_current_wal_insert_lsn()::text"),
            &[],
        )
        .await?;
    let lsn: String = row.get(1);
    let lsn = lsn
        .parse()
        .map_err(|_| Error::protocol(format!("unexpected pg_current_wal_insert_lsn() {lsn:?}")))?;
    Ok((row.get(0), lsn))
}
