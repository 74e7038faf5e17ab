#!/usr/bin/env python3
"""Rust futures on executors other than tokio's OwnedTasks (issue 34): every
future a program left parked is reported once, and nothing else.

The oracle is each program's own output: before it crashes it prints one
line per future it made (corpus/tokio_boxmain, corpus/smol_tasks,
corpus/async_std_tasks: async-std's SupportTaskLocals inside async-executor's
wrapper, corpus/tokio_local: tokio's current_thread runtime and LocalSets,
corpus/futures_pool: futures-executor's LocalPool, corpus/futures_threadpool:
its ThreadPool on two threads, whose tasks the `dyn Future` scan finds, the
one being polled at the crash reported running on its thread):
  BLOCK_ON fn AWAIT:tag   the future Runtime::block_on drives
  TASK fn AWAIT:tag       a task parked at the line marked `// AWAIT:tag`
  TASK fn BODY:tag        a task never polled (Unresumed at `// BODY:tag`)
  RUNNING fn              a task being polled at the crash (named only)
  DONE fn / CLOSED fn     a task completed (output held) or cancelled:
                          must not be reported (async-task: a DONE one is
                          counted in async_task_rejected as completed)
The test runs the case's binary again (no core: RLIMIT_CORE 0) to read it.

Per case: each expected future is reported (outermost frame fn, at its
marker line; RUNNING: state running); no future is reported twice (by
function and by address: the boxed block_on future is also behind a
`dyn Future` pointer, and was listed a second time as a `rust` chain);
nothing else is reported (no phantom).  A task inside an executor's wrapper
(async-executor's spawn block) is named by the program's future the wrapper
captured: never polled, at its `// BODY:` line; running, by name.  The
closing note prints a table:
case | expected | found | phantom | missed.  Known misses are listed in
KNOWN_MISSES with their reason and reported, not failed; a known miss that is found fails, so the list stays true.
"""
import os
import re
import resource
import subprocess

from coreq_test import CORPUS, ROOT, coreq, coreq_json, sanitizer_report, corpus_cases, done, ok, skip, source_markers

PROGRAMS = ("tokio_boxmain", "smol_tasks", "async_std_tasks", "tokio_local", "futures_pool",
            "futures_threadpool")
# (program, variant, kind, fn): missed for a known reason, said in the table.
KNOWN_MISSES = {}
# The state of the future block_on drives at the crash: tokio_local crashes
# in a LocalSet task that RunUntil's poll runs (the future is being polled;
# at -O2 its poll is inlined into <Pin<P> as Future>::poll over it);
# tokio_boxmain's main thread is parked in block_on while a worker crashes.
BLOCK_ON_STATE = {"tokio_local": "running", "tokio_boxmain": "idle"}
# A known miss whose task is still reported, under its executor's wrapper only:
# consumed as "unnamed" (not a phantom) when a stack in that state names no
# function of the program.
UNNAMED_STATE = {"TASK": ("scheduled", "idle"), "RUNNING": ("running",)}


def oracle(exe):
    """The program's printed lines, from a run without a core."""
    def no_core():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        p = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=60, preexec_fn=no_core)
    except subprocess.TimeoutExpired:
        return None
    out = []
    for line in p.stdout.decode(errors="replace").splitlines():
        parts = line.split()
        if parts and parts[0] in ("BLOCK_ON", "TASK", "RUNNING", "DONE", "CLOSED"):
            out.append(parts)
    return out


CRATE = None


def outer(s):
    """A reported stack's outermost frame of the program (frames are innermost
    first; an executor's wrapper around the program's future is skipped)."""
    frames = s.get("frames") or []
    for f in reversed(frames):
        if CRATE and (f.get("function") or "").startswith(CRATE + "::"):
            return f
    return frames[-1] if frames else {}


