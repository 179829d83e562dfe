//! PostgreSQL column types and their Debezium representation.
//!
//! pgoutput sends every value as the type's text output (with the session settings pinned by
//! [`crate::pg::conn::SESSION_SETTINGS`]); the snapshot reads the same text through the simple
//! query protocol, so both paths share [`ColumnType::parse`] and give identical values.
//!
//! The mapping follows Debezium's PostgreSQL connector (type OID → Connect schema and value)
//! for the handling modes in [`ValueOptions`]. A type without a mapping is not guessed at:
//! [`ColumnType::from_oid`] returns `None`, and the caller reports the table, column and type.

use base64::Engine;

use crate::config::values::{
    BinaryMode, DecimalMode, HstoreMode, IntervalMode, TimePrecisionMode, ValueOptions,
};
use crate::event::{Field, Schema, SchemaType, Value};

/// What the catalog says about a type that is not one of the built-in types mapped by OID:
/// extension types (citext, ltree, isbn, ...), enums, domains and arrays of those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// `typname`.
    pub name: String,
    /// `typtype`: `b` base, `d` domain, `e` enum, `c` composite, `r` range, `p` pseudo.
    pub typtype: u8,
    /// `typcategory` (`A` for arrays).
    pub category: u8,
    /// `typbasetype` of a domain (0 otherwise).
    pub base_oid: u32,
    /// `typtypmod` of a domain (its declared length/scale), -1 when none.
    pub base_typmod: i32,
    /// `typelem` of an array type (0 otherwise).
    pub elem_oid: u32,
    /// Enum labels in `enumsortorder`.
    pub enum_labels: Vec<String>,
}

/// Type information by OID, as read from `pg_type`.
pub type TypeCatalog = std::collections::HashMap<u32, TypeInfo>;

/// Built-in type OIDs used here (from `pg_type.dat`).
pub mod oid {
    #![allow(missing_docs)]
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const JSON: u32 = 114;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIME: u32 = 1083;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const NUMERIC: u32 = 1700;
    pub const UUID: u32 = 2950;
    pub const JSONB: u32 = 3802;
    pub const XML: u32 = 142;
    pub const POINT: u32 = 600;
    pub const INT4RANGE: u32 = 3904;
    pub const INT4RANGE_ARRAY: u32 = 3905;
    pub const NUMRANGE: u32 = 3906;
    pub const NUMRANGE_ARRAY: u32 = 3907;
    pub const TSRANGE: u32 = 3908;
    pub const TSRANGE_ARRAY: u32 = 3909;
    pub const TSTZRANGE: u32 = 3910;
    pub const TSTZRANGE_ARRAY: u32 = 3911;
    pub const DATERANGE: u32 = 3912;
    pub const DATERANGE_ARRAY: u32 = 3913;
    pub const INT8RANGE: u32 = 3926;
    pub const INT8RANGE_ARRAY: u32 = 3927;
    pub const CIDR: u32 = 650;
    pub const MACADDR8: u32 = 774;
    pub const MONEY: u32 = 790;
    pub const MACADDR: u32 = 829;
    pub const INET: u32 = 869;
    pub const INTERVAL: u32 = 1186;
    pub const TIMETZ: u32 = 1266;
    pub const BIT: u32 = 1560;
    pub const VARBIT: u32 = 1562;
    pub const CIDR_ARRAY: u32 = 651;
    pub const MACADDR8_ARRAY: u32 = 775;
    pub const MACADDR_ARRAY: u32 = 1040;
    pub const INET_ARRAY: u32 = 1041;
    pub const TIMETZ_ARRAY: u32 = 1270;
    pub const BOOL_ARRAY: u32 = 1000;
    pub const BYTEA_ARRAY: u32 = 1001;
    pub const INT2_ARRAY: u32 = 1005;
    pub const INT4_ARRAY: u32 = 1007;
    pub const TEXT_ARRAY: u32 = 1009;
    pub const BPCHAR_ARRAY: u32 = 1014;
    pub const VARCHAR_ARRAY: u32 = 1015;
    pub const INT8_ARRAY: u32 = 1016;
    pub const FLOAT4_ARRAY: u32 = 1021;
    pub const FLOAT8_ARRAY: u32 = 1022;
    pub const OID_ARRAY: u32 = 1028;
    pub const TIMESTAMP_ARRAY: u32 = 1115;
    pub const DATE_ARRAY: u32 = 1182;
    pub const TIME_ARRAY: u32 = 1183;
    pub const TIMESTAMPTZ_ARRAY: u32 = 1185;
    pub const NUMERIC_ARRAY: u32 = 1231;
    pub const UUID_ARRAY: u32 = 2951;
    pub const JSON_ARRAY: u32 = 199;
    pub const JSONB_ARRAY: u32 = 3807;
}

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
    /// One-dimensional array of an element type.
    Array(Box<ColumnType>),
}

