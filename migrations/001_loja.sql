-- The seed's example schema (database "loja"): orders and the transactional outbox.
-- Applied by scripts/demo.sh and by docker-compose (mounted as /docker-entrypoint-initdb.d).

CREATE TABLE IF NOT EXISTS public.pedidos (
    id          bigserial PRIMARY KEY,
    cliente_id  bigint        NOT NULL,
    status      varchar(32)   NOT NULL DEFAULT 'novo',
    total       numeric(12,2) NOT NULL,
    criado_em   timestamptz   NOT NULL DEFAULT now()
);

-- Outbox table in the shape Debezium's EventRouter expects by default: each row is one event,
-- routed to the topic outbox.event.<aggregatetype>, keyed by aggregateid, with payload as value
-- and header id. Applications insert into it in the same transaction as their data.
CREATE TABLE IF NOT EXISTS public.outbox (
    id             uuid         PRIMARY KEY,
    aggregatetype  varchar(255) NOT NULL,
    aggregateid    varchar(255) NOT NULL,
    type           varchar(255) NOT NULL,
    payload        jsonb
);
