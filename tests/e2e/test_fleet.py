#!/usr/bin/env python3
"""From one host to a fleet (issue 17): export, ClickHouse, push, merge.

A real clickhouse-server (Debian's) runs as an unprivileged process on
127.0.0.1, with its configuration and data in a temporary directory, and is
stopped by the test.  The 100 cores of the corpus case bucket-100 (five
crash sites, the site of each core listed in its expect file) are ingested
into three SQLite databases, core i on host i % 3.  Expected results come
from that structure, not from coreq:
- `coreq export | clickhouse-client INSERT ... FORMAT JSONEachRow`, run twice
  for every host: ClickHouse holds each core once (FINAL and distinct
  identities), every thread and stack and bucket, and the top buckets
  across hosts group the cores by crash site with the expected counts and
  host counts;
- the hung cores of corpus/deadlock.c (an ABBA deadlock at O0 and O2, a
  three-thread cycle, a chain ending at a thread in read()), on a fourth
  host, exported twice with `--type wait`: coreq.waits holds one row per
  blocked thread, each once, and each row is the program's own oracle (the
  tid, the mutex it waits on, the tid holding it, and whether it is on a
  cycle: all threads of one cycle share one deadlock number);
- `coreq merge` of the three databases gives the same bucket counts, and a
  second merge adds nothing;
- `coreq push` into a fresh database, with the server stopped after two
  batches: the push fails, the cursor stays; once the server is back, the
  next push completes: every core is there, none twice (no FINAL needed);
  the hung host's push, one core per batch, sends every wait once.
"""
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time

from coreq_test import COREQ, CORPUS, ROOT, coreq, done, ok, read_expect, require_corpus, skip
from waits_common import read_oracle

CLICKHOUSE = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"
CLIENT = shutil.which("clickhouse-client")
HOSTS = 3

