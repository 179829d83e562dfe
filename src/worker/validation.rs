//! Kafka Connect's config validation (`PUT /connector-plugins/{class}/config/validate`): the
//! config checked as `pgcdc run` checks it, answered in Connect's shape, one entry per key
//! with the problems that name it.
//!
//! pgcdc's problems are sentences that start with (or name) their key; each goes to the entry
//! of the first key it names, or to `name` when it names none, so `error_count` is always the
//! number of problems.

use crate::config::keys::{self, KeyStatus};
use crate::config::RawConfig;
use crate::pipeline;

use super::view::masked;

/// One key's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedKey {
    /// The key.
    pub name: String,
    /// Its value in the request (secrets hidden), if given.
    pub value: Option<String>,
    /// The problems that name it.
    pub errors: Vec<String>,
    /// Connect's group: `Common` for the framework's keys, `Postgres` for the connector's.
    pub group: &'static str,
    /// Required with no default.
    pub required: bool,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validation {
    /// One entry per implemented key, then per other key of the request.
    pub configs: Vec<ValidatedKey>,
    /// Total problems.
    pub error_count: usize,
}

/// Keys Connect's own config defines (group `Common`).
const COMMON: &[&str] = &[
    keys::NAME,
    keys::CONNECTOR_CLASS,
    keys::TASKS_MAX,
    keys::KEY_CONVERTER,
    keys::VALUE_CONVERTER,
    keys::HEADER_CONVERTER,
    keys::TRANSFORMS,
    keys::PREDICATES,
];

/// Validates `raw` (config providers resolved from the environment) into Connect's shape.
pub fn validate(raw: &RawConfig) -> Validation {
    let resolved = crate::config::resolve_providers(raw, &|name| std::env::var(name).ok());
    let problems = match resolved {
        Ok(resolved) => pipeline::check_config(&resolved)
            .1
            .iter()
            .map(|p| super::without_cli_hints(p))
            .collect(),
        Err(e) => vec![e.message().to_string()],
    };
    let shown = masked(raw);
    let implemented = |k: &str| {
        keys::KEYS
            .iter()
            .any(|(n, s)| *n == k && *s == KeyStatus::Implemented)
    };
    let mut configs: Vec<ValidatedKey> = keys::KEYS
        .iter()
        .filter(|(k, _)| implemented(k))
        .map(|(k, _)| k.to_string())
        .chain(raw.keys().filter(|k| !implemented(k)).cloned())
        .map(|name| ValidatedKey {
            value: shown.get(&name).cloned(),
            errors: Vec::new(),
            group: if COMMON.contains(&name.as_str()) {
                "Common"
            } else {
                "Postgres"
            },
            required: name == keys::NAME,
            name,
        })
        .collect();
    let error_count = problems.len();
    for problem in problems {
        let at = owner(&problem, &configs);
        configs[at].errors.push(problem);
    }
    Validation {
        configs,
        error_count,
    }
}

/// The entry a problem goes to: the key it starts with, else the key it names first (the
/// longest of those named at one place), else `name`.
fn owner(problem: &str, configs: &[ValidatedKey]) -> usize {
    let first = problem.split(['=', ' ', ':']).next().unwrap_or("");
    if let Some(i) = configs.iter().position(|c| c.name == first) {
        return i;
    }
    let named = configs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            named_at(problem, &c.name).map(|at| (at, std::cmp::Reverse(c.name.len()), i))
        })
        .min();
    named
        .map(|(_, _, i)| i)
        .or_else(|| configs.iter().position(|c| c.name == keys::NAME))
        .unwrap_or(0)
}

/// Where `key` first appears in `text` as a whole word (not inside a longer key).
fn named_at(text: &str, key: &str) -> Option<usize> {
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    text.match_indices(key).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back();
        let after = text[i + key.len()..].chars().next();
        !before.is_some_and(is_key_char) && !after.is_some_and(|c| is_key_char(c) && c != '.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_goes_to_the_key_it_names_and_secrets_are_hidden() {
        let raw: RawConfig = [
            (keys::NAME, "x"),
            (keys::CONNECTOR_CLASS, crate::config::CONNECTOR_CLASS),
            (keys::SNAPSHOT_MODE, "bogus"),
            (keys::DATABASE_PASSWORD, "pw"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let v = validate(&raw);
        let entry = |k: &str| v.configs.iter().find(|c| c.name == k).unwrap();
        assert!(
            entry(keys::SNAPSHOT_MODE).errors[0].contains("bogus"),
            "{:?}",
            entry(keys::SNAPSHOT_MODE)
        );
        assert!(!entry(keys::DATABASE_HOSTNAME).errors.is_empty());
        assert_eq!(
            entry(keys::DATABASE_PASSWORD).value.as_deref(),
            Some("[hidden]")
        );
        let total: usize = v.configs.iter().map(|c| c.errors.len()).sum();
        assert_eq!(total, v.error_count);
        assert!(v.error_count >= 4, "{v:?}");
        assert_eq!(entry(keys::NAME).group, "Common");
    }
}
