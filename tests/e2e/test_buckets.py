#!/usr/bin/env python3
"""Crash buckets: the signature `coreq ingest` gives each core, `coreq
buckets`, and the --bucket filters of `coreq cores` and `coreq list-stacks`.

The oracle is the corpus, whose crash sites are known by construction (see
corpus/README.md), never coreq's own output:

- bucket_site.{O0,O2,O2pad,nopie}: one crash site (main -> handle_request ->
  parse_header -> validate_length -> abort) in binaries whose code layout
  differs (checked with nm and with the frames' offsets): one signature, one
  bucket;
- bucket_multi-SITE: one binary, crash site chosen by argument: crash_in_f vs
  crash_in_g are two buckets, site_same with SIGABRT vs SIGSEGV two more, and
  checker_caller reaching SIGABRT through abort(), raise() or a failed
  assert() one bucket whose signature starts at checker_caller;
- bucket-100: 100 cores of bucket_multi from 5 sites in scrambled order
  (expect's `sites`): exactly 5 buckets of 20, each holding one site's cores;
- the other corpus programs whose crash chain is the whole stack between the
  crash machinery and process start-up (abort_deep in 5 variants, segv_null,
  fpe, assert_fail, threads8, cpp_terminate).

The expected signature of a case is its expect file's crash_chain (first 5
names) joined with " | ", then " | " and the signal's name.
"""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import BUILD, CORPUS, coreq, done, ok, read_expect, require_corpus

SEP = " | "
HASH_RE = re.compile(r"^[0-9a-f]{16}$")
LAYOUT = ["bucket_site.O0", "bucket_site.O2", "bucket_site.O2pad", "bucket_site.nopie"]
SITES = ["f", "g", "same_abort", "same_segv", "check_abort", "check_raise", "check_assert"]
# Corpus cases whose crash_chain is every frame of the crashed thread between
# the crash machinery and process start-up (sighandler is not: its signal
# frame is in between).
PLAIN = ["abort_deep.O0", "abort_deep.O2", "abort_deep.static", "abort_deep.nopie",
         "segv_null.O0", "segv_null.O2", "fpe.O0", "fpe.O2", "assert_fail.O0", "assert_fail.O2",
         "threads8.O0", "threads8.O2", "cpp_terminate.O0", "cpp_terminate.O2"]
STRIPPED = ["abort_deep.stripped", "segv_null.stripped"]


def signame(num):
    return signal.Signals(int(num)).name


def expected_signature(chain, sig, frames=5):
    return SEP.join(chain.split()[:frames] + [signame(sig)])


def js(r):
    try:
        return json.loads(r.stdout) if r.returncode == 0 else None
    except ValueError:
        return None


def diag(r, *more):
    return [f"exit {r.returncode}"] + r.stdout.splitlines()[:15] + r.stderr.splitlines()[:10] + list(more)


class Db:
    """A fresh database (and unwind/symbol cache) in a temporary directory."""

    def __init__(self, tmp, name):
        self.path = os.path.join(tmp, name + ".db")
        self.cache = os.path.join(tmp, "cache.db")

    def ingest(self, *paths, extra=(), fmt="json"):
        r = coreq("ingest", "--db", self.path, "--cache", self.cache, "--format", fmt, *extra, *paths,
                  timeout=300)
        if fmt != "json":
            return None, r
        got = js(r) if r.returncode in (0, 1) else None
        if got is None:
            try:
                got = json.loads(r.stdout)
            except ValueError:
                got = {}
        return got.get("results", []), r

    def buckets(self, *args):
        r = coreq("buckets", "--db", self.path, "--format", "json", *args)
        got = js(r)
        return (got or {}).get("buckets"), r

    def cores(self, *args):
        r = coreq("cores", "--db", self.path, "--format", "json", *args)
        return (js(r) or {}).get("cores"), r

    def stacks(self, *args):
        r = coreq("list-stacks", "--db", self.path, "--format", "json", *args)
        return (js(r) or {}).get("stacks"), r


def crashed_frames(core, debug_dir=None):
    args = ["stack", "--format", "json", "--no-cache"]
    if debug_dir:
        args += ["--debug-dir", debug_dir]
    got = js(coreq(*args, core)) or {"threads": []}
    t = next((t for t in got["threads"] if t.get("crashed")), None)
    return t["frames"] if t else []


