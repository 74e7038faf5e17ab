#!/usr/bin/env python3
"""The systemd units (dist/systemd/) as `make install` installs them:
`systemd-analyze verify` must accept every one without a single warning
(verify exits 0 even on unknown keys, so any output is a failure), and the
units they name must exist.  systemd-coredump itself is not installed on
test machines (its package would change kernel.core_pattern), so the
drop-in is verified against a stand-in systemd-coredump@.service."""
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import BUILD, ROOT, done, ok, skip


def verify(unitdir, *units):
    env = dict(os.environ, SYSTEMD_UNIT_PATH=unitdir + ":")
    return subprocess.run(["systemd-analyze", "verify", "--man=no", *units], cwd=unitdir, env=env,
                          capture_output=True, text=True, timeout=120)


def main():
    if not shutil.which("systemd-analyze"):
        skip("systemd units", "systemd-analyze is not installed")
        done()
    with tempfile.TemporaryDirectory(prefix="coreq-units-") as prefix:
        r = subprocess.run(["make", "-s", "-C", ROOT, "install", f"PREFIX={prefix}",
                            f"BUILD={os.path.abspath(BUILD)}"], capture_output=True, text=True, timeout=600)
        ok(r.returncode == 0, "make install PREFIX=... succeeds", r.stdout + r.stderr)
        unitdir = os.path.join(prefix, "lib", "systemd", "system")
        want = ["coreq-ingest.path", "coreq-ingest.service", "systemd-coredump@.service.d/coreq.conf",
                "coreq-push.service", "coreq-push.timer"]
        have = [u for u in want if os.path.isfile(os.path.join(unitdir, u))]
        ok(have == want, "make install puts the units under PREFIX/lib/systemd/system", have)
        ok(os.path.isfile(os.path.join(prefix, "share", "bash-completion", "completions", "coreq")),
           "make install puts the bash completion under PREFIX/share/bash-completion/completions")
        guides = sorted(f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
        doc = os.path.join(prefix, "share", "doc", "coreq")
        have = [g for g in guides if os.path.isfile(os.path.join(doc, "docs", g))]
        ok(os.path.isfile(os.path.join(doc, "README.md")) and guides and have == guides,
           f"make install puts the README and its {len(guides)} guides under PREFIX/share/doc/coreq", have)

        service = open(os.path.join(unitdir, "coreq-ingest.service")).read()
        m = re.search(r"^ExecStart=(\S+)", service, re.M)
        exe = m.group(1) if m else ""
        ok(exe == os.path.join(prefix, "bin", "coreq") and os.access(exe, os.X_OK),
           "ExecStart names the installed coreq", exe)
        for key in ("ProtectSystem=strict", "ReadOnlyPaths=/var/lib/systemd/coredump", "ReadWritePaths=/var/lib/coreq",
                    "PrivateTmp=yes", "PrivateNetwork=yes", "MemoryMax=", "TimeoutStartSec="):
            ok(re.search("^" + re.escape(key), service, re.M) is not None, f"the service sets {key}")

        r = verify(unitdir, "coreq-ingest.path", "coreq-ingest.service")
        if r.returncode != 0 and "Failed to" in r.stderr and "bus" in r.stderr.lower():
            skip("systemd-analyze verify", "cannot run in this sandbox: " + r.stderr.strip()[:200])
        else:
            ok(r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "",
               "systemd-analyze verify: coreq-ingest.path and .service, no warning", r.stdout + r.stderr)

        push = open(os.path.join(unitdir, "coreq-push.service")).read()
        for key in ("ProtectSystem=strict", "ReadWritePaths=/var/lib/coreq", "PrivateTmp=yes",
                    "MemoryMax=", "NoNewPrivileges=yes", "CapabilityBoundingSet="):
            ok(re.search("^" + re.escape(key), push, re.M) is not None, f"the push service sets {key}")
        ok(re.search(r"^ExecStart=" + re.escape(os.path.join(prefix, "bin", "coreq")) + r" push ", push, re.M),
           "the push service runs the installed coreq push")
        r = verify(unitdir, "coreq-push.timer", "coreq-push.service")
        if not (r.returncode != 0 and "Failed to" in r.stderr and "bus" in r.stderr.lower()):
            ok(r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "",
               "systemd-analyze verify: coreq-push.timer and .service, no warning", r.stdout + r.stderr)

        with open(os.path.join(unitdir, "systemd-coredump@.service"), "w") as f:
            f.write("[Unit]\nDescription=stand-in for systemd-coredump@.service\n"
                    "[Service]\nType=oneshot\nExecStart=/bin/true\n")
        r = verify(unitdir, "systemd-coredump@1.service")
        ok(r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "",
           "systemd-analyze verify: the systemd-coredump@.service drop-in, no warning", r.stdout + r.stderr)
        dropin = open(os.path.join(unitdir, "systemd-coredump@.service.d", "coreq.conf")).read()
        named = [a or b for a, b in re.findall(r"^(?:OnSuccess|Unit)=(\S+)|\brestart (\S+\.service)",
                                               dropin + open(os.path.join(unitdir, "coreq-ingest.path")).read(),
                                               re.M)]
        ok(named and all(os.path.isfile(os.path.join(unitdir, u)) for u in named),
           "every unit the drop-in and the path unit trigger is installed", named)

        # The check itself: a misspelt key must make it fail.
        bad = os.path.join(unitdir, "coreq-bad.service")
        with open(bad, "w") as f:
            f.write(service.replace("PrivateNetwork=", "PrivateNetwrok="))
        r = verify(unitdir, "coreq-bad.service")
        ok(r.stderr.strip() != "", "verify does report a misspelt key (so the checks above can fail)", r.stderr)
    done()


if __name__ == "__main__":
    main()
