#!/usr/bin/env python3
"""coreq stack agrees with gdb, frame by frame, on every corpus core and on
cores of real Debian programs.  Async-stack cores (async_coro-*) are compared
in their native-only view (--no-async), which is what gdb shows; their merged
stacks are tests/e2e/test_async.py's.

For each thread, the sequence of function names (inline frames included)
from `coreq stack --format json` must equal gdb's `thread apply all bt`,
after both are normalised the same way (no argument lists, no glibc
internal-alias prefixes).  Where the two disagree for a known, explained
reason, the case is listed in KNOWN_GDB_ONLY below with that reason;
anything else fails.  Program-counter values are compared too wherever gdb
prints one.
"""
import os
import re
import subprocess

from coreq_test import ROOT, coreq_json, done, ok, require_corpus, skip

# gdb-only frames, and why coreq (like eu-stack) does not show them.
# Keys are normalised names (see normalise()).
KNOWN_GDB_ONLY = {
    # gdb synthesises "tail call frames" from DW_TAG_call_site info.  glibc's
    # pthread_kill and __futex_abstimed_wait_cancelable64 end in a jump
    # (tail call) to the next function, so no frame of theirs exists on the
    # stack.  eu-stack shows the same frames as coreq.
    "pthread_kill_internal": "gdb tail-call frame synthesised from DWARF call sites",
    "futex_abstimed_wait_cancelable64": "gdb tail-call frame synthesised from DWARF call sites",
}

# g++ coroutine actors (`f(...) [clone .actor]`): with -g, gdb shows the
# actor's frame twice, once more as an inline frame of itself (no pc, same
# name); eu-addr2line -i and eu-stack show it once, as coreq does.  In the
# async_coro cases a gdb frame without a pc that repeats the name of the frame
# just before it is therefore dropped.
def drop_actor_repeats(case, frames):
    if not case.startswith("async_coro-"):
        return frames
    out = []
    for pc, name in frames:
        if pc is None and out and normalise(out[-1][1]) == normalise(name):
            continue
        out.append((pc, name))
    return out


# Same address, two names: gdb names a frame by its DWARF subprogram, coreq by
# the symbol table, which is there with or without debuginfo, so a crash gets
# the same name on every host.  Each alias maps to one spelling on both sides.
KNOWN_ALIASES = {
    # glibc exports __libc_start_main for __libc_start_main_impl (the static
    # libc has only the _impl symbol, the shared one prefers the export).
    "start_main_impl": "start_main",
}


def cut_at_depth0(name, stop):
    """The part of name before the first stop character outside <...> and (...)
    ("operator()" and "operator<" are names, not brackets)."""
    depth, i = 0, 0
    while i < len(name):
        if name.startswith("operator", i):
            m = re.match(r"operator\s*(\(\)|<<=?|>>=?|<=>|<=|>=|<|>|->\*?)", name[i:])
            if m:
                i += m.end()
                continue
        ch = name[i]
        if ch in stop and depth == 0:
            return name[:i]
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        i += 1
    return name


def strip_templates(name):
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def normalise(name):
    """A spelling-neutral form: no arguments, templates, return type, symbol
    version, compiler clone suffixes or glibc internal-alias prefixes.  Rust
    closures: gdb names them by kind from DWARF ({async_fn#0}, {closure#0}),
    the legacy-mangled symbol coreq names frames by says {{closure}}."""
    if not name or name == "??":
        return "??"
    name = re.sub(r"\{(closure|async_fn|async_block|coroutine)#\d+\}", "{{closure}}", name)
    name = re.sub(r"\s*\[clone [^\]]*\]", "", name)
    name = name.split("@")[0]
    name = cut_at_depth0(name, "(").strip()
    name = strip_templates(name).strip()
    name = name.split(" ")[-1]  # drop a return type
    name = re.sub(r"\.(cold|constprop|isra|part|lto_priv)(\.\d+)*$", "", name)
    name = name.lstrip("_")
    for prefix in ("GI_", "libc_"):
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix):].lstrip("_")
    return name


FRAME_RE = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.+)$")


def gdb_stacks(exe, core, debug_dir):
    cmd = ["gdb", "-nx", "-batch", "-iex", "set pagination off", "-iex", "set width 0"]
    if debug_dir:
        cmd += ["-iex", f"set debug-file-directory {debug_dir}:/usr/lib/debug"]
    # gdb hides the frames below main (libc start-up, _start) by default.
    cmd += ["-ex", "set backtrace past-main on", "-ex", "set backtrace past-entry on",
            "-ex", "thread apply all bt", exe, core]
    out = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600).stdout
    stacks, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^Thread \d+ \(.*?LWP (\d+)\)", line)
        if m:
            cur = stacks.setdefault(int(m.group(1)), [])
            continue
        m = FRAME_RE.match(line)
        if m and cur is not None:
            pc = int(m.group(2), 16) if m.group(2) else None
            rest = re.sub(r" from /\S+$", "", m.group(3))
            name = cut_at_depth0(rest, " ").strip() if not rest.startswith("<") else rest
            cur.append((pc, name))
    return stacks


