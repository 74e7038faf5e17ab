#!/usr/bin/env python3
"""Async stack traces (folly's AsyncStackRoot ABI) from real cores.

The corpus program async_coro.cc runs C++20 coroutines through a small
library that follows folly's ABI (corpus/async_task.h) and crashes in seven
shapes, each built at -O0, at -O2 with frame pointers (O2fp) and at -O2
without, with the TLS key >= 32 (O2key32).  The expected merged stacks below are the program's
structure, read off its source: which coroutine co_awaits which, who runs
blocking_wait, where each chain starts.  The frames below `main` (or a
thread's start function) are taken from gdb's backtrace of the thread whose
native stack the merged stack ends on.

Checked per case:
- the crashing thread's merged stack: exactly the expected function
  sequence, async frames marked kind/trust "async", and its end;
- the suspended chains (JSON "suspended"): exactly the expected ones;
- --no-async: the plain native stacks, equal to gdb's, no suspended list;
- the TLS key found is >= 32 in O2key32 and < 32 in O2fp, read with libc's
  descriptors;
- a C program (no folly symbols) costs nothing extra: no memory scanned;
- coreq ingest stores the merged stack (async frames included) and the
  suspended stacks, and list-stacks shows them;
- built at -O0 (no symmetric-transfer tail calls) as at -O2, each coroutine
  once: a coroutine still on the native stack is native, joined with its
  async frame (joined_async); the adapter shape's four async frames in one
  function are one frame with "repeat": 4; no libc or thread-start frame is
  async; the native frames are gdb's, in order, per thread, and a switch to
  the thread that blocks on the chain is marked (thread_switch);
- the bucket signatures of every async core hold no frame twice.
"""
import json
import os
import re
import sqlite3
import subprocess
import tempfile

from coreq_test import coreq, coreq_json, done, ok, require_corpus, sanitizer_report

VARIANTS = ["O0", "O2fp", "O2key32"]