def nm_address(exe, fn):
    out = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == fn:
            return int(parts[0], 16)
    return None


def good_result(res, want_sig):
    return (res.get("status") == "ingested" and res.get("signature") == want_sig
            and isinstance(res.get("bucket_id"), int) and HASH_RE.match(str(res.get("bucket")))
            and isinstance(res.get("new_bucket"), bool))


def check_layout(cases, db):
    """One crash site, four code layouts: one bucket."""
    exes = {n: cases[n]["exe"] for n in LAYOUT}
    addrs = {n: nm_address(exes[n], "validate_length") for n in LAYOUT}
    ok(None not in addrs.values() and len(set(addrs.values())) == len(LAYOUT),
       "layout variants: nm puts validate_length at a different address in each binary",
       [f"{n}: {a if a is None else hex(a)}" for n, a in addrs.items()])

    chain = cases["bucket_site.O0"]["crash_chain"].split()
    where = {}
    for n in LAYOUT:
        frames = crashed_frames(cases[n]["core"])
        by_fn = {f.get("function"): f for f in frames}
        where[n] = tuple((by_fn.get(fn, {}).get("pc"), by_fn.get(fn, {}).get("offset")) for fn in chain)
    pcs_ok = all(None not in (pc, off) for w in where.values() for pc, off in w)
    vl_pcs = {w[0][0] for w in where.values()}
    vl_offsets = {w[0][1] for w in where.values()}
    chain_offsets = {tuple(off for _, off in w) for w in where.values()}
    ok(pcs_ok and len(vl_pcs) == len(vl_offsets) == len(chain_offsets) == len(LAYOUT),
       "layout variants: coreq stack shows the crash chain at different pcs and offsets in each",
       [f"{n}: {w}" for n, w in where.items()])

    want = expected_signature(cases["bucket_site.O0"]["crash_chain"], cases["bucket_site.O0"]["signal"])
    res, r = db.ingest(*[cases[n]["core"] for n in LAYOUT])
    ok(r.returncode == 0 and len(res) == len(LAYOUT) and all(good_result(x, want) for x in res),
       f"layout variants: each is ingested with the signature '{want}'", diag(r))
    ok(len(res) == len(LAYOUT) and len({x.get("bucket_id") for x in res}) == 1
       and len({x.get("bucket") for x in res}) == 1
       and [x.get("new_bucket") for x in res] == [True] + [False] * (len(LAYOUT) - 1),
       "layout variants: one bucket, new only for the first core",
       [json.dumps(x) for x in res])
    ok(want == "validate_length | parse_header | handle_request | main | SIGABRT"
       and len(res) > 0 and res[0].get("signature") == want,
       "bucket_site: the signature is exactly 'validate_length | parse_header | handle_request | main | SIGABRT'",
       [f"from the corpus: {want!r}", f"coreq: {res[0].get('signature') if res else None!r}"])
    bks, r = db.buckets()
    b = bks[0] if bks else {}
    core_ids = {x.get("core_id") for x in res}
    ok(bks is not None and len(bks) == 1 and b.get("count") == len(LAYOUT) and b.get("signature") == want
       and b.get("hash") == (res[0].get("bucket") if res else None) and b.get("id") == (res[0].get("bucket_id") if res else None)
       and b.get("example_core") in core_ids and sorted(b.get("exes") or []) == sorted(exes.values()),
       "coreq buckets: one bucket of 4 cores with the 4 executables", diag(r))
    return res[0].get("bucket_id") if res else None, want


