#!/usr/bin/env python3
"""Several `coreq ingest` processes writing one database at once (WAL mode,
busy timeout): nothing fails, nothing is lost, nothing is stored twice.

- 8 processes, 8 different cores, a database that does not exist yet (so the
  schema is created under contention too); threads-10 and threads-1000 share
  both their stacks, so two writers race to insert the same stack rows;
- then 8 processes all ingesting the same 3 cores, in different orders:
  3 rows, each claimed as ingested by exactly one process, duplicates for the
  rest (once into a new database with 3 cores of one executable whose stacks
  are the same, so the processes race on the stack rows too);
- three rounds, each with its own database;
- 30 times, 8 processes ingesting one small core into a database that does
  not exist yet: none fails (schema creation and the switch to WAL race).
"""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import BUILD, done, ok, require_corpus

COREQ_RELEASE = os.environ.get("COREQ_RELEASE", os.path.join(BUILD, "coreq"))

FIRST = ["abort_deep.O0", "segv_null.O2", "fpe.O0", "sighandler.O2", "assert_fail.O0", "threads8.O2",
         "threads-10", "threads-1000"]
# Per round, the 3 cores every process of the second phase ingests.
# Per round, the 3 cores every process of the second phase ingests, and
# whether into a new database (else into the first phase's).
NEW_DB_TRIALS = 30

SAME = [(["cpp_terminate.O2", "threads-3000", "abort_deep.O2"], False),
        (["threads-1000", "threads-10", "threads-3000"], True),  # racing to insert the same stacks
        (["real-perl", "threads8.O0", "segv_null.stripped"], False)]


