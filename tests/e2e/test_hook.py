#!/usr/bin/env python3
"""`coreq hook`, the kernel.core_pattern pipe handler, fed corpus cores on
stdin with the arguments the kernel would pass (%P %u %g %s %t %c %h %e).

Oracles: the corpus expect files (pid, signal, threads, crash chain), the
test's own uid/gid (make-cores ran as this user), the arguments the test
passed, zstd -dc of the stored file against the original core bytes, the
xattrs read back by the OS, and sqlite3's own PRAGMA integrity_check."""
import json
import os
import re
import sqlite3
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

from coreq_test import coreq, done, ok, require_corpus, sanitizer_report, skip

T0 = 1763700000
NAME_RE = re.compile(r"^core\.(?P<comm>[^.]+)\.(?P<uid>\d+)\.(?P<boot>[0-9a-f]{32})\."
                     r"(?P<pid>\d+)\.(?P<usec>\d+)\.zst$")


def hook(tmp, core_bytes, pid, sig, t, rlimit="18446744073709551615", comm="victim",
         host="testhost", extra=(), binary=None, input_path=None):
    """The hook fed core_bytes through a pipe, as the kernel does, or with
    input_path (a regular file) as its standard input."""
    args = ["hook", "--store", os.path.join(tmp, "cores"), "--db", os.path.join(tmp, "coreq.db"),
            "--cache", os.path.join(tmp, "cache.db"), *extra,
            str(pid), str(os.getuid()), str(os.getgid()), str(sig), str(t), str(rlimit), host, comm]
    cmd = [binary or os.environ.get("COREQ", "build/asan/coreq")] + args
    if input_path:
        with open(input_path, "rb") as f:
            return subprocess.run(cmd, stdin=f, capture_output=True, timeout=300)
    return subprocess.run(cmd, input=core_bytes, capture_output=True, timeout=300)


def rows(tmp, sql, *params):
    con = sqlite3.connect(os.path.join(tmp, "coreq.db"))
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def zstd_bytes(path):
    return subprocess.run(["zstd", "-dc", path], capture_output=True, check=True).stdout


def diag(r):
    return [f"exit {r.returncode}", "stdout: " + r.stdout.decode(errors="replace"),
            "stderr: " + r.stderr.decode(errors="replace")]


def stored_files(tmp):
    """The cores in the store (hidden names are the hook's analysis-slot locks)."""
    d = os.path.join(tmp, "cores")
    return sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []


def check_one(case, tmp):
    data = open(case["core"], "rb").read()
    pid, sig = int(case["pid"]), int(case["signal"])
    r = hook(tmp, data, pid, sig, T0, comm="abort_deep")
    err = r.stderr.decode(errors="replace")
    ok(r.returncode == 0 and not sanitizer_report(err), "hook of a corpus core: exit 0", diag(r))
    lines = err.splitlines()
    ok(len(lines) == 1 and lines[0].startswith("coreq hook: pid %d (abort_deep)" % pid)
       and "core 1 ok" in lines[0], "one log line per crash, saying what happened", lines)
    files = stored_files(tmp)
    m = NAME_RE.match(files[0]) if len(files) == 1 else None
    ok(m is not None and m["comm"] == "abort_deep" and int(m["uid"]) == os.getuid()
       and int(m["pid"]) == pid and int(m["usec"]) == T0 * 1000000,
       "one .zst file named core.COMM.UID.BOOTID.PID.USEC.zst as systemd-coredump names it", files)
    path = os.path.join(tmp, "cores", files[0]) if files else None
    ok(path is not None and zstd_bytes(path) == data, "zstd -dc of the stored file is the core, byte for byte")
    try:
        xa = {k: os.getxattr(path, k).decode() for k in os.listxattr(path) if k.startswith("user.coredump.")}
    except OSError as e:
        xa = {"error": str(e)}
    want = {"user.coredump.pid": str(pid), "user.coredump.uid": str(os.getuid()),
            "user.coredump.gid": str(os.getgid()), "user.coredump.signal": str(sig),
            "user.coredump.timestamp": str(T0 * 1000000), "user.coredump.hostname": "testhost",
            "user.coredump.comm": "abort_deep", "user.coredump.rlimit": "18446744073709551615"}
    if "error" in xa and "Operation not supported" in xa["error"]:
        skip("xattrs of the stored core", "the file system refuses user xattrs")
    else:
        ok(xa == want, "the stored core carries systemd's user.coredump.* xattrs", [xa, want])
    got = rows(tmp, "SELECT pid, uid, gid, signal, signal_name, timestamp, hostname, comm, rlimit, "
                    "source, stored_path, status, nthreads, bucket_id IS NOT NULL, meta_conflicts "
                    "FROM cores")
    exp = [(pid, os.getuid(), os.getgid(), sig, "SIGABRT", T0, "testhost", "abort_deep", -1, "hook",
            path, "ok", int(case["threads"]), 1, None)]
    ok(got == exp, "the cores row: fully analysed, metadata as the kernel's arguments said", [got, exp])
    fns = [f for (f,) in rows(tmp, "SELECT f.function FROM threads t JOIN frames f ON f.stack_id = t.stack_id "
                                   "WHERE t.crashed = 1 ORDER BY f.idx")]
    chain = case["crash_chain"].split()
    idx = [fns.index(c) if c in fns else -1 for c in chain]
    ok(-1 not in idx and idx == sorted(idx), "the stored crashed stack holds the corpus crash chain in order",
       [fns, chain])
    return path


