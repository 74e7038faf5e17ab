#!/usr/bin/env python3
"""coreq's symbolizer names every frame of every corpus crash as elfutils does.

The story: a user has a core and wants each program counter on its stacks
turned into function, source file and line, inline frames included, for
PIE, non-PIE and static executables, and for a stripped one whose debuginfo
sits in a --debug-dir build-id tree.

eu-stack (-a) supplies the stack addresses and says which are return
addresses (it looks those up at pc - 1, as coreq must).  The helper
tests/tools/symbolize runs libcore's symbolizer alone on those addresses,
without coreq's unwinder, so only the symbolizer is under test.  The oracles:
  - eu-stack's name for the frame (from the symbol table) is the symbol
    table's name of coreq's outermost (real) frame, symbol version aside:
    its `symbol` where that differs from the function, else its function;
  - `eu-addr2line -i` gives the inline chain: the same number of frames, the
    same function names (the outermost by its DWARF subprogram, as gdb and
    eu-addr2line name it), and the same file and line for each, but
    for the innermost row, whose file:line is gdb's (`info line`, see
    gdb_lines.py: where line-table rows share an address gdb takes a
    statement row, and it gives none past the end of a sequence).
    Where eu-addr2line's chain differs, binutils' `addr2line -i` (BFD, a
    reader of its own) must give coreq's: libdw 0.188 finds no scope where
    an inlined call's abstract origin lies in another unit (gcc LTO units:
    Debian's python3.11; some Rust crates' units), and of subprograms
    sharing one range (glibc's clone3.S: __clone3, __GI___clone3, clone3)
    it takes the first where gdb and BFD take the last.  The count of such
    addresses is printed.
"""
import os
import re
import shutil
import struct
import subprocess

from coreq_test import BUILD, ROOT, done, ok, require_corpus, skip
from gdb_lines import gdb_lines

HELPER = os.path.join(BUILD, "asan", "tests", "tools", "symbolize")
MAX_PCS_PER_CORE = 48
STACK_RE = re.compile(r"^#\d+\s+(0x[0-9a-f]+)\s+(- 1)?\s*(.*)$")


def build_helper():
    r = subprocess.run(["make", "-C", ROOT, "--no-print-directory", f"BUILD={BUILD}", HELPER],
                       capture_output=True, text=True, errors="replace")
    return ok(r.returncode == 0 and os.access(HELPER, os.X_OK),
              "the symbolize helper builds", r.stdout + r.stderr)


def elfutils_args(case):
    args = ["--core", case["core"]]
    if case.get("exe"):
        args += ["-e", case["exe"]]
    if case.get("debug_dir"):
        args.append(f"--debuginfo-path=:.debug:/usr/lib/debug:{case['debug_dir']}")
    return args


def stack_pcs(case):
    """[(pc, is_return_address, eu-stack's symbol name)], unique, all threads."""
    r = subprocess.run(["eu-stack", "-a"] + elfutils_args(case), capture_output=True,
                       text=True, errors="replace", timeout=300)
    seen, out = set(), []
    for line in r.stdout.splitlines():
        m = STACK_RE.match(line)
        if not m:
            continue
        pc, is_ret, name = int(m.group(1), 16), bool(m.group(2)), m.group(3).strip() or None
        if (pc, is_ret) not in seen and len(out) < MAX_PCS_PER_CORE:
            seen.add((pc, is_ret))
            out.append((pc, is_ret, name))
    return out


def ours(case, pcs):
    """{(pc, is_ret): [(function, file, line, inlined, symbol)]} from the helper."""
    args = [HELPER]
    if case.get("debug_dir"):
        args += ["--debug-dir", case["debug_dir"]]
    args.append(case["core"])
    args += [f"{pc:#x}{'r' if is_ret else ''}" for pc, is_ret, _ in pcs]
    r = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=300)
    result = {}
    by_pc = {pc: is_ret for pc, is_ret, _ in pcs}
    for line in r.stdout.splitlines():
        f = [None if v == "-" else v for v in line.split("\t")]
        if len(f) != 7:
            continue
        pc = int(f[0], 16)
        result.setdefault((pc, by_pc.get(pc)), []).append((f[2], f[3], int(f[4]), f[5] == "inline",
                                                           f[6]))
    return result, r


def oracle_chains(case, pcs):
    """{lookup address: [(function, file, line)]} from eu-addr2line -i."""
    addrs = [pc - 1 if is_ret else pc for pc, is_ret, _ in pcs]
    r = subprocess.run(["eu-addr2line", "-i", "-f", "-C", "-a"] + elfutils_args(case)
                       + [hex(a) for a in addrs],
                       capture_output=True, text=True, errors="replace", timeout=300)
    chains, cur, fn = {}, None, None
    for line in r.stdout.splitlines():
        if re.match(r"^0x[0-9a-f]+$", line):
            cur = chains.setdefault(int(line, 16), [])
            fn = None
        elif cur is not None and fn is None:
            fn = re.sub(r" inlined at .*$", "", line)
        elif cur is not None:
            m = re.match(r"^(.*?):(\d+)(?::\d+)?$", line)
            file, lno = (m.group(1), int(m.group(2))) if m else (None, 0)
            cur.append((None if fn == "??" else fn, None if file == "??" else file, lno))
            fn = None
    return chains


