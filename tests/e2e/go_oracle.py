"""The oracles of a Go core's goroutines (issue 48): what `dlv core` lists
(`goroutines`, `goroutines -t`), and what the runtime itself printed to
stderr when GOTRACEBACK=crash made it dump every goroutine before the core.

Both are parsed into {goid: Goroutine}; compare() sets one against what
`coreq stack --format json` reports (its suspended stacks of kind "go") and
says, per goroutine, found / missed / phantom, whether the frames (function
and line, innermost first) are equal, and whether the wait reason is the
runtime's own.
"""
import os
import re
import subprocess
from dataclasses import dataclass, field

DLV_DEPTH = 100


@dataclass
class Goroutine:
    goid: int
    state: str = ""          # the wait reason or status ("chan receive", "running")
    thread: int = 0          # the thread it runs on (dlv), 0 none
    frames: list = field(default_factory=list)  # [(function, file, line)], innermost first
    created: tuple = None    # (function, file, line) of the go statement, the dump's word


def dlv(exe, core, timeout=300):
    """dlv's goroutines with their frames, or None when dlv is missing or fails."""
    script = f"goroutines\ngoroutines -t {DLV_DEPTH}\nexit\n"
    try:
        p = subprocess.run(["dlv", "core", os.path.abspath(exe), os.path.abspath(core), "--allow-non-terminal-interactive=true",
                            "--init", "/dev/stdin"], input=script, capture_output=True,
                           text=True, errors="replace", timeout=timeout, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_dlv(p.stdout)


HEAD = re.compile(r"^[* ] Goroutine (\d+) - .*?(?:\(thread (\d+)\))?(?: \[([^\]]*)\])?\s*$")
FRAME = re.compile(r"^\s*\d+\s+0x[0-9a-f]+ in (\S+)")
AT = re.compile(r"^\s+at (.*):(-?\d+)$")


def parse_dlv(text):
    gs = {}
    cur = None
    for line in text.splitlines():
        m = HEAD.match(line)
        if m:
            goid = int(m.group(1))
            g = gs.setdefault(goid, Goroutine(goid))
            if m.group(2):
                g.thread = int(m.group(2))
            if m.group(3):
                # dlv appends the wait's start (g.waitsince) to the reason
                g.state = re.sub(r" \d+$", "", m.group(3))
            cur = g
            # the second listing (-t) gives the frames: start them afresh
            g.frames = []
            continue
        m = FRAME.match(line)
        if m and cur is not None:
            cur.frames.append([m.group(1), None, None])
            continue
        m = AT.match(line)
        if m and cur is not None and cur.frames:
            cur.frames[-1][1] = m.group(1)
            cur.frames[-1][2] = int(m.group(2))
    for g in gs.values():
        g.frames = [tuple(f) for f in g.frames]
        if not g.state and g.thread:
            g.state = "running"
    return gs


DUMP_HEAD = re.compile(r"^goroutine (\d+) \[([^\]]*)\]:$")
DUMP_FUNC = re.compile(r"^(\S.*?)\((?:[^()]|\([^()]*\))*\)$")
DUMP_AT = re.compile(r"^\t(.*):(\d+)(?: \+0x[0-9a-f]+)?(?: fp=.*)?$")


def parse_dump(text):
    """The runtime's GOTRACEBACK dump: {goid: Goroutine} with its state and frames."""
    gs = {}
    cur = None
    created = False
    for line in text.splitlines():
        m = DUMP_HEAD.match(line)
        if m:
            state = m.group(2).split(",")[0]  # ", 5 minutes", ", locked to thread"
            cur = gs.setdefault(int(m.group(1)), Goroutine(int(m.group(1)), state))
            created = False
            continue
        if cur is None:
            continue
        if line.startswith("created by "):
            created = True
            cur.created = (line[len("created by "):].split(" in goroutine")[0], None, None)
            continue
        m = DUMP_AT.match(line)
        if m:
            if created and cur.created and cur.created[1] is None:
                cur.created = (cur.created[0], m.group(1), int(m.group(2)))
            elif not created and cur.frames and cur.frames[-1][1] is None:
                cur.frames[-1] = (cur.frames[-1][0], m.group(1), int(m.group(2)))
            continue
        m = DUMP_FUNC.match(line)
        if m and not created:
            cur.frames.append((m.group(1), None, None))
        elif not line.strip():
            cur = None
    return gs


def from_coreq(doc):
    """coreq's goroutines (suspended stacks of kind go) from `stack --format json`."""
    gs = {}
    for s in doc.get("suspended", []):
        if s.get("kind") != "go":
            continue
        g = Goroutine(s["task_id"], s.get("task_state") or "", s.get("thread") or 0)
        g.frames = [(f.get("function"), f.get("file"), f.get("line")) for f in s["frames"]]
        g.created_by = s.get("created_by")
        g.wait_object = s.get("wait_object")
        gs[g.goid] = g
    return gs


def same_file(ours, theirs):
    """dlv prints a path relative to its working directory ("./corpus/x.go", or
    ".usr/lib/..." from /): equal when ours ends with it."""
    if theirs is None or theirs == ours or ours is None:
        return theirs is None or theirs == ours
    t = theirs[2:] if theirs.startswith("./") else theirs.lstrip(".")
    return ours.endswith("/" + t.lstrip("/"))


def same_frame(ours, theirs):
    """One frame equal: function, file and line (dlv names an unknown pc `???`)."""
    fn, file, line = theirs
    if fn == "???":
        return True
    return ours[0] == fn and (line is None or ours[2] == line) and same_file(ours[1], file)


def same_frames(ours, theirs, depth=DLV_DEPTH):
    """Equal frames.  Past a signal frame (dlv's `???`, coreq's <signal handler
    called>) dlv goes on at the caller of the interrupted function: the frames
    coreq finds between the interrupted pc and that caller (the first raise of
    runtime.crash) are allowed there, the rest must be equal."""
    ours = ours[:depth]
    theirs = theirs[:depth]
    sig = next((i for i, t in enumerate(theirs) if t[0] == "???"), None)
    if sig is None or len(ours) < len(theirs):
        return len(ours) == len(theirs) and all(same_frame(o, t) for o, t in zip(ours, theirs))
    head = all(same_frame(o, t) for o, t in zip(ours[:sig + 1], theirs[:sig + 1]))
    rest = theirs[sig + 1:]
    tail = ours[len(ours) - len(rest):] if rest else []
    return head and all(same_frame(o, t) for o, t in zip(tail, rest))


def merged_frames(ours, theirs):
    """A goroutine running on a thread that switched to its system stack
    (runtime.systemstack): dlv gives the thread's pc, then the goroutine's own
    frames from its saved context; coreq gives the thread's frames down to
    runtime.systemstack, then the same goroutine frames.  True when that is
    all that differs."""
    if not theirs or not ours or not same_frame(ours[0], theirs[0]):
        return False
    rest = theirs[1:]
    if len(ours) <= len(rest):
        return False
    cut = len(ours) - len(rest)
    return (all(same_frame(o, t) for o, t in zip(ours[cut:], rest))
            and any(o[0] == "runtime.systemstack" for o in ours[:cut]))


def first_difference(ours, theirs):
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if not same_frame(o, t):
            return f"frame {i}: coreq {o} dlv {t}"
    return f"frames: coreq {len(ours)} dlv {len(theirs)}"


def compare(found, expected, merged=None):
    """(missed ids, phantom ids, ids with other frames, ids with another state).
    merged: a list that gets the ids whose frames differ only as merged_frames says
    (not counted as different)."""
    missed = sorted(set(expected) - set(found))
    phantom = sorted(set(found) - set(expected))
    both = sorted(set(found) & set(expected))
    frames = []
    for g in both:
        if same_frames(found[g].frames, expected[g].frames):
            continue
        if merged is not None and merged_frames(found[g].frames, expected[g].frames):
            merged.append(g)
        else:
            frames.append(g)
    states = [g for g in both if expected[g].state and found[g].state != expected[g].state]
    return missed, phantom, frames, states
