#!/usr/bin/env python3
"""`coreq hook` keeps the analysis's time budget itself (issue 45, finding 1
and minor d).

The hook analyses a core in a child that, run as root for another user's
crash, drops to the crashed uid.  That user may then SIGSTOP the child, and
a stopped process never takes the SIGALRM of its own alarm(): the hook used
to wait for it forever, the row stayed `pending`, the analysis slot stayed
taken and the child's `.spool-*` directory stayed in the store.  The hook
now watches the child itself: a stopped child is killed with its process
group at once (and one its alarm cannot end, at the hook's own deadline:
tests/unit/test_sandbox.c).

Two stops, each with --timeout 3:
- the child stopped before it starts (by the test, as the child's owner),
  then the core fed: deterministic on any account;
- as root, for uid 65534's crash, the child stopped after its drop, by a
  process of uid 65534 (the crashed user's own power): the test holds the
  database's write lock so the hook cannot tell the child where the core is
  stored, and the child, having analysed the core given as a file, waits.
Oracles: the hook returns at all (before a generous 240 s), its JSON and the
database row say `failed` and why, the child process is gone, no `.spool-*`
is left, and a next hook with --max-analyses 1 gets the slot and analyses.
And a hook killed while its child is stopped takes the child with it (the
child would otherwise keep the slot it inherited).
"""
import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import COREQ, done, ok, require_corpus, skip

T0 = 1763700000
TIMEOUT = 3
GENEROUS = 240  # seconds: the hook must return at all, well before this
NOBODY = 65534


def hook_cmd(tmp, pid, uid, extra=()):
    return [COREQ, "hook", "--store", os.path.join(tmp, "cores"), "--db", os.path.join(tmp, "coreq.db"),
            "--cache", os.path.join(tmp, "cache.db"), "--timeout", str(TIMEOUT), "--max-analyses", "1",
            "--format", "json", *extra, str(pid), str(uid), str(uid), "11", str(T0), "18446744073709551615",
            "h", "victim"]


