//! PostgreSQL column types and their Debezium representation.
//!
//! pgoutput sends every value as the type's text output (with the session settings pinned by
//! [`crate::pg::wire::SESSION_SETTINGS`]); the snapshot reads the same text through the simple
//! query protocol, so both paths share [`ColumnType::parse`] and give identical values.
//!
//! The mapping follows Debezium's PostgreSQL connector (type OID → Connect schema and value)
//! for the handling modes in [`ValueOptions`]. A type without a mapping is not guessed at:
//! [`ColumnType::from_oid`] returns `None`, and the caller reports the table, column and type.
//!
//! This module is the dispatch: [`ColumnType`] (which type a column is, from its OID or the
//! catalog) and, per type, its schema, value, zero value, fallback and placeholder. The
//! conversions themselves live in one submodule per kind of value:
//! - [`oid`] holds the table of built-in type OIDs;
//! - [`catalog`] holds the `pg_type` rows of types not known by OID ([`TypeInfo`],
//!   [`TypeCatalog`]);
//! - [`numeric`] reads `numeric`, `money` and float text;
//! - [`datetime`] reads and writes dates, times and timestamps, with and without time zone;
//! - [`interval`] reads and writes `interval`;
//! - [`binary`] reads `bytea` and bit strings and applies `binary.handling.mode`;
//! - [`array`](mod@array) splits one-dimensional arrays;
//! - [`hstore`] reads the hstore extension type;
//! - `geometry` reads `point` and PostGIS EWKB;
//! - `name_uuid` makes Java's name-based UUIDs, for the `uuid[]` placeholder, and writes UUID text;
//! - [`defaults`] reads column default expressions;
//! - [`tsvector`] keeps `tsvector` text and reads its send format;
//! - [`recv`] reads values in their binary send format (pgoutput's `binary` option).

pub mod array;
pub mod binary;
pub mod catalog;
pub mod datetime;
pub mod defaults;
pub(super) mod geometry;
pub mod hstore;
pub mod interval;
mod name_uuid;
pub mod numeric;
pub mod oid;
pub mod recv;
pub mod tsvector;

pub use binary::encode_binary;
pub use catalog::{TypeCatalog, TypeInfo};
pub use defaults::parse_default;

use crate::config::values::{
    BinaryMode, HstoreMode, IntervalMode, TimePrecisionMode, ValueOptions,
};
use crate::event::{Schema, SchemaType, Value};

use binary::{binary_schema, bits_to_bytes, parse_bytea};
use datetime::format_zoned_timestamp;
use numeric::{parse_float, parse_money, parse_numeric};

/// A column type this build can represent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnType {
    /// `boolean`.
    Bool,
    /// `smallint`.
    Int16,
    /// `integer`.
    Int32,
    /// `bigint`, `oid`.
    Int64,
    /// `real`.
    Float32,
    /// `double precision`.
    Float64,
    /// `numeric(p,s)`; both `None` when unconstrained.
    Numeric {
        /// Declared precision.
        precision: Option<u32>,
        /// Declared scale.
        scale: Option<u32>,
    },
    /// `text`, `varchar`, `char`.
    Text,
    /// `bytea`.
    Bytea,
    /// `uuid`.
    Uuid,
    /// `json`, `jsonb`.
    Json,
    /// `date`.
    Date,
    /// `time(p)`; p = 6 when unconstrained.
    Time(u32),
    /// `timestamp(p)`.
    Timestamp(u32),
    /// `timestamptz(p)`.
    TimestampTz(u32),
    /// `money`.
    Money,
    /// `interval`.
    Interval,
    /// `timetz(p)`.
    TimeTz(u32),
    /// `bit(1)` and `varbit(1)`: a boolean.
    Bit,
    /// `bit(n)` / `varbit(n)` with n > 1 (2147483647 for unbounded varbit): `io.debezium.data.Bits`.
    Bits(u32),
    /// `xml`.
    Xml,
    /// `tsvector`: `io.debezium.data.Tsvector`, its text.
    Tsvector,
    /// `ltree` (extension).
    Ltree,
    /// `hstore` (extension), per `hstore.handling.mode`.
    Hstore,
    /// `point`: `io.debezium.data.geometry.Point`.
    Point,
    /// PostGIS `geometry`: `io.debezium.data.geometry.Geometry` (EWKB and SRID).
    Geometry,
    /// PostGIS `geography`: `io.debezium.data.geometry.Geography` (EWKB and SRID).
    Geography,
    /// An enum type with its labels in sort order.
    Enum(std::sync::Arc<Vec<String>>),
    /// A type without a mapping, emitted as its text through `binary.handling.mode`
    /// (`include.unknown.datatypes=true`).
    Unknown,
    /// A built-in geometric type other than `point` (`box`, `circle`, `line`, `lseg`, `path`,
    /// `polygon`) under `include.unknown.datatypes=true`: as [`ColumnType::Unknown`], with the
    /// text Debezium gets from the JDBC driver (numbers as Java doubles). `semicolon`: `box`,
    /// whose arrays separate elements with `;`.
    UnknownGeometric {
        /// The array delimiter is `;` (`box`), not `,`.
        semicolon: bool,
    },
    /// One-dimensional array of an element type.
    Array(Box<ColumnType>),
}

