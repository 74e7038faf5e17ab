#!/usr/bin/env python3
"""The documentation covers the command line (issues 19 and 52).

Every command has a manual page, coreq-CMD(1) (built by `make man` into
BUILD/man from man/coreq-CMD.1.in and the command's option table; lws's
subcommands share coreq-lws(1)), and coreq(1),
the overview, names each command and its page.  Every option a command's
--help lists appears in that page's OPTIONS as an entry with a sentence of
its own, and has words of help in --help: so an option added without help
text, a page whose OPTIONS were not built from the binary, or a command
without a page fails here.  Each page's SYNOPSIS has the command's own
entry, no entry runs into the next, and man renders every page without a
warning (lintian's check).  The README's usage block names every command
and sends users to nothing they do not have (DESIGN.md is the developers').
"""
import os
import re
import subprocess

from coreq_test import BUILD, COREQ, ROOT, done, ok

COMMANDS = ["info", "stack", "ingest", "list-stacks", "cores", "show", "buckets", "rebucket", "hook",
            "lws decode", "lws encode", "lws ingest", "export", "push", "merge", "resymbolize", "debug",
            "dump", "flame", "cache warm"]
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def page_of(command):
    """The built page documenting a command ("lws decode" -> coreq-lws.1), or None."""
    path = os.path.join(BUILD, "man", f"coreq-{command.split()[0]}.1")
    return path if os.path.isfile(path) else None


def help_options(command):
    """The options --help lists (its option lines), each with the help words beside it."""
    h = subprocess.run([COREQ, *command.split(), "--help"], capture_output=True, text=True).stdout
    opts = {}
    for line in h.splitlines():
        m = re.match(r"^  (-\w, )?(--[a-z][a-z0-9-]*)(\[=\w+\]| \S+)?(\s+(.*))?$", line)
        if m:
            opts[m.group(2)] = (m.group(5) or "").strip()
    return h, opts


def man_entries(text):
    """Option -> the sentence after its .TP label, for every tagged paragraph of OPTIONS."""
    body = text[text.index(".SH OPTIONS"):]
    lines = body.split("\n")
    out = {}
    for i, line in enumerate(lines[:-2]):
        if line == ".TP":
            label = re.sub(r"\\f[BIRP]", "", lines[i + 1]).replace("\\-", "-")
            for o in OPTION.findall(label):
                out[o] = lines[i + 2]
    return out


def check_command(command):
    h, opts = help_options(command)
    ok(opts and all(len(v.split()) >= 2 for k, v in opts.items()),
       f"{command}: every option --help lists has words of help", [k for k, v in opts.items() if len(v.split()) < 2])
    page = page_of(command)
    ok(page is not None, f"{command}: has a manual page in {BUILD}/man (make man)")
    if not page:
        return
    text = open(page).read()
    entries = man_entries(text)
    missing = [o for o in opts if o not in entries or len(entries[o].split()) < 2]
    ok(not missing, f"{command}: every --help option ({len(opts)}) is in {os.path.basename(page)}'s OPTIONS "
                    "with a sentence", missing)
    syn = text[text.index(".SH SYNOPSIS"): text.index(".SH DESCRIPTION")].replace("\\-", "-")
    flat = syn.replace(".B ", "").replace("\n", " ")
    ok(f"coreq {command} " in flat, f"{command}: its own SYNOPSIS entry in {os.path.basename(page)}")
    entries = syn.split(".B coreq ")[1:]
    ok(all(e.rstrip().endswith(".br") for e in entries), f"{command}: no SYNOPSIS entry runs into the next")


def check_rendering():
    pages = sorted(os.path.join(BUILD, "man", f) for f in os.listdir(os.path.join(BUILD, "man"))
                   if f.endswith(".1")) + [os.path.join(ROOT, "coreq.1")]
    bad = {}
    for p in pages:
        r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", p], capture_output=True,
                           text=True, env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MANROFFSEQ=""))
        if r.returncode != 0 or r.stderr.strip():
            bad[os.path.basename(p)] = r.stderr[:300]
    ok(len(pages) > 10 and not bad, f"man renders the {len(pages)} pages without a warning", bad)
    overview = open(os.path.join(ROOT, "coreq.1")).read().replace("\\-", "-")
    tops = sorted({c.split()[0] for c in COMMANDS})
    ok(all(f".BR coreq-{c} (1)" in overview for c in tops), "coreq.1 names every command's page",
       [c for c in tops if f".BR coreq-{c} (1)" not in overview])
    listed = subprocess.run([COREQ, "--help"], capture_output=True, text=True).stdout
    cmds = re.findall(r"^  ([a-z-]+)  ", listed, re.M)
    ok(cmds and all(page_of(c) for c in cmds), f"each of the {len(cmds)} commands coreq --help lists has a page",
       [c for c in cmds if not page_of(c)])


def main():
    if not os.path.isdir(os.path.join(BUILD, "man")):
        ok(False, f"{BUILD}/man exists (make man)")
        done()
    readme = open(os.path.join(ROOT, "README.md")).read()
    for c in COMMANDS:
        check_command(c)
        ok(f"coreq {c}" in readme, f"{c}: in the README")
    check_rendering()
    ok("DESIGN.md" not in readme, "the README does not point at DESIGN.md")
    done()


if __name__ == "__main__":
    main()
