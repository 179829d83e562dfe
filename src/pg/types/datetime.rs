//! Dates and times in their text form (DateStyle ISO, as the session pins it): `date`,
//! `time`, `timetz`, `timestamp` and `timestamptz` parsed into Debezium's values for each
//! `time.precision.mode`, and formatted as Debezium's ISO strings (ZonedTimestamp, ZonedTime,
//! IsoDate, IsoTime, IsoTimestamp).
//!
//! Invariants:
//! - Arithmetic is on the proleptic Gregorian calendar in astronomical year numbering (`1 BC`
//!   is year 0), in microseconds since 1970-01-01 00:00 UTC; `timestamp` is read as UTC wall
//!   time, `timestamptz` and `timetz` are shifted to UTC by the offset in their text.
//! - `infinity` and `-infinity` become Debezium's sentinel values (the constants below), never
//!   an error; a timestamp that does not fit in 64-bit microseconds (or nanoseconds) is an
//!   error that says so, never a wrapped value.

use crate::config::values::TimePrecisionMode;
use crate::event::{Schema, SchemaType, Value};

/// Sentinel MicroTimestamp for `timestamp 'infinity'` (pgjdbc's constant, used as µs by Debezium).
pub const TIMESTAMP_POSITIVE_INFINITY: i64 = 9_223_372_036_825_200_000;
/// Sentinel MicroTimestamp for `timestamp '-infinity'`.
pub const TIMESTAMP_NEGATIVE_INFINITY: i64 = -9_223_372_036_832_400_000;
/// `io.debezium.time.Date` for `date 'infinity'`.
pub const DATE_POSITIVE_INFINITY: i64 = -2_147_472_692;
/// `io.debezium.time.Date` for `date '-infinity'`.
pub const DATE_NEGATIVE_INFINITY: i64 = -2_147_472_691;

/// Why a timestamp beyond the range of i64 microseconds since 1970 cannot be converted.
pub(super) const OUT_OF_MICROS_RANGE: &str =
    "is outside the range of microseconds since 1970 in 64 bits (about years -290308 to 294247)";

/// The Connect schema of `date`.
pub(super) fn date_schema(mode: TimePrecisionMode) -> Schema {
    use SchemaType as T;
    match mode {
        TimePrecisionMode::Connect => {
            Schema::new(T::Int32, false).named("org.apache.kafka.connect.data.Date")
        }
        TimePrecisionMode::IsoString => {
            Schema::new(T::String, false).named("io.debezium.time.IsoDate")
        }
        _ => Schema::new(T::Int32, false).named("io.debezium.time.Date"),
    }
}

/// The Connect schema of `time(precision)`.
pub(super) fn time_schema(precision: u32, mode: TimePrecisionMode) -> Schema {
    use SchemaType as T;
    match mode {
        TimePrecisionMode::Connect => {
            Schema::new(T::Int32, false).named("org.apache.kafka.connect.data.Time")
        }
        TimePrecisionMode::Adaptive if precision <= 3 => {
            Schema::new(T::Int32, false).named("io.debezium.time.Time")
        }
        TimePrecisionMode::Nanoseconds => {
            Schema::new(T::Int64, false).named("io.debezium.time.NanoTime")
        }
        TimePrecisionMode::IsoString => {
            Schema::new(T::String, false).named("io.debezium.time.IsoTime")
        }
        _ => Schema::new(T::Int64, false).named("io.debezium.time.MicroTime"),
    }
}

/// The Connect schema of `timestamp(precision)`.
pub(super) fn timestamp_schema(precision: u32, mode: TimePrecisionMode) -> Schema {
    use SchemaType as T;
    match mode {
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
        _ if precision <= 3 => Schema::new(T::Int64, false).named("io.debezium.time.Timestamp"),
        _ => Schema::new(T::Int64, false).named("io.debezium.time.MicroTimestamp"),
    }
}

/// The value of `date` output text: days since the epoch, or `YYYY-MM-DDZ` in isostring mode.
pub(super) fn date_value(text: &str, mode: TimePrecisionMode) -> Result<Value, String> {
    Ok(date_days_value(parse_date_days(text)?, mode))
}

/// The value of a date given as days since the epoch (the infinities as their sentinels).
pub(super) fn date_days_value(days: i64, mode: TimePrecisionMode) -> Value {
    match mode {
        TimePrecisionMode::IsoString => Value::String(format!("{}Z", format_date(days))),
        _ => Value::Int(days),
    }
}

/// The value of `time(precision)` output text: ms, µs or ns past midnight, or
/// `HH:MM:SS[.fraction]Z` in isostring mode.
pub(super) fn time_value(
    text: &str,
    precision: u32,
    mode: TimePrecisionMode,
) -> Result<Value, String> {
    Ok(time_micros_value(parse_time_micros(text)?, precision, mode))
}

