#!/usr/bin/env python3
"""coreq built for aarch64 (`make CROSS=aarch64`), run under qemu-aarch64
on this x86_64 machine: a Graviton host analysing its own crashes, and a
central aarch64 host analysing x86_64 ones.

qemu runs the binary with Debian's multiarch arm64 libraries (libc6:arm64,
libdw1:arm64, libasan8:arm64 ..., which `make deps` installs), loaded by
/lib/ld-linux-aarch64.so.1; QEMU_LD_PREFIX is left unset on purpose.  With
QEMU_LD_PREFIX=/usr/aarch64-linux-gnu the cross toolchain's ld.so (glibc
2.36-8cross1) would load the multiarch libc.so.6 (another 2.36 build, named
by the host's ld.so.cache), and the pair disagrees on ld.so's private data:
the first pthread_create loops for ever in its stack-cache walk.

Oracles, never coreq's own aarch64 output:
- the aarch64 unit tests (cmocka) pass, ASan and UBSan included (LeakSanitizer
  cannot run under qemu, so leaks are left to the x86_64 run of the same
  tests);
- `info` and `stack --format json` on x86_64 and aarch64 corpus cores are
  byte for byte the x86_64 build's output on the same core with the same
  options, except the async scan's timings (keys ending in _us, wall-clock
  microseconds), which are set to 0 on both sides first; and the crashed
  thread holds the corpus program's crash chain (its expect file);
- the aarch64 build reading a cache the x86_64 build wrote (serialised
  unwind tables, symbols, Rust indexes) prints what the x86_64 build
  prints from it;
- `ingest` into a fresh database: `list-stacks` and `buckets` as JSON equal
  the x86_64 build's on the same cores;
- `coreq hook` fed a core through a pipe stores it (zstd -dc gives the
  core's bytes back) and records it analysed, with the crash chain.

`make test` runs a subset (a few unit tests and cores, about a minute);
`make test-aarch64` sets COREQ_AARCH64_ALL=1: every unit test built and
every corpus core.
"""
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import BUILD, CORPUS, COREQ_RELEASE, done, ok, read_expect

A64_BUILD = os.environ.get("COREQ_A64_BUILD", os.path.join(BUILD, "aarch64"))
A64 = os.path.join(A64_BUILD, "coreq")
A64_UNITS = os.path.join(A64_BUILD, "asan", "tests")
ALL = os.environ.get("COREQ_AARCH64_ALL") == "1"
QEMU = shutil.which("qemu-aarch64")

# make test: unit tests spread over the layers (formats, notes and
# registers, CFI, the walker, the store, the hook's capture), and cores of
# each kind: C and C++ at -O0/-O2, static, threads, signal frames, folly
# coroutines, Rust and tokio; qemu's aarch64 cores, dynamic and static.
UNIT_SAMPLE = ["test_arch", "test_notes", "test_frames", "test_unwinder", "test_lws_codec",
               "test_stack_blob", "test_store", "test_capture", "test_bucket", "test_json",
               "test_cfi_table", "test_symbolizer"]
CORE_SAMPLE = ["cores/abort_deep.O2", "cores/abort_deep.static", "cores/sighandler.O2",
               "cores/threads8.O2", "cores/async_coro-same.O2fp", "cores/rust_async.O2",
               "cores/tokio_tasks.O2", "cores/cpp_terminate.O2",
               "aarch64/abort_deep.O0.dynamic", "aarch64/abort_deep.O2.static",
               "aarch64/cpp_terminate.O2.dynamic", "aarch64/sighandler.O0.static",
               "aarch64/threads8.O0.dynamic"]
TIMING = re.compile(rb'"([a-z_]+_us)":[0-9]+')
# When a stack or bucket was first and last seen: the wall-clock time of
# the ingest, not a fact of the core.
SEEN = re.compile(rb'"(first_seen|last_seen)":"[0-9TZ:-]+"')
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=99")
ENV.pop("QEMU_LD_PREFIX", None)
# Unit tests that crash a child for a core (qemu-user writes it itself):
# they may write up to this much, and must not skip for want of a core.
CORE_TESTS = {"test_symbolizer"}
CORE_CAP = 256 << 20
# A failed test in cmocka's TAP; it prints a skipped one as "not ok N # SKIP".
NOT_OK = re.compile(r"^not ok (?!\d+ # SKIP)", re.M)


