//! Kafka client security as Kafka Connect users write it: the Java client's settings under
//! `producer.*` / `producer.override.*`, translated into librdkafka's.
//!
//! | Java client (Kafka Connect) | librdkafka |
//! |---|---|
//! | `security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) | `security.protocol` |
//! | `ssl.truststore.type=PEM` + `ssl.truststore.location` | `ssl.ca.location` |
//! | `ssl.truststore.certificates` (PEM text) | `ssl.ca.pem` |
//! | `ssl.keystore.type=PKCS12` + `ssl.keystore.location`, `ssl.keystore.password` | `ssl.keystore.location`, `ssl.keystore.password` |
//! | `ssl.keystore.type=PEM` + `ssl.keystore.location` (key and chain in one file) | `ssl.certificate.location`, `ssl.key.location` |
//! | `ssl.keystore.certificate.chain`, `ssl.keystore.key` (PEM text) | `ssl.certificate.pem`, `ssl.key.pem` |
//! | `ssl.key.password` | `ssl.key.password` |
//! | `ssl.endpoint.identification.algorithm` (`https`, or empty to turn it off) | same (`https`, `none`) |
//! | `sasl.mechanism` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) | `sasl.mechanisms` |
//! | `sasl.jaas.config` (`PlainLoginModule` / `ScramLoginModule required username="…" password="…";`) | `sasl.username`, `sasl.password` |
//!
//! Without a trust store, the broker's certificate is checked against the system's CA store,
//! as the Java client checks it against the JVM's. Refused, each with the fix: JKS stores
//! (the Java client's default type) and PKCS#12 trust stores, which OpenSSL cannot read
//! (convert them to PEM); OAUTHBEARER and GSSAPI, which this build does not support; Java TLS
//! settings without an OpenSSL equivalent. Messages never show a password, a key or the JAAS
//! configuration.

use std::collections::BTreeMap;

use super::checker::Checker;

/// One producer setting as the user wrote it.
#[derive(Debug, Clone)]
pub(super) struct Written {
    /// The value.
    pub(super) value: String,
    /// The whole key the user wrote (`producer.override.ssl.truststore.location`).
    pub(super) key: String,
}

/// A librdkafka setting: property, value, and the key the user wrote for it.
pub(super) type Setting = (String, String, String);

/// Java TLS settings OpenSSL has no counterpart for; TLS 1.2 and 1.3 are what librdkafka
/// negotiates, so the protocol settings are accepted when they ask for nothing else.
const TLS_PROTOCOL_SETTINGS: &[&str] = &["ssl.protocol", "ssl.enabled.protocols"];
const JAVA_ONLY_TLS_SETTINGS: &[&str] = &[
    "ssl.provider",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
];
const UNSUPPORTED_SASL_SETTINGS: &[&str] = &[
    "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class",
    "sasl.login.class",
    "sasl.kerberos.service.name",
];

/// Takes the security settings out of `settings` (Java name → what the user wrote) and
/// returns their librdkafka equivalents; problems go to `c`.
pub(super) fn translate(
    settings: &mut BTreeMap<String, Written>,
    c: &mut Checker<'_>,
) -> Vec<Setting> {
    let mut out = Vec::new();
    let protocol = protocol(settings, c, &mut out);
    truststore(settings, c, &mut out);
    keystore(settings, c, &mut out);
    endpoint_identification(settings, c, &mut out);
    java_only(settings, c);
    sasl(settings, c, &mut out, protocol.as_deref());
    out
}

/// `security.protocol`, upper-cased as Java reads it; returns it.
fn protocol(
    settings: &mut BTreeMap<String, Written>,
    c: &mut Checker<'_>,
    out: &mut Vec<Setting>,
) -> Option<String> {
    let w = settings.remove("security.protocol")?;
    let p = w.value.trim().to_ascii_uppercase();
    if !["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"].contains(&p.as_str()) {
        c.problem(format!(
            "{}={} is invalid: allowed values are PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
            w.key, w.value
        ));
        return None;
    }
    out.push((
        "security.protocol".into(),
        p.to_ascii_lowercase(),
        w.key.clone(),
    ));
    Some(p)
}