/// Sentinel MicroTimestamp for `timestamp 'infinity'` (pgjdbc's constant, used as µs by Debezium).
pub const TIMESTAMP_POSITIVE_INFINITY: i64 = 9_223_372_036_825_200_000;
/// Sentinel MicroTimestamp for `timestamp '-infinity'`.
pub const TIMESTAMP_NEGATIVE_INFINITY: i64 = -9_223_372_036_832_400_000;
/// `io.debezium.time.Date` for `date 'infinity'`.
pub const DATE_POSITIVE_INFINITY: i64 = -2_147_472_692;
/// `io.debezium.time.Date` for `date '-infinity'`.
pub const DATE_NEGATIVE_INFINITY: i64 = -2_147_472_691;

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
            ColumnType::Numeric { precision, scale } => match opts.decimal {
                DecimalMode::Double => Schema::new(T::Float64, false),
                DecimalMode::String => Schema::new(T::String, false),
                DecimalMode::Precise => match (precision, scale) {
                    (Some(p), Some(s)) => Schema::new(T::Bytes, false)
                        .named("org.apache.kafka.connect.data.Decimal")
                        .param("scale", s.to_string())
                        .param("connect.decimal.precision", p.to_string()),
                    _ => variable_scale_decimal_schema(),
                },
            },
            ColumnType::Text => Schema::new(T::String, false),
            ColumnType::Bytea => match opts.binary {
                BinaryMode::Bytes => Schema::new(T::Bytes, false),
                _ => Schema::new(T::String, false),
            },
            ColumnType::Uuid => Schema::new(T::String, false).named("io.debezium.data.Uuid"),
            ColumnType::Json => Schema::new(T::String, false).named("io.debezium.data.Json"),
            ColumnType::Date => match opts.time {
                TimePrecisionMode::Connect => {
                    Schema::new(T::Int32, false).named("org.apache.kafka.connect.data.Date")
                }
                TimePrecisionMode::IsoString => {
                    Schema::new(T::String, false).named("io.debezium.time.IsoDate")
                }
                _ => Schema::new(T::Int32, false).named("io.debezium.time.Date"),
            },
            ColumnType::Time(p) => match opts.time {
                TimePrecisionMode::Connect => {
                    Schema::new(T::Int32, false).named("org.apache.kafka.connect.data.Time")
                }
                TimePrecisionMode::Adaptive if *p <= 3 => {
                    Schema::new(T::Int32, false).named("io.debezium.time.Time")
                }
                TimePrecisionMode::Nanoseconds => {
                    Schema::new(T::Int64, false).named("io.debezium.time.NanoTime")
                }
                TimePrecisionMode::IsoString => {
                    Schema::new(T::String, false).named("io.debezium.time.IsoTime")
                }
                _ => Schema::new(T::Int64, false).named("io.debezium.time.MicroTime"),
            },
            ColumnType::Timestamp(p) => match opts.time {
                TimePrecisionMode::Connect => {
                    Schema::new(T::Int64, false).named("org.apache.kafka.connect.data.Timestamp")
                }
                TimePrecisionMode::Microseconds => {
                    Schema::new(T::Int64, false).named("io.debezium.time.MicroTimestamp")
                }
                TimePrecisionMode::Nanoseconds => {
                    Schema::new(T::Int64, false).named("io.debezium.time.NanoTimestamp")
                }
                TimePrecisionMode::IsoString => {
                    Schema::new(T::String, false).named("io.debezium.time.IsoTimestamp")
                }
                _ if *p <= 3 => Schema::new(T::Int64, false).named("io.debezium.time.Timestamp"),
                _ => Schema::new(T::Int64, false).named("io.debezium.time.MicroTimestamp"),
            },
            ColumnType::TimestampTz(_) => {
                Schema::new(T::String, false).named("io.debezium.time.ZonedTimestamp")
            }
            ColumnType::Unknown => match opts.binary {
                BinaryMode::Bytes => Schema::new(T::Bytes, false),
                _ => Schema::new(T::String, false),
            },
            ColumnType::Money => match opts.decimal {
                DecimalMode::Double => Schema::new(T::Float64, false),
                DecimalMode::String => Schema::new(T::String, false),
                DecimalMode::Precise => Schema::new(T::Bytes, false)
                    .named("org.apache.kafka.connect.data.Decimal")
                    .param("scale", opts.money_fraction_digits.to_string()),
            },
            ColumnType::Interval => match opts.interval {
                IntervalMode::Numeric => {
                    Schema::new(T::Int64, false).named("io.debezium.time.MicroDuration")
                }
                IntervalMode::String => {
                    Schema::new(T::String, false).named("io.debezium.time.Interval")
                }
            },
            ColumnType::TimeTz(_) => {
                Schema::new(T::String, false).named("io.debezium.time.ZonedTime")
            }
            ColumnType::Bit => Schema::new(T::Boolean, false),
            ColumnType::Bits(n) => Schema::new(T::Bytes, false)
                .named("io.debezium.data.Bits")
                .param("length", n.to_string()),
            ColumnType::Xml => Schema::new(T::String, false).named("io.debezium.data.Xml"),
            ColumnType::Ltree => Schema::new(T::String, false).named("io.debezium.data.Ltree"),
            ColumnType::Hstore => match opts.hstore {
                HstoreMode::Json => Schema::new(T::String, false).named("io.debezium.data.Json"),
                HstoreMode::Map => {
                    let mut m = Schema::new(T::Map, false);
                    m.keys = Some(Box::new(Schema::new(T::String, false)));
                    m.items = Some(Box::new(Schema::new(T::String, true)));
                    m
                }
            },
            ColumnType::Geometry | ColumnType::Geography => {
                let (name, doc) = if matches!(self, ColumnType::Geometry) {
                    ("io.debezium.data.geometry.Geometry", "Geometry")
                } else {
                    ("io.debezium.data.geometry.Geography", "Geography")
                };
                let mut g = Schema::structure(
                    name,
                    false,
                    vec![
                        Field::new("wkb", Schema::new(T::Bytes, false)),
                        Field::new("srid", Schema::new(T::Int32, true)),
                    ],
                );
                g.version = Some(1);
                g.doc = Some(doc.into());
                g
            }
            ColumnType::Point => {
                let mut p = Schema::structure(
                    "io.debezium.data.geometry.Point",
                    false,
                    vec![
                        Field::new("x", Schema::new(T::Float64, false)),
                        Field::new("y", Schema::new(T::Float64, false)),
                        Field::new("wkb", Schema::new(T::Bytes, true)),
                        Field::new("srid", Schema::new(T::Int32, true)),
                    ],
                );
                p.version = Some(1);
                p.doc = Some("Geometry (POINT)".into());
                p
            }
            ColumnType::Enum(labels) => Schema::new(T::String, false)
                .named("io.debezium.data.Enum")
                .param("allowed", labels.join(",")),
            // Enum elements keep their schema's optionality as Debezium builds them (required).
            ColumnType::Array(elem) if matches!(**elem, ColumnType::Enum(_)) => {
                Schema::array(elem.schema(opts), false)
            }
            ColumnType::Array(elem) => Schema::array(elem.schema(opts).optional(true), false),
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
            ColumnType::Date => {
                let days = parse_date_days(text)?;
                Ok(match opts.time {
                    TimePrecisionMode::IsoString => {
                        Value::String(format!("{}Z", format_date(days)))
                    }
                    _ => Value::Int(days),
                })
            }
            ColumnType::Time(p) => {
                let micros = parse_time_micros(text)?;
                Ok(match opts.time {
                    TimePrecisionMode::Connect => Value::Int(micros / 1000),
                    TimePrecisionMode::Adaptive if *p <= 3 => Value::Int(micros / 1000),
                    TimePrecisionMode::Nanoseconds => Value::Int(micros * 1000),
                    TimePrecisionMode::IsoString => {
                        Value::String(format!("{}Z", format_time_trimmed(micros)))
                    }
                    _ => Value::Int(micros),
                })
            }
            ColumnType::Timestamp(p) => {
                let infinity = match text {
                    "infinity" => Some(true),
                    "-infinity" => Some(false),
                    _ => None,
                };
                if let Some(positive) = infinity {
                    return Ok(match opts.time {
                        TimePrecisionMode::Nanoseconds => {
                            Value::Int(if positive { i64::MAX } else { i64::MIN })
                        }
                        TimePrecisionMode::IsoString => Value::String(text.to_string()),
                        mode => {
                            let micros = if positive {
                                TIMESTAMP_POSITIVE_INFINITY
                            } else {
                                TIMESTAMP_NEGATIVE_INFINITY
                            };
                            // Millisecond schemas (connect, and precision <= 3 outside the
                            // micro modes) carry the sentinel in milliseconds.
                            let millis = mode == TimePrecisionMode::Connect
                                || (*p <= 3 && mode != TimePrecisionMode::Microseconds);
                            Value::Int(if millis { micros / 1000 } else { micros })
                        }
                    });
                }
                let micros = parse_timestamp_micros(text)?.0;
                Ok(match opts.time {
                    TimePrecisionMode::Connect => Value::Int(micros.div_euclid(1000)),
                    TimePrecisionMode::Microseconds => Value::Int(micros),
                    TimePrecisionMode::Nanoseconds => Value::Int(micros.checked_mul(1000).ok_or(
                        "is outside the range NanoTimestamp can hold (years 1677 to 2262)",
                    )?),
                    TimePrecisionMode::IsoString => {
                        let days = micros.div_euclid(86_400_000_000);
                        let in_day = micros.rem_euclid(86_400_000_000);
                        Value::String(format!(
                            "{}T{}Z",
                            format_date(days),
                            format_time_trimmed(in_day)
                        ))
                    }
                    _ if *p <= 3 => Value::Int(micros.div_euclid(1000)),
                    _ => Value::Int(micros),
                })
            }
            ColumnType::TimestampTz(p) => match text {
                "infinity" | "-infinity" => Ok(Value::String(text.to_string())),
                _ => {
                    let (local, offset) = parse_timestamp_micros(text)?;
                    let utc = local
                        .checked_sub(offset.unwrap_or(0) as i64 * 1_000_000)
                        .ok_or(OUT_OF_MICROS_RANGE)?;
                    Ok(Value::String(format_zoned_timestamp(utc, *p)))
                }
            },
            ColumnType::Money => parse_money(text, opts),
            ColumnType::Interval => {
                let iv = parse_interval(text)?;
                Ok(match opts.interval {
                    IntervalMode::Numeric => Value::Int(iv.micro_duration()),
                    IntervalMode::String => Value::String(iv.iso_string()),
                })
            }
            ColumnType::TimeTz(_) => Ok(Value::String(parse_zoned_time(text)?)),
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
            ColumnType::Hstore => {
                let pairs = java_hashmap_order(parse_hstore(text)?);
                Ok(match opts.hstore {
                    HstoreMode::Json => Value::String(hstore_json(&pairs)),
                    HstoreMode::Map => Value::Map(
                        pairs
                            .into_iter()
                            .map(|(k, v)| (Value::String(k), v.map_or(Value::Null, Value::String)))
                            .collect(),
                    ),
                })
            }
            ColumnType::Geometry | ColumnType::Geography => {
                let wkb = parse_hex(text).ok_or("not hex-encoded EWKB")?;
                let srid = ewkb_srid(&wkb)?;
                Ok(Value::Struct(vec![
                    Value::Bytes(wkb),
                    srid.map_or(Value::Null, |s| Value::Int(s as i64)),
                ]))
            }
            ColumnType::Point => {
                let (x, y) = parse_point(text)?;
                let mut wkb = Vec::with_capacity(21);
                wkb.push(1u8);
                wkb.extend_from_slice(&1u32.to_le_bytes());
                wkb.extend_from_slice(&x.to_le_bytes());
                wkb.extend_from_slice(&y.to_le_bytes());
                Ok(Value::Struct(vec![
                    Value::Float64(x),
                    Value::Float64(y),
                    Value::Bytes(wkb),
                    Value::Null,
                ]))
            }
            ColumnType::Array(elem) => {
                // PostGIS types delimit array elements with ':' (their typdelim).
                let delimiter = match **elem {
                    ColumnType::Geometry | ColumnType::Geography => b':',
                    _ => b',',
                };
                let items = parse_array_delimited(text, delimiter)?;
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(match item {
                        None => Value::Null,
                        Some(s) => elem.parse(&s, opts)?,
                    });
                }
                Ok(Value::Array(out))
            }
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
            ColumnType::Unknown => encode_binary(Vec::new(), opts.binary),
            ColumnType::Xml | ColumnType::Ltree | ColumnType::Enum(_) => {
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
                ColumnType::Uuid => Value::Array(vec![Value::String(uuid_v3(&opts.placeholder))]),
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

fn variable_scale_decimal_schema() -> Schema {
    let mut s = Schema::structure(
        "io.debezium.data.VariableScaleDecimal",
        false,
        vec![
            Field::new("scale", Schema::new(SchemaType::Int32, false)),
            Field::new("value", Schema::new(SchemaType::Bytes, false)),
        ],
    );
    s.version = Some(1);
    s.doc = Some("Variable scaled decimal".into());
    s
}

/// Parses hstore output text (`"k"=>"v", "k2"=>NULL`) into pairs in text order.
pub fn parse_hstore(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    fn quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
        if chars.next() != Some('"') {
            return Err("hstore: expected a quoted string".into());
        }
        let mut out = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some(c) => out.push(c),
                    None => return Err("hstore: unterminated escape".into()),
                },
                Some('"') => return Ok(out),
                Some(c) => out.push(c),
                None => return Err("hstore: unterminated string".into()),
            }
        }
    }
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let key = quoted(&mut chars)?;
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') || chars.next() != Some('>') {
            return Err("hstore: expected =>".into());
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let value = if chars.peek() == Some(&'"') {
            Some(quoted(&mut chars)?)
        } else {
            let word: String =
                std::iter::from_fn(|| chars.next_if(|c| c.is_alphabetic())).collect();
            if !word.eq_ignore_ascii_case("null") {
                return Err("hstore: expected a quoted value or NULL".into());
            }
            None
        };
        pairs.push((key, value));
    }
}

