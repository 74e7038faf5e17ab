#!/usr/bin/env python3
"""Buckets that hold across a fleet (corpus/make-fleet-cores): the same bug
gets one bucket on every build, CPU and upgrade state, different bugs get
different ones, and a team can change the rules and rebucket.

Oracles are the programs' own structure, recorded in each case's expect file
(site: the function the crash happens in, caller: the function that called
it, group: cores of one bug), and gdb for what differs between the cores (the
memset variant glibc picked), never coreq's own output:

- rust_crash: 3 sites (index panic, unwrap panic, explicit abort) built 4 ways
  (panic=abort, panic=unwind + an aborting hook; opt-level 0 and 2): 3 buckets
  of 4 cores, each signature starting with the site's function, then serve;
- memset_crash: one crash inside memset, run as this CPU picks memset's
  variant and with CPU features masked: gdb shows two variants, coreq one
  bucket whose signature starts "memset | clear_buffer";
- thread_throw: an uncaught exception in a std::thread: the throwing
  function and the thread's body, no library offset;
- replaced: a binary rebuilt over itself while it ran ("(deleted)" in the
  core) and the rebuilt program's same crash: one bucket; the deleted core's
  module path has no suffix, the flag is stored, --exe finds it;
- rebucket with rules that skip the two panicking functions merges the index
  and unwrap buckets (counts and first/last seen move with the cores), and
  the default rules split them again;
- --bucket takes the hash as well as the id; `buckets --rules` prints the
  shipped rules file.
"""
import json
import os
import re
import sqlite3
import subprocess
import tempfile

from coreq_test import CORPUS, ROOT, coreq, done, ok, read_expect, skip

FLEET = os.path.join(CORPUS, "fleet")
SEP = " | "


def cases(prefix):
    if not os.path.isdir(FLEET):
        return {}
    out = {}
    for name in sorted(os.listdir(FLEET)):
        e = os.path.join(FLEET, name, "expect")
        if name.startswith(prefix) and os.path.isfile(e):
            facts = read_expect(e)
            facts["core"] = os.path.join(FLEET, name, "core")
            out[name] = facts
    return out


def ingest(db, case, extra=()):
    args = ["ingest", "--db", db, "--no-cache", "--format", "json"]
    if case.get("debug_dir"):
        args += ["--debug-dir", case["debug_dir"]]
    r = coreq(*args, *extra, case["core"], timeout=300)
    try:
        res = json.loads(r.stdout)["results"][0]
    except (ValueError, KeyError, IndexError):
        res = {}
    return res, r


def buckets(db, *args):
    r = coreq("buckets", "--db", db, "--format", "json", *args)
    try:
        return json.loads(r.stdout)["buckets"], r
    except (ValueError, KeyError):
        return None, r


def gdb_top_function(exe, core):
    r = subprocess.run(["gdb", "-nx", "-batch", "-ex", "set debuginfod enabled off", "-ex", "bt 1",
                        exe, core], capture_output=True, text=True, timeout=120)
    m = re.search(r"^#0\s+(?:0x[0-9a-f]+ in )?(\S+)", r.stdout, re.M)
    return m.group(1) if m else None


def check_rust(tmp):
    rs = cases("rust_crash-")
    if not rs:
        skip("Rust crash sites: 3 buckets of 4 builds", "no Rust cores (rustc missing)")
        return None
    db = os.path.join(tmp, "rust.db")
    results = {}
    for name, c in rs.items():
        res, r = ingest(db, c)
        results[name] = res
        crate = "rust_crash"  # the crate is named after its source file, corpus/rust_crash.rs
        parts = str(res.get("signature")).split(SEP)
        ok(r.returncode == 0 and parts[:2] == [f"{crate}::{c['site']}", f"{crate}::{c['caller']}"]
           and parts[-1] == "SIGABRT",
           f"{name}: the signature starts with {c['site']}, then {c['caller']}",
           [f"signature: {res.get('signature')!r}"] + r.stderr.splitlines()[:5])
    groups = {}
    for name, c in rs.items():
        groups.setdefault(c["group"], set()).add(results[name].get("bucket"))
    ok(len(rs) == 12 and len(groups) == 3 and all(len(v) == 1 and None not in v for v in groups.values())
       and len({next(iter(v)) for v in groups.values()}) == 3,
       "Rust: 3 sites x 4 builds (panic=abort, panic=unwind + aborting hook; O0, O2) are 3 buckets",
       str(groups))
    return db, rs, results


