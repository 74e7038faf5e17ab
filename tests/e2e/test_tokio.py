#!/usr/bin/env python3
"""tokio: coreq lists every task of a real tokio program (Debian's
librust-tokio-dev, corpus/tokio_tasks) from its core alone.

The expected tasks come from the program itself: its header lists them
(TASK lines: outermost future first, each frame function@tag or a leaf
type's last path component; RUNNING and FREED lines), the await line of a
tag is the line carrying `// AWAIT:tag`, a never-polled future is
Unresumed at its `// BODY:tag` line.  The number of live tasks on the
multi-thread runtime is read independently with gdb from the runtime's
OwnedTasks list (tests/e2e/gdb_tokio_owned.py); the program adds one task
on a current_thread runtime that is never driven.

- O0 and O2: every live task is reported once (kind tokio, unique ids),
  with its state (idle / scheduled / running), the expected await chain,
  states and lines; the two running tasks name the thread that runs them
  (the crasher's is the crashed thread); the freed task appears nowhere;
  nothing else is reported (no phantom).
- O0 and O2: the future #[tokio::main] drives is found once (kind
  block_on), on the main thread, suspended at its AWAIT:main line on a
  JoinHandle: at O0 in block_on's frame through its DWARF location; at O2,
  where DWARF no longer locates it and the callers' copies are the ones it
  was moved out of (Unresumed), as the one value of its type that decodes
  suspended in the stack of the driving frame and its caller.
- The text output lists the tasks like tokio-console; --no-async lists
  none; ingest stores them as suspended chains (identical chains once,
  counted per task); a C core indexes no tokio types.
- tokio_tasks boxed (the same tasks spawned as Pin<Box<dyn Future + Send>>):
  the same tasks and chains, each once (the `dyn Future` scan leaves them
  to tokio; the boxed sleep_outer shares its address with its Sleep); the
  four stale fat pointers the program leaves (read-only data, misaligned,
  inside a heap chunk, a freed chunk) are rejected, each for its reason.
- The Rust type index is cached by build-id: a warm run takes it from the
  cache and says exactly what the cold run said; a damaged row is rebuilt.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import source_markers, CORPUS, ROOT, coreq, coreq_json, corpus_cases, done, ok, sanitizer_report, skip

SOURCE = os.path.join(ROOT, "corpus", "tokio_tasks", "src", "main.rs")
GDB_SCRIPT = os.path.join(ROOT, "tests", "e2e", "gdb_tokio_owned.py")
CRATE = "tokio_tasks"


def parse_source():
    """({chain: count} for TASK lines, chain = ((function, state, line), ...)
    innermost first; running task functions; freed functions; body lines; await lines)."""
    lines, body, await_line = source_markers(SOURCE)
    tasks, running, freed, stale = {}, [], [], []
    for text in lines:
        m = re.match(r"//\s+TASK x(\d+) (.*?)(\s{2,}\(.*)?$", text)
        if m:
            frames = []
            for item in m.group(2).split():
                if "@" in item:
                    fn, tag = item.split("@")
                    if tag in await_line:
                        frames.append((f"{CRATE}::{fn}", "Suspend0", await_line[tag]))
                    else:
                        frames.append((f"{CRATE}::{fn}", "Unresumed", body[tag]))
                else:
                    frames.append((item, None, None))
            tasks[tuple(reversed(frames))] = int(m.group(1))
        m = re.match(r"//\s+RUNNING x\d+ (.*?)(\s{2,}\(.*)?$", text)
        if m:
            running = [f"{CRATE}::{fn}" for fn in m.group(1).split()]
        m = re.match(r"//\s+STALE (\w+)", text)
        if m:
            stale.append(m.group(1))
        m = re.match(r"//\s+FREED x\d+ (\w+)", text)
        if m:
            freed.append(f"{CRATE}::{m.group(1)}")
    return tasks, running, freed, body, await_line, stale


def frame_key(f, leaf):
    """(function, state, line) of a reported frame; a leaf by its last path component."""
    if leaf:
        name = re.sub(r"<.*$", "", f["function"] or "")
        return (name.split("::")[-1], None, None)
    return (f["function"], f.get("state"), f.get("line"))


def chain_key(s):
    frames = s["frames"]
    return tuple(frame_key(f, i == 0 and f.get("state") is None and len(frames) > 1)
                 for i, f in enumerate(frames))


def gdb_owned_count(exe, core):
    if not shutil.which("gdb"):
        return None
    r = subprocess.run(["gdb", "-batch", "-nx", "-ex", "set pagination off", "-ex",
                        f"source {GDB_SCRIPT}", exe, core],
                       capture_output=True, text=True, timeout=300)
    m = re.search(r"OWNED_TOTAL (\d+) lists=(\d+)", r.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else ("no answer", r.stdout[-800:] + r.stderr[-800:])


def check_case(name, case, tasks, running, freed, body, await_line):
    ours, r = coreq_json("stack", "--format", "json", "--no-cache", case["core"], timeout=300)
    ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
    a = ours["async"]
    toks = [s for s in ours["suspended"] if s["kind"] == "tokio"]
    ok(a["tokio_task_types"] > 0 and a["tokio_vtables"] > 0 and a["tokio_lists"] == 2,
       f"{name}: tokio's task types indexed, vtables found, both runtimes' lists walked",
       json.dumps(a))

    # gdb's own count of the multi-thread runtime's tasks, + the idle runtime's one.
    g = gdb_owned_count(case["exe"], case["core"])
    if g is None:
        skip(f"{name}: task count matches gdb's OwnedTasks walk", "gdb not installed")
    else:
        ok(isinstance(g[0], int) and g[1] == 1 and len(toks) == g[0] + 1,
           f"{name}: {len(toks)} tasks = gdb's OwnedTasks count {g[0]} + the idle runtime's 1", g)

    ids = [s["task_id"] for s in toks]
    ok(len(ids) == len(set(ids)) and all(isinstance(i, int) and i > 0 for i in ids),
       f"{name}: every task once, with its own tokio id", ids)
    ok(a["tokio_tasks"] == len(toks) == a["tokio_reported"],
       f"{name}: async member counts what is reported", json.dumps(a))

    # Suspended tasks: each expected chain as many times as the program made it.
    idle = [s for s in toks if s["task_state"] in ("idle", "scheduled")]
    got = {}
    for s in idle:
        got[chain_key(s)] = got.get(chain_key(s), 0) + 1
    want = {}
    for chain, n in tasks.items():
        if chain[-1][0].endswith("lock_outer"):
            continue  # checked below: tokio's own lock futures sit between
        want[chain] = n
    got_plain = {k: v for k, v in got.items() if not k[-1][0].endswith("lock_outer")}
    ok(got_plain == want, f"{name}: every suspended task with its chain, states and lines",
       [f"want {w} x{n}" for w, n in want.items()] + [f"got  {k} x{v}" for k, v in got_plain.items()])
    lock = [s for s in idle if s["frames"][-1]["function"] == f"{CRATE}::lock_outer"]
    want_lock = [k for k in tasks if k[-1][0].endswith("lock_outer")][0]
    ok(len(lock) == 1 and frame_key(lock[0]["frames"][0], True) == ("Acquire", None, None)
       and chain_key(lock[0])[-3:] == want_lock[-3:]
       and any(f["function"].endswith("::lock") and f.get("state", "").startswith("Suspend")
               for f in lock[0]["frames"]),
       f"{name}: Mutex::lock task waits on the semaphore's Acquire under tokio's lock()",
       [json.dumps(s["frames"]) for s in lock])
    never = [s for s in idle if s["frames"][-1]["function"] == f"{CRATE}::never_polled"]
    ok(len(never) == 1 and never[0]["task_state"] == "scheduled" and never[0]["thread"] is None,
       f"{name}: the never-polled task is scheduled (notified), Unresumed, on no thread",
       [json.dumps(s) for s in never])
    ok(all(s["task_state"] == "idle" and s["thread"] is None for s in idle if s not in never),
       f"{name}: parked tasks are idle, on no thread", [(s["task_id"], s["task_state"]) for s in idle])

    # Running tasks: named, on their threads, not decoded.
    run = [s for s in toks if s["task_state"] == "running"]
    crashed = [t["tid"] for t in ours["threads"] if t["crashed"]]
    tids = {t["tid"] for t in ours["threads"]}
    ok(sorted(s["frames"][-1]["function"] for s in run) == sorted(running)
       and all(len(s["frames"]) == 1 and s["frames"][0].get("state") is None for s in run),
       f"{name}: the running tasks are reported running, their stale state not decoded",
       [json.dumps(s) for s in run])
    by_fn = {s["frames"][-1]["function"]: s["thread"] for s in run}
    ok(by_fn.get(f"{CRATE}::crasher") == crashed[0] and by_fn.get(f"{CRATE}::spinner") in tids
       and by_fn.get(f"{CRATE}::spinner") != crashed[0],
       f"{name}: each running task names its thread (the crasher runs on the crashed thread)",
       [by_fn, crashed])

    # Nothing the program does not have.
    everything = [f["function"] for s in ours["suspended"] for f in s["frames"]]
    ok(not any(fn in everything for fn in freed), f"{name}: the finished, freed task is not reported",
       everything)
    ok(len(toks) == sum(tasks.values()) + len(running),
       f"{name}: no phantom task ({len(toks)} reported)", [chain_key(s) for s in toks])
    rust = [s for s in ours["suspended"] if s["kind"] == "rust"]
    ok(rust == [], f"{name}: no task is reported twice (as a dyn Future too)", rust)

    # The future #[tokio::main] drives.
    bo = [s for s in ours["suspended"] if s["kind"] == "block_on"]
    main_line = await_line["main"]
    good = [s for s in bo if s["frames"][-1]["function"] == f"{CRATE}::main::{{async_block#0}}"
            and s["frames"][-1].get("line") == main_line and s["task_state"] == "idle"
            and frame_key(s["frames"][0], True) == ("JoinHandle", None, None)]
    main_tid = [t["tid"] for t in ours["threads"] if t.get("name") == CRATE]
    ok(len(bo) == 1 and len(good) == 1 and good[0]["thread"] in main_tid
       and (good[0]["frames"][-1].get("state") or "").startswith("Suspend"),
       f"{name}: the block_on future: main's async block suspended at line {main_line}, awaiting a "
       "JoinHandle, on the main thread", [json.dumps(s) for s in bo])
    a = ours["async"]
    # O0: block_on's `f` has a DWARF location; O2: none at the parked pc, found by value in the
    # driving frames' stack (the one offset where main's block decodes suspended).
    ok(a.get("tokio_block_on") == 1 and a.get("tokio_block_on_rejected") == 0
       and a.get("tokio_block_on_scanned") == (0 if name.endswith("O0") else 1),
       f"{name}: block_on's future found {'by its DWARF location' if name.endswith('O0') else 'by value in the driving frames'}",
       json.dumps({k: v for k, v in a.items() if k.startswith("tokio_block_on")}))

    text = coreq("stack", "--no-cache", case["core"]).stdout
    ok("Tokio tasks:" in text and re.search(r"\bidle\b.*tokio::sync::notify::Notified", text)
       and f"{CRATE}::notify_leaf [Suspend0] at src/main.rs:{await_line['notify_leaf']}" in text,
       f"{name}: text output lists the tasks with their leaves and chains", text[-2000:])
    none, _ = coreq_json("stack", "--format", "json", "--no-cache", "--no-async", case["core"])
    ok(none["suspended"] == [] and none["async"]["tokio_task_types"] == 0,
       f"{name}: --no-async lists no tasks and reads no tokio types")
    return toks


def check_ingest(core, toks):
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "db")
        r = coreq("ingest", "--db", db, "--no-cache", core, timeout=300)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr), "ingest of the tokio core succeeds",
           r.stderr)
        rows = subprocess.run(["sqlite3", db, "SELECT count(*), count(DISTINCT stack_id) FROM suspended "
                               "WHERE kind = 'tokio'"], capture_output=True, text=True).stdout.strip()
        distinct = len({json.dumps([(f["function"], f.get("state"), f.get("line")) for f in s["frames"]])
                        for s in toks})
        ok(rows == f"{len(toks)}|{distinct}",
           f"ingest stores {len(toks)} tasks as {distinct} distinct chains", rows)
        listed, _ = coreq_json("list-stacks", "--db", db, "--format", "json")
        notify = [s for s in listed["stacks"] if s["frames"] and
                  s["frames"][-1]["function"] == f"{CRATE}::notify_outer"]
        ok(len(notify) == 1 and notify[0]["suspended"] == 2,
           "list-stacks counts the two identical Notify tasks as one stack, suspended twice",
           [json.dumps(s)[:300] for s in notify])


def check_stale(name, core, stale):
    """boxed mode: the same tasks through their boxes, reported once (as tokio tasks), and the
    stale fat pointers the program leaves (main.rs STALE lines) rejected, each for its reason."""
    ours, _ = coreq_json("stack", "--format", "json", "--no-cache", core, timeout=300)
    a = ours["async"]
    ok(a["rust_claimed"] > 0 and a["rust_reported"] == 0,
       f"{name}: the boxed tasks' futures, found through their Box too, are left to tokio",
       json.dumps({k: v for k, v in a.items() if k.startswith("rust_")}))
    reasons = {r["reason"] for r in a["rust_rejects"]}
    for why in stale:
        ok(a["rust_rejected"].get(why, 0) >= 1 and why in reasons,
           f"{name}: the stale fat pointer whose data is {why.replace('_', ' ')} is rejected as {why}",
           json.dumps([a["rust_rejected"], a["rust_rejects"]]))
    big = [s for s in ours["suspended"] for f in s["frames"] if f["function"].endswith("big_wait")]
    ok(big == [], f"{name}: the freed 4 KiB future is not reported", big)


def comparable(out):
    """A stack's JSON without what may differ between two runs (times, cache hits)."""
    a = {k: v for k, v in out["async"].items() if not k.endswith("_us") and k not in ("rust_modules_cached", "cxx_modules_cached")}
    return json.dumps([out["threads"], out["suspended"], a], sort_keys=True)


