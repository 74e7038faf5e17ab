#!/usr/bin/env python3
"""Reading the store back: coreq list-stacks, coreq cores, coreq show.

After ingesting several cores (two abort_deep builds, threads-10 and
threads-1000 of one executable, threads8, C++ and real programs):
- list-stacks JSON has the documented shape and agrees with the tables;
  stacks come most shared first; --limit cuts the list;
- --exe by basename and by full path keeps that executable's cores' stacks
  only; --core counts threads within that core;
- abort_deep.O0's crashed stack has 1 thread and passes the crash chain in
  order; the text output names thread counts and functions;
- cores lists every core with the facts `coreq info` gives; show gives the
  core, its modules and every thread, crashed first, with the frames
  `coreq stack` finds; an unknown id is one error line and exit 1.
"""
import json
import os
import re
import shutil
import sqlite3
import tempfile

from coreq_test import coreq, done, ok, require_corpus, sanitizer_report

CASES = ["abort_deep.O0", "abort_deep.O2", "segv_null.O0", "fpe.O2", "threads8.O2", "threads-10",
         "threads-1000", "cpp_terminate.O2", "real-sleep"]
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
HEX = re.compile(r"0x[0-9a-f]+")
KINDS = {"native", "inline", "async"}
TRUSTS = {"context", "cfi", "fp", "scan", "async"}
# bucket_id came with crash buckets (schema 002); comm, source, stored_path
# and meta_conflicts with capture metadata (schema 003); sender_pid and
# sender_uid with the signal's sender (schema 010), sender_claimed with
# whether that is only the signal's claim (schema 015); snapshot with gcore
# snapshots (schema 014); crash_message with the runtime's message (schema 016).
CORE_KEYS = {"id", "path", "pid", "exe", "cmdline", "signal", "signal_name", "si_code", "fault_address",
             "crashed_tid", "threads", "timestamp", "hostname", "uid", "ingested_at", "status", "message",
             "bucket_id", "bucket", "comm", "source", "stored_path", "meta_conflicts", "time_source",
             "si_code_name", "sender_pid", "sender_uid", "sender_claimed", "snapshot",
             "crash_message"}


def diag(r):
    return ([f"exit status {r.returncode}"] + ["stdout: " + l for l in r.stdout.splitlines()[:15]]
            + ["stderr: " + l for l in r.stderr.splitlines()[:15]])


def js(r):
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None


def q(db, sql, args=()):
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def hexint(s):
    return None if s is None else int(s, 16)


def frame_key(f):
    return (f.get("function"), f.get("kind"), f.get("module"), f.get("offset"), f.get("trust"),
            f.get("file"), f.get("line"))


def subsequence(want, have):
    it = iter(have)
    return all(any(w == h for h in it) for w in want)


def frame_problems(f, i):
    p = []
    # state came with suspended Rust futures (schema 006); these cores' frames have none.
    if set(f) != {"index", "kind", "trust", "module", "build_id", "offset", "function", "file", "line",
                  "state"}:
        p.append(f"keys {sorted(f)}")
    if f.get("state") is not None:
        p.append(f"state {f.get('state')!r}")
    if f.get("index") != i:
        p.append(f"index {f.get('index')} at position {i}")
    if f.get("kind") not in KINDS or f.get("trust") not in TRUSTS:
        p.append(f"kind/trust {f.get('kind')}/{f.get('trust')}")
    if not (isinstance(f.get("offset"), str) and HEX.fullmatch(f["offset"])):
        p.append(f"offset {f.get('offset')!r}")
    if f.get("module") is not None and not isinstance(f["module"], str):
        p.append(f"module {f.get('module')!r}")
    if f.get("build_id") is not None and not re.fullmatch(r"[0-9a-f]+", str(f["build_id"])):
        p.append(f"build_id {f.get('build_id')!r}")
    if f.get("function") is not None and not isinstance(f["function"], str):
        p.append(f"function {f.get('function')!r}")
    if f.get("file") is not None and not isinstance(f["file"], str):
        p.append(f"file {f.get('file')!r}")
    if f.get("line") is not None and not isinstance(f["line"], int):
        p.append(f"line {f.get('line')!r}")
    return p


