#!/usr/bin/env python3
"""A corpus of real Debian servers nobody on the team wrote, each under a
load, each captured twice: snapshotted with gdb's gcore while it runs, then
killed from outside as a watchdog would (SIGSEGV or SIGABRT, a kernel core
in its cwd).  Every capture's stacks are compared with gdb's `thread apply
all bt` frame by frame and with eu-stack's pcs (issue 46, part 5).

- redis-server 7, `io-threads 4`, under redis-benchmark (killed: SIGSEGV,
  which its own crash handler logs and re-raises);
- nginx 1.22, a master and two workers under ab (or a small python client):
  a worker killed with SIGSEGV, the master with SIGABRT;
- memcached `-t 4` under sets and gets (killed: SIGSEGV);
- a postgresql-15 backend in a hash join of two generate_series (killed:
  SIGSEGV; the postmaster, restart_after_crash off, then stops);
- python3.11 with threads in distinct functions (killed: SIGABRT).

Every server runs as nobody on 127.0.0.1, in a temp dir, and is stopped by
the test before its captures are checked.  Only python3.11 (python3.11-dbg)
and glibc (libc6-dbg) have debuginfo here; the servers' executables have
their symbol tables only (their -dbgsym packages are in Debian's debug
archive, which this machine does not reach), so file:line is compared where
gdb prints one.  Where the kernel's core_pattern is not a file in the cwd
(a pipe to a crash handler), the killed captures are skipped with one line
and the snapshots still checked; a process that died of its signal with no
core from the kernel is run once more, and the output says so.

For each capture a table row gives: threads and frames (coreq/gdb), names
equal to gdb's, the frames gdb names ?? (no symbol), file:line equal to
gdb's (of the frames where gdb has a file), coreq's native pcs equal to
eu-stack's.  The checks: coreq, gdb and eu-stack see the same threads; each
thread's frames equal gdb's, name for name, pc for pc where gdb prints one
and file:line for file:line where gdb has a file, after the known
differences (DIFFERENCES), each named and counted per capture, none dropped
silently; its native pcs are eu-stack's.  A snapshot says so in JSON
(core.snapshot "gcore", no crashed thread); a killed core names its signal
and its crashed thread.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from coreq_test import coreq_json, done, ok, skip
from real_servers_common import (core_pattern_file, find_core, free_port, gcore, give_to_nobody,
                                 http_load, memcached_load, nobody_env, unprivileged, wait_dead,
                                 wait_for_core, wait_port)
from test_gcore import eu_stack
from test_stack_vs_gdb import KNOWN_ALIASES, gdb_stacks, location, normalise, same_name

# The known differences between gdb's frames and coreq's, by kind.  Each
# one found is counted under its kind, per capture, and printed; any other
# difference fails the thread.
DIFFERENCES = {
    "tailcall": "gdb's tail-call frames (gdb_tailcalls.py: synthesised from DW_TAG_call_site, "
                "no frame on the stack; eu-stack shows none either): dropped from gdb's side",
    "plt": "a frame in a PLT stub (a process killed on its way into a library call): gdb "
           "names it after the function the stub jumps to (memcpy@plt), coreq leaves it unnamed",
    "spelling": "one function spelled two ways, equal after test_stack_vs_gdb.py's normalise "
                "and same_name: glibc's internal-alias prefixes (__GI_, __libc_) where an "
                "assembly function (syscall-template.S) has several symbols at one address and "
                "gdb's minimal-symbol choice differs from the DWARF name; the distinct pairs "
                "are printed",
}
ROWS = []
KERNEL_CORES = [True]  # the kernel writes a killed process's core in its cwd
SPELLINGS = set()  # (gdb's name, coreq's) of the "spelling" frames


def native_name(name):
    return KNOWN_ALIASES.get(normalise(name), normalise(name))


def compare_thread(t, frames, eu_pcs, row, bad):
    """One thread's frames against gdb's (frames, tail calls dropped) and
    eu-stack's pcs; counts go to row, failures to bad."""
    tid = t["tid"]
    # gdb's bt shows no interpreted frames (coreq's kind python): native ones only.
    t = dict(t, frames=[f for f in t["frames"] if f["kind"] != "python"])
    frames = list(frames)
    if frames and frames[0][0] is None and t["frames"]:
        # gdb prints no pc on frame 0 where it starts a line: the thread's pc.
        frames[0] = (int(t["frames"][0]["pc"], 16),) + tuple(frames[0][1:])
    collapsed = frames  # inline frames too: coreq reads LTO units' scopes itself
    g = [(pc, native_name(fn), loc, inner) for pc, fn, loc, inner in collapsed]
    c = [(int(f["pc"], 16), native_name(f["function"]), location(f)) for f in t["frames"]]
    # a PLT stub: gdb names it by its target, coreq does not (the "plt" difference)
    for i, (gf, f) in enumerate(zip(collapsed, t["frames"])):
        if gf[1] and gf[1].endswith("@plt") and not f["function"] and i < len(c):
            c[i] = (c[i][0], g[i][1], c[i][2])
            row["known"]["plt"] += 1
    row["frames"][0] += len(c)
    row["frames"][1] += len(g)
    row["unnamed"] += sum(gn == "??" for _, gn, _, _ in g)
    names = sum(same_name(gn, cn) for (_, gn, _, _), (_, cn, _) in zip(g, c))
    row["names"] += names
    for (_, gf, _, _), f, (_, gn, _, _), (_, cn, _) in zip(collapsed, t["frames"], g, c):
        if (gf or "??") != (f["function"] or "??") and same_name(gn, cn):
            row["known"]["spelling"] += 1
            SPELLINGS.add((gf, f["function"]))
    pcs = all(gpc is None or gpc == cpc for (gpc, _, _, _), (cpc, _, _) in zip(g, c))
    if not (len(g) == len(c) == names and pcs):
        bad.append(f"thread {tid}: names or pcs differ")
        bad.append(f"  gdb:   {[(hex(p) if p else None, n) for p, n, _, _ in g]}")
        bad.append(f"  coreq: {[(hex(p), n) for p, n, _ in c]}")
    for (_, gn, gloc, inner), (_, _, cloc) in zip(g, c):
        if not gloc:
            continue
        row["files"] += 1
        if gloc == cloc:
            row["lines"] += 1
        else:
            bad.append(f"thread {tid}: {gn}: gdb {gloc}, coreq {cloc}")
    native = [int(f["pc"], 16) for f in t["frames"] if f["kind"] == "native"]
    row["eu_frames"] += len(eu_pcs)
    row["eu"] += sum(a == b for a, b in zip(native, eu_pcs))
    if native != eu_pcs:
        bad.append(f"thread {tid}: eu-stack {[hex(p) for p in eu_pcs]}")
        bad.append(f"  coreq's native frames {[hex(p) for p in native]}")