/// The store type the user set (upper-cased), or the Java client's default, JKS.
fn store_type(settings: &mut BTreeMap<String, Written>, key: &str) -> (String, Option<Written>) {
    match settings.remove(key) {
        Some(w) => (w.value.trim().to_ascii_uppercase(), Some(w)),
        None => ("JKS".into(), None),
    }
}

/// `ssl.truststore.*`: a PEM file or PEM text; JKS and PKCS#12 are refused with the
/// command that converts them.
fn truststore(
    settings: &mut BTreeMap<String, Written>,
    c: &mut Checker<'_>,
    out: &mut Vec<Setting>,
) {
    let location = settings.remove("ssl.truststore.location");
    let certificates = settings.remove("ssl.truststore.certificates");
    let password = settings.remove("ssl.truststore.password");
    if location.is_none() && certificates.is_none() {
        if let Some(w) = settings.remove("ssl.truststore.type") {
            c.problem(format!(
                "{} is set but there is no trust store: set ssl.truststore.location (a PEM file) or ssl.truststore.certificates",
                w.key
            ));
        }
        return;
    }
    let (ty, ty_written) = store_type(settings, "ssl.truststore.type");
    let type_key = ty_written.map_or_else(|| "ssl.truststore.type".to_string(), |w| w.key);
    if ty != "PEM" {
        let what = location
            .as_ref()
            .or(certificates.as_ref())
            .map_or("", |w| w.key.as_str());
        c.problem(format!(
            "{what}: a {ty} trust store cannot be read by pgcdc (OpenSSL reads PEM): convert it, e.g. keytool -exportcert -rfc -keystore truststore.jks -alias <ca> -file ca.pem (or openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem), then set {type_key}=PEM and point ssl.truststore.location at ca.pem"
        ));
        return;
    }
    if let Some(w) = password {
        c.problem(format!(
            "{} cannot be set for a PEM trust store (the Java client refuses it too): remove it",
            w.key
        ));
    }
    if let Some(w) = location {
        out.push(("ssl.ca.location".into(), w.value.trim().into(), w.key));
    }
    if let Some(w) = certificates {
        out.push(("ssl.ca.pem".into(), w.value, w.key));
    }
}

/// `ssl.keystore.*` and `ssl.key.password`: PKCS#12 or PEM, as a file or as PEM text; JKS
/// is refused with the command that converts it.
fn keystore(settings: &mut BTreeMap<String, Written>, c: &mut Checker<'_>, out: &mut Vec<Setting>) {
    let location = settings.remove("ssl.keystore.location");
    let chain = settings.remove("ssl.keystore.certificate.chain");
    let key = settings.remove("ssl.keystore.key");
    let store_password = settings.remove("ssl.keystore.password");
    let key_password = settings.remove("ssl.key.password");
    if location.is_none() && chain.is_none() && key.is_none() {
        settings.remove("ssl.keystore.type");
        if let Some(w) = key_password {
            out.push(("ssl.key.password".into(), w.value, w.key));
        }
        return;
    }
    let (ty, ty_written) = store_type(settings, "ssl.keystore.type");
    let type_key = ty_written.map_or_else(|| "ssl.keystore.type".to_string(), |w| w.key);
    match (ty.as_str(), location) {
        ("PKCS12", Some(w)) => {
            out.push(("ssl.keystore.location".into(), w.value.trim().into(), w.key));
            if let Some(p) = store_password {
                out.push(("ssl.keystore.password".into(), p.value, p.key));
            }
        }
        ("PEM", Some(w)) => {
            out.push(("ssl.certificate.location".into(), w.value.trim().into(), w.key.clone()));
            out.push(("ssl.key.location".into(), w.value.trim().into(), w.key));
        }
        ("PEM", None) => {
            for (w, property) in [(chain, "ssl.certificate.pem"), (key, "ssl.key.pem")] {
                match w {
                    Some(w) => out.push((property.into(), w.value, w.key)),
                    None => c.problem(format!(
                        "ssl.keystore.certificate.chain and ssl.keystore.key go together ({type_key}=PEM): set both"
                    )),
                }
            }
        }
        (other, Some(w)) => c.problem(format!(
            "{}: a {other} key store cannot be read by pgcdc: convert it to PKCS#12 (keytool -importkeystore -srckeystore keystore.jks -destkeystore keystore.p12 -deststoretype PKCS12) and set {type_key}=PKCS12, or to PEM and set {type_key}=PEM",
            w.key
        )),
        (_, None) => c.problem(format!(
            "ssl.keystore.certificate.chain and ssl.keystore.key are PEM text: set {type_key}=PEM"
        )),
    }
    if let Some(w) = key_password {
        out.push(("ssl.key.password".into(), w.value, w.key));
    }
}

