#!/usr/bin/env python3
"""Asserts are on in both builds (docs/invariants.md).

The release build is compiled without -DNDEBUG, like the ASan build: both
binaries must call glibc's __assert_fail (an assert compiled out leaves no
call), as their dynamic symbol tables say (nm -D).  The Makefile's release
flags must not define NDEBUG either.
"""
import os
import re
import subprocess

from coreq_test import COREQ, COREQ_RELEASE, ROOT, done, ok


def calls_assert_fail(binary):
    r = subprocess.run(["nm", "-D", "--undefined-only", binary], capture_output=True, text=True)
    return r.returncode == 0 and re.search(r"\b__assert_fail\b", r.stdout) is not None, r.stderr


def main():
    for name, binary in (("the ASan build", COREQ), ("the release build", COREQ_RELEASE)):
        has, err = calls_assert_fail(binary)
        ok(has, f"{name} ({binary}) calls __assert_fail: its asserts are compiled in", err)
    with open(os.path.join(ROOT, "Makefile")) as f:
        flags = [l for l in f if l.startswith(("REL_CFLAGS", "BASE_CFLAGS", "ASAN_CFLAGS"))]
    ok(flags and not any("NDEBUG" in l for l in flags),
       "the Makefile's compile flags do not define NDEBUG", flags)
    done()


if __name__ == "__main__":
    main()
