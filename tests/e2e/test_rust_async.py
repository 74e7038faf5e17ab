#!/usr/bin/env python3
"""Rust async: coreq reports the await chains of the futures a Rust program
left suspended, from the core alone.

The expected chains come from corpus/rust_async.rs itself: its header lists
each chain (CHAIN lines: outermost future first, each frame function@tag or
a leaf type), the await line of each tag is the line carrying
`// AWAIT:tag`, and the state of that await is SuspendK where K counts the
awaits of the body before it (from its `// BODY:tag` line).  A future never
polled is Unresumed at its BODY line.

- opt-level 0: every expected chain is reported with the right functions,
  states, files and lines, as many times as the program made it, and
  nothing else (the task being polled when the process aborted is not
  reported as suspended, its state being stale: at most once, as running on
  the crashing thread, named by its type, with no state or line).
- opt-level 2: whatever is reported is true: every frame is a function of
  the program at one of its own await lines in the right state, or a leaf
  the program awaits; no chain includes the polled task.
- --no-async reports nothing; the text output has the section; a C
  program's core, and a folly one, gets no Rust index and no scan (the
  JSON "async" member's rust_* numbers); a Rust core gets no folly scan.
- Each chain is a suspended entry of kind "rust" like folly's: frames with
  no pc, their future's address as "object", the leaf future's as "leaf".
- The crashing thread's native frames match gdb's (pcs and names).
- coreq ingest stores the chains in the suspended table (kind rust) and
  their frames with their states: list-stacks counts the two identical
  tasks as one stack, suspended twice.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

import test_stack_vs_gdb as vs_gdb
from coreq_test import (CORPUS, source_markers, ROOT, coreq, coreq_json, corpus_cases, done, ok,
                        sanitizer_report, skip)

SOURCE = os.path.join(ROOT, "corpus", "rust_async.rs")
CRATE = "rust_async"


def rustc_available():
    r = subprocess.run([os.path.join(ROOT, "corpus", "rustc-path")], capture_output=True, text=True)
    return r.returncode == 0


def parse_source():
    """(expected chains as lists of (function, state, line) innermost first,
    leaf names, {function: {(state, line)}} of every await the program has)."""
    lines, body, await_line = source_markers(SOURCE)

    def state_of(tag):
        if tag not in await_line:
            return "Unresumed", body[tag]
        start, end = body[tag], await_line[tag]
        before = sum(lines[i].count(".await") for i in range(start - 1, end - 1))
        return f"Suspend{before}", end

    chains, leaves, truths = [], set(), {}
    for text in lines:
        m = re.match(r"//\s+CHAIN x(\d+) (.+)$", text)
        if not m:
            continue
        frames = []
        for item in m.group(2).split():
            if "@" in item:
                fn, tag = item.split("@")
                state, line = state_of(tag)
                frames.append((f"{CRATE}::{fn}", state, line))
                truths.setdefault(f"{CRATE}::{fn}", set()).add((state, line))
            else:
                frames.append((f"{CRATE}::{item}", None, None))
                leaves.add(f"{CRATE}::{item}")
        for _ in range(int(m.group(1))):
            chains.append(list(reversed(frames)))
    return chains, leaves, truths


def reported(ours):
    out = []
    for s in ours["suspended"]:
        if s["kind"] != "rust" or s.get("task_state") == "running":
            continue
        out.append([(f["function"], f["state"], f["line"]) for f in s["frames"]])
    return out


def check_files(case, ours):
    bad = [f for s in ours["suspended"] for f in s["frames"]
           if f["state"] is not None and os.path.basename(f["file"] or "") != "rust_async.rs"]
    ok(not bad, f"{case}: every await is in rust_async.rs", bad[:5])


def check_o0(case, ours, expected):
    got = sorted(reported(ours), key=repr)
    want = sorted(expected, key=repr)
    ok(got == want, f"{case}: every suspended task is reported once, with its functions, states and lines",
       [f"want: {c}" for c in want] + [f"got:  {c}" for c in got])
    check_files(case, ours)


def check_o2(case, ours, leaves, truths):
    got = reported(ours)
    false = []
    for chain in got:
        for fn, state, line in chain:
            if state is None:
                good = fn in leaves
            else:
                good = (state, line) in truths.get(fn, set())
            if not good:
                false.append((fn, state, line))
    ok(got and not false, f"{case}: {len(got)} chains reported, every frame true to the source",
       [f"not in the program: {f}" for f in false] or ["nothing reported"])
    check_files(case, ours)


def check_shape(case, ours):
    """Rust chains are suspended entries like folly's: kind rust, the leaf
    future's address, frames innermost first of kind and trust async, with
    no pc but the future's address, and an end."""
    rust = [s for s in ours["suspended"] if s["kind"] == "rust"]
    bad = []
    for s in rust:
        fs = s["frames"]
        if not fs or s["leaf"] != fs[0]["object"] or s["end"] != "outermost":
            bad.append(f"leaf/end: {s['leaf']} {s['end']}")
        for f in fs:
            if (f["kind"], f["trust"], f["pc"], f["offset"]) != ("async", "async", None, None) \
                    or not re.fullmatch(r"0x[0-9a-f]+", f["object"] or ""):
                bad.append(repr(f))
    ok(rust and not bad, f"{case}: Rust chains are kind rust, leaf and frames shaped like folly's",
       bad[:5])


