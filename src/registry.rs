//! The schema registry: a client that registers a schema under a subject, or looks up the id
//! of one already registered, through the Confluent schema registry REST API (Confluent Schema
//! Registry, or Apicurio Registry's `/apis/ccompat/v7`) or through Apicurio Registry's v2 API
//! as Apicurio's converter calls it (an artifact of the default group per subject, its content
//! id as the schema id).
//!
//! The Avro converter caches ids, so a call happens once per subject and schema version.
//! [`Registries::schema_id`] runs the blocking HTTP call off the async runtime and classifies
//! the outcome: the registry's answer to a request it refuses (an incompatible schema, a
//! subject that does not hold the schema, wrong credentials) is an error naming the subject
//! and its compatibility level, which retrying cannot fix; anything else (no connection, a
//! timeout, a 5xx) is waited out, retrying with a growing pause, so that a registry that is
//! down is backpressure: nothing new is sent or confirmed until it answers.

use std::time::Duration;

use base64::Engine;

use crate::config::{AvroConverterConfig, ConverterConfig, RegistryApi, RegistryAuth};
use crate::error::{classify_registry, Error, ErrorKind, Result};

pub mod evolution;

/// The first wait after a registry did not answer; doubled up to [`MAX_RETRY_WAIT`].
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(500);
const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);

/// The registry clients of the key and value converters (`None` for a JSON converter).
#[derive(Debug, Clone, Default)]
pub struct Registries {
    key: Option<Part>,
    value: Option<Part>,
}

#[derive(Debug, Clone)]
struct Part {
    client: RegistryClient,
    mode: Mode,
}

/// What the registry gave for a schema: its id, and with `use.latest.version` the text of the
/// latest version that id belongs to (for the caller to check against the record's schema).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Obtained {
    /// The schema id records carry.
    pub id: u32,
    /// The latest version's schema, when that is what `id` names.
    pub latest_schema: Option<String>,
}

/// How a part's schema id is obtained: registered (`auto.register.schemas`), looked up by
/// schema, or the subject's latest version (`use.latest.version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Register,
    Lookup,
    Latest,
}

impl Mode {
    fn of(c: &AvroConverterConfig) -> Mode {
        if c.auto_register {
            Mode::Register
        } else if c.use_latest {
            Mode::Latest
        } else {
            Mode::Lookup
        }
    }
}

impl Registries {
    /// Clients for the Avro converters among `key` and `value`.
    pub fn new(key: &ConverterConfig, value: &ConverterConfig) -> Self {
        let part = |c: &ConverterConfig| match c {
            ConverterConfig::Avro(a) => Some(Part {
                client: RegistryClient::new(a),
                mode: Mode::of(a),
            }),
            ConverterConfig::Json { .. } => None,
        };
        Registries {
            key: part(key),
            value: part(value),
        }
    }

