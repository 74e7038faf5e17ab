-- cache 008: what coreq computes once per build-id and reuses for every
-- later core of the same binaries.  Everything here is derived data: it can
-- be deleted at any time and is rebuilt on demand.  So the cache keeps no
-- history of migrations: this file makes the whole schema, and a cache file
-- an older coreq left (schema 1 to 7) is emptied and made again by it
-- (libcore/db/migrate.c).  A later change is migration 9, as for the
-- database.

-- One row per (build-id, identity of the files used): the module's ELF file
-- (its real path, device, inode, size and modification time, as opened) and
-- its separate debuginfo file (the same, or "none"), or for a module read
-- from the core's memory (the vdso) the bytes themselves.  Rows of the
-- tables below are keyed by this id: an entry is served only to a run that
-- finds the very same files, so a file that only claims a build-id
-- (`--exe`, `--sysroot`, `--debug-dir`, or a module path a crafted core
-- names) never serves its symbols, unwind rows or types to a later core of
-- the genuine binary.
CREATE TABLE sources (
    id         INTEGER PRIMARY KEY,
    build_id   TEXT    NOT NULL,              -- lower-case hex
    identity   BLOB    NOT NULL,              -- libcore/symbols/provenance.h
    created    INTEGER NOT NULL,              -- unix time
    UNIQUE (build_id, identity)
);

-- One row per source: its compiled CFI table (unwind/cfi_table.h).  format is
-- the table's serialisation version; a row of another version is ignored and
-- replaced.
CREATE TABLE unwind_tables (
    source     INTEGER NOT NULL PRIMARY KEY REFERENCES sources (id),
    build_id   TEXT    NOT NULL,              -- lower-case hex (the source's)
    format     INTEGER NOT NULL,              -- CQ_CFI_TABLE_VERSION
    rows       INTEGER NOT NULL,              -- number of pc ranges, for inspection
    blob       BLOB    NOT NULL,              -- the serialised table
    created    INTEGER NOT NULL               -- unix time
);

-- One row per (source, link-time address looked up, whether debuginfo was
-- found then): the frames the symbolizer gave for it, inlined calls first
-- (libcore/symbols/symbolizer.c documents the blob).  Keeping the debuginfo
-- flag in the key means installing debuginfo later is noticed.
CREATE TABLE symbols (
    source     INTEGER NOT NULL REFERENCES sources (id),
    build_id   TEXT    NOT NULL,  -- lower-case hex (the source's)
    address    INTEGER NOT NULL,  -- link-time address (pc, or pc - 1 for return addresses)
    debuginfo  INTEGER NOT NULL,  -- 1 if DWARF debuginfo was available
    format     INTEGER NOT NULL,  -- blob encoding version
    frames     BLOB    NOT NULL,
    PRIMARY KEY (source, address, debuginfo)
) WITHOUT ROWID;

-- Programs whose analysis reads their heap (an async runtime's scan of all
-- writable memory), by the executable's build-id, so that a later core of
-- the same build compressed as one stream is kept whole as it streams
-- rather than read through the keep plan and then a second time
-- (libcore/model/stream_image.c; `coreq info` says which).
CREATE TABLE stream_hints (
    build_id   TEXT    NOT NULL PRIMARY KEY,  -- the executable's, lower-case hex
    reads_heap INTEGER NOT NULL,
    created    INTEGER NOT NULL               -- unix time
);

-- What the heap scan of a program's core looked for (the word values of its
-- async runtimes' vtables and coroutine functions), by the executable's
-- build-id, as offsets from the lowest address of the file that holds them:
-- a later core of the same build compressed as one stream keeps the pages
-- holding such words as it streams, and its scan reads those pages alone
-- instead of decompressing the core again, once the values it asks for are
-- found within the note's (libcore/model/scan_keep.h; `coreq info` says
-- whether it did).
CREATE TABLE scan_notes (
    build_id TEXT    NOT NULL PRIMARY KEY,  -- the executable's, lower-case hex
    note     TEXT    NOT NULL,              -- lines "LO HI PATH", LO and HI in hex
    created  INTEGER NOT NULL               -- unix time
);

-- The blobs the async runtimes derive from a module (a type index, frame
-- layouts, ...), keyed by the module's files, the runtime and the blob's
-- name: a runtime declares its blobs in its descriptor
-- (unwind/async/runtime.h), and adding one needs no migration.  One row per
-- (source, runtime, blob name): the bytes the runtime stored (its own file
-- documents them).  A row of another format is ignored and replaced.
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
