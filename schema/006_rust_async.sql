-- 006: suspended Rust futures.  Their await chains are stored like folly's
-- suspended coroutines (005: one row in suspended per chain, kind 'rust';
-- the chain's frames in stacks and frames, kind 'async').  A Rust frame has
-- no code address (offset 0); it is a future waiting at an await point, and
-- that point is its state.

-- Where a suspended future waits: 'Suspend0', 'Unresumed', ...; NULL for
-- leaf futures, and for every frame that is not a suspended future.
ALTER TABLE frames ADD COLUMN state TEXT;

-- v_suspended_stacks (005) with each frame's state.
DROP VIEW v_suspended_stacks;
CREATE VIEW v_suspended_stacks AS
SELECT s.core_id, c.exe, s.idx, s.kind, s.stack_id, f.idx AS frame, f.kind AS frame_kind,
       m.path AS module, f.offset, f.function, f.file, f.line, f.state
FROM suspended s
JOIN cores c ON c.id = s.core_id
JOIN frames f ON f.stack_id = s.stack_id
LEFT JOIN modules m ON m.id = f.module_id;
