#!/usr/bin/env python3
"""Who waits for whom, primitive by primitive: PI mutexes, a robust mutex
whose owner died, pthread_join, condvars (issue 35).

corpus/deadlock.c hangs in four more shapes at O0 and O2, and is killed
with SIGABRT from another process once every worker is blocked; before that
it writes its own account to `oracle` beside the core.  Expected values come
from that file and from gdb reading the same core, never from coreq:

- pi: ABBA on two PTHREAD_PRIO_INHERIT mutexes.  The owner is in __lock's
  low 30 bits (gdb: __lock & 0x3fffffff).  The kernel sees PI chains and
  refuses the lock that closes the cycle with EDEADLK; glibc then parks that
  thread for ever on a zero word of its own stack.  coreq must still give
  one deadlock of both threads, each waiting for the mutex the other holds,
  with exactly the wait marked pi_refused that the kernel refused (the
  program reads each worker's futex op from /proc before the core, and
  takes the locks in turn so that only the last one is refused);
- robust: "dead" takes a robust mutex and exits; "heir" takes it
  (EOWNERDEAD: it owns it, marked inconsistent) and blocks in read();
  "waiter" waits for it: the owner is the heir (gdb: __lock & 0x3fffffff;
  __owner is 0x7fffffff, PTHREAD_MUTEX_INCONSISTENT), owner_died is said,
  and everyone waits for the heir, blocked in read();
- join: "stuck" waits on a condvar, "joiner" joins it: the joiner's edge is
  to the stuck thread (the object is its struct pthread's tid field, as gdb
  reads it), the stuck thread's is to the condvar with no owner and no
  other edge, and no deadlock;
- condvar: two threads on one condvar: both wait on it, no owner, no edge
  to any thread, the summary says `waiting:` not `hung:`.
The stored waits and `coreq export --type wait` carry the same edges; pi
files as a deadlock bucket and robust as a hang bucket, O0 and O2 alike.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import CORPUS, coreq, coreq_json, done, ok, read_expect, sanitizer_report
from waits_common import ingest, read_oracle

SHAPES = ["pi", "robust", "join", "condvar"]
VARIANTS = ["O0", "O2"]
TID_MASK = 0x3FFFFFFF
INCONSISTENT = 0x7FFFFFFF


def gdb_values(exe, core, exprs):
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for e in exprs:
        args += ["-ex", f"print/d {e}"]
    r = subprocess.run(args + [exe, core], capture_output=True, text=True, timeout=120)
    return [int(m) for m in re.findall(r"^\$\d+ = (-?\d+)", r.stdout, re.M)]


def expected_edges(o):
    """(tid, kind, object, owner, owner_tid) for every waiting thread, from the oracle."""
    want = {}
    for tid, (kind, addr) in o["waits"].items():
        if kind == "condvar":
            want[tid] = ("condvar", addr, "none", None)
        else:
            want[tid] = (kind, addr, "thread", o["holds"][addr])
    return want


def check_case(name, d, join_objects):
    core = os.path.join(d, "core")
    o = read_oracle(os.path.join(d, "oracle"), verdict_words=True)
    exe = read_expect(os.path.join(d, "expect"))["exe"]
    j, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
    waits = {w["tid"]: w for w in j.get("waits", [])}
    want = expected_edges(o)
    got = {t: (w["kind"], int(w["object"], 16), w["owner"], w["owner_tid"])
           for t, w in waits.items() if t not in o["joins"]}
    ok(got == want, f"{name}: every wait is the oracle's (kind, object, owner), none more",
       [f"want {want}", f"got  {got}"])
    # pthread_join: an edge to the joined thread; its object is that thread's tid field.
    for tid, joined in o["joins"].items():
        w = waits.get(tid) or {}
        ok((w.get("kind"), w.get("owner"), w.get("owner_tid")) == ("thread", "thread", joined)
           and w.get("object") == join_objects.get(joined),
           f"{name}: thread {tid} waits to join thread {joined} (object: gdb's &pd->tid)",
           [w, join_objects.get(joined)])
    ok(set(waits) == set(want) | set(o["joins"]), f"{name}: no other thread waits",
       [sorted(waits), sorted(set(want) | set(o["joins"]))])
    text = coreq("stack", core, "--no-cache").stdout
    dls = j.get("deadlocks", [])
    verdict = o["verdict"]
    if verdict[0] == "deadlock":
        ok(len(dls) == 1 and set(dls[0]["tids"]) == set(o["waits"]),
           f"{name}: one deadlock of the waiting threads", dls)
        line = next((ln for ln in text.splitlines() if ln.startswith("deadlock: ")), "")
        ok(all(f"thread {t} waits for mutex {hex(a)} (held by {o['holds'][a]})" in line
               for t, (_, a) in o["waits"].items()), f"{name}: the text summary names the cycle",
           [line])
    else:
        ok(dls == [], f"{name}: no deadlock", dls)
        first = (j.get("waited_for") or [{}])[0]
        if verdict[0] == "hang":
            t = int(verdict[1])
            ok(first.get("tid") == t and first.get("syscall") == o["blocked"].get(t)
               and first.get("waiters") == len(o["waits"]),
               f"{name}: everyone waits for thread {t}, blocked in read()", first)
        else:  # waiting ADDR: every chain ends at the condvar, which no one holds
            addr = int(verdict[1], 16)
            nwait = len(o["waits"]) + len(o["joins"])
            ok(first.get("tid") is None and first.get("object") == hex(addr)
               and first.get("waiters") == nwait and len(j.get("waited_for", [])) == 1,
               f"{name}: every chain ends at condvar {hex(addr)}, no owner", j.get("waited_for"))
            # The record: who waits on the condvar itself, and who joins them (behind).
            ncv = len(o["waits"])
            want = (f"thread {next(iter(o['waits']))} waits" if ncv == 1 else f"{ncv} threads wait")
            want = f"waiting: {want} on condvar {hex(addr)} (a condvar has no owner)"
            if o["joins"]:
                nj = len(o["joins"])
                want += (f"; {nj} more thread{'s' if nj > 1 else ''} wait{'' if nj > 1 else 's'} "
                         f"behind {'it' if ncv == 1 else 'them'}")
            ok(want in text.splitlines() and "hung:" not in text,
               f"{name}: the summary says waiting, not hung: {want}", text.splitlines()[:4])
    if o["pi"]:
        refused = [t for t, w in waits.items() if w.get("pi_refused")]
        ok(all(waits[t].get("pi") for t in o["waits"]) and len(o["refused"]) == 1
           and set(refused) == o["refused"],
           f"{name}: both waits are on PI mutexes, the one the kernel refused (EDEADLK) marked so",
           [(t, w.get("pi"), w.get("pi_refused"), w.get("futex")) for t, w in waits.items()])
    for addr, dead in o["died"].items():
        ws = [w for w in waits.values() if w["object"] == hex(addr)]
        ok(ws and all(w.get("robust") and w.get("owner_died") for w in ws),
           f"{name}: the robust mutex's waiter is told its owner died (was thread {dead})", ws)
        heir = o["holds"][addr]
        lines = [text.split(f"Thread {t}:\n", 1)[-1].splitlines()[0].strip() for t in o["waits"]]
        ok(all(ln.startswith(f"waits for mutex {hex(addr)} held by thread {heir} (robust: a previous "
                             "owner died; taken with EOWNERDEAD, not made consistent)") for ln in lines),
           f"{name}: the waiter's line names the heir and says the previous owner died", lines)
        ok(dead not in waits and f"Thread {dead}" not in text,
           f"{name}: the dead owner {dead} is in no edge and not a thread of the core")
    # gdb reads the owners from the same core: PI and robust keep them in __lock.
    exprs, want_g = [], []
    for addr, holder in sorted(o["holds"].items()):
        m = f"((pthread_mutex_t *){addr:#x})->__data"
        if addr in o["pi"] or addr in o["robust"]:
            exprs.append(f"{m}.__lock & {TID_MASK}")
        else:
            exprs.append(f"{m}.__owner")
        want_g.append(holder)
        if addr in o["died"]:
            exprs.append(f"{m}.__owner")
            want_g.append(INCONSISTENT)
    if exprs:
        got_g = gdb_values(exe, core, exprs)
        ok(got_g == want_g, f"{name}: gdb reads the same owners from the core",
           [f"want {want_g}", f"got {got_g}"])
    return o


def main():
    cases = {}
    for shape in SHAPES:
        for v in VARIANTS:
            name = f"deadlock-{shape}.{v}"
            d = os.path.join(CORPUS, "cores", name)
            if ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
                  f"no {d}/oracle: run corpus/make-cores {CORPUS} {name}"):
                cases[name] = d
    oracles = {}
    for name, d in sorted(cases.items()):
        o = read_oracle(os.path.join(d, "oracle"), verdict_words=True)
        exe = read_expect(os.path.join(d, "expect"))["exe"]
        join_objects = {}
        for tid, pt in o["pthread"].items():
            v = gdb_values(exe, os.path.join(d, "core"), [f"&((struct pthread *){pt:#x})->tid"])
            if v:
                join_objects[tid] = hex(v[0])
        oracles[name] = check_case(name, d, join_objects)
    if not cases:
        done()
    # The store and the export carry the same edges.
    tmp = tempfile.mkdtemp(prefix="coreq-wait-primitives-")
    atexit.register(shutil.rmtree, tmp, True)  # the databases it made
    db = os.path.join(tmp, "w.db")
    names = sorted(cases)
    r, results = ingest(db, [cases[n] for n in names])
    ok(r.returncode == 0, "every core is ingested", r.stderr[-500:])
    by = dict(zip(names, results)) if len(results) == len(names) else {}
    pi = [by.get(f"deadlock-pi.{v}", {}) for v in VARIANTS]
    ok(all((x.get("signature") or "").startswith("deadlock: ") for x in pi)
       and pi[0].get("bucket_id") is not None and pi[0].get("bucket_id") == pi[1].get("bucket_id"),
       "pi: a deadlock bucket, O0 and O2 one bucket", [x.get("signature") for x in pi])
    rb = [by.get(f"deadlock-robust.{v}", {}) for v in VARIANTS]
    ok(all((x.get("signature") or "").startswith("hang: in read()") for x in rb)
       and rb[0].get("bucket_id") is not None and rb[0].get("bucket_id") == rb[1].get("bucket_id"),
       "robust: a hang bucket (the heir in read()), O0 and O2 one bucket", [x.get("signature") for x in rb])
    r = coreq("export", "--db", db, "--type", "core,wait")
    recs = [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]
    pid_of = {c["identity"]: c["pid"] for c in recs if c.get("type") == "core"}
    got = {}
    for w in (x for x in recs if x.get("type") == "wait"):
        got.setdefault(pid_of.get(w["core"]), set()).add(
            (w["tid"], w["kind"], w["owner"], w["owner_tid"], w["verdict"]))
    for n in names:
        o = oracles[n]
        pid = int(read_expect(os.path.join(cases[n], "expect"))["pid"])
        verdict = "deadlock" if o["verdict"][0] == "deadlock" else "waits"
        want = {(t, k, ow, ot, verdict) for t, (k, _, ow, ot) in expected_edges(o).items()}
        want |= {(t, "thread", "thread", joined, verdict) for t, joined in o["joins"].items()}
        ok(got.get(pid, set()) == want, f"{n}: the exported waits are the oracle's",
           [f"want {sorted(want)}", f"got {sorted(got.get(pid, set()))}"])
    done()


main()