def check_rerun(tmp, path):
    r = coreq("ingest", "--db", os.path.join(tmp, "coreq.db"), "--format", "json", path)
    ok(r.returncode == 0 and '"duplicates":1' in r.stdout and rows(tmp, "SELECT count(*) FROM cores") == [(1,)],
       "ingesting the hook's stored file again is a duplicate", r.stdout + r.stderr)


def check_concurrent(cases, tmp):
    small = [c for c in cases if int(c.get("threads", "1") or 1) <= 10 and c["case"] != "real-sleep"]
    picked = small[:16]
    if len(picked) < 16:
        ok(False, "16 distinct small corpus cores exist", [c["case"] for c in small])
        return
    datas = [open(c["core"], "rb").read() for c in picked]

    def go(i):
        c = picked[i]
        # 16 analysis slots: all 16 run at once (the storm test covers fewer slots)
        return hook(tmp, datas[i], int(c["pid"]), int(c["signal"]), T0 + i, comm=f"c{i}",
                    extra=["--max-analyses", "16"])

    with ThreadPoolExecutor(16) as ex:
        results = list(ex.map(go, range(16)))
    bad = [(picked[i]["case"], r.returncode, r.stderr.decode(errors="replace")[-300:])
           for i, r in enumerate(results) if r.returncode != 0]
    ok(not bad, "16 concurrent hooks, 16 different cores: all exit 0", bad)
    files = [f for f in stored_files(tmp)]
    ok(len(files) == 16 and all(NAME_RE.match(f) for f in files),
       "16 stored .zst files, no temporary file left", files)
    got = rows(tmp, "SELECT pid, status, nthreads, stored_path IS NOT NULL, meta_conflicts FROM cores ORDER BY pid")
    # Each hook was told comm "cI": the core's own comm wins, the disagreement is recorded.
    exp = sorted((int(c["pid"]), "ok", int(c["threads"]), 1,
                  f"comm: core {os.path.basename(c['exe'])[:15]}, hook c{i}") for i, c in enumerate(picked))
    ok(got == exp, "16 rows, each fully analysed with its own pid, thread count and comm conflict", [got, exp])
    ok(rows(tmp, "PRAGMA integrity_check") == [("ok",)], "PRAGMA integrity_check is ok after 16 concurrent hooks")
    same = all(zstd_bytes(os.path.join(tmp, "cores", f)) == datas[int(NAME_RE.match(f)["comm"][1:])]
               for f in files)
    ok(same, "every stored file decompresses to the core its hook was given")


