// Creates a Kafka topic with topic-level configs and waits until every partition has a leader;
// used by scripts/bench-latency.sh to create each run's topic with
// message.timestamp.type=LogAppendTime before the system under test starts (neither pgcdc nor
// Kafka Connect can set that config when they create a topic themselves).
//
// Run with the broker's own jars (compiled once by the bench, or as a single-file program):
//   java -cp "target/services/kafka/lib/*" bench/CreateTopic.java 127.0.0.1:59092 lat.public.t 1 1 \
//     message.timestamp.type=LogAppendTime
// Arguments: <bootstrap.servers> <topic> <partitions> <replication factor> [<config>=<value>]...
// Exit status: 0 created and every partition has a leader; 1 error (the topic exists, timeout, ...).

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;

public class CreateTopic {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: CreateTopic <bootstrap.servers> <topic> <partitions> <replication factor> [key=value]...");
            System.exit(2);
        }
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        short replication = Short.parseShort(args[3]);
        Map<String, String> configs = new HashMap<>();
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("CreateTopic: not key=value: " + args[i]);
                System.exit(2);
            }
            configs.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "bench-create-topic");
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, replication).configs(configs)))
                    .all().get(60, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                            .get(30, TimeUnit.SECONDS).get(topic);
                    if (d.partitions().size() == partitions
                            && d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
                        break;
                    }
                } catch (ExecutionException e) {
                    // Metadata not propagated yet: try again.
                }
                if (System.nanoTime() > deadline) {
                    System.err.println("CreateTopic: " + topic + " has no leader for every partition after 60 s");
                    System.exit(1);
                }
                Thread.sleep(50);
            }
            System.out.println(topic);
        }
    }
}
