//! Reading configuration sources: the config file, `PGCDC_*` environment variables,
//! `--set` overrides and the standard `PG*` variables, merged in precedence order.

use std::path::Path;

use super::keys::{
    self, DATABASE_DBNAME, DATABASE_HOSTNAME, DATABASE_PASSWORD, DATABASE_PORT, DATABASE_SSLCERT,
    DATABASE_SSLKEY, DATABASE_SSLMODE, DATABASE_SSLROOTCERT, DATABASE_USER, NAME,
};
use super::RawConfig;
use crate::error::{Error, IoContext, Result};

/// Where configuration comes from besides the file.
#[derive(Debug, Clone, Default)]
pub struct ConfigSource {
    /// `--set key=value` pairs, in command-line order (later wins).
    pub overrides: Vec<(String, String)>,
    /// Environment variables (normally [`utf8_environment`] of `std::env::vars_os()`).
    pub env: Vec<(String, String)>,
}

/// The environment as text: the variables whose name and value are UTF-8. Another
/// program's variable that is not UTF-8 is left out (pgcdc reads none but its own and
/// those a `${env:...}` placeholder names); a `PGCDC_*` variable that is not is an error
/// naming it, as it would otherwise be silently ignored. Call it with
/// `std::env::vars_os()`.
///
/// # Errors
/// A config error naming the first `PGCDC_*` variable whose name or value is not UTF-8.
pub fn utf8_environment(
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (name, value) in vars {
        match (name.into_string(), value.into_string()) {
            (Ok(name), Ok(value)) => out.push((name, value)),
            (Ok(name), Err(_)) if name.starts_with("PGCDC_") => {
                return Err(Error::config(format!(
                    "environment variable {name} is not valid UTF-8: set it to UTF-8 text (or unset it)"
                )));
            }
            (Err(name), _) if name.to_string_lossy().starts_with("PGCDC_") => {
                return Err(Error::config(format!(
                    "an environment variable's name is not valid UTF-8 ({}): rename or unset it",
                    name.to_string_lossy()
                )));
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Parses a Java `.properties` text as `java.util.Properties.load` reads it: `#`/`!` comment
/// lines; a key ends at the first unescaped `=`, `:` or whitespace (so `key value` works); a
/// line ending in an odd number of backslashes continues on the next (whose leading
/// whitespace is dropped); `\t`, `\n`, `\r`, `\f` and `\uXXXX` escapes are decoded and any
/// other escaped character stands for itself (`public\\.a` is the regex `public\.a`, `\=` an
/// equals sign inside a key). A key alone has the empty value. Errors: a malformed `\uXXXX`
/// escape, naming its line.
pub fn parse_properties(text: &str) -> Result<RawConfig> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let is_ws = |c: char| c == ' ' || c == '\t' || c == '\u{c}';
    let mut out = RawConfig::new();
    let mut first_line: std::collections::HashMap<String, usize> = Default::default();
    // Logical lines: natural lines joined where one ends in an odd number of backslashes.
    let mut logical: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let continuing = current.is_some();
        let line = line.trim_start_matches(is_ws);
        if !continuing && (line.is_empty() || line.starts_with('#') || line.starts_with('!')) {
            continue;
        }
        let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
        let (body, continues) = if trailing % 2 == 1 {
            (&line[..line.len() - 1], true)
        } else {
            (line, false)
        };
        let entry = current.get_or_insert_with(|| (n + 1, String::new()));
        entry.1.push_str(body);
        if !continues {
            logical.extend(current.take());
        }
    }
    // A continuation on the last line still ends the entry.
    logical.extend(current.take());
    for (line_no, entry) in logical {
        let (key, value) = split_properties_entry(&entry, line_no)?;
        if let Some(first) = first_line.insert(key.clone(), line_no) {
            return Err(duplicate_key(
                &key,
                &format!("on lines {first} and {line_no}"),
            ));
        }
        out.insert(key, value);
    }
    Ok(out)
}

/// Splits one logical `.properties` line into its unescaped key and value.
fn split_properties_entry(entry: &str, line_no: usize) -> Result<(String, String)> {
    let is_ws = |c: char| c == ' ' || c == '\t' || c == '\u{c}';
    let chars: Vec<char> = entry.chars().collect();
    // The key ends at the first unescaped separator or whitespace.
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '=' | ':' => break,
            c if is_ws(c) => break,
            _ => i += 1,
        }
    }
    let key_end = i.min(chars.len());
    // Whitespace, at most one '=' or ':', whitespace.
    while i < chars.len() && is_ws(chars[i]) {
        i += 1;
    }
    if i < chars.len() && (chars[i] == '=' || chars[i] == ':') {
        i += 1;
        while i < chars.len() && is_ws(chars[i]) {
            i += 1;
        }
    }
    let key = unescape_properties(&chars[..key_end], line_no)?;
    let value = unescape_properties(&chars[i.min(chars.len())..], line_no)?;
    Ok((key, value))
}

