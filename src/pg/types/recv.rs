//! Binary tuple values: with pgoutput's `binary` option (PostgreSQL 14+, pgcdc's
//! `pgcdc.pgoutput.binary`), the walsender sends each column through its type's binary send
//! function (`typsend`) instead of its text output. This module reads those send formats.
//!
//! [`Wire`] says how a column's bytes are laid out; it comes from the column's base type
//! (domains unwrapped, array elements and range subtypes followed), because several types
//! share one [`ColumnType`] (`inet`, `tsrange` and `text` are all [`ColumnType::Text`]).
//! [`read`] turns the bytes into the Connect value.
//!
//! Invariant: for every type, [`read`] gives exactly the value [`ColumnType::parse`] gives
//! for the same datum's text output under the session settings pgcdc pins (DateStyle ISO,
//! TimeZone UTC). Numbers, dates, times, UUIDs, bytes, intervals, points and geometries are
//! built directly from their binary fields through the same value functions as the text
//! path; types that Debezium emits as their text (`numeric` digits, ranges, `inet`,
//! `macaddr`, bit strings) are rendered as PostgreSQL's output function renders them and
//! then parsed by the text path. A type without a binary reader is an error that names the
//! column (the caller adds it), never a guess. Types without a send function arrive as text
//! and never reach this module.

use super::{
    datetime, geometry, hstore, interval, numeric, oid, tsvector, ColumnType, TypeCatalog,
};
use crate::config::values::ValueOptions;
use crate::event::Value;

/// How a column's binary send format is laid out, from its base type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wire {
    /// The bytes are the text output: `text`, `varchar`, `char(n)`, `name`, `citext`, enums,
    /// `json`, `xml`.
    Text,
    /// A type without a send function (the `isn` types): the walsender sends its values as
    /// text, and cannot send an array of it in binary form at all.
    TextOnly,
    /// A format version byte (1), then the text output: `jsonb`, `ltree`.
    VersionedText,
    /// `boolean`: one byte.
    Bool,
    /// `smallint`: 2-byte big-endian integer.
    Int2,
    /// `integer`: 4-byte big-endian integer.
    Int4,
    /// `bigint`: 8-byte big-endian integer.
    Int8,
    /// `oid`: 4-byte big-endian unsigned integer.
    Oid,
    /// `real`: IEEE 754 single, big-endian.
    Float4,
    /// `double precision`: IEEE 754 double, big-endian.
    Float8,
    /// `numeric`: digit count, weight, sign, display scale, base-10000 digits.
    Numeric,
    /// `bytea`: the bytes.
    Bytea,
    /// `uuid`: 16 bytes.
    Uuid,
    /// `date`: 4-byte days since 2000-01-01 (`i32::MAX`/`MIN` for ±infinity).
    Date,
    /// `time`: 8-byte microseconds past midnight.
    Time,
    /// `timetz`: 8-byte microseconds past midnight, 4-byte zone in seconds west of UTC.
    TimeTz,
    /// `timestamp`: 8-byte microseconds since 2000-01-01 (`i64::MAX`/`MIN` for ±infinity).
    Timestamp,
    /// `timestamptz`: as `timestamp`, in UTC.
    TimestampTz,
    /// `money`: 8-byte amount in the smallest unit of the server's `lc_monetary`, which has
    /// `scale` fraction digits.
    Money {
        /// Fraction digits of the server's `lc_monetary` (2 for C and most locales).
        scale: u32,
    },
    /// `interval`: 8-byte microseconds, 4-byte days, 4-byte months.
    Interval,
    /// `bit(n)`, `varbit(n)`: 4-byte bit count, then the bits, most significant first.
    Bits,
    /// `point`: two doubles.
    Point,
    /// `tsvector`: lexeme count, then per lexeme its text, a 0 byte and its positions.
    Tsvector,
    /// PostGIS `geometry`, `geography`: EWKB.
    Ewkb,
    /// `hstore`: pair count, then per pair the key and the value (length -1 for NULL).
    Hstore,
    /// `inet`, `cidr`: family, bits, is-cidr flag, address length, address.
    Inet,
    /// `macaddr`: 6 bytes.
    Macaddr,
    /// `macaddr8`: 8 bytes.
    Macaddr8,
    /// A range of the subtype's format: flags, then the bounds present.
    Range(Box<Wire>),
    /// An array of the element's format: dimensions, null flag, element OID, bounds, elements.
    Array(Box<Wire>),
    /// No binary reader in this build.
    Unsupported,
}

