"""Shared helpers for coreq's end-to-end tests.

Each test program prints TAP lines ("ok - ...", "not ok - ...") that
tests/run counts.  Paths come from the environment tests/run sets up:
COREQ (the ASan+UBSan binary), CORPUS (generated cores), COREQ_BUILD.
"""
import json
import re
import os
import shlex
import subprocess
import sys

COREQ = os.environ.get("COREQ", "build/asan/coreq")
COREQ_RELEASE = os.environ.get("COREQ_RELEASE", "build/coreq")
CORPUS = os.environ.get("CORPUS", "build/corpus")
BUILD = os.environ.get("COREQ_BUILD", "build")
ROOT = os.environ.get("COREQ_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

_failed = 0


def ok(cond, name, diag=None):
    """Report one check; diag (str or list) is shown only on failure."""
    global _failed
    if cond:
        print(f"ok - {name}")
    else:
        _failed += 1
        print(f"not ok - {name}")
        if diag:
            for line in (diag if isinstance(diag, list) else str(diag).splitlines())[:40]:
                print(f"#   {line}")
    sys.stdout.flush()
    return cond


def skip(name, why):
    print(f"ok - {name} # SKIP {why}")


def done():
    sys.exit(1 if _failed else 0)


def sanitizer_report(stderr):
    """The ASan/UBSan/LSan report in stderr, or None."""
    for marker in ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                   "UndefinedBehaviorSanitizer"):
        if marker in stderr:
            return stderr
    return None


def private_mounts():
    """Whether this process can run a command in a mount namespace of its own
    (`unshare -m`: root, and not in a chroot whose / is no mount point): how the
    tests hide /usr/lib/debug from coreq."""
    try:
        return os.geteuid() == 0 and subprocess.run(
            ["unshare", "-m", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def coreq(*args, stdin=None, timeout=120, binary=None, env=None):
    """Run coreq; returns CompletedProcess with text stdout/stderr.  env: variables
    added to the environment."""
    cmd = [binary or COREQ] + [str(a) for a in args]
    return subprocess.run(cmd, stdin=stdin, capture_output=True, timeout=timeout,
                          text=True, errors="replace",
                          env=dict(os.environ, **env) if env else None)


def coreq_json(*args, **kw):
    r = coreq(*args, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"coreq {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout), r


def read_expect(path):
    facts = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, v = line.split("=", 1)
            v = v.split(" #", 1)[0].strip()
            try:
                v = shlex.split(v)[0] if v else ""
            except ValueError:
                pass
            facts[k] = v
    return facts


def corpus_cases(include_big=True):
    """Every generated corpus case as a dict of its expect facts plus 'core'."""
    root = os.path.join(CORPUS, "cores")
    cases = []
    if not os.path.isdir(root):
        return cases
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        core, expect = os.path.join(d, "core"), os.path.join(d, "expect")
        if not (os.path.isfile(core) and os.path.isfile(expect)):
            continue
        facts = read_expect(expect)
        facts.setdefault("case", name)
        facts["core"] = core
        facts["dir"] = d
        if not include_big and int(facts.get("threads", "1") or 1) > 100:
            continue
        cases.append(facts)
    return cases


def source_markers(path):
    """A corpus source's lines, and the line numbers of its `// BODY:tag` and
    `// AWAIT:tag` markers, by tag."""
    lines = open(path).read().splitlines()
    body, await_line = {}, {}
    for no, text in enumerate(lines, 1):
        m = re.search(r"// BODY:(\w+)$", text)
        if m:
            body[m.group(1)] = no
        m = re.search(r"// AWAIT:(\w+)$", text)
        if m:
            await_line[m.group(1)] = no
    return lines, body, await_line


def rust_skipped(case):
    """Why a corpus case made from Rust is not there, or None: the corpus
    builds its Rust programs only when a rustc is found (corpus/rustc-path),
    so on a machine without one they are skipped, not missing."""
    prog = case.split(".")[0].split("-")[0]
    if not os.path.isfile(os.path.join(ROOT, "corpus", prog + ".rs")) and \
            not os.path.isfile(os.path.join(ROOT, "corpus", prog, "Cargo.toml")):
        return None
    r = subprocess.run([os.path.join(ROOT, "corpus", "rustc-path")], capture_output=True,
                       text=True, cwd=os.path.join(ROOT, "corpus"))
    return None if r.stdout.strip() else "no rustc here: the corpus's Rust programs are not built"


def require_corpus():
    cases = corpus_cases()
    if not cases:
        ok(False, "corpus cores exist", f"no cores under {CORPUS}/cores: did `make corpus` run?")
        done()
    return cases
