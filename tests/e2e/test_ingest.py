#!/usr/bin/env python3
"""coreq ingest: the SQLite store holds exactly what `coreq stack` finds,
once per core, whole or not at all.

- one core: its cores row matches the corpus facts and `coreq info`, its
  modules and threads are all there, and every thread's frames read back from
  the database equal `coreq stack --format json`'s;
- the same core again, a copy under another name, a zstd copy: duplicates;
- stacks are deduplicated: the 1000 parked threads of threads-1000 are one
  stack, and the same stack in another core (another load address) is not new;
- a directory: every core-looking file, not subdirectories nor text; again:
  all duplicates; a bad core among good ones: one error line, exit 1, the
  good ones stored; `-` reads a piped core;
- the database is in WAL mode, passes integrity_check and foreign_key_check,
  and the views and example queries of docs/internals.md agree with the tables;
- --db, $COREQ_DB and $XDG_STATE_HOME choose where the database is;
- SIGKILL at many points of an ingest of threads-3000 leaves either no core
  or the whole core, and a later ingest completes.
"""
import gzip
import json
import os
import random
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import BUILD, COREQ, ROOT, done, ok, require_corpus, sanitizer_report, skip

COREQ_RELEASE = os.environ.get("COREQ_RELEASE", os.path.join(BUILD, "coreq"))


def env_with(**extra):
    env = dict(os.environ)
    env.update(extra)
    return env


def run(*args, binary=None, env=None, stdin=None, input=None, timeout=300):
    cmd = [binary or COREQ] + [str(a) for a in args]
    return subprocess.run(cmd, stdin=stdin, input=input, capture_output=True, timeout=timeout,
                          env=env or ENV)


def text(r):
    return r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def ingest_json(db, *paths, **kw):
    """Run `coreq ingest --format json`; returns (CompletedProcess, doc or None, stderr)."""
    r = run("ingest", "--db", db, "--format", "json", *paths, **kw)
    out, err = text(r)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    return r, doc, err


def diag(r, doc=None):
    out, err = text(r)
    lines = [f"exit status {r.returncode}"]
    lines += ["stdout: " + l for l in out.splitlines()[:15]]
    lines += ["stderr: " + l for l in err.splitlines()[:15]]
    return lines


def q(db, sql, args=()):
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def q1(db, sql, args=()):
    rows = q(db, sql, args)
    return rows[0][0] if rows else None


def hexint(s):
    return None if s is None else int(s, 16)


def frame_key(f):
    """What a stored frame must keep of `coreq stack`'s frame."""
    return (f["function"], f["kind"], f["module"], hexint(f["offset"]), f["trust"], f["file"],
            f["line"])


def db_threads(db, core_id):
    """{tid: {...}} for one core, frames read back through modules."""
    con = sqlite3.connect(db, timeout=30)
    try:
        threads = {}
        for tid, idx, name, crashed, stack_id, end in con.execute(
                "SELECT tid, idx, name, crashed, stack_id, end FROM threads WHERE core_id = ?",
                (core_id,)):
            threads[tid] = {"idx": idx, "name": name, "crashed": crashed, "stack_id": stack_id,
                            "end": end, "frames": [], "build_ids": []}
        for tid, fidx, kind, trust, mpath, mbid, off, fn, file, line in con.execute(
                "SELECT t.tid, f.idx, f.kind, f.trust, m.path, m.build_id, f.offset, f.function,"
                " f.file, f.line FROM threads t JOIN frames f ON f.stack_id = t.stack_id"
                " LEFT JOIN modules m ON m.id = f.module_id WHERE t.core_id = ?"
                " ORDER BY t.tid, f.idx", (core_id,)):
            th = threads[tid]
            th.setdefault("idxs", []).append(fidx)
            th["frames"].append((fn, kind, mpath, off, trust, file, line))
            th["build_ids"].append(mbid)
        return threads
    finally:
        con.close()


