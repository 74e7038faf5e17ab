#!/usr/bin/env python3
"""`--sysroot D` on qemu-user's aarch64 cores (issue 32, item 3).

qemu's cores have no NT_FILE and hold no page of any file's text: the
modules come from the dynamic loader's list, which is found through the
executable's program headers.  The executable lies at its recorded path on
this machine, not under D (/usr/aarch64-linux-gnu); nothing outside D is
looked at (issue 45, finding 3), so it is named with --exe.

Oracle: gdb-multiarch with `set sysroot D`, on a copy of each core whose
executable first page is filled in from the file (as in
test_aarch64_recursion.py): its shared libraries (`info sharedlibrary`) and
every thread's `bt`.  Checked on every dynamic aarch64 corpus core:
- with --sysroot alone the executable is not taken from its recorded path
  (a warning says its frames are not named) and the libraries still come
  from the loader's list under D;
- with --exe, the executable is that file, the loader and libc under D, the
  same library files as gdb's, each of gdb's text ranges inside coreq's
  module;
- every thread's frames (pcs and names) equal gdb's;
- with the executable moved away (its path rewritten in a copy of the
  core), the libraries still come from the loader's list, a warning says
  the executable's frames are not named, and the crashed thread's frames up
  to the first one in the executable equal gdb's on the real core (for the
  cores that die in abort(), libc's abort and raise are named).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile

from coreq_test import coreq, done, ok, sanitizer_report, skip
from test_aarch64 import cases, frames_of, gdb_threads, same_as_gdb
from test_aarch64_recursion import auxv_value, with_exe_header


def gdb_libraries(exe, core, sysroot):
    """{file: text start} of gdb-multiarch's `info sharedlibrary`."""
    cmd = ["timeout", "120", "gdb-multiarch", "-nx", "-batch", "-iex", "set pagination off",
           "-iex", f"set sysroot {sysroot}", "-ex", "info sharedlibrary", exe, core]
    out = subprocess.run(cmd, capture_output=True, text=True, errors="replace").stdout
    libs = {}
    for line in out.splitlines():
        m = re.match(r"^(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+\S+(?: \(\*\))?\s+(/\S+)$", line)
        if m:
            libs[m.group(2)] = int(m.group(1), 16)
    return libs


def exe_range(core, exe):
    """The executable's [start, end) in the process: its PT_LOADs moved by
    its load address (AT_PHDR less e_phoff)."""
    e = open(exe, "rb").read()
    phoff, = struct.unpack_from("<Q", e, 32)
    phentsize, phnum = struct.unpack_from("<HH", e, 54)
    base = auxv_value(open(core, "rb").read(), 3) - phoff
    loads = []
    for i in range(phnum):
        p_type, = struct.unpack_from("<I", e, phoff + i * phentsize)
        p_vaddr, = struct.unpack_from("<Q", e, phoff + i * phentsize + 16)
        p_memsz, = struct.unpack_from("<Q", e, phoff + i * phentsize + 40)
        if p_type == 1:
            loads.append((p_vaddr, p_vaddr + p_memsz))
    return base + min(a for a, _ in loads), base + max(b for _, b in loads)


def coreq_json_of(*args):
    r = coreq(*args, timeout=300)
    return (json.loads(r.stdout) if r.returncode == 0 else None), r


def moved_copy(core, exe, out):
    """core with every copy of the executable's path (AT_EXECFN, argv[0])
    replaced by a path of the same length that does not exist."""
    b = open(core, "rb").read()
    old = exe.encode()
    new = b"/nonexistent/" + b"x" * (len(old) - len(b"/nonexistent/"))
    with open(out, "wb") as f:
        f.write(b.replace(old, new))
    return b.count(old), new.decode()


