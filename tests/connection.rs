//! Connections: every authentication method, TLS per sslmode, and the server checks.

use std::path::PathBuf;
use std::time::Duration;

use pgcdc::config::{DatabaseConfig, SslMode};
use pgcdc::pg::wire::WireConnection;
use pgcdc::ErrorKind;

use crate::harness::*;

fn db_config(user: &str, password: Option<&str>, sslmode: SslMode) -> DatabaseConfig {
    let e = env();
    DatabaseConfig {
        hostname: e.pg_host.clone(),
        port: e.pg_port,
        other_hosts: Vec::new(),
        user: user.to_string(),
        password: password.map(str::to_string),
        dbname: "postgres".into(),
        sslmode,
        sslrootcert: e.pg_ca.as_ref().map(PathBuf::from),
        sslcert: None,
        sslkey: None,
        sslpassword: None,
        tcp_keepalive: true,
        connect_timeout: Duration::from_secs(10),
        validation_timeout: Duration::from_secs(10),
        query_timeout: None,
        initial_statements: Vec::new(),
    }
}

async fn identify(cfg: &DatabaseConfig) -> pgcdc::Result<String> {
    let mut conn = WireConnection::connect(cfg, true).await?;
    let r = conn.simple_query("IDENTIFY_SYSTEM").await?;
    let pos = r.get(0, "xlogpos").unwrap_or_default().to_string();
    conn.close().await;
    Ok(pos)
}

#[tokio::test]
async fn replication_connections_authenticate_with_trust_cleartext_md5_and_scram() {
    for user in ["pgcdc_trust", "pgcdc_clear", "pgcdc_md5", "pgcdc_scram"] {
        let pos = identify(&db_config(user, Some(user), SslMode::Disable))
            .await
            .unwrap_or_else(|e| panic!("{user}: {}", e.one_line()));
        assert!(pos.contains('/'), "{user}: IDENTIFY_SYSTEM returned {pos}");
        let client = pgcdc::pg::sql::connect(&db_config(user, Some(user), SslMode::Disable))
            .await
            .unwrap();
        let row = client
            .query_one(
                "SELECT current_user::text, current_setting('TimeZone')",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), user);
        assert_eq!(
            row.get::<_, String>(1),
            "UTC",
            "session settings are pinned"
        );
    }
}

#[tokio::test]
async fn a_wrong_password_is_an_auth_error_that_does_not_echo_it() {
    for user in ["pgcdc_clear", "pgcdc_md5", "pgcdc_scram"] {
        let err = identify(&db_config(user, Some("wrong-secret"), SslMode::Disable))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Auth, "{user}: {}", err.one_line());
        assert!(!err.one_line().contains("wrong-secret"));
        assert!(err.one_line().contains(user), "{}", err.one_line());
    }
    let err = identify(&db_config("pgcdc_scram", None, SslMode::Disable))
        .await
        .unwrap_err();
    assert!(
        err.one_line().contains("database.password"),
        "{}",
        err.one_line()
    );
}

