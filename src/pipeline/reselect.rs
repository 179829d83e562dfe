//! Debezium's `ReselectColumnsPostProcessor` (`post.processors`): a streamed insert or update
//! whose row holds unchanged TOASTed values (the `unavailable.value.placeholder`) or nulls gets
//! those columns read again from the table by the row's key, so consumers see real values
//! without `REPLICA IDENTITY FULL`.
//!
//! As in Debezium 3.6.1: only `c` and `u` events of tables with a key; a null field whose
//! schema has a default is not re-read (Connect reads it as the default); columns are chosen
//! by `reselect.columns.include.list` / `exclude.list` on `<schema>.<table>:<column>`; the
//! query is `SELECT <columns> FROM <table> WHERE <key> = <value> [AND ...]` on the connector's
//! SQL connection (`database.query.timeout.ms` applies); a missing row or a failed query is a
//! warning that keeps the event's values (`reselect.error.handling.mode=warn`) or stops the
//! connector (`fail`). The values are converted as snapshot values are, then through the
//! column's mapper (`column.mask.*`, `column.truncate.*`).
//!
//! Consistency: the query reads the row as it is now, not as it was at the change; a later
//! change of the same row can show through (Debezium's behaviour). Cost: one indexed key lookup
//! per event that needs one, on the same connection, in stream order; events without
//! placeholders or nulls in the chosen columns cost nothing.

use bytes::{Bytes, BytesMut};
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};

use crate::config::ReselectConfig;
use crate::error::{Error, Result};
use crate::event::{ChangeEvent, Op, Value};
use crate::pg::pgoutput::{Tuple, TupleValue};
use crate::pg::relation::TableSchema;
use crate::sink::Sink;
use crate::util::quote_ident;

use super::processor::Processor;
use super::relations::Catalog;

/// A key value as the query parameter it becomes: the text of a text tuple (cast to the
/// column's type in SQL), or the binary send format of a binary tuple (sent as the column's
/// type).
#[derive(Debug, Clone)]
pub enum KeyParam {
    /// Text output of the type.
    Text(String),
    /// Binary send format.
    Binary(Bytes),
}

impl ToSql for KeyParam {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            KeyParam::Text(t) => out.extend_from_slice(t.as_bytes()),
            KeyParam::Binary(b) => out.extend_from_slice(b),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// The columns (tuple indices) of `after` (a value row) that `r` re-selects.
fn columns_to_reselect(
    r: &ReselectConfig,
    table: &TableSchema,
    after: &[Value],
    opts: &crate::config::values::ValueOptions,
) -> Vec<(usize, usize)> {
    let value_index = |j: usize| {
        if table.identity_value {
            j
        } else {
            table.value_columns[j]
        }
    };
    after
        .iter()
        .enumerate()
        .filter_map(|(j, v)| {
            let i = value_index(j);
            let col = table.columns.get(i)?;
            let unavailable = r.unavailable
                && !v.is_null()
                && col.ty.unavailable_placeholder(opts).as_ref() == Some(v);
            let null = r.nulls && v.is_null() && col.default.is_none();
            let chosen = (unavailable || null)
                && r.selects(&table.descriptor.schema, &table.descriptor.table, &col.name);
            chosen.then_some((j, i))
        })
        .collect()
}

/// The columns a re-select finds the row by: the table's primary key (else its first unique
/// index), or with `reselect.use.event.key` the event key's columns (`message.key.columns`
/// may make them others), as Debezium does.
fn lookup_key<'t>(r: &ReselectConfig, table: &'t TableSchema) -> &'t [usize] {
    if r.use_event_key {
        &table.key
    } else {
        &table.primary_key
    }
}

