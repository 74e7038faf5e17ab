#!/usr/bin/env python3
"""coreq ingest opens the cache only when a core's analysis needs it (issue 47:
cq_analyse's open_cache), the way stack and info do:
- files that are not cores (text, an empty file, ELF bytes cut short): each
  fails with one line and exit 1, and neither --cache P nor the default cache
  ($XDG_CACHE_HOME/coreq/cache.db) is created;
- a real core then opens it once and fills it (its unwind_tables rows), and a
  second core in the same run uses the same cache (one open: no second
  "cache unavailable" warning when the cache cannot be opened).
The cache's existence and rows are read with sqlite3, not from coreq's output.
"""
import os
import sqlite3
import subprocess
import tempfile

from coreq_test import COREQ, CORPUS, done, ok, require_corpus, sanitizer_report


def run(args, env):
    return subprocess.run([COREQ] + args, capture_output=True, text=True, timeout=300, env=env)


def main():
    require_corpus()
    core = os.path.join(CORPUS, "cores", "abort_deep.O0", "core")
    second = os.path.join(CORPUS, "cores", "assert_fail.O0", "core")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.pop("COREQ_CACHE", None)
        env["XDG_CACHE_HOME"] = os.path.join(tmp, "xdg-cache")
        env["XDG_STATE_HOME"] = os.path.join(tmp, "state")
        db = os.path.join(tmp, "store.db")
        junk = []
        for name, data in (("text", b"not a core\n" * 10), ("empty", b""),
                           ("elf-cut", b"\x7fELF\x02\x01\x01" + b"\0" * 9)):
            p = os.path.join(tmp, name)
            with open(p, "wb") as f:
                f.write(data)
            junk.append(p)
        cache = os.path.join(tmp, "explicit", "cache.db")
        os.mkdir(os.path.dirname(cache))
        r = run(["ingest", "--db", db, "--cache", cache] + junk, env)
        ok(r.returncode == 1 and not sanitizer_report(r.stderr),
           "ingest of files that are not cores fails (exit 1)", r.stderr[-800:])
        ok(not os.path.exists(cache), "--cache P is not created for files that are not cores",
           os.listdir(os.path.dirname(cache)))
        r = run(["ingest", "--db", db] + junk, env)
        default = os.path.join(env["XDG_CACHE_HOME"], "coreq", "cache.db")
        ok(r.returncode == 1, "the same without --cache fails", r.stderr[-800:])
        ok(not os.path.exists(default), "the default cache is not created for them", default)

        if not os.path.isfile(core) or not os.path.isfile(second):
            ok(False, "the corpus has abort_deep.O0 and assert_fail.O0", CORPUS)
            done()
        r = run(["ingest", "--db", db, "--cache", cache, junk[0], core, second], env)
        ok(r.returncode == 1 and not sanitizer_report(r.stderr),
           "a non-core among cores: exit 1, no sanitizer report", r.stderr[-800:])
        ok(os.path.exists(cache), "a core's analysis opens (creates) --cache P")
        rows = 0
        if os.path.exists(cache):
            con = sqlite3.connect(cache)
            rows = con.execute("SELECT count(*) FROM unwind_tables").fetchone()[0]
            con.close()
        ok(rows > 0, "the cache holds the cores' unwind tables", rows)
        n = sqlite3.connect(db).execute("SELECT count(*) FROM cores").fetchone()[0]
        ok(n == 2, "both cores are stored", n)

        # A cache that cannot be opened is tried once per run, not once per core.
        bad = os.path.join(tmp, "bad.db")
        with open(bad, "wb") as f:
            f.write(b"this is not an SQLite database" * 100)
        db2 = os.path.join(tmp, "store2.db")
        r = run(["ingest", "--db", db2, "--cache", bad, core, second], env)
        warns = [l for l in r.stderr.splitlines() if "cache unavailable" in l]
        ok(r.returncode == 0 and len(warns) == 1,
           "an unusable cache: both cores stored, one warning", r.stderr[-800:])
    done()


if __name__ == "__main__":
    main()
