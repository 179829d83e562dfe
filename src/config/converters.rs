//! `key.converter` and `value.converter` with their `key.converter.*` / `value.converter.*`
//! settings: Kafka Connect's `JsonConverter` (`schemas.enable`), or an Avro converter with a
//! Confluent-compatible schema registry: Confluent's `io.confluent.connect.avro.AvroConverter`
//! with the setting names of Confluent's serializers, or Apicurio's
//! `io.apicurio.registry.utils.converter.AvroConverter` in its Confluent compatibility mode
//! (`apicurio.registry.*` settings; the same wire format, with Apicurio's content ids as schema
//! ids, registered through Apicurio's own v2 API as that converter does).
//!
//! Every setting under a converter's prefix is checked: one pgcdc does not implement is a
//! problem, never silently ignored, because it would change the bytes written.

use super::checker::Checker;
use super::keys::{
    KEY_CONVERTER, KEY_CONVERTER_PREFIX, KEY_CONVERTER_SCHEMAS_ENABLE, VALUE_CONVERTER,
    VALUE_CONVERTER_PREFIX, VALUE_CONVERTER_SCHEMAS_ENABLE,
};

/// The JsonConverter class name.
pub const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";
/// Confluent's Avro converter class name.
pub const CONFLUENT_AVRO_CONVERTER: &str = "io.confluent.connect.avro.AvroConverter";
/// Apicurio Registry's Avro converter class name.
pub const APICURIO_AVRO_CONVERTER: &str = "io.apicurio.registry.utils.converter.AvroConverter";

/// Confluent's subject name strategies (`key.subject.name.strategy`,
/// `value.subject.name.strategy`), by class name.
const TOPIC_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.TopicNameStrategy";
const RECORD_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.RecordNameStrategy";
const TOPIC_RECORD_NAME_STRATEGY: &str =
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy";

/// Setting names of an Avro converter, after its `key.converter.` / `value.converter.` prefix.
mod setting {
    pub const URL: &str = "schema.registry.url";
    pub const BASIC_SOURCE: &str = "basic.auth.credentials.source";
    pub const BASIC_USER_INFO: &str = "basic.auth.user.info";
    /// The older name of `basic.auth.user.info`, still read by Confluent's serializers.
    pub const REGISTRY_BASIC_USER_INFO: &str = "schema.registry.basic.auth.user.info";
    pub const BEARER_SOURCE: &str = "bearer.auth.credentials.source";
    pub const BEARER_TOKEN: &str = "bearer.auth.token";
    pub const AUTO_REGISTER: &str = "auto.register.schemas";
    pub const USE_LATEST_VERSION: &str = "use.latest.version";
    pub const LATEST_COMPATIBILITY_STRICT: &str = "latest.compatibility.strict";
    pub const KEY_STRATEGY: &str = "key.subject.name.strategy";
    pub const VALUE_STRATEGY: &str = "value.subject.name.strategy";
    pub const ENHANCED: &str = "enhanced.avro.schema.support";
    pub const CONNECT_META_DATA: &str = "connect.meta.data";
    pub const CACHE: &str = "schemas.cache.config";
    /// JsonConverter's one setting; meaningless for Avro, accepted there as Connect does.
    pub const SCHEMAS_ENABLE: &str = "schemas.enable";
    pub const TRUSTSTORE_LOCATION: &str = "schema.registry.ssl.truststore.location";
    pub const TRUSTSTORE_TYPE: &str = "schema.registry.ssl.truststore.type";
    pub const TRUSTSTORE_CERTIFICATES: &str = "schema.registry.ssl.truststore.certificates";
    pub const TRUSTSTORE_PASSWORD: &str = "schema.registry.ssl.truststore.password";
    pub const ENDPOINT_IDENTIFICATION: &str =
        "schema.registry.ssl.endpoint.identification.algorithm";
}