def check_corrupt(case, tmp):
    data = open(case["core"], "rb").read()[:300]
    r = hook(tmp, data, 4242, 11, T0, comm="broken")
    err = r.stderr.decode(errors="replace")
    ok(r.returncode == 1 and not sanitizer_report(err) and len(err.splitlines()) == 1,
       "a truncated core: exit 1, one log line", diag(r))
    files = stored_files(tmp)
    path = os.path.join(tmp, "cores", files[0]) if len(files) == 1 else None
    ok(path is not None and zstd_bytes(path) == data, "the truncated core is stored anyway, as received", files)
    got = rows(tmp, "SELECT status, message, pid, signal, stored_path, nthreads FROM cores")
    ok(len(got) == 1 and got[0][0] == "failed" and got[0][1] and got[0][2:] == (4242, 11, path, 0),
       "its row says failed, why, and the kernel's metadata", got)
    reason = got[0][1] if got else "?"
    ok(reason in err, "the log line gives the reason", [err, reason])
    r = coreq("ingest", "--db", os.path.join(tmp, "coreq.db"), path)
    ok(r.returncode == 1 and r.stderr.strip() == f"coreq: {path}: {reason}",
       "a later `coreq ingest` of the stored file reports the same reason", [r.stderr, reason])
    ok(rows(tmp, "SELECT count(*), min(status) FROM cores") == [(1, "failed")],
       "and the failed row stays the only row")


def check_rlimit_zero(case, tmp):
    data = open(case["core"], "rb").read()
    r = hook(tmp, data, 777, 6, T0, rlimit=0, comm="nocore")
    ok(r.returncode == 0 and stored_files(tmp) == [], "RLIMIT_CORE 0: nothing stored", diag(r))
    got = rows(tmp, "SELECT pid, status, comm, rlimit FROM cores")
    ok(got == [(777, "not_stored", "nocore", 0)], "RLIMIT_CORE 0: the crash is recorded as not_stored", got)


def check_max_size(case, tmp):
    data = open(case["core"], "rb").read()
    limit = len(data) // 2
    r = hook(tmp, data, int(case["pid"]), int(case["signal"]), T0, extra=["--max-size", str(limit)])
    err = r.stderr.decode(errors="replace")
    files = stored_files(tmp)
    got = zstd_bytes(os.path.join(tmp, "cores", files[0])) if len(files) == 1 else b""
    ok(r.returncode == 0 and got == data[:limit] and "truncated" in err,
       f"--max-size {limit}: the first {limit} bytes are stored and the log says truncated", diag(r))
    st = rows(tmp, "SELECT status FROM cores")
    ok(st == [("partial",)], "a core cut at --max-size is analysed as partial", st)
    # Given as a regular file, the core is still analysed as what was stored, not the whole file.
    with tempfile.TemporaryDirectory(prefix="coreq-hookcut-") as tmp2:
        r = hook(tmp2, None, int(case["pid"]), int(case["signal"]), T0,
                 extra=["--max-size", str(limit), "--format", "json"], input_path=case["core"])
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            doc = {}
        st = rows(tmp2, "SELECT status FROM cores")
        ok(r.returncode == 0 and doc.get("analysed_from") == "stored file" and st == [("partial",)],
           "a regular file cut at --max-size: the stored part is analysed (the stored file), as partial",
           [diag(r), st])


def check_memory_budget(cases, tmp):
    release = os.environ.get("COREQ_RELEASE")
    case = cases.get("threads-1000")
    if not release or not os.path.exists(release) or not case:
        skip("memory budget", "needs the release build and the threads-1000 core")
        return
    data = open(case["core"], "rb").read()
    r = hook(tmp, data, int(case["pid"]), 6, T0, extra=["--memory-limit", "2000000"], binary=release)
    got = rows(tmp, "SELECT id, status, message FROM cores")
    ok(r.returncode == 1 and len(got) == 1 and got[0][1] == "failed" and got[0][2],
       "analysis over its 2 MB memory budget: the row says failed and why", [diag(r), got])
    files = stored_files(tmp)
    path = os.path.join(tmp, "cores", files[0]) if files else ""
    r = coreq("ingest", "--db", os.path.join(tmp, "coreq.db"), path, timeout=300)
    got2 = rows(tmp, "SELECT id, status, nthreads, stored_path, source FROM cores")
    ok(r.returncode == 0 and got and got2 == [(got[0][0], "ok", int(case["threads"]), path, "hook")],
       "a later `coreq ingest` of the stored file completes the same row", [r.stderr, got2])


