#!/usr/bin/env python3
"""A core gdb's gcore wrote of a live process (docs/hangs.md's advice for a
hung one) unwinds as gdb and eu-stack unwind it, says it is a snapshot, and
gives the wait-for graph a kernel core of the same process gives.

gcore writes no PT_LOAD for a file mapping it leaves unchanged, so the text
of every module is absent from the core, segment and all: that it is code
comes from the module file's program headers (libcore/model/module.c).  Its
notes are gdb's (NT_PRPSINFO first, a "GDB" note, one NT_SIGINFO of
SIGSTOP, SI_KERNEL per thread, every pr_cursig 0): nothing crashed.

Programs, built here: a two-thread sleeper, and corpus/deadlock.c (-O2 -g)
in its abba and condvar shapes.  Each is run until it is blocked, gcore'd
(`gcore -o PREFIX PID`), then killed with SIGABRT for a kernel core in its
directory (skipped where core_pattern is a pipe).  Checks:
- per thread, coreq's native frames (`stack --format json --no-async`)
  have gdb's physical frames' pcs and function names (`thread apply all bt`,
  normalised as tests/e2e/test_stack_vs_gdb.py does), and eu-stack's pcs;
- the JSON says core.snapshot "gcore", crashed_tid null, no thread crashed;
  the text header says `snapshot (gcore)` and no thread `(crashed)`;
- `waits`, `deadlocks` and `waited_for` of the snapshot equal the kernel
  core's;
- the kernel core is no snapshot (its first thread crashed);
- ingested, the snapshot is stored as one (cores.snapshot) and, where the
  graph blames a thread, files in the kernel core's bucket: a hang's, by why
  it hung, not by the signal.
"""
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time

from coreq_test import ROOT, coreq, coreq_json, done, ok, skip
from test_stack_vs_gdb import KNOWN_ALIASES, gdb_stacks, normalise, physical, same_name

SLEEPER = r"""
#include <pthread.h>
#include <unistd.h>
static void *worker(void *arg) { (void)arg; for (;;) sleep(100); return 0; }
int main(void)
{
	pthread_t t;
	pthread_create(&t, 0, worker, 0);
	for (;;) pause();
}
"""


def build(src, out, cflags):
    subprocess.run(["cc", *cflags, "-pthread", "-Wl,--build-id", "-I", os.path.join(ROOT, "corpus"),
                    "-o", out, src], check=True, capture_output=True, text=True)


def blocked(pid, want_threads):
    """Every thread of pid sleeps in the kernel (state S), and there are want_threads."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        states = []
        for t in tasks:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
    except OSError:
        return False
    return len(tasks) >= want_threads and all(s == "S" for s in states)


def run_until_blocked(cmd, cwd, ready_file, threads):
    def unlimited_core():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    proc = subprocess.Popen(cmd, cwd=cwd, preexec_fn=unlimited_core,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1000):
        if (not ready_file or os.path.exists(os.path.join(cwd, ready_file))) and \
                blocked(proc.pid, threads):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    return None


def kernel_core_possible():
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|"):
        return False, f"core_pattern is a pipe ({pattern[:40]})"
    if "/" in pattern:
        return False, f"core_pattern writes elsewhere ({pattern[:40]})"
    return True, None


def eu_stack(exe, core):
    """{tid: [pc, ...]} as eu-stack unwinds the core."""
    out = subprocess.run(["eu-stack", "--core", core, "-e", exe], capture_output=True, text=True,
                         errors="replace", timeout=300).stdout
    stacks, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^TID (\d+):", line)
        if m:
            cur = stacks.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"^#\d+\s+(0x[0-9a-f]+)", line)
        if m and cur is not None:
            cur.append(int(m.group(1), 16))
    return stacks


def compare_with_oracles(name, exe, core, ours):
    """Each thread's native frames: gdb's physical pcs and names, eu-stack's pcs."""
    gdb = gdb_stacks(exe, core, None)
    eu = eu_stack(exe, core)
    ok(len(ours["threads"]) == len(gdb) and len(gdb) > 0,
       f"{name}: coreq and gdb see the same {len(gdb)} threads",
       [f"coreq: {[t['tid'] for t in ours['threads']]}", f"gdb: {sorted(gdb)}"])
    for t in ours["threads"]:
        tid = t["tid"]
        native = [f for f in t["frames"] if f["kind"] == "native"]
        c = [(int(f["pc"], 16), KNOWN_ALIASES.get(normalise(f["function"]),
                                                  normalise(f["function"]))) for f in native]
        g = [(pc, KNOWN_ALIASES.get(normalise(fn), normalise(fn)))
             for pc, fn, _, _ in physical(gdb.get(tid, []))]
        same = len(c) == len(g) and all(same_name(gn, cn) and (gpc is None or gpc == cpc)
                                        for (gpc, gn), (cpc, cn) in zip(g, c))
        ok(same and len(c) >= 3, f"{name}: thread {tid}: {len(c)} frames, gdb's pcs and functions",
           [f"gdb:   {[(hex(p) if p else None, n) for p, n in g]}",
            f"coreq: {[(hex(p), n) for p, n in c]}", f"end: {t['end']}"])
        ok([pc for pc, _ in c] == eu.get(tid), f"{name}: thread {tid}: eu-stack's pcs",
           [f"eu-stack: {[hex(p) for p in eu.get(tid, [])]}",
            f"coreq:    {[hex(p) for p, _ in c]}"])


