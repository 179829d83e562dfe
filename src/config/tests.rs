use super::*;

use super::testutil::{seed_with, SEED};
use super::values::DecimalMode;

fn problems(raw: &RawConfig) -> String {
    ConnectorConfig::from_map(raw)
        .expect_err("config should be rejected")
        .message()
        .to_string()
}

#[test]
fn the_seed_config_runs_unchanged_with_connection_keys_added() {
    let (c, warnings) = ConnectorConfig::from_map(&seed_with(&[])).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(c.name, "pedidos-cdc");
    assert_eq!(c.slot_name, "debezium_pedidos");
    assert_eq!(c.topic_prefix, "loja");
    assert_eq!(c.database.hostname, "pg-primary");
    assert_eq!(c.database.port, 5432);
    assert_eq!(c.database.sslmode, SslMode::Prefer);
    assert_eq!(c.publication_name, "dbz_publication");
    assert_eq!(
        c.publication_autocreate_mode,
        PublicationAutocreateMode::AllTables
    );
    assert_eq!(c.snapshot_mode, SnapshotMode::Initial);
    assert!(c.tombstones_on_delete);
    assert!(c.skipped_operations.truncate && !c.skipped_operations.create);
    assert_eq!(
        (c.key_converter.clone(), c.value_converter.clone()),
        (
            ConverterConfig::Json {
                schemas_enable: true
            },
            ConverterConfig::Json {
                schemas_enable: true
            }
        ),
        "JsonConverter defaults to schemas.enable=true"
    );
    assert_eq!(c.transforms.len(), 1);
    assert_eq!(c.transforms[0].alias, "outbox");
    assert_eq!(
        c.transforms[0].class,
        "io.debezium.transforms.outbox.EventRouter"
    );
    assert!(c.transforms[0].options.is_empty());
    assert!(c.transforms[0].predicate.is_none());
    assert!(c.filters.is_captured("public", "pedidos"));
    assert!(c.filters.is_captured("public", "outbox"));
    assert!(!c.filters.is_captured("public", "clientes"));
}

#[test]
fn missing_connection_keys_are_reported_together_with_how_to_set_them() {
    let mut raw = parse_config_text(SEED).unwrap();
    raw.remove("database.hostname");
    let msg = problems(&raw);
    assert!(msg.contains("3 problems"), "{msg}");
    assert!(msg.contains("database.hostname is required"), "{msg}");
    assert!(msg.contains("database.user is required"), "{msg}");
    assert!(msg.contains("bootstrap.servers is required"), "{msg}");
    assert!(msg.contains("PGCDC_BOOTSTRAP_SERVERS"), "{msg}");
}

#[test]
fn an_invalid_value_names_the_key_the_value_and_the_allowed_values() {
    let msg = problems(&seed_with(&[("snapshot.mode", "sometimes")]));
    assert!(
        msg.contains(
            "snapshot.mode=sometimes is invalid: allowed values are initial, initial_only, no_data, always, when_needed"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[("tombstones.on.delete", "yes")]));
    assert!(
        msg.contains("tombstones.on.delete=yes is invalid: allowed values are true, false"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[("database.port", "http")]));
    assert!(msg.contains("database.port=http is invalid"), "{msg}");
    let msg = problems(&seed_with(&[("database.sslmode", "maybe")]));
    assert!(
        msg.contains("disable, allow, prefer, require, verify-ca, verify-full"),
        "{msg}"
    );
}

#[test]
fn enumerated_values_are_case_insensitive_and_trimmed() {
    let (c, _) =
        ConnectorConfig::from_map(&seed_with(&[("decimal.handling.mode", " STRING ")])).unwrap();
    assert_eq!(c.values.decimal, DecimalMode::String);
}

#[test]
fn only_pgoutput_is_accepted_as_plugin_and_absent_means_pgoutput() {
    let msg = problems(&seed_with(&[("plugin.name", "decoderbufs")]));
    assert!(
        msg.contains("plugin.name=decoderbufs is invalid: pgcdc only supports pgoutput"),
        "{msg}"
    );
    let mut raw = seed_with(&[]);
    raw.remove("plugin.name");
    assert!(ConnectorConfig::from_map(&raw).is_ok());
}

#[test]
fn a_debezium_key_not_implemented_is_an_error_unless_it_has_the_default_value() {
    let msg = problems(&seed_with(&[("snapshot.locking.mode", "shared")]));
    assert!(
        msg.contains(
            "snapshot.locking.mode=shared is a Debezium/Kafka Connect setting that pgcdc does not implement yet"
        ),
        "{msg}"
    );
    assert!(msg.contains("\"none\""), "{msg}");
    assert!(ConnectorConfig::from_map(&seed_with(&[("snapshot.locking.mode", "none")])).is_ok());
    let msg = problems(&seed_with(&[("signal.data.collection", "signals")]));
    assert!(
        msg.contains("signal.data.collection=signals is invalid"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[("signal.enabled.channels", "source,jmx")]));
    assert!(msg.contains("the jmx channel needs a JVM"), "{msg}");
    let msg = problems(&seed_with(&[("signal.enabled.channels", "kafka")]));
    assert!(
        msg.contains("signal.kafka.bootstrap.servers is required"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[(
        "snapshot.select.statement.overrides.public.pedidos",
        "SELECT 1",
    )]));
    assert!(
        msg.contains("snapshot.select.statement.overrides.public.pedidos"),
        "{msg}"
    );
}

#[test]
fn connect_framework_keys_are_accepted_without_effect() {
    let (_, warnings) = ConnectorConfig::from_map(&seed_with(&[
        ("tasks.max", "1"),
        ("max.batch.size", "4096"),
    ]))
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn an_unknown_key_warns_and_names_the_closest_known_key() {
    let (_, warnings) =
        ConnectorConfig::from_map(&seed_with(&[("tombstones.after.delete", "false")])).unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].0.contains("tombstones.after.delete"),
        "{warnings:?}"
    );
    assert!(
        warnings[0].0.contains("did you mean tombstones.on.delete?"),
        "{warnings:?}"
    );
}

#[test]
fn never_is_read_as_no_data_with_a_warning() {
    let (c, warnings) =
        ConnectorConfig::from_map(&seed_with(&[("snapshot.mode", "never")])).unwrap();
    assert_eq!(c.snapshot_mode, SnapshotMode::NoData);
    assert!(
        warnings
            .iter()
            .any(|w| w.0.contains("snapshot.mode=never") && w.0.contains("no_data")),
        "{warnings:?}"
    );
}

