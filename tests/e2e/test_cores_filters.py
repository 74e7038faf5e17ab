#!/usr/bin/env python3
"""`coreq cores` filters as coredumpctl list has them, and `buckets --limit`
(issue 19), on 30 cores of corpus bucket-100 whose pid, site and signal the
case's expect file lists (the oracle):
--signal (number or name), --pid, --exe, --since/--until (crash times set in
the database), -n N (the newest N, oldest first) and -r (newest first);
`buckets --limit N` keeps the N largest buckets.
"""
import collections
import json
import os
import shutil
import sqlite3
import tempfile
import time

from coreq_test import CORPUS, coreq, done, ok, read_expect, require_corpus

N = 30


def cores(db, *args):
    r = coreq("cores", "--db", db, "--format", "json", *args)
    return json.loads(r.stdout)["cores"] if r.returncode == 0 else None


def main():
    require_corpus()
    case = os.path.join(CORPUS, "cores", "bucket-100")
    facts = read_expect(os.path.join(case, "expect"))
    pids = [int(p) for p in facts["pids"].split()][:N]
    sigs = [int(s) for s in facts["signals"].split()][:N]
    sites = facts["sites"].split()[:N]
    files = [os.path.join(case, f"core-{i:03d}") for i in range(N)]
    tmp = tempfile.mkdtemp(prefix="coreq-cores-")
    try:
        db = os.path.join(tmp, "c.db")
        r = coreq("ingest", "--db", db, "--no-cache", *files, timeout=600)
        ok(r.returncode == 0, f"{N} cores ingested", r.stderr[-500:])
        got = cores(db, "--signal", "SEGV")
        ok(sorted(c["pid"] for c in got) == sorted(p for p, s in zip(pids, sigs) if s == 11),
           "--signal SEGV: the SIGSEGV cores")
        ok(cores(db, "--signal", "11") == got and cores(db, "--signal", "SIGSEGV") == got,
           "--signal takes 11, SEGV and SIGSEGV alike")
        got = cores(db, "--pid", str(pids[7]))
        ok([c["pid"] for c in got] == [pids[7]], "--pid: that process")
        ok(len(cores(db, "--exe", "bucket_multi")) == N and cores(db, "--exe", "nothing") == [],
           "--exe by basename")
        con = sqlite3.connect(db)
        ids = [i for (i,) in con.execute("SELECT id FROM cores ORDER BY id")]
        now = int(time.time())
        for k, i in enumerate(ids[:10]):  # ten crashed 19.5..10.5 days ago, in id order
            con.execute("UPDATE cores SET timestamp = ? WHERE id = ?",
                        (now - (19 - k) * 86400 - 43200, i))
        con.commit()
        con.close()
        ok(len(cores(db, "--since", "-7d")) == N - 10, "--since -7d: the recent ones")
        ok(len(cores(db, "--until", "-12d")) == 8, "--until -12d: the eight older than 12 days")
        ok(len(cores(db, "--since", "-15d", "--until", "-12d")) == 3, "a window: 14.5, 13.5, 12.5 days")
        newest = cores(db, "-n", "5")
        ok([c["id"] for c in newest] == ids[-5:], "-n 5: the newest five, oldest first",
           str([c["id"] for c in newest]))
        ok([c["id"] for c in cores(db, "-n", "5", "-r")] == ids[-5:][::-1], "-r: newest first")
        ok([c["id"] for c in cores(db, "-r")][-1] == ids[0], "-r alone: the oldest last")
        r = coreq("cores", "--db", db, "--pid", "1")
        ok(r.returncode == 0 and r.stdout.strip() == f"no cores that match (database {db})",
           "nothing found names the database", r.stdout)
        r = coreq("cores", "--db", db, "--signal", "SIGNOPE")
        ok(r.returncode == 2, "an unknown signal name is a usage error", r.stderr)

        counts = collections.Counter(sites)
        r = coreq("buckets", "--db", db, "--format", "json", "--limit", "2")
        b = json.loads(r.stdout)["buckets"] if r.returncode == 0 else []
        ok([x["count"] for x in b] == [c for _, c in counts.most_common(2)],
           "buckets --limit 2: the two largest", str(([x["count"] for x in b], counts)))
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
