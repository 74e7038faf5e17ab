-- Adds coreq.cores.sender_claimed, the export's field saying whether
-- sender_pid and sender_uid are only what the signal claims (1), proven (0:
-- an SI_USER or SI_TKILL naming the process's own pid and uid, as abort()
-- and raise() send), or absent (NULL: no process sent the signal).  A
-- process may queue itself a signal naming any sender, so a sender such as
-- pid 1 (systemd's watchdog) is a claim: count watchdog kills with that in
-- mind.  Run it once on a store made by 001 (with 002 and 003 where they
-- apply); ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS, so a second run
-- fails with "column already exists" and changes nothing.  Until it runs,
-- loads skip the field (input_format_skip_unknown_fields).
ALTER TABLE coreq.cores
    ADD COLUMN sender_claimed Nullable(UInt8) AFTER sender_uid;
