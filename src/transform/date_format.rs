//! Java's `SimpleDateFormat` in UTC, as Kafka Connect's `TimestampConverter` and
//! `TimestampRouter` use it: formatting and (lenient) parsing of the pattern letters people
//! write, with Java's quirks kept (`S` counts milliseconds, so `SSSSSS` pads milliseconds to
//! six digits; dates before 1582-10-15 are in the Julian calendar; trailing text after a parsed
//! date is ignored; out-of-range fields roll over).
//!
//! Supported letters: `G y M d H k K h m s S E u D a z Z X`, quoted literals (`'T'`, `''`), and
//! any other non-letter character as itself. Other letters (`Y`, `w`, `W`, `F`, `L`) are refused
//! when the pattern is parsed, naming the letter.

use crate::util::{civil_from_days, days_from_civil};

const DAY_MS: i64 = 86_400_000;
/// 1582-10-15T00:00:00Z, where `GregorianCalendar` switches from the Julian calendar.
const GREGORIAN_CUTOVER_MS: i64 = -12_219_292_800_000;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// One element of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Field(char, usize),
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct DateFormat {
    parts: Vec<Part>,
    pattern: String,
}

/// The calendar fields of an instant in UTC.
struct Fields {
    era_year: i64,
    ad: bool,
    month: u32,
    day: u32,
    day_of_year: i64,
    weekday: usize,
    ms_of_day: i64,
}

/// Julian calendar date of a day number since 1970-01-01 (astronomical year).
fn julian_from_days(days: i64) -> (i64, u32, u32) {
    // Julian day number of 1970-01-01 is 2440588.
    let jdn = days + 2_440_588;
    let c = jdn + 32_082;
    let d = (4 * c + 3).div_euclid(1461);
    let e = c - (1461 * d).div_euclid(4);
    let m = (5 * e + 2).div_euclid(153);
    let day = (e - (153 * m + 2).div_euclid(5) + 1) as u32;
    let month = (m + 3 - 12 * m.div_euclid(10)) as u32;
    let year = d - 4800 + m.div_euclid(10);
    (year, month, day)
}

/// Day number since 1970-01-01 of a Julian calendar date (astronomical year).
fn days_from_julian(y: i64, m: u32, d: u32) -> i64 {
    let a = (14 - m as i64).div_euclid(12);
    let yy = y + 4800 - a;
    let mm = m as i64 + 12 * a - 3;
    let jdn = d as i64 + (153 * mm + 2).div_euclid(5) + 365 * yy + yy.div_euclid(4) - 32_083;
    jdn - 2_440_588
}

fn fields(ms: i64) -> Fields {
    let days = ms.div_euclid(DAY_MS);
    let (y, month, day) = if ms < GREGORIAN_CUTOVER_MS {
        julian_from_days(days)
    } else {
        civil_from_days(days)
    };
    let jan1 = if ms < GREGORIAN_CUTOVER_MS {
        days_from_julian(y, 1, 1)
    } else {
        days_from_civil(y, 1, 1)
    };
    Fields {
        era_year: if y > 0 { y } else { 1 - y },
        ad: y > 0,
        month,
        day,
        day_of_year: days - jan1 + 1,
        // 1970-01-01 was a Thursday.
        weekday: (days + 4).rem_euclid(7) as usize,
        ms_of_day: ms.rem_euclid(DAY_MS),
    }
}

fn padded(out: &mut String, v: i64, width: usize) {
    if v < 0 {
        out.push('-');
    }
    let digits = v.unsigned_abs().to_string();
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(&digits);
}