def consistency(db):
    """Problems in the database as a list of strings (empty when sound)."""
    bad = []
    con = sqlite3.connect(db, timeout=30)
    try:
        ic = [r[0] for r in con.execute("PRAGMA integrity_check")]
        if ic != ["ok"]:
            bad.append(f"integrity_check: {ic[:5]}")
        fk = con.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            bad.append(f"foreign_key_check: {fk[:5]}")
        for cid, n, have in con.execute(
                "SELECT c.id, c.nthreads, (SELECT count(*) FROM threads t WHERE t.core_id = c.id)"
                " FROM cores c"):
            if n != have:
                bad.append(f"core {cid}: nthreads {n} but {have} threads rows")
        for sid, n, have, mx in con.execute(
                "SELECT s.id, s.nframes, count(f.idx), max(f.idx) FROM stacks s"
                " LEFT JOIN frames f ON f.stack_id = s.id GROUP BY s.id"):
            if n != have or (have and mx != have - 1):
                bad.append(f"stack {sid}: nframes {n} but {have} frames (max idx {mx})")
        orphans = con.execute(
            "SELECT count(*) FROM stacks WHERE id NOT IN (SELECT stack_id FROM threads)").fetchone()[0]
        if orphans:
            bad.append(f"{orphans} stacks belong to no thread (a core stored in part?)")
        for cid, n in con.execute(
                "SELECT core_id, sum(crashed) FROM threads GROUP BY core_id HAVING sum(crashed) != 1"):
            bad.append(f"core {cid}: {n} crashed threads")
    finally:
        con.close()
    return bad


# ---------------------------------------------------------------------------

def test_one_core(cases, db):
    case = cases["threads8.O2"]
    core = case["core"]
    r, doc, err = ingest_json(db, core)
    res = (doc or {}).get("results") or [{}]
    ok(r.returncode == 0 and err == "" and doc is not None, "ingest one core: exit 0, JSON, quiet stderr",
       diag(r))
    ok(len(res) == 1 and res[0].get("status") == "ingested" and isinstance(res[0].get("core_id"), int)
       and res[0].get("path") == core and doc.get("ingested") == 1 and doc.get("duplicates") == 0
       and doc.get("failed") == 0 and res[0].get("message") is None,
       "ingest one core: JSON result says ingested with a core id", json.dumps(doc)[:2000])
    core_id = res[0].get("core_id")
    ok(res[0].get("threads") == int(case["threads"]) and res[0].get("stacks") == res[0].get("new_stacks")
       and isinstance(res[0].get("stacks"), int) and 1 <= res[0]["stacks"] <= int(case["threads"]),
       "ingest one core: JSON threads/stacks/new_stacks (empty database: all stacks new)",
       json.dumps(res[0]))

    rows = q(db, "SELECT id, path, pid, exe, cmdline, signal, signal_name, si_code, fault_address,"
                 " crashed_tid, nthreads, status, ingested_at, size FROM cores")
    ok(len(rows) == 1 and rows[0][0] == core_id, "ingest one core: one cores row with that id", rows)
    if len(rows) != 1:
        return None
    (cid, path, pid, exe, cmdline, sig, signame, si_code, fault, crashed_tid, nthreads, status,
     ingested_at, size) = rows[0]
    ok(pid == int(case["pid"]) and sig == int(case["signal"]) and nthreads == int(case["threads"]),
       "cores row: pid, signal and thread count match the corpus facts",
       [f"row pid={pid} signal={sig} nthreads={nthreads}", f"expect {case}"])
    ok(exe == case["exe"] and os.path.realpath(path) == os.path.realpath(core) and status == "ok"
       and size == os.path.getsize(core) and abs(ingested_at - time.time()) < 600,
       "cores row: exe, path, status ok, raw size, ingested_at is now",
       [str(rows[0]), f"size on disk {os.path.getsize(core)}"])

    info_r = run("info", "--format", "json", core)
    info = json.loads(info_r.stdout)
    ic = info["core"]
    ok((pid, exe, cmdline, sig, signame, si_code, fault, crashed_tid, nthreads) ==
       (ic["pid"], ic["exe"], ic["cmdline"], ic["signal"], ic["signal_name"], ic["si_code"],
        hexint(ic["fault_address"]), ic["crashed_tid"], len(info["threads"])),
       "cores row matches `coreq info --format json` (pid exe cmdline signal si_code fault tid threads)",
       [str(rows[0]), json.dumps(ic)])

    mods = q(db, "SELECT cm.start, cm.end, cm.status, cm.path, m.build_id FROM core_modules cm"
                 " JOIN modules m ON m.id = cm.module_id WHERE cm.core_id = ? ORDER BY cm.start", (cid,))
    want = sorted((hexint(m["start"]), hexint(m["end"]), m["status"], m["path"],
                   m["build_id"] or f"path:{m['path']}") for m in info["modules"])
    ok([tuple(m) for m in mods] == want, f"core_modules match `coreq info`'s modules ({len(want)})",
       [f"db   {m}" for m in mods] + [f"info {m}" for m in want])

    st_r = run("stack", "--format", "json", "--no-cache", core)
    st = json.loads(st_r.stdout)
    dbt = db_threads(db, cid)
    ok(len(dbt) == nthreads == len(st["threads"]), f"threads rows = thread count ({len(dbt)})")
    crashed = [t for t, v in dbt.items() if v["crashed"]]
    ok(crashed == [crashed_tid] and dbt[crashed_tid]["idx"] == 0
       and sorted(v["idx"] for v in dbt.values()) == list(range(len(dbt))),
       "the crashed thread is idx 0, marked crashed; idx runs 0..n-1",
       [f"{t}: idx {v['idx']} crashed {v['crashed']}" for t, v in dbt.items()])
    mism = []
    nframes = 0
    for t in st["threads"]:
        d = dbt.get(t["tid"])
        want = [frame_key(f) for f in t["frames"]]
        nframes += len(want)
        if d is None:
            mism.append(f"thread {t['tid']} not stored")
            continue
        if d["frames"] != want:
            mism.append(f"thread {t['tid']} frames differ:")
            mism += [f"  db    {x}" for x in d["frames"]] + [f"  stack {x}" for x in want]
        if d.get("idxs", []) != list(range(len(want))):
            mism.append(f"thread {t['tid']} frame idx {d.get('idxs')}")
        bids = [f["build_id"] for f in t["frames"]]
        if any(b is not None and b != db_b for b, db_b in zip(bids, d["build_ids"])):
            mism.append(f"thread {t['tid']} build-ids differ: {d['build_ids']} vs {bids}")
        if (d["end"], d["name"], bool(d["crashed"])) != (t["end"], t["name"], t["crashed"]):
            mism.append(f"thread {t['tid']}: db end/name/crashed {d['end']} {d['name']} "
                        f"{d['crashed']} vs {t['end']} {t['name']} {t['crashed']}")
    ok(not mism and nframes > 0,
       f"every thread's stored frames equal `coreq stack --format json` ({nframes} frames:"
       " function, kind, module, offset, trust, file, line; end, name)", mism)
    nstacks = q1(db, "SELECT count(*) FROM stacks")
    ok(nstacks == res[0].get("stacks") == len({v["stack_id"] for v in dbt.values()}),
       f"stacks rows = the JSON's distinct stack count ({nstacks})")
    return cid


