//! Single message transforms and predicates, applied as Kafka Connect applies them: in
//! `transforms` order, each one only to the records its predicate (optionally negated)
//! selects. Pure functions of records and config: no I/O.
//!
//! Implemented transforms: Debezium's outbox `EventRouter` ([`outbox`]) and
//! `ExtractNewRecordState` ([`unwrap`]), Kafka's `RegexRouter` ([`regex_router`]) and Kafka's
//! other built-in transforms ([`builtin`]: `InsertField`, `ReplaceField`, `MaskField`,
//! `ValueToKey`, `ExtractField`, `HoistField`, `Flatten`, `Cast`, `SetSchemaMetadata`,
//! `Filter`, `InsertHeader`, `DropHeaders`, `HeaderFrom`, `TimestampConverter`,
//! `TimestampRouter`), and Debezium's
//! `ByLogicalTableRouter` ([`logical_table`]), `HeaderToValue` ([`headers`]) and
//! `PartitionRouting` ([`partition_routing`]). Predicates:
//! Kafka's `TopicNameMatches`, `HasHeaderKey` and `RecordIsTombstone` ([`predicate`]).
//! Options are parsed and checked here, at startup ([`validate`], from the neutral
//! [`TransformConfig`] and [`PredicateConfig`] that [`crate::config`] reads as Kafka Connect
//! does); an option pgcdc does not implement is a startup error naming it, never ignored.

pub mod builtin;
pub mod cast;
pub mod date_format;
pub mod fields;
pub mod flatten;
pub mod headers;
pub mod json_expand;
pub mod logical_table;
pub mod outbox;
pub mod partition_routing;
pub mod predicate;
pub mod regex_router;
pub mod side;
pub mod timestamp;
pub mod unwrap;

use std::collections::BTreeMap;

use crate::config::{ConfigWarning, PredicateConfig, TransformConfig};
use crate::error::{Error, Result};
use crate::event::{ConnectRecord, Schema, Value};

/// `io.debezium.transforms.outbox.EventRouter`.
pub const EVENT_ROUTER: &str = "io.debezium.transforms.outbox.EventRouter";
/// `io.debezium.transforms.ExtractNewRecordState`.
pub const EXTRACT_NEW_RECORD_STATE: &str = "io.debezium.transforms.ExtractNewRecordState";
/// `org.apache.kafka.connect.transforms.RegexRouter`.
pub const REGEX_ROUTER: &str = "org.apache.kafka.connect.transforms.RegexRouter";
/// The problem for an unknown transform class: the closest known class when the name looks
/// like a typo of one, `$Key`/`$Value` when the class needs a side, else every class.
fn unknown_type(prefix: &str, class: &str) -> String {
    let types = transform_types();
    let sides: Vec<&String> = types
        .iter()
        .filter(|t| {
            t.strip_prefix(class)
                .is_some_and(|rest| rest.starts_with('$'))
        })
        .collect();
    if !sides.is_empty() {
        let list: Vec<&str> = sides.iter().map(|s| s.as_str()).collect();
        return format!(
            "{prefix}type={class} needs the part of the record it works on: use {}",
            list.join(" or ")
        );
    }
    match crate::util::closest_of(class, types.iter().map(String::as_str)) {
        Some(near) => {
            format!("{prefix}type={class} is not a transform pgcdc knows; did you mean {near}?")
        }
        None => format!(
            "{prefix}type={class} is not implemented: pgcdc supports {}",
            types.join(", ")
        ),
    }
}