def q(db, sql, args=()):
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def run_all(db, arglists, env):
    """Start one ingest per argument list at once; wait for all."""
    procs = [subprocess.Popen([COREQ_RELEASE, "ingest", "--db", db, "--format", "json", *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for args in arglists]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        try:
            doc = json.loads(out)
        except ValueError:
            doc = None
        results.append((p.returncode, doc, err.decode(errors="replace"), out.decode(errors="replace")))
    return results


def diag(results):
    lines = []
    for i, (rc, doc, err, out) in enumerate(results):
        lines.append(f"process {i}: exit {rc}")
        lines += [f"  stderr: {l}" for l in err.splitlines()[:5]]
        if doc is None:
            lines.append(f"  stdout: {out[:300]}")
        else:
            lines += [f"  {r.get('path')}: {r.get('status')} core {r.get('core_id')} {r.get('message') or ''}"
                      for r in doc.get("results", [])]
    return lines


def check_db(db):
    bad = []
    ic = q(db, "PRAGMA integrity_check")
    if ic != [("ok",)]:
        bad.append(f"integrity_check {ic[:5]}")
    fk = q(db, "PRAGMA foreign_key_check")
    if fk:
        bad.append(f"foreign_key_check {fk[:5]}")
    dup = q(db, "SELECT hash, count(*) FROM stacks GROUP BY hash HAVING count(*) > 1")
    if dup:
        bad.append(f"stack hashes stored twice: {dup[:5]}")
    orphans = q(db, "SELECT count(*) FROM stacks WHERE id NOT IN (SELECT stack_id FROM threads)")[0][0]
    if orphans:
        bad.append(f"{orphans} stacks used by no thread")
    for sid, n, have in q(db, "SELECT s.id, s.nframes, (SELECT count(*) FROM frames f WHERE f.stack_id = s.id)"
                              " FROM stacks s"):
        if n != have:
            bad.append(f"stack {sid}: nframes {n}, {have} frames rows")
    return bad


def main():
    cases = {c["case"]: c for c in require_corpus()}
    if not os.access(COREQ_RELEASE, os.X_OK):
        ok(False, "the release binary exists", COREQ_RELEASE)
        done()
    tmp = tempfile.mkdtemp(prefix="coreq-concurrent-")
    env = dict(os.environ)
    env["COREQ_CACHE"] = os.path.join(tmp, "cache.db")  # cold and shared: contended too
    env["XDG_STATE_HOME"] = os.path.join(tmp, "state")
    env.pop("COREQ_DB", None)
    try:
        for n, (same, fresh) in enumerate(SAME):
            db = os.path.join(tmp, f"round{n}", "sub", "coreq.db")
            results = run_all(db, [[cases[c]["core"]] for c in FIRST], env)
            ok(all(rc == 0 and err == "" for rc, _, err, _ in results),
               f"round {n}: 8 concurrent ingests of 8 different cores into a new database: all exit 0, quiet stderr",
               diag(results))
            ok(all(doc and doc.get("ingested") == 1 for _, doc, _, _ in results),
               f"round {n}: each process reports its core ingested", diag(results))
            rows = q(db, "SELECT pid, nthreads, (SELECT count(*) FROM threads t WHERE t.core_id = c.id)"
                         " FROM cores c") if os.path.exists(db) else []
            got = sorted(rows)
            want = sorted((int(cases[c]["pid"]), int(cases[c]["threads"]), int(cases[c]["threads"]))
                          for c in FIRST)
            ok(got == want, f"round {n}: 8 cores rows, each with its full thread count",
               [f"got  {r}" for r in got] + [f"want {r}" for r in want])
            bad = check_db(db) if os.path.exists(db) else ["no database"]
            ok(not bad, f"round {n}: integrity_check ok, no stack stored twice, no orphan stacks", bad)
            shared = q(db, "SELECT t.stack_id, count(*), count(DISTINCT t.core_id) FROM threads t"
                           " JOIN cores c ON c.id = t.core_id WHERE c.pid IN (?, ?)"
                           " GROUP BY t.stack_id ORDER BY 2 DESC",
                       (int(cases["threads-10"]["pid"]), int(cases["threads-1000"]["pid"]))) \
                if os.path.exists(db) else []
            ok([r[1:] for r in shared] == [(1010, 2), (2, 2)],
               f"round {n}: threads-10 and threads-1000, ingested at once, share their two stack rows", shared)

            if fresh:
                db = os.path.join(tmp, f"round{n}", "fresh.db")
            before = q(db, "SELECT count(*) FROM cores")[0][0] if os.path.exists(db) else 0
            order = [cases[c]["core"] for c in same]
            arglists = [order[i % 3:] + order[:i % 3] if i % 2 == 0 else list(reversed(order))
                        for i in range(8)]
            results = run_all(db, arglists, env)
            ok(all(rc == 0 and err == "" for rc, _, err, _ in results),
               f"round {n}: 8 concurrent ingests of the same 3 cores: all exit 0, quiet stderr", diag(results))
            statuses = {}
            for _, doc, _, _ in results:
                for r in (doc or {}).get("results", []):
                    statuses.setdefault(r.get("path"), []).append((r.get("status"), r.get("core_id")))
            ok(sorted(statuses) == sorted(order) and all(len(v) == 8 for v in statuses.values()),
               f"round {n}: every process reports every core", diag(results))
            ok(all(sorted(s for s, _ in v) == ["duplicate"] * 7 + ["ingested"] for v in statuses.values()),
               f"round {n}: each core is reported ingested by exactly one process and duplicate by the other 7",
               [f"{os.path.basename(os.path.dirname(p))}: {v}" for p, v in statuses.items()])
            ids_ok = all(len({cid for _, cid in v if cid is not None}) == 1 for v in statuses.values())
            ok(ids_ok, f"round {n}: duplicates name the core id of the stored row", diag(results))
            rows = q(db, "SELECT pid, nthreads, (SELECT count(*) FROM threads t WHERE t.core_id = c.id)"
                         " FROM cores c WHERE pid IN (?, ?, ?)", tuple(int(cases[c]["pid"]) for c in same))
            want = sorted((int(cases[c]["pid"]), int(cases[c]["threads"]), int(cases[c]["threads"])) for c in same)
            total = q(db, "SELECT count(*) FROM cores")[0][0]
            ok(sorted(rows) == want and total == before + 3,
               f"round {n}: exactly 3 rows for those cores, each whole; nothing lost", [sorted(rows), want, total])
            bad = check_db(db)
            ok(not bad, f"round {n}: integrity_check ok after the second phase", bad)

        # Creating the database (switching it to WAL, applying the schema) is
        # the narrowest race: many short trials, a small core, a warm cache.
        core = cases["abort_deep.O0"]["core"]
        failures, wrong = [], []
        for t in range(NEW_DB_TRIALS):
            db = os.path.join(tmp, "new", f"{t}.db")
            results = run_all(db, [[core]] * 8, env)
            failed = [f"trial {t}: exit {rc}: {err.strip()}" for rc, _, err, _ in results if rc != 0 or err]
            failures += failed
            st = sorted(r.get("status") for _, doc, _, _ in results for r in (doc or {}).get("results", []))
            n = q(db, "SELECT count(*) FROM cores")[0][0] if os.path.exists(db) else 0
            if n != 1 or (not failed and st != ["duplicate"] * 7 + ["ingested"]):
                wrong.append(f"trial {t}: {n} cores rows, statuses {st}")
        ok(not failures, f"{NEW_DB_TRIALS} times 8 processes creating one new database at once:"
           " none fails", failures)
        ok(not wrong, "each time: one cores row, one process reports it ingested", wrong)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


main()
