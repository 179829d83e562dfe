//! Binary tuples (`pgcdc.pgoutput.binary=true`): the same changes streamed once as text and
//! once in binary send format give byte-identical records, for every type pgcdc maps, their
//! edge values (infinities, NaN, BC dates, 24:00, IPv6 forms, empty and unbounded ranges,
//! arrays with NULLs and with shapes Debezium does not read), in several value-handling
//! modes, for inserts, updates with unchanged TOASTed values and deletes.

use std::time::Duration;

use crate::harness::*;
use pgcdc::config::RawConfig;

const T: Duration = Duration::from_secs(90);

pub(crate) const DDL: &[&str] = &[
    "CREATE EXTENSION IF NOT EXISTS citext",
    "CREATE EXTENSION IF NOT EXISTS hstore",
    "CREATE EXTENSION IF NOT EXISTS ltree",
    "CREATE EXTENSION IF NOT EXISTS postgis",
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE DOMAIN price AS numeric(7,2)",
    "CREATE TABLE public.all_types (
        id int PRIMARY KEY,
        b bool, i2 int2, i4 int4, i8 int8, o oid, f4 real, f8 double precision,
        n numeric(12,3), nu numeric, t text, vc varchar(20), c char(4), by bytea,
        u uuid, j json, jb jsonb, x xml, d date, tm time, tm3 time(3), ttz timetz,
        ts timestamp, ts3 timestamp(3), tz timestamptz, tz0 timestamptz(0), iv interval,
        m money, bt bit(1), b8 bit(8), vb varbit, ip inet, cd cidr, mac macaddr,
        mac8 macaddr8, r4 int4range, r8 int8range, rn numrange, rts tsrange, rtz tstzrange,
        rd daterange, pt point, e mood, dom price, ct citext, hs hstore, lt ltree,
        g geometry, gg geography,
        ai int[], at text[], anum numeric[], ab bool[], atz timestamptz[], ad date[],
        au uuid[], aip inet[], arng int4range[], ae mood[], act citext[], ajb jsonb[],
        abnd int[], a2d int[]
    )",
    "CREATE TABLE public.toasted (id int PRIMARY KEY, big text, small int)",
    "ALTER TABLE public.toasted REPLICA IDENTITY FULL",
];

