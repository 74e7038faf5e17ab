-- cache 006: programs whose analysis reads their heap (an async runtime's
-- scan of all writable memory), by the executable's build-id, so that a
-- later core of the same build compressed as one stream is kept whole as it
-- streams rather than read through the keep plan and then a second time
-- (libcore/model/stream_image.c; `coreq info` says which).
CREATE TABLE stream_hints (
    build_id   TEXT    NOT NULL PRIMARY KEY,  -- the executable's, lower-case hex
    reads_heap INTEGER NOT NULL,
    created    INTEGER NOT NULL               -- unix time
);
