#!/usr/bin/env python3
"""The store's read commands answer from indexes: at a million cores a scan
of `cores`, `threads` or `suspended` is seconds, an index seek is not
(`make bench`, section million).  With $COREQ_EXPLAIN set, coreq prints
SQLite's EXPLAIN QUERY PLAN of each query it builds; for `buckets`,
`cores --bucket`, `list-stacks --bucket`, `list-stacks --core` and `show`
no plan line may scan those tables.  The answers themselves are checked
against the database with plain SQL (sqlite3): the bucket's cores, newest
first; its stacks' thread counts; the bucket list's counts.
"""
import json
import os
import sqlite3
import tempfile

from coreq_test import coreq, coreq_json, corpus_cases, done, ok, require_corpus

SCANNED = ("SCAN cores", "SCAN threads", "SCAN suspended", "SCAN c ", "SCAN t ", "SCAN x")


def plan_of(db, *args):
    env = dict(os.environ, COREQ_EXPLAIN="1")
    import subprocess
    r = subprocess.run([os.environ.get("COREQ", "build/asan/coreq"), *args, "--db", db],
                       capture_output=True, text=True, env=env, timeout=120)
    lines = [l[len("coreq: plan: "):] for l in r.stderr.splitlines() if l.startswith("coreq: plan: ")]
    return r, lines


def main():
    require_corpus()
    cores = [c["core"] for c in corpus_cases(include_big=False)
             if c["case"].startswith(("abort_deep.", "segv_null.", "threads8.", "rust_async."))]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "db")
        r = coreq("ingest", "--db", db, "--no-cache", *cores, timeout=600)
        ok(r.returncode == 0, f"ingest of {len(cores)} corpus cores", r.stderr[-500:])
        con = sqlite3.connect(db)
        bucket_id, bucket = con.execute(
            "SELECT id, hash FROM buckets ORDER BY count DESC, id LIMIT 1").fetchone()
        core = con.execute("SELECT max(id) FROM cores").fetchone()[0]
        for args in (("buckets",), ("cores", "--bucket", bucket, "-n", "3"),
                     ("cores", "--bucket", str(bucket_id)), ("list-stacks", "--bucket", bucket),
                     ("list-stacks", "--core", str(core)), ("show", str(core))):
            r, plan = plan_of(db, *args)
            bad = [l for l in plan if any(l.startswith(s) or f" {s}" in l for s in SCANNED)]
            ok(r.returncode == 0 and plan and not bad,
               f"coreq {' '.join(args[:2])}: every plan line seeks an index ({len(plan)} lines)",
               plan)

        want = [r[0] for r in con.execute(
            "SELECT id FROM cores WHERE bucket_id = ? ORDER BY coalesce(timestamp, ingested_at) "
            "DESC, id DESC LIMIT 3", (bucket_id,))]
        got, _ = coreq_json("cores", "--db", db, "--bucket", bucket, "-n", "3", "-r", "--format", "json")
        ok([c["id"] for c in got["cores"]] == want, "cores --bucket -n 3 -r: the bucket's 3 newest",
           [want, got])
        want = dict(con.execute(
            "SELECT t.stack_id, count(*) FROM threads t JOIN cores c ON c.id = t.core_id "
            "WHERE c.bucket_id = ? GROUP BY t.stack_id", (bucket_id,)).fetchall())
        got, _ = coreq_json("list-stacks", "--db", db, "--bucket", bucket, "--format", "json")
        ok({s["id"]: s["threads"] for s in got["stacks"] if s["threads"]} == want,
           "list-stacks --bucket: each stack's thread count in the bucket", [want, got["stacks"][:3]])
        want = {h: n for h, n in con.execute(
            "SELECT b.hash, count(*) FROM cores c JOIN buckets b ON b.id = c.bucket_id GROUP BY b.id")}
        got, _ = coreq_json("buckets", "--db", db, "--format", "json")
        ok({b["hash"]: b["count"] for b in got["buckets"]} == want,
           "buckets: every bucket's count is its number of cores", [want, got["buckets"][:3]])
        con.close()
    done()


if __name__ == "__main__":
    main()
