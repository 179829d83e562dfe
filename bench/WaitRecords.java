// Waits until Kafka topics hold an expected number of records, counted as the sum over their
// partitions of (high watermark - low watermark); used by scripts/bench-compare.sh to time
// Debezium (and to see when pgcdc's records land), which confirm LSNs to PostgreSQL only now
// and then. It never creates a topic (the Admin client does not auto-create).
//
// Run with the broker's own jars (compiled once by the bench, or as a single-file program):
//   java -cp "target/services/kafka/lib/*" bench/WaitRecords.java 127.0.0.1:59092 1000000 900 cmp.public.t
// Arguments: <bootstrap.servers> <expected records> <timeout seconds> <topic>...
// Prints, each on its own line, with the wall clock as epoch seconds (microseconds) and this
// JVM's own cpu time in nanoseconds (so that the bench can leave it out of other figures):
//   ready <epoch> <cpu ns>           connected to the cluster (polling from now on, every 50 ms)
//   first <epoch> <count>            the first poll that saw a record
//   done <epoch> <count> <cpu ns>    the first poll that saw the expected count
// Exit status: 0 done; 1 timeout or error; 3 more records than expected (duplicates).
// A topic that does not exist yet counts 0 records.

import java.lang.management.ManagementFactory;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

public class WaitRecords {
    static final long POLL_MS = 50;

    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    static String stamp() {
        Instant now = Instant.now();
        return String.format("%d.%06d", now.getEpochSecond(), now.getNano() / 1000);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: WaitRecords <bootstrap.servers> <expected> <timeout-s> <topic>...");
            System.exit(2);
        }
        long expected = Long.parseLong(args[1]);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[2]));
        List<String> topics = new ArrayList<>();
        for (int i = 3; i < args.length; i++) topics.add(args[i]);

        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "bench-wait-records");
        try (Admin admin = Admin.create(props)) {
            admin.describeCluster().clusterId().get(60, TimeUnit.SECONDS);
            System.out.println("ready " + stamp() + " " + cpuNanos());
            System.out.flush();
            Map<String, List<TopicPartition>> parts = new HashMap<>();
            boolean seenFirst = false;
            String lastError = "";
            while (true) {
                long count = 0;
                boolean complete = true;
                try {
                    for (String topic : topics) {
                        List<TopicPartition> tps = parts.get(topic);
                        if (tps == null) {
                            tps = partitions(admin, topic);
                            if (tps == null) { complete = false; continue; }
                            parts.put(topic, tps);
                        }
                        count += records(admin, tps);
                    }
                } catch (ExecutionException e) {
                    // A topic just created may have no leader yet: try again at the next poll.
                    complete = false;
                    lastError = String.valueOf(e.getCause());
                }
                if (count > 0 && !seenFirst) {
                    seenFirst = true;
                    System.out.println("first " + stamp() + " " + count);
                    System.out.flush();
                }
                if (complete && count == expected) {
                    System.out.println("done " + stamp() + " " + count + " " + cpuNanos());
                    System.out.flush();
                    return;
                }
                if (count > expected) {
                    System.out.println("over " + stamp() + " " + count);
                    System.out.flush();
                    System.exit(3);
                }
                if (System.nanoTime() > deadline) {
                    System.err.println("WaitRecords: " + count + " of " + expected + " records after the timeout"
                            + (lastError.isEmpty() ? "" : "; last error: " + lastError));
                    System.exit(1);
                }
                Thread.sleep(POLL_MS);
            }
        }
    }

    // The topic's partitions, or null while it does not exist.
    static List<TopicPartition> partitions(Admin admin, String topic) throws Exception {
        try {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get(topic);
            List<TopicPartition> tps = new ArrayList<>();
            d.partitions().forEach(p -> tps.add(new TopicPartition(topic, p.partition())));
            return tps;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) return null;
            throw e;
        }
    }

    static long records(Admin admin, List<TopicPartition> tps) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
        for (TopicPartition tp : tps) {
            latest.put(tp, OffsetSpec.latest());
            earliest.put(tp, OffsetSpec.earliest());
        }
        Map<TopicPartition, ListOffsetsResultInfo> hi = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, ListOffsetsResultInfo> lo = admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS);
        long n = 0;
        for (TopicPartition tp : tps) n += hi.get(tp).offset() - lo.get(tp).offset();
        return n;
    }
}