/// Orders `pairs` (inserted in this order) as a `java.util.HashMap<String, String>` iterates
/// them: by bucket of the spread `String.hashCode()` in the table size the map grows to, ties in
/// insertion order. Debezium builds hstore values through such a map, so its JSON text and
/// Connect map follow this order.
pub fn java_hashmap_order<V>(pairs: Vec<(String, V)>) -> Vec<(String, V)> {
    let mut capacity: usize = 16;
    while pairs.len() * 4 > capacity * 3 {
        capacity *= 2;
    }
    let bucket = |k: &str| {
        let h = k
            .encode_utf16()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32)) as u32;
        ((h ^ (h >> 16)) as usize) & (capacity - 1)
    };
    let mut keyed: Vec<(usize, usize, (String, V))> = pairs
        .into_iter()
        .enumerate()
        .map(|(i, p)| (bucket(&p.0), i, p))
        .collect();
    keyed.sort_by_key(|(b, i, _)| (*b, *i));
    keyed.into_iter().map(|(_, _, p)| p).collect()
}

/// Compact JSON text of an hstore, as Jackson writes a `Map<String, String>`.
fn hstore_json(pairs: &[(String, Option<String>)]) -> String {
    fn string(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    let mut out = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(k, &mut out);
        out.push(':');
        match v {
            Some(v) => string(v, &mut out),
            None => out.push_str("null"),
        }
    }
    out.push('}');
    out
}

/// `java.util.UUID.nameUUIDFromBytes`: the MD5 of `bytes` with the version set to 3 and the
/// IETF variant, as `8-4-4-4-12` lower-case hex.
fn uuid_v3(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    let mut d: [u8; 16] = Md5::digest(bytes).into();
    d[6] = (d[6] & 0x0f) | 0x30;
    d[8] = (d[8] & 0x3f) | 0x80;
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Decodes hex text (either case) into bytes; `None` if it is not hex.
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let t = text.as_bytes();
    if t.len() % 2 != 0 {
        return None;
    }
    t.chunks(2)
        .map(|p| {
            let d = |c: u8| (c as char).to_digit(16);
            Some((d(p[0])? * 16 + d(p[1])?) as u8)
        })
        .collect()
}

/// The SRID embedded in PostGIS EWKB (flag 0x20000000 in the type word), if any.
fn ewkb_srid(wkb: &[u8]) -> Result<Option<i32>, String> {
    let word = |at: usize| -> Result<[u8; 4], String> {
        wkb.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| "EWKB too short".to_string())
    };
    let little = match wkb.first() {
        Some(1) => true,
        Some(0) => false,
        _ => return Err("EWKB has no byte-order mark".into()),
    };
    let read = |at: usize| -> Result<u32, String> {
        let b = word(at)?;
        Ok(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    if read(1)? & 0x2000_0000 != 0 {
        Ok(Some(read(5)? as i32))
    } else {
        Ok(None)
    }
}

/// Parses point output text `(x,y)`.
fn parse_point(text: &str) -> Result<(f64, f64), String> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or("not a point")?;
    let (x, y) = inner.split_once(',').ok_or("not a point")?;
    Ok((parse_float(x.trim())?, parse_float(y.trim())?))
}

fn parse_float(text: &str) -> Result<f64, String> {
    match text {
        "NaN" => Ok(f64::NAN),
        "Infinity" => Ok(f64::INFINITY),
        "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => text
            .parse::<f64>()
            .map_err(|_| "not a floating-point number".into()),
    }
}

/// Encodes bytes per `binary.handling.mode`.
pub fn encode_binary(bytes: Vec<u8>, mode: BinaryMode) -> Value {
    match mode {
        BinaryMode::Bytes => Value::Bytes(bytes),
        BinaryMode::Base64 => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        BinaryMode::Base64UrlSafe => {
            Value::String(base64::engine::general_purpose::URL_SAFE.encode(bytes))
        }
        BinaryMode::Hex => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let mut s = String::with_capacity(bytes.len() * 2);
            for b in bytes {
                s.push(HEX[(b >> 4) as usize] as char);
                s.push(HEX[(b & 0xF) as usize] as char);
            }
            Value::String(s)
        }
    }
}

/// Parses `bytea` hex output (`\x0102ff`).
pub fn parse_bytea(text: &str) -> Result<Vec<u8>, String> {
    let hex = text
        .strip_prefix("\\x")
        .ok_or("bytea is not in hex output format (bytea_output=hex)")?;
    if hex.len() % 2 != 0 {
        return Err("bytea hex text has an odd number of digits".into());
    }
    let digit = |c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err("bytea hex text has a non-hex digit".into()),
        }
    };
    hex.as_bytes()
        .chunks(2)
        .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// A decimal number split into sign, digits and scale.
struct DecimalParts {
    negative: bool,
    /// All digits, integer part then fraction, without leading zeros (may be empty for 0).
    digits: Vec<u8>,
    /// Number of fraction digits in `digits`.
    scale: u32,
}

fn split_decimal(text: &str) -> Result<DecimalParts, String> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return Err("not a number".into());
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return Err("not a plain decimal number".into());
    }
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let lead = digits.iter().take_while(|d| **d == 0).count();
    digits.drain(..lead);
    Ok(DecimalParts {
        negative,
        digits,
        scale: frac.len() as u32,
    })
}

