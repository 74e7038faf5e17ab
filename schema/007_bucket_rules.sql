-- 007: crash buckets that hold across a fleet (libcore/triage/rules.h).
-- Signatures are made by rules a team can edit (dist/coreq.rules holds the
-- defaults); `coreq rebucket` recomputes them from the stored frames, so
-- the frames keep what a signature needs that the module files gave.

-- The version of the rules that made the bucket's signature (the rules
-- file's `version` line, else a hash of its text); NULL before 007.
ALTER TABLE buckets ADD COLUMN rules_version TEXT;

-- The name a signature gives this frame instead of its function, NULL when
-- the function serves: the public name of a CPU-specific variant (an ifunc
-- candidate such as __memset_avx2_unaligned_erms is "memset"), the exported
-- function covering a library frame with no name, or "[soname]" for a
-- library frame nothing names.
ALTER TABLE frames ADD COLUMN sig_name TEXT;

-- 1 when the kernel saw the module's file replaced or removed after it was
-- mapped (its NT_FILE name ended in " (deleted)", which path leaves out).
ALTER TABLE core_modules ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
