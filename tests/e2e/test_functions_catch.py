#!/usr/bin/env python3
"""The cmd/ function-length check catches what it is for (issue 47: no cmd/
function over 60 lines).

tests/check-functions passes on this tree.  A copy of cmd/ gets one more
function at a time: one of exactly 60 lines passes; one of 61 lines fails
naming its file, line and name, and so does a subcommand's main grown by
one option case too many (a long switch in a static function whose
signature spans two lines).
"""
import os
import shutil
import subprocess
import tempfile

from coreq_test import ROOT, done, ok

CHECK = os.path.join(ROOT, "tests", "check-functions")


def check(root):
    return subprocess.run([CHECK, "--root", root], capture_output=True, text=True)


def function(name, lines, signature=None):
    """A function of exactly `lines` lines, signature to closing brace."""
    sig = signature or [f"static int {name}(int x)"]
    body = ["\tx++;"] * (lines - len(sig) - 3)
    return sig + ["{"] + body + ["\treturn x;", "}"]


def main():
    r = check(ROOT)
    ok(r.returncode == 0, "this tree passes the function-length check", r.stdout[-1000:])
    tmp = tempfile.mkdtemp(prefix="coreq-functions-")
    try:
        shutil.copytree(os.path.join(ROOT, "cmd"), os.path.join(tmp, "cmd"))
        target = os.path.join(tmp, "cmd", "merge.c")
        before = open(target).read()
        at = before.count("\n") + 2
        for lines, sig, fails in ((60, None, False), (61, None, True),
                                  (75, ["static int parse_more(int x,", "                      int y)"], True)):
            with open(target, "w") as f:
                f.write(before + "\n" + "\n".join(function("grown", lines, sig)) + "\n")
            r = check(tmp)
            name = "parse_more" if sig else "grown"
            if fails:
                ok(r.returncode == 1 and f"cmd/merge.c:{at}: {name} is {lines} lines" in r.stdout,
                   f"a {lines}-line function fails the check, named with its line", r.stdout)
            else:
                ok(r.returncode == 0, f"a {lines}-line function passes", r.stdout)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
