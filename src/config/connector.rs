//! The connector itself and the shape of what it writes: `name`, `connector.class`, the
//! converters, the topic prefix and delimiter, tombstones and the extended headers.

use std::sync::Arc;

use regex::Regex;

use super::checker::Checker;
use super::converters::{self, ConverterConfig};
use super::keys::{
    self, EXTENDED_HEADERS_ENABLED, FIELD_NAME_ADJUSTMENT_MODE, HEADER_CONVERTER,
    INCLUDE_SCHEMA_CHANGES, NAME, SCHEMA_NAME_ADJUSTMENT_MODE, TOMBSTONES_ON_DELETE,
    TOPIC_DELIMITER, TOPIC_KEY_ENFORCE_UNIQUENESS, TOPIC_KEY_FIELD_NAME, TOPIC_KEY_FIELD_REGEX,
    TOPIC_KEY_FIELD_REPLACEMENT, TOPIC_NAMING_STRATEGY, TOPIC_PREFIX, TOPIC_REGEX,
    TOPIC_REPLACEMENT,
};

use crate::util::{NameAdjustment, RegexNaming, TopicNaming, TopicRewrite};

/// The only `connector.class` accepted.
pub const CONNECTOR_CLASS: &str = "io.debezium.connector.postgresql.PostgresConnector";
/// The only `header.converter` implemented (Kafka Connect's default).
const SIMPLE_HEADER_CONVERTER: &str = "org.apache.kafka.connect.storage.SimpleHeaderConverter";

/// The settings of this area.
pub(super) struct Connector {
    pub(super) name: String,
    pub(super) topic_prefix: String,
    pub(super) topic_delimiter: String,
    pub(super) topic_naming: TopicNaming,
    pub(super) tombstones_on_delete: bool,
    pub(super) include_schema_changes: bool,
    pub(super) key_converter: ConverterConfig,
    pub(super) value_converter: ConverterConfig,
    pub(super) field_name_adjustment: NameAdjustment,
    pub(super) schema_name_adjustment: NameAdjustment,
    pub(super) extended_headers: bool,
}

/// Reads the connector's identity, its converters and its topic naming.
pub(super) fn parse(c: &mut Checker<'_>) -> Connector {
    let class = c.string(keys::CONNECTOR_CLASS, CONNECTOR_CLASS);
    if class != CONNECTOR_CLASS {
        c.problem(format!(
            "{}={class} is invalid: pgcdc only runs {CONNECTOR_CLASS}",
            keys::CONNECTOR_CLASS
        ));
    }
    let name = c.string(NAME, "pgcdc");
    let topic_prefix = c.required(
        TOPIC_PREFIX,
        "the logical server name that starts every topic name",
    );
    if !topic_prefix.is_empty()
        && !Regex::new(r"^[a-zA-Z0-9_.\-]+$")
            .expect("static regex")
            .is_match(&topic_prefix)
    {
        c.problem(format!(
            "{TOPIC_PREFIX}={topic_prefix} is invalid: use only letters, digits, '.', '_' and '-'"
        ));
    }
    // Kafka's topic names have at most 249 characters, and every table topic adds at least
    // ".s.t" to the prefix.
    if topic_prefix.len() > 245 {
        c.problem(format!(
            "{TOPIC_PREFIX} has {} characters: with a schema and table name added, topic names would be over Kafka's limit of 249. Use a shorter prefix",
            topic_prefix.len()
        ));
    }
    let (key_converter, value_converter) = converters::parse(c);
    header_converter(c);
    let modes = [
        ("none", NameAdjustment::None),
        ("avro", NameAdjustment::Avro),
        ("avro_unicode", NameAdjustment::AvroUnicode),
    ];
    let mut field_name_adjustment =
        c.choice(FIELD_NAME_ADJUSTMENT_MODE, NameAdjustment::None, &modes);
    // Debezium makes field names valid Avro names when the connector's own config names an
    // Avro converter and the mode is left at none.
    let avro = |conv: &ConverterConfig| matches!(conv, ConverterConfig::Avro(_));
    if field_name_adjustment == NameAdjustment::None
        && (avro(&key_converter) || avro(&value_converter))
    {
        field_name_adjustment = NameAdjustment::Avro;
    }
    let schema_name_adjustment =
        c.choice(SCHEMA_NAME_ADJUSTMENT_MODE, NameAdjustment::None, &modes);
    Connector {
        name,
        topic_prefix,
        topic_delimiter: c.string(TOPIC_DELIMITER, "."),
        topic_naming: topic_naming(c),
        tombstones_on_delete: c.boolean(TOMBSTONES_ON_DELETE, true),
        include_schema_changes: c.boolean(INCLUDE_SCHEMA_CHANGES, false),
        key_converter,
        value_converter,
        field_name_adjustment,
        schema_name_adjustment,
        extended_headers: c.boolean(EXTENDED_HEADERS_ENABLED, true),
    }
}

