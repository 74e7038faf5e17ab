#!/usr/bin/env python3
"""Cold and warm paths say the same: `coreq stack --format json` of every
corpus core (x86_64 and aarch64, up to 100 threads) with an empty cache and
then with the cache that first run filled (unwind tables, symbols, the Rust
type index, the C++ coroutine types) gives the same document.

What may differ, and is removed before the comparison, is what measures the
run itself: the timings (`*_us` members of `async`) and what came from the
cache (its `*_cached` members, each runtime's own: `rust_modules_cached`,
`cxx_modules_cached`, the test stub's `stub_cached`).  Everything else, threads,
frames, names, lines, suspended chains, counters, is compared as the bytes
coreq printed, re-serialised with sorted keys.
"""
import json
import os
import tempfile

from coreq_test import CORPUS, coreq, corpus_cases, done, ok, require_corpus, sanitizer_report

def normalised(text):
    doc = json.loads(text)
    a = doc.get("async") or {}
    for k in list(a):
        if k.endswith("_us") or k.endswith("_cached"):
            del a[k]
    return json.dumps(doc, sort_keys=True)


def aarch64_cores():
    root = os.path.join(CORPUS, "aarch64")
    if not os.path.isdir(root):
        return []
    return [(f"aarch64/{n}", os.path.join(root, n, "core")) for n in sorted(os.listdir(root))
            if os.path.isfile(os.path.join(root, n, "core"))]


def main():
    require_corpus()
    cores = [(c["case"], c["core"]) for c in corpus_cases(include_big=False)] + aarch64_cores()
    ok(len(cores) >= 30, f"{len(cores)} corpus cores to compare")
    differ, broken = [], []
    for name, core in cores:
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "cache.db")
            cold = coreq("stack", "--format", "json", "--cache", cache, core, timeout=300)
            warm = coreq("stack", "--format", "json", "--cache", cache, core, timeout=300)
        if (cold.returncode, warm.returncode) != (0, 0) or sanitizer_report(cold.stderr + warm.stderr):
            broken.append(f"{name}: exit {cold.returncode}/{warm.returncode} {cold.stderr[-300:]}")
            continue
        if normalised(cold.stdout) != normalised(warm.stdout):
            differ.append(name)
    ok(not broken, "every core analyses on both paths", broken)
    ok(not differ, f"cold and warm cache give the same JSON on all {len(cores)} cores", differ)
    done()


if __name__ == "__main__":
    main()
