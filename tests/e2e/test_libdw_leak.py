#!/usr/bin/env python3
"""Corrupt DWARF that makes libdw leak does not fail a sanitized run (issue 16, item 6).

libdw (elfutils 0.188) drops the scope array of dwarf_getscopes when the
call fails after its first pass: an inlined call whose DW_AT_abstract_origin
points past its unit.  Such a program is built here from gcc's own assembly
output with that one reference changed; it faults inside the inlined code,
and gdb writes its core (gcore), so the crashed pc is in the broken scope.
The ASan+UBSan coreq must then exit 0 with no LeakSanitizer report (it
failed every such run before), and still name frame 0 after the pc gdb saw.
"""
import os
import re
import shutil
import subprocess
import struct
import tempfile

import elfcore
from coreq_test import coreq, coreq_json, done, ok, sanitizer_report, skip

SOURCE = r"""
static volatile int sink;
static inline __attribute__((always_inline)) void leaf(int x)
{
	sink = x;
	*(volatile int *)(long)(x - 1) = x; /* argc - 1 == 0: faults here */
}
static inline __attribute__((always_inline)) void middle(int x)
{
	leaf(x);
	sink = 2;
}
int main(int argc, char **argv)
{
	(void)argv;
	middle(argc);
	return 0;
}
"""


def main():
    if not shutil.which("gdb") or not shutil.which("gcc"):
        skip("libdw leak on corrupt DWARF", "needs gcc and gdb")
        done()
    tmp = tempfile.mkdtemp(prefix="coreq-libdw-leak-")
    try:
        src, asm, bad = (os.path.join(tmp, n) for n in ("inl.c", "inl.s", "bad.s"))
        exe, core = os.path.join(tmp, "inl"), os.path.join(tmp, "inl.core")
        open(src, "w").write(SOURCE)
        subprocess.run(["gcc", "-O2", "-g", "-dA", "-S", src, "-o", asm], check=True)
        lines = open(asm).read().split("\n")
        dies = [i for i, l in enumerate(lines) if "(DIE" in l and "DW_TAG_inlined_subroutine)" in l]
        ok(len(dies) == 2, "gcc describes the two inlined calls", str(len(dies)))
        at = dies[-1] + 1
        ok("DW_AT_abstract_origin" in lines[at], "the innermost one starts with its abstract origin")
        lines[at] = re.sub(r"\.long\s+0x[0-9a-f]+", ".long\t0xfff0", lines[at])
        open(bad, "w").write("\n".join(lines))
        subprocess.run(["gcc", "-g", bad, "-o", exe], check=True)
        g = subprocess.run(["gdb", "-q", "-batch", "-ex", "run", "-ex", f"gcore {core}", exe],
                           capture_output=True, text=True, timeout=120)
        ok(os.path.exists(core), "gdb stops at the fault and writes a core", g.stdout + g.stderr)
        if not os.path.exists(core):
            done()
        data = open(core, "rb").read()
        prstatus = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS]
        pc, = struct.unpack_from("<Q", prstatus[0]["desc"], 112 + 16 * 8)  # pr_reg rip
        r = coreq("stack", "--no-cache", core)
        ok(not sanitizer_report(r.stderr), "no LeakSanitizer report", r.stderr[-2000:])
        ok(r.returncode == 0, "stack exits 0", r.stderr[-2000:])
        doc, _ = coreq_json("stack", "--no-cache", "--format", "json", core)
        top = doc["threads"][0]["frames"][0]
        ok(int(top["pc"], 16) == pc and top["function"] == "main",
           "frame 0 is the faulting pc, in main", str(top))
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
