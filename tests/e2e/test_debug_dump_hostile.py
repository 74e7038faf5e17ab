#!/usr/bin/env python3
"""`coreq debug` and `coreq dump` on what a core or a database names
(issue 30, findings 1 and 7), on abort_deep.O2's real core.

- gdb options from a core: the core's NT_FILE names its executable
  "--eval-command=shell touch pwned" (and other option forms); `coreq debug
  CORE -- -batch`, and of a database row made from that core, must not run
  the command (the marker file stays absent).  With a copy of the genuine
  executable saved under that very name in gdb's working directory, gdb
  loads it as a file: the backtrace has abort_deep's symbols (level3 ...).
- what dump -o writes to: a symbolic link (its target keeps its content), an
  existing 0666 file (replaced by a 0600 one holding the core), a FIFO and a
  device node (refused, exit 1, left as they were).
- where a row's core is: a FIFO, /dev/zero and a link to it are refused at
  once (exit 1, one line); a regular file or a zstd stream holding more than
  the row's recorded size is refused, nothing written.
"""
import os
import shutil
import stat
import subprocess
import sqlite3
import tempfile

import elfcore
from coreq_test import COREQ, coreq, done, ok, require_corpus


def one_line(r):
    lines = r.stderr.strip().splitlines()
    return r.returncode == 1 and len(lines) == 1 and lines[0].startswith("coreq: ")


def run(*args, cwd=None, timeout=60):
    try:
        return subprocess.run([COREQ, *map(str, args)], capture_output=True, text=True, errors="replace",
                              cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"no exit within {timeout} s")


