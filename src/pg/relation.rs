//! Relation cache: the shape of each captured table, from pgoutput Relation messages plus
//! the catalog (nullability, defaults, key columns, type names), and the conversion of tuples
//! into Connect row values.
//!
//! The key is the primary key in key order; without one, the first unique index (by index
//! name) with no expressions and no predicate; without that, no key (null Kafka key).
//! A column whose type has no mapping is an error naming the table, column and type: a
//! silently dropped or wrong value is never emitted.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_postgres::Client;

use crate::config::values::{DecimalMode, ValueOptions};
use crate::config::{ConnectorConfig, ConvertingFailureMode};
use crate::error::{Error, Result};
use crate::event::envelope::{table_descriptor_from_fields, TableNames};
use crate::event::{Schema, TableDescriptor, Value};
use crate::pg::columns::{self, PlanColumn, SourceColumn, ValueMapper};
use crate::pg::pgoutput::{Tuple, TupleValue};
use crate::pg::types::array::MULTI_DIMENSIONAL;
use crate::pg::types::recv::{self, Wire};
use crate::pg::types::{parse_default, ColumnType, TypeCatalog, TypeInfo};

/// One column of a captured table.
#[derive(Debug, Clone)]
pub struct ColumnDef {
    /// Column name.
    pub name: String,
    /// Representation.
    pub ty: ColumnType,
    /// `false` for NOT NULL columns.
    pub optional: bool,
    /// Schema default (from the column default, per Debezium's rules).
    pub default: Option<Value>,
    /// `format_type` name, for messages.
    pub type_name: String,
    /// The layout of the column's binary send format (read only for binary tuples).
    pub wire: Wire,
}

/// A captured table: its descriptor and column definitions.
#[derive(Debug, Clone)]
pub struct TableSchema {
    /// Relation OID.
    pub relation_id: u32,
    /// Names, topic and Connect schemas.
    pub descriptor: Arc<TableDescriptor>,
    /// Columns in tuple order.
    pub columns: Vec<ColumnDef>,
    /// Indices of the key columns.
    pub key: Vec<usize>,
    /// Indices of the table's own key columns (primary key, else first unique index),
    /// whatever `message.key.columns` makes the event key.
    pub primary_key: Vec<usize>,
    /// Indices of the columns in the value (`column.include.list` / `column.exclude.list`).
    pub value_columns: Vec<usize>,
    /// Per value column: its value mapper (`column.mask.*`, `column.truncate.*`).
    pub mappers: Vec<Option<ValueMapper>>,
    /// `true` when the value is the whole row, unchanged.
    pub identity_value: bool,
    /// Per column, in tuple order: `true` when neither the key nor the value uses it (its
    /// binary value is never read).
    pub unused: Vec<bool>,
}

/// Column facts from the catalog.
#[derive(Debug, Clone)]
pub struct CatalogColumn {
    /// Column name.
    pub name: String,
    /// Type OID.
    pub type_oid: u32,
    /// Type modifier.
    pub typmod: i32,
    /// NOT NULL.
    pub not_null: bool,
    /// Default expression (`pg_get_expr`).
    pub default_expr: Option<String>,
    /// `format_type(atttypid, atttypmod)`.
    pub type_name: String,
    /// Generated column (not published by pgoutput before PostgreSQL 18).
    pub generated: bool,
}

/// Reads the columns of relation `relid` in attribute order.
pub async fn catalog_columns(client: &Client, relid: u32) -> Result<Vec<CatalogColumn>> {
    let rows = client
        .query(
            "SELECT a.attname::text, a.atttypid::int8, a.atttypmod, a.attnotnull, \
                    pg_get_expr(d.adbin, d.adrelid), format_type(a.atttypid, a.atttypmod), \
                    a.attgenerated::text <> '' \
             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            &[&(relid as i64)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| CatalogColumn {
            name: r.get(0),
            type_oid: r.get::<_, i64>(1) as u32,
            typmod: r.get(2),
            not_null: r.get(3),
            default_expr: r.get(4),
            type_name: r.get(5),
            generated: r.get(6),
        })
        .collect())
}