#[test]
fn passwords_never_appear_in_errors_or_debug_output() {
    let raw = seed_with(&[
        ("database.password", "s3cret-pw"),
        ("database.sslpassword", "other-s3cret"),
        ("snapshot.mode", "bad"),
    ]);
    let msg = problems(&raw);
    assert!(!msg.contains("s3cret"), "{msg}");
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("database.password", "s3cret-pw"),
        ("database.sslpassword", "other-s3cret"),
    ]))
    .unwrap();
    assert_eq!(c.database.sslpassword.as_deref(), Some("other-s3cret"));
    let debug = format!("{c:?}");
    assert!(!debug.contains("s3cret"), "{debug}");
    assert!(debug.contains("sslpassword: Some(\"[hidden]\")"), "{debug}");
}

#[test]
fn converters_other_than_json_and_avro_are_rejected() {
    let msg = problems(&seed_with(&[(
        "value.converter",
        "io.confluent.connect.protobuf.ProtobufConverter",
    )]));
    assert!(
        msg.contains(
            "value.converter=io.confluent.connect.protobuf.ProtobufConverter is not implemented"
        ),
        "{msg}"
    );
    let msg = problems(&seed_with(&[("key.converter.decimal.format", "NUMERIC")]));
    assert!(
        msg.contains("key.converter.decimal.format is not implemented"),
        "{msg}"
    );
}

#[test]
fn the_avro_converter_reads_confluents_settings() {
    let avro = "io.confluent.connect.avro.AvroConverter";
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("key.converter", avro),
        (
            "key.converter.schema.registry.url",
            "http://r1:8081/, http://alice:s%40cret@r2:8081",
        ),
        ("value.converter", avro),
        ("value.converter.schema.registry.url", "http://r1:8081"),
        ("value.converter.basic.auth.credentials.source", "USER_INFO"),
        ("value.converter.basic.auth.user.info", "bob:pw"),
        ("value.converter.auto.register.schemas", "false"),
        (
            "value.converter.value.subject.name.strategy",
            "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
        ),
        ("value.converter.connect.meta.data", "false"),
        // Accepted: no effect on the schemas pgcdc writes.
        ("value.converter.enhanced.avro.schema.support", "true"),
    ]))
    .unwrap();
    let ConverterConfig::Avro(k) = &c.key_converter else {
        panic!("{:?}", c.key_converter)
    };
    assert_eq!(k.registry_urls, ["http://r1:8081", "http://r2:8081"]);
    assert_eq!(k.auth, RegistryAuth::Basic("alice:s@cret".into()));
    assert!(k.auto_register && k.connect_meta_data);
    assert_eq!(k.subject_strategy, SubjectNameStrategy::TopicName);
    let ConverterConfig::Avro(v) = &c.value_converter else {
        panic!("{:?}", c.value_converter)
    };
    assert_eq!(v.auth, RegistryAuth::Basic("bob:pw".into()));
    assert!(!v.auto_register && !v.connect_meta_data);
    assert_eq!(v.subject_strategy, SubjectNameStrategy::TopicRecordName);
    assert!(
        !format!("{c:?}").contains("pw"),
        "credentials never printed"
    );
}

#[test]
fn apicurio_avro_converter_in_confluent_mode_reads_apicurios_settings() {
    let apicurio = "io.apicurio.registry.utils.converter.AvroConverter";
    let mode = |p: &str| {
        vec![
            (format!("{p}converter"), apicurio.to_string()),
            (
                format!("{p}converter.apicurio.registry.url"),
                "http://reg:8080/apis/registry/v2/".to_string(),
            ),
            (
                format!("{p}converter.apicurio.registry.auto-register"),
                "true".into(),
            ),
            (
                format!("{p}converter.apicurio.registry.find-latest"),
                "true".into(),
            ),
            (
                format!("{p}converter.apicurio.registry.as-confluent"),
                "true".into(),
            ),
            (
                format!("{p}converter.apicurio.registry.use-id"),
                "contentId".into(),
            ),
            (
                format!("{p}converter.apicurio.registry.headers.enabled"),
                "false".into(),
            ),
        ]
    };
    let mut kvs = mode("key.");
    kvs.extend(mode("value."));
    kvs.push((
        "value.converter.apicurio.auth.username".into(),
        "alice".into(),
    ));
    kvs.push(("value.converter.apicurio.auth.password".into(), "pw".into()));
    let refs: Vec<(&str, &str)> = kvs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (c, _) = ConnectorConfig::from_map(&seed_with(&refs)).unwrap();
    let ConverterConfig::Avro(k) = &c.key_converter else {
        panic!("{:?}", c.key_converter)
    };
    assert_eq!(k.registry_urls, ["http://reg:8080/apis/registry/v2"]);
    assert_eq!(
        k.api,
        RegistryApi::ApicurioV2 {
            if_exists: "RETURN_OR_UPDATE".into()
        }
    );
    assert!(k.auto_register);
    assert_eq!(k.auth, RegistryAuth::None);
    assert_eq!(k.subject_strategy, SubjectNameStrategy::TopicName);
    let ConverterConfig::Avro(v) = &c.value_converter else {
        panic!("{:?}", c.value_converter)
    };
    assert_eq!(v.auth, RegistryAuth::Basic("alice:pw".into()));
    // Field names are made valid Avro names, as Debezium does for this class too.
    assert_eq!(c.field_name_adjustment, crate::util::NameAdjustment::Avro);

    // Apicurio's defaults (ids in headers, 8-byte global ids) write other bytes: refused.
    let msg = problems(&seed_with(&[
        ("value.converter", apicurio),
        (
            "value.converter.apicurio.registry.url",
            "http://reg:8080/apis/ccompat/v7",
        ),
        (
            "value.converter.apicurio.registry.artifact-resolver-strategy",
            "io.apicurio.registry.serde.strategy.RecordIdStrategy",
        ),
    ]));
    for expected in [
        "value.converter.apicurio.registry.url=http://reg:8080/apis/ccompat/v7 does not end with /apis/registry/v2",
        "value.converter.apicurio.registry.as-confluent=false is not implemented",
        "value.converter.apicurio.registry.use-id=globalId is not implemented",
        "value.converter.apicurio.registry.headers.enabled=true is not implemented",
        "value.converter.apicurio.registry.artifact-resolver-strategy=io.apicurio.registry.serde.strategy.RecordIdStrategy is not implemented",
    ] {
        assert!(msg.contains(expected), "{expected}\n{msg}");
    }
}

