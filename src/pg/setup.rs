//! Server checks, publication management and replication slot lookup, done on the regular
//! SQL connection before streaming starts.

use tokio_postgres::Client;

use crate::config::{ConnectorConfig, PublicationAutocreateMode, ReplicaIdentity};
use crate::error::{sqlstate, Error, Result};
use crate::lsn::Lsn;
use crate::util::{quote_ident, quote_literal};

/// Facts about the server.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// `server_version_num`, e.g. 150018.
    pub version_num: u32,
    /// `wal_level`.
    pub wal_level: String,
    /// `pg_is_in_recovery()`: a standby.
    pub in_recovery: bool,
}

/// Reads the server version and `wal_level`; with `need_logical`, anything other than
/// `wal_level=logical` is an error saying how to fix it, and with `binary` (binary tuples), a
/// server older than PostgreSQL 14.
pub async fn check_server(
    client: &Client,
    need_logical: bool,
    (binary, streaming): (bool, bool),
) -> Result<ServerInfo> {
    let row = client
        .query_one(
            "SELECT current_setting('server_version_num')::int, current_setting('wal_level'), pg_is_in_recovery()",
            &[],
        )
        .await?;
    let info = ServerInfo {
        version_num: row.get::<_, i32>(0) as u32,
        wal_level: row.get(1),
        in_recovery: row.get(2),
    };
    if info.version_num < 100000 {
        return Err(Error::server(format!(
            "PostgreSQL {} is too old: pgoutput logical replication needs PostgreSQL 10 or later",
            info.version_num
        )));
    }
    if binary && info.version_num < 140000 {
        return Err(Error::config(format!(
            "{}=true needs PostgreSQL 14 or later (pgoutput's binary option), but the server is {}: remove the key or set it to false",
            crate::config::keys::PGOUTPUT_BINARY,
            info.version_num
        )));
    }
    if streaming && info.version_num < 140000 {
        return Err(Error::config(format!(
            "{}=true needs PostgreSQL 14 or later (pgoutput's streaming of in-progress transactions, protocol version 2), but the server is {}: remove the key or set it to false",
            crate::config::keys::PGOUTPUT_STREAMING,
            info.version_num
        )));
    }
    if need_logical && info.in_recovery && info.version_num < 160000 {
        return Err(Error::server(format!(
            "the server is a standby (in recovery) running PostgreSQL {}, which cannot decode logically: standbys can from PostgreSQL 16 on. Point {} at the primary",
            info.version_num,
            crate::config::keys::DATABASE_HOSTNAME
        )));
    }
    if need_logical && info.wal_level != "logical" {
        return Err(Error::server(format!(
            "the server runs with wal_level={}, but logical decoding needs wal_level=logical: set it in postgresql.conf (or ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL",
            info.wal_level
        )));
    }
    Ok(info)
}

/// The server's system identifier (decimal text, `pg_control_system()`) and its timeline: on
/// a primary the current one (the first 8 hex digits of the current WAL file's name: right
/// after a promotion the latest checkpoint may still be on the old one), on a standby that of
/// its latest restartpoint (`pg_control_checkpoint()`). Readable by any role.
pub async fn cluster_identity(client: &Client) -> Result<(String, u32)> {
    let row = client
        .query_one(
            "SELECT s.system_identifier::text,                     CASE WHEN pg_is_in_recovery() THEN c.timeline_id::int8                          ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int8 END              FROM pg_control_system() s, pg_control_checkpoint() c",
            &[],
        )
        .await?;
    Ok((row.get(0), row.get::<_, i64>(1) as u32))
}

/// With binary tuples: an error naming every column of the publication's tables that the
/// server cannot send in binary form (an array whose element type has no send function, such
/// as `isbn[]`): the walsender would fail on the first such row, whether pgcdc captures the
/// table or not.
pub async fn check_binary_sendable(client: &Client, publication: &str) -> Result<()> {
    let rows = client
        .query(
            "SELECT format('%I.%I', pt.schemaname, pt.tablename), a.attname::text,                     format_type(a.atttypid, a.atttypmod)              FROM pg_publication_tables pt              JOIN pg_namespace n ON n.nspname = pt.schemaname              JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped              JOIN pg_type t ON t.oid = a.atttypid              JOIN pg_type e ON e.oid = t.typelem              WHERE pt.pubname = $1 AND t.typcategory = 'A' AND e.typsend::oid = 0              ORDER BY 1, a.attnum",
            &[&publication],
        )
        .await?;
    if rows.is_empty() {
        return Ok(());
    }
    let columns: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "column {} of table {} has type {}",
                r.get::<_, String>(1),
                r.get::<_, String>(0),
                r.get::<_, String>(2)
            )
        })
        .collect();
    Err(Error::config(format!(
        "{}=true, but the server cannot send every published column in binary form: {} (its element type has no binary send function): set {}=false, or leave the table out of the publication (e.g. publication.autocreate.mode=filtered with the table filters, and a new publication.name if {publication} is FOR ALL TABLES)",
        crate::config::keys::PGOUTPUT_BINARY,
        columns.join(", "),
        crate::config::keys::PGOUTPUT_BINARY,
    )))
}

