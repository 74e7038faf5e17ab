#!/usr/bin/env python3
"""A damaged cache file is input like a core (issue 16, item 1).

The cache's symbol rows and unwind-table rows are altered the ways a
hostile-input audit altered them: a one-frame blob whose name has no NUL
(x'01060000000041'), one and eight flipped bytes per row, blobs cut in half.
For each, `coreq stack` and `coreq ingest` (ASan+UBSan build):
- read nothing out of bounds (no sanitizer report) and exit 0;
- print the same stack as without a cache (the reference is a --no-cache run);
- say so once: exactly one `coreq: CACHE: warning: ... damaged cache ...`
  line on stderr, naming the cache file;
- rebuild the damaged rows, so the next run is silent.

A cache that is intact but forged (issue 45, finding 6): every symbol row
renamed EVIL_..., with its CRC-32 recomputed, and libc's unwind table
swapped for the executable's.  Its keys (path, device, inode, size, mtime)
are what anyone can stat(), so only whose file it is can tell it apart:
- owned by the caller (root, or nobody running as nobody), it is the
  caller's own and believed, EVIL_ names and all (the forgery works);
- owned by another uid (nobody's file given to root with --cache, or a
  third uid's file given to nobody), or writable by others, it is refused
  with one warning line and the analysis runs without it: the output is
  the --no-cache one, with no EVIL_, and `ingest` stores no EVIL_ either.
"""
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import tempfile
import zlib

from coreq_test import COREQ, coreq, done, ok, require_corpus, sanitizer_report, skip


def stack(core, *extra):
    return coreq("stack", "--format", "json", *extra, core, timeout=300)


def flip(blob, nbytes, rng):
    b = bytearray(blob)
    for _ in range(nbytes):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def damage_symbols(db, how, rng):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT build_id, address, debuginfo, frames FROM symbols").fetchall()
    for bid, addr, dbg, blob in rows:
        con.execute("UPDATE symbols SET frames = ? WHERE build_id = ? AND address = ? "
                    "AND debuginfo = ?", (how(blob, rng), bid, addr, dbg))
    con.commit()
    con.close()


def damage_tables(db, how, rng):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT build_id, blob FROM unwind_tables").fetchall()
    for bid, blob in rows:
        con.execute("UPDATE unwind_tables SET blob = ? WHERE build_id = ?", (how(blob, rng), bid))
    con.commit()
    con.close()


def evil_blob(blob):
    """A symbol row (libcore/symbols/symbol_blob.c) with every function named EVIL_...,
    its CRC-32 recomputed: a row the decoder cannot tell from a genuine one."""
    n, p, out = blob[0], 1, bytearray(blob[:1])
    for _ in range(n):
        flags = blob[p]
        out += blob[p:p + 5]
        p += 5
        for flag in (2, 4):  # function, file
            if flags & flag:
                end = blob.index(b"\0", p)
                out += (b"EVIL_" if flag == 2 else b"") + blob[p:end + 1]
                p = end + 1
    return bytes(out) + struct.pack("<I", zlib.crc32(bytes(out)))


