-- 005: suspended async stacks.  A suspended coroutine chain is on no
-- thread; each one found in a core (libcore/analysis/stacktrace.h, struct
-- cq_suspended_stack) is stored like a thread's stack: its frames in stacks
-- and frames (deduplicated by the same hash), one row here per chain.

-- One row per suspended chain of each core.
CREATE TABLE suspended (
    core_id  INTEGER NOT NULL REFERENCES cores (id),
    idx      INTEGER NOT NULL,              -- order found in the core (0 = first)
    kind     TEXT    NOT NULL,              -- the async runtime: 'folly', ...
    stack_id INTEGER NOT NULL REFERENCES stacks (id),
    end      TEXT    NOT NULL,              -- why the chain ended (outermost, async_detached, ...)
    PRIMARY KEY (core_id, idx)
) WITHOUT ROWID;
CREATE INDEX suspended_stack ON suspended (stack_id);

-- Each suspended chain with its frames, for hand queries.
CREATE VIEW v_suspended_stacks AS
SELECT s.core_id, c.exe, s.idx, s.kind, s.stack_id, f.idx AS frame, f.kind AS frame_kind,
       m.path AS module, f.offset, f.function, f.file, f.line
FROM suspended s
JOIN cores c ON c.id = s.core_id
JOIN frames f ON f.stack_id = s.stack_id
LEFT JOIN modules m ON m.id = f.module_id;
