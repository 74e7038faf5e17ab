#!/usr/bin/env python3
"""Two threads with one tid (issue 16, item 2).

A core whose notes carry two NT_PRSTATUS notes with the same pid is made
from a real corpus core: the crashed thread's NT_PRSTATUS is repeated at the
end of the notes with the tid of the second thread.  Expected, from the
rewritten notes alone: one thread more than the original has, two threads
with that tid, one of them with the crashed thread's registers.
- `coreq stack` (text and JSON) shows every thread, both with that tid,
  and warns once that a tid repeats;
- `coreq ingest` stores the core (it used to fail the whole ingest with a
  UNIQUE constraint), with every thread, and warns;
- `coreq show` lists both threads.
"""
import json
import os
import shutil
import sqlite3
import struct
import tempfile

import elfcore
from coreq_test import coreq, done, ok, require_corpus, sanitizer_report


def forge(src, dst):
    data = open(src, "rb").read()
    notes = elfcore.notes(data)
    prstatus = [n for n in notes if n["type"] == elfcore.NT_PRSTATUS and n["name"] == b"CORE"]
    dup_tid, = struct.unpack_from("<i", prstatus[1]["desc"], elfcore.PRSTATUS_PID)
    desc = bytearray(prstatus[0]["desc"])
    struct.pack_into("<i", desc, elfcore.PRSTATUS_PID, dup_tid)
    blob = b"".join(elfcore.raw_note(data, n) for n in notes)
    blob += elfcore.note_bytes(b"CORE", elfcore.NT_PRSTATUS, bytes(desc))
    with open(dst, "wb") as f:
        f.write(elfcore.with_notes(data, blob))
    return len(prstatus) + 1, dup_tid


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-duptid-")
    try:
        core = os.path.join(tmp, "dup.core")
        nthreads, tid = forge(cases["threads8.O2"]["core"], core)

        r = coreq("stack", "--format", "json", core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "stack on a core with a repeated tid",
           r.stderr[-2000:])
        threads = json.loads(r.stdout)["threads"] if r.returncode == 0 else []
        same = [t for t in threads if t["tid"] == tid]
        ok(len(threads) == nthreads, f"stack shows every thread ({len(threads)} of {nthreads})")
        ok(len(same) == 2 and same[0]["frames"] != same[1]["frames"],
           f"both threads with tid {tid} are shown, each with its own stack")
        warn = [l for l in r.stderr.splitlines() if "warning" in l and "tid" in l]
        ok(len(warn) == 1 and core in warn[0], "stack warns once that a tid repeats", r.stderr)

        text = coreq("stack", core, timeout=300)
        ok(text.returncode == 0 and text.stdout.count(str(tid)) >= 2,
           "text output shows both threads", text.stderr[-1000:])

        db = os.path.join(tmp, "db.sqlite")
        r = coreq("ingest", "--db", db, "--format", "json", core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "ingest stores the core",
           r.stdout + r.stderr[-2000:])
        ok(any("warning" in l and "tid" in l for l in r.stderr.splitlines()), "ingest warns",
           r.stderr)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT tid, stack_id FROM threads").fetchall()
        core_id = con.execute("SELECT id FROM cores").fetchone()
        con.close()
        ok(len(rows) == nthreads, f"every thread is stored ({len(rows)} of {nthreads})")
        dup = [s for t, s in rows if t == tid]
        ok(len(dup) == 2 and dup[0] != dup[1], "both threads with the tid are stored, with their stacks")

        if core_id:
            r = coreq("show", "--db", db, "--format", "json", str(core_id[0]))
            shown = json.loads(r.stdout)["threads"] if r.returncode == 0 else []
            ok(len([t for t in shown if t["tid"] == tid]) == 2 and len(shown) == nthreads,
               "show lists both threads", r.stderr)
        else:
            ok(False, "show lists both threads", "nothing stored")
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
