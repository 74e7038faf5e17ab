#!/usr/bin/env python3
"""Rust std::sync's RwLock and Condvar in a hang (issue 50).

corpus/rust_waits.rs hangs in two shapes at O0 and O2 and is killed with
SIGABRT once every waiter is blocked in futex; before that it writes its own
account (`oracle`: tids, roles, the RwLock's and the Condvar's addresses and
sizes) beside the core.  Expected values come from that file, never from
coreq:

- rwlock: "reader" holds the RwLock shared and sleeps (no futex: no wait);
  "writer" waits to write it (its futex is the lock's writer_notify word),
  "late-reader" waits to read it (its state word).  Both waits are on the
  one RwLock (one object, inside the oracle's bytes), Rust's, with no owner
  (Rust records none: coreq must not invent one), and one chain end: the
  summary says `waiting:`, to read or write, no owner recorded;
- condvar: "cv-0" and "cv-1" wait on one Condvar: no owner, one end.
No other thread waits and no deadlock is reported.
"""
import os

from coreq_test import CORPUS, coreq, coreq_json, done, ok, rust_skipped, sanitizer_report, skip

SHAPES = ["rwlock", "condvar"]
VARIANTS = ["O0", "O2"]


def read_oracle(path):
    o = {"threads": {}, "holds": {}, "waits": {}}
    for line in open(path):
        f = line.split()
        if f[0] == "thread":
            o["threads"][int(f[1])] = f[2]
        elif f[0] == "holds":
            o["holds"][int(f[1])] = (int(f[3], 16), int(f[4]))
        elif f[0] == "waits":
            o["waits"][int(f[1])] = (f[2], int(f[3], 16), int(f[4]))
    return o


def main():
    for shape in SHAPES:
        for v in VARIANTS:
            name = f"rust_waits-{shape}.{v}"
            d = os.path.join(CORPUS, "cores", name)
            why = rust_skipped(name)
            if why:
                skip(name, why)
                continue
            if not ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
                      f"no {d}/oracle: run corpus/make-cores {CORPUS} {name}"):
                continue
            o = read_oracle(os.path.join(d, "oracle"))
            core = os.path.join(d, "core")
            j, r = coreq_json("stack", core, "--format", "json", "--no-cache")
            ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
            waits = {w["tid"]: w for w in j.get("waits", [])}
            ok(set(waits) == set(o["waits"]), f"{name}: the oracle's waiters wait, no other thread",
               [sorted(waits), sorted(o["waits"])])
            kinds = {"rust-rwlock-write": ("rwlock", "write"), "rust-rwlock-read": ("rwlock", "read"),
                     "rust-condvar": ("condvar", None)}
            for tid, (kind, addr, size) in sorted(o["waits"].items()):
                w = waits.get(tid, {})
                obj = int(w.get("object", "0x0"), 16)
                ok((w.get("kind"), w.get("access")) == kinds[kind] and w.get("rust_std")
                   and addr <= obj < addr + size and w.get("owner") == "none"
                   and w.get("owner_tid") is None,
                   f"{name}: thread {tid} waits on the {kind.split('-', 1)[1]} at {hex(addr)} "
                   "(Rust's, no owner)", w)
            objs = {w.get("object") for w in waits.values()}
            ends = j.get("waited_for", [])
            ok(len(objs) == 1 and len(ends) == 1 and ends[0].get("object") in objs
               and ends[0].get("tid") is None and ends[0].get("waiters") == len(o["waits"]),
               f"{name}: one object, one chain end, no owner", [objs, ends])
            ok(j.get("deadlocks", []) == [], f"{name}: no deadlock", j.get("deadlocks"))
            text = coreq("stack", core, "--no-cache").stdout.splitlines()
            obj = next(iter(objs)) if objs else "?"
            want = (f"waiting: 2 threads wait to read or write rwlock {obj} (Rust std::sync::RwLock: "
                    "no owner recorded)" if shape == "rwlock" else
                    f"waiting: 2 threads wait on condvar {obj} (a condvar has no owner)")
            ok(want in text and not any(ln.startswith("hung:") for ln in text),
               f"{name}: the summary says {want!r}", text[:4])
            for tid in o["holds"]:
                ok(tid not in waits, f"{name}: the reader {tid}, asleep, waits on nothing")
    done()


main()