CONFIG = """<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog></logger>
    <http_port>{http}</http_port>
    <tcp_port>{tcp}</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <path>{d}/data/</path>
    <tmp_path>{d}/tmp/</tmp_path>
    <users_config>{d}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mark_cache_size>268435456</mark_cache_size>
</yandex>
"""
USERS = """<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
    <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
        <profile>default</profile><quota>default</quota></default></users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></default></quotas>
</yandex>
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, d):
        self.d, self.http, self.tcp, self.proc = d, free_port(), free_port(), None
        os.makedirs(os.path.join(d, "data"))
        os.makedirs(os.path.join(d, "tmp"))
        open(os.path.join(d, "config.xml"), "w").write(CONFIG.format(d=d, http=self.http, tcp=self.tcp))
        open(os.path.join(d, "users.xml"), "w").write(USERS)
        if os.geteuid() == 0:  # unprivileged: nobody owns its files
            subprocess.run(["chown", "-R", "nobody:nogroup", d], check=True)

    def start(self):
        cmd = [CLICKHOUSE, f"--config-file={self.d}/config.xml"]
        if os.geteuid() == 0:
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     cwd=self.d)
        for _ in range(150):
            if self.query("SELECT 1", check=False) == "1":
                return True
            time.sleep(0.2)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def query(self, sql, stdin=None, check=True, *settings):
        r = subprocess.run([CLIENT, "--host", "127.0.0.1", "--port", str(self.tcp), *settings,
                            "--query", sql], input=stdin, capture_output=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"clickhouse-client {sql}: {r.stderr.decode()[-500:]}")
        return r.stdout.decode().strip()

    def url(self):
        return f"http://127.0.0.1:{self.http}"


TABLES = {"core": "cores", "thread": "threads", "stack": "stacks", "bucket": "buckets",
          "wait": "waits"}
HUNG = ["deadlock-abba.O0", "deadlock-abba.O2", "deadlock-cycle3.O0", "deadlock-chain.O2"]


def hung_check(server, tmp):
    """The hung cores' waits in ClickHouse, loaded twice, against each program's oracle."""
    cases = [os.path.join(CORPUS, "cores", n) for n in HUNG]
    cases = [d for d in cases if os.path.isfile(os.path.join(d, "oracle"))]
    if not ok(len(cases) == len(HUNG), f"the hung cores exist ({len(cases)} of {len(HUNG)})",
              f"run corpus/make-cores {CORPUS} " + " ".join(HUNG)):
        return None
    db = os.path.join(tmp, "hung.db")
    r = coreq("ingest", "--no-cache", "--db", db, *[os.path.join(d, "core") for d in cases],
              timeout=600)
    ok(r.returncode == 0, f"hung host: {len(cases)} cores ingested", r.stderr[-1000:])
    for rnd in (1, 2):
        err = load(server, db, "hung")
        ok(err is None, f"hung host: export | clickhouse-client with waits, round {rnd}", str(err))
    want, by_pid = set(), {}
    for d in cases:
        o = read_oracle(os.path.join(d, "oracle"))
        pid = int(read_expect(os.path.join(d, "expect"))["pid"])
        by_pid[pid] = o
        for tid, (kind, addr) in o["waits"].items():
            want.add((pid, tid, kind, addr, "thread", o["holds"][addr],
                      "deadlock" if o["verdict"] == "deadlock" else "waits"))
    rows = json.loads(server.query(
        "SELECT c.pid, w.tid, w.kind, w.object, w.owner, w.owner_tid, w.verdict, w.deadlock "
        "FROM coreq.waits AS w FINAL ANY INNER JOIN "
        "(SELECT identity AS core, pid FROM coreq.cores FINAL) AS c USING core "
        "FORMAT JSONCompact"))["data"]
    num = lambda v: None if v is None else int(v)
    got = {(num(p), num(t), k, num(a), ow, num(ot), v) for p, t, k, a, ow, ot, v, _ in rows}
    ok(len(rows) == len(want) and got == want,
       f"coreq.waits: every blocked thread once, as its program's oracle says ({len(rows)} rows)",
       [f"missing {sorted(want - got)}", f"phantom {sorted(got - want)}"])
    cycles = {}
    for p, t, k, a, ow, ot, v, dl in rows:
        if v == "deadlock":
            cycles.setdefault(num(p), set()).add(num(dl))
    ok(all(len(ids) == 1 and None not in ids for ids in cycles.values())
       and set(cycles) == {p for p, o in by_pid.items() if o["verdict"] == "deadlock"},
       "each deadlocked core's cycle is one deadlock number; no other core has one", str(cycles))
    raw = int(server.query("SELECT count() FROM coreq.waits"))
    keys = int(server.query("SELECT uniqExact(core, idx) FROM coreq.waits"))
    ok(keys == len(want) and raw in (len(want), 2 * len(want)),
       f"loaded twice: {keys} keys, {raw} raw rows (FINAL keeps one per key)")
    return db, len(want)


def load(server, db, host):
    for t, table in TABLES.items():
        r = coreq("export", "--db", db, "--host", host, "--type", t, timeout=300)
        if r.returncode != 0:
            return f"export {t}: {r.stderr}"
        if not r.stdout:
            continue  # clickhouse-client refuses an empty INSERT (no hung core: no wait)
        server.query(f"INSERT INTO coreq.{table} FORMAT JSONEachRow", r.stdout.encode(), True,
                     "--input_format_skip_unknown_fields=1")
    return None


def schema(server, name="001_tables.sql", database="coreq"):
    """Runs schema/clickhouse/NAME, its tables in `database` instead of coreq."""
    sql = open(os.path.join(ROOT, "schema", "clickhouse", name)).read()
    sql = sql.replace("coreq.", f"{database}.").replace("DATABASE IF NOT EXISTS coreq;",
                                                        f"DATABASE IF NOT EXISTS {database};")
    r = subprocess.run([CLIENT, "--host", "127.0.0.1", "--port", str(server.tcp), "--multiquery"],
                       input=sql.encode(), capture_output=True)
    return r.returncode == 0, r.stderr.decode()


def upgrade_check(server):
    """A coreq.cores made before the sender columns, upgraded by 002, has
    001's columns in 001's order."""
    good, why = schema(server, database="coreq_old")
    if good:
        for col in ("sender_uid", "sender_pid", "si_code_name"):
            server.query(f"ALTER TABLE coreq_old.cores DROP COLUMN {col}")
        good, why = schema(server, "002_signal_sender.sql", "coreq_old")
    if not good:
        return False, why
    old = server.query("DESCRIBE TABLE coreq_old.cores")
    new = server.query("DESCRIBE TABLE coreq.cores")
    return old == new, f"002 gives:\n{old}\n001 gives:\n{new}"


def waits_upgrade_check(server):
    """A store made before coreq.waits gets 001's table from 003."""
    server.query("DROP TABLE coreq_old.waits")
    good, why = schema(server, "003_waits.sql", "coreq_old")
    if good:
        good, why = schema(server, "004_wait_verdict.sql", "coreq_old")
    if not good:
        return False, why
    old = server.query("DESCRIBE TABLE coreq_old.waits")
    new = server.query("DESCRIBE TABLE coreq.waits")
    return old == new and old != "", f"003 gives:\n{old}\n001 gives:\n{new}"