def check_multi_sites(cases, db, layout_bucket):
    """bucket_multi at each of its sites."""
    names = [f"bucket_multi-{s}" for s in SITES]
    res, r = db.ingest(*[cases[n]["core"] for n in names])
    by = dict(zip(SITES, res)) if len(res) == len(SITES) else {}
    ok(r.returncode == 0 and len(res) == len(SITES), "bucket_multi: the 7 site cores are ingested", diag(r))
    for s, n in zip(SITES, names):
        want = expected_signature(cases[n]["crash_chain"], cases[n]["signal"])
        x = by.get(s, {})
        ok(good_result(x, want), f"bucket_multi {s}: signature '{want}'", json.dumps(x))
    bid = {s: by.get(s, {}).get("bucket_id") for s in SITES}
    bh = {s: by.get(s, {}).get("bucket") for s in SITES}
    ok(None not in (bid["f"], bid["g"]) and bid["f"] != bid["g"] and bh["f"] != bh["g"],
       "abort() from crash_in_f vs crash_in_g: different buckets", [str(bid), str(bh)])
    sig_a, sig_s = by.get("same_abort", {}).get("signature"), by.get("same_segv", {}).get("signature")
    ok(None not in (bid["same_abort"], bid["same_segv"]) and bid["same_abort"] != bid["same_segv"]
       and bh["same_abort"] != bh["same_segv"]
       and sig_a is not None and sig_s is not None
       and sig_a.rsplit(SEP, 1)[0] == sig_s.rsplit(SEP, 1)[0],
       "site_same: SIGABRT vs SIGSEGV at the same site are different buckets, same frames",
       [str(sig_a), str(sig_s), str(bid)])
    checks = ["check_abort", "check_raise", "check_assert"]
    sigs = [by.get(s, {}).get("signature") or "" for s in checks]
    ok(all(s.split(SEP)[0] == "checker_caller" for s in sigs),
       "abort(), raise(SIGABRT) and a failed assert() in checker_caller: signatures start at checker_caller",
       sigs)
    ok(len(set(sigs)) == 1 and len({bid[s] for s in checks}) == 1 and bid["check_abort"] is not None,
       "abort(), raise(SIGABRT) and a failed assert() in checker_caller: one signature, one bucket",
       sigs + [str({s: bid[s] for s in checks})])
    ok([by.get(s, {}).get("new_bucket") for s in SITES] == [True, True, True, True, True, False, False],
       "bucket_multi: new_bucket is true for each new site and false for the raise/assert repeats",
       [f"{s}: {by.get(s, {}).get('new_bucket')}" for s in SITES])
    distinct = {bid[s] for s in SITES} | {layout_bucket}
    ok(len(distinct) == 6, "bucket_multi sites and bucket_site: 6 distinct buckets", str(bid))
    return bid