impl DateFormat {
    /// Compiles `pattern`; the error names what is not supported or malformed.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' {
                if chars.get(i + 1) == Some(&'\'') {
                    lit.push('\'');
                    i += 2;
                    continue;
                }
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => return Err(format!("unterminated quote in pattern {pattern:?}")),
                        Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                            lit.push('\'');
                            j += 2;
                        }
                        Some('\'') => break,
                        Some(x) => {
                            lit.push(*x);
                            j += 1;
                        }
                    }
                }
                i = j + 1;
                continue;
            }
            if c.is_ascii_alphabetic() {
                if !"GyMdHkKhmsSEuDazZX".contains(c) {
                    return Err(format!(
                        "pattern letter {c:?} is not supported by pgcdc (supported: G y M d H k K h m s S E u D a z Z X)"
                    ));
                }
                let mut n = 1;
                while chars.get(i + n) == Some(&c) {
                    n += 1;
                }
                if !lit.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut lit)));
                }
                parts.push(Part::Field(c, n));
                i += n;
                continue;
            }
            lit.push(c);
            i += 1;
        }
        if !lit.is_empty() {
            parts.push(Part::Literal(lit));
        }
        Ok(DateFormat {
            parts,
            pattern: pattern.to_string(),
        })
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Formats the instant `ms` (milliseconds since the epoch) in UTC.
    pub fn format(&self, ms: i64) -> String {
        let f = fields(ms);
        let mut out = String::new();
        let h24 = f.ms_of_day / 3_600_000;
        for p in &self.parts {
            let (c, n) = match p {
                Part::Literal(s) => {
                    out.push_str(s);
                    continue;
                }
                Part::Field(c, n) => (*c, *n),
            };
            match c {
                'G' => out.push_str(if f.ad { "AD" } else { "BC" }),
                'y' if n == 2 => padded(&mut out, f.era_year % 100, 2),
                'y' => padded(&mut out, f.era_year, n),
                'M' if n >= 4 => out.push_str(MONTHS[f.month as usize - 1]),
                'M' if n == 3 => out.push_str(&MONTHS[f.month as usize - 1][..3]),
                'M' => padded(&mut out, f.month.into(), n),
                'd' => padded(&mut out, f.day.into(), n),
                'D' => padded(&mut out, f.day_of_year, n),
                'H' => padded(&mut out, h24, n),
                'k' => padded(&mut out, if h24 == 0 { 24 } else { h24 }, n),
                'K' => padded(&mut out, h24 % 12, n),
                'h' => padded(&mut out, if h24 % 12 == 0 { 12 } else { h24 % 12 }, n),
                'm' => padded(&mut out, f.ms_of_day / 60_000 % 60, n),
                's' => padded(&mut out, f.ms_of_day / 1000 % 60, n),
                'S' => padded(&mut out, f.ms_of_day % 1000, n),
                'E' if n >= 4 => out.push_str(DAYS[f.weekday]),
                'E' => out.push_str(&DAYS[f.weekday][..3]),
                'u' => padded(
                    &mut out,
                    if f.weekday == 0 { 7 } else { f.weekday as i64 },
                    n,
                ),
                'a' => out.push_str(if h24 < 12 { "AM" } else { "PM" }),
                'z' if n >= 4 => out.push_str("Coordinated Universal Time"),
                'z' => out.push_str("UTC"),
                'Z' => out.push_str("+0000"),
                _ => out.push('Z'), // 'X': a zero offset is written Z
            }
        }
        out
    }

    /// Parses `text` as `SimpleDateFormat.parse` does (lenient, UTC unless the text gives an
    /// offset, trailing text ignored): milliseconds since the epoch, or why it does not match.
    pub fn parse(&self, text: &str) -> Result<i64, String> {
        let b = text.as_bytes();
        let mut pos = 0;
        let (mut year, mut month, mut day) = (1970i64, 1i64, 1i64);
        let mut ad = true;
        let (mut hour, mut minute, mut second, mut milli) = (0i64, 0i64, 0i64, 0i64);
        let mut pm: Option<bool> = None;
        let mut hour12 = false;
        let mut offset_ms = 0i64;
        let mut year_two_digits = false;
        let fail = |what: &str| {
            format!(
                "value ({text}) does not match pattern ({}): {what}",
                self.pattern
            )
        };
        for (idx, p) in self.parts.iter().enumerate() {
            match p {
                Part::Literal(s) => {
                    if text[pos..].starts_with(s.as_str()) {
                        pos += s.len();
                    } else {
                        return Err(fail(&format!("expected {s:?} at position {pos}")));
                    }
                }
                Part::Field(c, n) => {
                    let abutting = matches!(self.parts.get(idx + 1), Some(Part::Field(nc, nn)) if is_numeric(*nc, *nn));
                    let number = |pos: &mut usize| -> Result<i64, String> {
                        let start = *pos;
                        let mut end = start;
                        if end < b.len() && (b[end] == b'-' || b[end] == b'+') && *c == 'y' {
                            end += 1;
                        }
                        let limit = if abutting { start + n } else { b.len() };
                        while end < b.len().min(limit) && b[end].is_ascii_digit() {
                            end += 1;
                        }
                        let digits = &text[start..end];
                        let v = digits
                            .parse::<i64>()
                            .map_err(|_| fail(&format!("expected a number at position {start}")))?;
                        *pos = end;
                        Ok(v)
                    };
                    match c {
                        'G' => {
                            if text[pos..].starts_with("AD") {
                                pos += 2;
                            } else if text[pos..].starts_with("BC") {
                                ad = false;
                                pos += 2;
                            } else {
                                return Err(fail("expected AD or BC"));
                            }
                        }
                        'y' => {
                            let start = pos;
                            year = number(&mut pos)?;
                            year_two_digits = *n <= 2 && pos - start == 2;
                        }
                        'M' if *n >= 3 => {
                            let (i, len) = name_at(&text[pos..], &MONTHS)
                                .ok_or_else(|| fail("expected a month name"))?;
                            month = i as i64 + 1;
                            pos += len;
                        }
                        'M' => month = number(&mut pos)?,
                        'd' => day = number(&mut pos)?,
                        'D' => {
                            day = number(&mut pos)?;
                            month = 1;
                        }
                        'H' | 'k' => {
                            hour = number(&mut pos)?;
                            if *c == 'k' && hour == 24 {
                                hour = 0;
                            }
                        }
                        'K' | 'h' => {
                            hour = number(&mut pos)?;
                            if *c == 'h' && hour == 12 {
                                hour = 0;
                            }
                            hour12 = true;
                        }
                        'm' => minute = number(&mut pos)?,
                        's' => second = number(&mut pos)?,
                        'S' => milli = number(&mut pos)?,
                        'u' => {
                            number(&mut pos)?;
                        }
                        'E' => {
                            let (_, len) = name_at(&text[pos..], &DAYS)
                                .ok_or_else(|| fail("expected a day name"))?;
                            pos += len;
                        }
                        'a' => {
                            let rest = text[pos..].to_ascii_uppercase();
                            if rest.starts_with("AM") {
                                pm = Some(false);
                            } else if rest.starts_with("PM") {
                                pm = Some(true);
                            } else {
                                return Err(fail("expected AM or PM"));
                            }
                            pos += 2;
                        }
                        _ => {
                            // z, Z, X: an offset or a zone name.
                            let (off, len) = zone_at(&text[pos..]).ok_or_else(|| {
                                fail(&format!("expected a time zone at position {pos}"))
                            })?;
                            offset_ms = off;
                            pos += len;
                        }
                    }
                }
            }
        }
        if year_two_digits {
            year = two_digit_year(year);
        }
        if !ad {
            year = 1 - year;
        }
        if hour12 && pm == Some(true) {
            hour += 12;
        }
        // Lenient: months and days roll over.
        let y = year + (month - 1).div_euclid(12);
        let m = ((month - 1).rem_euclid(12) + 1) as u32;
        let greg = days_from_civil(y, m, 1);
        let first = if greg * DAY_MS < GREGORIAN_CUTOVER_MS {
            days_from_julian(y, m, 1)
        } else {
            greg
        };
        let days = first + day - 1;
        Ok(days * DAY_MS + hour * 3_600_000 + minute * 60_000 + second * 1000 + milli - offset_ms)
    }
}

