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

/// The query and its parameters, or `None` when a key value is missing from the tuple.
fn query(
    table: &TableSchema,
    tuple: &Tuple,
    columns: &[(usize, usize)],
) -> Option<(String, Vec<KeyParam>)> {
    let select = columns
        .iter()
        .map(|&(_, i)| format!("{}::text", quote_ident(&table.columns[i].name)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    for (n, &k) in table.key.iter().enumerate() {
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
            let Some((sql, params)) = query(table, tuple, &columns) else {
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