def check_database_queries(cases, db, layout_bucket, bid):
    """coreq buckets (order, --exe, --since, text), cores/list-stacks --bucket."""
    bks, r = db.buckets()
    counts = [b.get("count") for b in bks or []]
    ok(bks is not None and len(bks) == 6 and counts == sorted(counts, reverse=True)
       and counts[:2] == [4, 3] and bks[0].get("id") == layout_bucket
       and bks[1].get("id") == bid["check_abort"],
       "coreq buckets: 6 buckets, most cores first (bucket_site 4, checker_caller 3, then 1 each)",
       diag(r, f"counts {counts}"))
    bks = bks or []
    ok(all(isinstance(b.get("id"), int) and HASH_RE.match(str(b.get("hash"))) and isinstance(b.get("signature"), str)
           and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", str(b.get("first_seen")))
           and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", str(b.get("last_seen")))
           and str(b.get("first_seen")) <= str(b.get("last_seen"))
           and isinstance(b.get("exes"), list) and isinstance(b.get("example_core"), int) for b in bks)
       and len(bks) == 6, "coreq buckets JSON: id, 16-hex hash, signature, ISO first/last seen, exes, example core",
       [json.dumps(b) for b in bks])

    multi_exe = cases["bucket_multi-f"]["exe"]
    site_exe = cases["bucket_site.O0"]["exe"]
    multi_ids = {bid[s] for s in SITES}

    def ids(*args):
        got, _ = db.buckets(*args)
        return None if got is None else {b.get("id") for b in got}

    got = ids("--exe", "bucket_multi")
    ok(got == multi_ids, "buckets --exe bucket_multi (basename): its 5 buckets", str(got))
    got = ids("--exe", "bucket_site")
    ok(got == {layout_bucket}, "buckets --exe bucket_site (basename): its one bucket", str(got))
    got = ids("--exe", multi_exe)
    ok(got == multi_ids, "buckets --exe with bucket_multi's full path: its 5 buckets", str(got))
    got = ids("--exe", site_exe)
    ok(got == {layout_bucket}, "buckets --exe with one bucket_site variant's full path: its bucket", str(got))
    got = ids("--exe", "no_such_program")
    ok(got == set(), "buckets --exe of a program never seen: no buckets", str(got))
    all_ids = multi_ids | {layout_bucket}
    for since in ("2100-01-01", "4102444800"):
        got = ids("--since", since)
        ok(got == set(), f"buckets --since {since} (future): no buckets", str(got))
    for since in ("2000-01-01", "946684800"):
        got = ids("--since", since)
        ok(got == all_ids, f"buckets --since {since} (past): every bucket", str(got))

    # Text output: every bucket's signature, in the JSON order, each with its
    # count before the next bucket's signature.
    r = coreq("buckets", "--db", db.path)
    text = r.stdout
    pos, probs = [], []
    for b in bks:
        i = text.find(b["signature"])
        pos.append(i)
        if i < 0 or text.count(b["signature"]) != 1:
            probs.append(f"signature {b['signature']!r} appears {text.count(b['signature'])} times")
    if not probs and pos != sorted(pos):
        probs.append("signatures are not in the JSON order")
    if not probs:
        bounds = [0] + [p + len(b["signature"]) for p, b in zip(pos, bks)]
        for k, b in enumerate(bks):
            # the chunk that ends with this signature, or begins after it
            before = text[bounds[k]:pos[k]]
            after = text[pos[k]:pos[k + 1] if k + 1 < len(bks) else len(text)]
            if not any(re.search(rf"(?<![\w.]){b['count']}(?![\w.])", c) for c in (before, after)):
                probs.append(f"no count {b['count']} next to {b['signature']!r}")
    ok(r.returncode == 0 and not probs and len(bks) == 6,
       "coreq buckets text: each bucket's count and signature", diag(r, *probs))

    # cores --bucket
    checker = bid["check_abort"]
    got, r = db.cores("--bucket", checker)
    want = {os.path.realpath(cases[f"bucket_multi-{s}"]["core"]) for s in ("check_abort", "check_raise", "check_assert")}
    ok(got is not None and {os.path.realpath(c.get("path", "")) for c in got} == want and len(got) == 3
       and all(c.get("bucket_id") == checker for c in got),
       "cores --bucket: exactly the checker_caller cores, each with its bucket_id", diag(r))
    got, r = db.cores()
    ok(got is not None and len(got) == 11 and all(isinstance(c.get("bucket_id"), int) for c in got),
       "cores JSON: every core of the database carries a bucket_id", diag(r))

    # list-stacks --bucket
    def fns(stack):
        return [f.get("function") for f in stack.get("frames", [])]

    got, r = db.stacks()
    ok(got is not None and sum(s.get("threads", 0) for s in got) == 11,
       "list-stacks: 11 threads in the database without a filter", diag(r))
    got, r = db.stacks("--bucket", layout_bucket)
    ok(got is not None and sum(s.get("threads", 0) for s in got) == 4 and got
       and all("validate_length" in fns(s) and "dispatch" not in fns(s) for s in got),
       "list-stacks --bucket: only the 4 threads of bucket_site's bucket", diag(r))
    got, r = db.stacks("--bucket", checker)
    ok(got is not None and sum(s.get("threads", 0) for s in got) == 3 and got
       and all("checker_caller" in fns(s) for s in got),
       "list-stacks --bucket: only the 3 threads of checker_caller's bucket", diag(r))

    # The tables of the contract.
    try:
        con = sqlite3.connect(db.path)
        rows = con.execute("SELECT id, hash, signature, count, first_seen, last_seen, example_core "
                           "FROM buckets").fetchall()
        per = dict(con.execute("SELECT bucket_id, count(*) FROM cores GROUP BY bucket_id").fetchall())
        uniq = False
        for _, iname, unique, *_ in con.execute("PRAGMA index_list(buckets)").fetchall():
            cols = [c[2] for c in con.execute(f"PRAGMA index_info('{iname}')").fetchall()]
            uniq |= bool(unique) and cols == ["hash"]
        con.close()
        good = (len(rows) == 6 and uniq and all(per.get(row[0]) == row[3] for row in rows)
                and {row[1] for row in rows} == {b["hash"] for b in bks})
        why = [str(row) for row in rows] + [f"cores per bucket_id: {per}", f"unique index on hash: {uniq}"]
    except sqlite3.Error as e:
        good, why = False, str(e)
    ok(good, "tables: buckets(id, hash UNIQUE, signature, count, first/last seen, example_core), "
       "count = cores with that cores.bucket_id", why)


