-- coreq's fleet store in ClickHouse: the records `coreq export` writes (one
-- JSON object per line), loaded with
--   coreq export --type core | clickhouse-client --input_format_skip_unknown_fields=1 \
--       --query "INSERT INTO coreq.cores FORMAT JSONEachRow"
-- (and thread -> coreq.threads, stack -> coreq.stacks, bucket -> coreq.buckets,
-- wait -> coreq.waits),
-- or by `coreq push --clickhouse URL`.  Written for ClickHouse 18.16 (Debian 12).
--
-- Every table is a ReplacingMergeTree ordered by the record's natural key, so
-- loading the same records twice (a retried push, two exports that overlap)
-- leaves one row per key once parts merge; queries read FINAL to see exactly
-- that before they do.  A row that comes again replaces the one before.
-- Crash records are partitioned by the month of the crash; stacks and buckets
-- are not partitioned by time, since replacing only works within a partition
-- and one stack or bucket is seen in many months.

CREATE DATABASE IF NOT EXISTS coreq;

-- One row per core: key identity (raw size + hash of the notes and first MiB:
-- the same crash has it on every host and under any file name).
CREATE TABLE IF NOT EXISTS coreq.cores (
    identity      String,                -- natural key
    host          String,                -- hostname of the crash (else of the exporting host)
    machine_id    Nullable(String),      -- /etc/machine-id of the exporting host
    boot_id       Nullable(String),      -- from systemd-coredump's file name, when known
    coreq_version String,
    local_id      Int64,                 -- row id in the host's SQLite database (the export cursor)
    exe           Nullable(String),
    cmdline       Nullable(String),
    comm          Nullable(String),
    pid           Nullable(Int64),
    uid           Nullable(Int64),
    gid           Nullable(Int64),
    signal        Nullable(Int64),
    signal_name   Nullable(String),
    si_code       Nullable(Int64),
    si_code_name  Nullable(String),      -- the kernel's name for si_code: SEGV_MAPERR, SI_TKILL
    sender_pid    Nullable(Int64),       -- who sent the signal (si_pid), when a process did
    sender_uid    Nullable(Int64),       -- and its real uid (si_uid)
    fault_address Nullable(Int64),
    crashed_tid   Nullable(Int64),
    nthreads      Nullable(Int64),
    crash_time    UInt32,                -- unix seconds: the capture's time, else the ingest's
    time_source   String,                -- 'capture' or 'ingest'
    ingested_at   Int64,
    status        String,                -- 'ok', or 'partial' when memory was missing
    bucket        Nullable(String),      -- the crash bucket's hash (coreq.buckets)
    source        Nullable(String),      -- 'file', 'systemd' or 'hook'
    size          Nullable(Int64)        -- bytes of the raw core
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(crash_time))
ORDER BY identity;

-- One row per thread (kind 'thread') or suspended async chain (kind 'folly',
-- 'rust') of a core: key (core, kind, idx).
CREATE TABLE IF NOT EXISTS coreq.threads (
    core       String,                   -- the core's identity
    crash_time UInt32,
    kind       String,
    idx        Int64,                    -- position in the core (0 = the crashed thread)
    tid        Nullable(Int64),
    name       Nullable(String),
    crashed    UInt8,
    stack      String,                   -- the stack's hash (coreq.stacks)
    `end`      String                    -- why the walk stopped
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(crash_time))
ORDER BY (core, kind, idx);

-- One row per distinct merged stack: key hash.  Frames innermost first, as
-- parallel arrays: module build-id ('' outside any module), link-time offset
-- in it (else the pc), kind (native, inline, async), trust, and names.
CREATE TABLE IF NOT EXISTS coreq.stacks (
    hash      String,
    nframes   UInt32,
    build_ids Array(String),
    offsets   Array(Int64),
    kinds     Array(String),
    trusts    Array(String),
    functions Array(Nullable(String)),
    files     Array(Nullable(String)),
    lines     Array(Nullable(Int64))
) ENGINE = ReplacingMergeTree()
ORDER BY hash;

-- One row per crash bucket: key hash (of the signature).
CREATE TABLE IF NOT EXISTS coreq.buckets (
    hash          String,
    signature     String,                -- "f | g | main | SIGSEGV"
    rules_version Nullable(String),      -- of the rules that made it
    first_seen    UInt32                 -- the earliest crash in it the exporting host had
) ENGINE = ReplacingMergeTree()
ORDER BY hash;

-- One row per thread blocked on a lock when the core was taken (who waits for
-- whom, libcore/analysis/waits.h): key (core, idx).  A deadlock is the rows of
-- one core with one deadlock number; their core's bucket signature starts with
-- "deadlock: " (a hang without a cycle: "hang: ").  Which primitives carry an
-- owner: mutexes (normal, recursive, errorcheck, adaptive: __owner; robust and
-- PI: __lock), a writer-held rwlock, a join (the joined thread); readers of an
-- rwlock are only a count, condvars and bare futexes (Rust, Python) have none.
CREATE TABLE IF NOT EXISTS coreq.waits (
    core       String,                   -- the core's identity
    crash_time UInt32,
    idx        Int64,                    -- the waiting thread's place (coreq.threads.idx)
    tid        Int64,
    kind       String,                   -- mutex, rwlock, condvar, thread (a join), futex, semaphore
    write      UInt8,                    -- rwlock: 1 waits to write, 0 to read
    object     Int64,                    -- the lock's address
    futex      Int64,                    -- the futex word's address
    function   Nullable(String),         -- the libc frame that says what it takes
    owner      String,                   -- thread, inferred, not-in-core, readers, none, unreadable, unknown
    owner_tid  Nullable(Int64),          -- the owner's tid (thread, inferred, not-in-core)
    count      Int64,                    -- recursive mutex: times held; rwlock: readers
    deadlock   Nullable(Int64),          -- 1 + which cycle of the core it is on
    verdict    String                    -- 'deadlock' (on a cycle) or 'waits'
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(crash_time))
ORDER BY (core, idx);

-- Crashes per day and bucket, with how many hosts had them.
CREATE VIEW IF NOT EXISTS coreq.top_buckets_daily AS
SELECT toDate(toDateTime(crash_time)) AS day, bucket, count() AS cores, uniqExact(host) AS hosts
FROM coreq.cores FINAL
WHERE bucket IS NOT NULL
GROUP BY day, bucket;
