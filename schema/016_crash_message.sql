-- 016: what the program's runtime said the crash was, read from the core
-- (unwind/frames.h, cq_stacks.crash_message): Go's panic message ("panic:
-- assignment to entry in nil map"), the exception Python's crashed thread
-- handles as a traceback's last line says it ("ValueError: bad job 7").
-- Untrusted core data: at most 1024 bytes, a longer one cut and ending in
-- " [cut]" (libcore/store/crash_message.h).  NULL when the runtime said
-- nothing, and for cores stored before 016.

ALTER TABLE cores ADD COLUMN crash_message TEXT; -- the runtime's message, bounded
