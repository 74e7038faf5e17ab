#!/usr/bin/env python3
"""`coreq stack --group` folds suspended tasks as panicparse folds goroutines
(issue 48): tasks with the same frames and the same state are one group,
with their count and ids; text, JSON, folded and flame output carry them.

The expected groups come from the program's own record, the header of
corpus/tokio_tasks/src/main.rs: each `TASK xN chain` line is one group of N
tasks parked (idle) at the lines of its `// AWAIT:tag` markers (a task never
polled: Unresumed at its `// BODY:tag`, scheduled on a runtime never
driven), each RUNNING task a group of its own, and the BLOCK_ON future a
group of one without a task id.  On every tokio_tasks core (O0, O2, boxed):

- JSON: `suspended_groups` holds exactly those groups (frames of the
  program's crate with state and line, and the leaf by its type's last path
  component), each with its count, its state and as many ids as members;
  the ids are distinct across groups and are the ids the ungrouped listing
  gives the same tasks; `suspended` holds no task (only chains), and
  `threads` is empty.
- text: the heading says how many tasks in how many groups, and the group of
  two says "2 tasks (idle): ID, ID" with the frames once, without any
  future's address (each member has its own).
- folded: one line per group under [suspended_tokio]/[suspended_block_on],
  the record's x2 chain with count 2, the counts summing to the tasks.
- flame: the box of the x2 chain's outermost future counts 2.
"""
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET

from coreq_test import (ROOT, coreq, coreq_json, corpus_cases, done, ok, rust_skipped,
                        sanitizer_report, skip, source_markers)

SOURCE = os.path.join(ROOT, "corpus", "tokio_tasks", "src", "main.rs")
CRATE = "tokio_tasks"
SVG = "{http://www.w3.org/2000/svg}"


def parse_record():
    """[(count, state, key)] of the groups the program's header says it made;
    key = (leaf's last path component or None, ((function, state, line), ...)
    of the crate's frames, innermost first)."""
    lines, body, await_line = source_markers(SOURCE)
    groups = []
    for text in lines:
        m = re.match(r"//\s+TASK x(\d+) (.*?)(\s{2,}\(.*)?$", text)
        if m:
            frames, leaf = [], None
            for item in m.group(2).split():
                if "@" not in item:
                    leaf = item
                    continue
                fn, tag = item.split("@")
                frames.append((f"{CRATE}::{fn}", "Suspend0", await_line[tag]) if tag in await_line
                              else (f"{CRATE}::{fn}", "Unresumed", body[tag]))
            state = "idle" if leaf else "scheduled"  # parked at an await / never polled
            groups.append((int(m.group(1)), state, (leaf, tuple(reversed(frames)))))
        m = re.match(r"//\s+RUNNING x\d+ (.*?)(\s{2,}\(.*)?$", text)
        if m:
            for fn in m.group(1).split():
                groups.append((1, "running", (None, ((f"{CRATE}::{fn}", None, None),))))
        m = re.match(r"//\s+BLOCK_ON (\w+)@(\w+) (\w+)", text)
        if m:
            groups.append((1, "idle", (m.group(3), ((f"{CRATE}::{m.group(1)}::{{async_block#0}}",
                                                     None, await_line[m.group(2)]),))))
    return groups


def key_of(frames):
    """A reported chain as the record writes it: the leaf (a frame without
    state, innermost, of a chain longer than one) by its last path
    component, the crate's frames with state and line."""
    leaf = None
    if len(frames) > 1 and frames[0].get("state") is None:
        leaf = re.sub(r"<.*$", "", frames[0]["function"] or "").split("::")[-1]
    own = tuple((f["function"], f.get("state"), f.get("line")) for f in frames[1 if leaf else 0:]
                if (f.get("function") or "").startswith(CRATE + "::"))
    return leaf, own


def main_key(key):
    """The block_on chain's main frame is matched on its line only (its state varies by build)."""
    leaf, own = key
    return leaf, tuple((fn, None if fn.endswith("{async_block#0}") else st, line) for fn, st, line in own)


