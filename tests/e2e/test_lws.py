#!/usr/bin/env python3
"""coreq lws: libwebsockets' compressed allocation backtraces.

The story: an embedded libwebsockets user has heap-allocation backtraces in
a log as "~m#" lines.  coreq must read and write them exactly as lws does,
name each address (inline frames included) from the ELF, and turn a whole
log into a heap map of allocation sites with counts and byte totals.

Oracles: the vector of FACTS.md section 5; tests/e2e/lws_oracle.py, an
independent Python implementation of the format (also used to build blobs
with the quirk bit set); eu-addr2line -i -f for names, files, lines and
inline chains; nm and objdump for the addresses of known functions and of
the return addresses after known calls in a program built here; the known
counts and sizes of a log generated here.
"""
import atexit
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import tempfile

import lws_oracle
from gdb_lines import gdb_lines
from coreq_test import CORPUS, coreq, done, ok, sanitizer_report

VECTOR_TEXT = "~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV"
VECTOR_LINE = "~b#size: 7520, 0x406651 0x406852 0x406c1b 0x406294 "
VECTOR = ([0x406651, 0x406852, 0x406C1B, 0x406294], 7520)

INLINE_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
static inline __attribute__((always_inline)) void *checked(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	return p;
}
static inline __attribute__((always_inline)) void *doubled(size_t n)
{
	return checked(2 * n);
}
__attribute__((noinline)) void *site_a(size_t n) { void *p = doubled(n); puts(""); return p; }
__attribute__((noinline)) void *site_b(size_t n) { void *p = checked(n + 3); puts(""); return p; }
__attribute__((noinline)) void *site_c(size_t n) { void *p = calloc(n, 4); puts(""); return p; }
int main(int argc, char **argv)
{
	(void)argv;
	free(site_a((size_t)argc));
	free(site_b((size_t)argc));
	free(site_c((size_t)argc));
	return 0;
}
"""


def clean(r):
    return r.returncode in (0, 1, 2) and not sanitizer_report(r.stderr)


# ---- format ----------------------------------------------------------------------


def test_vector():
    ok(lws_oracle.encode_text(*VECTOR) == VECTOR_TEXT
       and lws_oracle.decode(__import__("base64").b64decode(VECTOR_TEXT[3:])) == VECTOR,
       "the Python oracle reproduces the FACTS vector")
    r = coreq("lws", "decode", VECTOR_TEXT)
    ok(r.returncode == 0 and r.stdout == VECTOR_LINE + "\n",
       "lws decode prints the FACTS vector's ~b# line exactly (trailing space)", [repr(r.stdout), r.stderr])
    r = coreq("lws", "encode", "--size", "7520", "0x406651", "0x406852", "0x406c1b", "0x406294")
    ok(r.returncode == 0 and r.stdout == VECTOR_TEXT + "\n",
       "lws encode writes the FACTS vector's ~m# line exactly", [repr(r.stdout), r.stderr])
    p = subprocess.run([os.environ.get("COREQ", "build/asan/coreq"), "lws", "decode"],
                       input=f"[2024/01/01] N: {VECTOR_TEXT}\n\n  {VECTOR_TEXT[3:]}\n",
                       capture_output=True, text=True)
    ok(p.returncode == 0 and p.stdout == (VECTOR_LINE + "\n") * 2,
       "decode from stdin: a log prefix before ~m# and a bare base64 line", [p.stdout, p.stderr])


def random_stack(rng):
    depth = rng.choice([0, 1, 2, 5, 17, 30, 31])
    base = rng.choice([0x400000, 0x7F0000000000, 0x1000, 1 << rng.randrange(1, 62)])
    addrs = []
    for _ in range(depth):
        kind = rng.random()
        if kind < 0.5:
            addrs.append(base + rng.randrange(0, 1 << 16))
        elif kind < 0.8:
            addrs.append(rng.randrange(0, 1 << 63))
        else:
            addrs.append(rng.randrange(0, 1 << rng.randrange(1, 63)))
    size = rng.choice([0, 1, 7520, (1 << 63) - 1, rng.randrange(0, 1 << 40)])
    return addrs, size


def test_encode_decode_against_oracle():
    rng = random.Random(8)
    stacks = [random_stack(rng) for _ in range(150)]
    bad = []
    for addrs, size in stacks:
        want = lws_oracle.encode_text(addrs, size)
        r = coreq("lws", "encode", "--size", size, *[hex(a) for a in addrs])
        if r.returncode != 0 or r.stdout != want + "\n":
            bad.append(f"encode {addrs} {size}: {r.stdout!r} {r.stderr!r} want {want}")
    ok(not bad, "lws encode matches the oracle byte for byte on 150 random stacks", bad[:5])
    text = "\n".join(lws_oracle.encode_text(a, s) for a, s in stacks) + "\n"
    p = subprocess.run([os.environ.get("COREQ", "build/asan/coreq"), "lws", "decode", "-"],
                       input=text, capture_output=True, text=True)
    want = "".join(lws_oracle.decoded_line(a, s) + "\n" for a, s in stacks)
    ok(p.returncode == 0 and p.stdout == want, "lws decode matches the oracle on the same 150 stacks",
       [l for l in zip(p.stdout.splitlines(), want.splitlines()) if l[0] != l[1]][:5] + [p.stderr])


def test_variants():
    rng = random.Random(5)
    found = None
    for _ in range(500):
        addrs, size = random_stack(rng)
        text = lws_oracle.encode_text(addrs, size)
        if "+" in text and "/" in text:
            found = (addrs, size, text)
            break
    if not ok(found is not None, "found a record whose base64 has both + and /"):
        return
    addrs, size, text = found
    want = lws_oracle.decoded_line(addrs, size) + "\n"
    url = text.replace("+", "-").replace("/", "_").rstrip("=")
    r = coreq("lws", "decode", url)
    ok(r.returncode == 0 and r.stdout == want, "the -/_ base64 alphabet without padding decodes the same",
       [url, r.stdout, r.stderr])
    spaced = text[:3] + " ".join(text[3 + i:3 + i + 5] for i in range(0, len(text) - 3, 5))
    r = coreq("lws", "decode", "\t " + spaced.replace(" ", " \t", 2) + "  ")
    ok(r.returncode == 0 and r.stdout == want, "whitespace inside and around the record is ignored",
       [spaced, r.stdout, r.stderr])
    quirky = lws_oracle.encode_text(addrs, size, quirk=1)
    r = coreq("lws", "decode", quirky)
    ok(quirky != text and r.returncode == 0 and r.stdout == want,
       "every field's extra bit set to 1 (the quirk) decodes the same", [quirky, r.stdout, r.stderr])


def test_record_in_a_log_line():
    """Issue 31: `lws decode` finds a record in a line by the rule `lws ingest`
    uses (libcore/formats/lws_log.h): text after the record is no part of it."""
    line = "app: leak ~m#EDUAAHIAAOgAAAs= (from pool)"
    want = lws_oracle.decoded_line([0x1000, 0x2000], 64) + "\n"
    r = coreq("lws", "decode", line)
    ok(r.returncode == 0 and r.stdout == want,
       "lws decode of a record followed by text decodes the record alone, as lws ingest does",
       [r.returncode, r.stdout, r.stderr])


def test_malformed():
    blob = bytearray(lws_oracle.encode(*VECTOR))
    b64 = __import__("base64").b64encode
    wrong_trailer = bytearray(blob)
    wrong_trailer[-1] += 1
    first_delta = lws_oracle.encode([0x1000, 0x1001], 1)
    # Depth 3 but the stream ends after one item.
    short = lws_oracle.encode([0x406651], 7520)
    short = bytes([(3 << 3) | (short[0] & 7)]) + short[1:]
    cases = [
        ("IF0B!mUQ", "bad base64 character"),
        ("~m#" + b64(bytes(wrong_trailer)).decode(), "length trailer"),
        ("~m#" + b64(bytes(blob[:-3]) + bytes([0, len(blob) - 1])).decode(), None),
        ("~m#" + b64(bytes(short)).decode(), "past the end"),
        ("~m#" + b64(b"\x00\x00").decode(), "length trailer"),
        ("~m#", "too short"),
        ("~m#" + b64(bytes(400)).decode(), "bytes"),
        ("~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV=", "do not complete"),
    ]
    # A first item that claims to be a delta.
    bits = f"{1:05b}0" + "10" + "0000" + "00" + "00" * 6
    raw = bytes(int(bits[i:i + 8].ljust(8, "0"), 2) for i in range(0, len(bits), 8))
    cases.append(("~m#" + b64(raw + bytes([0, len(raw) + 2])).decode(), "delta"))
    for text, what in cases:
        r = coreq("lws", "decode", text)
        lines = r.stderr.strip().splitlines()
        good = (r.returncode == 1 and r.stdout == "" and len(lines) == 1
                and lines[0].startswith("coreq: argument:1: ")
                and (what is None or what in lines[0]))
        ok(good and clean(r), f"malformed {text[:40]!r}: one line naming the line and the fault, exit 1",
           [r.returncode, r.stdout, r.stderr])
    p = subprocess.run([os.environ.get("COREQ", "build/asan/coreq"), "lws", "decode"],
                       input=f"{VECTOR_TEXT}\nnot base64!\n{VECTOR_TEXT}\n", capture_output=True, text=True)
    ok(p.returncode == 1 and p.stdout == (VECTOR_LINE + "\n") * 2
       and p.stderr.startswith("coreq: -:2: ") and len(p.stderr.splitlines()) == 1,
       "a bad line among good ones: the good ones print, the bad one is named by line, exit 1",
       [p.stdout, p.stderr])


def test_encode_refusals():
    r = coreq("lws", "encode", "--size", "1", "0x1000", hex(1 << 63))
    ok(r.returncode == 1 and r.stdout == "" and len(r.stderr.splitlines()) == 1
       and "64 bits" in r.stderr and "0x8000000000000000" in r.stderr,
       "lws encode refuses an address needing 64 bits with one clear line, exit 1", r.stderr)
    r = coreq("lws", "encode", "--size", str(1 << 63), "0x1000")
    ok(r.returncode == 1 and "64 bits" in r.stderr, "lws encode refuses a size needing 64 bits", r.stderr)
    r = coreq("lws", "encode", "--size", str((1 << 63) - 1), hex((1 << 63) - 1))
    ok(r.returncode == 0 and r.stdout.strip() == lws_oracle.encode_text([(1 << 63) - 1], (1 << 63) - 1),
       "2^63-1 is the largest value encoded, as the oracle does", [r.stdout, r.stderr])
    for args, why in [((), "no --size"), (("--size", "1") + tuple(["0x10"] * 32), "32 addresses"),
                      (("--size", "x1"), "a bad size"), (("--size", "1", "0x1g"), "a bad address"),
                      (("--size", "1", str(1 << 64)), "a value over 64 bits")]:
        r = coreq("lws", "encode", *args)
        ok(r.returncode == 2 and r.stderr.startswith("coreq lws encode: ") and clean(r),
           f"lws encode with {why} is a usage error (exit 2)", [r.returncode, r.stderr])


def test_help():
    for args in [("lws", "--help"), ("lws", "decode", "--help"), ("lws", "encode", "--help"),
                 ("lws", "ingest", "--help")]:
        r = coreq(*args)
        ok(r.returncode == 0 and r.stdout.startswith("Usage: coreq lws"), f"coreq {' '.join(args)}")
    r = coreq("lws", "frobnicate")
    ok(r.returncode == 2, "an unknown lws subcommand is a usage error")


# ---- symbols -----------------------------------------------------------------------


def addr2line_chains(elf, addrs):
    """{address: [(function, file, line)]} from eu-addr2line -i at address - 1."""
    r = subprocess.run(["eu-addr2line", "-a", "-i", "-f", "-e", elf] + [hex(a - 1) for a in addrs],
                       capture_output=True, text=True)
    chains, cur, fn = {}, None, None
    for line in r.stdout.splitlines():
        if re.match(r"^0x[0-9a-f]+$", line):
            cur = chains.setdefault(int(line, 16) + 1, [])
            fn = None
        elif fn is None:
            fn = re.sub(r" inlined at .*$", "", line)
        else:
            m = re.match(r"^(.*?):(\d+)(?::\d+)?$", line)
            file, lno = (m.group(1), int(m.group(2))) if m else (None, 0)
            cur.append((None if fn == "??" else fn, None if file == "??" else file, lno))
            fn = None
    return chains


def coreq_chains(elf, addrs, extra=()):
    text = "\n".join(lws_oracle.encode_text(addrs[i:i + 31], 1) for i in range(0, len(addrs), 31))
    p = subprocess.run([os.environ.get("COREQ", "build/asan/coreq"), "lws", "decode", "--no-cache",
                        "--elf", elf, "--format", "json", *extra, "-"],
                       input=text, capture_output=True, text=True)
    chains = {}
    try:
        for rec in json.loads(p.stdout)["records"]:
            for f in rec["frames"]:
                chains.setdefault(int(f["pc"], 16), []).append((f["function"], f["file"], f["line"] or 0))
    except (ValueError, KeyError):
        pass
    return chains, p


def oracle_chains(elf, addrs):
    """eu-addr2line's chains, with the innermost row's file:line as gdb gives it
    (gdb_lines.py: the two differ where rows share an address), files by base
    name (their spelling is test_stack_vs_gdb.py's)."""
    chains = addr2line_chains(elf, addrs)
    rows = gdb_lines([elf], [a - 1 for a in addrs])
    out = {}
    for a, chain in chains.items():
        chain = [(fn, base(file), line) for fn, file, line in chain]
        if chain and (a - 1) in rows:
            file, line = rows[a - 1]
            chain[0] = (chain[0][0], base(file), line)
        out[a] = chain
    return out


def base(path):
    return os.path.basename(path) if path else None


def check_symbols(elf, addrs, label, extra=()):
    ours, p = coreq_chains(elf, addrs, extra)
    ours = {a: [(fn, base(file), line) for fn, file, line in chain] for a, chain in ours.items()}
    theirs = oracle_chains(elf, addrs)
    bad = [f"{a:#x}: coreq {ours.get(a)} oracle {theirs.get(a)}" for a in addrs
           if ours.get(a) != theirs.get(a)]
    ok(p.returncode == 0 and not bad and len(ours) == len(set(addrs)),
       f"{label}: {len(addrs)} addresses named as eu-addr2line -i names them (inline chains, "
       "files, lines; the innermost row as gdb picks it)",
       bad[:8] + [p.stderr])
    return ours


def nm_functions(elf):
    r = subprocess.run(["nm", "-S", "--defined-only", elf], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT" and int(f[1], 16) > 1:
            out[f[3]] = (int(f[0], 16), int(f[1], 16))
    return out


def return_addresses(elf, function):
    """Addresses just after each call instruction in function, from objdump."""
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={function}", elf],
                       capture_output=True, text=True)
    insns = [l for l in r.stdout.splitlines() if re.match(r"^\s+[0-9a-f]+:\s", l)]
    out = []
    for i, l in enumerate(insns[:-1]):
        if re.search(r"\bcall", l):
            out.append((int(insns[i + 1].split(":")[0], 16), l.split("<")[-1].rstrip(">")))
    return out


def test_corpus_symbols():
    elfs = [os.path.join(CORPUS, "bin", "nopie", p) for p in ("abort_deep", "bucket_site", "sighandler")]
    elfs = [e for e in elfs if os.path.exists(e)]
    if not ok(elfs, "corpus nopie ELFs exist (make corpus)"):
        return
    for elf in elfs:
        addrs = []
        for name, (start, size) in sorted(nm_functions(elf).items()):
            addrs += [start + 1, start + size // 2 + 1, start + size]
        check_symbols(elf, addrs, f"corpus {os.path.basename(elf)} (non-PIE, -O2 -g)")
    stripped = os.path.join(CORPUS, "bin", "stripped", "abort_deep")
    if os.path.exists(stripped):
        r = coreq("lws", "decode", "--no-cache", "--elf", stripped, "--debug-dir",
                  os.path.join(CORPUS, "debug"), lws_oracle.encode_text([0x1001], 1))
        ok(r.returncode == 0 and len(r.stdout.splitlines()) == 2,
           "a stripped ELF with --debug-dir decodes", r.stderr)
    r = coreq("lws", "decode", "--elf", "/nonexistent/elf", VECTOR_TEXT)
    ok(r.returncode == 1 and r.stderr.startswith("coreq: /nonexistent/elf: "),
       "a missing --elf is a one-line error", r.stderr)
    r = coreq("lws", "decode", "--elf", __file__, VECTOR_TEXT)
    ok(r.returncode == 1 and "not an ELF" in r.stderr, "a non-ELF --elf is a one-line error", r.stderr)


def build_inline_program(work):
    src, exe = os.path.join(work, "sites.c"), os.path.join(work, "sites")
    with open(src, "w") as f:
        f.write(INLINE_PROGRAM)
    r = subprocess.run(["cc", "-O2", "-g", "-fno-pie", "-no-pie", "-o", exe, src], capture_output=True, text=True)
    return exe if r.returncode == 0 else None


def site_addresses(exe):
    """{site: (return address inside site_X after its allocation call, return address in main)}."""
    main_calls = return_addresses(exe, "main")
    sites = {}
    for name, alloc in (("site_a", "malloc"), ("site_b", "malloc"), ("site_c", "calloc")):
        inner = [a for a, callee in return_addresses(exe, name) if callee.startswith(alloc)]
        outer = [a for a, callee in main_calls if callee == name]
        if inner and outer:
            sites[name] = (inner[0], outer[0])
    return sites


def test_inline_symbols_and_ingest():
    work = tempfile.mkdtemp(prefix="coreq-lws-")
    atexit.register(shutil.rmtree, work, True)
    exe = build_inline_program(work)
    if not ok(exe, "a program with inlined allocation helpers builds (cc -O2 -g -no-pie)"):
        return
    sites = site_addresses(exe)
    if not ok(len(sites) == 3, "objdump finds the allocation calls of site_a, site_b, site_c", sites):
        return
    addrs = [a for pair in sites.values() for a in pair]
    ours = check_symbols(exe, addrs, "inline program")
    a_inner = ours.get(sites["site_a"][0], [])
    ok([f[0] for f in a_inner] == ["checked", "doubled", "site_a"],
       "site_a's allocation is named checked <- doubled <- site_a (two inlined calls)", a_inner)
    test_ingest(work, exe, sites)


def test_ingest(work, exe, sites):
    # Known heap: site_a 7 x 100 + 3 x 28, site_b 5 x 4096, site_c 1 x 1.
    plan = [("site_a", 100, 7), ("site_a", 28, 3), ("site_b", 4096, 5), ("site_c", 1, 1)]
    want = {"site_a": (10, 784), "site_b": (5, 20480), "site_c": (1, 1)}
    lines = []
    rng = random.Random(3)
    for name, size, count in plan:
        for _ in range(count):
            lines.append(f"[2024/05/01 10:00:{rng.randrange(60):02d}:0000] N: "
                         + lws_oracle.encode_text(list(sites[name]), size))
    lines += ["lws_create_context: LWS: 4.3.0", "~m is not a record", "", "random ~b#size: 1, 0x1 ",
              "[x] N: ~m#IF0B!!!", "~m#" + "A" * 10]
    rng.shuffle(lines)
    log = os.path.join(work, "heap.log")
    with open(log, "w") as f:
        f.write("\n".join(lines) + "\n")
    db = os.path.join(work, "lws.db")
    r = coreq("lws", "ingest", "--no-cache", "--elf", exe, "--db", db, "--format", "json", log)
    try:
        res = json.loads(r.stdout)["logs"][0]
    except (ValueError, KeyError, IndexError):
        res = {}
    ok(r.returncode == 0 and res.get("records") == 16 and res.get("malformed") == 2 and res.get("sites") == 4
       and res.get("stacks") == 3 and not res.get("duplicate"),
       "lws ingest: 16 records, 4 (stack, size) sites, 3 stacks, 2 malformed records skipped",
       [r.stdout, r.stderr])
    warns = [l for l in r.stderr.splitlines() if ": warning: " in l]
    ok(len(warns) == 2 and all(re.match(rf"^coreq: {re.escape(log)}:\d+: warning: lws ", w) for w in warns),
       "each malformed record is one warning naming its line", r.stderr)

    def heap():
        r = coreq("list-stacks", "--db", db, "--source", "lws", "--format", "json")
        try:
            rows = json.loads(r.stdout)["stacks"]
        except (ValueError, KeyError):
            return None, r
        out = {}
        for row in rows:
            native = [f for f in row["frames"] if f["kind"] == "native"]
            out[native[0]["function"] if native else None] = (row["allocations"], row["bytes"], row)
        return out, r

    got, r = heap()
    ok(got is not None and {k: v[:2] for k, v in got.items()} == want,
       "list-stacks --source lws: allocations and bytes per site are the log's", [got, r.stderr])
    r = coreq("list-stacks", "--db", db, "--source", "lws", "--format", "json")
    order = [max(f["function"] for f in s["frames"] if f["kind"] == "native" and f["function"] != "main")
             for s in json.loads(r.stdout)["stacks"]] if r.returncode == 0 else []
    ok(order == ["site_b", "site_a", "site_c"], "sites are listed heaviest (bytes) first", order)
    if got and "site_a" in got:
        row = got["site_a"][2]
        natives = [f for f in row["frames"] if f["kind"] == "native"]
        ok([int(f["offset"], 16) for f in natives] == list(sites["site_a"])
           and all(f["module"] == exe and f["trust"] == "log" for f in row["frames"])
           and len(row["frames"]) == 4,
           "stored frames: the ELF's module, offsets = the return addresses, inline frames kept, trust log",
           row["frames"])
    r = coreq("lws", "ingest", "--no-cache", "--elf", exe, "--db", db, log)
    r2 = coreq("lws", "ingest", "--no-cache", "--elf", exe, "--db", db, "-", stdin=open(log))
    again, _ = heap()
    ok(r.returncode == 0 and "already ingested" in r.stdout and "already ingested" in r2.stdout
       and again is not None and {k: v[:2] for k, v in again.items()} == want,
       "ingesting the same log again (by name, then on stdin) counts nothing twice", [r.stdout, r2.stdout])
    with open(log, "a") as f:
        f.write(lws_oracle.encode_text(list(sites["site_c"]), 9) + "\n")
    r = coreq("lws", "ingest", "--no-cache", "--elf", exe, "--db", db, log)
    grown, _ = heap()
    ok(r.returncode == 0 and grown and grown["site_c"][:2] == (3, 11) and grown["site_b"][:2] == (10, 40960),
       "a log that has grown is a new log: all its records count (documented)", [r.stdout, grown])
    r = coreq("list-stacks", "--db", db, "--source", "lws", "--exe", "nomatch")
    ok(r.returncode == 0 and "no lws allocation sites" in r.stdout, "--exe filters by the ELF", r.stdout)
    r = coreq("list-stacks", "--db", db, "--source", "lws", "--exe", "sites", "--limit", "1")
    ok(r.returncode == 0 and r.stdout.startswith("stack ") and "40960 bytes" in r.stdout
       and r.stdout.count("\nstack ") == 0, "--exe by basename and --limit", r.stdout)
    r = coreq("list-stacks", "--db", db)
    ok(r.returncode == 0 and "no stacks stored" in r.stdout, "lws stacks are not thread stacks of cores", r.stdout)
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM stacks WHERE frames_blob IS NULL").fetchone()[0]
    ok(n == 0, "every lws stack has its frames_blob")
    r = coreq("lws", "ingest", "--elf", exe, "--db", db, os.path.join(work, "missing.log"))
    ok(r.returncode == 1 and r.stderr.startswith(f"coreq: {work}/missing.log: "), "a missing log: one line, exit 1",
       r.stderr)
    r = coreq("lws", "ingest", "--db", db, log)
    ok(r.returncode == 2, "lws ingest without --elf is a usage error", r.stderr)


def main():
    test_vector()
    test_encode_decode_against_oracle()
    test_variants()
    test_record_in_a_log_line()
    test_malformed()
    test_encode_refusals()
    test_help()
    test_corpus_symbols()
    test_inline_symbols_and_ingest()
    done()


main()