def counts(db):
    return tuple(q1(db, f"SELECT count(*) FROM {t}")
                 for t in ("cores", "threads", "stacks", "frames", "modules", "core_modules"))


def test_duplicates(cases, db, tmp, core_id):
    core = cases["threads8.O2"]["core"]
    before = counts(db)
    r, doc, err = ingest_json(db, core)
    res = (doc or {}).get("results") or [{}]
    ok(r.returncode == 0 and err == "" and res[0].get("status") == "duplicate"
       and doc.get("duplicates") == 1 and doc.get("ingested") == 0
       and res[0].get("core_id") in (core_id, None),
       "re-ingesting the same path: status duplicate, exit 0", diag(r))
    ok(counts(db) == before, "re-ingesting the same path changes no row count", [before, counts(db)])

    r = run("ingest", "--db", db, core)
    out, err = text(r)
    ok(r.returncode == 0 and err == "" and len(out.splitlines()) == 1,
       "text output: one line on stdout for one core, nothing on stderr", diag(r))

    copy = os.path.join(tmp, "another-name")
    shutil.copyfile(core, copy)
    r, doc, err = ingest_json(db, copy)
    res = (doc or {}).get("results") or [{}]
    ok(r.returncode == 0 and err == "" and res[0].get("status") == "duplicate" and counts(db) == before,
       "a copy under another name is a duplicate", diag(r))
    os.unlink(copy)

    if not shutil.which("zstd"):
        ok(False, "zstd is installed (make deps)")
        return
    zst = os.path.join(tmp, "threads8.zst")
    subprocess.run(["zstd", "-q", "-f", "-o", zst, core], check=True)
    r, doc, err = ingest_json(db, zst)
    res = (doc or {}).get("results") or [{}]
    ok(r.returncode == 0 and err == "" and res[0].get("status") == "duplicate" and counts(db) == before,
       "a zstd copy is a duplicate", diag(r))
    os.unlink(zst)