/// Range flags (PostgreSQL's `rangetypes.h`).
const RANGE_EMPTY: u8 = 0x01;
const RANGE_LB_INC: u8 = 0x02;
const RANGE_UB_INC: u8 = 0x04;
const RANGE_LB_INF: u8 = 0x08;
const RANGE_UB_INF: u8 = 0x10;
const RANGE_LB_NULL: u8 = 0x20;
const RANGE_UB_NULL: u8 = 0x40;

/// `numeric` sign words.
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;

/// Microseconds and days from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
const PG_EPOCH_DAYS: i64 = 10_957;

impl Wire {
    /// The send format of type `type_oid` (built-in, or through `types` for domains, enums,
    /// arrays and extension types). `money_scale` is the fraction digits of the server's
    /// `lc_monetary`.
    pub fn of(type_oid: u32, types: &TypeCatalog, money_scale: u32) -> Wire {
        Self::of_depth(type_oid, types, money_scale, 0)
    }

    fn of_depth(type_oid: u32, types: &TypeCatalog, money_scale: u32, depth: u32) -> Wire {
        use oid::*;
        if depth > 8 {
            return Wire::Unsupported;
        }
        let elem = |e: u32| Box::new(Self::of_depth(e, types, money_scale, depth + 1));
        match type_oid {
            BOOL => Wire::Bool,
            INT2 => Wire::Int2,
            INT4 => Wire::Int4,
            INT8 => Wire::Int8,
            OID => Wire::Oid,
            FLOAT4 => Wire::Float4,
            FLOAT8 => Wire::Float8,
            NUMERIC => Wire::Numeric,
            TEXT | VARCHAR | BPCHAR | NAME | JSON | XML => Wire::Text,
            JSONB => Wire::VersionedText,
            BYTEA => Wire::Bytea,
            UUID => Wire::Uuid,
            DATE => Wire::Date,
            TIME => Wire::Time,
            TIMETZ => Wire::TimeTz,
            TIMESTAMP => Wire::Timestamp,
            TIMESTAMPTZ => Wire::TimestampTz,
            MONEY => Wire::Money { scale: money_scale },
            INTERVAL => Wire::Interval,
            BIT | VARBIT => Wire::Bits,
            POINT => Wire::Point,
            TSVECTOR => Wire::Tsvector,
            INET | CIDR => Wire::Inet,
            MACADDR => Wire::Macaddr,
            MACADDR8 => Wire::Macaddr8,
            INT4RANGE => Wire::Range(elem(INT4)),
            INT8RANGE => Wire::Range(elem(INT8)),
            NUMRANGE => Wire::Range(elem(NUMERIC)),
            TSRANGE => Wire::Range(elem(TIMESTAMP)),
            TSTZRANGE => Wire::Range(elem(TIMESTAMPTZ)),
            DATERANGE => Wire::Range(elem(DATE)),
            _ => match builtin_array_element(type_oid) {
                Some(e) => Wire::Array(elem(e)),
                None => Self::of_catalog(type_oid, types, money_scale, depth),
            },
        }
    }

