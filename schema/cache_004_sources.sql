-- cache 004: every cached entry names the files it was computed from, so a
-- file that only claims a build-id (`--exe`, `--sysroot`, `--debug-dir`, or a
-- module path a crafted core names) can never serve its symbols, unwind rows
-- or Rust types to a later core of the genuine binary.  The cache is derived
-- data: the old rows, which carry no source, are dropped and rebuilt on demand.

-- One row per (build-id, identity of the files used): the module's ELF file
-- (its real path, device, inode, size and modification time, as opened) and
-- its separate debuginfo file (the same, or "none"), or for a module read
-- from the core's memory (the vdso) the bytes themselves.  Rows of the
-- tables below are keyed by this id: an entry is served only to a run that
-- finds the very same files.
CREATE TABLE sources (
    id         INTEGER PRIMARY KEY,
    build_id   TEXT    NOT NULL,              -- lower-case hex
    identity   BLOB    NOT NULL,              -- libcore/symbols/provenance.h
    created    INTEGER NOT NULL,              -- unix time
    UNIQUE (build_id, identity)
);

DROP TABLE unwind_tables;
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

DROP TABLE symbols;
-- One row per (source, link-time address looked up, whether debuginfo was
-- found then): the frames the symbolizer gave for it, inlined calls first
-- (libcore/symbols/symbolizer.c documents the blob).
CREATE TABLE symbols (
    source     INTEGER NOT NULL REFERENCES sources (id),
    build_id   TEXT    NOT NULL,  -- lower-case hex (the source's)
    address    INTEGER NOT NULL,  -- link-time address (pc, or pc - 1 for return addresses)
    debuginfo  INTEGER NOT NULL,  -- 1 if DWARF debuginfo was available
    format     INTEGER NOT NULL,  -- blob encoding version
    frames     BLOB    NOT NULL,
    PRIMARY KEY (source, address, debuginfo)
) WITHOUT ROWID;

DROP TABLE rust_index;
-- One row per source whose debuginfo was found and read: the module's Rust
-- async type index (unwind/async/rust_index_blob.c documents the blob).  A
-- row of another format is ignored and replaced.
CREATE TABLE rust_index (
    source     INTEGER NOT NULL PRIMARY KEY REFERENCES sources (id),
    build_id   TEXT    NOT NULL,              -- lower-case hex (the source's)
    format     INTEGER NOT NULL,              -- CQ_RUST_INDEX_BLOB_FORMAT
    blob       BLOB    NOT NULL,
    created    INTEGER NOT NULL               -- unix time
);
