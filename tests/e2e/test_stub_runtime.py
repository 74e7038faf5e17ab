#!/usr/bin/env python3
"""The runtime seam carries a new runtime everywhere (issue 31).

The test-only "stub" runtime (unwind/async/stub.c, one file plus one line in
unwind/async/runtime_list.h, built into the ASan binary only) reads the
record corpus/stub_chain.c publishes: three return addresses, one just past
the start of each of stub_leaf, stub_middle and stub_root.  Its one chain,
of kind "stub", must reach every output without any code above
unwind/async/ knowing the runtime:
- `stack` text: its heading and "Suspended stub chain 1 (record 0x...)"
  with the three functions, innermost first;
- `stack --format json`: suspended[] holds it, and the async statistics
  carry the runtime's own keys (stub: true, stub_chains: 1);
- `stack --format folded`: a "[suspended_stub];..." line;
- `flame`: the three names in the SVG;
- `ingest`, then `show` (text and JSON) and `list-stacks`: the chain is
  stored and listed as a suspended stack.
The stub also caches one blob per module, "record" (the record's link-time
address), declared in its descriptor (issue 47: a runtime that caches is
still one file):
- `coreq cache warm` stores it ahead of any core and reports it (text and
  JSON, the stub's own keys), and says "cached already" the second time;
- `stack` then reads it from the cache (stub_cached), same chain;
- a blob `stack` stored survives `cache warm` (warm finds it cached), and
  the cache file holds it in the generic table under (stub, record).
Expected names and the record's address come from the program's source and
its symbol table (readelf), not from coreq.
"""
import json
import os
import re
import subprocess
import tempfile

from coreq_test import CORPUS, coreq, done, ok, require_corpus, sanitizer_report, skip

CHAIN = ["stub_leaf", "stub_middle", "stub_root"]  # innermost first, as stub_chain.c fills it