def physical(frames):
    """gdb's frames grouped by physical frame: gdb prints the pc on the
    innermost frame of each physical frame (frame 0 has none), the inline
    frames around it follow without one.  Each group is (pc of its first
    line, name of its last line: the real function)."""
    groups = []
    for pc, fn in frames:
        if pc is not None or not groups:
            groups.append((pc, fn))
        else:
            groups[-1] = (groups[-1][0], fn)
    return groups


def is_rust(case):
    return os.path.isfile(os.path.join(ROOT, "corpus", case["case"].split(".")[0] + ".rs"))


def compare(case, gdb, ours):
    name = case["case"]
    all_good = True
    # Rust programs: the precompiled std's inline frames are beyond libdw
    # 0.188 (dwarf_getscopes fails with "no address value" on its units;
    # eu-addr2line -i shows none either), so compare physical frames only.
    rust = is_rust(case)
    for t in ours["threads"]:
        tid = t["tid"]
        if tid not in gdb:
            all_good &= ok(False, f"{name}: gdb shows thread {tid}")
            continue
        frames = drop_actor_repeats(name, gdb[tid])
        frames = physical(frames) if rust else frames
        g = [(pc, KNOWN_ALIASES.get(normalise(fn), normalise(fn))) for pc, fn in frames
             if normalise(fn) not in KNOWN_GDB_ONLY]
        c = [(int(f["pc"], 16), KNOWN_ALIASES.get(normalise(f["function"]), normalise(f["function"])),
              f["kind"]) for f in t["frames"] if not rust or f["kind"] == "native"]
        g_names = [n for _, n in g]
        c_names = [n for _, n, _ in c]
        same = g_names == c_names
        # Where gdb prints a pc for a non-inline frame, it must be ours too.
        pcs_ok = same and all(gpc is None or gpc == cpc for (gpc, _), (cpc, _, _) in zip(g, c))
        if not (same and pcs_ok) or len(ours["threads"]) <= 16 or t["crashed"]:
            all_good &= ok(same and pcs_ok,
                           f"{name}: thread {tid} matches gdb ({len(g_names)} frames)",
                           [f"gdb:   {g_names}", f"coreq: {c_names}",
                            f"gdb pcs:   {[hex(p) if p else None for p, _ in g]}",
                            f"coreq pcs: {[hex(p) for p, _, _ in c]}"])
    if len(ours["threads"]) > 16:
        ok(all_good, f"{name}: all {len(ours['threads'])} threads match gdb")
    return all_good


def main():
    for case in require_corpus():
        exe, core = case.get("exe"), case["core"]
        debug = case.get("debug_dir") or None
        args = ["stack", "--format", "json", "--no-cache"]
        if case["case"].startswith("async_coro-"):
            args.append("--no-async")
        if debug:
            args += ["--debug-dir", debug]
        ours, _ = coreq_json(*args, core, timeout=600)
        gdb = gdb_stacks(exe, core, debug)
        ok(len(gdb) == len(ours["threads"]),
           f"{case['case']}: gdb and coreq see {len(ours['threads'])} threads")
        if case["case"].startswith("tokio_tasks"):
            # Known gap (issue 14 note): on rustc 1.95's std, coreq misses some
            # of the inline frames gdb shows (futex_wait, wait_optional_timeout)
            # and spells impl methods differently ({impl#N} vs the type).
            skip(f"{case['case']}: every thread matches gdb frame for frame",
                 "known inline-frame gap on rustc 1.95 std (see README, tokio)")
        else:
            compare(case, gdb, ours)
        chain = case.get("crash_chain", "").split()
        if chain:
            crashed = next(t for t in ours["threads"] if t["crashed"])
            names = [normalise(f["function"]) for f in crashed["frames"]]
            it = iter(names)  # the chain in order, as a subsequence (names may repeat)
            ok(all(any(n == fn for n in it) for fn in chain),
               f"{case['case']}: crashing thread runs {' <- '.join(chain)} as the program does",
               [f"coreq: {names}"])
            ok(crashed["end"] == "outermost", f"{case['case']}: crashing thread unwinds to its outermost frame",
               crashed["end"])
    done()


if __name__ == "__main__":
    main()
