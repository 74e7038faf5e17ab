-- Adds what confirms an inferred owner to coreq.waits (`coreq export --type
-- wait`: owner_confirmed_by, "with" or "rlock-owner", null when nothing the
-- core records does).  verdict (a String already) also takes
-- 'deadlock-inferred-confirmed' (a cycle through inferred owners, each
-- confirmed) and 'possible-deadlock' (a cycle through an inferred owner
-- nothing confirms), beside 'deadlock' and 'waits'.  Run it once after
-- 001 (and 003 on a store older than it); a second run fails with "column
-- already exists" and changes nothing.  Until it runs, loads skip the new
-- field (input_format_skip_unknown_fields).
ALTER TABLE coreq.waits
    ADD COLUMN owner_confirmed_by Nullable(String) AFTER owner_tid;
