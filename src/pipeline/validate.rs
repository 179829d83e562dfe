//! Configuration validation across layers: the connector config ([`crate::config`]), the
//! transform options ([`crate::transform`]) and the producer settings ([`crate::sink`]),
//! reported together, every problem at once, before anything connects.

use crate::config::{invalid_config, ConfigWarning, ConnectorConfig, RawConfig};
use crate::error::Result;
use crate::sink::kafka::invalid_producer_settings;

/// Validates `raw` completely and builds the typed config. Returns the config and the
/// warnings, or a [`crate::error::ErrorKind::Config`] error listing every problem, one per
/// line: the connector-level problems, then those of transform and predicate options, then
/// the producer settings librdkafka refuses (followed by the warnings).
pub fn validate_config(raw: &RawConfig) -> Result<(ConnectorConfig, Vec<ConfigWarning>)> {
    match check_config(raw) {
        (Some(config), problems, warnings) if problems.is_empty() => Ok((config, warnings)),
        (_, problems, warnings) => Err(invalid_config(&problems, &warnings)),
    }
}

/// What [`validate_config`] checks, as lists: the typed config (`None` when a NUL byte stops
/// the check early), every problem (one sentence each, naming its key) and the warnings.
pub fn check_config(raw: &RawConfig) -> (Option<ConnectorConfig>, Vec<String>, Vec<ConfigWarning>) {
    // A NUL byte would be blamed on whatever setting it ends up in (a producer property, a
    // connection string): name the key first.
    let nul: Vec<String> = raw
        .iter()
        .filter(|(k, v)| k.contains('\0') || v.contains('\0'))
        .map(|(k, _)| format!("{} contains a NUL byte", k.replace('\0', "\\0")))
        .collect();
    if !nul.is_empty() {
        return (None, nul, Vec::new());
    }
    let (config, mut problems, mut warnings) = ConnectorConfig::parse(raw);
    let (transform_problems, transform_warnings) =
        crate::transform::validate(&config.transforms, &config.predicates);
    problems.extend(transform_problems);
    warnings.extend(transform_warnings);
    problems.extend(producer_problems(&config));
    (Some(config), problems, warnings)
}

