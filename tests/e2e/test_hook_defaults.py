#!/usr/bin/env python3
"""`coreq hook`'s default paths and memory budget (issue 31, findings 4 and 5).

- Defaults: the hook finds its database and cache by the rule of every
  command: $COREQ_DB and $COREQ_CACHE win over the configuration file, which
  wins over the built-in default; the store comes from the configuration.
  The test points both at files of its own and checks where the rows and
  the stored core went.
- Memory budget: a hook that cannot set the analysis's RLIMIT_DATA (it runs
  as an ordinary user whose hard limit is below --memory-limit) does not
  analyse without the budget: the row says failed, and why.  Needs root (to
  start the hook as another user with a lower hard limit) and the release
  build (the ASan build runs without a budget: its shadow memory counts as
  data).
"""
import os
import resource
import stat
import sqlite3
import subprocess
import tempfile

from coreq_test import done, ok, require_corpus, sanitizer_report, skip

T0 = 1763700000


def diag(r):
    return [f"exit {r.returncode}", "stdout: " + r.stdout.decode(errors="replace"),
            "stderr: " + r.stderr.decode(errors="replace")]


def rows(db, sql):
    if not os.path.exists(db):
        return None
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def check_defaults(case, tmp):
    conf = os.path.join(tmp, "coreq.conf")
    conf_db, conf_cache = os.path.join(tmp, "conf.db"), os.path.join(tmp, "conf-cache.db")
    env_db, env_cache = os.path.join(tmp, "env.db"), os.path.join(tmp, "env-cache.db")
    store = os.path.join(tmp, "conf-store")
    with open(conf, "w") as f:
        f.write(f"db = {conf_db}\ncache = {conf_cache}\nstore = {store}\n")
    env = dict(os.environ, COREQ_CONFIG=conf, COREQ_DB=env_db, COREQ_CACHE=env_cache)
    cmd = [os.environ.get("COREQ", "build/asan/coreq"), "hook", case["pid"], str(os.getuid()),
           str(os.getgid()), case["signal"], str(T0), "18446744073709551615", "h", "defaults"]
    with open(case["core"], "rb") as f:
        r = subprocess.run(cmd, stdin=f, capture_output=True, env=env, timeout=300)
    got = rows(env_db, "SELECT status, stored_path FROM cores")
    stored = sorted(n for n in os.listdir(store) if not n.startswith(".")) if os.path.isdir(store) else []
    ok(r.returncode == 0 and got is not None and len(got) == 1 and got[0][0] == "ok"
       and not os.path.exists(conf_db) and not sanitizer_report(r.stderr.decode(errors="replace")),
       "no --db: $COREQ_DB wins over db in the configuration, as for every command",
       [diag(r), got, os.listdir(tmp)])
    ok(os.path.exists(env_cache) and not os.path.exists(conf_cache),
       "no --cache: $COREQ_CACHE wins over cache in the configuration", os.listdir(tmp))
    ok(len(stored) == 1, "no --store: the core is stored in the store the configuration names",
       [stored, os.listdir(tmp)])


def others_may_run(path):
    """Whether a user other than the owner may run path: it and every folder above
    it are executable by others (a checkout under /root is not)."""
    path = os.path.abspath(path)
    while True:
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def check_memory_budget_not_set(case, tmp):
    release = os.environ.get("COREQ_RELEASE")
    if os.geteuid() != 0 or not release or not os.path.exists(release):
        skip("a memory budget that cannot be set", "needs root and the release build")
        return
    if not others_may_run(release):
        skip("a memory budget that cannot be set",
             f"the hook runs as nobody, who cannot reach {release}")
        return
    uid = gid = 65534
    os.chown(tmp, uid, gid)
    hard = 1 << 30  # below the default --memory-limit of 2 GiB

    def as_user():
        resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    db = os.path.join(tmp, "coreq.db")
    cmd = [release, "hook", "--store", os.path.join(tmp, "cores"), "--db", db, "--cache",
           os.path.join(tmp, "cache.db"), case["pid"], str(uid), str(gid), case["signal"], str(T0),
           "18446744073709551615", "h", "budget"]
    with open(case["core"], "rb") as f:
        r = subprocess.run(cmd, stdin=f, capture_output=True, timeout=300, preexec_fn=as_user)
    got = rows(db, "SELECT status, message FROM cores")
    ok(r.returncode == 1 and got is not None and len(got) == 1 and got[0][0] == "failed"
       and "memory budget" in (got[0][1] or "") and str(hard) in (got[0][1] or ""),
       "a memory budget above the hook's hard limit: not analysed, the row says failed and why",
       [diag(r), got])


def main():
    cases = {c["case"]: c for c in require_corpus()}
    case = cases["abort_deep.O0"]
    with tempfile.TemporaryDirectory() as tmp:
        check_defaults(case, tmp)
    with tempfile.TemporaryDirectory() as tmp:
        check_memory_budget_not_set(case, tmp)
    done()


if __name__ == "__main__":
    main()
