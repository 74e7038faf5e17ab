#!/usr/bin/env python3
"""Who waits for whom in Rust: an ABBA deadlock on two std::sync::Mutex
(corpus/rust_deadlock.rs, at O0 and O2), killed with SIGABRT from another
process once both workers are blocked.

Rust's std Mutex on Linux is a futex word (0 unlocked, 1 locked, 2 locked
with waiters) and a poison flag: it records no owner.  The holder keeps a
MutexGuard (a pointer to the Mutex) on its live stack, so coreq infers the
owner: the one thread other than the waiters whose stack or registers
point to the taken Mutex (docs/hangs.md, "Owners inferred").  Expected values come
from the program's oracle (each worker's tid, the address and size of each
Mutex, which one it holds and which it waits for) and from gdb reading the
futex words from the same core:

- exactly the two workers wait, each on the Mutex the oracle says it waits
  for: kind mutex, rust_std, owner thread with owner_inferred, and the
  owner tid is the worker the oracle says holds that Mutex;
- one cycle, the two workers, on the two Mutexes (the program's cycle).  A
  Rust Mutex keeps nothing that confirms an inferred owner (a guard is a
  bare pointer, as a &Mutex in a local is), so the verdict says the cycle
  rests on unconfirmed inferences: a possible deadlock (issue 45);
- the text says `held by thread N (inferred: a reference on its stack...)`
  and the summary `possible deadlock (...): ... (held by N, inferred,
  unconfirmed)`;
- gdb reads both futex words as 2 (locked, with a waiter);
- O0 and O2 are one possible-deadlock bucket, and the stored and exported
  waits say owner inferred with the oracle's tids, possible-deadlock.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import CORPUS, ROOT, coreq, coreq_json, done, ok, read_expect, sanitizer_report, skip
from waits_common import ingest

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
        ok(w.get("kind") == "mutex" and w.get("rust_std") is True and w.get("owner") == "thread"
           and w.get("owner_inferred") is True and w.get("owner_inferred_from") == "stack"
           and w.get("owner_confirmed_by") is None
           and w.get("owner_tid") == o["holds"].get(addr) and addr <= obj < addr + o["size"],
           f"{name}: thread {tid} waits on the Rust Mutex at {hex(addr)}, held by "
           f"{o['holds'].get(addr)} (inferred)", w)
    dl = j.get("deadlocks") or []
    ok(len(dl) == 1 and sorted(dl[0].get("tids", [])) == sorted(o["waits"])
       and sorted(int(x, 16) for x in dl[0].get("objects", [])) == sorted(o["holds"])
       and dl[0].get("verdict") == "possible-deadlock",
       f"{name}: one cycle, the two workers on the two Mutexes, a possible deadlock (a Rust "
       "Mutex confirms no inferred owner)", dl)
    ok(all(w.get("deadlock") == 0 for w in waits.values()), f"{name}: both waits are on it")
    text = coreq("stack", core, "--no-cache").stdout
    for tid, addr in sorted(o["waits"].items()):
        block = text.split(f"Thread {tid}:\n", 1)
        line = block[1].splitlines()[0] if len(block) == 2 else ""
        ok(f"held by thread {o['holds'][addr]} (inferred: a reference on its stack" in line
           and line.endswith("[possible deadlock]"),
           f"{name}: thread {tid}'s line says held by {o['holds'][addr]}, inferred", line)
    lines = text.splitlines()
    summary = [ln for ln in lines if ln.startswith(("deadlock", "possible deadlock"))]
    ok(len(summary) == 1 and summary[0].startswith("possible deadlock (rests on an inferred owner")
       and summary[0].count(", inferred, unconfirmed)") == 2
       and not any(ln.startswith("hung:") for ln in lines),
       f"{name}: the summary says possible deadlock, both owners inferred, unconfirmed", lines[:4])
    words = [w["object"] for w in waits.values() if w.get("object")]
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for a in words:
        args += ["-ex", f"print *(unsigned int *){a}"]
    g = subprocess.run(args + [exe, core], capture_output=True, text=True, timeout=120)
    vals = [int(m) for m in re.findall(r"^\$\d+ = (-?\d+)", g.stdout, re.M)]
    ok(len(words) == 2 and vals == [2, 2], f"{name}: gdb reads both futex words as 2 (locked, contended)",
       [words, vals])


def buckets(dirs):
    """O0 and O2 ingested into one store: one deadlock bucket; the export's waits."""
    tmp = tempfile.mkdtemp(prefix="coreq-wait-rust-")
    atexit.register(shutil.rmtree, tmp, True)  # the databases it made
    db = os.path.join(tmp, "r.db")
    r, res = ingest(db, dirs)
    ok(r.returncode == 0, "rust_deadlock: both cores ingested", r.stderr[-500:])
    ok(len(res) == len(dirs)
       and all((x.get("signature") or "").startswith("possible deadlock: ") for x in res)
       and len({x.get("bucket_id") for x in res}) == 1 and res[0].get("bucket_id") is not None,
       "rust_deadlock: O0 and O2 are one possible-deadlock bucket", [x.get("signature") for x in res])
    r = coreq("export", "--db", db, "--type", "wait")
    got = {(w["tid"], w["owner"], w["owner_tid"], w["verdict"])
           for w in (json.loads(ln) for ln in r.stdout.splitlines() if ln.strip())}
    want = set()
    for d in dirs:
        o = read_oracle(os.path.join(d, "oracle"))
        want |= {(t, "inferred", o["holds"][a], "possible-deadlock") for t, a in o["waits"].items()}
    ok(r.returncode == 0 and got == want, "rust_deadlock: the exported waits say owner inferred, "
       "the oracle's holders, possible-deadlock", [f"want {sorted(want)}", f"got {sorted(got)}"])


def main():
    r = subprocess.run([os.path.join(ROOT, "corpus", "rustc-path")], capture_output=True, text=True)
    if not r.stdout.strip():
        skip("Rust std::sync::Mutex waits", "rustc not found (PATH, ~/.cargo/bin): corpus/rust_deadlock.rs not built")
        done()
    dirs = []
    for v in VARIANTS:
        name = f"rust_deadlock.{v}"
        d = os.path.join(CORPUS, "cores", name)
        if ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
              f"no {d}/oracle: run corpus/make-cores {CORPUS} {name} (needs rustc)"):
            check(name, d)
            dirs.append(d)
    if len(dirs) == len(VARIANTS):
        buckets(dirs)
    done()


main()