/// The value of a `time(precision)` given as microseconds past midnight.
pub(super) fn time_micros_value(micros: i64, precision: u32, mode: TimePrecisionMode) -> Value {
    match mode {
        TimePrecisionMode::Connect => Value::Int(micros / 1000),
        TimePrecisionMode::Adaptive if precision <= 3 => Value::Int(micros / 1000),
        TimePrecisionMode::Nanoseconds => Value::Int(micros * 1000),
        TimePrecisionMode::IsoString => Value::String(format!("{}Z", format_time_trimmed(micros))),
        _ => Value::Int(micros),
    }
}

/// The value of `timestamp(precision)` output text: ms, µs or ns since the epoch of the UTC
/// wall time, or an ISO string in isostring mode; the infinities as sentinels.
pub(super) fn timestamp_value(
    text: &str,
    precision: u32,
    mode: TimePrecisionMode,
) -> Result<Value, String> {
    match text {
        "infinity" => return Ok(timestamp_infinity(true, precision, mode)),
        "-infinity" => return Ok(timestamp_infinity(false, precision, mode)),
        _ => {}
    }
    timestamp_micros_value(parse_timestamp_micros(text)?.0, precision, mode)
}

/// The value of a finite `timestamp(precision)` given as microseconds since the epoch.
pub(super) fn timestamp_micros_value(
    micros: i64,
    precision: u32,
    mode: TimePrecisionMode,
) -> Result<Value, String> {
    Ok(match mode {
        TimePrecisionMode::Connect => Value::Int(micros.div_euclid(1000)),
        TimePrecisionMode::Microseconds => Value::Int(micros),
        TimePrecisionMode::Nanoseconds => Value::Int(
            micros
                .checked_mul(1000)
                .ok_or("is outside the range NanoTimestamp can hold (years 1677 to 2262)")?,
        ),
        TimePrecisionMode::IsoString => Value::String(iso_timestamp(micros)),
        _ if precision <= 3 => Value::Int(micros.div_euclid(1000)),
        _ => Value::Int(micros),
    })
}

/// Debezium's IsoTimestamp of a UTC wall time in microseconds since the epoch:
/// `yyyy-MM-ddTHH:mm:ss[.fraction]Z`, the fraction trimmed, years past 9999 with `+`.
fn iso_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(DAY_MICROS);
    let in_day = micros.rem_euclid(DAY_MICROS);
    format!("{}T{}Z", format_date(days), format_time_trimmed(in_day))
}

/// The value of `timestamp 'infinity'` (`positive`) or `'-infinity'` per mode.
pub(super) fn timestamp_infinity(positive: bool, precision: u32, mode: TimePrecisionMode) -> Value {
    let micros = if positive {
        TIMESTAMP_POSITIVE_INFINITY
    } else {
        TIMESTAMP_NEGATIVE_INFINITY
    };
    match mode {
        TimePrecisionMode::Nanoseconds => Value::Int(if positive { i64::MAX } else { i64::MIN }),
        // The ISO form of the same sentinel instant (`+294247-01-10T04:00:25.2Z`), as
        // Debezium writes it.
        TimePrecisionMode::IsoString => Value::String(iso_timestamp(micros)),
        mode => {
            // Millisecond schemas (connect, and precision <= 3 outside the
            // micro modes) carry the sentinel in milliseconds.
            let millis = mode == TimePrecisionMode::Connect
                || (precision <= 3 && mode != TimePrecisionMode::Microseconds);
            Value::Int(if millis { micros / 1000 } else { micros })
        }
    }
}

/// The value of `timestamptz(precision)` output text: Debezium's ZonedTimestamp string in
/// UTC; the infinities as their text.
pub(super) fn zoned_timestamp_value(text: &str, precision: u32) -> Result<Value, String> {
    match text {
        "infinity" | "-infinity" => Ok(Value::String(text.to_string())),
        _ => {
            let (local, offset) = parse_timestamp_micros(text)?;
            let utc = local
                .checked_sub(offset.unwrap_or(0) as i64 * 1_000_000)
                .ok_or(OUT_OF_MICROS_RANGE)?;
            Ok(Value::String(format_zoned_timestamp(utc, precision)))
        }
    }
}

pub use crate::util::{civil_from_days, days_from_civil};

/// Parses a decimal number; the error is `invalid <what>`.
pub(super) fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse::<T>().map_err(|_| format!("invalid {what}"))
}

/// Microseconds of the fraction-of-a-second digits `frac` (at most six; empty is 0), or the
/// error `invalid`.
pub(super) fn fraction_micros(frac: &str, invalid: &str) -> Result<i64, String> {
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid.into());
    }
    Ok(if frac.is_empty() {
        0
    } else {
        num::<i64>(frac, "fraction")? * 10i64.pow(6 - frac.len() as u32)
    })
}

/// Parses ISO `YYYY-MM-DD` (the ` BC` suffix already removed) into (year, month, day).
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
    let micros = fraction_micros(frac, "invalid fraction of a second")?;
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

