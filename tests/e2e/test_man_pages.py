#!/usr/bin/env python3
"""A man page per command, reachable as git's are (issue 52).

`make install DESTDIR=TMP PREFIX=/usr` puts coreq(1) and every command's
page under TMP/usr/share/man/man1; man-db itself (`man -w`, and man with MANPATH set
to that tree) finds coreq-stack and coreq-dump there.  `coreq help CMD`
opens the command's page through man, as `git help log` does; where man
finds no page (or there is no man at all) it prints the command's --help,
which `coreq CMD --help` also prints (the short usage, as `git log -h`).
"""
import os
import shutil
import subprocess
import tempfile

from coreq_test import BUILD, COREQ, ROOT, done, ok


def run(*cmd, env=None):
    return subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=300)


def main():
    if not shutil.which("man"):
        ok(False, "man is installed (make deps)")
        done()
    with tempfile.TemporaryDirectory(prefix="coreq-man-") as tmp:
        r = run("make", "--no-print-directory", "-C", ROOT, "install", f"DESTDIR={tmp}", "PREFIX=/usr",
                f"BUILD={os.path.abspath(BUILD)}")
        man1 = os.path.join(tmp, "usr", "share", "man", "man1")
        pages = sorted(os.listdir(man1)) if os.path.isdir(man1) else []
        want = ["coreq.1"] + [f[:-3] for f in os.listdir(os.path.join(ROOT, "man")) if f.endswith(".1.in")]
        ok(r.returncode == 0 and all(p in pages for p in want), f"make install puts the {len(want)} pages in man1",
           [r.stderr[-500:], sorted(set(want) - set(pages))])
        env = dict(os.environ, MANPATH=os.path.join(tmp, "usr", "share", "man"), MANPAGER="cat", PAGER="cat",
                   MANWIDTH="80", LC_ALL="C.UTF-8")
        r = run("man", "-w", "coreq-stack", env=env)
        ok(r.returncode == 0 and r.stdout.strip() == os.path.join(man1, "coreq-stack.1"),
           "man -w coreq-stack finds the installed page", r.stdout + r.stderr)
        r = run("man", "coreq-dump", env=env)
        ok(r.returncode == 0 and "coreq dump" in r.stdout and "--output" in r.stdout.replace("\u2010", "-"),
           "man coreq-dump shows its page", r.stdout[:300] + r.stderr)
        r = run(COREQ, "help", "stack", env=env)
        text = r.stdout.replace("\u2010", "-")
        ok(r.returncode == 0 and "COREQ-STACK(1)" in text and "--max-frames" in text and "DESCRIPTION" in text,
           "coreq help stack opens coreq-stack(1) through man", r.stdout[:300] + r.stderr)
        short = run(COREQ, "stack", "--help").stdout
        ok(short.startswith("Usage: coreq stack") and "--max-frames" in short and ".TH" not in short,
           "coreq stack --help prints the short usage")
        nopage = dict(env, MANPATH=os.path.join(tmp, "nothing"))
        r = run(COREQ, "help", "stack", env=nopage)
        ok(r.returncode == 0 and r.stdout == short, "coreq help stack without its page prints stack --help",
           r.stdout[:200] + r.stderr)
        noman = dict(env, PATH="/nonexistent")
        r = run(COREQ, "help", "lws", env=noman)
        ok(r.returncode == 0 and r.stdout == run(COREQ, "lws", "--help").stdout,
           "coreq help lws without man prints lws --help", r.stdout[:200] + r.stderr)
        r = run(COREQ, "help", "nosuch", env=env)
        ok(r.returncode == 2 and "unknown command 'nosuch'" in r.stderr, "coreq help of no command: exit 2",
           r.stderr)
    done()


if __name__ == "__main__":
    main()
