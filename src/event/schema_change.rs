//! Schema change records: the DDL that pgcdc's schema capture (`pg::schema_capture`) wrote
//! into the WAL, as the record Debezium's MySQL, SQL Server and Oracle connectors publish to
//! their schema change topic (the topic named by `topic.prefix`).
//!
//! The capture's message is JSON (`{"version":1,"tag","ddl","tables":[...]}`, each table with
//! its definition read from the catalog after the command and the names it had before);
//! [`SchemaChange::parse`] reads it and refuses anything else with the fix.
//! [`schema_change_record`] builds the record: key `SchemaChangeKey{databaseName}`, value
//! `SchemaChangeValue{source, ts_ms, databaseName, schemaName, ddl, tableChanges}` with
//! `io.debezium.connector.schema.Change`/`Table`/`Column` elements. Where MySQL's values have
//! no PostgreSQL equivalent, the choice is documented in `docs/schema-changes.md`: `jdbcType`
//! is what the PostgreSQL JDBC driver reports for the type, `nativeType` its type OID,
//! `charsetName` and `defaultCharsetName` are null.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use super::envelope::{source_schema, source_value};
use super::sanitize_topic;
use super::schema::{Field, Schema, SchemaType};
use super::{ConnectRecord, Header, SourceInfo, TableDescriptor, Value};
use crate::error::{Error, Result};

/// The capture message format this pgcdc reads.
pub const CAPTURE_FORMAT_VERSION: i64 = 1;

/// One DDL command as the capture wrote it.
#[derive(Debug, Clone, Deserialize)]
pub struct SchemaChange {
    /// Format version of the message (1).
    pub version: i64,
    /// The command tag (`ALTER TABLE`, `CREATE TABLE`, `DROP TABLE`, `COMMENT`, ...).
    pub tag: String,
    /// The statement text the client sent (`current_query()`: all of it, even when it held
    /// several statements).
    pub ddl: Option<String>,
    /// The tables the command created, altered or dropped.
    pub tables: Vec<TableChange>,
}

/// What a command did to one table.
#[derive(Debug, Clone, Deserialize)]
pub struct TableChange {
    /// `CREATE`, `ALTER` or `DROP`.
    pub change: String,
    /// The table's OID.
    pub oid: i64,
    /// Schema name after the command.
    pub schema: String,
    /// Table name after the command.
    pub table: String,
    /// The table's comment.
    #[serde(default)]
    pub comment: Option<String>,
    /// Primary key column names in key order.
    #[serde(default)]
    pub primary_key: Vec<String>,
    /// Columns in `attnum` order (empty for DROP).
    #[serde(default)]
    pub columns: Vec<ColumnDefinition>,
    /// Schema, name and column names (by attnum) recorded before the command; `None` for a
    /// CREATE, a DROP, or a table the capture had no record of.
    #[serde(default)]
    pub previous: Option<PreviousName>,
}

/// A table's names before a command.
#[derive(Debug, Clone, Deserialize)]
pub struct PreviousName {
    /// Schema name.
    pub schema: String,
    /// Table name.
    pub table: String,
    /// Column names by attnum (as decimal strings).
    #[serde(default)]
    pub columns: BTreeMap<String, String>,
}

/// One column as the catalog had it after the command.
#[derive(Debug, Clone, Deserialize)]
pub struct ColumnDefinition {
    /// Column name.
    pub name: String,
    /// `attnum` (1-based; dropped columns leave gaps).
    pub attnum: i32,
    /// Type OID.
    pub type_oid: i64,
    /// `atttypmod` (-1 when none).
    pub typmod: i32,
    /// The type's name (`int4`, `varchar`, a domain's own name).
    pub type_name: String,
    /// `format_type(type, typmod)`: `character varying(20)`, `numeric(10,2)`.
    pub type_expression: String,
    /// The base type's name for a domain, else `type_name`.
    pub base_type_name: String,
    /// The base type's `typcategory` (`A` for arrays, `N` numeric, ...).
    pub base_type_category: String,
    /// `attnotnull`.
    pub not_null: bool,
    /// The default expression.
    #[serde(default)]
    pub default: Option<String>,
    /// `attidentity`: `a` (ALWAYS), `d` (BY DEFAULT) or empty.
    #[serde(default)]
    pub identity: String,
    /// `attgenerated`: `s` (stored) or empty.
    #[serde(default)]
    pub generated: String,
    /// The column's comment.
    #[serde(default)]
    pub comment: Option<String>,
    /// An enum type's labels in sort order.
    #[serde(default)]
    pub enum_values: Option<Vec<String>>,
}