#[test]
fn avro_settings_pgcdc_does_not_implement_are_problems() {
    let avro = "io.confluent.connect.avro.AvroConverter";
    let msg = problems(&seed_with(&[("value.converter", avro)]));
    assert!(
        msg.contains("value.converter.schema.registry.url is required"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[
        ("value.converter", avro),
        ("value.converter.schema.registry.url", "http://r:8081"),
        (
            "value.converter.schema.registry.ssl.truststore.location",
            "/x",
        ),
        (
            "value.converter.schema.registry.ssl.keystore.location",
            "/k",
        ),
        (
            "value.converter.schema.registry.ssl.endpoint.identification.algorithm",
            "",
        ),
        ("value.converter.use.latest.version", "true"),
        (
            "value.converter.value.subject.name.strategy",
            "com.example.Mine",
        ),
        ("value.converter.basic.auth.credentials.source", "USER_INFO"),
    ]));
    for want in [
        // Java's default store type; pgcdc reads PEM.
        "value.converter.schema.registry.ssl.truststore.type=JKS: pgcdc reads PEM trust stores: convert it",
        "value.converter.schema.registry.ssl.keystore.location is not implemented",
        "value.converter.schema.registry.ssl.endpoint.identification.algorithm= is not implemented",
        "value.converter.value.subject.name.strategy",
        "needs value.converter.basic.auth.user.info",
    ] {
        assert!(msg.contains(want), "{want}: {msg}");
    }
}

#[test]
fn a_pem_trust_store_for_the_registry_is_read_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    std::fs::write(&ca, pem).unwrap();
    let ca = ca.display().to_string();
    let avro = "io.confluent.connect.avro.AvroConverter";
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("value.converter", avro),
        ("value.converter.schema.registry.url", "https://r:8081"),
        ("value.converter.schema.registry.ssl.truststore.type", "PEM"),
        (
            "value.converter.schema.registry.ssl.truststore.location",
            &ca,
        ),
    ]))
    .unwrap();
    let ConverterConfig::Avro(v) = &c.value_converter else {
        panic!()
    };
    assert_eq!(v.trusted_certificates.as_deref(), Some(pem));
    let apicurio = "io.apicurio.registry.utils.converter.AvroConverter";
    let msg = problems(&seed_with(&[
        ("value.converter", apicurio),
        (
            "value.converter.apicurio.registry.url",
            "https://r/apis/registry/v2",
        ),
        ("value.converter.apicurio.registry.as-confluent", "true"),
        ("value.converter.apicurio.registry.use-id", "contentId"),
        ("value.converter.apicurio.registry.headers.enabled", "false"),
        (
            "value.converter.apicurio.registry.request.ssl.truststore.type",
            "PEM",
        ),
        (
            "value.converter.apicurio.registry.request.ssl.truststore.location",
            "/nonexistent/ca.pem",
        ),
    ]));
    assert!(
        msg.contains(
            "value.converter.apicurio.registry.request.ssl.truststore.location=/nonexistent/ca.pem cannot be read"),
        "{msg}"
    );
    // A truncated PEM text, a DER file, and both ways at once are problems at startup.
    let der = dir.path().join("ca.der");
    std::fs::write(&der, [0x30u8, 0x82, 0x01, 0xff, 0xfe]).unwrap();
    let der = der.display().to_string();
    let pem_setting = "value.converter.schema.registry.ssl.truststore.certificates";
    let location_setting = "value.converter.schema.registry.ssl.truststore.location";
    for (extra, want) in [
        (
            vec![(pem_setting, "-----BEGIN CERTIFICATE-----\nMIIB\n")],
            "holds a certificate that cannot be decoded",
        ),
        (
            vec![(location_setting, der.as_str())],
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----); a DER file converts with openssl x509 -inform der",
        ),
        (
            vec![(location_setting, ca.as_str()), (pem_setting, pem)],
            "are both set",
        ),
    ] {
        let mut kvs = vec![
            ("value.converter", avro),
            ("value.converter.schema.registry.url", "https://r:8081"),
            ("value.converter.schema.registry.ssl.truststore.type", "PEM"),
        ];
        kvs.extend(extra);
        let msg = problems(&seed_with(&kvs));
        assert!(msg.contains(want), "{want}\n{msg}");
    }
}

#[test]
fn producer_settings_pass_through_and_guarantees_cannot_be_weakened() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("producer.override.linger.ms", "20"),
        ("producer.linger.ms", "1"),
        ("producer.override.buffer.memory", "33554432"),
    ]))
    .unwrap();
    assert!(
        c.kafka
            .producer
            .contains(&("linger.ms".into(), "20".into())),
        "override wins: {:?}",
        c.kafka.producer
    );
    assert!(c
        .kafka
        .producer
        .contains(&("queue.buffering.max.kbytes".into(), "32768".into())));
    let msg = problems(&seed_with(&[("producer.override.acks", "1")]));
    assert!(msg.contains("acks=1 is invalid"), "{msg}");
    let msg = problems(&seed_with(&[(
        "producer.override.partitioner",
        "consistent_random",
    )]));
    assert!(msg.contains("murmur2_random"), "{msg}");
    for key in [
        "producer.override.max.in.flight.requests.per.connection",
        "producer.max.in.flight",
    ] {
        let msg = problems(&seed_with(&[(key, "5")]));
        assert!(
            msg.contains("=5 is invalid") && msg.contains("KAFKA-15591"),
            "{key}: {msg}"
        );
    }
    ConnectorConfig::from_map(&seed_with(&[(
        "producer.override.max.in.flight.requests.per.connection",
        "1",
    )]))
    .expect("one request in flight is what pgcdc uses anyway");
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[(
        "producer.override.bootstrap.servers",
        "k:1",
    )]))
    .unwrap();
    assert_eq!(c.kafka.bootstrap_servers, "k:1");
}

#[test]
fn sources_merge_with_set_over_env_over_file_over_pg_env() {
    let file = parse_config_text(SEED).unwrap();
    let source = ConfigSource {
        overrides: vec![("database.port".into(), "6000".into())],
        env: vec![
            ("PGCDC_DATABASE_PORT".into(), "5999".into()),
            ("PGCDC_DATABASE_HOSTNAME".into(), "db.internal".into()),
            (
                "PGHOST".into(),
                "ignored-because-file-or-env-sets-it".into(),
            ),
            ("PGUSER".into(), "app".into()),
            ("PGPASSWORD".into(), "pw".into()),
            ("PGCDC_BOOTSTRAP_SERVERS".into(), "kafka:9092".into()),
            ("PGCDC_NOT_A_KEY".into(), "x".into()),
        ],
    };
    let raw = source.merge(file);
    assert_eq!(raw["database.port"], "6000");
    assert_eq!(raw["database.hostname"], "db.internal");
    assert_eq!(raw["database.user"], "app");
    assert_eq!(raw["database.password"], "pw");
    assert_eq!(raw["bootstrap.servers"], "kafka:9092");
    assert_eq!(raw["database.dbname"], "loja", "file value kept");
    assert!(!raw.contains_key("not.a.key"));
}

