/*
 * The example's S3 sink connector: the connector side (configuration, task configs).
 */
package pgcdc.seed.s3;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

public final class SeedS3SinkConnector extends SinkConnector {
    static final String VERSION = "0.1.0";

    private Map<String, String> props;

    @Override
    public void start(final Map<String, String> props) {
        new SeedS3SinkConfig(props); // fails the connector early on a bad configuration
        this.props = Map.copyOf(props);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return SeedS3SinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(final int maxTasks) {
        final List<Map<String, String>> configs = new ArrayList<>(maxTasks);
        for (int i = 0; i < maxTasks; i++) {
            configs.add(props);
        }
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return SeedS3SinkConfig.configDef();
    }

    @Override
    public String version() {
        return VERSION;
    }
}