/// Every transform class pgcdc implements, fully qualified.
pub fn transform_types() -> Vec<String> {
    let mut out: Vec<String> = [
        EVENT_ROUTER,
        EXTRACT_NEW_RECORD_STATE,
        logical_table::BY_LOGICAL_TABLE_ROUTER,
        headers::HEADER_TO_VALUE,
        partition_routing::PARTITION_ROUTING,
        REGEX_ROUTER,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    out.extend(builtin::class_names());
    out
}

/// A transform's options, parsed and validated at startup.
#[derive(Debug, Clone)]
pub enum TransformSpec {
    /// The outbox EventRouter.
    EventRouter(outbox::RouterOptions),
    /// ExtractNewRecordState.
    ExtractNewRecordState(unwrap::UnwrapOptions),
    /// RegexRouter.
    RegexRouter(regex_router::RegexRouter),
    /// One of Kafka Connect's other built-in transforms.
    Builtin(builtin::Builtin),
    /// Debezium's ByLogicalTableRouter.
    ByLogicalTableRouter(logical_table::ByLogicalTableRouter),
    /// Debezium's HeaderToValue.
    HeaderToValue(headers::HeaderToValue),
    /// Debezium's PartitionRouting.
    PartitionRouting(partition_routing::PartitionRouting),
}

impl TransformSpec {
    /// Parses the options of a transform of class `class` (`opts` are the
    /// `transforms.<alias>.*` keys without that prefix, `type`, `predicate` and `negate`
    /// removed). Returns the spec and warnings (options set to no effect); errors list every
    /// problem, each naming its full key.
    pub fn parse(
        class: &str,
        prefix: &str,
        opts: &BTreeMap<String, String>,
    ) -> std::result::Result<(Self, Vec<String>), Vec<String>> {
        let mut o = Options::new(prefix, opts);
        let alias = prefix
            .strip_prefix(crate::config::keys::TRANSFORMS_PREFIX)
            .unwrap_or(prefix)
            .trim_end_matches('.');
        let spec = match class {
            EVENT_ROUTER => outbox::RouterOptions::parse(&mut o).map(TransformSpec::EventRouter),
            EXTRACT_NEW_RECORD_STATE => {
                unwrap::UnwrapOptions::parse(&mut o).map(TransformSpec::ExtractNewRecordState)
            }
            REGEX_ROUTER => {
                regex_router::RegexRouter::parse(&mut o).map(TransformSpec::RegexRouter)
            }
            logical_table::BY_LOGICAL_TABLE_ROUTER => {
                logical_table::ByLogicalTableRouter::parse(alias, &mut o)
                    .map(TransformSpec::ByLogicalTableRouter)
            }
            headers::HEADER_TO_VALUE => {
                headers::HeaderToValue::parse(alias, &mut o).map(TransformSpec::HeaderToValue)
            }
            partition_routing::PARTITION_ROUTING => {
                partition_routing::PartitionRouting::parse(alias, &mut o)
                    .map(TransformSpec::PartitionRouting)
            }
            other => match builtin::Builtin::parse(other, alias, &mut o) {
                Some(b) => b.map(TransformSpec::Builtin),
                None => return Err(vec![unknown_type(prefix, other)]),
            },
        };
        let warnings = std::mem::take(&mut o.warnings);
        let problems = o.finish(class);
        match spec {
            Some(s) if problems.is_empty() => Ok((s, warnings)),
            _ => Err(problems),
        }
    }

    /// Parses the options of the configured transform `c` (see [`TransformSpec::parse`]).
    pub fn from_config(
        c: &TransformConfig,
    ) -> std::result::Result<(Self, Vec<String>), Vec<String>> {
        TransformSpec::parse(&c.class, &c.prefix(), &c.options)
    }
}

/// Checks the options of every listed predicate and of every transform, as their classes
/// define them. Returns the problems (each naming its full key: predicates first, then
/// transforms, in config order) and the warnings (options set that have no effect; only for
/// transforms without problems).
pub fn validate(
    transforms: &[TransformConfig],
    predicates: &[PredicateConfig],
) -> (Vec<String>, Vec<ConfigWarning>) {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    for p in predicates {
        if let Err(e) = predicate::Predicate::from_config(p) {
            problems.extend(e);
        }
    }
    for t in transforms {
        match TransformSpec::from_config(t) {
            Ok((_, notes)) => warnings.extend(notes.into_iter().map(ConfigWarning)),
            Err(e) => problems.extend(e),
        }
    }
    (problems, warnings)
}

/// A configured transform with its runtime state (schema caches).
#[derive(Debug)]
pub enum Transform {
    /// Debezium's outbox EventRouter (boxed: it carries its options and caches).
    EventRouter(Box<outbox::EventRouter>),
    /// Debezium's ExtractNewRecordState.
    ExtractNewRecordState(unwrap::ExtractNewRecordState),
    /// Kafka's RegexRouter.
    RegexRouter(regex_router::RegexRouter),
    /// Kafka's other built-in transforms.
    Builtin(builtin::Builtin),
    /// Debezium's ByLogicalTableRouter.
    ByLogicalTableRouter(logical_table::ByLogicalTableRouter),
    /// Debezium's HeaderToValue.
    HeaderToValue(headers::HeaderToValue),
    /// Debezium's PartitionRouting.
    PartitionRouting(partition_routing::PartitionRouting),
}

impl Transform {
    /// Applies the transform; `Ok(None)` drops the record.
    pub fn apply(&mut self, r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        match self {
            Transform::EventRouter(t) => t.apply(r),
            Transform::ExtractNewRecordState(t) => t.apply(r),
            Transform::RegexRouter(t) => Ok(Some(t.apply(r))),
            Transform::Builtin(t) => t.apply(r),
            Transform::ByLogicalTableRouter(t) => t.apply(r),
            Transform::HeaderToValue(t) => t.apply(r),
            Transform::PartitionRouting(t) => t.apply(r),
        }
    }
}

/// One stage of a chain: a transform, and the predicate that decides whether it applies.
#[derive(Debug)]
pub struct Stage {
    /// The alias from `transforms`.
    pub alias: String,
    transform: Transform,
    predicate: Option<predicate::Predicate>,
    negate: bool,
}

impl Stage {
    /// Builds the stage from its config. Errors (a config error listing the problems) only
    /// for a config that [`validate`] would have refused.
    pub fn from_config(c: &TransformConfig) -> Result<Self> {
        let not_validated = |problems: Vec<String>| {
            Error::config(format!(
                "transform {:?} cannot be built: {}",
                c.alias,
                problems.join("; ")
            ))
        };
        let (spec, _) = TransformSpec::from_config(c).map_err(not_validated)?;
        let predicate = c
            .predicate
            .as_ref()
            .map(predicate::Predicate::from_config)
            .transpose()
            .map_err(not_validated)?;
        let transform = match spec {
            TransformSpec::EventRouter(o) => {
                Transform::EventRouter(Box::new(outbox::EventRouter::new(&c.alias, o)))
            }
            TransformSpec::ExtractNewRecordState(o) => {
                Transform::ExtractNewRecordState(unwrap::ExtractNewRecordState::new(&c.alias, o))
            }
            TransformSpec::RegexRouter(r) => Transform::RegexRouter(r),
            TransformSpec::Builtin(b) => Transform::Builtin(b),
            TransformSpec::ByLogicalTableRouter(t) => Transform::ByLogicalTableRouter(t),
            TransformSpec::HeaderToValue(t) => Transform::HeaderToValue(t),
            TransformSpec::PartitionRouting(t) => Transform::PartitionRouting(t),
        };
        Ok(Stage {
            alias: c.alias.clone(),
            transform,
            predicate,
            negate: c.negate,
        })
    }

    /// Applies the transform when there is no predicate, or when the predicate's result
    /// differs from `negate` (Kafka Connect's rule); otherwise passes the record on unchanged.
    pub fn apply(&mut self, r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        let selected = match &self.predicate {
            None => true,
            Some(p) => p.test(&r) != self.negate,
        };
        if selected {
            self.transform.apply(r)
        } else {
            Ok(Some(r))
        }
    }
}

/// Builds the chain of `configs`, in order. Errors (a config error) only for a config that
/// [`validate`] would have refused.
pub fn build_chain(configs: &[TransformConfig]) -> Result<Vec<Stage>> {
    configs.iter().map(Stage::from_config).collect()
}

/// Applies `chain` in order; stops at the first stage that drops the record.
pub fn apply_chain(chain: &mut [Stage], mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
    for s in chain.iter_mut() {
        match s.apply(r)? {
            Some(next) => r = next,
            None => return Ok(None),
        }
    }
    Ok(Some(r))
}

/// Option reader for one transform or predicate, collecting every problem. Values are
/// trimmed; an empty value counts as unset (the option's default applies).
#[derive(Debug)]
pub struct Options<'a> {
    prefix: String,
    values: &'a BTreeMap<String, String>,
    seen: Vec<String>,
    /// Problems found so far, each naming the full key.
    pub problems: Vec<String>,
    /// Options that are set but have no effect, each naming the full key and why.
    pub warnings: Vec<String>,
}