/// `ssl.endpoint.identification.algorithm`: `https` (the default) checks the broker's host
/// name; empty turns the check off.
fn endpoint_identification(
    settings: &mut BTreeMap<String, Written>,
    c: &mut Checker<'_>,
    out: &mut Vec<Setting>,
) {
    let Some(w) = settings.remove("ssl.endpoint.identification.algorithm") else {
        return;
    };
    let value = match w.value.trim().to_ascii_lowercase().as_str() {
        "https" => "https",
        "" | "none" => "none",
        _ => {
            c.problem(format!(
                "{}={} is invalid: use https (check the broker's host name) or leave it empty (do not)",
                w.key, w.value
            ));
            return;
        }
    };
    out.push((
        "ssl.endpoint.identification.algorithm".into(),
        value.into(),
        w.key,
    ));
}

/// Java TLS settings: the protocol ones are accepted when they ask for TLS 1.2 and 1.3 only;
/// the others have no OpenSSL counterpart and are refused.
fn java_only(settings: &mut BTreeMap<String, Written>, c: &mut Checker<'_>) {
    for name in TLS_PROTOCOL_SETTINGS {
        let Some(w) = settings.remove(*name) else {
            continue;
        };
        let ok = w
            .value
            .split(',')
            .map(str::trim)
            .all(|p| matches!(p, "TLSv1.2" | "TLSv1.3" | "TLS" | ""));
        if !ok {
            c.problem(format!(
                "{}={} is not supported: pgcdc negotiates TLS 1.2 or 1.3 with OpenSSL; remove it",
                w.key, w.value
            ));
        }
    }
    for name in JAVA_ONLY_TLS_SETTINGS {
        if let Some(w) = settings.remove(*name) {
            c.problem(format!(
                "{} is a setting of Java's TLS implementation, which pgcdc (OpenSSL) does not have: remove it",
                w.key
            ));
        }
    }
}

/// `sasl.mechanism` and `sasl.jaas.config`.
fn sasl(
    settings: &mut BTreeMap<String, Written>,
    c: &mut Checker<'_>,
    out: &mut Vec<Setting>,
    protocol: Option<&str>,
) {
    for name in UNSUPPORTED_SASL_SETTINGS {
        if let Some(w) = settings.remove(*name) {
            c.problem(format!(
                "{} is not supported: pgcdc authenticates with PLAIN or SCRAM from sasl.jaas.config; remove it",
                w.key
            ));
        }
    }
    let mechanism = settings.remove("sasl.mechanism");
    let jaas = settings.remove("sasl.jaas.config");
    let uses_sasl = protocol.is_some_and(|p| p.starts_with("SASL_"));
    if !uses_sasl {
        for w in mechanism.iter().chain(jaas.iter()) {
            c.warn(format!(
                "{} has no effect without security.protocol=SASL_PLAINTEXT or SASL_SSL",
                w.key
            ));
        }
        return;
    }
    let Some(mechanism) = sasl_mechanism(mechanism, c, out) else {
        return;
    };
    let Some(jaas) = jaas else {
        c.problem(format!(
            "security.protocol={} needs sasl.jaas.config, e.g. org.apache.kafka.common.security.scram.ScramLoginModule required username=\"...\" password=\"...\";",
            protocol.unwrap_or_default()
        ));
        return;
    };
    credentials(&jaas, &mechanism, c, out);
}