def record_address(exe):
    """coreq_stub_chain's link-time address, from readelf."""
    out = subprocess.run(["readelf", "-sW", exe], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[7] == "coreq_stub_chain":
            return int(f[1], 16)
    return None


def main():
    require_corpus()
    case = os.path.join(CORPUS, "cores", "stub_chain.O0")
    core, exe = os.path.join(case, "core"), os.path.abspath(os.path.join(CORPUS, "bin", "O0", "stub_chain"))
    if not os.path.isfile(core):
        ok(False, "the corpus has the stub_chain.O0 core", case)
        done()
    r = coreq("stack", "--format", "json", "--no-cache", core)
    ok(r.returncode == 0 and not sanitizer_report(r.stderr), "stack --format json runs", r.stderr[-800:])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    sus = [s for s in j.get("suspended", []) if s.get("kind") == "stub"]
    ok(len(sus) == 1 and [f["function"] for f in sus[0]["frames"]] == CHAIN and
       all(f["kind"] == "async" and f["trust"] == "async" for f in sus[0]["frames"]),
       "JSON: one suspended chain of kind stub, its three functions innermost first", str(sus))
    link = record_address(exe)
    bias = None
    for m in json.loads(coreq("info", "--format", "json", core).stdout)["modules"]:
        if m["path"] == exe:
            bias = int(m["start"], 16)
    leaf = int(sus[0]["leaf"], 16) if sus and isinstance(sus[0].get("leaf"), str) else None
    ok(link is not None and bias is not None and leaf is not None and leaf - bias == link,
       "JSON: the chain's leaf is the record's runtime address (readelf's value + load address)",
       f"leaf {sus[0].get('leaf') if sus else None}, symbol {link}, start {bias}")
    a = j.get("async", {})
    ok(a.get("stub") is True and a.get("stub_chains") == 1,
       "JSON: the async statistics carry the stub runtime's own keys", str(a)[-300:])

    r = coreq("stack", "--no-cache", core)
    m = re.search(r"\nSuspended stub chains:\n\nSuspended stub chain 1 \(record 0x([0-9a-f]+)\):\n"
                  r"((?:.*\n){3})", r.stdout)
    names = re.findall(r" in (\S+) ", m.group(2)) if m else []
    ok(m is not None and names == CHAIN,
       "text: the heading and chain the descriptor names, the three functions", r.stdout[-1200:])

    r = coreq("stack", "--format", "folded", "--no-cache", core)
    ok(any(l.startswith("[suspended_stub];") and l.rsplit(" ", 1)[0].split(";")[1:] ==
           [n + "_[a]" for n in reversed(CHAIN)] for l in r.stdout.splitlines()),
       "folded: [suspended_stub];stub_root_[a];stub_middle_[a];stub_leaf_[a] (async frames marked)",
       r.stdout[-800:])

    with tempfile.TemporaryDirectory() as tmp:
        svg = os.path.join(tmp, "f.svg")
        r = coreq("flame", "-o", svg, core)
        body = open(svg).read() if r.returncode == 0 and os.path.exists(svg) else ""
        ok(all(n in body for n in CHAIN) and "[suspended]" in body,
           "flame: the chain's functions under [suspended]", r.stderr[-500:])
        db = os.path.join(tmp, "coreq.db")
        r = coreq("ingest", "--db", db, "--no-cache", core)
        ok(r.returncode == 0, "ingest stores the core", r.stderr[-500:])
        r = coreq("show", "1", "--db", db, "--format", "json")
        shown = json.loads(r.stdout).get("suspended", []) if r.returncode == 0 else []
        ok(len(shown) == 1 and shown[0].get("kind") == "stub",
           "show --format json: the stored chain of kind stub", r.stdout[-800:] + r.stderr[-300:])
        r = coreq("show", "1", "--db", db)
        ok("Suspended stub chain 1" in r.stdout and all(n in r.stdout for n in CHAIN),
           "show text: the stored chain and its functions", r.stdout[-800:])
        r = coreq("list-stacks", "--db", db, "--format", "json")
        stacks = json.loads(r.stdout)["stacks"] if r.returncode == 0 else []
        mine = [s for s in stacks if [f["function"] for f in s["frames"]] == CHAIN]
        ok(len(mine) == 1 and mine[0].get("suspended") == 1 and mine[0].get("threads") == 0,
           "list-stacks: the chain as a stack with one suspended use", r.stdout[-800:])
    cached_blob(core, exe, link, sus)
    done()


def warm(cache, exe):
    """`coreq cache warm --format json` of exe: its one result (or {})."""
    r = coreq("cache", "warm", "--cache", cache, "--format", "json", exe)
    ok(r.returncode == 0 and not sanitizer_report(r.stderr), "cache warm runs", r.stderr[-500:])
    res = json.loads(r.stdout) if r.returncode == 0 else []
    return res[0] if len(res) == 1 else {}


def stack_async(cache, core):
    """`coreq stack --format json` with the cache: (async statistics, stub chains)."""
    r = coreq("stack", "--format", "json", "--cache", cache, core)
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    return j.get("async", {}), [s for s in j.get("suspended", []) if s.get("kind") == "stub"]


def cached_blob(core, exe, link, chain):
    """The stub's blob through the generic cache: warm first, then the other way round."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "c.db")
        w = warm(cache, exe)
        ok(w.get("stub_record") == hex(link or 0) and w.get("stub_cached") is False,
           "cache warm: the stub's blob (the record's readelf address) stored afresh", str(w))
        r = coreq("cache", "warm", "--cache", cache, exe)
        ok(r.returncode == 0 and f"stub record {hex(link or 0)} (cached already)" in r.stdout,
           "cache warm text: the stub's figure, cached already the second time", r.stdout)
        a, sus = stack_async(cache, core)
        ok(a.get("stub_cached") is True and a.get("stub_chains") == 1 and sus == chain,
           "stack after warm: the record's place read from the cache, the same chain", str(a)[-300:])
        rows = subprocess.run(["sqlite3", cache, "SELECT count(*), hex(blob) FROM runtime_blobs "
                               "WHERE runtime = 'stub' AND name = 'record' AND format = 1 "
                               "AND build_id != ''"], capture_output=True, text=True).stdout.strip()
        want = (link or 0).to_bytes(8, "little").hex().upper()
        ok(rows.startswith("1|") and rows.endswith(want),
           "the cache holds one (stub, record) blob for the program, its record's address", rows)
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "c.db")
        a, _ = stack_async(cache, core)
        ok(a.get("stub_cached") is False and a.get("stub_chains") == 1,
           "stack with an empty cache: the record found in the symbols", str(a)[-300:])
        w = warm(cache, exe)
        ok(w.get("stub_cached") is True and w.get("stub_record") == hex(link or 0),
           "the blob stack stored survives cache warm (found cached)", str(w))
        a, sus = stack_async(cache, core)
        ok(a.get("stub_cached") is True and sus == chain, "and the next stack reads it", str(a)[-300:])


if __name__ == "__main__":
    main()
