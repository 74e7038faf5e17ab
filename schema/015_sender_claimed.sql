-- 015: whether the signal's sender is only what the signal claims.  A
-- process may queue itself (rt_sigqueueinfo, rt_tgsigqueueinfo on its own
-- pid) a signal of any si_code <= 0 naming any sender_pid and sender_uid,
-- and any process may queue another an SI_QUEUE, SI_MESGQ, ... naming any
-- sender.  Only the kernel writes the sender of an SI_USER (kill) or SI_TKILL
-- (tkill/tgkill) from another process, so such a signal naming the process's
-- own pid and real uid (abort(), raise()) is true whoever wrote it: 0 then,
-- 1 for every other sender (the core cannot tell a kill from a forgery), NULL
-- when no process sent the signal (libcore/model/core.h,
-- cq_core_sender_claimed).  Queries believe a 0 only where the row agrees
-- with that rule (libcore/store/sender_claimed.h).

ALTER TABLE cores ADD COLUMN sender_claimed INTEGER; -- 1: sender_pid and sender_uid are the signal's claim; 0: proven; NULL: no sender

-- Cores stored before 015, by the same rule from their columns (pid and uid
-- are NT_PRPSINFO's when the core has it, as it does when the kernel writes it).
UPDATE cores SET sender_claimed = CASE
    WHEN si_code IN (0, -6) AND pid > 0 AND sender_pid = pid AND sender_uid = uid THEN 0
    ELSE 1 END
  WHERE sender_pid IS NOT NULL;
