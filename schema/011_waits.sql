-- 011: who waits for whom (libcore/analysis/waits.h).  One row per thread
-- blocked in a futex wait when the core was stored: the object it waits on
-- and who holds it.  Cores stored before 011 have none.  A deadlock is the
-- rows with one deadlock number; their core's bucket signature starts with
-- "deadlock: " (a hang with no cycle: "hang: "; libcore/triage/bucket.h).

CREATE TABLE waits (
    core_id    INTEGER NOT NULL REFERENCES cores (id),
    idx        INTEGER NOT NULL,   -- the waiting thread's place in the core's notes (threads.idx)
    tid        INTEGER NOT NULL,
    kind       TEXT    NOT NULL,   -- mutex, rwlock, condvar, thread (a join), futex
    write      INTEGER NOT NULL,   -- rwlock: 1 waits to write, 0 to read
    object     INTEGER NOT NULL,   -- the object's address
    futex      INTEGER NOT NULL,   -- the futex word's address
    function   TEXT,               -- the libc frame that says what it takes
    owner      TEXT    NOT NULL,   -- thread, inferred, not-in-core, readers, none, unreadable, unknown
    owner_tid  INTEGER,            -- owner thread (recorded or inferred), not-in-core
    count      INTEGER NOT NULL,   -- recursive mutex: times held; rwlock: readers
    deadlock   INTEGER,            -- 1 + which deadlock (cycle) it is on; NULL: none
    PRIMARY KEY (core_id, idx)
) WITHOUT ROWID;