    /// The id of `schema` (Avro JSON text) under `subject`, for the key converter (`is_key`)
    /// or the value converter: registered (`auto.register.schemas=true`), looked up, or
    /// (`use.latest.version`) the latest version's, with its text. Waits
    /// and retries while the registry does not answer. Errors: the registry refused
    /// ([`ErrorKind::Registry`], or [`ErrorKind::Auth`] for credentials), naming the subject
    /// and its compatibility level; a converter without a registry ([`ErrorKind::Internal`]).
    pub async fn schema_id(&self, is_key: bool, subject: &str, schema: &str) -> Result<Obtained> {
        let part_name = if is_key { "key" } else { "value" };
        let part = if is_key { &self.key } else { &self.value };
        let part = part.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("the {part_name} converter has no schema registry"),
            )
        })?;
        let mut wait = FIRST_RETRY_WAIT;
        let mut attempts = 0u32;
        loop {
            let (client, s, t) = (part.client.clone(), subject.to_string(), schema.to_string());
            let mode = part.mode;
            let outcome = tokio::task::spawn_blocking(move || match mode {
                Mode::Register => client.register(&s, &t).map(|id| Obtained {
                    id,
                    latest_schema: None,
                }),
                Mode::Lookup => client.lookup(&s, &t).map(|id| Obtained {
                    id,
                    latest_schema: None,
                }),
                Mode::Latest => client.latest(&s).map(|(id, text)| Obtained {
                    id,
                    latest_schema: Some(text),
                }),
            })
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Internal,
                    format!("the schema registry call failed: {e}"),
                )
            })?;
            match outcome {
                Ok(obtained) => {
                    tracing::info!(
                        subject,
                        id = obtained.id,
                        attempts,
                        latest = obtained.latest_schema.is_some(),
                        "schema id obtained from the registry"
                    );
                    return Ok(obtained);
                }
                Err(RegistryError::Unavailable(why)) => {
                    attempts += 1;
                    tracing::warn!(
                        subject,
                        attempts,
                        wait_ms = wait.as_millis() as u64,
                        "the schema registry did not answer ({why}); trying again after the wait (nothing new is sent or confirmed meanwhile)"
                    );
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_RETRY_WAIT);
                }
                Err(RegistryError::Tls(why)) => return Err(tls_failed(part_name, subject, &why)),
                Err(RegistryError::Refused {
                    status,
                    code,
                    message,
                }) => {
                    let (client, s, t) =
                        (part.client.clone(), subject.to_string(), schema.to_string());
                    let (level, reasons) = tokio::task::spawn_blocking(move || {
                        let level = client.compatibility(&s);
                        let reasons = if status == 409 {
                            client
                                .latest(&s)
                                .map(|(_, old)| evolution::explain(level.as_deref(), &old, &t))
                                .unwrap_or_default()
                        } else {
                            Vec::new()
                        };
                        (level, reasons)
                    })
                    .await
                    .unwrap_or_default();
                    let error = refusal(
                        part_name,
                        part.mode == Mode::Register,
                        subject,
                        level.as_deref(),
                        (status, code, &message),
                    );
                    return Err(with_reasons(error, &reasons));
                }
            }
        }
    }
}

/// `error` with the incompatible columns [`evolution::explain`] found, and the ways out.
fn with_reasons(error: Error, reasons: &[String]) -> Error {
    if reasons.is_empty() {
        return error;
    }
    Error::new(
        error.kind(),
        format!(
            "{}. What makes it incompatible: {}. Ways out: give the column a default or make it nullable (ALTER TABLE ... ALTER COLUMN ... SET DEFAULT / DROP NOT NULL) where that is the cause, change the subject's compatibility (PUT /config/<subject>), or route the table to a new topic and so a new subject (a RegexRouter transform); then start the connector again: nothing after the refused record was written or confirmed",
            error.message(),
            reasons.join("; ")
        ),
    )
}

/// The error for a TLS failure with the registry (a [`ErrorKind::Config`] error).
fn tls_failed(part: &str, subject: &str, message: &str) -> Error {
    Error::config(format!(
        "the schema registry could not be reached for the {part} schema under subject {subject}: {message}. If the registry speaks plain HTTP on that port, write http://. If its certificate is signed by a private CA, set the converter's schema.registry.ssl.truststore.type=PEM and schema.registry.ssl.truststore.location to that CA (Apicurio's converter: apicurio.registry.request.ssl.truststore.*); pgcdc needs the CA there, not a self-signed server certificate that is marked as a CA itself"
    ))
}

/// The error for a refusal: names the part, the subject, the compatibility level, the
/// registry's answer and what to do.
fn refusal(
    part: &str,
    auto_register: bool,
    subject: &str,
    level: Option<&str>,
    (status, code, message): (u16, i64, &str),
) -> Error {
    let what = if auto_register {
        "refused to register"
    } else {
        "does not hold"
    };
    let hint = match (status, code) {
        (409, _) =>
            "the new schema is not compatible with the versions registered before (a new column must be nullable or have a default)",
        (404, _) | (_, 40401 | 40403) if !auto_register =>
            "the subject does not hold this schema: register it first, or let the converter register it (auto.register.schemas=true; Apicurio's converter: apicurio.registry.auto-register=true); if it is registered, check the registry URL",
        (401 | 403, _) =>
            "check the converter's basic.auth.user.info or bearer.auth.token (Apicurio's converter: apicurio.auth.username and apicurio.auth.password)",
        (404, _) =>
            "check the converter's registry URL: schema.registry.url must be the base of a Confluent-compatible API (Apicurio: .../apis/ccompat/v7), apicurio.registry.url Apicurio's .../apis/registry/v2",
        (422, _) =>
            "the registry found the schema invalid: a name with characters Avro refuses (a topic prefix or table name with '-': schema.name.adjustment.mode=avro) or a default it does not accept",
        _ => "see the registry's message",
    };
    Error::new(
        classify_registry(status),
        format!(
            "the schema registry {what} the {part} schema under subject {subject} (compatibility {}): {message} (HTTP {status}, error_code {code}); {hint}",
            level.unwrap_or("unknown"),
        ),
    )
}