#[test]
fn properties_files_are_read_like_java_properties() {
    let raw = parse_properties(
        "# comment\n! other\nname=p\ntopic.prefix : loja\ntable.include.list=public.a,\\\n  public.b\n\n").unwrap();
    assert_eq!(raw["name"], "p");
    assert_eq!(raw["topic.prefix"], "loja");
    assert_eq!(raw["table.include.list"], "public.a,public.b");
    // As java.util.Properties: a key alone has the empty value.
    assert_eq!(parse_properties("novalue\n").unwrap()["novalue"], "");
}

#[test]
fn properties_escapes_separators_and_continuations_follow_java() {
    let text = concat!(
        "\u{feff}database.password=s3cr3t\\\\\n",
        "table.include.list=public\\\\.pedidos\n",
        "column.mask.hash.SHA-256.with.salt.Xy\\=9=public.clientes.cpf\n",
        "topic.prefix p\\u0041\n",
        "slot.name\t:\tslot_a\r\n",
        "column.exclude.list = a,\\\n",
        "    b, \\\n",
        "\n",
        "# not a comment inside a continuation? it is the next entry's line\n",
        "heartbeat.topics.prefix=\\ lead\\tx\n",
    );
    let raw = parse_properties(text).unwrap();
    assert_eq!(
        raw["database.password"], "s3cr3t\\",
        "an escaped backslash ends the line"
    );
    assert_eq!(raw["table.include.list"], "public\\.pedidos");
    assert_eq!(
        raw["column.mask.hash.SHA-256.with.salt.Xy=9"],
        "public.clientes.cpf"
    );
    assert_eq!(raw["topic.prefix"], "pA", "space separator and \\u escape");
    assert_eq!(raw["slot.name"], "slot_a");
    assert_eq!(raw["column.exclude.list"], "a,b, ");
    assert_eq!(raw["heartbeat.topics.prefix"], " lead\tx");
    assert_eq!(raw.len(), 7, "{raw:?}");
    let err = parse_properties("name=p\ntopic.prefix=\\u12\n").unwrap_err();
    assert!(
        err.message().contains("line 2") && err.message().contains("\\uXXXX"),
        "{}",
        err.message()
    );
}

#[test]
fn connector_json_with_mismatched_inner_name_is_rejected() {
    let err = parse_config_text(r#"{"name":"a","config":{"name":"b"}}"#).unwrap_err();
    assert!(err.message().contains("must match"), "{}", err.message());
    let raw = parse_config_text(
        r#"{"topic.prefix":"p","database.port":5433,"tombstones.on.delete":false}"#,
    )
    .unwrap();
    assert_eq!(raw["database.port"], "5433");
    assert_eq!(raw["tombstones.on.delete"], "false");
}

#[test]
fn filters_are_case_insensitive_full_matches_with_escaped_commas() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[(
        "table.include.list",
        r"public\.ped.*,inv\.a\,b",
    )]))
    .unwrap();
    assert!(c.filters.is_captured("public", "pedidos"));
    assert!(c.filters.is_captured("PUBLIC", "PEDIDOS_2024"));
    assert!(
        !c.filters.is_captured("xpublic", "pedidos"),
        "anchored at the start"
    );
    assert!(c.filters.is_captured("inv", "a,b"));
    assert!(!c.filters.is_captured("pg_catalog", "pg_class"));
    let msg = problems(&seed_with(&[("table.exclude.list", "public.x")]));
    assert!(
        msg.contains("table.include.list and table.exclude.list cannot both be set"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[("schema.include.list", "(unclosed")]));
    assert!(
        msg.contains("schema.include.list: \"(unclosed\" is not a valid regular expression"),
        "{msg}"
    );
}

#[test]
fn slot_and_topic_prefix_names_are_validated() {
    let msg = problems(&seed_with(&[
        ("slot.name", "Bad-Slot"),
        ("topic.prefix", "loja/x"),
    ]));
    assert!(msg.contains("slot.name=Bad-Slot is invalid"), "{msg}");
    assert!(msg.contains("topic.prefix=loja/x is invalid"), "{msg}");
    let long = "p".repeat(246);
    let msg = problems(&seed_with(&[("topic.prefix", &long)]));
    assert!(msg.contains("topic.prefix has 246 characters"), "{msg}");
}

#[test]
fn a_pgcdc_environment_variable_matching_no_key_is_reported() {
    let file = parse_config_text(SEED).unwrap();
    let source = ConfigSource {
        overrides: vec![],
        env: vec![
            ("PGCDC_SLOTNAME".into(), "x".into()),
            ("PGCDC_SLOT_NAME".into(), "y".into()),
            ("PGCDC_LOG".into(), "debug".into()),
            ("PGCDC_TEST_KAFKA".into(), "k".into()),
            ("HOME".into(), "/".into()),
        ],
    };
    assert_eq!(
        source.unmatched_env(&file),
        vec!["PGCDC_SLOTNAME".to_string()]
    );
}

#[test]
fn a_continuation_on_the_last_properties_line_keeps_the_entry() {
    let raw = parse_properties("name=p\ndatabase.hostname=h\\").unwrap();
    assert_eq!(raw["database.hostname"], "h");
}

#[test]
fn a_json_array_config_is_rejected_as_such() {
    let err = parse_config_text("[]").unwrap_err();
    assert!(
        err.message().contains("not a JSON array"),
        "{}",
        err.message()
    );
}

#[test]
fn zero_partitions_or_replicas_are_rejected() {
    let msg = problems(&seed_with(&[("topic.creation.default.partitions", "0")]));
    assert!(
        msg.contains("topic.creation.default.partitions=0 is invalid"),
        "{msg}"
    );
}

#[test]
fn every_time_precision_mode_of_debezium_3_6_is_accepted() {
    for mode in [
        "adaptive",
        "adaptive_time_microseconds",
        "connect",
        "isostring",
        "microseconds",
        "nanoseconds",
    ] {
        ConnectorConfig::from_map(&seed_with(&[("time.precision.mode", mode)]))
            .unwrap_or_else(|e| panic!("{mode}: {}", e.message()));
    }
    let msg = problems(&seed_with(&[("time.precision.mode", "structured")]));
    assert!(
        msg.contains("time.precision.mode=structured is invalid"),
        "{msg}"
    );
}