def check_case(case, program, table):
    global CRATE
    name = case["case"]
    variant = name.rsplit(".", 1)[-1]
    crate = CRATE = program
    src = os.path.join(ROOT, "corpus", program, "src", "main.rs")
    _, body, await_line = source_markers(src)
    lines = oracle(case["exe"])
    if lines is None:
        ok(False, f"{name}: the program prints its oracle", "timed out")
        return
    ok(any(l[0] in ("TASK", "BLOCK_ON") for l in lines), f"{name}: the program printed its futures",
       repr(lines))
    rep, r = coreq_json("stack", "--format", "json", case["core"])
    ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr[-2000:])
    stacks = [s for s in rep["suspended"]]
    used = [False] * len(stacks)
    expected = found = missed = 0
    known = []
    for parts in lines:
        kind, fn = parts[0], f"{crate}::{parts[1]}"
        if kind in ("DONE", "CLOSED"):
            hits = [s for s in stacks if outer(s).get("function") == fn]
            ok(not hits, f"{name}: {kind.lower()} task {fn} is not reported",
               [outer(s).get("object") for s in hits])
            continue
        expected += 1
        want_line = None
        if len(parts) > 2:
            tag_kind, tag = parts[2].split(":")
            want_line = (await_line if tag_kind == "AWAIT" else body).get(tag)
        hit = None
        for i, s in enumerate(stacks):
            o = outer(s)
            if used[i] or o.get("function") != fn:
                continue
            if kind == "RUNNING" and s.get("task_state") != "running":
                continue
            if kind != "RUNNING" and o.get("line") != want_line:
                continue
            if kind == "BLOCK_ON" and s.get("kind") != "block_on":
                continue
            hit = i
            break
        if hit is None:
            why = KNOWN_MISSES.get((program, variant, kind, parts[1]))
            missed += 1
            if why:
                unnamed = next((i for i, s in enumerate(stacks) if not used[i]
                                and s.get("task_state") in UNNAMED_STATE.get(kind, ())
                                and not any((f.get("function") or "").startswith(crate + "::")
                                            for f in s.get("frames") or [])), None)
                if unnamed is not None:
                    used[unnamed] = True
                    why = "found unnamed: " + why
                known.append(f"{fn}: {why}")
                skip(f"{name}: {kind.lower()} {fn} reported", why)
            else:
                ok(False, f"{name}: {kind.lower()} {fn} reported at line {want_line}",
                   [(s.get("kind"), outer(s).get("function"), outer(s).get("line"))
                    for s in stacks])
            continue
        used[hit] = True
        found += 1
        if kind == "RUNNING":  # every program crashes inside its running task
            crashed = next((t["tid"] for t in rep["threads"] if t.get("crashed")), None)
            ok(stacks[hit].get("thread") == crashed,
               f"{name}: running {fn} is on the crashing thread {crashed}", stacks[hit].get("thread"))
        if kind == "BLOCK_ON" and program in BLOCK_ON_STATE:
            ok(stacks[hit].get("task_state") == BLOCK_ON_STATE[program],
               f"{name}: block_on {fn} is {BLOCK_ON_STATE[program]}", stacks[hit].get("task_state"))
        if (program, variant, kind, parts[1]) in KNOWN_MISSES:
            ok(False, f"{name}: {kind.lower()} {fn} is listed in KNOWN_MISSES but found: remove it")
        ok(True, f"{name}: {kind.lower()} {fn} reported ({stacks[hit].get('kind')}, "
           f"{stacks[hit].get('task_state')})")
    phantoms = [(s.get("kind"), outer(s).get("function"), outer(s).get("object"))
                for i, s in enumerate(stacks) if not used[i]]
    ok(not phantoms, f"{name}: nothing else is reported (no phantom, no duplicate)", phantoms)
    addrs = [outer(s).get("object") for s in stacks]
    dups = sorted({a for a in addrs if addrs.count(a) > 1})
    ok(not dups, f"{name}: no future is reported twice (by address)", dups)
    if program in ("smol_tasks", "async_std_tasks"):
        # async-task keeps a completed task whose JoinHandle is held (its
        # output in the allocation): a candidate rejected as completed.  A
        # cancelled one may be freed already, so it is not counted here.
        rejected = rep["async"].get("async_task_rejected") or {}
        n = sum(1 for l in lines if l[0] == "DONE")
        if n:
            ok(rejected.get("completed", 0) >= n,
               f"{name}: {n} done task(s) counted as rejected completed", rejected)
    table.append((name, expected, found, len(phantoms), missed, "; ".join(known)))
    if program in TASK_LISTS:
        check_task_list(case, name, crate, lines)


# The text task list each executor's tasks are printed under.
TASK_LISTS = {"smol_tasks": "async-task tasks (smol, async-std):",
              "async_std_tasks": "async-task tasks (smol, async-std):", "tokio_local": "Tokio tasks:"}


def check_task_list(case, name, crate, lines):
    """The text task list names each task by the program's future (FUTURE
    column), not by the executor's wrapper; a never-polled one waits on
    nothing (WAITS ON "-")."""
    r = coreq("stack", case["core"], timeout=300)
    rows, inside = {}, False
    for line in r.stdout.splitlines():
        if line == TASK_LISTS[name.split(".")[0]]:
            inside = True
            continue
        if inside and not line.strip():
            break
        parts = line.split()
        if inside and parts and parts[0] != "ID":
            rows.setdefault(parts[-1], []).append(parts)
    for parts in lines:
        if parts[0] not in ("TASK", "RUNNING"):
            continue
        fn = f"{crate}::{parts[1]}"
        got = rows.get(fn, [])
        ok(len(got) == 1, f"{name}: the task list names one task {fn}", sorted(rows))
        if got and len(parts) > 2 and parts[2].startswith("BODY:"):
            ok(got[0][3] == "-", f"{name}: never-polled {fn} waits on nothing", got[0])
        if got and parts[0] == "RUNNING":
            ok(got[0][1] == "running", f"{name}: {fn} is listed running", got[0])


def main():
    table = []
    cases = [c for c in corpus_cases() if c["case"].split(".")[0] in PROGRAMS]
    for program in PROGRAMS:
        mine = [c for c in cases if c["case"].split(".")[0] == program]
        if not mine:
            skip(f"{program} cores", f"none under {CORPUS}/cores (the crate needs its registry crates)")
        for c in mine:
            check_case(c, program, table)
    print("# case | expected | found | phantom | missed | known misses")
    for row in table:
        print("# " + " | ".join(str(x) for x in row))
    done()


main()
