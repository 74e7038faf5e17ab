#!/usr/bin/env python3
"""A task that hops to another thread behind an at-exit coroutine, in
libunifex's release shape (issue 50): corpus/cxx_exit.cc at O0 and O2g.

libunifex's schedule() puts a never-started at-exit coroutine between the
task and its awaiter (the task's continuation is the at-exit coroutine,
whose promise keeps the awaiter), and its awaiter keeps the awaited task
only as a tagged word.  Before the fix, the crashed thread's chain stopped
at mid_task and `at_exit <- outer_task` was listed as a suspended chain of
its own (a phantom, and a missed link).  Expected values come from the
program's own record (`oracle`, written in crash_now before the crash: each
coroutine's frame address, the worker's tid, the chain), never from coreq:

- the crashed thread (the worker) shows crash_now, inner_task, mid_task,
  outer_task in that order, once each (native or async); each async frame
  of these is at the oracle's frame address;
- no suspended chain is listed at all, and no frame anywhere is the at-exit
  coroutine (by function or by the oracle's address).
"""
import os

from coreq_test import CORPUS, coreq_json, done, ok, sanitizer_report


def read_oracle(path):
    o = {"frames": {}, "chain": [], "tid": None}
    for line in open(path):
        f = line.split()
        if f[0] == "frame":
            o["frames"][f[1]] = int(f[2], 16)
        elif f[0] == "thread":
            o["tid"] = int(f[1])
        elif f[0] == "chain":
            o["chain"] = f[1:]
    return o


def short(fn):
    return (fn or "").split("(")[0]


def main():
    for v in ["O0", "O2g"]:
        name = f"cxx_exit.{v}"
        d = os.path.join(CORPUS, "cores", name)
        if not ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
                  f"no {d}/oracle: run corpus/make-cores {CORPUS} {name}"):
            continue
        o = read_oracle(os.path.join(d, "oracle"))
        j, r = coreq_json("stack", os.path.join(d, "core"), "--format", "json", "--no-cache")
        ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
        crashed = next((t for t in j.get("threads", []) if t.get("crashed")), {})
        ok(crashed.get("tid") == o["tid"], f"{name}: the worker {o['tid']} crashed",
           crashed.get("tid"))
        frames = crashed.get("frames") or []
        names = [short(f["function"]) for f in frames if short(f["function"]) in o["chain"]]
        ok(names == o["chain"], f"{name}: the crashed chain is {' <- '.join(o['chain'])}, "
                                "each once, in order", names)
        bad = [(short(f["function"]), f.get("object")) for f in frames
               if f["kind"] == "async" and short(f["function"]) in o["frames"]
               and f.get("object") != hex(o["frames"][short(f["function"])])]
        ok(not bad, f"{name}: each async frame is at the coroutine's own frame address", bad)
        ok(j.get("suspended", []) == [], f"{name}: no suspended chain (the at-exit coroutine and "
                                         "outer_task are no chain of their own)",
           [[short(f["function"]) for f in s["frames"]] for s in j.get("suspended", [])])
        at_exit = hex(o["frames"]["at_exit"])
        everywhere = [f for t in j.get("threads", []) for f in (t.get("frames") or [])]
        everywhere += [f for s in j.get("suspended", []) for f in s["frames"]]
        ok(not any(short(f["function"]) == "at_exit" or f.get("object") == at_exit
                   for f in everywhere), f"{name}: the at-exit coroutine {at_exit} is in no stack")
    done()


main()