# Per shape: the crashing thread's merged stack down to its anchor, as
# (function, kind) pairs; the anchor is the last one, whose caller frames come
# from gdb (thread "main": the process's main thread); end of the stack.
# Kinds: A async, N native, J native and also the chain's async frame of the
# same coroutine activation (joined_async says by which rule), so shown once.
# "crash_O0" is the stack at -O0, where g++ makes no symmetric-transfer tail
# calls: the awaiting coroutines are still on the native stack, each joined
# with its async frame, with coroutine_handle::resume between the outermost
# one and the root.  A third element is the frame's repeat count (default 1).
# A blocking root's last async frame is its registering function's return
# address: the native frame that follows (run_same, ...), never async.
# I: an inline frame, there only with debug info (not in O2key32, -g0).
A, N, J, I = "async", "native", "joined", "inline"
RESUME = "coroutine_handle::resume"
SHAPES = {
    "same": {
        "crash": [("crash_now", N), ("crash_same", N), ("inner", N), ("middle", A), ("outer", A),
                  ("blocking_wait", A), ("run_same", N), ("main", N)],
        "crash_O0": [("crash_now", N), ("crash_same", N), ("inner", N), ("middle", J),
                     ("outer", J), (RESUME, N), ("blocking_wait", A), ("run_same", N), ("main", N)],
        "tail": "main", "end": "outermost", "suspended": []},
    "cross": {
        # inner2 runs on the executor; blocking_wait and run_cross are the
        # main thread's, which sleeps in blocking_wait: run_cross is the
        # first frame of the thread switch.
        "crash": [("crash_now", N), ("crash_cross", N), ("inner2", N), ("middle2", A),
                  ("outer2", A), ("blocking_wait", A), ("run_cross", N), ("main", N)],
        "crash_O0": [("crash_now", N), ("crash_cross", N), ("inner2", N), ("middle2", J),
                     ("outer2", J), (RESUME, N), ("blocking_wait", A), ("run_cross", N),
                     ("main", N)],
        "switch": "run_cross", "tail": "main", "end": "outermost", "suspended": []},
    "nested": {
        # Two roots: nest_inner's blocking root has nest_outer's root as nextRoot.
        "crash": [("crash_now", N), ("crash_nested", N), ("nest_inner", N), ("blocking_wait", A),
                  ("plain_bridge", N), ("nest_outer", N), ("blocking_wait", A),
                  ("run_nested", N), ("main", N)],
        "crash_O0": [("crash_now", N), ("crash_nested", N), ("nest_inner", N), (RESUME, N),
                     ("blocking_wait", A), ("plain_bridge", N), ("nest_outer", N), (RESUME, N),
                     ("blocking_wait", A), ("run_nested", N), ("main", N)],
        "tail": "main", "end": "outermost", "suspended": []},
    "detached": {
        "crash": [("crash_now", N), ("crash_detached", N), ("det_inner", N), ("det_outer", A),
                  ("start_detached", A)],
        "crash_O0": [("crash_now", N), ("crash_detached", N), ("det_inner", N), ("det_outer", J),
                     (RESUME, N), ("start_detached", A)],
        "tail": None, "end": "async_detached", "suspended": []},
    "suspended": {
        "crash": [("crash_now", N), ("crash_suspended", N), ("run_suspended", N), ("main", N)],
        "tail": "main", "end": "outermost",
        # A suspended chain starts at the leaf's caller (the leaf frame's
        # instructionPointer is in its awaiting coroutine).
        "suspended": [
            {"frames": [("sus_middle", A), ("sus_outer", A), ("start_detached", A)],
             "tail": None, "end": "async_detached"},
            {"frames": [("w_outer", A), ("blocking_wait", A), ("run_waiter", N),
                        ("waiter_main", N)],
             "switch": "run_waiter", "tail": "waiter_main", "end": "outermost"},
        ]},
    "adapter": {
        # The task's frame and three sender adapters' all return into
        # run_adapter (sync_wait_adapted is inlined there): one frame, x4.
        "crash": [("crash_now", N), ("crash_adapter", N), ("ad_inner", N), ("ad_outer", A),
                  ("sync_wait_adapted", I), ("run_adapter", A, 4), ("main", N)],
        "crash_O0": [("crash_now", N), ("crash_adapter", N), ("ad_inner", N), ("ad_outer", J),
                     (RESUME, N), ("sync_wait_adapted", I), ("run_adapter", A, 4), ("main", N)],
        "tail": "main", "end": "outermost", "suspended": []},
    "adapter_call": {
        # sync_wait_layers not inlined: the task's frame returns into it,
        # the three adapters' and the root's into run_adapter_call, which is
        # also the native frame after the root: one frame, x4.
        "crash": [("crash_now", N), ("crash_adapter", N), ("ad_inner", N), ("ad_outer", A),
                  ("sync_wait_layers", A), ("run_adapter_call", N, 4), ("main", N)],
        "crash_O0": [("crash_now", N), ("crash_adapter", N), ("ad_inner", N), ("ad_outer", J),
                     (RESUME, N), ("sync_wait_layers", A), ("run_adapter_call", N, 4),
                     ("main", N)],
        "tail": "main", "end": "outermost", "suspended": []},
}
COROUTINES = {"inner", "middle", "outer", "inner2", "middle2", "outer2", "nest_inner",
              "nest_outer", "det_inner", "det_outer", "sus_inner", "sus_middle", "sus_outer",
              "w_inner", "w_outer", "ad_inner", "ad_outer"}
JOIN_RULES = {"async_frame", "frame_address", "function"}
# Frames no async chain can name: libc's and the thread start functions.
START = {"__libc_start_call_main", "__libc_start_main", "start_main", "_start", "start_thread",
         "clone", "clone3"}


def crash_spec(spec, variant):
    """The shape's spec with the crashing thread's frames of this build."""
    crash = spec.get("crash_O0", spec["crash"]) if variant == "O0" else spec["crash"]
    if variant == "O2key32":
        crash = [w for w in crash if w[1] != I]
    return dict(spec, crash=crash)

ALIASES = {"start_main_impl": "start_main"}
GDB_ONLY = {"pthread_kill_internal", "futex_abstimed_wait_cancelable64"}


def strip_nested(name, open_ch, close_ch):
    out, depth = [], 0
    for ch in name:
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def normalise(name):
    """A spelling-neutral name: no arguments, templates, clone suffixes,
    return type or glibc alias prefixes (as in test_stack_vs_gdb.py)."""
    if not name or name == "??":
        return "??"
    name = re.sub(r"\s*\[clone [^\]]*\]", "", name).split("@")[0]
    name = strip_nested(strip_nested(name, "(", ")"), "<", ">").strip()
    name = re.sub(r"(\s+(const|volatile|&&|&))+$", "", name).split(" ")[-1]
    name = re.sub(r"\.(cold|constprop|isra|part)(\.\d+)*$", "", name).lstrip("_")
    for prefix in ("GI_", "libc_"):
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix):].lstrip("_")
    if name.endswith("::" + RESUME):  # std::__n4861::coroutine_handle<void>::resume
        name = RESUME
    return ALIASES.get(name, name)