def stack_problems(s):
    p = []
    # suspended came with suspended async stacks (schema 005); these cores have none.
    if set(s) != {"id", "hash", "threads", "cores", "suspended", "first_seen", "last_seen", "frames"}:
        p.append(f"keys {sorted(s)}")
    if s.get("suspended") != 0:
        p.append(f"suspended {s.get('suspended')!r}")
    if not isinstance(s.get("id"), int) or not re.fullmatch(r"[0-9a-f]{16}", str(s.get("hash"))):
        p.append(f"id/hash {s.get('id')!r} {s.get('hash')!r}")
    if not (isinstance(s.get("threads"), int) and isinstance(s.get("cores"), int)
            and s["threads"] >= s["cores"] >= 1):
        p.append(f"threads/cores {s.get('threads')!r}/{s.get('cores')!r}")
    fs, ls = str(s.get("first_seen")), str(s.get("last_seen"))
    if not (ISO.fullmatch(fs) and ISO.fullmatch(ls) and fs <= ls):
        p.append(f"first/last seen {fs} {ls}")
    frames = s.get("frames")
    if not isinstance(frames, list) or not frames:
        p.append("no frames")
    else:
        for i, f in enumerate(frames):
            p += [f"frame {i}: {x}" for x in frame_problems(f, i)]
    return [f"stack {s.get('id')}: {x}" for x in p]


def list_stacks(db, *args):
    r = coreq("list-stacks", "--db", db, "--format", "json", *args)
    doc = js(r)
    return r, (doc or {}).get("stacks") if isinstance(doc, dict) else None


