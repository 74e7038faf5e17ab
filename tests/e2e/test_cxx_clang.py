#!/usr/bin/env python3
"""C++20 coroutines built with clang (issue 33): the cxx runtime's clang path.

The cores are the corpus cases cxx_task.clangO0 and cxx_task.clangO2g
(corpus/cxx_task.cc built by clang++ -std=c++20 at -O0 and at -O2 -g); for
a corpus built without them this test builds the same into
COREQ_BUILD/cxx-clang and crashes it into a kernel core itself.  clang names a coroutine's resume and destroy functions
NAME.resume and NAME.destroy / NAME.cleanup; coreq finds the frames from
that pair and reads their layout from clang's `__coro_frame_ty`.  Expected results come
from the program's source (its `// AWAIT:fn` markers, as in
test_cxx_coro.py), and gdb reading the core confirms each frame: its first
word is its coroutine's .resume function, and its promise's first word
(the continuation, at frame + 16) is the awaiting frame.
Checks per build: every parked chain listed once, leaf first, no phantom;
the crashed thread reads crash_now, inner, mid, outer once each, then
sync_wait and main.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coreq_test import BUILD, CORPUS, ROOT, coreq_json, done, ok, sanitizer_report, skip  # noqa: E402
from test_cxx_coro import await_lines, chains_from, gdb, program_structure  # noqa: E402

# clangO2g0 (no debug info: frames from the symbol pair alone, state
# "suspended") is never in the corpus: built here.
BUILDS = {"clangO0": ["-O0", "-g", "-fno-omit-frame-pointer"], "clangO2g": ["-O2", "-g"],
          "clangO2g0": ["-O2", "-g0"]}


def coro_of(frame, coros):
    fn = frame.get("function") or ""
    m = re.match(r"(\w+)\(", fn)
    return m.group(1) if m and m.group(1) in coros and "[clone .resume]" in fn else None


def make_core(variant, src):
    """(exe, core) of cxx_task built by clang++ at variant, or (None, why)."""
    d = os.path.join(CORPUS, "cores", f"cxx_task.{variant}")
    if os.path.isfile(os.path.join(d, "core")) and os.path.isfile(os.path.join(d, "expect")):
        exe = [l.split("=", 1)[1].strip() for l in open(os.path.join(d, "expect"))
               if l.startswith("exe=")]
        if exe and os.path.isfile(exe[0]):
            return exe[0], os.path.join(d, "core")
    clang = shutil.which("clang++")
    if not clang:
        return None, "clang++ not installed"
    try:
        pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    except OSError:
        pattern = ""
    if pattern != "core":
        return None, f"core_pattern is {pattern!r}, not 'core'"
    d = os.path.abspath(os.path.join(BUILD, "cxx-clang", variant))
    os.makedirs(d, exist_ok=True)
    exe, core = os.path.join(d, "cxx_task"), os.path.join(d, "core")
    if not (os.path.isfile(core) and os.path.getmtime(core) > os.path.getmtime(src)):
        r = subprocess.run([clang, "-std=c++20", "-D_GNU_SOURCE", "-w"] + BUILDS[variant] +
                           ["-o", exe, src, "-pthread", "-Wl,--build-id"],
                           capture_output=True, text=True)
        if r.returncode:
            return None, "clang++ failed: " + r.stderr[-300:]
        if os.path.exists(core):
            os.unlink(core)
        subprocess.run(["sh", "-c", "ulimit -c unlimited; exec " + exe], cwd=d,
                       capture_output=True, timeout=60)
        if not os.path.isfile(core):
            return None, "no core written"
    return exe, core


def check(variant):
    src = os.path.join(ROOT, "corpus", "cxx_task.cc")
    case = f"cxx_task.{variant}"
    exe, core = make_core(variant, src)
    if not exe:
        skip(f"{case}: cxx chains", core)
        return
    awaits, crasher, coros = program_structure(src)
    parked, crashed = chains_from(awaits, crasher)
    ok(len(parked) == 2 and len(crashed) == 3,
       f"{case}: the source names two parked chains and a crash three awaits deep",
       [str(parked), str(crashed)])
    data, r = coreq_json("stack", core, "--exe", exe, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{case}: no sanitizer report", r.stderr)
    found, phantom = [], []
    for s in data["suspended"]:
        if s["kind"] != "cxx":
            continue
        mine = [n for n in (coro_of(f, coros) for f in s["frames"]) if n]
        if mine in parked and mine not in [c for c, _ in found]:
            found.append((mine, s))
        elif mine:
            phantom.append(mine)
    missed = [c for c in parked if c not in [m for m, _ in found]]
    ok(not missed and not phantom,
       f"{case}: every parked chain listed once, leaf first, and no phantom",
       [f"expected {parked}", f"missed {missed}", f"phantom {phantom}"])

    # Each parked or merged coroutine waits at its first co_await (the
    # source has one per coroutine): clang's __coro_index 1, "await #0";
    # without debug info the index is unknown: "suspended".
    states = [f.get("state") for _, s in found for f in s["frames"] if coro_of(f, coros)]
    states += [f.get("state") for f in data["threads"][0]["frames"]
               if coro_of(f, coros) and f["kind"] == "async"]
    want = "suspended" if variant == "clangO2g0" else "await #0"
    ok(states and all(st == want for st in states),
       f"{case}: each coroutine parked at its first co_await ({len(states)} frames)", str(states))

    # Lines: each parked or merged coroutine at its co_await's line (the
    # line marked AWAIT:fn; not without debug info), and crash_now at the
    # line of its write to address 0 (clang writes no .debug_aranges).
    if variant != "clangO2g0":
        want_line = await_lines(src)
        got = [(coro_of(f, coros), f.get("line")) for _, s in found for f in s["frames"]
               if coro_of(f, coros)]
        got += [(coro_of(f, coros), f.get("line")) for f in data["threads"][0]["frames"]
                if coro_of(f, coros) and f["kind"] == "async"]
        ok(got and all(ln == want_line.get(n) for n, ln in got),
           f"{case}: each suspended coroutine is at its co_await's line ({len(got)} frames)",
           [f"expected {want_line}", f"got {got}"])
        crash = [n for n, l in enumerate(open(src).read().splitlines(), 1)
                 if "*(volatile int *)nullptr" in l]
        top = data["threads"][0]["frames"][0]
        ok(len(crash) == 1 and top.get("line") == crash[0] and
           (top.get("file") or "").endswith("cxx_task.cc"),
           f"{case}: crash_now at its write to address 0, cxx_task.cc:{crash}",
           f"{top.get('file')}:{top.get('line')}")

    th = data["threads"][0]
    names = [f.get("function") or "" for f in th["frames"]]
    seq = [n for n in (coro_of(f, coros) for f in th["frames"]) if n]
    i_main = next((i for i, n in enumerate(names) if n == "main"), None)
    i_sync = next((i for i, n in enumerate(names) if "sync_wait" in n), None)
    ok(names and names[0].startswith("crash_now") and seq == crashed and
       i_sync is not None and i_main is not None and i_sync < i_main,
       f"{case}: crashed thread reads crash_now, {' < '.join(crashed)} once each, "
       "then sync_wait and main", [f"{f['kind']} {f.get('function')}" for f in th["frames"]][:16])

    if not shutil.which("gdb"):
        skip(f"{case}: gdb confirms the frames", "gdb not installed")
        return
    chains = [[f["object"] for f in s["frames"] if coro_of(f, coros)] for _, s in found]
    chains.append([f["object"] for f in th["frames"] if coro_of(f, coros) and f.get("object")])
    objs = [(coro_of(f, coros), f["object"]) for _, s in found for f in s["frames"]
            if coro_of(f, coros)]
    objs += [(coro_of(f, coros), f["object"]) for f in th["frames"]
             if coro_of(f, coros) and f.get("object")]
    out = gdb(exe, core, [f"info symbol *(long *){o}" for _, o in objs])
    lines = [l for l in out.splitlines() if " in section " in l]
    ok(objs and len(lines) == len(objs) and all(re.match(rf"(_ZL{len(n)}{n}i\.resume|{n}\(int\) \[clone \.resume\]) in section", l)
                                       for (n, _), l in zip(objs, lines)),
       f"{case}: gdb: every reported frame starts with its coroutine's .resume",
       [str(objs)] + lines)
    pairs = [(c[i], c[i + 1]) for c in chains for i in range(len(c) - 1)]
    out = gdb(exe, core, [f"x/gx {int(child, 0) + 16}" for child, _ in pairs])
    vals = [int(l.split(":")[1].split()[0], 16) for l in out.splitlines()
            if l.startswith("0x") and ":" in l]
    ok(pairs and vals == [int(p, 0) for _, p in pairs],
       f"{case}: gdb: each link is the child's continuation ({len(pairs)} links)",
       [str(pairs), str(vals)])


for v in BUILDS:
    check(v)
done()
