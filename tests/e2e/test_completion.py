#!/usr/bin/env python3
"""Bash completion (dist/bash-completion/coreq, issue 19): sourced into bash
with bash-completion's helpers, it completes commands, each command's
options (as its --help lists them), option values (formats, signals) and
lws subcommands, and the commands after `coreq help`.
"""
import os
import shutil
import subprocess

from coreq_test import COREQ, ROOT, done, ok, skip

HELPERS = "/usr/share/bash-completion/bash_completion"
SCRIPT = os.path.join(ROOT, "dist", "bash-completion", "coreq")

CASES = [
    (["st"], ["stack"]),
    (["stack", "--gr"], ["--group"]),
    (["stack", "--format", ""], ["text", "json", "folded"]),
    (["export", "--format", ""], ["ndjson"]),
    (["lws", "d"], ["decode"]),
    (["lws", "decode", "--e"], ["--elf"]),
    (["cores", "--sig"], ["--signal"]),
    (["cores", "--signal", "SIGS"], ["SIGSEGV", "SIGSYS"]),
    (["hook", "--max-a"], ["--max-analyses"]),
    (["he"], ["help"]),
    (["help", "re"], ["rebucket", "resymbolize"]),
]


def complete(words):
    line = " ".join([COREQ] + words)
    script = f"""
source {HELPERS}
source {SCRIPT}
COMP_LINE={line!r}
COMP_POINT=${{#COMP_LINE}}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
_coreq
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    return sorted(x for x in r.stdout.split("\n") if x), r.stderr


def main():
    if not os.path.exists(HELPERS) or not shutil.which("bash"):
        skip("bash completion", "bash-completion is not installed (make deps installs it)")
        done()
    for words, want in CASES:
        got, err = complete(words)
        ok(got == sorted(want), f"coreq {' '.join(words)}<TAB> completes {want}", str(got) + err)
    done()


if __name__ == "__main__":
    main()