def gdb_threads(exe, core):
    """{tid: [(pc or None, normalised name)]} from gdb's thread apply all bt."""
    cmd = ["gdb", "-nx", "-batch", "-iex", "set pagination off", "-iex", "set width 0",
           "-ex", "set backtrace past-main on", "-ex", "set backtrace past-entry on",
           "-ex", "thread apply all bt", exe, core]
    out = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300).stdout
    threads, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^Thread \d+ \(.*?LWP (\d+)\)", line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"^#\d+\s+(?:(0x[0-9a-f]+) in )?(.+)$", line)
        if m and cur is not None:
            rest = re.sub(r" from /\S+$", "", m.group(2))
            rest = re.split(r" \(|\s+at\s", rest)[0] if not rest.startswith("<") else rest
            name = normalise(rest)
            pc = int(m.group(1), 16) if m.group(1) else None
            # g++ coroutine actors: gdb repeats the frame as an inline frame of
            # itself (see test_stack_vs_gdb.py).
            if pc is None and cur and cur[-1][1] == name:
                continue
            if name not in GDB_ONLY:
                cur.append((pc, name))
    return threads


def tail_after(frames, anchor):
    """gdb's names after the first frame named anchor."""
    names = [n for _, n in frames]
    return names[names.index(anchor) + 1:] if anchor in names else None


def thread_with(gdb, anchor):
    """The gdb thread whose stack has a frame named anchor."""
    for tid, frames in gdb.items():
        if any(n == anchor for _, n in frames):
            return frames
    return []


def expected_names(spec, gdb):
    names = [w[0] for w in spec["frames" if "frames" in spec else "crash"]]
    if spec.get("tail"):
        names += tail_after(thread_with(gdb, spec["tail"]), spec["tail"]) or ["<gdb has no tail>"]
    return names


def names_of(frames):
    return [normalise(f["function"]) for f in frames]


def frame_matches(f, want):
    fn, kind = want[0], want[1]
    repeat = want[2] if len(want) > 2 else 1
    if normalise(f["function"]) != fn or f["repeat"] != repeat:
        return False
    if kind == J:
        return f["kind"] == "native" and f["joined_async"] in JOIN_RULES
    if kind == I:
        return f["kind"] == "inline"
    return (f["kind"] == kind and (f["trust"] == "async") == (kind == A)
            and f["joined_async"] is None)


def check_kinds(frames, spec, label):
    want = spec["frames" if "frames" in spec else "crash"]
    got = frames[:len(want)]
    good = len(got) == len(want) and all(frame_matches(f, w) for f, w in zip(got, want))
    ok(good, f"{label}: async frames are kind and trust async (with their repeat counts), "
       "coroutines on the native stack are native and joined, the others native",
       [str([(normalise(f["function"]), f["kind"], f["repeat"], f["joined_async"])
             for f in got])])
    names = names_of(f for f in frames if f["kind"] != "inline")
    twice = [c for c in COROUTINES if names.count(c) > 1]
    ok(not twice, f"{label}: each coroutine at most once", twice)


def check_native_runs(frames, gdb, first_tid, spec, label):
    """The native frames of a merged stack, per run between thread switches,
    are in order in gdb's backtrace of that run's thread; a switch is where
    the spec says, to the thread whose stack has the anchor."""
    runs, tid, bad = [], first_tid, []
    for f in frames:
        if f["thread_switch"] is not None:
            tid = f["thread_switch"]
            runs.append((tid, []))
            if normalise(f["function"]) != spec.get("switch"):
                bad.append(f"unexpected switch at {f['function']}")
        if f["kind"] == "native":
            if not runs:
                runs.append((tid, []))
            runs[-1][1].append(normalise(f["function"]))
    switches = [f for f in frames if f["thread_switch"] is not None]
    if spec.get("switch") and len(switches) != 1:
        bad.append(f"{len(switches)} thread switches, want 1")
    for t, names in runs:
        g = iter([n for _, n in gdb.get(t, [])])
        if not all(any(n == x for x in g) for n in names):
            bad.append(f"thread {t}: {names} not in order in gdb's {[n for _, n in gdb.get(t, [])]}")
    ok(not bad, f"{label}: native frames are gdb's, in order, thread switches marked", bad)


def check_no_async_start(merged, label):
    bad = [f["function"] for st in merged["threads"] + merged["suspended"] for f in st["frames"]
           if f["kind"] == "async" and (normalise(f["function"]) in START or
                                        (f["module"] or "").split("/")[-1].startswith("libc.so"))]
    ok(not bad, f"{label}: no libc or thread-start frame is marked async", bad)


