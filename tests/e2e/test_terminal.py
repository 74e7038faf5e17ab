#!/usr/bin/env python3
"""Text output on a terminal (issue 19, stumble 10): on a terminal (a pty
here) `coreq stack` goes through $PAGER and uses colour; --no-pager writes
to the terminal itself; NO_COLOR and --color=never turn colour off;
--color=always turns it on without a terminal; a pipe gets neither.
"""
import os
import pty
import select
import shutil
import subprocess
import tempfile

from coreq_test import COREQ, done, ok, require_corpus

ESC = "\x1b["


def on_pty(args, env):
    """Runs coreq with stdout on a pty; what the pty showed."""
    master, slave = pty.openpty()
    p = subprocess.Popen([COREQ] + args, stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=subprocess.PIPE, env=env)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(60)
    os.close(master)
    return p.returncode, out.decode(errors="replace")


def main():
    cases = {c["case"]: c for c in require_corpus()}
    core = cases["segv_null.O2"]["core"]
    tmp = tempfile.mkdtemp(prefix="coreq-tty-")
    try:
        paged = os.path.join(tmp, "paged.txt")
        env = dict(os.environ, PAGER=f"cat > {paged}")
        env.pop("NO_COLOR", None)
        rc, shown = on_pty(["stack", core], env)
        text = open(paged).read() if os.path.exists(paged) else ""
        ok(rc == 0 and "store_null" in text and "store_null" not in shown,
           "on a terminal, stack goes through $PAGER", shown[:300])
        ok(ESC in text, "with colour on a terminal")
        rc, shown = on_pty(["stack", "--no-pager", core], env)
        ok(rc == 0 and "store_null" in shown and ESC in shown, "--no-pager: straight to the terminal")
        rc, shown = on_pty(["stack", "--no-pager", core], dict(env, NO_COLOR="1"))
        ok(rc == 0 and "store_null" in shown and ESC not in shown, "NO_COLOR: no colour")
        rc, shown = on_pty(["stack", "--no-pager", "--color=never", core], env)
        ok(rc == 0 and ESC not in shown, "--color=never: no colour")
        r = subprocess.run([COREQ, "stack", core], capture_output=True, text=True, env=env, timeout=120)
        ok(r.returncode == 0 and ESC not in r.stdout and "store_null" in r.stdout,
           "into a pipe: no pager, no colour")
        r = subprocess.run([COREQ, "stack", "--color=always", core], capture_output=True, text=True,
                           env=env, timeout=120)
        ok(ESC in r.stdout, "--color=always: colour into a pipe too")
        r = subprocess.run([COREQ, "stack", "--color=sometimes", core], capture_output=True, text=True)
        ok(r.returncode == 2, "--color takes auto, always or never", r.stderr)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
