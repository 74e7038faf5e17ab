#!/usr/bin/env python3
"""A directory laid out like /var/lib/systemd/coredump: corpus cores,
zstd-compressed, named core.COMM.UID.BOOTID.PID.USEC.zst and given the
user.coredump.* xattrs systemd-coredump sets (with setfattr).  Ingesting it
fills the cores metadata from names and xattrs, records where outside
metadata disagrees with the core's notes (the notes win), and a second run
opens nothing.  Oracles: the names and xattrs the test wrote, the corpus
expect files."""
import os
import sqlite3
import subprocess
import tempfile

from coreq_test import coreq, done, ok, require_corpus, skip

BOOT = "0123456789abcdef0123456789abcdef"
USEC = 1763600000123456


def setfattr(path, key, value):
    r = subprocess.run(["setfattr", "-n", key, "-v", value, path], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def q(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def main():
    cases = {c["case"]: c for c in require_corpus()}
    uid, gid = os.getuid(), os.getgid()
    with tempfile.TemporaryDirectory(prefix="coreq-coredump-") as tmp:
        d = os.path.join(tmp, "coredump")
        os.makedirs(d)
        # (case, comm as systemd escapes it, comm unescaped, xattrs?, xattr pid offset).
        # segv_null is named "my.app": a comm conflict, the core's own comm kept.
        plan = [("abort_deep.O0", "abort_deep", "abort_deep", True, 0),
                ("segv_null.O0", r"my\x2eapp", "my.app", True, 0),
                ("fpe.O0", "fpe", "fpe", False, 0),
                ("assert_fail.O0", "assert_fail", "assert_fail", True, 1000)]
        files = {}
        for i, (case, comm_esc, comm, xattrs, pid_off) in enumerate(plan):
            c = cases[case]
            pid = int(c["pid"])
            name = f"core.{comm_esc}.{uid}.{BOOT}.{pid}.{USEC + i}.zst"
            path = os.path.join(d, name)
            subprocess.run(["zstd", "-q", "-f", c["core"], "-o", path], check=True)
            files[case] = path
            if not xattrs:
                continue
            for k, v in (("pid", str(pid + pid_off)), ("uid", str(uid)), ("gid", str(gid)),
                         ("signal", c["signal"]), ("timestamp", str(USEC + i)),
                         ("rlimit", "18446744073709551615"), ("hostname", f"host{i}"),
                         ("comm", comm), ("exe", c["exe"])):
                good, err = setfattr(path, f"user.coredump.{k}", v)
                if not good:
                    skip("systemd-style directory", f"the file system refuses user xattrs: {err.strip()}")
                    done()
        db = os.path.join(tmp, "coreq.db")
        r = coreq("ingest", "--db", db, "--format", "json", d, timeout=300)
        ok(r.returncode == 0 and '"ingested":4' in r.stdout, "a systemd-style directory of 4 cores ingests",
           r.stdout + r.stderr)
        rows = {p: rest for (p, *rest) in q(db, "SELECT path, pid, uid, gid, signal, timestamp, hostname, comm, "
                                                "boot_id, rlimit, source, exe, meta_conflicts FROM cores")}
        for i, (case, _, comm, xattrs, pid_off) in enumerate(plan):
            c = cases[case]
            got = rows.get(files[case])
            core_comm = os.path.basename(c["exe"])[:15]
            conflicts = [f"pid: core {c['pid']}, systemd {int(c['pid']) + pid_off}"] if pid_off else []
            if comm != core_comm:
                conflicts.append(f"comm: core {core_comm}, systemd {comm}")
            want = [int(c["pid"]), uid, gid, int(c["signal"]), (USEC + i) // 1000000,
                    f"host{i}" if xattrs else None, core_comm, BOOT, -1 if xattrs else None, "systemd", c["exe"],
                    "; ".join(conflicts) or None]
            ok(got == want, f"{case}: metadata from the {'name and xattrs' if xattrs else 'name alone'}"
                            f"{', the pid conflict recorded and the core pid kept' if pid_off else ''}"
                            f"{', the comm conflict recorded and the core comm kept' if comm != core_comm else ''}", [got, want])

        r = coreq("ingest", "--db", db, "--format", "json", d, timeout=300)
        ok(r.returncode == 0 and '"ingested":0' in r.stdout and '"duplicates":0' in r.stdout
           and '"unchanged":4' in r.stdout and q(db, "SELECT count(*) FROM cores") == [(4,)],
           "a second run over the directory ingests nothing and opens nothing", r.stdout + r.stderr)
        seen = q(db, "SELECT count(*), min(status), max(status) FROM seen_files")
        ok(seen == [(4, "ingested", "ingested")], "seen_files remembers the 4 files", seen)

        # A new core arriving later is the only one looked at.
        c = cases["abort_deep.O2"]
        path = os.path.join(d, f"core.late.{uid}.{BOOT}.{c['pid']}.{USEC + 9}.zst")
        subprocess.run(["zstd", "-q", "-f", c["core"], "-o", path], check=True)
        r = coreq("ingest", "--db", db, "--format", "json", d, timeout=300)
        ok(r.returncode == 0 and '"ingested":1' in r.stdout and '"unchanged":4' in r.stdout,
           "a core added later: only it is ingested", r.stdout + r.stderr)
    done()


if __name__ == "__main__":
    main()
