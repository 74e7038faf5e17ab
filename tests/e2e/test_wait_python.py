#!/usr/bin/env python3
"""Who waits for whom in a real program nobody on the team wrote: Debian's
python3 (CPython 3.11) hung in an ABBA deadlock on two threading.Lock
(corpus/real/python3-deadlock.py, the case real-python3-deadlock), killed
with SIGABRT from another process as a watchdog would; and the same in with
statements on module-level locks (real-python3-deadlock-with), where the
holder's frame keeps only the bound __exit__ on its value stack.

The script writes its own oracle: each worker's tid, the address of each
lock's semaphore (a threading.Lock is a POSIX sem_t underneath), which lock
each worker holds and which it waits for.  A semaphore records no owner;
the holder's interpreter frame keeps the lock object (a local), and the lock
object points to the sem_t, so coreq infers the owner: the one thread other
than the waiters whose CPython frames hold the lock (README, "Owners
inferred").  Expected values come from the oracle and from gdb reading the
same core:

- exactly the two workers wait (the main thread sleeps in time.sleep), each
  on the semaphore of the lock the script says it waits for, kind
  semaphore, owner thread with owner_inferred (from "python"), the owner
  tid the worker the script says holds that lock;
- one deadlock: the two workers on the two semaphores;
- the summary says `deadlock: ... (held by N, inferred)` and each worker's
  line `held by thread N (inferred: its Python frames hold the lock ...)`;
- gdb reads both semaphores' counts as 0 (both locks taken);
- the stored and exported waits say owner inferred, the holders, deadlock.
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

CASES = ["real-python3-deadlock", "real-python3-deadlock-with"]


def check(CASE):
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
    dl = j.get("deadlocks") or []
    ok(len(dl) == 1 and sorted(dl[0].get("tids", [])) == sorted(o["waits"])
       and sorted(int(x, 16) for x in dl[0].get("objects", [])) == sorted(o["locks"].values()),
       f"{CASE}: one deadlock, the two workers on the two semaphores", dl)
    ok(all(w.get("deadlock") == 0 for w in waits.values()), f"{CASE}: both waits are on it")
    text = coreq("stack", core, "--no-cache").stdout
    summary = [ln for ln in text.splitlines() if ln.startswith("deadlock:")]
    for t, (_, a) in sorted(o["waits"].items()):
        h = o["holds"][a]
        ok(len(summary) == 1 and f"thread {t} waits for semaphore {hex(a)} (held by {h}, inferred)"
           in summary[0], f"{CASE}: the summary says {t} waits for {hex(a)}, held by {h} (inferred)",
           summary)
        block = text.split(f"Thread {t}:\n", 1)
        line = block[1].splitlines()[0].strip() if len(block) == 2 else ""
        ok(line.startswith(f"waits on semaphore {hex(a)} held by thread {h} (inferred: its Python "
                           "frames hold the lock object") and line.endswith("[deadlock]"),
           f"{CASE}: thread {t}'s line says it waits on {hex(a)} held by {h}, inferred", line)
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
    tmp = tempfile.mkdtemp(prefix="coreq-wait-python-")
    atexit.register(shutil.rmtree, tmp, True)  # the databases it made
    db = os.path.join(tmp, "p.db")
    r = coreq("ingest", "--db", db, "--no-cache", core, timeout=300)
    ok(r.returncode == 0, f"{CASE}: ingested", r.stderr[-500:])
    r = coreq("export", "--db", db, "--type", "wait")
    rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]
    got = {(w["tid"], w["kind"], w["object"], w["owner"], w["owner_tid"], w["verdict"]) for w in rows}
    want = {(t, "semaphore", a, "inferred", o["holds"][a], "deadlock") for t, (_, a) in o["waits"].items()}
    ok(r.returncode == 0 and got == want, f"{CASE}: the exported waits say owner inferred, the holders, deadlock",
       [f"want {sorted(want)}", f"got {sorted(got)}"])


def main():
    for case in CASES:
        check(case)
    done()


main()
