#!/usr/bin/env python3
"""`coreq resymbolize` against a hostile debuginfod and a hostile database
(issue 30, findings 2 and 8).

A tiny server on 127.0.0.1 (tests/e2e/hostile_debuginfod.py) answers each
build-id its own way: the genuine debug file of one module; a file with
another build-id; a 1 GiB Content-Length; 1 GiB streamed without a length;
silence; one byte a second; 404.  The database (three stripped or symbol-less
corpus cores, every frame's name removed) gets those build-ids, plus ids
that are not build-ids: traversals toward the client's cache parent and
toward a planted `evil.debug` next to the --debug-dir tree, non-hex,
overlong, odd-length, empty, a terminal escape.  Expected, from that layout:
- the run ends within its --deadline (plus slack); a build without one
  (it does not know --deadline) is run without and must end as quickly;
- each module's outcome is the one its answer calls for: fetched,
  mismatch, too_big, too_big, timed_out, timed_out, not_found, and
  bad_build_id for every id that is not one;
- only valid build-ids reach the server, nothing is created outside the
  client's cache and the database's own files, the cache holds only the
  genuine file, and the server was not read much past the size cap;
- no frame is named from evil.debug, the genuine module's frames get the
  names of the crash chain its corpus case records;
- a second run on the same cache with --deadline 5 ends in time: the
  silent module is timed_out again (a cut lookup left no miss behind) and
  the modules after it are skipped.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import COREQ, CORPUS, coreq, done, ok, require_corpus
from hostile_debuginfod import HostileDebuginfod

GIB = 1 << 30
CAP = 1 << 20
MODULE_S, DEADLINE_S = 4, 30
SLACK_S = 15


def files_under(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.join(d, n))
    return out


def debug_file(build_id):
    return os.path.join(CORPUS, "debug", ".build-id", build_id[:2], build_id[2:] + ".debug")


def knows_deadline():
    return "--deadline" in coreq("resymbolize", "--help").stdout


def resymbolize(db, url, cache, extra, bound):
    """Runs resymbolize; (seconds, CompletedProcess or None when killed at bound)."""
    env = dict(os.environ, DEBUGINFOD_CACHE_PATH=cache, DEBUGINFOD_TIMEOUT="90")
    env.pop("DEBUGINFOD_URLS", None)
    t = time.monotonic()
    try:
        r = subprocess.run([COREQ, "resymbolize", "--db", db, "--debuginfod", url, *extra],
                           capture_output=True, text=True, errors="replace", env=env,
                           timeout=bound)
    except subprocess.TimeoutExpired:
        r = None
    return time.monotonic() - t, r


def main():
    cases = {c["case"]: c for c in require_corpus()}
    picked = [cases[n] for n in ("abort_deep.stripped", "segv_null.stripped", "threads8.O2")]
    tmp = tempfile.mkdtemp(prefix="coreq-hostile-dbgd-")
    try:
        run(tmp, picked)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


def make_db(tmp, picked):
    """The ingested database and {module id: build-id} of the modules with frames."""
    db = os.path.join(tmp, "clean.db")
    r = coreq("ingest", "--no-cache", "--db", db, *[c["core"] for c in picked], timeout=300)
    ok(r.returncode == 0, "ingested three corpus cores", r.stderr)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=DELETE")
    rows = con.execute("SELECT m.id, m.build_id, m.path FROM modules m WHERE EXISTS "
                       "(SELECT 1 FROM frames f WHERE f.module_id = m.id) ORDER BY m.id").fetchall()
    con.close()
    return db, rows


def run(tmp, picked):
    db0, rows = make_db(tmp, picked)
    by_path = {p: (i, b) for i, b, p in rows}
    abort_exe, segv_exe = picked[0]["exe"], picked[1]["exe"]
    evil_mod, evil_genuine = by_path[abort_exe]
    good_mod, good_id = by_path[segv_exe]
    others = [i for i, b, p in rows if p not in (abort_exe, segv_exe)]
    ok(os.path.isfile(debug_file(good_id)) and os.path.isfile(debug_file(evil_genuine))
       and len(others) >= 2, "the corpus has the debug files and other modules",
       str(rows))

    # The --debug-dir tree (empty) and evil.debug where a traversal id points:
    # the genuine debug file of the module that gets that id, so it would name its frames.
    debug_dir = os.path.join(tmp, "a", "b", "debug")
    os.makedirs(os.path.join(debug_dir, ".build-id"))
    evil_id = "../../../evil"
    # The path a lookup builds as D/.build-id/xx/rest.debug: tmp/a/evil.debug.
    evil_path = os.path.normpath(f"{debug_dir}/.build-id/{evil_id[:2]}/{evil_id[2:]}.debug")
    assert evil_path == os.path.join(tmp, "a", "evil.debug"), evil_path
    shutil.copy(debug_file(evil_genuine), evil_path)
    cache = os.path.join(tmp, "c1", "c2", "cache")
    os.makedirs(os.path.dirname(cache))

    valid = {
        "mismatch": "dd" * 20, "claims": "c1" * 20, "stream": "57" * 20, "silent": "5e" * 20,
        "drip": "d1" * 20, "absent": "ab" * 20, "late": "1a" * 20,
    }
    bad = {"cache_escape2": "../../escape2", "nonhex": "zz" * 20, "overlong": "ab" * 65,
           "odd": "abc", "empty": "", "escape": "\x1b[31mred\x1b[0m", "slashed": "ab/cd"}
    # Module ids, the order they are looked up in: the two executables, then
    # the others get claims and a traversal toward the cache's parent, then
    # new modules (each takes over one frame) the rest, the slow ones last.
    con = sqlite3.connect(db0)
    con.execute("UPDATE frames SET function = NULL, file = NULL, line = NULL")
    con.execute("UPDATE modules SET build_id = ? WHERE id = ?", (evil_id, evil_mod))
    con.execute("UPDATE modules SET build_id = ? WHERE id = ?", (valid["claims"], others[0]))
    con.execute("UPDATE modules SET build_id = ? WHERE id = ?", ("../escape1", others[1]))
    for o in others[2:]:  # no frames left for them: not looked up
        con.execute("UPDATE frames SET module_id = ? WHERE module_id = ?", (others[0], o))
    want = {evil_mod: "bad_build_id", good_mod: "fetched", others[0]: "too_big",
            others[1]: "bad_build_id"}
    spare = con.execute("SELECT stack_id, idx FROM frames WHERE module_id IN (?, ?) ORDER BY "
                        "stack_id, idx", (others[0], others[1])).fetchall()
    extra = [("mismatch", valid["mismatch"], "mismatch"), ("absent", valid["absent"], "not_found")]
    extra += [(k, v, "bad_build_id") for k, v in bad.items()]
    extra += [("stream", valid["stream"], "too_big"), ("silent", valid["silent"], "timed_out"),
              ("drip", valid["drip"], "timed_out"), ("late", valid["late"], "not_found")]
    ok(len(spare) > len(extra) + 2, "enough frames to give every hostile id one", str(len(spare)))
    ids = {}
    for n, (name, bid, outcome) in enumerate(extra):
        cur = con.execute("INSERT INTO modules (build_id, path) VALUES (?, ?)", (bid, f"/x/{name}"))
        con.execute("UPDATE frames SET module_id = ? WHERE stack_id = ? AND idx = ?",
                    (cur.lastrowid, *spare[n]))
        want[cur.lastrowid] = outcome
        ids[name] = cur.lastrowid
    con.commit()
    con.close()

    behaviours = {
        good_id: ("file", debug_file(good_id)),
        valid["mismatch"]: ("file", debug_file(evil_genuine)),
        valid["claims"]: ("claims", GIB),
        valid["stream"]: ("stream", GIB),
        valid["silent"]: ("silent", 600),
        valid["drip"]: ("drip", 600),
    }
    new_options = knows_deadline()
    opts = ["--max-size", str(CAP), "--module-timeout", str(MODULE_S),
            "--deadline", str(DEADLINE_S)] if new_options else []
    db = os.path.join(tmp, "run1.db")
    shutil.copy(db0, db)
    before = files_under(tmp)
    with HostileDebuginfod(behaviours) as srv:
        secs, r = resymbolize(db, srv.url, cache, opts + ["--debug-dir", debug_dir,
                                                          "--format", "json"],
                              DEADLINE_S + SLACK_S)
        requests, sent = list(srv.requests), srv.sent
    ok(r is not None and secs < DEADLINE_S + SLACK_S,
       f"resymbolize against the hostile server ended in {secs:.1f} s "
       f"(deadline {DEADLINE_S} s)", "killed: no deadline" if r is None else r.stderr[-800:])
    got = {}
    if r is not None:
        try:
            got = {m["module_id"]: m for m in json.loads(r.stdout).get("per_module", [])}
        except ValueError:
            pass
    for mod, outcome in sorted(want.items()):
        g = got.get(mod, {})
        ok(g.get("outcome") == outcome, f"module {mod}: {outcome}",
           str(g) if g else (r.stdout[-800:] + r.stderr[-800:] if r else "no output"))
    ok(r is not None and r.returncode == 0, "exit 0: a partial result says what is missing",
       r.stderr[-800:] if r else None)
    legit = re.compile(r"^/buildid/[0-9a-f]{2,128}/debuginfo$")
    ok(requests and all(legit.match(q) for q in requests),
       f"only valid build-ids reached the server ({len(requests)} requests)",
       [q for q in requests if not legit.match(q)])
    ok(sent < 64 * CAP, f"the server was not read much past the cap ({sent >> 20} MiB sent)")
    new = files_under(tmp) - before
    allowed = (cache, db)
    outside = sorted(p for p in new if not any(p == a or p.startswith(a + os.sep) or
                                                p.startswith(db + "-") for a in allowed))
    ok(not outside, "nothing created outside the client's cache and the database's files",
       outside)
    cached = [p for p in files_under(cache) if os.path.isfile(p) and os.path.getsize(p) > 0
              and os.path.basename(p) == "debuginfo"]
    ok([os.path.basename(os.path.dirname(p)) for p in cached] == [good_id] and
       all(os.path.getsize(p) <= os.path.getsize(debug_file(good_id)) for p in cached),
       "the cache holds the genuine debuginfo only", cached)

    con = sqlite3.connect(db)
    evil_named = con.execute("SELECT count(*) FROM frames WHERE module_id = ? AND function IS "
                             "NOT NULL", (evil_mod,)).fetchone()[0]
    good_names = {f for f, in con.execute("SELECT function FROM frames WHERE module_id = ?",
                                          (good_mod,))}
    liar_named = con.execute("SELECT count(*) FROM frames WHERE module_id = ? AND function IS "
                             "NOT NULL", (ids["mismatch"],)).fetchone()[0]
    con.close()
    ok(evil_named == 0, "no frame is named from evil.debug beside the --debug-dir tree")
    ok(liar_named == 0, "no frame is named from a file that carries another build-id")
    chain = picked[1]["crash_chain"].split()
    ok(set(chain) <= good_names, "the genuine module's frames name its crash chain",
       str((chain, good_names)))

    if not new_options:
        return
    # Again on the same cache, with a 5 s deadline and no per-module limit.
    db2 = os.path.join(tmp, "run2.db")
    shutil.copy(db0, db2)
    with HostileDebuginfod(behaviours) as srv:
        secs, r = resymbolize(db2, srv.url, cache, ["--max-size", str(CAP), "--module-timeout",
                                                    "0", "--deadline", "5"], 5 + SLACK_S)
    ok(r is not None and r.returncode == 0 and secs < 5 + SLACK_S,
       f"a 5 s deadline ends the run in {secs:.1f} s", r.stderr[-800:] if r else "killed")
    text = r.stdout if r else ""
    lines = {l.split(":")[0].strip(): l.strip() for l in text.splitlines()[1:]}
    ok(re.search(r"timed_out", lines.get(valid["silent"], "")),
       "the silent module times out again (no miss was cached for it)", text)
    after = [valid["drip"], valid["late"]]
    ok(all(re.search(r": skipped \(the deadline", lines.get(b, "")) for b in after),
       "the modules after the deadline are skipped, and say so", text)
    ok(any(l.startswith(f"module {evil_mod}: bad_build_id (bad build-id") for l in lines.values())
       and "\x1b" not in text, "bad ids are reported by module, quoted without control bytes",
       text)


if __name__ == "__main__":
    main()