def check_snapshot_marks(name, core, ours):
    c = ours["core"]
    ok(c.get("snapshot") == "gcore" and c.get("crashed_tid") is None,
       f"{name}: JSON says snapshot gcore, no crashed tid",
       f"snapshot={c.get('snapshot')!r} crashed_tid={c.get('crashed_tid')!r}")
    ok(not any(t["crashed"] for t in ours["threads"]), f"{name}: no thread crashed in JSON")
    r = coreq("stack", core, "--no-async")
    header = r.stdout.splitlines()[0] if r.stdout else ""
    ok(r.returncode == 0 and header.endswith(", snapshot (gcore)") and "SIGSTOP" not in header
       and "(crashed)" not in r.stdout,
       f"{name}: text header says snapshot (gcore), no thread (crashed)",
       [header] + r.stderr.splitlines())
    r = coreq("stack", core, "--no-async", "--crashed")
    ok(r.returncode == 0 and "No thread crashed: the core is a snapshot of a live process (gcore)."
       in r.stdout.splitlines() and "Thread " not in r.stdout,
       f"{name}: stack --crashed says no thread crashed", r.stdout.splitlines()[:4])


def wait_graph(doc):
    """The graph, independent of the order the core lists its threads in
    (the kernel writes the crashed thread first, gdb its selected one)."""
    key = lambda v: repr(v)
    return {"waits": sorted(doc.get("waits") or [], key=lambda w: w["tid"]),
            "deadlocks": sorted(({**d, "tids": sorted(d.get("tids") or []),
                                  "objects": sorted(d.get("objects") or [], key=key)}
                                 for d in doc.get("deadlocks") or []), key=key),
            "waited_for": sorted(doc.get("waited_for") or [], key=key)}


def one_program(name, exe, args, ready_file, threads, want_waits):
    work = tempfile.mkdtemp(prefix=f"coreq-gcore-{name}-")
    try:
        proc = run_until_blocked([exe, *args], work, ready_file, threads)
        if not ok(proc is not None, f"{name}: program blocks"):
            return
        prefix = os.path.join(work, "gcore")
        g = subprocess.run(["gcore", "-o", prefix, str(proc.pid)], capture_output=True, text=True,
                           timeout=300)
        snap = f"{prefix}.{proc.pid}"
        if g.returncode != 0 and "ptrace" in (g.stdout + g.stderr).lower():
            skip(f"{name}: gcore snapshot", "gdb may not attach here (ptrace refused)")
            proc.kill()
            proc.wait()
            return
        if not ok(g.returncode == 0 and os.path.exists(snap), f"{name}: gcore wrote a core",
                  g.stderr):
            proc.kill()
            proc.wait()
            return
        possible, why = kernel_core_possible()
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=60)
        ours, _ = coreq_json("stack", snap, "--no-async", "--format", "json", "--exe", exe)
        check_snapshot_marks(name, snap, ours)
        compare_with_oracles(name, exe, snap, ours)
        if not want_waits:
            return
        full, _ = coreq_json("stack", snap, "--format", "json", "--exe", exe)
        ok(full["waits"], f"{name}: the snapshot shows blocked threads",
           str(full.get("waits")))
        kernel = [p for p in glob.glob(os.path.join(work, "core*")) if p != snap]
        if not possible or not kernel:
            skip(f"{name}: snapshot's wait-for graph is the kernel core's",
                 why or "no kernel core was written")
            return
        kdoc, _ = coreq_json("stack", kernel[0], "--format", "json", "--exe", exe)
        ok(kdoc["core"].get("snapshot") is None and kdoc["core"]["signal_name"] == "SIGABRT" and
           kdoc["threads"][0]["crashed"], f"{name}: the kernel core is no snapshot")
        ok(wait_graph(full) == wait_graph(kdoc),
           f"{name}: snapshot's wait-for graph is the kernel core's",
           [f"snapshot: {wait_graph(full)}", f"kernel:   {wait_graph(kdoc)}"])
        # Stored: the snapshot is marked, and files in the kernel core's bucket.
        db = os.path.join(work, "coreq.db")
        r = coreq("ingest", "--db", db, "--no-cache", snap, kernel[0])
        cores, _ = coreq_json("cores", "--db", db, "--format", "json")
        marks = {c["path"]: (c.get("snapshot"), c["crashed_tid"], c["bucket"]) for c in cores["cores"]}
        s_mark, k_mark = marks.get(snap), marks.get(kernel[0])
        ok(r.returncode == 0 and s_mark and k_mark and s_mark[:2] == ("gcore", None) and
           k_mark[0] is None and k_mark[1], f"{name}: stored as a snapshot, the kernel core not",
           [str(marks), r.stderr])
        # Threads on a condvar wait for no thread: both keep a crash bucket.
        if kdoc["deadlocks"] or any(w["tid"] for w in kdoc["waited_for"]):
            ok(s_mark and k_mark and s_mark[2] == k_mark[2],
               f"{name}: the snapshot files in the kernel core's bucket", str(marks))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if not shutil.which("gcore") or not shutil.which("eu-stack"):
        skip("gcore snapshots", "gdb's gcore or eu-stack is not installed (make deps)")
        done()
    bins = tempfile.mkdtemp(prefix="coreq-gcore-bin-")
    try:
        src = os.path.join(bins, "sleeper.c")
        with open(src, "w") as f:
            f.write(SLEEPER)
        sleeper = os.path.join(bins, "sleeper")
        build(src, sleeper, ["-O0", "-g"])
        one_program("sleeper", sleeper, [], None, 2, False)
        deadlock = os.path.join(bins, "deadlock")
        build(os.path.join(ROOT, "corpus", "deadlock.c"), deadlock, ["-O2", "-g"])
        one_program("deadlock-abba", deadlock, ["abba"], "ready", 3, True)
        one_program("deadlock-condvar", deadlock, ["condvar"], "ready", 3, True)
        one_program("deadlock-chain", deadlock, ["chain"], "ready", 5, True)
    finally:
        shutil.rmtree(bins, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
