#!/usr/bin/env python3
"""Symbols that arrive later (issue 17): `coreq resymbolize` against a real
debuginfod.

Debian's debuginfod runs as an unprivileged process on 127.0.0.1, serving a
copy of the corpus's separated debug files (the `stripped` variant's
build-id tree).  Cores of the stripped binaries are ingested twice: into one
database with no debuginfo (their own frames are module+offset) and into
another with --debug-dir.  Expected, from those independent runs:
- before: the first database's frames in the executable have no names, and
  its cores sit in other buckets than the second's;
- `resymbolize --debuginfod URL` names them: every stored frame of the
  crashed thread has the name `coreq stack --debug-dir` gives it, and each
  core's bucket becomes the bucket the same crash got with symbols; it
  reports that every core moved;
- a second run names nothing and moves nothing.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
import urllib.request

from coreq_test import CORPUS, coreq, coreq_json, done, ok, require_corpus, skip
from test_fleet import free_port

DEBUGINFOD = shutil.which("debuginfod") or "/usr/bin/debuginfod"


def buckets(db):
    con = sqlite3.connect(db)
    rows = dict(con.execute("SELECT c.pid, b.hash FROM cores c JOIN buckets b "
                            "ON b.id = c.bucket_id").fetchall())
    con.close()
    return rows


def unnamed_exe_frames(db):
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id "
                    "JOIN core_modules cm ON cm.module_id = m.id JOIN cores c ON c.id = cm.core_id "
                    "WHERE f.function IS NULL AND cm.path = c.exe").fetchone()[0]
    con.close()
    return n


def main():
    cases = {c["case"]: c for c in require_corpus()}
    if not os.path.exists(DEBUGINFOD):
        skip("resymbolize against debuginfod", "debuginfod is not installed (make deps installs it)")
        done()
    picked = [cases[n] for n in ("abort_deep.stripped", "segv_null.stripped") if n in cases]
    debug = os.path.join(CORPUS, "debug")
    tmp = tempfile.mkdtemp(prefix="coreq-resym-")
    os.chmod(tmp, 0o755)
    server = None
    try:
        srv = os.path.join(tmp, "srv")
        shutil.copytree(debug, srv)
        port = free_port()
        cmd = [DEBUGINFOD, "-d", os.path.join(tmp, "index.sqlite"), "-p", str(port), "-F", srv]
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", "nobody:nogroup", tmp], check=True)
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + cmd
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        ids = []
        for c in picked:
            out = subprocess.run(["eu-readelf", "-n", c["exe"]], capture_output=True, text=True).stdout
            ids += [l.split()[-1] for l in out.splitlines() if "Build ID" in l]
        ready = False
        for _ in range(100):
            try:
                ready = all(urllib.request.urlopen(f"{url}/buildid/{b}/debuginfo", timeout=2).status == 200
                            for b in ids)
            except OSError:
                ready = False
            if ready:
                break
            time.sleep(0.2)
        ok(ready and ids, "debuginfod serves the corpus's debug files on 127.0.0.1")

        nosym, sym = os.path.join(tmp, "nosym.db"), os.path.join(tmp, "sym.db")
        cores = [c["core"] for c in picked]
        r1 = coreq("ingest", "--no-cache", "--db", nosym, *cores, timeout=300)
        r2 = coreq("ingest", "--no-cache", "--db", sym, "--debug-dir", debug, *cores, timeout=300)
        ok(r1.returncode == 0 and r2.returncode == 0, "ingested without and with debuginfo",
           r1.stderr + r2.stderr)
        before, want = buckets(nosym), buckets(sym)
        ok(unnamed_exe_frames(nosym) > 0 and all(before[p] != want[p] for p in want),
           "without debuginfo: unnamed frames, other buckets", str((before, want)))

        env = dict(os.environ, DEBUGINFOD_CACHE_PATH=os.path.join(tmp, "client-cache"))
        env.pop("DEBUGINFOD_URLS", None)
        r = subprocess.run([os.environ.get("COREQ", "build/asan/coreq"), "resymbolize", "--db", nosym,
                            "--debuginfod", url, "--format", "json"], capture_output=True, text=True,
                           env=env, timeout=300)
        got = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(r.returncode == 0 and got.get("found") == len(picked) and got.get("moved") == len(picked),
           f"resymbolize fetched {got.get('found')} debuginfo files, moved {got.get('moved')} cores",
           r.stdout + r.stderr[-1500:])
        ok(unnamed_exe_frames(nosym) == 0, "no frame of the executables is left unnamed")
        ok(buckets(nosym) == want, "each core is now in the bucket the same crash got with symbols",
           str((buckets(nosym), want)))
        for i, c in enumerate(picked):
            live, _ = coreq_json("stack", "--no-cache", "--format", "json", "--debug-dir", debug, c["core"])
            names = [f["function"] for f in live["threads"][0]["frames"] if f["kind"] != "inline"]
            con = sqlite3.connect(nosym)
            cid = con.execute("SELECT id FROM cores WHERE pid = ?", (int(c["pid"]),)).fetchone()[0]
            con.close()
            shown, _ = coreq_json("show", "--db", nosym, "--format", "json", str(cid))
            stored = [f["function"] for f in shown["threads"][0]["frames"] if f["kind"] != "inline"]
            ok(stored == names, f"{c['case']}: stored names equal `coreq stack --debug-dir`'s",
               str((stored, names)))

        r = subprocess.run([os.environ.get("COREQ", "build/asan/coreq"), "resymbolize", "--db", nosym,
                            "--debuginfod", url, "--format", "json"], capture_output=True, text=True,
                           env=env, timeout=300)
        again = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(again.get("frames") == 0 and again.get("moved") == 0, "a second run changes nothing",
           r.stdout + r.stderr)
    finally:
        if server:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
