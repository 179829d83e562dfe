/*
 * The configuration of the example's S3 sink: the property names and defaults of Aiven's S3 sink
 * connector for Apache Kafka (io.aiven.kafka.connect.s3.AivenKafkaConnectS3SinkConnector), the
 * subset this example uses. The file.* and format.* properties are read by Aiven's connector
 * library (io.aiven:commons-for-apache-kafka-connect) exactly as Aiven's connector reads them.
 */
package pgcdc.seed.s3;

import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.types.Password;

import io.aiven.kafka.connect.common.config.AivenCommonConfig;
import io.aiven.kafka.connect.common.config.CompressionType;
import io.aiven.kafka.connect.common.config.OutputFieldType;

public final class SeedS3SinkConfig extends AivenCommonConfig {
    public static final String AWS_ACCESS_KEY_ID = "aws.access.key.id";
    public static final String AWS_SECRET_ACCESS_KEY = "aws.secret.access.key";
    public static final String AWS_S3_BUCKET_NAME = "aws.s3.bucket.name";
    public static final String AWS_S3_ENDPOINT = "aws.s3.endpoint";
    public static final String AWS_S3_REGION = "aws.s3.region";
    public static final String FILE_NAME_PREFIX = "file.name.prefix";

    public SeedS3SinkConfig(final Map<String, String> props) {
        super(configDef(), props);
    }

    public static ConfigDef configDef() {
        final ConfigDef def = new ConfigDef();
        def.define(AWS_ACCESS_KEY_ID, Type.PASSWORD, null, Importance.MEDIUM,
            "AWS access key id; unset: the AWS SDK's default credential chain");
        def.define(AWS_SECRET_ACCESS_KEY, Type.PASSWORD, null, Importance.MEDIUM, "AWS secret access key");
        def.define(AWS_S3_BUCKET_NAME, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(),
            Importance.HIGH, "the bucket the objects are written to");
        def.define(AWS_S3_ENDPOINT, Type.STRING, null, Importance.LOW,
            "an S3-compatible endpoint (path-style requests); unset: AWS S3 of aws.s3.region");
        def.define(AWS_S3_REGION, Type.STRING, "us-east-1", Importance.MEDIUM, "the AWS region");
        def.define(FILE_NAME_PREFIX, Type.STRING, "", Importance.MEDIUM, "a prefix put before every object name");
        def.define(FILE_NAME_TEMPLATE_CONFIG, Type.STRING, null, Importance.MEDIUM,
            "the object name template; default {{topic}}-{{partition}}-{{start_offset}} + the compression extension");
        def.define(FILE_MAX_RECORDS, Type.INT, 0, ConfigDef.Range.atLeast(0), Importance.MEDIUM,
            "the most records in one object (0: no limit; an object is written at each offset commit)");
        def.define(FILE_NAME_TIMESTAMP_TIMEZONE, Type.STRING, "UTC", Importance.LOW,
            "the time zone of the {{timestamp}} variable");
        def.define(FILE_NAME_TIMESTAMP_SOURCE, Type.STRING, "wallclock", Importance.LOW,
            "the time of the {{timestamp}} variable: wallclock or event (the first record's timestamp)");
        addCompressionTypeConfig(def, CompressionType.GZIP);
        addOutputFieldsFormatConfigGroup(def, OutputFieldType.VALUE);
        addKafkaBackoffPolicy(def);
        return def;
    }

    String bucket() {
        return getString(AWS_S3_BUCKET_NAME);
    }

    String endpoint() {
        return getString(AWS_S3_ENDPOINT);
    }

    String region() {
        return getString(AWS_S3_REGION);
    }

    String prefix() {
        return getString(FILE_NAME_PREFIX);
    }

    String accessKeyId() {
        final Password p = getPassword(AWS_ACCESS_KEY_ID);
        return p == null ? null : p.value();
    }

    String secretAccessKey() {
        final Password p = getPassword(AWS_SECRET_ACCESS_KEY);
        return p == null ? null : p.value();
    }
}
