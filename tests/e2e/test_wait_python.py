#!/usr/bin/env python3
"""Who waits for whom in a real program nobody on the team wrote: Debian's
python3 (CPython 3.11) hung in an ABBA deadlock on two threading.Lock
(corpus/real/python3-deadlock.py, the case real-python3-deadlock), killed
with SIGABRT from another process as a watchdog would; and the same in with
statements on module-level locks (real-python3-deadlock-with), where the
holder's frame keeps only the bound __exit__ on its value stack; and two
threads behind a lock whose holder has exited, one of them keeping that
lock in a local (corpus/real/python3-exited-holder.py), where no cycle is.

The script writes its own oracle: each worker's tid, the address of each
lock's semaphore (a threading.Lock is a POSIX sem_t underneath), which lock
each worker holds and which it waits for.  A semaphore records no owner;
the holder's interpreter frame keeps the lock object (a local), and the lock
object points to the sem_t, so coreq infers the owner: the one thread other
than the waiters whose CPython frames hold the lock (docs/hangs.md, "Owners
inferred").  Expected values come from the oracle and from gdb reading the
same core:

- exactly the two workers wait (the main thread sleeps in time.sleep), each
  on the semaphore of the lock the script says it waits for, kind
  semaphore, owner thread with owner_inferred (from "python"), the owner
  tid the worker the script says holds that lock;
- one cycle: the two workers on the two semaphores.  It rests on inferred
  owners, so its verdict says what confirms them: with plain acquire() and a
  local, nothing the core records does (a possible deadlock); with with
  statements, the bound __exit__ each holder's frame keeps (a deadlock that
  says it rests on inferred owners, confirmed);
- the summary says so (`possible deadlock (...)` / `deadlock (rests on an
  inferred owner, confirmed by the with statement that took it)`, each edge
  `(held by N, inferred, unconfirmed|confirmed)`) and each worker's line
  `held by thread N (inferred: its Python frames hold the lock ...)`;
- gdb reads both semaphores' counts as 0 (both locks taken);
- the stored and exported waits say owner inferred, the holders, the
  cycle's verdict and what confirmed each owner; the bucket's signature
  starts with the verdict.

The exited holder (issue 45): the oracle says no deadlock; the cycle the
inference makes is never called a deadlock: `possible-deadlock` in JSON,
the summary, the export and the bucket, the owner of A (the thread that
only keeps it in a local) unconfirmed, B's confirmed by its with statement.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import CORPUS, coreq, coreq_json, done, ok, read_expect, sanitizer_report
from waits_common import read_oracle

# Per case: what confirms each inferred owner (JSON), the cycle's verdict
# (JSON, export), the summary's first words, the lines' tag, the bucket's prefix.
CASES = {
    "real-python3-deadlock": (None, "possible-deadlock",
                              "possible deadlock (rests on an inferred owner that nothing the "
                              "core records confirms): ", "[possible deadlock]", "possible deadlock: "),
    "real-python3-deadlock-with": ("with", "deadlock-inferred-confirmed",
                                   "deadlock (rests on an inferred owner, confirmed by the with "
                                   "statement that took it): ", "[deadlock]",
                                   "deadlock (inferred, confirmed): "),
}
EXITED = "real-python3-exited-holder"


def store_and_export(CASE, core):
    """Ingests core into a new store: (its wait records, its bucket signatures)."""
    tmp = tempfile.mkdtemp(prefix="coreq-wait-python-")
    atexit.register(shutil.rmtree, tmp, True)  # the databases it made
    db = os.path.join(tmp, "p.db")
    r = coreq("ingest", "--db", db, "--no-cache", core, timeout=300)
    ok(r.returncode == 0, f"{CASE}: ingested", r.stderr[-500:])
    r = coreq("export", "--db", db, "--type", "wait")
    rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]
    ok(r.returncode == 0, f"{CASE}: exported", r.stderr[-500:])
    r = coreq("export", "--db", db, "--type", "bucket")
    sigs = [json.loads(ln).get("signature") for ln in r.stdout.splitlines() if ln.strip()]
    return rows, sigs


def check(CASE):
    confirmed_by, verdict, summary_head, tag, bucket_prefix = CASES[CASE]
    d = os.path.join(CORPUS, "cores", CASE)
    core = os.path.join(d, "core")
    if not ok(os.path.isfile(os.path.join(d, "oracle")), f"{CASE}: core and oracle exist",
              f"no {d}/oracle: run corpus/make-cores {CORPUS} {CASE}"):
        return
    o = read_oracle(os.path.join(d, "oracle"))
    facts = read_expect(os.path.join(d, "expect"))
    ok(o["verdict"] == "deadlock" and len(o["waits"]) == 2 and
       all(o["holds"][o["waits"][t][1]] != t for t in o["waits"]),
       f"{CASE}: the script says two threads deadlocked ABBA", o)
    j, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{CASE}: no sanitizer report", r.stderr)
    waits = {w["tid"]: w for w in j.get("waits", [])}
    want = {t: ("semaphore", hex(a), "thread", o["holds"][a], True, "python")
            for t, (_, a) in o["waits"].items()}
    got = {t: (w.get("kind"), w.get("object"), w.get("owner"), w.get("owner_tid"),
               w.get("owner_inferred"), w.get("owner_inferred_from"))
           for t, w in waits.items()}
    ok(got == want, f"{CASE}: each worker waits on the semaphore of the lock the script names, "
       "held by the worker the script says (inferred); no other thread waits",
       [f"want {want}", f"got  {got}"])
    ok(all(w.get("owner_confirmed_by") == confirmed_by for w in waits.values()),
       f"{CASE}: each inferred owner confirmed by {confirmed_by}",
       [w.get("owner_confirmed_by") for w in waits.values()])
    dl = j.get("deadlocks") or []
    ok(len(dl) == 1 and sorted(dl[0].get("tids", [])) == sorted(o["waits"])
       and sorted(int(x, 16) for x in dl[0].get("objects", [])) == sorted(o["locks"].values())
       and dl[0].get("verdict") == verdict,
       f"{CASE}: one cycle, the two workers on the two semaphores, verdict {verdict}", dl)
    ok(all(w.get("deadlock") == 0 for w in waits.values()), f"{CASE}: both waits are on it")
    text = coreq("stack", core, "--no-cache").stdout
    summary = [ln for ln in text.splitlines() if ln.startswith(("deadlock", "possible deadlock"))]
    word = "confirmed" if confirmed_by else "unconfirmed"
    for t, (_, a) in sorted(o["waits"].items()):
        h = o["holds"][a]
        ok(len(summary) == 1 and summary[0].startswith(summary_head) and
           f"thread {t} waits for semaphore {hex(a)} (held by {h}, inferred, {word})" in summary[0],
           f"{CASE}: the summary says {summary_head.strip()} {t} waits for {hex(a)}, held by {h} "
           f"(inferred, {word})", summary)
        block = text.split(f"Thread {t}:\n", 1)
        line = block[1].splitlines()[0].strip() if len(block) == 2 else ""
        ok(line.startswith(f"waits on semaphore {hex(a)} held by thread {h} (inferred: its Python "
                           "frames hold the lock object") and line.endswith(tag),
           f"{CASE}: thread {t}'s line says it waits on {hex(a)} held by {h}, inferred, {tag}", line)
    ok(not any(ln.startswith(("hung:", "waiting:")) for ln in text.splitlines()),
       f"{CASE}: no hang and no ownerless wait is said")
    # gdb: both semaphores taken (count 0 in the value word, its low 32 bits).
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for a in sorted(o["locks"].values()):
        args += ["-ex", f"print *(unsigned int *){a:#x}"]
    g = subprocess.run(args + [facts["exe"], core], capture_output=True, text=True, timeout=120)
    counts = [int(m) for m in re.findall(r"^\$\d+ = (-?\d+)", g.stdout, re.M)]
    ok(counts == [0, 0], f"{CASE}: gdb reads both semaphores taken (count 0)", [counts, g.stderr[-300:]])
    # The store and the export say the same.
    rows, sigs = store_and_export(CASE, core)
    got = {(w["tid"], w["kind"], w["object"], w["owner"], w["owner_tid"], w["verdict"],
            w.get("owner_confirmed_by")) for w in rows}
    want = {(t, "semaphore", a, "inferred", o["holds"][a], verdict, confirmed_by)
            for t, (_, a) in o["waits"].items()}
    ok(got == want, f"{CASE}: the exported waits say owner inferred, the holders, {verdict}, "
       f"confirmed by {confirmed_by}", [f"want {sorted(want)}", f"got {sorted(got)}"])
    ok(len(sigs) == 1 and sigs[0].startswith(bucket_prefix),
       f"{CASE}: the bucket's signature starts with {bucket_prefix!r}", sigs)


def check_exited():
    """A lock whose holder exited, kept in a local by a thread that waits on
    a second lock whose holder waits on the first: no deadlock."""
    CASE = EXITED
    d = os.path.join(CORPUS, "cores", CASE)
    core = os.path.join(d, "core")
    if not ok(os.path.isfile(os.path.join(d, "oracle")), f"{CASE}: core and oracle exist",
              f"no {d}/oracle: run corpus/make-cores {CORPUS} {CASE}"):
        return
    o = read_oracle(os.path.join(d, "oracle"))
    a, b = o["locks"]["A"], o["locks"]["B"]
    gone = next(iter(o["exited"]), None)
    keeper = next((t for t, (_, x) in o["waits"].items() if x == b), None)
    holder = o["holds"].get(b)
    ok(o["verdict"] == "no-deadlock" and o["holds"].get(a) == gone and gone not in o["threads"]
       and o["waits"].get(holder) == ("semaphore", a) and keeper is not None,
       f"{CASE}: the script says A's holder exited, B's holder waits for A, the keeper for B", o)
    j, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{CASE}: no sanitizer report", r.stderr)
    waits = {w["tid"]: w for w in j.get("waits", [])}
    got = {t: (w.get("object"), w.get("owner_tid"), w.get("owner_inferred"),
               w.get("owner_confirmed_by")) for t, w in waits.items()}
    # The inference names the keeper as A's owner, but nothing confirms it; B's is confirmed.
    want = {holder: (hex(a), keeper, True, None), keeper: (hex(b), holder, True, "with")}
    ok(got == want, f"{CASE}: A's inferred owner (the keeper) unconfirmed, B's (its holder) "
       "confirmed by its with statement", [f"want {want}", f"got  {got}"])
    dl = j.get("deadlocks") or []
    ok(len(dl) == 1 and dl[0].get("verdict") == "possible-deadlock",
       f"{CASE}: the cycle the inference makes is a possible deadlock, not a deadlock", dl)
    text = coreq("stack", core, "--no-cache").stdout
    lines = text.splitlines()
    ok(not any(ln.startswith("deadlock") for ln in lines) and
       sum(ln.startswith("possible deadlock (rests on an inferred owner that nothing the core "
                         "records confirms): ") for ln in lines) == 1,
       f"{CASE}: the summary says possible deadlock, never deadlock", lines[:4])
    ok("[deadlock]" not in text, f"{CASE}: no thread's line says [deadlock]")
    rows, sigs = store_and_export(CASE, core)
    got = {(w["tid"], w["owner"], w["verdict"], w.get("owner_confirmed_by")) for w in rows}
    want = {(holder, "inferred", "possible-deadlock", None),
            (keeper, "inferred", "possible-deadlock", "with")}
    ok(got == want, f"{CASE}: the export says possible-deadlock, and which owner is confirmed",
       [f"want {sorted(want)}", f"got {sorted(got)}"])
    ok(len(sigs) == 1 and sigs[0].startswith("possible deadlock: "),
       f"{CASE}: the bucket's signature says possible deadlock", sigs)


def main():
    for case in CASES:
        check(case)
    check_exited()
    done()


main()