impl SchemaChange {
    /// Reads a capture message. Errors: not JSON of the expected shape, or a format version
    /// this pgcdc does not read (the error names both versions and the fix). The connector
    /// logs these and goes on: any role may emit a message with the capture's prefix.
    pub fn parse(content: &[u8]) -> Result<SchemaChange> {
        #[derive(Deserialize)]
        struct Version {
            version: i64,
        }
        let version = serde_json::from_slice::<Version>(content).map_err(|e| {
            Error::protocol(format!(
                "a schema capture message is not the JSON pgcdc's capture writes ({e}); reinstall the capture with `pgcdc schema-capture install`"
            ))
        })?;
        if version.version != CAPTURE_FORMAT_VERSION {
            return Err(Error::config(format!(
                "the schema capture in this database writes format version {}, and this pgcdc reads version {CAPTURE_FORMAT_VERSION}: run `pgcdc schema-capture install` with this pgcdc's version (or upgrade pgcdc)",
                version.version
            )));
        }
        serde_json::from_slice(content).map_err(|e| {
            Error::protocol(format!(
                "a schema capture message (version {CAPTURE_FORMAT_VERSION}) has an unexpected shape ({e}); reinstall the capture with `pgcdc schema-capture install`"
            ))
        })
    }
}

impl TableChange {
    /// The table's Debezium id: `"schema"."table"`.
    pub fn id(&self) -> String {
        quoted_id(&self.schema, &self.table)
    }

    /// The id the table had before the command, when it was renamed or moved.
    pub fn previous_id(&self) -> Option<String> {
        let p = self.previous.as_ref()?;
        (p.schema != self.schema || p.table != self.table).then(|| quoted_id(&p.schema, &p.table))
    }

    /// Columns renamed by the command: (old name, new name).
    pub fn renamed_columns(&self) -> Vec<(String, String)> {
        let Some(p) = &self.previous else {
            return Vec::new();
        };
        self.columns
            .iter()
            .filter_map(|c| {
                let old = p.columns.get(&c.attnum.to_string())?;
                (old != &c.name).then(|| (old.clone(), c.name.clone()))
            })
            .collect()
    }
}

/// `"schema"."table"`, each `"` inside a name doubled (Debezium's
/// `TableId.toDoubleQuotedString`).
fn quoted_id(schema: &str, table: &str) -> String {
    let q = |s: &str| s.replace('"', "\"\"");
    format!("\"{}\".\"{}\"", q(schema), q(table))
}

/// `java.sql.Types` codes, as the PostgreSQL JDBC driver reports them for a type.
pub mod jdbc {
    /// `java.sql.Types.BIT`.
    pub const BIT: i32 = -7;
    /// `java.sql.Types.SMALLINT`.
    pub const SMALLINT: i32 = 5;
    /// `java.sql.Types.INTEGER`.
    pub const INTEGER: i32 = 4;
    /// `java.sql.Types.BIGINT`.
    pub const BIGINT: i32 = -5;
    /// `java.sql.Types.REAL`.
    pub const REAL: i32 = 7;
    /// `java.sql.Types.DOUBLE`.
    pub const DOUBLE: i32 = 8;
    /// `java.sql.Types.NUMERIC`.
    pub const NUMERIC: i32 = 2;
    /// `java.sql.Types.CHAR`.
    pub const CHAR: i32 = 1;
    /// `java.sql.Types.VARCHAR`.
    pub const VARCHAR: i32 = 12;
    /// `java.sql.Types.DATE`.
    pub const DATE: i32 = 91;
    /// `java.sql.Types.TIME`.
    pub const TIME: i32 = 92;
    /// `java.sql.Types.TIMESTAMP`.
    pub const TIMESTAMP: i32 = 93;
    /// `java.sql.Types.BINARY`.
    pub const BINARY: i32 = -2;
    /// `java.sql.Types.ARRAY`.
    pub const ARRAY: i32 = 2003;
    /// `java.sql.Types.SQLXML`.
    pub const SQLXML: i32 = 2009;
    /// `java.sql.Types.OTHER`.
    pub const OTHER: i32 = 1111;
    /// `java.sql.Types.DISTINCT`.
    pub const DISTINCT: i32 = 2001;
}