def check_handlers(cases, db):
    """Crash handlers, from the programs' own structure (corpus/programs: the
    chain, innermost first, and on_segv is the handler): sighandler's handler
    reports and aborts, so its signature starts below the signal frame, at
    victim; handler_fault's handler faults itself, so it is the signature."""
    names = [n for n in ("sighandler.O0", "sighandler.O2", "handler_fault.O0", "handler_fault.O2")
             if n in cases]
    ok(len(names) == 4, "corpus has the crash-handler cases", names)
    res, r = db.ingest(*[cases[n]["core"] for n in names])
    by = dict(zip(names, res)) if len(res) == len(names) else {}
    for n in names:
        chain = cases[n]["crash_chain"].split()
        below = chain[chain.index("on_segv") + 1:]
        if n.startswith("sighandler"):
            want = SEP.join(below + [signame(cases[n]["signal"])])
        else:  # the trampoline is libc's: below the first in-app frame, left out
            want = SEP.join(chain + [signame(cases[n]["signal"])])
        got = by.get(n, {}).get("signature")
        ok(got == want, f"{n}: the signature is '{want}'", [str(got), diag(r)])


def check_plain(cases, db):
    """Other corpus programs: signature = crash chain + signal."""
    names = [n for n in PLAIN if n in cases]
    res, r = db.ingest(*[cases[n]["core"] for n in names])
    res2, r2 = db.ingest(*[cases[n]["core"] for n in STRIPPED if n in cases],
                         extra=["--debug-dir", os.path.join(CORPUS, "debug")])
    names += [n for n in STRIPPED if n in cases]
    res = res + res2
    ok(r.returncode == 0 and r2.returncode == 0 and len(res) == len(names),
       f"{len(names)} other corpus cores are ingested", diag(r) + diag(r2))
    for n, x in zip(names, res):
        want = expected_signature(cases[n]["crash_chain"], cases[n]["signal"])
        ok(good_result(x, want), f"{n}: signature '{want}'", json.dumps(x))
    ad = {x.get("bucket_id") for n, x in zip(names, res) if n.startswith("abort_deep.")}
    ok(len(ad) == 1 and None not in ad,
       "abort_deep in O0, O2, static, nopie and stripped builds: one bucket", str(ad))


def check_no_symbols(cases, tmp):
    """abort_deep.stripped without its debug info: the program's frames have
    no symbol, so each is module-basename+0xOFFSET (the frame's offset in the
    module, as coreq stack reports it)."""
    c = cases.get("abort_deep.stripped")
    if not c:
        ok(False, "corpus has abort_deep.stripped")
        return
    db = Db(tmp, "nosym")
    db.cache = os.path.join(tmp, "nosym-cache.db")  # no symbols from --debug-dir runs
    res, r = db.ingest(c["core"])
    x = res[0] if res else {}
    base = os.path.basename(c["exe"])
    offs = [f.get("offset") for f in crashed_frames(c["core"]) if os.path.basename(f.get("module") or "") == base]
    nchain = len(c["crash_chain"].split())
    want = SEP.join([f"{base}+{o}" for o in offs[:nchain]] + [signame(c["signal"])])
    parts = str(x.get("signature")).split(SEP)
    ok(r.returncode == 0 and len(offs) > nchain and x.get("signature") == want
       and all(re.match(rf"^{re.escape(base)}\+0x[0-9a-f]+$", p) for p in parts[:-1]),
       f"abort_deep.stripped without debug info: '{want}' (module+offset for frames without a symbol)",
       [f"coreq: {x.get('signature')!r}", f"want:  {want!r}"])


