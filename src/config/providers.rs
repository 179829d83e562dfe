//! Kafka Connect's config providers, for secrets kept out of the connector config: a value
//! such as `${file:/run/secrets/pg.properties:password}`, `${dir:/run/secrets:pg-password}` or
//! `${env:PG_PASSWORD}` is replaced, before validation, by what the named provider returns.
//!
//! Providers are declared as in a Connect worker: `config.providers=file,dir,env` and
//! `config.providers.<name>.class` naming one of Kafka's three providers:
//! - `org.apache.kafka.common.config.provider.FileConfigProvider`: `${<name>:<properties
//!   file>:<key>}`, the key's value in a `.properties` file;
//! - `org.apache.kafka.common.config.provider.DirectoryConfigProvider`: `${<name>:<dir>:<file>}`,
//!   the content of a file in a directory (Kubernetes and Docker secrets);
//! - `org.apache.kafka.common.config.provider.EnvVarConfigProvider`: `${<name>:<VARIABLE>}`.
//!
//! Each accepts Kafka's option (`config.providers.<name>.param.allowed.paths` for the file and
//! directory providers, `...param.allowlist.pattern` for the environment one). A placeholder
//! that cannot be resolved (an undeclared provider, a missing file, key or variable, a path
//! outside `allowed.paths`) is a configuration error naming the key and the provider, never a
//! value passed on as it is. The unresolved config is what `pgcdc check` prints, so a
//! resolved secret is never shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;

use super::keys::{CONFIG_PROVIDERS, CONFIG_PROVIDERS_PREFIX};
use super::{invalid_config, source::parse_properties, RawConfig};
use crate::error::Result;

/// `org.apache.kafka.common.config.provider.FileConfigProvider`.
pub const FILE_PROVIDER: &str = "org.apache.kafka.common.config.provider.FileConfigProvider";
/// `org.apache.kafka.common.config.provider.DirectoryConfigProvider`.
pub const DIRECTORY_PROVIDER: &str =
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider";
/// `org.apache.kafka.common.config.provider.EnvVarConfigProvider`.
pub const ENV_PROVIDER: &str = "org.apache.kafka.common.config.provider.EnvVarConfigProvider";

/// One declared provider.
#[derive(Debug)]
enum Provider {
    File { allowed: Option<Vec<PathBuf>> },
    Directory { allowed: Option<Vec<PathBuf>> },
    Env { allowlist: Option<Regex> },
}

/// Keys whose values exist only to be shown without credentials (metric labels): a
/// placeholder there would publish what it resolves to.
const PUBLIC_KEYS: &[&str] = &[super::keys::CUSTOM_METRIC_TAGS];

/// Resolves every placeholder of `raw`, reading variables through `env`. Returns the config
/// with the placeholders replaced (and the provider declarations removed), or a
/// configuration error listing every placeholder that could not be resolved.
pub fn resolve_providers(
    raw: &RawConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RawConfig> {
    let mut problems = Vec::new();
    let providers = declared(raw, &mut problems);
    let placeholder = Regex::new(r"\$\{([^}:]*?):(?:([^}]*?):)?([^}]*?)\}").expect("static regex");
    let mut out = RawConfig::new();
    for (key, value) in raw {
        if key == CONFIG_PROVIDERS || key.starts_with(CONFIG_PROVIDERS_PREFIX) {
            continue;
        }
        if PUBLIC_KEYS.contains(&key.as_str()) && placeholder.is_match(value) {
            problems.push(format!(
                "{key} cannot take a ${{provider:...}} placeholder: its value is shown to anyone who can read /metrics, so a secret would leak; write it out"
            ));
            continue;
        }
        let mut resolved = String::with_capacity(value.len());
        let mut last = 0;
        for caps in placeholder.captures_iter(value) {
            let whole = caps.get(0).expect("the whole match");
            resolved.push_str(&value[last..whole.start()]);
            last = whole.end();
            let (name, path, item) = (&caps[1], caps.get(2).map(|m| m.as_str()), &caps[3]);
            match lookup(&providers, name, path, item, env) {
                Ok(v) => resolved.push_str(&v),
                Err(why) => problems.push(format!(
                    "{key}: {} cannot be resolved: {why}",
                    whole.as_str()
                )),
            }
        }
        resolved.push_str(&value[last..]);
        out.insert(key.clone(), resolved);
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(invalid_config(&problems, &[]))
    }
}

/// The providers `config.providers` declares, by name.
fn declared(raw: &RawConfig, problems: &mut Vec<String>) -> BTreeMap<String, Provider> {
    let mut out = BTreeMap::new();
    let Some(list) = raw.get(CONFIG_PROVIDERS) else {
        for k in raw
            .keys()
            .filter(|k| k.starts_with(CONFIG_PROVIDERS_PREFIX))
        {
            problems.push(format!(
                "{k} is set but {CONFIG_PROVIDERS} does not list any provider"
            ));
        }
        return out;
    };
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let prefix = format!("{CONFIG_PROVIDERS_PREFIX}{name}.");
        let class_key = format!("{prefix}class");
        let option = |o: &str| raw.get(&format!("{prefix}param.{o}")).map(|v| v.trim());
        let paths = |v: Option<&str>| {
            v.map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(PathBuf::from)
                    .collect()
            })
        };
        let provider = match raw.get(&class_key).map(|c| c.trim()) {
            Some(FILE_PROVIDER) => Provider::File {
                allowed: paths(option("allowed.paths")),
            },
            Some(DIRECTORY_PROVIDER) => Provider::Directory {
                allowed: paths(option("allowed.paths")),
            },
            Some(ENV_PROVIDER) => match option("allowlist.pattern").map(allowlist) {
                Some(Err(e)) => {
                    problems.push(format!("{prefix}param.allowlist.pattern: {e}"));
                    continue;
                }
                Some(Ok(r)) => Provider::Env { allowlist: Some(r) },
                None => Provider::Env { allowlist: None },
            },
            Some(other) => {
                problems.push(format!(
                    "{class_key}={other} is not supported: use {FILE_PROVIDER}, {DIRECTORY_PROVIDER} or {ENV_PROVIDER}"
                ));
                continue;
            }
            None => {
                problems.push(format!(
                    "{class_key} is required: the class of config provider {name:?}"
                ));
                continue;
            }
        };
        check_options(raw, &prefix, &provider, problems);
        out.insert(name.to_string(), provider);
    }
    out
}