def no_core():
    """qemu-user writes a guest's core itself, of the whole address space:
    a program that crashes here by mistake must not fill the disk."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def capped_core():
    """Room for a test's own small core, never for a runaway one."""
    resource.setrlimit(resource.RLIMIT_CORE, (CORE_CAP, CORE_CAP))


def a64(*args, **kw):
    return subprocess.run([QEMU, A64, *map(str, args)], capture_output=True, env=ENV, preexec_fn=no_core,
                          **kw)


def x86(*args, **kw):
    return subprocess.run([COREQ_RELEASE, *map(str, args)], capture_output=True, env=ENV, **kw)


def cases():
    """(name, core, options, expect) for the corpus cores to compare."""
    out = []
    for top in ("cores", "aarch64"):
        root = os.path.join(CORPUS, top)
        for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            core, expect = os.path.join(root, name, "core"), os.path.join(root, name, "expect")
            if not (os.path.isfile(core) and os.path.isfile(expect)):
                continue
            if not ALL and f"{top}/{name}" not in CORE_SAMPLE:
                continue
            e = read_expect(expect)
            opts = []
            if e.get("debug_dir"):
                opts += ["--debug-dir", e["debug_dir"]]
            if top == "aarch64":
                # qemu's cores carry no NT_FILE note: the executable is named
                opts += ["--exe", e["exe"], "--sysroot", e.get("sysroot") or "/usr/aarch64-linux-gnu"]
            out.append((f"{top}/{name}", core, opts, e))
    return out


def check_units():
    names = sorted(n for n in os.listdir(A64_UNITS) if n.startswith("test_") and "." not in n) \
        if os.path.isdir(A64_UNITS) else []
    if not ALL:
        ok(set(UNIT_SAMPLE) <= set(names), "the sampled aarch64 unit tests are built",
           sorted(set(UNIT_SAMPLE) - set(names)))
        names = [n for n in names if n in UNIT_SAMPLE]
    env = dict(ENV, CMOCKA_MESSAGE_OUTPUT="TAP", CORPUS=CORPUS)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            try:
                r = subprocess.run([QEMU, os.path.join(A64_UNITS, n)], capture_output=True, env=env,
                                   preexec_fn=capped_core if n in CORE_TESTS else no_core,
                                   cwd=os.environ.get("COREQ_ROOT", "."), timeout=600,
                                   errors="replace", text=True)
                out = r.stdout + r.stderr
                if n in CORE_TESTS and "tests skipped" in out:
                    failed.append((n, "no core", [l for l in out.splitlines() if l.startswith("#")][:3]))
                elif r.returncode != 0 or NOT_OK.search(out):
                    failed.append((n, r.returncode, [l for l in out.splitlines()
                                                     if NOT_OK.match(l) or "ERROR" in l][:5]))
            except subprocess.TimeoutExpired:
                failed.append((n, "timeout", []))
    ok(names and not failed, f"{len(names)} aarch64 unit tests pass under qemu-aarch64",
       [str(f) for f in failed])


def base_name(function):
    """A function's name without its arguments, clone suffix or scope."""
    name = re.sub(r"\s*\[clone [^\]]*\]", "", function or "")
    depth, out = 0, []
    for ch in name:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out).strip().split("::")[-1]


def crash_chain_seen(name, stack_json, expect):
    """The corpus program's crash chain, in order, on the crashed thread.
    The async programs' chains run through suspended frames that
    test_async.py and test_rust_async.py follow; here only the native ones."""
    # Both sides by base name: smol_tasks's chain says smol_tasks::fatal.
    chain = [base_name(c) for c in expect.get("crash_chain", "").split()]
    if not chain or re.search(r"/(async_|rust_|tokio_)", name):
        return True
    try:
        d = json.loads(stack_json)
    except ValueError:
        return False
    crashed = [t for t in d["threads"] if t.get("crashed")]
    fns = [base_name(f.get("function")) for t in crashed for f in t["frames"]]
    # In order, each after the one before: a chain may name a function
    # twice (recurse-mutual: ping pong ping pong ping main).
    at = 0
    for c in chain:
        if c not in fns[at:]:
            return False
        at = fns.index(c, at) + 1
    return True