def check_case(case, shape, variant):
    label = case["case"]
    spec = crash_spec(SHAPES[shape], variant)
    exe, core = case["exe"], case["core"]
    r = coreq("stack", "--format", "json", "--no-cache", core)
    if not ok(r.returncode == 0 and not sanitizer_report(r.stderr), f"{label}: coreq stack succeeds",
              r.stderr):
        return
    merged = json.loads(r.stdout)
    gdb = gdb_threads(exe, core)
    crashed = next(t for t in merged["threads"] if t["crashed"])
    want = expected_names(spec, gdb)
    got = names_of(crashed["frames"])
    ok(got == want, f"{label}: crashing thread's merged stack is exactly the program's chain",
       [f"want: {want}", f"got:  {got}"])
    check_kinds(crashed["frames"], spec, label)
    check_native_runs(crashed["frames"], gdb, crashed["tid"], spec, label)
    check_no_async_start(merged, label)
    ok(crashed["end"] == spec["end"], f"{label}: merged stack ends '{spec['end']}'", crashed["end"])

    want_s = sorted((expected_names(s, gdb), s["end"]) for s in spec["suspended"])
    got_s = sorted((names_of(s["frames"]), s["end"]) for s in merged["suspended"])
    ok(got_s == want_s, f"{label}: exactly the expected {len(want_s)} suspended chain(s)",
       [f"want: {want_s}", f"got:  {got_s}"])
    ok(all(s["kind"] == "folly" and s["leaf"].startswith("0x") for s in merged["suspended"]),
       f"{label}: suspended chains are kind folly with their leaf address")
    for s in spec["suspended"]:
        match = [x for x in merged["suspended"] if names_of(x["frames"]) == expected_names(s, gdb)]
        if match:
            check_kinds(match[0]["frames"], s, f"{label}: suspended {s['frames'][0][0]}")
            check_native_runs(match[0]["frames"], gdb, None, s,
                              f"{label}: suspended {s['frames'][0][0]}")

    a = merged["async"]
    key_ok = a["tls_key"] is not None and ((a["tls_key"] >= 32) == (variant == "O2key32"))
    ok(a["folly"] and key_ok and a["tls_layout"] == "libc",
       f"{label}: TLS key {a['tls_key']} ({'>=' if variant == 'O2key32' else '<'} 32) "
       "read with libc's descriptors", json.dumps(a))
    ok(a["scanned"] and a["scanned_bytes"] > 0, f"{label}: writable memory scanned for the cookie",
       json.dumps(a))

    # Native-only view: gdb's stacks, nothing async.
    native, _ = coreq_json("stack", "--format", "json", "--no-cache", "--no-async", core)
    bad = []
    for t in native["threads"]:
        g = [n for _, n in gdb.get(t["tid"], [])]
        if names_of(t["frames"]) != g:
            bad += [f"thread {t['tid']}: gdb {g}", f"thread {t['tid']}: coreq {names_of(t['frames'])}"]
    ok(not bad, f"{label}: --no-async gives every thread's native stack as gdb does", bad)
    ok(all(f["kind"] != "async" for t in native["threads"] for f in t["frames"])
       and native["suspended"] == [] and not native["async"]["searched"]
       and native["async"]["scanned_bytes"] == 0,
       f"{label}: --no-async has no async frames, no suspended list and scans nothing")


def check_c_program(cases):
    for name in ("abort_deep.O0", "threads-1000"):
        case = cases.get(name)
        if not case:
            ok(False, f"corpus has {name}")
            continue
        d, _ = coreq_json("stack", "--format", "json", "--no-cache", case["core"], timeout=600)
        a = d["async"]
        ok(a["searched"] and not a["folly"] and a["tls_key"] is None and not a["scanned"]
           and a["scanned_bytes"] == 0 and a["threads_with_roots"] == 0 and d["suspended"] == [],
           f"{name}: no folly symbols, so no TLS reads and no memory scan", json.dumps(a))


