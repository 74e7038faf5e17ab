-- Upgrades a coreq.cores created by an older 001_tables.sql: the columns
-- that say what si_code means and who sent the signal (001 has them now, so
-- a new store needs only 001).  Run it once; ClickHouse 18.16 has no ADD
-- COLUMN IF NOT EXISTS, so a second run fails with "column already exists"
-- and changes nothing.  Until it runs, loads skip the new fields
-- (input_format_skip_unknown_fields).
ALTER TABLE coreq.cores
    ADD COLUMN si_code_name Nullable(String) AFTER si_code,
    ADD COLUMN sender_pid Nullable(Int64) AFTER si_code_name,
    ADD COLUMN sender_uid Nullable(Int64) AFTER sender_pid;
