#!/usr/bin/env python3
"""The hook under a crash storm (issue 16): 64 `coreq hook` processes at once.

64 distinct corpus cores (bucket-100's) are piped into 64 concurrent hooks
with `--max-analyses 2` (the slots of the analysis semaphore).  Expected:
- every hook exits 0 and every core is stored (64 files in the store);
- every core has a row: analysed (`ok`) or `pending` (analysis deferred,
  with the reason), none lost, never more than 2 analyses at once (the
  pending rows prove hooks found every slot taken);
- `coreq ingest STORE` then completes every pending core: 64 analysed
  cores, the bucket counts add up to 64, and `PRAGMA integrity_check` is ok;
- a hook with `--max-analyses 0` only stores;
- run as root for a crash of uid 65534, the analysis runs as 65534 (what the
  hook reports the child wrote after dropping), still stores its result in
  the root-owned database, and leaves no spool directory behind;
- the same for uid 3000000000 (container ranges are mapped above 2^31 - 1),
  which runs as 3000000000, and for a uid no process can have
  (4294967295, (uid_t)-1), which runs as nobody's 65534: never as root.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import COREQ, CORPUS, coreq, done, ok, require_corpus, sanitizer_report

N = 64


def main():
    require_corpus()
    src = os.path.join(CORPUS, "cores", "bucket-100")
    cores = sorted(os.path.join(src, f) for f in os.listdir(src) if f.startswith("core-"))[:N]
    ok(len(cores) == N, f"{N} distinct cores to crash with")
    tmp = tempfile.mkdtemp(prefix="coreq-storm-")
    store, db = os.path.join(tmp, "cores"), os.path.join(tmp, "coreq.db")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:exitcode=99")
    try:
        procs = []
        for i, core in enumerate(cores):
            args = [COREQ, "hook", "--store", store, "--db", db, "--cache",
                    os.path.join(tmp, "cache.db"), "--max-analyses", "2", "--format", "json",
                    str(10000 + i), str(os.getuid()), str(os.getgid()), "6",
                    str(1763700000 + i), "18446744073709551615", "stormhost", "storm"]
            f = open(core, "rb")
            procs.append((subprocess.Popen(args, stdin=f, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, env=env), f))
        outs = []
        for p, f in procs:
            out, err = p.communicate(timeout=600)
            f.close()
            outs.append((p.returncode, out.decode(), err.decode()))
        bad = [o for o in outs if o[0] != 0 or sanitizer_report(o[2])]
        ok(not bad, f"all {N} hooks exit 0", "\n".join(o[2][-500:] for o in bad[:3]))
        reports = [json.loads(o[1]) for o in outs if o[0] == 0 and o[1].strip()]
        stored = [f for f in os.listdir(store) if f.endswith(".zst")]
        ok(len(stored) == N, f"every core is stored ({len(stored)} files)")
        con = sqlite3.connect(db)
        rows = dict(con.execute("SELECT status, count(*) FROM cores GROUP BY status").fetchall())
        con.close()
        ok(sum(rows.values()) == N and set(rows) <= {"ok", "pending"},
           f"one row per core, analysed or pending: {rows}")
        pending = [r for r in reports if r.get("status") == "pending"]
        ok(rows.get("pending", 0) > 0 and len(pending) == rows.get("pending", 0) and
           all("deferred" in (r.get("message") or "") for r in pending),
           f"hooks that found both slots taken deferred their analysis ({len(pending)})",
           json.dumps(pending[:2]))

        r = coreq("ingest", "--db", db, "--cache", os.path.join(tmp, "cache.db"), "--format",
                  "json", store, timeout=900)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "the follow-up ingest succeeds",
           r.stderr[-2000:])
        con = sqlite3.connect(db)
        rows = dict(con.execute("SELECT status, count(*) FROM cores GROUP BY status").fetchall())
        counted = con.execute("SELECT sum(count) FROM buckets").fetchone()[0]
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
        ok(rows == {"ok": N}, f"after it, all {N} are analysed: {rows}")
        ok(counted == N, f"the buckets count {counted} cores")
        ok(integrity == "ok", f"integrity_check: {integrity}")

        one = os.path.join(tmp, "one")
        args = [COREQ, "hook", "--store", one, "--db", os.path.join(tmp, "one.db"), "--max-analyses",
                "0", "--format", "json", "777", str(os.getuid()), str(os.getgid()), "6", "1763700000",
                "18446744073709551615", "h", "storm"]
        with open(cores[0], "rb") as f:
            p = subprocess.run(args, stdin=f, capture_output=True, text=True, env=env, timeout=300)
        rep = json.loads(p.stdout) if p.returncode == 0 else {}
        ok(rep.get("status") == "pending" and len(os.listdir(one)) >= 1,
           "--max-analyses 0 stores and leaves the core pending", p.stdout + p.stderr)
        if os.geteuid() == 0:
            drop = os.path.join(tmp, "drop")
            args = [COREQ, "hook", "--store", drop, "--db", os.path.join(tmp, "drop.db"),
                    "--cache", os.path.join(tmp, "drop-cache.db"), "--format", "json",
                    "778", "65534", "65534", "6", "1763700000", "18446744073709551615", "h", "victim"]
            with open(cores[1], "rb") as f:
                p = subprocess.run(args, stdin=f, capture_output=True, text=True, env=env, timeout=300)
            rep = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else {}
            ok(rep.get("analysis_uid") == 65534 and rep.get("status") == "ok",
               "as root, the analysis of uid 65534's crash runs as 65534 and is stored",
               p.stdout + p.stderr[-1000:])
            for i, (uid, gid, want) in enumerate([(3000000000, 3000000000, 3000000000),
                                                  (4294967295, 4294967295, 65534)]):
                high = os.path.join(tmp, f"high{i}")
                args = [COREQ, "hook", "--store", high, "--db", os.path.join(tmp, f"high{i}.db"),
                        "--cache", os.path.join(tmp, f"high{i}-cache.db"), "--format", "json",
                        str(790 + i), str(uid), str(gid), "6", "1763700000", "18446744073709551615",
                        "h", "victim"]
                with open(cores[2 + i], "rb") as f:
                    p = subprocess.run(args, stdin=f, capture_output=True, text=True, env=env, timeout=300)
                rep = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else {}
                ok(rep.get("analysis_uid") == want and rep.get("status") == "ok",
                   f"as root, the analysis of uid {uid}'s crash runs as {want}, not root, and is stored",
                   p.stdout + p.stderr[-1000:])
            con = sqlite3.connect(os.path.join(tmp, "drop.db"))
            n = con.execute("SELECT count(*) FROM cores").fetchone()[0]
            con.close()
            ok(n == 1 and not [d for d in os.listdir(drop) if d.startswith(".spool")],
               "one row, no spool directory left", str(os.listdir(drop)))
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
