//! `pgcdc validate`: connects to PostgreSQL and Kafka with the connector's config and reports
//! everything that would stop it or hurt the server, each with the exact fix, before anything
//! is created. Read-only: no publication, slot or topic is created or changed.
//!
//! Checks, in order: the server (`wal_level`, free replication slots and walsenders,
//! `max_slot_wal_keep_size`), the role (REPLICATION, SELECT on captured tables, what creating
//! the publication needs), the captured tables' keys, the publication against the include
//! lists, the slot (plugin, database, in use, `wal_status`, invalidation, lag), then Kafka
//! (reachable with the configured security, the tables' topics present or creatable, and
//! compacted topics that would get records without a key).

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::Client;

use crate::config::{keys, ConnectorConfig, PublicationAutocreateMode};
use crate::error::{Error, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::AckTracker;
use crate::pg::preflight::{self as facts, ServerFacts, TableFacts};
use crate::pg::setup::{self, CatalogTable};
use crate::sink::kafka::KafkaSink;
use crate::util::quote_ident;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Checked and fine.
    Ok,
    /// The connector runs, but something will hurt (the server's disk, the application's
    /// updates).
    Warning,
    /// The connector will not run (or not correctly) until it is fixed.
    Error,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was checked (`wal_level`, `slot`, `kafka`, ...).
    pub check: &'static str,
    /// How bad.
    pub severity: Severity,
    /// What was found.
    pub message: String,
    /// The exact fix, for warnings and errors.
    pub fix: Option<String>,
}

fn ok(check: &'static str, message: impl Into<String>) -> Finding {
    Finding {
        check,
        severity: Severity::Ok,
        message: message.into(),
        fix: None,
    }
}

fn bad(check: &'static str, severity: Severity, message: String, fix: String) -> Finding {
    Finding {
        check,
        severity,
        message,
        fix: Some(fix),
    }
}

/// The SQL connection of the checks, within `connection.validation.timeout.ms`.
async fn connect_within_validation_timeout(config: &ConnectorConfig) -> Result<Client> {
    let db = &config.database;
    tokio::time::timeout(db.validation_timeout, crate::pg::sql::connect(db))
        .await
        .map_err(|_| {
            Error::connection(format!(
                "timed out after {} ms connecting to PostgreSQL at {}:{} (connection.validation.timeout.ms)",
                db.validation_timeout.as_millis(),
                db.hostname,
                db.port
            ))
        })?
}

/// Runs every check for `config`.
pub async fn run(config: &ConnectorConfig) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut tables = None;
    match connect_within_validation_timeout(config).await {
        Ok(sql) => match postgres(config, &sql, &mut out).await {
            Ok(t) => tables = Some(t),
            Err(e) => out.push(bad(
                "postgresql",
                Severity::Error,
                format!("a check query failed: {}", e.one_line()),
                e.kind().policy().fix.to_string(),
            )),
        },
        Err(e) => out.push(bad(
            "postgresql",
            Severity::Error,
            e.one_line(),
            unreachable_fix(
                &e,
                "PostgreSQL runs and database.hostname and database.port reach it (and sslmode)",
            ),
        )),
    }
    kafka(config, tables.as_deref(), &mut out).await;
    out
}

async fn postgres(
    config: &ConnectorConfig,
    sql: &Client,
    out: &mut Vec<Finding>,
) -> crate::error::Result<Vec<TableFacts>> {
    let server = facts::server(sql).await?;
    server_findings(&server, out);
    let role = facts::role(sql).await?;
    if role.superuser || role.replication {
        out.push(ok(
            "role",
            format!("role {} may use logical replication", role.name),
        ));
    } else {
        out.push(bad(
            "role",
            Severity::Error,
            format!("role {} has no REPLICATION right", role.name),
            format!(
                "ALTER ROLE {} REPLICATION; (on Amazon RDS: GRANT rds_replication TO {0};)",
                quote_ident(&role.name)
            ),
        ));
    }
    let all = setup::all_tables(sql, config.publish_via_partition_root).await?;
    include_findings(config, &all, out);
    let captured: Vec<CatalogTable> = all
        .into_iter()
        .filter(|t| config.filters.is_captured(&t.schema, &t.table))
        .collect();
    let tables = facts::tables(sql, &captured).await?;
    table_findings(&role.name, &tables, out);
    let publication = facts::publication(sql, &config.publication_name).await?;
    publication_findings(config, &role, &tables, publication, out);
    slot_findings(config, sql, &server, out).await?;
    if config.include_schema_changes {
        let status = crate::pg::schema_capture::status(sql).await?;
        out.push(capture_finding(&config.database.dbname, &status));
    }
    Ok(tables)
}

