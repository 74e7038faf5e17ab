#!/usr/bin/env python3
"""Stumbles a new user hit (issue 19), each checked on real corpus cores.

1. `coreq ingest DIR` looks in subdirectories (down to --max-depth), and a
   directory without cores says "0 core files in DIR".
"""
import json
import os
import shutil
import sqlite3
import tempfile

from coreq_test import coreq, done, ok, require_corpus


def stumble_1(cases, tmp):
    top = os.path.join(tmp, "spool")
    deep = os.path.join(top, "host-a", "2026", "11")
    os.makedirs(deep)
    os.makedirs(os.path.join(top, "empty"))
    os.makedirs(os.path.join(top, ".hidden"))
    placed = {"segv_null.O2": deep, "fpe.O2": os.path.join(top, "host-a"), "abort_deep.O2": top}
    for name, where in placed.items():
        shutil.copy(cases[name]["core"], os.path.join(where, name + ".core"))
    shutil.copy(cases["sighandler.O2"]["core"], os.path.join(top, ".hidden", "x.core"))
    db = os.path.join(tmp, "rec.db")
    r = coreq("ingest", "--db", db, "--no-cache", "--format", "json", top, timeout=300)
    got = json.loads(r.stdout)["results"] if r.returncode == 0 else []
    ok(len(got) == len(placed) and all(x["status"] == "ingested" for x in got),
       f"ingest DIR finds the {len(placed)} cores in its subdirectories (not the hidden one)",
       r.stdout + r.stderr)
    db2 = os.path.join(tmp, "rec1.db")
    r = coreq("ingest", "--db", db2, "--no-cache", "--format", "json", "--max-depth", "1", top,
              timeout=300)
    got = json.loads(r.stdout)["results"] if r.returncode == 0 else []
    ok(sorted(os.path.basename(x["path"]) for x in got) == ["abort_deep.O2.core", "fpe.O2.core"],
       "--max-depth 1 stops one level down", r.stdout)
    r = coreq("ingest", "--db", db2, os.path.join(top, "empty"))
    ok(r.returncode == 0 and r.stdout.strip() == f"0 core files in {os.path.join(top, 'empty')}",
       "an empty directory says so", r.stdout + r.stderr)


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-stumbles-")
    try:
        stumble_1(cases, tmp)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