/// Appends `text` between two `quote`s, with `quote` and `\` doubled, as PostgreSQL's output
/// functions quote a range bound (`"`) or a tsvector lexeme (`'`).
fn push_quoted_doubling(text: &str, quote: char, out: &mut String) {
    out.push(quote);
    for c in text.chars() {
        if c == quote || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push(quote);
}

/// The fractional-second digits of a time type with modifier `typmod` (6 when none).
fn time_precision(typmod: i32) -> u32 {
    if typmod < 0 {
        6
    } else {
        (typmod as u32).min(6)
    }
}

impl ColumnType {
    /// The representation of type `oid` with modifier `typmod`, or `None` when this build has
    /// no mapping for it.
    pub fn from_oid(type_oid: u32, typmod: i32) -> Option<ColumnType> {
        use oid::*;
        Some(match type_oid {
            BOOL => ColumnType::Bool,
            INT2 => ColumnType::Int16,
            INT4 => ColumnType::Int32,
            INT8 | OID => ColumnType::Int64,
            FLOAT4 => ColumnType::Float32,
            FLOAT8 => ColumnType::Float64,
            NUMERIC => {
                if typmod < 4 {
                    ColumnType::Numeric {
                        precision: None,
                        scale: None,
                    }
                } else {
                    let m = (typmod - 4) as u32;
                    ColumnType::Numeric {
                        precision: Some((m >> 16) & 0xFFFF),
                        scale: Some(m & 0xFFFF),
                    }
                }
            }
            TEXT | VARCHAR | BPCHAR => ColumnType::Text,
            BYTEA => ColumnType::Bytea,
            UUID => ColumnType::Uuid,
            JSON | JSONB => ColumnType::Json,
            DATE => ColumnType::Date,
            TIME => ColumnType::Time(time_precision(typmod)),
            TIMESTAMP => ColumnType::Timestamp(time_precision(typmod)),
            TIMESTAMPTZ => ColumnType::TimestampTz(time_precision(typmod)),
            BOOL_ARRAY => ColumnType::Array(Box::new(ColumnType::Bool)),
            INT2_ARRAY => ColumnType::Array(Box::new(ColumnType::Int16)),
            INT4_ARRAY => ColumnType::Array(Box::new(ColumnType::Int32)),
            INT8_ARRAY | OID_ARRAY => ColumnType::Array(Box::new(ColumnType::Int64)),
            FLOAT4_ARRAY => ColumnType::Array(Box::new(ColumnType::Float32)),
            FLOAT8_ARRAY => ColumnType::Array(Box::new(ColumnType::Float64)),
            NUMERIC_ARRAY => ColumnType::Array(Box::new(ColumnType::from_oid(NUMERIC, typmod)?)),
            TEXT_ARRAY | VARCHAR_ARRAY | BPCHAR_ARRAY => {
                ColumnType::Array(Box::new(ColumnType::Text))
            }
            BYTEA_ARRAY => ColumnType::Array(Box::new(ColumnType::Bytea)),
            UUID_ARRAY => ColumnType::Array(Box::new(ColumnType::Uuid)),
            JSON_ARRAY | JSONB_ARRAY => ColumnType::Array(Box::new(ColumnType::Json)),
            DATE_ARRAY => ColumnType::Array(Box::new(ColumnType::Date)),
            TIME_ARRAY => ColumnType::Array(Box::new(ColumnType::Time(time_precision(typmod)))),
            TIMESTAMP_ARRAY => {
                ColumnType::Array(Box::new(ColumnType::Timestamp(time_precision(typmod))))
            }
            TIMESTAMPTZ_ARRAY => {
                ColumnType::Array(Box::new(ColumnType::TimestampTz(time_precision(typmod))))
            }
            MONEY => ColumnType::Money,
            INTERVAL => ColumnType::Interval,
            TIMETZ => ColumnType::TimeTz(time_precision(typmod)),
            TIMETZ_ARRAY => ColumnType::Array(Box::new(ColumnType::TimeTz(time_precision(typmod)))),
            BIT => match typmod {
                n if n > 1 => ColumnType::Bits(n as u32),
                _ => ColumnType::Bit,
            },
            VARBIT => match typmod {
                1 => ColumnType::Bit,
                n if n > 1 => ColumnType::Bits(n as u32),
                _ => ColumnType::Bits(i32::MAX as u32),
            },
            XML => ColumnType::Xml,
            TSVECTOR => ColumnType::Tsvector,
            // Ranges are emitted as their text, as Debezium does.
            INET | CIDR | MACADDR | MACADDR8 | INT4RANGE | INT8RANGE | NUMRANGE | TSRANGE
            | TSTZRANGE | DATERANGE => ColumnType::Text,
            INT4RANGE_ARRAY | INT8RANGE_ARRAY | NUMRANGE_ARRAY | TSRANGE_ARRAY
            | TSTZRANGE_ARRAY | DATERANGE_ARRAY => ColumnType::Array(Box::new(ColumnType::Text)),
            POINT => ColumnType::Point,
            INET_ARRAY | CIDR_ARRAY | MACADDR_ARRAY | MACADDR8_ARRAY => {
                ColumnType::Array(Box::new(ColumnType::Text))
            }
            _ => return None,
        })
    }

    /// Like [`ColumnType::from_oid`], and also for types known only through the catalog:
    /// enums, domains (mapped as their base type; a domain's own length or scale applies when
    /// the column declares none), extension types (`citext`, `ltree`, the `isn` types), and
    /// arrays of those. `None` when there is no mapping.
    pub fn resolve(type_oid: u32, typmod: i32, types: &TypeCatalog) -> Option<ColumnType> {
        Self::resolve_depth(type_oid, typmod, types, 0)
    }

    fn resolve_depth(
        type_oid: u32,
        typmod: i32,
        types: &TypeCatalog,
        depth: u32,
    ) -> Option<ColumnType> {
        if let Some(t) = Self::from_oid(type_oid, typmod) {
            return Some(t);
        }
        let info = types.get(&type_oid)?;
        if depth > 8 {
            return None;
        }
        match info.typtype {
            b'd' => {
                let typmod = if typmod >= 0 {
                    typmod
                } else {
                    info.base_typmod
                };
                Self::resolve_depth(info.base_oid, typmod, types, depth + 1)
            }
            b'e' => Some(ColumnType::Enum(std::sync::Arc::new(
                info.enum_labels.clone(),
            ))),
            _ if info.category == b'A' && info.elem_oid != 0 => {
                // Arrays of domains are left out, as Debezium leaves them out.
                if types.get(&info.elem_oid).is_some_and(|e| e.typtype == b'd') {
                    return None;
                }
                let elem = Self::resolve_depth(info.elem_oid, typmod, types, depth + 1)?;
                match elem {
                    ColumnType::Array(_)
                    | ColumnType::Money
                    | ColumnType::Interval
                    | ColumnType::Xml
                    | ColumnType::Tsvector
                    | ColumnType::Bits(_) => None,
                    e => Some(ColumnType::Array(Box::new(e))),
                }
            }
            _ => match info.name.as_str() {
                "citext" | "isbn" | "isbn13" | "ismn" | "ismn13" | "issn" | "issn13" | "ean13"
                | "upc" => Some(ColumnType::Text),
                "ltree" => Some(ColumnType::Ltree),
                "hstore" => Some(ColumnType::Hstore),
                "geometry" => Some(ColumnType::Geometry),
                "geography" => Some(ColumnType::Geography),
                _ => None,
            },
        }
    }

    /// The representation of a type without a mapping under `include.unknown.datatypes=true`:
    /// its text through `binary.handling.mode`, or for an array of a domain (which Debezium
    /// does not map either), an array of such element texts.
    pub fn unknown(type_oid: u32, types: &TypeCatalog) -> ColumnType {
        if let Some(g) = Self::unknown_geometric(type_oid, types) {
            return g;
        }
        match types.get(&type_oid) {
            Some(info)
                if info.category == b'A'
                    && types.get(&info.elem_oid).is_some_and(|e| e.typtype == b'd') =>
            {
                ColumnType::Array(Box::new(ColumnType::Unknown))
            }
            _ => ColumnType::Unknown,
        }
    }

    /// A geometric type Debezium shows through the JDBC driver (also through a domain), or an
    /// array of one (an array of bytes, one element per value, as Debezium gives it).
    fn unknown_geometric(type_oid: u32, types: &TypeCatalog) -> Option<ColumnType> {
        let mut oid = type_oid;
        for _ in 0..8 {
            if geometry::is_jdbc_geometric(oid) {
                return Some(ColumnType::UnknownGeometric {
                    semicolon: oid == oid::BOX,
                });
            }
            let info = types.get(&oid)?;
            match info.typtype {
                b'd' => oid = info.base_oid,
                _ if info.category == b'A' && geometry::is_jdbc_geometric(info.elem_oid) => {
                    return Some(ColumnType::Array(Box::new(ColumnType::UnknownGeometric {
                        semicolon: info.elem_oid == oid::BOX,
                    })));
                }
                _ => return None,
            }
        }
        None
    }

    /// The Connect schema of a column of this type (`optional` false; the caller sets
    /// optionality and the default).
    pub fn schema(&self, opts: &ValueOptions) -> Schema {
        use SchemaType as T;
        match self {
            ColumnType::Bool => Schema::new(T::Boolean, false),
            ColumnType::Int16 => Schema::new(T::Int16, false),
            ColumnType::Int32 => Schema::new(T::Int32, false),
            ColumnType::Int64 => Schema::new(T::Int64, false),
            ColumnType::Float32 => Schema::new(T::Float32, false),
            ColumnType::Float64 => Schema::new(T::Float64, false),
            ColumnType::Numeric { precision, scale } => {
                numeric::numeric_schema(*precision, *scale, opts.decimal)
            }
            ColumnType::Text => Schema::new(T::String, false),
            ColumnType::Bytea | ColumnType::Unknown | ColumnType::UnknownGeometric { .. } => {
                binary_schema(opts.binary)
            }
            ColumnType::Uuid => Schema::new(T::String, false).named("io.debezium.data.Uuid"),
            ColumnType::Json => Schema::new(T::String, false).named("io.debezium.data.Json"),
            ColumnType::Date => datetime::date_schema(opts.time),
            ColumnType::Time(p) => datetime::time_schema(*p, opts.time),
            ColumnType::Timestamp(p) => datetime::timestamp_schema(*p, opts.time),
            ColumnType::TimestampTz(_) => {
                Schema::new(T::String, false).named("io.debezium.time.ZonedTimestamp")
            }
            ColumnType::Money => numeric::money_schema(opts),
            ColumnType::Interval => interval::interval_schema(opts.interval),
            ColumnType::TimeTz(_) => {
                Schema::new(T::String, false).named("io.debezium.time.ZonedTime")
            }
            ColumnType::Bit => Schema::new(T::Boolean, false),
            ColumnType::Bits(n) => Schema::new(T::Bytes, false)
                .named("io.debezium.data.Bits")
                .param("length", n.to_string()),
            ColumnType::Xml => Schema::new(T::String, false).named("io.debezium.data.Xml"),
            ColumnType::Tsvector => tsvector::tsvector_schema(),
            ColumnType::Ltree => Schema::new(T::String, false).named("io.debezium.data.Ltree"),
            ColumnType::Hstore => hstore::hstore_schema(opts.hstore),
            ColumnType::Geometry => geometry::ewkb_schema(false),
            ColumnType::Geography => geometry::ewkb_schema(true),
            ColumnType::Point => geometry::point_schema(),
            ColumnType::Enum(labels) => Schema::new(T::String, false)
                .named("io.debezium.data.Enum")
                .param("allowed", labels.join(",")),
            // Enum elements keep their schema's optionality as Debezium builds them (required).
            ColumnType::Array(elem) if matches!(**elem, ColumnType::Enum(_)) => {
                Schema::array(elem.schema(opts), false)
            }
            // Debezium's arrays of the JDBC-shown geometric types have required items.
            ColumnType::Array(elem) => {
                let required = matches!(**elem, ColumnType::UnknownGeometric { .. });
                Schema::array(elem.schema(opts).optional(!required), false)
            }
        }
    }

    /// Converts the type's text output to the Connect value. The error names what is wrong
    /// with the text (never the text itself, which may be sensitive).
    pub fn parse(&self, text: &str, opts: &ValueOptions) -> Result<Value, String> {
        match self {
            ColumnType::Bool => match text {
                "t" | "true" => Ok(Value::Bool(true)),
                "f" | "false" => Ok(Value::Bool(false)),
                _ => Err("not a boolean".into()),
            },
            ColumnType::Int16 => text
                .parse::<i16>()
                .map(|v| Value::Int(v as i64))
                .map_err(|_| "not a smallint".into()),
            ColumnType::Int32 => text
                .parse::<i32>()
                .map(|v| Value::Int(v as i64))
                .map_err(|_| "not an integer".into()),
            ColumnType::Int64 => text
                .parse::<i64>()
                .map(Value::Int)
                .map_err(|_| "not a bigint".into()),
            ColumnType::Float32 => parse_float(text).map(|v| Value::Float32(v as f32)),
            ColumnType::Float64 => parse_float(text).map(Value::Float64),
            ColumnType::Numeric { precision, scale } => {
                parse_numeric(text, *precision, *scale, opts.decimal)
            }
            ColumnType::Text | ColumnType::Uuid | ColumnType::Json => {
                Ok(Value::String(text.to_string()))
            }
            ColumnType::Bytea => {
                let bytes = parse_bytea(text)?;
                Ok(encode_binary(bytes, opts.binary))
            }
            ColumnType::Date => datetime::date_value(text, opts.time),
            ColumnType::Time(p) => datetime::time_value(text, *p, opts.time),
            ColumnType::Timestamp(p) => datetime::timestamp_value(text, *p, opts.time),
            ColumnType::TimestampTz(p) => datetime::zoned_timestamp_value(text, *p),
            ColumnType::Money => parse_money(text, opts),
            ColumnType::Interval => interval::interval_value(text, opts.interval),
            ColumnType::TimeTz(_) => Ok(Value::String(datetime::parse_zoned_time(text)?)),
            ColumnType::Bit => match text {
                "1" => Ok(Value::Bool(true)),
                "0" => Ok(Value::Bool(false)),
                _ => Err("not a one-bit string".into()),
            },
            ColumnType::Bits(_) => Ok(Value::Bytes(bits_to_bytes(text)?)),
            ColumnType::Xml | ColumnType::Ltree | ColumnType::Enum(_) => {
                Ok(Value::String(text.to_string()))
            }
            ColumnType::Unknown => Ok(encode_binary(text.as_bytes().to_vec(), opts.binary)),
            ColumnType::UnknownGeometric { .. } => Ok(encode_binary(
                geometry::jdbc_geometric_text(text)?.into_bytes(),
                opts.binary,
            )),
            ColumnType::Tsvector => Ok(tsvector::tsvector_value(text)),
            ColumnType::Hstore => hstore::hstore_value(text, opts.hstore),
            ColumnType::Geometry | ColumnType::Geography => geometry::ewkb_value(text),
            ColumnType::Point => geometry::point_value(text),
            ColumnType::Array(elem) => array::array_value(elem, text, opts),
        }
    }

    /// The value Debezium uses for a NULL in a NOT NULL column without a default, and for a
    /// function default (`now()`, `nextval(...)`): zero, empty, false or the epoch.
    pub fn zero(&self, opts: &ValueOptions) -> Value {
        match self {
            ColumnType::Bool => Value::Bool(false),
            ColumnType::Int16 | ColumnType::Int32 | ColumnType::Int64 => Value::Int(0),
            ColumnType::Date | ColumnType::Time(_) | ColumnType::Timestamp(_)
                if opts.time == TimePrecisionMode::IsoString =>
            {
                self.parse(
                    match self {
                        ColumnType::Date => "1970-01-01",
                        ColumnType::Time(_) => "00:00:00",
                        _ => "1970-01-01 00:00:00",
                    },
                    opts,
                )
                .unwrap_or(Value::Null)
            }
            ColumnType::Date | ColumnType::Time(_) | ColumnType::Timestamp(_) => Value::Int(0),
            ColumnType::Float32 => Value::Float32(0.0),
            ColumnType::Float64 => Value::Float64(0.0),
            ColumnType::Numeric { precision, scale } => {
                let zero = match scale {
                    Some(s) if *s > 0 => format!("0.{}", "0".repeat(*s as usize)),
                    _ => "0".to_string(),
                };
                parse_numeric(&zero, *precision, *scale, opts.decimal).unwrap_or(Value::Null)
            }
            ColumnType::Text => Value::String(String::new()),
            ColumnType::Json => Value::String("{}".into()),
            ColumnType::Uuid => Value::String("00000000-0000-0000-0000-000000000000".into()),
            ColumnType::Bytea => encode_binary(Vec::new(), opts.binary),
            ColumnType::TimestampTz(p) => Value::String(format_zoned_timestamp(0, *p)),
            ColumnType::Array(_) => Value::Array(Vec::new()),
            ColumnType::Money => parse_money("0", opts).unwrap_or(Value::Null),
            ColumnType::Interval => match opts.interval {
                IntervalMode::Numeric => Value::Int(0),
                IntervalMode::String => Value::String("P0Y0M0DT0H0M0S".into()),
            },
            ColumnType::TimeTz(_) => Value::String("00:00:00Z".into()),
            ColumnType::Bit => Value::Bool(false),
            ColumnType::Bits(_) => Value::Bytes(Vec::new()),
            ColumnType::Unknown | ColumnType::UnknownGeometric { .. } => {
                encode_binary(Vec::new(), opts.binary)
            }
            ColumnType::Xml | ColumnType::Ltree | ColumnType::Tsvector | ColumnType::Enum(_) => {
                Value::String(String::new())
            }
            ColumnType::Hstore => match opts.hstore {
                HstoreMode::Json => Value::String("{}".into()),
                HstoreMode::Map => Value::Map(Vec::new()),
            },
            ColumnType::Point => self.parse("(0,0)", opts).unwrap_or(Value::Null),
            // GEOMETRYCOLLECTION EMPTY.
            ColumnType::Geometry | ColumnType::Geography => self
                .parse("010700000000000000", opts)
                .unwrap_or(Value::Null),
        }
    }

    /// The value Debezium puts in a NOT NULL column that is NULL in an old image (a key-only
    /// image of a DEFAULT or INDEX replica identity) and has no default: empty strings (also
    /// for JSON, UUID, XML and enums), zero numbers, false, empty bytes, the epoch
    /// (`1970-01-01T00:00:00Z` for zoned timestamps, without a fraction).
    pub fn fallback(&self, opts: &ValueOptions) -> Value {
        match self {
            ColumnType::Text
            | ColumnType::Json
            | ColumnType::Uuid
            | ColumnType::Xml
            | ColumnType::Ltree
            | ColumnType::Tsvector
            | ColumnType::Enum(_) => Value::String(String::new()),
            ColumnType::TimestampTz(_) => Value::String("1970-01-01T00:00:00Z".into()),
            other => other.zero(opts),
        }
    }

    /// The value Debezium emits for an unchanged TOASTed column it cannot read
    /// (`unavailable.value.placeholder`, shaped to the type). `None` when Debezium has no
    /// placeholder form for the type.
    pub fn unavailable_placeholder(&self, opts: &ValueOptions) -> Option<Value> {
        let text = || String::from_utf8_lossy(&opts.placeholder).into_owned();
        Some(match self {
            ColumnType::Text
            | ColumnType::Json
            | ColumnType::Xml
            | ColumnType::Ltree
            | ColumnType::Tsvector
            | ColumnType::Enum(_) => Value::String(text()),
            ColumnType::Hstore => match opts.hstore {
                HstoreMode::Json => Value::String(text()),
                HstoreMode::Map => Value::Map(vec![(Value::String(text()), Value::String(text()))]),
            },
            ColumnType::Bytea => match opts.binary {
                BinaryMode::Bytes => Value::Bytes(opts.placeholder.clone()),
                BinaryMode::Hex => Value::String(text()),
                // Debezium does not recognise the marker on this path and emits null.
                BinaryMode::Base64 | BinaryMode::Base64UrlSafe => Value::Null,
            },
            ColumnType::Array(elem) => match &**elem {
                ColumnType::Text | ColumnType::Json => Value::Array(vec![Value::String(text())]),
                ColumnType::Bytea => Value::Array(vec![Value::Bytes(opts.placeholder.clone())]),
                // Debezium turns the placeholder into a name-based (version 3) UUID.
                ColumnType::Uuid => {
                    Value::Array(vec![Value::String(name_uuid::uuid_v3(&opts.placeholder))])
                }
                ColumnType::Int32 | ColumnType::Int64 | ColumnType::Date => Value::Array(
                    opts.placeholder
                        .iter()
                        .map(|b| Value::Int(*b as i64))
                        .collect(),
                ),
                _ => return None,
            },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn enums_domains_and_extension_types_resolve_through_the_catalog() {
        let mut types = TypeCatalog::new();
        let info = |name: &str,
                    typtype: u8,
                    category: u8,
                    base: u32,
                    base_typmod: i32,
                    elem: u32,
                    labels: &[&str]| TypeInfo {
            name: name.into(),
            typtype,
            category,
            base_oid: base,
            base_typmod,
            elem_oid: elem,
            enum_labels: labels.iter().map(|l| l.to_string()).collect(),
        };
        types.insert(
            90001,
            info("mood", b'e', b'E', 0, -1, 0, &["sad", "ok", "happy"]),
        );
        types.insert(90002, info("_mood", b'b', b'A', 0, -1, 90001, &[]));
        types.insert(
            90003,
            info(
                "price",
                b'd',
                b'N',
                oid::NUMERIC,
                ((10 << 16) | 2) + 4,
                0,
                &[],
            ),
        );
        types.insert(90004, info("citext", b'b', b'S', 0, -1, 0, &[]));
        types.insert(90005, info("_price", b'b', b'A', 0, -1, 90003, &[]));
        types.insert(90006, info("point3", b'c', b'C', 0, -1, 0, &[]));
        let labels = std::sync::Arc::new(vec![
            "sad".to_string(),
            "ok".to_string(),
            "happy".to_string(),
        ]);
        assert_eq!(
            ColumnType::resolve(90001, -1, &types),
            Some(ColumnType::Enum(labels.clone()))
        );
        assert_eq!(
            ColumnType::resolve(90002, -1, &types),
            Some(ColumnType::Array(Box::new(ColumnType::Enum(labels))))
        );
        assert_eq!(
            ColumnType::resolve(90003, -1, &types),
            Some(ColumnType::Numeric {
                precision: Some(10),
                scale: Some(2)
            }),
            "a domain's own precision and scale apply"
        );
        assert_eq!(
            ColumnType::resolve(90004, -1, &types),
            Some(ColumnType::Text)
        );
        assert_eq!(
            ColumnType::resolve(90005, -1, &types),
            None,
            "arrays of domains are not mapped"
        );
        assert_eq!(
            ColumnType::resolve(90006, -1, &types),
            None,
            "composite types are not mapped"
        );
        let enum_schema = ColumnType::resolve(90001, -1, &types)
            .unwrap()
            .schema(&opts());
        assert_eq!(
            enum_schema.parameters,
            vec![("allowed".to_string(), "sad,ok,happy".to_string())]
        );
        assert_eq!(enum_schema.name.as_deref(), Some("io.debezium.data.Enum"));
    }
}