def compare_capture(server, capture, exe, core, ours):
    """One table row, and the checks against gdb and eu-stack."""
    label = f"{server} ({capture})"
    tailcalls = set()
    gdb = gdb_stacks(exe, core, None, tailcalls)
    eu = eu_stack(exe, core)
    tids = [t["tid"] for t in ours["threads"]]
    ok(tids and sorted(tids) == sorted(gdb) == sorted(eu),
       f"{label}: coreq, gdb and eu-stack see the same {len(tids)} threads",
       [f"coreq:    {sorted(tids)}", f"gdb:      {sorted(gdb)}", f"eu-stack: {sorted(eu)}"])
    row = {"label": label, "threads": (len(tids), len(gdb)), "frames": [0, 0], "names": 0,
           "unnamed": 0, "files": 0, "lines": 0, "eu": 0, "eu_frames": 0,
           "known": {kind: 0 for kind in DIFFERENCES}}
    row["known"]["tailcall"] = len(tailcalls)
    bad = []
    for t in ours["threads"]:
        compare_thread(t, gdb.get(t["tid"], []), eu.get(t["tid"], []), row, bad)
    ok(not bad, f"{label}: every thread's frames equal gdb's ({row['frames'][1]} frames in "
       f"{len(tids)} threads), file:line too where gdb has one, pcs equal eu-stack's", bad)
    ROWS.append(row)


def check_capture(server, capture, exe, core, signo=None, why_no_core=None, working=None):
    label = f"{server} ({capture})"
    if not ok(core is not None, f"{label}: a core was written", why_no_core):
        return
    ours, _ = coreq_json("stack", core, "--format", "json", "--no-cache", "--no-async",
                         "--exe", exe, timeout=300)
    c = ours["core"]
    if capture == "gcore":
        ok(c.get("snapshot") == "gcore" and c.get("crashed_tid") is None and
           not any(t["crashed"] for t in ours["threads"]),
           f"{label}: JSON says snapshot gcore, no thread crashed",
           f"snapshot={c.get('snapshot')!r} crashed_tid={c.get('crashed_tid')!r}")
    else:
        ok(c.get("snapshot") is None and c.get("signal") == signo and c.get("crashed_tid"),
           f"{label}: no snapshot, {signal.Signals(signo).name}, a crashed thread",
           f"snapshot={c.get('snapshot')!r} signal={c.get('signal')!r} "
           f"crashed_tid={c.get('crashed_tid')!r}")
    if working:
        names = {native_name(f["function"]) for t in ours["threads"] for f in t["frames"]}
        ok(working in names, f"{label}: caught mid-work, in {working}", sorted(names))
    compare_capture(server, capture, exe, core, ours)


