-- cache 005: the C++20 coroutine types of a module (unwind/async/cxx.c), so
-- a later core of the same binary finds its coroutine frames without
-- walking the symbol table and reading DWARF again.

-- One row per source: the module's coroutines (gcc's NAME.Frame.actor /
-- .destroy, clang's NAME.resume / .destroy / .cleanup) with the frame
-- layout read from DWARF, at link-time addresses
-- (unwind/async/cxx_types_blob.c documents the blob).  A module without
-- coroutines has a row too (no types).  A row of another format is ignored
-- and replaced.
CREATE TABLE cxx_types (
    source     INTEGER NOT NULL PRIMARY KEY REFERENCES sources (id),
    build_id   TEXT    NOT NULL,              -- lower-case hex (the source's)
    format     INTEGER NOT NULL,              -- CQ_CXX_TYPES_BLOB_FORMAT
    blob       BLOB    NOT NULL,
    created    INTEGER NOT NULL               -- unix time
);
