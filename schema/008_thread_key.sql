-- 008: a thread is keyed by its place in the core's notes, not by its tid.
-- A damaged or forged core can carry two NT_PRSTATUS notes with one tid;
-- both threads are kept (coreq warns), so (core_id, tid) is not unique.
-- The table is rebuilt with the new key; the views over it are recreated
-- unchanged.

DROP VIEW v_thread_stacks;
DROP VIEW v_stack_counts;

CREATE TABLE threads_by_idx (
    core_id  INTEGER NOT NULL REFERENCES cores (id),
    tid      INTEGER NOT NULL,
    idx      INTEGER NOT NULL,              -- position in the core's notes (0 = crashed)
    name     TEXT,
    crashed  INTEGER NOT NULL,              -- 1 for the thread that took the signal
    stack_id INTEGER NOT NULL REFERENCES stacks (id),
    end      TEXT    NOT NULL,              -- why the walk stopped (outermost, ...)
    PRIMARY KEY (core_id, idx)
) WITHOUT ROWID;
INSERT INTO threads_by_idx (core_id, tid, idx, name, crashed, stack_id, end)
SELECT core_id, tid, idx, name, crashed, stack_id, end FROM threads;
DROP TABLE threads;
ALTER TABLE threads_by_idx RENAME TO threads;
CREATE INDEX threads_stack ON threads (stack_id);
CREATE INDEX threads_tid ON threads (core_id, tid);

CREATE VIEW v_thread_stacks AS
SELECT t.core_id, c.exe, t.tid, t.name, t.crashed, t.stack_id, f.idx, f.kind, f.trust,
       m.path AS module, f.offset, f.function, f.file, f.line
FROM threads t
JOIN cores c ON c.id = t.core_id
JOIN frames f ON f.stack_id = t.stack_id
LEFT JOIN modules m ON m.id = f.module_id;

CREATE VIEW v_stack_counts AS
SELECT s.id AS stack_id, s.hash, s.nframes,
       count(*) AS threads, count(DISTINCT t.core_id) AS cores,
       (SELECT function FROM frames f WHERE f.stack_id = s.id AND f.idx = 0) AS top_function
FROM stacks s JOIN threads t ON t.stack_id = s.id
GROUP BY s.id;
