-- Adds coreq.waits (one row per thread blocked on a lock, `coreq export
-- --type wait`) to a store created by an older 001_tables.sql (001 has it
-- now, so a new store needs only 001).  Until it runs, `coreq push` of a
-- core with waits fails (the table does not exist) and its cursor stays, so
-- nothing is lost: run this, then push again.  Running it twice changes
-- nothing.
CREATE TABLE IF NOT EXISTS coreq.waits (
    core       String,
    crash_time UInt32,
    idx        Int64,
    tid        Int64,
    kind       String,
    write      UInt8,
    object     Int64,
    futex      Int64,
    function   Nullable(String),
    owner      String,
    owner_tid  Nullable(Int64),
    count      Int64,
    deadlock   Nullable(Int64),
    verdict    String
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(crash_time))
ORDER BY (core, idx);