    fn of_catalog(type_oid: u32, types: &TypeCatalog, money_scale: u32, depth: u32) -> Wire {
        let Some(info) = types.get(&type_oid) else {
            return Wire::Unsupported;
        };
        match info.typtype {
            b'd' => Self::of_depth(info.base_oid, types, money_scale, depth + 1),
            b'e' => Wire::Text,
            _ if info.category == b'A' && info.elem_oid != 0 => Wire::Array(Box::new(
                Self::of_depth(info.elem_oid, types, money_scale, depth + 1),
            )),
            _ => match info.name.as_str() {
                "citext" => Wire::Text,
                "isbn" | "isbn13" | "ismn" | "ismn13" | "issn" | "issn13" | "ean13" | "upc" => {
                    Wire::TextOnly
                }
                "ltree" => Wire::VersionedText,
                "hstore" => Wire::Hstore,
                "geometry" | "geography" => Wire::Ewkb,
                _ => Wire::Unsupported,
            },
        }
    }

    /// `true` when every value of this format can be read (arrays and ranges included).
    pub fn is_supported(&self) -> bool {
        match self {
            Wire::Unsupported => false,
            Wire::Array(e) if **e == Wire::TextOnly => false,
            Wire::Range(e) | Wire::Array(e) => e.is_supported(),
            _ => true,
        }
    }
}

/// `true` when [`read`] can give a column of type `ty` in format `wire` its value: every
/// mapped type in a supported format, and a type without a mapping (`include.unknown.datatypes`,
/// emitted as its text) only in a format that is its text or that pgcdc renders as text.
pub fn readable(wire: &Wire, ty: &ColumnType) -> bool {
    match (wire, ty) {
        (_, ColumnType::Unknown) => renders_text(wire),
        (Wire::Array(w), ColumnType::Array(t)) => wire.is_supported() && readable(w, t),
        (w, _) => w.is_supported(),
    }
}

/// `true` for the formats [`render_text`] turns into PostgreSQL's text output.
fn renders_text(wire: &Wire) -> bool {
    match wire {
        Wire::Text
        | Wire::TextOnly
        | Wire::VersionedText
        | Wire::Int2
        | Wire::Int4
        | Wire::Int8
        | Wire::Numeric
        | Wire::Date
        | Wire::Timestamp
        | Wire::TimestampTz
        | Wire::Bits
        | Wire::Inet
        | Wire::Macaddr
        | Wire::Macaddr8
        | Wire::Tsvector => true,
        Wire::Range(sub) => renders_text(sub),
        _ => false,
    }
}

/// The element type of a built-in array type.
fn builtin_array_element(array_oid: u32) -> Option<u32> {
    use oid::*;
    Some(match array_oid {
        BOOL_ARRAY => BOOL,
        BYTEA_ARRAY => BYTEA,
        INT2_ARRAY => INT2,
        INT4_ARRAY => INT4,
        INT8_ARRAY => INT8,
        OID_ARRAY => OID,
        TEXT_ARRAY => TEXT,
        BPCHAR_ARRAY => BPCHAR,
        VARCHAR_ARRAY => VARCHAR,
        FLOAT4_ARRAY => FLOAT4,
        FLOAT8_ARRAY => FLOAT8,
        NUMERIC_ARRAY => NUMERIC,
        UUID_ARRAY => UUID,
        JSON_ARRAY => JSON,
        JSONB_ARRAY => JSONB,
        DATE_ARRAY => DATE,
        TIME_ARRAY => TIME,
        TIMETZ_ARRAY => TIMETZ,
        TIMESTAMP_ARRAY => TIMESTAMP,
        TIMESTAMPTZ_ARRAY => TIMESTAMPTZ,
        INET_ARRAY => INET,
        CIDR_ARRAY => CIDR,
        MACADDR_ARRAY => MACADDR,
        MACADDR8_ARRAY => MACADDR8,
        INT4RANGE_ARRAY => INT4RANGE,
        INT8RANGE_ARRAY => INT8RANGE,
        NUMRANGE_ARRAY => NUMRANGE,
        TSRANGE_ARRAY => TSRANGE,
        TSTZRANGE_ARRAY => TSTZRANGE,
        DATERANGE_ARRAY => DATERANGE,
        _ => return None,
    })
}

