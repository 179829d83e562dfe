-- pgcdc schema capture, version 1 (see docs/schema-changes.md).
--
-- Two event triggers write each table DDL into the WAL as transactional logical decoding
-- messages (prefix 'pgcdc.schema_change'), inside the transaction that ran it, so they sit
-- between the rows written before and after the change. One message per affected table (a
-- message stays small whatever the number of partitions), as JSON:
--   {"version":1,"tag":<command tag>,"ddl":<current_query(), cut at 65,536 characters>,
--    "tables":[<table>]}
-- where the table is {"change":"CREATE"|"ALTER"|"DROP","oid","schema","table",...} with,
-- for CREATE and ALTER, its definition read from the catalog after the command, and
-- "previous": the schema, name and column names (by attnum) recorded before the command.
--
-- The previous names live in pgcdc.schema_state, an UNLOGGED table: logical decoding never
-- sees it, so it gives no change events. After a crash restart or on a promoted standby it
-- is empty until the next install; a table without a row has "previous": null.
--
-- Installing is idempotent. The functions are SECURITY DEFINER (the installing role, which
-- must be a superuser to create event triggers), so the roles that run DDL need no rights
-- on the pgcdc schema. Installing refuses a schema pgcdc that it did not create, or that a
-- role other than a superuser owns: SECURITY DEFINER code must not reach objects others control.

SET LOCAL client_min_messages = warning;

DO $$
DECLARE
    owner_is_superuser boolean;
    marker text;
BEGIN
    SELECT r.rolsuper, obj_description(n.oid, 'pg_namespace')
      INTO owner_is_superuser, marker
      FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner WHERE n.nspname = 'pgcdc';
    IF FOUND AND (marker IS DISTINCT FROM 'pgcdc schema capture' OR NOT owner_is_superuser) THEN
        RAISE EXCEPTION 'a schema named pgcdc exists that the schema capture did not create (or that a role other than a superuser owns): rename or drop it, then install again';
    END IF;
END
$$;

-- The triggers of an earlier install stay out of the way until they are created again below
-- (in this transaction: other sessions' DDL meanwhile still sees the old ones).
DROP EVENT TRIGGER IF EXISTS pgcdc_schema_change_ddl;
DROP EVENT TRIGGER IF EXISTS pgcdc_schema_change_drop;

CREATE SCHEMA IF NOT EXISTS pgcdc;
COMMENT ON SCHEMA pgcdc IS 'pgcdc schema capture';
REVOKE ALL ON SCHEMA pgcdc FROM PUBLIC;

-- A cache of names, rebuilt at each install (so it always has this shape and no triggers).
DROP TABLE IF EXISTS pgcdc.schema_state;
CREATE UNLOGGED TABLE pgcdc.schema_state (
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
                   'typmod', CASE WHEN a.atttypmod = -1 AND t.typtype = 'd'
                                  THEN t.typtypmod ELSE a.atttypmod END,
                   'type_name', t.typname,
                   'type_expression', format_type(a.atttypid, a.atttypmod),
                   'base_type_name', b.typname,
                   'base_type_category', b.typcategory::text,
                   'not_null', a.attnotnull,
                   'default', CASE WHEN a.attgenerated = '' THEN pg_get_expr(d.adbin, d.adrelid) END,
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

-- Writes one capture message for one table.
CREATE OR REPLACE FUNCTION pgcdc.emit(tag text, tbl jsonb) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
SELECT pg_logical_emit_message(true, 'pgcdc.schema_change', jsonb_build_object(
    'version', 1, 'tag', tag, 'ddl', left(current_query(), 65536),
    'tables', jsonb_build_array(tbl))::text)
$$;

CREATE OR REPLACE FUNCTION pgcdc.on_ddl_command_end() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rel oid;
    def jsonb;
    prev pgcdc.schema_state%ROWTYPE;
    change text;
BEGIN
    -- An ALTER TABLE on a partitioned or inherited table changes its partitions and children
    -- too, and ALTER SCHEMA ... RENAME every table in it, which the command list does not
    -- name: they are added (the connector's filters decide which it keeps).
    FOR rel IN
        WITH RECURSIVE named AS (
            SELECT cmd.objid FROM pg_event_trigger_ddl_commands() cmd
             WHERE cmd.classid = 'pg_class'::regclass
             UNION
            SELECT c.oid FROM pg_event_trigger_ddl_commands() cmd
              JOIN pg_class c ON c.relnamespace = cmd.objid
             WHERE cmd.classid = 'pg_namespace'::regclass AND TG_TAG = 'ALTER SCHEMA'),
        tree AS (
            SELECT objid FROM named
             UNION
            SELECT i.inhrelid FROM tree JOIN pg_inherits i ON i.inhparent = tree.objid
             WHERE TG_TAG = 'ALTER TABLE')
        SELECT objid FROM tree ORDER BY 1
    LOOP
        CONTINUE WHEN NOT pgcdc.is_captured_table(rel);
        def := pgcdc.table_definition(rel);
        SELECT * INTO prev FROM pgcdc.schema_state WHERE relid = rel;
        IF FOUND THEN
            change := 'ALTER';
            def := def || jsonb_build_object('previous', jsonb_build_object(
                'schema', prev.schema_name, 'table', prev.table_name, 'columns', prev.columns));
        ELSE
            change := CASE WHEN TG_TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO',
                                           'CREATE SCHEMA')
                           THEN 'CREATE' ELSE 'ALTER' END;
            def := def || jsonb_build_object('previous', NULL);
        END IF;
        PERFORM pgcdc.emit(TG_TAG, def || jsonb_build_object('change', change));
        PERFORM pgcdc.record_state(def);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION pgcdc.on_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d record;
BEGIN
    FOR d IN
        SELECT o.objid, o.schema_name, o.object_name FROM pg_event_trigger_dropped_objects() o
         WHERE o.classid = 'pg_class'::regclass AND o.objsubid = 0
           AND o.object_type = 'table' AND NOT o.is_temporary
           AND o.schema_name <> 'pgcdc'
         ORDER BY o.objid
    LOOP
        PERFORM pgcdc.emit(TG_TAG, jsonb_build_object(
            'change', 'DROP', 'oid', d.objid::int8, 'schema', d.schema_name, 'table', d.object_name));
        DELETE FROM pgcdc.schema_state WHERE relid = d.objid;
    END LOOP;
END
$$;

CREATE EVENT TRIGGER pgcdc_schema_change_ddl ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'CREATE SCHEMA', 'ALTER TABLE',
                 'ALTER SCHEMA', 'COMMENT')
    EXECUTE FUNCTION pgcdc.on_ddl_command_end();

CREATE EVENT TRIGGER pgcdc_schema_change_drop ON sql_drop
    EXECUTE FUNCTION pgcdc.on_sql_drop();

-- The tables that exist now, so that their first change after the install names them.
SELECT pgcdc.record_state(pgcdc.table_definition(c.oid))
  FROM pg_class c WHERE pgcdc.is_captured_table(c.oid);