def children(pid):
    """The hook's children, from /proc (any of its threads may have forked)."""
    kids = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def status(pid):
    """/proc/PID/status as a dict, or {} once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except OSError:
        return {}


def wait_for(cond, seconds=60):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.005)
    return None


def the_child(p):
    kids = wait_for(lambda: children(p.pid))
    return kids[0] if kids and len(kids) == 1 else None


def stopped(pid):
    return status(pid).get("State", "").startswith("T")


def finish(p, child, stdin_data=None):
    """The hook's JSON and stderr, or None when it did not return (then both are killed)."""
    try:
        out, err = p.communicate(input=stdin_data, timeout=GENEROUS)
    except subprocess.TimeoutExpired:
        for pid in (child, p.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (OSError, TypeError):
                pass
        p.communicate()
        return None, "no exit"
    try:
        return json.loads(out), err.decode(errors="replace")
    except ValueError:
        return {}, err.decode(errors="replace")


def check_outcome(tmp, what, p, child, rep, err):
    ok(rep is not None, f"{what}: the hook returns (it watches the child, not the child's alarm)", err)
    if rep is None:
        return
    ok(p.returncode == 1 and rep.get("status") == "failed" and "stopped by the hook" in (rep.get("message") or ""),
       f"{what}: the hook reports failed, saying it stopped the analysis", [json.dumps(rep), err[-600:]])
    con = sqlite3.connect(os.path.join(tmp, "coreq.db"))
    row = con.execute("SELECT status, message FROM cores WHERE id = ?", (rep.get("core_id"),)).fetchone()
    con.close()
    ok(row is not None and row[0] == "failed" and "stopped by the hook" in row[1]
       and "stopped by a signal" in row[1], f"{what}: the row is failed, not pending, and says why", row)
    ok(not status(child), f"{what}: the stopped analysis process is gone", status(child))
    spools = [n for n in os.listdir(os.path.join(tmp, "cores")) if n.startswith(".spool-")]
    ok(spools == [], f"{what}: no .spool-* directory left in the store", spools)


def check_stopped_before(case, tmp, uid):
    """The child stopped as soon as it exists, before the core is even read."""
    p = subprocess.Popen(hook_cmd(tmp, 4100, uid), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    child = the_child(p)
    if child:
        os.kill(child, signal.SIGSTOP)
    ok(child is not None and wait_for(lambda: stopped(child), 10), "the analysis child is found and stopped",
       children(p.pid))
    rep, err = finish(p, child, open(case["core"], "rb").read())
    check_outcome(tmp, "stopped before it starts", p, child, rep, err)


def check_slot_free(case, tmp, uid):
    """The next hook with one slot gets it, and the database is not held."""
    with open(case["core"], "rb") as f:
        r = subprocess.run(hook_cmd(tmp, 4200, uid), stdin=f, capture_output=True, timeout=GENEROUS)
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        rep = {}
    ok(r.returncode == 0 and rep.get("status") == "ok",
       "after it, a hook with --max-analyses 1 gets the slot and its core is analysed",
       [r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")[-600:]])


def as_nobody_stop(pid):
    """SIGSTOP pid from a process of uid 65534: 0, or the errno kill gave."""
    k = os.fork()
    if k == 0:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.kill(pid, signal.SIGSTOP)
            os._exit(0)
        except OSError as e:
            os._exit(e.errno or 255)
        except BaseException:
            os._exit(255)
    return os.waitstatus_to_exitcode(os.waitpid(k, 0)[1])


def check_stopped_by_user(case, tmp):
    """As root for uid 65534's crash: stopped after the drop, by uid 65534."""
    con = sqlite3.connect(os.path.join(tmp, "coreq.db"), isolation_level=None, timeout=60)
    con.execute("BEGIN IMMEDIATE")  # the hook cannot record the stored core: the child waits for it
    released = False
    try:
        with open(case["core"], "rb") as f:
            p = subprocess.Popen(hook_cmd(tmp, 4300, NOBODY), stdin=f, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        child = the_child(p)
        dropped = child and wait_for(lambda: status(child).get("Uid", "").split() == [str(NOBODY)] * 4, 60)
        ok(dropped, "the analysis child runs as uid 65534", status(child) if child else children(p.pid))
        rc = as_nobody_stop(child)
        ok(rc == 0 and wait_for(lambda: stopped(child), 10),
           "uid 65534 can SIGSTOP the analysis of its own crash", f"kill as uid 65534: errno {rc}")
        con.execute("ROLLBACK")
        released = True
        rep, err = finish(p, child)
        check_outcome(tmp, "stopped by the crashed user after the drop", p, child, rep, err)
    finally:
        if not released:
            con.execute("ROLLBACK")
        con.close()


def check_hook_killed(case, tmp, uid):
    """The hook itself killed while its child is stopped: the child goes with it."""
    p = subprocess.Popen(hook_cmd(tmp, 4400, uid), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    child = the_child(p)
    if child:
        os.kill(child, signal.SIGSTOP)
    ok(child is not None and wait_for(lambda: stopped(child), 10), "another analysis child is found and stopped",
       children(p.pid))
    p.kill()
    p.communicate()
    gone = child is not None and wait_for(lambda: not status(child), 30)
    if not gone and child:
        os.kill(child, signal.SIGKILL)
    ok(gone, "the hook killed (SIGKILL) while its analysis is stopped: the analysis process goes too",
       status(child) if child else "")


def main():
    cases = {c["case"]: c for c in require_corpus()}
    root = os.geteuid() == 0
    uid = NOBODY if root else os.getuid()  # as root, a drop to uid 65534 and its spool directory
    with tempfile.TemporaryDirectory(prefix="coreq-hookstop-") as tmp:
        check_stopped_before(cases["segv_null.O2"], tmp, uid)
        check_slot_free(cases["fpe.O0"], tmp, uid)
        if root:
            check_stopped_by_user(cases["abort_deep.O0"], tmp)
        else:
            skip("stopped by the crashed user after the drop", "needs root to drop to uid 65534")
    with tempfile.TemporaryDirectory(prefix="coreq-hookkill-") as tmp:
        check_hook_killed(cases["segv_null.O0"], tmp, uid)
        check_slot_free(cases["fpe.O0"], tmp, uid)
    done()


if __name__ == "__main__":
    main()