/// Setting names of Apicurio's Avro converter (its `SerdeConfig`), after the prefix.
mod apicurio {
    pub const URL: &str = "apicurio.registry.url";
    pub const AUTO_REGISTER: &str = "apicurio.registry.auto-register";
    pub const IF_EXISTS: &str = "apicurio.registry.auto-register.if-exists";
    pub const FIND_LATEST: &str = "apicurio.registry.find-latest";
    pub const AS_CONFLUENT: &str = "apicurio.registry.as-confluent";
    pub const USE_ID: &str = "apicurio.registry.use-id";
    pub const HEADERS_ENABLED: &str = "apicurio.registry.headers.enabled";
    pub const STRATEGY: &str = "apicurio.registry.artifact-resolver-strategy";
    pub const USERNAME: &str = "apicurio.auth.username";
    pub const PASSWORD: &str = "apicurio.auth.password";
    pub const TRUSTSTORE_LOCATION: &str = "apicurio.registry.request.ssl.truststore.location";
    pub const TRUSTSTORE_TYPE: &str = "apicurio.registry.request.ssl.truststore.type";
    pub const TRUSTSTORE_PASSWORD: &str = "apicurio.registry.request.ssl.truststore.password";
    /// Apicurio's default artifact resolver strategy: `<topic>-key` / `<topic>-value`.
    pub const TOPIC_ID_STRATEGY: &str = "io.apicurio.registry.serde.strategy.TopicIdStrategy";
    /// The base path of Apicurio's v2 REST API, which its 2.6 converter (and pgcdc) calls.
    pub const V2_PATH: &str = "/apis/registry/v2";
}

/// How a record part is converted to bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum ConverterConfig {
    /// `JsonConverter` with its `schemas.enable`.
    Json {
        /// `schemas.enable`: `{"schema":..,"payload":..}` (true) or the payload alone.
        schemas_enable: bool,
    },
    /// An Avro converter writing Confluent's wire format.
    Avro(AvroConverterConfig),
}

/// Which strategy names a schema's subject in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectNameStrategy {
    /// `<topic>-key` / `<topic>-value` (the default).
    TopicName,
    /// The record's fully-qualified name.
    RecordName,
    /// `<topic>-<fully-qualified record name>`.
    TopicRecordName,
}

/// Credentials sent to the schema registry.
#[derive(Clone, PartialEq, Eq)]
pub enum RegistryAuth {
    /// None.
    None,
    /// HTTP basic authentication, `user:password`.
    Basic(String),
    /// `Authorization: Bearer <token>`.
    Bearer(String),
}

impl std::fmt::Debug for RegistryAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RegistryAuth::None => "None",
            RegistryAuth::Basic(_) => "Basic(<hidden>)",
            RegistryAuth::Bearer(_) => "Bearer(<hidden>)",
        })
    }
}

/// Which REST API the registry is called through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryApi {
    /// Confluent Schema Registry's (also Apicurio's `/apis/ccompat/v7`): subjects, versions,
    /// schema ids.
    Confluent,
    /// Apicurio Registry's v2 API (`/apis/registry/v2`), as Apicurio's converter calls it:
    /// artifacts of the default group named like subjects, content ids as schema ids.
    ApicurioV2 {
        /// `apicurio.registry.auto-register.if-exists`: `RETURN_OR_UPDATE` or
        /// `FIND_OR_CREATE_VERSION`.
        if_exists: String,
    },
}

/// An Avro converter's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AvroConverterConfig {
    /// The converter class as written.
    pub class: String,
    /// The registry's API.
    pub api: RegistryApi,
    /// `schema.registry.url`: base URLs (comma-separated in the config), tried in order;
    /// credentials written in a URL are moved to [`Self::auth`].
    pub registry_urls: Vec<String>,
    /// Basic or bearer credentials.
    pub auth: RegistryAuth,
    /// `auto.register.schemas` (default true): register new schemas, or only look them up.
    pub auto_register: bool,
    /// `use.latest.version=true` with `auto.register.schemas=false` (Apicurio:
    /// `find-latest` without `auto-register`): records carry the id of the subject's latest
    /// version, which must have the structure of the schema derived for them.
    pub use_latest: bool,
    /// `key.subject.name.strategy` for the key converter, `value.subject.name.strategy` for
    /// the value converter.
    pub subject_strategy: SubjectNameStrategy,
    /// `connect.meta.data` (default true): write the `connect.*` properties.
    pub connect_meta_data: bool,
    /// `schemas.cache.config` (default 1000): schemas kept per converter.
    pub schemas_cache_size: usize,
    /// The PEM certificates an `https` registry's certificate must chain to, from the trust
    /// store settings; `None`: the usual public roots (Mozilla's), as Java uses its own.
    pub trusted_certificates: Option<String>,
}

