//! The binary readers against byte strings PostgreSQL's send functions produce, each checked
//! against the value the text path gives for the same datum's output text.

use super::*;
use crate::config::values::{DecimalMode, IntervalMode};

fn opts() -> ValueOptions {
    ValueOptions::default()
}

/// `numeric_send` bytes: digit count, weight, sign, display scale, base-10000 digits.
fn numeric(weight: i16, sign: u16, dscale: u16, digits: &[i16]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    b.extend_from_slice(&weight.to_be_bytes());
    b.extend_from_slice(&sign.to_be_bytes());
    b.extend_from_slice(&dscale.to_be_bytes());
    for d in digits {
        b.extend_from_slice(&d.to_be_bytes());
    }
    b
}

#[test]
fn numerics_render_as_numeric_out_does() {
    let cases: &[(Vec<u8>, &str)] = &[
        (numeric(0, 0, 0, &[]), "0"),
        (numeric(0, 0, 2, &[]), "0.00"),
        (numeric(1, 0, 3, &[1, 2345, 6780]), "12345.678"),
        (numeric(0, NUMERIC_NEG, 1, &[5]), "-5.0"),
        (numeric(-1, NUMERIC_NEG, 6, &[12]), "-0.001200"),
        (numeric(-5, 0, 21, &[12, 3000]), "0.000000000000000000123"),
        (
            numeric(4, 0, 9, &[1234, 5678, 9012, 3456, 7890, 1234, 5678, 9000]),
            "12345678901234567890.123456789",
        ),
        (numeric(2, 0, 0, &[1]), "100000000"),
        (numeric(0, NUMERIC_NAN, 0, &[]), "NaN"),
        (numeric(0, NUMERIC_PINF, 0, &[]), "Infinity"),
        (numeric(0, NUMERIC_NINF, 0, &[]), "-Infinity"),
    ];
    for (bytes, text) in cases {
        assert_eq!(numeric_text(bytes).unwrap(), *text);
    }
    assert!(special_numeric(
        &Wire::Numeric,
        &numeric(0, NUMERIC_NAN, 0, &[])
    ));
    assert!(!special_numeric(&Wire::Numeric, &numeric(0, 0, 0, &[1])));
    assert!(numeric_text(&numeric(0, 0x1234, 0, &[])).is_err());
    assert!(
        numeric_text(&[0, 1]).is_err(),
        "truncated input is an error"
    );
}

#[test]
fn ipv6_addresses_shorten_as_inet_net_ntop_does() {
    let v6 = |words: [u16; 8]| -> Vec<u8> { words.iter().flat_map(|w| w.to_be_bytes()).collect() };
    let cases: &[([u16; 8], &str)] = &[
        ([0; 8], "::"),
        ([0, 0, 0, 0, 0, 0, 0, 1], "::1"),
        ([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304], "::ffff:1.2.3.4"),
        ([0, 0, 0, 0, 0, 0, 0x0102, 0x0304], "::1.2.3.4"),
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], "2001:db8::"),
        ([0xfe80, 0, 0, 0, 1, 0, 0, 1], "fe80::1:0:0:1"),
        ([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1], "2001:db8::1:0:0:1"),
        ([1, 0, 2, 3, 4, 5, 6, 7], "1:0:2:3:4:5:6:7"),
    ];
    for (words, text) in cases {
        assert_eq!(ipv6_text(&v6(*words)), *text, "{words:x?}");
    }
    // inet: family 2 (IPv4) or 3 (IPv6), bits, is_cidr, length, address.
    assert_eq!(
        inet_text(&[2, 32, 0, 4, 192, 168, 1, 5]).unwrap(),
        "192.168.1.5"
    );
    assert_eq!(
        inet_text(&[2, 24, 0, 4, 192, 168, 1, 5]).unwrap(),
        "192.168.1.5/24"
    );
    assert_eq!(
        inet_text(&[2, 32, 1, 4, 10, 0, 0, 1]).unwrap(),
        "10.0.0.1/32"
    );
    assert!(inet_text(&[9, 32, 0, 4, 1, 2, 3, 4]).is_err());
}