/// The key column names of relation `relid`: primary key, else first unique index by name.
pub async fn catalog_key(client: &Client, relid: u32) -> Result<Vec<String>> {
    let rows = client
        .query(
            "SELECT c.relname::text, i.indisprimary, array_agg(a.attname::text ORDER BY k.ord) \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
             WHERE i.indrelid = $1::int8::oid AND (i.indisprimary OR (i.indisunique AND i.indisvalid \
                   AND i.indpred IS NULL AND i.indexprs IS NULL)) \
             GROUP BY c.relname, i.indisprimary ORDER BY i.indisprimary DESC, c.relname",
            &[&(relid as i64)],
        )
        .await?;
    Ok(rows
        .first()
        .map(|r| r.get::<_, Vec<String>>(2))
        .unwrap_or_default())
}

/// Reads what the catalog says about `oids` that are not built-in mapped types, following
/// domains to their base types and arrays to their element types.
pub async fn catalog_types(client: &Client, oids: &[u32]) -> Result<TypeCatalog> {
    read_pg_types(client, oids, false).await
}

/// Reads the `pg_type` rows (and enum labels) of `oids`, following domains to their base types
/// and arrays to their element types. Built-in mapped types are skipped unless `builtins`.
pub async fn read_pg_types(client: &Client, oids: &[u32], builtins: bool) -> Result<TypeCatalog> {
    let wanted_type = |o: u32| builtins || ColumnType::from_oid(o, -1).is_none();
    let mut types = TypeCatalog::new();
    let mut wanted: Vec<i64> = oids
        .iter()
        .filter(|o| wanted_type(**o))
        .map(|o| *o as i64)
        .collect();
    for _ in 0..8 {
        wanted.retain(|o| !types.contains_key(&(*o as u32)));
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            break;
        }
        let rows = client
            .query(
                "SELECT t.oid::int8, t.typname::text, t.typtype::text, t.typcategory::text, \
                        t.typbasetype::int8, t.typtypmod, t.typelem::int8, \
                        ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) \
                 FROM pg_type t WHERE t.oid::int8 = ANY($1)",
                &[&wanted],
            )
            .await?;
        wanted.clear();
        for r in rows {
            let info = TypeInfo {
                name: r.get(1),
                typtype: r.get::<_, String>(2).bytes().next().unwrap_or(b'b'),
                category: r.get::<_, String>(3).bytes().next().unwrap_or(b'U'),
                base_oid: r.get::<_, i64>(4) as u32,
                base_typmod: r.get(5),
                elem_oid: r.get::<_, i64>(6) as u32,
                enum_labels: r.get(7),
            };
            for next in [info.base_oid, info.elem_oid] {
                if next != 0 && wanted_type(next) {
                    wanted.push(next as i64);
                }
            }
            types.insert(r.get::<_, i64>(0) as u32, info);
        }
    }
    Ok(types)
}

/// What the catalog says about one table: its columns, key column names and the types of
/// its columns that need a catalog lookup.
#[derive(Debug, Clone, Default)]
pub struct TableCatalog {
    /// Columns in attribute order.
    pub columns: Vec<CatalogColumn>,
    /// Key column names (primary key, else first unique index).
    pub key: Vec<String>,
    /// Non-built-in types used by the columns.
    pub types: TypeCatalog,
    /// `pg_type` rows of the column types, read only when a column mapper needs the source
    /// type (see [`crate::pg::columns`]); empty otherwise.
    pub source_types: TypeCatalog,
    /// Fraction digits of the server's `lc_monetary` (the unit of MONEY in binary tuples),
    /// read when a column is MONEY; `None` otherwise (2 is assumed).
    pub money_scale: Option<u32>,
}

/// Reads columns, key and types of relation `relid`; `type_oids` are the published column
/// types (the Relation message's). With `source_types` (a column mapper needs the source
/// type), the built-in types are read too, in the same query.
pub async fn read_table_catalog(
    client: &Client,
    relid: u32,
    type_oids: &[u32],
    source_types: bool,
) -> Result<TableCatalog> {
    let columns = catalog_columns(client, relid).await?;
    complete_table_catalog(client, relid, columns, type_oids, source_types).await
}

