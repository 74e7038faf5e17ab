#!/usr/bin/env python3
"""A one-frame core whose analysis scans the heap is decompressed once, not
twice: the pages holding the words the scan will look for are kept as the
stream passes, and the scan reads them alone (libcore/model/scan_keep.c).
The words come from the scan note an earlier core of the build left in the
cache (scan_notes), or for the first core of a build from the runtimes
detected on the core's head alone (libcore/analysis/scan_probe.c).

Subjects: programs on runtimes nobody on the team wrote (tokio, async-std,
smol, futures' thread pool, Asio's C++20 coroutines) and the corpus's own
Rust and C++ programs, each core compressed as one zstd frame and read with
the keep plan on.  For each:
  - the first run, with no note, probes the head and decompresses once:
    strace sees no second open of the compressed file;
  - it leaves a note; its ranges name the executable (the corpus's expect)
    and each lies within one section of it, as `readelf -SW` gives the
    sections (vtables in .data.rel.ro, coroutine resume functions in
    .text): the note says where in the file the words are, not what coreq
    found in this core;
  - the next run, with the note, decompresses once, and `info` says the
    note was looked for;
  - a note that no longer covers what the scan asks for (its range cut by
    one) is not trusted: strace sees the second decompression (so the check
    can fail); a damaged note is not armed, and the head is probed instead;
  - every run gives the raw core's stack JSON.
A program with no async runtime (threads8) has its first core's head probed
once: the empty note it leaves spares the next core of the build the probe.
A core whose analysis reads more of the heap than its scan finds (WHOLE) needs
a second pass anyway: the cache remembers that too (stream_hints), and its
next core is kept whole in one pass.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from coreq_test import COREQ, coreq, coreq_json, done, ok, read_expect, require_corpus, skip

PLANNED = {"COREQ_STREAM_KEEP_ALL_BELOW": "0"}
CLOCKS = re.compile(r'"[a-z_]*_us":[0-9]+')
# Cores whose keep plan drops heap that their scan reads (the corpus's other async cores
# are small enough to be kept whole, and need no feed at all).
SUBJECTS = ["tokio_tasks.O2", "tokio_tasks.O0"]
# Cores whose analysis reads more of the heap than the scan finds: async-task's claim walks
# malloc's chunks (smol, async-std), and a boxed future's decode follows its Box to wherever
# the future lies (tokio's boxed tasks and boxed main).  Their next core is kept whole.
WHOLE = ["smol_tasks.O2", "async_std_tasks.O2", "tokio_tasks-boxed.O2", "tokio_boxmain.O2"]


def normal(out):
    return CLOCKS.sub('"_us":0', re.sub(r'"path":"[^"]*"', '"path":"CORE"', out, count=1))


def stack(path, cache, log=None):
    """`coreq stack --format json` with the plan on; under strace when log is given."""
    env = dict(os.environ, COREQ_CACHE=cache, **PLANNED)
    cmd = [COREQ, "stack", "--format", "json", path]
    if log:
        # LeakSanitizer stops the world with ptrace, which it cannot do under strace
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
        cmd = ["strace", "-f", "-qq", "-e", "trace=openat,memfd_create", "-o", log] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env, timeout=300)
    return r.returncode, normal(r.stdout)


def reopened(log):
    """Whether the run opened the compressed core again (a second decompression): an open
    of /proc/self/fd/N for an N that is not the probe's memfd of the head."""
    memfds = set()
    again = False
    with open(log) as f:
        for line in f:
            m = re.search(r'memfd_create\("coreq-head".*= (\d+)', line)
            if m:
                memfds.add(m.group(1))
            m = re.search(r'"/proc/self/fd/(\d+)"', line)
            if m and m.group(1) not in memfds:
                again = True
    return again


def probed(log):
    """Whether the run probed the core's head (scan_probe.c writes it to a memfd)."""
    with open(log) as f:
        return 'memfd_create("coreq-head"' in f.read()


def notes(db, build_id):
    with sqlite3.connect(db) as con:
        row = con.execute("SELECT note FROM scan_notes WHERE build_id = ?", (build_id,)).fetchone()
    return row[0] if row else None


def set_note(db, build_id, note):
    with sqlite3.connect(db) as con:
        con.execute("UPDATE scan_notes SET note = ? WHERE build_id = ?", (note, build_id))


def build_id(exe):
    out = subprocess.run(["eu-readelf", "-n", exe], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def sections(exe):
    """{name: (lo, hi)} of the executable's allocated sections, and its lowest load address."""
    out = subprocess.run(["readelf", "-SW", "-lW", exe], capture_output=True, text=True).stdout
    secs = {}
    for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]{16})\s+[0-9a-f]+\s+([0-9a-f]+)", out):
        lo, size = int(m.group(2), 16), int(m.group(3), 16)
        if lo:
            secs[m.group(1)] = (lo, lo + size)
    loads = [int(m.group(1), 16) for m in re.finditer(r"LOAD\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", out)]
    return secs, (min(loads) & ~0xfff) if loads else 0


def check_note(name, note, exe):
    """Each line of the note names exe, and its range lies within one of exe's sections."""
    secs, base = sections(exe)
    lines = note.splitlines()
    good = bool(lines)
    where = []
    for line in lines:
        lo, hi, path = line.split(" ", 2)
        lo, hi = int(lo, 16) + base, int(hi, 16) + base
        inside = [s for s, (a, b) in secs.items() if a <= lo and hi < b]
        where.append((line, inside))
        good = good and path == exe and len(inside) >= 1
    ok(good, f"{name}: the note names {os.path.basename(exe)}, each range within one section "
       "(readelf -SW)", where)