/// A cursor over one value's bytes; every read checks the length.
pub(super) struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader of `data`.
    pub(super) fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.data.len() < n {
            return Err("binary value is shorter than its type's format".into());
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn i16(&mut self) -> Result<i16, String> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    pub(super) fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub(super) fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_be_bytes(self.array()?))
    }

    /// A length-prefixed item (length -1 is SQL NULL).
    fn item(&mut self) -> Result<Option<&'a [u8]>, String> {
        match self.i32()? {
            -1 => Ok(None),
            n if n < 0 => Err("negative length in a binary value".into()),
            n => self.take(n as usize).map(Some),
        }
    }

    /// Text up to a 0 byte, which is skipped (a `tsvector` lexeme). Errors: no 0 byte, or
    /// the text is not UTF-8.
    pub(super) fn cstring(&mut self) -> Result<&'a str, String> {
        let len = self
            .data
            .iter()
            .position(|b| *b == 0)
            .ok_or("binary text without its terminating 0 byte")?;
        let text = utf8(self.take(len)?)?;
        self.take(1)?;
        Ok(text)
    }

    /// The rest must be empty: a value of a fixed-size format has exactly its size.
    pub(super) fn end(&self) -> Result<(), String> {
        if self.data.is_empty() {
            Ok(())
        } else {
            Err("binary value is longer than its type's format".into())
        }
    }
}

fn utf8(data: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(data).map_err(|_| "binary value is not valid UTF-8".to_string())
}

/// Reads one fixed-size field that must be the whole value.
fn whole<'a, T>(
    data: &'a [u8],
    f: impl FnOnce(&mut Reader<'a>) -> Result<T, String>,
) -> Result<T, String> {
    let mut r = Reader { data };
    let v = f(&mut r)?;
    r.end()?;
    Ok(v)
}

/// Converts a value in binary send format `wire` to the Connect value of a column of type
/// `ty`. The error says what is wrong with the bytes (never the bytes themselves).
pub fn read(
    wire: &Wire,
    ty: &ColumnType,
    data: &[u8],
    opts: &ValueOptions,
) -> Result<Value, String> {
    use ColumnType as C;
    let mode = opts.time;
    match (wire, ty) {
        (Wire::Text | Wire::TextOnly, _) => ty.parse(utf8(data)?, opts),
        (Wire::VersionedText, _) => match data.split_first() {
            Some((1, text)) => ty.parse(utf8(text)?, opts),
            _ => Err("unknown binary format version".into()),
        },
        (Wire::Bool, C::Bool) => Ok(Value::Bool(whole(data, Reader::u8)? != 0)),
        (Wire::Int2, C::Int16) => Ok(Value::Int(whole(data, Reader::i16)? as i64)),
        (Wire::Int4, C::Int32) => Ok(Value::Int(whole(data, Reader::i32)? as i64)),
        (Wire::Int8, C::Int64) => Ok(Value::Int(whole(data, Reader::i64)?)),
        (Wire::Oid, C::Int64) => Ok(Value::Int(whole(data, Reader::i32)? as u32 as i64)),
        (Wire::Float4, C::Float32) => Ok(Value::Float32(f32::from_be_bytes(whole(
            data,
            Reader::array,
        )?))),
        (Wire::Float8, C::Float64) => Ok(Value::Float64(whole(data, Reader::f64)?)),
        (Wire::Bytea, C::Bytea) => Ok(super::encode_binary(data.to_vec(), opts.binary)),
        (Wire::Uuid, C::Uuid) => Ok(Value::String(super::name_uuid::uuid_text(&whole(
            data,
            Reader::array,
        )?))),
        (Wire::Date, C::Date) => Ok(datetime::date_days_value(date_days(data)?, mode)),
        (Wire::Time, C::Time(p)) => Ok(datetime::time_micros_value(
            whole(data, Reader::i64)?,
            *p,
            mode,
        )),
        (Wire::TimeTz, C::TimeTz(_)) => {
            let (micros, zone_west) = whole(data, |r| Ok((r.i64()?, r.i32()?)))?;
            // The wire's zone is in seconds west of UTC: the offset east is its negation.
            Ok(Value::String(datetime::zoned_time(
                micros,
                -i64::from(zone_west),
            )))
        }
        (Wire::Timestamp, C::Timestamp(p)) => match timestamp_micros(data)? {
            Stamp::Infinity(positive) => Ok(datetime::timestamp_infinity(positive, *p, mode)),
            Stamp::At(micros) => datetime::timestamp_micros_value(micros, *p, mode),
        },
        (Wire::TimestampTz, C::TimestampTz(p)) => match timestamp_micros(data)? {
            Stamp::Infinity(positive) => Ok(Value::String(infinity_text(positive).into())),
            Stamp::At(micros) => Ok(Value::String(datetime::format_zoned_timestamp(micros, *p))),
        },
        (Wire::Money { scale }, C::Money) => {
            numeric::money_value(money_text(whole(data, Reader::i64)?, *scale), opts)
        }
        (Wire::Interval, C::Interval) => Ok(interval::interval_fields_value(
            &interval_fields(data)?,
            opts.interval,
        )),
        (Wire::Point, C::Point) => {
            let (x, y) = whole(data, |r| Ok((r.f64()?, r.f64()?)))?;
            Ok(geometry::point_xy_value(x, y))
        }
        (Wire::Tsvector, C::Tsvector) => {
            Ok(tsvector::tsvector_value(&tsvector::tsvector_text(data)?))
        }
        (Wire::Ewkb, C::Geometry | C::Geography) => geometry::ewkb_bytes_value(data.to_vec()),
        (Wire::Hstore, C::Hstore) => {
            Ok(hstore::hstore_pairs_value(hstore_pairs(data)?, opts.hstore))
        }
        (Wire::Array(elem_wire), C::Array(elem_ty)) => array(elem_wire, elem_ty, data, opts),
        (Wire::Unsupported, _) => Err("pgcdc has no reader for this type's binary form".into()),
        // The formats Debezium emits as their text: rendered as PostgreSQL's output function
        // renders them, then read by the text path.
        (wire, ty) => ty.parse(&render_text(wire, data)?, opts),
    }
}

