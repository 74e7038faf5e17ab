-- 004: the compact frames blob of every stack, and libwebsockets allocation
-- backtraces read from logs (`coreq lws ingest`).  Touches only stacks (one
-- new column) and its own lws_* tables.

-- The stack's frames as lws backtrace records: offsets, module ids and kinds
-- (libcore/formats/stack_blob.h documents the encoding).  NULL for stacks stored
-- before this version.
ALTER TABLE stacks ADD COLUMN frames_blob BLOB;

-- One row per log ingested by `coreq lws ingest`, identified by its content
-- and the ELF its addresses belong to: ingesting it again is a no-op.
CREATE TABLE lws_logs (
    id          INTEGER PRIMARY KEY,
    identity    TEXT    NOT NULL UNIQUE,  -- "<bytes>-<hash of the content>-<ELF build-id>"
    path        TEXT    NOT NULL,         -- where it was ingested from ("-": standard input)
    module_id   INTEGER NOT NULL REFERENCES modules (id), -- the ELF
    bytes       INTEGER NOT NULL,
    lines       INTEGER NOT NULL,
    records     INTEGER NOT NULL,         -- ~m# records stored
    malformed   INTEGER NOT NULL,         -- ~m# records that did not decode (skipped)
    ingested_at INTEGER NOT NULL          -- unix seconds
);

-- The allocations of each log, by site: how many of its records had this
-- stack and asked for this many bytes.
CREATE TABLE lws_allocations (
    log_id   INTEGER NOT NULL REFERENCES lws_logs (id),
    stack_id INTEGER NOT NULL REFERENCES stacks (id),
    size     INTEGER NOT NULL,            -- bytes one allocation asked for
    count    INTEGER NOT NULL,            -- records with this stack and size
    PRIMARY KEY (log_id, stack_id, size)
) WITHOUT ROWID;
CREATE INDEX lws_allocations_stack ON lws_allocations (stack_id);

-- Allocation sites over every log, heaviest first: the heap map.
CREATE VIEW v_lws_sites AS
SELECT a.stack_id, sum(a.count) AS allocations, CAST(total(a.count * a.size) AS INTEGER) AS bytes,
       count(DISTINCT a.log_id) AS logs,
       (SELECT function FROM frames f WHERE f.stack_id = a.stack_id AND f.idx = 0) AS top_function
FROM lws_allocations a
GROUP BY a.stack_id
ORDER BY bytes DESC;
