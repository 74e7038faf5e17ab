-- 012: where a core's time came from.  `timestamp` holds the crash time a
-- capture recorded (systemd-coredump's file name or xattrs, the hook's
-- arguments): time_source 'capture'.  A plain core file records no crash
-- time; its modification time (when the kernel finished writing it, if
-- nothing copied it since) stands in: time_source 'file'.  NULL with a NULL
-- timestamp: neither is known (a core read from standard input), and the
-- ingest time stands in.  Rows stored before 012 have NULL: 'capture' when
-- timestamp is set.

ALTER TABLE cores ADD COLUMN time_source TEXT; -- 'capture', 'file', or NULL (see above)
