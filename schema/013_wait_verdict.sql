-- 013: what a cycle of the wait-for graph rests on (libcore/analysis/waits.h,
-- enum cq_deadlock_verdict).  An owner inferred from references (owner
-- 'inferred') is confirmed only by what the core records beyond the
-- reference; a cycle through an unconfirmed one is a possible deadlock, not
-- a deadlock.  NULL for waits on no cycle, and for rows stored before 013
-- (whose cycles were all called deadlocks).

-- deadlock, deadlock-inferred-confirmed, possible-deadlock: the verdict of the cycle (deadlock) it is on
ALTER TABLE waits ADD COLUMN verdict TEXT;
-- an inferred owner: what the core records that confirms it (with, rlock-owner); NULL: nothing
ALTER TABLE waits ADD COLUMN owner_confirmed_by TEXT;
