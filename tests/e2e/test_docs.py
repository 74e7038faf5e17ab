#!/usr/bin/env python3
"""The documentation covers the command line (issue 19, stumble 9): every
option that any command's --help names appears in coreq.1, every command
has a SYNOPSIS entry of its own (no two run together), the README's usage
block names every command, and the README sends users to nothing they do
not have (DESIGN.md is the developers').
"""
import os
import re
import subprocess

from coreq_test import COREQ, ROOT, done, ok

COMMANDS = ["info", "stack", "ingest", "list-stacks", "cores", "show", "buckets", "rebucket", "hook",
            "lws decode", "lws encode", "lws ingest", "export", "push", "merge", "resymbolize", "debug",
            "dump", "flame", "cache warm"]


def main():
    man = open(os.path.join(ROOT, "coreq.1")).read().replace("\\-", "-")
    readme = open(os.path.join(ROOT, "README.md")).read()
    syn = man[man.index(".SH SYNOPSIS"): man.index(".SH DESCRIPTION")]
    for c in COMMANDS:
        h = subprocess.run([COREQ, *c.split(), "--help"], capture_output=True, text=True).stdout
        opts = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", h)))
        missing = [o for o in opts if o not in man]
        ok(opts and not missing, f"{c}: every --help option is in coreq.1 ({len(opts)})", str(missing))
        ok(f".B coreq {c}\n" in syn or f".B coreq {c} " in syn, f"{c}: its own SYNOPSIS entry")
        ok(f"coreq {c}" in readme, f"{c}: in the README")
    # Each SYNOPSIS entry starts on its own line (.br before the next .B coreq).
    entries = syn.split(".B coreq ")[1:]
    ok(all(e.rstrip().endswith(".br") for e in entries[:-1]), "no SYNOPSIS entry runs into the next",
       str([e[:30] for e in entries if not e.rstrip().endswith(".br")][:3]))
    ok("DESIGN.md" not in readme, "the README does not point at DESIGN.md")
    done()


if __name__ == "__main__":
    main()