#[test]
fn replica_identity_autoset_values_parse_and_bad_entries_are_named() {
    let raw = seed_with(&[(
        "replica.identity.autoset.values",
        "s1.*:full, public.t2:NOTHING,public.t3:INDEX t3_idx",
    )]);
    let (c, _) = ConnectorConfig::from_map(&raw).unwrap();
    let got: Vec<(String, ReplicaIdentity)> = c
        .replica_identity_autoset
        .iter()
        .map(|(r, i)| (r.as_str().to_string(), i.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("^(?:s1.*)$".to_string(), ReplicaIdentity::Full),
            ("^(?:public.t2)$".to_string(), ReplicaIdentity::Nothing),
            (
                "^(?:public.t3)$".to_string(),
                ReplicaIdentity::Index("t3_idx".into())
            ),
        ]
    );
    assert_eq!(
        ReplicaIdentity::Index("T3 idx".into()).sql(),
        "USING INDEX \"T3 idx\""
    );
    let p = problems(&seed_with(&[(
        "replica.identity.autoset.values",
        "s1.a:SOMETIMES",
    )]));
    assert!(
        p.contains("\"SOMETIMES\" (for s1.a) is not a replica identity"),
        "{p}"
    );
    let p = problems(&seed_with(&[("replica.identity.autoset.values", "s1.a")]));
    assert!(p.contains("is not <table regex>:<identity>"), "{p}");
    let p = problems(&seed_with(&[("replica.identity.autoset.values", "")]));
    assert!(
        p.contains("replica.identity.autoset.values is empty"),
        "{p}"
    );
    let p = problems(&seed_with(&[(
        "replica.identity.autoset.values",
        "s1.(:FULL",
    )]));
    assert!(p.contains("is not a valid regular expression"), "{p}");
}

#[test]
fn json_members_next_to_config_are_errors_not_silently_dropped() {
    let err = parse_config_text(
        r#"{"name":"x","config":{"topic.prefix":"p"},"decimal.handling.mode":"string"}"#,
    )
    .unwrap_err();
    assert!(
        err.message()
            .contains("\"decimal.handling.mode\" next to \"config\""),
        "{}",
        err.message()
    );
    let err =
        parse_config_text(r#"{"name":"x","config":{},"initial_state":"STOPPED"}"#).unwrap_err();
    assert!(err.message().contains("initial_state"), "{}", err.message());
    // What GET /connectors/<name> answers is accepted as it is.
    let raw = parse_config_text(
        "\u{feff}{\"name\":\"x\",\"config\":{\"topic.prefix\":\"p\"},\"tasks\":[],\"type\":\"source\",\"initial_state\":\"RUNNING\"}",
    )
    .unwrap();
    assert_eq!(raw["topic.prefix"], "p");
}

#[test]
fn a_json_file_is_read_as_json_even_when_it_does_not_start_with_a_brace() {
    let dir = std::env::temp_dir().join(format!("pgcdc-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.json");
    std::fs::write(&path, "// my connector\n{\"name\": \"x\", \"config\": {}}").unwrap();
    let err = load_file(&path).unwrap_err();
    assert!(
        err.message().contains("invalid JSON at line 1"),
        "{}",
        err.message()
    );
    std::fs::write(
        &path,
        "\u{feff}{\"name\": \"x\", \"config\": {\"topic.prefix\": \"p\"}}",
    )
    .unwrap();
    assert_eq!(load_file(&path).unwrap()["topic.prefix"], "p");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_misspelt_key_is_shown_with_the_errors_it_causes() {
    let mut raw = seed_with(&[]);
    let host = raw
        .remove("database.hostname")
        .expect("seed has a hostname");
    raw.insert("databse.hostname".into(), host);
    let msg = problems(&raw);
    assert!(msg.contains("database.hostname is required"), "{msg}");
    assert!(
        msg.contains("unknown configuration key databse.hostname: did you mean database.hostname?"),
        "{msg}"
    );
}

#[test]
fn a_typo_of_a_known_key_is_refused_unless_accepted_and_a_far_key_only_warns() {
    let mut raw = seed_with(&[]);
    raw.insert("tabel.include.list".into(), "public.x".into());
    let msg = problems(&raw);
    assert!(
        msg.contains(
            "unknown configuration key tabel.include.list: did you mean table.include.list?"
        ) && msg.contains("pgcdc.accept.unknown.keys"),
        "{msg}"
    );
    raw.insert(
        "pgcdc.accept.unknown.keys".into(),
        "other, tabel.include.list".into(),
    );
    let (_, warnings) = ConnectorConfig::from_map(&raw).expect("accepted");
    assert!(
        warnings.iter().all(|w| !w.0.contains("tabel")),
        "{warnings:?}"
    );
    let mut raw = seed_with(&[]);
    raw.insert("my.custom.setting.for.a.sink".into(), "1".into());
    let (_, warnings) = ConnectorConfig::from_map(&raw).expect("a far key only warns");
    assert!(
        warnings.iter().any(|w| w
            .0
            .contains("unknown configuration key my.custom.setting.for.a.sink is ignored")),
        "{warnings:?}"
    );
}

#[test]
fn skipped_operations_are_validated_as_debezium_does() {
    for (v, want) in [
        ("none,c", "'none' cannot be combined"),
        ("C", "contains \"C\""),
        ("c,,u", "contains \"\""),
        ("x", "contains \"x\""),
    ] {
        let msg = problems(&seed_with(&[("skipped.operations", v)]));
        assert!(msg.contains(want), "{v}: {msg}");
    }
    let (c, w) = ConnectorConfig::from_map(&seed_with(&[("skipped.operations", "r, d")])).unwrap();
    assert!(c.skipped_operations.delete && !c.skipped_operations.truncate);
    assert!(w.iter().any(|w| w.0.contains("r has no effect")), "{w:?}");
}

#[test]
fn debezium_1_names_are_errors_naming_their_replacement() {
    for (old, now) in [
        ("column.blacklist", "column.exclude.list"),
        ("table.whitelist", "table.include.list"),
        ("database.server.name", "topic.prefix"),
    ] {
        let msg = problems(&seed_with(&[(old, "public.x")]));
        assert!(
            msg.contains(&format!(
                "{old} was removed in Debezium 2.0 (which ignores it): use {now}"
            )),
            "{msg}"
        );
    }
}

#[test]
fn transform_and_predicate_aliases_may_hold_dots_as_in_kafka_connect() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("transforms", "outbox,re.route"),
        (
            "transforms.re.route.type",
            "org.apache.kafka.connect.transforms.RegexRouter",
        ),
        ("transforms.re.route.regex", "(.*)"),
        ("transforms.re.route.replacement", "x.$1"),
        ("transforms.re.route.predicate", "is.outbox"),
        ("predicates", "is.outbox"),
        (
            "predicates.is.outbox.type",
            "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        ),
        ("predicates.is.outbox.pattern", "outbox.*"),
    ]))
    .unwrap();
    assert_eq!(c.transforms.len(), 2);
    let msg = problems(&seed_with(&[("transforms.re.route.type", "x")]));
    assert!(msg.contains("not listed in transforms"), "{msg}");
}

