-- 003: where cores come from.  systemd-coredump's file names and
-- user.coredump.* xattrs and the kernel's core_pattern arguments (coreq hook)
-- describe a crash from outside the core; files already looked at in a
-- directory are remembered so a rescan costs a stat per file.

-- Metadata from outside the core.  Where it disagrees with the core's own
-- notes, the notes win and meta_conflicts says what disagreed.
ALTER TABLE cores ADD COLUMN comm TEXT;           -- process name (systemd / %e), when known
ALTER TABLE cores ADD COLUMN boot_id TEXT;        -- boot id from the systemd file name, when known
ALTER TABLE cores ADD COLUMN rlimit INTEGER;      -- RLIMIT_CORE at crash time in bytes, -1 = unlimited
ALTER TABLE cores ADD COLUMN source TEXT;         -- 'file', 'systemd' or 'hook'
ALTER TABLE cores ADD COLUMN stored_path TEXT;    -- the copy `coreq hook` stored (.zst), NULL if none
ALTER TABLE cores ADD COLUMN meta_conflicts TEXT; -- e.g. "pid: core 12, xattr 13", NULL if none
CREATE INDEX cores_stored_path ON cores (stored_path);

-- A core the hook has stored but that is not (yet) analysed is a row too:
-- status 'pending' (analysis running or interrupted), 'failed' (message says
-- why) or 'not_stored' (RLIMIT_CORE was 0).  Such a row has identity
-- "stored:<stored_path>", crashed_tid 0 and nthreads 0, and no threads; a
-- later `coreq ingest` of stored_path replaces it, keeping its id.

-- Every file a directory ingest has looked at, so the next run skips those
-- whose path, size and mtime are unchanged before opening them.
CREATE TABLE seen_files (
    path     TEXT    PRIMARY KEY,           -- absolute path
    size     INTEGER NOT NULL,              -- bytes on disk (compressed)
    mtime_ns INTEGER NOT NULL,              -- modification time, nanoseconds
    core_id  INTEGER REFERENCES cores (id), -- what it was stored as, NULL if it failed
    status   TEXT    NOT NULL,              -- started (analysis under way, or it died), ingested, duplicate or failed
    message  TEXT,                          -- why it failed
    seen_at  INTEGER NOT NULL               -- unix seconds
) WITHOUT ROWID;
