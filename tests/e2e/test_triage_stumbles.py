#!/usr/bin/env python3
"""Stumbles a new user hit (issue 19), each checked on real corpus cores.

1. `coreq ingest DIR` looks in subdirectories (down to --max-depth), and a
   directory without cores says "0 core files in DIR".
2. One rule for where the files are, the same for the service and a person:
   /etc/coreq/coreq.conf ($COREQ_CONFIG in tests) names db, cache, store and
   rules for every command; the environment overrides it; without either,
   root uses /var/lib/coreq (what the service and the hook write) and a user
   the XDG paths; every "nothing found" names the database it read.
4. Symbols are not lost in silence: a module whose file has another
   build-id than the core's (an executable rebuilt after the crash, or a
   wrong --exe) gets one warning and its frames are marked (text
   "build-id mismatch", JSON module_status "mismatch"); --exe, --sysroot and
   --debug-dir naming a missing path are refused (exit 2).
5. `coreq show ID` lists the suspended async chains ingest stored (folly
   coroutines, Rust futures), in text and JSON, as `coreq stack` does.
6. A merged async stack says where one thread's frames end and another's
   begin: a `--- blocked thread TID (F waits here) ---` line in text, and a
   `thread` field on every JSON frame.  The corpus program async_coro
   "cross" runs a coroutine chain on a worker thread that the main thread
   (tid = pid) blocks on in run_cross().
7. The command line behaves the same everywhere: -h and --help on every
   subcommand, --version and -V, usage errors (unknown command or option, a
   missing value) on stderr with exit 2 in one line plus the --help hint,
   "no such id" exits 1 in `show` and `list-stacks --core` alike, `cores
   --bucket 999` says "no cores in bucket 999" and names the database, and
   `lws decode FILE` reads the file.
8. Times: --since/--until take relative times (-7d, 2h ago, yesterday) as
   coredumpctl does; a bucket's counts and example core are those of the
   cores in the window; a core without a captured crash time says so:
   its file's modification time stands in (time_source "file"), and one
   read from standard input has only its ingest time (time_source
   "ingest", timestamp null).
10. `stack` output: a header says what crashed (pid, exe, signal, si_code,
   fault address); inline frames print their pc too, marked [inline]; the
   crashed thread comes first, then the others by tid (read from the
   core's notes).
"""
import json
import subprocess
import re
import struct

import elfcore
import os
import shutil
import sqlite3
import tempfile

from coreq_test import COREQ, CORPUS, coreq, done, ok, read_expect, require_corpus


def stumble_1(cases, tmp):
    top = os.path.join(tmp, "spool")
    deep = os.path.join(top, "host-a", "2026", "11")
    os.makedirs(deep)
    os.makedirs(os.path.join(top, "empty"))
    os.makedirs(os.path.join(top, ".hidden"))
    placed = {"segv_null.O2": deep, "fpe.O2": os.path.join(top, "host-a"), "abort_deep.O2": top}
    for name, where in placed.items():
        shutil.copy(cases[name]["core"], os.path.join(where, name + ".core"))
    shutil.copy(cases["sighandler.O2"]["core"], os.path.join(top, ".hidden", "x.core"))
    db = os.path.join(tmp, "rec.db")
    r = coreq("ingest", "--db", db, "--no-cache", "--format", "json", top, timeout=300)
    got = json.loads(r.stdout)["results"] if r.returncode == 0 else []
    ok(len(got) == len(placed) and all(x["status"] == "ingested" for x in got),
       f"ingest DIR finds the {len(placed)} cores in its subdirectories (not the hidden one)",
       r.stdout + r.stderr)
    db2 = os.path.join(tmp, "rec1.db")
    r = coreq("ingest", "--db", db2, "--no-cache", "--format", "json", "--max-depth", "1", top,
              timeout=300)
    got = json.loads(r.stdout)["results"] if r.returncode == 0 else []
    ok(sorted(os.path.basename(x["path"]) for x in got) == ["abort_deep.O2.core", "fpe.O2.core"],
       "--max-depth 1 stops one level down", r.stdout)
    r = coreq("ingest", "--db", db2, os.path.join(top, "empty"))
    ok(r.returncode == 0 and r.stdout.strip() == f"0 core files in {os.path.join(top, 'empty')}",
       "an empty directory says so", r.stdout + r.stderr)


