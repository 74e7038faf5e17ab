#!/usr/bin/env python3
"""Hang buckets: `coreq ingest` files a hung core by why it hung, stores its
wait-for graph (table waits), and `coreq buckets` marks deadlock buckets.

The corpus program deadlock (corpus/deadlock.c) hangs in its shapes at O0 and
O2 (separate runs: other tids, other addresses) and writes its own account to
`oracle` beside the core.  Expected values come from that file and from the
program's source:

- abba and cycle3: every worker calls take(), which calls
  pthread_mutex_lock; so a deadlock's signature is "deadlock: mutex take"
  once per thread of the cycle (2 for abba, 3 for cycle3), the same at O0 and
  O2 (one bucket each), and abba and cycle3 are two buckets;
- the C++ ABBA (corpus/deadlock_cxx.cc): lock_ab() and lock_ba() take two
  std::mutex through std::lock_guard, std::mutex::lock and
  __gthread_mutex_lock, which are not the program's frames: the signature is
  "deadlock: mutex lock_ab | mutex lock_ba", at O0 (where the std::thread
  lambda has a frame) and O2 (where it has none) alike; its stored waits are
  its oracle's;
- chain and recursive: no cycle; the thread everyone waits for (the oracle's
  verdict) sits in block_in_read() called from chain_worker (resp.
  recursive_worker), blocked in read(): the signature is
  "hang: in read() from block_in_read < chain_worker" (resp.
  recursive_worker), one bucket
  for O0 and O2, two buckets for the two shapes;
- the stored waits are the oracle's: each waiting tid, the object and its
  holder, on a deadlock (rows with a deadlock number) exactly for abba and
  cycle3;
- `coreq buckets` marks the deadlock buckets (kind "deadlock" in JSON, a
  "deadlock bucket" line in text), `coreq merge` copies the stored waits and
  the marked buckets, and `coreq rebucket` leaves them.
"""
import atexit
import json
import os
import sqlite3
import shutil
import tempfile

from coreq_test import CORPUS, coreq, done, ok
from waits_common import read_oracle

CASES = {  # shape: (kind, signature prefix, frames the signature must name)
    "abba": ("deadlock", "deadlock: " + " | ".join(["mutex take"] * 2), None),
    "cycle3": ("deadlock", "deadlock: " + " | ".join(["mutex take"] * 3), None),
    "chain": ("hang", "hang: in read() from block_in_read < chain_worker", None),
    "recursive": ("hang", "hang: in read() from block_in_read < recursive_worker", None),
}
CXX = {"deadlock_cxx-abba": "deadlock: mutex lock_ab | mutex lock_ba"}
VARIANTS = ["O0", "O2"]


def js(r):
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


