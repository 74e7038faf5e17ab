#!/usr/bin/env python3
"""`coreq stack` renders a stack shared by many threads once and copies it
(cmd/frames_memo.c).  The copies must be what rendering afresh gives.

Oracles, per core: each thread's frames in the full output (where most are
copies) against the same thread printed alone with --thread TID (rendered
afresh in that run), in text and in JSON; and the crashed thread's JSON
frames against `coreq info --format json`, which writes every frame object
without the memo (cmd_json_frame), where both show the same stack (not
async_coro-cross, whose chain `stack` moves to the thread blocked on it).  Cores: threads-3000 (3000 threads on one
pooled stack), tokio_tasks.O0 (worker threads, async frames, a blocked
thread's marks) and async_coro-cross.O0 (a chain moved to a blocked thread)."""
import json
import random

from coreq_test import coreq, done, ok, require_corpus, rust_skipped, skip


def text_blocks(out):
    """{tid: the lines of that thread's block} of `coreq stack` text."""
    blocks, cur = {}, None
    for line in out.splitlines():
        if line.startswith("Thread "):
            cur = int(line.split()[1].rstrip(":"))
            blocks[cur] = []
        elif cur is not None and line == "":
            cur = None
        elif cur is not None:
            blocks[cur].append(line)
    return blocks


def check(case, info_oracle):
    core = case["core"]
    full_j = coreq("stack", "--no-cache", "--format", "json", core)
    full_t = coreq("stack", "--no-cache", core)
    try:
        doc = json.loads(full_j.stdout)
    except ValueError:
        ok(False, f"{case['case']}: stack JSON parses", full_j.stderr[:500])
        return
    threads = {t["tid"]: t for t in doc["threads"]}
    blocks = text_blocks(full_t.stdout)
    ok(full_t.returncode == 0 and set(blocks) == set(threads),
       f"{case['case']}: text and JSON list the same {len(threads)} threads")
    rng = random.Random(7)
    tids = sorted(threads)
    sample = tids if len(tids) <= 12 else [tids[0], tids[-1]] + rng.sample(tids[1:-1], 10)
    bad_j, bad_t = [], []
    for tid in sample:
        one = coreq("stack", "--no-cache", "--format", "json", "--thread", str(tid), core)
        alone = json.loads(one.stdout)["threads"]
        if len(alone) != 1 or alone[0]["frames"] != threads[tid]["frames"]:
            bad_j.append(tid)
        one_t = coreq("stack", "--no-cache", "--thread", str(tid), core)
        if text_blocks(one_t.stdout).get(tid) != blocks.get(tid):
            bad_t.append(tid)
    ok(not bad_j, f"{case['case']}: JSON frames of {len(sample)} threads equal each thread printed alone",
       bad_j)
    ok(not bad_t, f"{case['case']}: text of {len(sample)} threads equals each thread printed alone", bad_t)
    if not info_oracle:
        return  # `info` keeps a spliced chain on the crashed thread; `stack` moves it
    info = coreq("info", "--format", "json", core)
    crashed = [t for t in doc["threads"] if t["crashed"]]
    try:
        info_frames = json.loads(info.stdout)["crashed_stack"]
    except (ValueError, KeyError):
        info_frames = None
    if isinstance(info_frames, dict):
        info_frames = info_frames.get("frames")
    ok(len(crashed) == 1 and info_frames is not None and info_frames == crashed[0]["frames"],
       f"{case['case']}: the crashed thread's JSON frames equal `coreq info`'s (written without the memo)",
       [info.stdout[:300]])


def main():
    cases = {c["case"]: c for c in require_corpus()}
    for name, info_oracle in (("threads-3000", True), ("tokio_tasks.O0", True),
                              ("async_coro-cross.O0", False)):
        if name in cases:
            check(cases[name], info_oracle)
        elif rust_skipped(name):
            skip(f"{name}: frames memo", rust_skipped(name))
        else:
            ok(False, f"corpus case {name} exists")
    done()


if __name__ == "__main__":
    main()
