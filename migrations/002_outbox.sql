-- The transactional outbox table, in the shape Debezium's EventRouter reads with its default
-- options. Create it in your application's schema; applications insert one row per event in
-- the same transaction as the data change it describes (see docs/transforms.md, "Outbox").
--
--   id             event id            -> header "id"
--   aggregatetype  routing value       -> topic outbox.event.<aggregatetype>
--   aggregateid    aggregate id        -> Kafka key (same aggregate, same partition, in order)
--   type           event type          -> informational; emit it with
--                                         table.fields.additional.placement=type:header:eventType
--   payload        event body (jsonb)  -> Kafka value
--   timestamp      optional event time -> Kafka record timestamp with
--                                         table.field.event.timestamp=timestamp
--
-- "timestamp" must be timestamp WITHOUT time zone: the router accepts only Debezium's
-- Timestamp, MicroTimestamp and NanoTimestamp types there, and a timestamptz column (a
-- ZonedTimestamp string) fails every event. The default is the commit-time clock in UTC.

CREATE TABLE IF NOT EXISTS outbox (
    id             uuid         PRIMARY KEY,
    aggregatetype  varchar(255) NOT NULL,
    aggregateid    varchar(255) NOT NULL,
    type           varchar(255) NOT NULL,
    payload        jsonb,
    "timestamp"    timestamp    DEFAULT (now() AT TIME ZONE 'utc')
);

-- An outbox created by 001_loja.sql predates the column.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS "timestamp" timestamp DEFAULT (now() AT TIME ZONE 'utc');