/// Reads `key.converter`, `value.converter` and their settings.
pub(super) fn parse(c: &mut Checker<'_>) -> (ConverterConfig, ConverterConfig) {
    let key = one(c, true);
    let value = one(c, false);
    (key, value)
}

fn one(c: &mut Checker<'_>, is_key: bool) -> ConverterConfig {
    let (class_key, prefix, schemas_enable_key) = if is_key {
        (
            KEY_CONVERTER,
            KEY_CONVERTER_PREFIX,
            KEY_CONVERTER_SCHEMAS_ENABLE,
        )
    } else {
        (
            VALUE_CONVERTER,
            VALUE_CONVERTER_PREFIX,
            VALUE_CONVERTER_SCHEMAS_ENABLE,
        )
    };
    let class = c.string(class_key, JSON_CONVERTER);
    let settings: Vec<String> = c
        .raw
        .keys()
        .filter_map(|k| k.strip_prefix(prefix))
        .map(str::to_string)
        .collect();
    match class.as_str() {
        JSON_CONVERTER => {
            for s in settings.iter().filter(|s| *s != setting::SCHEMAS_ENABLE) {
                c.problem(format!(
                    "{prefix}{s} is not implemented: pgcdc's JsonConverter only reads {schemas_enable_key}"
                ));
            }
            ConverterConfig::Json {
                schemas_enable: c.boolean(schemas_enable_key, true),
            }
        }
        CONFLUENT_AVRO_CONVERTER => {
            ConverterConfig::Avro(avro(c, &class, prefix, is_key, &settings))
        }
        APICURIO_AVRO_CONVERTER => {
            ConverterConfig::Avro(apicurio_avro(c, &class, prefix, &settings))
        }
        _ => {
            c.problem(format!(
                "{class_key}={class} is not implemented: pgcdc writes {JSON_CONVERTER}, {CONFLUENT_AVRO_CONVERTER} or {APICURIO_AVRO_CONVERTER} output"
            ));
            ConverterConfig::Json {
                schemas_enable: true,
            }
        }
    }
}

