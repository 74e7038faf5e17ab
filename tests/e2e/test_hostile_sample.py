#!/usr/bin/env python3
"""The bounded hostile-input run of issue 16: tests/hostile/hostile.py with a
fixed seed and 25 inputs per class (a few hundred in all) against the
ASan+UBSan build and the release build.  One TAP line per class: every column
but `inputs` must be 0 (no sanitizer report, no hang, nothing slow or big
beyond its honest twin, exit 0 or 1 only, one `coreq: PATH: reason` line
per failure, valid JSON on success).  `make hostile N=...` runs it at scale.
"""
import os
import subprocess
import sys
import tempfile

from coreq_test import CORPUS, done, ok, require_corpus

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    require_corpus()
    out = tempfile.mkdtemp(prefix="coreq-hostile-")
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "..", "hostile", "hostile.py"),
                            "--corpus", CORPUS, "--out", out, "--per-class", "25", "--seed", "16"],
                           capture_output=True, text=True, timeout=900)
        lines = p.stdout.splitlines()
        header = lines[0].split() if lines else []
        rows = [l.split() for l in lines[1:] if l and not l.startswith("#")]
        details = "\n".join(l for l in lines if l.startswith("#"))
        ok(header[:2] == ["class", "inputs"] and rows, "the hostile run printed its table",
           p.stdout[-2000:] + p.stderr[-2000:])
        for r in rows:
            if r[0] == "all":
                continue
            counts = dict(zip(header[1:], map(int, r[1:])))
            bad = {k: v for k, v in counts.items() if k != "inputs" and v}
            mine = "\n".join(l for l in details.splitlines() if l.startswith(f"# {r[0]} ") or
                             (l.startswith("#   ") and bad))
            ok(counts["inputs"] > 0 and not bad,
               f"{r[0]}: {counts['inputs']} inputs, " + (", ".join(f"{v} {k}" for k, v in bad.items())
                                                      or "all survived"), mine[:3000])
        print("# " + "\n# ".join(lines[: len(rows) + 1]))
    finally:
        subprocess.run(["rm", "-rf", out])
    done()


if __name__ == "__main__":
    main()
