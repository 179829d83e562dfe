//! The key policy, applied to every key before any value is read: a Debezium 1.x name is an
//! error naming its replacement, a key pgcdc does not implement is an error unless it holds
//! Debezium's default, an unknown key within [`TYPO_DISTANCE`] edits of a known key is an
//! error (a misspelt key would leave its setting at the default: `tabel.include.list` would
//! capture every table), any other unknown key is a warning naming the closest known key.
//! `pgcdc.accept.unknown.keys` lists unknown keys to take as they are, without a word (see
//! [`super::keys`]).

use super::checker::Checker;
use super::keys::{self, KeyStatus};

/// Checks every key of the configuration against the registry.
pub(super) fn check(c: &mut Checker<'_>) {
    let raw = c.raw;
    for (key, value) in raw {
        if let Some((_, now)) = keys::RENAMED.iter().find(|(old, _)| old == key) {
            c.problem(format!(
                "{key} was removed in Debezium 2.0 (which ignores it): use {now} instead"
            ));
            continue;
        }
        match keys::status(key) {
            Some(KeyStatus::Implemented) | Some(KeyStatus::Framework) => {}
            Some(KeyStatus::NotImplemented(default)) => not_implemented(c, key, value, default),
            Some(KeyStatus::JavaCode(default, instead)) => {
                java_code(c, key, value, default, instead)
            }
            None => unknown(c, key),
        }
    }
}

/// How many edits from a known key make an unknown key a typo of it.
pub const TYPO_DISTANCE: usize = 2;

/// An unknown key: accepted when listed in `pgcdc.accept.unknown.keys`, a problem when it is a
/// typo of a known key, a warning otherwise.
fn unknown(c: &mut Checker<'_>, key: &str) {
    let accepted = c
        .raw
        .get(keys::ACCEPT_UNKNOWN_KEYS)
        .is_some_and(|list| list.split(',').any(|k| k.trim() == key));
    if accepted {
        return;
    }
    let closest = keys::closest(key);
    let shown = match key.char_indices().nth(100) {
        Some((cut, _)) => format!("{}... ({} characters)", &key[..cut], key.len()),
        None => key.to_string(),
    };
    match closest {
        Some(k) if crate::util::levenshtein(key, k) <= TYPO_DISTANCE => c.problem(format!(
            "unknown configuration key {shown}: did you mean {k}? As written, its setting would be ignored. Fix the name, or list the key in {} to take it as it is",
            keys::ACCEPT_UNKNOWN_KEYS
        )),
        _ => {
            let hint = closest
                .map(|k| format!("; did you mean {k}?"))
                .unwrap_or_default();
            c.warn(format!("unknown configuration key {shown} is ignored{hint}"));
        }
    }
}

/// A key pgcdc does not implement: a problem unless `value` is Debezium's `default`.
fn not_implemented(c: &mut Checker<'_>, key: &str, value: &str, default: Option<&str>) {
    let is_default = default
        .map(|d| d.eq_ignore_ascii_case(value.trim()))
        .unwrap_or(false);
    if is_default {
        return;
    }
    let shown = if keys::is_secret(key) {
        "[hidden]"
    } else {
        value
    };
    let hint = match default {
        Some(d) if !d.is_empty() => format!("remove it or set it to Debezium's default {d:?}"),
        _ => "remove it".to_string(),
    };
    c.problem(format!(
        "{key}={shown} is a Debezium/Kafka Connect setting that pgcdc does not implement yet: {hint} (output would otherwise differ from Debezium's)"
    ));
}

/// A key naming Java plugin classes: a problem unless `value` is Debezium's `default`.
fn java_code(c: &mut Checker<'_>, key: &str, value: &str, default: Option<&str>, instead: &str) {
    if default.is_some_and(|d| d.eq_ignore_ascii_case(value.trim())) {
        return;
    }
    c.problem(format!(
        "{key}={value} names Java plugin code, which cannot run in pgcdc (a native program, not a Kafka Connect worker): {instead}"
    ));
}
