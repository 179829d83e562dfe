//! The connector itself and the shape of what it writes: `name`, `connector.class`, the
//! converters, the topic prefix and delimiter, tombstones and the extended headers.

use regex::Regex;

use super::checker::Checker;
use super::keys::{
    self, EXTENDED_HEADERS_ENABLED, HEADER_CONVERTER, KEY_CONVERTER, KEY_CONVERTER_SCHEMAS_ENABLE,
    NAME, TOMBSTONES_ON_DELETE, TOPIC_DELIMITER, TOPIC_PREFIX, VALUE_CONVERTER,
    VALUE_CONVERTER_SCHEMAS_ENABLE,
};

/// The JsonConverter class name, the only converter implemented.
pub const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";
/// The only `connector.class` accepted.
pub const CONNECTOR_CLASS: &str = "io.debezium.connector.postgresql.PostgresConnector";
/// The only `header.converter` implemented (Kafka Connect's default).
const SIMPLE_HEADER_CONVERTER: &str = "org.apache.kafka.connect.storage.SimpleHeaderConverter";

/// The settings of this area.
pub(super) struct Connector {
    pub(super) name: String,
    pub(super) topic_prefix: String,
    pub(super) topic_delimiter: String,
    pub(super) tombstones_on_delete: bool,
    pub(super) key_schemas_enable: bool,
    pub(super) value_schemas_enable: bool,
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
    converters(c);
    Connector {
        name,
        topic_prefix,
        topic_delimiter: c.string(TOPIC_DELIMITER, "."),
        tombstones_on_delete: c.boolean(TOMBSTONES_ON_DELETE, true),
        key_schemas_enable: c.boolean(KEY_CONVERTER_SCHEMAS_ENABLE, true),
        value_schemas_enable: c.boolean(VALUE_CONVERTER_SCHEMAS_ENABLE, true),
        extended_headers: c.boolean(EXTENDED_HEADERS_ENABLED, true),
    }
}

/// `key.converter`, `value.converter` and `header.converter`: only the ones implemented.
fn converters(c: &mut Checker<'_>) {
    for key in [KEY_CONVERTER, VALUE_CONVERTER] {
        let v = c.string(key, JSON_CONVERTER);
        if v != JSON_CONVERTER {
            c.problem(format!("{key}={v} is not implemented yet: pgcdc writes {JSON_CONVERTER} output (remove it or set it to {JSON_CONVERTER})"));
        }
    }
    let header_converter = c.string(HEADER_CONVERTER, SIMPLE_HEADER_CONVERTER);
    if header_converter != SIMPLE_HEADER_CONVERTER {
        c.problem(format!(
            "{HEADER_CONVERTER}={header_converter} is not implemented yet: pgcdc writes headers as {SIMPLE_HEADER_CONVERTER} does"
        ));
    }
}
