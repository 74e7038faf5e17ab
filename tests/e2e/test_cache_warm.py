#!/usr/bin/env python3
"""`coreq cache warm` and the unwind tables a first core leaves in the cache.

- Warming every module file of a core (as `coreq info` lists them) stores
  complete unwind tables; `coreq stack --format json` with that cache says
  exactly what it says with no cache at all.
- A first core with an empty cache compiles only the rows its walks visit:
  each native frame needs one row and each compiled row adds at most two
  table rows, so the stored table of a module holds at most 2 x its frames
  + 2 rows, far below the complete table of the same build-id.  A second
  core of the same binary then finds its rows there.
- A Rust executable's type index is warmed too: the next `coreq stack` reads
  it from the cache (`rust_modules_cached`).
- Bad input: a file that is not ELF is one line `coreq: PATH: reason` and
  exit 1, the other paths are still warmed; no action or no path is a usage
  error (exit 2).
"""
import json
import os
import sqlite3
import tempfile

from coreq_test import CORPUS, coreq, done, ok, require_corpus, rust_skipped, sanitizer_report, skip

CASES = ("abort_deep.O0", "cpp_terminate.O2", "threads-10", "rust_async.O0", "cxx_task.O2g")


def table_rows(cache):
    db = sqlite3.connect(cache)
    try:
        return dict(db.execute("SELECT build_id, rows FROM unwind_tables"))
    finally:
        db.close()


def stack_json(core, *cache_args):
    r = coreq("stack", "--format", "json", *cache_args, core, timeout=300)
    clean = r.returncode == 0 and not sanitizer_report(r.stderr)
    doc = json.loads(r.stdout) if clean else {}
    a = doc.get("async") or {}
    for k in list(a):
        if k.endswith("_us") or k.endswith("_cached"):  # timings, what the cache served
            del a[k]
    return clean, doc, r


def frames_by_module(doc):
    count = {}
    for t in doc.get("threads", []):
        for f in t.get("frames", []):
            if f.get("kind") == "native" and f.get("build_id"):
                count[f["build_id"]] = count.get(f["build_id"], 0) + 1
    return count


