#!/usr/bin/env python3
"""A forged thread count costs little (issue 16, item 3).

A real corpus core is given 100,000 extra NT_PRSTATUS notes, each a copy of
a parked thread's with its own tid, so every forged thread unwinds to a
full stack.  The release build's `coreq stack --format json` and
`coreq ingest` must report every thread (the count comes from the rewritten
notes) with a peak resident set under 128 MiB: what a forged count can make
coreq allocate is bounded by the distinct stacks and a few hundred bytes
per thread, not by a copy of every stack.  (No time is asserted here; the
time is a `make bench` row.)
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile

import elfcore
from coreq_test import COREQ_RELEASE, done, ok, require_corpus

FORGED = 100_000
RSS_LIMIT_KIB = 128 * 1024


def forge(src, dst):
    data = open(src, "rb").read()
    notes = elfcore.notes(data)
    prstatus = [n for n in notes if n["type"] == elfcore.NT_PRSTATUS and n["name"] == b"CORE"]
    blob = bytearray(b"".join(elfcore.raw_note(data, n) for n in notes))
    desc = bytearray(prstatus[1]["desc"])
    for i in range(FORGED):
        struct.pack_into("<i", desc, elfcore.PRSTATUS_PID, 1_000_000 + i)
        blob += elfcore.note_bytes(b"CORE", elfcore.NT_PRSTATUS, desc)
    with open(dst, "wb") as f:
        f.write(elfcore.with_notes(data, bytes(blob)))
    return len(prstatus) + FORGED


def peak_rss_kib(args, out):
    """Runs args with stdout to out under /usr/bin/time (which forks a small
    process for it: a fork of this Python would carry its peak RSS over
    the exec); the exit code and coreq's peak RSS in KiB."""
    rss = out + ".rss"
    with open(out, "wb") as f:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss] + args, stdout=f,
                           stderr=subprocess.DEVNULL)
    lines = open(rss).read().split()
    return p.returncode, int(lines[-1]) if lines else 1 << 40


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-forged-")
    try:
        core = os.path.join(tmp, "forged.core")
        nthreads = forge(cases["threads8.O2"]["core"], core)
        out = os.path.join(tmp, "stack.json")
        rc, rss = peak_rss_kib([COREQ_RELEASE, "stack", "--format", "json", "--no-cache", core], out)
        ok(rc == 0, f"stack --format json on {nthreads} threads exits 0")
        threads = json.load(open(out))["threads"] if rc == 0 else []
        ok(len(threads) == nthreads and len({t["tid"] for t in threads}) == nthreads,
           f"every thread is reported once ({len(threads)} of {nthreads})")
        ok(rss < RSS_LIMIT_KIB, f"stack: peak RSS {rss // 1024} MiB < 128 MiB")

        db = os.path.join(tmp, "db.sqlite")
        rc, rss = peak_rss_kib([COREQ_RELEASE, "ingest", "--no-cache", "--db", db, "--format", "json",
                                core], os.path.join(tmp, "ingest.json"))
        ok(rc == 0, "ingest exits 0")
        ok(rss < RSS_LIMIT_KIB, f"ingest: peak RSS {rss // 1024} MiB < 128 MiB")
        import sqlite3
        con = sqlite3.connect(db)
        n = con.execute("SELECT count(*) FROM threads").fetchone()[0]
        con.close()
        ok(n == nthreads, f"ingest stores every thread ({n} of {nthreads})")
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
