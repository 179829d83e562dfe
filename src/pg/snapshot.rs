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
    // A standby (PostgreSQL 16+ decodes there) cannot assign a transaction id: its snapshot's
    // xmax (the next id the primary will assign, as the snapshot sees it) stands in.
    let xid_fn = if version_num >= 130000 {
        "CASE WHEN pg_is_in_recovery() THEN pg_snapshot_xmax(pg_current_snapshot())::text::int8 \
         ELSE pg_current_xact_id()::text::int8 END"
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

/// The oldest server with TID range scans (PostgreSQL 14), which read a range of a table's
/// pages (and its pages in order) without reading the rest.
pub const TID_RANGE_SERVER_VERSION: u32 = 140_000;

/// What a snapshot cursor reads: the whole table, or the result of its
/// `snapshot.select.statement.overrides` query; or, in the table's physical order with each
/// row's `ctid` as one more column, the rows of a range of `ctid`s, or those of them whose
/// version an older snapshot did not see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorSource<'a> {
    /// Every row of the table.
    Table,
    /// The query's result.
    Query(&'a str),
    /// The rows of a range, in `ctid` order: a TID range scan (PostgreSQL 14+) reads the
    /// range's pages in order and is never synchronized with other scans (see
    /// [`begin_ordered_read`]; a sort would read the whole table first).
    Range(TidRange),
    /// The rows of a range whose version an older snapshot (`xmin:xmax:xip,...`) did not see:
    /// written since, in `ctid` order.
    ChangedIn(TidRange, &'a XidWindow),
}

impl CursorSource<'_> {
    /// Whether the cursor returns each row's `ctid` after the columns.
    pub fn with_ctid(&self) -> bool {
        matches!(self, CursorSource::Range(_) | CursorSource::ChangedIn(..))
    }
}

/// A row's place in its table's file: `(page, item)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tid {
    /// The heap page.
    pub page: u64,
    /// The item (line pointer) in the page, from 1.
    pub item: u32,
}

impl Tid {
    /// The first place of a table.
    pub const START: Tid = Tid { page: 0, item: 0 };

    /// The first place of heap page `page`.
    pub fn page(page: u64) -> Tid {
        Tid { page, item: 0 }
    }

    /// The place right after this one: `ctid < t.next()` is `ctid <= t`.
    pub fn next(self) -> Tid {
        Tid {
            page: self.page,
            item: self.item.saturating_add(1),
        }
    }

    /// Parses `(page,item)` as PostgreSQL prints a `tid`.
    pub fn parse(text: &str) -> Option<Tid> {
        let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
        let (page, item) = inner.split_once(',')?;
        Some(Tid {
            page: page.trim().parse().ok()?,
            item: item.trim().parse().ok()?,
        })
    }
}

impl std::fmt::Display for Tid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.page, self.item)
    }
}

/// What a snapshot saw, as far as a row's 32-bit `xmin` can tell: every transaction before
/// the snapshot's `xmin` (the oldest one still running) had ended, so a row version written by
/// one of them was seen (or is dead). From `xmin` on, the snapshot did not see the transactions
/// running (its `xip`) and their subtransactions, which PostgreSQL does not list in a snapshot
/// (`pg_current_snapshot()` has top-level ids only): a row written in a `SAVEPOINT` carries its
/// subtransaction's id. So every version written from `xmin` on counts as not seen, which is
/// exact when nothing was running (`xmin` = `xmax`) and otherwise also counts the transactions
/// that ended between the oldest running one and the snapshot (their rows are read again).
/// Ids are compared modulo 2^32 within 2^31 of `xmin`, as PostgreSQL compares them; the
/// special ids below 3 (frozen, bootstrap) count as seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XidWindow {
    /// The snapshot's `xmin`: the oldest transaction still running, or `xmax` if none was.
    pub xmin: u32,
}

impl XidWindow {
    /// The SQL condition on a row that holds when the snapshot may not have seen its version.
    fn unseen_condition(&self) -> String {
        // (x - a) mod 2^32 < 2^31: x is a or follows it.
        format!(
            "(xmin::text::int8 >= 3 AND ((xmin::text::int8 - {} + 4294967296) % 4294967296) < 2147483648)",
            self.xmin
        )
    }
}

/// The places `[from, to)` of a table's file (`to: None`: to its end, pages added since
/// included), read with a `ctid` range (a TID range scan, PostgreSQL 14+). A row version
/// never moves within its file, so ranges that cover the file read every row the snapshot
/// sees once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TidRange {
    /// The first place.
    pub from: Tid,
    /// The place after the last, or `None` for the end of the table.
    pub to: Option<Tid>,
}