#[test]
fn errors_about_values_from_the_environment_name_the_variable() {
    let file = seed_with(&[]);
    let source = ConfigSource {
        overrides: vec![("topic.prefix".into(), "".into())],
        env: vec![
            ("PGCDC_DECIMAL_HANDLING_MODE".into(), "foo".into()),
            ("PGCDC_TOPIC_PREFIX".into(), "ignored".into()),
            ("PGSSLMODE".into(), "sometimes".into()),
        ],
    };
    let origins = source.env_origins(&file);
    let err = ConnectorConfig::from_map(&source.merge(file)).unwrap_err();
    let msg = attribute_env_values(err, &origins).message().to_string();
    assert!(
        msg.contains(
            "decimal.handling.mode=foo is invalid: allowed values are precise, double, string (set by PGCDC_DECIMAL_HANDLING_MODE)"),
        "{msg}"
    );
    assert!(msg.contains("(set by PGSSLMODE)"), "{msg}");
    // --set wins over the variable, so its error is not attributed to it.
    assert!(!msg.contains("PGCDC_TOPIC_PREFIX"), "{msg}");
}

#[test]
fn regex_errors_are_one_line_about_the_pattern_as_written() {
    let msg = problems(&seed_with(&[("table.include.list", "public.(a")]));
    assert!(
        msg.contains(
            "table.include.list: \"public.(a\" is not a valid regular expression: unclosed group (at character 8)"),
        "{msg}"
    );
    assert!(!msg.contains("^(?:"), "{msg}");
    assert_eq!(
        msg.lines().filter(|l| l.contains("public.(a")).count(),
        1,
        "{msg}"
    );
}

#[test]
fn transforms_and_predicates_are_checked_as_kafka_connect_checks_them() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("transforms", "outbox, route"),
        ("transforms.outbox.predicate", "isOutbox"),
        ("transforms.outbox.negate", "TRUE"),
        ("transforms.outbox.route.by.field", "kind"),
        ("transforms.route.type", "org.example.Route"),
        ("transforms.route.any.option", "x"),
        ("predicates", "isOutbox,unused"),
        ("predicates.isOutbox.type", "org.example.Pred"),
        ("predicates.isOutbox.pattern", ".*"),
        ("predicates.unused.type", "org.example.Other"),
    ]))
    .unwrap_or_else(|e| panic!("{}", e.message()));
    // Classes and options are the transform layer's to check: here they are data.
    assert_eq!(c.transforms.len(), 2);
    let outbox = &c.transforms[0];
    assert!(outbox.negate);
    assert_eq!(outbox.prefix(), "transforms.outbox.");
    assert_eq!(
        outbox.options.iter().collect::<Vec<_>>(),
        [(&"route.by.field".to_string(), &"kind".to_string())]
    );
    let p = outbox.predicate.as_ref().expect("a predicate");
    assert_eq!(
        (p.alias.as_str(), p.class.as_str()),
        ("isOutbox", "org.example.Pred")
    );
    assert_eq!(p.prefix(), "predicates.isOutbox.");
    assert_eq!(p.options["pattern"], ".*");
    assert_eq!(c.transforms[1].class, "org.example.Route");
    let aliases: Vec<&str> = c.predicates.iter().map(|p| p.alias.as_str()).collect();
    assert_eq!(
        aliases,
        ["isOutbox", "unused"],
        "unused predicates are kept"
    );

    for (pairs, expect) in [
        (
            vec![("transforms.outbox.negate", "true")],
            "transforms.outbox.negate is set but there is no transforms.outbox.predicate",
        ),
        (
            vec![("transforms.outbox.negate", "maybe")],
            "transforms.outbox.negate=maybe is invalid: allowed values are true, false",
        ),
        (
            vec![("transforms.outbox.predicate", "nope")],
            "transforms.outbox.predicate=nope names a predicate that is not listed in predicates",
        ),
        (
            vec![("predicates", "p")],
            "predicates.p.type is required: the class of predicate \"p\"",
        ),
        (
            vec![("predicates.q.type", "x")],
            "predicates.q.type belongs to predicate \"q\", which is not listed in predicates",
        ),
        (
            vec![("transforms", "outbox,outbox")],
            "transforms=outbox,outbox lists alias \"outbox\" twice",
        ),
        (
            vec![("transforms", "outbox,")],
            "transforms=outbox, has an empty alias",
        ),
        (
            vec![("transforms", "outbox,r")],
            "transforms.r.type is required: the class of transform \"r\"",
        ),
        (
            vec![("transforms", ""), ("transforms.outbox.type", "x")],
            "transforms.outbox.type is set but transforms is empty",
        ),
    ] {
        let msg = problems(&seed_with(&pairs));
        assert!(msg.contains(expect), "{pairs:?}: {msg}");
    }
}

#[test]
fn a_key_set_twice_is_refused_in_every_format() {
    let e = parse_config_text("{\"a\": \"1\", \"b\": 2, \"a\": \"3\"}").unwrap_err();
    assert!(
        e.message().contains("a is set twice (in the JSON object)"),
        "{}",
        e.message()
    );
    let e = parse_config_text("x=1\n\ny = 2\nx: 3\n").unwrap_err();
    assert!(
        e.message().contains("x is set twice (on lines 1 and 4)"),
        "{}",
        e.message()
    );
    let ok = parse_config_text(
        "{\"name\": \"n\", \"config\": {\"name\": \"n\", \"k\": [1, {\"z\": 1, \"z\": 2}]}}",
    );
    assert!(ok.is_err(), "a JSON array value is still refused as before");
    let ok =
        parse_config_text("{\"name\": \"n\", \"config\": {\"k\": \"v\", \"n\": 1.5, \"b\": true}}")
            .unwrap();
    assert_eq!(ok.get("n").map(String::as_str), Some("1.5"));
    assert_eq!(ok.get("b").map(String::as_str), Some("true"));
}

#[test]
fn exactly_once_takes_connects_names_and_needs_an_offsets_topic() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[])).unwrap();
    assert_eq!(c.exactly_once, None, "at-least-once by default");

    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("exactly.once.source.support", "enabled"),
        ("offsets.storage.topic", "connect-offsets"),
        ("group.id", "cdc-workers"),
        ("transaction.boundary", "interval"),
        ("transaction.boundary.interval.ms", "250"),
    ]))
    .unwrap();
    let eos = c.exactly_once.unwrap();
    assert_eq!(eos.transactional_id, "cdc-workers-pedidos-cdc-0");
    assert_eq!(
        eos.boundary,
        TransactionBoundary::Interval(Duration::from_millis(250))
    );

    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("exactly.once.source.support", "enabled"),
        ("offset.storage.topic", "connect-offsets"),
        ("transaction.boundary", "connector"),
        ("exactly.once.support", "required"),
    ]))
    .unwrap();
    let eos = c.exactly_once.unwrap();
    assert_eq!(eos.transactional_id, "pgcdc-pedidos-cdc-0");
    assert_eq!(eos.boundary, TransactionBoundary::Connector);
    assert_eq!(eos.max_batch_size, 2048);

    let p = problems(&seed_with(&[("exactly.once.source.support", "enabled")]));
    assert!(p.contains("offsets.storage.topic"), "{p}");
    let p = problems(&seed_with(&[("exactly.once.support", "required")]));
    assert!(
        p.contains("exactly.once.support=required")
            && p.contains("exactly.once.source.support=enabled"),
        "{p}"
    );
    let p = problems(&seed_with(&[
        ("exactly.once.source.support", "enabled"),
        ("offsets.storage.topic", "o"),
        ("producer.override.transactional.id", "mine"),
    ]));
    assert!(p.contains("transactional.id is set by pgcdc"), "{p}");
    let p = problems(&seed_with(&[("transaction.boundary", "commit")]));
    assert!(p.contains("transaction.boundary=commit is invalid"), "{p}");
}

