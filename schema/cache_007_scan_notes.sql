-- cache 007: what the heap scan of a program's core looked for (the word
-- values of its async runtimes' vtables and coroutine functions), by the
-- executable's build-id, as offsets from the lowest address of the file
-- that holds them: a later core of the same build compressed as one stream
-- keeps the pages holding such words as it streams, and its scan reads
-- those pages alone instead of decompressing the core again, once the
-- values it asks for are found within the note's
-- (libcore/model/scan_keep.h; `coreq info` says whether it did).
CREATE TABLE scan_notes (
    build_id TEXT    NOT NULL PRIMARY KEY,  -- the executable's, lower-case hex
    note     TEXT    NOT NULL,              -- lines "LO HI PATH", LO and HI in hex
    created  INTEGER NOT NULL               -- unix time
);
