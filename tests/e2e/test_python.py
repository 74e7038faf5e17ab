#!/usr/bin/env python3
"""Python frames in every thread's stack (issue 49), against gdb's py-bt and
the programs' own records, with and without python3.11-dbg.

Subjects:
- every corpus core of CPython (the cases real-python3*: Debian's python3
  and the debug build python3.11d), among them real-python3-stacks, whose
  threads each write their own Python stack before they block
  (corpus/real/python3-stacks.py: its oracle);
- two real Debian Python programs nobody on the team wrote, started here
  under load and killed with SIGABRT mid-work: Twisted's `twistd3 web`
  serving a directory, and an aiohttp (python3-aiohttp) server on the
  `python3 -m aiohttp.web` entry point over a handler that awaits.

The oracle per thread is gdb's `thread apply all py-bt` on the same core,
with python3.11-dbg's gdb extension (auto-loaded beside the executable's
debuginfo): its `File "F", line N, in NAME` frames, innermost first.  py-bt
names a frame by co_name, coreq by co_qualname: a qualified name's last
component must equal it.  py-bt's `<built-in method ...>` lines are C
functions, not interpreter frames, and are not expected; where py-bt prints
`line ?` (it fails on some module frames) the line is not compared with
py-bt but with the program's own record where there is one.

Each core is read twice: as the host is, and without python3.11-dbg
(/usr/lib/debug hidden by an empty tmpfs in a private mount namespace, and
no cache: the version-keyed table's layout, python_layouts.def).  Per
thread: expected, found, missed, phantom and wrong line, printed as a table
(`# python ...` lines); every count but expected and found must be 0.
"""
import difflib
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from coreq_test import CORPUS, coreq, done, ok, private_mounts, require_corpus, sanitizer_report, skip

GDB_TIMEOUT = 300


def py_bt(exe, core):
    """gdb's py-bt per thread: {tid: [(name, file, line or None)]}, or None."""
    r = subprocess.run(["gdb", "-nx", "-batch", "-iex", "set auto-load safe-path /",
                        "-iex", "set debuginfod enabled off",
                        "-ex", "thread apply all py-bt", exe, core],
                       capture_output=True, text=True, errors="replace", timeout=GDB_TIMEOUT)
    threads, tid = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"Thread \d+ \(.*LWP (\d+)\)", line)
        if m:
            tid = int(m.group(1))
            threads[tid] = []
            continue
        m = re.match(r'\s+File "(.*)", line (\d+|\?), in (.*)$', line)
        if m and tid is not None:
            n = None if m.group(2) == "?" else int(m.group(2))
            threads[tid].append((m.group(3), m.group(1), n))
    if "Undefined command" in r.stdout + r.stderr or not threads:
        return None
    return threads


def coreq_python(core, exe, hide_debug):
    """coreq's Python frames per thread ({tid: [(qualname, file, line)]}) and its "async" stats."""
    args = ["stack", core, "--format", "json", "--no-cache", "--exe", exe]
    if hide_debug:
        cmd = " ".join(["mount -t tmpfs none /usr/lib/debug &&", "exec", "\"$@\""])
        r = subprocess.run(["unshare", "-m", "sh", "-c", cmd, "sh", os.environ.get("COREQ", "build/asan/coreq")] + args,
                           capture_output=True, text=True, errors="replace", timeout=300)
    else:
        r = coreq(*args, timeout=300)
    if r.returncode != 0 or sanitizer_report(r.stderr):
        return None, r.stderr
    d = json.loads(r.stdout)
    out = {t["tid"]: [(f["function"], f["file"], f["line"]) for f in t["frames"]
                      if f["kind"] == "python"] for t in d["threads"]}
    return (out, d["async"]), r.stderr


def has_dwarf(exe):
    r = subprocess.run(["readelf", "-S", "-W", exe], capture_output=True, text=True)
    return ".debug_info" in r.stdout


def short(qualname):
    return (qualname or "??").rsplit(".", 1)[-1]


def compare_thread(expected, found):
    """Counts of one thread: found, missed, phantom, wrong line (and the wrong ones)."""
    e_keys = [(n, f) for n, f, _ in expected]
    f_keys = [(short(q), f) for q, f, _ in found]
    sm = difflib.SequenceMatcher(a=e_keys, b=f_keys, autojunk=False)
    matched, wrong = 0, []
    for a, b, size in sm.get_matching_blocks():
        for k in range(size):
            matched += 1
            want = expected[a + k][2]
            if want is not None and want != found[b + k][2]:
                wrong.append((expected[a + k], found[b + k]))
    return matched, len(expected) - matched, len(found) - matched, wrong