/// `sasl.mechanism` (Java's default is GSSAPI, which is refused); returns it.
fn sasl_mechanism(
    mechanism: Option<Written>,
    c: &mut Checker<'_>,
    out: &mut Vec<Setting>,
) -> Option<String> {
    let Some(w) = mechanism else {
        c.problem(
            "sasl.mechanism is not set: the Java client's default is GSSAPI (Kerberos), which pgcdc does not support; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
        );
        return None;
    };
    let m = w.value.trim().to_ascii_uppercase();
    match m.as_str() {
        "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" => {
            out.push(("sasl.mechanisms".into(), m.clone(), w.key));
            Some(m)
        }
        "OAUTHBEARER" => {
            c.problem(format!(
                "{}=OAUTHBEARER is not supported by this build of pgcdc (it has no OIDC token client): use SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN",
                w.key
            ));
            None
        }
        _ => {
            c.problem(format!(
                "{}={} is not supported: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                w.key, w.value
            ));
            None
        }
    }
}

/// The user name and password of a JAAS login module line, which must be the module of
/// `mechanism`.
fn credentials(jaas: &Written, mechanism: &str, c: &mut Checker<'_>, out: &mut Vec<Setting>) {
    let Some((module, options)) = parse_jaas(&jaas.value) else {
        c.problem(format!(
            "{} is not a JAAS login module line: write <LoginModule class> required username=\"...\" password=\"...\"; (its value is not shown, as it holds a password)",
            jaas.key
        ));
        return;
    };
    let wanted = if mechanism == "PLAIN" {
        "org.apache.kafka.common.security.plain.PlainLoginModule"
    } else {
        "org.apache.kafka.common.security.scram.ScramLoginModule"
    };
    if module != wanted {
        let hint = if module.ends_with("OAuthBearerLoginModule") {
            " (OAUTHBEARER is not supported by this build of pgcdc)"
        } else {
            ""
        };
        c.problem(format!(
            "{} names the login module {module}, but sasl.mechanism={mechanism} needs {wanted}{hint}",
            jaas.key
        ));
        return;
    }
    for (option, property) in [("username", "sasl.username"), ("password", "sasl.password")] {
        match options.iter().find(|(k, _)| k == option) {
            Some((_, v)) => out.push((property.into(), v.clone(), jaas.key.clone())),
            None => c.problem(format!("{} has no {option}=\"...\" option", jaas.key)),
        }
    }
}

/// Parses `<module class> <flag> [name=value ...];` (values quoted with `"`, `\"` inside, or
/// bare words). `None` when it is not of that shape.
pub(super) fn parse_jaas(text: &str) -> Option<(String, Vec<(String, String)>)> {
    let text = text.trim().strip_suffix(';')?.trim();
    let (module, rest) = text.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    let (flag, mut rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if !["required", "requisite", "sufficient", "optional"].contains(&flag) {
        return None;
    }
    let mut options = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Some((module.to_string(), options));
        }
        let (name, after) = rest.split_once('=')?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        let (value, after) = jaas_value(after.trim_start())?;
        options.push((name.to_string(), value));
        rest = after;
    }
}