impl<'a> Options<'a> {
    /// A reader of `values` (option name → value) whose keys are shown as `<prefix><option>`.
    pub fn new(prefix: &str, values: &'a BTreeMap<String, String>) -> Self {
        Options {
            prefix: prefix.to_string(),
            values,
            seen: Vec::new(),
            problems: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Warns that option `name`, when set, has no effect unless `condition` holds; `needs`
    /// says what it needs.
    pub fn needs(&mut self, name: &str, condition: bool, needs: &str) {
        if !condition && self.values.get(name).is_some_and(|v| !v.trim().is_empty()) {
            let key = self.key(name);
            self.warnings
                .push(format!("{key} has no effect without {needs}"));
        }
    }

    /// Whether an option is set that was not read so far (`finish` will report it as
    /// unknown): a check that no option is set can then stay quiet, the typo being the problem.
    pub fn has_unread(&self) -> bool {
        self.values
            .keys()
            .any(|k| !self.seen.iter().any(|s| s == k))
    }

    /// The full key of `name`.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Records a problem about option `name`.
    pub fn problem(&mut self, name: &str, msg: impl std::fmt::Display) {
        let key = self.key(name);
        self.problems.push(format!("{key}{msg}"));
    }

    /// The raw (trimmed) value of `name`, `None` when unset; marks the option as known.
    pub fn raw(&mut self, name: &str) -> Option<&'a str> {
        self.seen.push(name.to_string());
        self.values.get(name).map(|v| v.trim())
    }

    /// The value of `name`, `None` when unset or empty.
    pub fn get(&mut self, name: &str) -> Option<&'a str> {
        self.raw(name).filter(|v| !v.is_empty())
    }

