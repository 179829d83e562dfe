//! The Avro converter against a real schema registry (Apicurio Registry's Confluent-compatible
//! API, started by `scripts/services.sh`): records in Confluent's wire format whose schemas
//! the registry holds, decoded by an independent Avro implementation (`apache-avro`) into the
//! same values the JSON converter writes, for every type pgcdc maps; one registry call per
//! subject and schema version; schema evolution accepted and refused; a registry that stops
//! answering is waited for, and nothing is lost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value as J};

use crate::binary_tuples::{matrix_config, DDL, ROWS};
use crate::harness::*;
use crate::seed::{seed_db, with_seed_file};
use pgcdc::config::RawConfig;

const T: Duration = Duration::from_secs(90);
const AVRO: &str = "io.confluent.connect.avro.AvroConverter";

/// An Avro connector config: both converters Avro with the test registry at `url`.
pub(crate) fn avro_config(
    db: &TestDb,
    prefix: &str,
    dir: &std::path::Path,
    url: &str,
) -> RawConfig {
    let mut raw = base_config(db, prefix, &env().kafka, dir);
    for part in ["key", "value"] {
        raw.insert(format!("{part}.converter"), AVRO.into());
        raw.insert(format!("{part}.converter.schema.registry.url"), url.into());
    }
    raw
}

/// The test registry's `host:port`.
fn registry_host_port() -> String {
    let rest = env().registry.trim_start_matches("http://");
    rest.split('/').next().unwrap().to_string()
}

/// The test registry's Apicurio v2 API (beside its Confluent-compatible one).
fn registry_v2_url() -> String {
    env()
        .registry
        .replace("/apis/ccompat/v7", "/apis/registry/v2")
}