def check_not_polled(case, ours):
    names = [f["function"] for s in ours["suspended"] if s.get("task_state") != "running"
             for f in s["frames"]]
    ok(not any("crash_task" in n for n in names),
       f"{case}: the task being polled at the abort is not reported as suspended", names)
    crashed = next(t["tid"] for t in ours["threads"] if t["crashed"])
    running = [s for s in ours["suspended"] if s.get("task_state") == "running"]
    bad = [(s.get("thread"), [(f["function"], f["state"], f["line"]) for f in s["frames"]])
           for s in running
           if s.get("thread") != crashed or any(f["state"] or f["line"] for f in s["frames"])
           or s["frames"][-1]["function"] != "rust_async::crash_task"]
    ok(len(running) <= 1 and not bad,
       f"{case}: a task reported running is the polled one, on the crashing thread, without states",
       bad or [len(running)])


def check_gdb(case, ours):
    """The crashing thread's physical frames, as test_stack_vs_gdb compares
    Rust programs: same pcs and functions as gdb's."""
    if not shutil.which("gdb"):
        skip(f"{case}: crashing thread matches gdb", "gdb not installed")
        return
    crashed = next(t for t in ours["threads"] if t["crashed"])
    norm = lambda fn: vs_gdb.KNOWN_ALIASES.get(vs_gdb.normalise(fn), vs_gdb.normalise(fn))
    mine = [(int(f["pc"], 16), norm(f["function"])) for f in crashed["frames"] if f["kind"] == "native"]
    stacks = vs_gdb.gdb_stacks(case_exe[case], case_core[case], None)
    theirs = [(pc, norm(fn)) for pc, fn, _, _ in vs_gdb.physical(stacks.get(crashed["tid"], []))]
    same = len(mine) == len(theirs) and all(
        n1 == n2 and (p2 is None or p1 == p2) for (p1, n1), (p2, n2) in zip(mine, theirs))
    ok(same, f"{case}: crashing thread's native frames match gdb ({len(theirs)} frames)",
       [f"gdb:   {theirs}", f"coreq: {mine}"])
    names = [n for _, n in mine]
    ok("rust_async::crash_task::{{closure}}" in names and "rust_async::fatal" in names,
       f"{case}: the polled task's poll function is on the crashing thread", names)


def check_ingest(core, expected):
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "db")
        r = coreq("ingest", "--db", db, "--no-cache", core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "ingest of the Rust core succeeds",
           r.stderr)
        rows = subprocess.run(
            ["sqlite3", db,
             "SELECT s.id, count(*), group_concat(DISTINCT f.kind) FROM suspended u "
             "JOIN stacks s ON s.id = u.stack_id JOIN frames f ON f.stack_id = s.id AND f.idx = 0 "
             "WHERE u.kind = 'rust' GROUP BY s.id"],
            capture_output=True, text=True)
        counts = sorted(int(line.split("|")[1]) for line in rows.stdout.split())
        # and the task polled at the abort (crash_task), stored once, running
        want = sorted(list({repr(c): expected.count(c) for c in expected}.values()) + [1])
        ok(rows.returncode == 0 and counts == want,
           "ingest stores each distinct await chain once, counted per task",
           [f"want counts {want}", f"got {rows.stdout!r} {rows.stderr}"])
        kinds = {line.split("|")[2] for line in rows.stdout.split()}
        ok(kinds == {"async"}, "stored suspended frames have kind async", kinds)
        top = subprocess.run(["sqlite3", db, "SELECT function, line FROM frames f JOIN "
                              "suspended u ON u.stack_id = f.stack_id WHERE f.idx = 1"],
                             capture_output=True, text=True).stdout.split()
        lines_ok = all(l.split("|")[0].startswith(CRATE) for l in top)
        ok(top and lines_ok, "stored chains keep function names", top)
        view = subprocess.run(["sqlite3", db, "SELECT DISTINCT kind, function, state, line FROM "
                               "v_suspended_stacks WHERE state IS NOT NULL"],
                              capture_output=True, text=True).stdout.split()
        want_view = sorted({f"rust|{fn}|{st}|{ln}" for c in expected for fn, st, ln in c if st})
        ok(sorted(view) == want_view, "v_suspended_stacks shows each await with its state and line",
           [f"want {want_view}", f"got {sorted(view)}"])
        listed, r = coreq_json("list-stacks", "--db", db, "--format", "json")
        outer = [x for x in expected if x[-1][0] == f"{CRATE}::outer"][0]
        rows = [s for s in listed["stacks"]
                if [(f["function"], f.get("state"), f["line"]) for f in s["frames"]] == outer]
        ok(len(rows) == 1 and rows[0]["suspended"] == expected.count(outer) and rows[0]["threads"] == 0,
           f"list-stacks counts the {expected.count(outer)} identical outer chains as one stack",
           [repr(s) for s in listed["stacks"]][:6])
        r = coreq("list-stacks", "--db", db)
        ok(r.returncode == 0 and "2 suspended" in r.stdout and "rust_async::outer [Suspend0]" in r.stdout,
           "list-stacks text shows the chains' states and suspended counts", r.stdout[:1500])


