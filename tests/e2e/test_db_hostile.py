#!/usr/bin/env python3
"""Databases from elsewhere (issue 30, findings 5 and 6).

Every database coreq opens may have been handed over, merged in or copied:
- NULL in frames.kind and frames.trust (in a schema that is coreq's) is
  shown, folded, flamed and rebucketed without a crash;
- a table re-declared without its NOT NULLs, a view where a table should be
  (a recursive one, which used to hang every command), a trigger coreq did
  not make: refused at once with one line naming the object, and the
  planted trigger never runs (ingest, rebucket, resymbolize);
- a merge source whose `cores` is a recursive view is refused at once;
- `cores` and the other queries on a writable handed-over database leave it
  byte for byte as it was (no migration, no WAL); an older schema is
  refused with how to upgrade it, and `coreq merge --db P` upgrades it;
- a file named `file:other.db` or `file:other.db?mode=ro` is that file, not
  other.db;
- merge refuses a source's core whose bucket keeps its hash under another
  signature, whose stack keeps its hash over other frames, or whose module
  has a malformed build-id; a genuine crash ingested afterwards is filed
  under its own signature with its own frames; honest sources still merge.

Values and sizes (issue 45, minor c):
- a 200 MB value (a core's exe, a stack's frames blob) is refused as over
  coreq's 64 MiB limit for one value, with one line, before it is loaded:
  `cores` and `show` stay within a few tens of MiB (the release build's
  peak RSS, from /usr/bin/time) instead of printing a 200 MB line from 826 MB;
- a database followed by a 1 TB sparse tail is read as the database it
  is (its hole buys no work budget: tests/unit/test_db_guard.c).
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import COREQ, COREQ_RELEASE, done, ok, require_corpus, sanitizer_report

BIN = os.path.abspath(COREQ)


def run(*args, cwd=None, timeout=30):
    """coreq's result, or None when it did not exit within timeout seconds."""
    try:
        return subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True,
                              errors="replace", timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None


def one_line(r, *parts):
    """Exit 1 with exactly one `coreq: ...` line containing every part, no sanitizer report."""
    if r is None:
        return False
    lines = r.stderr.strip().splitlines()
    return (r.returncode == 1 and len(lines) == 1 and lines[0].startswith("coreq: ")
            and all(p in lines[0] for p in parts) and not sanitizer_report(r.stderr))


def clean(r):
    return r is not None and r.returncode == 0 and not sanitizer_report(r.stderr)


def handed_over(tmp, name, cores):
    """A database of cores in rollback-journal mode, as a copy from another host is."""
    db = os.path.join(tmp, name)
    r = subprocess.run([COREQ_RELEASE, "ingest", "--no-cache", "--db", db, *cores],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode=DELETE")
    con.close()
    return db


def copy(src, tmp, name):
    dst = os.path.join(tmp, name)
    shutil.copy(src, dst)
    return dst


def edit(db, *sql, writable_schema=False):
    con = sqlite3.connect(db)
    if writable_schema:
        con.execute("PRAGMA writable_schema=ON")
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


def loosened(db, table, *sql):
    """Runs sql with table's NOT NULLs lifted, then puts coreq's declaration back."""
    con = sqlite3.connect(db)
    orig = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    con.close()
    edit(db, f"UPDATE sqlite_master SET sql = '{re.sub(r'NOT NULL', '', orig)}' WHERE name = '{table}'",
         writable_schema=True)
    edit(db, *sql)
    con = sqlite3.connect(db)
    con.execute("PRAGMA writable_schema=ON")
    con.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (orig, table))
    con.commit()
    con.close()


def q1(db, sql, *args):
    con = sqlite3.connect(db)
    row = con.execute(sql, args).fetchone()
    con.close()
    return row[0] if row else None


def nulls(tmp, good):
    db = copy(good, tmp, "nulls.db")
    loosened(db, "frames", "UPDATE frames SET kind = NULL, trust = NULL")
    want = q1(good, "SELECT function FROM frames WHERE idx = 0 AND stack_id = "
              "(SELECT stack_id FROM threads WHERE core_id = 1 AND idx = 0)")
    r = run("show", "1", "--db", db)
    ok(clean(r) and want in r.stdout, "NULL kind and trust: show prints the frames", r and r.stderr)
    for args in (["list-stacks"], ["list-stacks", "--format", "folded"],
                 ["list-stacks", "--bucket", "1"]):
        r = run(*args, "--db", db)
        ok(clean(r) and want in r.stdout, f"NULL kind and trust: {' '.join(args)}", r and r.stderr)
    svg = os.path.join(tmp, "nulls.svg")
    r = run("flame", "--bucket", "1", "-o", svg, "--db", db)
    ok(clean(r) and want in open(svg).read(), "NULL kind and trust: flame --bucket",
       r and r.stderr)
    r = run("rebucket", "--db", db)
    ok(clean(r), "NULL kind and trust: rebucket", r and r.stderr)


