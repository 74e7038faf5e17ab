#!/usr/bin/env python3
"""The include-layer check catches what it is for (issue 31).

A copy of the source tree gets one upward include at a time, and
tests/check-layers --root COPY must fail naming that file and include:
- unwind/async/word_scan.c including libcore/analysis/stacktrace.h (the
  include that passed the check while unwind/async ranked with analysis);
- unwind/async/folly.c including libcore/model/core.h (a runtime reaching
  the core model instead of struct cq_unwind_target);
- unwind/unwinder.c including libcore/symbols/symbolizer.h;
- libcore/model/core.c including libcore/store/store.h.
The untouched copy passes, and so does this tree.
"""
import os
import shutil
import subprocess
import tempfile

from coreq_test import ROOT, done, ok

CHECK = os.path.join(ROOT, "tests", "check-layers")
CASES = [
    ("unwind/async/word_scan.c", "libcore/analysis/stacktrace.h"),
    ("unwind/async/folly.c", "libcore/model/core.h"),
    ("unwind/unwinder.c", "libcore/symbols/symbolizer.h"),
    ("libcore/model/core.c", "libcore/store/store.h"),
]


def check(root):
    return subprocess.run([CHECK, "--root", root], capture_output=True, text=True)


def main():
    r = check(ROOT)
    ok(r.returncode == 0, "this tree passes the layer check", r.stderr[-1000:])
    tmp = tempfile.mkdtemp(prefix="coreq-layers-")
    try:
        for d in ("libcore", "unwind", "cmd"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(tmp, d))
        r = check(tmp)
        ok(r.returncode == 0, "the copy passes before any change", r.stderr[-1000:])
        for path, target in CASES:
            f = os.path.join(tmp, path)
            before = open(f).read()
            with open(f, "w") as out:
                out.write(f'#include "{target}"\n' + before)
            r = check(tmp)
            ok(r.returncode == 1 and f"{path}:1: includes {target} from a higher layer" in r.stderr,
               f"an upward include {path} -> {target} fails the check", r.stdout + r.stderr)
            with open(f, "w") as out:
                out.write(before)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