case_exe, case_core = {}, {}


def main():
    if not rustc_available():
        skip("rust async tests", "rustc not found (PATH, ~/.cargo/bin): corpus/rust_async.rs not built")
        done()
    expected, leaves, truths = parse_source()
    ok(len(expected) == 7 and all(len(c) >= 1 for c in expected),
       "rust_async.rs describes its chains", expected)
    cases = {c["case"]: c for c in corpus_cases() if c["case"].startswith("rust_async.")}
    for name in ("rust_async.O0", "rust_async.O2"):
        if name not in cases:
            ok(False, f"{name}: core exists", f"no core under {CORPUS}/cores/{name}: did `make corpus` run?")
            continue
        case = cases[name]
        case_exe[name], case_core[name] = case["exe"], case["core"]
        ours, r = coreq_json("stack", "--format", "json", "--no-cache", case["core"], timeout=300)
        ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
        a = ours["async"]
        ok(a["rust_modules_indexed"] == 1 and a["rust_scanned_bytes"] > 0 and a["rust_vtables"] > 0,
           f"{name}: the Rust module is indexed and memory scanned", json.dumps(a))
        ok(a["searched"] and not a["folly"] and not a["scanned"] and a["scanned_bytes"] == 0,
           f"{name}: no folly symbols, so no cookie scan", json.dumps(a))
        check_shape(name, ours)
        if name.endswith("O0"):
            check_o0(name, ours, expected)
        else:
            check_o2(name, ours, leaves, truths)
        check_not_polled(name, ours)
        check_gdb(name, ours)
        none, _ = coreq_json("stack", "--format", "json", "--no-cache", "--no-async", case["core"])
        ok(none["suspended"] == [] and none["async"]["rust_modules_indexed"] == 0
           and none["async"]["rust_scanned_bytes"] == 0,
           f"{name}: --no-async reports no suspended stacks and reads no Rust types")
        text = coreq("stack", "--no-cache", case["core"]).stdout
        ok("Suspended futures" in text and "rust_async::outer [Suspend0]" in text,
           f"{name}: text output lists the suspended futures", text[-800:])
    if "rust_async.O0" in cases:
        check_ingest(cases["rust_async.O0"]["core"], expected)

    # A program without Rust: no DWARF read for Rust types, no scan.  A folly
    # program's suspended chains are all folly's.
    c_cases = [c for c in corpus_cases(include_big=False)
               if c["case"] in ("abort_deep.O0", "threads8.O0", "cpp_terminate.O0", "abort_deep.static",
                                "async_coro-suspended.O2fp")]
    ok(len(c_cases) == 5, "C, C++ and folly-style corpus cores exist", [c["case"] for c in c_cases])
    for case in c_cases:
        args = ["stack", "--format", "json", "--no-cache"]
        if case.get("debug_dir"):
            args += ["--debug-dir", case["debug_dir"]]
        ours, r = coreq_json(*args, case["core"])
        a = ours["async"]
        ok(a["rust_modules_indexed"] == 0 and a["rust_scanned_bytes"] == 0 and a["rust_types"] == 0
           and all(s["kind"] != "rust" for s in ours["suspended"]),
           f"{case['case']}: no Rust index, no Rust scan, no Rust chain", json.dumps(a))
    done()


main()
