//! Offsets in a Kafka topic, as Kafka Connect keeps them for Debezium: the record's key and
//! value bytes, its partition, a compacted topic, and a restart that resumes from them.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::ClientConfig;

use crate::harness::*;

const T: Duration = Duration::from_secs(120);

/// The topic's `cleanup.policy`.
async fn cleanup_policy(topic: &str) -> Option<String> {
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &env().kafka)
        .create()
        .expect("admin");
    let results = admin
        .describe_configs([&ResourceSpecifier::Topic(topic)], &AdminOptions::new())
        .await
        .expect("describe configs");
    results
        .into_iter()
        .flatten()
        .flat_map(|r| r.entries)
        .find(|e| e.name == "cleanup.policy")
        .and_then(|e| e.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_in_a_topic_are_connects_bytes_on_connects_partition_and_survive_a_restart() {
    let db = TestDb::create("offtopic").await;
    db.exec("CREATE TABLE public.o (id int PRIMARY KEY, v text); INSERT INTO o SELECT g, 'snap' FROM generate_series(1, 5) g")
        .await;
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique("offtopic");
    let offsets_topic = format!("{prefix}-offsets");
    let mut raw = base_config(&db, &prefix, &env().kafka, dir.path());
    raw.remove("offset.storage.file.filename");
    raw.insert("offsets.storage.topic".into(), offsets_topic.clone());
    raw.insert("offset.storage.partitions".into(), "3".into());
    let data = format!("{prefix}.public.o");

    let c = start(&raw);
    read_n(&env().kafka, &data, 5, T).await;
    db.exec("INSERT INTO o VALUES (6, 'streamed')").await;
    read_n(&env().kafka, &data, 6, T).await;
    let stats = c.stop().await.unwrap();
    assert_eq!(stats.snapshot_rows, 5);
    assert!(
        !dir.path().join("offsets.json").exists(),
        "no offsets file when a topic keeps them"
    );

    let key = format!(r#"["{prefix}",{{"server":"{prefix}"}}]"#);
    let records = read_until(&env().kafka, &offsets_topic, T, {
        let key = key.clone();
        move |recs: &[Rec]| {
            recs.iter().any(|r| {
                r.key.as_deref() == Some(key.as_bytes())
                    && r.value_json().is_some_and(|v| {
                        v.get("lsn_commit").is_some() && v.get("snapshot").is_none()
                    })
            })
        }
    })
    .await;
    let ours: Vec<&Rec> = records
        .iter()
        .filter(|r| r.key.as_deref() == Some(key.as_bytes()))
        .collect();
    assert_eq!(ours.len(), records.len(), "only this connector's records");
    for r in &ours {
        assert_eq!(
            r.partition,
            java_partition(key.as_bytes(), 3),
            "Kafka Connect's partition for the key"
        );
    }
    let last = ours.last().unwrap();
    let value = String::from_utf8(last.value.clone().unwrap()).unwrap();
    let fields: Vec<String> = last
        .value_json()
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        fields,
        [
            "lsn_proc",
            "messageType",
            "lsn_commit",
            "lsn",
            "txId",
            "ts_usec"
        ],
        "Debezium's offset map in its HashMap's order: {value}"
    );
    assert!(
        !value.contains(' '),
        "compact JSON as Connect writes it: {value}"
    );
    assert_eq!(
        cleanup_policy(&offsets_topic).await.as_deref(),
        Some("compact")
    );

    // A restart reads the topic: the snapshot is done, streaming resumes.
    let c = start(&raw);
    db.exec("INSERT INTO o VALUES (7, 'after restart')").await;
    read_until(&env().kafka, &data, T, |recs: &[Rec]| {
        recs.iter()
            .any(|r| r.value.is_some() && r.payload()["after"]["id"] == 7)
    })
    .await;
    let stats = c.stop().await.unwrap();
    assert_eq!(stats.snapshot_rows, 0, "no new snapshot after a restart");
    db.cleanup().await;
}