#[test]
fn ranges_render_as_range_out_does() {
    let int4 = |v: i32| -> Vec<u8> {
        let mut b = 4i32.to_be_bytes().to_vec();
        b.extend_from_slice(&v.to_be_bytes());
        b
    };
    let mut r = vec![RANGE_LB_INC];
    r.extend(int4(1));
    r.extend(int4(10));
    assert_eq!(range_text(&Wire::Int4, &r).unwrap(), "[1,10)");
    assert_eq!(range_text(&Wire::Int4, &[RANGE_EMPTY]).unwrap(), "empty");
    assert_eq!(
        range_text(&Wire::Int4, &[RANGE_LB_INF | RANGE_UB_INF]).unwrap(),
        "(,)"
    );
    // A timestamp bound holds a space: quoted.
    let ts = |micros: i64| -> Vec<u8> {
        let mut b = 8i32.to_be_bytes().to_vec();
        b.extend_from_slice(&micros.to_be_bytes());
        b
    };
    let mut r = vec![RANGE_LB_INC | RANGE_UB_INF];
    r.extend(ts(631_188_000_000_000)); // 2020-01-01 10:00 since 2000-01-01
    assert_eq!(
        range_text(&Wire::Timestamp, &r).unwrap(),
        "[\"2020-01-01 10:00:00\",)"
    );
    assert_eq!(range_bound_quoted(""), "\"\"");
    assert_eq!(range_bound_quoted("a\"b"), "\"a\"\"b\"");
}

#[test]
fn dates_and_times_read_like_their_text() {
    let o = opts();
    let date = |d: i32| read(&Wire::Date, &ColumnType::Date, &d.to_be_bytes(), &o).unwrap();
    let text = |t: &str| ColumnType::Date.parse(t, &o).unwrap();
    assert_eq!(date(0), text("2000-01-01"));
    assert_eq!(date(-10957), text("1970-01-01"));
    assert_eq!(date(i32::MAX), text("infinity"));
    assert_eq!(date(i32::MIN), text("-infinity"));
    assert_eq!(
        datetime::pg_date_text(datetime::days_from_civil(-43, 3, 15)),
        "0044-03-15 BC"
    );
    let ts = ColumnType::Timestamp(6);
    let stamp = |m: i64| read(&Wire::Timestamp, &ts, &m.to_be_bytes(), &o).unwrap();
    assert_eq!(stamp(0), ts.parse("2000-01-01 00:00:00", &o).unwrap());
    assert_eq!(stamp(i64::MAX), ts.parse("infinity", &o).unwrap());
    assert_eq!(
        stamp(-1),
        ts.parse("1999-12-31 23:59:59.999999", &o).unwrap()
    );
    // timetz 10:00 at +02 (zone -7200 seconds west) is 08:00 UTC.
    let mut tz = (36_000_000_000i64).to_be_bytes().to_vec();
    tz.extend_from_slice(&(-7200i32).to_be_bytes());
    assert_eq!(
        read(&Wire::TimeTz, &ColumnType::TimeTz(6), &tz, &o).unwrap(),
        ColumnType::TimeTz(6).parse("10:00:00+02", &o).unwrap()
    );
    // The end of the day at UTC is kept by both paths.
    let mut end = (86_400_000_000i64).to_be_bytes().to_vec();
    end.extend_from_slice(&0i32.to_be_bytes());
    assert_eq!(
        read(&Wire::TimeTz, &ColumnType::TimeTz(6), &end, &o).unwrap(),
        ColumnType::TimeTz(6).parse("24:00:00+00", &o).unwrap()
    );
    assert_eq!(
        datetime::pg_timestamp_text(0, 0, true),
        "1970-01-01 00:00:00+00"
    );
    assert_eq!(
        datetime::pg_timestamp_text(0, 500_000, false),
        "1970-01-01 00:00:00.5"
    );
}

#[test]
fn intervals_money_and_bits_read_like_their_text() {
    let mut o = opts();
    for mode in [IntervalMode::Numeric, IntervalMode::String] {
        o.interval = mode;
        // 1 year 2 mons -3 days 04:05:06.78
        let mut iv = (14_706_780_000i64).to_be_bytes().to_vec();
        iv.extend_from_slice(&(-3i32).to_be_bytes());
        iv.extend_from_slice(&14i32.to_be_bytes());
        assert_eq!(
            read(&Wire::Interval, &ColumnType::Interval, &iv, &o).unwrap(),
            ColumnType::Interval
                .parse("1 year 2 mons -3 days 04:05:06.78", &o)
                .unwrap()
        );
        // -1 days -00:00:01.5
        let mut iv = (-1_500_000i64).to_be_bytes().to_vec();
        iv.extend_from_slice(&(-1i32).to_be_bytes());
        iv.extend_from_slice(&0i32.to_be_bytes());
        assert_eq!(
            read(&Wire::Interval, &ColumnType::Interval, &iv, &o).unwrap(),
            ColumnType::Interval
                .parse("-1 days -00:00:01.5", &o)
                .unwrap()
        );
    }
    for mode in [
        DecimalMode::Precise,
        DecimalMode::String,
        DecimalMode::Double,
    ] {
        o.decimal = mode;
        let money = |units: i64| {
            read(
                &Wire::Money { scale: 2 },
                &ColumnType::Money,
                &units.to_be_bytes(),
                &o,
            )
        };
        assert_eq!(
            money(-123_456).unwrap(),
            ColumnType::Money.parse("-$1,234.56", &o).unwrap()
        );
        assert_eq!(
            money(5).unwrap(),
            ColumnType::Money.parse("$0.05", &o).unwrap()
        );
    }
    assert_eq!(money_text(1234, 0), "1234");
    assert_eq!(money_text(-1234, 3), "-1.234");
    // bit(10) '1010000001'
    let bits = [0, 0, 0, 10, 0b1010_0000, 0b0100_0000];
    assert_eq!(bits_text(&bits).unwrap(), "1010000001");
    assert!(bits_text(&[0, 0, 0, 10, 0]).is_err(), "too few bytes");
}