/// GETs `path` from the test registry as JSON.
pub(crate) fn registry_get(path: &str) -> J {
    let url = format!("{}{path}", env().registry);
    let mut resp = ureq::get(&url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
}

/// The schema the registry holds under `id`, parsed by apache-avro (cached).
fn schema_by_id(id: u32) -> apache_avro::Schema {
    static CACHE: Mutex<Option<HashMap<u32, String>>> = Mutex::new(None);
    let text = {
        let mut c = CACHE.lock().unwrap();
        let c = c.get_or_insert_with(HashMap::new);
        c.entry(id)
            .or_insert_with(|| {
                registry_get(&format!("/schemas/ids/{id}"))["schema"]
                    .as_str()
                    .expect("schema text")
                    .to_string()
            })
            .clone()
    };
    apache_avro::Schema::parse_str(&text)
        .unwrap_or_else(|e| panic!("apache-avro refuses schema {id}: {e}\n{text}"))
}

/// A record part in Confluent's wire format, decoded: (schema id, value as the JSON converter
/// would write its payload).
pub(crate) fn decode(bytes: &[u8]) -> (u32, J) {
    assert!(bytes.len() >= 5 && bytes[0] == 0, "magic byte 0 and an id");
    let id = u32::from_be_bytes(bytes[1..5].try_into().unwrap());
    let schema = schema_by_id(id);
    let mut body = &bytes[5..];
    let v = apache_avro::from_avro_datum(&schema, &mut body, None)
        .unwrap_or_else(|e| panic!("apache-avro cannot decode a record of schema {id}: {e}"));
    assert!(body.is_empty(), "{} bytes left after the value", body.len());
    (id, json_of(&v))
}

/// An Avro value in the JSON converter's payload form: bytes and decimals as base64,
/// float and double as numbers (`"NaN"`, `"Infinity"` as strings), unions unwrapped.
fn json_of(v: &apache_avro::types::Value) -> J {
    use apache_avro::types::Value as A;
    let b64 = |b: &[u8]| J::String(base64::engine::general_purpose::STANDARD.encode(b));
    let float = |text: String, f: f64| {
        if f.is_nan() {
            json!("NaN")
        } else if f.is_infinite() {
            json!(if f > 0.0 { "Infinity" } else { "-Infinity" })
        } else {
            json!(text.parse::<f64>().unwrap())
        }
    };
    match v {
        A::Null => J::Null,
        A::Boolean(b) => json!(b),
        A::Int(i) | A::Date(i) | A::TimeMillis(i) => json!(i),
        A::Long(i) | A::TimestampMillis(i) => json!(i),
        A::Float(f) => float(f.to_string(), *f as f64),
        A::Double(f) => float(f.to_string(), *f),
        A::Bytes(b) => b64(b),
        A::Decimal(d) => b64(&minimal(<Vec<u8>>::try_from(d).expect("decimal bytes"))),
        A::String(s) => json!(s),
        A::Union(_, inner) => json_of(inner),
        A::Array(items) => J::Array(items.iter().map(json_of).collect()),
        A::Map(m) => J::Object(m.iter().map(|(k, x)| (k.clone(), json_of(x))).collect()),
        A::Record(fields) => J::Object(
            fields
                .iter()
                .map(|(k, x)| (k.clone(), json_of(x)))
                .collect(),
        ),
        other => panic!("an Avro value pgcdc should not write: {other:?}"),
    }
}

/// Two's-complement bytes without redundant sign bytes (how Java's BigInteger writes them).
fn minimal(mut b: Vec<u8>) -> Vec<u8> {
    while b.len() > 1 && ((b[0] == 0 && b[1] & 0x80 == 0) || (b[0] == 0xff && b[1] & 0x80 != 0)) {
        b.remove(0);
    }
    b
}

/// A JSON-converter record part's payload with `prefix` made neutral, and without the
/// processing times (which differ between two connectors).
fn comparable(v: J, prefix: &str) -> J {
    let mut v = serde_json::from_str::<J>(&v.to_string().replace(prefix, "<prefix>")).unwrap();
    if let Some(o) = v.as_object_mut() {
        for k in ["ts_ms", "ts_us", "ts_ns"] {
            o.remove(k);
        }
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn avro_records_decode_to_the_values_of_the_json_records_for_every_type() {
    let db = TestDb::create("avro").await;
    for sql in DDL {
        db.exec(sql).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let modes: &[&[(&str, &str)]] = &[
        &[],
        &[
            ("decimal.handling.mode", "string"),
            ("time.precision.mode", "connect"),
            ("hstore.handling.mode", "map"),
            ("interval.handling.mode", "string"),
        ],
    ];
    let mut runs = Vec::new();
    for (m, mode) in modes.iter().enumerate() {
        for avro in [false, true] {
            let prefix = unique(&format!("avro{m}{}", if avro { "a" } else { "j" }));
            let offsets = dir.path().join(&prefix);
            std::fs::create_dir_all(&offsets).unwrap();
            let base = if avro {
                avro_config(&db, &prefix, &offsets, &env().registry)
            } else {
                base_config(&db, &prefix, &env().kafka, &offsets)
            };
            let raw = matrix_config(base, &prefix, mode);
            let running = start(&raw);
            db.wait_for_slot(&prefix).await;
            runs.push((m, avro, prefix, running));
        }
    }
    for sql in ROWS {
        db.exec(sql).await;
    }
    let expected = [("all_types", 11), ("toasted", 4)];
    for (table, n) in expected {
        let mut json_run: HashMap<usize, (String, Vec<Rec>)> = HashMap::new();
        for (m, avro, prefix, running) in &runs {
            running.assert_running();
            let recs = read_n(&env().kafka, &format!("{prefix}.public.{table}"), n, T).await;
            assert_eq!(recs.len(), n, "{table}: records of {prefix}");
            if !avro {
                json_run.insert(*m, (prefix.clone(), recs));
                continue;
            }
            let (json_prefix, json_recs) = &json_run[m];
            for (i, (j, a)) in json_recs.iter().zip(&recs).enumerate() {
                let what = format!("{table} record {i} in mode {:?}", modes[*m]);
                let want_key = j
                    .key_json()
                    .map(|k| comparable(k["payload"].clone(), json_prefix));
                let got_key = a.key.as_deref().map(|k| comparable(decode(k).1, prefix));
                assert_eq!(got_key, want_key, "{what}: key");
                let want = j
                    .value_json()
                    .map(|v| comparable(v["payload"].clone(), json_prefix));
                let got = a.value.as_deref().map(|v| comparable(decode(v).1, prefix));
                if got != want {
                    let (g, w) = (got.unwrap_or_default(), want.unwrap_or_default());
                    let diff: Vec<String> = ["before", "after", "source"]
                        .iter()
                        .flat_map(|image| {
                            let (gi, wi) = (&g[image], &w[image]);
                            wi.as_object()
                                .into_iter()
                                .flatten()
                                .filter(|(k, v)| gi.get(k.as_str()) != Some(v))
                                .map(|(k, v)| {
                                    format!("{image}.{k}: json {v} avro {}", gi[k.as_str()])
                                })
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    panic!("{what}: value differs: {diff:?}\navro {g}\njson {w}");
                }
            }
        }
    }
    // Each subject got one schema: key and value of the two tables, one version each.
    for (_, avro, prefix, running) in runs {
        let stats = running.stop().await.expect("clean stop");
        if !avro {
            continue;
        }
        assert_eq!(stats.registry_calls, 4, "registry calls of {prefix}");
        for table in ["all_types", "toasted"] {
            for part in ["key", "value"] {
                let versions = registry_get(&format!(
                    "/subjects/{prefix}.public.{table}-{part}/versions"
                ));
                assert_eq!(versions, json!([1]), "{prefix}.public.{table}-{part}");
            }
        }
    }
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compatible_column_is_a_new_version_and_an_incompatible_change_stops_the_connector() {
    let db = TestDb::create("avroevo").await;
    // A column name Avro refuses: an Avro converter makes field names valid, as Debezium does.
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY, a int, \"x-y\" int DEFAULT 7)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("avroevo");
    let mut raw = avro_config(&db, &prefix, dir.path(), &env().registry);
    raw.insert("snapshot.mode".into(), "no_data".into());
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO public.t VALUES (1, 1)").await;
    db.exec("ALTER TABLE public.t ADD COLUMN b text").await;
    db.exec("INSERT INTO public.t VALUES (2, 2, 8, 'x')").await;
    let topic = format!("{prefix}.public.t");
    let recs = read_n(&env().kafka, &topic, 2, T).await;
    let (first, _) = decode(recs[0].value.as_deref().unwrap());
    let (second, v) = decode(recs[1].value.as_deref().unwrap());
    assert_ne!(first, second, "the added column is a new schema");
    assert_eq!(v["after"], json!({"id": 2, "a": 2, "x_y": 8, "b": "x"}));
    let subject = format!("{topic}-value");
    assert_eq!(
        registry_get(&format!("/subjects/{subject}/versions")),
        json!([1, 2])
    );
    let before_refusal = db.current_lsn().await;
    db.wait_confirmed(&prefix, before_refusal, "the accepted changes")
        .await;
    // int to text: a reader of the new schema cannot read the old records (BACKWARD).
    db.exec("ALTER TABLE public.t ALTER COLUMN a TYPE text")
        .await;
    db.exec("INSERT INTO public.t VALUES (3, 'three', 9, 'y')")
        .await;
    let after_refusal = db.current_lsn().await;
    let err = running.expect_error(T).await;
    let msg = err.message();
    assert_eq!(err.kind(), pgcdc::ErrorKind::Registry, "{msg}");
    for want in [
        subject.as_str(),
        "BACKWARD",
        "not compatible",
        "column `a` changed type from int to string",
        "PUT /config/",
    ] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
    assert!(
        db.confirmed_flush(&prefix).await < after_refusal,
        "nothing past the refused change is confirmed"
    );
    assert_eq!(
        read_n(&env().kafka, &topic, 2, T).await.len(),
        2,
        "the refused record is not in the topic"
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_stops_answering_is_waited_for_and_nothing_is_lost() {
    let db = TestDb::create("avrodown").await;
    db.exec("CREATE TABLE public.t (id int PRIMARY KEY, v text)")
        .await;
    let upstream = registry_host_port();
    let proxy = CutProxy::start(upstream).await;
    let path = env().registry.splitn(4, '/').nth(3).unwrap_or("");
    // The first URL refuses connections: the client goes on to the next.
    let url = format!(
        "http://127.0.0.1:1/{path},http://127.0.0.1:{}/{path}",
        proxy.port
    );
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("avrodown");
    let mut raw = avro_config(&db, &prefix, dir.path(), &url);
    raw.insert("snapshot.mode".into(), "no_data".into());
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    proxy.cut(true);
    for i in 0..20 {
        db.exec(&format!("INSERT INTO public.t VALUES ({i}, 'v{i}')"))
            .await;
    }
    let written = db.current_lsn().await;
    // While the registry does not answer, nothing is published or confirmed (polled for a
    // few seconds: the connector is blocked on its first registration).
    let topic = format!("{prefix}.public.t");
    for _ in 0..30 {
        running.assert_running();
        assert!(db.confirmed_flush(&prefix).await < written);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ends = end_offsets(&env().kafka, std::slice::from_ref(&topic)).await;
    assert!(
        ends.values().all(|n| *n == 0),
        "nothing published while the registry is cut: {ends:?}"
    );
    proxy.cut(false);
    let recs = read_n(&env().kafka, &topic, 20, T).await;
    let ids: Vec<i64> = recs
        .iter()
        .map(|r| {
            decode(r.value.as_deref().unwrap()).1["after"]["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, (0..20).collect::<Vec<_>>(), "every row, in order");
    db.wait_confirmed(&prefix, written, "the rows after the registry returned")
        .await;
    running.stop().await.expect("clean stop");
    db.cleanup().await;
}

/// Runs `script` (under the repository root) with `args`, bounded by `timeout_secs` so that a
/// client stuck on the network fails the test instead of hanging it. Returns its status and
/// its captured stdout and stderr.
async fn run_script(script: &str, timeout_secs: u32, args: Vec<String>) -> std::process::Output {
    let path = format!("{}/{script}", env!("CARGO_MANIFEST_DIR"));
    tokio::task::spawn_blocking(move || {
        std::process::Command::new("timeout")
            .arg(timeout_secs.to_string())
            .arg(&path)
            .args(&args)
            .output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("{script} runs: {e}"))
}

/// Runs Confluent's Python client with its AvroDeserializer (`scripts/avro/consumer.sh`) on
/// `topics` (name, records) and returns the records it decoded, as JSON.
async fn python_consumer(topics: &[(String, usize)]) -> Vec<J> {
    let mut args = vec![env().kafka.clone(), env().registry.clone()];
    args.extend(topics.iter().map(|(t, n)| format!("{t}={n}")));
    let out = run_script("scripts/avro/consumer.sh", 180, args).await;
    assert!(
        out.status.success(),
        "the Python consumer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The lines a Kafka Connect sink task (FileStreamSink, with Apicurio's AvroConverter in
/// Confluent compatibility mode as key and value converter) writes for `topics`: each
/// record's decoded value as Connect prints it (scripts/avro/connect-sink.sh).
async fn connect_sink(topics: &[(String, usize)]) -> Vec<String> {
    let out = tempfile::NamedTempFile::new().unwrap();
    let registry_v2 = registry_v2_url();
    let mut args = vec![
        env().kafka.clone(),
        registry_v2,
        out.path().display().to_string(),
    ];
    args.extend(topics.iter().map(|(t, n)| format!("{t}={n}")));
    let run = run_script("scripts/avro/connect-sink.sh", 300, args).await;
    assert!(
        run.status.success(),
        "the Connect sink failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read_to_string(out.path())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_config_with_avro_is_read_by_confluents_python_deserializer_and_a_connect_sink() {
    let db = seed_db("seedavro").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("lojaavro");
    // The seed file with the converter lines of its S3 sink (Confluent's AvroConverter).
    let raw = with_seed_file(avro_config(&db, &prefix, dir.path(), &env().registry));
    let aggregate = unique("pedidoavro");
    let c = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec(&format!(
        "BEGIN;
         INSERT INTO pedidos (id, cliente_id, total) VALUES (1, 42, 99.90);
         INSERT INTO outbox VALUES ('6f1c2d3e-0000-4000-8000-000000000001', '{aggregate}', '1', 'PedidoCriado',
                                    '{{\"pedido\": 1, \"total\": 99.90}}');
         COMMIT;
         UPDATE pedidos SET status = 'pago' WHERE id = 1;
         DELETE FROM pedidos WHERE id = 1;"
    ))
    .await;
    let orders = format!("{prefix}.public.pedidos");
    let outbox = format!("outbox.event.{aggregate}");
    read_n(&env().kafka, &orders, 4, T).await;
    read_n(&env().kafka, &outbox, 1, T).await;
    let got = python_consumer(&[(orders.clone(), 4), (outbox.clone(), 1)]).await;
    let ops: Vec<&str> = got[..4]
        .iter()
        .map(|r| r["value"]["op"].as_str().unwrap_or("tombstone"))
        .collect();
    assert_eq!(ops, ["c", "u", "d", "tombstone"]);
    let after = &got[0]["value"]["after"];
    assert_eq!(after["cliente_id"], json!(42));
    assert_eq!(after["status"], json!("novo"));
    assert_eq!(after["total"], json!("99.90"), "a Decimal of scale 2");
    assert_eq!(got[0]["key"], json!({"id": 1}));
    assert_eq!(got[0]["value"]["source"]["table"], json!("pedidos"));
    let event = &got[4];
    assert_eq!(event["key"], json!("1"), "the outbox key is an Avro string");
    assert_eq!(
        event["value"],
        json!("{\"total\": 99.90, \"pedido\": 1}"),
        "the payload is an io.debezium.data.Json string"
    );
    // The seed's S3 sink reads these topics with an Avro converter; its stand-in here is the
    // FileStreamSink that ships with Kafka Connect (the S3 sink is not on Maven Central).
    let lines = connect_sink(&[(orders.clone(), 4), (outbox.clone(), 1)]).await;
    assert_eq!(lines.len(), 5, "{lines:#?}");
    let payload = "{\"total\": 99.90, \"pedido\": 1}";
    assert_eq!(
        lines.iter().filter(|l| *l == payload).count(),
        1,
        "the outbox payload: {lines:#?}"
    );
    // The orders topic's records, in their order (the outbox's may come anywhere between).
    let order_lines: Vec<&String> = lines.iter().filter(|l| *l != payload).collect();
    for (line, op) in order_lines[..3].iter().zip(["c", "u", "d"]) {
        assert!(line.starts_with("Struct{"), "{line}");
        assert!(line.contains(&format!(",op={op},")), "{op}: {line}");
        assert!(line.contains("table=pedidos"), "{line}");
    }
    assert!(
        order_lines[0]
            .starts_with("Struct{after=Struct{id=1,cliente_id=42,status=novo,total=99.90,"),
        "the row, with its Decimal: {}",
        order_lines[0]
    );
    assert_eq!(order_lines[3], "null", "the tombstone");
    c.stop().await.unwrap();
    db.cleanup().await;
}

/// An HTTPS front for the test registry that asks for basic credentials, as a registry behind
/// an authenticating reverse proxy does (Apicurio's own authentication needs an OIDC server):
/// TLS with the test CA's certificate for localhost and 127.0.0.1, `401` without
/// `Authorization: Basic <user:password>`, else the request goes to the registry over plain
/// HTTP, one request per connection. Counts what it passed and what it refused.
struct RegistryFront {
    port: u16,
    passed: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl RegistryFront {
    async fn start(user_info: &str) -> RegistryFront {
        let certs_dir = std::env::var("PGCDC_TEST_KAFKA_CERTS").map_or_else(
            |_| {
                std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("target/services/kafka-certs")
            },
            std::path::PathBuf::from,
        );
        let pem = std::fs::read(certs_dir.join("broker.pem"))
            .expect("the test CA's localhost certificate");
        let chain: Vec<_> = rustls_pemfile::certs(&mut &pem[..])
            .map(Result::unwrap)
            .collect();
        let key = rustls_pemfile::private_key(&mut &pem[..]).unwrap().unwrap();
        let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let upstream = registry_host_port();
        let expected = format!(
            "basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_info)
        );
        let (passed, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (p, r) = (passed.clone(), refused.clone());
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, upstream, expected) =
                    (acceptor.clone(), upstream.clone(), expected.clone());
                let (p, r) = (p.clone(), r.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = front_one(tls, &upstream, &expected, &p, &r).await;
                });
            }
        });
        RegistryFront {
            port,
            passed,
            refused,
            task,
        }
    }
}

impl Drop for RegistryFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request through [`RegistryFront`].
async fn front_one(
    mut tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    upstream: &str,
    expected: &str,
    passed: &AtomicUsize,
    refused: &AtomicUsize,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = tls.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            })
            .map(|(_, v)| v.trim().to_string())
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = tls.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if header("authorization").map(|a| a.to_ascii_lowercase())
        != Some(expected.to_ascii_lowercase())
    {
        refused.fetch_add(1, Ordering::SeqCst);
        let body = r#"{"error_code":401,"message":"Unauthorized"}"#;
        let answer = format!(
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        tls.write_all(answer.as_bytes()).await?;
        return tls.shutdown().await;
    }
    passed.fetch_add(1, Ordering::SeqCst);
    // The same request, asking the registry to close the connection after its answer.
    let mut request: String = head
        .trim_end()
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    request.push_str("Connection: close\r\n\r\n");
    let mut up = tokio::net::TcpStream::connect(upstream).await?;
    up.write_all(request.as_bytes()).await?;
    up.write_all(&buf[head_end..]).await?;
    tokio::io::copy(&mut up, &mut tls).await?;
    tls.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_over_tls_with_basic_auth_and_what_a_wrong_password_or_ca_gives() {
    let db = TestDb::create("avrotls").await;
    db.exec("CREATE TABLE t (id int PRIMARY KEY, v text)").await;
    let front = RegistryFront::start("alice:s3cret").await;
    let url = format!("https://localhost:{}/apis/ccompat/v7", front.port);
    let ca = std::env::var("PGCDC_TEST_KAFKA_CERTS").map_or_else(
        |_| {
            format!(
                "{}/target/services/kafka-certs/ca.pem",
                env!("CARGO_MANIFEST_DIR")
            )
        },
        |d| format!("{d}/ca.pem"),
    );
    let config = |prefix: &str, dir: &std::path::Path, password: &str, trust: bool| {
        let mut raw = avro_config(&db, prefix, dir, &url);
        for part in ["key", "value"] {
            let mut set = |k: &str, v: &str| raw.insert(format!("{part}.converter.{k}"), v.into());
            set("basic.auth.credentials.source", "USER_INFO");
            set("basic.auth.user.info", &format!("alice:{password}"));
            if trust {
                set("schema.registry.ssl.truststore.type", "PEM");
                set("schema.registry.ssl.truststore.location", &ca);
            }
        }
        raw
    };

    // The right CA and password: records written, every registry call through the front.
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("avrotls");
    let running = start(&config(&prefix, dir.path(), "s3cret", true));
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1, 'a')").await;
    let topic = format!("{prefix}.public.t");
    let recs = read_n(&env().kafka, &topic, 1, T).await;
    let (_, v) = decode(recs[0].value.as_deref().unwrap());
    assert_eq!(v["after"], json!({"id": 1, "v": "a"}));
    assert!(
        front.passed.load(Ordering::SeqCst) >= 2,
        "key and value schemas registered through the front"
    );
    assert_eq!(front.refused.load(Ordering::SeqCst), 0);
    running.stop().await.unwrap();

    // A wrong password: an authentication error, not a wait.
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("avrotls");
    // (The snapshot of row 1 needs the schemas: the run fails there, dropping the slot it made.)
    let running = start(&config(&prefix, dir.path(), "wrong", true));
    let err = running.expect_error(T).await;
    assert_eq!(err.kind(), pgcdc::ErrorKind::Auth, "{}", err.message());
    assert!(err.message().contains("HTTP 401"), "{}", err.message());
    assert!(front.refused.load(Ordering::SeqCst) >= 1);

    // No trust store: the test CA is not a public root, so TLS fails, and that is not waited out.
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("avrotls");
    let running = start(&config(&prefix, dir.path(), "s3cret", false));
    let err = running.expect_error(T).await;
    let msg = err.message();
    assert_eq!(err.kind(), pgcdc::ErrorKind::Config, "{msg}");
    for want in [
        "TLS with https://localhost",
        "schema.registry.ssl.truststore.location",
    ] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subject_name_strategies_name_the_subjects_confluent_names() {
    let db = TestDb::create("avrosubj").await;
    db.exec("CREATE TABLE t (id int PRIMARY KEY, v text)").await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("avrosubj");
    let mut raw = avro_config(&db, &prefix, dir.path(), &env().registry);
    let strategy = |s: &str| format!("io.confluent.kafka.serializers.subject.{s}");
    raw.insert(
        "key.converter.key.subject.name.strategy".into(),
        strategy("RecordNameStrategy"),
    );
    raw.insert(
        "value.converter.value.subject.name.strategy".into(),
        strategy("TopicRecordNameStrategy"),
    );
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1, 'a')").await;
    let topic = format!("{prefix}.public.t");
    let rec = read_n(&env().kafka, &topic, 1, T).await.remove(0);
    let id = |bytes: &[u8]| u32::from_be_bytes(bytes[1..5].try_into().unwrap());
    // RecordNameStrategy: the record's full name; TopicRecordNameStrategy: <topic>-<full name>.
    for (subject, bytes) in [
        (
            format!("{prefix}.public.t.Key"),
            rec.key.as_deref().unwrap(),
        ),
        (
            format!("{topic}-{prefix}.public.t.Envelope"),
            rec.value.as_deref().unwrap(),
        ),
    ] {
        let latest = registry_get(&format!("/subjects/{subject}/versions/latest"));
        assert_eq!(latest["id"], json!(id(bytes)), "{subject}: {latest}");
    }
    let (_, v) = decode(rec.value.as_deref().unwrap());
    assert_eq!(v["after"], json!({"id": 1, "v": "a"}));
    running.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn use_latest_version_writes_the_latest_versions_id_when_its_structure_is_the_records() {
    use_latest(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apicurios_find_latest_through_its_v2_api_does_the_same() {
    use_latest(true).await;
}

/// Records written with the latest version's id (Confluent's `use.latest.version`, or with
/// `apicurio`, Apicurio's converter with `find-latest`, through Apicurio's v2 API).
async fn use_latest(apicurio: bool) {
    let db = TestDb::create("avrolatest").await;
    db.exec("CREATE TABLE t (id int PRIMARY KEY, v text)").await;
    let prefix = unique("avrolatest");
    let topic = format!("{prefix}.public.t");
    let id = |bytes: &[u8]| u32::from_be_bytes(bytes[1..5].try_into().unwrap());

    // Version 1 registered without the connect.* properties (connect.meta.data=false).
    let dir = tempfile::tempdir().unwrap();
    let mut raw = avro_config(&db, &prefix, dir.path(), &env().registry);
    for part in ["key", "value"] {
        raw.insert(
            format!("{part}.converter.connect.meta.data"),
            "false".into(),
        );
    }
    let running = start(&raw);
    db.wait_for_slot(&prefix).await;
    db.exec("INSERT INTO t VALUES (1, 'a')").await;
    let first = read_n(&env().kafka, &topic, 1, T).await.remove(0);
    running.stop().await.unwrap();
    let latest = registry_get(&format!("/subjects/{topic}-value/versions/latest"));
    assert_eq!(latest["id"], json!(id(first.value.as_deref().unwrap())));
    assert!(
        !latest["schema"].as_str().unwrap().contains("connect."),
        "{latest}"
    );

    // Now without registering, with the properties: the record's schema differs in text, not
    // in structure, so records carry version 1's id and nothing new is registered.
    let mut raw = avro_config(&db, &prefix, dir.path(), &env().registry);
    for part in ["key", "value"] {
        let mut set = |k: &str, v: &str| raw.insert(format!("{part}.converter{k}"), v.into());
        if apicurio {
            set("", "io.apicurio.registry.utils.converter.AvroConverter");
            raw.remove(&format!("{part}.converter.schema.registry.url"));
            let v2 = registry_v2_url();
            let mut set = |k: &str, v: &str| {
                raw.insert(format!("{part}.converter.apicurio.registry.{k}"), v.into())
            };
            set("url", &v2);
            set("find-latest", "true");
            set("as-confluent", "true");
            set("use-id", "contentId");
            set("headers.enabled", "false");
        } else {
            set(".auto.register.schemas", "false");
            set(".use.latest.version", "true");
        }
    }
    let running = start(&raw);
    db.exec("INSERT INTO t VALUES (2, 'b')").await;
    let recs = read_n(&env().kafka, &topic, 2, T).await;
    assert_eq!(
        id(recs[1].value.as_deref().unwrap()),
        id(first.value.as_deref().unwrap())
    );
    assert_eq!(
        id(recs[1].key.as_deref().unwrap()),
        id(first.key.as_deref().unwrap())
    );
    let (_, v) = decode(recs[1].value.as_deref().unwrap());
    assert_eq!(v["after"], json!({"id": 2, "v": "b"}));
    let versions = registry_get(&format!("/subjects/{topic}-value/versions"));
    assert_eq!(versions, json!([1]), "nothing registered");

    // A column the latest version lacks: a different structure, an error naming the subject.
    db.exec("ALTER TABLE t ADD COLUMN w int; INSERT INTO t VALUES (3, 'c', 3)")
        .await;
    let err = running.expect_error(T).await;
    let msg = err.message();
    assert_eq!(err.kind(), pgcdc::ErrorKind::Registry, "{msg}");
    let subject = format!("latest version of subject {topic}-value");
    for want in [subject.as_str(), "structure"] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
    assert_eq!(
        read_n(&env().kafka, &topic, 2, T).await.len(),
        2,
        "the third row not written"
    );
    db.cleanup().await;
}

/// A parallel snapshot with Avro: each reader connection converts with its own registry
/// client, and the records decode to the serial snapshot's keys and values, under one schema
/// version per subject.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_snapshot_writes_the_serial_snapshots_avro_records() {
    let db = TestDb::create("avropar").await;
    db.exec(
        "CREATE TABLE public.p (id int PRIMARY KEY, n numeric(10,2), t text, at timestamptz);
         INSERT INTO p SELECT g, g / 10.0, md5(g::text), '2026-01-01'::timestamptz + g * interval '1 min' \
           FROM generate_series(1, 6000) g",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut snapshots = Vec::new();
    for threads in ["1", "3"] {
        let prefix = unique("avropar");
        let offsets = dir.path().join(&prefix);
        std::fs::create_dir_all(&offsets).unwrap();
        let mut raw = avro_config(&db, &prefix, &offsets, &env().registry);
        raw.insert("snapshot.max.threads".into(), threads.into());
        let running = start(&raw);
        let recs = read_n(&env().kafka, &format!("{prefix}.public.p"), 6000, T).await;
        running.stop().await.expect("clean stop");
        let rows: HashMap<String, (J, J)> = recs
            .iter()
            .map(|r| {
                let key = decode(r.key.as_deref().unwrap()).1;
                let value = decode(r.value.as_deref().unwrap()).1;
                (key.to_string(), (key, value["after"].clone()))
            })
            .collect();
        assert_eq!(rows.len(), 6000, "{prefix}: every row once");
        for part in ["key", "value"] {
            let versions = registry_get(&format!("/subjects/{prefix}.public.p-{part}/versions"));
            assert_eq!(versions, json!([1]), "{prefix}.public.p-{part}");
        }
        snapshots.push(rows);
    }
    assert_eq!(
        snapshots[0], snapshots[1],
        "the serial and the parallel snapshot's records"
    );
    db.cleanup().await;
}
