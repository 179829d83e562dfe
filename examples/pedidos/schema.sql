-- The seed's tables for the pipeline example: orders and the transactional outbox.
-- Applied by scripts/seed-pipeline.sh to its own database (loja_pipeline).

CREATE TABLE IF NOT EXISTS pedidos (
    id          bigserial     PRIMARY KEY,
    cliente_id  bigint        NOT NULL,
    status      varchar(32)   NOT NULL DEFAULT 'novo',
    total       numeric(12,2) NOT NULL,
    -- The order's own time: the event time the Streams application windows by. It is not the
    -- commit time: a late order (entered after the fact) has a time in the past.
    criado_em   timestamptz   NOT NULL DEFAULT now()
);

-- Debezium's EventRouter reads this shape with its default options: aggregatetype routes
-- (route.topic.replacement=${routedByValue}.criados puts 'pedidos' on pedidos.criados),
-- aggregateid is the Kafka key (the client id: the Streams application groups by it without a
-- repartition topic), payload is the value (expanded: table.expand.json.payload=true).
CREATE TABLE IF NOT EXISTS outbox (
    id             uuid         PRIMARY KEY,
    aggregatetype  varchar(255) NOT NULL,
    aggregateid    varchar(255) NOT NULL,
    type           varchar(255) NOT NULL,
    payload        jsonb
);

-- What the application does for each order, in ONE transaction: the order row and its event.
-- The event's payload carries what the consumers need (client, total, the order's time), so
-- they never read the pedidos table. Returns the order's id.
CREATE OR REPLACE FUNCTION registrar_pedido(p_cliente bigint, p_total numeric, p_criado_em timestamptz,
                                            p_aggregatetype text DEFAULT 'pedidos')
RETURNS bigint LANGUAGE sql AS $$
    WITH p AS (
        INSERT INTO pedidos (cliente_id, total, criado_em)
        VALUES (p_cliente, p_total, p_criado_em)
        RETURNING id, cliente_id, total, criado_em
    ), e AS (
        INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
        SELECT gen_random_uuid(), p_aggregatetype, p.cliente_id::text, 'PedidoCriado',
               jsonb_build_object(
                   'pedido_id', p.id,
                   'cliente_id', p.cliente_id,
                   'total', p.total,
                   'criado_em', to_char(p.criado_em AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        FROM p
    )
    SELECT id FROM p;
$$;

-- The revenue per client and 5-minute window, computed from the orders themselves: what the
-- Streams application's output must equal. window_start is in epoch milliseconds, like the
-- windowed key's start.
CREATE OR REPLACE VIEW receita_5min AS
SELECT cliente_id,
       (floor(extract(epoch FROM criado_em) / 300) * 300000)::bigint AS window_start,
       sum(total) AS receita,
       count(*) AS pedidos
FROM pedidos
GROUP BY 1, 2;