def check_memset(tmp):
    ms = cases("memset_crash-")
    if len(ms) != 2:
        ok(False, "corpus has memset_crash-native and -masked", str(list(ms)))
        return
    tops = {n: gdb_top_function(c["exe"], c["core"]) for n, c in ms.items()}
    ok(len(set(tops.values())) == 2 and all(t and "memset" in t for t in tops.values()),
       "gdb: the two memset cores crashed in two different memset variants", str(tops))
    db = os.path.join(tmp, "memset.db")
    res = {n: ingest(db, c)[0] for n, c in ms.items()}
    sigs = {r.get("signature") for r in res.values()}
    hashes = {r.get("bucket") for r in res.values()}
    ok(len(hashes) == 1 and None not in hashes
       and all(s and s.startswith("memset | clear_buffer | handle_request") for s in sigs),
       "memset crash with and without masked CPU features: one bucket, 'memset | clear_buffer | ...'",
       str(res))


def check_thread_throw(tmp):
    c = cases("thread_throw").get("thread_throw")
    if not c:
        ok(False, "corpus has thread_throw")
        return
    res, r = ingest(os.path.join(tmp, "throw.db"), c)
    sig = str(res.get("signature"))
    parts = sig.split(SEP)
    ok(r.returncode == 0 and parts[:2] == [c["site"], c["caller"]] and "+0x" not in sig,
       "C++ exception uncaught in a std::thread: the thrower, then the thread body, no library offset",
       sig)


def check_replaced(tmp):
    rp = cases("replaced-")
    if len(rp) != 2:
        ok(False, "corpus has replaced-deleted and replaced-current", str(list(rp)))
        return
    dele = rp["replaced-deleted"]
    with open(dele["core"], "rb") as f:
        raw = f.read()
    ok(b"replaced (deleted)" in raw, "the kernel wrote ' (deleted)' into the replaced core's NT_FILE")
    r = coreq("info", "--format", "json", dele["core"])
    mods = json.loads(r.stdout).get("modules", []) if r.returncode == 0 else []
    ok(r.returncode == 0 and any(m.get("path") == dele["exe"] for m in mods)
       and not any("(deleted)" in str(m.get("path")) for m in mods),
       "coreq info: the replaced module's path without ' (deleted)'", r.stdout[-2000:] + r.stderr)
    db = os.path.join(tmp, "replaced.db")
    res = {n: ingest(db, c)[0] for n, c in rp.items()}
    hashes = {x.get("bucket") for x in res.values()}
    ok(len(hashes) == 1 and None not in hashes
       and str(res["replaced-current"].get("signature")).startswith("apply_update | main"),
       "a program crashed, then rebuilt and replaced: both cores are one bucket", str(res))
    con = sqlite3.connect(db)
    rows = con.execute("SELECT c.exe, cm.path, cm.deleted FROM cores c JOIN core_modules cm "
                       "ON cm.core_id = c.id WHERE c.id = ? AND cm.path = c.exe",
                       (res["replaced-deleted"].get("core_id"),)).fetchall()
    con.close()
    ok(rows == [(dele["exe"], dele["exe"], 1)],
       "store: the deleted core's exe and module path have no suffix; core_modules.deleted = 1", str(rows))
    got, r = buckets(db, "--exe", "replaced")
    ok(got is not None and len(got) == 1 and got[0].get("count") == 2,
       "buckets --exe replaced: the one bucket, holding the deleted core too", r.stdout + r.stderr)