/// The `java.sql.Types` code the PostgreSQL JDBC driver gives a column: by its base type's
/// name (`TypeInfoCache`'s table), `ARRAY` for arrays, `DISTINCT` for a domain over a type
/// the table does not name, `OTHER` for the rest (enums, json, uuid, geometry, ...).
pub fn jdbc_type(column: &ColumnDefinition) -> i32 {
    use jdbc::*;
    if column.base_type_category == "A" {
        return ARRAY;
    }
    match column.base_type_name.as_str() {
        "bool" | "bit" => BIT,
        "int2" => SMALLINT,
        "int4" => INTEGER,
        "int8" | "oid" => BIGINT,
        "float4" => REAL,
        "float8" | "money" => DOUBLE,
        "numeric" => NUMERIC,
        "bpchar" | "char" => CHAR,
        "varchar" | "text" | "name" => VARCHAR,
        "date" => DATE,
        "time" | "timetz" => TIME,
        "timestamp" | "timestamptz" => TIMESTAMP,
        "bytea" => BINARY,
        "xml" => SQLXML,
        _ => OTHER,
    }
}

/// `length` and `scale` from a type and its typmod, as the JDBC driver's metadata gives
/// them: characters for `char`/`varchar`/`bit`, precision and scale for `numeric`, fractional
/// second digits (as scale) for times and timestamps; `None` where the type has no modifier.
pub fn length_and_scale(column: &ColumnDefinition) -> (Option<i32>, Option<i32>) {
    let m = column.typmod;
    if m < 0 {
        return (None, None);
    }
    match column.base_type_name.as_str() {
        "bpchar" | "varchar" => (Some(m - 4), None),
        "bit" | "varbit" => (Some(m), None),
        // The scale is an 11-bit signed number (negative scales since PostgreSQL 15).
        "numeric" => (
            Some(((m - 4) >> 16) & 0xffff),
            Some((((m - 4) & 0x7ff) ^ 0x400) - 0x400),
        ),
        "time" | "timetz" | "timestamp" | "timestamptz" => (None, Some(m & 0xffff)),
        // An interval's typmod also holds its fields; 0xffff is "no precision given".
        "interval" => (None, Some(m & 0xffff).filter(|p| *p != 0xffff)),
        _ => (None, None),
    }
}

fn optional(ty: SchemaType) -> Schema {
    Schema::new(ty, true)
}

fn required(ty: SchemaType) -> Schema {
    Schema::new(ty, false)
}

fn versioned(mut s: Schema) -> Schema {
    s.version = Some(1);
    s
}

/// `io.debezium.connector.schema.Column`.
fn column_schema() -> Schema {
    use SchemaType::*;
    let f = Field::new;
    versioned(Schema::structure(
        "io.debezium.connector.schema.Column",
        false,
        vec![
            f("name", required(String)),
            f("jdbcType", required(Int32)),
            f("nativeType", optional(Int32)),
            f("typeName", required(String)),
            f("typeExpression", optional(String)),
            f("charsetName", optional(String)),
            f("length", optional(Int32)),
            f("scale", optional(Int32)),
            f("position", required(Int32)),
            f("optional", optional(Boolean)),
            f("autoIncremented", optional(Boolean)),
            f("generated", optional(Boolean)),
            f("comment", optional(String)),
            f("defaultValueExpression", optional(String)),
            f("enumValues", Schema::array(required(String), true)),
        ],
    ))
}