def check_core(label, exe, core, gdb, record, rows):
    """Compares coreq's frames with py-bt's (and with the record) per thread, with and without -dbg."""
    for hide in (False, True):
        mode = "without -dbg" if hide else "with -dbg"
        got, err = coreq_python(core, exe, hide)
        if not ok(got is not None, f"{label} ({mode}): coreq stack runs clean", err):
            continue
        frames, stats = got
        layout = stats.get("python_layout")
        # python3.11d (itself from python3.11-dbg) carries its own DWARF.
        want = "table" if hide and not has_dwarf(exe) else "dwarf"
        ok(layout == want, f"{label} ({mode}): the layout comes from {want}",
           f"python_layout={layout!r}")
        totals = [0, 0, 0, 0, 0]
        no_line = sum(line is None for want in gdb.values() for _, _, line in want)
        problems = []
        for tid, want in sorted(gdb.items()):
            have = frames.get(tid)
            if have is None:
                problems.append(f"thread {tid}: not in coreq's output")
                continue
            found, missed, phantom, wrong = compare_thread(want, have)
            for i, v in enumerate((len(want), found, missed, phantom, len(wrong))):
                totals[i] += v
            if missed or phantom or wrong:
                problems.append(f"thread {tid}: py-bt {want}")
                problems.append(f"           coreq {have}")
            rec = record.get(tid) if record else None
            if rec is not None:
                # The program's own stack: the outermost frames, every line.
                tail = have[len(have) - len(rec):] if len(rec) <= len(have) else None
                ok(tail is not None and [(q, l, f) for q, f, l in tail] == rec,
                   f"{label} ({mode}): thread {tid}'s frames end with the program's record",
                   [f"record: {rec}", f"coreq:  {have}"])
        rows.append((label, mode, len(gdb), *totals, no_line))
        ok(not problems and totals[2] == totals[3] == totals[4] == 0,
           f"{label} ({mode}): every thread's Python frames equal py-bt's "
           f"({totals[1]} of {totals[0]} frames)", problems)
        print(f"# python {label} {mode}: threads {len(gdb)} expected {totals[0]} found {totals[1]} "
              f"missed {totals[2]} phantom {totals[3]} wrong-line {totals[4]} "
              f"(py-bt gave no line for {no_line})")
        sys.stdout.flush()


def read_record(path):
    """real-python3-stacks' oracle: {tid: [(qualname, line, file)]} innermost first, spin facts."""
    rec, spin = {}, None
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 4)
            if parts[0] == "thread":
                rec.setdefault(int(parts[1]), [])
            elif parts[0] == "frame":
                rec[int(parts[1])].append((parts[2], int(parts[3]), parts[4]))
            elif parts[0] == "spin":
                lo, hi = map(int, parts[3].split("-"))
                spin = (int(parts[1]), parts[2], lo, hi, parts[4])
    return rec, spin


def check_cache(case):
    """The DWARF layout is cached per module: a second run reads it back and gives the same frames."""
    tmp = tempfile.mkdtemp(prefix="coreq-python-cache-")
    try:
        db = os.path.join(tmp, "cache.db")
        runs = []
        for _ in range(2):
            r = coreq("stack", case["core"], "--format", "json", "--cache", db, timeout=300)
            if not ok(r.returncode == 0 and not sanitizer_report(r.stderr),
                      f"{case['case']}: coreq stack with a cache runs clean", r.stderr):
                return
            d = json.loads(r.stdout)
            runs.append((d["async"].get("python_layout_cached"),
                         [[(f["function"], f["file"], f["line"]) for f in t["frames"]
                           if f["kind"] == "python"] for t in d["threads"]]))
        ok(runs[0][0] is False and runs[1][0] is True,
           f"{case['case']}: the DWARF layout is read once, then from the cache",
           [r[0] for r in runs])
        ok(runs[0][1] == runs[1][1], f"{case['case']}: the same Python frames cold and warm")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_thread_names(case):
    """Each threading.Thread's name (the program's oracle) marks its Thread._bootstrap frame."""
    names = {}
    with open(os.path.join(case["dir"], "oracle")) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "thread" and parts[2] != "MainThread":
                names[int(parts[1])] = parts[2]
    for hide in (False, True):
        mode = "without -dbg" if hide else "with -dbg"
        r = run_in(hide, "stack", case["core"], "--format", "json", "--no-cache")
        d = json.loads(r.stdout) if r.returncode == 0 else {"threads": []}
        got = {}
        for t in d["threads"]:
            for f in t["frames"]:
                st = f.get("state") or ""
                if f["kind"] == "python" and st.startswith('thread "'):
                    got[t["tid"]] = st[len('thread "'):-1]
        ok(got == names, f"{case['case']} ({mode}): every thread's threading name from the core",
           [f"oracle: {names}", f"coreq:  {got}"])


