//! `pgcdc validate` against deliberately broken servers, roles, publications and slots, and
//! a Kafka that does not answer: each finding with its fix, and the exit status.

use std::process::Command;

use crate::harness::{base_config, env, unique, TestDb};

/// Whether `topic` exists (metadata of every topic: asking for it by name would create it).
fn topic_exists(topic: &str) -> bool {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &env().kafka)
        .create()
        .unwrap();
    let md = consumer
        .fetch_metadata(None, std::time::Duration::from_secs(10))
        .unwrap();
    md.topics().iter().any(|t| t.name() == topic)
}

/// Runs `pgcdc validate` on `raw`; returns (exit code, stdout).
pub(crate) fn validate(raw: &pgcdc::config::RawConfig) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.json");
    std::fs::write(&file, serde_json::to_string(raw).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pgcdc"))
        .args(["validate", "--config", file.to_str().unwrap()])
        .env("PGCDC_LOG", "error")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// The lines of `report` for `check` at `severity` (`ok`, `WARNING`, `ERROR`), with the fix
/// line that follows each.
pub(crate) fn finding(report: &str, severity: &str, check: &str) -> Vec<String> {
    let lines: Vec<&str> = report.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let mut words = l.split_whitespace();
        if words.next() == Some(severity) && words.next() == Some(check) {
            let fix = lines
                .get(i + 1)
                .filter(|n| n.trim_start().starts_with("fix:"));
            out.push(format!("{l}\n{}", fix.unwrap_or(&"")));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sound_setup_has_no_error_and_a_broken_one_gets_each_finding_with_its_fix() {
    let db = TestDb::create("preflight").await;
    db.exec("CREATE TABLE keyed (id int PRIMARY KEY); CREATE TABLE keyless (v text)")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("preflight");

    // Sound: the only possible finding is the test server's unlimited max_slot_wal_keep_size.
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.insert("table.include.list".into(), "public.keyed".into());
    raw.insert("publication.name".into(), prefix.clone());
    raw.insert("publication.autocreate.mode".into(), "filtered".into());
    let (code, report) = validate(&raw);
    assert!(report.contains("0 error(s)"), "{report}");
    assert!(code == 0 || code == 3, "{code}: {report}");
    assert_eq!(
        code == 3,
        !finding(&report, "WARNING", "max_slot_wal_keep_size").is_empty()
    );
    assert_eq!(finding(&report, "ok", "kafka").len(), 1, "{report}");
    // Read-only: the table's topic was reported missing, not created (the test broker creates
    // topics a client asks metadata for by name).
    assert!(
        report.contains("(1 missing, created when needed)"),
        "{report}"
    );
    let topic = format!("{prefix}.public.keyed");
    assert!(!topic_exists(&topic), "validate created {topic}");

    // Broken: a role without REPLICATION that may not read one table, a keyless table, a
    // publication that lacks a captured table (and autocreate disabled), a slot of another
    // plugin, and a Kafka that does not answer.
    let role = format!("pf_{}", prefix.replace('-', "_"));
    db.exec(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'pw'; GRANT SELECT ON keyless TO {role}; \
         CREATE PUBLICATION {prefix} FOR TABLE keyless"
    ))
    .await;
    // In its own transaction: a slot cannot be created after writes in the same one.
    db.exec(&format!(
        "SELECT pg_create_logical_replication_slot('{prefix}', 'test_decoding')"
    ))
    .await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_kafka = closed.local_addr().unwrap().to_string();
    drop(closed);
    let mut raw = base_config(&db, &prefix, &dead_kafka, dir.path());
    raw.insert("database.user".into(), role.clone());
    raw.insert("database.password".into(), "pw".into());
    raw.insert(
        "table.include.list".into(),
        "public.keyed,public.keyless,public.keyles".into(),
    );
    raw.insert("publication.name".into(), prefix.clone());
    raw.insert("publication.autocreate.mode".into(), "disabled".into());
    let (code, report) = validate(&raw);
    assert_eq!(code, 1, "{report}");
    let role_error = finding(&report, "ERROR", "role");
    assert!(
        role_error[0].contains(&format!("ALTER ROLE \"{role}\" REPLICATION")),
        "{report}"
    );
    let select = finding(&report, "ERROR", "select");
    assert!(
        select.len() == 1 && select[0].contains("GRANT SELECT ON public.keyed"),
        "{report}"
    );
    let identity = finding(&report, "WARNING", "replica_identity");
    assert!(
        identity.len() == 1 && identity[0].contains("public.keyless REPLICA IDENTITY FULL"),
        "{report}"
    );
    let publication = finding(&report, "ERROR", "publication");
    assert!(
        publication[0].contains("ADD TABLE public.keyed"),
        "{report}"
    );
    let slot = finding(&report, "ERROR", "slot");
    assert!(
        slot[0].contains("plugin test_decoding") && slot[0].contains("pg_drop_replication_slot"),
        "{report}"
    );
    let kafka = finding(&report, "ERROR", "kafka");
    assert!(
        kafka[0].contains(&dead_kafka) && kafka[0].contains("fix: check that the brokers run"),
        "{report}"
    );
    assert!(finding(&report, "ok", "slot").is_empty(), "{report}");
    let include = finding(&report, "WARNING", "include");
    assert!(
        include.len() == 1
            && include[0].contains("table.include.list entry \"public.keyles\" matches nothing")
            && include[0].contains("did you mean public.keyless?"),
        "{report}"
    );

    db.exec(&format!("SELECT pg_drop_replication_slot('{prefix}')"))
        .await;
    db.cleanup().await;
    let admin = crate::harness::connect("postgres").await;
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {role}"))
        .await
        .unwrap();
}
