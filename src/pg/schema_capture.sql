-- pgcdc schema capture, version 1 (see docs/schema-changes.md).
--
-- Two event triggers write each table DDL into the WAL as a transactional logical decoding
-- message (prefix 'pgcdc.schema_change'), inside the transaction that ran it, so the message
-- sits between the rows written before and after the change. The message is JSON:
--   {"version":1,"tag":<command tag>,"ddl":<current_query()>,"tables":[<table>...]}
-- where each table is {"change":"CREATE"|"ALTER"|"DROP","oid","schema","table",...} with,
-- for CREATE and ALTER, its definition read from the catalog after the command, and
-- "previous": the schema, name and column names (by attnum) recorded before the command.
--
-- The previous names live in pgcdc.schema_state, an UNLOGGED table: logical decoding never
-- sees it, so it gives no change events. After a crash restart or on a promoted standby it
-- is empty until the next install; a table without a row has "previous": null.
--
-- Installing is idempotent. The functions are SECURITY DEFINER (the installing role, which
-- must be a superuser to create event triggers), so the roles that run DDL need no rights
-- on the pgcdc schema.

CREATE SCHEMA IF NOT EXISTS pgcdc;

CREATE UNLOGGED TABLE IF NOT EXISTS pgcdc.schema_state (
    relid oid PRIMARY KEY,
    schema_name text NOT NULL,
    table_name text NOT NULL,
    columns jsonb NOT NULL
);

CREATE OR REPLACE FUNCTION pgcdc.schema_capture_version() RETURNS int
LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;