    /// The value of `name`, or `default`.
    pub fn string(&mut self, name: &str, default: &str) -> String {
        self.get(name).unwrap_or(default).to_string()
    }

    /// A boolean option (`true`/`false`, any case).
    pub fn boolean(&mut self, name: &str, default: bool) -> bool {
        match self.get(name) {
            None => default,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(v) => {
                self.problem(
                    name,
                    format!("={v} is invalid: allowed values are true, false"),
                );
                default
            }
        }
    }

    /// An enumerated option (names compared without case).
    pub fn choice<T: Copy>(&mut self, name: &str, default: T, allowed: &[(&str, T)]) -> T {
        match self.get(name) {
            None => default,
            Some(v) => match allowed.iter().find(|(n, _)| n.eq_ignore_ascii_case(v)) {
                Some((_, t)) => *t,
                None => {
                    let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
                    self.problem(
                        name,
                        format!("={v} is invalid: allowed values are {}", names.join(", ")),
                    );
                    default
                }
            },
        }
    }

    /// Accepts option `name` only at `default` (or unset): pgcdc does not implement other
    /// values, and `why` says why.
    pub fn only_default(&mut self, name: &str, default: &str, why: &str) {
        if let Some(v) = self.get(name) {
            if !v.eq_ignore_ascii_case(default) {
                self.problem(
                    name,
                    format!(
                        "={v} is not implemented by pgcdc ({why}): remove it or set Debezium's default {default:?}"),
                );
            }
        }
    }

