//! Relation messages into the relation cache: the shape of each captured table, from the
//! Relation message plus what the catalog says (nullability, defaults, key, type details).
//!
//! The catalog is read through the [`Catalog`] seam: a SQL connection in production
//! ([`tokio_postgres::Client`]), a fixed table in unit tests. A relation the filters leave
//! out is cached as `None`, so its changes are dropped without a lookup; a change whose
//! relation was never announced is a protocol error.

use std::future::Future;
use std::sync::Arc;

use tokio_postgres::Client;

use crate::error::{Error, Result};
use crate::pg::pgoutput::Relation;
use crate::pg::relation::{self, TableCatalog, TableSchema};
use crate::sink::Sink;

use super::processor::Processor;

/// Where the processor reads what the catalog says about a relation.
pub trait Catalog: Send {
    /// The catalog facts of `relation` (columns in attribute order, key column names, the
    /// types among `type_oids` that need a lookup, and with `source_types` every column
    /// type's `pg_type` row). An empty column list means the table is gone from the catalog.
    fn table_catalog(
        &mut self,
        relation: &Relation,
        type_oids: &[u32],
        source_types: bool,
    ) -> impl Future<Output = Result<TableCatalog>> + Send;

    /// Runs a re-select query of `post.processors` (see [`super::reselect`]) with its key
    /// parameters: the selected columns as text (`None` for NULL), or `None` when no row has
    /// the key. Errors: the query fails.
    fn reselect(
        &mut self,
        query: &str,
        params: &[super::reselect::KeyParam],
    ) -> impl Future<Output = Result<Option<Vec<Option<String>>>>> + Send;

    /// Runs `sql` (one statement, autocommit) and returns its rows as text (`None` is NULL):
    /// the incremental snapshot's watermarks, key and chunk queries. Errors: the statement
    /// fails.
    fn query_text(
        &mut self,
        sql: &str,
    ) -> impl Future<Output = Result<Vec<Vec<Option<String>>>>> + Send;

    /// The captured table `schema.table` as a snapshot reads it (its schema from the catalog
    /// and its published column names), or `None` when it does not exist or is not captured.
    fn captured_table(
        &mut self,
        config: &crate::config::ConnectorConfig,
        schema: &str,
        table: &str,
    ) -> impl Future<Output = Result<Option<(TableSchema, Vec<String>)>>> + Send;

    /// What a new statement's snapshot sees now and the WAL insert position (see
    /// [`crate::pg::snapshot::visibility`]), on a server of version `version_num`.
    fn visibility(
        &mut self,
        version_num: u32,
    ) -> impl Future<Output = Result<crate::pg::snapshot::Visibility>> + Send;

    /// The captured tables, `schema.table`, in the order Debezium's schema lists them (an
    /// incremental snapshot of several tables reads them in this order): Java `HashMap` order
    /// of the names, filled in catalog (OID) order.
    fn captured_tables(
        &mut self,
        config: &crate::config::ConnectorConfig,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;
}

impl Catalog for Client {
    async fn table_catalog(
        &mut self,
        relation: &Relation,
        type_oids: &[u32],
        source_types: bool,
    ) -> Result<TableCatalog> {
        relation::read_table_catalog(self, relation.id, type_oids, source_types).await
    }

    async fn reselect(
        &mut self,
        query: &str,
        params: &[super::reselect::KeyParam],
    ) -> Result<Option<Vec<Option<String>>>> {
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
            .collect();
        let rows = self.query(query, &refs).await?;
        Ok(rows.first().map(|row| {
            (0..row.len())
                .map(|i| row.get::<_, Option<String>>(i))
                .collect()
        }))
    }

    async fn query_text(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let mut rows = Vec::new();
        for m in self.simple_query(sql).await? {
            if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
            }
        }
        Ok(rows)
    }

    async fn captured_table(
        &mut self,
        config: &crate::config::ConnectorConfig,
        schema: &str,
        table: &str,
    ) -> Result<Option<(TableSchema, Vec<String>)>> {
        let tables = crate::pg::setup::captured_tables(self, config).await?;
        let Some(t) = tables
            .iter()
            .find(|t| t.schema == schema && t.table == table)
        else {
            return Ok(None);
        };
        let source_types = config.records.columns.needs_source_types();
        let (published, catalog) =
            relation::read_published_table(self, t.oid, source_types).await?;
        let schema = relation::build_table(config, t.oid, schema, table, &published, &catalog)?;
        Ok(Some((schema, published.into_iter().map(|p| p.0).collect())))
    }

    async fn visibility(&mut self, version_num: u32) -> Result<crate::pg::snapshot::Visibility> {
        crate::pg::snapshot::visibility(self, version_num).await
    }

    async fn captured_tables(
        &mut self,
        config: &crate::config::ConnectorConfig,
    ) -> Result<Vec<String>> {
        let mut tables = crate::pg::setup::captured_tables(self, config).await?;
        tables.sort_by_key(|t| t.oid);
        let names: Vec<String> = tables
            .into_iter()
            .map(|t| format!("{}.{}", t.schema, t.table))
            .collect();
        let order = crate::util::java_hash_map_order(
            names.iter().map(String::as_str),
            crate::util::JAVA_HASH_MAP_INITIAL_CAPACITY,
        );
        Ok(order.into_iter().map(|i| names[i].clone()).collect())
    }
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// A Relation message: builds the table's schema (or caches `None` when not captured).
    pub(super) async fn relation(&mut self, rel: Relation) -> Result<()> {
        if !self.config.filters.is_captured(&rel.namespace, &rel.name) {
            self.relations.insert(rel.id, None);
            return Ok(());
        }
        let published: Vec<(String, u32, i32)> = rel
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.type_oid, c.type_modifier))
            .collect();
        let oids: Vec<u32> = published.iter().map(|p| p.1).collect();
        let needs_source_types = self.config.records.columns.needs_source_types();
        let mut catalog = self
            .catalog
            .table_catalog(&rel, &oids, needs_source_types)
            .await?;
        if catalog.columns.is_empty() {
            // The table is gone from the catalog (dropped after these changes were written):
            // fall back to the key flags of the Relation message, which are the replica
            // identity columns at the time of the change.
            tracing::warn!(
                relation = %format!("{}.{}", rel.namespace, rel.name),
                "table no longer exists in the catalog; using the replica identity of the Relation message as key, without NOT NULL or default information"
            );
            catalog.key = rel
                .columns
                .iter()
                .filter(|c| c.is_key)
                .map(|c| c.name.clone())
                .collect();
        }
        let table = relation::build_table(
            &self.config,
            rel.id,
            &rel.namespace,
            &rel.name,
            &published,
            &catalog,
        )?;
        tracing::debug!(relation = %table.full_name(), columns = table.columns.len(), key = table.key.len(),
            "relation");
        self.relations.insert(rel.id, Some(Arc::new(table)));
        Ok(())
    }

    /// The cached table of `relation_id`: `None` when it is not captured; an error when no
    /// Relation message announced it.
    pub(super) fn table(&self, relation_id: u32) -> Result<Option<Arc<TableSchema>>> {
        match self.relations.get(&relation_id) {
            Some(t) => Ok(t.clone()),
            None => Err(Error::protocol(format!(
                "change for relation OID {relation_id} arrived before its Relation message"
            ))),
        }
    }
}
