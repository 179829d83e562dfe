//! The command line: config errors are one clear line and a non-zero exit, before anything
//! connects.

use std::process::Command;

fn pgcdc(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgcdc"));
    // Any free port for the REST API: tests run side by side.
    cmd.args(args)
        .env("PGCDC_LOG", "warn")
        .env("PGCDC_LISTENERS", "http://127.0.0.1:0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run pgcdc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn seed() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/config/pedidos-cdc.json").to_string()
}

#[test]
fn invalid_config_exits_non_zero_naming_every_problem_without_connecting() {
    let (code, _, err) = pgcdc(
        &[
            "run",
            "--config",
            &seed(),
            "--set",
            "snapshot.mode=sometimes",
            "--set",
            "database.password=hunter2",
        ],
        &[],
    );
    assert_eq!(code, 78, "a config error exits with EX_CONFIG: {err}");
    assert!(err.contains("pgcdc: error: invalid configuration"), "{err}");
    assert!(err.contains("snapshot.mode=sometimes is invalid"), "{err}");
    assert!(err.contains("database.user is required"), "{err}");
    assert!(err.contains("bootstrap.servers is required"), "{err}");
    assert!(!err.contains("hunter2"), "a password leaked: {err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("pgcdc: error"))
            .count(),
        1
    );
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    let (code, _, err) = pgcdc(&["run", "--config", "/nonexistent/connector.json"], &[]);
    assert_eq!(code, 78);
    assert!(
        err.contains("cannot read config file /nonexistent/connector.json"),
        "{err}"
    );
}

