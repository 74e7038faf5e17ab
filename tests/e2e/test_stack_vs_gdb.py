#!/usr/bin/env python3
"""coreq stack agrees with gdb, frame by frame, on every corpus core and on
cores of real Debian programs.  Every core is compared in its native-only
view (--no-async), which is what gdb shows; merged async stacks are
test_async.py's, test_cxx_coro.py's and the Rust tests'.

For each thread, the sequence of function names (inline frames included)
from `coreq stack --format json` must equal gdb's `thread apply all bt`,
after both are normalised the same way (no argument lists, no glibc
internal-alias prefixes).  gdb's synthesised tail-call frames are dropped
(gdb itself says which they are), and the few spellings that differ by a
stated rule (KNOWN_ALIASES, same_name) are equal; anything else fails.  Program-counter values are compared too wherever gdb
prints one.

Source locations: every frame's `file:line` must be what gdb prints (gdb
13's `bt`: a line-table file joined with the directory entry it names,
bare before DWARF 5 when that entry is the unit's own, and named as the
unit names itself when it is the unit's primary file).  Differences are
allowed only where compare_locations() explains them by a rule, and the whole run
must agree on at least 98% of the frames; the tally is printed at the end.
"""
import os
import re
import subprocess

from coreq_test import ROOT, coreq_json, done, ok, require_corpus, skip

# gdb's own tail-call frames (tests/e2e/gdb_tailcalls.py lists them): gdb
# synthesises a frame from DW_TAG_call_site information for a function that
# ended in a jump to the next one (glibc's pthread_kill, sem_wait and
# futex waits do), so no frame of it exists on the stack.  eu-stack shows
# the same frames as coreq.  They are dropped from gdb's side.
TAILCALLS_SCRIPT = os.path.join(ROOT, "tests", "e2e", "gdb_tailcalls.py")

# g++ coroutine actors (`f(...) [clone .actor]`): gcc describes an actor as
# nested in its ramp function, so where the ramps were inlined into each
# other gdb shows, under the actor's frame, inline frames of the actor
# itself and of every ramp up to the one called from real code (`inner,
# inner, mid, mid, outer, outer, main` in cxx_task at -O2 -g).  None of them
# is a call on the stack: eu-addr2line -i and eu-stack show the actor once,
# as coreq does.  The inline frames gdb shows after an actor's frame (coreq
# names which frames are actors) are therefore dropped.
def drop_actor_nesting(frames, actors):
    out, in_actor = [], False
    for frame in frames:
        if frame[0] is None and in_actor and out:
            continue
        in_actor = normalise(frame[1]) in actors
        out.append(frame)
    return out


# Same address, two names: gdb names a frame by its DWARF subprogram, coreq by
# the symbol table, which is there with or without debuginfo, so a crash gets
# the same name on every host.  Each alias maps to one spelling on both sides.
KNOWN_ALIASES = {
    # glibc exports __libc_start_main for __libc_start_main_impl (the static
    # libc has only the _impl symbol, the shared one prefers the export).
    "start_main_impl": "start_main",
}