#[test]
fn custom_metric_tags_are_label_pairs_that_do_not_take_the_metrics_own_labels() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[(
        "custom.metric.tags",
        "env=prod, team = data",
    )]))
    .unwrap();
    assert_eq!(
        c.custom_metric_tags,
        vec![
            ("env".to_string(), "prod".to_string()),
            ("team".to_string(), "data".to_string())
        ]
    );
    for bad in ["env", "name=x", "1x=y", "__x=y", "a=1,a=2", "a-b=c"] {
        let msg = problems(&seed_with(&[("custom.metric.tags", bad)]));
        assert!(msg.contains("custom.metric.tags"), "{bad}: {msg}");
    }
}

#[test]
fn snapshot_and_streaming_delays_are_milliseconds_zero_by_default() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[])).unwrap();
    assert_eq!(
        (c.snapshot_delay, c.streaming_delay),
        (Duration::ZERO, Duration::ZERO)
    );
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("snapshot.delay.ms", "1500"),
        ("streaming.delay.ms", "250"),
    ]))
    .unwrap();
    assert_eq!(
        (c.snapshot_delay, c.streaming_delay),
        (Duration::from_millis(1500), Duration::from_millis(250))
    );
    let p = problems(&seed_with(&[("snapshot.delay.ms", "-1")]));
    assert!(p.contains("snapshot.delay.ms"), "{p}");
}

#[test]
fn initial_statements_split_on_semicolons_with_doubled_ones_kept() {
    use super::connection::split_statements;
    assert_eq!(
        split_statements("SET a = 1; SELECT 'x;;y' ;;; ;  SET b = 2;"),
        ["SET a = 1", "SELECT 'x;y' ;", "SET b = 2"]
    );
    assert!(split_statements(" ; ").is_empty());
    let (c, _) =
        ConnectorConfig::from_map(&seed_with(&[("database.initial.statements", "SET a = 1")]))
            .unwrap();
    assert_eq!(c.database.initial_statements, ["SET a = 1"]);
}

#[test]
fn slot_stream_params_pass_other_pgoutput_options_and_refuse_pgcdcs_own() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[(
        "slot.stream.params",
        "origin=none; Future_Option = x ;",
    )]))
    .unwrap();
    assert_eq!(
        c.slot_stream_params,
        [
            ("origin".to_string(), "none".to_string()),
            ("future_option".to_string(), "x".to_string())
        ]
    );
    let p = problems(&seed_with(&[(
        "slot.stream.params",
        "binary=true;streaming=on;nonsense",
    )]));
    assert!(p.contains("option binary itself"), "{p}");
    assert!(p.contains("option streaming itself"), "{p}");
    assert!(p.contains("\"nonsense\" is not name=value"), "{p}");
}

#[test]
fn keys_naming_java_plugin_classes_say_that_java_code_cannot_run_and_what_to_use() {
    let msg = problems(&seed_with(&[("converters", "isbn")]));
    assert!(
        msg.contains("converters=isbn names Java plugin code, which cannot run in pgcdc")
            && msg.contains("decimal.handling.mode"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[(
        "database.sslfactory",
        "org.postgresql.ssl.NonValidatingFactory",
    )]));
    assert!(msg.contains("use database.sslmode"), "{msg}");
    // Debezium's default class is accepted as it is.
    assert!(ConnectorConfig::from_map(&seed_with(&[(
        "sourceinfo.struct.maker",
        "io.debezium.connector.postgresql.PostgresSourceInfoStructMaker"
    )]))
    .is_ok());
}

#[test]
fn snapshot_select_overrides_pair_listed_tables_with_their_queries() {
    let (c, warnings) = ConnectorConfig::from_map(&seed_with(&[
        (
            "snapshot.select.statement.overrides",
            "public.pedidos, db.inv.items,public.x",
        ),
        (
            "snapshot.select.statement.overrides.public.pedidos",
            "SELECT * FROM public.pedidos WHERE id > 10;",
        ),
        (
            "snapshot.select.statement.overrides.db.inv.items",
            "SELECT sku FROM inv.items",
        ),
    ]))
    .unwrap();
    let got: Vec<(&str, &str, &str)> = c
        .snapshot_select_overrides
        .iter()
        .map(|o| (o.schema.as_str(), o.table.as_str(), o.query.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "public",
                "pedidos",
                "SELECT * FROM public.pedidos WHERE id > 10"
            ),
            ("inv", "items", "SELECT sku FROM inv.items"),
        ]
    );
    assert!(
        warnings.iter().any(|w| w.0.contains("public.x")),
        "a listed table without a query is read whole, with a warning: {warnings:?}"
    );
    let msg = problems(&seed_with(&[(
        "snapshot.select.statement.overrides.public.pedidos",
        "SELECT 1",
    )]));
    assert!(
        msg.contains("is not listed in snapshot.select.statement.overrides"),
        "{msg}"
    );
}

#[test]
fn post_processors_run_the_reselect_processor_and_refuse_other_classes() {
    let rs = "io.debezium.processors.reselect.ReselectColumnsPostProcessor";
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("post.processors", "r"),
        ("post.processors.r.type", rs),
        (
            "post.processors.r.reselect.columns.include.list",
            "public\\.pedidos:.*",
        ),
        ("post.processors.r.reselect.error.handling.mode", "fail"),
    ]))
    .unwrap();
    assert_eq!(c.reselect.len(), 1);
    assert!(c.reselect[0].fail && c.reselect[0].unavailable && c.reselect[0].nulls);
    assert!(
        c.reselect[0].selects("public", "PEDIDOS", "total"),
        "any case, as Debezium"
    );
    assert!(!c.reselect[0].selects("public", "other", "total"));
    let msg = problems(&seed_with(&[
        ("post.processors", "r,x"),
        ("post.processors.r.type", "com.example.Mine"),
        ("post.processors.y.type", rs),
    ]));
    assert!(
        msg.contains("post.processors.r.type=com.example.Mine names Java plugin code"),
        "{msg}"
    );
    assert!(msg.contains("post.processors.x.type is required"), "{msg}");
    assert!(
        msg.contains("post.processors.y.type belongs to post processor \"y\", which is not listed in post.processors"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[
        ("post.processors", "r"),
        ("post.processors.r.type", rs),
        ("post.processors.r.reselect.colums.include.list", "x"),
    ]));
    assert!(
        msg.contains("is not an option of ReselectColumnsPostProcessor")
            && msg.contains("did you mean post.processors.r.reselect.columns.include.list?"),
        "{msg}"
    );
}

