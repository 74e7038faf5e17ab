#!/usr/bin/env python3
"""Files a core names are untrusted too: a module path swapped for a FIFO
(a plain open() would block forever) must not hang coreq, and a directory
ingest must not retry forever a core whose analysis died, starving the
cores after it.  Oracles: the timeout, and the database's own rows."""
import os
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import coreq, done, ok, require_corpus


def main():
    cases = {c["case"]: c for c in require_corpus()}
    case = cases["abort_deep.O0"]
    with tempfile.TemporaryDirectory(prefix="coreq-fifo-") as tmp:
        # A sysroot where the executable is a FIFO and libc a directory.
        root = os.path.join(tmp, "root")
        exe = root + case["exe"]
        os.makedirs(os.path.dirname(exe))
        os.mkfifo(exe)
        try:
            r = coreq("stack", "--format", "json", "--no-cache", "--sysroot", root, case["core"], timeout=30)
            hung = False
        except subprocess.TimeoutExpired:
            hung, r = True, None
        ok(not hung and r.returncode == 0, "a module path that is a FIFO: coreq stack does not block",
           r.stderr if r else "timed out")
        r = coreq("info", "--format", "json", "--sysroot", root, case["core"], timeout=30)
        ok(r.returncode == 0 and '"status":"missing"' in r.stdout.replace(" ", ""),
           "and the FIFO is not taken as the module: it is reported missing", r.stdout[-400:])

    with tempfile.TemporaryDirectory(prefix="coreq-started-") as tmp:
        d = os.path.join(tmp, "cores")
        os.makedirs(d)
        names = ["core.a", "core.b", "core.c"]
        for n, c in zip(names, ("abort_deep.O0", "fpe.O0", "segv_null.O0")):
            shutil.copyfile(cases[c]["core"], os.path.join(d, n))
        db = os.path.join(tmp, "coreq.db")
        r = coreq("ingest", "--db", db, "--format", "json", os.path.join(d, "core.a"))
        # An earlier directory run that died while analysing core.b: its row is 'started'.
        con = sqlite3.connect(db)
        b = os.path.realpath(os.path.join(d, "core.b"))
        st = os.stat(b)
        con.execute("INSERT INTO seen_files (path, size, mtime_ns, status, seen_at) VALUES (?, ?, ?, 'started', 0)",
                    (b, st.st_size, st.st_mtime_ns))
        con.commit()
        con.close()
        r = coreq("ingest", "--db", db, "--format", "json", d, timeout=120)
        lines = r.stderr.strip().splitlines()
        ok(r.returncode == 1 and len(lines) == 1 and "core.b" in lines[0] and "did not finish" in lines[0],
           "a file whose earlier analysis died is reported once as failed", r.stderr)
        con = sqlite3.connect(db)
        paths = sorted(os.path.basename(p) for (p,) in con.execute("SELECT path FROM cores"))
        status = dict((os.path.basename(p), s) for p, s in con.execute("SELECT path, status FROM seen_files"))
        con.close()
        ok(paths == ["core.a", "core.c"] and status.get("core.b") == "failed" and status.get("core.c") == "ingested",
           "the cores after it are ingested, and it is remembered as failed", [paths, status])
        r = coreq("ingest", "--db", db, "--format", "json", d, timeout=120)
        ok(r.returncode == 0 and '"unchanged":3' in r.stdout, "the next run skips all three", r.stdout + r.stderr)
    done()


if __name__ == "__main__":
    main()