def check_rebucket(tmp, rust):
    if not rust:
        skip("rebucket merges and splits", "no Rust cores")
        return
    db, rs, results = rust
    before, _ = buckets(db)
    by_hash = {b["hash"]: b for b in before or []}
    idx = results[next(n for n in rs if n.endswith("-index"))].get("bucket")
    unw = results[next(n for n in rs if n.endswith("-unwrap"))].get("bucket")
    rules = os.path.join(tmp, "merge.rules")
    with open(os.path.join(ROOT, "dist", "coreq.rules")) as f:
        text = f.read()
    with open(rules, "w") as f:
        f.write(text.replace("version 3", "version test-merge")
                + "\nskip rust_crash::crash_sites::parse_record\n"
                + "skip rust_crash::crash_sites::decode_header\n")
    r = coreq("rebucket", "--db", db, "--rules", rules, "--format", "json")
    rep = json.loads(r.stdout) if r.returncode == 0 else {}
    after, _ = buckets(db)
    merged = [b for b in after or [] if b["signature"].startswith("rust_crash::crash_sites::serve")]
    old = [by_hash.get(idx, {}), by_hash.get(unw, {})]
    ok(r.returncode == 0 and rep.get("merged") == 1 and rep.get("buckets_before") == 3
       and rep.get("buckets_after") == 2 and len(merged) == 1 and merged[0]["count"] == 8
       and merged[0]["first_seen"] == min(o.get("first_seen", "~") for o in old)
       and merged[0]["last_seen"] == max(o.get("last_seen", "") for o in old)
       and merged[0].get("rules_version") == "test-merge",
       "rebucket with a rule skipping the two panicking functions: their buckets merge "
       "(8 cores, first/last seen of both, rules version recorded)",
       [r.stdout, r.stderr, json.dumps(after)])
    r = coreq("rebucket", "--db", db, "--format", "json")
    rep = json.loads(r.stdout) if r.returncode == 0 else {}
    again, _ = buckets(db)
    ok(r.returncode == 0 and rep.get("split") == 1 and rep.get("buckets_after") == 3
       and {b["hash"] for b in again or []} == set(by_hash)
       and all(b["count"] == 4 and b.get("rules_version") == "3" for b in again or []),
       "rebucket with the default rules splits them again: the 3 original buckets, 4 cores each",
       [r.stdout, r.stderr, json.dumps(again)])
    # --bucket takes the hash as well as the id.
    b = (again or [{}])[0]
    by_id = coreq("cores", "--db", db, "--bucket", str(b.get("id")), "--format", "json")
    by_h = coreq("cores", "--db", db, "--bucket", str(b.get("hash")), "--format", "json")
    ids = lambda r: sorted(c["id"] for c in json.loads(r.stdout)["cores"]) if r.returncode == 0 else None
    ok(ids(by_id) is not None and ids(by_id) == ids(by_h) and len(ids(by_id)) == 4
       and all(c.get("bucket") == b.get("hash") for c in json.loads(by_h.stdout)["cores"]),
       "cores --bucket HASH = cores --bucket ID; each core shows its bucket hash", by_h.stdout + by_h.stderr)
    r = coreq("list-stacks", "--db", db, "--bucket", str(b.get("hash")), "--format", "json")
    ok(r.returncode == 0 and json.loads(r.stdout).get("stacks"), "list-stacks --bucket HASH", r.stderr)
    r = coreq("cores", "--db", db, "--bucket", "zz")
    ok(r.returncode == 2 and "--bucket" in r.stderr, "--bucket zz is a usage error", r.stderr)


def check_rules_printed():
    r = coreq("buckets", "--rules")
    with open(os.path.join(ROOT, "dist", "coreq.rules")) as f:
        want = f.read()
    ok(r.returncode == 0 and r.stdout == want, "buckets --rules prints the shipped rules file", r.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".rules", delete=False) as f:
        f.write("skip x\nfrobnicate y\n")
    r = coreq("buckets", f"--rules={f.name}")
    os.unlink(f.name)
    ok(r.returncode == 1 and r.stderr.count("\n") == 1 and f"{f.name}:2: unknown rule 'frobnicate'" in r.stderr,
       "a bad rules file: one line naming the file and line, exit 1", r.stderr)


def main():
    with tempfile.TemporaryDirectory(prefix="coreq-fleet-") as tmp:
        rust = check_rust(tmp)
        check_memset(tmp)
        check_thread_throw(tmp)
        check_replaced(tmp)
        check_rebucket(tmp, rust)
        check_rules_printed()
    done()


if __name__ == "__main__":
    main()
