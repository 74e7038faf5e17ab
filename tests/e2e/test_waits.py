#!/usr/bin/env python3
"""Who waits for whom: coreq's wait-for graph against what each hung program
says it did, and against gdb.

The corpus program deadlock (corpus/deadlock.c) hangs in five shapes (an ABBA
deadlock, a three-thread cycle, a chain of waits ending at a thread blocked in
read(), a recursive mutex held twice while another thread waits, an rwlock
writer behind a reader), at O0 and O2 (and deadlock_cxx, the ABBA shape on
two std::mutex through std::lock_guard), and is killed with SIGABRT from
another process once every worker is blocked.  Before that it writes its own
account to `oracle` beside the core: each worker's tid, which locks it holds
(and how many times), which lock it waits for, and the verdict (a deadlock,
or the tid everyone waits for).  Expected values come from that file alone:

- every waiting thread has exactly one wait, on the object the oracle names,
  held by the thread the oracle says holds it (an rwlock held by readers: no
  owner, and the reader count); no other thread has a wait;
- a deadlock verdict is one cycle of exactly the waiting threads, each waiting
  for an object the next one holds; a hang verdict has no cycle and the
  awaited thread first, with every waiter behind it and blocked in read();
- the text summary, each blocked thread's line, `info` and `--format dot`
  say the same;
- gdb, printing ((pthread_mutex_t *)ADDR)->__data.__owner (and the rwlock's
  __cur_writer and reader count) from the core, agrees with the owners.
"""
import os
import re
import subprocess

from coreq_test import CORPUS, coreq, coreq_json, done, ok, read_expect, sanitizer_report
from waits_common import read_oracle

SHAPES = ["abba", "cycle3", "chain", "recursive", "rwlock"]
VARIANTS = ["O0", "O2"]


def gdb_print(exe, core, exprs):
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for e in exprs:
        args += ["-ex", f"print {e}"]
    r = subprocess.run(args + [exe, core], capture_output=True, text=True, timeout=120)
    return [int(m) for m in re.findall(r"^\$\d+ = (-?\d+)", r.stdout, re.M)]