def test_dedup(cases, db):
    ids = {}
    for name in ("threads8.O0", "threads-1000", "abort_deep.O0"):
        r, doc, err = ingest_json(db, cases[name]["core"])
        res = (doc or {}).get("results") or [{}]
        ok(r.returncode == 0 and err == "" and res[0].get("status") == "ingested",
           f"ingest {name}", diag(r))
        ids[name] = res[0].get("core_id")
        if name == "threads-1000":
            ok(res[0].get("threads") == 1001 and res[0].get("stacks") == 2 and res[0].get("new_stacks") == 2,
               "threads-1000: 1001 threads, 2 distinct stacks, both new", json.dumps(res[0]))
    nthreads, nstacks = q1(db, "SELECT count(*) FROM threads"), q1(db, "SELECT count(*) FROM stacks")
    ok(nthreads >= 1019 and nstacks * 20 < nthreads,
       f"stacks are deduplicated: {nstacks} stacks for {nthreads} threads")
    big = q(db, "SELECT stack_id, count(*) FROM threads WHERE core_id = ? GROUP BY stack_id"
                " ORDER BY 2 DESC", (ids["threads-1000"],))
    ok(big and big[0][1] == 1000, "threads-1000: the 1000 parked threads point at one stacks row", big)

    r = run("list-stacks", "--db", db, "--core", ids["threads-1000"], "--format", "json")
    try:
        top = json.loads(r.stdout)["stacks"][0]
    except (ValueError, KeyError, IndexError):
        top = {}
    fns = [f.get("function") for f in top.get("frames", [])]
    ok(r.returncode == 0 and top.get("threads") == 1000 and "parked_thread" in fns,
       "list-stacks --core (threads-1000): top stack has 1000 threads and passes parked_thread",
       diag(r) + [str(fns)])

    # threads-10 is the same executable in another process: both its stacks
    # (crashing main, parked threads) are already stored.
    before = q1(db, "SELECT count(*) FROM stacks")
    r, doc, err = ingest_json(db, cases["threads-10"]["core"])
    res = (doc or {}).get("results") or [{}]
    ok(r.returncode == 0 and res[0].get("status") == "ingested" and res[0].get("stacks") == 2
       and res[0].get("new_stacks") == 0 and q1(db, "SELECT count(*) FROM stacks") == before,
       "threads-10 after threads-1000: same stacks at other load addresses, none new", diag(r))
    ids["threads-10"] = res[0].get("core_id")
    shared = q(db, "SELECT stack_id, count(*), count(DISTINCT core_id) FROM threads"
                   " WHERE core_id IN (?, ?) GROUP BY stack_id ORDER BY 2 DESC",
               (ids["threads-1000"], ids["threads-10"]))
    ok(shared and shared[0][1:] == (1010, 2), "the parked stack is one row shared by both cores", shared)
    return ids