fn avro(
    c: &mut Checker<'_>,
    class: &str,
    prefix: &str,
    is_key: bool,
    settings: &[String],
) -> AvroConverterConfig {
    let known = [
        setting::URL,
        setting::BASIC_SOURCE,
        setting::BASIC_USER_INFO,
        setting::REGISTRY_BASIC_USER_INFO,
        setting::BEARER_SOURCE,
        setting::BEARER_TOKEN,
        setting::AUTO_REGISTER,
        setting::USE_LATEST_VERSION,
        setting::LATEST_COMPATIBILITY_STRICT,
        setting::KEY_STRATEGY,
        setting::VALUE_STRATEGY,
        setting::ENHANCED,
        setting::CONNECT_META_DATA,
        setting::CACHE,
        setting::SCHEMAS_ENABLE,
        setting::TRUSTSTORE_LOCATION,
        setting::TRUSTSTORE_TYPE,
        setting::TRUSTSTORE_CERTIFICATES,
        setting::TRUSTSTORE_PASSWORD,
        setting::ENDPOINT_IDENTIFICATION,
    ];
    refuse_unknown(c, class, prefix, settings, &known);
    let key = |s: &str| format!("{prefix}{s}");
    let urls = c.required(
        &key(setting::URL),
        "the schema registry's base URL(s), comma-separated (Confluent's API, or Apicurio's /apis/ccompat/v7)",
    );
    let mut url_credentials = None;
    let mut registry_urls = Vec::new();
    for u in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        match split_url(u) {
            Ok((base, userinfo)) => {
                if userinfo.is_some() {
                    url_credentials = userinfo;
                }
                registry_urls.push(base);
            }
            Err(why) => c.problem(format!("{} has an invalid URL: {why}", key(setting::URL))),
        }
    }
    if registry_urls.is_empty() && !urls.is_empty() {
        c.problem(format!("{} lists no URL", key(setting::URL)));
    }
    let auth = auth(c, prefix, url_credentials);
    let auto_register = c.boolean(&key(setting::AUTO_REGISTER), true);
    // As Confluent's serializer: only without auto-registration.
    let use_latest = c.boolean(&key(setting::USE_LATEST_VERSION), false) && !auto_register;
    // pgcdc requires the latest version's structure to be the record's, stricter than both
    // values of Confluent's check, so either is accepted.
    c.boolean(&key(setting::LATEST_COMPATIBILITY_STRICT), true);
    // AvroData's enhanced support changes only Connect strings that carry its enum
    // parameters and Connect unions, which pgcdc's schemas never hold: the same output either
    // way (checked against Debezium with the harness), so the setting is read and accepted.
    c.boolean(&key(setting::ENHANCED), false);
    let strategy_setting = if is_key {
        setting::KEY_STRATEGY
    } else {
        setting::VALUE_STRATEGY
    };
    let subject_strategy = c.choice(
        &key(strategy_setting),
        SubjectNameStrategy::TopicName,
        &[
            (TOPIC_NAME_STRATEGY, SubjectNameStrategy::TopicName),
            (RECORD_NAME_STRATEGY, SubjectNameStrategy::RecordName),
            (
                TOPIC_RECORD_NAME_STRATEGY,
                SubjectNameStrategy::TopicRecordName,
            ),
        ],
    );
    // Empty turns the check off in Java's clients.
    let identification = c
        .get(&key(setting::ENDPOINT_IDENTIFICATION))
        .unwrap_or("https")
        .to_string();
    if !identification.eq_ignore_ascii_case("https") {
        c.problem(format!(
            "{}={identification} is not implemented: pgcdc always checks that the registry's certificate names its host (https)",
            key(setting::ENDPOINT_IDENTIFICATION)
        ));
    }
    let trusted_certificates = trust(
        c,
        TrustKeys {
            location: key(setting::TRUSTSTORE_LOCATION),
            ty: key(setting::TRUSTSTORE_TYPE),
            certificates: Some(key(setting::TRUSTSTORE_CERTIFICATES)),
            password: key(setting::TRUSTSTORE_PASSWORD),
        },
    );
    AvroConverterConfig {
        class: class.to_string(),
        api: RegistryApi::Confluent,
        registry_urls,
        auth,
        auto_register,
        use_latest,
        subject_strategy,
        connect_meta_data: c.boolean(&key(setting::CONNECT_META_DATA), true),
        schemas_cache_size: c.int(&key(setting::CACHE), 1000usize, 1),
        trusted_certificates,
    }
}