/// `true` when a `numeric` value (or an element of a `numeric[]`) in binary form is NaN or an
/// infinity, which precise decimal mode cannot represent.
pub fn special_numeric(wire: &Wire, data: &[u8]) -> bool {
    let special = |d: &[u8]| {
        d.get(4..6)
            .map(|s| u16::from_be_bytes([s[0], s[1]]))
            .is_some_and(|s| matches!(s, NUMERIC_NAN | NUMERIC_PINF | NUMERIC_NINF))
    };
    match wire {
        Wire::Numeric => special(data),
        Wire::Array(e) if **e == Wire::Numeric => array_items(data)
            .map(|items| items.into_iter().flatten().any(special))
            .unwrap_or(false),
        _ => false,
    }
}

enum Stamp {
    Infinity(bool),
    At(i64),
}

fn infinity_text(positive: bool) -> &'static str {
    if positive {
        "infinity"
    } else {
        "-infinity"
    }
}

/// A `timestamp`/`timestamptz` as microseconds since 1970, or an infinity.
fn timestamp_micros(data: &[u8]) -> Result<Stamp, String> {
    Ok(match whole(data, Reader::i64)? {
        i64::MAX => Stamp::Infinity(true),
        i64::MIN => Stamp::Infinity(false),
        t => Stamp::At(
            t.checked_add(PG_EPOCH_MICROS)
                .ok_or(datetime::OUT_OF_MICROS_RANGE)?,
        ),
    })
}

/// A `date` as days since 1970 (the infinities as Debezium's sentinels).
fn date_days(data: &[u8]) -> Result<i64, String> {
    Ok(match whole(data, Reader::i32)? {
        i32::MAX => datetime::DATE_POSITIVE_INFINITY,
        i32::MIN => datetime::DATE_NEGATIVE_INFINITY,
        d => d as i64 + PG_EPOCH_DAYS,
    })
}

