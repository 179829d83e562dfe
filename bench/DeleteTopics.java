// Deletes the Kafka topics whose whole name matches a regular expression; used by
// scripts/bench.sh to remove its bench<stamp>.public.t topics (kcat cannot delete topics).
//
// Run as a single-file program with the broker's own jars (JDK 11+):
//   java -cp "target/services/kafka/lib/*" bench/DeleteTopics.java 127.0.0.1:59092 'bench[0-9TZ]+\.public\.t'
// Prints each deleted topic; exits 0 when nothing matched, 1 on an error.

import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class DeleteTopics {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: DeleteTopics <bootstrap.servers> <topic regex>");
            System.exit(2);
        }
        Pattern pattern = Pattern.compile(args[1]);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        try (Admin admin = Admin.create(props)) {
            List<String> doomed = admin.listTopics().names().get(60, TimeUnit.SECONDS).stream()
                    .filter(t -> pattern.matcher(t).matches())
                    .sorted()
                    .collect(Collectors.toList());
            if (doomed.isEmpty()) {
                return;
            }
            admin.deleteTopics(doomed).all().get(120, TimeUnit.SECONDS);
            doomed.forEach(System.out::println);
        }
    }
}