/// `allowlist.pattern` as a whole-name regular expression.
fn allowlist(pattern: &str) -> std::result::Result<Regex, String> {
    crate::util::full_match_regex(pattern, false)
        .map_err(|e| format!("{pattern:?} is not a valid regular expression: {e}"))
}

/// Options a provider does not have are problems (as Kafka Connect would fail to configure
/// it).
fn check_options(raw: &RawConfig, prefix: &str, provider: &Provider, problems: &mut Vec<String>) {
    let known: &[&str] = match provider {
        Provider::File { .. } | Provider::Directory { .. } => &["param.allowed.paths"],
        Provider::Env { .. } => &["param.allowlist.pattern"],
    };
    for k in raw.keys() {
        let Some(option) = k.strip_prefix(prefix) else {
            continue;
        };
        if option != "class" && !known.contains(&option) {
            problems.push(format!(
                "{k} is not an option of this provider (it has: {})",
                known.join(", ")
            ));
        }
    }
}

/// What provider `name` gives for `path` / `item`; why not, without any secret value.
fn lookup(
    providers: &BTreeMap<String, Provider>,
    name: &str,
    path: Option<&str>,
    item: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<String, String> {
    let provider = providers
        .get(name)
        .ok_or_else(|| format!("config provider {name:?} is not declared in {CONFIG_PROVIDERS}"))?;
    match provider {
        Provider::Env { allowlist } => {
            if path.is_some_and(|p| !p.is_empty()) {
                return Err(format!(
                    "an environment provider takes ${{{name}:<VARIABLE>}}"
                ));
            }
            if allowlist.as_ref().is_some_and(|r| !r.is_match(item)) {
                return Err(format!(
                    "variable {item} is not allowed by the allowlist.pattern of provider {name:?}"
                ));
            }
            env(item).ok_or_else(|| format!("environment variable {item} is not set"))
        }
        Provider::File { allowed } => {
            let file = Path::new(path.unwrap_or_default());
            check_allowed(file, allowed.as_deref(), name)?;
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let values = parse_properties(&text)
                .map_err(|_| format!("{} is not a .properties file", file.display()))?;
            values
                .get(item)
                .cloned()
                .ok_or_else(|| format!("{} has no key {item}", file.display()))
        }
        Provider::Directory { allowed } => {
            let dir = Path::new(path.unwrap_or_default());
            check_allowed(dir, allowed.as_deref(), name)?;
            if item.contains('/') || item == ".." {
                return Err(format!("{item:?} is not a file name"));
            }
            let file = dir.join(item);
            std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))
        }
    }
}

