#!/usr/bin/env python3
"""The inline frames of an LTO build, frame by frame as gdb shows them.

Debian builds /usr/bin/python3.11 with gcc's link-time optimisation: its
code lies in `<artificial>` units whose subprograms and inlined subroutines
name their abstract origins in other units (DW_FORM_ref_addr).  libdw
0.188's dwarf_getscopes finds no scope there, so coreq used to show no
inline frame in the interpreter and paired an outer function with its
inlined callee's line (`PyEval_EvalCode ... at pycore_ceval.h:73`, where gdb
shows `_PyEval_EvalFrame` and `_PyEval_Vector` inlined into it, at
ceval.c:1154).  coreq now reads those scopes itself
(libcore/symbols/scope_index.c).

The program: python3.11 with nine threads, each in its own Python function
(interpreter loop, locks, a queue, sleep, a pipe read, select under a
recursion, a sort whose key function sleeps (C calling Python), hashing),
snapshotted with gcore.  Oracle: gdb's `thread apply all bt` with
python3.11-dbg's debuginfo.  Every gdb frame, per thread, is paired with
coreq's (the two lists aligned by function name); a frame is equal when the
function, file:line and inline-ness (gdb prints no pc for the caller of an
inline frame) agree, and, where gdb prints a pc, the pc too.  At least 98%
must be equal; every difference is listed.  Also: coreq shows inline frames
inside python3.11, and PyEval_EvalCode's frame is where gdb puts it.
"""
import difflib
import os
import shutil
import signal
import subprocess
import tempfile
import time

from coreq_test import coreq_json, done, ok, skip
from test_stack_vs_gdb import KNOWN_ALIASES, gdb_stacks, normalise, same_name

EXE = "/usr/bin/python3.11"

SCRIPT = r"""
import hashlib, os, queue, select, threading, time

started = threading.Barrier(9)
lock = threading.Lock()
lock.acquire()
jobs = queue.Queue()
pipe_r, pipe_w = os.pipe()

def computing():
    started.wait()
    n = 0
    while True:
        n = (n * 31 + 7) % 1000003

def waiting_lock():
    started.wait()
    lock.acquire()

def waiting_queue():
    started.wait()
    jobs.get()

def sleeping():
    started.wait()
    time.sleep(1000)

def reading():
    started.wait()
    os.read(pipe_r, 1)

def recursing(n):
    if n:
        return recursing(n - 1)
    started.wait()
    select.select([pipe_r], [], [], 1000)

def sorting():
    started.wait()
    sorted([3, 1, 2], key=lambda x: time.sleep(1000))

def hashing():
    started.wait()
    data = b"x" * (1 << 16)
    while True:
        hashlib.sha256(data).digest()

for target, args in ((computing, ()), (waiting_lock, ()), (waiting_queue, ()), (sleeping, ()),
                     (reading, ()), (recursing, (12,)), (sorting, ()), (hashing, ())):
    threading.Thread(target=target, args=args, daemon=True).start()
started.wait()
time.sleep(0.5)
open("ready", "w").close()
threading.Event().wait()
"""


def run_until_ready(cmd, cwd):
    """The program, once it has written `ready` (its threads are started and
    have had time to reach their waits); None when it does not."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(3000):
        if os.path.exists(os.path.join(cwd, "ready")):
            time.sleep(0.2)
            return proc
        if proc.poll() is not None:
            return None
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    return None


def debuginfo_present():
    """python3.11-dbg's DWARF for EXE, by its build-id."""
    out = subprocess.run(["readelf", "-n", EXE], capture_output=True, text=True).stdout
    ids = [line.split()[-1] for line in out.splitlines() if "Build ID" in line]
    return bool(ids) and os.path.exists(f"/usr/lib/debug/.build-id/{ids[0][:2]}/{ids[0][2:]}.debug")


def gdb_frames(stack):
    """gdb's frames as (pc, function, file:line, inlined): a frame is inlined
    when the frame after it (its caller, same pc) is printed without a pc."""
    out = []
    for k, (pc, fn, loc, _) in enumerate(stack):
        inlined = k + 1 < len(stack) and stack[k + 1][0] is None and \
            not stack[k + 1][1].startswith("<")
        out.append((pc, fn, loc, inlined))
    return out


def coreq_frames(thread):
    out = []
    for f in thread["frames"]:
        loc = f"{f['file']}:{f.get('line') or 0}" if f.get("file") else None
        out.append((int(f["pc"], 16), f["function"], loc, f["kind"] == "inline"))
    return out