#[tokio::test]
async fn tls_modes_follow_libpq_semantics() {
    // The TLS-only role is refused without TLS, accepted with it.
    let err = identify(&db_config("pgcdc_tls", Some("pgcdc_tls"), SslMode::Disable))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{}", err.one_line());
    for mode in [
        SslMode::Allow,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ] {
        identify(&db_config("pgcdc_tls", Some("pgcdc_tls"), mode))
            .await
            .unwrap_or_else(|e| panic!("{mode:?}: {}", e.one_line()));
        pgcdc::pg::sql::connect(&db_config("pgcdc_tls", Some("pgcdc_tls"), mode))
            .await
            .unwrap_or_else(|e| panic!("sql {mode:?}: {}", e.one_line()));
    }
    // verify-full accepts the names in the certificate (DNS localhost, IP 127.0.0.1).
    let mut by_name = db_config("pgcdc_tls", Some("pgcdc_tls"), SslMode::VerifyFull);
    by_name.hostname = "localhost".into();
    identify(&by_name)
        .await
        .unwrap_or_else(|e| panic!("verify-full by name: {}", e.one_line()));
    // A CA that did not sign the server certificate fails verify-ca and verify-full, but not require.
    for mode in [SslMode::VerifyCa, SslMode::VerifyFull, SslMode::Require] {
        let mut wrong_ca = db_config("pgcdc_tls", Some("pgcdc_tls"), mode);
        wrong_ca.sslrootcert = Some(PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
        let r = identify(&wrong_ca).await;
        if mode == SslMode::Require {
            r.unwrap_or_else(|e| panic!("require does not verify: {}", e.one_line()));
        } else {
            let err = r.unwrap_err();
            assert!(
                err.one_line().contains("TLS certificate was rejected")
                    && err.one_line().contains("database.sslrootcert holds the CA"),
                "{mode:?}: {}",
                err.one_line()
            );
            // A setting to fix, not a network failure to retry for ever.
            assert!(!err.is_retriable(), "{mode:?}: {}", err.one_line());
        }
    }
    // Without the CA, verification fails, on the replication and on the SQL connection, and
    // the error says to set the CA.
    let mut no_ca = db_config("pgcdc_tls", Some("pgcdc_tls"), SslMode::VerifyCa);
    no_ca.sslrootcert = None;
    let errs = [
        identify(&no_ca).await.map(|_| ()).unwrap_err(),
        pgcdc::pg::sql::connect(&no_ca)
            .await
            .map(|_| ())
            .unwrap_err(),
    ];
    for err in errs {
        assert!(
            err.one_line()
                .contains("set database.sslrootcert to the CA")
                && !err.is_retriable(),
            "{}",
            err.one_line()
        );
    }
}

/// A socket directory as `database.hostname` connects over the server's Unix-domain socket,
/// without TLS whatever `sslmode` says (as libpq), on both connections.
#[tokio::test]
async fn a_socket_directory_as_host_connects_over_the_unix_socket_without_tls() {
    let dir = std::env::var("PGCDC_TEST_PG_SOCKET_DIR").expect("scripts/services.sh env");
    for mode in [SslMode::Prefer, SslMode::Require, SslMode::VerifyFull] {
        let mut cfg = db_config("postgres", None, mode);
        cfg.hostname = dir.clone();
        let pos = identify(&cfg)
            .await
            .unwrap_or_else(|e| panic!("{mode:?}: {}", e.one_line()));
        assert!(pos.contains('/'), "{mode:?}: {pos}");
        let client = pgcdc::pg::sql::connect(&cfg)
            .await
            .unwrap_or_else(|e| panic!("{mode:?}: {}", e.one_line()));
        let local: Option<String> = client
            .query_one("SELECT inet_client_addr()::text", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            local, None,
            "{mode:?}: a Unix-socket connection has no client address"
        );
    }
}

/// `database.query.timeout.ms` is the `statement_timeout` of regular SQL connections; the
/// snapshot's connection has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_timeout_limits_sql_connections_but_not_snapshot_reads() {
    let e = env();
    let mut cfg = db_config(&e.pg_user, Some(&e.pg_password), SslMode::Disable);
    cfg.query_timeout = Some(Duration::from_millis(100));
    let client = pgcdc::pg::sql::connect(&cfg).await.unwrap();
    let err = client
        .batch_execute("SELECT pg_sleep(1)")
        .await
        .expect_err("statement_timeout cancels it");
    assert_eq!(err.code().map(|c| c.code()), Some("57014"), "{err}");
    let snap = pgcdc::pg::sql::connect_for_snapshot(&cfg).await.unwrap();
    snap.batch_execute("SELECT pg_sleep(0.3)").await.unwrap();
}

/// A client certificate whose key is encrypted (`database.sslpassword`), in the JDBC driver's
/// DER PKCS#8 form and in PEM, authenticates both connections under `cert` authentication;
/// without the password, or with a wrong one, start-up says what is wrong.
#[tokio::test]
async fn a_client_certificate_with_an_encrypted_key_authenticates_with_its_password() {
    let Some(ca) = env().pg_ca.clone() else {
        panic!("no test CA");
    };
    let certs = std::path::Path::new(&ca).parent().unwrap().to_path_buf();
    let with_key = |key: &str, password: Option<&str>| {
        let mut cfg = db_config("pgcdc_cert", None, SslMode::VerifyFull);
        cfg.sslcert = Some(certs.join("client.crt"));
        cfg.sslkey = Some(certs.join(key));
        cfg.sslpassword = password.map(str::to_string);
        cfg
    };
    for key in ["client-encrypted.pk8", "client-encrypted.pem"] {
        let cfg = with_key(key, Some("pgcdc-key-pass"));
        let pos = identify(&cfg)
            .await
            .unwrap_or_else(|e| panic!("{key}: {}", e.one_line()));
        assert!(pos.contains('/'), "{key}: {pos}");
        let client = pgcdc::pg::sql::connect(&cfg).await.unwrap();
        let user: String = client
            .query_one("SELECT current_user::text", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(user, "pgcdc_cert", "{key}");
    }
    let missing = identify(&with_key("client-encrypted.pk8", None))
        .await
        .unwrap_err()
        .one_line();
    assert!(missing.contains("set database.sslpassword"), "{missing}");
    let wrong = identify(&with_key("client-encrypted.pem", Some("wrong")))
        .await
        .unwrap_err();
    assert!(!wrong.is_retriable());
    assert!(
        wrong
            .one_line()
            .contains("could not be decrypted with database.sslpassword"),
        "{}",
        wrong.one_line()
    );
}
