-- 010: who sent the fatal signal.  NT_SIGINFO's si_pid and si_uid when its
-- si_code says a process sent it (SI_USER from kill, SI_TKILL from
-- tkill/tgkill, which abort() and raise() use, SI_QUEUE from sigqueue, ...:
-- libcore/model/si_code.c); NULL for a fault or other signal of the kernel's,
-- and for cores stored before 010.  A sender_pid equal to pid is the
-- process itself.

ALTER TABLE cores ADD COLUMN sender_pid INTEGER; -- si_pid, in the crashed process's pid namespace
ALTER TABLE cores ADD COLUMN sender_uid INTEGER; -- si_uid: the sender's real uid