RUST_LEGACY_ESCAPES = {"$u7b$": "{", "$u7d$": "}", "$LT$": "<", "$GT$": ">", "$C$": ",",
                       "$RF$": "&", "$BP$": "*", "$SP$": "@", "$u20$": " ", "$u27$": "'",
                       "$u5b$": "[", "$u5d$": "]", "$u7e$": "~", "$u3b$": ";", "$u2b$": "+",
                       "$u22$": '"', "$LP$": "(", "$RP$": ")"}


def rust_name(name):
    """elfutils' spelling of a Rust symbol made like coreq's: elfutils
    demangles legacy Rust symbols as C++ (keeping the ::h<hash> suffix and
    the $u7b$-style escapes) and leaves v0 (_R...) symbols mangled; it
    leaves a legacy symbol with LLVM's `.llvm.N` suffix mangled too."""
    if not name:
        return name
    if re.search(r"\.llvm\.\d+$", name):
        name = re.sub(r"\.llvm\.\d+$", "", name)
        r = subprocess.run(["c++filt"], input=name, capture_output=True, text=True)
        name = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else name
    if name.startswith("_R"):
        r = subprocess.run(["c++filt"], input=name, capture_output=True, text=True)
        out = r.stdout.strip() if r.returncode == 0 else name
        return re.sub(r"\[[0-9a-f]+\]", "", out)
    m = re.match(r"^(.*)::h[0-9a-f]{16}$", name)
    if not m:
        return name
    parts = []
    for seg in m.group(1).split("::"):
        if seg.startswith("_$"):
            seg = seg[1:]
        for k, v in RUST_LEGACY_ESCAPES.items():
            seg = seg.replace(k, v)
        parts.append(seg.replace("..", "::"))
    return "::".join(parts)


def base(path):
    return os.path.basename(path) if path else None


def short(name):
    """A C or C++ name without arguments, templates and qualifiers, and
    without glibc's internal-alias prefix (eu-addr2line names an inlined
    __libc_read by its linkage name __GI___libc_read)."""
    if not name:
        return None
    name = re.sub(r"^__GI_", "", name)
    # templates first: their arguments may hold parentheses (main(int)::<lambda()>)
    while re.search(r"<[^<>]*>", name):
        name = re.sub(r"<[^<>]*>", "", name)
    name = re.sub(r"\(.*$", "", name)
    return name.split("::")[-1].strip()


def chain_agrees(frames, chain):
    """coreq's frames have the oracle chain's functions, files and lines."""
    if not chain:
        return len(frames) == 1
    good = len(frames) == len(chain)
    for (fn, file, line, inlined, _), (o_fn, o_file, o_line) in zip(frames, chain):
        good &= base(file) == base(o_file) and line == o_line
        if o_fn:
            good &= short(fn) == short(rust_name(o_fn))
    return good


def check_pc(case, pc, is_ret, eu_name, frames, chain, bfd_chain=None):
    where = f"{case['case']}: {pc:#x}{' (return address)' if is_ret else ''}"
    diag = [f"coreq:        {frames}", f"eu-addr2line: {chain}", f"eu-stack:     {eu_name}"]
    if bfd_chain is not None:
        diag.append(f"addr2line:    {bfd_chain}")
    if not frames:
        return ok(False, f"{where} symbolized", diag)
    good = not frames[-1][3] and all(f[3] for f in frames[:-1])
    want_name = rust_name(eu_name.split("@")[0]) if eu_name else None
    good &= (frames[-1][4] or frames[-1][0]) == want_name
    good &= chain_agrees(frames, chain) or (bfd_chain is not None and chain_agrees(frames, bfd_chain))
    return ok(good, f"{where} is {frames[-1][0]} with {len(frames) - 1} inline frame(s)", diag)