/// A captured table found in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CatalogTable {
    /// Schema.
    pub schema: String,
    /// Table.
    pub table: String,
    /// OID.
    pub oid: u32,
    /// The planner's row estimate (`pg_class.reltuples`); `None` before the table was first
    /// analysed or vacuumed.
    pub estimate: Option<u64>,
    /// A partitioned table (the root of partitions, with `publish.via.partition.root`): it has
    /// no storage of its own, so its snapshot reads it whole (no `ctid` ranges).
    pub partitioned: bool,
}

impl CatalogTable {
    /// `schema.table`, as the offsets and the notifications name it.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.schema, self.table)
    }
}

/// The tables matching the filters, sorted by schema and name: ordinary tables, partitions
/// included; with `publish.via.partition.root`, the partitioned roots instead of their
/// partitions (see [`all_tables`]).
pub async fn captured_tables(
    client: &Client,
    config: &ConnectorConfig,
) -> Result<Vec<CatalogTable>> {
    let mut out: Vec<CatalogTable> = all_tables(client, config.publish_via_partition_root)
        .await?
        .into_iter()
        .filter(|t| config.filters.is_captured(&t.schema, &t.table))
        .collect();
    out.sort();
    Ok(out)
}

/// Every table of the database whose changes stream under its own name (what the include and
/// exclude lists choose from), sorted by schema and name: every ordinary table, partitions
/// included; with `via_root` (`publish.via.partition.root`), the top partitioned tables and
/// the ordinary tables that are not partitions, since the changes of partitions then stream
/// under their root. Errors: the catalog query fails.
pub async fn all_tables(client: &Client, via_root: bool) -> Result<Vec<CatalogTable>> {
    let rows = client
        .query(
            "SELECT n.nspname::text, c.relname::text, c.oid::int8, c.reltuples::int8, c.relkind = 'p' \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE CASE WHEN $1 THEN c.relkind IN ('r', 'p') AND NOT c.relispartition ELSE c.relkind = 'r' END \
             ORDER BY 1, 2",
            &[&via_root],
        )
        .await?;
    let mut out: Vec<CatalogTable> = rows
        .iter()
        .map(|r| CatalogTable {
            schema: r.get(0),
            table: r.get(1),
            oid: r.get::<_, i64>(2) as u32,
            estimate: u64::try_from(r.get::<_, i64>(3)).ok(),
            partitioned: r.get(4),
        })
        .collect();
    out.sort();
    Ok(out)
}

/// `guardrail.collections.max`: counts the captured tables at start; above the limit,
/// `guardrail.collections.limit.action=fail` is a config error naming both numbers, `warn`
/// logs it (as Debezium checks, once per start). Errors: the catalog query fails.
pub async fn check_guardrail(client: &Client, config: &ConnectorConfig) -> Result<()> {
    let Some(g) = config.guardrail else {
        return Ok(());
    };
    let count = captured_tables(client, config).await?.len();
    if count <= g.max as usize {
        tracing::info!(
            tables = count,
            limit = g.max,
            "guardrail: captured tables within the limit"
        );
        return Ok(());
    }
    let msg = format!(
        "guardrail limit exceeded: {count} tables are captured, but {} is {}: narrow table.include.list / schema.include.list, or raise the limit",
        crate::config::keys::GUARDRAIL_COLLECTIONS_MAX,
        g.max
    );
    if g.fail {
        return Err(Error::config(msg));
    }
    tracing::warn!(tables = count, limit = g.max, "{msg}");
    Ok(())
}

