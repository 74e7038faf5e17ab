#!/usr/bin/env python3
"""Real Debian servers nobody on the team wrote, crashed mid-work, and what
the wait summary above the threads says of them (issue 44).

- redis-server 7 with `io-threads 4` under redis-benchmark, crashed by its own
  `DEBUG SEGFAULT` (its crash handler logs, stops its threads and re-raises:
  a SIGSEGV the process sent itself);
- memcached `-t 4` under a load of sets and gets, crashed by a jump to
  address 0 made from outside with gdb (`set $pc = 0`): a kernel fault, as a
  wild call would give;
- the same memcached killed with SIGABRT from outside, as a watchdog would.

A crash's story is the crash: threads idle on a condvar (jemalloc's
background threads, memcached's maintainers) are no news, so the crash cores
have no summary line, and their idle waits are still in each thread's block
and in JSON.  A process stopped from outside was hung: its summary says where
its threads wait.  The oracle for who waits on a condvar is gdb's own
backtrace of the same core (a pthread_cond_wait or pthread_cond_timedwait
frame).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from coreq_test import coreq, done, ok, skip
from real_servers_common import core_limit, free_port, memcached_load, wait_for_core, wait_port

SUMMARY = ("deadlock:", "hung:", "waiting:")


def gdb_condvar_tids(exe, core):
    """The LWPs whose gdb backtrace runs through pthread_cond_(timed)wait."""
    p = subprocess.run(["gdb", "-nx", "-batch", "-ex", "set pagination off",
                        "-ex", "thread apply all bt", exe, core],
                       capture_output=True, text=True, timeout=300)
    tids, cur = set(), None
    for line in p.stdout.splitlines():
        if line.startswith("Thread "):
            cur = None
            if "(LWP " in line:
                cur = int(line.split("(LWP ")[1].split(")")[0])
        elif cur and ("pthread_cond_wait" in line or "pthread_cond_timedwait" in line):
            tids.add(cur)
    return tids


def summary_lines(text):
    """The lines between the header and the first thread."""
    lines = []
    for ln in text.splitlines()[1:]:
        if ln.startswith("Thread "):
            break
        if ln:
            lines.append(ln)
    return lines


def check_crash(name, exe, core):
    text = coreq("stack", core, "--no-cache").stdout
    ok(text.startswith("Core ") and "(crashed)" in text, f"{name}: coreq stack reads the core",
       text[:600])
    ok(summary_lines(text) == [], f"{name}: a crash core has no wait summary",
       summary_lines(text)[:6])
    info = coreq("info", core).stdout
    ok("waits (threads blocked on locks)" not in info and
       not any(ln.startswith(SUMMARY) for ln in info.splitlines()),
       f"{name}: info has no wait summary either", info.splitlines()[:20])
    j = json.loads(coreq("stack", core, "--no-cache", "--format", "json").stdout or "{}")
    cv = {w["tid"] for w in j.get("waits", []) if w["kind"] == "condvar"}
    want = gdb_condvar_tids(exe, core)
    ok(want and cv == want, f"{name}: the idle condvar waits are still in JSON, as gdb sees "
       f"them ({len(want)} threads)", [sorted(cv), sorted(want)])
    blocks = [ln for ln in text.splitlines() if ln.startswith("    waits on condvar")]
    ok(len(blocks) == len(want), f"{name}: and in each idle thread's block", blocks[:8])


def redis(tmp):
    if not shutil.which("redis-server") or not shutil.which("redis-benchmark"):
        skip("redis", "redis-server or redis-tools is not installed")
        return
    port = free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                            "--io-threads", "4", "--io-threads-do-reads", "yes",
                            "--enable-debug-command", "yes", "--save", "", "--appendonly", "no",
                            "--dir", tmp, "--daemonize", "no"],
                           cwd=tmp, stdout=open(os.path.join(tmp, "redis.log"), "w"),
                           stderr=subprocess.STDOUT, preexec_fn=core_limit)
    if not wait_port(port):
        srv.kill()
        ok(False, "redis: the server listens")
        return
    bench = subprocess.Popen(["redis-benchmark", "-p", str(port), "-n", "2000000", "-c", "50",
                              "-t", "set,get", "-q"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    time.sleep(2)
    subprocess.run(["redis-cli", "-p", str(port), "DEBUG", "SEGFAULT"], capture_output=True,
                   timeout=30)
    core = wait_for_core(srv, tmp)
    bench.kill()
    bench.wait()
    ok(core is not None and srv.returncode == -signal.SIGSEGV,
       "redis: DEBUG SEGFAULT under redis-benchmark left a core", srv.returncode)
    if core:
        exe = os.path.realpath(shutil.which("redis-server"))
        check_crash("redis io-threads 4", exe, core)
        check_redis_bucket(tmp, core)


def check_redis_bucket(tmp, core):
    """redis's crash handler logs where the fault was (its EIP line, e.g.
    `redis-server *:6379(debugCommand+0x26f)[0x...]`), then re-raises: the
    signature starts there, below the handler's frames."""
    log = open(os.path.join(tmp, "redis.log"), errors="replace").read().splitlines()
    eip = next((log[i + 1] for i, ln in enumerate(log[:-1]) if ln.startswith("EIP:")), "")
    fault = eip.split("(")[1].split("+")[0] if "(" in eip and "+" in eip else None
    db = os.path.join(tmp, "redis.db")
    r = coreq("ingest", "--db", db, "--no-cache", "--format", "json", core)
    res = (json.loads(r.stdout).get("results") or [{}])[0] if r.returncode == 0 else {}
    sig = res.get("signature") or ""
    ok(fault and sig.split(" | ")[0] == fault and "bugReportEnd" not in sig
       and "sigsegvHandler" not in sig and sig.endswith("SIGSEGV"),
       f"redis: the signature starts at the faulting frame redis logged ({fault}), "
       "below its crash handler", [eip, sig, r.stderr[-300:]])