/// A MONEY amount in smallest units as a plain decimal with `scale` fraction digits.
fn money_text(units: i64, scale: u32) -> String {
    let sign = if units < 0 { "-" } else { "" };
    let abs = units.unsigned_abs().to_string();
    if scale == 0 {
        return format!("{sign}{abs}");
    }
    let scale = scale as usize;
    let padded = format!("{abs:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// An `interval` split into fields as the `postgres` IntervalStyle prints it: years and
/// months from the month count, days, and hours, minutes, seconds with the sign of the time.
fn interval_fields(data: &[u8]) -> Result<interval::Interval, String> {
    let (time, days, months) = whole(data, |r| Ok((r.i64()?, r.i32()?, r.i32()?)))?;
    let secs = time / 1_000_000;
    Ok(interval::Interval {
        years: (months / 12) as i64,
        months: (months % 12) as i64,
        days: days as i64,
        hours: secs / 3600,
        minutes: secs / 60 % 60,
        seconds: secs % 60,
        micros: time % 1_000_000,
    })
}

/// hstore pairs in the type's own order.
fn hstore_pairs(data: &[u8]) -> Result<Vec<(String, Option<String>)>, String> {
    let mut r = Reader { data };
    let count = r.i32()?;
    if count < 0 {
        return Err("negative hstore pair count".into());
    }
    let mut pairs = Vec::with_capacity((count as usize).min(data.len() / 8));
    for _ in 0..count {
        let key = r.item()?.ok_or("hstore key is NULL")?;
        let value = r.item()?.map(|v| utf8(v).map(str::to_string)).transpose()?;
        pairs.push((utf8(key)?.to_string(), value));
    }
    r.end()?;
    Ok(pairs)
}

/// The elements of a one-dimensional array, whatever its lower bound (`None` for SQL NULL);
/// more dimensions are the error the text path gives for them.
fn array_items(data: &[u8]) -> Result<Vec<Option<&[u8]>>, String> {
    let mut r = Reader { data };
    let ndim = r.i32()?;
    let _has_nulls = r.i32()?;
    let _element_oid = r.i32()?;
    match ndim {
        0 => return Ok(Vec::new()),
        1 => {}
        n if n > 1 => return Err(super::array::MULTI_DIMENSIONAL.into()),
        _ => return Err("negative array dimension count".into()),
    }
    let len = r.i32()?;
    let _lower_bound = r.i32()?;
    if len < 0 {
        return Err("negative array length".into());
    }
    let mut items = Vec::with_capacity((len as usize).min(data.len() / 4));
    for _ in 0..len {
        items.push(r.item()?);
    }
    r.end()?;
    Ok(items)
}

fn array(
    elem_wire: &Wire,
    elem_ty: &ColumnType,
    data: &[u8],
    opts: &ValueOptions,
) -> Result<Value, String> {
    let items = array_items(data)?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(match item {
            None => Value::Null,
            Some(d) => read(elem_wire, elem_ty, d, opts)?,
        });
    }
    Ok(Value::Array(out))
}

/// PostgreSQL's text output of a value in binary form, for the formats read through text.
fn render_text(wire: &Wire, data: &[u8]) -> Result<String, String> {
    match wire {
        Wire::Text | Wire::TextOnly => Ok(utf8(data)?.to_string()),
        Wire::VersionedText => match data.split_first() {
            Some((1, text)) => Ok(utf8(text)?.to_string()),
            _ => Err("unknown binary format version".into()),
        },
        Wire::Int2 => Ok(whole(data, Reader::i16)?.to_string()),
        Wire::Int4 => Ok(whole(data, Reader::i32)?.to_string()),
        Wire::Int8 => Ok(whole(data, Reader::i64)?.to_string()),
        Wire::Numeric => numeric_text(data),
        Wire::Date => Ok(match whole(data, Reader::i32)? {
            i32::MAX => "infinity".into(),
            i32::MIN => "-infinity".into(),
            d => datetime::pg_date_text(d as i64 + PG_EPOCH_DAYS),
        }),
        // Days and time of day from PostgreSQL's own epoch: no overflow near year 294276.
        Wire::Timestamp | Wire::TimestampTz => Ok(match whole(data, Reader::i64)? {
            i64::MAX => "infinity".into(),
            i64::MIN => "-infinity".into(),
            t => datetime::pg_timestamp_text(
                t.div_euclid(86_400_000_000) + PG_EPOCH_DAYS,
                t.rem_euclid(86_400_000_000),
                *wire == Wire::TimestampTz,
            ),
        }),
        Wire::Bits => bits_text(data),
        Wire::Inet => inet_text(data),
        Wire::Macaddr => Ok(mac_text(&whole(data, Reader::array::<6>)?)),
        Wire::Macaddr8 => Ok(mac_text(&whole(data, Reader::array::<8>)?)),
        Wire::Range(sub) => range_text(sub, data),
        Wire::Tsvector => tsvector::tsvector_text(data),
        _ => Err("pgcdc has no reader for this type's binary form".into()),
    }
}

/// `numeric` output: `-`, the integer digits (at least `0`), and exactly the display scale's
/// fraction digits; `NaN`, `Infinity`, `-Infinity`.
fn numeric_text(data: &[u8]) -> Result<String, String> {
    let mut r = Reader { data };
    let ndigits = r.i16()?;
    let weight = r.i16()? as i32;
    let sign = r.u16()?;
    let dscale = r.u16()? as usize;
    match sign {
        NUMERIC_NAN => return Ok("NaN".into()),
        NUMERIC_PINF => return Ok("Infinity".into()),
        NUMERIC_NINF => return Ok("-Infinity".into()),
        0 | NUMERIC_NEG => {}
        _ => return Err("invalid numeric sign".into()),
    }
    if ndigits < 0 {
        return Err("negative numeric digit count".into());
    }
    let mut digits = Vec::with_capacity(ndigits as usize);
    for _ in 0..ndigits {
        let d = r.i16()?;
        if !(0..10_000).contains(&d) {
            return Err("invalid numeric digit".into());
        }
        digits.push(d as u32);
    }
    r.end()?;
    let digit = |i: i32| -> u32 {
        if i < 0 {
            0
        } else {
            digits.get(i as usize).copied().unwrap_or(0)
        }
    };
    let mut s = String::with_capacity(ndigits as usize * 4 + dscale + 3);
    if sign == NUMERIC_NEG {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                s.push_str(&digit(i).to_string());
            } else {
                s.push_str(&format!("{:04}", digit(i)));
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::with_capacity(dscale + 4);
        let mut i = weight + 1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(i)));
            i += 1;
        }
        s.push_str(&frac[..dscale]);
    }
    Ok(s)
}