/// Applies `replica.identity.autoset.values` to the captured tables: a table matched by more
/// than one entry is a config error naming it; a table whose identity differs gets
/// `ALTER TABLE ... REPLICA IDENTITY ...` (logged; a failure to alter is logged and not fatal,
/// as in Debezium).
pub async fn apply_replica_identity_autoset(
    client: &Client,
    config: &ConnectorConfig,
) -> Result<()> {
    if config.replica_identity_autoset.is_empty() {
        return Ok(());
    }
    let tables = captured_tables(client, config).await?;
    for t in &tables {
        let name = format!("{}.{}", t.schema, t.table);
        let matches: Vec<_> = config
            .replica_identity_autoset
            .iter()
            .filter(|(re, _)| re.is_match(&name))
            .collect();
        let wanted = match matches.as_slice() {
            [] => continue,
            [(_, identity)] => identity,
            _ => {
                return Err(Error::config(format!(
                    "replica.identity.autoset.values: table {name} is matched by more than one entry; make the table regexes disjoint"
                )))
            }
        };
        let row = client
            .query_one(
                "SELECT c.relreplident::text, \
                        (SELECT i.relname::text FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid \
                          WHERE x.indrelid = c.oid AND x.indisreplident) \
                 FROM pg_class c WHERE c.oid = $1::int8::oid",
                &[&(t.oid as i64)],
            )
            .await?;
        let current = match (
            row.get::<_, String>(0).as_str(),
            row.get::<_, Option<String>>(1),
        ) {
            ("d", _) => ReplicaIdentity::Default,
            ("f", _) => ReplicaIdentity::Full,
            ("n", _) => ReplicaIdentity::Nothing,
            (_, Some(index)) => ReplicaIdentity::Index(index),
            (_, None) => ReplicaIdentity::Default,
        };
        if &current == wanted {
            tracing::info!(table = %name, identity = %wanted.sql(), "replica identity already as configured");
            continue;
        }
        let sql = format!(
            "ALTER TABLE {}.{} REPLICA IDENTITY {}",
            quote_ident(&t.schema),
            quote_ident(&t.table),
            wanted.sql()
        );
        match client.batch_execute(&sql).await {
            Ok(()) => {
                tracing::info!(table = %name, identity = %wanted.sql(), "replica identity set")
            }
            Err(e) => tracing::warn!(
                table = %name,
                identity = %wanted.sql(),
                error = %e,
                "could not set the replica identity (replica.identity.autoset.values); the role must own the table"
            ),
        }
    }
    Ok(())
}

/// Warns about captured tables without a usable replica identity (`NOTHING`, or `DEFAULT`
/// without a primary key): when the publication publishes updates and deletes, PostgreSQL
/// refuses those statements on such tables in the application itself.
pub async fn warn_replica_identity(client: &Client, config: &ConnectorConfig) -> Result<()> {
    let tables = captured_tables(client, config).await?;
    let rows = client
        .query(
            "SELECT c.oid::int8, c.relreplident::text, \
                    EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) \
             FROM pg_class c WHERE c.relkind = 'r'",
            &[],
        )
        .await?;
    for r in rows {
        let oid = r.get::<_, i64>(0) as u32;
        let identity: String = r.get(1);
        let has_pk: bool = r.get(2);
        if identity == "n" || (identity == "d" && !has_pk) {
            if let Some(t) = tables.iter().find(|t| t.oid == oid) {
                tracing::warn!(
                    table = %format!("{}.{}", t.schema, t.table),
                    "captured table has no primary key or replica identity: PostgreSQL refuses UPDATE and DELETE on it while the publication publishes them; add a primary key or run ALTER TABLE {}.{} REPLICA IDENTITY FULL",
                    quote_ident(&t.schema),
                    quote_ident(&t.table)
                );
            }
        }
    }
    Ok(())
}