def memcached(tmp, how):
    if not shutil.which("memcached"):
        skip(f"memcached ({how})", "memcached is not installed")
        return
    work = os.path.join(tmp, how)
    os.makedirs(work)
    port = free_port()
    srv = subprocess.Popen(["memcached", "-t", "4", "-p", str(port), "-U", "0",
                            "-l", "127.0.0.1", "-u", "root"], cwd=work,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           preexec_fn=core_limit)
    if not wait_port(port):
        srv.kill()
        ok(False, f"memcached ({how}): the server listens")
        return
    stop = threading.Event()
    load = threading.Thread(target=memcached_load, args=(port, stop))
    load.start()
    time.sleep(1.5)
    name = f"memcached -t 4 ({how})"
    if how == "crash":
        # A wild jump: the main thread's next instruction is at address 0.
        subprocess.run(["gdb", "-nx", "-batch", "-p", str(srv.pid), "-ex", "set $pc = 0",
                        "-ex", "detach"], capture_output=True, timeout=120)
        want = -signal.SIGSEGV
    else:
        srv.send_signal(signal.SIGABRT)
        want = -signal.SIGABRT
    core = wait_for_core(srv, work)
    stop.set()
    load.join()
    ok(core is not None and srv.returncode == want, f"{name}: left a core", srv.returncode)
    if not core:
        return
    exe = shutil.which("memcached")
    if how == "crash":
        check_crash(name, exe, core)
        return
    # Killed from outside: hung, and the summary says where its threads wait.
    text = coreq("stack", core, "--no-cache").stdout
    lines = summary_lines(text)
    want_cv = gdb_condvar_tids(exe, core)
    said = sum(int(ln.split()[1]) if ln.split()[1].isdigit() else 1
               for ln in lines if ln.startswith("waiting:") and " on condvar " in ln)
    ok(lines and said == len(want_cv), f"{name}: a watchdog's kill keeps the summary, "
       f"{len(want_cv)} threads on condvars as gdb sees them", lines[:8])


def main():
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|") or "/" in pattern:
        skip("real servers", f"the kernel's core_pattern is {pattern!r}, not a file in the cwd")
        done()
        return
    tmp = tempfile.mkdtemp(prefix="coreq-real-servers-")
    try:
        redis(tmp)
        memcached(tmp, "crash")
        memcached(tmp, "watchdog")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


if __name__ == "__main__":
    sys.exit(main())