def key(name):
    n = normalise(name)
    return KNOWN_ALIASES.get(n, n)


def compare_thread(tid, g, c, differences):
    """Pairs gdb's frames with coreq's; returns how many of gdb's are equal."""
    gk, ck = [key(f[1]) for f in g], [key(f[1]) for f in c]
    matcher = difflib.SequenceMatcher(a=gk, b=ck, autojunk=False)
    pairs = {}  # gdb index -> coreq index
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace"):
            for i, j in zip(range(i1, i2), range(j1, j2)):
                pairs[i] = j
    equal = 0
    for i, (gpc, gfn, gloc, ginl) in enumerate(g):
        j = pairs.get(i)
        if j is None:
            differences.append(f"thread {tid} #{i} {gfn} at {gloc}: coreq has no such frame")
            continue
        cpc, cfn, cloc, cinl = c[j]
        what = []
        if not same_name(gk[i], ck[j]):
            what.append(f"function coreq {cfn}")
        if gloc != cloc:
            what.append(f"file:line coreq {cloc}")
        if ginl != cinl:
            what.append(f"inline gdb {ginl}, coreq {cinl}")
        if gpc is not None and gpc != cpc:
            what.append(f"pc gdb {hex(gpc)}, coreq {hex(cpc)}")
        if what:
            differences.append(f"thread {tid} #{i} {gfn} at {gloc}: " + "; ".join(what))
        else:
            equal += 1
    extra = len(c) - len(set(pairs.values()))
    if extra:
        differences.append(f"thread {tid}: coreq shows {extra} frame(s) gdb does not: "
                           f"{[c[j][1] for j in range(len(c)) if j not in set(pairs.values())]}")
    return equal


def main():
    for tool in ("gdb", "gcore", "readelf"):
        if not shutil.which(tool):
            skip("LTO inline frames equal gdb's", f"no {tool}")
            done()
    if not os.path.exists(EXE) or not debuginfo_present():
        skip("LTO inline frames equal gdb's", f"no {EXE} or no python3.11-dbg debuginfo")
        done()
    work = tempfile.mkdtemp(prefix="coreq-lto-")
    try:
        script = os.path.join(work, "threads.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        proc = run_until_ready([EXE, script], work)
        if not ok(proc is not None, "python3.11 starts its nine threads"):
            done()
        prefix = os.path.join(work, "gcore")
        g = subprocess.run(["gcore", "-o", prefix, str(proc.pid)], capture_output=True,
                           text=True, timeout=300)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        core = f"{prefix}.{proc.pid}"
        if g.returncode != 0 and "ptrace" in (g.stdout + g.stderr).lower():
            skip("LTO inline frames equal gdb's", "gdb may not attach here (ptrace refused)")
            done()
        if not ok(g.returncode == 0 and os.path.exists(core), "gcore wrote a core", g.stderr):
            done()
        ours, _ = coreq_json("stack", core, "--format", "json", "--no-cache", "--no-async",
                             "--exe", EXE, timeout=600)
        gdb = gdb_stacks(EXE, core, None)
        ok(len(gdb) == len(ours["threads"]) == 9,
           f"gdb and coreq see the 9 threads ({len(gdb)}, {len(ours['threads'])})")
        frames = equal = 0
        differences = []
        for t in ours["threads"]:
            gf = gdb_frames(gdb.get(t["tid"], []))
            frames += len(gf)
            equal += compare_thread(t["tid"], gf, coreq_frames(t), differences)
        print(f"# python3.11 (LTO) gcore core: {frames} frames, {equal} equal, "
              f"{frames - equal} different")
        for d in differences:
            print(f"#   {d}")
        ok(frames > 0 and equal >= 0.98 * frames,
           f"function, file:line and inline-ness equal gdb's on {equal} of {frames} frames "
           f"({100.0 * equal / max(frames, 1):.1f}%)", differences)
        inline_here = [f for t in ours["threads"] for f in t["frames"]
                       if f["kind"] == "inline" and (f.get("module") or "").endswith("python3.11")]
        ok(len(inline_here) >= 10,
           f"coreq shows inline frames inside python3.11 ({len(inline_here)})")
        evals = [(f["function"], f.get("file"), f.get("line")) for t in ours["threads"]
                 for f in t["frames"] if f["function"] == "_PyEval_Vector"]
        ok(evals and all(fl == "../Python/ceval.c" for _, fl, _ in evals),
           "_PyEval_Vector is an inline frame at ../Python/ceval.c, as gdb has it", str(evals))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
