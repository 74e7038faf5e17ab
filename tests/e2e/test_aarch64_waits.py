#!/usr/bin/env python3
"""Hang cores on aarch64 (issue 50): corpus/deadlock.c under qemu-user
(corpus/make-aarch64-cores, cases deadlock-SHAPE.VARIANT.LINK), at O0 and
O2, static and dynamic.

qemu-user leaves a thread blocked in a system call with pc just after its
svc (a kernel's core has it on the svc), x8 the call and x0 its first
argument.  The program aborts itself once every worker is blocked (nothing
outside the emulator can signal the guest) and writes its own account
(`oracle`: tids, lock addresses, who holds and waits for what) first.
Oracles, never coreq's output:
- the oracle: every wait's kind, object and owner, none more; abba one
  deadlock of both workers; chain every chain ends at the holder, blocked in
  read(); condvar both on the condvar, no owner;
- gdb-multiarch, on the static builds: each waiting thread's x8 is futex
  (98), x0 the oracle's lock, and the instruction before pc is an svc.
"""
import json
import os
import re
import subprocess

from coreq_test import CORPUS, coreq, done, ok, read_expect, sanitizer_report, skip
from waits_common import read_oracle

A64 = os.path.join(CORPUS, "aarch64")
FUTEX = 98


def expected_edges(o):
    want = {}
    for tid, (kind, addr) in o["waits"].items():
        want[tid] = (kind, addr, "none", None) if kind == "condvar" else \
            (kind, addr, "thread", o["holds"][addr])
    return want


def gdb_regs(exe, core, tids):
    """tid -> (x8, x0, the instruction before pc) as gdb-multiarch reads them."""
    cmds = []
    for n in range(1, len(tids) + 2):
        cmds += ["-ex", f"thread {n}", "-ex", "info threads", "-ex", "p/x $x8", "-ex", "p/x $x0",
                 "-ex", "x/i $pc-4"]
    out = subprocess.run(["timeout", "120", "gdb-multiarch", "-nx", "-batch", "-iex",
                          "set pagination off"] + cmds + [exe, core],
                         capture_output=True, text=True, errors="replace").stdout
    regs = {}
    for block in out.split("[Switching to thread ")[1:]:
        m = re.match(r"\d+ \(.*?LWP (\d+)\)", block)
        vals = re.findall(r"^\$\d+ = (0x[0-9a-f]+)", block, re.M)
        insn = re.search(r":\s+(svc\s+#0x0|\S+)", block.split("\n", 1)[1] if "\n" in block else "")
        if m and len(vals) >= 2:
            regs[int(m.group(1))] = (int(vals[0], 16), int(vals[1], 16),
                                     insn.group(1).split()[0] if insn else None)
    return regs


def main():
    names = sorted(n for n in (os.listdir(A64) if os.path.isdir(A64) else [])
                   if n.startswith("deadlock-"))
    if not names:
        skip("aarch64 hang cores", f"none under {A64} (corpus/make-aarch64-cores)")
        done()
    for name in names:
        d = os.path.join(A64, name)
        c = read_expect(os.path.join(d, "expect"))
        if not ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: its oracle exists"):
            continue
        o = read_oracle(os.path.join(d, "oracle"), verdict_words=True)
        core = os.path.join(d, "core")
        r = coreq("stack", "--format", "json", "--no-cache", "--exe", c["exe"], "--sysroot",
                  c["sysroot"], core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), f"{name}: coreq reads it",
           r.stderr[-800:])
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        waits = {w["tid"]: w for w in j.get("waits", [])}
        got = {t: (w["kind"], int(w["object"], 16), w["owner"], w["owner_tid"])
               for t, w in waits.items()}
        want = expected_edges(o)
        ok(got == want, f"{name}: every wait is the oracle's (kind, object, owner), none more",
           [f"want {want}", f"got  {got}"])
        dls = j.get("deadlocks", [])
        ends = j.get("waited_for", [])
        v = o["verdict"]
        if v[0] == "deadlock":
            ok(len(dls) == 1 and set(dls[0]["tids"]) == set(o["waits"])
               and dls[0].get("verdict") == "deadlock",
               f"{name}: one deadlock of the waiting threads", dls)
        elif v[0] == "hang":
            t = int(v[1])
            ok(dls == [] and ends and ends[0].get("tid") == t and ends[0].get("syscall") == "read"
               and ends[0].get("waiters") == len(o["waits"]),
               f"{name}: everyone waits for thread {t}, blocked in read()", [dls, ends])
        else:
            addr = int(v[1], 16)
            ok(dls == [] and len(ends) == 1 and ends[0].get("object") == hex(addr)
               and ends[0].get("tid") is None,
               f"{name}: every chain ends at condvar {hex(addr)}, no owner", [dls, ends])
        if c.get("link") == "static":
            regs = gdb_regs(c["exe"], core, list(o["threads"]))
            bad = {t: regs.get(t) for t, (kind, addr) in o["waits"].items()
                   if kind != "condvar" and regs.get(t) != (FUTEX, addr, "svc")}
            ok(not bad, f"{name}: gdb-multiarch: each waiter's x8 is futex, x0 its lock, "
                        "and an svc just before pc", [bad, regs])
    done()


main()
