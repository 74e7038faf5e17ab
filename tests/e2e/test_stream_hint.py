#!/usr/bin/env python3
"""A build whose analysis reads its heap is remembered (the cache's
stream_hints, libcore/model/stream_image.c): the next one-stream core of it
is kept whole as it streams instead of read through the keep plan and then
a second time.

The subject is the real Debian python3 deadlock core: coreq infers the
owners of its CPython locks from the heap, which the keep plan drops, so
its one-frame copy read with the plan on (COREQ_STREAM_KEEP_ALL_BELOW=0)
needs a second pass.  The build-id stored must be the executable's own
(the oracle: `eu-readelf -n` of the file the corpus names), and every run,
streamed, kept whole by the hint, or through `ingest`, gives the raw core's
stack JSON."""
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import coreq, coreq_json, done, ok, read_expect, require_corpus

PLANNED = {"COREQ_STREAM_KEEP_ALL_BELOW": "0"}
CLOCKS = re.compile(r'"[a-z_]*_us":[0-9]+')
# whether a runtime's blob came from the cache: a second pass (or a warm cache) says yes
CACHED = re.compile(r'"([a-z_]*_cached)":(true|false|[0-9]+)')


def stack(path, cache, *extra):
    """`coreq stack --format json` with the plan on and cache as COREQ_CACHE."""
    r = coreq("stack", "--format", "json", *extra, path, env=dict(PLANNED, COREQ_CACHE=cache))
    out = CLOCKS.sub('"_us":0', re.sub(r'"path":"[^"]*"', '"path":"CORE"', r.stdout, count=1))
    return r.returncode, CACHED.sub(r'"\1":-', out)


def read_of(path, cache):
    j, _ = coreq_json("info", "--format", "json", path, env=dict(PLANNED, COREQ_CACHE=cache))
    return j.get("read", {})


def hints(db):
    if not os.path.exists(db):
        return []
    with sqlite3.connect(db) as con:
        return sorted(r[0] for r in con.execute("SELECT build_id FROM stream_hints WHERE reads_heap"))


def build_id(exe):
    out = subprocess.run(["eu-readelf", "-n", exe], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def main():
    case = next((c for c in require_corpus() if c["case"] == "real-python3-deadlock"), None)
    if not ok(case is not None, "the corpus has real-python3-deadlock"):
        done()
    core = case["core"]
    exe = read_expect(os.path.join(os.path.dirname(core), "expect"))["exe"]
    want_id = build_id(exe)
    ok(want_id is not None, f"eu-readelf gives {exe}'s build-id", want_id)
    tmp = tempfile.mkdtemp(prefix="coreq-stream-hint-")
    try:
        z = os.path.join(tmp, "core.zst")
        subprocess.run(["zstd", "-q", "-1", "-o", z, core], check=True)
        cache = os.path.join(tmp, "cache.db")
        raw = stack(core, cache, "--no-cache")
        ok(raw[0] == 0, "the raw core analyses")
        rd = read_of(z, os.path.join(tmp, "probe.db"))
        ok(rd.get("how") == "stream" and not rd.get("heap_hint") and rd.get("second_pass") is True,
           "a fresh cache: the one-frame core is streamed through the keep plan, and its heap "
           "read by a second pass (info infers the lock owners too)", rd)
        first = stack(z, cache)
        ok(first == raw, "streamed, with its heap read by a second pass: the raw core's stack JSON")
        ok(hints(cache) == [want_id], "the cache remembers the executable's build-id (eu-readelf's)",
           [hints(cache), want_id])
        rd = read_of(z, cache)
        ok(rd.get("how") == "stream" and rd.get("heap_hint") is True
           and rd.get("held_bytes") == rd.get("bytes") == os.path.getsize(core)
           and rd.get("second_pass") is False,
           "the next core of that build is kept whole in one pass, and info says why", rd)
        ok(stack(z, cache) == raw, "kept whole by the hint: the raw core's stack JSON")
        fresh = os.path.join(tmp, "unused.db")
        ok(stack(z, fresh, "--no-cache") == raw and hints(fresh) == [],
           "--no-cache neither asks nor tells a cache")
        # ingest: the same memory, through the pipeline's own cache
        cache2 = os.path.join(tmp, "cache2.db")
        r = coreq("ingest", "--db", os.path.join(tmp, "s.db"), "--cache", cache2, z, env=PLANNED)
        ok(r.returncode == 0 and hints(cache2) == [want_id],
           "ingest remembers the build-id too", [r.stderr[-300:], hints(cache2)])
        # a core whose analysis reads only what the plan keeps leaves no hint
        other = next((c for c in require_corpus() if c["case"] == "abort_deep.O0"), None)
        if other:
            z2 = os.path.join(tmp, "other.zst")
            subprocess.run(["zstd", "-q", "-1", "-o", z2, other["core"]], check=True)
            cache3 = os.path.join(tmp, "cache3.db")
            stack(z2, cache3)
            ok(hints(cache3) == [], "a core read within its plan leaves no hint", hints(cache3))
    finally:
        shutil.rmtree(tmp)
    done()


main()
