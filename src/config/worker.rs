//! The worker config: settings of the process rather than of one connector (its REST
//! listener, the credentials that protect writes, where `serve` keeps connector configs).
//!
//! Read from a worker properties file with Kafka Connect's key names where Connect has the
//! setting ([`super::keys::WORKER_KEYS`]), then from `PGCDC_<KEY>` environment variables, then
//! from command-line overrides. An unknown key is an error naming the closest known one: a
//! worker file copied from Connect that sets converters or `bootstrap.servers` is told that
//! pgcdc takes those from each connector's config.

use std::path::PathBuf;

use super::keys::{self, KeyStatus, WORKER_KEYS};
use super::RawConfig;
use crate::error::{Error, Result};

/// The listener when none is configured: Kafka Connect's port, on loopback only.
pub const DEFAULT_LISTENER: &str = "http://127.0.0.1:8083";
/// How often a running connector logs its status line by default.
pub const DEFAULT_STATUS_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);
/// Default `pgcdc.health.unacknowledged.max.ms`.
pub const DEFAULT_UNACKNOWLEDGED_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// Where `serve` keeps connector configs when `pgcdc.config.storage.dir` is not set
/// (relative to the working directory).
pub const DEFAULT_CONFIG_STORAGE_DIR: &str = "pgcdc-connectors";

/// How writes to the REST API authenticate.
#[derive(Clone, PartialEq, Eq)]
pub enum RestAuth {
    /// No credentials configured: writes are accepted from loopback peers only, unless
    /// [`WorkerConfig::unauthenticated_writes`].
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// `Authorization: Basic base64(user:password)`.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
}

impl std::fmt::Debug for RestAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestAuth::None => write!(f, "None"),
            RestAuth::Bearer(_) => write!(f, "Bearer([hidden])"),
            RestAuth::Basic { username, .. } => write!(f, "Basic({username}, [hidden])"),
        }
    }
}

/// The topic that keeps `serve`'s connector configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigTopicConfig {
    /// `config.storage.topic`.
    pub topic: String,
    /// `config.storage.replication.factor` when pgcdc creates the topic (-1, the default: the
    /// broker's default).
    pub replication_factor: i32,
    /// The worker's `bootstrap.servers` and security settings (`security.protocol`, `sasl.*`,
    /// `ssl.*`), translated for librdkafka.
    pub kafka: super::KafkaConfig,
}

/// `true` for the worker's own Kafka client security settings (Connect's top-level names).
fn is_client_security_key(key: &str) -> bool {
    key.starts_with("security.") || key.starts_with("sasl.") || key.starts_with("ssl.")
}

/// The validated worker config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// `listeners`, as written (`http://127.0.0.1:8083`).
    pub listener: String,
    /// The host part to bind (`0.0.0.0` for `http://:8083`, as Connect reads an empty host).
    pub bind_host: String,
    /// The port to bind (0: any free port, which the start-up log names).
    pub bind_port: u16,
    /// For an `https://` listener: the PEM file with its private key and certificate chain
    /// (`listeners.https.ssl.keystore.location`, `listeners.https.ssl.keystore.type=PEM`).
    pub tls_keystore: Option<PathBuf>,
    /// `rest.advertised.host.name`: the host part of `worker_id` in status answers.
    pub advertised_host: Option<String>,
    /// `rest.advertised.port`: the port part of `worker_id`.
    pub advertised_port: Option<u16>,
    /// Credentials for writes.
    pub auth: RestAuth,
    /// `pgcdc.rest.unauthenticated.writes=true`: accept writes without credentials from any
    /// peer (the operator protects the port otherwise).
    pub unauthenticated_writes: bool,
    /// `pgcdc.config.storage.dir`: where `serve` keeps one JSON file per connector (unless
    /// [`WorkerConfig::config_topic`]).
    pub storage_dir: PathBuf,
    /// `config.storage.topic`: `serve` keeps connector configs in this compacted topic, as
    /// Kafka Connect's distributed workers do.
    pub config_topic: Option<ConfigTopicConfig>,
    /// What a connector config given over REST takes from the worker file when it does not
    /// set it: `bootstrap.servers` and `producer.*`, as Connect's source tasks take their
    /// producer settings from the worker.
    pub connector_defaults: RawConfig,
    /// `pgcdc.status.log.interval.ms`: how often each running connector logs a status line
    /// (`None`: never, for 0).
    pub status_log_interval: Option<std::time::Duration>,
    /// `pgcdc.health.unacknowledged.max.ms`: `/health/ready` answers 503 for a connector
    /// whose records have waited this long for Kafka without progress (a stalled broker).
    pub unacknowledged_max: std::time::Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig::from_raw(&RawConfig::new()).expect("the defaults are valid")
    }
}