def check(name, c, tmp):
    sysroot, exe = c["sysroot"], c["exe"]
    filled = os.path.join(tmp, name + ".filled")
    with_exe_header(c["core"], exe, filled)
    gdb_libs = gdb_libraries(exe, filled, sysroot)
    ok(len(gdb_libs) >= 2, f"{name}: gdb-multiarch finds the libraries under {sysroot}", str(gdb_libs))

    info, r = coreq_json_of("info", "--format", "json", "--sysroot", sysroot, c["core"])
    mods = (info or {}).get("modules", [])
    found = {m["file"] for m in mods if m["status"] == "found" and m["path"] != "[vdso]"}
    ok(not any(m["path"] == exe and m["status"] == "found" for m in mods) and found == set(gdb_libs)
       and any(exe in l and "frames are not named" in l for l in r.stderr.splitlines()),
       f"{name}: --sysroot alone: the executable is not taken from its recorded path outside the "
       f"sysroot (a warning says so), the libraries found under it", [json.dumps(mods), r.stderr])

    info, r = coreq_json_of("info", "--format", "json", "--sysroot", sysroot, "--exe", exe, c["core"])
    mods = (info or {}).get("modules", [])
    main = [m for m in mods if m["path"] == exe]
    ok(main and main[0]["status"] == "found" and main[0]["file"] == exe and "--exe" not in r.stderr,
       f"{name}: --sysroot and --exe: the executable is the file --exe names",
       [json.dumps(main), r.stderr])
    libs = {m["file"]: m for m in mods if m["path"] not in (exe, "[vdso]")}
    ok(libs and set(libs) == set(gdb_libs) and all(m["status"] == "found" for m in libs.values())
       and all(int(libs[f]["start"], 16) <= a < int(libs[f]["end"], 16) for f, a in gdb_libs.items()),
       f"{name}: the same library files as gdb-multiarch's, found under the sysroot",
       [f"gdb   {sorted(gdb_libs)}", f"coreq {json.dumps(list(libs.values()))}"])

    gdb = gdb_threads(exe, filled, sysroot)
    d, r = coreq_json_of("stack", "--format", "json", "--no-cache", "--no-async", "--sysroot", sysroot,
                         "--exe", exe, c["core"])
    if not ok(d is not None and not sanitizer_report(r.stderr), f"{name}: coreq stack --sysroot --exe succeeds",
              r.stderr):
        return
    bad = []
    for t in d["threads"]:
        want, got = gdb.get(t["tid"]) or [], frames_of(t["frames"])
        if not same_as_gdb(want, got):
            bad += [f"thread {t['tid']}: gdb   {want}", f"thread {t['tid']}: coreq {[g[:2] for g in got]}"]
    ok(gdb and len(gdb) == len(d["threads"]) and not bad,
       f"{name}: every thread's pcs and names equal gdb-multiarch's ({len(d['threads'])} threads)", bad[:8])

    # The executable moved away: the libraries from the loader's list alone.
    moved = os.path.join(tmp, name + ".moved")
    count, gone = moved_copy(c["core"], exe, moved)
    info, r = coreq_json_of("info", "--format", "json", "--sysroot", sysroot, moved)
    mods = (info or {}).get("modules", [])
    found = {m["file"] for m in mods if m["status"] == "found" and m["path"] != "[vdso]"}
    ok(count >= 1 and found == set(gdb_libs) and not any(m["path"] == gone for m in mods)
       and any(gone in l and "frames are not named" in l for l in r.stderr.splitlines()),
       f"{name}: executable moved away: the libraries still found under the sysroot, and a warning",
       [json.dumps(mods), r.stderr])
    d, r = coreq_json_of("stack", "--format", "json", "--no-cache", "--no-async", "--sysroot", sysroot,
                         moved)
    crashed = next((t for t in (d or {}).get("threads", []) if t["crashed"]), None)
    want = gdb.get(crashed["tid"], []) if crashed else []
    lo, hi = exe_range(c["core"], exe)
    in_exe = [i for i, (pc, _) in enumerate(want) if pc and lo <= pc < hi]
    # gdb's frames in the libraries, and the pc of the first in the executable.
    prefix = want[:in_exe[0]] if in_exe else []
    got = frames_of(crashed["frames"]) if crashed else []
    ok(in_exe and crashed and not sanitizer_report(r.stderr) and same_as_gdb(prefix, got[:len(prefix)])
       and len(got) > len(prefix) and got[len(prefix)][0] == want[in_exe[0]][0],
       f"{name}: executable moved away: the frames up to the executable's first equal gdb-multiarch's "
       f"({len(prefix) + 1})", [f"gdb   {want}", f"coreq {[g[:2] for g in got]}", r.stderr[-500:]])
    if c["signal"] == "6":
        names = [n for _, n, _ in got]
        ok("abort" in names and "raise" in names, f"{name}: executable moved away: libc's abort and raise named",
           str(names))


def main():
    tools = all(shutil.which(t) for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64", "gdb-multiarch"))
    dyn = {n: c for n, c in cases().items() if c["link"] == "dynamic"}
    if not tools or not dyn:
        skip("aarch64 --sysroot", "no aarch64 corpus or gdb-multiarch")
        done()
    with tempfile.TemporaryDirectory(prefix="coreq-a64-sysroot-") as tmp:
        for name, c in dyn.items():
            check(name, c, tmp)
    done()


if __name__ == "__main__":
    main()