/// With `allowed.paths`, `path` must be one of them or under one.
fn check_allowed(
    path: &Path,
    allowed: Option<&[PathBuf]>,
    name: &str,
) -> std::result::Result<(), String> {
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    match allowed {
        Some(allowed) if !allowed.iter().any(|a| path.starts_with(a)) => Err(format!(
            "{} is outside the allowed.paths of provider {name:?}",
            path.display()
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::raw;

    #[test]
    fn keys_shown_without_credentials_take_no_placeholder() {
        let r = raw(&[
            ("config.providers", "env"),
            (
                "config.providers.env.class",
                "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
            ),
            ("custom.metric.tags", "leak=${env:SECRET}"),
        ]);
        let e = resolve_providers(&r, &|_| Some("s3cret".into())).unwrap_err();
        assert!(
            e.message().contains("custom.metric.tags cannot take"),
            "{}",
            e.message()
        );
        assert!(!e.message().contains("s3cret"));
    }

    fn env(name: &str) -> Option<String> {
        (name == "PG_PASSWORD").then(|| "from-env".to_string())
    }

    fn providers() -> Vec<(&'static str, &'static str)> {
        vec![
            ("config.providers", "file,dir,env"),
            ("config.providers.file.class", FILE_PROVIDER),
            ("config.providers.dir.class", DIRECTORY_PROVIDER),
            ("config.providers.env.class", ENV_PROVIDER),
        ]
    }

    #[test]
    fn file_directory_and_environment_placeholders_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let props = dir.path().join("pg.properties");
        std::fs::write(&props, "user=cdc\npassword=from-file\n").unwrap();
        std::fs::write(dir.path().join("kafka-password"), "from-dir").unwrap();
        let mut pairs = providers();
        let user = format!("${{file:{}:user}}", props.display());
        let password = format!("${{file:{}:password}}", props.display());
        let jaas = format!(
            "ScramLoginModule required username=\"cdc\" password=\"${{dir:{}:kafka-password}}\";",
            dir.path().display()
        );
        pairs.extend([
            ("database.user", user.as_str()),
            ("database.password", password.as_str()),
            ("producer.override.sasl.jaas.config", jaas.as_str()),
            ("topic.prefix", "${env:PG_PASSWORD}-x"),
        ]);
        let out = resolve_providers(&raw(&pairs), &env).unwrap();
        assert_eq!(out["database.user"], "cdc");
        assert_eq!(out["database.password"], "from-file");
        assert_eq!(
            out["producer.override.sasl.jaas.config"],
            "ScramLoginModule required username=\"cdc\" password=\"from-dir\";"
        );
        assert_eq!(out["topic.prefix"], "from-env-x");
        assert!(!out.keys().any(|k| k.starts_with("config.providers")));
    }

    #[test]
    fn unresolvable_placeholders_are_errors_naming_key_and_provider() {
        let mut pairs = providers();
        pairs.extend([
            ("database.password", "${env:NOT_SET}"),
            ("database.user", "${vault:secret/pg:user}"),
            ("database.dbname", "${file:/nonexistent/x.properties:db}"),
            ("slot.name", "${dir:relative:slot}"),
        ]);
        let err = resolve_providers(&raw(&pairs), &env).unwrap_err();
        let msg = err.report();
        assert!(msg.contains(
            "database.password: ${env:NOT_SET} cannot be resolved: environment variable NOT_SET is not set"), "{msg}");
        assert!(
            msg.contains("config provider \"vault\" is not declared"),
            "{msg}"
        );
        assert!(
            msg.contains("cannot read /nonexistent/x.properties"),
            "{msg}"
        );
        assert!(msg.contains("relative is not an absolute path"), "{msg}");
    }

    #[test]
    fn allowed_paths_and_allowlists_are_enforced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p"), "secret").unwrap();
        let mut pairs = providers();
        pairs.extend([
            ("config.providers.dir.param.allowed.paths", "/run/secrets"),
            ("config.providers.env.param.allowlist.pattern", "PGCDC_.*"),
        ]);
        let value = format!("${{dir:{}:p}}", dir.path().display());
        pairs.push(("database.password", value.as_str()));
        pairs.push(("database.user", "${env:PG_PASSWORD}"));
        let msg = resolve_providers(&raw(&pairs), &env).unwrap_err().report();
        assert!(msg.contains("outside the allowed.paths"), "{msg}");
        assert!(
            msg.contains("not allowed by the allowlist.pattern"),
            "{msg}"
        );
        assert!(
            !msg.contains("secret") || msg.contains("/run/secrets"),
            "{msg}"
        );
    }

    #[test]
    fn provider_declarations_are_checked_as_connect_checks_them() {
        let msg = resolve_providers(
            &raw(&[
                ("config.providers", "a,b"),
                ("config.providers.a.class", "com.example.Vault"),
                ("config.providers.c.class", FILE_PROVIDER),
                ("config.providers.b.class", ENV_PROVIDER),
                ("config.providers.b.param.bogus", "1"),
            ]),
            &env,
        )
        .unwrap_err()
        .report();
        assert!(
            msg.contains("config.providers.a.class=com.example.Vault is not supported"),
            "{msg}"
        );
        assert!(
            msg.contains("config.providers.b.param.bogus is not an option"),
            "{msg}"
        );
        let plain = raw(&[("database.password", "no placeholder ${here")]);
        assert_eq!(resolve_providers(&plain, &env).unwrap(), plain);
    }
}