/// Rows with ordinary values, edge values, and NULLs.
pub(crate) const ROWS: &[&str] = &[
    "INSERT INTO public.all_types VALUES (1,
        true, -32768, 2147483647, -9223372036854775808, 4294967295, 1.1, 0.1,
        -123456789.125, 12345678901234567890.123456789, 'héllo \"q\" \\ end', 'abc', 'x',
        '\\x00ff10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": [1, 2.50]}',
        '{\"b\": {\"c\": null}, \"a\": 1}', '<a x=\"1\">t</a>', '2016-11-04', '04:05:06.789',
        '23:59:59.999', '13:51:30.123789+05:30', '2018-06-20 15:13:16.945104',
        '2018-06-20 15:13:16.945', '2016-11-04 13:51:30.123456+02', '2016-11-04 13:51:30+02',
        '1 year 2 mons -3 days 04:05:06.78', -1234.56, B'1', B'10100001', B'101',
        '192.168.1.5', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
        '[1,10)', '(,5]', '[1.5,2.25]', '[2020-01-01 10:00, 2020-01-02)',
        '[2020-01-01 10:00+00,)', '[2020-01-01,2020-02-01)', '(1.5,-2.25)', 'happy', 12345.67,
        'MiXeD', 'a=>1, \"b c\"=>\"x\\\"y\", n=>NULL', 'top.science.astronomy',
        'SRID=4326;POINT(1 2)', 'SRID=4326;POINT(-71.06 42.36)',
        '{1,NULL,3}', '{a,\"b c\",NULL,\"NULL\",\"\"}', '{1.5,-0.25,NULL}', '{t,f,NULL}',
        '{\"2016-11-04 13:51:30+02\",NULL}', '{2016-11-04,infinity}',
        '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', '{::1,10.1.2.3/16}', '{\"[1,3)\",empty}',
        '{sad,happy}', '{A,b}', '{\"{\\\"k\\\": 1}\",null}', '{}', NULL)",
    "INSERT INTO public.all_types VALUES (2,
        false, 0, -1, 0, 0, 'NaN', '-Infinity',
        0, 'NaN', '', '', '', '\\x', '00000000-0000-0000-0000-000000000000', '[]',
        '[]', '', 'infinity', '24:00:00', '00:00:00', '24:00:00+00', 'infinity',
        '-infinity', '-infinity', 'infinity', '-1 days -00:00:01.5', 0, B'0', B'00000000',
        B'', '::ffff:1.2.3.4', '2001:db8::/32', '00:00:00:00:00:00', 'ff:ff:ff:ff:ff:ff:ff:ff',
        'empty', '(,)', '[-1e-20,1e20)', '(\"0044-03-15 12:00 BC\",\"2020-01-01\")',
        '[-infinity,infinity]', '[-infinity,2000-01-01)', '(0,0)', 'sad', -0.5,
        '', '', '', NULL, NULL,
        '{}', '{}', '{NaN,1}', '{}', '{infinity}', '{-infinity}', '{}', '{}', '{}', '{}', '{}',
        '{}', '[0:2]={4,5,6}', NULL)",
    "INSERT INTO public.all_types VALUES (3,
        NULL, 1, 1, 1, 1, 'Infinity', 1e308, -0.001, -0.000000000000000000123, 'ünï',
        'vc', 'abcd', '\\xdeadbeef', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'null', '1.50',
        '<?xml version=\"1.0\"?><r/>', '0044-03-15 BC', '12:00', '12:00:00.5', '00:00:00-03',
        '0044-03-15 12:00:00.5 BC', '1999-12-31 23:59:59.999', '0001-01-01 00:00:00+00 BC',
        '294276-12-31 23:59:59+00', '100 hours 3 mins', 92233720368547758.07, B'1',
        B'11111111', B'1010101010101010101', 'fe80::1:0:0:1', '::1.2.3.4/128',
        'ab:cd:ef:01:02:03', '01:02:03:04:05:06:07:08', '[-5,-5]', '[9000000000,)',
        '(0,)', '[,\"2020-01-01 00:00:00.5\")', '(\"2020-01-01 00:00+05\",\"2021-01-01 00:00-03\"]',
        'empty', '(1e300,-1e-300)', 'ok', 0, 'x', '\"\"=>\"\"', '', 'POINT EMPTY',
        'POINT(0 0)', '{-2147483648}', '{\"\\\\\",\"}\",\"a,b\"}', '{Infinity,-Infinity}',
        '{NULL}', '{}', '{5874897-12-31,4713-01-01 BC}', '{NULL}', '{::,2001:db8:0:0:1::1}',
        '{\"(,)\"}', '{ok}', '{}', '{}', NULL, NULL)",
    "INSERT INTO public.all_types (id) VALUES (4)",
    "UPDATE public.all_types SET i4 = 42, t = 'changed' WHERE id = 1",
    "UPDATE public.all_types SET id = 5 WHERE id = 4",
    "DELETE FROM public.all_types WHERE id = 2",
    // Range bounds beyond what 64-bit microseconds since 1970 reach (PostgreSQL's own epoch is
    // 2000): emitted as their text.
    "UPDATE public.all_types SET rts = '[\"294270-01-01\",)', rtz = '[,\"294276-12-31 23:59:59.999999+00\"]' WHERE id = 3",
    "INSERT INTO public.toasted VALUES (1, repeat(md5('x'), 1000), 1)",
    "UPDATE public.toasted SET small = 2 WHERE id = 1",
    "DELETE FROM public.toasted WHERE id = 1",
];

/// Value-handling modes the pair of connectors runs with (besides warn on failures, so that
/// the values Debezium cannot convert become null alike on both sides).
const MODES: &[&[(&str, &str)]] = &[
    &[],
    &[
        ("decimal.handling.mode", "string"),
        ("time.precision.mode", "connect"),
        ("interval.handling.mode", "string"),
        ("hstore.handling.mode", "map"),
        ("binary.handling.mode", "hex"),
    ],
    &[
        ("decimal.handling.mode", "double"),
        ("time.precision.mode", "isostring"),
        ("binary.handling.mode", "base64"),
    ],
    &[("time.precision.mode", "microseconds")],
];