def stumble_8(cases, tmp):
    import time
    db = os.path.join(tmp, "times.db")
    src = os.path.join(CORPUS, "cores", "bucket-100")
    facts = read_expect(os.path.join(src, "expect"))
    sites = facts["sites"].split()
    same = [os.path.join(src, f"core-{i:03d}") for i, s in enumerate(sites) if s == "f"][:2]
    r = coreq("ingest", "--db", db, "--no-cache", *same, timeout=300)
    ok(r.returncode == 0, "two cores of one crash site ingested", r.stderr)
    old = int(time.time()) - 30 * 86400
    con = sqlite3.connect(db)
    ids = [i for (i,) in con.execute("SELECT id FROM cores ORDER BY id")]
    con.execute("UPDATE cores SET timestamp = ?, time_source = 'capture' WHERE id = ?", (old, ids[0]))
    con.commit()
    con.close()

    def buckets(*args):
        r = coreq("buckets", "--db", db, "--format", "json", *args)
        return r, (json.loads(r.stdout)["buckets"] if r.returncode == 0 else None)

    r, b = buckets()
    ok(b and b[0]["count"] == 2, "both cores in one bucket", r.stdout + r.stderr)
    for since in ("-7d", "2h ago", "3 days ago", "yesterday", "today"):
        r, b = buckets("--since", since)
        ok(b and len(b) == 1 and b[0]["count"] == 1 and b[0]["example_core"] == ids[1],
           f"--since '{since}': the window's count (1) and example core", r.stdout + r.stderr)
    r, b = buckets("--until", "-7d")
    ok(b and b[0]["count"] == 1 and b[0]["example_core"] == ids[0], "--until -7d: the old core only",
       r.stdout + r.stderr)
    r, b = buckets("--since", "-40d", "--until", "-20d")
    ok(b and b[0]["count"] == 1, "a window of both", r.stdout + r.stderr)
    for bad in ("tomorrow", "-7x", "7d"):
        r = coreq("buckets", "--db", db, "--since", bad)
        ok(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 2, f"--since '{bad}' is a usage error",
           r.stderr)
    r = coreq("show", "--db", db, "--format", "json", str(ids[1]))
    core = json.loads(r.stdout)["core"] if r.returncode == 0 else {}
    mtime = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.stat(same[1]).st_mtime))
    ok(core.get("time_source") == "file" and core.get("timestamp") == mtime,
       f"a core file without a captured time: its modification time ({mtime}), time_source file",
       r.stdout[:300])
    r = coreq("show", "--db", db, "--format", "json", str(ids[0]))
    core = json.loads(r.stdout)["core"] if r.returncode == 0 else {}
    ok(core.get("time_source") == "capture", "one with a time says capture", r.stdout[:300])
    r = coreq("show", "--db", db, str(ids[1]))
    ok(f"time:        {mtime} (the core file's modification time: no crash time was captured)"
       in r.stdout, "text says the time is the file's, not a crash time", r.stdout[:600])
    r = coreq("cores", "--db", db)
    rows = [ln for ln in r.stdout.splitlines() if ln.split()[:1] == [str(ids[1])]]
    ok(rows and rows[0].split()[1] == mtime + "~"
       and "~ the core file's modification time: no crash time was captured" in r.stdout,
       "cores marks the file's time ~ and says what ~ means", r.stdout[-600:])
    # Standard input: no file, so only the ingest time, marked ?.
    piped = os.path.join(tmp, "piped.db")
    r = coreq("ingest", "--db", piped, "--no-cache", "-", stdin=open(same[1], "rb"), timeout=300)
    r = coreq("show", "--db", piped, "--format", "json", "1")
    core = json.loads(r.stdout)["core"] if r.returncode == 0 else {}
    ok(core.get("time_source") == "ingest" and core.get("timestamp") is None,
       "a core from standard input says time_source ingest, no timestamp", r.stdout[:300])
    r = coreq("show", "--db", piped, "1")
    ok("time:        unknown" in r.stdout, "text says the crash time is unknown", r.stdout[:600])
    r = coreq("cores", "--db", piped)
    ok("? when it was ingested" in r.stdout and "Z? " in r.stdout,
       "cores marks the ingest time ?", r.stdout[-600:])


