#!/usr/bin/env python3
"""Stacks are stored once across cores: the corpus N-thread cores (10, 1000
and 3000 threads) come from one binary whose threads are parked in one place
and whose main thread aborts from one place, so all three cores together hold
exactly two distinct stacks, and only the first core adds any."""
import json
import os
import shutil
import sqlite3
import tempfile

from coreq_test import coreq, done, ok, require_corpus


def main():
    cases = {c["case"]: c for c in require_corpus()}
    names = ["threads-10", "threads-1000", "threads-3000"]
    tmp = tempfile.mkdtemp(prefix="coreq-dedup-")
    try:
        db = os.path.join(tmp, "coreq.db")
        new = []
        for name in names:
            r = coreq("ingest", "--db", db, "--no-cache", "--format", "json", cases[name]["core"],
                      timeout=300)
            res = json.loads(r.stdout)["results"][0] if r.returncode == 0 else {}
            new.append(res.get("new_stacks"))
            ok(res.get("status") == "ingested" and res.get("stacks") == 2,
               f"{name}: ingested with 2 distinct stacks", r.stdout + r.stderr)
        ok(new == [2, 0, 0], f"only the first core adds stacks (new stacks per core: {new})")
        con = sqlite3.connect(db)
        nstacks = con.execute("SELECT count(*) FROM stacks").fetchone()[0]
        nthreads = con.execute("SELECT count(*) FROM threads").fetchone()[0]
        con.close()
        parked = sum(int(cases[n]["threads"]) - 1 for n in names)
        ok(nstacks == 2 and nthreads == parked + 3,
           f"{nthreads} threads of 3 cores share {nstacks} stacks rows")
        r = coreq("list-stacks", "--db", db, "--format", "json")
        stacks = json.loads(r.stdout)["stacks"] if r.returncode == 0 else []
        top = stacks[0] if stacks else {}
        fns = [f["function"] for f in top.get("frames", [])]
        ok(top.get("threads") == parked and top.get("cores") == 3 and "parked_thread" in fns,
           f"the top stack is parked_thread's: {parked} threads in 3 cores", str(top)[:400])
        ok(len(stacks) == 2 and stacks[1]["threads"] == 3 and stacks[1]["cores"] == 3,
           "the aborting main thread's stack: 3 threads in 3 cores")
    finally:
        shutil.rmtree(tmp)
    done()


main()