def check_json(picked, tmp):
    same = timing = 0
    differing = []
    for name, core, opts, e in picked:
        for cmd in ("info", "stack"):
            extra = ["--no-cache"] if cmd == "stack" else []
            env_x = dict(ENV, COREQ_CACHE=os.path.join(tmp, "x-cache.db"))
            rx = subprocess.run([COREQ_RELEASE, cmd, "--format", "json", *extra, *opts, core],
                                capture_output=True, env=env_x, timeout=600)
            ra = a64(cmd, "--format", "json", *extra, *opts, core, timeout=600)
            if rx.returncode != 0 or ra.returncode != 0:
                differing.append(f"{name} {cmd}: exit {rx.returncode}/{ra.returncode} "
                                 f"{ra.stderr.decode(errors='replace')[:200]}")
                continue
            if rx.stdout == ra.stdout:
                same += 1
            elif TIMING.sub(rb'"\1":0', rx.stdout) == TIMING.sub(rb'"\1":0', ra.stdout):
                timing += 1
            else:
                differing.append(f"{name} {cmd}: output differs")
            if cmd == "stack" and not crash_chain_seen(name, ra.stdout, e):
                differing.append(f"{name}: crash chain {e.get('crash_chain')} not on the crashed thread")
    n = 2 * len(picked)
    ok(picked and not differing,
       f"info/stack JSON of {len(picked)} cores: {same} of {n} byte-identical to the x86_64 build's, "
       f"{timing} identical but for scan timings", differing)


def check_shared_cache(picked, tmp):
    """A cache (unwind tables, symbols, Rust indexes: serialised blobs)
    written by the x86_64 build is read by the aarch64 build, which then
    prints what the x86_64 build prints from the same warm cache."""
    cache = os.path.join(tmp, "shared-cache.db")
    env = dict(ENV, COREQ_CACHE=cache)
    bad = []
    for name, core, opts, _ in picked:
        if name.startswith("aarch64/"):
            continue
        subprocess.run([COREQ_RELEASE, "stack", "--format", "json", *opts, core], capture_output=True,
                       env=env, timeout=600)
        rx = subprocess.run([COREQ_RELEASE, "stack", "--format", "json", *opts, core], capture_output=True,
                            env=env, timeout=600)
        ra = subprocess.run([QEMU, A64, "stack", "--format", "json", *opts, core], capture_output=True,
                            env=env, timeout=600, preexec_fn=no_core)
        if rx.returncode or ra.returncode or TIMING.sub(rb'"\1":0', rx.stdout) != TIMING.sub(rb'"\1":0', ra.stdout):
            bad.append(f"{name}: exit {rx.returncode}/{ra.returncode}")
    ok(os.path.isfile(cache) and not bad,
       "the aarch64 build reads the x86_64 build's cache and prints the same stacks from it", bad)


def check_ingest(picked, tmp):
    dbs = {}
    for who, run in (("x86_64", x86), ("aarch64", a64)):
        db, cache = os.path.join(tmp, f"{who}.db"), os.path.join(tmp, f"{who}-cache.db")
        bad = []
        for name, core, opts, _ in picked:
            # ingest takes no --exe (it is for one core, ingest for many)
            opts = [o for i, o in enumerate(opts) if o != "--exe" and (i == 0 or opts[i - 1] != "--exe")]
            r = run("ingest", "--db", db, "--cache", cache, *opts, core, timeout=600)
            if r.returncode != 0:
                bad.append(f"{name}: exit {r.returncode} {r.stderr.decode(errors='replace')[:200]}")
        ok(not bad, f"{who} build ingests {len(picked)} cores", bad)
        dbs[who] = db
    for q in (["list-stacks", "--format", "json", "--limit", "100000"], ["buckets", "--format", "json"]):
        rx, ra = x86(*q, "--db", dbs["x86_64"]), a64(*q, "--db", dbs["aarch64"])
        ok(rx.returncode == 0 and rx.stdout.strip() and
           SEEN.sub(rb'"\1":""', rx.stdout) == SEEN.sub(rb'"\1":""', ra.stdout),
           f"after ingest, `{q[0]} --format json` of both databases is identical but for ingest times",
           [rx.stdout[:300], ra.stdout[:300], ra.stderr[:300]])


