/*
 * The example's S3 sink task. It works the way Aiven's S3 sink task does: put() hands each record
 * to the record grouper of Aiven's library (one open object per topic partition, named from
 * file.name.template; a new one after file.max.records records), and flush(), which the worker
 * calls before it commits the consumer offsets (every offset.flush.interval.ms), writes every
 * open object with one PUT and starts over. The offsets are committed only after every PUT of
 * that flush succeeded: a crash before the commit means the records are read again and written
 * again, under the same object names when the names depend only on the records (topic,
 * partition, start offset, event time), since the next object starts at the committed offset.
 */
package pgcdc.seed.s3;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.aiven.kafka.connect.common.grouper.RecordGrouper;
import io.aiven.kafka.connect.common.grouper.RecordGrouperFactory;
import io.aiven.kafka.connect.common.output.OutputWriter;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

public final class SeedS3SinkTask extends SinkTask {
    private static final Logger LOG = LoggerFactory.getLogger(SeedS3SinkTask.class);

    private SeedS3SinkConfig config;
    private S3Client s3;
    private RecordGrouper grouper;

    @Override
    public void start(final Map<String, String> props) {
        config = new SeedS3SinkConfig(props);
        s3 = client(config);
        try {
            grouper = RecordGrouperFactory.newRecordGrouper(config);
        } catch (final Exception e) {
            throw new ConnectException("unsupported file.name.template " + config.getFilename(), e);
        }
        if (config.getKafkaRetryBackoffMs() != null) {
            context.timeout(config.getKafkaRetryBackoffMs());
        }
    }

    private static S3Client client(final SeedS3SinkConfig config) {
        final S3ClientBuilder b = S3Client.builder()
            .region(Region.of(config.region()))
            .httpClientBuilder(ApacheHttpClient.builder())
            // S3-compatible servers need not know the SDK's newer default CRC trailers.
            .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
            .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED);
        if (config.accessKeyId() != null) {
            b.credentialsProvider(StaticCredentialsProvider.create(
                AwsBasicCredentials.create(config.accessKeyId(), config.secretAccessKey())));
        }
        if (config.endpoint() != null) {
            b.endpointOverride(URI.create(config.endpoint())).forcePathStyle(true);
        }
        return b.build();
    }

    @Override
    public void put(final Collection<SinkRecord> records) {
        records.forEach(grouper::put);
    }

    @Override
    public void flush(final Map<TopicPartition, OffsetAndMetadata> offsets) {
        try {
            grouper.records().forEach(this::write);
        } finally {
            // On a failed PUT the worker does not commit and rewinds to the committed offsets.
            grouper.clear();
        }
    }

    private void write(final String name, final List<SinkRecord> records) {
        if (records.isEmpty()) {
            return;
        }
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (OutputWriter writer = OutputWriter.builder()
                .withCompressionType(config.getCompressionType())
                .withExternalProperties(config.originalsStrings())
                .withOutputFields(config.getOutputFields())
                .withEnvelopeEnabled(config.envelopeEnabled())
                .build(bytes, config.getFormatType())) {
            writer.writeRecords(records);
        } catch (final IOException e) {
            throw new ConnectException("writing " + name, e);
        }
        final String key = config.prefix() + name;
        s3.putObject(PutObjectRequest.builder().bucket(config.bucket()).key(key).build(),
            RequestBody.fromBytes(bytes.toByteArray()));
        LOG.info("wrote s3://{}/{} ({} records, {} bytes)", config.bucket(), key, records.size(), bytes.size());
    }

    @Override
    public void stop() {
        if (s3 != null) {
            s3.close();
        }
    }

    @Override
    public String version() {
        return SeedS3SinkConnector.VERSION;
    }
}
