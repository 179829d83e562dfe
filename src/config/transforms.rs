//! Single message transforms and predicates, read as Kafka Connect reads them: `transforms`
//! and `predicates` list aliases (no empty or repeated alias); every alias needs a `type`; a
//! transform's `predicate` must name a listed predicate; `negate` needs a `predicate`; a
//! `transforms.<alias>.*` or `predicates.<alias>.*` key of an unlisted alias is an error.
//!
//! The result is neutral data (class names and option maps): what each class's options mean
//! is `crate::transform`'s to parse and check.

use std::collections::BTreeMap;

use super::checker::Checker;
use super::keys::{PREDICATES, PREDICATES_PREFIX, TRANSFORMS, TRANSFORMS_PREFIX};
use super::RawConfig;

/// A configured predicate (`predicates.<alias>.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredicateConfig {
    /// The alias from `predicates`.
    pub alias: String,
    /// `predicates.<alias>.type`: the predicate class.
    pub class: String,
    /// The other `predicates.<alias>.*` keys, the prefix removed.
    pub options: BTreeMap<String, String>,
}

impl PredicateConfig {
    /// The prefix of this predicate's keys, `predicates.<alias>.`, for messages.
    pub fn prefix(&self) -> String {
        format!("{PREDICATES_PREFIX}{}.", self.alias)
    }
}

/// A configured single message transform (`transforms.<alias>.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformConfig {
    /// The alias from `transforms`.
    pub alias: String,
    /// `transforms.<alias>.type`: the transform class.
    pub class: String,
    /// The other `transforms.<alias>.*` keys, the prefix removed, without `type`,
    /// `predicate` and `negate`.
    pub options: BTreeMap<String, String>,
    /// `transforms.<alias>.predicate`: the predicate that selects the records transformed.
    pub predicate: Option<PredicateConfig>,
    /// `transforms.<alias>.negate`: apply the transform where the predicate is false.
    pub negate: bool,
}

impl TransformConfig {
    /// The prefix of this transform's keys, `transforms.<alias>.`, for messages.
    pub fn prefix(&self) -> String {
        format!("{TRANSFORMS_PREFIX}{}.", self.alias)
    }
}

/// Reads `predicates` then `transforms`: the transforms in `transforms` order, and every
/// listed predicate (a predicate no transform uses is still checked).
pub(super) fn parse(c: &mut Checker<'_>) -> (Vec<TransformConfig>, Vec<PredicateConfig>) {
    let predicate_aliases = alias_list(c, PREDICATES);
    let predicates = predicates(c, &predicate_aliases);
    unlisted_keys(
        c,
        PREDICATES_PREFIX,
        &predicate_aliases,
        "predicate",
        PREDICATES,
    );

    let aliases = alias_list(c, TRANSFORMS);
    if aliases.is_empty() {
        if let Some(k) = c.raw.keys().find(|k| k.starts_with(TRANSFORMS_PREFIX)) {
            c.problem(format!(
                "{k} is set but {TRANSFORMS} is empty: list the transform aliases in {TRANSFORMS}"
            ));
        }
        return (Vec::new(), predicates);
    }
    let transforms = aliases
        .iter()
        .filter_map(|alias| transform(c, alias, &predicate_aliases, &predicates))
        .collect();
    unlisted_keys(c, TRANSFORMS_PREFIX, &aliases, "transform", TRANSFORMS);
    (transforms, predicates)
}

/// The listed predicates that have a `type`.
fn predicates(c: &mut Checker<'_>, aliases: &[String]) -> Vec<PredicateConfig> {
    let mut out = Vec::new();
    for alias in aliases {
        let prefix = format!("{PREDICATES_PREFIX}{alias}.");
        let type_key = format!("{prefix}type");
        let Some(class) = c.get(&type_key).filter(|s| !s.is_empty()) else {
            c.problem(format!(
                "{type_key} is required: the class of predicate {alias:?}"
            ));
            continue;
        };
        out.push(PredicateConfig {
            alias: alias.clone(),
            class: class.to_string(),
            options: options_under(c.raw, &prefix, &["type"]),
        });
    }
    out
}

/// The transform `alias`, `None` when it has no `type`.
fn transform(
    c: &mut Checker<'_>,
    alias: &str,
    predicate_aliases: &[String],
    predicates: &[PredicateConfig],
) -> Option<TransformConfig> {
    let prefix = format!("{TRANSFORMS_PREFIX}{alias}.");
    let type_key = format!("{prefix}type");
    let Some(class) = c.get(&type_key).filter(|s| !s.is_empty()) else {
        c.problem(format!(
            "{type_key} is required: the class of transform {alias:?}"
        ));
        return None;
    };
    let negate_key = format!("{prefix}negate");
    let negate = c.boolean(&negate_key, false);
    let predicate = match c
        .get(&format!("{prefix}predicate"))
        .filter(|s| !s.is_empty())
    {
        None => {
            if c.get(&negate_key).is_some() {
                c.problem(format!(
                    "{negate_key} is set but there is no {prefix}predicate defining a predicate to negate"
                ));
            }
            None
        }
        Some(p) => {
            if !predicate_aliases.iter().any(|a| a == p) {
                c.problem(format!(
                    "{prefix}predicate={p} names a predicate that is not listed in {PREDICATES}"
                ));
            }
            // A listed predicate without a type is reported above.
            predicates.iter().find(|d| d.alias == p).cloned()
        }
    };
    Some(TransformConfig {
        alias: alias.to_string(),
        class: class.to_string(),
        options: options_under(c.raw, &prefix, &["type", "predicate", "negate"]),
        predicate,
        negate,
    })
}

/// Splits a Connect alias list (`a, b`), reporting empty and duplicate aliases.
fn alias_list(c: &mut Checker<'_>, key: &str) -> Vec<String> {
    let Some(list) = c.get(key).filter(|s| !s.is_empty()) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for a in list.split(',').map(str::trim) {
        if a.is_empty() {
            c.problem(format!("{key}={list} has an empty alias"));
        } else if out.iter().any(|x| x == a) {
            c.problem(format!("{key}={list} lists alias {a:?} twice"));
        } else {
            out.push(a.to_string());
        }
    }
    out
}

/// Reports each `<prefix><alias>.*` key whose alias is not in `aliases` (`what`: transform
/// or predicate, listed in `list_key`). Kafka Connect matches `<prefix><alias>.` as a prefix,
/// so an alias may hold dots.
pub(super) fn unlisted_keys(
    c: &mut Checker<'_>,
    prefix: &str,
    aliases: &[String],
    what: &str,
    list_key: &str,
) {
    let raw = c.raw;
    for k in raw.keys() {
        let Some(rest) = k.strip_prefix(prefix) else {
            continue;
        };
        let listed = aliases.iter().any(|a| {
            rest.strip_prefix(a.as_str())
                .is_some_and(|r| r.starts_with('.'))
        });
        if !listed {
            let alias = rest.split('.').next().unwrap_or("");
            c.problem(format!(
                "{k} belongs to {what} {alias:?}, which is not listed in {list_key}"
            ));
        }
    }
}

/// The options under `<prefix>` (prefix removed), without `skip`.
fn options_under(raw: &RawConfig, prefix: &str, skip: &[&str]) -> BTreeMap<String, String> {
    raw.iter()
        .filter_map(|(k, v)| {
            let opt = k.strip_prefix(prefix)?;
            (!skip.contains(&opt)).then(|| (opt.to_string(), v.clone()))
        })
        .collect()
}
