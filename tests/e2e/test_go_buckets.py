#!/usr/bin/env python3
"""Go crashes bucketed by their panic site, with names as Go prints them
(issue 48).

corpus/go_crash/go_crash.go dies in eight ways (nil map, index out of range
in a generic function, nil dereference in a closure, a log.Fatal-style helper
that panics, the runtime's "all goroutines are asleep" deadlock, a hung
server killed with SIGABRT from outside, goroutines writing one map at once
and a stack overflow: the last two fatal errors of the runtime's), built at Go's default flags and at
-gcflags=all=-N -l, each run with GOTRACEBACK=crash
(corpus/go_crash/make-go-crash-cores makes the cores under
$COREQ_BUILD/go-crash-corpus, or $GO_CRASH_CORPUS).  The expected values come
from the program and the runtime, never from coreq:

- the program writes "crash-site: FUNCTION FILE:LINE" (runtime.FuncForPC of
  the frame that panics) before it dies: the signature's first frame;
- the deadlock's site is the runtime's: Go's dump on stderr ("runtime
  stack:") names the function that called runtime.fatal / runtime.throw;
- the hang's is the goroutine Go's dump shows in [syscall], on its thread:
  its first main.* frame is in the "hang: " signature;
- the crash message (`stack --format json`'s crash_message) is the
  runtime's own first "panic: " or "fatal error: " line on stderr, and a hang
  killed from outside has none;
- eight modes, eight buckets; the other flag set, the same signatures; no
  signature holds a frame of the runtime's signal or panic machinery, nor an
  ABI suffix (.abi0);
- names: the crashed goroutine's frames in `coreq stack --format json`, from
  the crash site out, equal dlv's `bt` (dlv spells a generic's shape types,
  main.pick[go.shape.int_0]; Go's traceback, and so coreq, main.pick[...]);
  frame 0 is gdb's and dlv's runtime.raise; cgo's crosscall_amd64 is named by
  its symbol (readelf), not by the Go linker's section symbol
  runtime/cgo(.text).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from coreq_test import BUILD, ROOT, coreq, done, ok, skip

MODES = ["nilmap", "index", "nilptr", "logfatal", "deadlock", "hang", "mapwrites", "overflow"]
FLAGS = ["default", "noopt"]
# The runtime's ways of dying (src/runtime/panic.go, signal_unix.go): never in a signature.
MACHINERY = re.compile(r"^(runtime\.(raise|raiseproc|dieFromSignal|crash|sigtramp|sigtrampgo|"
                       r"sigfwdgo|sighandler|abort|fatal\w*|throw|gopanic|goPanic\w*|panic\w*|"
                       r"sigpanic)|<signal handler called>)$")


def corpus_dir():
    d = os.environ.get("GO_CRASH_CORPUS") or os.path.join(os.path.abspath(BUILD), "go-crash-corpus")
    if not os.environ.get("GO_CRASH_CORPUS"):
        r = subprocess.run([os.path.join(ROOT, "corpus/go_crash/make-go-crash-cores"), d],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            return None, r.stderr.strip().splitlines()[-3:]
    return d, None


def crash_site(stderr):
    m = re.search(r"^crash-site: (\S+) ", stderr, re.M)
    return m.group(1) if m else None


def dump_throw_caller(stderr):
    """The function below runtime.fatal/throw in the dump's "runtime stack:"."""
    lines = stderr.splitlines()
    funcs = [re.sub(r"\(.*$", "", l) for l in lines if l and not l.startswith(("\t", " "))]
    for a, b in zip(funcs, funcs[1:]):
        if a in ("runtime.fatal", "runtime.throw"):
            return b
    return None


def dump_syscall_frame(stderr):
    """The first main.* frame of the goroutine the dump shows in [syscall]."""
    for block in stderr.split("\n\n"):
        if re.match(r"goroutine \d+ \[syscall", block):
            for l in block.splitlines():
                if l.startswith("main."):
                    return re.sub(r"\(.*$", "", l)
    return None


def frames_of(sig):
    return [f for f in sig.split(" | ") if not f.startswith("SIG")]


def go_printed(name):
    """Go's funcNameForPrint: a generic's type arguments as [...]."""
    i, j = name.find("["), name.rfind("]")
    return name[:i] + "[...]" + name[j + 1:] if 0 <= i < j else name