def check_hook(tmp, case, chain_check):
    """The aarch64 hook fed a corpus core through a pipe, with the kernel's
    arguments (%P %u %g %s %t %c %h %e)."""
    d = os.path.join(CORPUS, case)
    e = read_expect(os.path.join(d, "expect"))
    data = open(os.path.join(d, "core"), "rb").read()
    work = os.path.join(tmp, "hook-" + case.replace("/", "-"))
    store, db = os.path.join(work, "cores"), os.path.join(work, "coreq.db")
    args = ["hook", "--store", store, "--db", db, "--cache", os.path.join(work, "cache.db"),
            e.get("pid", "4242"), str(os.getuid()), str(os.getgid()), e["signal"], "1763700000",
            "18446744073709551615", "testhost", "victim"]
    r = subprocess.run([QEMU, A64, *args], input=data, capture_output=True, env=ENV, timeout=600,
                       preexec_fn=no_core)
    ok(r.returncode == 0, f"{case}: the aarch64 hook, fed the core through a pipe, exits 0",
       [r.returncode, r.stderr.decode(errors="replace")[-500:]])
    files = sorted(f for f in os.listdir(store) if not f.startswith(".")) if os.path.isdir(store) else []
    got = subprocess.run(["zstd", "-dc", os.path.join(store, files[0])], capture_output=True).stdout \
        if len(files) == 1 else b""
    ok(got == data, f"{case}: the hook stored one .zst file that is the core, byte for byte", files)
    try:
        con = sqlite3.connect(db)
        status = con.execute("SELECT status, nthreads FROM cores").fetchall()
        fns = [base_name(f) for (f,) in con.execute(
            "SELECT f.function FROM threads t JOIN frames f ON f.stack_id = t.stack_id "
            "WHERE t.crashed = 1 ORDER BY f.idx")]
        con.close()
    except sqlite3.Error as err:
        status, fns = [str(err)], []
    want = [("ok", int(e["threads"]))] if "threads" in e else [("ok", status[0][1] if status else None)]
    ok(status == want and want[0][1], f"{case}: the hook's row is fully analysed", status)
    if chain_check:
        chain = e.get("crash_chain", "").split()
        idx = [fns.index(c) if c in fns else -1 for c in chain]
        ok(chain and -1 not in idx and idx == sorted(idx),
           f"{case}: the hook's stored crashed stack holds the crash chain", [fns, chain])


def main():
    if not QEMU:
        ok(False, "qemu-aarch64 is installed (make deps)")
        done()
    r = subprocess.run(["file", "-b", A64], capture_output=True, text=True)
    ok("ARM aarch64" in r.stdout, f"{A64} is an aarch64 executable", r.stdout)
    r = a64("--version", timeout=60)
    ok(r.returncode == 0 and r.stdout.startswith(b"coreq "), "the aarch64 coreq runs under qemu-aarch64",
       r.stderr.decode(errors="replace"))
    check_units()
    picked = cases()
    with tempfile.TemporaryDirectory() as tmp:
        check_json(picked, tmp)
        check_shared_cache(picked, tmp)
        check_ingest(picked, tmp)
        # an x86_64 core (NT_FILE names its files, so the chain is named) and
        # one of qemu's aarch64 cores (no NT_FILE: the hook cannot name its
        # executable, so only the store and the row are checked)
        check_hook(tmp, "cores/abort_deep.O2", True)
        check_hook(tmp, "aarch64/threads8.O0.static", False)
    done()


main()
