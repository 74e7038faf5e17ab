#!/usr/bin/env python3
"""C++20 coroutines without an async-stack ABI (issue 33): the cxx runtime.

Cases cxx_task.O0/O2g (corpus/cxx_task.cc, a task type written from the
standard), asio_coro and boost_coro at O0/O2g/clangO0/clangO2g
(corpus/asio_coro.cc, Debian's Asio and Boost.Asio, gcc and clang 14),
asio_channel at the same four (corpus/asio_channel.cc: chains parked on an
experimental::channel's receive and send and on a busy strand) and
asio_threads.O0/O2g (corpus/asio_threads.cc: two threads, each with its own
io_context and co_spawn, one running and one parked chain each) and
cxx_hop.O0/O2g (corpus/cxx_hop.cc: the task type hopping to two worker
threads, the same coroutines running on both).  What
each must give is read from the program's source, never from coreq:
  - each `co_await NAME(` on a line marked `// AWAIT:fn` says fn awaits the
    coroutine NAME; an AWAIT line awaiting anything else (an event, a timer,
    a read) makes fn a leaf;
  - the parked chains are the leaves followed up through their awaiters; the
    crashed chain is the one that reaches the coroutine that calls crash_now.
Checks: every parked chain listed once with kind cxx, leaf first (frames
of the program's own coroutines, in order, each "await #0"); no other cxx
chain (phantom) holding a program coroutine; the crashed thread reads
crash_now, the running coroutine, each awaiting coroutine once, then the
native frames that resumed it (sync_wait / Asio's pump) out to main.  gdb
confirms each reported frame address: its first word names the coroutine's
actor, and (cxx_task) the leaf is the event's waiter and each link is the
child's promise continuation.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import CORPUS, ROOT, coreq, coreq_json, done, ok, sanitizer_report, skip

CASES = ["cxx_task.O0", "cxx_task.O2g", "asio_coro.O0", "asio_coro.O2g",
         "boost_coro.O0", "boost_coro.O2g",
         "asio_coro.clangO0", "asio_coro.clangO2g", "boost_coro.clangO0", "boost_coro.clangO2g",
         "asio_channel.O0", "asio_channel.O2g", "asio_channel.clangO0", "asio_channel.clangO2g",
         "cxx_done.O0", "cxx_done.O2g", "cxx_done.clangO0", "cxx_done.clangO2g"]
# asio_channel.cc parks four chains (two receiving from one channel, one
# sending on a full one, one posted to a strand the crash chain holds);
# the others two.
PARKED = {"asio_channel": 4}
# boost_coro.cc is asio_coro.cc's program built against Boost.Asio.
# cxx_done.cc is cxx_task.cc's program (it includes it) with libunifex's
# release shape (a never-started done coroutine per task, pointed at from
# the promises): checked as cxx_task is.
SOURCE = {"boost_coro": "asio_coro", "cxx_done": "cxx_task"}
KIND = {"cxx_done": "cxx_task"}


def await_lines(src):
    """fn -> the source line of its marked co_await (1-based)."""
    lines = {}
    for n, l in enumerate(open(src).read().splitlines(), 1):
        m = re.search(r"co_await .*// AWAIT:(\w+)$", l)
        if m:
            lines[m.group(1)] = n
    return lines


def program_structure(src, stopper="crash_now"):
    """(awaits: fn -> awaited coroutine or None for a leaf, the coroutine
    that calls stopper, coroutines)."""
    text = open(src).read()
    awaits = {}
    for m in re.finditer(r"^(.*)// AWAIT:(\w+)$", text, re.M):
        code, fn = m.group(1), m.group(2)
        callee = re.search(r"co_await (\w+)\(", code)
        awaits[fn] = callee.group(1) if callee and "." not in callee.group(1) else None
    coros = set(re.findall(r"^static (?:Task<\w+>|asio::awaitable<\w+>) (\w+)\(", text, re.M))
    crasher = None
    for fn in coros:
        body = re.search(r"^static [^\n]* " + fn + r"\([^)]*\)\n\{(.*?)^\}", text, re.M | re.S)
        if body and stopper + "(" in body.group(1):
            crasher = fn
    for fn, callee in awaits.items():
        if callee is not None and callee not in coros:
            awaits[fn] = None
    return awaits, crasher, coros


def chains_from(awaits, crasher):
    awaited_by = {c: fn for fn, c in awaits.items() if c}
    parked = []
    for fn, callee in sorted(awaits.items()):
        if callee is None:
            chain = [fn]
            while chain[-1] in awaited_by:
                chain.append(awaited_by[chain[-1]])
            parked.append(chain)
    crashed = [crasher]
    while crashed[-1] in awaited_by:
        crashed.append(awaited_by[crashed[-1]])
    return parked, crashed


# The clone suffix of the case being checked: gcc's coroutine bodies are
# NAME [clone .actor], clang's NAME [clone .resume].
CLONE = "actor"


def coro_of(frame, coros):
    """The program coroutine a frame is, by its function name, or None."""
    fn = frame.get("function") or ""
    m = re.match(r"(\w+)\(", fn)
    return m.group(1) if m and m.group(1) in coros and f"[clone .{CLONE}]" in fn else None


def gdb(exe, core, cmds):
    args = ["gdb", "-nx", "-batch", "-q", exe, core]
    for c in cmds:
        args += ["-ex", c]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return r.stdout


def check_case(case):
    d = os.path.join(CORPUS, "cores", case)
    core = os.path.join(d, "core")
    if not os.path.isfile(core):
        skip(f"{case}: cxx chains", f"no core under {d} (corpus not built with it)")
        return
    name = case.split(".")[0]
    src = os.path.join(ROOT, "corpus", SOURCE.get(name, name) + ".cc")
    prog = KIND.get(name, name)
    awaits, crasher, coros = program_structure(src)
    clang = case.split(".")[1].startswith("clang")
    global CLONE
    CLONE = "resume" if clang else "actor"
    parked, crashed = chains_from(awaits, crasher)
    nparked = PARKED.get(prog, 2)
    ok(len(parked) == nparked and len(crashed) == 3,
       f"{case}: the source names {nparked} parked chains and a crash three awaits deep",
       [str(parked), str(crashed)])
    data, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{case}: no sanitizer report", r.stderr)

    found = []
    phantom = []
    for s in data["suspended"]:
        if s["kind"] != "cxx":
            continue
        names = [coro_of(f, coros) for f in s["frames"]]
        mine = [n for n in names if n]
        if not mine:
            continue
        if mine in parked and mine not in [c for c, _ in found]:
            found.append((mine, s))
        else:
            phantom.append(mine)
    missed = [c for c in parked if c not in [m for m, _ in found]]
    ok(not missed and not phantom,
       f"{case}: every parked chain listed once, leaf first, and no phantom",
       [f"expected {parked}", f"missed {missed}", f"phantom {phantom}"])
    if case.startswith("cxx_done."):
        # The done coroutines await nothing: no chain of their own, in no
        # chain, and not on the crashed thread.
        chains = [[f.get("function") or "" for f in s["frames"]]
                  for s in data["suspended"] if s["kind"] == "cxx"]
        onthread = [f.get("function") or "" for f in data["threads"][0]["frames"]
                    if f["kind"] == "async"]
        ok(len(chains) == len(parked) and
           not any("unhandled_done" in n for n in sum(chains, []) + onthread),
           f"{case}: the never-started done coroutines are no chain and no link",
           [str(len(chains))] + [n[:80] for n in sum(chains, []) + onthread if "unhandled_done" in n])
    # Every coroutine frame is named demangled (Boost.Asio's async_result
    # frames pass libiberty's recursion limit).
    mangled = [f.get("function") for s in data["suspended"] if s["kind"] == "cxx"
               for f in s["frames"] if (f.get("function") or "").startswith("_Z")]
    ok(not mangled, f"{case}: every coroutine frame's name is demangled",
       [m[:160] for m in mangled[:3]])
    for chain, s in found:
        states = [f.get("state") for f in s["frames"] if coro_of(f, coros)]
        ok(all(st == "await #0" for st in states),
           f"{case}: {chain[0]} chain: each coroutine parked at its first co_await", str(states))
    # Await lines: each parked or merged async coroutine frame is reported
    # at its co_await's source line (the line marked AWAIT:fn), not at the
    # coroutine's first line.
    want_line = await_lines(src)
    got = [(coro_of(f, coros), f.get("file"), f.get("line"))
           for _, s in found for f in s["frames"] if coro_of(f, coros)]
    got += [(coro_of(f, coros), f.get("file"), f.get("line"))
            for f in data["threads"][0]["frames"]
            if coro_of(f, coros) and f["kind"] == "async"]
    expect = [(n, os.path.basename(src), want_line.get(n)) for n, _, _ in got]
    ok(got and [(n, os.path.basename(fl or ""), ln) for n, fl, ln in got] == expect,
       f"{case}: each suspended coroutine is at its co_await's line ({len(got)} frames)",
       [f"expected {expect}", f"got {got}"])
    if prog != "cxx_task":
        # Asio's own co_spawn_entry_point is parked at `co_await f();` (its
        # dispatch is a jump table, reached at -O2 through the even half):
        # the line is read from the installed header itself.
        spawn = [f for _, s in found for f in s["frames"]
                 if "co_spawn_entry_point" in (f.get("function") or "") and
                 (f.get("file") or "").endswith("co_spawn.hpp")]
        hdr = spawn[0]["file"] if spawn else ""
        want = [n for n, l in enumerate(open(hdr).read().splitlines(), 1)
                if l.strip() == "co_await f();"] if os.path.isfile(hdr) else []
        ok(len(spawn) == nparked and len(want) == 1 and all(f["line"] == want[0] for f in spawn),
           f"{case}: Asio's co_spawn_entry_point frames are at its `co_await f();` line",
           [f"header {hdr} line {want}", str([f.get("line") for f in spawn])])

    th = data["threads"][0]
    names = [f.get("function") or "" for f in th["frames"]]
    mine = [coro_of(f, coros) for f in th["frames"]]
    seq = [n for n in mine if n]
    i_crash = next((i for i, n in enumerate(names) if n.startswith("crash_now")), None)
    i_main = next((i for i, n in enumerate(names) if n == "main"), None)
    ok(i_crash == 0 and seq == crashed and i_main is not None and
       all(i < i_main for i, n in enumerate(mine) if n),
       f"{case}: crashed thread reads crash_now, {' < '.join(crashed)} once each, then out to main",
       [f"{f['kind']} {f.get('function')}" for f in th["frames"]][:20])
    resumer = "sync_wait" if prog == "cxx_task" else "awaitable_thread"
    last = max(i for i, n in enumerate(mine) if n) if seq else 0
    ok(any(resumer in n for n in names[last + 1:]),
       f"{case}: the native frames that resumed the chain ({resumer}) follow it", names[:12])

    if not shutil.which("gdb"):
        skip(f"{case}: gdb confirms the frames", "gdb not installed")
        return
    exe = [l.split("=", 1)[1].strip() for l in open(os.path.join(d, "expect"))
           if l.startswith("exe=")][0]
    objs = [(coro_of(f, coros), f["object"]) for _, s in found for f in s["frames"]
            if coro_of(f, coros)]
    objs += [(coro_of(f, coros), f["object"]) for f in th["frames"]
             if coro_of(f, coros) and f.get("object")]
    if clang:
        out = gdb(exe, core, [f"info symbol *(long *){o}" for _, o in objs])
        lines = [l for l in out.splitlines() if " in section " in l]
        good = len(lines) == len(objs) and all(
            l.startswith(f"{n}(") and "[clone .resume] in section" in l
            for (n, _), l in zip(objs, lines))
    else:
        out = gdb(exe, core, [f"x/a {o}" for _, o in objs])
        lines = [l for l in out.splitlines() if l.startswith("0x") and ":" in l]
        good = len(lines) == len(objs) and all(
            f"<{n}(" in l and ".Frame *)>" in l for (n, _), l in zip(objs, lines))
    ok(good, f"{case}: gdb: every reported frame starts with its coroutine's actor",
       [str(objs)] + lines)
    if prog != "cxx_task":
        check_asio_links(case, exe, core, found, th, coros)
        return
    # The event's waiter is the leaf; each promise's continuation (the
    # promise's first member, right after the two code pointers) is the parent.
    cmds = ["p/x event_a.waiter._M_fr_ptr", "p/x event_b.waiter._M_fr_ptr"]
    links = []
    for chain, s in found:
        fr = [f["object"] for f in s["frames"] if coro_of(f, coros)]
        links += [(a, b) for a, b in zip(fr, fr[1:])]
    cmds += [f"p/x *(void **)({a} + 16)" for a, _ in links]
    out = gdb(exe, core, cmds)
    vals = re.findall(r"^\$\d+ = (0x[0-9a-f]+)", out, re.M)
    leaves = sorted(int(s["frames"][0]["object"], 16) for _, s in found)
    ok(len(vals) == 2 + len(links) and sorted(int(v, 16) for v in vals[:2]) == leaves,
       f"{case}: gdb: the leaves are event_a's and event_b's waiters", [out, str(leaves)])
    ok(len(vals) == 2 + len(links) and
       all(int(v, 16) == int(b, 16) for v, (_, b) in zip(vals[2:], links)),
       f"{case}: gdb: each link is the awaited coroutine's continuation", [out, str(links)])


def check_asio_links(case, exe, core, found, th, coros):
    """gdb: in each reported chain (parked ones and the crashed thread's),
    each coroutine's promise (an awaitable_frame_base, at frame + 16) holds
    caller_, a pointer to the next coroutine's promise: the offset of
    caller_ is gdb's, from Asio's own type."""
    out = gdb(exe, core, ["info types awaitable_frame_base<"])
    types = [l.split(":", 1)[1].strip().rstrip(";") for l in out.splitlines()
             if re.match(r"^\d+:\s+(boost::)?asio::detail::awaitable_frame_base<", l)]
    if not types:
        ok(False, f"{case}: gdb knows Asio's awaitable_frame_base", out[-400:])
        return
    out = gdb(exe, core, [f"p (long)&(('{types[0]}' *)0)->caller_"])
    m = re.search(r"^\$\d+ = (\d+)", out, re.M)
    off = int(m.group(1)) if m else None
    chains = [[f["object"] for f in s["frames"] if coro_of(f, coros)] for _, s in found]
    chains.append([f["object"] for f in th["frames"]
                   if coro_of(f, coros) and f["kind"] == "async"])
    links = [(a, b) for c in chains for a, b in zip(c, c[1:])]
    out = gdb(exe, core, [f"p/x *(long *)({a} + 16 + {off})" for a, _ in links]) if off else ""
    vals = re.findall(r"^\$\d+ = (0x[0-9a-f]+)", out, re.M)
    ok(off is not None and links and len(vals) == len(links) and
       all(int(v, 16) == int(b, 16) + 16 for v, (_, b) in zip(vals, links)),
       f"{case}: gdb: each link is the awaited coroutine's caller_ ({len(links)} links)",
       [f"caller_ at +{off}", str(links), str(vals)])


def thread_chain(th, coros):
    """The program coroutines on a thread's stack, in order, and where the
    resumer (Asio's pump) and the thread's outermost program frame are."""
    return [coro_of(f, coros) for f in th["frames"] if coro_of(f, coros)]


def check_threads_case(case):
    """asio_threads: coroutines on two threads, each with its io_context;
    co_spawn called on each.  The crashed thread (main) and io-b (blocked in
    block_now inside a coroutine) each read their own running chain; the
    parked chains of both threads are listed once; no coroutine twice."""
    d = os.path.join(CORPUS, "cores", case)
    core = os.path.join(d, "core")
    if not os.path.isfile(core):
        skip(f"{case}: cxx chains on two threads", f"no core under {d} (corpus not built with it)")
        return
    src = os.path.join(ROOT, "corpus", "asio_threads.cc")
    awaits, crasher, coros = program_structure(src)
    _, blocker, _ = program_structure(src, "block_now")
    parked, crashed = chains_from(awaits, crasher)
    _, blocked = chains_from(awaits, blocker)
    ok(len(parked) == 2 and len(crashed) == 3 and len(blocked) == 2,
       f"{case}: the source names two parked chains and running chains of 3 and 2",
       [str(parked), str(crashed), str(blocked)])
    data, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{case}: no sanitizer report", r.stderr)
    lists = []
    for s in data["suspended"]:
        mine = [coro_of(f, coros) for f in s["frames"] if coro_of(f, coros)]
        if s["kind"] == "cxx" and mine:
            lists.append(mine)
    ok(sorted(lists) == sorted(parked),
       f"{case}: both threads' parked chains listed once each, leaf first, no phantom",
       [f"expected {parked}", f"got {lists}"])
    ths = data["threads"]
    names = lambda th: [f.get("function") or "" for f in th["frames"]]
    crash_th = [th for th in ths if names(th) and names(th)[0].startswith("crash_now")]
    block_th = [th for th in ths if any(n.startswith("block_now") for n in names(th))]
    ok(len(crash_th) == 1 and thread_chain(crash_th[0], coros) == crashed and
       any("awaitable_thread" in n for n in names(crash_th[0])) and "main" in names(crash_th[0]),
       f"{case}: crashed thread reads crash_now, {' < '.join(crashed)} once each, pump, main",
       [str(thread_chain(t, coros)) for t in ths])
    ok(len(block_th) == 1 and block_th[0] is not (crash_th or [None])[0] and
       thread_chain(block_th[0], coros) == blocked and
       any("awaitable_thread" in n for n in names(block_th[0])) and
       any(n.startswith("run_b") for n in names(block_th[0])),
       f"{case}: io-b reads block_now, {' < '.join(blocked)} once each, pump, run_b",
       [str(thread_chain(t, coros)) for t in ths])
    everywhere = [c for l in lists for c in l] + [c for t in ths for c in thread_chain(t, coros)]
    ok(len(everywhere) == len(set(everywhere)) and
       set(everywhere) == {c for ch in parked + [crashed, blocked] for c in ch},
       f"{case}: each program coroutine shown once in all", str(everywhere))
    want_line = await_lines(src)
    got = [(coro_of(f, coros), f.get("line")) for s in data["suspended"] for f in s["frames"]
           if coro_of(f, coros)]
    got += [(coro_of(f, coros), f.get("line")) for t in ths for f in t["frames"]
            if coro_of(f, coros) and f["kind"] == "async"]
    ok(got and all(ln == want_line.get(n) for n, ln in got),
       f"{case}: each suspended coroutine is at its co_await's line ({len(got)} frames)",
       [f"expected {[(n, want_line.get(n)) for n, _ in got]}", f"got {got}"])


def check_hop_case(case):
    """cxx_hop: the same coroutines hop to two worker threads (one crashes,
    one blocks); each worker's stack reads its own chain, frames distinct;
    the parked chain listed once; gdb names worker 2's outer frame."""
    d = os.path.join(CORPUS, "cores", case)
    core = os.path.join(d, "core")
    if not os.path.isfile(core):
        skip(f"{case}: cxx chains after a thread hop", f"no core under {d} (corpus not built with it)")
        return
    src = os.path.join(ROOT, "corpus", "cxx_hop.cc")
    awaits, crasher, coros = program_structure(src)
    _, blocker, _ = program_structure(src, "block_now")
    parked, running = chains_from(awaits, crasher)
    ok(crasher == blocker and len(parked) == 1 and len(running) == 3,
       f"{case}: the source names one parked chain and a running chain of 3 on each worker",
       [str(parked), str(running), str(blocker)])
    data, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{case}: no sanitizer report", r.stderr)
    lists = [[coro_of(f, coros) for f in s["frames"] if coro_of(f, coros)]
             for s in data["suspended"] if s["kind"] == "cxx"]
    lists = [l for l in lists if l]
    ok(lists == parked, f"{case}: the parked chain listed once, leaf first, no phantom",
       [f"expected {parked}", f"got {lists}"])
    ths = data["threads"]
    names = lambda th: [f.get("function") or "" for f in th["frames"]]
    objs = {}
    for stop in ("crash_now", "block_now"):
        th = [t for t in ths if any(n.startswith(stop) for n in names(t))]
        ok(len(th) == 1 and thread_chain(th[0], coros) == running and
           any(n.startswith("Worker::run") for n in names(th[0])[names(th[0]).index(
               next(n for n in names(th[0]) if n.startswith(stop))):]),
           f"{case}: the worker in {stop} reads {' < '.join(running)} once each, then Worker::run",
           [str(thread_chain(t, coros)) for t in ths])
        if th:
            objs[stop] = [f.get("object") for f in th[0]["frames"]
                          if coro_of(f, coros) and f["kind"] == "async"]
    allobj = [o for v in objs.values() for o in v]
    ok(len(allobj) == 4 and len(set(allobj)) == 4,
       f"{case}: the two workers' async frames are four distinct frames", str(objs))
    main_th = [t for t in ths if "main" in names(t)]
    ok(len(main_th) == 1 and not thread_chain(main_th[0], coros),
       f"{case}: main (in sync_wait) shows no coroutine of the workers", names(main_th[0])[:10]
       if main_th else "no main thread")
    want_line = await_lines(src)
    got = [(coro_of(f, coros), f.get("line")) for s in data["suspended"] for f in s["frames"]
           if coro_of(f, coros)]
    got += [(coro_of(f, coros), f.get("line")) for t in ths for f in t["frames"]
            if coro_of(f, coros) and f["kind"] == "async"]
    ok(got and all(ln == want_line.get(n) for n, ln in got),
       f"{case}: each suspended coroutine is at its co_await's line ({len(got)} frames)",
       [f"expected {[(n, want_line.get(n)) for n, _ in got]}", f"got {got}"])
    if not shutil.which("gdb") or "block_now" not in objs:
        skip(f"{case}: gdb confirms worker 2's chain", "gdb not installed or no chain")
        return
    exe = [l.split("=", 1)[1].strip() for l in open(os.path.join(d, "expect"))
           if l.startswith("exe=")][0]
    out = gdb(exe, core, ["p/x 'main::chain_2'.handle._M_fr_ptr", "p/x event_b.waiter._M_fr_ptr"])
    vals = re.findall(r"^\$\d+ = (0x[0-9a-f]+)", out, re.M)
    leaf = [s["frames"][0].get("object") for s in data["suspended"] if s["kind"] == "cxx"]
    ok(len(vals) == 2 and objs["block_now"] and int(objs["block_now"][-1], 16) == int(vals[0], 16)
       and leaf and int(leaf[0], 16) == int(vals[1], 16),
       f"{case}: gdb: worker 2's outer frame is chain_2's, the parked leaf is event_b's waiter",
       [out, str(objs), str(leaf)])


def check_cache(case):
    """The coroutine types of every module come from the cache on a second
    run (cxx_modules_cached), and the output is --no-cache's; a damaged row
    is rejected, rebuilt, and the output is the same."""
    d = os.path.join(CORPUS, "cores", case)
    core = os.path.join(d, "core")
    if not os.path.isfile(core):
        skip(f"{case}: coroutine types from the cache", f"no core under {d}")
        return
    work = tempfile.mkdtemp(prefix="coreq-cxx-cache-")
    db = os.path.join(work, "cache.db")
    try:
        want = coreq("stack", "--no-cache", core).stdout
        runs = []
        for _ in range(2):
            data, _ = coreq_json("stack", "--format", "json", "--cache", db, core)
            runs.append(data["async"])
        text = coreq("stack", "--cache", db, core).stdout
        ok(runs[0]["cxx_modules_cached"] == 0 and runs[1]["cxx_modules_cached"] > 0 and
           runs[1]["cxx_coroutines"] == runs[0]["cxx_coroutines"] and text == want,
           f"{case}: coroutine types from the cache on the second run, same output",
           [str({k: r[k] for k in ("cxx_modules_cached", "cxx_coroutines")}) for r in runs])
        con = sqlite3.connect(db)
        rows = con.execute("SELECT source, blob FROM runtime_blobs WHERE runtime = 'cxx' AND name = 'types' "
                           "AND length(blob) > 9").fetchall()
        for src, blob in rows:
            b = bytearray(blob)
            b[len(b) // 2] ^= 0x40
            con.execute("UPDATE runtime_blobs SET blob = ? WHERE source = ? AND runtime = 'cxx' "
                        "AND name = 'types'", (bytes(b), src))
        con.commit()
        con.close()
        r = coreq("stack", "--cache", db, core)
        data, _ = coreq_json("stack", "--format", "json", "--cache", db, core)
        ok(rows and r.stdout == want and
           data["async"]["cxx_modules_cached"] == runs[1]["cxx_modules_cached"],
           f"{case}: a damaged row is rejected and rebuilt ({len(rows)} rows)",
           [r.stderr[-300:], str(data["async"]["cxx_modules_cached"])])
    finally:
        shutil.rmtree(work)


def main():
    global CLONE
    for case in CASES:
        check_case(case)
    CLONE = "actor"
    for case in ["asio_threads.O0", "asio_threads.O2g"]:
        check_threads_case(case)
    for case in ["cxx_hop.O0", "cxx_hop.O2g"]:
        check_hop_case(case)
    for case in ["cxx_task.O2g", "asio_channel.clangO0"]:
        check_cache(case)
    done()


if __name__ == "__main__":
    main()
