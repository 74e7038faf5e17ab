-- cache 002: symbolization results, so a later core of the same binaries
-- names its frames without opening any DWARF.

-- One row per (module build-id, link-time address looked up, whether the
-- module's debuginfo was found then): the frames the symbolizer gave for it,
-- inlined calls first (libcore/symbols/symbolizer.c documents the blob).  Keeping the
-- debuginfo flag in the key means installing debuginfo later is noticed.
CREATE TABLE symbols (
    build_id   TEXT    NOT NULL,  -- lower-case hex
    address    INTEGER NOT NULL,  -- link-time address (pc, or pc - 1 for return addresses)
    debuginfo  INTEGER NOT NULL,  -- 1 if DWARF debuginfo was available
    format     INTEGER NOT NULL,  -- blob encoding version
    frames     BLOB    NOT NULL,
    PRIMARY KEY (build_id, address, debuginfo)
) WITHOUT ROWID;
