#!/usr/bin/env python3
"""The configuration file is read whole or not at all (issue 30, finding 10).

$COREQ_CONFIG names, in turn:
- a file four bytes over 64 KiB whose last line is `db = DIR/good.db`, cut
  by the old 64 KiB read to `db = DIR/good`: `coreq ingest CORE` is refused with
  one line naming the file, and no database appears at the cut path or at
  the whole one;
- a FIFO (nobody writes to it), a link to one, a directory and /dev/zero:
  refused at once with one line `coreq: PATH: reason`;
- /dev/null: no configuration (the defaults);
- a file of exactly 64 KiB ending in `db = DIR/edge.db`: read whole, so
  ingest writes DIR/edge.db.
"""
import os
import shutil
import subprocess
import tempfile

from coreq_test import COREQ, done, ok, require_corpus

LIMIT = 64 * 1024


def padded(line, size):
    """A configuration of exactly size bytes: comment lines, then line."""
    pad = size - len(line)
    return ("#" * 79 + "\n") * (pad // 80) + "#" * (pad % 80 - 1) + "\n" + line


def main():
    cases = {c["case"]: c for c in require_corpus()}
    core = cases["segv_null.O2"]["core"]
    tmp = tempfile.mkdtemp(prefix="coreq-config-")
    try:
        env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "state"), XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        for k in ("COREQ_DB", "COREQ_CACHE", "COREQ_RULES"):
            env.pop(k, None)

        def run(conf, *args):
            try:
                return subprocess.run([COREQ, *args], capture_output=True, text=True, timeout=20,
                                      env=dict(env, COREQ_CONFIG=conf), stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return subprocess.CompletedProcess(args, -1, "", "no exit within 20 s")

        def refused(r, conf):
            lines = r.stderr.strip().splitlines()
            return r.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"coreq: {conf}: ")

        good = os.path.join(tmp, "good.db")
        text = padded(f"db = {good}\n", LIMIT + 4)
        assert len(text) == LIMIT + 4 and text[:LIMIT].endswith("/good")
        cut_value = text[:LIMIT].rsplit("\n", 1)[1].split("=", 1)[1].strip()
        over = os.path.join(tmp, "over.conf")
        open(over, "w").write(text)
        r = run(over, "ingest", "--no-cache", core)
        ok(refused(r, over) and "65536" in r.stderr, "a configuration over 64 KiB is refused in one line", r.stderr)
        ok(not os.path.exists(cut_value) and not os.path.exists(good),
           f"no database at the cut path {os.path.basename(cut_value)!r} (nor at the whole one)",
           str(os.listdir(tmp)))

        fifo = os.path.join(tmp, "fifo.conf")
        os.mkfifo(fifo)
        link = os.path.join(tmp, "link.conf")
        os.symlink(fifo, link)
        directory = os.path.join(tmp, "dir.conf")
        os.mkdir(directory)
        for what, conf in (("a FIFO", fifo), ("a link to a FIFO", link), ("a directory", directory),
                           ("/dev/zero", "/dev/zero")):
            r = run(conf, "cores")
            ok(refused(r, conf), f"a configuration that is {what}: refused at once in one line", r.stderr)

        r = run("/dev/null", "ingest", "--no-cache", core)
        ok(r.returncode == 0 and os.path.exists(os.path.join(tmp, "state", "coreq", "coreq.db")),
           "/dev/null: no configuration, the default database", r.stderr)

        edge = os.path.join(tmp, "edge.db")
        at_limit = os.path.join(tmp, "edge.conf")
        open(at_limit, "w").write(padded(f"db = {edge}\n", LIMIT))
        assert os.path.getsize(at_limit) == LIMIT
        r = run(at_limit, "ingest", "--no-cache", core)
        ok(r.returncode == 0 and os.path.exists(edge), "a configuration of exactly 64 KiB is read whole", r.stderr)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
