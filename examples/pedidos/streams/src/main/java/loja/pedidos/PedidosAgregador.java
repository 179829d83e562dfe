package loja.pedidos;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The seed's Kafka Streams application: the revenue per client in 5-minute windows of event
 * time, exactly once, from {@code pedidos.criados} to {@code pedidos.receita-5min}.
 *
 * <p>The topology is the seed's, with the serdes it left implicit: the input is already keyed by
 * client (the outbox row's {@code aggregateid}), so {@code groupByKey} needs no repartition topic;
 * the windows are
 * {@code TimeWindows.ofSizeAndGrace(5 min, 1 min)} over the order's own time
 * ({@link PedidoTimestampExtractor}); the sums live in the state store {@code receita-por-cliente}
 * (RocksDB, with its changelog topic); each update goes to the output topic keyed by the
 * windowed client key ({@code WindowedSerdes.timeWindowedSerdeFrom(String.class, 300000)}),
 * valued by a double.
 *
 * <p>Settings come from the environment (defaults in brackets): {@code KAFKA_BOOTSTRAP}
 * [localhost:9092], {@code APPLICATION_ID} [pedidos-agregador], {@code INPUT_TOPIC}
 * [pedidos.criados], {@code OUTPUT_TOPIC} [pedidos.receita-5min], {@code GRACE_MINUTES} [1],
 * {@code STANDBY_REPLICAS} [1], {@code STATE_DIR} [the JVM's temporary directory /
 * kafka-streams], {@code INSTANCE} [a label for the log lines].
 *
 * <p>It prints, on standard output, one line per state change (with the active and standby
 * tasks once running), one per store partition restored (records and milliseconds), and the
 * tasks' {@code dropped-records-total} whenever it changes: records dropped because their window
 * had closed (late beyond the grace period).
 */
public final class PedidosAgregador {

    /** The window size: 5 minutes. */
    public static final Duration WINDOW = Duration.ofMinutes(5);

    private PedidosAgregador() {}

    /**
     * The seed's topology.
     *
     * @param input  the order-created events' topic
     * @param output the revenue topic
     * @param grace  how long after a window's end a late order still counts
     */
    public static Topology topology(String input, String output, Duration grace) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Pedido.serde())
                        .withTimestampExtractor(new PedidoTimestampExtractor()))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(WINDOW, grace))
                .aggregate(
                        () -> 0.0,
                        (cliente, pedido, total) -> total + pedido.total(),
                        Materialized.<String, Double, WindowStore<Bytes, byte[]>>as("receita-por-cliente")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Double()))
                .toStream()
                .to(output, Produced.with(
                        WindowedSerdes.timeWindowedSerdeFrom(String.class, WINDOW.toMillis()), Serdes.Double()));
        return b.build();
    }

    /** The seed's settings: exactly_once_v2 and one standby replica, plus where to connect. */
    static Properties settings() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, env("APPLICATION_ID", "pedidos-agregador"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, env("KAFKA_BOOTSTRAP", "localhost:9092"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, Integer.parseInt(env("STANDBY_REPLICAS", "1")));
        p.put(StreamsConfig.STATE_DIR_CONFIG, env("STATE_DIR",
                System.getProperty("java.io.tmpdir") + "/kafka-streams"));
        // A killed instance is noticed after the session timeout (45 s by default); 10 s keeps the
        // takeover short. Heartbeats every 2 s.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 2_000);
        return p;
    }

    public static void main(String[] args) throws InterruptedException {
        String instance = env("INSTANCE", "pedidos-agregador");
        Duration grace = Duration.ofMinutes(Long.parseLong(env("GRACE_MINUTES", "1")));
        Topology topology = topology(env("INPUT_TOPIC", "pedidos.criados"),
                env("OUTPUT_TOPIC", "pedidos.receita-5min"), grace);
        KafkaStreams streams = new KafkaStreams(topology, settings());
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicLong failed = new AtomicLong();
        streams.setStateListener((now, before) -> {
            say(instance, "state " + before + " -> " + now + tasks(streams, now));
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        streams.setGlobalStateRestoreListener(restoreLog(instance));
        streams.setUncaughtExceptionHandler(e -> {
            say(instance, "error: " + e);
            failed.incrementAndGet();
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        ScheduledExecutorService metrics = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "dropped-records");
            t.setDaemon(true);
            return t;
        });
        AtomicLong lastDropped = new AtomicLong(0);
        metrics.scheduleAtFixedRate(() -> {
            long dropped = droppedRecords(streams);
            if (lastDropped.getAndSet(dropped) != dropped) {
                say(instance, "dropped-records-total=" + dropped);
            }
        }, 200, 200, TimeUnit.MILLISECONDS);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long dropped = droppedRecords(streams);
            streams.close(Duration.ofSeconds(30));
            say(instance, "closed; dropped-records-total=" + dropped);
        }));
        say(instance, "starting: " + topology.describe().toString().replace('\n', ' ').replaceAll(" +", " "));
        streams.start();
        stopped.await();
        System.exit(failed.get() > 0 ? 1 : 0);
    }

    /**
     * The sum of the active tasks' {@code dropped-records-total} metrics (group
     * {@code stream-task-metrics}): records dropped because their window had closed. A task's
     * metric goes with the task when it moves to another instance.
     */
    static long droppedRecords(KafkaStreams streams) {
        return Math.round(streams.metrics().entrySet().stream()
                .filter(e -> e.getKey().group().equals("stream-task-metrics")
                        && e.getKey().name().equals("dropped-records-total"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
                .sum());
    }

    private static String tasks(KafkaStreams streams, KafkaStreams.State state) {
        if (state != KafkaStreams.State.RUNNING) {
            return "";
        }
        var threads = streams.metadataForLocalThreads();
        String active = threads.stream().flatMap(t -> t.activeTasks().stream())
                .map(t -> t.taskId().toString()).sorted().collect(Collectors.joining(","));
        String standby = threads.stream().flatMap(t -> t.standbyTasks().stream())
                .map(t -> t.taskId().toString()).sorted().collect(Collectors.joining(","));
        return " (active tasks [" + active + "], standby tasks [" + standby + "])";
    }

    private static StateRestoreListener restoreLog(String instance) {
        Map<TopicPartition, Long> started = new java.util.concurrent.ConcurrentHashMap<>();
        return new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                started.put(tp, System.nanoTime());
                say(instance, "restore start " + store + " " + tp + ": offsets " + start + ".." + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long restored) {}

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                Long t0 = started.remove(tp);
                long ms = t0 == null ? 0 : (System.nanoTime() - t0) / 1_000_000;
                say(instance, "restored " + store + " " + tp + ": " + total + " records in " + ms + " ms");
            }
        };
    }

    private static void say(String instance, String line) {
        System.out.println(java.time.Instant.now() + " " + instance + ": " + line);
        System.out.flush();
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }
}
