//! Integration tests against a real PostgreSQL (wal_level=logical) and real Kafka brokers,
//! started by `scripts/services.sh` (see `scripts/test.sh`). Every test gets its own
//! database, slot, publication and topics.

mod harness;

mod avro;
mod binary_tuples;
mod cli;
mod conformance;
mod connection;
mod connector;
mod crash;
mod delivery;
mod estate;
mod exactly_once;
mod faults;
mod incremental;
mod offsets;
mod outbox;
mod preflight;
mod producer;
mod records;
mod rest;
mod roundtrip;
mod schema_changes;
mod security;
mod seed;
mod snapshot;
mod streaming;

#[test]
fn murmur2_matches_kafka_java_client_test_vectors() {
    // Vectors from Kafka's UtilsTest.testMurmur2.
    let cases: [(&str, i32); 6] = [
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        (
            "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
            -58897971,
        ),
        ("abc", 479470107),
    ];
    for (input, want) in cases {
        assert_eq!(harness::murmur2(input.as_bytes()), want, "{input}");
    }
}