/// `base` set up for the type matrix: streaming only (no snapshot), PostGIS's own schemas left
/// out, values Debezium cannot convert as nulls (warn), its own publication, and `mode`.
pub(crate) fn matrix_config(mut raw: RawConfig, prefix: &str, mode: &[(&str, &str)]) -> RawConfig {
    raw.insert("snapshot.mode".into(), "no_data".into());
    raw.insert(
        "schema.exclude.list".into(),
        "postgis,tiger,topology".into(),
    );
    raw.insert(
        "event.converting.failure.handling.mode".into(),
        "warn".into(),
    );
    raw.insert("publication.name".into(), prefix.to_string());
    for (k, v) in mode {
        raw.insert(k.to_string(), v.to_string());
    }
    raw
}

/// A text connector's prefix and its records as (key, value) text.
type TextRun = (String, Vec<(String, String)>);

/// A record as text with the connector's topic prefix and processing times taken out.
fn comparable(rec: &Rec, prefix: &str) -> (String, String) {
    let key = rec.key_str().replace(prefix, "<prefix>");
    let value = match rec.value_json() {
        None => String::new(),
        Some(mut v) => {
            if let Some(p) = v.get_mut("payload").and_then(|p| p.as_object_mut()) {
                for k in ["ts_ms", "ts_us", "ts_ns"] {
                    p.remove(k);
                }
            }
            v.to_string().replace(prefix, "<prefix>")
        }
    };
    (key, value)
}