def check_relative_store(case, tmp):
    """--store and --db given relative to the working directory."""
    data = open(case["core"], "rb").read()
    cmd = [os.path.abspath(os.environ.get("COREQ", "build/asan/coreq")), "hook", "--store", "rel/cores", "--db", "rel/coreq.db",
           "--cache", "rel/cache.db", case["pid"], str(os.getuid()), str(os.getgid()), case["signal"], str(T0),
           "18446744073709551615", "h", "c"]
    r = subprocess.run(cmd, input=data, capture_output=True, cwd=tmp, timeout=300)
    con = sqlite3.connect(os.path.join(tmp, "rel", "coreq.db"))
    got = con.execute("SELECT status, stored_path FROM cores").fetchall()
    con.close()
    ok(r.returncode == 0 and len(got) == 1 and got[0][0] == "ok" and os.path.isabs(got[0][1])
       and os.path.isfile(got[0][1]), "relative --store/--db: analysed, the row names the file by absolute path",
       [diag(r), got])


def check_confined(case, tmp):
    """The hook writes only its store and database (and cache), never $HOME or /tmp."""
    home, tdir = os.path.join(tmp, "home"), os.path.join(tmp, "tmpdir")
    os.makedirs(home)
    os.makedirs(tdir)
    data = open(case["core"], "rb").read()
    env = dict(os.environ, HOME=home, TMPDIR=tdir, XDG_CACHE_HOME=home, XDG_STATE_HOME=home)
    env.pop("COREQ_CACHE", None)
    env.pop("COREQ_DB", None)
    state = os.path.join(tmp, "state")
    cmd = [os.environ.get("COREQ", "build/asan/coreq"), "hook", "--store", os.path.join(state, "cores"),
           "--db", os.path.join(state, "coreq.db"), "--cache", os.path.join(state, "cache.db"),
           case["pid"], "0", "0", case["signal"], str(T0), "18446744073709551615", "h", "c"]
    with open(case["core"], "rb") as f:  # a real file on stdin: the kernel gives a pipe, a file works too
        r = subprocess.run(cmd, stdin=f, capture_output=True, env=env, timeout=300)
    left = os.listdir(home) + os.listdir(tdir)
    top = sorted(n for n in os.listdir(state) if not n.endswith(("-wal", "-shm")))
    ok(r.returncode == 0 and left == [] and top == ["cache.db", "coreq.db", "cores"],
       "nothing written outside the store, the database and the cache", [diag(r), left, top])
    del data


def check_exact_limit(case, tmp):
    data = open(case["core"], "rb").read()
    r = hook(tmp, data, int(case["pid"]), int(case["signal"]), T0, extra=["--max-size", str(len(data))])
    err = r.stderr.decode(errors="replace")
    st = rows(tmp, "SELECT status FROM cores")
    ok(r.returncode == 0 and "truncated" not in err and st == [("ok",)],
       "--max-size exactly the core's size: stored whole, not called truncated", [diag(r), st])


def check_keep_free(case, tmp):
    data = open(case["core"], "rb").read()
    r = hook(tmp, data, 4343, 6, T0, comm="nofree", extra=["--keep-free", str(1 << 62)])
    got = rows(tmp, "SELECT pid, status, message FROM cores")
    ok(r.returncode == 0 and stored_files(tmp) == [] and len(got) == 1 and got[0][:2] == (4343, "not_stored")
       and "keep-free" in (got[0][2] or ""), "--keep-free beyond the free space: nothing stored, the crash recorded",
       [diag(r), got])


