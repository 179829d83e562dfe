//! The Kafka producer pgcdc builds on: properties of the (vendored, patched) librdkafka that
//! the throughput and CPU figures depend on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pgcdc::sink::kafka::{PRODUCER_DEFAULTS, PRODUCER_FORCED};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::statistics::Statistics;
use rdkafka::ClientContext;

use crate::harness::{env, unique};

/// Keeps the last statistics librdkafka emitted.
#[derive(Clone, Default)]
struct LastStats(Arc<Mutex<Option<Statistics>>>);

impl ClientContext for LastStats {
    fn stats(&self, statistics: Statistics) {
        *self.0.lock().unwrap() = Some(statistics);
    }
}

impl rdkafka::producer::ProducerContext for LastStats {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::producer::DeliveryResult<'_>, _: ()) {}
}

/// With pgcdc's producer settings (idempotent, acks=all, one request in flight), the broker
/// thread sleeps while a produce request is in flight. Unpatched librdkafka 2.12 wakes it
/// about a hundred times per request on a bulk load (it polls with a zero timeout until the
/// response arrives), which cost most of librdkafka's CPU time; see vendor/README.md.
/// Counted in wake-ups per request from librdkafka's own statistics, not timed.
#[test]
fn the_broker_thread_sleeps_while_a_produce_request_is_in_flight() {
    let topic = unique("producer_wakeups");
    let mut config = ClientConfig::new();
    for (k, v) in PRODUCER_DEFAULTS.iter().chain(PRODUCER_FORCED) {
        config.set(*k, *v);
    }
    config
        .set("bootstrap.servers", &env().kafka)
        .set("statistics.interval.ms", "100");
    let stats = LastStats::default();
    let producer: ThreadedProducer<LastStats> =
        config.create_with_context(stats.clone()).expect("producer");
    // 40 MB in 3.4 KB records (the size of a bench record), queued as fast as librdkafka
    // takes them: the queue stays full, so records always wait while a request is in flight.
    let value = vec![b'x'; 3400];
    let n = 12_000;
    for i in 0..n {
        let key = format!("{i}");
        let mut record = BaseRecord::<str, [u8]>::to(&topic)
            .key(&key)
            .payload(&value);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .expect("every record delivered");
    // Statistics of after the last delivery.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (wakeups, requests) = loop {
        std::thread::sleep(Duration::from_millis(200));
        let s = stats.0.lock().unwrap().clone();
        if let Some(s) = s {
            let produced: u64 = s
                .topics
                .get(&topic)
                .map_or(0, |t| t.partitions.values().map(|p| p.txmsgs).sum::<u64>());
            if produced >= n as u64 {
                let broker = s
                    .brokers
                    .values()
                    .filter(|b| b.nodeid >= 0)
                    .max_by_key(|b| b.tx)
                    .expect("a broker in the statistics");
                break (broker.wakeups.unwrap_or(0) as f64, broker.tx as f64);
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "statistics never showed {n} records sent"
        );
    };
    assert!(requests > 0.0, "no requests counted");
    let per_request = wakeups / requests;
    eprintln!("{wakeups} broker-thread wake-ups for {requests} requests ({per_request:.1} each)");
    assert!(
        per_request < 20.0,
        "the producer's broker thread woke {per_request:.1} times per request \
         ({wakeups} wake-ups, {requests} requests): it spins while a request is in flight; \
         is the librdkafka patch in vendor/ applied?"
    );
}