/// Minimal two's-complement big-endian bytes of a decimal digit string (Java
/// `BigInteger.toByteArray`).
pub fn unscaled_bytes(negative: bool, digits: &[u8]) -> Vec<u8> {
    // Magnitude, big-endian base 256.
    let mut mag: Vec<u8> = Vec::with_capacity(digits.len() / 2 + 1);
    for &d in digits {
        let mut carry = d as u32;
        for b in mag.iter_mut().rev() {
            let v = *b as u32 * 10 + carry;
            *b = (v & 0xFF) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            mag.insert(0, (carry & 0xFF) as u8);
            carry >>= 8;
        }
    }
    if mag.is_empty() {
        return vec![0];
    }
    if !negative {
        if mag[0] & 0x80 != 0 {
            mag.insert(0, 0);
        }
        return mag;
    }
    // Two's complement: invert and add one, widening when the sign bit would be clear.
    let mut out: Vec<u8> = mag.iter().map(|b| !b).collect();
    for b in out.iter_mut().rev() {
        let (v, overflow) = b.overflowing_add(1);
        *b = v;
        if !overflow {
            break;
        }
    }
    if out[0] & 0x80 == 0 {
        out.insert(0, 0xFF);
    }
    // Drop redundant leading 0xFF bytes (keeping the sign bit set).
    while out.len() > 1 && out[0] == 0xFF && out[1] & 0x80 != 0 {
        out.remove(0);
    }
    out
}

fn parse_numeric(
    text: &str,
    precision: Option<u32>,
    scale: Option<u32>,
    mode: DecimalMode,
) -> Result<Value, String> {
    let special = match text {
        "NaN" => Some((f64::NAN, "NAN")),
        "Infinity" => Some((f64::INFINITY, "POSITIVE_INFINITY")),
        "-Infinity" => Some((f64::NEG_INFINITY, "NEGATIVE_INFINITY")),
        _ => None,
    };
    if let Some((d, s)) = special {
        return match mode {
            DecimalMode::Double => Ok(Value::Float64(d)),
            DecimalMode::String => Ok(Value::String(s.into())),
            DecimalMode::Precise => Err(format!(
                "{text} cannot be represented with decimal.handling.mode=precise; set decimal.handling.mode to double or string"
            )),
        };
    }
    match mode {
        DecimalMode::Double => text
            .parse::<f64>()
            .map(Value::Float64)
            .map_err(|_| "not a number".into()),
        DecimalMode::String => {
            split_decimal(text)?;
            Ok(Value::String(text.to_string()))
        }
        DecimalMode::Precise => {
            let mut parts = split_decimal(text)?;
            match (precision, scale) {
                (Some(_), Some(s)) => {
                    if parts.scale > s {
                        return Err(format!(
                            "has {} fraction digits, more than the column scale {s}",
                            parts.scale
                        ));
                    }
                    parts
                        .digits
                        .extend(std::iter::repeat_n(0, (s - parts.scale) as usize));
                    Ok(Value::Bytes(unscaled_bytes(parts.negative, &parts.digits)))
                }
                _ => {
                    // VariableScaleDecimal: strip trailing zeros; a negative scale becomes 0,
                    // and zero has scale 0 (BigDecimal.stripTrailingZeros).
                    while parts.scale > 0 && parts.digits.last() == Some(&0) {
                        parts.digits.pop();
                        parts.scale -= 1;
                    }
                    if parts.digits.is_empty() {
                        parts.scale = 0;
                    }
                    Ok(Value::Struct(vec![
                        Value::Int(parts.scale as i64),
                        Value::Bytes(unscaled_bytes(parts.negative, &parts.digits)),
                    ]))
                }
            }
        }
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (astronomical year numbering).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The date of a day number since 1970-01-01: (astronomical year, month, day).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse::<T>().map_err(|_| format!("invalid {what}"))
}

/// Parses ISO `YYYY-MM-DD[ BC]` into (astronomical year, month, day) and the rest of the text.
fn parse_date_part(text: &str) -> Result<(i64, u32, u32), String> {
    let mut it = text.splitn(3, '-');
    let y: i64 = num(it.next().unwrap_or(""), "year")?;
    let m: u32 = num(it.next().ok_or("missing month")?, "month")?;
    let d: u32 = num(it.next().ok_or("missing day")?, "day")?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err("date out of range".into());
    }
    Ok((y, m, d))
}

/// Parses `date` output (DateStyle ISO) into days since the epoch.
pub fn parse_date_days(text: &str) -> Result<i64, String> {
    match text {
        "infinity" => return Ok(DATE_POSITIVE_INFINITY),
        "-infinity" => return Ok(DATE_NEGATIVE_INFINITY),
        _ => {}
    }
    let (body, bc) = match text.strip_suffix(" BC") {
        Some(b) => (b, true),
        None => (text, false),
    };
    let (y, m, d) = parse_date_part(body)?;
    let y = if bc { 1 - y } else { y };
    Ok(days_from_civil(y, m, d))
}

/// Parses `HH:MM:SS[.ffffff]` into microseconds past midnight (24:00:00 allowed).
pub fn parse_time_micros(text: &str) -> Result<i64, String> {
    let mut it = text.splitn(3, ':');
    let h: i64 = num(it.next().unwrap_or(""), "hour")?;
    let mi: i64 = num(it.next().ok_or("missing minute")?, "minute")?;
    let sec = it.next().ok_or("missing second")?;
    let (s, frac) = sec.split_once('.').unwrap_or((sec, ""));
    let s: i64 = num(s, "second")?;
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid fraction of a second".into());
    }
    let micros: i64 = if frac.is_empty() {
        0
    } else {
        num::<i64>(frac, "fraction")? * 10i64.pow(6 - frac.len() as u32)
    };
    if h > 24 || mi > 59 || s > 60 {
        return Err("time out of range".into());
    }
    Ok(((h * 60 + mi) * 60 + s) * 1_000_000 + micros)
}

/// Parses a UTC offset as PostgreSQL prints it (`+HH`, `-HH:MM`, `+HH:MM:SS`; local mean time
/// offsets have seconds) into seconds east of UTC.
fn parse_utc_offset(o: &str) -> Result<i32, String> {
    let sign = if o.starts_with('-') { -1 } else { 1 };
    let mut parts = o.get(1..).unwrap_or("").split(':');
    let h: i32 = num(parts.next().unwrap_or(""), "offset hours")?;
    let mut next = |what: &str| -> Result<i32, String> {
        parts
            .next()
            .map(|p| num(p, what))
            .transpose()
            .map(|v| v.unwrap_or(0))
    };
    let mi = next("offset minutes")?;
    let s = next("offset seconds")?;
    Ok(sign * (h * 3600 + mi * 60 + s))
}

/// Parses `timestamp`/`timestamptz` output (`YYYY-MM-DD HH:MM:SS[.ffffff][+HH[:MM[:SS]]][ BC]`)
/// into local microseconds since the epoch and the UTC offset in seconds, if any.
pub fn parse_timestamp_micros(text: &str) -> Result<(i64, Option<i32>), String> {
    let (body, bc) = match text.strip_suffix(" BC") {
        Some(b) => (b, true),
        None => (text, false),
    };
    let (date, rest) = body.split_once(' ').ok_or("missing time part")?;
    let (y, m, d) = parse_date_part(date)?;
    let y = if bc { 1 - y } else { y };
    let sign_pos = rest.find(['+', '-']);
    let (time, offset) = match sign_pos {
        Some(p) => (&rest[..p], Some(&rest[p..])),
        None => (rest, None),
    };
    let micros = parse_time_micros(time)?;
    let offset = match offset {
        None => None,
        Some(o) => Some(parse_utc_offset(o)?),
    };
    // Timestamps near PostgreSQL's upper limit (year 294276) do not fit in i64 microseconds
    // since 1970 (PostgreSQL counts from 2000).
    let local = days_from_civil(y, m, d)
        .checked_mul(86_400_000_000)
        .and_then(|t| t.checked_add(micros))
        .ok_or(OUT_OF_MICROS_RANGE)?;
    Ok((local, offset))
}

/// Why a timestamp beyond the range of i64 microseconds since 1970 cannot be converted.
const OUT_OF_MICROS_RANGE: &str =
    "is outside the range of microseconds since 1970 in 64 bits (about years -290308 to 294247)";

