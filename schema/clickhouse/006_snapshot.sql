-- Adds coreq.cores.snapshot, the export's field naming who wrote a core
-- that is a snapshot of a live process rather than a crash's ('gcore'; NULL
-- for a crash).  A snapshot's crashed_tid is 0 and its signal is the stop
-- signal gdb recorded: count crashes with `snapshot IS NULL`.  Run it once
-- on a store made by 001 (with 002 to 005 where they apply); ClickHouse
-- 18.16 has no ADD COLUMN IF NOT EXISTS, so a second run fails with "column
-- already exists" and changes nothing.  Until it runs, loads skip the field
-- (input_format_skip_unknown_fields).
ALTER TABLE coreq.cores
    ADD COLUMN snapshot Nullable(String) AFTER sender_claimed;