/// The producer settings librdkafka refuses, each naming the key the user wrote.
fn producer_problems(config: &ConnectorConfig) -> Vec<String> {
    invalid_producer_settings(&config.kafka.producer)
        .into_iter()
        .map(|(property, why)| {
            format!(
                "{} is not a valid producer setting: {why}",
                config.producer_key_written(&property)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::seed_with;

    fn problems(raw: &RawConfig) -> String {
        validate_config(raw)
            .expect_err("config should be rejected")
            .message()
            .to_string()
    }

    #[test]
    fn the_seed_config_validates_and_its_transform_is_the_event_router() {
        let (c, warnings) = validate_config(&seed_with(&[])).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let chain = crate::transform::build_chain(&c.transforms).unwrap();
        assert_eq!(chain.len(), 1);
        assert_eq!(chain[0].alias, "outbox");
        assert_eq!(chain[0].class(), crate::transform::EVENT_ROUTER);
        let built = format!("{:?}", chain[0]);
        assert!(built.contains("transform: EventRouter {"), "{built}");
    }

    #[test]
    fn transform_and_sink_problems_come_after_the_connector_problems_in_one_error() {
        let msg = problems(&seed_with(&[
            ("transforms.outbox.no.such.option", "1"),
            ("producer.override.totally.bogus", "1"),
            ("snapshot.mode", "sometimes"),
        ]));
        let lines: Vec<&str> = msg.lines().collect();
        assert_eq!(lines[0], "invalid configuration (3 problems):", "{msg}");
        assert!(lines[1].starts_with("  - snapshot.mode=sometimes"), "{msg}");
        assert!(
            lines[2].starts_with("  - transforms.outbox.no.such.option is not an option"),
            "{msg}"
        );
        assert!(
            lines[3].starts_with("  - producer.override.totally.bogus is not a valid producer"),
            "{msg}"
        );
    }

    #[test]
    fn transforms_of_unknown_type_are_errors_naming_the_type() {
        let msg = problems(&seed_with(&[
            ("transforms", "outbox,route"),
            ("transforms.route.type", "org.example.Route"),
        ]));
        assert!(
            msg.contains("transforms.route.type=org.example.Route is not implemented"),
            "{msg}"
        );
        let msg = problems(&seed_with(&[
            ("predicates", "p"),
            ("predicates.p.type", "org.example.Pred"),
            ("transforms.outbox.predicate", "p"),
        ]));
        assert!(
            msg.contains("predicates.p.type=org.example.Pred is not implemented"),
            "{msg}"
        );
    }

    #[test]
    fn event_router_options_are_validated_at_startup() {
        // DBZ-T-155, DBZ-T-169 and the other invalid values: each a startup error naming the key.
        for (key, value, expect) in [
            (
                "table.op.invalid.behavior",
                "invalidOption",
                "allowed values are warn, error, fatal",
            ),
            (
                "table.fields.additional.placement",
                "type",
                "is not column:placement",
            ),
            (
                "table.fields.additional.placement",
                "type:body",
                "allowed are header, envelope, partition",
            ),
            (
                "table.fields.additional.placement",
                "type:envelope:payload",
                "places two fields named \"payload\"",
            ),
            (
                "route.topic.regex",
                " [[a-z]",
                "is not a regular expression",
            ),
            ("route.topic.replacement", "x.${nope}", "does not define"),
            (
                "table.field.additional.missing",
                "skip",
                "allowed values are error, ignore",
            ),
            (
                "table.json.payload.null.behavior",
                "keep",
                "allowed values are ignore, optional_bytes",
            ),
            (
                "route.tombstone.on.empty.payload",
                "yes",
                "allowed values are true, false",
            ),
            (
                "tracing.with.context.field.only",
                "true",
                "no OpenTelemetry tracing",
            ),
            ("tracing.operation.name", "x", "no OpenTelemetry tracing"),
            (
                "no.such.option",
                "1",
                "is not an option of io.debezium.transforms.outbox.EventRouter",
            ),
        ] {
            let full = format!("transforms.outbox.{key}");
            let msg = problems(&seed_with(&[(full.as_str(), value)]));
            assert!(msg.contains(&full), "{key}: {msg}");
            assert!(msg.contains(expect), "{key}: {msg}");
        }
        // An explicitly empty placement list is invalid too (Debezium: ConfigException).
        let msg = problems(&seed_with(&[(
            "transforms.outbox.table.fields.additional.placement",
            "",
        )]));
        assert!(msg.contains("table.fields.additional.placement"), "{msg}");
        for (key, value) in [
            ("route.by.field", "kind"),
            (
                "table.fields.additional.placement",
                "type:header:eventType, part:partition",
            ),
            ("table.op.invalid.behavior", "FATAL"),
            ("table.expand.json.payload", "true"),
            ("tracing.operation.name", "debezium-read"),
            ("table.field.event.type", "kind"),
        ] {
            let full = format!("transforms.outbox.{key}");
            if let Err(e) = validate_config(&seed_with(&[(full.as_str(), value)])) {
                panic!("{full}={value}: {}", e.message());
            }
        }
    }

    #[test]
    fn transform_chains_with_predicates_are_read_as_kafka_connect_reads_them() {
        let (c, _) = validate_config(&seed_with(&[
            ("transforms", "unwrap, outbox ,route"),
            (
                "transforms.unwrap.type",
                "io.debezium.transforms.ExtractNewRecordState",
            ),
            ("transforms.unwrap.predicate", "isOutbox"),
            ("transforms.unwrap.negate", "true"),
            ("transforms.unwrap.add.fields", "op,source.lsn:pos"),
            ("transforms.outbox.predicate", "isOutbox"),
            (
                "transforms.route.type",
                "org.apache.kafka.connect.transforms.RegexRouter",
            ),
            ("transforms.route.regex", "outbox\\.event\\.(.*)"),
            ("transforms.route.replacement", "events.$1"),
            ("predicates", "isOutbox,tomb"),
            (
                "predicates.isOutbox.type",
                "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            ),
            ("predicates.isOutbox.pattern", ".*\\.outbox"),
            (
                "predicates.tomb.type",
                "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
            ),
        ]))
        .unwrap_or_else(|e| panic!("{}", e.message()));
        let aliases: Vec<&str> = c.transforms.iter().map(|t| t.alias.as_str()).collect();
        assert_eq!(aliases, ["unwrap", "outbox", "route"]);
        assert!(c.transforms[0].negate);
        assert_eq!(
            c.transforms[0].predicate.as_ref().map(|p| p.alias.as_str()),
            Some("isOutbox")
        );
        assert!(!c.transforms[1].negate);
    }

    #[test]
    fn misconfigured_chains_and_predicates_are_refused_naming_the_key() {
        for (pairs, expect) in [
            (
                vec![("transforms.outbox.negate", "true")],
                "no transforms.outbox.predicate",
            ),
            (
                vec![("transforms.outbox.predicate", "nope")],
                "not listed in predicates",
            ),
            (vec![("predicates", "p")], "predicates.p.type is required"),
            (
                vec![
                    ("predicates", "p"),
                    (
                        "predicates.p.type",
                        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                    ),
                ],
                "predicates.p.pattern is required",
            ),
            (
                vec![
                    ("predicates", "p"),
                    (
                        "predicates.p.type",
                        "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
                    ),
                ],
                "predicates.p.name is required",
            ),
            (vec![("predicates.q.type", "x")], "not listed in predicates"),
            (vec![("transforms", "outbox,outbox")], "twice"),
            (
                vec![
                    ("transforms", "outbox,r"),
                    (
                        "transforms.r.type",
                        "org.apache.kafka.connect.transforms.RegexRouter",
                    ),
                ],
                "transforms.r.regex is required",
            ),
            (
                vec![
                    ("transforms", "outbox,u"),
                    (
                        "transforms.u.type",
                        "io.debezium.transforms.ExtractNewRecordState",
                    ),
                    ("transforms.u.drop.tombstones", "false"),
                ],
                "transforms.u.drop.tombstones=false was removed",
            ),
            (
                vec![
                    ("transforms", "outbox,u"),
                    (
                        "transforms.u.type",
                        "io.debezium.transforms.ExtractNewRecordState",
                    ),
                    ("transforms.u.delete.tombstone.handling.mode", "keep"),
                ],
                "allowed values are drop, tombstone, rewrite",
            ),
            (
                vec![
                    ("transforms", "outbox,u"),
                    (
                        "transforms.u.type",
                        "io.debezium.transforms.ExtractNewRecordState",
                    ),
                    ("transforms.u.drop.fields.header.name", "h"),
                ],
                "transforms.u.drop.fields.header.name=h is not implemented",
            ),
        ] {
            let msg = problems(&seed_with(&pairs));
            assert!(msg.contains(expect), "{pairs:?}: {msg}");
        }
    }

    #[test]
    fn producer_settings_librdkafka_refuses_are_config_errors_naming_the_key_written() {
        let msg = problems(&seed_with(&[
            ("producer.override.totally.bogus", "1"),
            ("producer.override.delivery.timeout.ms", "-5"),
            ("producer.override.buffer.memory", "abc"),
            ("bootstrap.servers", " , "),
        ]));
        assert!(msg.contains(
            "producer.override.totally.bogus is not a valid producer setting: No such configuration property"), "{msg}");
        assert!(
            msg.contains("producer.override.delivery.timeout.ms is not a valid producer setting"),
            "{msg}"
        );
        assert!(
            msg.contains("producer.override.buffer.memory=abc is invalid"),
            "{msg}"
        );
        assert!(msg.contains("has an empty entry"), "{msg}");
    }

    #[test]
    fn transform_options_without_effect_are_warnings_and_clashing_names_errors() {
        let (_, w) = validate_config(&seed_with(&[
            (
                "transforms.outbox.table.json.payload.null.behavior",
                "optional_bytes",
            ),
            ("transforms.outbox.table.field.event.schema.version", "v"),
        ]))
        .unwrap();
        let w: Vec<&str> = w.iter().map(|w| w.0.as_str()).collect();
        assert!(
            w.iter().any(|w| w.contains(
                "transforms.outbox.table.json.payload.null.behavior has no effect without table.expand.json.payload=true")),
            "{w:?}"
        );
        assert!(
            w.iter().any(|w| w.contains(
                "transforms.outbox.table.field.event.schema.version has no effect without a field placed in the envelope")),
            "{w:?}"
        );
        let unwrap = |fields: &str| {
            seed_with(&[
                ("transforms", "outbox,unwrap"),
                (
                    "transforms.unwrap.type",
                    "io.debezium.transforms.ExtractNewRecordState",
                ),
                ("transforms.unwrap.add.fields", fields),
            ])
        };
        let msg = problems(&unwrap("op:o,ts_ms:o"));
        assert!(
            msg.contains("transforms.unwrap.add.fields names \"__o\" twice"),
            "{msg}"
        );
        let (_, w) = validate_config(&unwrap("op,foo,source.nope,lsn,transaction.id")).unwrap();
        let w: Vec<&str> = w.iter().map(|w| w.0.as_str()).collect();
        assert!(
            w.iter().any(|w| w.contains("source.foo is not a field")),
            "{w:?}"
        );
        assert!(
            w.iter().any(|w| w.contains("source.nope is not a field")),
            "{w:?}"
        );
        assert_eq!(
            w.iter().filter(|w| w.contains("is not a field")).count(),
            2,
            "{w:?}"
        );
        let msg = problems(&seed_with(&[("transforms.outbox.route.by.fields", "x")]));
        assert!(
            msg.contains("did you mean transforms.outbox.route.by.field?"),
            "{msg}"
        );
        let msg = problems(&seed_with(&[("database.port", "70000")]));
        assert!(
            msg.contains("database.port=70000 is invalid: expected a TCP port from 1 to 65535"),
            "{msg}"
        );
    }
}