def refused_schemas(tmp, good, core):
    loose = copy(good, tmp, "loose.db")
    orig = q1(loose, "SELECT sql FROM sqlite_master WHERE name = 'frames'")
    edit(loose, "UPDATE sqlite_master SET sql = ? WHERE name = 'frames'".replace(
        "?", "'" + orig.replace("NOT NULL", "") + "'"), writable_schema=True)
    r = run("show", "1", "--db", loose)
    ok(one_line(r, "schema is not coreq's", "frames", "columns"),
       "a table re-declared without NOT NULL is refused, named", r and r.stderr)

    for table, cmds in (("cores", [["cores"], ["show", "1"], ["buckets"], ["list-stacks"],
                                   ["ingest", "--no-cache", core]]),
                        ("buckets", [["buckets"], ["cores"], ["rebucket"]])):
        db = copy(good, tmp, f"view_{table}.db")
        cols = [c[1] for c in sqlite3.connect(db).execute(f"PRAGMA table_info({table})")]
        edit(db, f"ALTER TABLE {table} RENAME TO {table}_gone",
             f"CREATE VIEW {table} AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
             f"FROM r) SELECT " + ", ".join(f"n AS {c}" for c in cols) + " FROM r")
        for args in cmds:
            start = time.monotonic()
            r = run(*args, "--db", db, timeout=20)
            ok(one_line(r, f"{table} is a view") and time.monotonic() - start < 10,
               f"a recursive view named {table}: {args[0]} refuses it at once",
               r.stderr if r else "no exit in 20 s")

    trig = copy(good, tmp, "trigger.db")
    edit(trig, "CREATE TABLE planted (what TEXT)",
         "CREATE TRIGGER t1 AFTER INSERT ON cores BEGIN INSERT INTO planted VALUES ('ingest'); END",
         "CREATE TRIGGER t2 AFTER UPDATE ON buckets BEGIN INSERT INTO planted VALUES ('rebucket'); END",
         "CREATE TRIGGER t3 AFTER UPDATE ON frames BEGIN INSERT INTO planted VALUES ('name'); END")
    for args in (["ingest", "--no-cache", core], ["rebucket"], ["resymbolize"]):
        r = run(*args, "--db", trig)
        ok(one_line(r, "trigger t1 is not coreq's") and q1(trig, "SELECT count(*) FROM planted") == 0,
           f"a planted trigger: {args[0]} refuses the database, the trigger never runs",
           r and r.stderr)

    src = copy(good, tmp, "bomb_source.db")
    cols = [c[1] for c in sqlite3.connect(src).execute("PRAGMA table_info(cores)")]
    edit(src, "ALTER TABLE cores RENAME TO cores_gone",
         "CREATE VIEW cores AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
         "SELECT " + ", ".join(f"n AS {c}" for c in cols) + " FROM r")
    target = os.path.join(tmp, "bomb_target.db")
    start = time.monotonic()
    r = run("merge", "--db", target, src, timeout=20)
    ok(one_line(r, "cores is a view") and time.monotonic() - start < 10
       and q1(target, "SELECT count(*) FROM cores") == 0,
       "a merge source with a recursive view is refused at once, nothing merged",
       r.stderr if r else "no exit in 20 s")