def corpus_subjects(rows):
    cases = [c for c in require_corpus() if c["case"].startswith("real-python3")]
    ok(any(c["case"] == "real-python3-stacks" for c in cases), "the corpus has real-python3-stacks")
    for c in cases:
        exe = c.get("exe") or "/usr/bin/python3.11"
        gdb = py_bt(exe, c["core"])
        if not ok(gdb is not None, f"{c['case']}: gdb's py-bt reads the core (python3.11-dbg)"):
            continue
        record, spin = None, None
        oracle = os.path.join(c["dir"], "oracle")
        if c["case"] == "real-python3-stacks" and os.path.exists(oracle):
            record, spin = read_record(oracle)
        check_core(c["case"], exe, c["core"], gdb, record, rows)
        if c["case"] == "real-python3-stacks":
            check_cache(c)
            check_thread_names(c)
        if spin:
            got, _ = coreq_python(c["core"], exe, False)
            tid, name, lo, hi, path = spin
            have = got[0].get(tid, []) if got else []
            ok(have and have[0][0] == name and have[0][1] == path and lo <= have[0][2] <= hi,
               f"{c['case']}: the spinning thread is in {name} at lines {lo}-{hi}", have[:1])
            ok(got and got[1].get("python_gil_holder") in (tid, None),
               f"{c['case']}: the GIL holder, if any, is the spinning thread",
               got[1].get("python_gil_holder") if got else None)


def run_in(hide, *args):
    """coreq with python3.11-dbg (hide False) or without it."""
    if not hide:
        return coreq(*args, timeout=300)
    cmd = "mount -t tmpfs none /usr/lib/debug && exec \"$@\""
    return subprocess.run(["unshare", "-m", "sh", "-c", cmd, "sh",
                           os.environ.get("COREQ", "build/asan/coreq")] + [str(a) for a in args],
                          capture_output=True, text=True, errors="replace", timeout=300)


def bucket_subjects():
    """Python crashes bucket by their Python frames (real-python3-crash-*)."""
    cases = {c["case"]: c for c in require_corpus() if c["case"].startswith("real-python3-crash-")}
    want = ["real-python3-crash-site_a", "real-python3-crash-site_b", "real-python3-crash-abort"]
    if not ok(all(w in cases for w in want), "the corpus has the Python crash cases", sorted(cases)):
        return
    python_parts = {}
    for hide in (False, True):
        mode = "without -dbg" if hide else "with -dbg"
        tmp = tempfile.mkdtemp(prefix="coreq-python-buckets-")
        try:
            db = os.path.join(tmp, "db.sqlite")
            sig = {}
            for name in want:
                r = run_in(hide, "ingest", "--db", db, "--no-cache", cases[name]["core"])
                ok(r.returncode == 0 and not sanitizer_report(r.stderr), f"{name} ({mode}): ingested",
                   r.stderr)
            r = run_in(hide, "cores", "--db", db, "--format", "json")
            cores = json.loads(r.stdout)["cores"] if r.returncode == 0 else []
            r = run_in(hide, "buckets", "--db", db, "--format", "json")
            buckets = {b["hash"]: b["signature"] for b in json.loads(r.stdout)["buckets"]} \
                if r.returncode == 0 else {}
            for c in cores:
                for name in want:
                    if c["path"] == cases[name]["core"]:
                        sig[name] = buckets.get(c["bucket"], "")
            oracle = {}
            for name in want:
                with open(os.path.join(cases[name]["dir"], "oracle")) as f:
                    oracle[name] = f.read().split("\n")[0].split(" ", 1)
            a, b = sig.get(want[0], ""), sig.get(want[1], "")
            ok(a and b and a != b, f"two Python callers of one C function sign apart ({mode})", [a, b])
            for name in want[:2]:
                site = oracle[name][1]
                parts = sig.get(name, "").split(" | ")
                ok(site in parts and "_PyEval_EvalFrameDefault" not in parts and len(parts) <= 7,
                   f"{name} ({mode}): the signature leads with the Python caller {site}, "
                   f"no interpreter frame", sig.get(name))
            ab = sig.get(want[2], "").split(" | ")
            ok(ab[:1] == ["abort_hook"] and ab[-1] == "SIGABRT",
               f"{want[2]} ({mode}): the signature is the excepthook's Python frame", ab)
            for name in want:
                s_ = sig.get(name, "")
                # The part from the Python call site on: the same with -dbg or without.
                key = s_[s_.find(oracle[name][1]):] if oracle[name][0] == "site" else s_
                python_parts.setdefault(name, set()).add(key)
            r = run_in(hide, "rebucket", "--db", db)
            r2 = run_in(hide, "buckets", "--db", db, "--format", "json")
            after = {b["signature"] for b in json.loads(r2.stdout)["buckets"]} if r2.returncode == 0 else set()
            ok(r.returncode == 0 and set(sig.values()) <= after,
               f"rebucket from the stored frames gives the same signatures ({mode})",
               [sorted(sig.values()), sorted(after), r.stderr])
            # The exception the abort handled, from the core, as the program recorded it.
            exc = oracle[want[2]][1]
            got, err = coreq_python_states(cases[want[2]]["core"], hide)
            ok(any(exc.replace(" ", ": ", 1) in (st or "") for st in got),
               f"{want[2]} ({mode}): the exception handled at the abort is recovered ({exc})",
               [got, err])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    for name, keys in python_parts.items():
        ok(len(keys) == 1, f"{name}: the Python part of the signature is the same with -dbg and without",
           sorted(keys))