    /// Ends parsing: every option that was never read is reported as unknown to `class`.
    pub fn finish(mut self, class: &str) -> Vec<String> {
        for k in self.values.keys() {
            if !self.seen.iter().any(|s| s == k) {
                let hint = crate::util::closest_of(k, self.seen.iter().map(String::as_str))
                    .map(|s| format!("; did you mean {}{s}?", self.prefix))
                    .unwrap_or_default();
                self.problems.push(format!(
                    "{}{k} is not an option of {class} (Debezium 3.6.1 / Kafka 4){hint}",
                    self.prefix
                ));
            }
        }
        self.problems
    }
}

/// `true` when the record's value schema is a Debezium change-event envelope (its name ends
/// in `.Envelope`), as Debezium's `SmtManager.isValidEnvelope` decides.
pub(crate) fn is_envelope(r: &ConnectRecord) -> bool {
    r.value_schema
        .as_ref()
        .and_then(|s| s.name.as_deref())
        .is_some_and(|n| n.ends_with(".Envelope"))
}

/// Field `name` of a struct value: its schema and value. `None` when the schema has no such
/// field (a positional value shorter than the schema reads as null).
pub(crate) fn field<'a>(
    schema: &'a Schema,
    value: &'a Value,
    name: &str,
) -> Option<(&'a Schema, &'a Value)> {
    let i = schema.field_index(name)?;
    let v = match value {
        Value::Struct(vs) => vs.get(i).unwrap_or(&Value::Null),
        _ => &Value::Null,
    };
    Some((&schema.fields[i].schema, v))
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use crate::event::{Op, SchemaType, Value};

    fn outbox_and_orders() -> (
        std::sync::Arc<crate::event::TableDescriptor>,
        std::sync::Arc<crate::event::TableDescriptor>,
    ) {
        (
            table("public", "outbox", outbox_columns()),
            table(
                "public",
                "orders",
                vec![
                    col("id", SchemaType::Int32, false),
                    col("total", SchemaType::Int64, true),
                ],
            ),
        )
    }

    fn outbox_row(agg: &str) -> Vec<Value> {
        vec![
            s("6f1c2d3e-0000-4000-8000-000000000001"),
            s(agg),
            s("1"),
            s("T"),
            s("{}"),
            Value::Null,
        ]
    }

    #[test]
    fn predicates_select_records_and_negate_inverts_them() {
        let (outbox, orders) = outbox_and_orders();
        let mut c = chain(&[
            ("transforms", "outbox,unwrap,rename"),
            ("transforms.outbox.type", super::EVENT_ROUTER),
            ("transforms.outbox.predicate", "isOutbox"),
            ("transforms.unwrap.type", super::EXTRACT_NEW_RECORD_STATE),
            ("transforms.unwrap.predicate", "isOutbox"),
            ("transforms.unwrap.negate", "true"),
            ("transforms.rename.type", super::REGEX_ROUTER),
            ("transforms.rename.regex", "outbox\\.event\\.(.*)"),
            ("transforms.rename.replacement", "events.$1"),
            ("predicates", "isOutbox"),
            (
                "predicates.isOutbox.type",
                super::predicate::TOPIC_NAME_MATCHES,
            ),
            ("predicates.isOutbox.pattern", "db\\.public\\.outbox"),
        ]);
        let mut recs = vec![super::testutil::insert(&outbox, outbox_row("Order"))];
        recs.extend(records(
            &orders,
            Op::Create,
            None,
            Some(vec![Value::Int(7), Value::Int(10)]),
            1,
        ));
        recs.extend(records(
            &orders,
            Op::Delete,
            Some(vec![Value::Int(7), Value::Int(10)]),
            None,
            1,
        ));
        let out = run(&mut c, recs);
        let summary: Vec<(String, Option<String>)> = out
            .iter()
            .map(|r| (r.topic.to_string(), render(r, false).1))
            .collect();
        assert_eq!(
            summary,
            [
                ("events.Order".to_string(), Some(r#""{}""#.to_string())),
                (
                    "db.public.orders".to_string(),
                    Some(r#"{"id":7,"total":10}"#.to_string())
                ),
                ("db.public.orders".to_string(), Some("null".to_string())),
            ]
        );
    }

    #[test]
    fn a_chain_of_options_that_were_not_validated_is_a_config_error_not_a_panic() {
        let unchecked = crate::config::TransformConfig {
            alias: "route".into(),
            class: super::REGEX_ROUTER.into(),
            options: Default::default(),
            predicate: None,
            negate: false,
        };
        let e =
            super::build_chain(std::slice::from_ref(&unchecked)).expect_err("regex is required");
        assert_eq!(e.kind(), crate::error::ErrorKind::Config);
        assert!(
            e.message().contains("transforms.route.regex is required"),
            "{}",
            e.message()
        );
        let (problems, _) = super::validate(&[unchecked], &[]);
        assert_eq!(problems.len(), 2, "regex and replacement: {problems:?}");
    }

    #[test]
    fn has_header_key_and_record_is_tombstone_predicates() {
        let (_, orders) = outbox_and_orders();
        let mut c = chain(&[
            ("transforms", "route,route2"),
            ("transforms.route.type", super::REGEX_ROUTER),
            ("transforms.route.regex", "(.*)"),
            ("transforms.route.replacement", "$1.tomb"),
            ("transforms.route.predicate", "tomb"),
            ("transforms.route2.type", super::REGEX_ROUTER),
            ("transforms.route2.regex", "(.*)orders"),
            ("transforms.route2.replacement", "$1with-header"),
            ("transforms.route2.predicate", "hdr"),
            ("predicates", "tomb,hdr"),
            (
                "predicates.tomb.type",
                super::predicate::RECORD_IS_TOMBSTONE,
            ),
            ("predicates.hdr.type", super::predicate::HAS_HEADER_KEY),
            ("predicates.hdr.name", "__debezium.context.taskId"),
        ]);
        let recs = records(
            &orders,
            Op::Delete,
            Some(vec![Value::Int(7), Value::Int(10)]),
            None,
            1,
        );
        let topics: Vec<String> = run(&mut c, recs)
            .iter()
            .map(|r| r.topic.to_string())
            .collect();
        assert_eq!(topics, ["db.public.with-header", "db.public.orders.tomb"]);
    }

    #[test]
    fn a_misspelled_transform_class_gets_the_closest_known_one() {
        let p = "transforms.a.";
        assert_eq!(
            super::unknown_type(p, "io.debezium.transforms.ExtractNewRecordStat"),
            "transforms.a.type=io.debezium.transforms.ExtractNewRecordStat is not a transform pgcdc knows; did you mean io.debezium.transforms.ExtractNewRecordState?"
        );
        assert_eq!(
            super::unknown_type(p, "org.apache.kafka.connect.transforms.ReplaceField"),
            "transforms.a.type=org.apache.kafka.connect.transforms.ReplaceField needs the part of the record it works on: use org.apache.kafka.connect.transforms.ReplaceField$Key or org.apache.kafka.connect.transforms.ReplaceField$Value"
        );
        let far = super::unknown_type(p, "com.acme.MySmt");
        assert!(
            far.starts_with(
                "transforms.a.type=com.acme.MySmt is not implemented: pgcdc supports io.debezium.transforms.outbox.EventRouter, "),
            "{far}"
        );
    }
}
