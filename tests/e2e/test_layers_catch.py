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

The call check (issue 47) reads the ASan build's objects with nm: with the
copy's objects (the build's, linked in) it passes, and it fails on
- a call upward: unwind/zz_up.c calling cq_store_open (libcore/store);
- a file-level cycle: libcore/model/zz_a.c and zz_b.c calling each other,
  reported as the cycle with the symbol behind each step;
- cmd/main.c including libcore/model/notes.h, no public header of the
  library (libcore/public-headers).
"""
import glob
import os
import shutil
import subprocess
import tempfile

from coreq_test import BUILD, ROOT, done, ok, skip

CHECK = os.path.join(ROOT, "tests", "check-layers")
CASES = [
    ("unwind/async/word_scan.c", "libcore/analysis/stacktrace.h"),
    ("unwind/async/folly.c", "libcore/model/core.h"),
    ("unwind/unwinder.c", "libcore/symbols/symbolizer.h"),
    ("libcore/model/core.c", "libcore/store/store.h"),
]


def check(root, objects=None):
    extra = ["--objects", objects] if objects else []
    return subprocess.run([CHECK, "--root", root] + extra, capture_output=True, text=True)


def add_object(tmp, objdir, path, text):
    """Adds source path to the copy at tmp and its object to objdir."""
    with open(os.path.join(tmp, path), "w") as f:
        f.write(text)
    obj = os.path.join(objdir, path[:-2] + ".o")
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    subprocess.run(["cc", "-c", "-o", obj, os.path.join(tmp, path)], check=True)


def calls(tmp):
    """The call check on the copy, with the build's objects and added ones."""
    asan = os.path.join(BUILD, "asan")
    objs = [o for o in glob.glob(f"{asan}/**/*.o", recursive=True)
            if not os.path.relpath(o, asan).startswith("tests/")]
    if not objs:
        skip("the call check", f"no objects under {asan}")
        return
    objdir = os.path.join(tmp, "objects")
    for o in objs:
        link = os.path.join(objdir, os.path.relpath(o, asan))
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(o, link)
    r = check(tmp, objdir)
    ok(r.returncode == 0, "the copy passes the call check with the build's objects",
       r.stderr[-1000:])
    add_object(tmp, objdir, "unwind/zz_up.c",
               "void *cq_store_open(void);\nvoid *zz_up(void);\n"
               "void *zz_up(void) { return cq_store_open(); }\n")
    r = check(tmp, objdir)
    ok(r.returncode == 1 and "unwind/zz_up.c uses cq_store_open from libcore/store/store.c, "
       "a higher layer" in r.stderr, "a call upward (unwind -> store) fails the check",
       r.stderr[-1000:])
    os.remove(os.path.join(tmp, "unwind/zz_up.c"))
    add_object(tmp, objdir, "libcore/model/zz_a.c",
               "int zz_b(int);\nint zz_a(int);\nint zz_a(int n) { return n ? zz_b(n - 1) : 0; }\n")
    add_object(tmp, objdir, "libcore/model/zz_b.c",
               "int zz_a(int);\nint zz_b(int);\nint zz_b(int n) { return n ? zz_a(n - 1) : 1; }\n")
    r = check(tmp, objdir)
    ok(r.returncode == 1 and "call cycle: libcore/model/zz_a.c -(zz_b)-> libcore/model/zz_b.c "
       "-(zz_a)-> libcore/model/zz_a.c" in r.stderr,
       "two files calling each other fail the check, the cycle named", r.stderr[-1000:])
    for name in ("zz_a", "zz_b"):
        os.remove(os.path.join(tmp, f"libcore/model/{name}.c"))
    r = check(tmp, objdir)
    ok(r.returncode == 0, "objects whose source is gone are not read", r.stderr[-1000:])


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
        f = os.path.join(tmp, "cmd/main.c")
        before = open(f).read()
        with open(f, "w") as out:
            out.write('#include "libcore/model/notes.h"\n' + before)
        r = check(tmp)
        ok(r.returncode == 1 and "cmd/main.c:1: includes libcore/model/notes.h, not a public header"
           in r.stderr, "cmd/ including a library header not listed public fails the check",
           r.stdout + r.stderr)
        with open(f, "w") as out:
            out.write(before)
        calls(tmp)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