def test_directory(cases, tmp):
    db = os.path.join(tmp, "dir.db")
    d = os.path.join(tmp, "dumps")
    os.makedirs(os.path.join(d, "subdir"))
    shutil.copyfile(cases["abort_deep.O0"]["core"], os.path.join(d, "core.abort"))
    with open(cases["fpe.O0"]["core"], "rb") as fin, gzip.open(os.path.join(d, "core.fpe.gz"), "wb") as fout:
        shutil.copyfileobj(fin, fout)
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-f", "-o", os.path.join(d, "core.segv.zst"),
                        cases["segv_null.O0"]["core"]], check=True)
    else:
        shutil.copyfile(cases["segv_null.O0"]["core"], os.path.join(d, "core.segv"))
    with open(os.path.join(d, "README.txt"), "w") as f:
        f.write("these are cores from host x\n" * 50)
    shutil.copyfile(cases["sighandler.O0"]["core"], os.path.join(d, "subdir", "core.nested"))
    shutil.copyfile("/bin/true", os.path.join(d, "an-executable"))  # ELF, but not a core
    os.mkfifo(os.path.join(d, "a-fifo"))  # not a regular file: must not even be opened

    r, doc, err = ingest_json(db, d, timeout=120)
    res = (doc or {}).get("results") or []
    ok(r.returncode == 0 and err == "" and doc and doc.get("ingested") == 4 and doc.get("failed") == 0
       and doc.get("duplicates") == 0 and len(res) == 4
       and all(x.get("status") == "ingested" for x in res),
       "a directory: its 4 cores (raw, gzip, zstd, and one in a subdirectory) ingested; a text file,"
       " an ELF executable and a FIFO ignored silently",
       diag(r))
    paths = [p for (p,) in q(db, "SELECT path FROM cores")]
    ok(len(paths) == 4 and any("subdir/core.nested" in p for p in paths)
       and not any("README" in p for p in paths),
       "the directory is searched recursively (issue 19)", paths)
    pids = sorted(p for (p,) in q(db, "SELECT pid FROM cores"))
    want = sorted(int(cases[c]["pid"]) for c in ("abort_deep.O0", "fpe.O0", "segv_null.O0", "sighandler.O0"))
    ok(pids == want, "the four cores stored are the four under the directory", [pids, want])

    r, doc, err = ingest_json(db, d)
    ok(r.returncode == 0 and err == "" and doc and doc.get("ingested") == 0 and doc.get("duplicates") == 0
       and doc.get("unchanged") == 4 and doc.get("results") == []
       and doc.get("failed") == 0 and q1(db, "SELECT count(*) FROM cores") == 4,
       "the same directory again: its 4 unchanged files skipped before being opened", diag(r))

    def touch_all():
        for root, _, names in os.walk(d):
          for name in names:
            p = os.path.join(root, name)
            if os.path.isfile(p):
                st = os.stat(p)
                os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

    touch_all()
    r, doc, err = ingest_json(db, d)
    ok(r.returncode == 0 and err == "" and doc and doc.get("ingested") == 0 and doc.get("duplicates") == 4
       and doc.get("unchanged") == 0 and q1(db, "SELECT count(*) FROM cores") == 4,
       "the same directory with new mtimes: opened again, 4 duplicates, 0 ingested", diag(r))

    touch_all()
    r = run("ingest", "--db", db, d, timeout=120)
    out, err = text(r)
    ok(r.returncode == 0 and err == "" and len(out.splitlines()) == 4,
       "text output for a directory of 4 cores: 4 lines on stdout", diag(r))

    core = cases["assert_fail.O0"]["core"]
    r, doc, err = ingest_json(db, core, core)
    st = [x.get("status") for x in (doc or {}).get("results", [])]
    ok(r.returncode == 0 and st == ["ingested", "duplicate"] and q1(db, "SELECT count(*) FROM cores") == 5,
       "the same core twice in one command: ingested, then duplicate", diag(r))
    return db


def test_bad_core(cases, tmp):
    db = os.path.join(tmp, "bad.db")
    d = os.path.join(tmp, "mixed")
    os.makedirs(d)
    with open(cases["abort_deep.O2"]["core"], "rb") as f:
        head = f.read(100)
    bad = os.path.join(d, "core.bad")
    with open(bad, "wb") as f:
        f.write(head)
    shutil.copyfile(cases["fpe.O2"]["core"], os.path.join(d, "core.good"))

    r = run("ingest", "--db", db, d)
    out, err = text(r)
    lines = err.splitlines()
    ok(r.returncode == 1, "a directory with a truncated core: exit 1", diag(r))
    ok(len(lines) == 1 and re.match(r"^coreq: (.*/)?core\.bad: \S", lines[0]) is not None
       and not sanitizer_report(err),
       "exactly one `coreq: PATH: reason` line on stderr, naming the bad file", diag(r))
    rows = q(db, "SELECT pid, nthreads FROM cores")
    ok(rows == [(int(cases["fpe.O2"]["pid"]), 1)], "the good core beside it is stored, nothing else", rows)
    ok(not consistency(db), "nothing of the bad core is left in the database", consistency(db))

    r, doc, err = ingest_json(db, bad, cases["segv_null.O2"]["core"], os.path.join(tmp, "no-such-core"))
    res = {os.path.basename(x.get("path", "")): x for x in (doc or {}).get("results", [])}
    b = res.get("core.bad", {})
    ok(r.returncode == 1 and doc and doc.get("failed") == 2 and doc.get("ingested") == 1
       and b.get("status") == "failed" and b.get("core_id") is None and b.get("message")
       and res.get("no-such-core", {}).get("status") == "failed"
       and res.get("core", {}).get("status") == "ingested",
       "JSON: bad and missing cores are failed with a message, the good one ingested, exit 1",
       diag(r))
    lines = err.splitlines()
    ok(len(lines) == 2 and all(l.startswith("coreq: ") for l in lines)
       and any(bad in l for l in lines) and any("no-such-core" in l for l in lines),
       "one stderr line per failed core", lines)
    ok(q1(db, "SELECT count(*) FROM cores") == 2, "the good core given beside them is stored")


