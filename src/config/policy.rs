//! The key policy, applied to every key before any value is read: a Debezium 1.x name is an
//! error naming its replacement, a key pgcdc does not implement is an error unless it holds
//! Debezium's default, an unknown key is a warning naming the closest known key (see
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
            None => {
                let hint = keys::closest(key)
                    .map(|k| format!("; did you mean {k}?"))
                    .unwrap_or_default();
                let shown = match key.char_indices().nth(100) {
                    Some((cut, _)) => format!("{}... ({} characters)", &key[..cut], key.len()),
                    None => key.clone(),
                };
                c.warn(format!(
                    "unknown configuration key {shown} is ignored{hint}"
                ));
            }
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