/// `include.schema.changes=true`: whether the schema capture that writes the DDL into the WAL
/// is installed; without it no schema change record is published (a warning: row events are
/// not affected).
fn capture_finding(db: &str, status: &crate::pg::schema_capture::CaptureStatus) -> Finding {
    use crate::config::keys::INCLUDE_SCHEMA_CHANGES;
    if status.is_current() {
        return ok(
            "schema-capture",
            format!("database {db}: schema capture {}", status.describe()),
        );
    }
    bad(
        "schema-capture",
        Severity::Warning,
        format!(
            "{INCLUDE_SCHEMA_CHANGES}=true, but in database {db} the schema capture is {}: no schema change record will be published",
            status.describe()
        ),
        format!(
            "pgcdc schema-capture install --config <this config> (as a superuser: --set database.user=<superuser>), or {INCLUDE_SCHEMA_CHANGES}=false"
        ),
    )
}

fn server_findings(s: &ServerFacts, out: &mut Vec<Finding>) {
    if s.wal_level == "logical" {
        out.push(ok("wal_level", "wal_level = logical"));
    } else {
        out.push(bad(
            "wal_level",
            Severity::Error,
            format!(
                "wal_level = {}: logical decoding needs logical",
                s.wal_level
            ),
            "ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL".into(),
        ));
    }
    let (max, used) = s.slots;
    out.push(if used < max {
        ok("max_replication_slots", format!("{used} of {max} replication slots used"))
    } else {
        bad(
            "max_replication_slots",
            Severity::Error,
            format!("all {max} replication slots are used: a new slot cannot be created"),
            format!(
                "ALTER SYSTEM SET max_replication_slots = {}; then restart PostgreSQL (or drop an unused slot)",
                max + 4))
    });
    let (max, used) = s.wal_senders;
    out.push(if used < max {
        ok(
            "max_wal_senders",
            format!("{used} of {max} walsenders running"),
        )
    } else {
        bad(
            "max_wal_senders",
            Severity::Error,
            format!("all {max} walsenders are running: the replication connection will be refused"),
            format!(
                "ALTER SYSTEM SET max_wal_senders = {}; then restart PostgreSQL",
                max + 4
            ),
        )
    });
    match s.max_slot_wal_keep_size.as_deref() {
        Some("-1") => out.push(bad("max_slot_wal_keep_size", Severity::Warning,
            "max_slot_wal_keep_size = -1 (unlimited): a slot that stops advancing keeps WAL until the disk is full".into(),
            "ALTER SYSTEM SET max_slot_wal_keep_size = '50GB' (a size your disk can hold; then SELECT pg_reload_conf()), and alert on pgcdc_slot_stalled_seconds".into())),
        Some(v) => out.push(ok("max_slot_wal_keep_size", format!("max_slot_wal_keep_size = {v}"))),
        None => {}
    }
}

/// An entry of `table.include.list` or `schema.include.list` that matches nothing in the
/// database: a typo captures less than meant (a warning, since the table may come later).
fn include_findings(config: &ConnectorConfig, all: &[CatalogTable], out: &mut Vec<Finding>) {
    let names: Vec<String> = all
        .iter()
        .map(|t| format!("{}.{}", t.schema, t.table))
        .collect();
    let mut schemas: Vec<&str> = all.iter().map(|t| t.schema.as_str()).collect();
    schemas.dedup();
    let lists = [
        (
            keys::TABLE_INCLUDE_LIST,
            &config.filters.table_include,
            names.iter().map(String::as_str).collect::<Vec<_>>(),
        ),
        (
            keys::SCHEMA_INCLUDE_LIST,
            &config.filters.schema_include,
            schemas,
        ),
    ];
    for (key, patterns, candidates) in lists {
        for pattern in patterns.iter() {
            if candidates.iter().any(|c| pattern.is_match(c)) {
                continue;
            }
            let entry = pattern.as_str();
            let entry = entry
                .strip_prefix("^(?:")
                .and_then(|e| e.strip_suffix(")$"))
                .unwrap_or(entry);
            let hint = crate::util::closest_of(entry, candidates.iter().copied())
                .map(|c| format!(" (did you mean {c}?)"))
                .unwrap_or_default();
            out.push(bad(
                "include",
                Severity::Warning,
                format!("{key} entry {entry:?} matches nothing in the database{hint}: what it names is not captured"),
                "correct the entry, or create what it names before the connector starts (a table created later is captured only if the publication covers it)".into(),
            ));
        }
    }
}

