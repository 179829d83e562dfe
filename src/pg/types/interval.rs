//! `interval` in the `postgres` IntervalStyle (as the session pins it), split into fields as
//! pgjdbc's `PGInterval` does, and written as Debezium's MicroDuration (numeric mode) or
//! Interval string (string mode).
//!
//! Invariant: the fields keep the signs PostgreSQL printed (a month may be positive while a
//! day is negative); only [`Interval::micro_duration`] folds them into one number, with
//! Debezium's approximation of a month as 30.4375 days.

use super::datetime::{fraction_micros, num};
use crate::config::values::IntervalMode;
use crate::event::{Schema, SchemaType, Value};

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

/// The Connect schema of `interval` per `interval.handling.mode`.
pub(super) fn interval_schema(mode: IntervalMode) -> Schema {
    match mode {
        IntervalMode::Numeric => {
            Schema::new(SchemaType::Int64, false).named("io.debezium.time.MicroDuration")
        }
        IntervalMode::String => {
            Schema::new(SchemaType::String, false).named("io.debezium.time.Interval")
        }
    }
}

/// The value of `interval` output text per `interval.handling.mode`.
pub(super) fn interval_value(text: &str, mode: IntervalMode) -> Result<Value, String> {
    Ok(interval_fields_value(&parse_interval(text)?, mode))
}

/// The value of an interval per `interval.handling.mode`.
pub(super) fn interval_fields_value(iv: &Interval, mode: IntervalMode) -> Value {
    match mode {
        IntervalMode::Numeric => Value::Int(iv.micro_duration()),
        IntervalMode::String => Value::String(iv.iso_string()),
    }
}

/// Parses `interval` output in the `postgres` IntervalStyle: `1 year 2 mons -3 days
/// +04:05:06.78`, `00:00:00`, `-1 days`, `@`-free.
pub fn parse_interval(text: &str) -> Result<Interval, String> {
    let mut iv = Interval::default();
    let mut tokens = text.split_whitespace().peekable();
    while let Some(tok) = tokens.next() {
        if tok.contains(':') {
            set_clock(&mut iv, tok)?;
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

/// Sets the hours, minutes and seconds of `iv` from a `[-+]H:MM:SS[.ffffff]` token; a sign
/// applies to every field.
fn set_clock(iv: &mut Interval, tok: &str) -> Result<(), String> {
    let negative = tok.starts_with('-');
    let t = tok.trim_start_matches(['-', '+']);
    let mut parts = t.splitn(3, ':');
    let h: i64 = num(parts.next().unwrap_or(""), "interval hours")?;
    let m: i64 = num(parts.next().unwrap_or("0"), "interval minutes")?;
    let s = parts.next().unwrap_or("0");
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let whole: i64 = num(whole, "interval seconds")?;
    let micros = fraction_micros(frac, "invalid interval fraction")?;
    let sign = if negative { -1 } else { 1 };
    iv.hours = sign * h;
    iv.minutes = sign * m;
    iv.seconds = sign * whole;
    iv.micros = sign * micros;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