/// Decodes the escapes of a `.properties` key or value.
fn unescape_properties(chars: &[char], line_no: usize) -> Result<String> {
    let mut out = String::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = chars.get(i) else {
            break;
        };
        i += 1;
        match e {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\u{c}'),
            'u' => {
                let hex: String = chars[i..chars.len().min(i + 4)].iter().collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| {
                        Error::config(format!(
                            "line {line_no} of the properties file has a malformed \\uXXXX escape (\\u{hex}): write four hex digits, or \\\\u for a backslash followed by u"
                        ))
                    })?;
                i += 4;
                // A UTF-16 surrogate pair is two escapes.
                if (0xD800..0xDC00).contains(&code)
                    && chars.get(i) == Some(&'\\')
                    && chars.get(i + 1) == Some(&'u')
                {
                    let low: String = chars[i + 2..chars.len().min(i + 6)].iter().collect();
                    if let Ok(lo) = u32::from_str_radix(&low, 16) {
                        if (0xDC00..0xE000).contains(&lo) {
                            let cp = 0x10000 + ((code - 0xD800) << 10) + (lo - 0xDC00);
                            out.extend(char::from_u32(cp));
                            i += 6;
                            continue;
                        }
                    }
                }
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            other => out.push(other),
        }
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

/// The largest config file read, in bytes: a connector config is a few KiB; anything this big
/// is the wrong file (or a device that never ends, such as `/dev/zero`).
pub const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;

/// A key set twice: Kafka Connect would take the last value without a word.
fn duplicate_key(key: &str, where_: &str) -> Error {
    Error::config(format!(
        "{key} is set twice ({where_}); Kafka Connect would silently use the last one: keep one"
    ))
}

/// Reads at most [`MAX_CONFIG_FILE_BYTES`] of `path` as UTF-8 text.
fn read_config_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let io_error = |e: std::io::Error| {
        let what = format!("cannot read config file {}", path.display());
        Error::io(e, IoContext::Config, what)
    };
    let file = std::fs::File::open(path).map_err(io_error)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(Error::config(format!(
            "config file {} is over {} KiB: a connector config is a few KiB; is it the right file?",
            path.display(),
            MAX_CONFIG_FILE_BYTES / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::config(format!(
            "config file {} is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Parses a connector config file: Connect REST JSON `{"name":..., "config":{...}}`, a flat
/// JSON map, or `.properties`. Errors name the file and what is wrong with it.
pub fn load_file(path: &Path) -> Result<RawConfig> {
    let text = read_config_text(path)?;
    let json_name = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let parsed = if json_name && !text.trim_start().starts_with('{') {
        // A .json file is JSON: report what is wrong with it, not properties-syntax errors.
        parse_json_config(text)
    } else {
        parse_config_text(text)
    };
    parsed.map_err(|e| Error::config(format!("config file {}: {}", path.display(), e.message())))
}

/// Top-level members of a Kafka Connect connector request or `GET /connectors/<name>`
/// answer that carry no connector setting.
const CONNECT_REQUEST_MEMBERS: &[&str] = &[NAME, "config", "tasks", "type", "initial_state"];

/// Parses config text in any of the accepted formats.
pub fn parse_config_text(text: &str) -> Result<RawConfig> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('[') {
        return Err(Error::config(
            "expected a JSON object ({\"name\": ..., \"config\": {...}} or a flat map), not a JSON array",
        ));
    }
    if !text.trim_start().starts_with('{') {
        return parse_properties(text);
    }
    parse_json_config(text)
}

/// Parses a Connect REST JSON config (`{"name": ..., "config": {...}}`) or a flat JSON map.
fn parse_json_config(text: &str) -> Result<RawConfig> {
    let tree: JsonTree = serde_json::from_str(text).map_err(|e| {
        Error::config(format!(
            "invalid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    tree.check_duplicates()?;
    let v = tree.into_value();
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
        let stray: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| !CONNECT_REQUEST_MEMBERS.contains(k))
            .collect();
        if !stray.is_empty() {
            return Err(Error::config(format!(
                "{} next to \"config\": a connector request has only \"name\" and \"config\" (Kafka Connect would not take it either); move connector settings into \"config\"",
                stray.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")
            )));
        }
        if let Some(state) = obj.get("initial_state") {
            let state = json_to_string("initial_state", state)?;
            if !state.eq_ignore_ascii_case("running") {
                return Err(Error::config(format!(
                    "\"initial_state\": {state:?} is not supported: pgcdc starts streaming when it starts (remove it, or set it to \"RUNNING\")"
                )));
            }
        }
        if let Some(name) = obj.get(NAME) {
            let name = json_to_string(NAME, name)?;
            if let Some(inner) = out.get(NAME) {
                if inner != &name {
                    return Err(Error::config(format!(
                        "\"name\" is {name:?} but config.name is {inner:?}: they must match, as in Kafka Connect"
                    )));
                }
            }
            out.insert(NAME.into(), name);
        }
    } else {
        for (k, v) in obj {
            out.insert(k.clone(), json_to_string(k, v)?);
        }
    }
    Ok(out)
}

/// A JSON document as written, objects keeping every member in order (serde_json's `Value`
/// keeps only the last of a repeated member).
enum JsonTree {
    Object(Vec<(String, JsonTree)>),
    Other(serde_json::Value),
}

impl JsonTree {
    /// Refuses a member repeated at the top level or in `"config"`.
    fn check_duplicates(&self) -> Result<()> {
        let JsonTree::Object(members) = self else {
            return Ok(());
        };
        check_unique(members, "")?;
        for (k, v) in members {
            if let (true, JsonTree::Object(inner)) = (k == "config", v) {
                check_unique(inner, "in \"config\"")?;
            }
        }
        Ok(())
    }

    fn into_value(self) -> serde_json::Value {
        match self {
            JsonTree::Other(v) => v,
            JsonTree::Object(members) => serde_json::Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k, v.into_value()))
                    .collect(),
            ),
        }
    }
}

fn check_unique(members: &[(String, JsonTree)], where_: &str) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for (k, _) in members {
        if !seen.insert(k.as_str()) {
            let at = if where_.is_empty() {
                "in the JSON object".to_string()
            } else {
                where_.to_string()
            };
            return Err(duplicate_key(k, &at));
        }
    }
    Ok(())
}

impl<'de> serde::Deserialize<'de> for JsonTree {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JsonTree;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<JsonTree, A::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, JsonTree>()? {
                    members.push((k, v));
                }
                Ok(JsonTree::Object(members))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<JsonTree, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<JsonTree>()? {
                    items.push(v.into_value());
                }
                Ok(JsonTree::Other(serde_json::Value::Array(items)))
            }
            fn visit_bool<E>(self, b: bool) -> std::result::Result<JsonTree, E> {
                Ok(JsonTree::Other(b.into()))
            }
            fn visit_i64<E>(self, n: i64) -> std::result::Result<JsonTree, E> {
                Ok(JsonTree::Other(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> std::result::Result<JsonTree, E> {
                Ok(JsonTree::Other(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> std::result::Result<JsonTree, E> {
                Ok(JsonTree::Other(n.into()))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<JsonTree, E> {
                Ok(JsonTree::Other(s.into()))
            }
            fn visit_string<E>(self, s: String) -> std::result::Result<JsonTree, E> {
                Ok(JsonTree::Other(s.into()))
            }
            fn visit_unit<E>(self) -> std::result::Result<JsonTree, E> {
                Ok(JsonTree::Other(serde_json::Value::Null))
            }
        }
        d.deserialize_any(V)
    }
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

/// The standard PostgreSQL variables and the keys they fill when the file leaves them out.
const PG_ENV: [(&str, &str); 9] = [
    ("PGHOST", DATABASE_HOSTNAME),
    ("PGPORT", DATABASE_PORT),
    ("PGUSER", DATABASE_USER),
    ("PGPASSWORD", DATABASE_PASSWORD),
    ("PGDATABASE", DATABASE_DBNAME),
    ("PGSSLMODE", DATABASE_SSLMODE),
    ("PGSSLROOTCERT", DATABASE_SSLROOTCERT),
    ("PGSSLCERT", DATABASE_SSLCERT),
    ("PGSSLKEY", DATABASE_SSLKEY),
];

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
                    && !keys::WORKER_KEYS.iter().any(|(k, _)| env_name(k) == **var)
                    && !file.keys().any(|k| env_name(k) == **var)
            })
            .cloned()
            .collect()
    }

    /// The `PGCDC_*` variables that name a known key or a key of `file`, as
    /// (key, variable, value).
    fn pgcdc_vars<'a>(&'a self, file: &RawConfig) -> Vec<(String, &'a str, &'a str)> {
        let mut candidates: Vec<String> = keys::KEYS.iter().map(|(k, _)| k.to_string()).collect();
        candidates.extend(file.keys().cloned());
        self.env
            .iter()
            .filter(|(var, _)| var.starts_with("PGCDC_"))
            .filter_map(|(var, value)| {
                candidates
                    .iter()
                    .find(|k| env_name(k) == *var)
                    .map(|k| (k.clone(), var.as_str(), value.as_str()))
            })
            .collect()
    }

    /// The keys whose merged value comes from an environment variable, with that variable
    /// (`database.port` → `PGPORT`), so errors about a value can say where it was set.
    pub fn env_origins(&self, file: &RawConfig) -> Vec<(String, String)> {
        let overridden = |key: &str| self.overrides.iter().any(|(k, _)| k == key);
        let mut out: Vec<(String, String)> = self
            .pgcdc_vars(file)
            .into_iter()
            .filter(|(key, _, _)| !overridden(key))
            .map(|(key, var, _)| (key, var.to_string()))
            .collect();
        for (var, key) in PG_ENV {
            if !file.contains_key(key)
                && !overridden(key)
                && !out.iter().any(|(k, _)| k == key)
                && self.env.iter().any(|(k, _)| k == var)
            {
                out.push((key.to_string(), var.to_string()));
            }
        }
        out
    }

    /// Merges `file` with the environment and `--set` overrides (see the module docs).
    pub fn merge(&self, mut file: RawConfig) -> RawConfig {
        // 4. Standard PG variables fill database.* keys the file leaves out.
        for (var, key) in PG_ENV {
            if !file.contains_key(key) {
                if let Some((_, v)) = self.env.iter().find(|(k, _)| k == var) {
                    file.insert(key.to_string(), v.clone());
                }
            }
        }
        // 2. PGCDC_* variables.
        for (key, _, value) in self.pgcdc_vars(&file) {
            file.insert(key, value.to_string());
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

/// Adds "(set by VAR)" to each problem line of a config error that is about a key whose value
/// came from an environment variable (`origins` from [`ConfigSource::env_origins`]).
pub fn attribute_env_values(e: Error, origins: &[(String, String)]) -> Error {
    if origins.is_empty() || e.kind() != crate::error::ErrorKind::Config {
        return e;
    }
    let msg: Vec<String> = e
        .message()
        .lines()
        .map(|line| {
            let body = line.trim_start().strip_prefix("- ").unwrap_or("");
            match origins.iter().find(|(k, _)| {
                body.strip_prefix(k.as_str())
                    .is_some_and(|r| r.starts_with('=') || r.starts_with(' '))
            }) {
                Some((_, var)) => format!("{line} (set by {var})"),
                None => line.to_string(),
            }
        })
        .collect();
    Error::config(msg.join("\n"))
}