/// Why a registry call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// The registry answered and refused: HTTP status, the registry's `error_code` and
    /// message.
    Refused {
        /// HTTP status.
        status: u16,
        /// The registry's `error_code` (Confluent's: 409 incompatible, 40401 subject not
        /// found, 40403 schema not found, 42201 invalid schema), or the HTTP status.
        code: i64,
        /// The registry's message.
        message: String,
    },
    /// No registry answered usefully (connection refused, timeout, 5xx); worth retrying.
    Unavailable(String),
    /// TLS with the registry failed (a certificate the trust store does not vouch for, a
    /// plain-HTTP port): no HTTP answer, and the configuration must change.
    Tls(String),
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryError::Refused {
                status,
                code,
                message,
            } => write!(f, "HTTP {status}, error_code {code}: {message}"),
            RegistryError::Unavailable(why) => write!(f, "unavailable: {why}"),
            RegistryError::Tls(why) => f.write_str(why),
        }
    }
}

/// A registry client for one converter's settings.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    api: RegistryApi,
    urls: Vec<String>,
    authorization: Option<String>,
    agent: ureq::Agent,
}

/// How long one HTTP call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

impl RegistryClient {
    /// A client for `config`'s URLs and credentials.
    pub fn new(config: &AvroConverterConfig) -> Self {
        let mut builder = ureq::Agent::config_builder()
            .timeout_global(Some(CALL_TIMEOUT))
            .http_status_as_error(false)
            .user_agent(concat!("pgcdc/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &config.trusted_certificates {
            builder = builder.tls_config(trust_only(pem));
        }
        let agent: ureq::Agent = builder.build().into();
        let authorization = match &config.auth {
            RegistryAuth::None => None,
            RegistryAuth::Basic(user_info) => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(user_info)
            )),
            RegistryAuth::Bearer(token) => Some(format!("Bearer {token}")),
        };
        RegistryClient {
            api: config.api.clone(),
            urls: config.registry_urls.clone(),
            authorization,
            agent,
        }
    }

    /// Registers `schema` (Avro JSON text) under `subject` and returns its id. A schema
    /// already registered there gets its existing id back. Confluent's API:
    /// `POST /subjects/{subject}/versions`; Apicurio's v2:
    /// `POST /groups/default/artifacts?ifExists=..&canonical=false` with the artifact id and
    /// type in headers.
    pub fn register(&self, subject: &str, schema: &str) -> Result<u32, RegistryError> {
        match &self.api {
            RegistryApi::Confluent => {
                let path = format!("/subjects/{}/versions", encode_path(subject));
                self.post_for_id(&path, &confluent_body(schema), &[], "id")
            }
            RegistryApi::ApicurioV2 { if_exists } => {
                let path =
                    format!("/groups/default/artifacts?ifExists={if_exists}&canonical=false");
                let headers = [
                    ("X-Registry-ArtifactId", subject),
                    ("X-Registry-ArtifactType", "AVRO"),
                ];
                self.post_for_id(&path, schema, &headers, "contentId")
            }
        }
    }

    /// The id of `schema` as registered under `subject`, for `auto.register.schemas=false`
    /// (Confluent's `POST /subjects/{subject}`; Apicurio's search by content,
    /// `POST /groups/default/artifacts/{subject}/meta?canonical=true`).
    pub fn lookup(&self, subject: &str, schema: &str) -> Result<u32, RegistryError> {
        match &self.api {
            RegistryApi::Confluent => {
                let path = format!("/subjects/{}", encode_path(subject));
                self.post_for_id(&path, &confluent_body(schema), &[], "id")
            }
            RegistryApi::ApicurioV2 { .. } => {
                let path = format!(
                    "/groups/default/artifacts/{}/meta?canonical=true",
                    encode_path(subject)
                );
                self.post_for_id(&path, schema, &[], "contentId")
            }
        }
    }

    /// The id and text of the latest version under `subject` (Confluent's
    /// `GET /subjects/{subject}/versions/latest`; Apicurio's artifact metadata, then that
    /// version's content).
    pub fn latest(&self, subject: &str) -> Result<(u32, String), RegistryError> {
        match &self.api {
            RegistryApi::Confluent => {
                let path = format!("/subjects/{}/versions/latest", encode_path(subject));
                let v = answer_json(&self.call("GET", &path, None, &[])?)?;
                let text = v.get("schema").and_then(|s| s.as_str()).unwrap_or_default();
                Ok((answer_id(&v, "id")?, text.to_string()))
            }
            RegistryApi::ApicurioV2 { .. } => {
                let artifact = format!("/groups/default/artifacts/{}", encode_path(subject));
                let meta =
                    answer_json(&self.call("GET", &format!("{artifact}/meta"), None, &[])?)?;
                let version = meta
                    .get("version")
                    .and_then(|v| v.as_str())
                    .unwrap_or("latest");
                let text = self.call(
                    "GET",
                    &format!("{artifact}/versions/{}", encode_path(version)),
                    None,
                    &[],
                )?;
                Ok((answer_id(&meta, "contentId")?, text))
            }
        }
    }

    /// The compatibility level of `subject`, or the registry's global one: for error messages.
    pub fn compatibility(&self, subject: &str) -> Option<String> {
        let read = |path: &str, field: &str| -> Option<String> {
            let body = self.call("GET", path, None, &[]).ok()?;
            let v: serde_json::Value = serde_json::from_str(&body).ok()?;
            v.get(field)
                .or_else(|| v.get("compatibility"))
                .and_then(|c| c.as_str())
                .map(str::to_string)
        };
        match &self.api {
            RegistryApi::Confluent => read(
                &format!("/config/{}?defaultToGlobal=true", encode_path(subject)),
                "compatibilityLevel",
            )
            .or_else(|| read("/config", "compatibilityLevel")),
            // Apicurio's rules: the artifact's, else the global one, else none (no check).
            // Apicurio's rules: the artifact's, else the global one; none when both answer
            // 404 (no such rule), unknown when either does not answer.
            RegistryApi::ApicurioV2 { .. } => {
                let rule = |path: &str| match self.call("GET", path, None, &[]) {
                    Ok(body) => serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v.get("config")?.as_str().map(str::to_string))
                        .map(Some)
                        .ok_or(()),
                    Err(RegistryError::Refused { status: 404, .. }) => Ok(None),
                    Err(_) => Err(()),
                };
                let artifact = format!(
                    "/groups/default/artifacts/{}/rules/COMPATIBILITY",
                    encode_path(subject)
                );
                match rule(&artifact) {
                    Ok(Some(level)) => Some(level),
                    Ok(None) => match rule("/admin/rules/COMPATIBILITY") {
                        Ok(Some(level)) => Some(level),
                        Ok(None) => Some("NONE (no compatibility rule)".into()),
                        Err(()) => None,
                    },
                    Err(()) => None,
                }
            }
        }
    }

    fn post_for_id(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
        id_field: &str,
    ) -> Result<u32, RegistryError> {
        let answer = self.call("POST", path, Some(body), headers)?;
        answer_id(&answer_json(&answer)?, id_field)
    }

    /// One call, trying each URL in turn until one answers.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Result<String, RegistryError> {
        let mut last = RegistryError::Unavailable("no schema registry URL".into());
        for base in &self.urls {
            match self.call_one(method, &format!("{base}{path}"), body, headers) {
                Err(RegistryError::Unavailable(why)) => {
                    last = RegistryError::Unavailable(format!("{base}: {why}"));
                }
                other => return other,
            }
        }
        Err(last)
    }

    fn call_one(
        &self,
        method: &str,
        url: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Result<String, RegistryError> {
        let content_type = match self.api {
            RegistryApi::Confluent => "application/vnd.schemaregistry.v1+json",
            RegistryApi::ApicurioV2 { .. } => "application/json",
        };
        let result = match body {
            Some(b) => {
                let mut req = self
                    .agent
                    .post(url)
                    .header("Content-Type", content_type)
                    .header("Accept", content_type);
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                if let Some(a) = &self.authorization {
                    req = req.header("Authorization", a);
                }
                req.send(b)
            }
            None => {
                debug_assert_eq!(method, "GET");
                let mut req = self.agent.get(url).header("Accept", content_type);
                if let Some(a) = &self.authorization {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
        };
        let mut response = result.map_err(|e| match tls_failure(&e) {
            // A certificate the trust store does not vouch for is not waited out.
            Some(why) => RegistryError::Tls(format!("TLS with {url} failed: {why}")),
            None => RegistryError::Unavailable(e.to_string()),
        })?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| RegistryError::Unavailable(format!("reading the answer: {e}")))?;
        match status {
            200..=299 => Ok(text),
            408 | 429 | 500..=599 => Err(RegistryError::Unavailable(format!(
                "HTTP {status}: {:.300}",
                text
            ))),
            _ => {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                Err(RegistryError::Refused {
                    status,
                    code: v
                        .get("error_code")
                        .and_then(|c| c.as_i64())
                        .unwrap_or(status as i64),
                    message: v
                        .get("message")
                        .and_then(|m| m.as_str())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{:.300}", text)),
                })
            }
        }
    }
}

/// The TLS failure in `e`, if it is one (a certificate not trusted, a host name it does not
/// name, a handshake refused), as opposed to a registry that is down.
fn tls_failure(e: &ureq::Error) -> Option<String> {
    match e {
        ureq::Error::Tls(why) => Some((*why).to_string()),
        ureq::Error::Rustls(why) => Some(why.to_string()),
        ureq::Error::Pem(why) => Some(why.to_string()),
        ureq::Error::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .map(|why| why.to_string()),
        _ => None,
    }
}

/// A registry answer that is not what the API gives: not a registry that is down but not the
/// API the converter expects (a wrong path, a login page), which waiting cannot fix.
fn unexpected_answer(why: String) -> RegistryError {
    RegistryError::Refused {
        status: 200,
        code: 200,
        message: format!(
            "{why}: is the URL the base of the registry's API (Confluent-compatible: .../apis/ccompat/v7; Apicurio's: .../apis/registry/v2)?"
        ),
    }
}

/// A successful answer's JSON body.
fn answer_json(body: &str) -> Result<serde_json::Value, RegistryError> {
    serde_json::from_str(body)
        .map_err(|e| unexpected_answer(format!("the answer is not JSON ({e})")))
}

/// The schema id in `field` of an answer: a number that fits 4 bytes.
fn answer_id(v: &serde_json::Value, field: &str) -> Result<u32, RegistryError> {
    v.get(field)
        .and_then(|i| i.as_u64())
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| {
            unexpected_answer(format!(
                "the answer has no {field} that fits 4 bytes: {:.200}",
                v.to_string()
            ))
        })
}