/// `topic.naming.strategy`: Debezium's built-in strategies (class names, `io.debezium.schema.`).
fn topic_naming(c: &mut Checker<'_>) -> TopicNaming {
    let t = |without_schema, unicode| TopicNaming {
        without_schema,
        unicode,
        regex: None,
    };
    let strategies = [
        (
            "io.debezium.schema.SchemaTopicNamingStrategy",
            t(false, false),
        ),
        (
            "io.debezium.schema.DefaultTopicNamingStrategy",
            t(true, false),
        ),
        (
            "io.debezium.schema.SchemaUnicodeTopicNamingStrategy",
            t(false, true),
        ),
        (
            "io.debezium.schema.DefaultUnicodeTopicNamingStrategy",
            t(true, true),
        ),
    ];
    let Some(class) = c
        .get(TOPIC_NAMING_STRATEGY)
        .map(str::trim)
        .filter(|s| !s.is_empty())
    else {
        return TopicNaming::default();
    };
    if let Some((_, n)) = strategies.iter().find(|(name, _)| *name == class) {
        return n.clone();
    }
    let class = class.to_string();
    for (name, without_schema) in [
        ("io.debezium.schema.DefaultRegexTopicNamingStrategy", true),
        ("io.debezium.schema.SchemaRegexTopicNamingStrategy", false),
    ] {
        if class == name {
            return TopicNaming {
                regex: regex_naming(c, &class).map(Arc::new),
                ..t(without_schema, false)
            };
        }
    }
    let mut names: Vec<&str> = strategies.iter().map(|(n, _)| *n).collect();
    names.extend([
        "io.debezium.schema.DefaultRegexTopicNamingStrategy",
        "io.debezium.schema.SchemaRegexTopicNamingStrategy",
    ]);
    if let Some(near) = crate::util::closest_of(&class, names.iter().copied()) {
        c.problem(format!(
            "{TOPIC_NAMING_STRATEGY}={class} is not one of Debezium's built-in strategies; did you mean {near}?"
        ));
    } else {
        c.problem(format!(
            "{TOPIC_NAMING_STRATEGY}={class} names Java plugin code, which cannot run in pgcdc (a native program, not a Kafka Connect worker): use one of Debezium's built-in strategies {}, or a transform (RegexRouter, ByLogicalTableRouter)",
            names.join(", ")
        ));
    }
    TopicNaming::default()
}

/// The regex strategies' keys: `topic.regex` and `topic.replacement` (both required, as in
/// Debezium), `topic.key.enforce.uniqueness` (default true), `topic.key.field.name` (default
/// `__dbz__physicalTableIdentifier`), `topic.key.field.regex` with
/// `topic.key.field.replacement`.
fn regex_naming(c: &mut Checker<'_>, class: &str) -> Option<RegexNaming> {
    let rewrite = |c: &mut Checker<'_>, regex_key: &str, replacement_key: &str| {
        let regex = c.get(regex_key).map(str::trim).filter(|r| !r.is_empty())?;
        let Some(replacement) = c.get(replacement_key).filter(|r| !r.trim().is_empty()) else {
            c.problem(format!(
                "{replacement_key} must be non-empty when {regex_key} is set ({TOPIC_NAMING_STRATEGY}={class})"
            ));
            return None;
        };
        match TopicRewrite::new(regex, replacement) {
            Ok(r) => Some(r),
            Err(e) => {
                c.problem(format!("{regex_key} or {replacement_key} {e}"));
                None
            }
        }
    };
    let topic = rewrite(c, TOPIC_REGEX, TOPIC_REPLACEMENT);
    if topic.is_none() && c.get(TOPIC_REGEX).is_none_or(|r| r.trim().is_empty()) {
        c.problem(format!(
            "{TOPIC_NAMING_STRATEGY}={class} needs {TOPIC_REGEX} and {TOPIC_REPLACEMENT}: the regex over the table's topic name and what it becomes"
        ));
    }
    let key_rewrite = rewrite(c, TOPIC_KEY_FIELD_REGEX, TOPIC_KEY_FIELD_REPLACEMENT);
    let key_field = c
        .boolean(TOPIC_KEY_ENFORCE_UNIQUENESS, true)
        .then(|| c.string(TOPIC_KEY_FIELD_NAME, "__dbz__physicalTableIdentifier"));
    Some(RegexNaming {
        topic: topic?,
        key_field,
        key_rewrite,
    })
}

/// `header.converter`: only Kafka Connect's default is implemented.
fn header_converter(c: &mut Checker<'_>) {
    let header_converter = c.string(HEADER_CONVERTER, SIMPLE_HEADER_CONVERTER);
    if header_converter != SIMPLE_HEADER_CONVERTER {
        c.problem(format!(
            "{HEADER_CONVERTER}={header_converter} is not implemented yet: pgcdc writes headers as {SIMPLE_HEADER_CONVERTER} does"
        ));
    }
}
