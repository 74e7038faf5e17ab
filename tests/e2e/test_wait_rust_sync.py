#!/usr/bin/env python3
"""Rust std::sync's RwLock and Condvar, and parking_lot's Mutex and RwLock,
in a hang (issue 50).

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
corpus/parking_lot_waits (a cargo crate on Debian's parking_lot 0.12) the
same way: a parked thread sleeps on its own ThreadParker word, not the lock:
- mutex: "holder" locks M and sleeps, two waiters park on M: both wait for
  M itself (the oracle's address), no owner (parking_lot records none); gdb
  reads M's state byte as LOCKED|PARKED (3);
- rwlock: "reader" holds L shared and sleeps, "writer" has taken WRITER_BIT
  and parks until the readers leave: it waits to write L, held by 1 reader
  (the count parking_lot keeps; gdb reads L's word as ONE_READER | WRITER |
  WRITER_PARKED, 0x1a);
- condvar: two threads wait on one Condvar (the key they parked on), no
  owner.
No other thread waits and no deadlock is reported.
"""
import re
import subprocess
import os

from coreq_test import (CORPUS, coreq, coreq_json, done, ok, read_expect, rust_skipped,
                        sanitizer_report, skip)

CASES = [("rust_waits", "rwlock"), ("rust_waits", "condvar"), ("parking_lot_waits", "mutex"),
         ("parking_lot_waits", "rwlock"), ("parking_lot_waits", "condvar")]
VARIANTS = ["O0", "O2"]
# kind in the oracle -> (kind, access, owner, count, rust_std) coreq must give.
KINDS = {"rust-rwlock-write": ("rwlock", "write", "none", None, True),
         "rust-rwlock-read": ("rwlock", "read", "none", None, True),
         "rust-condvar": ("condvar", None, "none", None, True),
         "parking-mutex": ("mutex", None, "none", None, False),
         "parking-rwlock-write": ("rwlock", "write", "readers", 1, False),
         "parking-condvar": ("condvar", None, "none", None, False)}
# parking_lot's lock state as gdb reads it: (C type, value).
PARKING_STATE = {"parking-mutex": ("unsigned char", 3), "parking-rwlock-write": ("unsigned long", 0x1a)}


def gdb_value(exe, core, ctype, addr):
    r = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off", "-ex",
                        f"print/d *({ctype} *){addr:#x}", exe, core],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"^\$\d+ = (-?\d+)", r.stdout, re.M)
    return int(m.group(1)) if m else None


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
    for prog, shape in CASES:
        for v in VARIANTS:
            name = f"{prog}-{shape}.{v}"
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
            exe = read_expect(os.path.join(d, "expect"))["exe"]
            for tid, (kind, addr, size) in sorted(o["waits"].items()):
                w = waits.get(tid, {})
                obj = int(w.get("object", "0x0"), 16)
                k, access, owner, count, rust = KINDS[kind]
                ok((w.get("kind"), w.get("access"), w.get("owner"), w.get("count"),
                    w.get("rust_std")) == (k, access, owner, count, rust)
                   and addr <= obj < addr + size and w.get("owner_tid") is None,
                   f"{name}: thread {tid} waits on the {k} at {hex(addr)}, owner {owner}"
                   f"{f' ({count})' if count else ''}", w)
                if kind in PARKING_STATE:
                    ctype, want = PARKING_STATE[kind]
                    ok(gdb_value(exe, core, ctype, addr) == want,
                       f"{name}: gdb reads the {k}'s state as {want:#x}")
            objs = {w.get("object") for w in waits.values()}
            ends = j.get("waited_for", [])
            ok(len(objs) == 1 and len(ends) == 1 and ends[0].get("object") in objs
               and ends[0].get("tid") is None and ends[0].get("waiters") == len(o["waits"]),
               f"{name}: one object, one chain end, no owner", [objs, ends])
            ok(j.get("deadlocks", []) == [], f"{name}: no deadlock", j.get("deadlocks"))
            text = coreq("stack", core, "--no-cache").stdout.splitlines()
            obj = next(iter(objs)) if objs else "?"
            want = {
                ("rust_waits", "rwlock"): f"waiting: 2 threads wait to read or write rwlock {obj} "
                                          "(Rust std::sync::RwLock: no owner recorded)",
                ("rust_waits", "condvar"): f"waiting: 2 threads wait on condvar {obj} "
                                           "(a condvar has no owner)",
                ("parking_lot_waits", "mutex"): f"waiting: 2 threads wait for mutex {obj} "
                                                "(parking_lot::Mutex: no owner recorded)",
                ("parking_lot_waits", "condvar"): f"waiting: 2 threads wait on condvar {obj} "
                                                  "(a condvar has no owner)",
                ("parking_lot_waits", "rwlock"): f"hung: thread {next(iter(o['waits']), 0)} waits "
                                                 f"to write rwlock {obj} held by 1 reader "
                                                 "(readers are not recorded)",
            }[(prog, shape)]
            ok(want in text and not any(ln.startswith(("deadlock", "possible deadlock"))
                                        for ln in text),
               f"{name}: the summary says {want!r}", text[:4])
            for tid in o["holds"]:
                ok(tid not in waits, f"{name}: the reader {tid}, asleep, waits on nothing")
    done()


main()
