-- Schema version 1 for PostgreSQL: the same tables as migrations/0001 (see
-- there for what each holds), in PostgreSQL's types. Text is COLLATE "C",
-- so that ids sort and compare byte by byte as in SQLite; blobs are bytea;
-- integers bigint.

-- What SQLite keeps in its file header: the application id that marks a
-- schema as agentstate's, and the schema version. One row.
CREATE TABLE IF NOT EXISTS agentstate_header (
    application_id BIGINT NOT NULL,
    schema_version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS schema_history (
    version    INTEGER PRIMARY KEY,
    name       TEXT COLLATE "C" NOT NULL,
    applied_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);

-- versions and metadata_j are written beside the msgpack columns by the
-- same statements: the channel versions for the history walk, and the
-- metadata in typed JSON for List filters (dialect_pg.go).
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id     TEXT COLLATE "C" NOT NULL,
    checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    parent_id     TEXT COLLATE "C",
    run_id        TEXT COLLATE "C",
    checkpoint    BYTEA NOT NULL,
    metadata      BYTEA NOT NULL,
    versions      JSONB NOT NULL DEFAULT '{}',
    metadata_j    JSONB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE INDEX IF NOT EXISTS checkpoints_by_run ON checkpoints(run_id) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS checkpoints_by_parent ON checkpoints(thread_id, checkpoint_ns, parent_id);

CREATE TABLE IF NOT EXISTS blobs (
    thread_id     TEXT COLLATE "C" NOT NULL,
    checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
    channel       TEXT COLLATE "C" NOT NULL,
    version       TEXT COLLATE "C" NOT NULL,
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    type          TEXT COLLATE "C" NOT NULL,
    data          BYTEA,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);
CREATE INDEX IF NOT EXISTS blobs_by_checkpoint ON blobs(thread_id, checkpoint_ns, checkpoint_id);

CREATE TABLE IF NOT EXISTS writes (
    thread_id     TEXT COLLATE "C" NOT NULL,
    checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    task_id       TEXT COLLATE "C" NOT NULL,
    idx           BIGINT NOT NULL,
    channel       TEXT COLLATE "C" NOT NULL,
    type          TEXT COLLATE "C" NOT NULL,
    data          BYTEA,
    consumed_by   TEXT COLLATE "C",
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);

-- Filters in the server. agentstate_match(doc, conds) is true when the
-- typed JSON doc meets every condition of conds, a JSON list the engine
-- compiles from a caller's filter and binds as one parameter; it follows
-- the Go rules of records_filter.go (a missing field equals nothing and
-- differs from everything but null; numbers compare by value, or strictly
-- by kind; strings byte by byte; NaN never compares).

-- The kind of a typed JSON value: null bool int float str map array other.
CREATE OR REPLACE FUNCTION agentstate_kind(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE jsonb_typeof(v)
    WHEN 'object' THEN CASE WHEN v ? '$f' THEN 'float' WHEN v ? '$s' THEN 'str' WHEN v ? '$a' THEN 'array'
        WHEN v ? '$x' THEN 'other' ELSE 'map' END
    WHEN 'number' THEN 'int' WHEN 'string' THEN 'str' WHEN 'boolean' THEN 'bool' WHEN 'null' THEN 'null' END;

-- The bytes of a string, or NULL.
CREATE OR REPLACE FUNCTION agentstate_bytes(v jsonb) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE jsonb_typeof(v)
    WHEN 'string' THEN convert_to(v #>> '{}', 'UTF8')
    WHEN 'object' THEN decode(v ->> '$s', 'hex') END;

-- A float's value, or NULL (for NaN too: it never compares).
CREATE OR REPLACE FUNCTION agentstate_float(v jsonb) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN jsonb_typeof(v -> '$f') = 'number' THEN (v -> '$f')::numeric::float8
    WHEN v ->> '$f' = 'Infinity' THEN 'Infinity'::float8
    WHEN v ->> '$f' = '-Infinity' THEN '-Infinity'::float8 END;

-- Any number as float8, or NULL.
CREATE OR REPLACE FUNCTION agentstate_num8(v jsonb) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) = 'number' THEN v::numeric::float8 ELSE agentstate_float(v) END;

CREATE OR REPLACE FUNCTION agentstate_cmp(a numeric, b numeric) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN a < b THEN -1 WHEN a > b THEN 1 WHEN a = b THEN 0 END;

CREATE OR REPLACE FUNCTION agentstate_cmp(a float8, b float8) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN a < b THEN -1 WHEN a > b THEN 1 WHEN a = b THEN 0 END;

CREATE OR REPLACE FUNCTION agentstate_cmp(a bytea, b bytea) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN a < b THEN -1 WHEN a > b THEN 1 WHEN a = b THEN 0 END;

-- Deep equality of two typed JSON values (lists and maps of a filter).
CREATE OR REPLACE FUNCTION agentstate_deq(a jsonb, b jsonb, strict boolean) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    ka text := agentstate_kind(a);
    kb text := agentstate_kind(b);
    k text;
    i int;
BEGIN
    IF ka IN ('int', 'float') AND kb IN ('int', 'float') THEN
        IF strict AND ka <> kb THEN
            RETURN false;
        END IF;
        IF ka = 'int' AND kb = 'int' THEN
            RETURN a::numeric = b::numeric;
        END IF;
        RETURN coalesce(agentstate_num8(a) = agentstate_num8(b), false);
    END IF;
    IF ka IS DISTINCT FROM kb THEN
        RETURN false;
    END IF;
    IF ka = 'str' THEN
        RETURN agentstate_bytes(a) = agentstate_bytes(b);
    END IF;
    IF ka = 'array' THEN
        IF jsonb_array_length(a -> '$a') <> jsonb_array_length(b -> '$a') THEN
            RETURN false;
        END IF;
        FOR i IN 0 .. jsonb_array_length(a -> '$a') - 1 LOOP
            IF NOT agentstate_deq(a -> '$a' -> i, b -> '$a' -> i, strict) THEN
                RETURN false;
            END IF;
        END LOOP;
        RETURN true;
    END IF;
    IF ka = 'map' THEN
        IF (SELECT count(*) FROM jsonb_object_keys(a)) <> (SELECT count(*) FROM jsonb_object_keys(b)) THEN
            RETURN false;
        END IF;
        FOR k IN SELECT jsonb_object_keys(a) LOOP
            IF NOT b ? k OR NOT agentstate_deq(a -> k, b -> k, strict) THEN
                RETURN false;
            END IF;
        END LOOP;
        RETURN true;
    END IF;
    RETURN a = b;
END
$$;

-- Equality of a value with a condition's operand; NULL when they cannot
-- be compared.
CREATE OR REPLACE FUNCTION agentstate_eq(v jsonb, c jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE c ->> 'k'
    WHEN 'null' THEN jsonb_typeof(v) = 'null'
    WHEN 'bool' THEN v = c -> 'v'
    WHEN 'str' THEN agentstate_bytes(v) = decode(c ->> 'h', 'hex')
    WHEN 'int' THEN CASE WHEN jsonb_typeof(v) = 'number' THEN v::numeric = (c -> 'v')::numeric
        WHEN (c ->> 's')::boolean THEN false
        ELSE agentstate_float(v) = (c -> 'v')::numeric::float8 END
    WHEN 'float' THEN CASE WHEN (c ->> 's')::boolean AND jsonb_typeof(v) = 'number' THEN false
        ELSE agentstate_num8(v) = (c ->> 'f')::float8 END
    WHEN 'cont' THEN agentstate_kind(v) IN ('map', 'array') AND agentstate_deq(v, c -> 'v', (c ->> 's')::boolean)
    WHEN 'other' THEN v = c -> 'v' END;

-- The order of a value against a number or string operand: -1, 0, 1, or
-- NULL when they cannot be ordered.
CREATE OR REPLACE FUNCTION agentstate_ord(v jsonb, c jsonb) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE c ->> 'k'
    WHEN 'str' THEN agentstate_cmp(agentstate_bytes(v), decode(c ->> 'h', 'hex'))
    WHEN 'int' THEN CASE WHEN jsonb_typeof(v) = 'number' THEN agentstate_cmp(v::numeric, (c -> 'v')::numeric)
        ELSE agentstate_cmp(agentstate_float(v), (c -> 'v')::numeric::float8) END
    WHEN 'float' THEN agentstate_cmp(agentstate_num8(v), (c ->> 'f')::float8) END;

CREATE OR REPLACE FUNCTION agentstate_match(doc jsonb, conds jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    c jsonb;
    v jsonb;
    ok boolean;
BEGIN
    IF doc IS NULL THEN
        RETURN false; -- a value that does not decode matches nothing
    END IF;
    FOR i IN 0 .. jsonb_array_length(conds) - 1 LOOP
        c := conds -> i;
        v := doc #> string_to_array(c ->> 'p', '.');
        IF v IS NULL THEN
            IF c ->> 'o' = 'ne' AND c ->> 'k' <> 'null' THEN
                CONTINUE;
            END IF;
            RETURN false;
        END IF;
        ok := CASE c ->> 'o'
            WHEN 'map' THEN agentstate_kind(v) = 'map'
            WHEN 'eq' THEN coalesce(agentstate_eq(v, c), false)
            WHEN 'ne' THEN NOT coalesce(agentstate_eq(v, c), false)
            WHEN 'gt' THEN coalesce(agentstate_ord(v, c) > 0, false)
            WHEN 'ge' THEN coalesce(agentstate_ord(v, c) >= 0, false)
            WHEN 'lt' THEN coalesce(agentstate_ord(v, c) < 0, false)
            WHEN 'le' THEN coalesce(agentstate_ord(v, c) <= 0, false)
            ELSE false END;
        IF NOT ok THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END
$$;