fn table_findings(role: &str, tables: &[TableFacts], out: &mut Vec<Finding>) {
    if tables.is_empty() {
        out.push(bad(
            "tables",
            Severity::Warning,
            "no table matches the include and exclude lists: nothing will be captured".into(),
            "check table.include.list / schema.include.list (and their exclude lists)".into(),
        ));
        return;
    }
    let n = tables.len();
    let plural = if n == 1 { "" } else { "s" };
    out.push(ok("tables", format!("{n} captured table{plural}")));
    for t in tables.iter().filter(|t| !t.select) {
        out.push(bad(
            "select",
            Severity::Error,
            format!(
                "role {role} may not SELECT {}: the snapshot cannot read it",
                t.name
            ),
            format!("GRANT SELECT ON {} TO {};", t.sql_name, quote_ident(role)),
        ));
    }
    for t in tables
        .iter()
        .filter(|t| t.replica_identity == 'n' || (t.replica_identity == 'd' && !t.primary_key))
    {
        let what = if t.replica_identity == 'n' {
            "has REPLICA IDENTITY NOTHING"
        } else {
            "has no primary key or replica identity"
        };
        let fix = if t.replica_identity == 'n' && t.primary_key {
            format!(
                "ALTER TABLE {} REPLICA IDENTITY DEFAULT; (its primary key identifies rows)",
                t.sql_name
            )
        } else {
            format!(
                "add a primary key, or ALTER TABLE {} REPLICA IDENTITY FULL;",
                t.sql_name
            )
        };
        out.push(bad("replica_identity", Severity::Warning,
            format!(
                "{} {what}: PostgreSQL refuses UPDATE and DELETE on it in the application while the publication publishes them",
                t.name),
            fix));
    }
}

/// What to do about a publication that does not exist, when pgcdc cannot create it in `mode`
/// with `role`'s rights (`not_owned`: the captured tables the role does not own).
fn missing_publication_fix(
    name: &str,
    mode: PublicationAutocreateMode,
    role: &facts::RoleFacts,
    not_owned: &[&str],
) -> Option<String> {
    match mode {
        PublicationAutocreateMode::Disabled => Some(format!(
            "CREATE PUBLICATION {} FOR TABLE ... (the captured tables); publication.autocreate.mode=disabled does not create it",
            quote_ident(name)
        )),
        PublicationAutocreateMode::AllTables if !role.superuser => Some(format!(
            "CREATE PUBLICATION {} FOR ALL TABLES; as a superuser (pgcdc's role cannot: FOR ALL TABLES needs one), or use publication.autocreate.mode=filtered",
            quote_ident(name)
        )),
        PublicationAutocreateMode::Filtered
            if !role.superuser && (!role.create_on_database || !not_owned.is_empty()) =>
        {
            let not_owned = if not_owned.is_empty() {
                "none".to_string()
            } else {
                not_owned.join(", ")
            };
            Some(format!(
                "creating the publication needs CREATE on the database and ownership of every captured table; not owned: {}. Create it as the owner: CREATE PUBLICATION {} FOR TABLE ...",
                not_owned,
                quote_ident(name)
            ))
        }
        _ => None,
    }
}