def check_since_between(cases, tmp):
    """--since T between two ingests: only the later core's bucket.  Both
    cores are fresh copies, so the order is the same whether a bucket is seen
    when its core is ingested or when the core file was written."""
    db = Db(tmp, "since")
    early = os.path.join(tmp, "earlier.core")
    shutil.copyfile(cases["bucket_multi-f"]["core"], early)
    res_a, ra = db.ingest(early)
    t = int(time.time()) + 1
    time.sleep(max(0.0, t - time.time()) + 0.05)
    copy = os.path.join(tmp, "later.core")
    shutil.copyfile(cases["bucket_multi-g"]["core"], copy)
    res_b, rb = db.ingest(copy)
    a = res_a[0].get("bucket_id") if res_a else None
    b = res_b[0].get("bucket_id") if res_b else None
    got, r = db.buckets("--since", str(t))
    ids = None if got is None else [x.get("id") for x in got]
    ok(None not in (a, b) and a != b and ids == [b],
       "buckets --since T (unix seconds) between two ingests: only the later bucket",
       diag(r, f"earlier bucket {a}, later bucket {b}, --since {t}: {ids}",
            *ra.stderr.splitlines()[:5], *rb.stderr.splitlines()[:5]))
    got, r = db.buckets("--since", str(t - 3600))
    ids = None if got is None else sorted(x.get("id") for x in got)
    ok(ids is not None and ids == sorted([a, b]), "buckets --since an hour before: both buckets", diag(r))


def check_signature_frames(cases, tmp, layout_hash, layout_sig):
    c = cases["bucket_site.O0"]
    db = Db(tmp, "frames2")
    res, r = db.ingest(c["core"], extra=["--signature-frames", "2"])
    want = expected_signature(c["crash_chain"], c["signal"], 2)
    x = res[0] if res else {}
    ok(r.returncode == 0 and good_result(x, want) and want == "validate_length | parse_header | SIGABRT",
       f"--signature-frames 2: '{want}' (2 frames and the signal)", diag(r))
    ok(x.get("bucket") is not None and x.get("bucket") != layout_hash,
       "--signature-frames 2: another bucket hash than with 5 frames", [str(x.get("bucket")), str(layout_hash)])
    db = Db(tmp, "frames50")
    c = cases["abort_deep.O0"]
    res, r = db.ingest(c["core"], extra=["--signature-frames", "50"])
    want = expected_signature(c["crash_chain"], c["signal"], 50)
    ok(r.returncode == 0 and res and good_result(res[0], want),
       f"--signature-frames 50: still '{want}' (no process start-up frames)", diag(r))
    # The hash is a function of the text only: the same signature in another
    # database has the same hash.
    db = Db(tmp, "again")
    res, r = db.ingest(cases["bucket_site.O2pad"]["core"])
    x = res[0] if res else {}
    ok(x.get("signature") == layout_sig and x.get("bucket") == layout_hash,
       "the same signature in another database has the same bucket hash", [json.dumps(x), str(layout_hash)])


def check_text_and_duplicates(cases, tmp, hundred):
    db = Db(tmp, "text")
    f1 = cases["bucket_multi-f"]["core"]
    f2 = os.path.join(hundred["dir"], "core-%03d" % hundred["sites"].index("f"))
    g1 = cases["bucket_multi-g"]["core"]
    _, r = db.ingest(f1, f2, g1, f1, fmt="text")
    lines = r.stdout.splitlines()
    m = [re.search(r", bucket (\d+)( \(new\))?$", l) for l in lines]
    good = (r.returncode == 0 and len(lines) == 4 and all(m[:3]) and m[0].group(2) and not m[1].group(2)
            and m[2].group(2) and m[0].group(1) == m[1].group(1) != m[2].group(1) and ", bucket" not in lines[3])
    ok(good, "ingest text: ', bucket N (new)' for a new bucket, ', bucket N' for a known one, none for a duplicate",
       diag(r))
    res, r = db.ingest(g1)
    x = res[0] if res else {}
    ok(r.returncode == 0 and x.get("status") != "ingested"
       and all(k in x and x[k] is None for k in ("bucket_id", "bucket", "signature", "new_bucket")),
       "ingest JSON: bucket_id, bucket, signature and new_bucket are null for a duplicate", diag(r))
    bad = os.path.join(tmp, "not-a-core")
    with open(bad, "wb") as f:
        f.write(b"\x7fELF" + b"\0" * 60)
    res, r = db.ingest(bad)
    x = res[0] if res else {}
    ok(r.returncode == 1 and x.get("status") not in (None, "ingested")
       and all(k in x and x[k] is None for k in ("bucket_id", "bucket", "signature", "new_bucket")),
       "ingest JSON: bucket_id, bucket, signature and new_bucket are null for a core that cannot be read", diag(r))
    bks, r = db.buckets()
    counts = sorted(b.get("count") for b in bks or [])
    ok(counts == [1, 2], "duplicates and failures add no core to a bucket (counts 2 and 1)", diag(r))