def main():
    require_corpus()
    for case in CASES:
        core = os.path.join(CORPUS, "cores", case, "core")
        if not os.path.isfile(core):
            why = rust_skipped(case)
            if why:
                skip(f"{case}: cache warm", why)
            else:
                ok(False, f"{case}: corpus core present")
            continue
        info = json.loads(coreq("info", "--format", "json", core).stdout)
        files = sorted({m["file"] for m in info["modules"]
                        if m.get("file") and m.get("build_id") and "vdso" not in m["path"]})
        with tempfile.TemporaryDirectory() as tmp:
            warm_cache, cold_cache = os.path.join(tmp, "warm.db"), os.path.join(tmp, "cold.db")
            w = coreq("cache", "warm", "--cache", warm_cache, "--format", "json", *files,
                      timeout=600)
            warmed = json.loads(w.stdout) if w.returncode == 0 else []
            ok(w.returncode == 0 and len(warmed) == len(files) and
               not sanitizer_report(w.stderr),
               f"{case}: cache warm takes its {len(files)} module files", w.stderr[-500:])
            complete = table_rows(warm_cache)
            ok(all(complete.get(m["build_id"], 0) > 0 for m in warmed),
               f"{case}: a table for every warmed build-id")
            ref_ok, ref, r = stack_json(core, "--no-cache")
            got_ok, got, r2 = stack_json(core, "--cache", warm_cache)
            ok(ref_ok and got_ok and json.dumps(ref, sort_keys=True) ==
               json.dumps(got, sort_keys=True),
               f"{case}: stack with the warmed cache is the stack without a cache",
               (r.stderr + r2.stderr)[-500:])
            if case.startswith("rust_"):
                again = coreq("stack", "--format", "json", "--cache", warm_cache, core)
                a = json.loads(again.stdout).get("async", {}) if again.returncode == 0 else {}
                ok(a.get("rust_modules_cached", 0) >= 1 and
                   any(m["rust_types"] > 0 for m in warmed),
                   f"{case}: the warmed Rust index is read from the cache", str(a))
            if case.startswith("cxx_"):
                again = coreq("stack", "--format", "json", "--cache", warm_cache, core)
                a = json.loads(again.stdout).get("async", {}) if again.returncode == 0 else {}
                ok(a.get("cxx_modules_cached", 0) >= len(files) and
                   any(m["cxx_types"] > 0 for m in warmed),
                   f"{case}: the warmed C++ coroutine types of every module are read from "
                   "the cache", str(a.get("cxx_modules_cached")))
            cold_ok, cold, r3 = stack_json(core, "--cache", cold_cache)
            partial = table_rows(cold_cache)
            frames = frames_by_module(cold)
            over = {b: (n, frames.get(b, 0)) for b, n in partial.items()
                    if n > 2 * frames.get(b, 0) + 2}
            ok(cold_ok and partial and not over,
               f"{case}: a first core stores only the rows its frames visit "
               f"({sum(partial.values())} rows for {sum(frames.values())} frames)", str(over))
            big = [b for b in partial if complete.get(b, 0) > 1000]
            ok(all(partial[b] * 20 < complete[b] for b in big),
               f"{case}: those tables are a small part of the complete ones",
               str({b: (partial[b], complete[b]) for b in big}))
            second_ok, second, _ = stack_json(core, "--cache", cold_cache)
            ok(second_ok and table_rows(cold_cache) == partial and
               json.dumps(second, sort_keys=True) == json.dumps(ref, sort_keys=True),
               f"{case}: a second core finds every row it needs in the cache")
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "c.db")
        notelf = os.path.join(tmp, "notes.txt")
        with open(notelf, "w") as f:
            f.write("not an ELF file\n")
        exe = os.path.join(CORPUS, "bin", "O0", "abort_deep")
        r = coreq("cache", "warm", "--cache", cache, notelf, exe)
        lines = r.stderr.strip().splitlines()
        ok(r.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"coreq: {notelf}: ")
           and "abort_deep" in r.stdout,
           "a file that is not ELF: one line, exit 1, the others still warmed", r.stderr)
        # A damaged table blob: warm reads tables by the same rule as the walks
        # (issue 31): it says so once, naming the cache, and rebuilds the table.
        con = sqlite3.connect(cache)
        con.execute("UPDATE unwind_tables SET blob = substr(blob, 1, length(blob) / 2)")
        con.commit()
        con.close()
        r = coreq("cache", "warm", "--cache", cache, "--format", "json", exe)
        warned = [l for l in r.stderr.splitlines() if l.startswith(f"coreq: {cache}: warning:")
                  and "damaged cache" in l]
        res = json.loads(r.stdout) if r.returncode == 0 else []
        ok(r.returncode == 0 and len(warned) == 1 and res and res[0].get("unwind_cached") is False,
           "a damaged cached table: cache warm warns once and compiles it afresh", r.stderr + r.stdout)
        r = coreq("cache", "warm", "--cache", cache, "--format", "json", exe)
        res = json.loads(r.stdout) if r.returncode == 0 else []
        ok(r.returncode == 0 and not r.stderr and res and res[0].get("unwind_cached") is True,
           "and the next warm finds it whole, silently", r.stderr + r.stdout)
        for args, name in ((("cache",), "no action"), (("cache", "warm"), "no path"),
                           (("cache", "cool", exe), "unknown action")):
            r = coreq(*args)
            ok(r.returncode == 2, f"{name}: usage error (exit 2)", r.stderr)
        r = coreq("cache", "--help")
        ok(r.returncode == 0 and "coreq cache warm" in r.stdout, "cache --help")
    done()


if __name__ == "__main__":
    main()