fn publication_findings(
    config: &ConnectorConfig,
    role: &facts::RoleFacts,
    tables: &[TableFacts],
    publication: Option<(bool, Vec<String>)>,
    out: &mut Vec<Finding>,
) {
    let name = &config.publication_name;
    let mode = config.publication_autocreate_mode;
    let not_owned: Vec<&str> = tables
        .iter()
        .filter(|t| !t.owner)
        .map(|t| t.name.as_str())
        .collect();
    let Some((all_tables, published)) = publication else {
        out.push(
            match missing_publication_fix(name, mode, role, &not_owned) {
                Some(fix) => bad(
                    "publication",
                    Severity::Error,
                    format!("publication {name} does not exist and pgcdc cannot create it"),
                    fix,
                ),
                None => ok(
                    "publication",
                    format!("publication {name} does not exist; pgcdc creates it at start"),
                ),
            },
        );
        return;
    };
    if all_tables {
        out.push(ok(
            "publication",
            format!("publication {name} publishes all tables"),
        ));
        return;
    }
    let missing: Vec<&str> = tables
        .iter()
        .map(|t| t.name.as_str())
        .filter(|t| !published.iter().any(|p| p == t))
        .collect();
    let extra: Vec<&str> = published
        .iter()
        .map(String::as_str)
        .filter(|p| !tables.iter().any(|t| t.name == *p))
        .collect();
    if !missing.is_empty() {
        let realigned = mode == PublicationAutocreateMode::Filtered;
        out.push(if realigned && (role.superuser || not_owned.is_empty()) {
            ok(
                "publication",
                format!("publication {name} lacks {}; pgcdc adds them at start (filtered)", missing.join(", ")))
        } else {
            bad(
                "publication",
                Severity::Error,
                format!(
                    "publication {name} does not publish captured tables {}: their changes would never arrive",
                    missing.join(", ")
                ),
                format!("ALTER PUBLICATION {} ADD TABLE {};", quote_ident(name), sql_names(tables, &missing)))
        });
    }
    if !extra.is_empty() {
        out.push(bad(
            "publication",
            Severity::Warning,
            format!(
                "publication {name} also publishes {}, which the include lists leave out: the server decodes and sends their changes for nothing",
                extra.join(", ")
            ),
            format!(
                "ALTER PUBLICATION {} DROP TABLE {}; (or widen the include lists)",
                quote_ident(name),
                extra.join(", "))));
    }
    if missing.is_empty() && extra.is_empty() {
        out.push(ok(
            "publication",
            format!("publication {name} publishes exactly the captured tables"),
        ));
    }
}

async fn slot_findings(
    config: &ConnectorConfig,
    sql: &Client,
    server: &ServerFacts,
    out: &mut Vec<Finding>,
) -> crate::error::Result<()> {
    let name = &config.slot_name;
    let Some(slot) = setup::find_slot(sql, name, server.version_num).await? else {
        out.push(ok(
            "slot",
            format!("slot {name} does not exist; pgcdc creates it at start (snapshot.mode decides the snapshot)")));
        return Ok(());
    };
    let drop_it = format!(
        "SELECT pg_drop_replication_slot('{name}'); then start with a snapshot.mode that takes a new snapshot");
    let before = out.len();
    if slot.plugin.as_deref() != Some("pgoutput") {
        let plugin = match slot.plugin.as_deref() {
            None | Some("") => "no plugin (a physical slot)".to_string(),
            Some(p) => format!("plugin {p}"),
        };
        out.push(bad(
            "slot",
            Severity::Error,
            format!("slot {name} uses {plugin}, not pgoutput"),
            drop_it.clone(),
        ));
    }
    let logical = slot.plugin.as_deref().is_some_and(|p| !p.is_empty());
    if logical && slot.database.as_deref() != Some(config.database.dbname.as_str()) {
        out.push(bad(
            "slot",
            Severity::Error,
            format!(
                "slot {name} belongs to database {}, not {}",
                slot.database.unwrap_or_default(),
                config.database.dbname
            ),
            "set slot.name to a slot of this database (each database needs its own)".into(),
        ));
    }
    if slot.active {
        out.push(bad(
            "slot",
            Severity::Warning,
            format!(
                "slot {name} is in use by walsender pid {}: another pgcdc or Debezium streams from it, and this connector waits for it (slot.max.retries)",
                slot.active_pid.unwrap_or(0)
            ),
            "stop the other connector, or give this one its own slot.name".into()));
    }
    match slot.wal_status.as_deref() {
        Some("lost") => out.push(bad(
            "slot",
            Severity::Error,
            format!(
                "slot {name} was invalidated (wal_status = lost): the changes since its position are gone"
            ),
            drop_it.clone(),
        )),
        Some("unreserved") => out.push(bad(
            "slot",
            Severity::Warning,
            format!(
                "slot {name} is about to lose WAL it needs (wal_status = unreserved, past max_slot_wal_keep_size)"
            ),
            "start the connector now so it catches up, or raise max_slot_wal_keep_size".into(),
        )),
        _ => {}
    }
    if let Some(reason) = facts::slot_invalidation(sql, name, server.version_num).await? {
        out.push(bad(
            "slot",
            Severity::Error,
            format!("slot {name} was invalidated ({reason})"),
            drop_it,
        ));
    }
    let lag = match (server.current_wal, slot.confirmed_flush) {
        (Some(Lsn(now)), Some(Lsn(at))) => {
            format!(", {} bytes behind the server's WAL", now.saturating_sub(at))
        }
        _ => String::new(),
    };
    if out.len() == before {
        out.push(ok("slot", format!("slot {name} exists (pgoutput){lag}")));
    }
    Ok(())
}