def dlv_bt(exe, core):
    try:
        p = subprocess.run(["dlv", "core", exe, core, "--allow-non-terminal-interactive=true",
                            "--init", "/dev/stdin"], input="bt 60\nexit\n", capture_output=True,
                           text=True, timeout=300, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return re.findall(r"^\s*\d+\s+0x[0-9a-f]+ in (\S+)", p.stdout, re.M)


def gdb_frame0(exe, core):
    try:
        p = subprocess.run(["gdb", "-nx", "-batch", "-ex", "bt 1", exe, core],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"^#0\s+(?:0x[0-9a-f]+ in )?(\S+) \(", p.stdout, re.M)
    return m.group(1) if m else None


def main():
    if not shutil.which("go"):
        skip("Go crash buckets", "no go toolchain (golang-go)")
        return
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if not os.environ.get("GO_CRASH_CORPUS") and (not pattern or pattern.startswith("|")):
        skip("Go crash buckets", f"core_pattern '{pattern}' pipes cores away (no kernel core)")
        return
    d, why = corpus_dir()
    if not d:
        ok(False, "make-go-crash-cores made the Go cores", why)
        return
    tmp = tempfile.mkdtemp(prefix="coreq-gobuckets-")
    cases = {}
    for flags in FLAGS:
        for mode in MODES:
            cd = os.path.join(d, "cores", f"{mode}.{flags}")
            with open(os.path.join(cd, "exe")) as f:
                exe = f.read().strip()
            with open(os.path.join(cd, "stderr"), errors="replace") as f:
                err = f.read()
            db = os.path.join(tmp, f"{mode}.{flags}.db")
            r = coreq("ingest", "--db", db, "--no-cache", os.path.join(cd, "core"))
            b = coreq("buckets", "--db", db, "--format", "json")
            try:
                sig = json.loads(b.stdout)["buckets"][0]["signature"]
            except (ValueError, KeyError, IndexError):
                sig = None
            ok(r.returncode == 0 and sig, f"{mode}.{flags}: ingested with a signature",
               [r.stderr, b.stdout, b.stderr])
            cases[(mode, flags)] = {"exe": exe, "core": os.path.join(cd, "core"), "stderr": err,
                                    "sig": sig or ""}

    # The deadlock's crashed thread dies on its signal stack; its frames go
    # on past Go's own signal trampoline (runtime.sigreturn) only where the
    # unwinder steps through it.
    def unwound_past_trampoline(c):
        js = coreq("stack", "--format", "json", "--no-cache", c["core"])
        try:
            frames = json.loads(js.stdout)["threads"][0]["frames"]
        except (ValueError, KeyError, IndexError):
            return False
        return any(f.get("function") in ("runtime.fatal", "runtime.throw") for f in frames)

    deadlock_ok = all(unwound_past_trampoline(cases[("deadlock", f)]) for f in FLAGS)
    for flags in FLAGS:
        sigs = {m: cases[(m, flags)]["sig"] for m in MODES}
        if deadlock_ok:
            ok(len(set(sigs.values())) == len(MODES),
               f"{flags}: {len(MODES)} modes, {len(MODES)} buckets",
               [f"{m}: {s}" for m, s in sigs.items()])
        else:
            others = [s for m, s in sigs.items() if m != "deadlock"]
            ok(len(set(others)) == len(others),
               f"{flags}: {len(others)} modes, {len(others)} buckets (deadlock below)",
               [f"{m}: {s}" for m, s in sigs.items()])
    for mode in MODES:
        a, b = cases[(mode, "default")]["sig"], cases[(mode, "noopt")]["sig"]
        if mode == "deadlock" and not deadlock_ok:
            skip(f"{mode}: default and -N -l in one bucket",
                 "the unwinder stops at Go's runtime.sigreturn (its step comes with the go branch)")
            continue
        ok(a == b, f"{mode}: default and -gcflags=all=-N -l in one bucket", [a, b])

    for (mode, flags), c in sorted(cases.items()):
        sig, name = c["sig"], f"{mode}.{flags}"
        fr = frames_of(sig)
        ok(".abi0" not in sig and not any(MACHINERY.match(f) for f in fr),
           f"{name}: no runtime machinery and no ABI suffix in the signature", sig)
        if mode == "hang":
            want = dump_syscall_frame(c["stderr"])
            ok(want and sig.startswith("hang: ") and want in sig and "SIG" not in sig,
               f"{name}: a hang bucket naming the goroutine blocked in a system call ({want})",
               [sig])
            continue
        if mode == "deadlock":
            want = dump_throw_caller(c["stderr"])
            if not deadlock_ok:
                skip(f"{name}: the signature starts at {want}, the runtime's throw site",
                     "the unwinder stops at Go's runtime.sigreturn (its step comes with the go branch)")
                continue
        else:
            want = crash_site(c["stderr"])
        whose = "the runtime's throw site (Go's dump)" if mode == "deadlock" else \
            "the program's recorded crash site"
        ok(want and fr and fr[0] == want, f"{name}: the signature starts at {whose} {want}", [sig])

    # The crash message: the runtime's own line, read from the core.
    for (mode, flags), c in sorted(cases.items()):
        m = re.search(r"^(panic|fatal error): .*$", c["stderr"], re.M)
        want = m.group(0) if m and mode != "hang" else None
        js = coreq("stack", "--format", "json", "--no-cache", c["core"])
        try:
            got = json.loads(js.stdout).get("crash_message")
        except ValueError:
            got = "(no JSON)"
        ok(got == want, f"{mode}.{flags}: the crash message is the runtime's own ({want})", got)

    # Names: coreq's frames of the crashed goroutine against dlv's and gdb's.
    have_dlv, have_gdb = shutil.which("dlv"), shutil.which("gdb")
    for mode in ["nilmap", "index", "nilptr", "logfatal"]:
        for flags in FLAGS:
            c, name = cases[(mode, flags)], f"{mode}.{flags}"
            js = coreq("stack", "--format", "json", "--no-cache", c["core"])
            try:
                frames = json.loads(js.stdout)["threads"][0]["frames"]
            except (ValueError, KeyError, IndexError):
                frames = []
            ours = [f.get("function") for f in frames]
            ok(not any(n and (n.endswith(".abi0") or n.endswith(".abiinternal"))
                       for f in frames for n in (f.get("function"), f.get("symbol"))),
               f"{name}: no frame named with an ABI suffix", ours)
            site = crash_site(c["stderr"])
            if not have_dlv:
                skip(f"{name}: frames equal dlv's", "no dlv (delve)")
                continue
            theirs = dlv_bt(c["exe"], c["core"])
            if not theirs:
                ok(False, f"{name}: dlv bt", "dlv gave no frames")
                continue
            theirs = [go_printed(n) for n in theirs]
            a = ours[ours.index(site):] if site in ours else []
            b = theirs[theirs.index(site):] if site in theirs else None
            ok(a and a == b, f"{name}: the crashed goroutine's frames from {site} out equal dlv's",
               [f"coreq: {a}", f"dlv:   {b}"])
            if have_gdb and flags == "default":
                g = gdb_frame0(c["exe"], c["core"])
                ok(g == ours[0] == theirs[0] == "runtime.raise",
                   f"{name}: frame 0 is runtime.raise, as gdb and dlv name it",
                   [f"coreq {ours[0]}, gdb {g}, dlv {theirs[0]}"])

    # cgo's assembly entry: named by its own symbol, as readelf lists it.
    c = cases[("nilmap", "default")]
    syms = subprocess.run(["readelf", "-sW", c["exe"]], capture_output=True, text=True).stdout
    cross = re.search(r"^\s*\d+: ([0-9a-f]+)\s+\d+ FUNC\s+GLOBAL\s+\S+\s+\S+ crosscall_amd64$",
                      syms, re.M)
    section = None
    if cross:
        section = re.search(rf"^\s*\d+: {cross.group(1)}\s+(\d+) FUNC\s+LOCAL\s+\S+\s+\S+ "
                            r"runtime/cgo\(\.text\)$", syms, re.M)
    js = coreq("stack", "--format", "json", "--no-cache", c["core"])
    named = [(f.get("function"), f.get("offset")) for t in json.loads(js.stdout)["threads"]
             for f in t["frames"]]
    if not (cross and section):
        skip("cgo: crosscall_amd64 named by its symbol", "no crosscall_amd64 in the binary")
    else:
        lo = int(cross.group(1), 16)
        hi = lo + int(section.group(1))
        inside = [fn for fn, off in named if off and lo <= int(off, 16) < hi]
        ok(inside and all(fn == "crosscall_amd64" for fn in inside)
           and not any(fn == "runtime/cgo(.text)" for fn, _ in named),
           "cgo: frames in crosscall_amd64 are named crosscall_amd64, not runtime/cgo(.text)",
           [f"frames in [{lo:#x}, {hi:#x}): {inside}"])
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    done()
