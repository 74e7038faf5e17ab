-- Adds coreq.cores.crash_message, the export's field saying what the
-- program's runtime said the crash was, read from the core: Go's panic
-- message ("panic: assignment to entry in nil map"), the exception Python's
-- crashed thread handles as a traceback's last line ("ValueError: bad job
-- 7"); NULL when the runtime said nothing.  It is untrusted core data, at
-- most 1024 bytes (a longer one is cut and ends in " [cut]").  Run it once
-- on a store made by 001 (with 002 to 006 where they apply); ClickHouse
-- 18.16 has no ADD COLUMN IF NOT EXISTS, so a second run fails with "column
-- already exists" and changes nothing.  Until it runs, loads skip the field
-- (input_format_skip_unknown_fields).
ALTER TABLE coreq.cores
    ADD COLUMN crash_message Nullable(String) AFTER snapshot;