def check_full_disk(case, tmp):
    """A store that fills up: the crash is still recorded, no partial file left."""
    store = os.path.join(tmp, "small")
    os.makedirs(store)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", store], capture_output=True, text=True)
    if m.returncode != 0:
        skip("a full store", "cannot mount a small tmpfs here: " + m.stderr.strip()[:100])
        return
    try:
        data = open(case["core"], "rb").read()
        cmd = [os.environ.get("COREQ", "build/asan/coreq"), "hook", "--store", store,
               "--db", os.path.join(tmp, "coreq.db"), "--cache", os.path.join(tmp, "cache.db"),
               "--keep-free", "0", "5151", "0", "0", "11", str(T0), "18446744073709551615", "h", "full"]
        r = subprocess.run(cmd, input=os.urandom(4 << 20) + data, capture_output=True, timeout=300)
        got = rows(tmp, "SELECT pid, status, message FROM cores")
        left = [n for n in os.listdir(store) if not n.startswith(".analysis-slot-")]  # lock files
        ok(r.returncode == 1 and left == [] and len(got) == 1 and got[0][:2] == (5151, "not_stored")
           and got[0][2], "a store that fills up: exit 1, no partial file, a not_stored row saying why",
           [diag(r), got, left])
    finally:
        subprocess.run(["umount", store], capture_output=True)


def check_no_stdio(case, tmp):
    """The kernel may start the hook with only fd 0: nothing may land on fds 1 and 2."""
    data = open(case["core"], "rb").read()
    coreq_bin = os.path.abspath(os.environ.get("COREQ", "build/asan/coreq"))
    sh = (f'exec {coreq_bin} hook --store {tmp}/cores --db {tmp}/coreq.db --cache {tmp}/cache.db '
          f'{case["pid"]} {os.getuid()} {os.getgid()} {case["signal"]} {T0} 18446744073709551615 h c 1>&- 2>&-')
    r = subprocess.run(["sh", "-c", sh], input=data, capture_output=True, timeout=300)
    files = stored_files(tmp)
    same = len(files) == 1 and zstd_bytes(os.path.join(tmp, "cores", files[0])) == data
    st = rows(tmp, "SELECT status FROM cores")
    ok(r.returncode == 0 and same and st == [("ok",)],
       "started with stdout and stderr closed: the stored core is intact and analysed", [diag(r), st])
    mode = os.stat(os.path.join(tmp, "coreq.db")).st_mode & 0o777
    ok(mode & 0o077 == 0, f"the database is readable by its owner only (mode {mode:o})")


def check_duplicate(case, tmp):
    """The same core hooked twice: the second copy has no row, so it is not kept."""
    data = open(case["core"], "rb").read()
    reps = []
    for _ in range(2):
        r = hook(tmp, data, int(case["pid"]), int(case["signal"]), T0, extra=["--format", "json"])
        try:
            reps.append(json.loads(r.stdout))
        except ValueError:
            reps.append({})
    got = rows(tmp, "SELECT count(*), min(stored_path) FROM cores")
    files = [os.path.join(tmp, "cores", f) for f in stored_files(tmp)]
    ok(r.returncode == 0 and [x.get("status") for x in reps] == ["ok", "duplicate"],
       "the same core hooked twice: exit 0, the second reported a duplicate", [diag(r), reps])
    ok(got == [(1, reps[0].get("stored_path"))] and files == [reps[0].get("stored_path")],
       "one row, and one stored copy: the row's; the duplicate's copy is removed", [got, files, reps])