def stumble_2(cases, tmp):
    conf = os.path.join(tmp, "coreq.conf")
    cdb, ccache, crules = (os.path.join(tmp, n) for n in ("conf.db", "conf-cache.db", "conf.rules"))
    shutil.copy(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "dist", "coreq.rules"), crules)
    with open(crules, "a") as f:
        f.write("# the site's own rules, named by coreq.conf\n")
    open(conf, "w").write(f"# coreq's files\ndb = {cdb}\ncache={ccache}  # comment\nrules = {crules}\n")
    env = dict(os.environ, COREQ_CONFIG=conf)
    for k in ("COREQ_DB", "COREQ_CACHE", "COREQ_RULES", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env.pop(k, None)

    def run(*args, e=env):
        return subprocess.run([COREQ, *args], capture_output=True, text=True, env=e, timeout=300)

    r = run("cores")
    ok(r.returncode == 1 and r.stderr.strip() == f"coreq: {cdb}: no such database",
       "a query reads the database the configuration names", r.stderr)
    r = run("ingest", cases["segv_null.O2"]["core"])
    ok(r.returncode == 0 and os.path.exists(cdb) and os.path.exists(ccache),
       "ingest writes the configured database and cache", r.stderr)
    r = run("cores")
    ok(r.returncode == 0 and cases["segv_null.O2"]["exe"] in r.stdout, "cores then lists it", r.stdout)
    r = run("buckets", "--rules")
    ok(r.returncode == 0 and "named by coreq.conf" in r.stdout, "the configured rules are in force",
       (r.stdout + r.stderr)[:300])
    other = os.path.join(tmp, "env.db")
    r = run("cores", e=dict(env, COREQ_DB=other))
    ok(r.returncode == 1 and other in r.stderr, "$COREQ_DB overrides the file", r.stderr)
    r = run("cores", "--pid", "1")
    ok(f"(database {cdb})" in r.stdout, "an empty answer names the database", r.stdout)
    bare = dict(env, COREQ_CONFIG=os.path.join(tmp, "none.conf"))
    if os.geteuid() == 0 and not os.path.exists("/var/lib/coreq/coreq.db"):
        r = run("cores", e=bare)
        ok(r.returncode == 1 and r.stderr.strip() == "coreq: /var/lib/coreq/coreq.db: no such database",
           "root with no configuration reads the service's /var/lib/coreq/coreq.db", r.stderr)
    if os.geteuid() == 0:
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        os.chmod(tmp, 0o755)
        nb = os.path.join(tmp, "coreq-nobody")
        shutil.copy(COREQ, nb)
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", nb, "cores"],
                           capture_output=True, text=True, env=dict(bare, HOME=home), timeout=60)
        ok(r.returncode == 1 and
           r.stderr.strip() == f"coreq: {home}/.local/state/coreq/coreq.db: no such database",
           "a user with no configuration reads ~/.local/state/coreq/coreq.db", r.stderr)