/// The query finding the row by the columns `key` and its parameters, or `None` when a key
/// value is missing from the tuple.
fn query(
    table: &TableSchema,
    tuple: &Tuple,
    columns: &[(usize, usize)],
    key: &[usize],
) -> Option<(String, Vec<KeyParam>)> {
    let select = columns
        .iter()
        .map(|&(_, i)| format!("{}::text", quote_ident(&table.columns[i].name)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    for (n, &k) in key.iter().enumerate() {
        let col = &table.columns[k];
        let name = quote_ident(&col.name);
        match tuple.get(k)? {
            TupleValue::Text(b) => {
                params.push(KeyParam::Text(String::from_utf8_lossy(b).into_owned()));
                conditions.push(format!(
                    "{name} = CAST(${}::text AS {})",
                    n + 1,
                    col.type_name
                ));
            }
            TupleValue::Binary(b) => {
                params.push(KeyParam::Binary(b.clone()));
                conditions.push(format!("{name} = ${}", n + 1));
            }
            TupleValue::Null | TupleValue::UnchangedToast => return None,
        }
    }
    let from = format!(
        "{}.{}",
        quote_ident(&table.descriptor.schema),
        quote_ident(&table.descriptor.table)
    );
    Some((
        format!(
            "SELECT {select} FROM {from} WHERE {}",
            conditions.join(" AND ")
        ),
        params,
    ))
}

impl<S: Sink, C: Catalog> Processor<S, C> {
    /// Applies the configured ReselectColumnsPostProcessors to `ev`, a change of `table` whose
    /// new tuple is `tuple`.
    pub(super) async fn reselect(
        &mut self,
        table: &TableSchema,
        tuple: &Tuple,
        ev: &mut ChangeEvent,
    ) -> Result<()> {
        if self.config.reselect.is_empty()
            || table.key.is_empty()
            || !matches!(ev.op, Op::Create | Op::Update)
        {
            return Ok(());
        }
        let config = self.config.clone();
        for r in &config.reselect {
            let Some(after) = ev.after.as_mut() else {
                return Ok(());
            };
            let columns = columns_to_reselect(r, table, after, &config.values);
            if columns.is_empty() {
                continue;
            }
            let key = lookup_key(r, table);
            if key.is_empty() {
                let why = format!(
                    "post processor {:?} cannot re-select columns of {}: the table has no primary key (set post.processors.{}.reselect.use.event.key=true to find rows by the event key)",
                    r.name,
                    table.full_name(),
                    r.name
                );
                if r.fail {
                    return Err(Error::conversion(why));
                }
                tracing::warn!(relation = %table.full_name(), "{why}; the event keeps its values");
                continue;
            }
            let Some((sql, params)) = query(table, tuple, &columns, key) else {
                continue;
            };
            let names = || {
                columns
                    .iter()
                    .map(|&(_, i)| table.columns[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            match self.catalog.reselect(&sql, &params).await {
                Ok(Some(values)) => {
                    for (&(j, i), v) in columns.iter().zip(values) {
                        after[j] = match v {
                            None => Value::Null,
                            Some(text) => table.value_from_text(
                                i,
                                &text,
                                &config.values,
                                config.converting_failure,
                            )?,
                        };
                    }
                }
                Ok(None) if r.fail => {
                    return Err(Error::conversion(format!(
                        "post processor {:?} found no row of {} with the event's key to re-select {} (reselect.error.handling.mode=fail)",
                        r.name,
                        table.full_name(),
                        names()
                    )))
                }
                Ok(None) => tracing::warn!(
                    relation = %table.full_name(),
                    columns = %names(),
                    "re-select found no row with the event's key (deleted since?): the event keeps its values"
                ),
                Err(e) if r.fail => {
                    return Err(e.with_context(&format!(
                        "post processor {:?} could not re-select {} of {}",
                        r.name,
                        names(),
                        table.full_name()
                    )))
                }
                Err(e) => tracing::warn!(
                    relation = %table.full_name(),
                    columns = %names(),
                    error = %e.one_line(),
                    "re-select failed: the event keeps its values"
                ),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::seed_with;
    use crate::config::{ConnectorConfig, RESELECT_COLUMNS};
    use crate::pg::relation::{build_table, CatalogColumn, TableCatalog};

    #[test]
    fn the_row_is_found_by_the_primary_key_or_with_use_event_key_by_the_event_key() {
        let (config, _) = ConnectorConfig::from_map(&seed_with(&[
            ("message.key.columns", "s.t:code"),
            ("post.processors", "by_pk,by_event_key"),
            ("post.processors.by_pk.type", RESELECT_COLUMNS),
            ("post.processors.by_event_key.type", RESELECT_COLUMNS),
            (
                "post.processors.by_event_key.reselect.use.event.key",
                "true",
            ),
        ]))
        .unwrap();
        let col = |name: &str| CatalogColumn {
            name: name.into(),
            type_oid: 25,
            typmod: -1,
            not_null: true,
            default_expr: None,
            type_name: "text".into(),
            generated: false,
        };
        let catalog = TableCatalog {
            columns: vec![col("id"), col("code"), col("big")],
            key: vec!["id".into()],
            ..Default::default()
        };
        let published: Vec<(String, u32, i32)> = catalog
            .columns
            .iter()
            .map(|c| (c.name.clone(), 25, -1))
            .collect();
        let table = build_table(&config, 1, "s", "t", &published, &catalog).unwrap();
        assert_eq!(
            table.key,
            [1],
            "message.key.columns makes code the event key"
        );
        assert_eq!(table.primary_key, [0]);
        let tuple = vec![
            TupleValue::Text("1".into()),
            TupleValue::Text("a".into()),
            TupleValue::UnchangedToast,
        ];
        let big = [(2, 2)];
        let (sql, params) = query(
            &table,
            &tuple,
            &big,
            lookup_key(&config.reselect[0], &table),
        )
        .unwrap();
        assert_eq!(
            sql,
            r#"SELECT "big"::text FROM "s"."t" WHERE "id" = CAST($1::text AS text)"#
        );
        assert!(matches!(&params[..], [KeyParam::Text(v)] if v == "1"));
        let (sql, params) = query(
            &table,
            &tuple,
            &big,
            lookup_key(&config.reselect[1], &table),
        )
        .unwrap();
        assert_eq!(
            sql,
            r#"SELECT "big"::text FROM "s"."t" WHERE "code" = CAST($1::text AS text)"#
        );
        assert!(matches!(&params[..], [KeyParam::Text(v)] if v == "a"));
    }
}
