#!/usr/bin/env python3
"""aarch64 recursion (issue 32, item 2): corpus/recurse.c dies a few levels
deep in a recursive function, directly (descend) or mutually (ping, pong),
built O0 and O2, static and dynamic, and run under qemu-aarch64
(corpus/make-aarch64-cores, cases recurse-*).  At O2 the faulting level keeps
no stack, so its caller's sp equals its own: an unwinder that asks every
step to move sp up stops there with `loop`.

Oracle: gdb-multiarch's `bt` on the same core, every frame's name and pc.
qemu's cores hold no page of the executable's file, so gdb cannot relocate
a PIE and finds no shared library in a dynamic core; it is given a copy of
the core whose executable first page (ELF and program headers, at AT_PHDR
minus e_phoff) is filled from the executable, and the sysroot of the
libraries.  coreq reads the core as qemu wrote it.
"""
import os
import shutil
import struct
import tempfile

from coreq_test import done, ok, sanitizer_report, skip
from test_aarch64 import cases, coreq_stack, frames_of, gdb_threads, norm, same_as_gdb

# Every recursive case make-aarch64-cores makes: shape x variant x link.
WANT = [f"recurse-{shape}.{variant}.{link}" for shape in ("direct", "mutual")
        for variant in ("O0", "O2") for link in ("static", "dynamic")]


def auxv_value(b, key):
    """The auxv entry key of an ELF core's NT_AUXV note, or None."""
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    for i in range(phnum):
        p_type, _, p_offset = struct.unpack_from("<IIQ", b, phoff + i * phentsize)
        p_filesz, = struct.unpack_from("<Q", b, phoff + i * phentsize + 32)
        at, end = p_offset, p_offset + p_filesz
        while p_type == 4 and at + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", b, at)
            desc = at + 12 + ((namesz + 3) & ~3)
            if ntype == 6:  # NT_AUXV
                for k in range(desc, desc + descsz - 15, 16):
                    a_type, a_val = struct.unpack_from("<QQ", b, k)
                    if a_type == key:
                        return a_val
            at = desc + ((descsz + 3) & ~3)
    return None


def with_exe_header(core, exe, out):
    """Copies core to out, giving the empty PT_LOAD where the executable's
    first page was mapped that page's bytes from the file.  Returns the
    load address filled, or None."""
    b = bytearray(open(core, "rb").read())
    e = open(exe, "rb").read()
    at_phdr = auxv_value(b, 3)  # AT_PHDR
    if at_phdr is None:
        return None
    base = at_phdr - struct.unpack_from("<Q", e, 32)[0]  # minus e_phoff
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    filled = None
    for i in range(phnum):
        off = phoff + i * phentsize
        p_type, = struct.unpack_from("<I", b, off)
        p_vaddr, = struct.unpack_from("<Q", b, off + 16)
        p_filesz, p_memsz = struct.unpack_from("<QQ", b, off + 32)
        if p_type == 1 and p_vaddr == base and p_filesz == 0:
            n = min(p_memsz, 4096, len(e))
            struct.pack_into("<Q", b, off + 8, len(b))
            struct.pack_into("<Q", b, off + 32, n)
            b += e[:n]
            filled = base
    with open(out, "wb") as f:
        f.write(b)
    return filled


def check(name, c, tmp):
    core = c["core"]
    if c["link"] == "dynamic":
        core = os.path.join(tmp, name + ".core")
        if not ok(with_exe_header(c["core"], c["exe"], core) is not None,
                  f"{name}: the executable's first page given to gdb's copy of the core"):
            return
    gdb = gdb_threads(c["exe"], core, c["sysroot"])
    chain = c["crash_chain"].split()
    crashed_gdb = next(iter(gdb.values()), [])
    # The oracle itself must show the recursion, or the comparison proves nothing.
    ok(len(gdb) == 1 and [n for _, n in crashed_gdb[:len(chain)]] == chain,
       f"{name}: gdb-multiarch shows {' > '.join(chain)}", str(crashed_gdb))
    d, r = coreq_stack(c, "--no-async")
    if not ok(d is not None and not sanitizer_report(r.stderr), f"{name}: coreq stack succeeds",
              r.stderr):
        return
    t = next(t for t in d["threads"] if t["crashed"])
    got = frames_of(t["frames"])
    ok(t["end"] != "loop" and same_as_gdb(crashed_gdb, got),
       f"{name}: every frame's pc and name equal gdb-multiarch's ({len(crashed_gdb)} frames)",
       [f"gdb   {[(hex(p) if p else p, n) for p, n in crashed_gdb]}",
        f"coreq {[(hex(p) if p else p, n) for p, n, _ in got]} end {t['end']}"])


def main():
    tools = all(shutil.which(t) for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64", "gdb-multiarch"))
    if not tools:
        skip("aarch64 recursion", "aarch64-linux-gnu-gcc, qemu-aarch64 or gdb-multiarch missing")
        done()
    cs = cases()
    missing = [n for n in WANT if n not in cs]
    ok(not missing, f"the aarch64 corpus has every recursive case ({len(WANT)})", missing)
    with tempfile.TemporaryDirectory(prefix="coreq-a64-rec-") as tmp:
        for name in WANT:
            if name in cs:
                check(name, cs[name], tmp)
    done()


if __name__ == "__main__":
    main()
