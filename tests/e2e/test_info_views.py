#!/usr/bin/env python3
"""`coreq info` tells what `coredumpctl info` tells (issue 19): uid/gid (as
eu-readelf reads NT_PRPSINFO), the crash time and host the capture recorded
(a systemd-coredump file name and its user.coredump.* xattrs), and the
crashed thread's stack (the corpus program's crash chain, in order).
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import coreq, done, ok, require_corpus

BOOT = "d25e193785754fadbca31cb4ddc16028"
USEC = 1763700000123456


def main():
    cases = {c["case"]: c for c in require_corpus()}
    case = cases["abort_deep.O2"]
    out = subprocess.run(["eu-readelf", "-n", case["core"]], capture_output=True, text=True).stdout
    m = re.search(r"uid:\s*(\d+),\s*gid:\s*(\d+)", out)
    uid, gid = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    tmp = tempfile.mkdtemp(prefix="coreq-info-")
    try:
        named = os.path.join(tmp, f"core.abort_deep.{uid}.{BOOT}.{case['pid']}.{USEC}")
        shutil.copy(case["core"], named)
        xattr = subprocess.run(["setfattr", "-n", "user.coredump.hostname", "-v", "crashhost", named],
                               capture_output=True).returncode == 0
        r = coreq("info", "--format", "json", named, timeout=300)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(doc.get("uid") == uid and doc.get("gid") == gid, f"uid/gid {uid}/{gid} as eu-readelf reads them")
        ok(doc.get("time") == "2025-11-21T04:40:00Z", "the crash time from the systemd file name",
           str(doc.get("time")))
        if xattr:
            ok(doc.get("hostname") == "crashhost", "the host from the user.coredump.hostname xattr")
        chain = case["crash_chain"].split()
        names = [f["function"] for f in doc.get("crashed_stack", [])]
        at = [names.index(c) for c in chain if c in names]
        ok(len(at) == len(chain) and at == sorted(at), "the crashed thread's stack has the crash chain in order",
           str(names))
        r = coreq("info", named, timeout=300)
        ok(f"uid/gid:     {uid}/{gid}" in r.stdout and "time:        2025-11-21T04:40:00Z" in r.stdout
           and f"stack of the crashed thread {case['pid']}:" in r.stdout, "and in text", r.stdout[:700])
        r = coreq("info", case["core"], timeout=300)
        ok("time:        unknown (not captured)" in r.stdout, "a core without capture says its time is unknown")
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