/// Apicurio's converter in Confluent compatibility mode, the mode Debezium's documentation
/// gives for Confluent consumers: `apicurio.registry.as-confluent=true` (a 4-byte id),
/// `apicurio.registry.use-id=contentId` and `apicurio.registry.headers.enabled=false` (the id
/// in the value, not in headers). Its other modes write other bytes and are problems.
/// `apicurio.registry.url` names Apicurio's v2 API (`.../apis/registry/v2`), which pgcdc calls
/// as the converter does: artifacts of the default group named by `TopicIdStrategy`, content
/// ids in the records.
fn apicurio_avro(
    c: &mut Checker<'_>,
    class: &str,
    prefix: &str,
    settings: &[String],
) -> AvroConverterConfig {
    let known = [
        apicurio::URL,
        apicurio::AUTO_REGISTER,
        apicurio::IF_EXISTS,
        apicurio::FIND_LATEST,
        apicurio::AS_CONFLUENT,
        apicurio::USE_ID,
        apicurio::HEADERS_ENABLED,
        apicurio::STRATEGY,
        apicurio::USERNAME,
        apicurio::PASSWORD,
        apicurio::TRUSTSTORE_LOCATION,
        apicurio::TRUSTSTORE_TYPE,
        apicurio::TRUSTSTORE_PASSWORD,
        setting::ENHANCED,
        setting::CONNECT_META_DATA,
        setting::CACHE,
        setting::SCHEMAS_ENABLE,
    ];
    refuse_unknown(c, class, prefix, settings, &known);
    let key = |s: &str| format!("{prefix}{s}");
    let url = c.required(
        &key(apicurio::URL),
        "Apicurio Registry's API URL, e.g. http://registry:8080/apis/registry/v2",
    );
    let mut registry_urls = Vec::new();
    let mut url_credentials = None;
    if !url.is_empty() {
        match split_url(url.trim()) {
            Ok((base, userinfo)) if base.ends_with(apicurio::V2_PATH) => {
                url_credentials = userinfo;
                registry_urls.push(base);
            }
            Ok((base, _)) => c.problem(format!(
                "{}={base} does not end with {}: pgcdc calls Apicurio Registry's v2 API, as its converter does (for the Confluent-compatible API at .../apis/ccompat/v7, use {CONFLUENT_AVRO_CONVERTER})",
                key(apicurio::URL),
                apicurio::V2_PATH
            )),
            Err(why) => c.problem(format!("{} has an invalid URL: {why}", key(apicurio::URL))),
        }
    }
    let mode = [
        (apicurio::AS_CONFLUENT, "false", "true"),
        (apicurio::USE_ID, "globalId", "contentId"),
        (apicurio::HEADERS_ENABLED, "true", "false"),
    ];
    for (setting, default, wanted) in mode {
        let v = c.string(&key(setting), default);
        if !v.eq_ignore_ascii_case(wanted) {
            c.problem(format!(
                "{}={v} is not implemented: pgcdc writes Apicurio's Confluent compatibility mode, {}=true, {}=contentId and {}=false (magic byte, 4-byte content id, Avro body), which Confluent's and Apicurio's consumers both read",
                key(setting),
                key(apicurio::AS_CONFLUENT),
                key(apicurio::USE_ID),
                key(apicurio::HEADERS_ENABLED)
            ));
        }
    }
    let auto_register = c.boolean(&key(apicurio::AUTO_REGISTER), false);
    // As Apicurio's resolver: the latest version only without auto-registration.
    let use_latest = !auto_register && c.boolean(&key(apicurio::FIND_LATEST), false);
    let if_exists = c.string(&key(apicurio::IF_EXISTS), "RETURN_OR_UPDATE");
    if !["RETURN_OR_UPDATE", "FIND_OR_CREATE_VERSION"].contains(&if_exists.as_str()) {
        c.problem(format!(
            "{}={if_exists} is not implemented: pgcdc returns an identical schema's id or registers a new version (RETURN_OR_UPDATE, FIND_OR_CREATE_VERSION)",
            key(apicurio::IF_EXISTS)
        ));
    }
    let strategy = c.string(&key(apicurio::STRATEGY), apicurio::TOPIC_ID_STRATEGY);
    if strategy != apicurio::TOPIC_ID_STRATEGY {
        c.problem(format!(
            "{}={strategy} is not implemented: pgcdc names artifacts <topic>-key / <topic>-value ({})",
            key(apicurio::STRATEGY),
            apicurio::TOPIC_ID_STRATEGY
        ));
    }
    // AvroData's enhanced support changes only Connect strings that carry its enum
    // parameters and Connect unions, which pgcdc's schemas never hold: the same output either
    // way (checked against Debezium with the harness), so the setting is read and accepted.
    c.boolean(&key(setting::ENHANCED), false);
    let user = c
        .get(&key(apicurio::USERNAME))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let password = c.get(&key(apicurio::PASSWORD)).map(str::to_string);
    let auth = match (user, password) {
        (Some(u), Some(p)) => RegistryAuth::Basic(format!("{u}:{p}")),
        (Some(_), None) => {
            c.problem(format!(
                "{} needs {}",
                key(apicurio::USERNAME),
                key(apicurio::PASSWORD)
            ));
            RegistryAuth::None
        }
        (None, _) => url_credentials.map_or(RegistryAuth::None, RegistryAuth::Basic),
    };
    let trusted_certificates = trust(
        c,
        TrustKeys {
            location: key(apicurio::TRUSTSTORE_LOCATION),
            ty: key(apicurio::TRUSTSTORE_TYPE),
            certificates: None,
            password: key(apicurio::TRUSTSTORE_PASSWORD),
        },
    );
    AvroConverterConfig {
        class: class.to_string(),
        api: RegistryApi::ApicurioV2 { if_exists },
        registry_urls,
        auth,
        auto_register,
        use_latest,
        subject_strategy: SubjectNameStrategy::TopicName,
        connect_meta_data: c.boolean(&key(setting::CONNECT_META_DATA), true),
        schemas_cache_size: c.int(&key(setting::CACHE), 1000usize, 1),
        trusted_certificates,
    }
}

