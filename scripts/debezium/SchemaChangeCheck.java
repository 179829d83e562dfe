// Reads pgcdc's schema change records with Debezium's own code (3.6.1, from the harness's
// plugin directory) and checks them:
//  - each record's key and value schemas equal the ones Debezium's SchemaFactory builds for a
//    PostgreSQL connector config (SchemaChangeKey, SchemaChangeValue with the PostgreSQL source
//    block, Change, Table, Column: names, versions, field order, types, optional flags);
//  - each value is a valid Struct of that schema by Kafka Connect's own validation (required
//    fields present, every element of tableChanges and its columns included). Debezium's
//    ConnectTableChangeSerializer cannot read records back (its deserialize throws
//    UnsupportedOperationException in 3.6.1), so the model is not rebuilt.
// Usage: java -cp "<connect-lib>/*:<plugin dir>/*" SchemaChangeCheck.java BROKERS TOPIC PREFIX MIN_RECORDS
// Exit 0 when at least MIN_RECORDS records were read and every one passed.
import java.time.Duration;
import java.util.*;

import io.debezium.config.Configuration;
import io.debezium.connector.postgresql.PostgresConnectorConfig;
import io.debezium.relational.history.ConnectTableChangeSerializer;
import io.debezium.schema.SchemaFactory;
import io.debezium.schema.SchemaNameAdjuster;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.data.*;
import org.apache.kafka.connect.json.JsonConverter;

public class SchemaChangeCheck {
    public static void main(String[] args) throws Exception {
        String brokers = args[0], topic = args[1], prefix = args[2];
        int min = Integer.parseInt(args[3]);
        Configuration config = Configuration.create()
                .with("topic.prefix", prefix)
                .with("database.hostname", "localhost")
                .with("database.user", "u")
                .with("database.dbname", "d")
                .build();
        PostgresConnectorConfig connector = new PostgresConnectorConfig(config);
        SchemaNameAdjuster adjuster = SchemaNameAdjuster.NO_OP;
        ConnectTableChangeSerializer serializer = new ConnectTableChangeSerializer(adjuster);
        Schema keySchema = SchemaFactory.get().schemaHistoryConnectorKeySchema(adjuster, connector);
        Schema valueSchema = SchemaFactory.get()
                .schemaHistoryConnectorValueSchema(adjuster, connector, serializer);

        JsonConverter keys = new JsonConverter(), values = new JsonConverter();
        keys.configure(Map.of("schemas.enable", "true"), true);
        values.configure(Map.of("schemas.enable", "true"), false);
        Properties p = new Properties();
        p.put("bootstrap.servers", brokers);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("isolation.level", "read_committed");
        int read = 0, failed = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 60_000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    read++;
                    List<String> problems = check(r, keys, values, keySchema, valueSchema, serializer);
                    if (!problems.isEmpty()) {
                        failed++;
                        System.out.println("record " + r.offset() + ": " + String.join("; ", problems));
                    }
                }
            }
        }
        System.out.printf("schema change records read with Debezium's code: %d, failed: %d%n", read, failed);
        System.exit(read >= min && failed == 0 ? 0 : 1);
    }

    static List<String> check(ConsumerRecord<byte[], byte[]> r, JsonConverter keys, JsonConverter values,
            Schema keySchema, Schema valueSchema, ConnectTableChangeSerializer serializer) {
        List<String> problems = new ArrayList<>();
        SchemaAndValue key = keys.toConnectData(r.topic(), r.key());
        SchemaAndValue value = values.toConnectData(r.topic(), r.value());
        if (!keySchema.equals(key.schema())) {
            problems.add("key schema differs: " + key.schema() + " vs Debezium's " + keySchema);
        }
        for (Field f : valueSchema.fields()) {
            Field ours = value.schema().field(f.name());
            if (ours == null || ours.index() != f.index() || !f.schema().equals(ours.schema())) {
                problems.add("value field " + f.name() + " differs: "
                        + (ours == null ? "missing" : ours.index() + " " + ours.schema()) + " vs Debezium's "
                        + f.index() + " " + f.schema());
            }
        }
        if (!valueSchema.equals(value.schema())) {
            problems.add("value schema differs from Debezium's as a whole (name "
                    + value.schema().name() + ", version " + value.schema().version() + ")");
        }
        try {
            Struct v = (Struct) value.value();
            v.validate();
            ConnectSchema.validateValue(valueSchema, v);
            if (v.getArray("tableChanges").isEmpty()) {
                problems.add("no tableChanges");
            }
        } catch (RuntimeException e) {
            problems.add("not a valid value of Debezium's schema: " + e);
        }
        return problems;
    }
}