def check_type_cache(core):
    """The Rust type index is read once per build-id: a warm run reads no DWARF for it and
    says the same; a damaged row is noticed, rebuilt and replaced."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache.db")
        cold, _ = coreq_json("stack", "--format", "json", "--cache", cache, core, timeout=300)
        warm, r = coreq_json("stack", "--format", "json", "--cache", cache, core, timeout=300)
        ok(cold["async"]["rust_modules_cached"] == 0 and warm["async"]["rust_modules_cached"] == 1
           and warm["async"]["rust_modules_indexed"] == 1,
           "the second run takes the Rust type index from the cache",
           [cold["async"]["rust_modules_cached"], warm["async"]["rust_modules_cached"]])
        ok(comparable(cold) == comparable(warm) and len(warm["suspended"]) == len(cold["suspended"]) > 0,
           "cold and warm type index give the same threads, tasks and counters")
        rows = subprocess.run(["sqlite3", cache, "SELECT count(*) FROM runtime_blobs WHERE runtime = 'rust' AND name = 'index'"],
                              capture_output=True, text=True).stdout.strip()
        ok(rows == "1", "one Rust index blob: the one Rust module's build-id", rows)
        subprocess.run(["sqlite3", cache, "UPDATE runtime_blobs SET blob = substr(blob, 1, length(blob) / 2) "
                        "|| zeroblob(8) WHERE runtime = 'rust' AND name = 'index'"], check=True)
        damaged, r = coreq_json("stack", "--format", "json", "--cache", cache, core, timeout=300)
        ok(damaged["async"]["rust_modules_cached"] == 0 and comparable(damaged) == comparable(cold)
           and not sanitizer_report(r.stderr),
           "a damaged Rust index blob is rejected and rebuilt from DWARF, same result", r.stderr[-500:])
        again, _ = coreq_json("stack", "--format", "json", "--cache", cache, core, timeout=300)
        ok(again["async"]["rust_modules_cached"] == 1, "the rebuilt row replaced the damaged one")


def main():
    cases = {c["case"]: c for c in corpus_cases() if c["case"].startswith("tokio_tasks")}
    if not cases:
        skip("tokio tests", "corpus/tokio_tasks not built: needs rustc and cargo (PATH, ~/.cargo/bin) "
             "and librust-tokio-dev (make deps)")
        done()
    tasks, running, freed, body, await_line, stale = parse_source()
    ok(sum(tasks.values()) == 6 and len(running) == 2 and freed and len(stale) == 4,
       "tokio_tasks/src/main.rs describes its tasks", [tasks, running, freed, stale])
    o0 = None
    for name in ("tokio_tasks.O0", "tokio_tasks.O2", "tokio_tasks-boxed.O0", "tokio_tasks-boxed.O2"):
        if name not in cases:
            ok(False, f"{name}: core exists", f"no core under {CORPUS}/cores/{name}")
            continue
        toks = check_case(name, cases[name], tasks, running, freed, body, await_line)
        if "boxed" in name:
            check_stale(name, cases[name]["core"], stale)
        elif name.endswith("O0"):
            o0 = (cases[name]["core"], toks)
    if o0:
        check_ingest(*o0)
    if "tokio_tasks.O2" in cases:
        check_type_cache(cases["tokio_tasks.O2"]["core"])
    c_case = [c for c in corpus_cases(include_big=False) if c["case"] == "abort_deep.O0"]
    for c in c_case:
        ours, _ = coreq_json("stack", "--format", "json", "--no-cache", c["core"])
        a = ours["async"]
        ok(a["tokio_task_types"] == 0 and a["tokio_vtables"] == 0 and a["tokio_candidates"] == 0
           and a["rust_modules_indexed"] == 0,
           "a C core: no Rust module indexed, no tokio work", json.dumps(a))
    done()


if __name__ == "__main__":
    main()