/// Formats UTC microseconds as Debezium's ZonedTimestamp: ISO-8601, fraction padded to
/// `precision` digits (none for 0), `Z`; years above 9999 with `+`, BC years negative.
pub fn format_zoned_timestamp(utc_micros: i64, precision: u32) -> String {
    let days = utc_micros.div_euclid(86_400_000_000);
    let in_day = utc_micros.rem_euclid(86_400_000_000);
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / 1_000_000;
    let frac = in_day % 1_000_000;
    let year = if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    let mut s = format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if precision > 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(&f[..precision.min(6) as usize]);
    }
    s.push('Z');
    s
}

/// `YYYY-MM-DD` of a day number (years above 9999 with `+`, BC years negative).
fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    let year = if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    format!("{year}-{m:02}-{d:02}")
}

/// `HH:MM:SS[.fraction]` with the fraction only when non-zero, trailing zeros removed.
fn format_time_trimmed(micros: i64) -> String {
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

/// Splits a one-dimensional array literal (`{a,"b c",NULL}`) into element texts; `None` is
/// SQL NULL. Multi-dimensional arrays and explicit bounds are errors.
pub fn parse_array(text: &str) -> Result<Vec<Option<String>>, String> {
    parse_array_delimited(text, b',')
}

/// [`parse_array`] for element types whose `typdelim` is `delimiter`.
pub fn parse_array_delimited(text: &str, delimiter: u8) -> Result<Vec<Option<String>>, String> {
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or(
            "array text is not of the form {...} (arrays with explicit bounds are not supported)",
        )?;
    let mut out = Vec::new();
    if inner.is_empty() {
        return Ok(out);
    }
    let bytes = inner.as_bytes();
    let mut i = 0;
    loop {
        if bytes.get(i) == Some(&b'{') {
            return Err("multi-dimensional arrays are not supported".into());
        }
        let mut item = Vec::new();
        let quoted = bytes.get(i) == Some(&b'"');
        if quoted {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err("unterminated quoted array element".into()),
                    Some(b'\\') => {
                        let c = *bytes.get(i + 1).ok_or("dangling escape in array element")?;
                        item.push(c);
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        item.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while let Some(&c) = bytes.get(i) {
                if c == delimiter {
                    break;
                }
                if c == b'\\' {
                    item.push(*bytes.get(i + 1).ok_or("dangling escape in array element")?);
                    i += 2;
                    continue;
                }
                item.push(c);
                i += 1;
            }
        }
        let s = String::from_utf8(item).map_err(|_| "array element is not UTF-8")?;
        out.push(if !quoted && s == "NULL" {
            None
        } else {
            Some(s)
        });
        match bytes.get(i) {
            None => break,
            Some(&c) if c == delimiter => i += 1,
            Some(_) => return Err("unexpected character after array element".into()),
        }
    }
    Ok(out)
}

/// Converts a column default expression (`pg_get_expr` text) into the schema default
/// Debezium derives: literals parsed with the column's converter, function calls and
/// `CURRENT_*`/`LOCAL*` keywords as the type's zero value, `NULL` and anything else as none.
pub fn parse_default(expr: &str, ty: &ColumnType, opts: &ValueOptions) -> Option<Value> {
    // Debezium derives defaults for these types only (not for bytea, unconstrained numeric,
    // money, arrays, ...).
    let supported = match ty {
        ColumnType::Numeric { scale, .. } => scale.is_some(),
        ColumnType::Bool
        | ColumnType::Int16
        | ColumnType::Int32
        | ColumnType::Int64
        | ColumnType::Float32
        | ColumnType::Float64
        | ColumnType::Text
        | ColumnType::Json
        | ColumnType::Xml
        | ColumnType::Uuid
        | ColumnType::Date
        | ColumnType::Time(_)
        | ColumnType::Timestamp(_)
        | ColumnType::TimestampTz(_)
        | ColumnType::Interval
        | ColumnType::Bit
        | ColumnType::Bits(_)
        | ColumnType::Enum(_) => true,
        _ => false,
    };
    if !supported {
        return None;
    }
    let e = expr.trim();
    let upper = e.to_ascii_uppercase();
    if upper.starts_with("NULL") {
        return None;
    }
    const KEYWORDS: [&str; 5] = [
        "CURRENT_TIMESTAMP",
        "CURRENT_TIME",
        "CURRENT_DATE",
        "LOCALTIME",
        "LOCALTIMESTAMP",
    ];
    if KEYWORDS.iter().any(|k| upper.starts_with(k)) {
        return Some(ty.zero(opts));
    }
    // A quoted literal with an optional cast: 'text'::type
    if let Some(rest) = e.strip_prefix('\'') {
        let mut lit = String::new();
        let mut chars = rest.chars().peekable();
        let mut closed = false;
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    lit.push('\'');
                    chars.next();
                    continue;
                }
                closed = true;
                break;
            }
            lit.push(c);
        }
        if !closed {
            return None;
        }
        let tail: String = chars.collect();
        if !(tail.is_empty() || tail.starts_with("::")) {
            return None;
        }
        return ty.parse(&lit, opts).ok();
    }
    // A function call: name(...) possibly with a cast.
    let ident_end = e
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '"'))
        .unwrap_or(e.len());
    if ident_end > 0 && e[ident_end..].starts_with('(') {
        return Some(ty.zero(opts));
    }
    // A bare number or boolean, possibly parenthesised and cast: (-1), 1.5, true
    let bare = e
        .split("::")
        .next()
        .unwrap_or(e)
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')');
    match (ty, bare) {
        (ColumnType::Bool, "true") => Some(Value::Bool(true)),
        (ColumnType::Bool, "false") => Some(Value::Bool(false)),
        _ => ty.parse(bare, opts).ok(),
    }
}

/// Parses MONEY text as Debezium does (`PostgresMoney`), more robustly: a leading `-` or
/// parentheses mark a negative amount; currency symbols and spaces are dropped; with both `.`
/// and `,` present the last one is the decimal separator, with one kind only it is the decimal
/// separator when at most two digits follow its last occurrence. Precise mode rounds HALF_UP to
/// `money.fraction.digits`.
fn parse_money(text: &str, opts: &ValueOptions) -> Result<Value, String> {
    let negative = text.contains('-') || text.contains('(');
    let kept: String = text
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .collect();
    if !kept.bytes().any(|b| b.is_ascii_digit()) {
        return Err("not a money amount".into());
    }
    let last_dot = kept.rfind('.');
    let last_comma = kept.rfind(',');
    let decimal_at = match (last_dot, last_comma) {
        (Some(d), Some(c)) => Some(d.max(c)),
        (Some(p), None) | (None, Some(p)) => (kept.len() - p - 1 <= 2).then_some(p),
        (None, None) => None,
    };
    let (int_part, frac_part) = match decimal_at {
        Some(p) => (&kept[..p], &kept[p + 1..]),
        None => (kept.as_str(), ""),
    };
    let int_digits: String = int_part.chars().filter(char::is_ascii_digit).collect();
    let plain = if frac_part.is_empty() {
        int_digits
    } else {
        format!("{int_digits}.{frac_part}")
    };
    let signed = if negative { format!("-{plain}") } else { plain };
    match opts.decimal {
        DecimalMode::Double => signed
            .parse::<f64>()
            .map(Value::Float64)
            .map_err(|_| "not a money amount".into()),
        DecimalMode::String => Ok(Value::String(signed)),
        DecimalMode::Precise => {
            let mut parts = split_decimal(&signed)?;
            let scale = opts.money_fraction_digits;
            if parts.scale > scale {
                // HALF_UP rounding on the magnitude.
                let drop = (parts.scale - scale) as usize;
                let cut = parts.digits.len().saturating_sub(drop);
                let round_up = parts.digits.get(cut).is_some_and(|d| *d >= 5);
                parts.digits.truncate(cut);
                if round_up {
                    let mut i = parts.digits.len();
                    loop {
                        if i == 0 {
                            parts.digits.insert(0, 1);
                            break;
                        }
                        i -= 1;
                        if parts.digits[i] == 9 {
                            parts.digits[i] = 0;
                        } else {
                            parts.digits[i] += 1;
                            break;
                        }
                    }
                }
            } else {
                parts
                    .digits
                    .extend(std::iter::repeat_n(0, (scale - parts.scale) as usize));
            }
            Ok(Value::Bytes(unscaled_bytes(parts.negative, &parts.digits)))
        }
    }
}