def check_raw_copy(case):
    """By default the analysis reads the stored file (seekable, frame by frame);
    with room for a raw copy (--raw-memory), the copy kept in memory while the
    stored copy is compressed, or the stored file when the copy does not fit;
    given the core as a regular file, that file, unless only part of it is stored.
    Either way the stored file is the core byte for byte and the analysis is
    the same."""
    data = open(case["core"], "rb").read()
    chain = case["crash_chain"].split()
    runs = (([], "stored file", "default: no raw copy", None),
            (["--raw-memory", str(len(data))], "memory", "room for exactly the core", None),
            (["--raw-memory", str(len(data) // 3)], "stored file", "a third of the core's room (given up midway)", None),
            (["--raw-memory", "0"], "stored file", "--raw-memory 0", None),
            ([], "input file", "the core as a regular file on stdin", case["core"]),
            (["--raw-memory", "0"], "input file", "a regular file with --raw-memory 0 (no copy needed)", case["core"]))
    stacks = []
    for extra, source, what, input_path in runs:
        with tempfile.TemporaryDirectory(prefix="coreq-hookraw-") as tmp:
            r = hook(tmp, data, int(case["pid"]), int(case["signal"]), T0, extra=["--format", "json", *extra],
                     input_path=input_path)
            try:
                doc = json.loads(r.stdout)
            except ValueError:
                doc = {}
            files = stored_files(tmp)
            stored = zstd_bytes(os.path.join(tmp, "cores", files[0])) if len(files) == 1 else b""
            ok(r.returncode == 0 and doc.get("analysed_from") == source and doc.get("status") == "ok",
               f"{what}: analysed from the {source}, status ok", diag(r))
            ok(stored == data, f"{what}: zstd -dc of the stored file is the core, byte for byte")
            fns = [f for (f,) in rows(tmp, "SELECT f.function FROM threads t JOIN frames f ON f.stack_id = t.stack_id "
                                           "WHERE t.crashed = 1 ORDER BY f.idx")]
            idx = [fns.index(c) if c in fns else -1 for c in chain]
            ok(-1 not in idx and idx == sorted(idx), f"{what}: the crashed stack holds the corpus crash chain",
               [fns, chain])
            stacks.append(fns)
    ok(all(s == stacks[0] for s in stacks), "the same crashed stack from the raw copy and from the stored file",
       stacks)


def check_usage():
    for args, what in ((["hook"], "no arguments"), (["hook", "x", "0", "0", "6", "1", "0", "h", "c"], "a bad pid"),
                       (["hook", "--timeout", "soon", "1", "0", "0", "6", "1", "0", "h", "c"], "a bad --timeout")):
        r = coreq(*args, stdin=subprocess.DEVNULL)
        ok(r.returncode == 2 and r.stderr.startswith("coreq hook:"), f"hook with {what}: usage error, exit 2",
           r.stderr)
    r = coreq("hook", "--help")
    ok(r.returncode == 0 and "core_pattern" in r.stdout and "%P %u %g %s %t %c %h %e" in r.stdout,
       "hook --help shows the core_pattern line")


def main():
    cases = {c["case"]: c for c in require_corpus()}
    check_usage()
    with tempfile.TemporaryDirectory(prefix="coreq-hook-") as tmp:
        path = check_one(cases["abort_deep.O0"], tmp)
        check_rerun(tmp, path)
    with tempfile.TemporaryDirectory(prefix="coreq-hook16-") as tmp:
        check_concurrent(list(cases.values()), tmp)
    check_raw_copy(cases["abort_deep.O2"])
    with tempfile.TemporaryDirectory(prefix="coreq-hookbad-") as tmp:
        check_corrupt(cases["segv_null.O0"], tmp)
    with tempfile.TemporaryDirectory(prefix="coreq-hook0-") as tmp:
        check_rlimit_zero(cases["fpe.O0"], tmp)
    with tempfile.TemporaryDirectory(prefix="coreq-hookmax-") as tmp:
        check_max_size(cases["abort_deep.O2"], tmp)
    with tempfile.TemporaryDirectory(prefix="coreq-hookmem-") as tmp:
        check_memory_budget(cases, tmp)
    for name, fn, c in (("exact", check_exact_limit, "abort_deep.O2"), ("keepfree", check_keep_free, "fpe.O0"),
                        ("full", check_full_disk, "abort_deep.O0"), ("nostdio", check_no_stdio, "fpe.O2"),
                        ("dup", check_duplicate, "segv_null.O2")):
        with tempfile.TemporaryDirectory(prefix=f"coreq-hook{name}-") as tmp:
            fn(cases[c], tmp)
    with tempfile.TemporaryDirectory(prefix="coreq-hookrel-") as tmp:
        check_relative_store(cases["fpe.O0"], tmp)
    with tempfile.TemporaryDirectory(prefix="coreq-hookconf-") as tmp:
        check_confined(cases["fpe.O2"], tmp)
    done()


if __name__ == "__main__":
    main()