/// TLS that trusts the certificates in `pem` (the converter's trust store) and nothing else.
fn trust_only(pem: &str) -> ureq::tls::TlsConfig {
    let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(pem.as_bytes())
        .filter_map(|item| match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
        .build()
}

/// Confluent's request body: `{"schema": "<the schema text>"}`.
fn confluent_body(schema: &str) -> String {
    serde_json::json!({ "schema": schema }).to_string()
}

/// Percent-encodes a subject for a URL path (everything but unreserved characters).
fn encode_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_subject_level_and_fix() {
        let e = refusal(
            "value",
            true,
            "srv.public.t-value",
            Some("BACKWARD"),
            (409, 409, "Schema being registered is incompatible"),
        );
        assert_eq!(e.kind(), ErrorKind::Registry);
        let m = e.message();
        for want in [
            "srv.public.t-value",
            "BACKWARD",
            "incompatible",
            "nullable or have a default",
        ] {
            assert!(m.contains(want), "{want}: {m}");
        }
        assert_eq!(
            refusal("key", true, "s", None, (401, 401, "no")).kind(),
            ErrorKind::Auth
        );
    }

    #[test]
    fn subjects_are_percent_encoded_in_paths() {
        assert_eq!(encode_path("srv.public.t-value"), "srv.public.t-value");
        assert_eq!(encode_path("a/b c"), "a%2Fb%20c");
    }
}