#[test]
fn arrays_read_elements_whatever_their_bounds_and_refuse_more_dimensions() {
    let o = opts();
    let ty = ColumnType::Array(Box::new(ColumnType::Int32));
    let wire = Wire::Array(Box::new(Wire::Int4));
    let array = |ndim: i32, lower: i32, items: &[Option<i32>]| -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&ndim.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&(oid::INT4 as i32).to_be_bytes());
        if ndim > 0 {
            b.extend_from_slice(&(items.len() as i32).to_be_bytes());
            b.extend_from_slice(&lower.to_be_bytes());
        }
        for i in items {
            match i {
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    b.extend_from_slice(&4i32.to_be_bytes());
                    b.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
        b
    };
    assert_eq!(
        read(&wire, &ty, &array(1, 1, &[Some(1), None, Some(3)]), &o).unwrap(),
        ty.parse("{1,NULL,3}", &o).unwrap()
    );
    assert_eq!(
        read(&wire, &ty, &array(0, 1, &[]), &o).unwrap(),
        ty.parse("{}", &o).unwrap()
    );
    assert_eq!(
        read(&wire, &ty, &array(1, 0, &[Some(4), Some(5)]), &o).unwrap(),
        ty.parse("[0:1]={4,5}", &o).unwrap(),
        "explicit bounds: the elements"
    );
    assert!(read(&wire, &ty, &array(2, 1, &[Some(4)]), &o).is_err());
    let mut long = array(1, 1, &[Some(1)]);
    long.push(0);
    assert!(read(&wire, &ty, &long, &o).is_err(), "trailing bytes");
}

#[test]
fn wire_formats_follow_domains_arrays_and_extension_types() {
    let mut types = TypeCatalog::new();
    let info =
        |name: &str, typtype: u8, category: u8, base: u32, elem: u32| super::super::TypeInfo {
            name: name.into(),
            typtype,
            category,
            base_oid: base,
            base_typmod: -1,
            elem_oid: elem,
            enum_labels: vec![],
        };
    types.insert(90001, info("price", b'd', b'N', oid::MONEY, 0));
    types.insert(90002, info("_price", b'b', b'A', 0, 90001));
    types.insert(90003, info("hstore", b'b', b'U', 0, 0));
    types.insert(90004, info("mood", b'e', b'E', 0, 0));
    types.insert(90005, info("tsvector_like", b'b', b'U', 0, 0));
    assert_eq!(Wire::of(90001, &types, 3), Wire::Money { scale: 3 });
    assert_eq!(
        Wire::of(90002, &types, 2),
        Wire::Array(Box::new(Wire::Money { scale: 2 }))
    );
    assert_eq!(Wire::of(90003, &types, 2), Wire::Hstore);
    assert_eq!(Wire::of(90004, &types, 2), Wire::Text);
    assert!(!Wire::of(90005, &types, 2).is_supported());
    // isbn has no send function: its values come as text, an array of it cannot be sent.
    types.insert(90006, info("isbn", b'b', b'U', 0, 0));
    types.insert(90007, info("_isbn", b'b', b'A', 0, 90006));
    assert!(Wire::of(90006, &types, 2).is_supported());
    assert!(!Wire::of(90007, &types, 2).is_supported());
    assert_eq!(
        Wire::of(oid::TSTZRANGE_ARRAY, &types, 2),
        Wire::Array(Box::new(Wire::Range(Box::new(Wire::TimestampTz))))
    );
    assert!(read(&Wire::Unsupported, &ColumnType::Unknown, b"x", &opts()).is_err());
}