/// For a snapshot: the columns of relation `relid` as pgoutput would publish them (`(name,
/// type OID, typmod)` in attribute order, generated columns left out) and its catalog, as
/// [`read_table_catalog`] reads it for those columns.
pub async fn read_published_table(
    client: &Client,
    relid: u32,
    source_types: bool,
) -> Result<(Vec<(String, u32, i32)>, TableCatalog)> {
    let columns = catalog_columns(client, relid).await?;
    let published: Vec<(String, u32, i32)> = columns
        .iter()
        .filter(|c| !c.generated)
        .map(|c| (c.name.clone(), c.type_oid, c.typmod))
        .collect();
    let oids: Vec<u32> = published.iter().map(|p| p.1).collect();
    let catalog = complete_table_catalog(client, relid, columns, &oids, source_types).await?;
    Ok((published, catalog))
}

/// Adds the key and the types of `type_oids` to `columns` of relation `relid`.
async fn complete_table_catalog(
    client: &Client,
    relid: u32,
    columns: Vec<CatalogColumn>,
    type_oids: &[u32],
    source_types: bool,
) -> Result<TableCatalog> {
    let key = catalog_key(client, relid).await?;
    let (types, source_types) = column_types(client, type_oids, source_types).await?;
    let has_money = type_oids
        .iter()
        .any(|&o| ColumnType::resolve(o, -1, &types) == Some(ColumnType::Money));
    let money_scale = if has_money {
        Some(money_scale(client).await?)
    } else {
        None
    };
    Ok(TableCatalog {
        columns,
        key,
        types,
        source_types,
        money_scale,
    })
}

/// Fraction digits of MONEY under the server's `lc_monetary` (what `money::numeric` keeps).
pub async fn money_scale(client: &Client) -> Result<u32> {
    let row = client
        .query_one("SELECT scale(0::money::numeric)", &[])
        .await?;
    Ok(row.get::<_, i32>(0).max(0) as u32)
}

/// The [`TableCatalog::types`] and [`TableCatalog::source_types`] of columns of `type_oids`,
/// in one query: mapped built-in types resolve before any catalog lookup, so when the source
/// types are wanted one catalog with every type serves both.
pub async fn column_types(
    client: &Client,
    type_oids: &[u32],
    source_types: bool,
) -> Result<(TypeCatalog, TypeCatalog)> {
    if source_types {
        let all = read_pg_types(client, type_oids, true).await?;
        Ok((all.clone(), all))
    } else {
        Ok((catalog_types(client, type_oids).await?, TypeCatalog::new()))
    }
}