def stumble_4(cases, tmp):
    case = cases["segv_null.O2"]
    other = os.path.join(os.path.dirname(os.path.dirname(case["exe"])), "O0", "segv_null")
    root = os.path.join(tmp, "sysroot")
    os.makedirs(os.path.dirname(root + case["exe"]))
    shutil.copy(other, root + case["exe"])  # the program rebuilt after the crash
    for how, args in (("a rebuilt executable", ["--sysroot", root]), ("a wrong --exe", ["--exe", other])):
        r = coreq("stack", *args, case["core"], timeout=300)
        warn = [l for l in r.stderr.splitlines() if "build-id differs" in l]
        ok(r.returncode == 0 and len(warn) == 1, f"{how}: one warning", r.stderr)
        ok("build-id mismatch" in r.stdout, f"{how}: its frames are marked", r.stdout[:600])
        j = json.loads(coreq("stack", "--format", "json", *args, case["core"], timeout=300).stdout)
        ok(j["threads"][0]["frames"][0]["module_status"] == "mismatch", f"{how}: JSON says mismatch")
    for opt, path in (("--exe", "/nonexistent/app"), ("--sysroot", "/nonexistent"),
                      ("--debug-dir", "/nonexistent"), ("--debug-dir", other)):
        r = coreq("stack", opt, path, case["core"])
        ok(r.returncode == 2 and opt in r.stderr and path in r.stderr and r.stdout == "",
           f"{opt} {path} is refused", r.stderr)


def stumble_5(cases, tmp):
    db = os.path.join(tmp, "suspended.db")
    for name in ("async_coro-suspended.O2fp", "rust_async.O2"):
        if name not in cases:
            continue
        core = cases[name]["core"]
        r = coreq("ingest", "--db", db, "--no-cache", "--format", "json", core, timeout=300)
        cid = json.loads(r.stdout)["results"][0]["core_id"] if r.returncode == 0 else None
        live = json.loads(coreq("stack", "--no-cache", "--format", "json", core, timeout=300).stdout)
        want = [(c["kind"], [f["function"] for f in c["frames"]]) for c in live["suspended"]]
        r = coreq("show", "--db", db, "--format", "json", str(cid))
        shown = json.loads(r.stdout).get("suspended", []) if r.returncode == 0 else []
        got = [(c["kind"], [f["function"] for f in c["frames"]]) for c in shown]
        ok(want and got == want, f"{name}: show lists the {len(want)} suspended chains stack lists",
           str((got[:2], want[:2])))
        r = coreq("show", "--db", db, str(cid))
        ok(r.stdout.count("\nSuspended ") == len(want), f"{name}: and in text", r.stdout[-800:])


def stumble_6(cases):
    case = cases["async_coro-cross.O2fp"]
    pid = int(case["pid"])
    r = coreq("stack", case["core"], timeout=300)
    seps = [l for l in r.stdout.splitlines() if l.strip().startswith("--- blocked thread")]
    ok(r.returncode == 0 and len(seps) == 1 and f"blocked thread {pid} " in seps[0]
       and "run_cross" in seps[0], "text marks the switch to the blocked main thread", r.stdout[-1500:])
    r = coreq("stack", "--format", "json", case["core"], timeout=300)
    doc = json.loads(r.stdout)
    crashed = doc["threads"][0]
    frames = crashed["frames"]
    switch = [i for i, f in enumerate(frames) if f.get("thread_switch")]
    ok(len(switch) == 1 and "run_cross" in (frames[switch[0]]["function"] or ""),
       "JSON: one switch, at run_cross")
    if switch:
        k = switch[0]
        ok(all(f["thread"] == crashed["tid"] for f in frames[:k]) and
           all(f["thread"] == pid for f in frames[k:]) and crashed["tid"] != pid,
           "every frame names its thread: the worker's, then the main thread's",
           str([(f["function"], f["thread"]) for f in frames]))
    ok(all(f["thread"] is None for s in doc["suspended"] for f in s["frames"]),
       "suspended chains are on no thread")


COMMANDS = ["info", "stack", "ingest", "list-stacks", "cores", "show", "buckets", "rebucket",
            "hook", "lws", "export", "push", "merge", "resymbolize", "debug", "dump", "flame"]