/// Creates or updates the publication per `publication.autocreate.mode` (see Debezium's
/// rules): `all_tables` creates `FOR ALL TABLES` when missing, `filtered` creates or aligns
/// `FOR TABLE` with the captured tables, `no_tables` creates an empty one, `disabled` only
/// checks that it exists. Unlike Debezium, no `publish = '...'` option is added for
/// `skipped.operations`: pgcdc filters operations itself.
pub async fn ensure_publication(client: &Client, config: &ConnectorConfig) -> Result<()> {
    let name = &config.publication_name;
    let row = client
        .query_opt(
            "SELECT puballtables FROM pg_publication WHERE pubname = $1",
            &[name],
        )
        .await?;
    match (row.map(|r| r.get::<_, bool>(0)), config.publication_autocreate_mode) {
        (None, PublicationAutocreateMode::Disabled) => Err(Error::server(format!(
            "publication {name} does not exist and publication.autocreate.mode=disabled: create it (CREATE PUBLICATION {} FOR TABLE ...) or change the mode",
            quote_ident(name)
        ))),
        (None, PublicationAutocreateMode::AllTables) => {
            let sql = format!("CREATE PUBLICATION {} FOR ALL TABLES{}", quote_ident(name), with(config));
            client.batch_execute(&sql).await.map_err(|e| {
                Error::from(e).with_context(&format!(
                    "cannot create publication {name} FOR ALL TABLES (this needs a superuser; or use publication.autocreate.mode=filtered)"
                ))
            })?;
            tracing::info!(publication = %name, "created publication for all tables");
            Ok(())
        }
        (None, PublicationAutocreateMode::NoTables) => {
            client.batch_execute(&format!("CREATE PUBLICATION {}{}", quote_ident(name), with(config))).await?;
            tracing::info!(publication = %name, "created publication without tables");
            Ok(())
        }
        (None, PublicationAutocreateMode::Filtered) => {
            let tables = filtered_table_list(client, config).await?;
            let sql = format!("CREATE PUBLICATION {} FOR TABLE {tables}{}", quote_ident(name), with(config));
            client.batch_execute(&sql).await.map_err(|e| Error::from(e).with_context(&format!(
                "cannot create publication {name}")))?;
            tracing::info!(publication = %name, "created publication for the filtered tables");
            Ok(())
        }
        (Some(true), PublicationAutocreateMode::Filtered) => Err(Error::server(format!(
            "publication {name} is FOR ALL TABLES, which cannot be altered to the filtered table list (publication.autocreate.mode=filtered): drop it or use another publication.name"
        ))),
        (Some(false), PublicationAutocreateMode::Filtered) => {
            let want = captured_tables(client, config).await?;
            let have = client
                .query(
                    "SELECT schemaname::text, tablename::text FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1, 2",
                    &[name])
                .await?;
            let have: Vec<(String, String)> = have.iter().map(|r| (r.get(0), r.get(1))).collect();
            let want_names: Vec<(String, String)> = want.iter().map(|t| (t.schema.clone(), t.table.clone())).collect();
            if have != want_names {
                let tables = filtered_table_list(client, config).await?;
                client.batch_execute(&format!("ALTER PUBLICATION {} SET TABLE {tables}", quote_ident(name))).await?;
                tracing::info!(publication = %name, tables = want.len(), "updated publication table list");
            }
            Ok(())
        }
        (Some(true), _) => check_via_root(client, config).await,
        (Some(false), _) => {
            check_via_root(client, config).await?;
            warn_unpublished_tables(client, config).await
        }
    }
}

/// The `WITH` clause of a publication pgcdc creates: `publish_via_partition_root = true` with
/// `publish.via.partition.root`, as Debezium adds it; nothing otherwise.
fn with(config: &ConnectorConfig) -> &'static str {
    if config.publish_via_partition_root {
        " WITH (publish_via_partition_root = true)"
    } else {
        ""
    }
}

/// Warns when an existing publication's `publish_via_partition_root` is not what
/// `publish.via.partition.root` says: the server follows the publication, so the partitions'
/// changes do not arrive where the connector's snapshot reads them.
async fn check_via_root(client: &Client, config: &ConnectorConfig) -> Result<()> {
    let name = &config.publication_name;
    let row = client
        .query_opt(
            // pubviaroot exists from PostgreSQL 13: NULL before.
            "SELECT (to_jsonb(p) ->> 'pubviaroot')::bool FROM pg_publication p WHERE pubname = $1",
            &[name],
        )
        .await?;
    if let Some(via_root) = row.and_then(|r| r.get::<_, Option<bool>>(0)) {
        if via_root != config.publish_via_partition_root {
            tracing::warn!(publication = %name, publish_via_partition_root = via_root,
                "the existing publication's publish_via_partition_root differs from publish.via.partition.root={}: partitions' changes stream as the publication says, but the snapshot reads as the key says; ALTER PUBLICATION {} SET (publish_via_partition_root = {}) to match",
                config.publish_via_partition_root, quote_ident(name), config.publish_via_partition_root);
        }
    }
    Ok(())
}

