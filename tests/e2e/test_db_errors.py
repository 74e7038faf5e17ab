#!/usr/bin/env python3
"""Database errors: one line, the path once, what to do (issue 16 items 5 and 8,
issue 19 stumble 3).

- a damaged database (a page overwritten; a file that is no database):
  `cores`, `show`, `buckets`, `list-stacks` and `ingest` exit 1 with exactly
  one line `coreq: PATH: damaged database (...)` that says how to recover
  (`sqlite3 ... .recover`) or to move the file aside, and does not repeat
  "database: PATH:";
- a database of a newer schema keeps its message (upgrade coreq);
- a query command given a missing file refuses (`no such database`, exit 1)
  and creates nothing;
- a database in a place that cannot be written (as an unprivileged user) is
  opened read-only and every query works;
- when storing a core fails and recording that failure fails too (a
  read-only database), ingest prints one line that says both.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import COREQ, coreq, done, ok, require_corpus, sanitizer_report, skip

QUERIES = [("cores",), ("show", "1"), ("buckets",), ("list-stacks",)]


def one_line(r, path, *parts):
    lines = r.stderr.strip().splitlines()
    return (r.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"coreq: {path}: ")
            and all(p in lines[0] for p in parts) and "database: " not in lines[0]
            and not sanitizer_report(r.stderr))


NOBODY_COREQ = None  # a copy of the binary that an unprivileged user can run


def as_nobody(*args):
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           NOBODY_COREQ] + list(args), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, COREQ_CACHE="/nonexistent/cache.db"))


def main():
    cases = {c["case"]: c for c in require_corpus()}
    core = cases["threads8.O2"]["core"]
    tmp = tempfile.mkdtemp(prefix="coreq-dberr-")
    os.chmod(tmp, 0o755)
    try:
        good = os.path.join(tmp, "good.db")
        r = coreq("ingest", "--db", good, "--no-cache", core, timeout=300)
        ok(r.returncode == 0, "a good database", r.stderr)
        con = sqlite3.connect(good)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()

        paged = os.path.join(tmp, "paged.db")
        data = bytearray(open(good, "rb").read())
        data[100:4096] = b"\xff" * (4096 - 100)  # the schema page
        open(paged, "wb").write(data)
        notdb = os.path.join(tmp, "notdb.db")
        open(notdb, "wb").write(b"this is not a database " * 200)
        for path in (paged, notdb):
            for q in QUERIES:
                r = coreq(q[0], "--db", path, *q[1:])
                ok(one_line(r, path, "damaged database", ".recover", "move it aside"),
                   f"{os.path.basename(path)}: {q[0]} says it is damaged, once, with the fix",
                   r.stderr)
            r = coreq("ingest", "--db", path, "--no-cache", core, timeout=300)
            ok(one_line(r, path, "damaged database", ".recover"),
               f"{os.path.basename(path)}: ingest says it is damaged, once", r.stderr)

        newer = os.path.join(tmp, "newer.db")
        shutil.copy(good, newer)
        con = sqlite3.connect(newer)
        con.execute("PRAGMA user_version = 999")
        con.commit()
        con.close()
        r = coreq("cores", "--db", newer)
        ok(one_line(r, newer, "newer", "upgrade coreq"), "a newer schema says upgrade coreq",
           r.stderr)

        missing = os.path.join(tmp, "sub", "missing.db")
        for q in QUERIES:
            r = coreq(q[0], "--db", missing, *q[1:])
            ok(one_line(r, missing, "no such database") and not os.path.exists(missing)
               and not os.path.exists(os.path.dirname(missing)),
               f"{q[0]} refuses a missing database and creates nothing", r.stderr)

        if os.geteuid() != 0 or not shutil.which("setpriv"):
            skip("read-only databases", "needs root to run as an unprivileged user")
            done()
        global NOBODY_COREQ
        NOBODY_COREQ = os.path.join(tmp, "coreq")
        shutil.copy(COREQ, NOBODY_COREQ)
        os.chmod(NOBODY_COREQ, 0o755)
        ro = os.path.join(tmp, "ro")
        os.mkdir(ro)
        shutil.copy(good, os.path.join(ro, "x.db"))
        os.chmod(os.path.join(ro, "x.db"), 0o444)
        os.chmod(ro, 0o555)
        rodb = os.path.join(ro, "x.db")
        r = as_nobody("cores", "--db", rodb, "--format", "json")
        rows = json.loads(r.stdout)["cores"] if r.returncode == 0 else []
        ok(len(rows) == 1 and rows[0]["pid"] > 0, "a read-only database answers cores", r.stderr)
        for q in QUERIES[1:]:
            r = as_nobody(q[0], "--db", rodb, *q[1:], "--format", "json")
            ok(r.returncode == 0 and json.loads(r.stdout), f"read-only: {q[0]} works", r.stderr)
        ok(sorted(os.listdir(ro)) == ["x.db"], "nothing is written beside it", str(os.listdir(ro)))

        # Storing fails and recording the failure fails: one line with both.
        wdir = os.path.join(tmp, "w")
        os.mkdir(wdir)
        os.chmod(wdir, 0o777)
        wdb = os.path.join(wdir, "r.db")
        shutil.copy(good, wdb)
        os.chmod(wdb, 0o444)
        bad = os.path.join(wdir, "bad.core")
        open(bad, "w").write("not a core, only text")
        os.chmod(bad, 0o644)
        r = as_nobody("ingest", "--no-cache", "--db", wdb, bad)
        lines = r.stderr.strip().splitlines()
        ok(r.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"coreq: {bad}: ")
           and "could not be recorded" in lines[0] and "readonly" in lines[0],
           "a failure that cannot be recorded is one line saying both", r.stderr)
    finally:
        for root, dirs, _ in os.walk(tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