def read_only(tmp, good):
    db = copy(good, tmp, "handed.db")
    before = open(db, "rb").read()
    for args in (["cores"], ["show", "1"], ["list-stacks"], ["buckets"], ["export"],
                 ["flame", "--bucket", "1", "-o", os.path.join(tmp, "h.svg")]):
        r = run(*args, "--db", db)
        ok(clean(r) and open(db, "rb").read() == before and
           not any(os.path.exists(db + x) for x in ("-wal", "-shm", "-journal")),
           f"{args[0]} leaves a writable handed-over database as it was", r and r.stderr)
    ok(q1(db, "PRAGMA journal_mode") == "delete", "its journal mode is still delete")

    old = os.path.join(tmp, "old.db")
    con = sqlite3.connect(old)
    schema = os.path.join(os.environ.get("COREQ_ROOT", "."), "schema")
    for f in sorted(os.listdir(schema)):
        if re.match(r"00[1-7]_", f):
            con.executescript(open(os.path.join(schema, f)).read())
    con.execute("PRAGMA user_version = 7")
    con.commit()
    con.close()
    before = open(old, "rb").read()
    r = run("cores", "--db", old)
    ok(one_line(r, "older", f"coreq merge --db {old}") and open(old, "rb").read() == before,
       "an older schema: cores says how to upgrade and leaves it as it was", r and r.stderr)
    r = run("merge", "--db", old)
    latest = max(int(f[:3]) for f in os.listdir(schema) if re.match(r"\d{3}_", f))
    ok(clean(r) and q1(old, "PRAGMA user_version") == latest and clean(run("cores", "--db", old)),
       "coreq merge --db P (no sources) upgrades it; then cores works", r and r.stderr)


def uri_names(tmp, good, one, core):
    d = os.path.join(tmp, "uri")
    os.makedirs(d)
    other = copy(good, d, "other.db")
    before = open(other, "rb").read()
    r = run("ingest", "--no-cache", "--db", "file:other.db", core, cwd=d)
    literal = os.path.join(d, "file:other.db")
    ok(clean(r) and os.path.exists(literal) and open(other, "rb").read() == before,
       "ingest --db file:other.db writes that file, not other.db", r and r.stderr)
    shutil.copy(one, os.path.join(d, "file:other.db?mode=ro"))
    r = run("merge", "--format", "json", "--db", "target.db", "file:other.db?mode=ro", cwd=d)
    n = q1(one, "SELECT count(*) FROM cores")
    ok(clean(r) and json.loads(r.stdout)["cores"] == n and
       q1(os.path.join(d, "target.db"), "SELECT count(*) FROM cores") == n,
       f"merge of file:other.db?mode=ro merges that file ({n} core), not other.db",
       r and r.stderr + r.stdout)


def merge_poison(tmp, core, other_core):
    ref = handed_over(tmp, "ref.db", [core])
    signature = q1(ref, "SELECT signature FROM buckets")
    frames_q = ("SELECT group_concat(f.offset || ':' || f.kind || ':' || f.function, ' ') FROM cores c "
                "JOIN threads t ON t.core_id = c.id AND t.idx = 0 JOIN frames f ON f.stack_id = t.stack_id "
                "WHERE c.identity NOT LIKE 'planted-%' ORDER BY f.idx")
    frames = q1(ref, frames_q)
    cases = {
        "label": ("buckets", "UPDATE buckets SET signature = 'harmless_known_issue | SIGSEGV'"),
        "frames": ("frames", "UPDATE frames SET offset = offset + 16, function = 'harmless_known_issue' "
                             "WHERE idx = 0"),
        "build_id": ("modules", "UPDATE modules SET build_id = '../../../../tmp/x' WHERE rowid = "
                                "(SELECT min(rowid) FROM modules WHERE build_id NOT LIKE 'path:%')"),
    }
    for name, (table, sql) in cases.items():
        src = copy(ref, tmp, f"poison_{name}.db")
        edit(src, "UPDATE cores SET identity = 'planted-' || identity")
        loosened(src, table, sql)
        target = os.path.join(tmp, f"poison_{name}_target.db")
        r = run("merge", "--format", "json", "--db", target, src)
        res = json.loads(r.stdout) if clean(r) else {}
        ok(res.get("refused") == 1 and res.get("cores") == 0,
           f"merge refuses the core of a source with a poisoned {name}", r and r.stderr + r.stdout)
        r = run("ingest", "--no-cache", "--db", target, core)
        sig = q1(target, "SELECT b.signature FROM cores c JOIN buckets b ON b.id = c.bucket_id "
                         "WHERE c.identity NOT LIKE 'planted-%'")
        bad_ids = q1(target, "SELECT count(*) FROM modules WHERE build_id LIKE '%/%'")
        ok(clean(r) and sig == signature and q1(target, frames_q) == frames and bad_ids == 0,
           f"{name}: the genuine crash ingested afterwards keeps its signature and frames",
           f"{sig!r} against {signature!r}")
    honest = handed_over(tmp, "honest.db", [core, other_core])
    target = os.path.join(tmp, "honest_target.db")
    r = run("merge", "--format", "json", "--db", target, honest)
    res = json.loads(r.stdout) if clean(r) else {}
    ok(res.get("cores") == 2 and res.get("refused") == 0, "an honest source merges whole",
       r and r.stderr + r.stdout)