/// Builds a table from its published columns (`(name, type OID, typmod)` in tuple order),
/// the catalog columns and the key names.
///
/// Errors: every column of a type pgcdc does not support, named at once (unless
/// `include.unknown.datatypes` or a column filter leaves it out of the value).
pub fn build_table(
    config: &ConnectorConfig,
    relation_id: u32,
    namespace: &str,
    name: &str,
    published: &[(String, u32, i32)],
    table_catalog: &TableCatalog,
) -> Result<TableSchema> {
    let (columns, field_schemas) =
        resolve_columns(config, namespace, name, published, table_catalog)?;
    let default_key = key_indices(&columns, &table_catalog.key, namespace, name);
    let rules = &config.records.columns;
    let plan_columns: Vec<PlanColumn<'_>> = field_schemas
        .iter()
        .map(|(col_name, _)| PlanColumn {
            name: col_name,
            source: rules
                .needs_source_types()
                .then(|| source_column(published, col_name, table_catalog)),
        })
        .collect();
    let plan = columns::plan(rules, namespace, name, &plan_columns, &default_key);
    let adjust = |n: &str| config.field_name_adjustment.field(n);
    let mut key_fields: Vec<(String, Schema)> = plan
        .key
        .iter()
        .map(|&i| (adjust(&field_schemas[i].0), field_schemas[i].1.clone()))
        .collect();
    let key_extra = config.topic_naming.key_field(
        &config.topic_prefix,
        &config.topic_delimiter,
        namespace,
        name,
    );
    if let Some((field, _)) = &key_extra {
        key_fields.push((
            field.clone(),
            Schema::new(crate::event::SchemaType::String, false),
        ));
    }
    let value_fields: Vec<(String, Schema)> = plan
        .value
        .iter()
        .zip(&plan.parameters)
        .map(|(&i, params)| {
            let (n, s) = &field_schemas[i];
            (adjust(n), columns::with_parameters(s.clone(), params))
        })
        .collect();
    check_adjusted_names(&field_schemas, &plan.value, &value_fields, namespace, name)?;
    let mut descriptor = table_descriptor_from_fields(
        TableNames {
            prefix: &config.topic_prefix,
            delimiter: &config.topic_delimiter,
            schema_name: namespace,
            table_name: name,
            schema_names: config.schema_name_adjustment,
            naming: &config.topic_naming,
        },
        &value_fields,
        &key_fields,
    );
    descriptor.key_extra = key_extra.map(|(_, value)| Arc::from(value));
    let unused: Vec<bool> = (0..columns.len())
        .map(|i| !plan.key.contains(&i) && !plan.value.contains(&i))
        .collect();
    if config.pgoutput_binary {
        check_binary_readable(&columns, &unused, namespace, name)?;
    }
    let identity_value = plan.is_identity(columns.len());
    Ok(TableSchema {
        unused,
        relation_id,
        descriptor: Arc::new(descriptor),
        columns,
        key: plan.key,
        primary_key: default_key,
        value_columns: plan.value,
        mappers: plan.mappers,
        identity_value,
    })
}

/// An error when `field.name.adjustment.mode` gives two columns the same field name (as
/// Debezium refuses them), naming both columns and the field.
fn check_adjusted_names(
    columns: &[(String, Schema)],
    used: &[usize],
    fields: &[(String, Schema)],
    namespace: &str,
    name: &str,
) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for (&i, (field, _)) in used.iter().zip(fields) {
        let column = columns[i].0.as_str();
        if let Some(other) = seen.insert(field, column) {
            return Err(Error::config(format!(
                "columns {other:?} and {column:?} of table {namespace}.{name} both become field {field:?} under field.name.adjustment.mode (which is avro whenever a converter is Avro): rename one, or leave one out with column.exclude.list"
            )));
        }
    }
    Ok(())
}

/// With binary tuples: an error naming every column a record uses (key or value) whose
/// binary form pgcdc cannot read.
fn check_binary_readable(
    columns: &[ColumnDef],
    unused: &[bool],
    namespace: &str,
    name: &str,
) -> Result<()> {
    let unreadable: Vec<String> = columns
        .iter()
        .zip(unused)
        .filter(|(c, unused)| !**unused && !recv::readable(&c.wire, &c.ty))
        .map(|(c, _)| c)
        .map(|c| format!("column {} has type {}", c.name, c.type_name))
        .collect();
    if unreadable.is_empty() {
        return Ok(());
    }
    Err(Error::conversion(format!(
        "table {namespace}.{name}: {}, whose binary form pgcdc cannot read: set {}=false to receive text tuples, leave the column out (column.exclude.list), or exclude the table (table.exclude.list)",
        unreadable.join(", "),
        crate::config::keys::PGOUTPUT_BINARY
    )))
}

/// `(column name, field schema)` of each column, in tuple order.
type FieldSchemas = Vec<(String, Schema)>;