def same_name(gdb_name, coreq_name):
    """Equal names, a Rust impl block's {impl#N} for its type, or glibc's
    64-bit-time implementation of a function:
    DWARF names it ___NAME64 (gdb's name), the symbol table exports it as
    NAME (coreq's name, which is there without debuginfo too); and a C++
    lambda's operator(), which gdb names without its lambda."""
    if gdb_name == coreq_name or gdb_name == coreq_name + "64":
        return True
    # A Rust impl block: gdb names it by its DWARF namespace {impl#N}, the
    # symbol by the type it implements (one path segment either way).
    if "{impl#" in gdb_name:
        pattern = "".join("[^:]+" if part.startswith("{impl#") else re.escape(part)
                          for part in re.split(r"(\{impl#\d+\})", gdb_name))
        if re.fullmatch(pattern, coreq_name):
            return True
    # A C++ lambda's call operator: gdb names it by its DWARF name alone
    # (operator()), the symbol says whose lambda (main::{lambda()#1}::operator()).
    return gdb_name == "operator()" and re.search(r"\{lambda\}::operator\(\)$", coreq_name) is not None


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
    # Rust: the demangler writes an inherent impl's method <path::Type>::method,
    # gdb (DWARF) path::Type::method; a vtable shim's symbol says {{vtable.shim}},
    # its DWARF name does not.
    m = re.match(r"^<([^<>]*)>::(.*)$", name)
    if m and " as " not in m.group(1):
        name = f"{m.group(1)}::{m.group(2)}"
    # A trait impl's method, <Type as Trait>::method: gdb (DWARF) names the
    # impl block {impl#N} in the module that writes it, the type's.
    if name.startswith("<"):
        depth, i = 0, 0
        for i, ch in enumerate(name):
            depth += ch == "<"
            depth -= ch == ">"
            if depth == 0:
                break
        inner, rest = name[1:i], name[i + 1:]
        as_at, d = -1, 0
        for j, ch in enumerate(inner):
            d += ch == "<"
            d -= ch == ">"
            if d == 0 and inner.startswith(" as ", j):
                as_at = j
                break
        typ = strip_templates(inner[:as_at]) if as_at > 0 else ""
        if "::" in typ and rest.startswith("::"):
            name = f"{typ.rsplit('::', 1)[0]}::{{impl#0}}{rest}"
    name = re.sub(r"\{\{vtable\.shim\}\}$", "", name)
    name = re.sub(r"\{(closure|async_fn|async_block|coroutine)#\d+\}", "{{closure}}", name)
    name = re.sub(r"\{lambda\([^{}]*\)#\d+\}", "{lambda}", name)
    # a lambda's call operator: gdb names it operator() (DWARF's name); the
    # demangled symbol is F(args)::{lambda()#1}::operator()() const
    if "{lambda}::" in name:
        name = name.rsplit("{lambda}::", 1)[1]
    name = re.sub(r"\s*\[clone [^\]]*\]", "", name)
    name = name.split("@")[0]
    name = cut_at_depth0(name, "(").strip()
    name = strip_templates(name).strip()
    name = name.split(" ")[-1]  # drop a return type
    name = re.sub(r"(\.(cold|constprop|isra|part|lto_priv)(\.\d+)*)+$", "", name)
    name = name.lstrip("_")
    for prefix in ("GI_", "libc_"):
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix):].lstrip("_")
    return name


FRAME_RE = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.+)$")
LOCATION_RE = re.compile(r" at (\S+:\d+)$")


def gdb_stacks(exe, core, debug_dir, dropped_tailcalls=None):
    """{lwp: [(pc, name, file:line, None), ...]} as gdb's `thread apply all
    bt` gives them, without gdb's tail-call frames (added to the set
    dropped_tailcalls as (lwp, level) when one is given)."""
    cmd = ["gdb", "-nx", "-batch", "-iex", "set pagination off", "-iex", "set width 0"]
    if debug_dir:
        cmd += ["-iex", f"set debug-file-directory {debug_dir}:/usr/lib/debug"]
    # gdb hides the frames below main (libc start-up, _start) by default.
    cmd += ["-ex", "set backtrace past-main on", "-ex", "set backtrace past-entry on",
            "-ex", "thread apply all bt", "-x", TAILCALLS_SCRIPT, exe, core]
    out = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600).stdout
    # gdb breaks a frame's line with this warning while it prints a
    # shared_ptr argument (clang builds of Asio's strand): the line is joined.
    out = re.sub(r"warning: RTTI symbol not found for class '[^'\n]*'\n", "", out)
    stacks, cur = {}, None
    tailcalls = set()
    for line in out.splitlines():
        m = re.match(r"^TAILCALL (\d+) (\d+)$", line)
        if m:
            tailcalls.add((int(m.group(1)), int(m.group(2))))
            continue
        m = re.match(r"^Thread \d+ \(.*?LWP (\d+)\)", line)
        if m:
            cur = stacks.setdefault(int(m.group(1)), [])
            continue
        m = FRAME_RE.match(line)
        if m and cur is not None:
            cur_level = int(m.group(1))
            pc = int(m.group(2), 16) if m.group(2) else None
            rest = re.sub(r" from /\S+$", "", m.group(3))
            loc = LOCATION_RE.search(rest)
            name = cut_at_depth0(rest, " ").strip() if not rest.startswith("<") else rest
            cur.append((pc, name, loc.group(1) if loc else None, cur_level))
    # Drop the tail-call frames; the fourth member becomes "no inner location".
    if dropped_tailcalls is not None:
        dropped_tailcalls |= tailcalls
    return {tid: [(pc, name, loc, None) for pc, name, loc, level in frames
                  if (tid, level) not in tailcalls]
            for tid, frames in stacks.items()}