def read_hundred():
    d = os.path.join(CORPUS, "cores", "bucket-100")
    e = read_expect(os.path.join(d, "expect")) if os.path.isfile(os.path.join(d, "expect")) else {}
    sites = e.get("sites", "").split()
    signals = e.get("signals", "").split()
    return {"dir": d, "expect": e, "sites": sites, "signals": signals}


def match_sites(db, bks, hundred, want):
    """Map each bucket to the one site whose cores (by name) it holds, with
    `coreq cores --bucket`.  Returns ({site: bucket id}, problems)."""
    sites, e = hundred["sites"], hundred["expect"]
    names = ["core-%03d" % i for i in range(len(sites))]
    matched, probs = {}, []
    for b in bks or []:
        cores, rc = db.cores("--bucket", b.get("id"))
        if cores is None:
            probs.append(f"cores --bucket {b.get('id')} failed: {rc.stderr.strip()}")
            continue
        got = {os.path.basename(c.get("path", "")) for c in cores}
        site = next((s for s in want if got == {n for n, t in zip(names, sites) if t == s}), None)
        if site is None:
            probs.append(f"bucket {b.get('id')} ({b.get('signature')}): cores {sorted(got)} are no one site's")
            continue
        if site in matched:
            probs.append(f"site {site} in buckets {matched[site]} and {b.get('id')}")
        matched[site] = b.get("id")
        if len(cores) != sites.count(site) or b.get("count") != len(cores) \
                or any(c.get("bucket_id") != b.get("id") for c in cores):
            probs.append(f"bucket {b.get('id')}: count {b.get('count')}, {len(cores)} cores, "
                         f"bucket_ids {[c.get('bucket_id') for c in cores]}")
        if b.get("signature") != want[site]:
            probs.append(f"bucket {b.get('id')} of site {site}: signature {b.get('signature')!r}, want {want[site]!r}")
        ids = {c.get("id") for c in cores}
        if b.get("example_core") not in ids:
            probs.append(f"bucket {b.get('id')}: example core {b.get('example_core')} is not one of its cores")
        if b.get("exes") != [e.get("exe")]:
            probs.append(f"bucket {b.get('id')}: exes {b.get('exes')}, want [{e.get('exe')}]")
    return matched, probs


def site_signatures(hundred):
    sites, signals, e = hundred["sites"], hundred["signals"], hundred["expect"]
    return {s: expected_signature(e.get("chain_" + s, ""), signals[sites.index(s)]) for s in set(sites)}


