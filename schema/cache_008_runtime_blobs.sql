-- cache 008: the blobs the async runtimes derive from a module (a Rust
-- type index, C++ coroutine frame layouts, ...), in one table keyed by the
-- module's files, the runtime and the blob's name: a runtime declares its
-- blobs in its descriptor (unwind/async/runtime.h), and adding one needs no
-- migration.  The cache is derived data: the per-runtime tables of
-- migrations 3 and 5 are dropped, and their blobs rebuilt on demand.

DROP TABLE rust_index;
DROP TABLE cxx_types;

-- One row per (source, runtime, blob name): the bytes the runtime stored
-- (its own file documents them).  A row of another format is ignored and
-- replaced.
CREATE TABLE runtime_blobs (
    source     INTEGER NOT NULL REFERENCES sources (id),
    build_id   TEXT    NOT NULL,              -- lower-case hex (the source's)
    runtime    TEXT    NOT NULL,              -- the runtime's name ("rust")
    name       TEXT    NOT NULL,              -- the blob's name within it ("index")
    format     INTEGER NOT NULL,              -- the blob's encoding version
    blob       BLOB    NOT NULL,
    created    INTEGER NOT NULL,              -- unix time
    PRIMARY KEY (source, runtime, name)
) WITHOUT ROWID;
