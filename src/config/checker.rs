//! The value reader every area parser uses: typed getters over the raw configuration that
//! record a problem (naming the key, the value and what is allowed) instead of failing, so
//! that every problem of a config is reported at once.

use regex::Regex;

use super::{ConfigWarning, RawConfig};
use crate::util::{full_match_regex, split_regex_list};

/// Reads values of one raw configuration, collecting problems and warnings. Values are
/// trimmed; an empty value counts as unset (the default applies).
pub(super) struct Checker<'a> {
    pub(super) raw: &'a RawConfig,
    pub(super) problems: Vec<String>,
    pub(super) warnings: Vec<ConfigWarning>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(raw: &'a RawConfig) -> Self {
        Checker {
            raw,
            problems: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Records a problem.
    pub(super) fn problem(&mut self, msg: impl Into<String>) {
        self.problems.push(msg.into());
    }

    /// Records a warning.
    pub(super) fn warn(&mut self, msg: impl Into<String>) {
        self.warnings.push(ConfigWarning(msg.into()));
    }

    /// The trimmed value of `key`, `None` when unset.
    pub(super) fn get(&self, key: &str) -> Option<&'a str> {
        self.raw.get(key).map(|s| s.trim())
    }

    /// The value of `key`, or `default` when unset or empty.
    pub(super) fn string(&self, key: &str, default: &str) -> String {
        self.get(key)
            .filter(|s| !s.is_empty())
            .unwrap_or(default)
            .to_string()
    }

    /// The value of `key`; a problem ("`key` is required: `hint`") when unset or empty.
    pub(super) fn required(&mut self, key: &str, hint: &str) -> String {
        match self.get(key).filter(|s| !s.is_empty()) {
            Some(v) => v.to_string(),
            None => {
                self.problem(format!("{key} is required: {hint}"));
                String::new()
            }
        }
    }

    /// A boolean (`true`/`false`, any case).
    pub(super) fn boolean(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None | Some("") => default,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(v) => {
                self.problem(format!(
                    "{key}={v} is invalid: allowed values are true, false"
                ));
                default
            }
        }
    }

    /// An integer of at least `min`.
    pub(super) fn int<T: std::str::FromStr + Copy + PartialOrd + std::fmt::Display>(
        &mut self,
        key: &str,
        default: T,
        min: T,
    ) -> T {
        match self.get(key) {
            None | Some("") => default,
            Some(v) => match v.parse::<T>() {
                Ok(n) if n >= min => n,
                _ => {
                    self.problem(format!(
                        "{key}={v} is invalid: expected an integer >= {min}"
                    ));
                    default
                }
            },
        }
    }

    /// An enumerated value (names compared without case).
    pub(super) fn choice<T: Copy>(&mut self, key: &str, default: T, allowed: &[(&str, T)]) -> T {
        match self.get(key) {
            None | Some("") => default,
            Some(v) => match allowed
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(v))
            {
                Some((_, t)) => *t,
                None => {
                    let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
                    self.problem(format!(
                        "{key}={v} is invalid: allowed values are {}",
                        names.join(", ")
                    ));
                    default
                }
            },
        }
    }

    /// A comma-separated list of names (`a, b`): trimmed, empty items left out.
    pub(super) fn names(&self, key: &str) -> Vec<String> {
        self.get(key)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A comma-separated list of case-insensitive regular expressions that must match the
    /// whole name (`\,` for a comma).
    pub(super) fn regex_list(&mut self, key: &str) -> Vec<Regex> {
        let Some(v) = self.get(key).filter(|s| !s.is_empty()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for pattern in split_regex_list(v) {
            match full_match_regex(&pattern, true) {
                Ok(r) => out.push(r),
                Err(e) => self.problem(format!(
                    "{key}: {pattern:?} is not a valid regular expression: {e}"
                )),
            }
        }
        out
    }
}