ALL = ("--limit", "1000000")


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-list-")
    try:
        run(cases, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


def run(cases, tmp):
    os.environ.setdefault("COREQ_CACHE", os.path.join(tmp, "cache.db"))
    os.environ["XDG_STATE_HOME"] = os.path.join(tmp, "state")
    os.environ.pop("COREQ_DB", None)
    db = os.path.join(tmp, "coreq.db")

    for cmd in (["list-stacks"], ["cores"], ["show", "1"]):
        r = coreq(*cmd, "--help")
        ok(r.returncode == 0 and r.stdout, f"{cmd[0]} --help exits 0", diag(r))
        r = coreq(*cmd, "--db", db, "--bogus-option")
        ok(r.returncode == 2, f"{cmd[0]} with a bad option exits 2", diag(r))
    r = coreq("list-stacks", "--db", db, "--format", "yaml")
    ok(r.returncode == 2, "list-stacks --format yaml is a usage error (exit 2)", diag(r))

    open(db, "w").close()  # an empty file is an empty database; a missing one is refused
    r, stacks = list_stacks(db)
    ok(r.returncode == 0 and stacks == [], "list-stacks on an empty database: {\"stacks\":[]}", diag(r))
    r = coreq("cores", "--db", db, "--format", "json")
    ok(r.returncode == 0 and (js(r) or {}).get("cores") == [], "cores on an empty database: {\"cores\":[]}",
       diag(r))

    paths = [cases[c]["core"] for c in CASES]
    r = coreq("ingest", "--db", db, "--format", "json", *paths, timeout=600)
    doc = js(r) or {}
    ids = {}
    for res in doc.get("results", []):
        for c in CASES:
            if res.get("path") == cases[c]["core"] and res.get("status") == "ingested":
                ids[c] = res.get("core_id")
    ok(r.returncode == 0 and r.stderr == "" and len(ids) == len(CASES),
       f"ingest {len(CASES)} cores in one command", diag(r))
    if len(ids) != len(CASES):
        return

    # --- list-stacks: shape, agreement with the tables, order, --limit
    r, full = list_stacks(db, *ALL)
    ok(r.returncode == 0 and r.stderr == "" and isinstance(full, list) and full,
       f"list-stacks --format json lists stacks ({len(full or [])})", diag(r))
    full = full or []
    probs = [p for s in full for p in stack_problems(s)]
    ok(not probs, "list-stacks JSON: every stack and frame has the documented fields and types", probs)

    want = {sid: (h, n, c) for sid, h, n, c in q(
        db, "SELECT s.id, s.hash, count(*), count(DISTINCT t.core_id) FROM stacks s"
            " JOIN threads t ON t.stack_id = s.id GROUP BY s.id")}
    got = {s.get("id"): (s.get("hash"), s.get("threads"), s.get("cores")) for s in full}
    ok(got == want, f"every stack with its hash, thread and core counts as the tables hold ({len(want)})",
       [f"{k}: got {got.get(k)} want {want.get(k)}" for k in sorted(set(got) | set(want), key=str)
        if got.get(k) != want.get(k)][:20])
    dbframes = {}
    for sid, idx, fn, off in q(db, "SELECT stack_id, idx, function, offset FROM frames ORDER BY stack_id, idx"):
        dbframes.setdefault(sid, []).append((fn, off))
    bad = [s["id"] for s in full
           if [(f.get("function"), hexint(f.get("offset"))) for f in s.get("frames", [])] != dbframes.get(s["id"])]
    ok(not bad, "every stack's frames are its frames rows (function, offset)", bad[:10])
    nthreads = q(db, "SELECT count(*) FROM threads")[0][0]
    ok(sum(s.get("threads", 0) for s in full) == nthreads,
       f"thread counts sum to every stored thread ({nthreads})")

    order = [(s.get("threads"), s.get("cores")) for s in full]
    ok(order == sorted(order, reverse=True), "most shared first: threads non-increasing, then cores",
       [str(o) for o in order[:20]])
    ok(full and full[0].get("threads") == 1010 and full[0].get("cores") == 2,
       "the top stack is the parked stack of threads-10 and threads-1000: 1010 threads, 2 cores",
       json.dumps(full[:1])[:1500])

    r, two = list_stacks(db, "--limit", "2")
    ok(r.returncode == 0 and two is not None and len(two) <= 2
       and [s.get("id") for s in two] == [s.get("id") for s in full[:2]],
       "--limit 2 gives the first 2 stacks", diag(r))
    r, one = list_stacks(db, "--limit", "1")
    ok(r.returncode == 0 and one is not None and len(one) == 1, "--limit 1 gives one stack", diag(r))
    r, dflt = list_stacks(db)
    ok(r.returncode == 0 and dflt and [s.get("id") for s in dflt] == [s.get("id") for s in full[:len(dflt)]],
       "without --limit: a prefix of the same order", diag(r))

    # --- cores
    r = coreq("cores", "--db", db, "--format", "json")
    cores = (js(r) or {}).get("cores") or []
    ok(r.returncode == 0 and r.stderr == "" and sorted(c.get("id") for c in cores) == sorted(ids.values()),
       f"cores lists every ingested core ({len(ids)})", diag(r))
    by_id = {c.get("id"): c for c in cores}
    probs = []
    for name, cid in ids.items():
        c, case = by_id.get(cid, {}), cases[name]
        info = js(coreq("info", "--format", "json", case["core"])) or {"core": {}, "threads": []}
        ic = info["core"]
        if set(c) != CORE_KEYS:
            probs.append(f"{name}: keys {sorted(c)}")
        if os.path.realpath(str(c.get("path"))) != os.path.realpath(case["core"]):
            probs.append(f"{name}: path {c.get('path')!r}, want {case['core']!r}")
        want = {"pid": int(case["pid"]), "exe": case["exe"], "signal": int(case["signal"]),
                "threads": int(case["threads"]), "signal_name": ic.get("signal_name"),
                "si_code": ic.get("si_code"), "si_code_name": ic.get("si_code_name"),
                "sender_pid": ic.get("sender_pid"), "sender_uid": ic.get("sender_uid"),
                "sender_claimed": ic.get("sender_claimed"),
                "fault_address": ic.get("fault_address"),
                "crashed_tid": ic.get("crashed_tid"), "cmdline": ic.get("cmdline"), "status": "ok"}
        for k, v in want.items():
            if c.get(k) != v:
                probs.append(f"{name}: {k} {c.get(k)!r}, want {v!r}")
        if not ISO.fullmatch(str(c.get("ingested_at"))):
            probs.append(f"{name}: ingested_at {c.get('ingested_at')!r}")
        if c.get("fault_address") is not None and not HEX.fullmatch(str(c["fault_address"])):
            probs.append(f"{name}: fault_address {c.get('fault_address')!r}")
    ok(not probs, "cores JSON: path, pid, exe, signal, threads as the corpus says; si_code, its name,"
       " sender, fault address, crashed tid, cmdline as `coreq info` says", probs)
    r = coreq("cores", "--db", db)
    lines = r.stdout.splitlines()
    missing = [n for n, cid in ids.items()
               if not any(re.match(rf"\s*{cid}\b", l) and cases[n]["exe"] in l for l in lines)]
    ok(r.returncode == 0 and r.stderr == "" and not missing,
       "cores text: a line per core with its id and executable", diag(r) + missing)

    # --- --exe
    def exe_check(name, exe_arg, want_cores):
        r, st = list_stacks(db, "--exe", exe_arg, *ALL)
        st = st or []
        want_ids = {cid for cid, c in by_id.items() if c.get("exe") in want_cores}
        want = {}
        for sid, n, nc in q(db, "SELECT stack_id, count(*), count(DISTINCT core_id) FROM threads WHERE core_id IN"
                                f" ({','.join(map(str, want_ids)) or 'NULL'}) GROUP BY stack_id"):
            want[sid] = (n, nc)
        got = {s.get("id"): (s.get("threads"), s.get("cores")) for s in st}
        nthreads = sum(by_id[c]["threads"] for c in want_ids)
        ok(r.returncode == 0 and want_ids and got == want and sum(n for n, _ in got.values()) == nthreads
           and max((nc for _, nc in got.values()), default=0) <= len(want_ids),
           f"--exe {name}: only the stacks of that executable's {len(want_ids)} core(s), "
           f"{nthreads} threads", diag(r) + [f"got {got}", f"want {want}"])
        return st

    ad0, ad2 = cases["abort_deep.O0"]["exe"], cases["abort_deep.O2"]["exe"]
    exe_check("by basename (abort_deep: the O0 and O2 builds)", "abort_deep", {ad0, ad2})
    exe_check("by full path (the O0 build only)", ad0, {ad0})
    nt = cases["threads-10"]["exe"]
    st = exe_check("nthreads by basename", "nthreads", {nt})
    ok(st and st[0].get("cores") == sum(1 for c in cores if c.get("exe") == nt) == 2,
       "--exe nthreads: the shared stack's core count is the number of nthreads cores in `coreq cores`",
       json.dumps(st[:1])[:500])
    exe_check("nthreads by full path", nt, {nt})
    for other in ("no-such-program", "abort_dee", "/abort_deep"):
        r, st = list_stacks(db, "--exe", other, *ALL)
        ok(r.returncode == 0 and st == [], f"--exe {other}: no stacks (neither basename nor full path)", diag(r))

    # --- --core
    for name, parked in (("threads-10", 10), ("threads-1000", 1000)):
        r, st = list_stacks(db, "--core", ids[name], *ALL)
        st = st or []
        top = st[0] if st else {}
        fns = [f.get("function") for f in top.get("frames", [])]
        ok(r.returncode == 0 and len(st) == 2 and top.get("threads") == parked and top.get("cores") == 1
           and "parked_thread" in fns and sum(s.get("threads", 0) for s in st) == parked + 1,
           f"--core {name}: the parked stack counts {parked} threads in 1 core; {parked + 1} in all",
           diag(r) + [json.dumps(s)[:300] for s in st])
    r, st = list_stacks(db, "--core", "999999")
    ok(r.returncode in (0, 1) and not sanitizer_report(r.stderr) and (r.returncode == 1 or st == []),
       "--core of an unknown id: no stacks (or an error), no crash", diag(r))

    # --- abort_deep.O0's crashed stack
    chain = cases["abort_deep.O0"]["crash_chain"].split()
    r = coreq("show", ids["abort_deep.O0"], "--db", db, "--format", "json")
    shown = js(r) or {}
    sid = ((shown.get("threads") or [{}])[0]).get("stack_id")
    s = next((s for s in full if s.get("id") == sid), {})
    fns = [f.get("function") for f in s.get("frames", [])]
    ok(s.get("threads") == 1 and s.get("cores") == 1 and subsequence(chain, fns),
       f"abort_deep.O0's crashed stack: 1 thread, 1 core, frames pass {' '.join(chain)} in order",
       [f"stack {sid}: {s.get('threads')} threads, {s.get('cores')} cores", str(fns)])

    # --- text output
    r = coreq("list-stacks", "--db", db, "--core", ids["threads-1000"])
    ok(r.returncode == 0 and r.stderr == "" and re.search(r"\b1000\b", r.stdout)
       and "parked_thread" in r.stdout and re.search(r"\b1\b", r.stdout),
       "list-stacks text: the thread counts (1000, 1) and the functions", diag(r))
    r = coreq("list-stacks", "--db", db, "--core", ids["abort_deep.O0"])
    pos = [m.start() if m else -1
           for m in (re.search(rf"(?<![\w/.]){re.escape(f)} \(", r.stdout) for f in chain)]
    ok(r.returncode == 0 and all(p >= 0 for p in pos) and pos == sorted(pos),
       "list-stacks text: abort_deep.O0's crash chain in order", diag(r))

    # --- show
    case = cases["threads8.O2"]
    cid = ids["threads8.O2"]
    r = coreq("show", cid, "--db", db, "--format", "json")
    shown = js(r) or {}
    ok(r.returncode == 0 and r.stderr == "" and set(shown) >= {"core", "modules", "threads"},
       "show --format json: core, modules, threads", diag(r))
    ok(shown.get("core") == by_id.get(cid), "show's core is the same object `cores` lists",
       [json.dumps(shown.get("core")), json.dumps(by_id.get(cid))])
    threads = shown.get("threads") or []
    crashed = [t for t in threads if t.get("crashed")]
    ok(len(threads) == int(case["threads"]) and threads and threads[0].get("crashed") is True
       and len(crashed) == 1 and threads[0].get("tid") == by_id[cid].get("crashed_tid"),
       f"show: all {case['threads']} threads, the crashed one first",
       [f"{t.get('tid')} crashed={t.get('crashed')}" for t in threads])
    probs = []
    for t in threads:
        if not {"tid", "name", "crashed", "stack_id", "end", "frames"} <= set(t):
            probs.append(f"thread {t.get('tid')}: keys {sorted(t)}")
        for i, f in enumerate(t.get("frames") or []):
            probs += [f"thread {t.get('tid')} frame {i}: {x}" for x in frame_problems(f, i)]
    ok(not probs, "show: thread and frame fields as documented", probs)
    stack = js(coreq("stack", "--format", "json", "--no-cache", case["core"])) or {"threads": []}
    ref = {t["tid"]: ([frame_key(f) for f in t["frames"]], t["end"], t["crashed"]) for t in stack["threads"]}
    have = {t.get("tid"): ([frame_key(f) for f in t.get("frames") or []], t.get("end"), t.get("crashed"))
            for t in threads}
    ok(have == ref and [t.get("tid") for t in threads][:1] == [stack["threads"][0]["tid"]],
       "show: every thread's frames and end equal `coreq stack --format json`",
       [f"{tid}: show {have.get(tid)}\n   stack {ref.get(tid)}" for tid in ref if have.get(tid) != ref.get(tid)][:6])
    known = {s.get("id") for s in full}
    ok(all(t.get("stack_id") in known for t in threads), "show: stack ids are list-stacks ids")
    info = js(coreq("info", "--format", "json", case["core"])) or {"modules": []}
    want = sorted((m["path"], m["build_id"], m["start"], m["end"], m["status"]) for m in info["modules"])
    got = sorted((m.get("path"), m.get("build_id"), m.get("start"), m.get("end"), m.get("status"))
                 for m in shown.get("modules") or [])
    ok(got == want, f"show: modules as `coreq info` gives them ({len(want)})",
       [f"show {m}" for m in got] + [f"info {m}" for m in want])

    r = coreq("show", cid, "--db", db)
    out = r.stdout
    workers = sorted({f["function"] for t in stack["threads"] for f in t["frames"]
                      if (f["function"] or "").startswith("wait_here_")})
    first_worker = min((out.find(w) for w in workers if w in out), default=-1)
    ok(r.returncode == 0 and r.stderr == "" and len(workers) == 8 and 0 <= out.find("crash_main") < first_worker
       and all(w in out for w in workers) and str(by_id[cid].get("crashed_tid")) in out,
       "show text: the crashed thread (crash_main) first, then the 8 workers' frames", diag(r))

    r = coreq("show", "424242", "--db", db)
    lines = r.stderr.splitlines()
    ok(r.returncode == 1 and len(lines) == 1 and lines[0].startswith("coreq: ") and r.stdout == "",
       "show of an unknown id: exit 1, one `coreq:` line on stderr, nothing on stdout", diag(r))
    r = coreq("show", "424242", "--db", db, "--format", "json")
    ok(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("coreq: "),
       "show --format json of an unknown id: exit 1, one `coreq:` line", diag(r))


main()
