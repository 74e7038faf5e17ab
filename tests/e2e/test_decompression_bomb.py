#!/usr/bin/env python3
"""Decompression bombs are cut, not spooled whole (issue 16, item 4).

A real corpus core followed by 512 MiB of zeros, compressed with zstd (a few
hundred KiB on disk), stands for a bomb.  With `--max-core-size`:
- a cap above the core's own bytes: the core is analysed as usual (every
  thread, from its notes), one warning says where the stream was cut, and
  the JSON says `cut_at` = the cap;
- a cap inside the core's memory segments: a partial result (exit 0,
  `truncated`, memory missing), not an error;
- ingest stores the cut core as partial;
- a malformed size is a usage error (exit 2).
The expected thread count comes from the core's notes (elfcore.py).
"""
import json
import os
import shutil
import subprocess
import tempfile

import elfcore
from coreq_test import coreq, done, ok, require_corpus, sanitizer_report

ZEROS = 512 << 20


def make_bomb(src, dst):
    proc = subprocess.Popen(["zstd", "-q", "-1", "-c"], stdin=subprocess.PIPE,
                            stdout=open(dst, "wb"))
    proc.stdin.write(open(src, "rb").read())
    chunk = b"\0" * (1 << 20)
    for _ in range(ZEROS >> 20):
        proc.stdin.write(chunk)
    proc.stdin.close()
    return proc.wait() == 0


def main():
    cases = {c["case"]: c for c in require_corpus()}
    src = cases["threads8.O2"]["core"]
    data = open(src, "rb").read()
    nthreads = sum(1 for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS)
    loads = [p for p in elfcore.phdrs(data) if p["type"] == elfcore.PT_LOAD and p["filesz"]]
    tmp = tempfile.mkdtemp(prefix="coreq-bomb-")
    env = dict(os.environ, TMPDIR=tmp)
    try:
        bomb = os.path.join(tmp, "bomb.core.zst")
        ok(make_bomb(src, bomb), f"bomb made ({os.path.getsize(bomb)} bytes for "
                                 f"{len(data) + ZEROS} decompressed)")

        cap = ((len(data) >> 20) + 2) << 20
        r = coreq("stack", "--format", "json", "--max-core-size", f"{cap >> 20}M", bomb, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "a bomb under a cap is analysed",
           r.stderr[-2000:])
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(len(doc.get("threads", [])) == nthreads, f"every thread is there ({nthreads})")
        ok(doc.get("core", {}).get("cut_at") == cap, f"JSON says it was cut at {cap}",
           str(doc.get("core", {}).get("cut_at")))
        warns = [l for l in r.stderr.splitlines() if "cut at" in l]
        ok(len(warns) == 1 and bomb in warns[0], "one warning names the cut", r.stderr)

        # A cap inside the memory segments: the core is as truncated.
        mid = loads[len(loads) // 2]["offset"] + 4096
        r = coreq("stack", "--format", "json", "--max-core-size", str(mid), bomb, timeout=300)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        core = doc.get("core", {})
        ok(r.returncode == 0 and core.get("truncated") and core.get("memory_missing", 0) > 0
           and core.get("cut_at") == mid, "a cap inside the core gives a partial result",
           r.stderr[-2000:])

        db = os.path.join(tmp, "db.sqlite")
        r = coreq("ingest", "--db", db, "--max-core-size", str(mid), bomb, timeout=300)
        ok(r.returncode == 0, "ingest stores the cut core", r.stderr[-2000:])
        r = coreq("cores", "--db", db, "--format", "json")
        rows = json.loads(r.stdout).get("cores", []) if r.returncode == 0 else []
        ok(len(rows) == 1 and rows[0].get("status") == "partial", "stored as partial",
           r.stdout[-500:])

        for bad in ("12Q", "-5", "0", ""):
            r = coreq("info", "--max-core-size", bad, bomb)
            ok(r.returncode == 2 and "--max-core-size" in r.stderr,
               f"--max-core-size '{bad}' is a usage error", r.stderr)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