def module_map(case):
    """[(start, end, bias, file)] of the core's modules as eu-unstrip -n finds
    them: file is the debug file where there is one (BFD reads it for the
    module's own addresses), bias the load address less the first PT_LOAD's
    page."""
    r = subprocess.run(["eu-unstrip", "-n"] + elfutils_args(case), capture_output=True,
                       text=True, errors="replace", timeout=300)
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        m = re.match(r"^0x([0-9a-f]+)\+0x([0-9a-f]+)$", f[0]) if len(f) >= 4 else None
        if not m or f[2] in ("-", "."):
            continue
        start, size = int(m.group(1), 16), int(m.group(2), 16)
        try:
            with open(f[2], "rb") as fh:
                ehdr = fh.read(64)
                phoff, = struct.unpack_from("<Q", ehdr, 0x20)
                phentsize, phnum = struct.unpack_from("<HH", ehdr, 0x36)
                fh.seek(phoff)
                ph = fh.read(phentsize * phnum)
        except (OSError, struct.error):
            continue
        loads = [struct.unpack_from("<IIQQ", ph, i * phentsize) for i in range(phnum)]
        vaddrs = [v for t, _, _, v in loads if t == 1]
        if not vaddrs:
            continue
        debug = f[3] if f[3] not in ("-", ".") else f[2]
        out.append((start, start + size, start - (min(vaddrs) & ~0xfff), debug))
    return out


def bfd_chains(case, addrs):
    """{lookup address: [(function, file, line)]} from binutils' addr2line -i."""
    by_file = {}
    for start, end, bias, path in module_map(case):
        for a in addrs:
            if start <= a < end:
                by_file.setdefault((path, bias), []).append(a)
    chains = {}
    for (path, bias), items in by_file.items():
        r = subprocess.run(["addr2line", "-i", "-f", "-C", "-a", "-e", path]
                           + [hex(a - bias) for a in items],
                           capture_output=True, text=True, errors="replace", timeout=300)
        cur, fn = None, None
        for line in r.stdout.splitlines():
            if re.match(r"^0x[0-9a-f]+$", line):
                cur = chains.setdefault(int(line, 16) + bias, [])
                fn = None
            elif cur is not None and fn is None:
                fn = line
            elif cur is not None:
                m = re.match(r"^(.*?):(\d+)(?: \(discriminator \d+\))?$", line)
                file, lno = (m.group(1), int(m.group(2))) if m else (None, 0)
                cur.append((None if fn == "??" else fn, None if file == "??" else file, lno))
                fn = None
    return chains


def has_aranges(exe):
    r = subprocess.run(["readelf", "-S", "-W", exe], capture_output=True, text=True)
    return ".debug_aranges" in r.stdout


def check_case(case):
    exe = case.get("exe")
    if exe and os.path.isfile(exe) and not has_aranges(exe) and "clang" in case["case"]:
        # clang writes no .debug_aranges, and libdwfl 0.188 then finds no unit
        # for eu-addr2line -i's inline chain (it names the function from the
        # symbol table alone); test_stack_vs_gdb.py compares these frames,
        # inline ones included, with gdb instead.
        skip(f"{case['case']}: symbolized like elfutils",
             "eu-addr2line finds no unit without .debug_aranges (clang); gdb is the oracle there")
        return
    pcs = stack_pcs(case)
    if not pcs:
        skip(f"{case['case']}: symbolized like elfutils", "eu-stack found no frames")
        return
    result, run = ours(case, pcs)
    ok(run.returncode == 0 and "Sanitizer" not in run.stderr,
       f"{case['case']}: the helper runs cleanly", run.stderr)
    chains = oracle_chains(case, pcs)
    files = [case["exe"], case["core"]] if case.get("exe") else [case["core"]]
    rows = gdb_lines(files, list(chains), case.get("debug_dir"))
    for addr, chain in chains.items():
        if chain and addr in rows:
            chain[0] = (chain[0][0],) + rows[addr]
    # Where eu-addr2line's chain is not coreq's, binutils' addr2line is asked too.
    differ = [pc - 1 if is_ret else pc for pc, is_ret, _ in pcs
              if not chain_agrees(result.get((pc, is_ret), []), chains.get(pc - 1 if is_ret else pc, []))]
    bfd = bfd_chains(case, differ) if differ and shutil.which("addr2line") else {}
    for addr, chain in bfd.items():
        if chain and addr in rows:
            chain[0] = (chain[0][0],) + rows[addr]
    by_bfd = 0
    for pc, is_ret, eu_name in pcs:
        frames = result.get((pc, is_ret), [])
        addr = pc - 1 if is_ret else pc
        chain = chains.get(addr, [])
        bfd_chain = bfd.get(addr) if addr in differ else None
        by_bfd += bfd_chain is not None and bool(frames) and chain_agrees(frames, bfd_chain)
        check_pc(case, pc, is_ret, eu_name, frames, chain, bfd_chain)
    if by_bfd:
        print(f"# {case['case']}: {by_bfd} address(es) whose chain eu-addr2line misses, "
              "binutils' addr2line gives as coreq")
    names = {short(f[0]) for frames in result.values() for f in frames}
    for fn in case.get("crash_chain", "").split():
        ok(short(fn) in names, f"{case['case']}: {fn} appears among the symbolized frames")


def main():
    cases = [c for c in require_corpus() if int(c.get("threads", "1") or 1) <= 100]
    if not build_helper():
        done()
    for case in cases:
        check_case(case)
    done()


main()
