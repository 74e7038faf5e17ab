-- 001: the analysis database.  One transaction stores one core: its row in
-- cores, its modules, its threads, and any stack not seen before.

-- One row per core file, identified by content: identity is the raw size
-- plus a hash of the notes and the first MiB, so the same core ingested
-- twice (or under another name, or compressed differently) is one row.
CREATE TABLE cores (
    id            INTEGER PRIMARY KEY,
    identity      TEXT    NOT NULL UNIQUE,  -- "<size>-<hash>"
    path          TEXT    NOT NULL,         -- where it was ingested from
    size          INTEGER NOT NULL,         -- bytes of the raw (decompressed) core
    pid           INTEGER,                  -- NT_PRPSINFO pid (else the crashed tid)
    exe           TEXT,                     -- executable path as the core names it
    cmdline       TEXT,                     -- NT_PRPSINFO arguments (first 80 bytes)
    uid           INTEGER,
    gid           INTEGER,
    signal        INTEGER,                  -- the fatal signal's number
    signal_name   TEXT,                     -- e.g. SIGSEGV
    si_code       INTEGER,                  -- NT_SIGINFO si_code, NULL if absent
    fault_address INTEGER,                  -- si_addr for faults, else NULL
    crashed_tid   INTEGER NOT NULL,
    nthreads      INTEGER NOT NULL,
    timestamp     INTEGER,                  -- crash time (unix seconds) when known
    hostname      TEXT,                     -- host the crash happened on, when known
    ingested_at   INTEGER NOT NULL,         -- unix seconds
    status        TEXT    NOT NULL,         -- 'ok', or 'partial' when memory was missing
    message       TEXT                      -- what is missing, for 'partial'
);
CREATE INDEX cores_exe ON cores (exe);

-- One row per mapped ELF object, by build-id ("path:<path>" when it has none).
CREATE TABLE modules (
    id       INTEGER PRIMARY KEY,
    build_id TEXT    NOT NULL UNIQUE,
    path     TEXT    NOT NULL               -- the first path it was seen at
);

-- Which modules each core had mapped, where, and whether this host had the file.
CREATE TABLE core_modules (
    core_id   INTEGER NOT NULL REFERENCES cores (id),
    module_id INTEGER NOT NULL REFERENCES modules (id),
    path      TEXT    NOT NULL,             -- path in this core
    start     INTEGER NOT NULL,             -- first mapped address
    end       INTEGER NOT NULL,             -- last mapped address + 1
    status    TEXT    NOT NULL,             -- found, missing or mismatch
    PRIMARY KEY (core_id, start)
) WITHOUT ROWID;

-- One row per distinct merged stack.  hash is computed over every frame's
-- (build-id, offset, kind), so the same stack in any core or process, at any
-- load address, is one row.
CREATE TABLE stacks (
    id      INTEGER PRIMARY KEY,
    hash    TEXT    NOT NULL UNIQUE,        -- 16 hex digits
    nframes INTEGER NOT NULL
);

-- The frames of each stack, innermost first.
CREATE TABLE frames (
    stack_id  INTEGER NOT NULL REFERENCES stacks (id),
    idx       INTEGER NOT NULL,             -- 0 = innermost
    module_id INTEGER REFERENCES modules (id), -- NULL when the pc is in no module
    offset    INTEGER NOT NULL,             -- link-time address in the module, else the pc
    kind      TEXT    NOT NULL,             -- native, inline or async
    trust     TEXT    NOT NULL,             -- context, cfi, fp, scan or async
    function  TEXT,                         -- demangled
    file      TEXT,
    line      INTEGER,
    PRIMARY KEY (stack_id, idx)
) WITHOUT ROWID;

-- One row per thread of each core, pointing at its merged stack.
CREATE TABLE threads (
    core_id  INTEGER NOT NULL REFERENCES cores (id),
    tid      INTEGER NOT NULL,
    idx      INTEGER NOT NULL,              -- position in the core's notes (0 = crashed)
    name     TEXT,
    crashed  INTEGER NOT NULL,              -- 1 for the thread that took the signal
    stack_id INTEGER NOT NULL REFERENCES stacks (id),
    end      TEXT    NOT NULL,              -- why the walk stopped (outermost, ...)
    PRIMARY KEY (core_id, tid)
) WITHOUT ROWID;
CREATE INDEX threads_stack ON threads (stack_id);

-- Every thread with its frames, for hand queries.
CREATE VIEW v_thread_stacks AS
SELECT t.core_id, c.exe, t.tid, t.name, t.crashed, t.stack_id, f.idx, f.kind, f.trust,
       m.path AS module, f.offset, f.function, f.file, f.line
FROM threads t
JOIN cores c ON c.id = t.core_id
JOIN frames f ON f.stack_id = t.stack_id
LEFT JOIN modules m ON m.id = f.module_id;

-- Each stack with how many threads and cores have it and its innermost function.
CREATE VIEW v_stack_counts AS
SELECT s.id AS stack_id, s.hash, s.nframes,
       count(*) AS threads, count(DISTINCT t.core_id) AS cores,
       (SELECT function FROM frames f WHERE f.stack_id = s.id AND f.idx = 0) AS top_function
FROM stacks s JOIN threads t ON t.stack_id = s.id
GROUP BY s.id;