impl TidRange {
    /// The whole table.
    #[cfg(test)]
    pub const ALL: TidRange = TidRange {
        from: Tid::START,
        to: None,
    };

    /// The `WHERE` condition that selects the range's rows.
    fn condition(&self) -> String {
        let from = format!("ctid >= '{}'::tid", self.from);
        match self.to {
            Some(to) => format!("{from} AND ctid < '{to}'::tid"),
            None => from,
        }
    }
}

/// The number of heap pages of table `oid` (its main fork), as the server sees it now.
pub async fn relation_pages(client: &Client, oid: u32) -> Result<u64> {
    let row = client
        .query_one(
            "SELECT (pg_relation_size($1::oid) / current_setting('block_size')::int8)::int8",
            &[&oid],
        )
        .await?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// Declares a cursor over `columns` of `schema.table` (all of it or a page range), or, with a
/// query (`snapshot.select.statement.overrides`), over those columns of the query's result,
/// matched by name as Debezium matches them: a column the query leaves out reads as NULL, a
/// column the table does not have is a config error naming it.
pub async fn open_cursor(
    client: &Client,
    schema: &str,
    table: &str,
    columns: &[String],
    read: CursorSource<'_>,
) -> Result<()> {
    let table_name = format!("{}.{}", quote_ident(schema), quote_ident(table));
    let (source, query) = match read {
        CursorSource::Table => (table_name, None),
        CursorSource::Query(q) => (format!("({q}) AS pgcdc_override"), Some(q)),
        CursorSource::Range(range) => (format!("{table_name} WHERE {}", range.condition()), None),
        CursorSource::ChangedIn(range, seen) => (
            format!(
                "{table_name} WHERE {} AND {}",
                range.condition(),
                seen.unseen_condition()
            ),
            None,
        ),
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
    let cols = if read.with_ctid() {
        format!("{cols}, ctid")
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

/// Prepares an ordered read of table `oid` in the open snapshot transaction and returns its
/// `relfilenode`: locks it (`ACCESS SHARE`, what reading it takes anyway), so that no rewrite
/// gives it another file until the snapshot ends, and makes a sequential scan start at the
/// table's first page too (`synchronize_seqscans=off`), so that rows arrive in `ctid` order
/// whichever scan the planner picks (cursors never run parallel plans).
pub async fn begin_ordered_read(
    client: &Client,
    oid: u32,
    schema: &str,
    table: &str,
) -> Result<u32> {
    scan_in_order(client).await?;
    client
        .batch_execute(&format!(
            "LOCK TABLE {}.{} IN ACCESS SHARE MODE",
            quote_ident(schema),
            quote_ident(table)
        ))
        .await?;
    let row = client
        .query_one("SELECT pg_relation_filenode($1::oid)::text::int8", &[&oid])
        .await?;
    Ok(row.get::<_, Option<i64>>(0).unwrap_or(0) as u32)
}

/// Makes a sequential scan in the open transaction start at the table's first page
/// (`synchronize_seqscans=off`), so that a reader's rows arrive in `ctid` order whichever scan
/// the planner picks; what [`begin_ordered_read`] does on the snapshot connection.
pub async fn scan_in_order(client: &Client) -> Result<()> {
    client
        .batch_execute("SET LOCAL synchronize_seqscans = off")
        .await?;
    Ok(())
}

/// `pg_current_snapshot()` of the open snapshot transaction, as text (PostgreSQL 13+).
pub async fn current_snapshot(client: &Client) -> Result<String> {
    let row = client
        .query_one("SELECT pg_current_snapshot()::text", &[])
        .await?;
    Ok(row.get(0))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tids_parse_and_the_unseen_condition_follows_wraparound() {
        assert_eq!(Tid::parse("(52,3)"), Some(Tid { page: 52, item: 3 }));
        assert_eq!(Tid::parse("(0,0)").unwrap(), Tid::START);
        assert_eq!(Tid::parse("52,3"), None);
        assert_eq!(Tid { page: 7, item: 1 }.to_string(), "(7,1)");
        let sql = XidWindow { xmin: 100 }.unseen_condition();
        assert!(sql.contains("- 100 +") && sql.contains(">= 3"));
    }

    #[test]
    fn tid_ranges_select_their_rows() {
        let (a, b) = (Tid::page(2), Tid { page: 9, item: 4 });
        assert_eq!(
            TidRange {
                from: a,
                to: Some(b)
            }
            .condition(),
            "ctid >= '(2,0)'::tid AND ctid < '(9,4)'::tid"
        );
        assert_eq!(TidRange::ALL.condition(), "ctid >= '(0,0)'::tid");
        assert_eq!(b.next(), Tid { page: 9, item: 5 });
        assert!(b < b.next() && b.next() < Tid::page(10));
    }
}