def main():
    cases = {c["case"]: c for c in require_corpus()}
    case = cases["abort_deep.O2"]
    data = open(case["core"], "rb").read()
    exe = case["exe"].encode()
    tmp = tempfile.mkdtemp(prefix="coreq-debug-hostile-")
    try:
        have_gdb = shutil.which("gdb") is not None
        ok(have_gdb, "gdb is installed (make deps installs it)")
        # ---- finding 1: gdb options from a core or a database row
        forms = {"--eval-command=shell touch pwned": "pwned",
                 "-eval-command=shell touch pwned": "pwned",
                 "-iex=shell touch pwned": "pwned",
                 "--command=script.gdb": "pwned-by-script"}
        open(os.path.join(tmp, "script.gdb"), "w").write("shell touch pwned-by-script\n")
        for evil, marker in forms.items() if have_gdb else ():
            crafted = os.path.join(tmp, "crafted.core")
            open(crafted, "wb").write(elfcore.with_renamed_files(data, exe, evil.encode()))
            r = run("info", crafted)
            ok(evil in r.stdout, f"the crafted core names its executable {evil!r}", r.stdout[:300])
            r = run("debug", crafted, "--", "-batch", cwd=tmp)
            ok(not os.path.exists(os.path.join(tmp, marker)),
               f"debug CORE: the executable {evil!r} is a file name to gdb, not an option", r.stderr[-500:])
            db = os.path.join(tmp, "crafted.db")
            for f in (db, db + "-wal", db + "-shm"):
                if os.path.exists(f):
                    os.unlink(f)
            coreq("ingest", "--no-cache", "--db", db, crafted)
            r = run("debug", "--db", db, "1", "--", "-batch", cwd=tmp)
            ok(not os.path.exists(os.path.join(tmp, marker)),
               f"debug ID: a row made from that core does not pass {evil!r} as an option", r.stderr[-500:])
            for m in ("pwned", "pwned-by-script"):
                if os.path.exists(os.path.join(tmp, m)):
                    os.unlink(os.path.join(tmp, m))
        if have_gdb:
            evil = "--eval-command=shell touch pwned"
            crafted = os.path.join(tmp, "crafted.core")
            open(crafted, "wb").write(elfcore.with_renamed_files(data, exe, evil.encode()))
            shutil.copy(case["exe"], os.path.join(tmp, evil))
            r = run("debug", crafted, "--", "-batch", "-ex", "bt", cwd=tmp)
            ok("level3" in r.stdout and "main" in r.stdout and not os.path.exists(os.path.join(tmp, "pwned")),
               "gdb loads a file named like an option as the executable: a backtrace with its symbols",
               (r.stdout + r.stderr)[-800:])
            os.unlink(os.path.join(tmp, evil))

        # ---- finding 7: where dump -o writes
        db = os.path.join(tmp, "d.db")
        coreq("ingest", "--no-cache", "--db", db, case["core"])
        victim = os.path.join(tmp, "victim")
        open(victim, "w").write("precious\n")
        link = os.path.join(tmp, "link")
        os.symlink(victim, link)
        r = run("dump", "--db", db, "1", "-o", link)
        ok(one_line(r) and open(victim, "rb").read() == b"precious\n" and os.path.islink(link),
           "dump -o LINK is refused; the link's target keeps its content", r.stderr)
        loose = os.path.join(tmp, "loose")
        open(loose, "w").write("old\n")
        os.chmod(loose, 0o666)
        r = run("dump", "--db", db, "1", "-o", loose)
        st = os.lstat(loose)
        ok(r.returncode == 0 and open(loose, "rb").read() == data and st.st_mode & 0o777 == 0o600,
           "dump -o over an existing 0666 file: a fresh 0600 file holds the core",
           f"rc {r.returncode}, mode {st.st_mode & 0o777:o}: {r.stderr}")
        ok(not [f for f in os.listdir(tmp) if f.endswith(".tmp")], "no temporary file is left beside it")
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        r = run("dump", "--db", db, "1", "-o", fifo, timeout=20)
        ok(one_line(r) and stat.S_ISFIFO(os.lstat(fifo).st_mode), "dump -o FIFO: refused at once, the FIFO left",
           r.stderr)
        if os.geteuid() == 0:
            dev = os.path.join(tmp, "null")
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            r = run("dump", "--db", db, "1", "-o", dev)
            ok(one_line(r) and "device" in r.stderr and stat.S_ISCHR(os.lstat(dev).st_mode),
               "dump -o DEVICE: refused, the node left", r.stderr)
        out = os.path.join(tmp, "out")
        r = run("dump", "--db", db, "1", "-o", out)
        ok(r.returncode == 0 and open(out, "rb").read() == data and os.stat(out).st_mode & 0o077 == 0,
           "dump -o NEW: the core, readable by its owner only", r.stderr)

        # ---- finding 7: where a row's core is
        zero_link = os.path.join(tmp, "zero")
        os.symlink("/dev/zero", zero_link)
        longer = os.path.join(tmp, "longer.core")
        open(longer, "wb").write(data + b"\0" * 65536)
        bomb = os.path.join(tmp, "bomb.zst")
        zeros = subprocess.run(["zstd", "-q", "-c", "-19"], input=b"\0" * (1 << 20), capture_output=True).stdout
        with open(bomb, "wb") as f:
            f.write(subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True).stdout + zeros * 64)
        for what, where in (("a FIFO", fifo), ("/dev/zero", "/dev/zero"), ("a link to /dev/zero", zero_link),
                            ("a regular file longer than recorded", longer),
                            ("a zstd stream longer than recorded", bomb)):
            rowdb = os.path.join(tmp, "row.db")
            shutil.copy(db, rowdb)
            con = sqlite3.connect(rowdb)
            con.execute("UPDATE cores SET path = ?, stored_path = ?", (where, where))
            con.commit()
            con.close()
            dumped = os.path.join(tmp, "dumped")
            r = run("dump", "--db", rowdb, "1", "-o", dumped, timeout=10)
            ok(one_line(r) and not os.path.exists(dumped), f"dump of a row whose core is {what}: refused at once",
               r.stderr)
            if have_gdb:
                r = run("debug", "--db", rowdb, "1", "--", "-batch", timeout=10)
                ok(one_line(r), f"debug of a row whose core is {what}: refused at once", r.stderr[-300:])
            for f in (rowdb, rowdb + "-wal", rowdb + "-shm", dumped):
                if os.path.exists(f):
                    os.unlink(f)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