fn is_numeric(c: char, n: usize) -> bool {
    match c {
        'M' => n < 3,
        'y' | 'd' | 'D' | 'H' | 'k' | 'K' | 'h' | 'm' | 's' | 'S' | 'u' => true,
        _ => false,
    }
}

/// A full or three-letter name from `names` at the start of `s` (any case): index and length.
fn name_at(s: &str, names: &[&str]) -> Option<(usize, usize)> {
    let lower = s.to_ascii_lowercase();
    names
        .iter()
        .enumerate()
        .find_map(|(i, n)| {
            lower
                .starts_with(&n.to_ascii_lowercase())
                .then_some((i, n.len()))
        })
        .or_else(|| {
            names.iter().enumerate().find_map(|(i, n)| {
                lower
                    .starts_with(&n[..3].to_ascii_lowercase())
                    .then_some((i, 3))
            })
        })
}

/// An offset (`Z`, `±hh`, `±hhmm`, `±hh:mm`) or `UTC`/`GMT` at the start of `s`: the offset in
/// ms and the length read.
fn zone_at(s: &str) -> Option<(i64, usize)> {
    for name in ["UTC", "GMT"] {
        if s.starts_with(name) {
            let (off, len) = zone_at(&s[3..]).filter(|(_, l)| *l > 1).unwrap_or((0, 0));
            return Some((off, 3 + len));
        }
    }
    let b = s.as_bytes();
    match b.first()? {
        b'Z' => Some((0, 1)),
        sign @ (b'+' | b'-') => {
            let digits = |r: std::ops::Range<usize>| -> Option<i64> {
                let t = s.get(r)?;
                t.bytes()
                    .all(|c| c.is_ascii_digit())
                    .then(|| t.parse().ok())?
            };
            let h = digits(1..3)?;
            let (m, len) = if b.get(3) == Some(&b':') {
                (digits(4..6)?, 6)
            } else {
                digits(3..5).map_or((0, 3), |m| (m, 5))
            };
            let off = (h * 60 + m) * 60_000;
            Some((if *sign == b'-' { -off } else { off }, len))
        }
        _ => None,
    }
}

