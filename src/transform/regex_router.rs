//! Kafka's `org.apache.kafka.connect.transforms.RegexRouter`, and the Java-style regex
//! replacement it (and the outbox EventRouter) uses.
//!
//! Options: `regex` (required) and `replacement` (required). When the regex matches the
//! **whole** topic, the topic becomes the topic with its first match replaced by
//! `replacement` (Java `Matcher.replaceFirst`); otherwise the record is unchanged.
//! Replacement syntax is Java's: `$n` (digits taken while they name an existing group),
//! `${name}`, `\x` for a literal `x`; a group that did not participate adds nothing.
//!
//! Regexes are compiled with Rust's `regex` crate, which accepts Java's common syntax
//! (including `(?<name>...)`) but not look-around or back-references: such a regex is a startup
//! error naming the key.

pub use crate::util::TopicRewrite;

use super::{Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::ConnectRecord;

/// Kafka's RegexRouter.
#[derive(Debug, Clone)]
pub struct RegexRouter {
    rewrite: TopicRewrite,
}

impl Transformation for RegexRouter {
    /// Reads `regex` and `replacement` (both required).
    fn parse(_: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let regex = o.raw("regex");
        let replacement = o.raw("replacement");
        let (Some(regex), Some(replacement)) = (regex, replacement) else {
            if regex.is_none() {
                o.problem(
                    "regex",
                    " is required: the regular expression matched against the topic",
                );
            }
            if replacement.is_none() {
                o.problem(
                    "replacement",
                    " is required: the new topic, with $1 or ${name} group references",
                );
            }
            return None;
        };
        match TopicRewrite::new(regex, replacement) {
            Ok(rewrite) => Some(RegexRouter { rewrite }),
            Err(e) => {
                let which = if e.contains("regular expression") {
                    "regex"
                } else {
                    "replacement"
                };
                let v = if which == "regex" { regex } else { replacement };
                o.problem(which, format!("={v} {e}"));
                None
            }
        }
    }

    /// Reroutes the record when its topic matches; headers, key, value and timestamp stay.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if let Some(t) = self.rewrite.rewrite(&r.topic) {
            r.topic = t.into();
        }
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        RecordKind::ALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(re: &str, rep: &str, input: &str) -> Option<String> {
        TopicRewrite::new(re, rep).unwrap().rewrite(input)
    }

    #[test]
    fn replaces_the_first_match_only_when_the_whole_topic_matches() {
        assert_eq!(
            rw("(.*)\\.public\\.(.*)", "$1.$2", "db.public.t"),
            Some("db.t".into())
        );
        assert_eq!(rw("public", "x", "db.public.t"), None, "not a full match");
        assert_eq!(
            rw(
                "(?<routedByValue>.*)",
                "outbox.event.${routedByValue}",
                "Order"
            ),
            Some("outbox.event.Order".into())
        );
        // matches() succeeds on "ab" but replaceFirst() finds the leftmost-first match "a".
        assert_eq!(rw("a|ab", "X", "ab"), Some("Xb".into()));
        assert_eq!(
            rw("(a)|(b)", "[$2]", "a"),
            Some("[]".into()),
            "unmatched group adds nothing"
        );
    }

    #[test]
    fn java_replacement_syntax() {
        assert_eq!(
            rw("(a)(b)", "$12", "ab"),
            Some("a2".into()),
            "$12 is $1 then 2 with 2 groups"
        );
        assert_eq!(rw("(a)", "\\$1\\\\", "a"), Some("$1\\".into()));
        for (re, rep) in [
            ("(a)", "$2"),
            ("(a)", "${x}"),
            ("(a)", "$"),
            ("(a)", "\\"),
            ("(a)", "$x"),
        ] {
            assert!(TopicRewrite::new(re, rep).is_err(), "{rep}");
        }
        assert!(TopicRewrite::new(" [[a-z]", "x").is_err());
        assert!(
            TopicRewrite::new("(?=a)a", "x").is_err(),
            "look-ahead is rejected at startup"
        );
    }
}
