#!/usr/bin/env python3
"""info, stack and show say the same where the capture disagrees with the core (issue 47).

A core's capture record (systemd-coredump's file name core.COMM.UID.BOOT.PID.USEC,
its xattrs, the hook's arguments) can disagree with the core's own notes; the
notes win and the disagreement is listed (cq_capture_reconcile).  Before, only
ingest reconciled, so `coreq show` listed the conflicts of a stored core while
`info` and `stack` of the very file said nothing.  Now all of them run the one
analysis (libcore/pipeline/analyse.c) and show the same line and JSON member.

The test copies a corpus core under a systemd name whose pid is the program's
pid (its expect file) plus 1000 and whose comm is "my.app", with the uid the
core's NT_PRPSINFO records (so that one agrees).  The expected conflicts are
written from the program's record: its pid, and its comm (the executable's
name, 15 characters at most).  A copy without the name shows none.
"""
import json
import os
import re
import shutil
import struct
import tempfile

import elfcore
from coreq_test import CORPUS, coreq, done, ok, read_expect, require_corpus

CASE = "segv_null.O0"
BOOT = "0123456789abcdef0123456789abcdef"
PRPSINFO_UID = 16  # pr_uid in elf_prpsinfo (x86_64 and aarch64)


def psinfo_uid(data):
    n = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRPSINFO][0]
    return struct.unpack_from("<I", n["desc"], PRPSINFO_UID)[0]


def line_of(text, key):
    """The line starting with key, or None."""
    m = re.search(rf"^{re.escape(key)}.*$", text, re.M)
    return m.group(0) if m else None


def views(core, what):
    """What info, stack (text and JSON) say of core's conflicts: (lines, json values)."""
    lines, members = {}, {}
    for cmd in ("info", "stack"):
        extra = ["--no-cache"] if cmd == "stack" else []
        r = coreq(cmd, core, *extra)
        ok(r.returncode == 0, f"{what}: {cmd} runs", r.stderr[-800:])
        lines[cmd] = line_of(r.stdout, "conflicts:")
        r = coreq(cmd, "--format", "json", core, *extra)
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        members[cmd] = j.get("core", {}).get("meta_conflicts", "absent")
    return lines, members


def main():
    require_corpus()
    facts = read_expect(os.path.join(CORPUS, "cores", CASE, "expect"))
    pid = int(facts["pid"])
    comm = os.path.basename(facts["exe"])[:15]
    src = os.path.join(CORPUS, "cores", CASE, "core")
    data = open(src, "rb").read()
    uid = psinfo_uid(data)
    want = f"pid: core {pid}, systemd {pid + 1000}; comm: core {comm}, systemd my.app"
    want_line = f"conflicts:   {want} (the core's values are shown)"
    tmp = tempfile.mkdtemp(prefix="coreq-conflicts-")
    try:
        named = os.path.join(tmp, f"core.my\\x2eapp.{uid}.{BOOT}.{pid + 1000}.1763700000000000")
        plain = os.path.join(tmp, "core")
        shutil.copy(src, named)
        shutil.copy(src, plain)

        lines, members = views(named, "systemd-named copy")
        for cmd in ("info", "stack"):
            ok(lines[cmd] == want_line, f"{cmd} lists the capture's conflicts with the core",
               [repr(lines[cmd]), repr(want_line)])
            ok(members[cmd] == want, f"{cmd} --format json gives core.meta_conflicts",
               [repr(members[cmd]), repr(want)])
        r = coreq("info", named)
        m = re.search(r"^pid:\s+(\d+)", r.stdout, re.M)
        ok(m and int(m.group(1)) == pid, "info shows the core's pid, not the name's", r.stdout[:300])

        db = os.path.join(tmp, "coreq.db")
        r = coreq("ingest", "--no-cache", "--db", db, named)
        ok(r.returncode == 0, "the named core ingests", r.stdout + r.stderr)
        r = coreq("show", "1", "--db", db)
        shown = line_of(r.stdout, "conflicts:")
        ok(shown == want_line and shown == lines["info"] == lines["stack"],
           "show, info and stack print the same conflicts line", [repr(shown), repr(lines)])
        r = coreq("show", "1", "--db", db, "--format", "json")
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        got = j.get("core", {}).get("meta_conflicts")
        ok(got == want and got == members["info"] == members["stack"],
           "show, info and stack give the same meta_conflicts in JSON", [repr(got), repr(members)])

        lines, members = views(plain, "plain copy")
        ok(lines == {"info": None, "stack": None}, "a core without a capture name lists no conflicts",
           repr(lines))
        ok(members == {"info": "absent", "stack": "absent"},
           "nor has meta_conflicts in its JSON (the output of a core without conflicts is unchanged)",
           repr(members))
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
