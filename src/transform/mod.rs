//! Single message transforms and predicates, applied as Kafka Connect applies them: in
//! `transforms` order, each one only to the records its predicate (optionally negated)
//! selects. Pure functions of records and config: no I/O.
//!
//! Implemented transforms, one [`Transformation`] each, registered in [`TRANSFORMS`]:
//! Debezium's outbox `EventRouter` ([`outbox`]), `ExtractNewRecordState` ([`unwrap`]),
//! `ByLogicalTableRouter` ([`logical_table`]), `HeaderToValue` ([`headers`]) and
//! `PartitionRouting` ([`partition_routing`]); Kafka's `RegexRouter` ([`regex_router`]),
//! `InsertField`, `ReplaceField`, `MaskField`, `ValueToKey`, `ExtractField`, `HoistField`,
//! `SetSchemaMetadata` ([`fields`]), `Flatten` ([`flatten`]), `Cast` ([`cast`]),
//! `InsertHeader`, `DropHeaders`, `HeaderFrom` ([`headers`]), `TimestampConverter`,
//! `TimestampRouter` ([`timestamp`]) and `Filter` ([`builtin`]). Predicates: Kafka's
//! `TopicNameMatches`, `HasHeaderKey` and `RecordIsTombstone` ([`predicate`]).
//! Options are parsed and checked here, at startup ([`validate`], from the neutral
//! [`TransformConfig`] and [`PredicateConfig`] that [`crate::config`] reads as Kafka Connect
//! does); an option pgcdc does not implement is a startup error naming it, never ignored.
//!
//! Adding a transform: a module with a type that implements [`Transformation`] (parse its
//! options, apply to a record, say which [`RecordKind`]s it touches) and one line in
//! [`TRANSFORMS`]; the unit tests then ask for example options and hold it to `touches`.

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
use side::Side;

/// `io.debezium.transforms.outbox.EventRouter`.
pub const EVENT_ROUTER: &str = "io.debezium.transforms.outbox.EventRouter";
/// `io.debezium.transforms.ExtractNewRecordState`.
pub const EXTRACT_NEW_RECORD_STATE: &str = "io.debezium.transforms.ExtractNewRecordState";
/// `org.apache.kafka.connect.transforms.RegexRouter`.
pub const REGEX_ROUTER: &str = "org.apache.kafka.connect.transforms.RegexRouter";

/// A Kafka built-in transform's class name: `kafka!("Cast")` is
/// `org.apache.kafka.connect.transforms.Cast`.
macro_rules! kafka {
    ($name:literal) => {
        concat!("org.apache.kafka.connect.transforms.", $name)
    };
}

/// Every transform pgcdc implements: one entry per class, in the order error messages list
/// them. Adding a transform is a module implementing [`Transformation`] plus one line here.
pub const TRANSFORMS: &[Registration] = &[
    Registration::plain::<outbox::EventRouter>(EVENT_ROUTER),
    Registration::plain::<unwrap::ExtractNewRecordState>(EXTRACT_NEW_RECORD_STATE),
    Registration::plain::<logical_table::ByLogicalTableRouter>(
        logical_table::BY_LOGICAL_TABLE_ROUTER,
    ),
    Registration::plain::<headers::HeaderToValue>(headers::HEADER_TO_VALUE),
    Registration::plain::<partition_routing::PartitionRouting>(
        partition_routing::PARTITION_ROUTING,
    ),
    Registration::plain::<regex_router::RegexRouter>(REGEX_ROUTER),
    Registration::sided::<fields::InsertField>(kafka!("InsertField")),
    Registration::sided::<fields::ReplaceField>(kafka!("ReplaceField")),
    Registration::sided::<fields::MaskField>(kafka!("MaskField")),
    Registration::sided::<fields::ExtractField>(kafka!("ExtractField")),
    Registration::sided::<fields::HoistField>(kafka!("HoistField")),
    Registration::sided::<flatten::Flatten>(kafka!("Flatten")),
    Registration::sided::<cast::Cast>(kafka!("Cast")),
    Registration::sided::<fields::SetSchemaMetadata>(kafka!("SetSchemaMetadata")),
    Registration::sided::<headers::HeaderFrom>(kafka!("HeaderFrom")),
    Registration::sided::<timestamp::TimestampConverter>(kafka!("TimestampConverter")),
    Registration::plain::<fields::ValueToKey>(kafka!("ValueToKey")),
    Registration::plain::<builtin::Filter>(kafka!("Filter")),
    Registration::plain::<headers::InsertHeader>(kafka!("InsertHeader")),
    Registration::plain::<headers::DropHeaders>(kafka!("DropHeaders")),
    Registration::plain::<timestamp::TimestampRouter>(kafka!("TimestampRouter")),
];

