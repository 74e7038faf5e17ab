-- 002: crash buckets.  A bucket is one crash signature (libcore/triage/bucket.h):
-- the crashed thread's normalised frames and the signal, stable across
-- rebuilds.  Every core ingested from this version on gets a bucket.

-- One row per distinct signature.
CREATE TABLE buckets (
    id           INTEGER PRIMARY KEY,
    hash         TEXT    NOT NULL UNIQUE,   -- 16 hex digits, a stable hash of signature
    signature    TEXT    NOT NULL,          -- "f | g | main | SIGSEGV"
    count        INTEGER NOT NULL,          -- cores in the bucket
    first_seen   INTEGER NOT NULL,          -- unix seconds (crash time, else ingest time)
    last_seen    INTEGER NOT NULL,
    example_core INTEGER REFERENCES cores (id) -- the first core stored in it
);

-- The bucket of each core (NULL for cores stored before buckets existed).
ALTER TABLE cores ADD COLUMN bucket_id INTEGER REFERENCES buckets (id);
CREATE INDEX cores_bucket ON cores (bucket_id);
