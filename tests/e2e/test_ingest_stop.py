#!/usr/bin/env python3
"""`coreq ingest DIR` stopped by SIGTERM (systemctl stop or restart of
coreq-ingest.service, a shutdown) in the middle of a run: it finishes the
core it is analysing and stops before the next, so the next run takes every
core left and reports none as failed.  Before, the signal killed it inside
an analysis, and the next run reported that core "did not finish" and never
stored it (tests/systemd-real/run's storm, restart half way, found the
risk).  Oracle: the corpus's cores, each stored once across the two runs
(sqlite3 counts the rows), and the exit of the first run by SIGTERM."""
import os
import signal
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import COREQ, done, ok, require_corpus


def main():
    every = require_corpus()
    small = [c for c in every if os.path.getsize(c["core"]) < 4 << 20][:12]
    # The second core takes a while (3000 threads): the signal lands inside its analysis.
    big = [c for c in every if c["case"] == "threads-3000"]
    cases = small[:1] + big + small[1:]
    with tempfile.TemporaryDirectory(prefix="coreq-ingest-stop-") as tmp:
        d = os.path.join(tmp, "cores")
        os.makedirs(d)
        for i, c in enumerate(cases):
            os.symlink(c["core"], os.path.join(d, f"{i:02}-{c['case']}.core"))
        db = os.path.join(tmp, "coreq.db")
        cmd = [COREQ, "ingest", "--db", db, "--no-cache", d]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = p.stdout.readline()
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
        ok("ingested as" in first, "the first run stores a core before the signal", first + err)
        ok(p.returncode == -signal.SIGTERM, "the first run ends by SIGTERM", f"exit {p.returncode}")
        ok("stopped by" in err and "left for the next run" in err,
           "it says it stopped and how many files it left", err)
        ok("AddressSanitizer" not in err and "runtime error" not in err, "no sanitizer report", err)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        ok(r.returncode == 0 and "did not finish" not in r.stdout + r.stderr,
           "the second run takes the rest and reports no core failed", r.stdout + r.stderr)
        con = sqlite3.connect(db)
        n = con.execute("SELECT count(*) FROM cores").fetchone()[0]
        files = con.execute("SELECT count(*), sum(status = 'started') FROM seen_files").fetchone()
        con.close()
        identities = len({open(c["core"], "rb").read() for c in cases})
        ok(n == identities, f"each of the {identities} distinct cores is stored once", f"{n} rows")
        ok(files[0] == len(cases) and files[1] == 0,
           f"every one of the {len(cases)} files is recorded, none as still started", f"{files}")
    done()


if __name__ == "__main__":
    main()