def test_stdin(cases, db):
    case = cases["sighandler.O0"]
    with open(case["core"], "rb") as f:
        data = f.read()
    p = subprocess.Popen([COREQ, "ingest", "--db", db, "--format", "json", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    out, err = p.communicate(data, timeout=120)
    try:
        doc = json.loads(out)
        res = doc["results"][0]
    except (ValueError, KeyError, IndexError):
        doc, res = None, {}
    rows = q(db, "SELECT pid, signal, nthreads FROM cores WHERE id = ?", (res.get("core_id"),))
    ok(p.returncode == 0 and err == b"" and res.get("status") == "ingested"
       and rows == [(int(case["pid"]), int(case["signal"]), int(case["threads"]))],
       "`-` ingests a core piped on standard input",
       [f"exit {p.returncode}", out.decode(errors='replace')[:500], err.decode(errors='replace')[:500],
        str(rows)])
    r = run("ingest", "--db", db, "--format", "json", "-", input=gzip.compress(data, 1))
    try:
        res = json.loads(r.stdout)["results"][0]
    except (ValueError, KeyError, IndexError):
        res = {}
    ok(r.returncode == 0 and res.get("status") == "duplicate",
       "the same core gzip-compressed on standard input is a duplicate", diag(r))


def test_db_state(db):
    mode = q1(db, "PRAGMA journal_mode")
    ok(mode == "wal", f"PRAGMA journal_mode is wal ({mode})")
    ok(q(db, "PRAGMA integrity_check") == [("ok",)], "PRAGMA integrity_check is ok")
    ok((q1(db, "PRAGMA user_version") or 0) >= 1, "the schema version is recorded in user_version")
    bad = consistency(db)
    ok(not bad, "foreign keys hold, nthreads = threads rows, nframes = frames rows, no orphan stacks",
       bad)


def readme_queries():
    """The example queries docs/internals.md runs with sqlite3 on the database."""
    with open(os.path.join(ROOT, "docs", "internals.md")) as f:
        lines = f.read().splitlines()
    queries = []
    for i, line in enumerate(lines):
        if re.search(r"sqlite3 \S*coreq\.db \\$", line.strip()) and i + 1 < len(lines):
            try:
                queries.append(shlex.split(lines[i + 1].strip())[0])
            except (ValueError, IndexError):
                pass
    return queries


def test_views(db, ids):
    nthreads = q1(db, "SELECT count(*) FROM threads")
    vsum = q1(db, "SELECT sum(threads) FROM v_stack_counts")
    ok(vsum == nthreads, f"v_stack_counts: threads sum to the threads rows ({vsum} vs {nthreads})")
    vrows = q(db, "SELECT stack_id, hash, nframes, threads, cores, top_function FROM v_stack_counts")
    want = q(db, "SELECT s.id, s.hash, s.nframes, count(*), count(DISTINCT t.core_id),"
                 " (SELECT function FROM frames f WHERE f.stack_id = s.id AND f.idx = 0)"
                 " FROM stacks s JOIN threads t ON t.stack_id = s.id GROUP BY s.id")
    ok(sorted(vrows) == sorted(want) and len(vrows) == q1(db, "SELECT count(*) FROM stacks"),
       "v_stack_counts: one row per stack with its thread and core counts")
    vts = q1(db, "SELECT count(*) FROM v_thread_stacks")
    want = q1(db, "SELECT sum(s.nframes) FROM threads t JOIN stacks s ON s.id = t.stack_id")
    ok(vts == want and vts > 0, f"v_thread_stacks: one row per thread per frame ({vts})")
    hexes = q(db, "SELECT hash FROM stacks")
    ok(all(re.fullmatch(r"[0-9a-f]{16}", h) for (h,) in hexes), "stack hashes are 16 hex digits",
       hexes[:5])

    queries = readme_queries()
    ok(len(queries) >= 3, f"docs/internals.md shows example sqlite3 queries ({len(queries)})", queries)
    results = []
    for sql in queries:
        try:
            results.append(q(db, sql))
        except sqlite3.Error as e:
            results.append(e)
    ok(queries and all(isinstance(x, list) and x for x in results),
       "every docs/internals.md example query runs and returns rows", [f"{s}: {x}" for s, x in zip(queries, results)])
    top = q(db, "SELECT threads, cores, top_function FROM v_stack_counts ORDER BY threads DESC LIMIT 10")
    ok(top and top[0][0] == 1010 and top[0][1] == 2, "the most common stack: 1010 parked threads in 2 cores",
       top)
    lv = q(db, "SELECT DISTINCT core_id, exe FROM v_thread_stacks WHERE crashed AND function = 'level3'")
    ok([r[0] for r in lv] == [ids["abort_deep.O0"]],
       "crashed threads through level3: the abort_deep core only", lv)


def test_db_location(cases, tmp):
    core = cases["abort_deep.O0"]["core"]
    envdb = os.path.join(tmp, "env", "a", "env.db")
    os.makedirs(os.path.dirname(envdb))
    r = run("ingest", core, env=env_with(COREQ_DB=envdb))
    ok(r.returncode == 0 and os.path.exists(envdb) and q1(envdb, "SELECT count(*) FROM cores") == 1,
       "$COREQ_DB names the database", diag(r))
    state = os.path.join(tmp, "state", "deeper")
    e = env_with(XDG_STATE_HOME=state)
    e.pop("COREQ_DB", None)
    r = run("ingest", core, env=e)
    xdb = os.path.join(state, "coreq", "coreq.db")
    ok(r.returncode == 0 and os.path.exists(xdb) and q1(xdb, "SELECT count(*) FROM cores") == 1,
       "no --db nor $COREQ_DB: $XDG_STATE_HOME/coreq/coreq.db, directories created", diag(r))
    explicit = os.path.join(tmp, "explicit.db")
    r = run("ingest", "--db", explicit, core, env=env_with(COREQ_DB=envdb))
    ok(r.returncode == 0 and q1(explicit, "SELECT count(*) FROM cores") == 1
       and q1(envdb, "SELECT count(*) FROM cores") == 1,
       "--db wins over $COREQ_DB", diag(r))


def test_usage():
    r = run("ingest", "--help")
    ok(r.returncode == 0 and r.stdout, "ingest --help exits 0", diag(r))
    r = run("ingest", "--no-such-option", "x")
    ok(r.returncode == 2, "ingest with a bad option exits 2", diag(r))


def copy_db(db, dest):
    """Copy a database and its WAL as a crash left them, without recovering the original."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    out = os.path.join(dest, "copy.db")
    if not os.path.exists(db):
        return None
    shutil.copyfile(db, out)
    if os.path.exists(db + "-wal"):
        shutil.copyfile(db + "-wal", out + "-wal")
    return out


def remove_db(db):
    for s in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(db + s):
            os.unlink(db + s)


def test_kill(cases, tmp):
    case = cases["threads-3000"]
    core = case["core"]
    nthreads = int(case["threads"])
    if not os.access(COREQ_RELEASE, os.X_OK):
        ok(False, "the release binary exists for the SIGKILL test", COREQ_RELEASE)
        return
    db = os.path.join(tmp, "kill.db")
    ncache = [0]

    def start():
        ncache[0] += 1
        e = env_with(COREQ_CACHE=os.path.join(tmp, f"kill-cache-{ncache[0]}.db"))  # cold every time
        return subprocess.Popen([COREQ_RELEASE, "ingest", "--db", db, core], env=e,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    # How long a whole ingest takes, to aim kills at its end too (the writes).
    t0 = time.monotonic()
    p = start()
    p.communicate(timeout=300)
    full = time.monotonic() - t0
    remove_db(db)
    problems, outcomes = [], []

    def kill_at(delay):
        p = start()
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=300)
        killed = p.returncode == -signal.SIGKILL
        snap = copy_db(db, os.path.join(tmp, "snap"))
        state = "no database"
        if snap and not q(snap, "SELECT 1 FROM sqlite_master WHERE name = 'cores'"):
            state = "no schema"  # killed before the schema was committed
            ic = q(snap, "PRAGMA integrity_check")
            if ic != [("ok",)]:
                problems.append(f"kill after {delay * 1000:.0f} ms: integrity_check {ic[:5]}")
        elif snap:
            bad = consistency(snap)
            rows = q(snap, "SELECT id, nthreads, (SELECT count(*) FROM threads t WHERE t.core_id = c.id),"
                           " (SELECT count(*) FROM core_modules m WHERE m.core_id = c.id) FROM cores c")
            if len(rows) > 1:
                bad.append(f"{len(rows)} cores rows: {rows}")
            elif rows and (rows[0][1] != nthreads or rows[0][2] != nthreads or rows[0][3] == 0):
                bad.append(f"a core stored in part: {rows}")
            state = "complete core" if rows else "no core"
            if bad:
                problems.append(f"kill after {delay * 1000:.0f} ms: " + "; ".join(bad))
        remove_db(os.path.join(tmp, f"kill-cache-{ncache[0]}.db"))
        outcomes.append(f"{delay * 1000:.1f}ms:{'killed' if killed else 'finished'}:{state}")
        if state == "complete core":
            remove_db(db)  # start over, so the next kill lands inside an ingest again
        return state == "complete core"

    delays = [0.0, 0.005, 0.02, 0.05, 0.1, 0.2] + [full * f for f in (0.5, 0.7, 0.8, 0.9, 1.0)]
    # And 20 random moments across the whole ingest (fixed seed: repeatable).
    rnd = random.Random(20261121)
    delays += [rnd.uniform(0.0, full * 1.1) for _ in range(20)]
    lo, hi = 0.0, None
    for delay in delays:
        if kill_at(delay):
            hi = delay if hi is None else min(hi, delay)
        else:
            lo = max(lo, delay) if hi is None or delay < hi else lo
    # Aim at the store itself: bisect between the last kill that left no core
    # and the first that left a whole one (timing is noisy; that is fine).
    for _ in range(8):
        if hi is None or hi <= lo:
            break
        mid = (lo + hi) / 2
        if kill_at(mid):
            hi = mid
        else:
            lo = mid
    print("# kills: " + " ".join(outcomes))
    ok(not problems, f"SIGKILL during ingest ({len(outcomes)} points, whole ingest {full * 1000:.0f} ms):"
       " integrity ok, no core or the complete core", problems + outcomes)
    ok(any(re.search(r"killed:no (core|database|schema)", o) for o in outcomes),
       "some kills landed before the commit (the test exercised something)", outcomes)

    r = run("ingest", "--db", db, "--format", "json", core, binary=COREQ_RELEASE)
    try:
        res = json.loads(r.stdout)["results"][0]
    except (ValueError, KeyError, IndexError):
        res = {}
    ok(r.returncode == 0 and res.get("status") == "ingested" and res.get("threads") == nthreads
       and q1(db, "SELECT count(*) FROM threads") == nthreads and not consistency(db),
       "after the kills, an ingest completes: 3001 threads stored", diag(r) + consistency(db))
    r = run("ingest", "--db", db, "--format", "json", core, binary=COREQ_RELEASE)
    try:
        res = json.loads(r.stdout)["results"][0]
    except (ValueError, KeyError, IndexError):
        res = {}
    ok(r.returncode == 0 and res.get("status") == "duplicate" and q1(db, "SELECT count(*) FROM cores") == 1,
       "and the next one is a duplicate", diag(r))


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-ingest-")
    global ENV
    ENV = env_with()
    ENV.setdefault("COREQ_CACHE", os.path.join(tmp, "cache.db"))
    ENV["XDG_STATE_HOME"] = os.path.join(tmp, "xdg-state")  # never the user's database
    ENV.pop("COREQ_DB", None)
    try:
        db = os.path.join(tmp, "coreq.db")
        test_usage()
        core_id = test_one_core(cases, db)
        if core_id is None:
            skip("duplicates, deduplication, views", "the first ingest did not store a core")
        else:
            test_duplicates(cases, db, tmp, core_id)
            ids = test_dedup(cases, db)
            test_stdin(cases, db)
            test_db_state(db)
            test_views(db, ids)
        test_directory(cases, tmp)
        test_bad_core(cases, tmp)
        test_db_location(cases, tmp)
        test_kill(cases, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


ENV = None
main()
