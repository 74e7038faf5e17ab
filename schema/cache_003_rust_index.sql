-- cache 003: the Rust async type index of a module (unwind/async/rust_index.h),
-- so a later core of the same binary decodes its futures and tokio tasks
-- without reading DWARF.

-- One row per module build-id whose debuginfo was found and read: the
-- module's types, Future vtables, poll functions, tokio task kinds and
-- block_on frames, at link-time addresses (unwind/async/rust_index_blob.c
-- documents the blob).  A row of another format is ignored and replaced.
CREATE TABLE rust_index (
    build_id   TEXT    NOT NULL PRIMARY KEY,  -- lower-case hex
    format     INTEGER NOT NULL,              -- CQ_RUST_INDEX_BLOB_FORMAT
    blob       BLOB    NOT NULL,
    created    INTEGER NOT NULL               -- unix time
);