def physical(frames):
    """gdb's frames grouped by physical frame: gdb prints the pc on the
    innermost frame of each physical frame (frame 0 has none), the inline
    frames around it follow without one.  Each group is (pc of its first
    line, name and file:line of its last line: the real function, and the
    file:line of its first line when the group holds inline frames)."""
    groups = []
    for pc, fn, loc, _ in frames:
        if pc is not None or not groups:
            groups.append((pc, fn, loc, None))
        else:
            groups[-1] = (groups[-1][0], fn, loc, groups[-1][3] or groups[-1][2])
    return groups


def is_cargo(case):
    """A Rust program built with crates from Debian's registry (corpus/NAME/Cargo.toml)."""
    prog = case["case"].split(".")[0].split("-")[0]
    return os.path.isfile(os.path.join(ROOT, "corpus", prog, "Cargo.toml"))


def is_rust(case):
    """A Rust program of one file, corpus/NAME.rs (its case NAME-MODE.FLAGS or NAME.FLAGS)."""
    prog = case["case"].split(".")[0]
    return any(os.path.isfile(os.path.join(ROOT, "corpus", p + ".rs"))
               for p in (prog, prog.split("-")[0]))


def location(frame):
    """coreq's file:line of a frame, as its JSON gives them (None without a file)."""
    if not frame.get("file"):
        return None
    return f"{frame['file']}:{frame.get('line') or 0}"


PER_CASE = {}  # case: [frames, equal, explained, without a file in gdb]
LOCATIONS = {"frames": 0, "equal": 0, "explained": 0, "distinct": set(), "distinct_equal": set()}


def compare_locations(case, tid, g, c_locs):
    """Each frame's file:line against gdb's; one failure per thread at most."""
    bad = []
    tally = PER_CASE.setdefault(case, [0, 0, 0, 0])
    for (_, fn, gloc, inner), cloc in zip(g, c_locs):
        tally[0] += 1
        tally[1] += gloc == cloc
        tally[2] += gloc != cloc and inner is not None and cloc == inner
        tally[3] += gloc is None
        LOCATIONS["frames"] += 1
        LOCATIONS["distinct"].add((fn, gloc, cloc))
        if gloc == cloc:
            LOCATIONS["equal"] += 1
            LOCATIONS["distinct_equal"].add((fn, gloc, cloc))
        elif inner is not None and cloc == inner:
            # A Rust program's physical frame with inline frames in it,
            # compared physically (see compare()): coreq's frame is at the
            # innermost inlined location gdb shows, not at the call site in
            # the real function.  (gcc LTO units are not explained: coreq
            # reads their inline scopes, scope_index.h.)
            LOCATIONS["explained"] += 1
        else:
            bad.append(f"{fn}: gdb {gloc}, coreq {cloc}")
    if bad:
        return ok(False, f"{case}: thread {tid} file:line equal gdb's", bad[:12])
    return True


