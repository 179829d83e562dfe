package loja.pedidos;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.DoubleDeserializer;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * Compares the revenue topic with the revenue computed in SQL, and waits until they agree.
 *
 * <p>Usage: {@code ReceitaCheck BOOTSTRAP TOPIC EXPECTED_TSV TIMEOUT_SECONDS [LABEL]}, where
 * EXPECTED_TSV holds one line per client and window: {@code cliente_id, window_start (epoch ms),
 * receita, pedidos}, tab-separated (the view {@code receita_5min} of schema.sql, from
 * {@code psql -At -F $'\t'}).
 *
 * <p>It reads the topic from the start with {@code isolation.level=read_committed} (only what
 * the application's transactions committed) and keeps the last value of each windowed key. Once
 * it has read up to the end, it compares: the same clients and windows on both sides, and each
 * sum within a cent (the seed sums doubles; SQL sums the numeric totals exactly). While they
 * differ it reads on, until the timeout. Prints one line and exits 0 when they agree; prints
 * the first differences and exits 1 when the timeout passes first.
 */
public final class ReceitaCheck {

    private ReceitaCheck() {}

    /** The expected and the observed revenue of one client and window. */
    private record Key(long cliente, long windowStart) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = Long.compare(cliente, o.cliente);
            return c != 0 ? c : Long.compare(windowStart, o.windowStart);
        }

        @Override
        public String toString() {
            return "client " + cliente + " window " + Instant.ofEpochMilli(windowStart);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 4) {
            System.err.println("usage: ReceitaCheck BOOTSTRAP TOPIC EXPECTED_TSV TIMEOUT_SECONDS [LABEL]");
            System.exit(2);
        }
        String topic = args[1];
        String label = args.length > 4 ? args[4] : "revenue";
        long orders = 0;
        Map<Key, Double> expected = new TreeMap<>();
        for (String line : Files.readAllLines(Path.of(args[2]))) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split("\t");
            expected.put(new Key(Long.parseLong(f[0]), Long.parseLong(f[1])), Double.parseDouble(f[2]));
            orders += Long.parseLong(f[3]);
        }
        Instant deadline = Instant.now().plusSeconds(Long.parseLong(args[3]));
        Map<Key, Double> seen = new TreeMap<>();
        long records = 0;
        try (KafkaConsumer<Windowed<String>, Double> consumer = consumer(args[0])) {
            List<TopicPartition> partitions = partitions(consumer, topic, deadline);
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (true) {
                for (ConsumerRecord<Windowed<String>, Double> r : consumer.poll(Duration.ofMillis(500))) {
                    String client = r.key().key().replace("\"", "");
                    seen.put(new Key(Long.parseLong(client), r.key().window().start()), r.value());
                    records++;
                }
                if (!atEnd(consumer, partitions)) {
                    continue;
                }
                List<String> differences = differences(expected, seen);
                if (differences.isEmpty()) {
                    System.out.printf("%s: %d windows of %d clients (%d orders) equal the SQL sums within "
                            + "a cent, from %d records read_committed; largest difference %.6f%n",
                            label, expected.size(), clients(expected), orders, records, largest(expected, seen));
                    return;
                }
                if (Instant.now().isAfter(deadline)) {
                    System.out.printf("%s: FAILED after %s s: %d of %d windows differ from the SQL sums, e.g.:%n",
                            label, args[3], differences.size(), Math.max(expected.size(), seen.size()));
                    differences.stream().limit(10).forEach(d -> System.out.println("  " + d));
                    System.exit(1);
                }
            }
        }
    }

    private static KafkaConsumer<Windowed<String>, Double> consumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        Deserializer<Windowed<String>> keys =
                WindowedSerdes.timeWindowedSerdeFrom(String.class, PedidosAgregador.WINDOW.toMillis()).deserializer();
        return new KafkaConsumer<>(p, keys, new DoubleDeserializer());
    }

    /** The topic's partitions, waiting (until the deadline) for the topic to exist. */
    private static List<TopicPartition> partitions(KafkaConsumer<?, ?> consumer, String topic, Instant deadline) {
        while (true) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(5));
            if (infos != null && !infos.isEmpty()) {
                return infos.stream().map(i -> new TopicPartition(topic, i.partition())).toList();
            }
            if (Instant.now().isAfter(deadline)) {
                System.out.println("FAILED: topic " + topic + " does not exist: did the application start?");
                System.exit(1);
            }
        }
    }

    /** Whether the consumer has read every partition up to its last stable offset. */
    private static boolean atEnd(KafkaConsumer<?, ?> consumer, List<TopicPartition> partitions) {
        Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
        return partitions.stream().allMatch(tp -> consumer.position(tp) >= end.get(tp));
    }

    private static List<String> differences(Map<Key, Double> expected, Map<Key, Double> seen) {
        List<String> out = new ArrayList<>();
        TreeSet<Key> keys = new TreeSet<>(expected.keySet());
        keys.addAll(seen.keySet());
        for (Key k : keys) {
            Double want = expected.get(k);
            Double got = seen.get(k);
            if (want == null) {
                out.add(k + ": " + got + " in the topic, no order in SQL");
            } else if (got == null) {
                out.add(k + ": " + want + " in SQL, nothing in the topic");
            } else if (Math.abs(want - got) >= 0.005) {
                out.add(k + ": " + want + " in SQL, " + got + " in the topic");
            }
        }
        return out;
    }

    private static double largest(Map<Key, Double> expected, Map<Key, Double> seen) {
        return expected.entrySet().stream()
                .mapToDouble(e -> Math.abs(e.getValue() - seen.get(e.getKey()))).max().orElse(0);
    }

    private static long clients(Map<Key, Double> expected) {
        return expected.keySet().stream().map(Key::cliente).distinct().count();
    }
}