/// Warns about captured tables that an existing publication (used as it is) does not
/// publish: their snapshot rows would be sent, but none of their changes.
async fn warn_unpublished_tables(client: &Client, config: &ConnectorConfig) -> Result<()> {
    let names = unpublished_tables(client, config).await?;
    if !names.is_empty() {
        let shown = if names.len() > 10 {
            format!("{} and {} more", names[..10].join(", "), names.len() - 10)
        } else {
            names.join(", ")
        };
        tracing::warn!(
            publication = %config.publication_name,
            tables = names.len(),
            "captured tables are not in the existing publication, which pgcdc uses as it is: their changes will not be streamed (a snapshot still reads them): {shown}. Add them (ALTER PUBLICATION ... ADD TABLE), narrow table.include.list, or set publication.autocreate.mode=filtered to let pgcdc keep the list"
        );
    }
    Ok(())
}

/// The captured tables (`schema.table`, quoted where needed) that publication
/// `publication.name` does not publish, neither itself nor through a partitioned table it
/// belongs to.
pub async fn unpublished_tables(client: &Client, config: &ConnectorConfig) -> Result<Vec<String>> {
    let captured: Vec<u32> = captured_tables(client, config)
        .await?
        .iter()
        .map(|t| t.oid)
        .collect();
    // A table counts as published when it, or a partitioned table it belongs to, is listed.
    let rows = client
        .query(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.oid = ANY($2) AND NOT EXISTS ( \
               SELECT 1 FROM (SELECT c.oid AS relid UNION SELECT relid FROM pg_partition_ancestors(c.oid)) a \
               JOIN pg_class ac ON ac.oid = a.relid JOIN pg_namespace an ON an.oid = ac.relnamespace \
               JOIN pg_publication_tables pt ON pt.schemaname = an.nspname AND pt.tablename = ac.relname \
               WHERE pt.pubname = $1) \
             ORDER BY 1",
            &[&config.publication_name, &captured],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

async fn filtered_table_list(client: &Client, config: &ConnectorConfig) -> Result<String> {
    let tables = captured_tables(client, config).await?;
    if tables.is_empty() {
        return Err(Error::config(format!(
            "publication.autocreate.mode=filtered but no table matches the filters (table.include.list / schema.include.list): nothing to publish in database {}",
            config.database.dbname
        )));
    }
    Ok(tables
        .iter()
        .map(|t| format!("{}.{}", quote_ident(&t.schema), quote_ident(&t.table)))
        .collect::<Vec<_>>()
        .join(", "))
}

/// A replication slot as `pg_replication_slots` shows it.
#[derive(Debug, Clone)]
pub struct SlotInfo {
    /// Output plugin.
    pub plugin: Option<String>,
    /// Database.
    pub database: Option<String>,
    /// Whether a walsender uses it now.
    pub active: bool,
    /// PID of that walsender.
    pub active_pid: Option<i32>,
    /// `confirmed_flush_lsn`.
    pub confirmed_flush: Option<Lsn>,
    /// `restart_lsn`.
    pub restart_lsn: Option<Lsn>,
    /// `wal_status` (PG13+): `reserved`, `extended`, `unreserved`, `lost`.
    pub wal_status: Option<String>,
}

/// The server's current WAL insert position, the newest position any record can have (on a
/// standby, the last replayed position).
pub async fn current_wal_lsn(client: &Client) -> Result<Lsn> {
    let row = client
        .query_one(
            "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text",
            &[],
        )
        .await?;
    row.get::<_, Option<String>>(0)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::server("the server reported no current WAL position"))
}

/// Looks up slot `name`.
pub async fn find_slot(client: &Client, name: &str, version_num: u32) -> Result<Option<SlotInfo>> {
    let wal_status = if version_num >= 130000 {
        "wal_status::text"
    } else {
        "NULL::text"
    };
    let sql = format!(
        "SELECT plugin::text, database::text, active, active_pid, confirmed_flush_lsn::text, restart_lsn::text, {wal_status} \
         FROM pg_replication_slots WHERE slot_name = $1"
    );
    let row = client.query_opt(&sql, &[&name]).await?;
    Ok(row.map(|r| SlotInfo {
        plugin: r.get(0),
        database: r.get(1),
        active: r.get(2),
        active_pid: r.get(3),
        confirmed_flush: r.get::<_, Option<String>>(4).and_then(|s| s.parse().ok()),
        restart_lsn: r.get::<_, Option<String>>(5).and_then(|s| s.parse().ok()),
        wal_status: r.get(6),
    }))
}

/// Advances slot `name` to `lsn` (`pg_replication_slot_advance`), for
/// `offset.mismatch.strategy` when the slot is behind the offsets. Errors: the server refuses
/// (privileges, a position before the slot's, a slot in use), with its message.
pub async fn advance_slot(client: &Client, name: &str, lsn: Lsn) -> Result<()> {
    client
        .execute(
            "SELECT pg_replication_slot_advance($1, $2::text::pg_lsn)",
            &[&name, &lsn.to_string()],
        )
        .await?;
    tracing::info!(slot = name, lsn = %lsn, "advanced the replication slot to the stored offsets");
    Ok(())
}

/// Slot `name`'s `catalog_xmin` (`None`: no such slot, or none yet), for
/// `xmin.fetch.interval.ms`.
pub async fn slot_catalog_xmin(client: &Client, name: &str) -> Result<Option<i64>> {
    let row = client
        .query_opt(
            "SELECT catalog_xmin::text::int8 FROM pg_replication_slots WHERE slot_name = $1",
            &[&name],
        )
        .await?;
    Ok(row.and_then(|r| r.get::<_, Option<i64>>(0)))
}

/// Where a slot stands against the server's WAL, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotPositions {
    /// The server's current WAL write position (`pg_current_wal_lsn()`).
    pub current: Lsn,
    /// The slot's `confirmed_flush_lsn`.
    pub confirmed_flush: Lsn,
    /// The slot's `restart_lsn`: WAL from here on is retained for it.
    pub restart: Lsn,
}