/// `io.debezium.connector.schema.Table`.
fn table_schema() -> Schema {
    use SchemaType::*;
    versioned(Schema::structure(
        "io.debezium.connector.schema.Table",
        true,
        vec![
            Field::new("defaultCharsetName", optional(String)),
            Field::new(
                "primaryKeyColumnNames",
                Schema::array(required(String), true),
            ),
            Field::new("columns", Schema::array(column_schema(), false)),
            Field::new("comment", optional(String)),
        ],
    ))
}

/// `io.debezium.connector.schema.Change`.
fn change_schema() -> Schema {
    use SchemaType::*;
    versioned(Schema::structure(
        "io.debezium.connector.schema.Change",
        false,
        vec![
            Field::new("type", required(String)),
            Field::new("id", required(String)),
            Field::new("table", table_schema()),
        ],
    ))
}

/// Key schema of schema change records: `io.debezium.connector.postgresql.SchemaChangeKey`,
/// one field `databaseName`.
pub fn schema_change_key_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        Arc::new(versioned(Schema::structure(
            "io.debezium.connector.postgresql.SchemaChangeKey",
            false,
            vec![Field::new("databaseName", required(SchemaType::String))],
        )))
    })
}

/// Value schema of schema change records: `io.debezium.connector.postgresql.SchemaChangeValue`.
pub fn schema_change_value_schema() -> &'static Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    S.get_or_init(|| {
        use SchemaType::*;
        Arc::new(versioned(Schema::structure(
            "io.debezium.connector.postgresql.SchemaChangeValue",
            false,
            vec![
                Field::new("source", (**source_schema()).clone()),
                Field::new("ts_ms", required(Int64)),
                Field::new("databaseName", optional(String)),
                Field::new("schemaName", optional(String)),
                Field::new("ddl", optional(String)),
                Field::new("tableChanges", Schema::array(change_schema(), false)),
            ],
        )))
    })
}

fn opt_string(v: &Option<String>) -> Value {
    v.clone().map(Value::String).unwrap_or(Value::Null)
}

/// One column's `Column` struct; `position` is its 1-based place among the live columns (as
/// JDBC's `ORDINAL_POSITION`), not its `attnum`, which keeps the gaps of dropped columns.
fn column_value(position: usize, c: &ColumnDefinition) -> Value {
    let (length, scale) = length_and_scale(c);
    let opt_int = |v: Option<i32>| v.map(|v| Value::Int(v.into())).unwrap_or(Value::Null);
    let default = if c.identity.is_empty() {
        opt_string(&c.default)
    } else {
        Value::Null
    };
    let auto = !c.identity.is_empty()
        || c.default
            .as_deref()
            .is_some_and(|d| d.starts_with("nextval("));
    Value::Struct(vec![
        Value::String(c.name.clone()),
        Value::Int(jdbc_type(c).into()),
        Value::Int(c.type_oid),
        Value::String(c.type_name.clone()),
        Value::String(c.type_expression.clone()),
        Value::Null,
        opt_int(length),
        opt_int(scale),
        Value::Int(position as i64),
        Value::Bool(!c.not_null),
        Value::Bool(auto),
        Value::Bool(!c.generated.is_empty()),
        opt_string(&c.comment),
        default,
        c.enum_values
            .as_ref()
            .filter(|v| !v.is_empty())
            .map(|v| Value::Array(v.iter().cloned().map(Value::String).collect()))
            .unwrap_or(Value::Null),
    ])
}

fn change_value(t: &TableChange) -> Value {
    let table = if t.change == "DROP" {
        Value::Null
    } else {
        Value::Struct(vec![
            Value::Null,
            Value::Array(t.primary_key.iter().cloned().map(Value::String).collect()),
            Value::Array(
                t.columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| column_value(i + 1, c))
                    .collect(),
            ),
            opt_string(&t.comment),
        ])
    };
    Value::Struct(vec![
        Value::String(t.change.clone()),
        Value::String(t.id()),
        table,
    ])
}

