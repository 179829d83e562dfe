package loja.pedidos;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * Creates and deletes the pipeline's topics (the Kafka command-line tools are not needed).
 *
 * <p>Usage: {@code Topics BOOTSTRAP create NAME:PARTITIONS...} (a topic that exists is left as
 * it is), {@code Topics BOOTSTRAP delete REGEX} (every topic whose whole name matches) or
 * {@code Topics BOOTSTRAP delete-groups REGEX} (every consumer group whose id matches: a sink's
 * committed offsets would outlive the topics deleted and created again under the same names).
 */
public final class Topics {

    private Topics() {}

    public static void main(String[] args) throws InterruptedException, ExecutionException {
        if (args.length < 3 || !Set.of("create", "delete", "delete-groups").contains(args[1])) {
            System.err.println(
                    "usage: Topics BOOTSTRAP create NAME:PARTITIONS... | delete REGEX | delete-groups REGEX");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(p)) {
            if (args[1].equals("delete-groups")) {
                Pattern pattern = Pattern.compile(args[2]);
                List<String> ids = new ArrayList<>();
                for (var group : admin.listGroups().all().get()) {
                    if (pattern.matcher(group.groupId()).matches()) {
                        ids.add(group.groupId());
                    }
                }
                // A member killed a moment ago stays in its group until its session times out:
                // retry while a group is not empty, for up to a minute.
                long deadline = System.currentTimeMillis() + 60_000;
                for (String id : ids) {
                    while (true) {
                        try {
                            admin.deleteConsumerGroups(List.of(id)).all().get();
                            break;
                        } catch (ExecutionException e) {
                            if (e.getCause() instanceof GroupIdNotFoundException) {
                                break;
                            }
                            if (!(e.getCause() instanceof GroupNotEmptyException)
                                    || System.currentTimeMillis() > deadline) {
                                throw e;
                            }
                            Thread.sleep(500);
                        }
                    }
                }
                System.out.println("deleted " + ids.size() + " consumer groups matching " + args[2]);
            } else if (args[1].equals("create")) {
                for (int i = 2; i < args.length; i++) {
                    String[] t = args[i].split(":");
                    NewTopic topic = new NewTopic(t[0], Integer.parseInt(t[1]), (short) 1);
                    try {
                        admin.createTopics(List.of(topic)).all().get();
                    } catch (ExecutionException e) {
                        if (!(e.getCause() instanceof TopicExistsException)) {
                            throw e;
                        }
                    }
                }
            } else {
                Pattern pattern = Pattern.compile(args[2]);
                List<String> names = new ArrayList<>();
                for (String name : admin.listTopics().names().get()) {
                    if (pattern.matcher(name).matches()) {
                        names.add(name);
                    }
                }
                admin.deleteTopics(names).all().get();
                // Deletion completes in the background: wait until the names are gone, so that
                // topics of the same names can be created right after.
                long deadline = System.currentTimeMillis() + 60_000;
                while (admin.listTopics().names().get().stream().anyMatch(names::contains)) {
                    if (System.currentTimeMillis() > deadline) {
                        System.err.println("topics still listed 60 s after their deletion: " + names);
                        System.exit(1);
                    }
                    Thread.sleep(200);
                }
                System.out.println("deleted " + names.size() + " topics matching " + args[2]);
            }
        }
    }
}