def spawn(cmd, cwd, log=None):
    """cmd as nobody in cwd, its output to the file log in cwd (or nowhere)."""
    if not log:
        return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.STDOUT, preexec_fn=unprivileged,
                                env=nobody_env())
    with open(os.path.join(cwd, log), "w") as out:
        return subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=unprivileged, env=nobody_env())


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def snapshot_then_kill(caps, server, exe, proc, work, signo, pid=None, working=None):
    """gcore pid (default: proc's) while it works, then signo from outside;
    both captures are added to caps, to be checked once the server is
    stopped.  working: a function the captures must show (the work in
    progress).  Returns the kernel's core, or None."""
    pid = pid or proc.pid
    snap, out = gcore(pid, os.path.join(work, "gcore"))
    caps.append({"server": server, "capture": "gcore", "exe": exe, "core": snap,
                 "why": out[-600:], "died": False, "working": working})
    if not KERNEL_CORES[0]:
        return None  # main() said why, once
    why = core_pattern_file()
    if why:  # changed while the test ran (another test's hook)
        caps.append({"server": server, "capture": "killed", "skip": why})
        return None
    os.kill(pid, signo)
    if pid == proc.pid:
        core = wait_for_core(proc, work)
        status, died = proc.returncode, proc.returncode == -signo
    else:
        died = wait_dead(pid)
        core = find_core(pid, work) if died else None
        status = "not our child"
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    caps.append({"server": server, "capture": "killed", "exe": exe, "core": core, "signo": signo,
                 "died": died, "working": working, "why": f"exit status {status}, core_pattern {pattern!r}, in "
                                      f"{work}: {sorted(os.listdir(work))}"})
    return core


