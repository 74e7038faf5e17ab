-- cache 001: what coreq computes once per build-id and reuses for every
-- later core of the same binaries.  Everything here can be deleted at any
-- time; it is rebuilt on demand.

-- One row per module build-id: its compiled CFI table (unwind/cfi_table.h).
-- format is the table's serialisation version; a row of another version is
-- ignored and replaced.
CREATE TABLE unwind_tables (
    build_id   TEXT    NOT NULL PRIMARY KEY,  -- lower-case hex
    format     INTEGER NOT NULL,              -- CQ_CFI_TABLE_VERSION
    rows       INTEGER NOT NULL,              -- number of pc ranges, for inspection
    blob       BLOB    NOT NULL,              -- the serialised table
    created    INTEGER NOT NULL               -- unix time
);
