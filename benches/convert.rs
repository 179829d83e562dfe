//! CPU cost of turning one decoded row into Kafka record bytes (no I/O): pgoutput tuple →
//! row values → change event → envelope records → JsonConverter bytes. Prints events/s and
//! ns/event for the core bench's row shape (bigint PK, int, numeric(12,2), text,
//! timestamptz), with schemas on and off. Run: `cargo bench --bench convert`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use pgcdc::convert::RecordConverter;
use pgcdc::event::envelope::{change_records, RecordOptions};
use pgcdc::event::{ChangeEvent, Op, SourceInfo};
use pgcdc::pg::pgoutput::TupleValue;
use pgcdc::pg::relation::{build_table, CatalogColumn, Image};

fn col(
    name: &str,
    oid: u32,
    typmod: i32,
    not_null: bool,
    default: Option<&str>,
    type_name: &str,
) -> CatalogColumn {
    CatalogColumn {
        name: name.into(),
        type_oid: oid,
        typmod,
        not_null,
        default_expr: default.map(str::to_string),
        type_name: type_name.into(),
        generated: false,
    }
}

fn run(schemas: bool, n: u64) -> f64 {
    let mut raw = std::collections::BTreeMap::new();
    for (k, v) in [
        ("database.hostname", "h"),
        ("database.user", "u"),
        ("database.dbname", "bench"),
        ("topic.prefix", "bench"),
        ("bootstrap.servers", "k:9092"),
        (
            "key.converter.schemas.enable",
            if schemas { "true" } else { "false" },
        ),
        (
            "value.converter.schemas.enable",
            if schemas { "true" } else { "false" },
        ),
    ] {
        raw.insert(k.to_string(), v.to_string());
    }
    let (config, _) = pgcdc::pipeline::validate_config(&raw).unwrap();
    let catalog = vec![
        col("id", 20, -1, true, None, "bigint"),
        col("n", 23, -1, false, None, "integer"),
        col(
            "amount",
            1700,
            ((12 << 16) | 2) + 4,
            false,
            None,
            "numeric(12,2)",
        ),
        col("label", 25, -1, false, None, "text"),
        col(
            "created_at",
            1184,
            -1,
            false,
            Some("now()"),
            "timestamp with time zone",
        ),
    ];
    let published: Vec<(String, u32, i32)> = catalog
        .iter()
        .map(|c| (c.name.clone(), c.type_oid, c.typmod))
        .collect();
    let table = build_table(
        &config,
        1,
        "public",
        "t",
        &published,
        &pgcdc::pg::relation::TableCatalog {
            columns: catalog,
            key: vec!["id".to_string()],
            ..Default::default()
        },
    )
    .unwrap();
    let opts = RecordOptions::new(true, true, "bench", "run-id");
    let mut converter = RecordConverter::new(schemas, schemas);
    let name: Arc<str> = Arc::from("bench");
    let db: Arc<str> = Arc::from("bench");
    let mut bytes = 0usize;
    let start = Instant::now();
    for i in 0..n {
        let tuple = vec![
            TupleValue::Text(Bytes::from(i.to_string())),
            TupleValue::Text(Bytes::from((i % 1000).to_string())),
            TupleValue::Text(Bytes::from(format!("{}.{:02}", i % 1000, i % 100))),
            TupleValue::Text(Bytes::from(format!("{:032x}", i))),
            TupleValue::Text(Bytes::from_static(b"2026-11-30 01:02:03.456789+00")),
        ];
        let after = table
            .row_from_tuple(
                &tuple,
                None,
                Image::New,
                &config.values,
                config.converting_failure,
            )
            .unwrap();
        let ev = ChangeEvent {
            table: table.descriptor.clone(),
            op: Op::Create,
            key: table.key_of(&after),
            old_key: None,
            before: None,
            after: Some(after),
            source: SourceInfo {
                name: name.clone(),
                db: db.clone(),
                ts_us: 1_796_000_000_000_000,
                snapshot: None,
                sequence: Some(format!("[\"{}\",\"{}\"]", 1000 + i, 2000 + i)),
                tx_id: Some(700),
                lsn: Some(pgcdc::lsn::Lsn(2000 + i)),
                origin: None,
                origin_lsn: None,
                xmin: None,
            },
        };
        for r in change_records(ev, &opts) {
            let k = converter.convert(&r).expect("JSON conversion");
            bytes += k.value.map(|v| v.len()).unwrap_or(0) + k.key.map(|v| v.len()).unwrap_or(0);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "schemas.enable={schemas}: {n} events in {secs:.3} s = {:.0} events/s, {:.0} ns/event, {:.0} bytes/event",
        n as f64 / secs,
        secs * 1e9 / n as f64,
        bytes as f64 / n as f64
    );
    n as f64 / secs
}

fn main() {
    // `cargo test --all-targets` runs this binary without `--bench`: a small smoke run then.
    let default = if std::env::args().any(|a| a == "--bench") {
        200_000
    } else {
        2_000
    };
    let n: u64 = std::env::var("BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    run(true, n / 10); // warm-up
    run(true, n);
    run(false, n);
}