/// The positions of slot `name` and of the server's WAL; `None` when the slot is gone or has
/// no position yet. Errors: the query fails (on a standby `pg_current_wal_lsn()` does).
pub async fn slot_positions(client: &Client, name: &str) -> Result<Option<SlotPositions>> {
    let row = client
        .query_opt(
            "SELECT pg_current_wal_lsn()::text, confirmed_flush_lsn::text, restart_lsn::text \
             FROM pg_replication_slots WHERE slot_name = $1",
            &[&name],
        )
        .await?;
    let lsn = |r: &tokio_postgres::Row, i: usize| {
        r.get::<_, Option<String>>(i)
            .and_then(|s| s.parse::<Lsn>().ok())
    };
    Ok(row.and_then(|r| {
        Some(SlotPositions {
            current: lsn(&r, 0)?,
            confirmed_flush: lsn(&r, 1)?,
            restart: lsn(&r, 2)?,
        })
    }))
}

/// Drops slot `name`, waiting (up to `attempts` tries) for its walsender to let go.
pub async fn drop_slot(client: &Client, name: &str, attempts: u32) -> Result<()> {
    let mut last = None;
    for i in 0..attempts {
        match client
            .execute("SELECT pg_drop_replication_slot($1)", &[&name])
            .await
        {
            Ok(_) => {
                tracing::info!(slot = name, "dropped replication slot");
                return Ok(());
            }
            Err(e) if e.code().map(|c| c.code()) == Some(sqlstate::OBJECT_IN_USE) => {
                last = Some(e);
                tokio::time::sleep(std::time::Duration::from_millis(100 * (i as u64 + 1))).await;
            }
            Err(e) if e.code().map(|c| c.code()) == Some(sqlstate::UNDEFINED_OBJECT) => {
                return Ok(())
            }
            Err(e) => return Err(e.into()),
        }
    }
    let why = last.map(|e| e.to_string()).unwrap_or_default();
    Err(Error::server(format!(
        "replication slot {name} stayed in use and was not dropped: {why}"
    )))
}

/// `CREATE_REPLICATION_SLOT` result.
#[derive(Debug, Clone)]
pub struct CreatedSlot {
    /// Consistent point: streaming from here continues the exported snapshot exactly.
    pub consistent_point: Lsn,
    /// Exported snapshot name, valid while the creating connection stays idle.
    pub snapshot_name: Option<String>,
}

/// The `CREATE_REPLICATION_SLOT` command for a pgoutput slot exporting its snapshot; with
/// `failover`, a failover slot (the option list of PostgreSQL 17+).
pub fn create_slot_command(name: &str, failover: bool) -> String {
    if failover {
        return format!(
            "CREATE_REPLICATION_SLOT {} LOGICAL pgoutput (SNAPSHOT 'export', FAILOVER)",
            quote_ident(name)
        );
    }
    format!(
        "CREATE_REPLICATION_SLOT {} LOGICAL pgoutput EXPORT_SNAPSHOT",
        quote_ident(name)
    )
}