/// An interval as PostgreSQL's `postgres` IntervalStyle prints it, split like pgjdbc's
/// `PGInterval`: years, months, days, hours, minutes, and seconds with fraction.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Interval {
    /// Years.
    pub years: i64,
    /// Months.
    pub months: i64,
    /// Days.
    pub days: i64,
    /// Hours.
    pub hours: i64,
    /// Minutes.
    pub minutes: i64,
    /// Whole seconds.
    pub seconds: i64,
    /// Microseconds beyond the whole seconds (same sign as `seconds`).
    pub micros: i64,
}

impl Interval {
    /// Debezium's MicroDuration: months count 30.4375 days, computed in doubles in Debezium's
    /// order and truncated toward zero.
    pub fn micro_duration(&self) -> i64 {
        let seconds = self.seconds as f64 + self.micros as f64 / 1e6;
        let days = (self.years as f64 * 12.0 + self.months as f64) * 30.4375 + self.days as f64;
        let secs =
            ((days * 24.0 + self.hours as f64) * 60.0 + self.minutes as f64) * 60.0 + seconds;
        (secs * 1e6) as i64
    }

    /// Debezium's Interval string: `P<y>Y<m>M<d>DT<h>H<mi>M<s>S`, seconds in plain decimal
    /// without trailing zeros.
    pub fn iso_string(&self) -> String {
        let total = self.seconds * 1_000_000 + self.micros;
        let sign = if total < 0 { "-" } else { "" };
        let abs = total.unsigned_abs();
        let whole = abs / 1_000_000;
        let frac = abs % 1_000_000;
        let secs = if frac == 0 {
            format!("{sign}{whole}")
        } else {
            let f = format!("{frac:06}");
            format!("{sign}{whole}.{}", f.trim_end_matches('0'))
        };
        format!(
            "P{}Y{}M{}DT{}H{}M{}S",
            self.years, self.months, self.days, self.hours, self.minutes, secs
        )
    }
}

/// Parses `interval` output in the `postgres` IntervalStyle: `1 year 2 mons -3 days
/// +04:05:06.78`, `00:00:00`, `-1 days`, `@`-free.
pub fn parse_interval(text: &str) -> Result<Interval, String> {
    let mut iv = Interval::default();
    let mut tokens = text.split_whitespace().peekable();
    while let Some(tok) = tokens.next() {
        if tok.contains(':') {
            let negative = tok.starts_with('-');
            let t = tok.trim_start_matches(['-', '+']);
            let mut parts = t.splitn(3, ':');
            let h: i64 = num(parts.next().unwrap_or(""), "interval hours")?;
            let m: i64 = num(parts.next().unwrap_or("0"), "interval minutes")?;
            let s = parts.next().unwrap_or("0");
            let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
            let whole: i64 = num(whole, "interval seconds")?;
            if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err("invalid interval fraction".into());
            }
            let micros: i64 = if frac.is_empty() {
                0
            } else {
                num::<i64>(frac, "fraction")? * 10i64.pow(6 - frac.len() as u32)
            };
            let sign = if negative { -1 } else { 1 };
            iv.hours = sign * h;
            iv.minutes = sign * m;
            iv.seconds = sign * whole;
            iv.micros = sign * micros;
            continue;
        }
        let n: i64 = num(tok, "interval amount")?;
        let unit = tokens.next().ok_or("interval amount without a unit")?;
        match unit.trim_end_matches('s') {
            "year" => iv.years = n,
            "mon" => iv.months = n,
            "day" => iv.days = n,
            "hour" => iv.hours = n,
            "min" | "minute" => iv.minutes = n,
            "sec" | "second" => iv.seconds = n,
            _ => {
                return Err(format!(
                    "unknown interval unit {unit:?} (IntervalStyle must be postgres)"
                ))
            }
        }
    }
    Ok(iv)
}

/// Parses `timetz` output (`13:51:30.123789+02`) into Debezium's ZonedTime: shifted to UTC,
/// `HH:mm:ss[.fraction]Z` with the fraction only when non-zero, trailing zeros removed.
pub fn parse_zoned_time(text: &str) -> Result<String, String> {
    let p = text.rfind(['+', '-']).ok_or("timetz without an offset")?;
    let micros = parse_time_micros(&text[..p])?;
    let offset = i64::from(parse_utc_offset(&text[p..])?);
    let utc = (micros - offset * 1_000_000).rem_euclid(86_400_000_000);
    let secs = utc / 1_000_000;
    let frac = utc % 1_000_000;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s.push('Z');
    Ok(s)
}

