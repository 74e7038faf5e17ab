#!/usr/bin/env python3
"""`coreq debug ID|CORE` and `coreq dump ID -o FILE` (issue 19), as
coredumpctl debug and dump: gdb (in batch mode here) runs on the right
executable and core, for a stored core by its id and for a zstd file,
and prints the corpus program's crash chain in order; dump writes the
stored core byte for byte (a compressed one decompressed); an unknown id is
exit 1.
"""
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import coreq, done, ok, require_corpus


def chain_in_order(text, chain):
    names = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", text, re.M)
    at = [names.index(c) for c in chain if c in names]
    return len(at) == len(chain) and at == sorted(at), names


def main():
    cases = {c["case"]: c for c in require_corpus()}
    if not shutil.which("gdb"):
        ok(False, "gdb is installed (make deps installs it)")
        done()
    case = cases["abort_deep.O2"]
    chain = case["crash_chain"].split()
    tmp = tempfile.mkdtemp(prefix="coreq-debug-")
    try:
        zst = os.path.join(tmp, "core.zst")
        subprocess.run(["zstd", "-q", "-f", case["core"], "-o", zst], check=True)
        db = os.path.join(tmp, "d.db")
        r = coreq("ingest", "--db", db, "--no-cache", case["core"], zst, timeout=300)
        ok(r.returncode == 0, "the core and its zstd copy ingested (one row)", r.stderr)
        r = coreq("debug", "--db", db, "1", "--", "-batch", "-ex", "bt", timeout=300)
        good, names = chain_in_order(r.stdout, chain)
        ok(r.returncode == 0 and good and case["exe"] in r.stdout + r.stderr,
           "debug ID: gdb on the executable and the core, the crash chain in order", str(names))
        r = coreq("debug", zst, "--", "-batch", "-ex", "bt", timeout=300)
        good, names = chain_in_order(r.stdout, chain)
        ok(r.returncode == 0 and good, "debug CORE.zst: decompressed for gdb", str(names))
        ok(not [f for f in os.listdir(tmp) if f not in ("core.zst", "d.db", "d.db-wal", "d.db-shm")],
           "nothing is left behind")
        out = os.path.join(tmp, "dumped")
        r = coreq("dump", "--db", db, "1", "-o", out, timeout=300)
        ok(r.returncode == 0 and open(out, "rb").read() == open(case["core"], "rb").read(),
           "dump ID -o FILE writes the core byte for byte", r.stderr)
        db2 = os.path.join(tmp, "z.db")
        coreq("ingest", "--db", db2, "--no-cache", zst, timeout=300)
        r = coreq("dump", "--db", db2, "1", "-o", out, timeout=300)
        ok(r.returncode == 0 and open(out, "rb").read() == open(case["core"], "rb").read(),
           "a stored .zst core is dumped decompressed", r.stderr)
        for cmd in (["dump", "--db", db, "99", "-o", out], ["debug", "--db", db, "99"]):
            r = coreq(*cmd)
            ok(r.returncode == 1 and "no core with id 99" in r.stderr, f"{cmd[0]} of an unknown id: exit 1",
               r.stderr)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