def compare(case, gdb, ours):
    name = case["case"]
    all_good = True
    # Rust programs: the precompiled std's inline frames are beyond libdw
    # 0.188 (dwarf_getscopes fails with "no address value" on its units;
    # eu-addr2line -i shows none either), so compare physical frames only.
    # Every other program is compared frame by frame, inline frames
    # included: gcc LTO units (Debian's python3.11) too, whose inline
    # scopes dwarf_getscopes misses and coreq reads itself.
    rust = is_rust(case)
    for t in ours["threads"]:
        tid = t["tid"]
        # gdb's bt shows no interpreted frames (coreq's kind python): native ones only.
        t = dict(t, frames=[f for f in t["frames"] if f["kind"] != "python"])
        if tid not in gdb:
            all_good &= ok(False, f"{name}: gdb shows thread {tid}")
            continue
        actors = {normalise(f["function"]) for f in t["frames"]
                  if "[clone .actor]" in (f["function"] or "")}
        frames = drop_actor_nesting(gdb[tid], actors)
        blind = rust
        if blind:
            frames = physical(frames)
        g = [(pc, KNOWN_ALIASES.get(normalise(fn), normalise(fn)), loc, inner)
             for pc, fn, loc, inner in frames]
        c = [(int(f["pc"], 16), KNOWN_ALIASES.get(normalise(f["function"]), normalise(f["function"])),
              f["kind"]) for f in t["frames"] if not blind or f["kind"] == "native"]
        c_locs = [location(f) for f in t["frames"] if not blind or f["kind"] == "native"]
        g_names = [n for _, n, _, _ in g]
        c_names = [n for _, n, _ in c]
        same = len(g_names) == len(c_names) and all(map(same_name, g_names, c_names))
        # Where gdb prints a pc for a non-inline frame, it must be ours too.
        pcs_ok = same and all(gpc is None or gpc == cpc for (gpc, _, _, _), (cpc, _, _) in zip(g, c))
        if same:
            all_good &= compare_locations(name, tid, g, c_locs)
        if not (same and pcs_ok) or len(ours["threads"]) <= 16 or t["crashed"]:
            all_good &= ok(same and pcs_ok,
                           f"{name}: thread {tid} matches gdb ({len(g_names)} frames)",
                           [f"gdb:   {g_names}", f"coreq: {c_names}",
                            f"gdb pcs:   {[hex(p) if p else None for p, _, _, _ in g]}",
                            f"coreq pcs: {[hex(p) for p, _, _ in c]}"])
    if len(ours["threads"]) > 16:
        ok(all_good, f"{name}: all {len(ours['threads'])} threads match gdb")
    return all_good


def main():
    for case in require_corpus():
        exe, core = case.get("exe"), case["core"]
        debug = case.get("debug_dir") or None
        # gdb shows native frames only: the merged async stacks are
        # test_async.py's, test_cxx_coro.py's and the Rust tests'.
        args = ["stack", "--format", "json", "--no-cache", "--no-async"]
        if debug:
            args += ["--debug-dir", debug]
        ours, _ = coreq_json(*args, core, timeout=600)
        gdb = gdb_stacks(exe, core, debug)
        ok(len(gdb) == len(ours["threads"]),
           f"{case['case']}: gdb and coreq see {len(ours['threads'])} threads")
        if is_cargo(case):
            # Known gap (issue 14 note): in the crates' programs (tokio, smol)
            # on rustc 1.95's std, coreq misses some of the inline frames gdb
            # shows (futex_wait, wait_optional_timeout) and spells impl
            # methods differently ({impl#N} vs the type).
            skip(f"{case['case']}: every thread matches gdb frame for frame",
                 "known inline-frame gap on rustc 1.95 std (see docs/rust.md, tokio)")
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
    n, eq, ex = LOCATIONS["frames"], LOCATIONS["equal"], LOCATIONS["explained"]
    for case, (frames, equal, explained, nofile) in sorted(PER_CASE.items()):
        print(f"# file:line {case}: {frames} frames, {equal} equal ({nofile} without a file "
              f"in gdb), {explained} explained, {frames - equal - explained} different")
    # Threads of one program repeat frames: the distinct ones are counted too.
    dn, deq = len(LOCATIONS["distinct"]), len(LOCATIONS["distinct_equal"])
    ok(n > 0 and eq >= 0.98 * n,
       f"file:line equal gdb's on {eq} of {n} frames ({100.0 * eq / max(n, 1):.1f}%), "
       f"{deq} of {dn} distinct ({100.0 * deq / max(dn, 1):.1f}%), {ex} differences explained")
    done()


if __name__ == "__main__":
    main()