/// pgoutput options beyond protocol 1 and the publication.
#[derive(Debug, Clone, Default)]
pub struct PgoutputOptions {
    /// `messages`: logical decoding messages (PostgreSQL 14+).
    pub messages: bool,
    /// `binary`: tuple data in each type's binary send format (PostgreSQL 14+).
    pub binary: bool,
    /// `streaming`: in-progress transactions sent in blocks, with protocol version 2
    /// (PostgreSQL 14+).
    pub streaming: bool,
    /// `slot.stream.params`: other options, as `name`, `value`.
    pub extra: Vec<(String, String)>,
}

/// The `START_REPLICATION` command with pgoutput options (protocol 1, or 2 with `streaming`;
/// the publication; `messages` and `binary` when requested).
pub fn start_replication_command(
    slot: &str,
    lsn: Lsn,
    publication: &str,
    options: PgoutputOptions,
) -> String {
    let mut opts = vec![
        format!(
            "\"proto_version\" '{}'",
            if options.streaming { 2 } else { 1 }
        ),
        format!(
            "\"publication_names\" {}",
            quote_literal(&quote_ident(publication))
        ),
    ];
    if options.messages {
        opts.push("\"messages\" 'true'".to_string());
    }
    if options.binary {
        opts.push("\"binary\" 'true'".to_string());
    }
    if options.streaming {
        opts.push("\"streaming\" 'on'".to_string());
    }
    for (name, value) in &options.extra {
        opts.push(format!("{} {}", quote_ident(name), quote_literal(value)));
    }
    format!(
        "START_REPLICATION SLOT {} LOGICAL {lsn} ({})",
        quote_ident(slot),
        opts.join(", ")
    )
}

/// Parses a duration setting as `SHOW` prints it (`60s`, `1min`, `500ms`, `0`).
pub fn parse_pg_duration_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "" | "ms" => 1,
        "s" => 1000,
        "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    Some(n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_replication_quotes_names_and_lists_options() {
        assert_eq!(
            start_replication_command(
                "s1",
                Lsn(0x16_B374_D848),
                "My Pub",
                PgoutputOptions {
                    messages: true,
                    binary: false,
                    streaming: false,
                    extra: vec![("origin".into(), "none".into())],
                }
            ),
            r#"START_REPLICATION SLOT "s1" LOGICAL 16/B374D848 ("proto_version" '1', "publication_names" '"My Pub"', "messages" 'true', "origin" 'none')"#
        );
        assert_eq!(
            start_replication_command(
                "s1",
                Lsn(1),
                "p",
                PgoutputOptions {
                    messages: true,
                    binary: true,
                    streaming: false,
                    extra: Vec::new(),
                }
            ),
            r#"START_REPLICATION SLOT "s1" LOGICAL 0/1 ("proto_version" '1', "publication_names" '"p"', "messages" 'true', "binary" 'true')"#
        );
        assert_eq!(
            start_replication_command(
                "s1",
                Lsn(1),
                "p",
                PgoutputOptions {
                    messages: true,
                    binary: false,
                    streaming: true,
                    extra: Vec::new(),
                }
            ),
            r#"START_REPLICATION SLOT "s1" LOGICAL 0/1 ("proto_version" '2', "publication_names" '"p"', "messages" 'true', "streaming" 'on')"#
        );
    }

    #[test]
    fn a_failover_slot_is_asked_for_with_the_option_list() {
        assert_eq!(
            create_slot_command("s1", false),
            r#"CREATE_REPLICATION_SLOT "s1" LOGICAL pgoutput EXPORT_SNAPSHOT"#
        );
        assert_eq!(
            create_slot_command("s1", true),
            r#"CREATE_REPLICATION_SLOT "s1" LOGICAL pgoutput (SNAPSHOT 'export', FAILOVER)"#
        );
    }

    #[test]
    fn durations_parse_in_show_units() {
        assert_eq!(parse_pg_duration_ms("60s"), Some(60_000));
        assert_eq!(parse_pg_duration_ms("1min"), Some(60_000));
        assert_eq!(parse_pg_duration_ms("500ms"), Some(500));
        assert_eq!(parse_pg_duration_ms("0"), Some(0));
    }
}
