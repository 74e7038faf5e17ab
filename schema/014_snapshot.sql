-- 014: cores that are snapshots of a live process, not a crash's
-- (libcore/model/core.h, cq_core.snapshot): gdb's gcore writes its own
-- notes (a "GDB" note, NT_PRPSINFO first) and, for a process it attached
-- to, no thread handling a signal other than a stop (SIGSTOP, SI_KERNEL).
-- NULL for a crash's core and for cores stored before 014.  No thread of a
-- snapshot is crashed: its crashed_tid is 0 and every threads.crashed 0.

ALTER TABLE cores ADD COLUMN snapshot TEXT; -- the writer of a snapshot: 'gcore'
