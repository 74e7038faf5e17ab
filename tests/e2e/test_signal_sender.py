#!/usr/bin/env python3
"""Who sent the signal, and what its si_code means: real kernel core dumps
made here, of a small program killed in ten ways.

- from another process: `kill -SEGV PID` (procps kill: SI_USER), `kill -s ABRT
  -q 7 PID` (sigqueue: SI_QUEUE), and tgkill(2) from a child of this test
  (SI_TKILL) whose real uid is 65532 when the test runs as root (the target
  then runs as nobody, so sender, target and test have three different uids);
- from itself: abort() (SI_TKILL, si_pid = its own pid);
- forged by itself: rt_sigqueueinfo(2) of SIGABRT to its own pid with
  si_code SI_USER, si_pid 1 and si_uid 0 (what systemd's watchdog would
  send), and rt_tgsigqueueinfo(2) to its own thread with SI_TKILL, its own
  pid and uid 0: the kernel lets a process queue itself any sender;
- from the kernel: a NULL store (SEGV_MAPERR), a store to a read-only page
  (SEGV_ACCERR), an integer division by zero (FPE_INTDIV), ud2 (ILL_ILLOPN),
  a read past the end of a mapped empty file (BUS_ADRERR) and a misaligned
  load with EFLAGS.AC set (BUS_ADRALN).

Expected values come from the input: the sender's pid as this test saw it
(Popen.pid, os.fork), its uid, the program's pid and the addresses it prints,
and the si_code numbers and names of the kernel's own header
(/usr/include/asm-generic/siginfo.h).  gdb's `p $_siginfo` on each core is a
second oracle for the numbers.  Checked in `info` and `stack` (text and JSON),
in the store (`coreq cores`, `coreq show`, the cores table), after `coreq
merge`, and in `coreq export`'s core records.  Everywhere the sender is said
to be only what the signal claims (`sender_claimed`), except abort()'s: an
SI_TKILL naming the process's own pid and uid is true whoever wrote it.  A
merge does not believe a database that says a claimed sender is proven, and
a database from before sender_claimed gets it, upgraded, by the same rule.
"""
import ctypes
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import coreq, done, ok, sanitizer_report, skip

SOURCE = r"""
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int zero;

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "wait";
	/* A shell starting us in the background (nohup ... &) ignores SIGQUIT and
	 * SIGINT, and that is inherited: the signals this test sends must kill. */
	signal(SIGQUIT, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGABRT, SIG_DFL);
	if (!strcmp(mode, "wait")) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "forge") || !strcmp(mode, "forge-self")) {
		/* Delivered, and the core dumped, as the system call returns. */
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		si.si_signo = SIGABRT;
		si.si_uid = 0;
		if (!strcmp(mode, "forge")) {
			si.si_code = SI_USER;
			si.si_pid = 1;
			syscall(SYS_rt_sigqueueinfo, getpid(), SIGABRT, &si);
		} else {
			si.si_code = SI_TKILL;
			si.si_pid = getpid();
			syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), SIGABRT, &si);
		}
		return 3;
	}
	if (!strcmp(mode, "null"))
		*(volatile int *)0 = 1;
	if (!strcmp(mode, "readonly")) {
		char *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("addr %p\n", (void *)(page + 8));
		fflush(stdout);
		*(volatile char *)(page + 8) = 1;
	}
	if (!strcmp(mode, "intdiv"))
		return argc / zero; /* not 1 / zero: gcc turns that into a comparison */
	if (!strcmp(mode, "ud2"))
		__asm__ volatile("ud2");
	if (!strcmp(mode, "pastend")) {
		int fd = open("empty", O_RDWR | O_CREAT | O_TRUNC, 0600);
		char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		printf("addr %p\n", (void *)(p + 16));
		fflush(stdout);
		return *(volatile char *)(p + 16);
	}
	if (!strcmp(mode, "misaligned")) {
		static char buf[16] __attribute__((aligned(16)));
		/* EFLAGS.AC on: the next misaligned load traps (the kernel sets CR0.AM). */
		__asm__ volatile("pushf\n\torl $0x40000, (%%rsp)\n\tpopf\n\tmovl (%0), %%eax"
		                 : : "r"(buf + 1) : "eax", "memory", "cc");
	}
	return 0;
}
"""

