-- 009: indexes for a store of a million cores.  Every per-bucket question
-- (cores --bucket, list-stacks --bucket, the executables of a bucket) and
-- "the newest cores" is answered from an index instead of a scan of cores.

-- A bucket's cores, newest first (cores --bucket; replaces cores_bucket).
DROP INDEX cores_bucket;
CREATE INDEX cores_bucket_time ON cores (bucket_id, coalesce(timestamp, ingested_at));
-- A bucket's distinct executables, one seek each (buckets).
CREATE INDEX cores_bucket_exe ON cores (bucket_id, exe);
-- The newest cores of the whole store (cores --limit N).
CREATE INDEX cores_time ON cores (coalesce(timestamp, ingested_at));