def redis(tmp, caps):
    exe = "/usr/bin/redis-server"
    if not os.path.exists(exe) or not shutil.which("redis-benchmark"):
        return skip("redis", "redis-server or redis-tools is not installed")
    port = free_port()
    srv = spawn([exe, "--port", str(port), "--bind", "127.0.0.1", "--io-threads", "4",
                 "--io-threads-do-reads", "yes", "--save", "", "--appendonly", "no",
                 "--crash-memcheck-enabled", "no", "--dir", tmp, "--daemonize", "no"],
                tmp, "redis.log")
    bench = None
    try:
        if not ok(wait_port(port), "redis: the server listens"):
            return
        bench = subprocess.Popen(["redis-benchmark", "-p", str(port), "-n", "10000000", "-c", "50",
                                  "-t", "set,get", "-q"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        snapshot_then_kill(caps, "redis io-threads 4", exe, srv, tmp, signal.SIGSEGV)
    finally:
        if bench:
            stop(bench)
        stop(srv)


def memcached(tmp, caps):
    exe = "/usr/bin/memcached"
    if not os.path.exists(exe):
        return skip("memcached", "memcached is not installed")
    port = free_port()
    srv = spawn([exe, "-t", "4", "-p", str(port), "-U", "0", "-l", "127.0.0.1"], tmp)
    stop_load, load = threading.Event(), None
    try:
        if not ok(wait_port(port), "memcached: the server listens"):
            return
        load = threading.Thread(target=memcached_load, args=(port, stop_load))
        load.start()
        time.sleep(1)
        snapshot_then_kill(caps, "memcached -t 4", exe, srv, tmp, signal.SIGSEGV)
    finally:
        stop_load.set()
        if load:
            load.join()
        stop(srv)


NGINX_CONF = """daemon off;
master_process on;
worker_processes 2;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
working_directory {tmp};
worker_rlimit_core 1g;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {tmp}/www;
    }}
}}
"""


def nginx_workers(master):
    try:
        with open(f"/proc/{master}/task/{master}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def stop_orphans(pids, title):
    """Kill the processes in pids still running as title (workers whose
    master died: nginx's do not notice)."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if not f.read().startswith(title.encode()):
                    continue
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
        wait_dead(pid, 10)


def nginx(tmp, caps):
    exe = "/usr/sbin/nginx"
    if not os.path.exists(exe):
        return skip("nginx", "nginx (nginx-light) is not installed")
    port = free_port()
    os.makedirs(os.path.join(tmp, "www"))
    with open(os.path.join(tmp, "www", "index.html"), "w") as f:
        f.write("<html>" + "coreq " * 2000 + "</html>\n")
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(tmp=tmp, port=port))
    srv = spawn([exe, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf"), "-e",
                 os.path.join(tmp, "error.log")], tmp)
    stop_load, load, seen = threading.Event(), None, set()
    try:
        if not ok(wait_port(port), "nginx: the server listens"):
            return
        url = f"http://127.0.0.1:{port}/"
        if shutil.which("ab"):
            load = subprocess.Popen(["ab", "-k", "-q", "-c", "8", "-n", "100000000", url],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            load = threading.Thread(target=http_load, args=(port, stop_load))
            load.start()
        time.sleep(1)
        workers = nginx_workers(srv.pid)
        seen.update(workers)
        if not ok(len(workers) == 2, "nginx: a master and two workers", workers):
            return
        work = os.path.join(tmp, "worker")
        os.makedirs(work)
        core = snapshot_then_kill(caps, "nginx worker", exe, srv, tmp, signal.SIGSEGV,
                                  workers[0])
        if core:  # the master writes its core under the same name
            caps[-1]["core"] = os.path.join(work, "core")
            os.rename(core, caps[-1]["core"])
        time.sleep(0.2)
        seen.update(nginx_workers(srv.pid))  # the worker the master started anew
        snapshot_then_kill(caps, "nginx master", exe, srv, tmp, signal.SIGABRT)
    finally:
        stop_load.set()
        if isinstance(load, threading.Thread):
            load.join()
        elif load:
            stop(load)
        if srv.poll() is None:
            srv.terminate()  # the master stops its workers
            try:
                srv.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        stop(srv)
        stop_orphans(seen, "nginx: worker")


PG_QUERY = ("SET max_parallel_workers_per_gather = 0; SET work_mem = '64MB'; "
            "SELECT count(*) FROM generate_series(1, 50000000) a "
            "JOIN generate_series(1, 50000000) b ON a = b;")


def postgres(tmp, caps):
    bindir = "/usr/lib/postgresql/15/bin"
    exe = os.path.join(bindir, "postgres")
    if not os.path.exists(exe):
        return skip("postgresql-15", "postgresql-15 is not installed")
    data = os.path.join(tmp, "data")
    init = subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres",
                           "--auth=trust", "-N", "-E", "UTF8", "--locale=C"], cwd=tmp,
                          capture_output=True, text=True, preexec_fn=unprivileged,
                          env=nobody_env(), timeout=120)
    if not ok(init.returncode == 0, "postgresql-15: initdb as nobody", init.stderr[-600:]):
        return
    port = free_port()
    srv = spawn([exe, "-D", data, "-k", tmp, "-h", "127.0.0.1", "-p", str(port),
                 "-c", "shared_buffers=16MB", "-c", "restart_after_crash=off", "-c", "fsync=off",
                 "-c", "max_parallel_workers=0"], tmp, "postgres.log")
    psql = [os.path.join(bindir, "psql"), "-X", "-q", "-h", "127.0.0.1", "-p", str(port),
            "-U", "postgres", "-At"]
    query = None
    try:
        if not ok(wait_port(port, 30), "postgresql-15: the server listens"):
            return
        query = subprocess.Popen(psql + ["-c", PG_QUERY], cwd=tmp, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=nobody_env())
        backend = None
        for _ in range(100):
            r = subprocess.run(psql + ["-c", "SELECT pid FROM pg_stat_activity WHERE state = "
                                       "'active' AND query LIKE '%generate_series%' AND "
                                       "pid <> pg_backend_pid()"],
                               capture_output=True, text=True, env=nobody_env(), timeout=30)
            if r.stdout.strip().isdigit():
                backend = int(r.stdout.strip())
                break
            time.sleep(0.1)
        if not ok(backend, "postgresql-15: a backend runs the hash join"):
            return
        time.sleep(1.5)
        # standard_ExecutorRun: the executor is running the query.
        snapshot_then_kill(caps, "postgresql-15 backend", exe, srv, data, signal.SIGSEGV, backend,
                           "standard_ExecutorRun")
    finally:
        if query:
            stop(query)
        if srv.poll() is None:
            srv.send_signal(signal.SIGINT)  # fast shutdown: ends the sessions first
            try:
                srv.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        stop(srv)


PYTHON_THREADS = r"""
import hashlib, os, threading, time

def crunch():
    x = 0
    while True:
        x = (x * 31 + 1) % 1000003

def nap():
    while True:
        time.sleep(100)

held = threading.Lock()
held.acquire()

def wait_lock():
    held.acquire()

def digest():
    data = b"x" * (1 << 20)
    while True:
        hashlib.sha256(data).digest()

def read_pipe():
    r, w = os.pipe()
    os.read(r, 1)

for fn in (crunch, nap, wait_lock, digest, read_pipe):
    threading.Thread(target=fn, name=fn.__name__, daemon=True).start()
open("ready", "w").close()
threading.Event().wait()
"""


def python(tmp, caps):
    exe = "/usr/bin/python3.11"
    if not os.path.exists(exe):
        return skip("python3.11", "Debian's python3.11 is not installed")
    script = os.path.join(tmp, "threads.py")
    with open(script, "w") as f:
        f.write(PYTHON_THREADS)
    proc = spawn([exe, "-S", script], tmp)
    try:
        for _ in range(200):
            if os.path.exists(os.path.join(tmp, "ready")) or proc.poll() is not None:
                break
            time.sleep(0.05)
        if not ok(os.path.exists(os.path.join(tmp, "ready")), "python3.11: threads started"):
            return
        time.sleep(0.5)
        snapshot_then_kill(caps, "python3.11 threads", exe, proc, tmp, signal.SIGABRT)
    finally:
        stop(proc)


def cell(a, b):
    return f"{a}/{b}"


def print_tables():
    print("# coreq against gdb and eu-stack, per capture (known differences applied):")
    print("#   threads, frames: coreq/gdb; names: equal to gdb's/gdb's frames; ??: frames gdb "
          "names ?? (no symbol: stripped executables), coreq too; file:line: equal to gdb's/"
          "frames where gdb has a file; eu-stack: coreq's native pcs equal/eu-stack's frames")
    print(f"# {'server (capture)':32} {'threads':>7} {'frames':>7} {'names':>7} {'??':>3} "
          f"{'file:line':>9} {'eu-stack':>8}  known differences")
    for r in ROWS:
        known = ", ".join(f"{k} {n}" for k, n in r["known"].items() if n) or "-"
        print(f"# {r['label']:32} {cell(*r['threads']):>7} {cell(*r['frames']):>7} "
              f"{cell(r['names'], r['frames'][1]):>7} {r['unnamed']:>3} "
              f"{cell(r['lines'], r['files']):>9} {cell(r['eu'], r['eu_frames']):>8}  {known}")
    print("# known differences:")
    for kind, why in DIFFERENCES.items():
        total = sum(r["known"][kind] for r in ROWS)
        print(f"#   {kind} ({total} frames): {why}")
    print("#   spellings (gdb | coreq): " +
          "; ".join(f"{g} | {c}" for g, c in sorted(SPELLINGS, key=str)))


def run_server(name, fn):
    """Start the server, capture it, stop it, then check its captures.  A
    process that died of the signal with no core from the kernel (seen
    once in a while on a busy machine) is run once more, and says so."""
    for attempt in (1, 2):
        tmp = tempfile.mkdtemp(prefix=f"coreq-corpus-{name}-")
        give_to_nobody(tmp)
        try:
            caps = []
            fn(tmp, caps)
            lost = [c for c in caps if not c.get("skip") and c["core"] is None and c["died"]]
            if lost and attempt == 1:
                print(f"# {name}: died of its signal, no core from the kernel "
                      f"({lost[0]['why']}): once more")
                continue
            for c in caps:
                if c.get("skip"):
                    skip(f"{c['server']} ({c['capture']})", c["skip"])
                    continue
                if c["capture"] == "gcore" and not c["core"] and "ptrace" in c["why"].lower():
                    skip(f"{c['server']} (gcore)", "gdb may not attach here (ptrace refused)")
                    continue
                check_capture(c["server"], c["capture"], c["exe"], c["core"], c.get("signo"),
                              c["why"], c["working"])
            return
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    why = core_pattern_file()
    if why:
        KERNEL_CORES[0] = False
        skip("real server corpus: the killed captures (gcore snapshots only)", why)
    for tool in ("gdb", "gcore", "eu-stack"):
        if not shutil.which(tool):
            skip("real server corpus", f"{tool} is not installed (make deps)")
            done()
    start = time.time()
    for name, fn in (("redis", redis), ("memcached", memcached), ("nginx", nginx),
                     ("postgres", postgres), ("python", python)):
        t0 = time.time()
        run_server(name, fn)
        print(f"# {name}: {time.time() - t0:.1f}s")
    print_tables()
    print(f"# total {time.time() - start:.1f}s")
    done()


if __name__ == "__main__":
    sys.exit(main())