def stumble_7(cases, tmp):
    for c in COMMANDS:
        for flag in ("-h", "--help"):
            r = coreq(c, flag)
            ok(r.returncode == 0 and r.stdout.startswith(f"Usage: coreq {c}") and r.stderr == "",
               f"{c} {flag}: usage on stdout, exit 0", r.stdout[:100] + r.stderr)
    for flag in ("--version", "-V"):
        r = coreq(flag)
        ok(r.returncode == 0 and r.stdout.startswith("coreq "), f"coreq {flag}", r.stdout + r.stderr)
    for args, what in ((["nosuch"], "an unknown command"), (["stack", "--bogus"], "an unknown option"),
                       (["stack", "--format"], "a missing value"), (["cores", "-z"], "an unknown short option"),
                       (["buckets", "--since"], "a missing value")):
        r = coreq(*args)
        lines = r.stderr.strip().splitlines()
        good = r.returncode == 2 and r.stdout == "" and lines and lines[0].startswith("coreq")
        if args[0] != "nosuch":
            good = good and len(lines) == 2 and lines[1].startswith("Try 'coreq")
        ok(good, f"{what} ({' '.join(args)}): exit 2, one error line on stderr", r.stderr)
    db = os.path.join(tmp, "ids.db")
    coreq("ingest", "--db", db, "--no-cache", cases["segv_null.O2"]["core"], timeout=300)
    r1 = coreq("show", "--db", db, "999")
    r2 = coreq("list-stacks", "--db", db, "--core", "999")
    ok(r1.returncode == r2.returncode == 1 and "no core with id 999" in r1.stderr + r2.stderr
       and len(r2.stderr.strip().splitlines()) == 1,
       "no such id: exit 1 in show and list-stacks --core", r1.stderr + r2.stderr)
    r = coreq("cores", "--db", db, "--bucket", "999")
    ok(r.returncode == 0 and r.stdout.strip() == f"no cores in bucket 999 (database {db})",
       "cores --bucket 999 says which bucket and which database", r.stdout)
    enc = coreq("lws", "encode", "--size", "7520", "0x406651", "0x406852")
    path = os.path.join(tmp, "records.txt")
    open(path, "w").write(enc.stdout)
    r = coreq("lws", "decode", path)
    ok(r.returncode == 0 and r.stdout.strip() == "~b#size: 7520, 0x406651 0x406852",
       "lws decode FILE decodes the file's records", r.stdout + r.stderr)
    r = coreq("lws", "decode", os.path.join(tmp, "missing.txt"))
    ok(r.returncode == 1 and r.stderr.startswith(f"coreq: {os.path.join(tmp, 'missing.txt')}: cannot read"),
       "a missing FILE is refused by name", r.stderr)


def stumble_10(cases):
    case = cases["threads8.O2"]
    r = coreq("stack", case["core"], timeout=300)
    head = r.stdout.splitlines()[0] if r.stdout else ""
    ok(r.returncode == 0 and head.startswith(f"Core {case['core']}: pid {case['pid']} ({case['exe']})")
       and f"signal {case['signal']} (SIGABRT)" in head, "a header says what crashed", head)
    data = open(case["core"], "rb").read()
    tids = [struct.unpack_from("<i", n["desc"], elfcore.PRSTATUS_PID)[0]
            for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS]
    shown = [int(m.group(1)) for m in re.finditer(r"^Thread (\d+)", r.stdout, re.M)]
    ok(shown == [tids[0]] + sorted(tids[1:]), "the crashed thread first, then by tid",
       str((shown, tids)))
    seg = cases["segv_null.O2"]
    r = coreq("stack", "--debug-dir", os.path.join(CORPUS, "debug"), cases["threads8.O2"]["core"],
              timeout=300)
    inline = [l for l in r.stdout.splitlines() if l.endswith("[inline]")]
    ok(inline and all(re.match(r"^#\d+\s+0x[0-9a-f]{16} in ", l) for l in inline),
       f"inline frames print their pc ({len(inline)})", "\n".join(inline[:3]))


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-stumbles-")
    try:
        stumble_1(cases, tmp)
        stumble_2(cases, tmp)
        stumble_4(cases, tmp)
        stumble_5(cases, tmp)
        stumble_6(cases)
        stumble_7(cases, tmp)
        stumble_8(cases, tmp)
        stumble_10(cases)
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