def check_case(name, core, record):
    grouped, r = coreq_json("stack", "--group", "--format", "json", "--no-cache", core, timeout=300)
    ok(not sanitizer_report(r.stderr), f"{name}: no sanitizer report", r.stderr)
    groups = grouped.get("suspended_groups", [])
    got = sorted((g["count"], g["task_state"], main_key(key_of(g["frames"]))) for g in groups)
    want = sorted((n, st, main_key(k)) for n, st, k in record)
    ok(got == want, f"{name}: {len(want)} groups, as the program's record says",
       [f"want {w}" for w in want] + [f"got  {g}" for g in got])
    ok(grouped["suspended"] == [] and grouped["threads"] == [],
       f"{name}: with --group, no task or thread is listed one by one")
    ids = [i for g in groups for i in g["task_ids"]]
    ok(len(ids) == len(set(ids)) and all(len(g["task_ids"]) + g["without_id"] == g["count"]
                                         for g in groups)
       and [g["kind"] for g in groups if g["without_id"]] == ["block_on"],
       f"{name}: every member's id once; only the block_on future has none",
       [(g["kind"], g["count"], g["task_ids"], g["without_id"]) for g in groups])
    plain, _ = coreq_json("stack", "--format", "json", "--no-cache", core, timeout=300)
    by_key = {}
    for s in plain["suspended"]:
        if s.get("task_id"):
            by_key.setdefault((s["task_state"], key_of(s["frames"])), []).append(s["task_id"])
    ok(all(sorted(by_key.get((g["task_state"], key_of(g["frames"])), [])) == g["task_ids"]
           for g in groups if g["task_ids"]),
       f"{name}: each group's ids are those of its tasks in the ungrouped listing",
       [by_key, [(g["task_ids"], key_of(g["frames"])) for g in groups]])
    pair = [g for g in groups if g["count"] == 2]
    text = coreq("stack", "--group", "--no-cache", core, timeout=300).stdout
    members = sum(n for n, _, _ in record)
    ok(f"\nTokio tasks: {members} in {len(record)} groups\n" in text,
       f"{name}: text heading: {members} tasks in {len(record)} groups", text[-3000:])
    if pair:
        a, b = pair[0]["task_ids"]
        ids_text = f"{a}-{b}" if b == a + 1 else f"{a}, {b}"
        block = text.split(f"\n2 tasks (idle): {ids_text}\n", 1)
        chain = block[1].split("\n\n", 1)[0] if len(block) == 2 else ""
        ok(chain.count("notify_leaf [Suspend0]") == 1 and "future at" not in chain,
           f"{name}: text: `2 tasks (idle): {ids_text}`, the chain once, no future's address",
           text[-3000:])
    folded = coreq("stack", "--format", "folded", "--no-cache", core, timeout=300).stdout
    sus = [line for line in folded.splitlines() if line.startswith("[suspended_")]
    stacks = [line.rsplit(" ", 1)[0] for line in sus]
    counts = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in sus}
    notify = [s for s in stacks if s.endswith("notify_leaf_[a];tokio::sync::notify::Notified_[a]")]
    ok(len(stacks) == len(set(stacks)) == len(record) and sum(counts.values()) == members
       and len(notify) == 1 and counts[notify[0]] == 2,
       f"{name}: folded: one line per group, the x2 chain counted 2, {members} in all", sus)
    with tempfile.TemporaryDirectory() as tmp:
        svg = os.path.join(tmp, "f.svg")
        r = coreq("flame", core, "-o", svg, timeout=300)
        titles = [g.find(SVG + "title").text for g in ET.parse(svg).getroot().iter(SVG + "g")] \
            if r.returncode == 0 else []
        outer = [t for t in titles if t.startswith(f"{CRATE}::notify_outer")]
        ok(len(outer) == 1 and re.search(r"\(2 ", outer[0]),
           f"{name}: flame: the x2 chain's outer future counts 2", outer or r.stderr)


def main():
    record = parse_record()
    ok(len(record) == 8 and sum(n for n, _, _ in record) == 9,
       "tokio_tasks/src/main.rs records 9 live tasks in 8 distinct chains",
       [str(g) for g in record])
    cases = {c["case"]: c for c in corpus_cases(include_big=False)}
    for name in ("tokio_tasks.O0", "tokio_tasks.O2", "tokio_tasks-boxed.O0", "tokio_tasks-boxed.O2"):
        if name not in cases:
            why = rust_skipped(name)
            if why:
                skip(f"{name}: task groups", why)
            else:
                ok(False, f"{name}: core exists")
            continue
        check_case(name, cases[name]["core"], record)
    done()


if __name__ == "__main__":
    main()
