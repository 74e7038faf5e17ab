#!/usr/bin/env python3
"""Who crashed, by one rule everywhere (issue 31, finding 4).

A core without NT_PRPSINFO (psinfo) has no pid, uid or gid of its own.
systemd-coredump's file name (core.COMM.UID.BOOTID.PID.USEC) records them.
The rule, in libcore/capture (cq_capture_ids): psinfo first, else the
capture, else the crashed thread's id for the pid (uid/gid unknown).
Before, `info` and `stack` fell back to the thread id while the store took
the capture: the same core showed two pids.  This test takes a corpus core,
drops its NT_PRPSINFO note (tests/e2e/elfcore.py), names it as systemd
would, and checks that `info` (text, JSON), `stack` (text, JSON) and
`ingest` -> `cores` all give the file name's pid and uid; and that without
the name, all of them give the crashed thread's id and no uid.
"""
import json
import os
import re
import shutil
import sqlite3
import tempfile

import elfcore
from coreq_test import CORPUS, coreq, done, ok, require_corpus

PID, UID = 4242, 1234
NAME = f"core.segv_null.{UID}.0123456789abcdef0123456789abcdef.{PID}.1763700000000000"


def without_psinfo(data):
    kept = [n for n in elfcore.notes(data) if n["type"] != elfcore.NT_PRPSINFO]
    return elfcore.with_notes(data, b"".join(elfcore.raw_note(data, n) for n in kept))


def main():
    require_corpus()
    data = open(os.path.join(CORPUS, "cores", "segv_null.O2", "core"), "rb").read()
    tid = [int.from_bytes(n["desc"][elfcore.PRSTATUS_PID:elfcore.PRSTATUS_PID + 4], "little")
           for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS][0]
    tmp = tempfile.mkdtemp(prefix="coreq-ids-")
    try:
        bare = os.path.join(tmp, "bare.core")
        open(bare, "wb").write(without_psinfo(data))
        named = os.path.join(tmp, NAME)
        shutil.copy(bare, named)
        for core, pid, uid, what in [(named, PID, UID, "systemd-named"), (bare, tid, None, "unnamed")]:
            r = coreq("info", "--format", "json", core)
            j = json.loads(r.stdout) if r.returncode == 0 else {}
            ok(j.get("core", {}).get("pid") == pid and j.get("uid") == uid,
               f"{what}: info --format json gives pid {pid}, uid {uid}", r.stdout[:400] + r.stderr)
            r = coreq("info", core)
            m = re.search(r"^pid:\s+(\d+)", r.stdout, re.M)
            u = re.search(r"^uid/gid:\s+(\d+)/", r.stdout, re.M)
            ok(m and int(m.group(1)) == pid and (int(u.group(1)) if u else None) == uid,
               f"{what}: info text gives pid {pid}, uid {uid}", r.stdout[:400])
            r = coreq("stack", "--format", "json", "--no-cache", core)
            j = json.loads(r.stdout) if r.returncode == 0 else {}
            ok(j.get("core", {}).get("pid") == pid, f"{what}: stack --format json gives pid {pid}",
               r.stdout[:300])
            r = coreq("stack", "--no-cache", core)
            ok(re.search(rf": pid {pid}\b", r.stdout.splitlines()[0] if r.stdout else "") is not None,
               f"{what}: stack's header gives pid {pid}", r.stdout[:300])
            db = os.path.join(tmp, f"{what}.db")
            r = coreq("ingest", "--no-cache", "--db", db, core)
            con = sqlite3.connect(db)
            row = con.execute("SELECT pid, uid FROM cores").fetchone()
            con.close()
            ok(row == (pid, uid), f"{what}: ingest stores pid {pid}, uid {uid}", str(row) + r.stderr)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