/// The kinds of record a pipeline produces, as a transform sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A Debezium change event: a value whose schema is an `…Envelope`.
    ChangeEvent,
    /// A record with a null value: the tombstone that follows a delete.
    Tombstone,
    /// Anything else: heartbeats, transaction metadata, routed or unwrapped records.
    Other,
}

impl RecordKind {
    /// Every kind.
    pub const ALL: &'static [RecordKind] = &[
        RecordKind::ChangeEvent,
        RecordKind::Tombstone,
        RecordKind::Other,
    ];
    /// Change events and their tombstones (Debezium's transforms for change events).
    pub const CHANGES: &'static [RecordKind] = &[RecordKind::ChangeEvent, RecordKind::Tombstone];

    /// The kind of `r`.
    pub fn of(r: &ConnectRecord) -> RecordKind {
        if r.value.as_ref().is_none_or(Value::is_null) {
            RecordKind::Tombstone
        } else if is_envelope(r) {
            RecordKind::ChangeEvent
        } else {
            RecordKind::Other
        }
    }
}

/// How a transform was declared: what its constructor may use besides its options.
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    /// The class as configured (`…Cast$Value`), for messages.
    pub class: &'a str,
    /// The alias from `transforms`, for messages and Debezium's per-alias names.
    pub alias: &'a str,
    /// The side a `$Key`/`$Value` class works on; [`Side::Value`] for other classes.
    pub side: Side,
}

/// A single message transform: parsed from its options at startup, then applied to every
/// record its stage selects, in order. Implementations are pure (no I/O); a record they cannot
/// transform is an error naming the transform and the column or option, never a row value.
pub trait Transformation: std::fmt::Debug + Send + Sync {
    /// Parses the options of the transform declared as `d` (`o` reads the
    /// `transforms.<alias>.*` keys without that prefix; `type`, `predicate` and `negate` are
    /// removed). `None` when an option has a problem, recorded in `o` with its full key;
    /// options that are set but have no effect go to `o.warnings`.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self>
    where
        Self: Sized;

    /// Applies the transform to one record; `Ok(None)` drops it.
    fn apply(&mut self, r: ConnectRecord) -> Result<Option<ConnectRecord>>;

    /// The kinds of record this transform may change or drop; records of the other kinds pass
    /// through it unchanged (a unit test holds every registered transform to this).
    fn touches(&self) -> &'static [RecordKind];
}

/// One entry of [`TRANSFORMS`]: a class name and the constructor of its transform.
#[derive(Clone, Copy)]
pub struct Registration {
    /// The fully qualified class name; for a class with `$Key` and `$Value` variants, the
    /// name without them.
    pub class: &'static str,
    /// Whether the class exists only as `$Key` and `$Value` variants (Kafka's naming).
    pub sided: bool,
    build: fn(&Declared<'_>, &mut Options<'_>) -> Option<Box<dyn Transformation>>,
}

impl Registration {
    /// A class named `class` exactly.
    pub const fn plain<T: Transformation + 'static>(class: &'static str) -> Self {
        Registration {
            class,
            sided: false,
            build: build::<T>,
        }
    }

    /// A class named `class$Key` and `class$Value`.
    pub const fn sided<T: Transformation + 'static>(class: &'static str) -> Self {
        Registration {
            class,
            sided: true,
            build: build::<T>,
        }
    }

    /// The class names this entry answers to.
    pub fn names(&self) -> Vec<String> {
        if self.sided {
            vec![
                format!("{}$Key", self.class),
                format!("{}$Value", self.class),
            ]
        } else {
            vec![self.class.to_string()]
        }
    }
}