/// A problem for each of `settings` (after `prefix`) that is not in `known`, listing those
/// `class` reads.
fn refuse_unknown(
    c: &mut Checker<'_>,
    class: &str,
    prefix: &str,
    settings: &[String],
    known: &[&str],
) {
    for s in settings.iter().filter(|s| !known.contains(&s.as_str())) {
        c.problem(format!(
            "{prefix}{s} is not implemented for {class}: pgcdc reads {}",
            known
                .iter()
                .map(|k| format!("{prefix}{k}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
}

/// The full names of a converter's trust store settings.
struct TrustKeys {
    location: String,
    ty: String,
    /// Confluent's PEM text setting (Apicurio has none).
    certificates: Option<String>,
    password: String,
}

/// The registry's trust store: a PEM file (`...truststore.location` with `...truststore.type`
/// PEM) or PEM text, read now so that a missing or empty file is a startup problem. JKS (the
/// Java default type) and PKCS#12 stores are problems naming the command that converts them.
fn trust(c: &mut Checker<'_>, keys: TrustKeys) -> Option<String> {
    let location = c
        .get(&keys.location)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let text = keys
        .certificates
        .as_deref()
        .and_then(|k| c.get(k))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if location.is_none() && text.is_none() {
        return None;
    }
    let ty = c.string(&keys.ty, "JKS");
    if !ty.eq_ignore_ascii_case("PEM") {
        c.problem(format!(
            "{}={ty}: pgcdc reads PEM trust stores: convert it, e.g. keytool -exportcert -rfc -keystore truststore.jks -alias <ca> -file ca.pem (or openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem), then set {}=PEM and point {} at ca.pem",
            keys.ty, keys.ty, keys.location
        ));
        return None;
    }
    if c.get(&keys.password).is_some_and(|p| !p.is_empty()) {
        c.problem(format!(
            "{} cannot be set for a PEM trust store (the Java client refuses it too): remove it",
            keys.password
        ));
    }
    let (pem, from) = match (location, text) {
        (Some(_), Some(_)) => {
            c.problem(format!(
                "{} and {} are both set: give the trust store one way",
                keys.location,
                keys.certificates.unwrap_or_default()
            ));
            return None;
        }
        (Some(path), None) => match std::fs::read(path.trim()) {
            Ok(bytes) => (
                String::from_utf8_lossy(&bytes).into_owned(),
                format!("{}={path}", keys.location),
            ),
            Err(e) => {
                c.problem(format!("{}={path} cannot be read: {e}", keys.location));
                return None;
            }
        },
        (None, Some(pem)) => (pem, keys.certificates.unwrap_or_default()),
        (None, None) => return None,
    };
    // Every certificate block must decode: a truncated or damaged one would only show as an
    // untrusted registry at the first call.
    let mut certificates = 0;
    for item in rustls_pemfile::certs(&mut pem.as_bytes()) {
        match item {
            Ok(_) => certificates += 1,
            Err(e) => {
                c.problem(format!(
                    "{from} holds a certificate that cannot be decoded ({e})"
                ));
                return None;
            }
        }
    }
    if certificates == 0 {
        c.problem(format!(
            "{from} holds no PEM certificate (-----BEGIN CERTIFICATE-----); a DER file converts with openssl x509 -inform der -in ca.der -out ca.pem"
        ));
        return None;
    }
    Some(pem)
}

/// The credentials: `basic.auth.credentials.source` `URL` (the default: from the URL, if it
/// has any) or `USER_INFO` (`basic.auth.user.info`), or a bearer token with
/// `bearer.auth.credentials.source=STATIC_TOKEN`.
fn auth(c: &mut Checker<'_>, prefix: &str, url_credentials: Option<String>) -> RegistryAuth {
    let key = |s: &str| format!("{prefix}{s}");
    let user_info = c
        .get(&key(setting::BASIC_USER_INFO))
        .or_else(|| c.get(&key(setting::REGISTRY_BASIC_USER_INFO)))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let bearer_source = c
        .get(&key(setting::BEARER_SOURCE))
        .filter(|s| !s.is_empty());
    if let Some(source) = bearer_source {
        if c.get(&key(setting::BASIC_SOURCE))
            .is_some_and(|s| !s.is_empty())
        {
            c.problem(format!(
                "{} and {} are both set: choose basic or bearer credentials",
                key(setting::BASIC_SOURCE),
                key(setting::BEARER_SOURCE)
            ));
        }
        if source != "STATIC_TOKEN" {
            c.problem(format!(
                "{}={source} is not implemented: pgcdc sends a static token (STATIC_TOKEN with {})",
                key(setting::BEARER_SOURCE),
                key(setting::BEARER_TOKEN)
            ));
            return RegistryAuth::None;
        }
        let token = c.required(&key(setting::BEARER_TOKEN), "the token to send");
        return RegistryAuth::Bearer(token);
    }
    let source = c.string(&key(setting::BASIC_SOURCE), "URL");
    match source.as_str() {
        "URL" => url_credentials.map_or(RegistryAuth::None, RegistryAuth::Basic),
        "USER_INFO" => match user_info {
            Some(u) if u.contains(':') => RegistryAuth::Basic(u),
            Some(_) => {
                c.problem(format!(
                    "{} must be user:password",
                    key(setting::BASIC_USER_INFO)
                ));
                RegistryAuth::None
            }
            None => {
                c.problem(format!(
                    "{}=USER_INFO needs {} (user:password)",
                    key(setting::BASIC_SOURCE),
                    key(setting::BASIC_USER_INFO)
                ));
                RegistryAuth::None
            }
        },
        other => {
            c.problem(format!(
                "{}={other} is not implemented: use URL or USER_INFO",
                key(setting::BASIC_SOURCE)
            ));
            RegistryAuth::None
        }
    }
}

/// Splits `http(s)://[user:password@]host[:port][/path]` into the URL without credentials
/// (and without a trailing `/`) and the `user:password`, percent-decoded.
fn split_url(u: &str) -> Result<(String, Option<String>), String> {
    let Some((scheme, rest)) = u.split_once("://") else {
        return Err("it needs a scheme, http:// or https://".into());
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!("the scheme {scheme} is not http or https"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((ui, h)) => (Some(percent_decode(ui)), h),
        None => (None, authority),
    };
    if host.is_empty() {
        return Err("it has no host".into());
    }
    Ok((
        format!("{scheme}://{host}{}", path.trim_end_matches('/')),
        userinfo,
    ))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials_and_trailing_slash() {
        assert_eq!(
            split_url("http://u%40x:p%3Aw@reg:8081/apis/ccompat/v7/").unwrap(),
            (
                "http://reg:8081/apis/ccompat/v7".to_string(),
                Some("u@x:p:w".to_string())
            )
        );
        assert_eq!(
            split_url("https://reg").unwrap(),
            ("https://reg".to_string(), None)
        );
        assert!(split_url("reg:8081").is_err());
        assert!(split_url("ftp://reg").is_err());
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%zz%41"), "a%zzA");
    }
}
