#!/usr/bin/env python3
"""Strings from a core cannot forge output lines or drive the terminal (issue 16, item 7).

A real corpus core is given a hostile process name and command line
(NT_PRPSINFO fname and psargs) and a hostile NT_FILE path, each holding an
ESC sequence and a newline followed by a forged line.  In `info`, `stack`,
`ingest`, `cores` and `show` text output, and in the hook's log line (whose
COMM argument is the crashed process's name):
- no raw ESC or other control byte reaches the output;
- the forged text never starts a line of its own;
- the escaped form (\\x1b, \\n) is shown instead, so nothing is hidden.
JSON output already escapes them; it must still carry the exact bytes.
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile

import elfcore
from coreq_test import COREQ, coreq, done, ok, require_corpus, sanitizer_report

FORGED = "FORGED: all good"
EVIL = "\x1b[2J\x1b[31mred\nFORGED: all good"


def forge(src, dst):
    data = bytearray(open(src, "rb").read())
    libc_hit = None
    for n in elfcore.notes(data):
        if n["type"] == elfcore.NT_PRPSINFO:
            fname = b"ev\x1b[31m\nFORGED"[:15] + b"\0"
            data[n["desc_off"] + elfcore.PRPSINFO_FNAME:][:16] = fname.ljust(16, b"\0")
            args = EVIL.encode().ljust(80, b"\0")[:79] + b"\0"
            data[n["desc_off"] + elfcore.PRPSINFO_PSARGS: n["desc_off"] + elfcore.PRPSINFO_PSARGS + 80] = args
        if n["type"] == elfcore.NT_FILE:
            desc = n["desc"]
            at = desc.find(b"libc.so.6")
            if at > 0:  # same length: "libc.so.6" -> "l\x1b\n" + 6 bytes
                repl = b"l\x1b\nFORGE"[:9].ljust(9, b"x")
                off = n["desc_off"] + at
                data[off: off + 9] = repl
                libc_hit = True
    open(dst, "wb").write(data)
    return libc_hit


def clean(text, what):
    bad = [c for c in text if ord(c) < 0x20 and c not in "\n\t"]
    ok(not bad, f"{what}: no control bytes", repr(bad[:5]))
    ok(not any(l.startswith("FORGED") for l in text.splitlines()),
       f"{what}: no forged line", text[:500])
    return not bad


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-inject-")
    try:
        core = os.path.join(tmp, "evil.core")
        ok(forge(cases["threads8.O2"]["core"], core), "hostile notes written")

        r = coreq("info", core)
        ok(r.returncode == 0, "info", r.stderr)
        clean(r.stdout, "info")
        ok("\\x1b[31m" in r.stdout and "\\nFORGED" in r.stdout, "info shows the escapes",
           r.stdout[:800])
        j = coreq("info", "--format", "json", core)
        ok(j.returncode == 0 and json.loads(j.stdout)["core"]["cmdline"] == EVIL[:79],
           "JSON keeps the exact bytes")

        r = coreq("stack", core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "stack", r.stderr[-1000:])
        clean(r.stdout, "stack")
        clean(r.stderr, "stack stderr")

        db = os.path.join(tmp, "db.sqlite")
        r = coreq("ingest", "--db", db, core, timeout=300)
        ok(r.returncode == 0, "ingest", r.stderr)
        clean(r.stdout + r.stderr, "ingest")
        for args in (("cores",), ("show", "1")):
            r = coreq(*args, "--db", db)
            ok(r.returncode == 0, args[0], r.stderr)
            clean(r.stdout, args[0])

        # The hook's log line carries the process name the kernel passes.
        store = os.path.join(tmp, "store")
        args = [COREQ, "hook", "--store", store, "--db", os.path.join(tmp, "hook.db"), "--cache",
                os.path.join(tmp, "cache.db"), "4242", str(os.getuid()), str(os.getgid()), "6",
                "1763700000", "18446744073709551615", "host\x1b[1m", "ev\x1b[31m\nFORGED"]
        with open(core, "rb") as f:
            r = subprocess.run(args, stdin=f, capture_output=True, text=True, timeout=300)
        ok(r.returncode == 0, "hook", r.stderr)
        lines = r.stderr.strip().splitlines()
        ok(len(lines) == 1 and "\\x1b" in lines[0], "the hook logs one escaped line", r.stderr)
        clean(r.stderr, "hook log")
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