#[test]
fn check_prints_the_merged_config_with_secrets_hidden() {
    let (code, out, err) = pgcdc(
        &["check", "--config", &seed(), "--set", "database.user=u"],
        &[
            ("PGCDC_DATABASE_PASSWORD", "hunter2"),
            ("PGCDC_BOOTSTRAP_SERVERS", "k:9092"),
            ("PGCDC_DATABASE_HOSTNAME", "db"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("database.hostname=db"), "{out}");
    assert!(out.contains("database.password=[hidden]"), "{out}");
    assert!(out.contains("bootstrap.servers=k:9092"), "{out}");
    assert!(!out.contains("hunter2"));
}

#[test]
fn a_worker_file_gives_its_brokers_to_a_connector_config_that_has_none() {
    let env = [
        ("PGCDC_DATABASE_USER", "u"),
        ("PGCDC_DATABASE_PASSWORD", "hunter2"),
        ("PGCDC_DATABASE_HOSTNAME", "db"),
    ];
    let (code, _, err) = pgcdc(&["check", "--config", &seed()], &env);
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("bootstrap.servers is required"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let worker = dir.path().join("worker.properties");
    std::fs::write(&worker, "bootstrap.servers=k:9092\nproducer.linger.ms=7\n").unwrap();
    let w = worker.to_str().unwrap();
    let (code, out, err) = pgcdc(&["check", "--config", &seed(), "--worker", w], &env);
    assert_eq!(code, 0, "{err}");
    // The config as given: the worker's defaults are not part of it.
    assert!(!out.contains("bootstrap.servers"), "{out}");
    // validate reads them too (a bad value stops it before it connects anywhere).
    let seed = seed();
    let args = [
        "validate",
        "--config",
        &seed,
        "--worker",
        w,
        "--set",
        "snapshot.mode=sometimes",
    ];
    let (code, _, err) = pgcdc(&args, &env);
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("snapshot.mode=sometimes"), "{err}");
    assert!(!err.contains("bootstrap.servers is required"), "{err}");
}

#[test]
fn check_hides_kafka_passwords_private_keys_and_the_jaas_config() {
    let jaas = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="cdc" password="hunter2";"#;
    let (code, out, err) = pgcdc(
        &[
            "check",
            "--config",
            &seed(),
            "--set",
            "producer.override.security.protocol=SASL_SSL",
            "--set",
            "producer.override.sasl.mechanism=SCRAM-SHA-512",
            "--set",
            &format!("producer.override.sasl.jaas.config={jaas}"),
            "--set",
            "producer.override.ssl.keystore.type=PEM",
            "--set",
            "producer.override.ssl.keystore.certificate.chain=CHAIN",
            "--set",
            "producer.override.ssl.keystore.key=PRIVATEKEY",
            "--set",
            "producer.override.ssl.key.password=keypw",
        ],
        &[
            ("PGCDC_DATABASE_USER", "u"),
            ("PGCDC_BOOTSTRAP_SERVERS", "k:9093"),
            ("PGCDC_DATABASE_HOSTNAME", "db"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("producer.override.sasl.jaas.config=[hidden]"),
        "{out}"
    );
    assert!(
        out.contains("producer.override.ssl.keystore.key=[hidden]"),
        "{out}"
    );
    assert!(
        out.contains("producer.override.ssl.key.password=[hidden]"),
        "{out}"
    );
    for secret in ["hunter2", "PRIVATEKEY", "keypw"] {
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "{secret} leaked"
        );
    }
}

#[test]
fn config_providers_resolve_for_the_run_and_check_prints_the_placeholders() {
    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("pg.properties");
    std::fs::write(&props, "password=hunter2\n").unwrap();
    let placeholder = format!("${{file:{}:password}}", props.display());
    let providers = [
        "--set",
        "config.providers=file,env",
        "--set",
        "config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider",
        "--set",
        "config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    ];
    let password = format!("database.password={placeholder}");
    let mut args = vec!["check", "--config"];
    let seed = seed();
    args.push(&seed);
    args.extend(providers);
    args.extend([
        "--set",
        &password,
        "--set",
        "database.user=${env:PG_USER_FOR_TEST}",
    ]);
    let env = [
        ("PG_USER_FOR_TEST", "cdc"),
        ("PGCDC_BOOTSTRAP_SERVERS", "k:9092"),
        ("PGCDC_DATABASE_HOSTNAME", "db"),
    ];
    let (code, out, err) = pgcdc(&args, &env);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("database.user=${env:PG_USER_FOR_TEST}"),
        "{out}"
    );
    assert!(
        !out.contains("hunter2") && !err.contains("hunter2"),
        "{out}{err}"
    );
    // An unresolvable placeholder stops before anything connects, naming key and provider.
    let mut args = args.clone();
    args.extend(["--set", "slot.name=${env:NOT_SET_ANYWHERE}"]);
    args[0] = "run";
    let (code, _, err) = pgcdc(&args, &env);
    assert_eq!(code, 78, "{err}");
    assert!(
        err.contains(
            "slot.name: ${env:NOT_SET_ANYWHERE} cannot be resolved: environment variable NOT_SET_ANYWHERE is not set"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn unreachable_postgres_is_a_connection_error_naming_host_and_port() {
    let (code, _, err) = pgcdc(
        &[
            "run",
            "--config",
            &seed(),
            "--set",
            "database.hostname=127.0.0.1",
            "--set",
            "database.port=1",
            "--set",
            "database.user=u",
            "--set",
            "bootstrap.servers=127.0.0.1:1",
            "--set",
            "errors.max.retries=0",
        ],
        &[],
    );
    assert_eq!(code, 1);
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(err.contains("cannot connect to PostgreSQL"), "{err}");
}

#[test]
fn refused_credentials_exit_with_ex_noperm_so_supervisors_stop_restarting() {
    let e = crate::harness::env();
    let (code, _, err) = pgcdc(
        &[
            "run",
            "--config",
            &seed(),
            "--set",
            &format!("database.hostname={}", e.pg_host),
            "--set",
            &format!("database.port={}", e.pg_port),
            "--set",
            "database.user=pgcdc_scram",
            "--set",
            "database.password=not-the-password",
            "--set",
            "database.sslmode=disable",
            "--set",
            &format!("bootstrap.servers={}", e.kafka),
        ],
        &[],
    );
    assert_eq!(code, 77, "{err}");
    assert!(err.contains("pgcdc_scram"), "{err}");
    assert!(!err.contains("not-the-password"), "{err}");
}

#[test]
fn sigterm_while_waiting_to_restart_after_a_connection_error_exits_zero() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgcdc"))
        .args([
            "run",
            "--config",
            &seed(),
            "--set",
            "database.hostname=127.0.0.1",
            "--set",
            "database.port=1",
            "--set",
            "database.user=u",
            "--set",
            "bootstrap.servers=127.0.0.1:1",
            "--set",
            "retriable.restart.connector.wait.ms=60000",
        ])
        .env("PGCDC_LOG", "info")
        .env("PGCDC_LISTENERS", "http://127.0.0.1:0")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            .expect("no restart message");
        if line.contains("restarting the connector") {
            break;
        }
    }
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "a stop requested while waiting to restart exits 0, got {status:?}"
    );
}

/// Bad input files get a clear, prompt error: a device that never ends, a huge unknown key,
/// a key set twice, a NUL byte in a value.
#[test]
fn bad_config_files_are_refused_promptly_and_clearly() {
    let started = std::time::Instant::now();
    let (code, _, err) = pgcdc(&["check", "--config", "/dev/zero"], &[]);
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("is over 1024 KiB"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let seed_text = std::fs::read_to_string(seed()).unwrap();
    let seed_json: serde_json::Value = serde_json::from_str(&seed_text).unwrap();
    let props: String = seed_json["config"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={}\n", v.as_str().unwrap().replace('\\', "\\\\")))
        .collect();

    let huge = dir.path().join("huge.properties");
    std::fs::write(&huge, format!("{props}{}=1\n", "k".repeat(900_000))).unwrap();
    let (code, _, err) = pgcdc(
        &[
            "check",
            "--config",
            huge.to_str().unwrap(),
            "--set",
            "database.user=u",
            "--set",
            "bootstrap.servers=k:9092",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("kkk... (900000 characters) is ignored"),
        "{err}"
    );
    assert!(err.len() < 2000, "the key is not printed whole");

    let twice = dir.path().join("twice.properties");
    std::fs::write(&twice, format!("{props}topic.prefix=again\n")).unwrap();
    let (code, _, err) = pgcdc(&["check", "--config", twice.to_str().unwrap()], &[]);
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("topic.prefix is set twice (on lines"), "{err}");

    let twice_json = dir.path().join("twice.json");
    let text = seed_text.replacen("\"config\": {", "\"config\": {\"topic.prefix\": \"a\",", 1);
    assert_ne!(text, seed_text);
    std::fs::write(&twice_json, text).unwrap();
    let (code, _, err) = pgcdc(&["check", "--config", twice_json.to_str().unwrap()], &[]);
    assert_eq!(code, 78, "{err}");
    assert!(
        err.contains("topic.prefix is set twice (in \"config\")"),
        "{err}"
    );

    let nul = dir.path().join("nul.properties");
    assert!(!props.contains("bootstrap.servers"));
    std::fs::write(&nul, format!("{props}bootstrap.servers=kafka:9092\0x\n")).unwrap();
    let (code, _, err) = pgcdc(
        &[
            "check",
            "--config",
            nul.to_str().unwrap(),
            "--set",
            "database.user=u",
        ],
        &[],
    );
    assert_eq!(code, 78, "{err}");
    assert!(
        err.contains("bootstrap.servers contains a NUL byte"),
        "{err}"
    );
    assert!(!err.contains("producer setting"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn an_environment_variable_that_is_not_utf8_is_ignored_or_named_never_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"\xff");
    let run = |args: &[&str], var: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_pgcdc"))
            .args(args)
            .env("PGCDC_LOG", "warn")
            .env("PGCDC_LISTENERS", "http://127.0.0.1:0")
            .env(var, bad)
            .output()
            .expect("run pgcdc");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Another program's variable: ignored; the command goes on (and fails on its config).
    let (code, err) = run(
        &["check", "--config", &seed(), "--set", "snapshot.mode=x"],
        "SOME_OTHER_TOOL",
    );
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("snapshot.mode=x is invalid"), "{err}");
    let (code, err) = run(
        &["run", "--config", &seed(), "--set", "snapshot.mode=x"],
        "SOME_OTHER_TOOL",
    );
    assert_eq!(code, 78, "{err}");
    // pgcdc's own: named, with the fix.
    for args in [
        &["check", "--config", &seed()][..],
        &["run", "--config", &seed()][..],
        &["serve"][..],
    ] {
        let (code, err) = run(args, "PGCDC_DATABASE_PASSWORD");
        assert_eq!(code, 78, "{args:?}: {err}");
        assert!(
            err.contains("PGCDC_DATABASE_PASSWORD is not valid UTF-8"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}