def check_case(name, d):
    core = os.path.join(d, "core")
    o = read_oracle(os.path.join(d, "oracle"), holds_detail=True, verdict_words=True)
    exe = read_expect(os.path.join(d, "expect"))["exe"]
    j, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
    waits = {w["tid"]: w for w in j.get("waits", [])}
    ok(set(waits) == set(o["waits"]), f"{name}: the waiting threads are the oracle's",
       [f"coreq {sorted(waits)}", f"oracle {sorted(o['waits'])}"])
    for tid, (kind, addr) in sorted(o["waits"].items()):
        w = waits.get(tid)
        holder, hkind, times = o["holds"][addr]
        want = {"kind": kind, "object": hex(addr)}
        if kind == "mutex":
            want.update(owner="thread", owner_tid=holder)
            if times > 1:
                want["count"] = times
        else:  # an rwlock held by readers: no owner, only a count
            want.update(owner="readers", owner_tid=None, count=times, access="write")
        got = {k: w.get(k) for k in want} if w else None
        ok(got == want, f"{name}: thread {tid} waits for {kind} {hex(addr)} held by "
           f"{holder if kind == 'mutex' else 'readers'}", [f"want {want}", f"got  {got}"])
    verdict = o["verdict"]
    dls = j.get("deadlocks", [])
    text = coreq("stack", core, "--no-cache").stdout
    if verdict[0] == "deadlock":
        ok(len(dls) == 1 and set(dls[0]["tids"]) == set(o["waits"]),
           f"{name}: one deadlock of the waiting threads", dls)
        cyc = dls[0]["tids"] if dls else []
        ring = all(o["holds"][waits[t]["object"] and int(waits[t]["object"], 16)][0] ==
                   cyc[(i + 1) % len(cyc)] for i, t in enumerate(cyc)) if cyc else False
        ok(ring, f"{name}: each thread of the cycle waits for what the next holds", cyc)
        line = next((ln for ln in text.splitlines() if ln.startswith("deadlock: ")), "")
        parts = [f"thread {t} waits for mutex {hex(o['waits'][t][1])} (held by "
                 f"{o['holds'][o['waits'][t][1]][0]})" for t in cyc]
        ok(line == "deadlock: " + "; ".join(parts), f"{name}: the text summary names the cycle",
           [line])
    else:
        ok(dls == [], f"{name}: no deadlock", dls)
        first = j.get("waited_for", [{}])[0] if j.get("waited_for") else {}
        if verdict[0] == "hang":
            t = int(verdict[1])
            ok(first.get("tid") == t and first.get("waiters") == len(o["waits"]) and
               first.get("syscall") == o["blocked"].get(t),
               f"{name}: everyone waits for thread {t}, blocked in read()", first)
            # From the program's record: who waits on a lock t holds, and who behind them.
            direct = sorted(w for w, (_, a) in o["waits"].items() if o["holds"][a][0] == t)
            behind = len(o["waits"]) - len(direct)
            who = f"thread {direct[0]} waits" if len(direct) == 1 else f"{len(direct)} threads wait"
            want = f"hung: {who} for thread {t}, blocked in read()"
            if behind:
                want += (f"; {behind} more thread{'s' if behind > 1 else ''} "
                         f"wait{'' if behind > 1 else 's'} behind {'it' if len(direct) == 1 else 'them'}")
            ok(want in text.splitlines(), f"{name}: the text summary names thread {t}: {want}",
               text.splitlines()[:4])
        else:
            addr = next(iter(o["waits"].values()))[1]
            ok(first.get("tid") is None and first.get("object") == hex(addr),
               f"{name}: the chain ends at the rwlock (readers unknown)", first)
    for tid, (kind, addr) in o["waits"].items():
        holder = o["holds"][addr][0]
        want = (f"waits for mutex {hex(addr)} held by thread {holder}" if kind == "mutex"
                else f"waits to write rwlock {hex(addr)} held by {o['holds'][addr][2]} reader")
        block = text.split(f"Thread {tid}:\n", 1)
        ok(len(block) == 2 and block[1].splitlines()[0].strip().startswith(want),
           f"{name}: thread {tid}'s line says what it waits for", [want] + block[-1].splitlines()[:1])
    info = coreq("info", core).stdout
    ok(("deadlock: " in info) == (verdict[0] == "deadlock") and
       ("hung: " in info) == (verdict[0] != "deadlock"), f"{name}: info shows the summary",
       info.splitlines()[:14])
    dot = coreq("stack", core, "--format", "dot", "--no-cache").stdout
    ok(dot.startswith("digraph") and all(
        f"t{t} -> {k}_{a:x}" in dot for t, (k, a) in o["waits"].items()),
       f"{name}: the DOT graph has every wait edge", dot.splitlines()[:12])
    # gdb reads the owners from the same core.
    exprs, want = [], []
    for addr, (holder, kind, times) in sorted(o["holds"].items()):
        if kind == "mutex":
            exprs += [f"((pthread_mutex_t *){addr:#x})->__data.__owner",
                      f"((pthread_mutex_t *){addr:#x})->__data.__count"]
            want += [holder, times if times > 1 else None]
        else:
            exprs += [f"((pthread_rwlock_t *){addr:#x})->__data.__cur_writer",
                      f"((pthread_rwlock_t *){addr:#x})->__data.__readers >> 3"]
            want += [0, times]
    got = gdb_print(exe, core, exprs)
    got = [None if w is None else g for g, w in zip(got, want)]
    ok(got == want, f"{name}: gdb reads the same owners from the core", [f"want {want}", f"got {got}"])


def main():
    for shape in SHAPES:
        for v in VARIANTS:
            name = f"deadlock-{shape}.{v}"
            d = os.path.join(CORPUS, "cores", name)
            if not ok(os.path.isfile(os.path.join(d, "oracle")),
                      f"{name}: core and oracle exist",
                      f"no {d}/oracle: run corpus/make-cores {CORPUS} {name}"):
                continue
            check_case(name, d)
    # The same ABBA through C++: std::mutex and std::lock_guard (corpus/deadlock_cxx.cc).
    for v in VARIANTS:
        name = f"deadlock_cxx-abba.{v}"
        d = os.path.join(CORPUS, "cores", name)
        if ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
              f"no {d}/oracle: run corpus/make-cores {CORPUS} {name}"):
            check_case(name, d)
    done()


main()