/// Debezium's `io.debezium.data.Bits` bytes: the bit string read as an unsigned binary number
/// (first character most significant), written least-significant byte first in the fewest
/// bytes that hold the highest set bit (zero gives no bytes).
pub fn bits_to_bytes(text: &str) -> Result<Vec<u8>, String> {
    let bits = text.as_bytes();
    if !bits.iter().all(|b| *b == b'0' || *b == b'1') {
        return Err("not a bit string".into());
    }
    let mut out = Vec::with_capacity(bits.len() / 8 + 1);
    let mut chunk_end = bits.len();
    while chunk_end > 0 {
        let start = chunk_end.saturating_sub(8);
        let mut byte = 0u8;
        for b in &bits[start..chunk_end] {
            byte = (byte << 1) | (b - b'0');
        }
        out.push(byte);
        chunk_end = start;
    }
    while out.last() == Some(&0) {
        out.pop();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn unscaled_bytes_match_java_big_integer() {
        assert_eq!(unscaled_bytes(false, &[1, 2, 3, 4]), vec![0x04, 0xD2]); // 1234 -> BNI=
        assert_eq!(unscaled_bytes(false, &[1, 1, 0]), vec![0x6E]); // 110 -> bg==
        assert_eq!(unscaled_bytes(false, &[]), vec![0]);
        assert_eq!(unscaled_bytes(false, &[1, 2, 8]), vec![0x00, 0x80]);
        assert_eq!(unscaled_bytes(true, &[1, 2, 8]), vec![0x80]);
        assert_eq!(unscaled_bytes(true, &[1, 2, 9]), vec![0xFF, 0x7F]);
        assert_eq!(unscaled_bytes(true, &[1]), vec![0xFF]);
        assert_eq!(unscaled_bytes(true, &[2, 5, 6]), vec![0xFF, 0x00]);
        assert_eq!(
            unscaled_bytes(false, &[1, 0, 1, 1, 1, 1]),
            vec![0x01, 0x8A, 0xF7]
        ); // AYr3
    }

    #[test]
    fn constrained_numeric_is_rescaled_to_the_column_scale() {
        let t = ColumnType::Numeric {
            precision: Some(10),
            scale: Some(2),
        };
        assert_eq!(
            t.parse("12.34", &opts()).unwrap(),
            Value::Bytes(vec![0x04, 0xD2])
        );
        assert_eq!(t.parse("1.1", &opts()).unwrap(), Value::Bytes(vec![0x6E]));
        let s = ValueOptions {
            decimal: DecimalMode::String,
            ..opts()
        };
        assert_eq!(t.parse("22.22", &s).unwrap(), Value::String("22.22".into()));
    }

    #[test]
    fn unconstrained_numeric_is_a_variable_scale_decimal_without_trailing_zeros() {
        let t = ColumnType::Numeric {
            precision: None,
            scale: None,
        };
        assert_eq!(
            t.parse("10.1111", &opts()).unwrap(),
            Value::Struct(vec![Value::Int(4), Value::Bytes(vec![0x01, 0x8A, 0xF7])])
        );
        assert_eq!(
            t.parse("10.10", &opts()).unwrap(),
            Value::Struct(vec![Value::Int(1), Value::Bytes(vec![101])])
        );
        assert_eq!(
            t.parse("10", &opts()).unwrap(),
            Value::Struct(vec![Value::Int(0), Value::Bytes(vec![10])])
        );
    }

    #[test]
    fn numeric_specials_follow_the_decimal_mode() {
        let t = ColumnType::Numeric {
            precision: None,
            scale: None,
        };
        let s = ValueOptions {
            decimal: DecimalMode::String,
            ..opts()
        };
        assert_eq!(t.parse("NaN", &s).unwrap(), Value::String("NAN".into()));
        assert_eq!(
            t.parse("-Infinity", &s).unwrap(),
            Value::String("NEGATIVE_INFINITY".into())
        );
        let err = t.parse("NaN", &opts()).unwrap_err();
        assert!(err.contains("decimal.handling.mode"), "{err}");
    }

    #[test]
    fn dates_count_days_from_the_epoch() {
        assert_eq!(parse_date_days("1970-01-01").unwrap(), 0);
        assert_eq!(parse_date_days("2016-11-04").unwrap(), 17109);
        assert_eq!(
            parse_date_days("0001-01-01 BC").unwrap(),
            days_from_civil(0, 1, 1)
        );
        assert_eq!(parse_date_days("infinity").unwrap(), DATE_POSITIVE_INFINITY);
    }

    #[test]
    fn timestamps_are_read_as_utc_wall_time() {
        let t = ColumnType::Timestamp(6);
        assert_eq!(
            t.parse("2018-06-20 15:13:16.945104", &opts()).unwrap(),
            Value::Int(1529507596945104)
        );
        assert_eq!(
            ColumnType::Timestamp(3)
                .parse("2018-06-20 15:13:16.945", &opts())
                .unwrap(),
            Value::Int(1529507596945)
        );
        assert_eq!(
            t.parse("infinity", &opts()).unwrap(),
            Value::Int(TIMESTAMP_POSITIVE_INFINITY)
        );
    }

    #[test]
    fn timestamps_beyond_64_bit_microseconds_are_errors_not_panics() {
        // PostgreSQL's last timestamp does not fit in i64 microseconds since 1970.
        for (t, text) in [
            (ColumnType::Timestamp(6), "294276-12-31 23:59:59.999999"),
            (
                ColumnType::TimestampTz(6),
                "294276-12-31 23:59:59.999999+00",
            ),
            (
                ColumnType::TimestampTz(6),
                "294247-01-10 04:00:54.775807-14",
            ),
        ] {
            for time in [
                TimePrecisionMode::Adaptive,
                TimePrecisionMode::Connect,
                TimePrecisionMode::IsoString,
                TimePrecisionMode::Nanoseconds,
            ] {
                let o = ValueOptions { time, ..opts() };
                let err = t.parse(text, &o).unwrap_err();
                assert!(err.contains("outside the range"), "{text} {time:?}: {err}");
            }
        }
        // The last one that fits still converts.
        assert_eq!(
            ColumnType::Timestamp(6)
                .parse("294247-01-10 04:00:54.775807", &opts())
                .unwrap(),
            Value::Int(i64::MAX)
        );
    }

    #[test]
    fn zoned_timestamps_are_utc_padded_to_the_column_precision() {
        let t = ColumnType::TimestampTz(6);
        assert_eq!(
            t.parse("2020-04-01 11:51:02+00", &opts()).unwrap(),
            Value::String("2020-04-01T11:51:02.000000Z".into())
        );
        assert_eq!(
            t.parse("2016-11-04 13:51:30.123456+02", &opts()).unwrap(),
            Value::String("2016-11-04T11:51:30.123456Z".into())
        );
        assert_eq!(
            ColumnType::TimestampTz(0)
                .parse("2016-11-04 13:51:30+05:30", &opts())
                .unwrap(),
            Value::String("2016-11-04T08:21:30Z".into())
        );
        assert_eq!(format_zoned_timestamp(0, 6), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn times_follow_adaptive_precision() {
        assert_eq!(
            ColumnType::Time(6).parse("24:00:00", &opts()).unwrap(),
            Value::Int(86_400_000_000)
        );
        assert_eq!(
            ColumnType::Time(3).parse("01:02:03.456", &opts()).unwrap(),
            Value::Int(3_723_456)
        );
    }

    #[test]
    fn arrays_unquote_and_keep_nulls() {
        assert_eq!(
            parse_array(r#"{a,"b c",NULL,"NULL","x\"y"}"#).unwrap(),
            vec![
                Some("a".into()),
                Some("b c".into()),
                None,
                Some("NULL".into()),
                Some("x\"y".into())
            ]
        );
        assert_eq!(parse_array("{}").unwrap(), Vec::<Option<String>>::new());
        assert!(parse_array("{{1,2},{3,4}}").is_err());
        let t = ColumnType::Array(Box::new(ColumnType::Bytea));
        assert_eq!(
            t.parse(r#"{"\\x01ff",NULL}"#, &opts()).unwrap(),
            Value::Array(vec![Value::Bytes(vec![1, 255]), Value::Null])
        );
    }

    #[test]
    fn defaults_become_literals_or_zero_values() {
        let o = opts();
        assert_eq!(
            parse_default("nextval('t_id_seq'::regclass)", &ColumnType::Int32, &o),
            Some(Value::Int(0))
        );
        assert_eq!(
            parse_default("now()", &ColumnType::TimestampTz(6), &o),
            Some(Value::String("1970-01-01T00:00:00.000000Z".into()))
        );
        assert_eq!(
            parse_default("'abc'::character varying", &ColumnType::Text, &o),
            Some(Value::String("abc".into()))
        );
        assert_eq!(
            parse_default("'it''s'::text", &ColumnType::Text, &o),
            Some(Value::String("it's".into()))
        );
        assert_eq!(
            parse_default("(-1)", &ColumnType::Int32, &o),
            Some(Value::Int(-1))
        );
        assert_eq!(parse_default("NULL::text", &ColumnType::Text, &o), None);
        assert_eq!(
            parse_default("true", &ColumnType::Bool, &o),
            Some(Value::Bool(true))
        );
        assert_eq!(
            parse_default("CURRENT_TIMESTAMP", &ColumnType::Timestamp(6), &o),
            Some(Value::Int(0))
        );
    }

    #[test]
    fn money_follows_the_decimal_mode_and_fraction_digits() {
        let o = opts();
        assert_eq!(
            ColumnType::Money.parse("$1,234.11", &o).unwrap(),
            Value::Bytes(vec![0x01, 0xE2, 0x13])
        );
        assert_eq!(
            ColumnType::Money.parse("-$1,234.11", &o).unwrap(),
            Value::Bytes(vec![0xFE, 0x1D, 0xED])
        );
        assert_eq!(
            ColumnType::Money.parse("($1,234.11)", &o).unwrap(),
            Value::Bytes(vec![0xFE, 0x1D, 0xED])
        );
        assert_eq!(
            ColumnType::Money.parse("€1.234,56", &o).unwrap(),
            parse_money("1234.56", &o).unwrap()
        );
        let s = ValueOptions {
            decimal: DecimalMode::String,
            ..opts()
        };
        assert_eq!(
            ColumnType::Money
                .parse("$92,233,720,368,547,758.07", &s)
                .unwrap(),
            Value::String("92233720368547758.07".into())
        );
        let d = ValueOptions {
            decimal: DecimalMode::Double,
            ..opts()
        };
        assert_eq!(
            ColumnType::Money.parse("-$0.50", &d).unwrap(),
            Value::Float64(-0.5)
        );
        let one_digit = ValueOptions {
            money_fraction_digits: 1,
            ..opts()
        };
        assert_eq!(
            ColumnType::Money.parse("$1.25", &one_digit).unwrap(),
            Value::Bytes(vec![13]),
            "HALF_UP to 1.3"
        );
        assert_eq!(
            ColumnType::Money.schema(&o).parameters,
            vec![("scale".to_string(), "2".to_string())]
        );
    }

    #[test]
    fn intervals_become_micro_durations_or_iso_strings() {
        let iv = parse_interval("1 year 2 mons 3 days 04:05:06.78").unwrap();
        assert_eq!(iv.micro_duration(), 37_091_106_780_000);
        assert_eq!(iv.iso_string(), "P1Y2M3DT4H5M6.78S");
        assert_eq!(
            parse_interval("00:00:00").unwrap().iso_string(),
            "P0Y0M0DT0H0M0S"
        );
        let neg = parse_interval("-1 days +02:03:00").unwrap();
        assert_eq!(neg.iso_string(), "P0Y0M-1DT2H3M0S");
        let neg_time = parse_interval("-00:00:01.5").unwrap();
        assert_eq!(neg_time.iso_string(), "P0Y0M0DT0H0M-1.5S");
        assert_eq!(neg_time.micro_duration(), -1_500_000);
        assert!(
            parse_interval("P1D").is_err(),
            "ISO style input is not the postgres style"
        );
    }

    #[test]
    fn timetz_is_shifted_to_utc_with_only_the_needed_fraction() {
        assert_eq!(
            parse_zoned_time("13:51:30.123789+02").unwrap(),
            "11:51:30.123789Z"
        );
        assert_eq!(parse_zoned_time("13:51:30+02").unwrap(), "11:51:30Z");
        assert_eq!(parse_zoned_time("01:00:00.5-03:30").unwrap(), "04:30:00.5Z");
        assert_eq!(parse_zoned_time("01:00:00+05").unwrap(), "20:00:00Z");
    }

    #[test]
    fn bit_strings_are_little_endian_minimal_bytes() {
        assert_eq!(bits_to_bytes("11").unwrap(), vec![0x03]);
        assert_eq!(bits_to_bytes("1000000").unwrap(), vec![0x40]);
        assert_eq!(
            bits_to_bytes("000000110000001000000001").unwrap(),
            vec![0x01, 0x02, 0x03]
        );
        assert_eq!(bits_to_bytes("00").unwrap(), Vec::<u8>::new());
        assert_eq!(
            bits_to_bytes("1000000000000000000000000000000000000000000000000000000000000000")
                .unwrap(),
            vec![0, 0, 0, 0, 0, 0, 0, 0x80]
        );
        assert_eq!(
            bits_to_bytes("111011010001000110000001000000001").unwrap(),
            vec![0x01, 0x02, 0x23, 0xda, 0x01]
        );
        assert_eq!(ColumnType::from_oid(oid::BIT, 1), Some(ColumnType::Bit));
        assert_eq!(
            ColumnType::from_oid(oid::VARBIT, -1),
            Some(ColumnType::Bits(2147483647))
        );
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

    #[test]
    fn isostring_microseconds_and_nanoseconds_modes_follow_debezium() {
        let iso = ValueOptions {
            time: TimePrecisionMode::IsoString,
            ..opts()
        };
        assert_eq!(
            ColumnType::Date.parse("2017-09-15", &iso).unwrap(),
            Value::String("2017-09-15Z".into())
        );
        assert_eq!(
            ColumnType::Timestamp(0)
                .parse("2019-07-09 02:28:57", &iso)
                .unwrap(),
            Value::String("2019-07-09T02:28:57Z".into())
        );
        assert_eq!(
            ColumnType::Timestamp(1)
                .parse("2019-07-09 02:28:57.1", &iso)
                .unwrap(),
            Value::String("2019-07-09T02:28:57.1Z".into())
        );
        assert_eq!(
            ColumnType::Time(6).parse("04:05:11.789", &iso).unwrap(),
            Value::String("04:05:11.789Z".into())
        );
        assert_eq!(
            ColumnType::Date.schema(&iso).name.as_deref(),
            Some("io.debezium.time.IsoDate")
        );
        let nano = ValueOptions {
            time: TimePrecisionMode::Nanoseconds,
            ..opts()
        };
        assert_eq!(
            ColumnType::Timestamp(6)
                .parse("2019-07-09 02:28:57.123456", &nano)
                .unwrap(),
            Value::Int(1_562_639_337_123_456_000)
        );
        assert_eq!(
            ColumnType::Timestamp(0)
                .parse("2019-07-09 02:28:57", &nano)
                .unwrap(),
            Value::Int(1_562_639_337_000_000_000)
        );
        assert_eq!(
            ColumnType::Time(6).parse("04:05:11.789", &nano).unwrap(),
            Value::Int(14_711_789_000_000)
        );
        assert_eq!(
            ColumnType::Timestamp(3).parse("infinity", &nano).unwrap(),
            Value::Int(i64::MAX)
        );
        assert_eq!(
            ColumnType::Timestamp(3).parse("-infinity", &nano).unwrap(),
            Value::Int(i64::MIN)
        );
        assert!(
            ColumnType::Timestamp(6)
                .parse("3000-01-01 00:00:00", &nano)
                .is_err(),
            "outside NanoTimestamp's range"
        );
        assert_eq!(
            ColumnType::Date.parse("2017-09-15", &nano).unwrap(),
            Value::Int(17424)
        );
        let micro = ValueOptions {
            time: TimePrecisionMode::Microseconds,
            ..opts()
        };
        assert_eq!(
            ColumnType::Timestamp(3)
                .parse("2019-07-09 02:28:57.123", &micro)
                .unwrap(),
            Value::Int(1_562_639_337_123_000)
        );
        assert_eq!(
            ColumnType::Time(3).schema(&micro).name.as_deref(),
            Some("io.debezium.time.MicroTime")
        );
    }

    #[test]
    fn hstore_text_parses_with_escapes_and_nulls() {
        assert_eq!(
            parse_hstore(r#""a"=>"1", "b c"=>NULL, "q"=>"x \"y\" \\ z", "e"=>"""#).unwrap(),
            vec![
                ("a".to_string(), Some("1".to_string())),
                ("b c".to_string(), None),
                ("q".to_string(), Some(r#"x "y" \ z"#.to_string())),
                ("e".to_string(), Some(String::new())),
            ]
        );
        assert_eq!(parse_hstore("").unwrap(), vec![]);
        assert!(parse_hstore(r#""a"=>"#).is_err());
        assert!(parse_hstore(r#""a"=>"unterminated"#).is_err());
        assert!(parse_hstore(r#""a" "b""#).is_err());
    }

    #[test]
    fn hstore_json_follows_java_hashmap_order() {
        // Debezium's own test expects key5 before key4 (java.util.HashMap iteration order).
        let opts = opts();
        assert_eq!(
            ColumnType::Hstore
                .parse(r#""key4"=>"val4", "key5"=>NULL"#, &opts)
                .unwrap(),
            Value::String(r#"{"key5":null,"key4":"val4"}"#.into())
        );
        // More than 12 keys: the table grows to 32 buckets.
        let many: Vec<(String, ())> = (0..13).map(|i| (format!("k{i}"), ())).collect();
        let order: Vec<String> = java_hashmap_order(many).into_iter().map(|p| p.0).collect();
        // What `new HashMap<>()` with k0..k12 put in order iterates as, on Java 17.
        assert_eq!(order.join(","), "k0,k1,k2,k3,k4,k5,k11,k6,k10,k7,k8,k12,k9");
    }

    #[test]
    fn points_carry_little_endian_wkb_and_uuid_placeholders_are_name_based() {
        let v = ColumnType::Point.parse("(1,1)", &opts()).unwrap();
        let Value::Struct(f) = v else {
            panic!("struct")
        };
        assert_eq!(f[0], Value::Float64(1.0));
        assert_eq!(
            f[2],
            Value::Bytes(vec![
                1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f
            ])
        );
        assert!(ColumnType::Point.parse("(1;1)", &opts()).is_err());
        // java.util.UUID.nameUUIDFromBytes("__debezium_unavailable_value"), from Debezium's test.
        assert_eq!(
            uuid_v3(b"__debezium_unavailable_value"),
            "b68a35a7-17ad-35b3-af2a-ae46edb4545a"
        );
    }

    #[test]
    fn utc_offsets_parse_with_minutes_and_local_mean_time_seconds() {
        assert_eq!(parse_utc_offset("+05:30"), Ok(19_800));
        assert_eq!(parse_utc_offset("-03:30"), Ok(-12_600));
        assert_eq!(parse_utc_offset("-08"), Ok(-28_800));
        assert_eq!(parse_utc_offset("+00:53:28"), Ok(3_208));
        assert!(parse_utc_offset("+").is_err());
        assert!(parse_utc_offset("+xx").is_err());
        assert_eq!(
            parse_zoned_time("13:51:30.5-03:30"),
            Ok("17:21:30.5Z".to_string())
        );
    }
}