/// Parses `timetz` output (`13:51:30.123789+02`) into Debezium's ZonedTime: shifted to UTC,
/// `HH:mm:ss[.fraction]Z` with the fraction only when non-zero, trailing zeros removed.
pub fn parse_zoned_time(text: &str) -> Result<String, String> {
    let p = text.rfind(['+', '-']).ok_or("timetz without an offset")?;
    let micros = parse_time_micros(&text[..p])?;
    let offset = i64::from(parse_utc_offset(&text[p..])?);
    Ok(zoned_time(micros, offset))
}

/// Microseconds in a day: PostgreSQL's `24:00:00`, the end of the day.
const DAY_MICROS: i64 = 86_400_000_000;

/// Debezium's ZonedTime of a time of day (`local_micros` past midnight, up to 24:00:00) at
/// `offset_seconds` east of UTC: shifted to UTC and wrapped into one day, except that the
/// end of the day at UTC (`24:00:00+00`, also what `timetz(0)` makes of `23:59:59.9+00`)
/// stays `24:00:00Z`, as PostgreSQL keeps it and Debezium from 3.7 does (3.6.1 writes
/// `00:00:00Z`, the start of the day: a deliberate difference).
pub(super) fn zoned_time(local_micros: i64, offset_seconds: i64) -> String {
    let utc = local_micros - offset_seconds * 1_000_000;
    let utc = if local_micros == DAY_MICROS && utc == DAY_MICROS {
        DAY_MICROS
    } else {
        utc.rem_euclid(DAY_MICROS)
    };
    format!("{}Z", format_time_trimmed(utc))
}

/// A year as Debezium's ISO strings write it: four digits at least, `+` above 9999, `-` for
/// BC (astronomical) years.
fn format_year(y: i64) -> String {
    if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    }
}

/// Formats UTC microseconds as Debezium's ZonedTimestamp: ISO-8601, fraction padded to
/// `precision` digits (none for 0), `Z`; years above 9999 with `+`, BC years negative.
pub fn format_zoned_timestamp(utc_micros: i64, precision: u32) -> String {
    let days = utc_micros.div_euclid(86_400_000_000);
    let in_day = utc_micros.rem_euclid(86_400_000_000);
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / 1_000_000;
    let frac = in_day % 1_000_000;
    // Written digit by digit: this runs for every timestamptz of every row.
    let mut s = String::with_capacity(32);
    if (0..=9999).contains(&y) {
        push_digits(&mut s, y as u32, 4);
    } else {
        s.push_str(&format_year(y));
    }
    s.push('-');
    push_digits(&mut s, m, 2);
    s.push('-');
    push_digits(&mut s, d, 2);
    s.push('T');
    push_digits(&mut s, (secs / 3600) as u32, 2);
    s.push(':');
    push_digits(&mut s, (secs / 60 % 60) as u32, 2);
    s.push(':');
    push_digits(&mut s, (secs % 60) as u32, 2);
    if precision > 0 {
        let digits = precision.min(6) as usize;
        s.push('.');
        push_digits(
            &mut s,
            (frac / 10_i64.pow(6 - digits as u32)) as u32,
            digits,
        );
    }
    s.push('Z');
    s
}

/// Appends `v` in decimal, zero-padded on the left to `width` digits (`v` < 10^width).
fn push_digits(s: &mut String, v: u32, width: usize) {
    let mut buf = [b'0'; 10];
    let mut v = v;
    for i in (0..width.min(10)).rev() {
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    s.push_str(std::str::from_utf8(&buf[..width.min(10)]).unwrap_or_default());
}

/// PostgreSQL's `date` output (DateStyle ISO) of a day number since the epoch:
/// `YYYY-MM-DD`, with ` BC` for years before 1.
pub(super) fn pg_date_text(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    let (year, bc) = if y <= 0 { (1 - y, " BC") } else { (y, "") };
    format!("{year:04}-{m:02}-{d:02}{bc}")
}

/// PostgreSQL's `timestamp` output (DateStyle ISO) of a day number since the epoch and the
/// microseconds into that day, or with `utc` its `timestamptz` output in the UTC session time
/// zone (`+00` before any ` BC`). Split so that every timestamp PostgreSQL holds (up to year
/// 294276) can be written, beyond what i64 microseconds since 1970 reach.
pub(super) fn pg_timestamp_text(days: i64, in_day: i64, utc: bool) -> String {
    let (y, m, d) = civil_from_days(days);
    let (year, bc) = if y <= 0 { (1 - y, " BC") } else { (y, "") };
    let zone = if utc { "+00" } else { "" };
    format!(
        "{year:04}-{m:02}-{d:02} {}{zone}{bc}",
        format_time_trimmed(in_day)
    )
}

/// `YYYY-MM-DD` of a day number (years above 9999 with `+`, BC years negative).
fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    let year = format_year(y);
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

#[cfg(test)]
mod tests;