def main():
    require_corpus()
    if not os.path.exists(CLICKHOUSE) or not CLIENT:
        skip("fleet tests with ClickHouse", "clickhouse-server is not installed (make deps installs it)")
        done()
    case = os.path.join(CORPUS, "cores", "bucket-100")
    facts = read_expect(os.path.join(case, "expect"))
    sites, pids = facts["sites"].split(), [int(p) for p in facts["pids"].split()]
    cores = sorted(f for f in os.listdir(case) if f.startswith("core-"))
    site_of = {pids[i]: sites[i] for i in range(len(cores))}
    want_count, want_hosts = {}, {}
    for i in range(len(cores)):
        want_count[sites[i]] = want_count.get(sites[i], 0) + 1
        want_hosts.setdefault(sites[i], set()).add(f"host{i % HOSTS}")
    tmp = tempfile.mkdtemp(prefix="coreq-fleet-")
    os.chmod(tmp, 0o755)
    server = Server(os.path.join(tmp, "clickhouse"))
    try:
        dbs = []
        for h in range(HOSTS):
            db = os.path.join(tmp, f"host{h}.db")
            mine = [os.path.join(case, cores[i]) for i in range(len(cores)) if i % HOSTS == h]
            r = coreq("ingest", "--no-cache", "--db", db, *mine, timeout=900)
            ok(r.returncode == 0, f"host{h}: {len(mine)} cores ingested", r.stderr[-1000:])
            dbs.append(db)

        ok(server.start(), "clickhouse-server starts on 127.0.0.1 as an unprivileged process",
           open(os.path.join(server.d, "error.log")).read()[-2000:]
           if os.path.exists(os.path.join(server.d, "error.log")) else "")
        good, why = schema(server)
        ok(good, "schema/clickhouse/001_tables.sql loads", why)
        good, why = schema(server, "004_wait_verdict.sql")
        ok(good, "schema/clickhouse/004_wait_verdict.sql adds owner_confirmed_by to coreq.waits", why)
        good, why = upgrade_check(server)
        ok(good, "schema/clickhouse/002_signal_sender.sql upgrades an older coreq.cores to 001's", why)
        good, why = waits_upgrade_check(server)
        ok(good, "schema/clickhouse/003_waits.sql adds 001's coreq.waits to an older store", why)
        good, why = schema(server, "005_sender_claimed.sql")
        ok(good, "schema/clickhouse/005_sender_claimed.sql adds coreq.cores.sender_claimed", why)
        good, why = schema(server, "006_snapshot.sql")
        ok(good, "schema/clickhouse/006_snapshot.sql adds coreq.cores.snapshot", why)
        good, why = schema(server, "007_crash_message.sql")
        ok(good, "schema/clickhouse/007_crash_message.sql adds coreq.cores.crash_message", why)
        for rnd in (1, 2):
            errs = [load(server, db, f"host{h}") for h, db in enumerate(dbs)]
            ok(not any(errs), f"export | clickhouse-client, round {rnd}", str(errs))
        n = int(server.query("SELECT count() FROM coreq.cores FINAL"))
        distinct = int(server.query("SELECT uniqExact(identity) FROM coreq.cores"))
        ok(n == len(cores) and distinct == len(cores),
           f"each core once after loading twice ({n} rows, {distinct} identities)")
        # C programs: no runtime says what the crash was (Go's and Python's
        # messages: tests/e2e/test_crash_message.py, whose push checks them).
        said = server.query("SELECT count(), countIf(crash_message IS NULL) FROM coreq.cores FINAL")
        ok(said.split() == [str(len(cores))] * 2,
           f"crash_message loaded and null for every C core ({said})")
        # abort(), raise() and assert() signal the process itself (SI_TKILL,
        # si_pid and si_uid its own: proven, sender_claimed 0); same_segv
        # writes to address 0 (SEGV_MAPERR, no sender).
        signal_of = dict(zip(pids, (int(x) for x in facts["signals"].split())))
        rows = json.loads(server.query("SELECT pid, uid, signal, si_code_name, sender_pid, sender_uid, "
                                       "sender_claimed FROM coreq.cores FINAL FORMAT JSONCompact"))["data"]
        num = lambda v: None if v is None else int(v)
        bad = []
        for pid, uid, sig, name, spid, suid, claimed in rows:
            pid, uid, sig = num(pid), num(uid), num(sig)
            want = (("SI_TKILL", pid, uid, 0) if signal_of.get(pid) == 6 else
                    ("SEGV_MAPERR", None, None, None) if signal_of.get(pid) == 11 else None)
            if sig != signal_of.get(pid) or (name, num(spid), num(suid), num(claimed)) != want:
                bad.append(f"pid {pid} signal {sig}: {name} {spid} {suid} {claimed}, want {want}")
        ok(len(rows) == len(cores) and not bad,
           "si_code_name, sender_pid, sender_uid, sender_claimed in ClickHouse: SI_TKILL from"
           " itself, proven, for SIGABRT, SEGV_MAPERR without a sender for SIGSEGV", bad[:10])
        threads = int(server.query("SELECT count() FROM coreq.threads FINAL"))
        ok(threads == len(cores), f"one thread per core ({threads})")
        rows = server.query("SELECT bucket, groupUniqArray(pid), count(), uniqExact(host) "
                            "FROM coreq.cores FINAL GROUP BY bucket ORDER BY count() DESC "
                            "FORMAT JSONCompact")
        top = json.loads(rows)["data"]
        got = {}
        for bucket, bpids, count, hosts in top:
            bsites = {site_of.get(int(p)) for p in bpids}
            got[bucket] = (bsites, int(count), int(hosts))
        ok(len(got) == len(want_count) and all(len(s) == 1 for s, _, _ in got.values()),
           f"top buckets across hosts: one bucket per crash site ({len(got)})", str(got))
        ok(all(c == want_count[next(iter(s))] and h == len(want_hosts[next(iter(s))])
               for s, c, h in got.values()),
           "each bucket's core and host counts are the site's", str(got))
        stacks = int(server.query("SELECT count() FROM coreq.stacks FINAL"))
        ok(stacks == len(want_count), f"one stack per crash site ({stacks})")
        named = server.query("SELECT signature FROM coreq.buckets FINAL ORDER BY signature")
        ok(all("dispatch | main" in line for line in named.splitlines()),
           "bucket signatures carry the program's chain", named)
        daily = server.query("SELECT sum(cores), max(hosts) FROM coreq.top_buckets_daily")
        ok(daily.split() == [str(len(cores)), str(HOSTS)], f"the daily view: {daily}")
        good, why = schema(server, "003_waits.sql")
        ok(good, "schema/clickhouse/003_waits.sql runs again on a store that has coreq.waits", why)
        hung = hung_check(server, tmp)

        # docs/fleet.md's example queries run as written.
        readme = open(os.path.join(ROOT, "docs", "fleet.md")).read()
        block = readme[readme.index("Queries (ClickHouse):"): readme.index("coreq.top_buckets_daily")]
        queries, cur = [], []
        for line in block.splitlines():
            if line.startswith("    ") and not line.strip().startswith("--"):
                cur.append(line.strip())
                if line.rstrip().endswith(";"):
                    queries.append(" ".join(cur).rstrip(";"))
                    cur = []
        bad = []
        for q in queries:
            r = subprocess.run([CLIENT, "--host", "127.0.0.1", "--port", str(server.tcp), "--query", q],
                               capture_output=True, text=True)
            if r.returncode != 0 or not r.stdout.strip():
                bad.append((q, r.stderr[-300:]))
        ok(len(queries) >= 4 and not bad, f"docs/fleet.md's {len(queries)} example queries answer", str(bad))

        merged = os.path.join(tmp, "merged.db")
        r = coreq("merge", "--db", merged, "--format", "json", *dbs, timeout=300)
        ok(r.returncode == 0 and json.loads(r.stdout)["cores"] == len(cores), "merge of 3 hosts",
           r.stdout + r.stderr)
        r = coreq("merge", "--db", merged, "--format", "json", *dbs, timeout=300)
        ok(r.returncode == 0 and json.loads(r.stdout)["cores"] == 0, "merging again adds nothing",
           r.stdout + r.stderr)
        con = sqlite3.connect(merged)
        sq = dict(con.execute("SELECT hash, count FROM buckets").fetchall())
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
        ok(sq == {b: c for b, (_, c, _) in got.items()} and integrity == "ok",
           "merged bucket counts equal ClickHouse's", str(sq))

        # push: the server stops after two batches, then comes back.
        server.query("DROP DATABASE coreq")
        schema(server)
        cursor = os.path.join(tmp, "push-cursor")
        r = coreq("push", "--db", dbs[0], "--clickhouse", server.url(), "--cursor", cursor,
                  "--batch", "10", "--max-batches", "2", "--format", "json", timeout=300)
        first = json.loads(r.stdout) if r.returncode == 0 else {}
        ok(first.get("cores") == 20 and open(cursor).read().strip() == str(first.get("cursor")),
           "two batches pushed, cursor kept", r.stdout + r.stderr)
        server.stop()
        r = coreq("push", "--db", dbs[0], "--clickhouse", server.url(), "--cursor", cursor,
                  "--retries", "2", "--timeout", "5", timeout=300)
        ok(r.returncode == 1 and open(cursor).read().strip() == str(first.get("cursor")),
           "with the server down the push fails and the cursor stays", r.stdout + r.stderr)
        ok(server.start(), "the server comes back")
        r = coreq("push", "--db", dbs[0], "--clickhouse", server.url(), "--cursor", cursor,
                  "--format", "json", timeout=300)
        ok(r.returncode == 0, "the next push completes", r.stdout + r.stderr)
        want = sum(1 for i in range(len(cores)) if i % HOSTS == 0)
        raw = int(server.query("SELECT count() FROM coreq.cores"))
        distinct = int(server.query("SELECT uniqExact(identity) FROM coreq.cores"))
        ok(raw == want and distinct == want,
           f"nothing lost, nothing repeated: {raw} rows, {distinct} cores of {want}")
        if hung:
            cursor = os.path.join(tmp, "hung-cursor")
            r = coreq("push", "--db", hung[0], "--clickhouse", server.url(), "--cursor", cursor,
                      "--batch", "1", "--format", "json", timeout=300)
            out = json.loads(r.stdout) if r.returncode == 0 else {}
            raw = int(server.query("SELECT count() FROM coreq.waits"))
            ok(out.get("waits") == hung[1] and raw == hung[1],
               f"hung host's push, one core a batch: every wait sent once ({raw} rows of {hung[1]})",
               r.stdout + r.stderr)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    done()


if __name__ == "__main__":
    main()