/// The header naming, for each renamed (or moved) table of a record, its id before the
/// command: a JSON object `{"<new id>": "<old id>"}`. Debezium's record has no field for it.
pub const PREVIOUS_IDS_HEADER: &str = "pgcdc.schema.previousIds";

/// The header naming the columns a command renamed: a JSON object
/// `{"<table id>": [["<old name>", "<new name>"], ...]}`.
pub const RENAMED_COLUMNS_HEADER: &str = "pgcdc.schema.renamedColumns";

/// The schema change record for `change`, holding the tables whose name, or name before the
/// command, `captured` keeps (none kept: `None`), on the topic `topic_prefix`, partition 0.
/// `source` gives the position; its `schema` and `table` name the first kept table. `ts_ms`
/// is `now_ms` (ms since the epoch). Headers: `context_headers` (Debezium's
/// `__debezium.context.*`), then [`PREVIOUS_IDS_HEADER`] and [`RENAMED_COLUMNS_HEADER`] when
/// the command renamed something.
pub fn schema_change_record(
    topic_prefix: &str,
    source: &SourceInfo,
    change: &SchemaChange,
    captured: impl Fn(&str, &str) -> bool,
    now_ms: i64,
    context_headers: &[Header],
) -> Option<ConnectRecord> {
    let kept: Vec<&TableChange> = change
        .tables
        .iter()
        .filter(|t| {
            captured(&t.schema, &t.table)
                || t.previous
                    .as_ref()
                    .is_some_and(|p| captured(&p.schema, &p.table))
        })
        .collect();
    let first = kept.first()?;
    let descriptor = TableDescriptor {
        schema: Arc::from(first.schema.as_str()),
        table: Arc::from(first.table.as_str()),
        topic: Arc::from(""),
        key_schema: None,
        key_extra: None,
        row_schema: Arc::new(Schema::new(SchemaType::Struct, true)),
        envelope_schema: schema_change_value_schema().clone(),
    };
    let db = Value::Shared(source.db.clone());
    Some(ConnectRecord {
        topic: Arc::from(sanitize_topic(topic_prefix)),
        partition: Some(0),
        key_schema: Some(schema_change_key_schema().clone()),
        key: Some(Value::Struct(vec![db.clone()])),
        value_schema: Some(schema_change_value_schema().clone()),
        value: Some(Value::Struct(vec![
            source_value(source, &descriptor),
            Value::Int(now_ms),
            db,
            Value::String(first.schema.clone()),
            opt_string(&change.ddl),
            Value::Array(kept.iter().map(|t| change_value(t)).collect()),
        ])),
        headers: rename_headers(&kept, context_headers),
        timestamp: None,
        table: None,
        op: None,
    })
}

/// `context_headers`, then the rename headers of `tables` where they renamed something.
fn rename_headers(tables: &[&TableChange], context_headers: &[Header]) -> Vec<Header> {
    let mut headers = context_headers.to_vec();
    let previous: serde_json::Map<String, serde_json::Value> = tables
        .iter()
        .filter_map(|t| Some((t.id(), t.previous_id()?.into())))
        .collect();
    let columns: serde_json::Map<String, serde_json::Value> = tables
        .iter()
        .map(|t| (t.id(), t.renamed_columns()))
        .filter(|(_, r)| !r.is_empty())
        .map(|(id, r)| (id, serde_json::json!(r)))
        .collect();
    let string = Arc::new(Schema::new(SchemaType::String, false));
    for (key, map) in [
        (PREVIOUS_IDS_HEADER, previous),
        (RENAMED_COLUMNS_HEADER, columns),
    ] {
        if !map.is_empty() {
            headers.push(Header {
                key: key.into(),
                schema: string.clone(),
                value: Value::String(serde_json::Value::Object(map).to_string()),
            });
        }
    }
    headers
}

#[cfg(test)]
mod tests;