fn build<T: Transformation + 'static>(
    d: &Declared<'_>,
    o: &mut Options<'_>,
) -> Option<Box<dyn Transformation>> {
    T::parse(d, o).map(|t| Box::new(t) as Box<dyn Transformation>)
}

/// The entry of [`TRANSFORMS`] for `class` and the side it names.
fn registered(class: &str) -> Option<(&'static Registration, Side)> {
    if let Some(r) = TRANSFORMS.iter().find(|r| !r.sided && r.class == class) {
        return Some((r, Side::Value));
    }
    let (base, side) = Side::of_class(class)?;
    TRANSFORMS
        .iter()
        .find(|r| r.sided && r.class == base)
        .map(|r| (r, side))
}

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
    TRANSFORMS.iter().flat_map(Registration::names).collect()
}

/// A transform built from its options, and the warnings its options gave (options set to no
/// effect).
type Built = (Box<dyn Transformation>, Vec<String>);

/// Builds the transform of class `class` whose keys are shown under `prefix`
/// (`transforms.<alias>.`) from `opts` (the `transforms.<alias>.*` keys without that prefix,
/// `type`, `predicate` and `negate` removed). Errors list every problem, each naming its full
/// key.
pub fn parse(
    class: &str,
    prefix: &str,
    opts: &BTreeMap<String, String>,
) -> std::result::Result<Built, Vec<String>> {
    let Some((registration, side)) = registered(class) else {
        return Err(vec![unknown_type(prefix, class)]);
    };
    let alias = prefix
        .strip_prefix(crate::config::keys::TRANSFORMS_PREFIX)
        .unwrap_or(prefix)
        .trim_end_matches('.');
    let declared = Declared { class, alias, side };
    let mut o = Options::new(prefix, opts);
    let transform = (registration.build)(&declared, &mut o);
    let warnings = std::mem::take(&mut o.warnings);
    let problems = o.finish(class);
    match transform {
        Some(t) if problems.is_empty() => Ok((t, warnings)),
        _ => Err(problems),
    }
}

/// Builds the configured transform `c` (see [`parse`]).
pub fn from_config(c: &TransformConfig) -> std::result::Result<Built, Vec<String>> {
    parse(&c.class, &c.prefix(), &c.options)
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
        match from_config(t) {
            Ok((_, notes)) => warnings.extend(notes.into_iter().map(ConfigWarning)),
            Err(e) => problems.extend(e),
        }
    }
    (problems, warnings)
}