def asyncio_subject():
    """real-python3-asyncio: every pending task once, each chain ending with the task's own record."""
    case = next((c for c in require_corpus() if c["case"] == "real-python3-asyncio"), None)
    if not ok(case is not None, "the corpus has real-python3-asyncio"):
        return
    pending, records, awaits, done_ = [], {}, {}, []
    with open(os.path.join(case["dir"], "oracle")) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 4)
            if parts[0] == "task":
                pending.append(parts[1])
            elif parts[0] == "frame":
                records.setdefault(parts[1], []).append((parts[2], int(parts[3]), parts[4]))
            elif parts[0] == "awaits":
                awaits[parts[1]] = parts[2]
            elif parts[0] == "done":
                done_.append(parts[1])
    for hide in (False, True):
        mode = "without -dbg" if hide else "with -dbg"
        r = run_in(hide, "stack", case["core"], "--format", "json", "--no-cache")
        if not ok(r.returncode == 0 and not sanitizer_report(r.stderr), f"asyncio ({mode}): coreq runs clean",
                  r.stderr):
            continue
        d = json.loads(r.stdout)
        tasks = {}
        for s_ in d["suspended"]:
            if s_["kind"] != "python":
                continue
            state = s_["frames"][-1]["state"] or ""
            name = state.split(";")[0][len("task "):] if state.startswith("task ") else None
            tasks.setdefault(name, []).append(s_)
        listed = sorted(n or "?" for n, v in tasks.items() for _ in v)
        ok(listed == sorted(pending),
           f"asyncio ({mode}): each of the {len(pending)} pending tasks listed once, no phantom "
           f"(done and cancelled tasks left out)", [f"listed:  {listed}", f"pending: {sorted(pending)}"])
        ok(not any(n in tasks for n in done_), f"asyncio ({mode}): no done task listed", done_)
        for name, rec in sorted(records.items()):
            chain = tasks.get(name, [{"frames": []}])[0]["frames"]
            got = [(f["function"], f["line"], f["file"]) for f in chain]
            ok(len(got) >= len(rec) and got[len(got) - len(rec):] == rec,
               f"asyncio ({mode}): task {name}'s chain ends with its own record, lines included",
               [f"record: {rec}", f"coreq:  {got}"])
        for name, other in awaits.items():
            chain = tasks.get(name, [{"frames": [{"state": None}]}])[0]["frames"]
            ok(f"awaiting task {other}" in (chain[0]["state"] or ""),
               f"asyncio ({mode}): task {name} awaits task {other}", chain[0]["state"])
        print(f"# python asyncio {mode}: pending {len(pending)} listed {len(listed)} "
              f"phantom {len(set(listed) - set(pending))} missed {len(set(pending) - set(listed))} "
              f"done listed {sum(n in tasks for n in done_)}")