def check_concurrent(tmp, hundred):
    """Several ingest processes at once into one database (the release build,
    as in test_ingest_concurrency): buckets are created once, counts are not
    lost, duplicates are not counted."""
    d, sites = hundred["dir"], hundred["sites"]
    paths = [os.path.join(d, "core-%03d" % i) for i in range(len(sites))]
    want = site_signatures(hundred)
    release = os.environ.get("COREQ_RELEASE", os.path.join(BUILD, "coreq"))
    rounds = [("4 processes, a quarter of bucket-100 each", [paths[k::4] for k in range(4)]),
              ("4 processes, all of bucket-100 each, in different orders",
               [paths[k * 25:] + paths[:k * 25] for k in range(4)])]
    for n, (what, lists) in enumerate(rounds):
        db = Db(tmp, f"concurrent{n}")
        procs = [subprocess.Popen([release, "ingest", "--db", db.path, "--cache", db.cache, "--format", "json",
                                   *lst], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for lst in lists]
        outs = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
        res, probs = [], []
        for out, err, rc in outs:
            try:
                res += json.loads(out)["results"]
            except (ValueError, KeyError):
                probs.append(f"exit {rc}: {err.strip()[:300]}")
            if rc != 0:
                probs.append(f"exit {rc}: {err.strip()[:300]}")
        ingested = [x for x in res if x.get("status") == "ingested"]
        new = [x for x in res if x.get("new_bucket") is True]
        good = (not probs and len(ingested) == 100
                and sorted(os.path.basename(x["path"]) for x in ingested) == sorted(map(os.path.basename, paths))
                and len(new) == 5 and len({x.get("bucket_id") for x in new}) == 5)
        ok(good, f"concurrent ingest ({what}): each core ingested once, each bucket new once",
           probs + [f"{len(ingested)} ingested, new_bucket true {len(new)} times"])
        bks, r = db.buckets()
        matched, probs = match_sites(db, bks, hundred, want)
        ok(bks is not None and len(bks) == 5 and all(b.get("count") == 20 for b in bks)
           and len(matched) == 5 and not probs,
           f"concurrent ingest ({what}): 5 buckets of 20, each one site's cores", diag(r, *probs))


def check_hundred(tmp, hundred):
    d, sites, signals = hundred["dir"], hundred["sites"], hundred["signals"]
    names = ["core-%03d" % i for i in range(len(sites))]
    distinct = sorted(set(sites))
    ok(len(sites) == 100 and len(signals) == 100 and len(distinct) == 5
       and all(sites.count(s) == 20 for s in distinct) and sites != sorted(sites)
       and all(os.path.isfile(os.path.join(d, n)) for n in names),
       "bucket-100: 100 cores from 5 sites, 20 each, scrambled", f"{len(sites)} sites in {d}/expect")
    want = site_signatures(hundred)
    db = Db(tmp, "hundred")
    res, r = db.ingest(d)
    by_name = {os.path.basename(x.get("path", "")): x for x in res}
    probs = [f"{n} ({s}): {json.dumps(by_name.get(n))}" for n, s in zip(names, sites)
             if not good_result(by_name.get(n, {}), want[s])]
    ok(r.returncode == 0 and len(res) == 100 and not probs,
       "bucket-100 ingested as a directory: each core has its site's signature", diag(r, *probs))
    first = {sites.index(s) for s in distinct}
    newb = [i for i, n in enumerate(names) if by_name.get(n, {}).get("new_bucket") is True]
    ok(set(newb) == first, "bucket-100: new_bucket exactly for the first core of each site",
       [f"new at {newb}", f"first of each site at {sorted(first)}"])

    bks, r = db.buckets()
    ok(bks is not None and len(bks) == 5 and all(b.get("count") == 20 for b in bks),
       "bucket-100: exactly 5 buckets of 20 cores", diag(r))
    matched, probs = match_sites(db, bks, hundred, want)
    ok(bks is not None and len(matched) == 5 and not probs,
       "bucket-100: each bucket's cores (cores --bucket) are exactly the cores of one site", probs)
    return {want[s]: (by_name.get(names[sites.index(s)], {}).get("bucket")) for s in distinct}


def main():
    cases = {c["case"]: c for c in require_corpus()}
    hundred = read_hundred()
    need = LAYOUT + [f"bucket_multi-{s}" for s in SITES] + ["abort_deep.O0"]
    missing = [n for n in need if n not in cases]
    ok(not missing and len(hundred["sites"]) == 100,
       "corpus has the bucket cases (bucket_site.*, bucket_multi-*, bucket-100)",
       f"missing {missing}, bucket-100 sites {len(hundred['sites'])}: run `make corpus`")
    if missing or len(hundred["sites"]) != 100:
        done()
    tmp = tempfile.mkdtemp(prefix="coreq-buckets-")
    try:
        db = Db(tmp, "main")
        layout_bucket, layout_sig = check_layout(cases, db)
        layout_hash = next((b.get("hash") for b in db.buckets()[0] or [] if b.get("id") == layout_bucket), None)
        bid = check_multi_sites(cases, db, layout_bucket)
        check_database_queries(cases, db, layout_bucket, bid)
        check_plain(cases, Db(tmp, "plain"))
        check_handlers(cases, Db(tmp, "handlers"))
        check_no_symbols(cases, tmp)
        check_since_between(cases, tmp)
        check_signature_frames(cases, tmp, layout_hash, layout_sig)
        check_text_and_duplicates(cases, tmp, hundred)
        hashes = check_hundred(tmp, hundred)
        check_concurrent(tmp, hundred)
        multi = {b.get("signature"): b.get("hash") for b in Db(tmp, "main").buckets()[0] or []}
        common = [s for s in hashes if s in multi]
        ok(len(common) == 5 and all(hashes[s] == multi[s] for s in common),
           "bucket hashes of bucket-100 equal those of the same signatures in another database",
           [f"{s}: {hashes[s]} vs {multi[s]}" for s in common])
    finally:
        shutil.rmtree(tmp)
    done()


main()