def main():
    tmp = tempfile.mkdtemp(prefix="coreq-wait-buckets-")
    atexit.register(shutil.rmtree, tmp, True)  # the databases it made
    db, cache = os.path.join(tmp, "w.db"), os.path.join(tmp, "cache.db")
    cases = {}
    for shape in list(CASES) + list(CXX):
        for v in VARIANTS:
            name = f"deadlock-{shape}.{v}" if shape in CASES else f"{shape}.{v}"
            d = os.path.join(CORPUS, "cores", name)
            if ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
                  f"no {d}/oracle: run corpus/make-cores {CORPUS} {name}"):
                cases[name] = (shape, d)
    if not cases:
        done()
    names = sorted(cases)
    r = coreq("ingest", "--db", db, "--cache", cache, "--format", "json",
              *[os.path.join(cases[n][1], "core") for n in names], timeout=600)
    results = js(r).get("results", [])
    ok(r.returncode == 0 and len(results) == len(names), "every hung core is ingested",
       [f"exit {r.returncode}"] + r.stderr.splitlines()[:10])
    by = dict(zip(names, results)) if len(results) == len(names) else {}
    bucket = {}
    for n in names:
        shape = cases[n][0]
        kind, prefix, frames = CASES.get(shape) or ("deadlock", CXX[shape], None)
        sig = (by.get(n) or {}).get("signature") or ""
        bucket[n] = (by.get(n) or {}).get("bucket_id")
        what = ("deadlock signature from the lock-taking frames" if kind == "deadlock" else
                "hang signature from the awaited thread's call and frames")
        ok(sig == prefix, f"{n}: {what}", [sig, prefix])
    for shape in list(CASES) + list(CXX):
        pre = "deadlock-" if shape in CASES else ""
        o0, o2 = f"{pre}{shape}.O0", f"{pre}{shape}.O2"
        if o0 in bucket and o2 in bucket:
            ok(bucket[o0] is not None and bucket[o0] == bucket[o2],
               f"{shape}: O0 and O2 (other tids, addresses, code) are one bucket",
               [str(bucket[o0]), str(bucket[o2])])
    for a, b in (("abba", "cycle3"), ("chain", "recursive"), ("abba", "chain"),
                 ("abba", "_cxx-abba")):
        x, y = f"deadlock-{a}.O0", f"deadlock{b if b[0] == '_' else '-' + b}.O0"
        if x in bucket and y in bucket:
            ok(bucket[x] != bucket[y], f"{a} and {b}: different buckets", [str(bucket[x]), str(bucket[y])])

    # The stored graph is the oracle's.
    con = sqlite3.connect(db)
    for n in names:
        shape, d = cases[n]
        o = read_oracle(os.path.join(d, "oracle"))
        core_id = (by.get(n) or {}).get("core_id")
        try:
            rows = con.execute("SELECT tid, kind, object, owner, owner_tid, deadlock FROM waits "
                               "WHERE core_id = ?", (core_id,)).fetchall()
        except sqlite3.Error as e:
            rows = [str(e)]
        want = sorted((tid, kind, addr, "thread", o["holds"][addr], o["verdict"] == "deadlock")
                      for tid, (kind, addr) in o["waits"].items())
        got = sorted((r[0], r[1], r[2], r[3], r[4], r[5] is not None) for r in rows
                     if not isinstance(r, str)) if rows and not isinstance(rows[0], str) else rows
        ok(got == want, f"{n}: the stored waits are the oracle's", [f"got {got}", f"want {want}"])
    con.close()

    def marked():
        r = coreq("buckets", "--db", db, "--format", "json")
        return {b["id"]: b.get("kind") for b in js(r).get("buckets", [])}

    kinds = marked()
    for n in names:
        want = CASES.get(cases[n][0], ("deadlock",))[0]
        ok(kinds.get(bucket[n]) == want, f"{n}: coreq buckets marks its bucket {want}",
           str(kinds.get(bucket[n])))
    r = coreq("buckets", "--db", db)
    ndead = len({bucket[n] for n in names if CASES.get(cases[n][0], ("deadlock",))[0] == "deadlock"})
    ok(r.stdout.count("deadlock bucket ") == ndead,
       f"coreq buckets (text): {ndead} deadlock buckets marked", r.stdout.splitlines()[:12])
    # merge carries the graph and the marks to another database.
    merged = os.path.join(tmp, "merged.db")
    r = coreq("merge", "--db", merged, db)
    try:
        con = sqlite3.connect(merged)
        nw = con.execute("SELECT count(*) FROM waits").fetchone()[0]
        nd = con.execute("SELECT count(*) FROM waits WHERE deadlock IS NOT NULL").fetchone()[0]
        con.close()
    except sqlite3.Error as e:
        nw, nd = str(e), None
    want_w = sum(len(read_oracle(os.path.join(cases[n][1], "oracle"))["waits"]) for n in names)
    want_d = sum(len(read_oracle(os.path.join(cases[n][1], "oracle"))["waits"]) for n in names
                 if read_oracle(os.path.join(cases[n][1], "oracle"))["verdict"] == "deadlock")
    ok(r.returncode == 0 and (nw, nd) == (want_w, want_d),
       "coreq merge copies every stored wait, deadlocks marked",
       [f"exit {r.returncode}", f"waits {nw} deadlock rows {nd}, want {want_w} {want_d}", r.stderr[:300]])
    r2 = coreq("buckets", "--db", merged, "--format", "json")
    mk = sorted((b.get("signature"), b.get("kind")) for b in js(r2).get("buckets", []))
    r3 = coreq("buckets", "--db", db, "--format", "json")
    mine = sorted((b.get("signature"), b.get("kind")) for b in js(r3).get("buckets", []))
    ok(mk == mine and mk, "the merged database has the same marked buckets", [str(mk), str(mine)])
    r = coreq("rebucket", "--db", db)
    ok(r.returncode == 0 and marked() == kinds, "coreq rebucket leaves the hang buckets",
       [f"exit {r.returncode}", r.stderr[:400]])
    done()


main()
