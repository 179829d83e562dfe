//! Tests of date, time and timestamp parsing and formatting: the parsers directly, and the
//! values [`ColumnType::parse`] gives in each `time.precision.mode`.

use super::*;
use crate::config::values::ValueOptions;
use crate::pg::types::ColumnType;

fn opts() -> ValueOptions {
    ValueOptions::default()
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
fn the_end_of_the_day_at_utc_stays_24_00() {
    assert_eq!(parse_zoned_time("24:00:00+00").unwrap(), "24:00:00Z");
    // Elsewhere it is a time of day like any other, and midnight stays the start of the day.
    assert_eq!(parse_zoned_time("24:00:00+02").unwrap(), "22:00:00Z");
    assert_eq!(parse_zoned_time("24:00:00-02").unwrap(), "02:00:00Z");
    assert_eq!(parse_zoned_time("00:00:00+00").unwrap(), "00:00:00Z");
    assert_eq!(parse_zoned_time("22:00:00-02").unwrap(), "00:00:00Z");
}

#[test]
fn isostring_microseconds_and_nanoseconds_modes_follow_debezium() {
    let iso = ValueOptions {
        time: TimePrecisionMode::IsoString,
        ..opts()
    };
    // timestamp ±infinity: the ISO form of the sentinel instant adaptive mode carries as a
    // number, whatever the precision (Debezium 3.6.1, harness); timestamptz keeps the text.
    for p in [0, 3, 6] {
        assert_eq!(
            ColumnType::Timestamp(p).parse("infinity", &iso).unwrap(),
            Value::String("+294247-01-10T04:00:25.2Z".into())
        );
        assert_eq!(
            ColumnType::Timestamp(p).parse("-infinity", &iso).unwrap(),
            Value::String("-290308-12-21T19:59:27.6Z".into())
        );
    }
    assert_eq!(
        ColumnType::TimestampTz(6).parse("infinity", &iso).unwrap(),
        Value::String("infinity".into())
    );
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

#[test]
fn zoned_timestamps_written_digit_by_digit_match_the_formatted_form() {
    // The straightforward form, with format!: what the digit-by-digit writer must equal.
    fn reference(utc: i64, precision: u32) -> String {
        let days = utc.div_euclid(86_400_000_000);
        let in_day = utc.rem_euclid(86_400_000_000);
        let (y, m, d) = civil_from_days(days);
        let (secs, frac) = (in_day / 1_000_000, in_day % 1_000_000);
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
            s.push('.');
            s.push_str(&format!("{frac:06}")[..precision.min(6) as usize]);
        }
        s.push('Z');
        s
    }
    let day = 86_400_000_000_i64;
    let mut cases = vec![0, -1, 1, 999_999, day - 1, -day, 1_480_247_490_123_456];
    // Year 0, BC years, year 9999's last microsecond and year 10000.
    cases.extend([-62_167_219_200_000_000, -62_200_000_000_000_000]);
    cases.extend([
        253_402_300_799_999_999,
        253_402_300_800_000_000,
        300_000_000_000_000_000,
    ]);
    let mut x: i64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        cases.push(x % (i64::MAX / 2));
    }
    for utc in cases {
        for p in 0..=7 {
            assert_eq!(
                format_zoned_timestamp(utc, p),
                reference(utc, p),
                "{utc} {p}"
            );
        }
    }
}
