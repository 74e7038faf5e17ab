#!/usr/bin/env python3
"""The unwind-table and symbol cache: work done once per build-id is reused,
and a cache that is stale, damaged or unwritable never changes the answer.

- the first run fills unwind_tables (one row per module build-id with CFI)
  and symbols; the second run gives byte-identical output;
- a table row of another format version is ignored and replaced;
- corrupted table and symbol blobs are rejected and rebuilt, output unchanged;
- --no-cache creates no file; an unusable cache path warns once and exits 0.
"""
import os
import shutil
import sqlite3
import tempfile

from coreq_test import coreq, done, ok, require_corpus, sanitizer_report


def edit(db, *statements):
    """Runs statements on the cache file db, as someone else writing it would."""
    con = sqlite3.connect(db)
    for sql in statements:
        con.execute(sql)
    con.commit()
    con.close()


def one(db, sql):
    con = sqlite3.connect(db)
    value = con.execute(sql).fetchone()[0]
    con.close()
    return value


def stack(core, *extra):
    r = coreq("stack", "--format", "json", *extra, core, timeout=300)
    return r


def main():
    cases = {c["case"]: c for c in require_corpus()}
    core = cases["threads8.O2"]["core"]
    tmp = tempfile.mkdtemp(prefix="coreq-cache-")
    try:
        ref = stack(core, "--no-cache")
        ok(ref.returncode == 0 and ref.stderr == "", "stack without a cache", ref.stderr)
        ok(not os.listdir(tmp), "--no-cache creates no file")

        db = os.path.join(tmp, "sub", "cache.db")
        first = stack(core, "--cache", db)
        ok(first.returncode == 0 and first.stdout == ref.stdout,
           "a cold cache gives the same output", first.stderr)
        con = sqlite3.connect(db)
        tables = con.execute("SELECT build_id, format, rows FROM unwind_tables").fetchall()
        nsyms = con.execute("SELECT count(*) FROM symbols").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
        con.close()
        ok(len(tables) >= 2 and all(r[2] > 0 for r in tables),
           f"unwind tables stored per build-id ({len(tables)} modules)", str(tables))
        ok(nsyms > 0, f"symbol results stored ({nsyms} addresses)")
        ok(version >= 2, f"cache schema is migrated (user_version {version})")

        second = stack(core, "--cache", db)
        ok(second.returncode == 0 and second.stdout == ref.stdout,
           "a warm cache gives byte-identical output", second.stderr)

        edit(db, "UPDATE unwind_tables SET format = format + 100")
        r = stack(core, "--cache", db)
        fresh = one(db, "SELECT count(*) FROM unwind_tables WHERE format < 100")
        ok(r.returncode == 0 and r.stdout == ref.stdout and fresh == len(tables),
           "tables of another format version are ignored and rebuilt", r.stderr)

        edit(db, "UPDATE unwind_tables SET blob = substr(blob, 1, length(blob) / 2)",
             "UPDATE symbols SET frames = x'05ff'")
        r = stack(core, "--cache", db)
        ok(r.returncode == 0 and r.stdout == ref.stdout and not sanitizer_report(r.stderr),
           "truncated table blobs and garbage symbol blobs are rejected, output unchanged",
           r.stderr)

        # A cache an older coreq left (schema 1 to 7; here with a table it
        # dropped since, a view and a trigger): emptied, made again, same output.
        latest = version
        edit(db, "PRAGMA user_version = 5", "CREATE TABLE cxx_types (source INTEGER, blob BLOB)",
             "CREATE VIEW old_view AS SELECT * FROM symbols",
             "CREATE TRIGGER old_trigger AFTER DELETE ON symbols BEGIN SELECT 1; END",
             "UPDATE symbols SET frames = x'05ff'")
        r = stack(core, "--cache", db)
        now = one(db, "PRAGMA user_version")
        left = one(db, "SELECT count(*) FROM sqlite_schema WHERE name IN "
                       "('cxx_types', 'old_view', 'old_trigger')")
        garbage = one(db, "SELECT count(*) FROM symbols WHERE frames = x'05ff'")
        remade = one(db, "SELECT count(*) FROM unwind_tables")
        ok(r.returncode == 0 and r.stdout == ref.stdout and r.stderr == "" and now == latest and
           left == 0 and garbage == 0 and remade == len(tables),
           f"an older cache is emptied and made again (user_version {now}, {remade} tables)",
           r.stderr)

        bad = os.path.join(tmp, "not-a-dir")
        open(bad, "w").close()
        r = stack(core, "--cache", os.path.join(bad, "cache.db"))
        lines = r.stderr.strip().splitlines()
        ok(r.returncode == 0 and r.stdout == ref.stdout and len(lines) == 1 and "warning" in lines[0],
           "an unusable cache path warns once and still answers", r.stderr)
    finally:
        shutil.rmtree(tmp)
    done()


main()
