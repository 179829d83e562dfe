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

use regex::Regex;

use super::Options;
use crate::event::ConnectRecord;

/// A compiled replacement: literal text and group references.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    Group(usize),
}

/// A regex with a Java replacement, applied as `matches()` then `replaceFirst()`.
#[derive(Debug, Clone)]
pub struct TopicRewrite {
    full: Regex,
    find: Regex,
    pieces: Vec<Piece>,
}

impl TopicRewrite {
    /// Compiles `regex` and `replacement`; the error says what is wrong (without the key).
    pub fn new(regex: &str, replacement: &str) -> Result<Self, String> {
        let find = Regex::new(regex).map_err(|e| {
            format!("is not a regular expression pgcdc can compile (Java look-around and back-references are not supported): {e}")
        })?;
        let full = crate::util::full_match_regex(regex, false)
            .map_err(|e| format!("is not a regular expression pgcdc can compile: {e}"))?;
        let pieces = parse_replacement(&find, replacement)?;
        Ok(TopicRewrite { full, find, pieces })
    }

    /// The rewritten `input`, or `None` when the regex does not match all of it.
    pub fn rewrite(&self, input: &str) -> Option<String> {
        if !self.full.is_match(input) {
            return None;
        }
        let caps = self.find.captures(input)?;
        let m = caps.get(0)?;
        let mut out = String::with_capacity(input.len() + 16);
        out.push_str(&input[..m.start()]);
        for p in &self.pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Group(i) => {
                    if let Some(g) = caps.get(*i) {
                        out.push_str(g.as_str());
                    }
                }
            }
        }
        out.push_str(&input[m.end()..]);
        Some(out)
    }
}

/// Parses a Java `Matcher` replacement string against the groups of `re`.
fn parse_replacement(re: &Regex, s: &str) -> Result<Vec<Piece>, String> {
    let groups = re.captures_len() - 1;
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                i += 1;
                let Some(c) = chars.get(i) else {
                    return Err("ends with '\\': the character to be escaped is missing".into());
                };
                lit.push(*c);
                i += 1;
            }
            '$' => {
                i += 1;
                let Some(&c) = chars.get(i) else {
                    return Err("ends with '$': the group reference is missing".into());
                };
                let group = if c == '{' {
                    i += 1;
                    let start = i;
                    while chars.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                        i += 1;
                    }
                    let name: String = chars[start..i].iter().collect();
                    if name.is_empty() {
                        return Err("has a '${}' group reference with an empty name".into());
                    }
                    if chars.get(i) != Some(&'}') {
                        return Err(format!(
                            "has a '${{{name}' group reference without its '}}'"
                        ));
                    }
                    i += 1;
                    if name.starts_with(|c: char| c.is_ascii_digit()) {
                        return Err(format!("names group {{{name}}}, which starts with a digit"));
                    }
                    re.capture_names()
                        .position(|n| n == Some(name.as_str()))
                        .ok_or_else(|| {
                            format!("refers to group {{{name}}}, which the regex does not define")
                        })?
                } else {
                    let Some(d) = c.to_digit(10) else {
                        return Err(format!(
                            "has an illegal group reference '${c}' (write \\$ for a literal $)"
                        ));
                    };
                    let mut n = d as usize;
                    i += 1;
                    while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                        let next = n * 10 + d as usize;
                        if next > groups {
                            break;
                        }
                        n = next;
                        i += 1;
                    }
                    if n > groups {
                        return Err(format!(
                            "refers to group {n}, but the regex has {groups} group(s)"
                        ));
                    }
                    n
                };
                if !lit.is_empty() {
                    out.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                out.push(Piece::Group(group));
            }
            c => {
                lit.push(c);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

/// Kafka's RegexRouter.
#[derive(Debug, Clone)]
pub struct RegexRouter {
    rewrite: TopicRewrite,
}

impl RegexRouter {
    /// Reads `regex` and `replacement` (both required).
    pub fn parse(o: &mut Options<'_>) -> Option<Self> {
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
    pub fn apply(&self, mut r: ConnectRecord) -> ConnectRecord {
        if let Some(t) = self.rewrite.rewrite(&r.topic) {
            r.topic = t.into();
        }
        r
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
