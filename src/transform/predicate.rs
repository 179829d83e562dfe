//! Kafka Connect predicates (`org.apache.kafka.connect.transforms.predicates.*`), which decide
//! per record whether a transform applies (`transforms.<alias>.predicate`, optionally
//! `transforms.<alias>.negate=true`).
//!
//! - `TopicNameMatches` (`pattern`, required, non-empty): the regex matches the whole topic;
//! - `HasHeaderKey` (`name`, required, non-empty): the record has at least one header `name`;
//! - `RecordIsTombstone` (no options): the record's value is null.

use regex::Regex;

use super::Options;
use crate::config::PredicateConfig;
use crate::event::ConnectRecord;

/// `org.apache.kafka.connect.transforms.predicates.TopicNameMatches`.
pub const TOPIC_NAME_MATCHES: &str =
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches";
/// `org.apache.kafka.connect.transforms.predicates.HasHeaderKey`.
pub const HAS_HEADER_KEY: &str = "org.apache.kafka.connect.transforms.predicates.HasHeaderKey";
/// `org.apache.kafka.connect.transforms.predicates.RecordIsTombstone`.
pub const RECORD_IS_TOMBSTONE: &str =
    "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone";
/// Every predicate class pgcdc implements.
pub const PREDICATE_TYPES: &[&str] = &[TOPIC_NAME_MATCHES, HAS_HEADER_KEY, RECORD_IS_TOMBSTONE];

/// A configured predicate.
#[derive(Debug, Clone)]
pub enum Predicate {
    /// The topic matches the regex entirely.
    TopicNameMatches(Regex),
    /// A header with this name exists.
    HasHeaderKey(String),
    /// The value is null.
    RecordIsTombstone,
}

impl Predicate {
    /// Parses a predicate of `class` from its options (`predicates.<alias>.*` without the
    /// prefix and without `type`). Errors name the full key.
    pub fn parse(
        class: &str,
        prefix: &str,
        opts: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, Vec<String>> {
        let mut o = Options::new(prefix, opts);
        let p = match class {
            TOPIC_NAME_MATCHES => {
                match o.get("pattern") {
                    None => {
                        o.problem("pattern", " is required: a regular expression matched against the whole topic name");
                        None
                    }
                    Some(p) => match crate::util::full_match_regex(p, false) {
                        Ok(re) => Some(Predicate::TopicNameMatches(re)),
                        Err(e) => {
                            o.problem(
                                "pattern",
                                format!(
                                    "={p} is not a regular expression pgcdc can compile (Java look-around and back-references are not supported): {e}"
                                ));
                            None
                        }
                    },
                }
            }
            HAS_HEADER_KEY => match o.get("name") {
                None => {
                    o.problem("name", " is required: the header name");
                    None
                }
                Some(n) => Some(Predicate::HasHeaderKey(n.to_string())),
            },
            RECORD_IS_TOMBSTONE => Some(Predicate::RecordIsTombstone),
            other => {
                let hint = crate::util::closest_of(other, PREDICATE_TYPES.iter().copied())
                    .map(|near| format!("; did you mean {near}?"))
                    .unwrap_or_default();
                return Err(vec![format!(
                    "{prefix}type={other} is not implemented: pgcdc supports {}{hint}",
                    PREDICATE_TYPES.join(", ")
                )]);
            }
        };
        let problems = o.finish(class);
        match p {
            Some(p) if problems.is_empty() => Ok(p),
            _ => Err(problems),
        }
    }

    /// Parses the configured predicate `c` (see [`Predicate::parse`]).
    pub fn from_config(c: &PredicateConfig) -> Result<Self, Vec<String>> {
        Predicate::parse(&c.class, &c.prefix(), &c.options)
    }

    /// Evaluates the predicate on `r`.
    pub fn test(&self, r: &ConnectRecord) -> bool {
        match self {
            Predicate::TopicNameMatches(re) => re.is_match(&r.topic),
            Predicate::HasHeaderKey(name) => r.headers.iter().any(|h| &*h.key == name.as_str()),
            Predicate::RecordIsTombstone => r.value.as_ref().is_none_or(|v| v.is_null()),
        }
    }
}
