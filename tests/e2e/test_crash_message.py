#!/usr/bin/env python3
"""The crash message in the store (issues 48 and 49): what the program's
runtime said the crash was, read from the core, ingested and read back.

Subjects and their own records (never coreq's output):
- corpus/go's go_server (corpus/go/make-go-cores, into $GO_CORPUS, default
  $COREQ_BUILD/go-corpus): `nilmap` and `index` panic on the main goroutine;
  the runtime's own first line of stderr ("panic: ...") beside the core is
  the message;
- real-python3-crash-abort, _keyerror and _bare (corpus/real/python3-crash.py):
  a worker's uncaught ValueError("bad job 7"), KeyError("job 7") or bare
  RuntimeError reaches an excepthook that aborts; the hook records the last
  line of the traceback Python prints for it (traceback.format_exception_only:
  "ValueError: bad job 7", "KeyError: 'job 7'", "RuntimeError") in the
  oracle beside the core;
- real-python3-crash-killed: the main thread waits in an except block
  handling ValueError("bad job 7") (its oracle) and a watchdog's SIGABRT
  from outside kills it: the frame's mark says the exception, but it is not
  why the process died, so no message;
- a C program's abort (abort_deep.O0): no runtime, no message.
The Python messages also without python3.11-dbg (its DWARF hidden: the
layout from coreq's table).  Each is ingested; `stack --format json`, `show` (text: the `crash:` line;
JSON: core.crash_message), `cores --format json`, `export --type core`, a
`merge` into a second database, and, when clickhouse-server is installed,
`push` into a ClickHouse store made by schema/clickhouse 001 and 005 to 007,
all carry the message, or null for the C core.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import (BUILD, CORPUS, ROOT, coreq, coreq_json, done, ok, private_mounts,
                        sanitizer_report, skip)

GO_CORPUS = os.environ.get("GO_CORPUS", os.path.join(BUILD, "go-corpus"))
GO_CASES = ["go_server-nilmap.O0", "go_server-index.default"]


def go_subjects():
    """(name, core, message) of the Go panics: the runtime's own first stderr line."""
    dirs = [os.path.join(GO_CORPUS, "cores", c) for c in GO_CASES]
    if not all(os.path.isfile(os.path.join(d, "core")) for d in dirs):
        if not shutil.which("go"):
            skip("Go panics in the store", "go not installed (golang-go)")
            return []
        r = subprocess.run([os.path.join(ROOT, "corpus/go/make-go-cores"), GO_CORPUS],
                           capture_output=True, text=True)
        if not ok(r.returncode == 0, "make-go-cores builds and crashes the Go cases", r.stderr[-2000:]):
            return []
    out = []
    for c, d in zip(GO_CASES, dirs):
        first = open(os.path.join(d, "stderr"), errors="replace").readline().rstrip("\n")
        ok(first.startswith("panic: "), f"{c}: the runtime's stderr starts with its panic", first)
        out.append((c, os.path.join(d, "core"), first))
    return out


PY_CASES = ["real-python3-crash-abort", "real-python3-crash-abort_keyerror",
            "real-python3-crash-abort_bare"]


def python_subjects():
    """(name, core, message) of the Python aborts: the traceback line Python's excepthook recorded."""
    out = []
    for case in PY_CASES:
        d = os.path.join(CORPUS, "cores", case)
        if not ok(os.path.isfile(os.path.join(d, "oracle")), f"the corpus has {case}",
                  f"run corpus/make-cores {CORPUS} {case}"):
            continue
        lines = [l.rstrip("\n") for l in open(os.path.join(d, "oracle"))]
        line = next((l[len("traceback "):] for l in lines if l.startswith("traceback ")), None)
        if ok(line is not None, f"{case}: the excepthook recorded Python's traceback line", lines):
            out.append((case, os.path.join(d, "core"), line))
    return out


def without_dbg_check(subjects):
    """The Python messages with libpython's DWARF hidden (as test_python.py hides it)."""
    if not private_mounts():
        skip("Python crash messages without -dbg",
             "needs a mount namespace of its own (root, unshare -m) to hide /usr/lib/debug")
        return
    for name, core, want in subjects:
        cmd = "mount -t tmpfs none /usr/lib/debug && exec \"$@\""
        r = subprocess.run(["unshare", "-m", "sh", "-c", cmd, "sh", os.environ.get("COREQ", "build/asan/coreq"),
                            "stack", "--no-cache", "--format", "json", core],
                           capture_output=True, text=True, errors="replace", timeout=300)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(doc.get("crash_message") == want and doc.get("async", {}).get("python_layout") == "table",
           f"{name} without -dbg (table layout): crash_message is {want!r}",
           [doc.get("crash_message"), doc.get("async", {}).get("python_layout"), r.stderr[-500:]])


def killed_subject():
    """real-python3-crash-killed: handling an exception, killed from outside: no message."""
    case = "real-python3-crash-killed"
    d = os.path.join(CORPUS, "cores", case)
    if not ok(os.path.isfile(os.path.join(d, "oracle")), f"the corpus has {case}",
              f"run corpus/make-cores {CORPUS} {case}"):
        return []
    kind, etype, message = open(os.path.join(d, "oracle")).readline().rstrip("\n").split(" ", 2)
    mark = f"handling {etype}: {message}"
    doc, _ = coreq_json("stack", "--format", "json", os.path.join(d, "core"), timeout=300)
    marks = [f.get("state") for f in doc["threads"][0]["frames"] if f.get("state")]
    ok(kind == "exception" and any(mark in m for m in marks),
       f"{case}: the crashed thread's frame says {mark!r}", marks)
    return [(case, os.path.join(d, "core"), None)]