/// The row fields whose values differ between two envelope values, with both values.
fn differing_fields(text: &str, binary: &str) -> String {
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap_or_default();
    let (t, b) = (parse(text), parse(binary));
    let mut out = Vec::new();
    for image in ["before", "after"] {
        let (ti, bi) = (&t["payload"][image], &b["payload"][image]);
        if let Some(fields) = ti.as_object() {
            for (k, v) in fields {
                if bi.get(k) != Some(v) {
                    out.push(format!("{image}.{k}: text {v} binary {}", bi[k.as_str()]));
                }
            }
        }
    }
    if out.is_empty() {
        "the schemas or other fields differ".into()
    } else {
        out.join("; ")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn binary_tuples_give_the_records_text_tuples_give() {
    let db = TestDb::create("binary").await;
    for sql in DDL {
        db.exec(sql).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for (m, mode) in MODES.iter().enumerate() {
        for binary in [false, true] {
            let prefix = unique(&format!("bin{m}{}", if binary { "b" } else { "t" }));
            let offsets = dir.path().join(&prefix);
            std::fs::create_dir_all(&offsets).unwrap();
            let mut raw = matrix_config(
                base_config(&db, &prefix, &env().kafka, &offsets),
                &prefix,
                mode,
            );
            raw.insert("pgcdc.pgoutput.binary".into(), binary.to_string());
            let running = start(&raw);
            db.wait_for_slot(&prefix).await;
            runs.push((m, binary, prefix, running));
        }
    }
    for sql in ROWS {
        db.exec(sql).await;
    }
    // all_types: 4 inserts, 3 updates (one a key change: delete + tombstone + insert),
    // 1 delete + tombstone; toasted: insert, update, delete + tombstone.
    let expected = [("all_types", 11), ("toasted", 4)];
    for (table, n) in expected {
        // Per mode: the text connector's prefix and its (key, value) records.
        let mut by_mode: Vec<Option<TextRun>> = vec![None; MODES.len()];
        for (m, binary, prefix, running) in &runs {
            running.assert_running();
            let recs = read_n(&env().kafka, &format!("{prefix}.public.{table}"), n, T).await;
            assert_eq!(recs.len(), n, "{table}: records of {prefix}");
            let got: Vec<(String, String)> = recs.iter().map(|r| comparable(r, prefix)).collect();
            match (&by_mode[*m], binary) {
                (None, false) => by_mode[*m] = Some((prefix.clone(), got)),
                (Some((text_prefix, text)), true) => {
                    for (i, (t, b)) in text.iter().zip(&got).enumerate() {
                        assert!(
                            t == b,
                            "{table} record {i}: text ({text_prefix}) and binary ({prefix}) differ in mode {:?}: {}",
                            MODES[*m],
                            differing_fields(&t.1, &b.1)
                        );
                    }
                }
                _ => unreachable!("text runs come first"),
            }
        }
    }
    // The array with explicit bounds was among those compared: its elements on both sides.
    // (A two-dimensional array stops the connector: tests/fixtures, FID-ARR-MULTI.)
    let (_, _, text_prefix, _) = &runs[0];
    let recs = read_n(
        &env().kafka,
        &format!("{text_prefix}.public.all_types"),
        10,
        T,
    )
    .await;
    let row2 = recs
        .iter()
        .find(|r| r.payload()["after"]["id"] == 2)
        .expect("row 2");
    assert_eq!(
        row2.payload()["after"]["abnd"],
        serde_json::json!([4, 5, 6])
    );
    assert_eq!(row2.payload()["after"]["ai"], serde_json::json!([]));
    let far = recs.last().expect("the range update").payload();
    assert_eq!(far["after"]["rts"], "[\"294270-01-01 00:00:00\",)");
    for (_, _, _, running) in runs {
        running.stop().await.expect("clean stop");
    }
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_tuples_refuse_a_column_whose_binary_form_pgcdc_cannot_read() {
    let db = TestDb::create("binrefuse").await;
    db.exec("CREATE TABLE public.docs (id int PRIMARY KEY, body tsquery)")
        .await;
    db.exec("INSERT INTO public.docs VALUES (1, 'fat & cat')")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("binrefuse");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("include.unknown.datatypes".into(), "true".into());
    raw.insert("pgcdc.pgoutput.binary".into(), "true".into());
    let running = start(&raw);
    let err = running.expect_error(T).await;
    let msg = err.message();
    assert!(
        msg.contains("column body has type tsquery") && msg.contains("pgcdc.pgoutput.binary=false"),
        "{msg}"
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_tuples_refuse_a_published_array_the_walsender_cannot_send_in_binary_form() {
    // isbn has no send function: its values come as text, but array_send fails on an isbn[],
    // in any published table, captured or not.
    let db = TestDb::create("binisn").await;
    db.exec("CREATE EXTENSION IF NOT EXISTS isn").await;
    db.exec("CREATE TABLE public.books (id int PRIMARY KEY, code isbn, codes isbn[])")
        .await;
    db.exec("CREATE TABLE public.other (id int PRIMARY KEY)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("binisn");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("pgcdc.pgoutput.binary".into(), "true".into());
    raw.insert("table.include.list".into(), "public.other".into());
    let err = start(&raw).expect_error(T).await;
    let msg = err.message();
    assert!(
        msg.contains("column codes of table public.books has type isbn[]")
            && !msg.contains("column code of")
            && msg.contains("pgcdc.pgoutput.binary=false"),
        "{msg}"
    );
    // A publication of the captured tables only leaves it out (a new one: the first is FOR
    // ALL TABLES, which cannot be narrowed).
    raw.insert("publication.autocreate.mode".into(), "filtered".into());
    raw.insert("publication.name".into(), format!("{prefix}_f"));
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO public.books VALUES (1, '978-0-393-04002-9', '{978-0-393-04002-9}')")
        .await;
    db.exec("INSERT INTO public.other VALUES (1)").await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.other"), 1, T).await;
    assert_eq!(recs[0].payload()["after"]["id"], 1);
    running.assert_running();
    running.stop().await.expect("clean stop");
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_tuples_never_read_a_column_left_out_of_the_records() {
    // interval[] has no mapping and no text rendering from its binary form: left out of the
    // value, it is never read, even with failures set to stop the connector.
    let db = TestDb::create("binexcl").await;
    db.exec("CREATE TABLE public.spans (id int PRIMARY KEY, ivs interval[], n int)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("binexcl");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("pgcdc.pgoutput.binary".into(), "true".into());
    raw.insert("column.exclude.list".into(), "public.spans.ivs".into());
    raw.insert(
        "event.converting.failure.handling.mode".into(),
        "fail".into(),
    );
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO public.spans VALUES (1, '{1 day,-2 hours}', 7)")
        .await;
    let recs = read_n(&env().kafka, &format!("{prefix}.public.spans"), 1, T).await;
    let after = &recs[0].payload()["after"];
    assert_eq!(after["n"], 7);
    assert!(after.get("ivs").is_none(), "{after}");
    running.assert_running();
    running.stop().await.expect("clean stop");
    db.cleanup().await;
}