/// Each published column's type, optionality and default, and its field schema; or an error
/// naming every column whose type pgcdc does not support.
fn resolve_columns(
    config: &ConnectorConfig,
    namespace: &str,
    name: &str,
    published: &[(String, u32, i32)],
    table_catalog: &TableCatalog,
) -> Result<(Vec<ColumnDef>, FieldSchemas)> {
    let (catalog, types, opts) = (&table_catalog.columns, &table_catalog.types, &config.values);
    let mut columns = Vec::with_capacity(published.len());
    let mut field_schemas = Vec::with_capacity(published.len());
    let mut unsupported: Vec<String> = Vec::new();
    for (col_name, type_oid, typmod) in published {
        let cat = catalog.iter().find(|c| &c.name == col_name);
        let type_name = cat
            .map(|c| c.type_name.clone())
            .unwrap_or_else(|| format!("type OID {type_oid}"));
        let ty = match ColumnType::resolve(*type_oid, *typmod, types) {
            Some(ty) => ty,
            // A column the value leaves out (column.exclude.list / include.list) is still in
            // every tuple: read it as text and drop it, as Debezium never converts it.
            None if config.include_unknown_datatypes
                || !config
                    .records
                    .columns
                    .includes_column(&format!("{namespace}.{name}.{col_name}")) =>
            {
                ColumnType::unknown(*type_oid, types)
            }
            None => {
                unsupported.push(format!("column {col_name} has type {type_name}"));
                continue;
            }
        };
        let optional = !cat.map(|c| c.not_null).unwrap_or(false);
        let default = cat
            .and_then(|c| c.default_expr.as_deref())
            .and_then(|e| parse_default(e, &ty, opts));
        let mut schema: Schema = ty.schema(opts).optional(optional);
        schema.default = default.clone();
        field_schemas.push((col_name.clone(), schema));
        columns.push(ColumnDef {
            name: col_name.clone(),
            ty,
            optional,
            default,
            type_name,
            wire: Wire::of(*type_oid, types, table_catalog.money_scale.unwrap_or(2)),
        });
    }
    if !unsupported.is_empty() {
        return Err(Error::conversion(format!(
            "table {namespace}.{name}: {}, which pgcdc does not support yet: set include.unknown.datatypes=true to emit such values as their text, leave the column out (column.exclude.list), exclude the table (table.exclude.list), or change the column type",
            unsupported.join(", ")
        )));
    }
    Ok((columns, field_schemas))
}

/// Indices of the key columns among `columns`. A key column that is not published is left
/// out, as Debezium does, with a warning.
fn key_indices(
    columns: &[ColumnDef],
    key_names: &[String],
    namespace: &str,
    name: &str,
) -> Vec<usize> {
    let mut key = Vec::new();
    for k in key_names {
        match columns.iter().position(|c| &c.name == k) {
            Some(i) => key.push(i),
            None => {
                tracing::warn!(table = %format!(
                    "{namespace}.{name}"), column = %k, "key column is not published; left out of the key");
            }
        }
    }
    key
}

/// The source facts (type, length, scale) of published column `col_name`.
fn source_column(
    published: &[(String, u32, i32)],
    col_name: &str,
    table_catalog: &TableCatalog,
) -> SourceColumn {
    let (oid, typmod) = published
        .iter()
        .find(|p| p.0 == col_name)
        .map(|p| (p.1, p.2))
        .unwrap_or((0, -1));
    SourceColumn::new(oid, typmod, &table_catalog.source_types)
}

/// Which image a tuple is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    /// A new row (insert, update new tuple, snapshot row).
    New,
    /// An old row or old key (update/delete old tuple): NULLs in NOT NULL columns get the
    /// column default or the type's zero value, as Debezium does.
    Old,
}