-- Whether a relation is a table whose changes logical decoding can carry.
CREATE OR REPLACE FUNCTION pgcdc.is_captured_table(rel oid) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT EXISTS (
    SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = rel AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p'
       AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pgcdc')
       AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%')
$$;

-- A table's definition as the catalog has it now.
CREATE OR REPLACE FUNCTION pgcdc.table_definition(rel oid) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT jsonb_build_object(
    'oid', c.oid::int8,
    'schema', n.nspname,
    'table', c.relname,
    'kind', c.relkind::text,
    'comment', obj_description(c.oid, 'pg_class'),
    'primary_key', COALESCE((
        SELECT jsonb_agg(a.attname ORDER BY k.i)
          FROM pg_index x
         CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, i)
          JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
         WHERE x.indrelid = c.oid AND x.indisprimary), '[]'::jsonb),
    'columns', COALESCE((
        SELECT jsonb_agg(jsonb_build_object(
                   'name', a.attname,
                   'attnum', a.attnum,
                   'type_oid', a.atttypid::int8,
                   'typmod', a.atttypmod,
                   'type_name', t.typname,
                   'type_expression', format_type(a.atttypid, a.atttypmod),
                   'base_type_name', b.typname,
                   'base_type_category', b.typcategory::text,
                   'not_null', a.attnotnull,
                   'default', pg_get_expr(d.adbin, d.adrelid),
                   'identity', a.attidentity::text,
                   'generated', a.attgenerated::text,
                   'comment', col_description(c.oid, a.attnum),
                   'enum_values', CASE WHEN b.typtype = 'e' THEN (
                       SELECT jsonb_agg(e.enumlabel ORDER BY e.enumsortorder)
                         FROM pg_enum e WHERE e.enumtypid = b.oid) END)
                 ORDER BY a.attnum)
          FROM pg_attribute a
          JOIN pg_type t ON t.oid = a.atttypid
          JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]'::jsonb))
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = rel
$$;

-- Records a table's schema, name and column names for the next command's "previous".
CREATE OR REPLACE FUNCTION pgcdc.record_state(def jsonb) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
INSERT INTO pgcdc.schema_state (relid, schema_name, table_name, columns)
SELECT (def->>'oid')::oid, def->>'schema', def->>'table',
       COALESCE((SELECT jsonb_object_agg(col->>'attnum', col->>'name')
                   FROM jsonb_array_elements(def->'columns') col), '{}'::jsonb)
ON CONFLICT (relid) DO UPDATE
   SET schema_name = EXCLUDED.schema_name, table_name = EXCLUDED.table_name,
       columns = EXCLUDED.columns
$$;

CREATE OR REPLACE FUNCTION pgcdc.on_ddl_command_end() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    changes jsonb := '[]'::jsonb;
    rel oid;
    def jsonb;
    prev pgcdc.schema_state%ROWTYPE;
    change text;
BEGIN
    -- An ALTER TABLE on a partitioned table changes its partitions too, which the command
    -- list does not name: they are added (the connector's filters decide which it keeps).
    FOR rel IN
        WITH named AS (
            SELECT cmd.objid FROM pg_event_trigger_ddl_commands() cmd
             WHERE cmd.classid = 'pg_class'::regclass)
        SELECT objid FROM named
         UNION
        SELECT t.relid FROM named, pg_partition_tree(named.objid) t
         WHERE TG_TAG = 'ALTER TABLE' AND t.relid <> named.objid
         ORDER BY 1
    LOOP
        CONTINUE WHEN NOT pgcdc.is_captured_table(rel);
        def := pgcdc.table_definition(rel);
        SELECT * INTO prev FROM pgcdc.schema_state WHERE relid = rel;
        IF FOUND THEN
            change := 'ALTER';
            def := def || jsonb_build_object('previous', jsonb_build_object(
                'schema', prev.schema_name, 'table', prev.table_name, 'columns', prev.columns));
        ELSE
            change := CASE WHEN TG_TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
                           THEN 'CREATE' ELSE 'ALTER' END;
            def := def || jsonb_build_object('previous', NULL);
        END IF;
        changes := changes || jsonb_build_array(def || jsonb_build_object('change', change));
        PERFORM pgcdc.record_state(def);
    END LOOP;
    IF jsonb_array_length(changes) > 0 THEN
        PERFORM pg_logical_emit_message(true, 'pgcdc.schema_change', jsonb_build_object(
            'version', 1, 'tag', TG_TAG, 'ddl', current_query(), 'tables', changes)::text);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION pgcdc.on_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    changes jsonb := '[]'::jsonb;
    d record;
BEGIN
    FOR d IN
        SELECT o.objid, o.schema_name, o.object_name FROM pg_event_trigger_dropped_objects() o
         WHERE o.classid = 'pg_class'::regclass AND o.objsubid = 0
           AND o.object_type = 'table' AND NOT o.is_temporary
           AND o.schema_name <> 'pgcdc'
         ORDER BY o.objid
    LOOP
        changes := changes || jsonb_build_array(jsonb_build_object(
            'change', 'DROP', 'oid', d.objid::int8, 'schema', d.schema_name, 'table', d.object_name));
        DELETE FROM pgcdc.schema_state WHERE relid = d.objid;
    END LOOP;
    IF jsonb_array_length(changes) > 0 THEN
        PERFORM pg_logical_emit_message(true, 'pgcdc.schema_change', jsonb_build_object(
            'version', 1, 'tag', TG_TAG, 'ddl', current_query(), 'tables', changes)::text);
    END IF;
END
$$;

DROP EVENT TRIGGER IF EXISTS pgcdc_schema_change_ddl;
CREATE EVENT TRIGGER pgcdc_schema_change_ddl ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE', 'COMMENT')
    EXECUTE FUNCTION pgcdc.on_ddl_command_end();

DROP EVENT TRIGGER IF EXISTS pgcdc_schema_change_drop;
CREATE EVENT TRIGGER pgcdc_schema_change_drop ON sql_drop
    EXECUTE FUNCTION pgcdc.on_sql_drop();

-- The tables that exist now, so that their first change after the install names them.
SELECT pgcdc.record_state(pgcdc.table_definition(c.oid))
  FROM pg_class c WHERE pgcdc.is_captured_table(c.oid);