def forge(db):
    """Every symbol row renamed EVIL_..., libc's unwind table swapped for another module's."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT source, address, debuginfo, format, frames FROM symbols").fetchall()
    for src, addr, dbg, fmt, blob in rows:
        con.execute("UPDATE symbols SET frames = ? WHERE source = ? AND address = ? AND "
                    "debuginfo = ? AND format = ?", (evil_blob(blob), src, addr, dbg, fmt))
    libc = con.execute("SELECT t.source FROM unwind_tables t JOIN sources s ON s.id = t.source "
                       "WHERE CAST(s.identity AS TEXT) LIKE '%libc.so%'").fetchone()
    other = con.execute("SELECT blob FROM unwind_tables WHERE source != ?",
                        (libc[0] if libc else -1,)).fetchone()
    if libc and other:
        con.execute("UPDATE unwind_tables SET blob = ? WHERE source = ?", (other[0], libc[0]))
    con.commit()
    con.close()
    return len(rows), bool(libc and other)


def as_user(user, *args):
    return subprocess.run(["setpriv", f"--reuid={user}", "--regid=nogroup", "--clear-groups",
                           os.path.abspath(COREQ), *args],
                          capture_output=True, text=True, errors="replace", timeout=300)


def refused_once(r, cache):
    lines = [l for l in r.stderr.splitlines() if cache in l]
    return (len(lines) == 1 and "not your own cache" in lines[0] and
            "continuing without it" in lines[0])


def forged_cache(tmp, core, ref):
    """A forged cache is believed only by its owner (issue 45, finding 6)."""
    genuine = os.path.join(tmp, "genuine.db")
    r = stack(core, "--cache", genuine)
    ok(r.returncode == 0 and r.stdout == ref.stdout, "forged: a genuine cache is filled", r.stderr)
    forged = os.path.join(tmp, "forged.db")
    shutil.copy(genuine, forged)
    nrows, swapped = forge(forged)
    ok(nrows > 0 and swapped, f"forged: {nrows} symbol rows renamed, libc's unwind table swapped")
    r = stack(core, "--cache", forged)
    ok(r.returncode == 0 and "EVIL_" in r.stdout and not refused_once(r, forged),
       "forged: the caller's own forged cache is believed (the forgery is real)", r.stderr[-2000:])

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        skip("forged: caches of another uid", "needs root to own files as other users")
        return
    nobody = 65534
    theirs = os.path.join(tmp, "theirs")
    os.mkdir(theirs)
    cache = os.path.join(theirs, "forged.db")
    shutil.copy(forged, cache)
    os.chown(cache, nobody, nobody)
    for args, what in ((["stack", "--format", "json"], "stack --format json"),
                       (["stack"], "stack (text)")):
        r = coreq(*args, "--cache", cache, core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr) and "EVIL_" not in r.stdout
           and refused_once(r, cache),
           f"forged: root refuses nobody's cache ({what}): one warning, no EVIL_",
           r.stderr[-2000:] + r.stdout[:500])
    r = stack(core, "--cache", cache)
    ok(r.stdout == ref.stdout, "forged: root without nobody's cache prints the --no-cache stacks")
    store = os.path.join(tmp, "forged-store.db")
    r = coreq("ingest", "--db", store, "--cache", cache, core, timeout=300)
    con = sqlite3.connect(store)
    evil = con.execute("SELECT count(*) FROM frames WHERE function LIKE 'EVIL%'").fetchone()[0]
    con.close()
    ok(r.returncode == 0 and refused_once(r, cache) and evil == 0,
       "forged: ingest refuses nobody's cache and stores no EVIL_ name", r.stderr[-2000:])
    os.chown(cache, 0, 0)
    os.chmod(cache, 0o666)
    r = stack(core, "--cache", cache)
    ok(r.returncode == 0 and "EVIL_" not in r.stdout and refused_once(r, cache),
       "forged: root refuses a cache anyone can write", r.stderr[-2000:])
    os.chmod(cache, 0o644)
    os.chmod(theirs, 0o777)
    r = stack(core, "--cache", cache)
    ok(r.returncode == 0 and "EVIL_" not in r.stdout and refused_once(r, cache),
       "forged: root refuses a cache in a directory anyone can write", r.stderr[-2000:])

    # nobody, given a third uid's cache; its own copy is believed.
    os.chmod(tmp, 0o755)
    own = os.path.join(tmp, "nobody")
    os.mkdir(own)
    mine_core = os.path.join(own, "core")
    shutil.copy(core, mine_core)
    os.chmod(mine_core, 0o644)
    third = os.path.join(own, "third.db")
    shutil.copy(forged, third)
    os.chown(third, 4242, 4242)
    os.chown(own, nobody, nobody)
    plain = as_user("nobody", "stack", "--format", "json", "--no-cache", mine_core)
    r = as_user("nobody", "stack", "--format", "json", "--cache", third, mine_core)
    ok(r.returncode == 0 and not sanitizer_report(r.stderr) and "EVIL_" not in r.stdout
       and refused_once(r, third),
       "forged: nobody refuses uid 4242's cache: one warning, no EVIL_", r.stderr[-2000:])
    ok(plain.returncode == 0 and r.stdout == plain.stdout,
       "forged: nobody without it prints the --no-cache stacks", plain.stderr[-2000:])
    mine = os.path.join(own, "mine.db")
    shutil.copy(forged, mine)
    os.chown(mine, nobody, nobody)
    r = as_user("nobody", "stack", "--format", "json", "--cache", mine, mine_core)
    ok(r.returncode == 0 and "EVIL_" in r.stdout and not refused_once(r, mine),
       "forged: nobody's own forged cache is believed by nobody", r.stderr[-2000:])


def warnings(stderr, cache):
    return [l for l in stderr.splitlines() if "damaged cache" in l and cache in l]


def main():
    cases = {c["case"]: c for c in require_corpus()}
    core = cases["threads8.O2"]["core"]
    tmp = tempfile.mkdtemp(prefix="coreq-cache-hostile-")
    rng = random.Random(16)
    try:
        ref = stack(core, "--no-cache")
        ok(ref.returncode == 0, "reference stack without a cache", ref.stderr)
        clean = os.path.join(tmp, "clean.db")
        first = stack(core, "--cache", clean)
        ok(first.returncode == 0 and first.stdout == ref.stdout, "a fresh cache is filled",
           first.stderr)

        symbol_damage = [
            ("one frame, function+file flags, name without NUL",
             lambda b, r: bytes.fromhex("01060000000041")),
            ("one flipped byte", lambda b, r: flip(b, 1, r)),
            ("eight flipped bytes", lambda b, r: flip(b, 8, r)),
            ("cut in half", lambda b, r: b[: len(b) // 2]),
            ("empty", lambda b, r: b""),
        ]
        table_damage = [
            ("one flipped byte", lambda b, r: flip(b, 1, r)),
            ("eight flipped bytes", lambda b, r: flip(b, 8, r)),
            ("cut in half", lambda b, r: b[: len(b) // 2]),
        ]
        plans = [("symbol rows: " + n, f, None) for n, f in symbol_damage]
        plans += [("unwind-table rows: " + n, None, f) for n, f in table_damage]
        for i, (name, sym, tab) in enumerate(plans):
            db = os.path.join(tmp, f"cache{i}.db")
            shutil.copy(clean, db)
            if sym:
                damage_symbols(db, sym, rng)
            if tab:
                damage_tables(db, tab, rng)
            r = stack(core, "--cache", db)
            ok(not sanitizer_report(r.stderr), f"{name}: stack reads nothing out of bounds",
               r.stderr[-3000:])
            ok(r.returncode == 0 and r.stdout == ref.stdout,
               f"{name}: stack output is the same as without a cache", r.stderr[-2000:])
            ok(len(warnings(r.stderr, db)) == 1,
               f"{name}: one warning naming the cache", r.stderr[-2000:])
            again = stack(core, "--cache", db)
            ok(again.returncode == 0 and again.stdout == ref.stdout and
               not warnings(again.stderr, db),
               f"{name}: the damaged rows were rebuilt (next run is silent)", again.stderr)

        # ingest reads the same rows: it must store the same stacks as a
        # clean run and warn once.
        dbs = {}
        for label, cache in (("clean", None), ("damaged", os.path.join(tmp, "ing.db"))):
            store = os.path.join(tmp, f"store-{label}.db")
            args = ["ingest", "--db", store]
            if cache:
                shutil.copy(clean, cache)
                damage_symbols(cache, lambda b, r: bytes.fromhex("01060000000041"), rng)
                args += ["--cache", cache]
            else:
                args += ["--no-cache"]
            r = coreq(*args, core, timeout=300)
            ok(not sanitizer_report(r.stderr) and r.returncode == 0,
               f"ingest with a {label} cache succeeds", r.stderr[-3000:])
            if cache:
                ok(len(warnings(r.stderr, cache)) == 1, "ingest warns once about the cache",
                   r.stderr)
            con = sqlite3.connect(store)
            dbs[label] = sorted(con.execute(
                "SELECT t.tid, f.idx, f.function, f.file, f.line FROM threads t "
                "JOIN frames f ON f.stack_id = t.stack_id").fetchall())
            con.close()
        ok(dbs["clean"] and dbs["clean"] == dbs["damaged"],
           "ingest stores the same frames with a damaged cache as without one")

        forged_cache(tmp, core, ref)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
