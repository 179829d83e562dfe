package loja.pedidos;

import java.time.format.DateTimeParseException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * Event time for the windows: the order's own time ({@code criado_em} in the event), not the
 * Kafka record's timestamp (the time the connector published it). A replay therefore puts every
 * order in the same window as the first run did.
 */
public final class PedidoTimestampExtractor implements TimestampExtractor {

    /**
     * @return the order's time in epoch milliseconds
     * @throws StreamsException when the value is not an order or its time does not parse: the
     *         event is malformed and no window would be right for it. The application stops
     *         with this error, naming the record, as it does for a value that does not
     *         deserialize (Kafka Streams' default, LogAndFail): skipping the event would change
     *         the revenue silently. Returning -1 instead would drop it and count it in
     *         {@code dropped-records-total}.
     */
    @Override
    public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
        if (!(record.value() instanceof Pedido pedido)) {
            throw new StreamsException("no order in " + where(record) + ": cannot take its event time");
        }
        try {
            return pedido.criadoEmMillis();
        } catch (DateTimeParseException e) {
            throw new StreamsException("criado_em '" + pedido.criadoEm() + "' in " + where(record)
                    + " is not an ISO-8601 time with an offset", e);
        }
    }

    private static String where(ConsumerRecord<Object, Object> record) {
        return record.topic() + "-" + record.partition() + "@" + record.offset();
    }
}
