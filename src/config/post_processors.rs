//! `post.processors`: Debezium's post processors, of which pgcdc runs the one that needs no Java
//! code of its own, `io.debezium.processors.reselect.ReselectColumnsPostProcessor`
//! (`post.processors=<name>`, `post.processors.<name>.type`, `post.processors.<name>.<option>`,
//! Debezium's current convention). Any other class is Java code and refused; so is a listed
//! name without its `type`, and a `post.processors.<name>.*` key of an unlisted name.

use regex::Regex;

use super::checker::Checker;
use super::keys::{POST_PROCESSORS, POST_PROCESSORS_PREFIX};

/// `io.debezium.processors.reselect.ReselectColumnsPostProcessor`.
pub const RESELECT_COLUMNS: &str = "io.debezium.processors.reselect.ReselectColumnsPostProcessor";

/// A ReselectColumnsPostProcessor's options.
#[derive(Debug, Clone)]
pub struct ReselectConfig {
    /// The name it is listed under in `post.processors`.
    pub name: String,
    /// `reselect.columns.include.list`: regexes on `<schema>.<table>:<column>` (any case).
    pub include: Vec<Regex>,
    /// `reselect.columns.exclude.list`, the same form.
    pub exclude: Vec<Regex>,
    /// `reselect.unavailable.values` (default true): re-read unchanged TOASTed values.
    pub unavailable: bool,
    /// `reselect.null.values` (default true): re-read null values.
    pub nulls: bool,
    /// `reselect.use.event.key` (default false): find the row by the event key's columns
    /// (which `message.key.columns` may choose) instead of the table's primary key.
    pub use_event_key: bool,
    /// `reselect.error.handling.mode=fail`: a failed or empty re-select stops the connector;
    /// `warn` (the default) logs it and keeps the event's values.
    pub fail: bool,
}

impl ReselectConfig {
    /// Whether column `column` of `schema.table` may be re-selected.
    pub fn selects(&self, schema: &str, table: &str, column: &str) -> bool {
        let name = format!("{schema}.{table}:{column}");
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(&name)))
            && !self.exclude.iter().any(|r| r.is_match(&name))
    }
}

/// Reads `post.processors` and the options of each listed processor.
pub(super) fn parse(c: &mut Checker<'_>) -> Vec<ReselectConfig> {
    let names = c.names(POST_PROCESSORS);
    super::transforms::unlisted_keys(
        c,
        POST_PROCESSORS_PREFIX,
        &names,
        "post processor",
        POST_PROCESSORS,
    );
    let raw = c.raw;
    let mut out = Vec::new();
    for name in names {
        let p = format!("{POST_PROCESSORS_PREFIX}{name}.");
        let type_key = format!("{p}type");
        match c.get(&type_key) {
            Some(RESELECT_COLUMNS) => {}
            None | Some("") => {
                c.problem(format!(
                    "{type_key} is required: the class of post processor {name:?} ({RESELECT_COLUMNS})"
                ));
                continue;
            }
            Some(other) => {
                c.problem(format!(
                    "{type_key}={other} names Java plugin code, which cannot run in pgcdc (a native program, not a Kafka Connect worker): pgcdc runs {RESELECT_COLUMNS}"
                ));
                continue;
            }
        }
        let known = [
            "type",
            "reselect.columns.include.list",
            "reselect.columns.exclude.list",
            "reselect.unavailable.values",
            "reselect.null.values",
            "reselect.use.event.key",
            "reselect.error.handling.mode",
        ];
        for k in raw.keys() {
            if let Some(opt) = k.strip_prefix(&p) {
                if !known.contains(&opt) {
                    let hint = crate::util::closest_of(opt, known.iter().copied())
                        .map(|near| format!("; did you mean {p}{near}?"))
                        .unwrap_or_default();
                    c.problem(format!(
                        "{k} is not an option of ReselectColumnsPostProcessor (Debezium 3.6.1){hint}"
                    ));
                }
            }
        }
        let include = c.regex_list(&format!("{p}reselect.columns.include.list"));
        let exclude = c.regex_list(&format!("{p}reselect.columns.exclude.list"));
        if !include.is_empty() && !exclude.is_empty() {
            c.problem(format!(
                "{p}reselect.columns.include.list and {p}reselect.columns.exclude.list are both set: use one"
            ));
        }
        let unavailable = c.boolean(&format!("{p}reselect.unavailable.values"), true);
        let nulls = c.boolean(&format!("{p}reselect.null.values"), true);
        if !unavailable && !nulls {
            c.warn(format!(
                "post processor {name:?} re-selects neither unavailable nor null values: it does nothing"
            ));
        }
        out.push(ReselectConfig {
            name: name.clone(),
            include,
            exclude,
            unavailable,
            nulls,
            use_event_key: c.boolean(&format!("{p}reselect.use.event.key"), false),
            fail: c.choice(
                &format!("{p}reselect.error.handling.mode"),
                false,
                &[("warn", false), ("fail", true)],
            ),
        });
    }
    out
}