/// One stage of a chain: a transform, and the predicate that decides whether it applies.
#[derive(Debug)]
pub struct Stage {
    /// The alias from `transforms`.
    pub alias: String,
    class: String,
    transform: Box<dyn Transformation>,
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
        let (transform, _) = from_config(c).map_err(not_validated)?;
        let predicate = c
            .predicate
            .as_ref()
            .map(predicate::Predicate::from_config)
            .transpose()
            .map_err(not_validated)?;
        Ok(Stage {
            alias: c.alias.clone(),
            class: c.class.clone(),
            transform,
            predicate,
            negate: c.negate,
        })
    }

    /// The transform's class, as configured.
    pub fn class(&self) -> &str {
        &self.class
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

    /// Options that make each registered class parse (`Some`), by registration class name.
    fn example_options(class: &str) -> Option<&'static [(&'static str, &'static str)]> {
        let k = |name: &str| format!("org.apache.kafka.connect.transforms.{name}");
        Some(match class {
            c if c == super::EVENT_ROUTER || c == super::EXTRACT_NEW_RECORD_STATE => &[],
            super::logical_table::BY_LOGICAL_TABLE_ROUTER => {
                &[("topic.regex", "(.*)"), ("topic.replacement", "$1.all")]
            }
            super::headers::HEADER_TO_VALUE => {
                &[("headers", "h"), ("fields", "f"), ("operation", "copy")]
            }
            super::partition_routing::PARTITION_ROUTING => &[
                ("partition.payload.fields", "after.id"),
                ("partition.topic.num", "2"),
            ],
            super::REGEX_ROUTER => &[("regex", "(.*)"), ("replacement", "$1.x")],
            c if c == k("InsertField") => &[("static.field", "x"), ("static.value", "y")],
            c if c == k("ReplaceField") => &[("exclude", "total")],
            c if c == k("MaskField") || c == k("ValueToKey") => &[("fields", "id")],
            c if c == k("ExtractField") => &[("field", "id")],
            c if c == k("HoistField") => &[("field", "wrapped")],
            c if c == k("Cast") => &[("spec", "id:int64")],
            c if c == k("SetSchemaMetadata") => &[("schema.name", "x")],
            c if c == k("HeaderFrom") => {
                &[("fields", "id"), ("headers", "h"), ("operation", "copy")]
            }
            c if c == k("TimestampConverter") => &[("target.type", "unix"), ("field", "ts")],
            c if c == k("InsertHeader") => &[("header", "h"), ("value.literal", "v")],
            c if c == k("DropHeaders") => &[("headers", "h")],
            c if c == k("Flatten") || c == k("Filter") || c == k("TimestampRouter") => &[],
            _ => return None,
        })
    }

    /// A record of each kind: an insert, a delete's tombstone, a heartbeat.
    fn one_of_each_kind() -> Vec<(super::RecordKind, crate::event::ConnectRecord)> {
        let (_, orders) = outbox_and_orders();
        let row = || Some(vec![Value::Int(7), Value::Int(10)]);
        let change = records(&orders, Op::Create, None, row(), 1).remove(0);
        let tombstone = records(&orders, Op::Delete, row(), None, 1).remove(1);
        let topic: std::sync::Arc<str> = "__debezium-heartbeat.db".into();
        let heartbeat = crate::event::meta::heartbeat_record(&topic, "db", 1);
        vec![
            (super::RecordKind::ChangeEvent, change),
            (super::RecordKind::Tombstone, tombstone),
            (super::RecordKind::Other, heartbeat),
        ]
    }

    /// The kinds `t` does not declare in `touches` yet changes or drops.
    fn undeclared_changes(t: &mut dyn super::Transformation) -> Vec<super::RecordKind> {
        let mut out = Vec::new();
        for (kind, r) in one_of_each_kind() {
            assert_eq!(super::RecordKind::of(&r), kind, "the sample of {kind:?}");
            if t.touches().contains(&kind) {
                continue;
            }
            let before = format!("{r:?}");
            let after = t.apply(r).map(|o| o.map(|r| format!("{r:?}")));
            if !matches!(after, Ok(Some(ref a)) if *a == before) {
                out.push(kind);
            }
        }
        out
    }

    #[test]
    fn every_registered_transform_passes_the_kinds_it_does_not_touch_unchanged() {
        for registration in super::TRANSFORMS {
            let opts = example_options(registration.class).unwrap_or_else(|| {
                panic!("give {} example options in this test", registration.class)
            });
            let opts: std::collections::BTreeMap<String, String> = opts
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            for class in registration.names() {
                let (mut t, _) = super::parse(&class, "transforms.t.", &opts)
                    .unwrap_or_else(|p| panic!("{class}: {p:?}"));
                let wrong = undeclared_changes(t.as_mut());
                assert!(wrong.is_empty(), "{class} changes {wrong:?} records");
            }
        }
    }

    #[test]
    fn the_kind_check_sees_a_transform_that_touches_more_than_it_declares() {
        /// Declares change events only, yet renames every topic.
        #[derive(Debug)]
        struct Liar;
        impl super::Transformation for Liar {
            fn parse(_: &super::Declared<'_>, _: &mut super::Options<'_>) -> Option<Self> {
                Some(Liar)
            }
            fn apply(
                &mut self,
                mut r: crate::event::ConnectRecord,
            ) -> crate::error::Result<Option<crate::event::ConnectRecord>> {
                r.topic = "renamed".into();
                Ok(Some(r))
            }
            fn touches(&self) -> &'static [super::RecordKind] {
                &[super::RecordKind::ChangeEvent]
            }
        }
        assert_eq!(
            undeclared_changes(&mut Liar),
            [super::RecordKind::Tombstone, super::RecordKind::Other]
        );
    }

    #[test]
    fn each_class_name_is_registered_once() {
        let names = super::transform_types();
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(
            names.len(),
            31,
            "6 Debezium/Kafka routers + 10 sided x 2 + 5 plain"
        );
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
