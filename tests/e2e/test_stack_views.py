#!/usr/bin/env python3
"""The views of `coreq stack` beyond every thread in full (issue 19):
--thread TID..., --crashed, --group and --format folded, on the corpus
nthreads cores (a main thread that aborts in nthreads_crash, N threads
parked in parked_thread; the tids come from the core's notes).

- --crashed shows the crashed thread only; --thread TID that thread only (two
  of them with two options); a tid the core does not have is exit 1;
- --group on threads-3000 prints each distinct stack once: the crashed main
  thread's, and one stack for all 3000 parked threads with their tids, in a
  screen of text instead of 27,000 lines; JSON gives the same groups;
- --format folded: one line per distinct stack, outermost frame first, with
  the thread counts summing to the threads of the core.
"""
import json
import os
import re
import struct

import elfcore
from coreq_test import coreq, done, ok, require_corpus


def tids_of(core):
    data = open(core, "rb").read()
    return [struct.unpack_from("<i", n["desc"], elfcore.PRSTATUS_PID)[0]
            for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS]


def main():
    cases = {c["case"]: c for c in require_corpus()}
    small = cases["threads-10"]["core"]
    tids = tids_of(small)

    r = coreq("stack", "--crashed", small, timeout=300)
    shown = [int(t) for t in re.findall(r"^Thread (\d+)", r.stdout, re.M)]
    ok(r.returncode == 0 and shown == [tids[0]] and "nthreads_crash" in r.stdout,
       "--crashed: the crashed thread only", r.stdout[:400])
    r = coreq("stack", "--format", "json", "--thread", str(tids[3]), "--thread", str(tids[5]), small,
              timeout=300)
    doc = json.loads(r.stdout) if r.returncode == 0 else {"threads": []}
    ok(sorted(t["tid"] for t in doc["threads"]) == sorted([tids[3], tids[5]]) and
       all(any(f["function"] == "parked_thread" for f in t["frames"]) for t in doc["threads"]),
       "--thread TID --thread TID: those two parked threads")
    bad = max(tids) + 1000
    r = coreq("stack", "--thread", str(bad), small)
    ok(r.returncode == 1 and f"no thread {bad}" in r.stderr, "an unknown tid is exit 1", r.stderr)

    big = cases["threads-3000"]["core"]
    btids = tids_of(big)
    r = coreq("stack", "--group", big, timeout=600)
    lines = r.stdout.splitlines()
    heads = [l for l in lines if re.match(r"^\d+ threads?\b", l)]
    ok(r.returncode == 0 and len(heads) == 2 and heads[0].startswith("1 thread (one crashed)")
       and heads[1].startswith(f"{len(btids) - 1} threads: "), "--group: two distinct stacks",
       "\n".join(heads))
    ok(len(lines) < 60, f"--group fits a screen ({len(lines)} lines for {len(btids)} threads)")
    rest = sorted(btids[1:])
    if len(heads) == 2:
        ranges = heads[1].split(": ", 1)[1]
        got = []
        for part in ranges.split(", "):
            a, _, b = part.partition("-")
            got += list(range(int(a), int(b or a) + 1))
        ok(got == rest, "the parked group lists every parked tid")
    r = coreq("stack", "--group", "--format", "json", big, timeout=600)
    groups = json.loads(r.stdout)["groups"] if r.returncode == 0 else []
    ok([(g["threads"], g["crashed"]) for g in groups] == [(1, True), (len(btids) - 1, False)] and
       groups[1]["tids"] == rest and
       any(f["function"] == "parked_thread" for f in groups[1]["frames"]) and
       any(f["function"] == "nthreads_crash" for f in groups[0]["frames"]),
       "--group JSON: the same two groups")

    r = coreq("stack", "--format", "folded", small, timeout=300)
    folded = [l.rsplit(" ", 1) for l in r.stdout.splitlines()]
    ok(r.returncode == 0 and sum(int(c) for _, c in folded) == len(tids),
       f"folded: counts sum to the {len(tids)} threads", r.stdout)
    parked = [s for s, c in folded if int(c) == len(tids) - 1]
    ok(parked and parked[0].split(";")[0] in ("__clone3", "clone3", "__clone") and
       "parked_thread" in parked[0].split(";"), "folded: outermost frame first", r.stdout)
    import tempfile
    import shutil
    tmp = tempfile.mkdtemp(prefix="coreq-views-")
    try:
        db = os.path.join(tmp, "v.db")
        coreq("ingest", "--db", db, "--no-cache", small, timeout=300)
        r = coreq("list-stacks", "--db", db, "--format", "folded")
        rows = [l.rsplit(" ", 1) for l in r.stdout.splitlines()]
        ok(r.returncode == 0 and sum(int(c) for _, c in rows) == len(tids) and
           any("parked_thread" in s.split(";") and int(c) == len(tids) - 1 for s, c in rows),
           "list-stacks --format folded: the stored stacks, counts summing to the threads", r.stdout)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
