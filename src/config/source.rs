//! Reading configuration sources: the config file, `PGCDC_*` environment variables,
//! `--set` overrides and the standard `PG*` variables, merged in precedence order.

use std::path::Path;

use super::{keys, RawConfig};
use crate::error::{Error, Result};

/// Where configuration comes from besides the file.
#[derive(Debug, Clone, Default)]
pub struct ConfigSource {
    /// `--set key=value` pairs, in command-line order (later wins).
    pub overrides: Vec<(String, String)>,
    /// Environment variables (normally `std::env::vars()`).
    pub env: Vec<(String, String)>,
}

/// Parses a Java `.properties` text: `key=value` or `key: value` lines, `#`/`!` comments,
/// trailing `\` continues a line.
pub fn parse_properties(text: &str) -> Result<RawConfig> {
    fn insert(out: &mut RawConfig, entry: &str, line_no: usize) -> Result<()> {
        let sep = entry.find(['=', ':']).ok_or_else(|| {
            Error::config(format!(
                "line {line_no} of the properties file has no '=' or ':' between key and value"
            ))
        })?;
        let key = entry[..sep].trim();
        if key.is_empty() {
            return Err(Error::config(format!(
                "line {line_no} of the properties file has an empty key"
            )));
        }
        out.insert(key.to_string(), entry[sep + 1..].trim().to_string());
        Ok(())
    }
    let mut out = RawConfig::new();
    let mut logical = String::new();
    let mut start_line = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if logical.is_empty() {
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            start_line = n + 1;
        }
        if let Some(body) = line.strip_suffix('\\') {
            logical.push_str(body);
            continue;
        }
        logical.push_str(line);
        insert(&mut out, &std::mem::take(&mut logical), start_line)?;
    }
    // A continuation on the last line still ends the entry.
    if !logical.is_empty() {
        insert(&mut out, &logical, start_line)?;
    }
    Ok(out)
}

fn json_to_string(key: &str, v: &serde_json::Value) -> Result<String> {
    Ok(match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Null => String::new(),
        _ => {
            return Err(Error::config(format!(
                "{key}: value must be a string, number or boolean, not a JSON object or array"
            )))
        }
    })
}

/// Parses a connector config file: Connect REST JSON `{"name":..., "config":{...}}`, a flat
/// JSON map, or `.properties`. Errors name the file and what is wrong with it.
pub fn load_file(path: &Path) -> Result<RawConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::config(format!("cannot read config file {}", path.display())).with_source(e)
    })?;
    parse_config_text(&text)
        .map_err(|e| Error::config(format!("config file {}: {}", path.display(), e.message())))
}

/// Parses config text in any of the accepted formats.
pub fn parse_config_text(text: &str) -> Result<RawConfig> {
    if text.trim_start().starts_with('[') {
        return Err(Error::config(
            "expected a JSON object ({\"name\": ..., \"config\": {...}} or a flat map), not a JSON array",
        ));
    }
    if !text.trim_start().starts_with('{') {
        return parse_properties(text);
    }
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        Error::config(format!(
            "invalid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| Error::config("expected a JSON object"))?;
    let mut out = RawConfig::new();
    if let Some(config) = obj.get("config") {
        let config = config
            .as_object()
            .ok_or_else(|| Error::config("\"config\" must be a JSON object of string values"))?;
        for (k, v) in config {
            out.insert(k.clone(), json_to_string(k, v)?);
        }
        if let Some(name) = obj.get("name") {
            let name = json_to_string("name", name)?;
            if let Some(inner) = out.get("name") {
                if inner != &name {
                    return Err(Error::config(format!(
                        "\"name\" is {name:?} but config.name is {inner:?}: they must match, as in Kafka Connect"
                    )));
                }
            }
            out.insert("name".into(), name);
        }
    } else {
        for (k, v) in obj {
            out.insert(k.clone(), json_to_string(k, v)?);
        }
    }
    Ok(out)
}

/// The environment variable name for `key`: `PGCDC_` + upper case, `.`/`-` as `_`.
pub fn env_name(key: &str) -> String {
    let mut s = String::from("PGCDC_");
    s.extend(key.chars().map(|c| {
        if c == '.' || c == '-' {
            '_'
        } else {
            c.to_ascii_uppercase()
        }
    }));
    s
}

impl ConfigSource {
    /// Merges `file` with the environment and `--set` overrides (see the module docs for the
    /// precedence). `PGCDC_*` variables are matched against known keys and the keys already
    /// present; an unmatched `PGCDC_*` variable is ignored.
    /// `PGCDC_*` environment variables that name no known key and no key of `file`
    /// (`PGCDC_LOG` and `PGCDC_TEST_*` are not configuration and are skipped), so a misspelled
    /// variable can be reported instead of silently ignored.
    pub fn unmatched_env(&self, file: &RawConfig) -> Vec<String> {
        self.env
            .iter()
            .map(|(var, _)| var)
            .filter(|var| {
                var.starts_with("PGCDC_") && *var != "PGCDC_LOG" && !var.starts_with("PGCDC_TEST_")
            })
            .filter(|var| {
                !keys::KEYS.iter().any(|(k, _)| env_name(k) == **var)
                    && !file.keys().any(|k| env_name(k) == **var)
            })
            .cloned()
            .collect()
    }

    /// Merges `file` with the environment and `--set` overrides (see the module docs).
    pub fn merge(&self, mut file: RawConfig) -> RawConfig {
        // 4. Standard PG variables fill database.* keys the file leaves out.
        const PG_ENV: [(&str, &str); 9] = [
            ("PGHOST", "database.hostname"),
            ("PGPORT", "database.port"),
            ("PGUSER", "database.user"),
            ("PGPASSWORD", "database.password"),
            ("PGDATABASE", "database.dbname"),
            ("PGSSLMODE", "database.sslmode"),
            ("PGSSLROOTCERT", "database.sslrootcert"),
            ("PGSSLCERT", "database.sslcert"),
            ("PGSSLKEY", "database.sslkey"),
        ];
        for (var, key) in PG_ENV {
            if !file.contains_key(key) {
                if let Some((_, v)) = self.env.iter().find(|(k, _)| k == var) {
                    file.insert(key.to_string(), v.clone());
                }
            }
        }
        // 2. PGCDC_* variables.
        let mut candidates: Vec<String> = keys::KEYS.iter().map(|(k, _)| k.to_string()).collect();
        candidates.extend(file.keys().cloned());
        for (var, value) in &self.env {
            if !var.starts_with("PGCDC_") {
                continue;
            }
            if let Some(key) = candidates.iter().find(|k| env_name(k) == *var) {
                file.insert(key.clone(), value.clone());
            }
        }
        // 1. --set overrides.
        for (k, v) in &self.overrides {
            file.insert(k.clone(), v.clone());
        }
        file
    }
}

/// Parses one `--set key=value` argument.
pub fn parse_set(arg: &str) -> std::result::Result<(String, String), String> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("--set expects key=value, got {arg:?}")),
    }
}