/// One option value: a quoted string (with `\` escapes) or a bare word; and the rest.
fn jaas_value(s: &str) -> Option<(String, &str)> {
    let Some(quoted) = s.strip_prefix('"') else {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        return (end > 0).then(|| (s[..end].to_string(), &s[end..]));
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, ch)) = chars.next() {
        match ch {
            '\\' => value.push(chars.next()?.1),
            '"' => return Some((value, &quoted[i + 1..])),
            other => value.push(other),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RawConfig;

    fn run(pairs: &[(&str, &str)]) -> (Vec<(String, String)>, Vec<String>, Vec<String>) {
        let raw = RawConfig::new();
        let mut c = Checker::new(&raw);
        let mut settings: BTreeMap<String, Written> = pairs
            .iter()
            .map(|(k, v)| {
                let w = Written {
                    value: v.to_string(),
                    key: format!("producer.override.{k}"),
                };
                (k.to_string(), w)
            })
            .collect();
        let out = translate(&mut settings, &mut c);
        let out = out.into_iter().map(|(k, v, _)| (k, v)).collect();
        let warnings = c.warnings.iter().map(|w| w.0.clone()).collect();
        (out, c.problems, warnings)
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn sasl_ssl_with_scram_and_a_pem_trust_store_map_to_librdkafka() {
        let (out, problems, _) = run(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="p\"w d";"#,
            ),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/certs/ca.pem"),
            ("ssl.endpoint.identification.algorithm", ""),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            out,
            pairs(&[
                ("security.protocol", "sasl_ssl"),
                ("ssl.ca.location", "/certs/ca.pem"),
                ("ssl.endpoint.identification.algorithm", "none"),
                ("sasl.mechanisms", "SCRAM-SHA-512"),
                ("sasl.username", "app"),
                ("sasl.password", "p\"w d"),
            ])
        );
    }

    #[test]
    fn mtls_key_stores_map_from_pkcs12_and_pem() {
        let (out, problems, _) = run(&[
            ("security.protocol", "ssl"),
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", "/certs/client.p12"),
            ("ssl.keystore.password", "s"),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            out,
            pairs(&[
                ("security.protocol", "ssl"),
                ("ssl.keystore.location", "/certs/client.p12"),
                ("ssl.keystore.password", "s"),
            ])
        );
        let (out, problems, _) = run(&[
            ("ssl.keystore.type", "PEM"),
            (
                "ssl.keystore.certificate.chain",
                "-----BEGIN CERTIFICATE-----",
            ),
            ("ssl.keystore.key", "-----BEGIN PRIVATE KEY-----"),
            ("ssl.key.password", "k"),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            out,
            pairs(&[
                ("ssl.certificate.pem", "-----BEGIN CERTIFICATE-----"),
                ("ssl.key.pem", "-----BEGIN PRIVATE KEY-----"),
                ("ssl.key.password", "k"),
            ])
        );
    }

    #[test]
    fn jks_stores_are_refused_with_the_conversion_command() {
        let (_, problems, _) = run(&[("ssl.truststore.location", "/certs/truststore.jks")]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("a JKS trust store")
                && problems[0].contains("keytool -exportcert"),
            "{problems:?}"
        );
        let (_, problems, _) = run(&[
            ("ssl.keystore.location", "/certs/k.jks"),
            ("ssl.keystore.password", "secret-pw"),
        ]);
        assert!(
            problems[0].contains("keytool -importkeystore"),
            "{problems:?}"
        );
        assert!(!problems.concat().contains("secret-pw"));
    }

    #[test]
    fn unsupported_mechanisms_and_bad_jaas_lines_are_refused_without_showing_secrets() {
        let jaas = concat!(
            "org.apache.kafka.common.security.plain.PlainLoginModule required ",
            r#"username="u" password="hunter2";"#,
        );
        for (mechanism, expect) in [
            ("OAUTHBEARER", "OAUTHBEARER is not supported"),
            ("GSSAPI", "GSSAPI is not supported"),
            (
                "SCRAM-SHA-256",
                "needs org.apache.kafka.common.security.scram.ScramLoginModule",
            ),
        ] {
            let (_, problems, _) = run(&[
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", mechanism),
                ("sasl.jaas.config", jaas),
            ]);
            let all = problems.concat();
            assert!(all.contains(expect), "{mechanism}: {all}");
            assert!(!all.contains("hunter2"), "{all}");
        }
        let (_, problems, _) = run(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", "password=hunter2"),
        ]);
        let all = problems.concat();
        assert!(all.contains("is not a JAAS login module line"), "{all}");
        assert!(!all.contains("hunter2"), "{all}");
        let (_, problems, _) = run(&[("security.protocol", "SASL_SSL")]);
        assert!(problems.concat().contains("GSSAPI"), "{problems:?}");
    }

    #[test]
    fn sasl_settings_without_a_sasl_protocol_are_warned_about() {
        let (out, problems, warnings) = run(&[("sasl.mechanism", "PLAIN")]);
        assert!(out.is_empty() && problems.is_empty());
        assert!(
            warnings[0].contains("has no effect without security.protocol"),
            "{warnings:?}"
        );
    }

    #[test]
    fn jaas_lines_parse_quoted_and_bare_values() {
        assert_eq!(
            parse_jaas(r#"  m.Module  required  a=b  c="d e\\f" ;"#),
            Some((
                "m.Module".to_string(),
                vec![("a".into(), "b".into()), ("c".into(), "d e\\f".into())]
            ))
        );
        assert_eq!(
            parse_jaas("m.Module required;"),
            Some(("m.Module".into(), vec![]))
        );
        assert_eq!(parse_jaas("m.Module maybe a=b;"), None);
        assert_eq!(parse_jaas(r#"m.Module required a="b;"#), None);
        assert_eq!(parse_jaas("m.Module required a=b"), None);
    }
}
