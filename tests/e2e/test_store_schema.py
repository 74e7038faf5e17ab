#!/usr/bin/env python3
"""The database schema: created and migrated on first open, refused with a
clear error when it is newer than this coreq, and the example queries of
docs/internals.md over the views work on a real database."""
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import ROOT, coreq, done, ok, require_corpus


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-schema-")
    try:
        db = os.path.join(tmp, "a", "b", "coreq.db")
        r = coreq("cores", "--db", db)
        ok(r.returncode == 1 and not os.path.exists(db), "a query does not create a database", r.stderr)
        r = coreq("ingest", "--no-cache", "--db", db, cases["segv_null.O2"]["core"], timeout=300)
        ok(r.returncode == 0 and os.path.exists(db), "the first ingest creates the database and its directories",
           r.stderr)
        con = sqlite3.connect(db)
        version = con.execute("PRAGMA user_version").fetchone()[0]
        tables = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        con.close()
        want = {"cores", "modules", "core_modules", "stacks", "frames", "threads", "v_thread_stacks",
                "v_stack_counts"}
        ok(version >= 1 and want <= tables, f"schema version {version} with every table and view",
           sorted(tables))

        con = sqlite3.connect(db)
        con.execute("PRAGMA user_version = 999")
        con.commit()
        con.close()
        r = coreq("cores", "--db", db)
        lines = r.stderr.strip().splitlines()
        ok(r.returncode == 1 and len(lines) == 1 and "newer" in lines[0],
           "a database newer than this coreq is refused with one clear line", r.stderr)

        db = os.path.join(tmp, "real.db")
        r = coreq("ingest", "--db", db, "--no-cache", cases["threads8.O0"]["core"],
                  cases["abort_deep.O0"]["core"], timeout=300)
        ok(r.returncode == 0, "ingest two cores", r.stderr)
        readme = open(os.path.join(ROOT, "docs", "internals.md")).read()
        queries = re.findall(r"sqlite3 ~/.local/state/coreq/coreq.db \\\n\s+(['\"])(.*?)\1", readme)
        ok(len(queries) >= 3, f"docs/internals.md has example queries ({len(queries)})")
        for _, q in queries:
            r = subprocess.run(["sqlite3", db, q], capture_output=True, text=True)
            ok(r.returncode == 0 and r.stdout.strip() != "", f"docs/internals.md query runs: {q[:60]}",
               r.stderr or "no rows")
    finally:
        shutil.rmtree(tmp)
    done()


main()