impl TableSchema {
    /// `schema.table`.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.descriptor.schema, self.descriptor.table)
    }

    /// Converts the text value of column `i` (a re-selected value, as a snapshot row's) and
    /// applies the column's value mapper when it is value column `j`.
    pub fn value_from_text(
        &self,
        i: usize,
        text: &str,
        opts: &ValueOptions,
        failure: ConvertingFailureMode,
    ) -> Result<Value> {
        let v = self.convert_text(i, text, opts, failure)?;
        let mapper = self
            .value_columns
            .iter()
            .position(|&c| c == i)
            .and_then(|j| self.mappers.get(j).cloned().flatten());
        Ok(match (mapper, self.identity_value) {
            (Some(m), false) => m.apply(v),
            _ => v,
        })
    }

    fn convert_text(
        &self,
        i: usize,
        text: &str,
        opts: &ValueOptions,
        failure: ConvertingFailureMode,
    ) -> Result<Value> {
        let col = &self.columns[i];
        col.ty.parse(text, opts).or_else(|reason| {
            // NaN and infinities in precise mode stop the connector unless `warn` is set
            // explicitly (BUG-01), as scalars and as elements of numeric arrays alike.
            let special = |t: &str| matches!(t, "NaN" | "Infinity" | "-Infinity");
            let special_numeric = opts.decimal == DecimalMode::Precise
                && match &col.ty {
                    ColumnType::Numeric { .. } => special(text),
                    ColumnType::Array(el) if matches!(**el, ColumnType::Numeric { .. }) => {
                        text.split(['{', '}', ',']).any(|e| special(e.trim()))
                    }
                    _ => false,
                };
            self.conversion_failed(i, &reason, special_numeric, failure)
        })
    }

    /// [`Self::convert_text`] for a value in binary send format. A column no record uses is
    /// not read (null); a used column whose binary form pgcdc cannot read was refused when the
    /// table was built.
    fn convert_binary(
        &self,
        i: usize,
        data: &[u8],
        opts: &ValueOptions,
        failure: ConvertingFailureMode,
    ) -> Result<Value> {
        let col = &self.columns[i];
        if self.unused.get(i).copied().unwrap_or(false) {
            return Ok(Value::Null);
        }
        recv::read(&col.wire, &col.ty, data, opts).or_else(|reason| {
            let special_numeric =
                opts.decimal == DecimalMode::Precise && recv::special_numeric(&col.wire, data);
            self.conversion_failed(i, &reason, special_numeric, failure)
        })
    }

    /// What a value of column `i` that cannot be converted (for `reason`) becomes under
    /// `event.converting.failure.handling.mode`: an error, or null with a warning.
    /// `special_numeric` marks a NaN or infinite `numeric` in precise mode.
    fn conversion_failed(
        &self,
        i: usize,
        reason: &str,
        special_numeric: bool,
        failure: ConvertingFailureMode,
    ) -> Result<Value> {
        let col = &self.columns[i];
        let msg = format!(
            "cannot convert a value of column {} ({}) of table {}: {reason}",
            col.name,
            col.type_name,
            self.full_name()
        );
        if reason == MULTI_DIMENSIONAL {
            // Debezium 3.6.1 keeps none of it (nulls, or Java object names for text), so
            // no mode may turn it into a null.
            return Err(Error::conversion(format!(
                "{msg}, and no handling mode replaces one with null (Debezium 3.6.1 loses its elements): store one dimension (or JSON) in the column, or leave the column out with column.exclude.list"
            )));
        }
        match failure {
            ConvertingFailureMode::Fail => Err(Error::conversion(msg)),
            ConvertingFailureMode::Default if special_numeric => Err(Error::conversion(format!(
                "{msg} (string gives \"NAN\", \"POSITIVE_INFINITY\", \"NEGATIVE_INFINITY\"), or set event.converting.failure.handling.mode=warn to emit null instead, as Debezium does"
            ))),
            // A NOT NULL column's schema is required: a null there is not a valid
            // record (and JsonConverter would print the column default instead).
            ConvertingFailureMode::Warn | ConvertingFailureMode::Default if !col.optional => {
                Err(Error::conversion(format!(
                    "{msg}; the column is NOT NULL, so the value cannot be replaced by null (event.converting.failure.handling.mode=warn)"
                )))
            }
            ConvertingFailureMode::Warn | ConvertingFailureMode::Default => {
                tracing::warn!(
                    "{msg}; emitting null (event.converting.failure.handling.mode=warn)"
                );
                Ok(Value::Null)
            }
        }
    }

    /// Converts a pgoutput tuple to row values. `old_full` supplies values for unchanged
    /// TOASTed columns (REPLICA IDENTITY FULL); otherwise they get the placeholder.
    pub fn row_from_tuple(
        &self,
        tuple: &Tuple,
        old_full: Option<&Tuple>,
        image: Image,
        opts: &ValueOptions,
        failure: ConvertingFailureMode,
    ) -> Result<Vec<Value>> {
        if tuple.len() != self.columns.len() {
            return Err(Error::protocol(format!(
                "tuple of table {} has {} columns but its Relation message has {}",
                self.full_name(),
                tuple.len(),
                self.columns.len()
            )));
        }
        let mut out = Vec::with_capacity(tuple.len());
        for (i, v) in tuple.iter().enumerate() {
            let value = match v {
                TupleValue::Null => Value::Null,
                TupleValue::Text(b) => {
                    let text = std::str::from_utf8(b).map_err(|_| {
                        Error::protocol(format!(
                            "column {} of table {} is not valid UTF-8", self.columns[i].name, self.full_name()))
                    })?;
                    self.convert_text(i, text, opts, failure)?
                }
                TupleValue::Binary(b) => self.convert_binary(i, b, opts, failure)?,
                TupleValue::UnchangedToast => match old_full.and_then(|o| o.get(i)) {
                    Some(TupleValue::Text(b)) => {
                        let text = std::str::from_utf8(b).map_err(|_| Error::protocol(
                            "old TOASTed value is not UTF-8"))?;
                        self.convert_text(i, text, opts, failure)?
                    }
                    Some(TupleValue::Binary(b)) => self.convert_binary(i, b, opts, failure)?,
                    _ => self.columns[i].ty.unavailable_placeholder(opts).ok_or_else(|| {
                        Error::conversion(format!(
                            "column {} ({}) of table {} is an unchanged TOASTed value that pgcdc cannot represent with a placeholder: set REPLICA IDENTITY FULL on the table",
                            self.columns[i].name,
                            self.columns[i].type_name,
                            self.full_name()
                        ))
                    })?,
                },
            };
            out.push(self.fill_required(i, value, image, opts));
        }
        Ok(out)
    }

    /// Converts a snapshot row (text values from the simple query protocol).
    pub fn row_from_text(
        &self,
        values: &[Option<&str>],
        opts: &ValueOptions,
        failure: ConvertingFailureMode,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let value = match v {
                None => Value::Null,
                Some(text) => self.convert_text(i, text, opts, failure)?,
            };
            out.push(self.fill_required(i, value, Image::New, opts));
        }
        Ok(out)
    }

    fn fill_required(&self, i: usize, value: Value, image: Image, opts: &ValueOptions) -> Value {
        let col = &self.columns[i];
        if value.is_null() && !col.optional && image == Image::Old {
            return col.default.clone().unwrap_or_else(|| col.ty.fallback(opts));
        }
        value
    }

    /// The value of a full row (all columns, tuple order): the included columns, each through
    /// its mapper. The key is taken from the full row before this.
    pub fn value_row(&self, mut row: Vec<Value>) -> Vec<Value> {
        if self.identity_value {
            return row;
        }
        let mut out = Vec::with_capacity(self.value_columns.len());
        for (&i, mapper) in self.value_columns.iter().zip(&self.mappers) {
            let v = row
                .get_mut(i)
                .map(|v| std::mem::replace(v, Value::Null))
                .unwrap_or(Value::Null);
            out.push(match mapper {
                Some(m) => m.apply(v),
                None => v,
            });
        }
        out
    }

    /// The key values of `row`, or `None` for a keyless table.
    pub fn key_of(&self, row: &[Value]) -> Option<Vec<Value>> {
        let extra = self.descriptor.key_extra.as_ref();
        if self.key.is_empty() && extra.is_none() {
            return None;
        }
        let mut key: Vec<Value> = self
            .key
            .iter()
            .map(|&i| row.get(i).cloned().unwrap_or(Value::Null))
            .collect();
        key.extend(extra.map(|x| Value::Shared(x.clone())));
        Some(key)
    }
}

