#!/usr/bin/env python3
"""Who waits for whom in Rust: an ABBA deadlock on two std::sync::Mutex
(corpus/rust_deadlock.rs, at O0 and O2), killed with SIGABRT from another
process once both workers are blocked.

Rust's std Mutex on Linux is a futex word (0 unlocked, 1 locked, 2 locked
with waiters) and a poison flag: it records no owner.  What coreq can
honestly say is that both workers wait on a Rust mutex, at the address of
the Mutex the program says each waits for, owner not recorded, and no cycle.
Expected values come from the program's oracle (each worker's tid, the
address and size of each Mutex, which one it holds and which it waits for)
and from gdb reading the futex words from the same core:

- exactly the two workers wait, each on a futex word inside the Mutex the
  oracle says it waits for: kind mutex, owner none, rust_std;
- no deadlock is claimed and no owner tid is given (a phantom edge would be
  a guess);
- each worker's line says `(Rust std::sync::Mutex: no owner recorded)`;
- gdb reads both futex words as 2 (locked, with a waiter).
"""
import os
import re
import subprocess

from coreq_test import CORPUS, ROOT, coreq, coreq_json, done, ok, read_expect, sanitizer_report, skip

VARIANTS = ["O0", "O2"]


def read_oracle(path):
    o = {"holds": {}, "waits": {}, "size": 0, "verdict": None}
    for line in open(path):
        f = line.split()
        if f[0] == "holds":
            o["holds"][int(f[3], 16)] = int(f[1])
            o["size"] = int(f[4])
        elif f[0] == "waits":
            o["waits"][int(f[1])] = int(f[3], 16)
        elif f[0] == "verdict":
            o["verdict"] = f[1]
    return o


def check(name, d):
    core = os.path.join(d, "core")
    o = read_oracle(os.path.join(d, "oracle"))
    exe = read_expect(os.path.join(d, "expect"))["exe"]
    ok(o["verdict"] == "deadlock" and len(o["waits"]) == 2 and o["size"] > 0,
       f"{name}: the program says two threads deadlocked ABBA", o)
    j, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
    waits = {w["tid"]: w for w in j.get("waits", [])}
    ok(set(waits) == set(o["waits"]), f"{name}: exactly the two workers wait",
       [sorted(waits), sorted(o["waits"])])
    for tid, addr in sorted(o["waits"].items()):
        w = waits.get(tid) or {}
        obj = int(w.get("object") or "0", 16)
        ok(w.get("kind") == "mutex" and w.get("rust_std") is True and w.get("owner") == "none"
           and w.get("owner_tid") is None and addr <= obj < addr + o["size"],
           f"{name}: thread {tid} waits on the Rust Mutex at {hex(addr)}, owner not recorded", w)
    ok(j.get("deadlocks") == [], f"{name}: no cycle is claimed (no owner is recorded)",
       j.get("deadlocks"))
    text = coreq("stack", core, "--no-cache").stdout
    for tid in o["waits"]:
        block = text.split(f"Thread {tid}:\n", 1)
        ok(len(block) == 2 and "(Rust std::sync::Mutex: no owner recorded)" in block[1].splitlines()[0],
           f"{name}: thread {tid}'s line says Rust's Mutex records no owner", block[-1].splitlines()[:1])
    lines = text.splitlines()
    ok(not any(ln.startswith(("hung:", "deadlock:")) for ln in lines)
       and not any("held by" in ln for ln in lines if not ln.startswith("#")),
       f"{name}: no owner and no verdict is invented", lines[:4])
    words = [w["object"] for w in waits.values() if w.get("object")]
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for a in words:
        args += ["-ex", f"print *(unsigned int *){a}"]
    g = subprocess.run(args + [exe, core], capture_output=True, text=True, timeout=120)
    vals = [int(m) for m in re.findall(r"^\$\d+ = (-?\d+)", g.stdout, re.M)]
    ok(len(words) == 2 and vals == [2, 2], f"{name}: gdb reads both futex words as 2 (locked, contended)",
       [words, vals])


def main():
    r = subprocess.run([os.path.join(ROOT, "corpus", "rustc-path")], capture_output=True, text=True)
    if not r.stdout.strip():
        skip("Rust std::sync::Mutex waits", "rustc not found (PATH, ~/.cargo/bin): corpus/rust_deadlock.rs not built")
        done()
    for v in VARIANTS:
        name = f"rust_deadlock.{v}"
        d = os.path.join(CORPUS, "cores", name)
        if ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
              f"no {d}/oracle: run corpus/make-cores {CORPUS} {name} (needs rustc)"):
            check(name, d)
    done()


main()