def coreq_python_states(core, hide):
    """The states (marks) of the crashed thread's Python frames."""
    r = run_in(hide, "stack", core, "--format", "json", "--no-cache")
    if r.returncode != 0:
        return [], r.stderr
    d = json.loads(r.stdout)
    t = next((t for t in d["threads"] if t["crashed"]), {"frames": []})
    return [f["state"] for f in t["frames"] if f["kind"] == "python"], r.stderr


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def core_limit():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def load(port, path, stop):
    """Keeps requests going until stop is set."""
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
                while s.recv(65536):
                    pass
        except OSError:
            time.sleep(0.01)


def wait_port(port, proc, secs=30):
    end = time.time() + secs
    while time.time() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def capture_server(label, argv, port, path, tmp, env=None):
    """Starts argv in tmp, loads it on 4 connections for 2 s, kills it with SIGABRT: its core."""
    proc = subprocess.Popen(argv, cwd=tmp, preexec_fn=core_limit, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not ok(wait_port(port, proc), f"{label}: listens on 127.0.0.1:{port}"):
        proc.kill()
        proc.wait()
        return None
    stop = threading.Event()
    clients = [threading.Thread(target=load, args=(port, path, stop), daemon=True) for _ in range(4)]
    for c in clients:
        c.start()
    time.sleep(2)
    os.kill(proc.pid, signal.SIGABRT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    stop.set()
    for c in clients:
        c.join()
    for name in (f"core.{proc.pid}", "core"):
        if os.path.exists(os.path.join(tmp, name)):
            return os.path.join(tmp, name)
    ok(False, f"{label}: a core in {tmp}")
    return None


AIOHTTP_APP = '''
import asyncio
from aiohttp import web


async def slow(request):
    await asyncio.sleep(0.05)
    return web.Response(text="x" * 4096)


def init(argv):
    app = web.Application()
    app.router.add_get("/", slow)
    return app
'''


def real_subjects(rows):
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|") or "/" in pattern:
        return skip("real Debian Python programs", f"core_pattern {pattern!r} is not a file in the cwd")
    tmp = tempfile.mkdtemp(prefix="coreq-python-")
    try:
        exe = "/usr/bin/python3.11"
        if shutil.which("twistd3"):
            port = free_port()
            d = os.path.join(tmp, "twistd")
            os.makedirs(os.path.join(d, "www"))
            with open(os.path.join(d, "www", "index.html"), "w") as f:
                f.write("x" * 65536)
            core = capture_server("twistd3 web", [exe, shutil.which("twistd3"), "-n", "--pidfile=",
                                                  "web", "--listen", f"tcp:{port}:interface=127.0.0.1",
                                                  "--path", "www"], port, "/index.html", d)
            if core:
                gdb = py_bt(exe, core)
                if ok(gdb is not None, "twistd3 web: gdb's py-bt reads the core"):
                    check_core("twistd3-web", exe, core, gdb, None, rows)
        else:
            skip("twistd3 web", "python3-twisted is not installed")
        if subprocess.run([exe, "-c", "import aiohttp"], capture_output=True).returncode == 0:
            port = free_port()
            d = os.path.join(tmp, "aiohttp")
            os.makedirs(d)
            with open(os.path.join(d, "app.py"), "w") as f:
                f.write(AIOHTTP_APP)
            core = capture_server("aiohttp server", [exe, "-m", "aiohttp.web", "-H", "127.0.0.1",
                                                     "-P", str(port), "app:init"], port, "/", d,
                                  env=dict(os.environ, PYTHONPATH=d))
            if core:
                gdb = py_bt(exe, core)
                if ok(gdb is not None, "aiohttp server: gdb's py-bt reads the core"):
                    check_core("aiohttp-web", exe, core, gdb, None, rows)
        else:
            skip("aiohttp server", "python3-aiohttp is not installed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if not shutil.which("gdb"):
        skip("python frames", "gdb is not installed")
        return done()
    if not private_mounts():
        skip("python frames", "hiding python3.11-dbg needs a private mount namespace (root)")
        return done()
    rows = []
    corpus_subjects(rows)
    bucket_subjects()
    asyncio_subject()
    real_subjects(rows)
    print("# subject | debuginfo | threads | expected | found | missed | phantom | wrong line "
          "| py-bt gave no line")
    for r in rows:
        print("# " + " | ".join(map(str, r)))
    done()


if __name__ == "__main__":
    main()
