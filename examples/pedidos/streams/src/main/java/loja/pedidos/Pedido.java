package loja.pedidos;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/**
 * One order-created event, as the outbox EventRouter publishes it on {@code pedidos.criados}:
 * the outbox row's JSON payload, expanded ({@code table.expand.json.payload=true}) and written
 * without a schema envelope ({@code value.converter.schemas.enable=false}), for example
 * {@code {"pedido_id":17,"cliente_id":3,"total":59.9,"criado_em":"2026-12-07T10:02:00.000Z"}}.
 *
 * @param pedidoId  the order's id (pedidos.id)
 * @param clienteId the client's id; also the record's key, as the JSON string {@code "3"}
 * @param total     the order's total; the seed aggregates it as a double
 * @param criadoEm  the order's own time, ISO-8601 with an offset: the event time
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record Pedido(
        @JsonProperty(value = "pedido_id", required = true) long pedidoId,
        @JsonProperty(value = "cliente_id", required = true) long clienteId,
        @JsonProperty(value = "total", required = true) double total,
        @JsonProperty(value = "criado_em", required = true) String criadoEm) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The order's time in epoch milliseconds.
     *
     * @throws DateTimeParseException when {@code criado_em} is not ISO-8601 with an offset
     */
    public long criadoEmMillis() {
        return OffsetDateTime.parse(criadoEm).toInstant().toEpochMilli();
    }

    /** A serde for the event: JSON both ways; a value that is not such an event fails with its topic named. */
    public static Serde<Pedido> serde() {
        Serializer<Pedido> serializer = (topic, pedido) -> {
            try {
                return pedido == null ? null : JSON.writeValueAsBytes(pedido);
            } catch (IOException e) {
                throw new SerializationException("cannot write an order as JSON for " + topic, e);
            }
        };
        Deserializer<Pedido> deserializer = (topic, bytes) -> {
            if (bytes == null) {
                return null;
            }
            try {
                return JSON.readValue(bytes, Pedido.class);
            } catch (IOException e) {
                throw new SerializationException("a record on " + topic + " is not an order-created event "
                        + "(a JSON object with pedido_id, cliente_id, total, criado_em): is the connector's "
                        + "value.converter JsonConverter with schemas.enable=false and "
                        + "table.expand.json.payload=true?", e);
            }
        };
        return Serdes.serdeFrom(serializer, deserializer);
    }
}