HEADER = "/usr/include/asm-generic/siginfo.h"
NOBODY = 65534
SENDER_UID = 65532  # the tgkill sender's real uid when the test is root
SYS_TGKILL = 234  # x86_64


def kernel_codes():
    """name -> value of every #define in the kernel's siginfo.h that is a number."""
    codes = {}
    for line in open(HEADER):
        m = re.match(r"#\s*define\s+(\w+)\s+(-?(?:0x[0-9a-fA-F]+|\d+))\b", line)
        if m:
            codes[m.group(1)] = int(m.group(2), 0)
    return codes


def as_target(root):
    """preexec_fn: core dumps on; as nobody when the test is root."""
    def pre():
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        if root:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
    return pre


def find_core(d):
    names = [n for n in os.listdir(d) if n == "core" or n.startswith("core.")]
    return os.path.join(d, names[0]) if names else None


def wait_for_core(proc, d, timeout=20):
    proc.wait(timeout=timeout)
    end = time.time() + timeout
    while time.time() < end:
        c = find_core(d)
        if c:
            # The kernel writes the core before the parent sees the exit.
            return c
        time.sleep(0.1)
    return None


def tgkill_from_child(pid, sig, uid):
    """tgkill(pid, pid, sig) from a forked child (real uid `uid` if given);
    returns the child's pid."""
    child = os.fork()
    if child == 0:
        try:
            if uid is not None:
                os.setresuid(uid, 0, 0)  # real uid `uid`: si_uid; effective root: may kill
            libc = ctypes.CDLL(None, use_errno=True)
            rc = libc.syscall(SYS_TGKILL, pid, pid, sig)
            os._exit(0 if rc == 0 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    return child if os.waitstatus_to_exitcode(status) == 0 else None


def make_cases(tmp, exe, root):
    """Runs every case; returns a list of dicts (name, core, pid, expected facts)."""
    cases = []
    uid_self = NOBODY if root else os.getuid()

    def start(name, mode):
        d = os.path.join(tmp, name)
        os.mkdir(d)
        os.chmod(d, 0o777)
        p = subprocess.Popen([exe, mode], cwd=d, stdout=subprocess.PIPE, text=True,
                             preexec_fn=as_target(root))
        return d, p

    # Killed by others.
    senders = [
        ("kill-segv", "SIGSEGV", "SI_USER", lambda pid: subprocess.Popen(["kill", "-SEGV", str(pid)]),
         os.getuid()),
        ("sigqueue-abrt", "SIGABRT", "SI_QUEUE",
         lambda pid: subprocess.Popen(["kill", "-s", "ABRT", "-q", "7", str(pid)]), os.getuid()),
        ("tgkill-quit", "SIGQUIT", "SI_TKILL", None, SENDER_UID if root else os.getuid()),
    ]
    for name, sig, code, send, sender_uid in senders:
        d, p = start(name, "wait")
        line = p.stdout.readline().split()
        pid = int(line[1]) if len(line) == 2 and line[0] == "ready" else p.pid
        signo = {"SIGSEGV": 11, "SIGABRT": 6, "SIGQUIT": 3}[sig]
        if send:
            k = send(pid)
            k.wait(timeout=20)
            sender = k.pid if k.returncode == 0 else None
        else:
            sender = tgkill_from_child(pid, signo, SENDER_UID if root else None)
        cases.append(dict(name=name, core=wait_for_core(p, d), pid=pid, signal=signo, code=code,
                          sender_pid=sender, sender_uid=sender_uid, self=False, addr=None,
                          uid=uid_self, exe=exe, claimed=True))
    # Raised by itself.
    d, p = start("abort", "abort")
    cases.append(dict(name="abort", core=wait_for_core(p, d), pid=p.pid, signal=6, code="SI_TKILL",
                      sender_pid=p.pid, sender_uid=uid_self, self=True, addr=None, uid=uid_self,
                      exe=exe, claimed=False))
    # Forged by itself: pid 1 and uid 0 with kill's SI_USER; its own pid with uid 0.
    for mode, code, forged_pid in (("forge", "SI_USER", lambda p: 1),
                                   ("forge-self", "SI_TKILL", lambda p: p.pid)):
        d, p = start(mode, mode)
        cases.append(dict(name=mode, core=wait_for_core(p, d), pid=p.pid, signal=6, code=code,
                          sender_pid=forged_pid(p), sender_uid=0, self=mode == "forge-self",
                          addr=None, uid=uid_self, exe=exe, claimed=True))
    # The kernel's faults.
    faults = [("null", 11, "SEGV_MAPERR", 0), ("readonly", 11, "SEGV_ACCERR", "printed"),
              ("intdiv", 8, "FPE_INTDIV", None), ("ud2", 4, "ILL_ILLOPN", None),
              ("pastend", 7, "BUS_ADRERR", "printed"), ("misaligned", 7, "BUS_ADRALN", None)]
    for mode, signo, code, addr in faults:
        d, p = start(mode, mode)
        out = p.stdout.readline() if addr == "printed" else ""
        m = re.match(r"addr (0x[0-9a-f]+)", out)
        cases.append(dict(name=mode, core=wait_for_core(p, d), pid=p.pid, signal=signo, code=code,
                          sender_pid=None, sender_uid=None, self=False,
                          addr=int(m.group(1), 16) if m else addr if addr != "printed" else -1,
                          uid=uid_self, exe=exe, claimed=None))
    return cases


def gdb_siginfo(exe, core):
    """(si_signo, si_code, si_pid, si_uid, si_addr) as gdb reads them from the core."""
    r = subprocess.run(["gdb", "-nx", "-batch", "-ex", "p $_siginfo", exe, core],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"si_signo = (-?\d+), si_errno = -?\d+, si_code = (-?\d+)", r.stdout)
    k = re.search(r"_kill = \{si_pid = (-?\d+), si_uid = (\d+)\}", r.stdout)
    a = re.search(r"_sigfault = \{si_addr = (0x[0-9a-f]+)", r.stdout)
    if not (m and k and a):
        return None
    return (int(m.group(1)), int(m.group(2)), int(k.group(1)), int(k.group(2)),
            int(a.group(1), 16))


def sender_rows(db):
    """path -> (sender_pid, sender_uid, sender_claimed) of the cores table; {}
    without those columns."""
    con = sqlite3.connect(db)
    try:
        return {p: (s, u, k) for p, s, u, k in
                con.execute("SELECT path, sender_pid, sender_uid, sender_claimed FROM cores")}
    except sqlite3.Error as e:
        ok(False, f"{db}: the cores table has sender_pid, sender_uid and sender_claimed", str(e))
        return {}
    finally:
        con.close()


def stored_claimed(c):
    """What the store and export say in sender_claimed: 1, 0, or None (no sender)."""
    return None if c["claimed"] is None else int(c["claimed"])


def sender_words(c):
    claim = " as the signal claims ("
    if c["self"] and not c["claimed"]:
        return "raised by the process itself"
    if c["self"]:
        return f"sent by the process itself (uid {c['sender_uid']}){claim}"
    if c["sender_pid"] is not None:
        return f"sent by pid {c['sender_pid']} (uid {c['sender_uid']}){claim}"
    return None


def check_text(c, what, text, codes, descr_re):
    """The signal line of `info`/`stack`/`show` text."""
    name = c["code"]
    want = f"si_code {codes[name]} ({name}: "
    line = next((l for l in text.splitlines() if "si_code" in l), "")
    words = sender_words(c)
    good = want in line and re.search(descr_re, line)
    good = good and (words in line if words else "sent by" not in line and "raised by" not in line)
    if c["claimed"]:
        good = good and "raised by" not in line
    ok(good, f"{c['name']}: {what} says {want}...){', ' + words if words else ''}", line)


def main():
    if not os.path.exists(HEADER):
        skip("signal senders", f"{HEADER} missing (linux-libc-dev)")
        done()
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|"):
        skip("signal senders", f"core_pattern pipes cores away ({pattern})")
        done()
    codes = kernel_codes()
    root = os.getuid() == 0
    tmp = tempfile.mkdtemp(prefix="coreq-signal-")
    os.chmod(tmp, 0o755)
    os.environ["XDG_STATE_HOME"] = os.path.join(tmp, "state")
    os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
    os.environ.pop("COREQ_DB", None)
    try:
        src = os.path.join(tmp, "sigcases.c")
        open(src, "w").write(SOURCE)
        exe = os.path.join(tmp, "sigcases")
        subprocess.run(["gcc", "-g", "-O0", src, "-o", exe], check=True)
        cases = make_cases(tmp, exe, root)
        for c in cases:
            ok(c["core"] is not None, f"{c['name']}: the kernel wrote a core")
            if c["code"].startswith("SI_"):
                ok(c["sender_pid"] is not None, f"{c['name']}: the sender ran")
        cases = [c for c in cases if c["core"]]

        # gdb, the independent oracle, agrees with what the test did.
        for c in cases:
            g = gdb_siginfo(c["exe"], c["core"])
            want_pid = c["sender_pid"] if c["sender_pid"] is not None else None
            good = g is not None and g[0] == c["signal"] and g[1] == codes[c["code"]]
            if want_pid is not None:
                good = good and g[2] == want_pid and g[3] == c["sender_uid"]
            if isinstance(c["addr"], int) and c["addr"] >= 0:
                good = good and g[4] == c["addr"]
            ok(good, f"{c['name']}: gdb's $_siginfo is signal {c['signal']}, {c['code']}"
               f" ({codes[c['code']]}){', pid %s uid %s' % (want_pid, c['sender_uid']) if want_pid else ''}",
               str(g))

        descr = {"SI_USER": r"sent by kill", "SI_QUEUE": r"sigqueue", "SI_TKILL": r"tkill/tgkill",
                 "SEGV_MAPERR": r"address not mapped", "SEGV_ACCERR": r"invalid permissions",
                 "FPE_INTDIV": r"integer divide by zero", "ILL_ILLOPN": r"illegal operand",
                 "BUS_ADRERR": r"non-existent physical address",
                 "BUS_ADRALN": r"invalid address alignment"}
        for c in cases:
            for cmd in ("info", "stack"):
                nocache = ["--no-cache"] if cmd == "stack" else []
                r = coreq(cmd, *nocache, c["core"])
                ok(r.returncode == 0 and not sanitizer_report(r.stderr), f"{c['name']}: {cmd} exits 0",
                   r.stderr[-2000:])
                check_text(c, cmd, r.stdout, codes, descr[c["code"]])
                r = coreq(cmd, *nocache, "--format", "json", c["core"])
                try:
                    core = json.loads(r.stdout)["core"]
                except (ValueError, KeyError):
                    core = {}
                got = {k: core.get(k, "absent") for k in ("pid", "signal", "si_code", "si_code_name",
                                                            "sender_pid", "sender_uid", "sender_claimed")}
                want = dict(pid=c["pid"], signal=c["signal"], si_code=codes[c["code"]],
                            si_code_name=c["code"], sender_pid=c["sender_pid"],
                            sender_uid=c["sender_uid"], sender_claimed=c["claimed"])
                ok(got == want, f"{c['name']}: {cmd} JSON {want}", f"got {got}")
                if isinstance(c["addr"], int) and c["addr"] >= 0:
                    ok(core.get("fault_address") == hex(c["addr"]),
                       f"{c['name']}: {cmd} JSON fault_address {hex(c['addr'])}",
                       str(core.get("fault_address")))

        # The store.
        db = os.path.join(tmp, "coreq.db")
        r = coreq("ingest", "--db", db, *[c["core"] for c in cases], timeout=600)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "ingest every core", r.stderr[-2000:])
        rows = sender_rows(db)
        for c in cases:
            want = (c["sender_pid"], c["sender_uid"], stored_claimed(c))
            ok(rows.get(c["core"]) == want,
               f"{c['name']}: cores.sender_pid, sender_uid, sender_claimed = {want}",
               str(rows.get(c["core"])))
        r = coreq("cores", "--db", db, "--format", "json")
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        listed = doc.get("cores", []) if isinstance(doc, dict) else doc
        stored = {s["path"]: s for s in listed}
        for c in cases:
            s = stored.get(c["core"], {})
            got = (s.get("si_code_name"), s.get("sender_pid"), s.get("sender_uid"),
                   s.get("sender_claimed", "absent"))
            ok(got == (c["code"], c["sender_pid"], c["sender_uid"], c["claimed"]),
               f"{c['name']}: cores --format json has si_code_name, sender_pid, sender_uid,"
               f" sender_claimed {c['claimed']}", str(got))
        r = coreq("cores", "--db", db)
        lines = r.stdout.splitlines()
        head = lines[0].split() if lines else []
        for c in cases:
            s = stored.get(c["core"], {})
            line = next((l.split() for l in lines[1:] if l.split() and l.split()[0] == str(s.get("id"))), [])
            want = "self" if c["self"] else str(c["sender_pid"]) if c["sender_pid"] else "-"
            want += "?" if c["claimed"] else ""
            got = line[head.index("SENDER")] if "SENDER" in head and len(line) == len(head) else None
            ok(got == want, f"{c['name']}: coreq cores shows SENDER {want}", f"{head} {line}")
            r = coreq("show", str(s.get("id")), "--db", db)
            check_text(c, "show", r.stdout, codes, descr[c["code"]])

        # Merge carries them; export writes them.
        merged = os.path.join(tmp, "merged.db")
        r = coreq("merge", "--db", merged, db)
        ok(r.returncode == 0, "merge into an empty database", r.stderr[-2000:])
        mrows = sender_rows(merged)
        ok(mrows == rows and len(rows) == len(cases),
           "merge carries sender_pid, sender_uid and sender_claimed", f"{mrows} != {rows}")
        # A database that says the forged sender is proven is not believed.
        lying = os.path.join(tmp, "lying.db")
        shutil.copy(db, lying)
        con = sqlite3.connect(lying)
        con.execute("UPDATE cores SET sender_claimed = 0 WHERE sender_pid IS NOT NULL")
        con.commit()
        con.close()
        relied = os.path.join(tmp, "relied.db")
        r = coreq("merge", "--db", relied, lying)
        lrows = sender_rows(relied)
        ok(r.returncode == 0 and lrows == rows,
           "merge of a database whose every sender says proven: only abort()'s is", f"{lrows} != {rows}")
        r = coreq("cores", "--db", lying, "--format", "json")
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        said = {s["path"]: s.get("sender_claimed")
                for s in (doc.get("cores", []) if isinstance(doc, dict) else doc)}
        ok(said == {c["core"]: c["claimed"] for c in cases},
           "cores of that database: only abort()'s sender is proven", str(said))
        # A database stored before the migration that adds sender_claimed
        # (015): upgrading it fills the column by the same rule.  Later
        # migrations' columns go too (016: crash_message), so it is schema 14.
        old = os.path.join(tmp, "old.db")
        shutil.copy(db, old)
        con = sqlite3.connect(old)
        con.execute("ALTER TABLE cores DROP COLUMN crash_message")
        con.execute("ALTER TABLE cores DROP COLUMN sender_claimed")
        version = 15
        con.execute(f"PRAGMA user_version = {version - 1}")
        con.commit()
        con.close()
        r = coreq("merge", "--db", old)
        orows = sender_rows(old)
        ok(r.returncode == 0 and orows == rows,
           f"a database of schema {version - 1}, upgraded, has the same sender_claimed",
           f"{r.stderr} {orows} != {rows}")
        r = coreq("export", "--db", db, "--type", "core")
        records = [json.loads(l) for l in r.stdout.splitlines() if l.strip()] if r.returncode == 0 else []
        by_id = {rec.get("local_id"): rec for rec in records}
        for c in cases:
            rec = by_id.get(stored.get(c["core"], {}).get("id"), {})
            got = (rec.get("si_code"), rec.get("si_code_name"), rec.get("sender_pid"), rec.get("sender_uid"),
                   rec.get("sender_claimed", "absent"))
            ok(got == (codes[c["code"]], c["code"], c["sender_pid"], c["sender_uid"], stored_claimed(c)),
               f"{c['name']}: export's core record has si_code, si_code_name, sender_pid, sender_uid,"
               f" sender_claimed {stored_claimed(c)}", str(got))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
