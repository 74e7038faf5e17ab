#!/usr/bin/env python3
"""C++'s other locks in a hang (issue 50): a std::shared_mutex read hold in
a cycle, a writer behind a reader that exited, a
std::condition_variable_any and a POSIX semaphore.

corpus/deadlock_cxx.cc hangs in each shape at O0 and O2 and is killed with
SIGABRT once every worker is blocked; before that it writes its own account
(`oracle`: tids, roles, lock addresses, who holds, waits for and joins whom)
beside the core.  Expected values come from that file and from gdb reading
the same core, never from coreq:

- shared: "reader" holds the shared_mutex S shared (a std::shared_lock) and
  waits for mutex M; "joiner" holds M and joins "writer"; "writer" waits to
  write S.  glibc counts one reader (gdb: __readers >> 3 is 1) and records
  none, so the writer's owner is the reader inferred and confirmed (its
  std::shared_lock, or its frame's read-lock call), and the cycle is one
  deadlock of the three, `deadlock-inferred-confirmed`, its summary saying it
  rests on a confirmed reader.  Every other edge is as the oracle says.
- shared_exited: the one reader exited holding S; "keeper" keeps S's address
  on its stack (gdb finds it there) but never took it: the writer's owner
  stays the count (`readers`, 1), no owner thread, no deadlock.
- condvar_any, sem: two threads on one std::condition_variable_any (its
  condvar is at its own address) or one sem_t: no owner, no edge to any
  thread, one chain end at the object, the summary says `waiting:`.
The stored and exported waits carry the same edges and verdicts.
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

SHAPES = ["shared", "shared_exited", "condvar_any", "sem"]
VARIANTS = ["O0", "O2"]


def gdb_batch(exe, core, cmds):
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for c in cmds:
        args += ["-ex", c]
    return subprocess.run(args + [exe, core], capture_output=True, text=True, timeout=120).stdout


def gdb_thread_number(exe, core, tid):
    m = re.search(r"Thread (\d+) has target id .*LWP %d\)" % tid,
                  gdb_batch(exe, core, [f"thread find LWP {tid}"]))
    return m.group(1) if m else None


def lock_of(o, kind):
    return next(a for _, (k, a) in o["waits"].items() if k == kind)


def expected_waits(o):
    """tid -> (kind, object, owner, owner_tid, inferred) from the oracle."""
    want = {}
    for tid, (kind, addr) in o["waits"].items():
        if kind in ("condvar", "semaphore"):
            want[tid] = (kind, addr, "none", None, False)
        elif kind == "rwlock":
            holder = o["holds"].get(addr)
            want[tid] = (kind, addr, "thread", holder, True) if holder else \
                (kind, addr, "readers", None, False)
        else:
            want[tid] = (kind, addr, "thread", o["holds"][addr], False)
    for tid, joined in o["joins"].items():
        want[tid] = ("thread", None, "thread", joined, False)
    return want


def check_case(name, d):
    core = os.path.join(d, "core")
    exe = read_expect(os.path.join(d, "expect"))["exe"]
    o = read_oracle(os.path.join(d, "oracle"), verdict_words=True)
    j, r = coreq_json("stack", core, "--format", "json", "--no-cache")
    ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
    waits = {w["tid"]: w for w in j.get("waits", [])}
    got = {t: (w["kind"], None if w["kind"] == "thread" else int(w["object"], 16), w["owner"],
               w["owner_tid"], w["owner_inferred"]) for t, w in waits.items()}
    want = expected_waits(o)
    ok(got == want, f"{name}: every wait is the oracle's (kind, object, owner), none more",
       [f"want {want}", f"got  {got}"])
    text = coreq("stack", core, "--no-cache").stdout
    dls = j.get("deadlocks", [])
    verdict = o["verdict"]
    if verdict[0] == "deadlock":
        cycle = set(o["threads"])
        ok(len(dls) == 1 and set(dls[0]["tids"]) == cycle
           and dls[0].get("verdict") == "deadlock-inferred-confirmed",
           f"{name}: one deadlock of {sorted(cycle)}, resting on a confirmed owner", dls)
        rw = lock_of(o, "rwlock")
        writer = next(t for t, (k, _) in o["waits"].items() if k == "rwlock")
        w = waits.get(writer, {})
        ok(w.get("owner_inferred_from") == "reader"
           and w.get("owner_confirmed_by") in ("shared-lock", "read-call") and w.get("count") == 1,
           f"{name}: the writer's owner is the one reader, confirmed",
           [w.get("owner_inferred_from"), w.get("owner_confirmed_by"), w.get("count")])
        line = next((ln for ln in text.splitlines() if ln.startswith("deadlock")), "")
        ok(line.startswith("deadlock (rests on a confirmed reader, confirmed by ")
           and f"thread {writer} waits for rwlock {hex(rw)} (held by {o['holds'][rw]}, "
               "inferred, confirmed)" in line,
           f"{name}: the summary calls it a deadlock resting on a confirmed reader", [line])
    else:
        ok(dls == [], f"{name}: no deadlock", dls)
        ends = j.get("waited_for", [])
        if verdict[0] == "readers":
            rw = int(verdict[1], 16)
            w = next((x for x in waits.values() if x["kind"] == "rwlock"), {})
            ok(w.get("owner") == "readers" and w.get("count") == int(verdict[2])
               and w.get("owner_confirmed_by") is None,
               f"{name}: the writer waits behind 1 reader, owner unknown", w)
            ok(len(ends) == 1 and ends[0].get("object") == hex(rw)
               and ends[0].get("waiters") == len(o["waits"]) + len(o["joins"]),
               f"{name}: every chain ends at rwlock {hex(rw)}", ends)
            line = "held by 1 reader (readers are not recorded)"
            ok(line in text and not any(ln.startswith(("deadlock", "possible deadlock"))
                                        for ln in text.splitlines()),
               f"{name}: the text says {line!r}, and no deadlock", text.splitlines()[:4])
            # The reference was there to be misread: the keeper's stack holds S's address.
            keeper = next(t for t, n in o["threads"].items() if n == "keeper")
            n = gdb_thread_number(exe, core, keeper)
            out = gdb_batch(exe, core, [f"thread {n}", f"find /g $sp, +65536, {rw:#x}"]) if n else ""
            ok(re.search(r"^0x[0-9a-f]+", out, re.M) is not None,
               f"{name}: gdb finds S's address on the keeper's stack (a reference, not a hold)",
               out.splitlines()[-3:])
            ok(not any(t in o["exited"] for t in waits) and all(
                f"Thread {t}" not in text for t in o["exited"]),
               f"{name}: the exited reader is no thread of the core")
        else:
            addr = int(verdict[1], 16)
            kind = next(iter(o["waits"].values()))[0]
            ok(len(ends) == 1 and ends[0].get("tid") is None and ends[0].get("object") == hex(addr)
               and ends[0].get("waiters") == len(o["waits"]),
               f"{name}: every chain ends at {kind} {hex(addr)}, no owner", ends)
            want = (f"waiting: {len(o['waits'])} threads wait on {kind} {hex(addr)} "
                    f"(a {kind} has no owner)")
            ok(want in text.splitlines() and "hung:" not in text,
               f"{name}: the summary says {want!r}", text.splitlines()[:4])
    # gdb reads the rwlock from the same core: one reader counted, no writer recorded.
    if verdict[0] in ("deadlock", "readers"):
        rw = lock_of(o, "rwlock")
        out = gdb_batch(exe, core, [f"print/d *(unsigned int *){rw:#x} >> 3",
                                    f"print/d *(int *){rw + 24:#x}"])
        ok(re.findall(r"^\$\d+ = (-?\d+)", out, re.M) == ["1", "0"],
           f"{name}: gdb reads one reader and no writer in the rwlock", out)
    return o


def main():
    cases = {}
    for shape in SHAPES:
        for v in VARIANTS:
            name = f"deadlock_cxx-{shape}.{v}"
            d = os.path.join(CORPUS, "cores", name)
            if ok(os.path.isfile(os.path.join(d, "oracle")), f"{name}: core and oracle exist",
                  f"no {d}/oracle: run corpus/make-cores {CORPUS} {name}"):
                cases[name] = d
    oracles = {name: check_case(name, d) for name, d in sorted(cases.items())}
    if not cases:
        done()
    tmp = tempfile.mkdtemp(prefix="coreq-wait-cxx-")
    atexit.register(shutil.rmtree, tmp, True)
    db = os.path.join(tmp, "w.db")
    names = sorted(cases)
    r, results = ingest(db, [cases[n] for n in names])
    ok(r.returncode == 0 and len(results) == len(names), "every core is ingested", r.stderr[-500:])
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
        dl = o["verdict"][0] == "deadlock"
        want = set()
        for t, (kind, _, owner, owner_tid, inferred) in expected_waits(o).items():
            want.add((t, kind, "inferred" if inferred else owner, owner_tid,
                      "deadlock-inferred-confirmed" if dl else "waits"))
        ok(got.get(pid, set()) == want, f"{n}: the exported waits are the oracle's",
           [f"want {sorted(want, key=str)}", f"got  {sorted(got.get(pid, set()), key=str)}"])
    done()


main()