def c_subject():
    d = os.path.join(CORPUS, "cores", "abort_deep.O0")
    if not ok(os.path.isfile(os.path.join(d, "core")), "the corpus has abort_deep.O0"):
        return []
    return [("abort_deep.O0", os.path.join(d, "core"), None)]


def show_crash_line(text):
    """The `crash:` line of `show`'s header (before the modules and threads), or None."""
    for line in text.split("\n\n", 1)[0].splitlines():
        if line.startswith("crash:"):
            return line[len("crash:"):].strip()
    return None


def store_checks(db, subjects):
    """Ingest each subject, then every reader of the store says its message; returns {path: id}."""
    ids = {}
    for name, core, want in subjects:
        doc, _ = coreq_json("stack", "--format", "json", core, timeout=300)
        ok(doc.get("crash_message") == want, f"{name}: stack JSON crash_message is {want!r}",
           doc.get("crash_message"))
        r = coreq("ingest", "--db", db, "--no-cache", core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), f"{name}: ingested", r.stderr)
    doc, _ = coreq_json("cores", "--db", db, "--format", "json")
    by_path = {c["path"]: c for c in doc["cores"]}
    records = {}
    r = coreq("export", "--db", db, "--type", "core")
    ok(r.returncode == 0, "export --type core", r.stderr)
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        records[rec["local_id"]] = rec
    for name, core, want in subjects:
        row = by_path.get(core) or by_path.get(os.path.realpath(core)) or {}
        ids[core] = row.get("id")
        ok("crash_message" in row and row.get("crash_message") == want,
           f"{name}: cores --format json crash_message is {want!r}", row)
        r = coreq("show", "--db", db, str(row.get("id")))
        ok(r.returncode == 0 and show_crash_line(r.stdout) == want,
           f"{name}: show's header says crash: {want!r}", r.stdout[:800] + r.stderr)
        doc, _ = coreq_json("show", "--db", db, "--format", "json", str(row.get("id")))
        ok(doc["core"].get("crash_message", "absent") == want,
           f"{name}: show JSON core.crash_message is {want!r}", doc["core"])
        rec = records.get(row.get("id"), {})
        ok("crash_message" in rec and rec["crash_message"] == want,
           f"{name}: the export's core record carries crash_message {want!r}", rec)
    con = sqlite3.connect(db)
    stored = dict(con.execute("SELECT id, crash_message FROM cores").fetchall())
    con.close()
    ok(all(stored.get(ids[core]) == want for _, core, want in subjects),
       "cores.crash_message (schema 016) holds each message", stored)
    return ids


def merge_check(db, tmp, subjects):
    merged = os.path.join(tmp, "merged.db")
    r = coreq("merge", "--db", merged, db, timeout=300)
    ok(r.returncode == 0, "merge into a second database", r.stderr)
    doc, _ = coreq_json("cores", "--db", merged, "--format", "json")
    got = sorted((c.get("crash_message") or "") for c in doc["cores"])
    want = sorted((w or "") for _, _, w in subjects)
    ok(got == want, "merge carries every crash message", [got, want])


def push_check(db, tmp, subjects):
    """push into ClickHouse (schema/clickhouse 001, 005 to 007): coreq.cores.crash_message."""
    import test_fleet
    if not os.path.exists(test_fleet.CLICKHOUSE) or not test_fleet.CLIENT:
        skip("push carries crash_message", "clickhouse-server is not installed (make deps installs it)")
        return
    d = os.path.join(tmp, "clickhouse")
    os.chmod(tmp, 0o755)
    server = test_fleet.Server(d)
    try:
        if not ok(server.start(), "clickhouse-server starts"):
            return
        for name in ("001_tables.sql", "005_sender_claimed.sql", "006_snapshot.sql",
                     "007_crash_message.sql"):
            good, why = test_fleet.schema(server, name)
            ok(good, f"schema/clickhouse/{name} loads", why)
        cols = server.query("SELECT name, type FROM system.columns WHERE database = 'coreq' "
                            "AND table = 'cores' AND name = 'crash_message'")
        ok(cols.split() == ["crash_message", "Nullable(String)"],
           "007_crash_message.sql adds coreq.cores.crash_message Nullable(String)", cols)
        r = coreq("push", "--db", db, "--clickhouse", server.url(), "--cursor",
                  os.path.join(tmp, "cursor"), "--format", "json", timeout=300)
        ok(r.returncode == 0, "push", r.stdout + r.stderr)
        rows = json.loads(server.query("SELECT pid, crash_message FROM coreq.cores FINAL "
                                       "FORMAT JSONCompact"))["data"]
        got = sorted((m or "") for _, m in rows)
        want = sorted((w or "") for _, _, w in subjects)
        ok(got == want, "push sends every crash message (null for the C core)", [got, want])
    finally:
        server.stop()


def main():
    py = python_subjects()
    without_dbg_check(py)
    subjects = go_subjects() + py + killed_subject() + c_subject()
    if not subjects:
        return done()
    tmp = tempfile.mkdtemp(prefix="coreq-crash-message-")
    try:
        db = os.path.join(tmp, "db.sqlite")
        store_checks(db, subjects)
        merge_check(db, tmp, subjects)
        push_check(db, tmp, subjects)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