def check_ingest(cases):
    names = ["async_coro-cross.O2key32", "async_coro-suspended.O2fp"]
    if not all(n in cases for n in names):
        ok(False, "corpus has the async ingest cases")
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "coreq.db")
        r = coreq("ingest", "--db", db, "--no-cache", *[cases[n]["core"] for n in names])
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "ingest of async cores succeeds",
           r.stdout + r.stderr)
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT f.idx, f.kind, f.trust, f.function FROM threads t JOIN cores c ON c.id = t.core_id "
            "JOIN frames f ON f.stack_id = t.stack_id WHERE t.crashed = 1 AND c.path LIKE ? "
            "ORDER BY f.idx", ("%cross.O2key32%",)).fetchall()
        stored = [normalise(fn) for _, _, _, fn in rows]
        want = [fn for fn, _ in SHAPES["cross"]["crash"]]
        ok(stored[:len(want)] == want and [k for _, k, _, _ in rows[:len(want)]] ==
           [k for _, k in SHAPES["cross"]["crash"]],
           "ingest stores the crashing thread's merged stack with its async frames", [str(rows)])
        chains = {}
        for idx, kind, fn in con.execute(
                "SELECT s.idx, s.kind, f.function FROM suspended s JOIN cores c ON c.id = s.core_id "
                "JOIN frames f ON f.stack_id = s.stack_id WHERE c.path LIKE ? ORDER BY s.idx, f.idx",
                ("%suspended.O2fp%",)):
            chains.setdefault(idx, (kind, []))[1].append(normalise(fn))
        sus = list(chains.values())
        got = sorted(fns[:3] for _, fns in sus)
        ok(len(sus) == 2 and all(k == "folly" for k, _ in sus) and
           got == sorted([["sus_middle", "sus_outer", "start_detached"],
                          ["w_outer", "blocking_wait", "run_waiter"]]),
           "ingest stores the two suspended chains of the suspended core", [str(sus)])
        con.close()
        r = coreq("list-stacks", "--db", db, "--format", "json")
        stacks = json.loads(r.stdout)["stacks"] if r.returncode == 0 else []
        asy = [s for s in stacks if any(f["kind"] == "async" for f in s["frames"])]
        crash = [s for s in asy if names_of(s["frames"])[:len(want)] == want]
        ok(len(crash) == 1, "list-stacks shows the merged stack with its async frames",
           r.stdout[:2000] + r.stderr)
        susp = [s for s in asy if names_of(s["frames"])[:1] in (["sus_middle"], ["w_outer"])]
        ok(len(susp) == 2 and all(s.get("suspended") == 1 and s["threads"] == 0 for s in susp),
           "list-stacks counts the suspended stacks (1 each, on no thread)",
           [json.dumps({k: v for k, v in s.items() if k != "frames"}) for s in susp])
        r = coreq("list-stacks", "--db", db)
        ok(r.returncode == 0 and "[async]" in r.stdout and "suspended" in r.stdout,
           "list-stacks text marks async frames and suspended counts", r.stdout[:1500])


def check_buckets(cases):
    """Every async core ingested: bucket signatures hold no frame twice, and
    the stored crashing stacks no coroutine twice nor async frames repeated."""
    names = sorted(n for n in cases if n.startswith("async_coro-"))
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "coreq.db")
        r = coreq("ingest", "--db", db, "--no-cache", *[cases[n]["core"] for n in names])
        ok(r.returncode == 0 and not sanitizer_report(r.stderr),
           f"ingest of the {len(names)} async cores succeeds", r.stdout + r.stderr)
        d, _ = coreq_json("buckets", "--db", db, "--format", "json")
        sigs = [b["signature"].split(" | ") for b in d["buckets"]]
        rep = [" | ".join(sg) for sg in sigs if len(set(sg)) != len(sg)]
        ok(sigs and not rep, f"{len(sigs)} bucket signatures of the async cores: no frame twice",
           rep)
        con = sqlite3.connect(db)
        bad = []
        for path, in con.execute("SELECT path FROM cores"):
            rows = con.execute(
                "SELECT f.kind, f.function FROM threads t JOIN cores c ON c.id = t.core_id "
                "JOIN frames f ON f.stack_id = t.stack_id WHERE t.crashed = 1 AND c.path = ? "
                "AND f.kind != 'inline' ORDER BY f.idx", (path,)).fetchall()
            fns = [normalise(fn) for _, fn in rows]
            if any(fns.count(c) > 1 for c in COROUTINES) or any(
                    a == b and a[0] == "async" for a, b in zip(rows, rows[1:])):
                bad.append(f"{path}: {rows}")
        con.close()
        ok(not bad, "stored crashing stacks: no coroutine twice, no async frame repeated", bad)


def main():
    cases = {c["case"]: c for c in require_corpus()}
    for shape in SHAPES:
        for variant in VARIANTS:
            name = f"async_coro-{shape}.{variant}"
            if name not in cases:
                ok(False, f"corpus has {name}")
                continue
            check_case(cases[name], shape, variant)
    check_c_program(cases)
    check_ingest(cases)
    check_buckets(cases)
    done()


main()
