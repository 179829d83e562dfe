//! Secured Kafka, configured as Kafka Connect users write it (`producer.override.*` with the
//! Java client's names): TLS with a client certificate, SASL PLAIN and SCRAM over plaintext
//! and over TLS, against the test broker's secured listeners (see `scripts/services.sh`). A
//! wrong password and an untrusted certificate are clear errors that are not retried.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::harness::*;

const T: Duration = Duration::from_secs(120);
const USER: &str = "pgcdc";
const PASSWORD: &str = "pgcdc-secret";

struct Secured {
    ssl: String,
    sasl: String,
    sasl_ssl: String,
    certs: PathBuf,
}

fn secured() -> Secured {
    let v = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    Secured {
        ssl: v("PGCDC_TEST_KAFKA_SSL", "127.0.0.1:59190"),
        sasl: v("PGCDC_TEST_KAFKA_SASL", "127.0.0.1:59191"),
        sasl_ssl: v("PGCDC_TEST_KAFKA_SASL_SSL", "127.0.0.1:59192"),
        certs: std::env::var("PGCDC_TEST_KAFKA_CERTS")
            .map(PathBuf::from)
            .unwrap_or_else(|_| root.join("target/services/kafka-certs")),
    }
}

impl Secured {
    fn cert(&self, name: &str) -> String {
        self.certs.join(name).to_string_lossy().into_owned()
    }
}

fn jaas(module: &str, password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.{module} required username=\"{USER}\" password=\"{password}\";"
    )
}

/// A table with one row, and a connector config on `brokers` with `security` added.
async fn setup(
    tag: &str,
    brokers: &str,
    security: &[(&str, String)],
) -> (TestDb, String, pgcdc::config::RawConfig, tempfile::TempDir) {
    let db = TestDb::create(tag).await;
    db.exec(
        "CREATE TABLE public.s (id int PRIMARY KEY, v text); INSERT INTO s VALUES (1, 'secured')",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique(tag);
    let mut raw = base_config(&db, &prefix, brokers, dir.path());
    for (k, v) in security {
        raw.insert(format!("producer.override.{k}"), v.clone());
    }
    (db, prefix, raw, dir)
}

/// Runs a connector through the secured listener and reads its record through the plaintext
/// one.
async fn delivers(tag: &str, brokers: &str, security: &[(&str, String)]) {
    let (db, prefix, raw, _dir) = setup(tag, brokers, security).await;
    let c = start(&raw);
    let recs = read_n(&env().kafka, &format!("{prefix}.public.s"), 1, T).await;
    assert_eq!(recs[0].payload()["after"]["v"], "secured", "{tag}");
    c.stop().await.unwrap();
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_plain_and_scram_over_plaintext_deliver() {
    let s = secured();
    for (mechanism, module) in [
        ("PLAIN", "plain.PlainLoginModule"),
        ("SCRAM-SHA-256", "scram.ScramLoginModule"),
        ("SCRAM-SHA-512", "scram.ScramLoginModule"),
    ] {
        let security = [
            ("security.protocol", "SASL_PLAINTEXT".to_string()),
            ("sasl.mechanism", mechanism.to_string()),
            ("sasl.jaas.config", jaas(module, PASSWORD)),
        ];
        delivers("secsasl", &s.sasl, &security).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_ssl_with_scram_and_a_pem_trust_store_delivers() {
    let s = secured();
    let security = [
        ("security.protocol", "SASL_SSL".to_string()),
        ("sasl.mechanism", "SCRAM-SHA-512".to_string()),
        ("sasl.jaas.config", jaas("scram.ScramLoginModule", PASSWORD)),
        ("ssl.truststore.type", "PEM".to_string()),
        ("ssl.truststore.location", s.cert("ca.pem")),
    ];
    delivers("secsaslssl", &s.sasl_ssl, &security).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_with_a_pkcs12_or_pem_key_store_delivers() {
    let s = secured();
    let trust = [
        ("security.protocol", "SSL".to_string()),
        ("ssl.truststore.type", "PEM".to_string()),
        ("ssl.truststore.location", s.cert("ca.pem")),
    ];
    let pkcs12 = [
        ("ssl.keystore.type", "PKCS12".to_string()),
        ("ssl.keystore.location", s.cert("client.p12")),
        ("ssl.keystore.password", PASSWORD.to_string()),
    ];
    let chain = std::fs::read_to_string(s.cert("client.crt")).expect("client certificate");
    let key = std::fs::read_to_string(s.cert("client.key")).expect("client key");
    let pem = [
        ("ssl.keystore.type", "PEM".to_string()),
        ("ssl.keystore.certificate.chain", chain),
        ("ssl.keystore.key", key),
    ];
    for store in [&pkcs12, &pem] {
        let security: Vec<(&str, String)> = trust.iter().chain(store.iter()).cloned().collect();
        delivers("secmtls", &s.ssl, &security).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_an_authentication_error_that_is_not_retried() {
    let s = secured();
    let security = [
        ("security.protocol", "SASL_PLAINTEXT".to_string()),
        ("sasl.mechanism", "SCRAM-SHA-512".to_string()),
        (
            "sasl.jaas.config",
            jaas("scram.ScramLoginModule", "not-the-password"),
        ),
    ];
    let (db, _prefix, raw, _dir) = setup("secbadpw", &s.sasl, &security).await;
    let started = Instant::now();
    let err = start(&raw).expect_error(T).await;
    let msg = err.one_line();
    assert_eq!(err.kind(), pgcdc::ErrorKind::Auth, "{msg}");
    assert!(!err.is_retriable(), "{msg}");
    assert!(
        msg.contains("sasl.jaas.config") && msg.contains("SCRAM-SHA-512"),
        "{msg}"
    );
    assert!(
        !msg.contains("not-the-password"),
        "the password leaked: {msg}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "reported only after {:?}",
        started.elapsed()
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_broker_certificate_is_a_configuration_error_that_is_not_retried() {
    let s = secured();
    // The PostgreSQL test CA did not sign the broker's certificate.
    let other_ca = env().pg_ca.clone().expect("the PostgreSQL test CA");
    let security = [
        ("security.protocol", "SASL_SSL".to_string()),
        ("sasl.mechanism", "SCRAM-SHA-512".to_string()),
        ("sasl.jaas.config", jaas("scram.ScramLoginModule", PASSWORD)),
        ("ssl.truststore.type", "PEM".to_string()),
        ("ssl.truststore.location", other_ca),
    ];
    let (db, _prefix, raw, _dir) = setup("secuntrusted", &s.sasl_ssl, &security).await;
    let err = start(&raw).expect_error(T).await;
    let msg = err.one_line();
    assert_eq!(err.kind(), pgcdc::ErrorKind::Config, "{msg}");
    assert!(!err.is_retriable(), "{msg}");
    assert!(msg.contains("ssl.truststore.location"), "{msg}");
    assert!(msg.to_lowercase().contains("certificate"), "{msg}");
    db.cleanup().await;
}