def peak(*args, timeout=120):
    """The release build's exit status, stdout size, stderr and peak RSS in MiB, measured by
    /usr/bin/time (this process's own memory, grown by the edits, would count in a child's
    ru_maxrss up to its exec)."""
    with tempfile.TemporaryFile() as out:
        r = subprocess.run(["/usr/bin/time", "-f", "@@%M", COREQ_RELEASE, *map(str, args)],
                           stdout=out, stderr=subprocess.PIPE, text=True, errors="replace",
                           timeout=timeout)
        lines = [l for l in r.stderr.splitlines() if not l.startswith("Command exited with")]
        kib = int(lines[-1][2:]) if lines and lines[-1].startswith("@@") else 1 << 30
        return r.returncode, out.seek(0, 2), "\n".join(lines[:-1]), kib // 1024


def big_values(tmp, good):
    """A 200 MB value costs no memory: it is refused before it is read (limit 64 MiB)."""
    twin = peak("show", "1", "--db", good)
    ok(twin[0] == 0, "big values: the honest database is shown", twin[2])
    huge = 200_000_000
    exe = copy(good, tmp, "big_exe.db")
    edit(exe, f"UPDATE cores SET exe = printf('%.*c', {huge}, 'x') WHERE id = 1")
    blob = copy(good, tmp, "big_blob.db")
    edit(blob, f"UPDATE stacks SET frames_blob = zeroblob({huge}) WHERE id = "
               "(SELECT stack_id FROM threads WHERE core_id = 1 AND idx = 0)")
    for db, what, queries in ((exe, "a 200 MB exe", (["cores"], ["show", "1"],
                                                    ["cores", "--format", "json"])),
                              (blob, "a 200 MB frames blob", (["show", "1"], ["list-stacks"]))):
        for q in queries:
            rc, out_bytes, err, mib = peak(*q, "--db", db)
            lines = err.strip().splitlines()
            refused = (rc == 1 and len(lines) == 1 and lines[0].startswith("coreq: ")
                       and ("64 MiB" in lines[0] or "too big" in lines[0]))
            ok((refused or rc == 0) and out_bytes < (1 << 20) and mib < twin[3] + 64,
               f"{what}: {' '.join(q)} refuses it in one line or leaves it out, "
               f"in {mib} MiB (honest: {twin[3]} MiB)",
               f"exit {rc}, {out_bytes} bytes out: {err[-500:]}")
            r = run(*q, "--db", db, timeout=120)
            ok(r is not None and not sanitizer_report(r.stderr) and r.returncode in (0, 1)
               and (r.returncode == 0 or one_line(r)),
               f"{what}: {' '.join(q)} (ASan): no report, one line if it fails",
               r and r.stderr[-1000:])


def sparse_tail(tmp, good):
    """A database followed by a 1 TB hole is the database it is."""
    db = copy(good, tmp, "sparse.db")
    with open(db, "r+b") as f:
        f.truncate(os.path.getsize(db) + (1 << 40))
    for q in (["cores"], ["show", "1"], ["list-stacks"], ["buckets"]):
        start = time.monotonic()
        r = run(*q, "--db", db, "--format", "json", timeout=60)
        ok(clean(r) and json.loads(r.stdout) and time.monotonic() - start < 30,
           f"a 1 TB sparse tail: {q[0]} reads the database", r and r.stderr[-1000:])


def main():
    cases = {c["case"]: c for c in require_corpus()}
    core = cases["segv_null.O2"]["core"]
    other = cases["rust_async.O2"]["core"] if "rust_async.O2" in cases else cases["fpe.O2"]["core"]
    tmp = tempfile.mkdtemp(prefix="coreq-dbhostile-")
    try:
        good = handed_over(tmp, "good.db", [core, cases["abort_deep.O2"]["core"]])
        one = handed_over(tmp, "one.db", [cases["fpe.O2"]["core"]])
        nulls(tmp, good)
        refused_schemas(tmp, good, cases["fpe.O2"]["core"])
        read_only(tmp, good)
        uri_names(tmp, good, one, cases["fpe.O2"]["core"])
        merge_poison(tmp, core, other)
        big_values(tmp, good)
        sparse_tail(tmp, good)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
