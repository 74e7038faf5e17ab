#!/usr/bin/env python3
"""A file that only claims a build-id must not poison the cache (issue 30, finding 4).

EVIL is the corpus executable with its function names rewritten in place
(same length, so every offset and the build-id note stay as they are): it
carries the genuine build-id and lies about its symbols.  The cache keys each
entry by build-id and by the identity of the files it was computed from
(libcore/symbols/provenance.h), so:
- `coreq stack --exe EVIL` names the frames from EVIL (the user asked for that
  file), and a later `coreq stack` of the genuine binary with the same cache
  names them as a run without any cache does;
- the same with EVIL planted under a `--sysroot` tree, and with the genuine
  run first (EVIL's run then neither reads nor replaces the genuine rows);
- the cache holds one `sources` row per file identity of the executable.
The expected names are the ones the genuine file's own symbol table gives
(`--no-cache`), and the rewritten names come from the bytes this test wrote.
"""
import os
import shutil
import sqlite3
import tempfile

from coreq_test import CORPUS, coreq, done, ok, require_corpus, sanitizer_report

NAMES = {b"store_null": b"EVIL_null_", b"writer": b"XXXXXX"}


def functions(core, *extra, cache=None):
    args = ["stack", "--format", "json"] + (["--cache", cache] if cache else ["--no-cache"])
    r = coreq(*args, *extra, core, timeout=300)
    if r.returncode != 0 or sanitizer_report(r.stderr):
        return None, r.stderr
    import json
    t = json.loads(r.stdout)["threads"][0]
    return [f["function"] for f in t["frames"]], r.stderr


def main():
    require_corpus()
    core = os.path.join(CORPUS, "cores", "segv_null.O2", "core")
    exe = os.path.abspath(os.path.join(CORPUS, "bin", "O2", "segv_null"))
    tmp = tempfile.mkdtemp(prefix="coreq-provenance-")
    try:
        blob = open(exe, "rb").read()
        evil_blob = blob
        for old, new in NAMES.items():
            ok(old in blob, f"the executable holds the name {old.decode()}")
            evil_blob = evil_blob.replace(old, new)
        evil = os.path.join(tmp, "evil")
        open(evil, "wb").write(evil_blob)
        os.chmod(evil, 0o755)
        sysroot = os.path.join(tmp, "root")
        planted = os.path.join(sysroot, exe.lstrip("/"))
        os.makedirs(os.path.dirname(planted))
        shutil.copy(evil, planted)

        genuine, err = functions(core)
        ok(genuine and genuine[:2] == ["store_null", "writer"],
           "without a cache the genuine names: store_null, writer", f"{genuine} {err[-500:]}")
        lies, err = functions(core, "--exe", evil)
        ok(lies and lies[:2] == ["EVIL_null_", "XXXXXX"],
           "--exe EVIL (same build-id) names the frames from EVIL", f"{lies} {err[-500:]}")

        for order, what, extra in [("claimant first", "--exe EVIL", ["--exe", evil]),
                                   ("claimant first", "--sysroot with EVIL", ["--sysroot", sysroot]),
                                   ("genuine first", "--exe EVIL", ["--exe", evil])]:
            cache = os.path.join(tmp, f"cache-{len(os.listdir(tmp))}.db")
            if order == "genuine first":
                first, _ = functions(core, cache=cache)
                ok(first == genuine, f"{order}: the genuine run fills the cache with genuine names")
            got, err = functions(core, *extra, cache=cache)
            ok(got and got[:2] == lies[:2], f"{order}: {what} with the cache still names from EVIL",
               f"{got} {err[-500:]}")
            got, err = functions(core, cache=cache)
            ok(got == genuine, f"{order}: after {what}, the genuine binary's names come back "
               "from the same cache unpoisoned", f"{got} against {genuine}\n{err[-500:]}")
            again, _ = functions(core, cache=cache)
            ok(again == genuine, f"{order}: and a warm run agrees", f"{again}")
            con = sqlite3.connect(cache)
            try:
                rows = con.execute("SELECT identity FROM sources").fetchall()
            except sqlite3.Error:
                rows = []
            con.close()
            idents = [bytes(r[0]) for r in rows]

            def of(path):
                return [i for i in idents if i.startswith(b"file=" + os.path.realpath(path).encode() + b" ")]
            mine, theirs = of(exe), of(evil) + of(planted)
            ok(len(mine) == 1 and len(theirs) == 1,
               f"{order}: one sources row for the genuine executable and one for EVIL",
               "\n".join(i[:200].decode("utf-8", "replace") for i in idents))
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