/// Java's two-digit year: within 80 years before and 20 after now.
fn two_digit_year(yy: i64) -> i64 {
    let now_year = civil_from_days(crate::util::unix_micros().div_euclid(86_400_000_000)).0;
    let start = now_year - 80;
    let mut y = start - start.rem_euclid(100) + yy;
    if y < start {
        y += 100;
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(p: &str, ms: i64) -> String {
        DateFormat::new(p).unwrap().format(ms)
    }

    #[test]
    fn formats_as_simple_date_format_in_utc() {
        let t = 1_577_934_245_678; // 2020-01-02T03:04:05.678Z, a Thursday
        assert_eq!(fmt("yyyyMMdd", t), "20200102");
        assert_eq!(
            fmt("yyyy-MM-dd'T'HH:mm:ss.SSSX", t),
            "2020-01-02T03:04:05.678Z"
        );
        assert_eq!(
            fmt("yy MMM MMMM d E EEEE a hh K k D", t),
            "20 Jan January 2 Thu Thursday AM 03 3 3 2"
        );
        assert_eq!(fmt("SSSSSS z Z G ''", t), "000678 UTC +0000 AD '");
        assert_eq!(
            fmt("yyyy-MM-dd", -12_219_292_800_001),
            "1582-10-04",
            "Julian before the cutover"
        );
        assert_eq!(
            fmt("yyyy G", -62_167_219_200_000),
            "0001 BC",
            "year 0 is 1 BC"
        );
    }

    #[test]
    fn parses_leniently_with_java_quirks() {
        let p = |pat: &str, t: &str| DateFormat::new(pat).unwrap().parse(t);
        assert_eq!(
            p("yyyy-MM-dd HH:mm:ss", "2020-01-02 03:04:05").unwrap(),
            1_577_934_245_000
        );
        assert_eq!(p("yyyyMMdd", "20200102").unwrap(), 1_577_923_200_000);
        assert_eq!(
            p("yyyy-MM-dd", "2020-13-01").unwrap(),
            p("yyyy-MM-dd", "2021-01-01").unwrap()
        );
        assert_eq!(
            p("yyyy-MM-dd", "2020-01-02 and more").unwrap(),
            1_577_923_200_000
        );
        assert_eq!(
            p("yyyy-MM-dd'T'HH:mm:ssX", "2020-01-02T03:04:05+01:00").unwrap(),
            1_577_930_645_000
        );
        assert_eq!(
            p("HH:mm:ss.SSSSSS", "00:00:00.000123").unwrap(),
            123,
            "S counts milliseconds"
        );
        assert!(p("yyyy-MM-dd", "02/01/2020").is_err());
    }

    #[test]
    fn unsupported_letters_are_named() {
        let e = DateFormat::new("YYYY-ww").unwrap_err();
        assert!(e.contains("'Y'"), "{e}");
        assert!(DateFormat::new("'open").is_err());
    }
}