def heap_core(tmp):
    """A fresh kernel core of corpus rust_async (O2) after `rust_async heap 64`: 64 MiB of
    written heap that the keep plan drops; None when the kernel writes none here."""
    exe = os.path.join(os.path.dirname(require_corpus()[0]["core"]), "..", "..", "bin", "O2",
                       "rust_async")
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if not os.path.exists(exe) or pattern.startswith("|"):
        return None
    d = os.path.join(tmp, "heap")
    os.makedirs(d)
    subprocess.run(["sh", "-c", f"ulimit -c unlimited; exec {os.path.realpath(exe)} heap 64"],
                   cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = [f for f in os.listdir(d) if f.startswith("core")]
    return (os.path.join(d, found[0]), os.path.realpath(exe)) if found else None


def prepare(name, core, exe, tmp):
    """The executable's build-id, the core as one zstd frame, a cache, and the raw core's
    stack JSON (run twice: the cache's per-build rows are made, then used as the
    compressed runs use them)."""
    bid = build_id(exe)
    z = os.path.join(tmp, name + ".zst")
    subprocess.run(["zstd", "-q", "-1", "-f", "-o", z, core], check=True)
    cache = os.path.join(tmp, name + ".db")
    stack(core, cache)
    return bid, z, cache, stack(core, cache)


def subject(name, core, exe, tmp, whole=False):
    """The checks on one core (see the header).  whole: its analysis reads more of the
    heap than the scan finds (WHOLE), so its next core is kept whole (stream_hints) and
    the note is not needed."""
    bid, z, cache, raw = prepare(name, core, exe, tmp)
    ok(raw[0] == 0, f"{name}: the raw core analyses")
    log = os.path.join(tmp, name + ".strace")
    ok(stack(z, cache, log) == raw, f"{name}: one frame, without a note: the raw core's stack JSON")
    ok(not reopened(log), f"{name}: without a note, the head is probed: no second decompression")
    note = notes(cache, bid)
    if not ok(note is not None, f"{name}: the first run leaves a note under the executable's "
              "build-id (eu-readelf's)", bid):
        return
    check_note(name, note, exe)
    rd, _ = coreq_json("info", "--format", "json", z, env=dict(PLANNED, COREQ_CACHE=cache))
    rd = rd.get("read", {})
    if whole:
        ok(rd.get("heap_hint") is True and rd.get("held_bytes") == rd.get("bytes"),
           f"{name}: its analysis read more of the heap: the next core is kept whole", rd)
        ok(stack(z, cache, log) == raw and not reopened(log),
           f"{name}: kept whole: one decompression, the raw core's stack JSON")
        return
    ok(rd.get("scan_hint") is True and rd.get("scan_gave_up") is False
       and rd.get("heap_hint") is False and 0 < rd.get("scan_kept_bytes", 0) <= 32 << 20,
       f"{name}: info says the note's words were looked for, and what pages hold them", rd)
    ok(stack(z, cache, log) == raw, f"{name}: read once with the note: the raw core's stack JSON")
    ok(not reopened(log), f"{name}: with the note, no second decompression")
    # a note cut by one at the top no longer covers the scan's words: not trusted
    lines = note.splitlines()
    lo, hi, path = lines[0].split(" ", 2)
    if int(hi, 16) > int(lo, 16):
        cut = "\n".join([f"{lo} {int(hi, 16) - 1:x} {path}"] + lines[1:]) + "\n"
        set_note(cache, bid, cut)
        ok(stack(z, cache, log) == raw and reopened(log),
           f"{name}: a note that does not cover the scan's words: decompressed again, "
           "the raw core's JSON")
    set_note(cache, bid, "zz damaged\n")
    ok(stack(z, cache, log) == raw and not reopened(log),
       f"{name}: a damaged note is not armed: the head is probed instead, the raw core's JSON")
    ok(notes(cache, bid) == note, f"{name}: the note is made again", [notes(cache, bid), note])


def no_scan(name, core, exe, tmp):
    """A program with no async runtime: its first one-frame core's head is probed, finds
    nothing, and says so in an empty note; the next core of the build is not probed."""
    bid, z, cache, raw = prepare(name, core, exe, tmp)
    log = os.path.join(tmp, name + ".strace")
    ok(stack(z, cache, log) == raw and probed(log),
       f"{name}: no async runtime: the first core's head is probed, the raw core's JSON")
    ok(notes(cache, bid) == "", f"{name}: the probe found nothing: an empty note", notes(cache, bid))
    ok(stack(z, cache, log) == raw and not probed(log) and not reopened(log),
       f"{name}: the next core of the build is not probed again, the raw core's JSON")


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-scan-note-")
    try:
        for name in SUBJECTS + WHOLE:
            case = cases.get(name)
            if not case:
                skip(f"{name}: a one-frame core read once with a scan note", "not in the corpus")
                continue
            core = case["core"]
            exe = read_expect(os.path.join(os.path.dirname(core), "expect"))["exe"]
            subject(name, core, exe, tmp, whole=name in WHOLE)
        case = cases.get("threads8.O2")
        if case:
            no_scan("threads8.O2", case["core"],
                    read_expect(os.path.join(os.path.dirname(case["core"]), "expect"))["exe"], tmp)
        made = heap_core(tmp)
        if made:
            subject("rust_async-heap64", made[0], made[1], tmp)
        else:
            skip("rust_async heap 64: a one-frame core read once with a scan note",
                 "no kernel core here (core_pattern pipes, or rust_async not built)")
    finally:
        shutil.rmtree(tmp)
    done()


main()
