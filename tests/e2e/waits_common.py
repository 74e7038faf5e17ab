"""Helpers shared by the wait tests (test_fleet, test_wait_buckets,
test_wait_python, test_wait_primitives, test_waits): the oracle a hung
corpus program writes beside its core, and ingesting hung cores."""
import json
import os

from coreq_test import coreq


def read_oracle(path, holds_detail=False, verdict_words=False):
    """A hung program's own account (corpus/deadlock.c's format, also
    corpus/real/python3-deadlock.py's), one fact a line: each thread's tid
    and role, each lock's address, who holds which lock (the holder's tid;
    with holds_detail, (tid, kind, times)), who waits on which, who is
    blocked in what, who joins whom, each pthread_t, the robust mutexes'
    dead owners, the PI and robust mutexes, the exited threads, the threads
    whose PI lock the kernel refused, and the
    verdict (its first word; with verdict_words, all its words)."""
    o = {"threads": {}, "locks": {}, "holds": {}, "waits": {}, "blocked": {}, "joins": {},
         "pthread": {}, "died": {}, "pi": set(), "robust": set(), "exited": set(), "refused": set(),
         "verdict": None}
    for line in open(path):
        f = line.split()
        if f[0] == "thread":
            o["threads"][int(f[1])] = f[2]
        elif f[0] == "lock":
            o["locks"][f[1]] = int(f[2], 16)
        elif f[0] == "holds":
            o["holds"][int(f[3], 16)] = (int(f[1]), f[2], int(f[4])) if holds_detail else int(f[1])
        elif f[0] == "waits":
            o["waits"][int(f[1])] = (f[2], int(f[3], 16))
        elif f[0] == "blocked":
            o["blocked"][int(f[1])] = f[2]
        elif f[0] == "joins":
            o["joins"][int(f[1])] = int(f[2])
        elif f[0] == "pthread":
            o["pthread"][int(f[1])] = int(f[2], 16)
        elif f[0] == "died":
            o["died"][int(f[1], 16)] = int(f[2])
        elif f[0] in ("pi", "robust"):
            o[f[0]].add(int(f[1], 16))
        elif f[0] in ("exited", "refused"):
            o[f[0]].add(int(f[1]))
        elif f[0] == "verdict":
            o["verdict"] = f[1:] if verdict_words else f[1]
    return o


def ingest(db, dirs):
    """`coreq ingest --format json` of the cores in dirs into the store db:
    the run and its results (one a core, in order; [] if its output is no
    JSON)."""
    r = coreq("ingest", "--db", db, "--no-cache", "--format", "json",
              *[os.path.join(d, "core") for d in dirs], timeout=600)
    try:
        return r, json.loads(r.stdout).get("results", [])
    except ValueError:
        return r, []
