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
"""
import os
import random
import shutil
import sqlite3
import tempfile

from coreq_test import coreq, done, ok, require_corpus, sanitizer_report


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
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
