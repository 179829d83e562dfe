//! What a preflight check reads from the server (`pgcdc validate`): settings, the role's
//! rights, the publication, the slot and the captured tables' keys. Read-only: nothing here
//! creates or changes anything.

use tokio_postgres::Client;

use crate::error::Result;
use crate::lsn::Lsn;

use super::setup::CatalogTable;

/// Server settings and how much of them is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFacts {
    /// `server_version_num`.
    pub version_num: u32,
    /// `wal_level`.
    pub wal_level: String,
    /// `max_replication_slots` and the slots that exist.
    pub slots: (i64, i64),
    /// `max_wal_senders` and the walsenders running.
    pub wal_senders: (i64, i64),
    /// `max_slot_wal_keep_size` as the server shows it (`-1` for unlimited), PG13+.
    pub max_slot_wal_keep_size: Option<String>,
    /// The server's current WAL position.
    pub current_wal: Option<Lsn>,
}

/// Reads the settings. Errors: the queries fail.
pub async fn server(client: &Client) -> Result<ServerFacts> {
    let row = client
        .query_one(
            "SELECT current_setting('server_version_num')::int, current_setting('wal_level'), \
                    current_setting('max_replication_slots')::int8, \
                    (SELECT count(*) FROM pg_replication_slots)::int8, \
                    current_setting('max_wal_senders')::int8, \
                    (SELECT count(*) FROM pg_stat_replication)::int8, \
                    current_setting('max_slot_wal_keep_size', true), \
                    CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END",
            &[],
        )
        .await?;
    Ok(ServerFacts {
        version_num: row.get::<_, i32>(0) as u32,
        wal_level: row.get(1),
        slots: (row.get(2), row.get(3)),
        wal_senders: (row.get(4), row.get(5)),
        max_slot_wal_keep_size: row.get(6),
        current_wal: row.get::<_, Option<String>>(7).and_then(|s| s.parse().ok()),
    })
}

/// The connecting role's rights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleFacts {
    /// The role's name.
    pub name: String,
    /// Superuser.
    pub superuser: bool,
    /// `REPLICATION`, or membership in `rds_replication` (Amazon RDS) or `azure_pg_admin`.
    pub replication: bool,
    /// `CREATE` on the database (what creating a publication needs, with table ownership).
    pub create_on_database: bool,
}

/// Reads the role's rights. Errors: the query fails.
pub async fn role(client: &Client) -> Result<RoleFacts> {
    let row = client
        .query_one(
            "SELECT current_user::text, r.rolsuper, \
                    r.rolreplication OR EXISTS (SELECT 1 FROM pg_roles g WHERE g.rolname IN ('rds_replication', 'azure_pg_admin') AND pg_has_role(current_user, g.oid, 'member')), \
                    has_database_privilege(current_database(), 'CREATE') \
             FROM pg_roles r WHERE r.rolname = current_user",
            &[],
        )
        .await?;
    Ok(RoleFacts {
        name: row.get(0),
        superuser: row.get(1),
        replication: row.get(2),
        create_on_database: row.get(3),
    })
}

/// One captured table's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFacts {
    /// `schema.table`.
    pub name: String,
    /// The same, quoted for SQL (`public."Weird Name"`).
    pub sql_name: String,
    /// The role may SELECT it (the snapshot reads it).
    pub select: bool,
    /// The role owns it (adding it to a publication needs ownership).
    pub owner: bool,
    /// It has a primary key.
    pub primary_key: bool,
    /// `relreplident`: `d` default, `n` nothing, `f` full, `i` index.
    pub replica_identity: char,
}

/// Reads `tables`' facts. Errors: the query fails.
pub async fn tables(client: &Client, tables: &[CatalogTable]) -> Result<Vec<TableFacts>> {
    let oids: Vec<i64> = tables.iter().map(|t| i64::from(t.oid)).collect();
    let rows = client
        .query(
            "SELECT n.nspname::text || '.' || c.relname::text, has_table_privilege(c.oid, 'SELECT'), \
                    pg_has_role(c.relowner, 'USAGE'), \
                    EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary), \
                    c.relreplident::text, quote_ident(n.nspname) || '.' || quote_ident(c.relname) \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.oid = ANY($1::int8[]::oid[]) ORDER BY 1",
            &[&oids],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| TableFacts {
            name: r.get(0),
            select: r.get(1),
            owner: r.get(2),
            primary_key: r.get(3),
            replica_identity: r.get::<_, String>(4).chars().next().unwrap_or('d'),
            sql_name: r.get(5),
        })
        .collect())
}

/// The publication: `None` when it does not exist; else whether it is `FOR ALL TABLES` and
/// the tables it publishes (`schema.table`).
pub async fn publication(client: &Client, name: &str) -> Result<Option<(bool, Vec<String>)>> {
    let Some(row) = client
        .query_opt(
            "SELECT puballtables FROM pg_publication WHERE pubname = $1",
            &[&name],
        )
        .await?
    else {
        return Ok(None);
    };
    let rows = client
        .query(
            "SELECT schemaname::text || '.' || tablename::text FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1",
            &[&name],
        )
        .await?;
    Ok(Some((row.get(0), rows.iter().map(|r| r.get(0)).collect())))
}

/// Whether slot `name` was invalidated by a recovery conflict (PG16+ `conflicting`, PG17+
/// `invalidation_reason`); `None` on older servers or for a missing slot.
pub async fn slot_invalidation(
    client: &Client,
    name: &str,
    version_num: u32,
) -> Result<Option<String>> {
    let sql = if version_num >= 170000 {
        "SELECT invalidation_reason::text FROM pg_replication_slots WHERE slot_name = $1"
    } else if version_num >= 160000 {
        "SELECT CASE WHEN conflicting THEN 'conflicting' END FROM pg_replication_slots WHERE slot_name = $1"
    } else {
        return Ok(None);
    };
    Ok(client
        .query_opt(sql, &[&name])
        .await?
        .and_then(|r| r.get::<_, Option<String>>(0)))
}