/// Relation OID → captured table (`None`: seen but not captured by the filters).
pub type RelationCache = HashMap<u32, Option<Arc<TableSchema>>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn config(failure: &str) -> ConnectorConfig {
        let raw = [
            ("database.hostname", "h"),
            ("database.user", "u"),
            ("database.dbname", "d"),
            ("topic.prefix", "p"),
            ("bootstrap.servers", "k:1"),
            ("event.converting.failure.handling.mode", failure),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        ConnectorConfig::from_map(&raw).unwrap().0
    }

    fn table(config: &ConnectorConfig) -> TableSchema {
        let col = |name: &str, not_null: bool| CatalogColumn {
            name: name.into(),
            type_oid: 1700,
            typmod: -1,
            not_null,
            default_expr: None,
            type_name: "numeric".into(),
            generated: false,
        };
        let catalog = vec![col("required", true), col("optional", false)];
        let published: Vec<(String, u32, i32)> =
            catalog.iter().map(|c| (c.name.clone(), 1700, -1)).collect();
        let catalog = TableCatalog {
            columns: catalog,
            ..Default::default()
        };
        build_table(config, 1, "s", "t", &published, &catalog).unwrap()
    }

    #[test]
    fn warn_mode_nulls_an_unconvertible_value_only_in_a_nullable_column() {
        let c = config("warn");
        let t = table(&c);
        let row = t
            .row_from_text(&[Some("1"), Some("NaN")], &c.values, c.converting_failure)
            .unwrap();
        assert_eq!(row[1], Value::Null);
        let err = t
            .row_from_text(&[Some("NaN"), Some("1")], &c.values, c.converting_failure)
            .unwrap_err();
        assert!(
            err.message()
                .contains("column required (numeric) of table s.t"),
            "{}",
            err.message()
        );
        assert!(err.message().contains("NOT NULL"), "{}", err.message());
    }

    #[test]
    fn nan_in_a_numeric_array_follows_the_scalar_rule() {
        let array_table = |c: &ConnectorConfig| {
            let catalog = TableCatalog {
                columns: vec![CatalogColumn {
                    name: "a".into(),
                    type_oid: 1231,
                    typmod: -1,
                    not_null: false,
                    default_expr: None,
                    type_name: "numeric[]".into(),
                    generated: false,
                }],
                ..Default::default()
            };
            build_table(c, 1, "s", "t", &[("a".into(), 1231, -1)], &catalog).unwrap()
        };
        // Left at its default, the mode stops on NaN or an infinity in precise mode (BUG-01).
        let c = config("");
        let t = array_table(&c);
        for text in ["{1,NaN}", "{Infinity}", "{-Infinity,NULL}"] {
            let err = t
                .row_from_text(&[Some(text)], &c.values, c.converting_failure)
                .unwrap_err();
            assert!(
                err.message()
                    .contains("event.converting.failure.handling.mode=warn"),
                "{text}: {}",
                err.message()
            );
        }
        // Set to warn explicitly, it emits null as Debezium does.
        let c = config("warn");
        let t = array_table(&c);
        let row = t
            .row_from_text(&[Some("{1,NaN}")], &c.values, c.converting_failure)
            .unwrap();
        assert_eq!(row[0], Value::Null);
        // A multi-dimensional array stops the connector in every mode, naming the column.
        for mode in ["warn", "fail", ""] {
            let c = config(mode);
            let t = array_table(&c);
            for text in ["{{1,2},{3,4}}", "[0:1][1:1]={{1},{2}}"] {
                let err = t
                    .row_from_text(&[Some(text)], &c.values, c.converting_failure)
                    .unwrap_err();
                let m = err.message();
                assert!(
                    m.contains("column a (numeric[]) of table s.t")
                        && m.contains(MULTI_DIMENSIONAL)
                        && m.contains("column.exclude.list"),
                    "{mode} {text}: {m}"
                );
            }
        }
    }

    #[test]
    fn fail_mode_stops_on_any_unconvertible_value() {
        let c = config("fail");
        let t = table(&c);
        assert!(t
            .row_from_text(&[Some("1"), Some("NaN")], &c.values, c.converting_failure)
            .is_err());
    }

    #[test]
    fn every_unsupported_column_of_a_table_is_named_at_once() {
        let c = config("warn");
        let published = vec![
            ("a".to_string(), 601u32, -1),
            ("b".to_string(), 718u32, -1),
            ("c".to_string(), 23u32, -1),
        ];
        let err = build_table(&c, 1, "s", "t", &published, &TableCatalog::default()).unwrap_err();
        assert!(
            err.message().contains(
                "table s.t: column a has type type OID 601, column b has type type OID 718"
            ),
            "{}",
            err.message()
        );
    }
}