/// The Kafka checks; the topic checks need the captured tables (`None` when PostgreSQL could
/// not be read, and then they are skipped, saying so).
async fn kafka(config: &ConnectorConfig, tables: Option<&[TableFacts]>, out: &mut Vec<Finding>) {
    let tracker = Arc::new(AckTracker::new(Lsn(0)));
    let sink = match KafkaSink::new(&config.kafka, tracker, None) {
        Ok(s) => s,
        Err(e) => {
            out.push(bad(
                "kafka",
                Severity::Error,
                e.one_line(),
                e.kind().policy().fix.to_string(),
            ));
            return;
        }
    };
    if let Err(e) = sink.check_connection(Duration::from_secs(15)).await {
        let what =
            "the brokers run and bootstrap.servers reaches them from here, with the security settings (security.protocol, sasl.*, ssl.*) they expect";
        out.push(bad(
            "kafka",
            Severity::Error,
            e.one_line(),
            unreachable_fix(&e, what),
        ));
        return;
    }
    out.push(ok(
        "kafka",
        format!("Kafka at {} answers", config.kafka.bootstrap_servers),
    ));
    let Some(tables) = tables else {
        out.push(ok(
            "topics",
            "not checked: the captured tables could not be read from PostgreSQL",
        ));
        return;
    };
    let keyless: Vec<String> = tables
        .iter()
        .filter(|t| !t.primary_key)
        .map(|t| t.name.clone())
        .collect();
    let topics: Vec<String> = tables
        .iter()
        .map(|t| format!("{}.{}", config.topic_prefix, t.name))
        .collect();
    let policies = match sink.admin().topic_cleanup_policies(&topics).await {
        Ok(p) => p,
        Err(e) => {
            out.push(bad(
                "topics",
                Severity::Error,
                e.one_line(),
                e.kind().policy().fix.to_string(),
            ));
            return;
        }
    };
    topic_findings(
        &policies,
        &keyless,
        config,
        sink.admin().creates_topics(),
        out,
    );
}

/// The SQL names of the tables among `tables` named in `names`, comma separated.
fn sql_names(tables: &[TableFacts], names: &[&str]) -> String {
    tables
        .iter()
        .filter(|t| names.contains(&t.name.as_str()))
        .map(|t| t.sql_name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The fix for a connection that failed: what to check for a connection error (the run's
/// fix, "pgcdc retries", does not help a preflight), the error kind's fix otherwise.
fn unreachable_fix(e: &crate::error::Error, what: &str) -> String {
    if e.kind() == crate::error::ErrorKind::Connection {
        format!("check that {what}")
    } else {
        e.kind().policy().fix.to_string()
    }
}

fn topic_findings(
    policies: &[(String, Option<String>)],
    keyless: &[String],
    config: &ConnectorConfig,
    creates: bool,
    out: &mut Vec<Finding>,
) {
    let missing: Vec<&str> = policies
        .iter()
        .filter(|(_, p)| p.is_none())
        .map(|(t, _)| t.as_str())
        .collect();
    if !missing.is_empty() && !creates {
        out.push(bad(
            "topics",
            Severity::Error,
            format!(
                "topics {} do not exist and nothing creates them",
                missing.join(", ")
            ),
            "create them, or set topic.creation.enable=true".into(),
        ));
    }
    for (topic, policy) in policies {
        let Some(policy) = policy else { continue };
        let table = topic
            .strip_prefix(&format!("{}.", config.topic_prefix))
            .unwrap_or(topic);
        if policy.contains("compact") && keyless.iter().any(|k| k == table) {
            out.push(bad(
                "topics",
                Severity::Warning,
                format!(
                    "topic {topic} is compacted (cleanup.policy={policy}) but table {table} has no key: Kafka refuses its records and tombstones without a key"
                ),
                format!(
                    "give {table} a primary key (or message.key.columns), or set cleanup.policy=delete on {topic}")));
        }
    }
    out.push(ok(
        "topics",
        format!(
            "{} table topics checked ({} missing, {}); routed topics (transforms) are not checked",
            policies.len(),
            missing.len(),
            if creates {
                "created when needed"
            } else {
                "none created automatically"
            }
        ),
    ));
}