impl WorkerConfig {
    /// Reads the worker config: `file` (a `.properties` file, optional), then the
    /// `PGCDC_<KEY>` variables of `env` for worker keys (`PGCDC_LISTENERS`), then
    /// `overrides` (command-line options). Errors: as [`WorkerConfig::from_raw`], and a file
    /// that cannot be read.
    pub fn load(
        file: Option<&std::path::Path>,
        env: &[(String, String)],
        overrides: &[(String, String)],
    ) -> Result<WorkerConfig> {
        let mut raw = match file {
            Some(path) => super::load_file(path)?,
            None => RawConfig::new(),
        };
        for (key, _) in WORKER_KEYS {
            let var = super::source::env_name(key);
            if let Some((_, v)) = env.iter().find(|(k, _)| *k == var) {
                raw.insert(key.to_string(), v.clone());
            }
        }
        for (k, v) in overrides {
            raw.insert(k.clone(), v.clone());
        }
        WorkerConfig::from_raw(&raw)
    }

    /// Validates a merged worker config. Errors: unknown or not yet supported keys, a
    /// listener that is not `http://HOST:PORT`, half-given credentials; every problem at
    /// once, one per line.
    pub fn from_raw(raw: &RawConfig) -> Result<WorkerConfig> {
        let mut problems = Vec::new();
        for key in raw.keys() {
            if let Some(p) = key_problem(key) {
                problems.push(p);
            }
        }
        let get = |k: &str| raw.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let listener = get(keys::LISTENERS).unwrap_or(DEFAULT_LISTENER).to_string();
        let (https, bind_host, bind_port) = match parse_listener(&listener) {
            Ok(hp) => hp,
            Err(p) => {
                problems.push(p);
                (false, String::new(), 0)
            }
        };
        let tls_keystore = tls_keystore(raw, https, &mut problems);
        let advertised_port = match get(keys::REST_ADVERTISED_PORT).map(str::parse::<u16>) {
            None => None,
            Some(Ok(p)) => Some(p),
            Some(Err(_)) => {
                problems.push(format!(
                    "{} must be a port number (1-65535)",
                    keys::REST_ADVERTISED_PORT
                ));
                None
            }
        };
        let auth = match auth(raw) {
            Ok(a) => a,
            Err(p) => {
                problems.push(p);
                RestAuth::None
            }
        };
        let unauthenticated_writes = match get(keys::REST_UNAUTHENTICATED_WRITES) {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(v) => {
                problems.push(format!(
                    "{}={v:?}: expected true or false",
                    keys::REST_UNAUTHENTICATED_WRITES
                ));
                false
            }
        };
        let status_log_interval = match get(keys::STATUS_LOG_INTERVAL_MS).map(str::parse::<u64>) {
            None => Some(DEFAULT_STATUS_LOG_INTERVAL),
            Some(Ok(0)) => None,
            Some(Ok(ms)) => Some(std::time::Duration::from_millis(ms)),
            Some(Err(_)) => {
                problems.push(format!(
                    "{} must be a number of milliseconds (0: no status lines)",
                    keys::STATUS_LOG_INTERVAL_MS
                ));
                None
            }
        };
        let unacknowledged_max =
            match get(keys::HEALTH_UNACKNOWLEDGED_MAX_MS).map(str::parse::<u64>) {
                None => DEFAULT_UNACKNOWLEDGED_MAX,
                Some(Ok(ms)) if ms > 0 => std::time::Duration::from_millis(ms),
                Some(_) => {
                    problems.push(format!(
                        "{} must be a positive number of milliseconds",
                        keys::HEALTH_UNACKNOWLEDGED_MAX_MS
                    ));
                    DEFAULT_UNACKNOWLEDGED_MAX
                }
            };
        let config_topic = config_topic(raw, &mut problems);
        if !problems.is_empty() {
            return Err(Error::config(problems.join("\n")));
        }
        let connector_defaults: RawConfig = raw
            .iter()
            .filter(|(k, _)| *k == keys::BOOTSTRAP_SERVERS || k.starts_with(keys::PRODUCER_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(WorkerConfig {
            listener,
            bind_host,
            bind_port,
            tls_keystore,
            advertised_host: get(keys::REST_ADVERTISED_HOST_NAME).map(str::to_string),
            advertised_port,
            auth,
            unauthenticated_writes,
            storage_dir: PathBuf::from(
                get(keys::CONFIG_STORAGE_DIR).unwrap_or(DEFAULT_CONFIG_STORAGE_DIR),
            ),
            status_log_interval,
            unacknowledged_max,
            config_topic,
            connector_defaults,
        })
    }
}

/// The config topic settings, if `config.storage.topic` is set; problems are pushed.
fn config_topic(raw: &RawConfig, problems: &mut Vec<String>) -> Option<ConfigTopicConfig> {
    let get = |k: &str| raw.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let Some(topic) = get(keys::CONFIG_STORAGE_TOPIC) else {
        if raw.contains_key(keys::CONFIG_STORAGE_REPLICATION_FACTOR) {
            problems.push(format!(
                "{} is set without {}: set the topic, or remove the factor",
                keys::CONFIG_STORAGE_REPLICATION_FACTOR,
                keys::CONFIG_STORAGE_TOPIC
            ));
        }
        return None;
    };
    if raw.contains_key(keys::CONFIG_STORAGE_DIR) {
        problems.push(format!(
            "{} and {} are both set: connector configs are kept in one place; remove one",
            keys::CONFIG_STORAGE_TOPIC,
            keys::CONFIG_STORAGE_DIR
        ));
    }
    let replication_factor =
        match get(keys::CONFIG_STORAGE_REPLICATION_FACTOR).map(str::parse::<i32>) {
            None => -1,
            Some(Ok(n)) if n == -1 || n >= 1 => n,
            Some(_) => {
                problems.push(format!(
                    "{} must be -1 (the broker's default) or a number >= 1",
                    keys::CONFIG_STORAGE_REPLICATION_FACTOR
                ));
                -1
            }
        };
    let Some(servers) = get(keys::BOOTSTRAP_SERVERS) else {
        problems.push(format!(
            "{}={topic} needs {} in the worker file: the Kafka brokers that keep the topic",
            keys::CONFIG_STORAGE_TOPIC,
            keys::BOOTSTRAP_SERVERS
        ));
        return None;
    };
    let security: Vec<(String, String)> = raw
        .iter()
        .filter(|(k, _)| is_client_security_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    match super::kafka::worker_client(servers, &security) {
        Ok(kafka) => Some(ConfigTopicConfig {
            topic: topic.to_string(),
            replication_factor,
            kafka,
        }),
        Err(p) => {
            problems.extend(p);
            None
        }
    }
}

/// What is wrong with a worker file's `key`, if anything.
fn key_problem(key: &str) -> Option<String> {
    match WORKER_KEYS.iter().find(|(k, _)| *k == key).map(|(_, s)| *s) {
        Some(KeyStatus::Implemented | KeyStatus::Framework) => None,
        // A Connect worker's cluster name: no effect on a pgcdc worker.
        None if key == keys::GROUP_ID => None,
        // The brokers and producer settings connectors default to, and the security settings
        // of the worker's own clients, as in a Connect worker file.
        None if key == keys::BOOTSTRAP_SERVERS
            || (key.starts_with(keys::PRODUCER_PREFIX)
                && !key.starts_with(keys::PRODUCER_OVERRIDE_PREFIX))
            || is_client_security_key(key) =>
        {
            None
        }
        Some(KeyStatus::NotImplemented(_) | KeyStatus::JavaCode(..)) => {
            Some(format!("{key} is not supported yet; remove it"))
        }
        None if keys::status(key).is_some() => Some(format!(
            "{key} is a connector setting: pgcdc takes it from each connector's config, not from the worker file; move it there"
        )),
        None => {
            let hint = crate::util::closest_of(key, WORKER_KEYS.iter().map(|(k, _)| *k))
                .map(|k| format!(" (did you mean {k}?)"))
                .unwrap_or_default();
            Some(format!("unknown worker setting {key}{hint}"))
        }
    }
}

/// The keystore of an `https://` listener; problems are pushed.
fn tls_keystore(raw: &RawConfig, https: bool, problems: &mut Vec<String>) -> Option<PathBuf> {
    let get = |k: &str| raw.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let location = get(keys::LISTENERS_HTTPS_KEYSTORE_LOCATION);
    if !https {
        if location.is_some() {
            problems.push(format!(
                "{} is set but {} is not https://: use https://HOST:PORT, or remove the keystore",
                keys::LISTENERS_HTTPS_KEYSTORE_LOCATION,
                keys::LISTENERS
            ));
        }
        return None;
    }
    match get(keys::LISTENERS_HTTPS_KEYSTORE_TYPE) {
        None => {}
        Some(t) if t.eq_ignore_ascii_case("PEM") => {}
        Some(t) => problems.push(format!(
            "{}={t}: pgcdc reads PEM keystores only (set PEM, and convert the keystore: openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem)",
            keys::LISTENERS_HTTPS_KEYSTORE_TYPE
        )),
    }
    if get(keys::LISTENERS_HTTPS_KEY_PASSWORD).is_some() {
        problems.push(format!(
            "{}: encrypted private keys are not supported; decrypt the key into the PEM file (openssl pkey -in key.pem -out plain.pem) and keep the file readable by pgcdc only",
            keys::LISTENERS_HTTPS_KEY_PASSWORD
        ));
    }
    if location.is_none() {
        problems.push(format!(
            "an https:// listener needs {}: a PEM file with the private key and the certificate chain (and {}=PEM)",
            keys::LISTENERS_HTTPS_KEYSTORE_LOCATION,
            keys::LISTENERS_HTTPS_KEYSTORE_TYPE
        ));
    }
    location.map(PathBuf::from)
}

/// `http://HOST:PORT` or `https://HOST:PORT` into (https, host to bind, port). An empty host
/// binds every interface, as in Kafka Connect.
fn parse_listener(text: &str) -> std::result::Result<(bool, String, u16), String> {
    let bad = |why: &str| {
        format!(
            "{}={text:?}: {why}; expected one http://HOST:PORT or https://HOST:PORT, such as {DEFAULT_LISTENER}",
            keys::LISTENERS
        )
    };
    if text.contains(',') {
        return Err(bad("pgcdc serves one listener"));
    }
    let (https, rest) = match (text.strip_prefix("http://"), text.strip_prefix("https://")) {
        (Some(rest), _) => (false, rest),
        (_, Some(rest)) => (true, rest),
        _ => return Err(bad("the scheme must be http or https")),
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None => return Err(bad("the port is missing")),
    };
    let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    Ok((https, host.to_string(), port))
}

/// The credentials the config gives, if any.
fn auth(raw: &RawConfig) -> std::result::Result<RestAuth, String> {
    let get = |k: &str| raw.get(k).filter(|v| !v.is_empty()).cloned();
    let token = get(keys::REST_AUTH_TOKEN);
    let user = get(keys::REST_AUTH_USERNAME);
    let password = get(keys::REST_AUTH_PASSWORD);
    match (token, user, password) {
        (None, None, None) => Ok(RestAuth::None),
        (Some(t), None, None) => Ok(RestAuth::Bearer(t)),
        (None, Some(username), Some(password)) => Ok(RestAuth::Basic { username, password }),
        (Some(_), _, _) => Err(format!(
            "{} and {}/{} are both set: choose bearer or basic authentication",
            keys::REST_AUTH_TOKEN,
            keys::REST_AUTH_USERNAME,
            keys::REST_AUTH_PASSWORD
        )),
        (None, _, _) => Err(format!(
            "{} and {} go together: set both for basic authentication",
            keys::REST_AUTH_USERNAME,
            keys::REST_AUTH_PASSWORD
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::raw;

    #[test]
    fn defaults_listen_on_loopback_8083_with_no_credentials() {
        let w = WorkerConfig::default();
        assert_eq!((w.bind_host.as_str(), w.bind_port), ("127.0.0.1", 8083));
        assert_eq!(w.auth, RestAuth::None);
        assert!(!w.unauthenticated_writes);
        assert_eq!(w.storage_dir, PathBuf::from("pgcdc-connectors"));
    }

    #[test]
    fn listeners_take_connects_forms_and_refuse_others() {
        let w = WorkerConfig::from_raw(&raw(&[("listeners", "http://:8084")])).unwrap();
        assert_eq!((w.bind_host.as_str(), w.bind_port), ("0.0.0.0", 8084));
        let w = WorkerConfig::from_raw(&raw(&[("listeners", "http://[::1]:0")])).unwrap();
        assert_eq!((w.bind_host.as_str(), w.bind_port), ("::1", 0));
        for bad in [
            "ftp://:8083",
            "http://a:1,http://b:2",
            "tcp://x:1",
            "http://host",
        ] {
            let e = WorkerConfig::from_raw(&raw(&[("listeners", bad)])).unwrap_err();
            assert!(e.message().contains("listeners="), "{bad}: {}", e.message());
        }
    }

    #[test]
    fn an_https_listener_takes_a_pem_keystore_and_nothing_else() {
        let w = WorkerConfig::from_raw(&raw(&[
            ("listeners", "https://:8443"),
            ("listeners.https.ssl.keystore.location", "/k.pem"),
            ("listeners.https.ssl.keystore.type", "PEM"),
        ]))
        .unwrap();
        assert_eq!(w.tls_keystore, Some(PathBuf::from("/k.pem")));
        assert_eq!((w.bind_host.as_str(), w.bind_port), ("0.0.0.0", 8443));
        for (pairs, expected) in [
            (
                &[("listeners", "https://:8443")][..],
                "needs listeners.https.ssl.keystore.location",
            ),
            (
                &[
                    ("listeners", "https://:8443"),
                    ("listeners.https.ssl.keystore.location", "/k.jks"),
                    ("listeners.https.ssl.keystore.type", "JKS"),
                ][..],
                "PEM keystores only",
            ),
            (
                &[
                    ("listeners", "https://:8443"),
                    ("listeners.https.ssl.keystore.location", "/k.pem"),
                    ("listeners.https.ssl.key.password", "x"),
                ][..],
                "encrypted private keys are not supported",
            ),
            (
                &[("listeners.https.ssl.keystore.location", "/k.pem")][..],
                "is not https://",
            ),
        ] {
            let e = WorkerConfig::from_raw(&raw(pairs)).unwrap_err();
            assert!(e.message().contains(expected), "{pairs:?}: {}", e.message());
        }
    }

    #[test]
    fn credentials_are_bearer_or_basic_never_both_or_half() {
        let w = WorkerConfig::from_raw(&raw(&[("pgcdc.rest.auth.token", "t")])).unwrap();
        assert_eq!(w.auth, RestAuth::Bearer("t".into()));
        assert!(
            !format!("{w:?}").contains("\"t\""),
            "the token is not printed"
        );
        let e = WorkerConfig::from_raw(&raw(&[("pgcdc.rest.auth.username", "u")])).unwrap_err();
        assert!(e.message().contains("go together"), "{}", e.message());
        let e = WorkerConfig::from_raw(&raw(&[
            ("pgcdc.rest.auth.token", "t"),
            ("pgcdc.rest.auth.username", "u"),
            ("pgcdc.rest.auth.password", "p"),
        ]))
        .unwrap_err();
        assert!(e.message().contains("both set"), "{}", e.message());
    }

    #[test]
    fn a_config_topic_needs_brokers_and_takes_connects_client_settings() {
        let w = WorkerConfig::from_raw(&raw(&[
            ("config.storage.topic", "pgcdc-configs"),
            ("bootstrap.servers", "k1:9092"),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";",
            ),
            ("producer.linger.ms", "7"),
        ]))
        .unwrap();
        let t = w.config_topic.expect("a config topic");
        assert_eq!(
            (t.topic.as_str(), t.replication_factor),
            ("pgcdc-configs", -1)
        );
        assert_eq!(t.kafka.bootstrap_servers, "k1:9092");
        let lib: std::collections::BTreeMap<_, _> = t.kafka.producer.iter().cloned().collect();
        assert_eq!(lib.get("sasl.username").map(String::as_str), Some("u"));
        assert_eq!(
            lib.get("security.protocol").map(String::as_str),
            Some("sasl_ssl")
        );
        // Connectors take the brokers and producer.* settings, not the worker's own security.
        let d = &w.connector_defaults;
        assert_eq!(
            d.get("bootstrap.servers").map(String::as_str),
            Some("k1:9092")
        );
        assert_eq!(d.get("producer.linger.ms").map(String::as_str), Some("7"));
        assert!(!d.contains_key("security.protocol"));

        for (pairs, expected) in [
            (
                &[("config.storage.topic", "t")][..],
                "config.storage.topic=t needs bootstrap.servers",
            ),
            (
                &[
                    ("config.storage.topic", "t"),
                    ("bootstrap.servers", "k:1"),
                    ("pgcdc.config.storage.dir", "d"),
                ][..],
                "are both set",
            ),
            (
                &[
                    ("config.storage.topic", "t"),
                    ("bootstrap.servers", "k:1"),
                    ("config.storage.replication.factor", "0"),
                ][..],
                "must be -1",
            ),
            (
                &[("config.storage.replication.factor", "3")][..],
                "without config.storage.topic",
            ),
            (
                &[("producer.override.acks", "1")][..],
                "producer.override.acks is a connector setting",
            ),
        ] {
            let e = WorkerConfig::from_raw(&raw(pairs)).unwrap_err();
            assert!(e.message().contains(expected), "{pairs:?}: {}", e.message());
        }
    }

    #[test]
    fn unknown_and_connector_keys_are_refused_with_what_to_do() {
        let e = WorkerConfig::from_raw(&raw(&[
            ("listener", "http://:1"),
            ("key.converter", "x"),
            ("config.storage.topic", "t"),
        ]))
        .unwrap_err();
        let m = e.message();
        assert!(m.contains("did you mean listeners?"), "{m}");
        assert!(m.contains("key.converter is a connector setting"), "{m}");
        assert!(
            m.contains("config.storage.topic=t needs bootstrap.servers"),
            "{m}"
        );
        assert!(WorkerConfig::from_raw(&raw(&[("group.id", "g")])).is_ok());
    }
}