/// Bit string output: one `0`/`1` per bit.
fn bits_text(data: &[u8]) -> Result<String, String> {
    let mut r = Reader { data };
    let len = r.i32()?;
    if len < 0 {
        return Err("negative bit string length".into());
    }
    let bytes = r.take((len as usize).div_ceil(8))?;
    r.end()?;
    Ok((0..len as usize)
        .map(|i| {
            if bytes[i / 8] & (0x80 >> (i % 8)) != 0 {
                '1'
            } else {
                '0'
            }
        })
        .collect())
}

/// `macaddr`/`macaddr8` output: lowercase hex bytes separated by `:`.
fn mac_text(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// `inet`/`cidr` output: the address (IPv6 with the longest run of two or more zero groups
/// shortened to `::`, and an embedded IPv4 address in dotted form), then `/bits` unless the
/// value is an `inet` with a full-length mask.
fn inet_text(data: &[u8]) -> Result<String, String> {
    let mut r = Reader { data };
    let family = r.u8()?;
    let bits = r.u8()? as u32;
    let is_cidr = r.u8()? != 0;
    let len = r.u8()? as usize;
    let addr = r.take(len)?;
    r.end()?;
    let (mut s, max) = match (family, len) {
        (2, 4) => (
            addr.iter().map(u8::to_string).collect::<Vec<_>>().join("."),
            32,
        ),
        (3, 16) => (ipv6_text(addr), 128),
        _ => return Err("invalid inet address family or length".into()),
    };
    if is_cidr || bits != max {
        s.push_str(&format!("/{bits}"));
    }
    Ok(s)
}

/// An IPv6 address as PostgreSQL's `inet_net_ntop` writes it.
fn ipv6_text(a: &[u8]) -> String {
    let words: Vec<u16> = a
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    // The first longest run of zero words, if it is at least two long.
    // (first word, length) of runs of zero words.
    let mut best: Option<(usize, usize)> = None;
    let mut cur: Option<(usize, usize)> = None;
    for (i, w) in words.iter().enumerate() {
        if *w == 0 {
            cur = Some(cur.map_or((i, 1), |(b, l)| (b, l + 1)));
        } else if let Some(c) = cur.take() {
            if best.is_none_or(|b| c.1 > b.1) {
                best = Some(c);
            }
        }
    }
    if let Some(c) = cur {
        if best.is_none_or(|b| c.1 > b.1) {
            best = Some(c);
        }
    }
    let best = best.filter(|b| b.1 >= 2);
    let mut s = String::with_capacity(40);
    let mut i = 0;
    while i < 8 {
        if let Some((base, len)) = best {
            if i >= base && i < base + len {
                if i == base {
                    s.push(':');
                }
                i += 1;
                continue;
            }
        }
        if i != 0 {
            s.push(':');
        }
        let embedded_v4 = i == 6
            && best.is_some_and(|(base, len)| {
                base == 0
                    && (len == 6 || (len == 7 && words[7] != 1) || (len == 5 && words[5] == 0xffff))
            });
        if embedded_v4 {
            s.push_str(&format!("{}.{}.{}.{}", a[12], a[13], a[14], a[15]));
            return s;
        }
        s.push_str(&format!("{:x}", words[i]));
        i += 1;
    }
    if best.is_some_and(|(base, len)| base + len == 8) {
        s.push(':');
    }
    s
}

/// Range output: `empty`, or `[`/`(`, the lower bound, `,`, the upper bound, `]`/`)`, with
/// bounds quoted when they hold a special character or white space (or are empty).
fn range_text(sub: &Wire, data: &[u8]) -> Result<String, String> {
    let mut r = Reader { data };
    let flags = r.u8()?;
    if flags & RANGE_EMPTY != 0 {
        r.end()?;
        return Ok("empty".into());
    }
    let mut bound = |inf: u8| -> Result<String, String> {
        if flags & inf != 0 {
            return Ok(String::new());
        }
        let d = r.item()?.ok_or("range bound is NULL")?;
        Ok(range_bound_quoted(&render_text(sub, d)?))
    };
    let lower = bound(RANGE_LB_INF | RANGE_LB_NULL)?;
    let upper = bound(RANGE_UB_INF | RANGE_UB_NULL)?;
    r.end()?;
    Ok(format!(
        "{}{lower},{upper}{}",
        if flags & RANGE_LB_INC != 0 { '[' } else { '(' },
        if flags & RANGE_UB_INC != 0 { ']' } else { ')' },
    ))
}

/// A range bound as `range_out` writes it: in double quotes (with `"` and `\` doubled) when
/// empty or holding `"`, `\`, parentheses, brackets, `,` or white space.
fn range_bound_quoted(s: &str) -> String {
    let special =
        |c: char| matches!(c, '"' | '\\' | '(' | ')' | '[' | ']' | ',') || c.is_ascii_whitespace();
    if !s.is_empty() && !s.chars().any(special) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    super::push_quoted_doubling(s, '"', &mut out);
    out
}

#[cfg(test)]
mod tests;