#[test]
fn a_misspelled_topic_naming_strategy_gets_the_closest_built_in_one() {
    for (given, near) in [
        (
            "io.debezium.schema.DefaultTopicNamingStrateg",
            "io.debezium.schema.DefaultTopicNamingStrategy",
        ),
        (
            "SchemaTopicNamingStrategy",
            "io.debezium.schema.SchemaTopicNamingStrategy",
        ),
    ] {
        let msg = problems(&seed_with(&[("topic.naming.strategy", given)]));
        assert!(
            msg.contains(&format!(
                "is not one of Debezium's built-in strategies; did you mean {near}?"
            )),
            "{msg}"
        );
    }
}

#[test]
fn lsn_flush_mode_and_its_deprecated_form() {
    let manual = |pairs: &[(&str, &str)]| {
        ConnectorConfig::from_map(&seed_with(pairs))
            .unwrap()
            .0
            .lsn_flush_manual
    };
    assert!(!manual(&[]));
    assert!(manual(&[("lsn.flush.mode", "manual")]));
    assert!(!manual(&[("lsn.flush.mode", "connector_and_driver")]));
    assert!(manual(&[("flush.lsn.source", "false")]));
    let msg = problems(&seed_with(&[
        ("lsn.flush.mode", "manual"),
        ("flush.lsn.source", "true"),
    ]));
    assert!(msg.contains("disagree"), "{msg}");
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[(
        "event.processing.failure.handling.mode",
        "skip",
    )]))
    .unwrap();
    assert!(c.processing_failure_skips);
}

#[test]
fn notification_channels_log_and_sink_and_what_is_refused() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("notification.enabled.channels", "log, sink"),
        ("notification.sink.topic.name", "notes"),
    ]))
    .unwrap();
    assert!(c.records.notifications.log);
    assert_eq!(c.records.notifications.sink_topic.as_deref(), Some("notes"));
    let msg = problems(&seed_with(&[(
        "notification.enabled.channels",
        "sink,jmx,kafka",
    )]));
    assert!(
        msg.contains("lists sink, which needs notification.sink.topic.name"),
        "{msg}"
    );
    assert!(msg.contains("the jmx channel needs a JVM"), "{msg}");
    assert!(
        msg.contains("\"kafka\" is not a notification channel pgcdc has"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[
        ("notification.enabled.channels", "sink"),
        ("notification.sink.topic.name", "bad topic!"),
    ]));
    assert!(
        msg.contains(
            "notification.sink.topic.name: topic name \"bad topic!\" has the character ' '"
        ),
        "{msg}"
    );
}

#[test]
fn the_regex_naming_strategies_need_their_regex_and_replacement() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        (
            "topic.naming.strategy",
            "io.debezium.schema.DefaultRegexTopicNamingStrategy",
        ),
        ("topic.regex", "loja\\.(.*)"),
        ("topic.replacement", "all"),
        ("topic.key.enforce.uniqueness", "false"),
    ]))
    .unwrap();
    assert_eq!(c.topic_naming.data_topic("loja", ".", "public", "t"), "all");
    assert_eq!(c.topic_naming.key_field("loja", ".", "public", "t"), None);
    let msg = problems(&seed_with(&[(
        "topic.naming.strategy",
        "io.debezium.schema.SchemaRegexTopicNamingStrategy",
    )]));
    assert!(
        msg.contains("needs topic.regex and topic.replacement"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[
        (
            "topic.naming.strategy",
            "io.debezium.schema.SchemaRegexTopicNamingStrategy",
        ),
        ("topic.regex", "a(b"),
        ("topic.replacement", "x"),
        ("topic.key.field.regex", "k"),
    ]));
    assert!(
        msg.contains("topic.regex or topic.replacement is not a regular expression"),
        "{msg}"
    );
    assert!(
        msg.contains(
            "topic.key.field.replacement must be non-empty when topic.key.field.regex is set"
        ),
        "{msg}"
    );
}

#[test]
fn snapshot_threads_are_read_and_bounded() {
    let c = ConnectorConfig::from_map(&seed_with(&[
        ("snapshot.max.threads", "4"),
        ("snapshot.max.threads.multiplier", "3"),
        ("legacy.snapshot.max.threads", "true"),
    ]))
    .unwrap()
    .0;
    assert_eq!(
        c.snapshot_threads,
        crate::config::SnapshotThreads {
            threads: 4,
            multiplier: 3,
            legacy: true
        }
    );
    let defaults = ConnectorConfig::from_map(&seed_with(&[])).unwrap().0;
    assert_eq!(defaults.snapshot_threads.threads, 1);
    assert_eq!(defaults.snapshot_threads.multiplier, 1);
    let msg = problems(&seed_with(&[("snapshot.max.threads", "65")]));
    assert!(
        msg.contains("snapshot.max.threads=65 is too large"),
        "{msg}"
    );
    let msg = problems(&seed_with(&[("snapshot.max.threads", "0")]));
    assert!(msg.contains("expected an integer >= 1"), "{msg}");
}

#[test]
fn a_host_list_names_the_hosts_to_try_in_order_with_one_port_or_one_per_host() {
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[])).unwrap();
    assert!(
        c.database.other_hosts.is_empty(),
        "one host: nothing else to try"
    );
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("database.hostname", "pg-a, pg-b,pg-c"),
        ("database.port", "6000"),
    ]))
    .unwrap();
    assert_eq!(
        (c.database.hostname.as_str(), c.database.port),
        ("pg-a", 6000)
    );
    assert_eq!(
        c.database.other_hosts,
        [("pg-b".to_string(), 6000), ("pg-c".to_string(), 6000)]
    );
    let (c, _) = ConnectorConfig::from_map(&seed_with(&[
        ("database.hostname", "pg-a,pg-b"),
        ("database.port", "6000,6001"),
    ]))
    .unwrap();
    assert_eq!(c.database.port, 6000);
    assert_eq!(c.database.other_hosts, [("pg-b".to_string(), 6001)]);
    let msg = problems(&seed_with(&[
        ("database.hostname", "pg-a,pg-b,pg-c"),
        ("database.port", "6000,6001"),
    ]));
    assert!(msg.contains("lists 2 ports for the 3 hosts"), "{msg}");
    let msg = problems(&seed_with(&[("database.hostname", "pg-a,,pg-b")]));
    assert!(msg.contains("has an empty host"), "{msg}");
}
