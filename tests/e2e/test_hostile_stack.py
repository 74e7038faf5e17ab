#!/usr/bin/env python3
"""Hostile stack memory never crashes or hangs the unwinder, and vdso frames
unwind through the vdso's own CFI, read from core memory.

The crashed thread's stack in a real core is overwritten with patterns that
trap naive unwinders: zeros, all ones, words that point at themselves (rbp
loops), words pointing back down the stack, random bytes.  Each run must exit
0 under ASan+UBSan within the timeout, every thread must say why its walk
ended, and the other threads must be unaffected.

For the vdso: the crashed thread's pc is moved to the entry of a vdso
function, with the original pc pushed as its return address.  The second
frame must then be the original first frame, found through CFI.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import tempfile

from coreq_test import coreq, coreq_json, done, ok, require_corpus, sanitizer_report


def phdrs(data):
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        yield struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)


def file_offset(data, addr):
    """The core file offset holding target address addr, or None."""
    for p_type, _, off, vaddr, _, filesz, _, _ in phdrs(data):
        if p_type == 1 and vaddr <= addr < vaddr + filesz:
            return off + addr - vaddr
    return None


def first_prstatus_regs(data):
    """File offset of the first NT_PRSTATUS's pr_reg."""
    for p_type, _, off, _, _, filesz, _, _ in phdrs(data):
        if p_type != 4:
            continue
        pos = off
        while pos + 12 <= off + filesz:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            desc = pos + 12 + ((namesz + 3) & ~3)
            if ntype == 1:
                return desc + 112
            pos = desc + ((descsz + 3) & ~3)
    return None


RIP, RSP, RBP = 16, 19, 4  # pr_reg slots


def run_stack(path):
    try:
        return coreq("stack", "--format", "json", "--no-cache", path, timeout=120)
    except subprocess.TimeoutExpired:
        return None


def hostile_patterns(sp, size):
    rnd = random.Random(1234)
    words = size // 8
    yield "zeros", b"\0" * size
    yield "all ones", b"\xff" * size
    yield "self-pointers", b"".join(struct.pack("<Q", sp + 8 * i) for i in range(words))
    yield "pointers back down", b"".join(struct.pack("<Q", sp) for _ in range(words))
    yield "random", bytes(rnd.getrandbits(8) for _ in range(size))


def test_hostile(case, tmp):
    core = case["core"]
    data = bytearray(open(core, "rb").read())
    regs = first_prstatus_regs(data)
    sp, = struct.unpack_from("<Q", data, regs + 8 * RSP)
    start = file_offset(data, sp - 64)
    ref, _ = coreq_json("stack", "--format", "json", "--no-cache", core)
    size = 4096
    for name, pattern in hostile_patterns(sp - 64, size):
        blob = bytearray(data)
        blob[start:start + size] = pattern[: len(blob) - start]
        for what, rbp in (("", None), (", rbp pointing at itself", sp)):
            if rbp is not None:
                struct.pack_into("<Q", blob, regs + 8 * RBP, rbp)
                struct.pack_into("<Q", blob, file_offset(blob, sp), sp)
            path = os.path.join(tmp, "hostile")
            open(path, "wb").write(blob)
            r = run_stack(path)
            good = r is not None and r.returncode == 0 and not sanitizer_report(r.stderr)
            ok(good, f"{case['case']}: stack of {name}{what}: no crash, no hang",
               r.stderr if r else "timed out")
            if not good:
                continue
            got = json.loads(r.stdout)
            ok(all(t["end"] for t in got["threads"]) and len(got["threads"][0]["frames"]) <= 256,
               f"{case['case']}: {name}{what}: every walk ends with a reason")
            ok(got["threads"][1:] == ref["threads"][1:],
               f"{case['case']}: {name}{what}: other threads unaffected")


def vdso_function(tmp, info, data):
    vdso = next(m for m in info["modules"] if m["path"] == "[vdso]")
    start, end = int(vdso["start"], 16), int(vdso["end"], 16)
    off = file_offset(data, start)
    path = os.path.join(tmp, "vdso.so")
    open(path, "wb").write(data[off:off + end - start])
    out = subprocess.run(["eu-readelf", "--dyn-syms", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and "clock_gettime" in parts[7]:
            return start + int(parts[1], 16), parts[7].split("@")[0]
    return None, None


def test_vdso(case, tmp):
    core = case["core"]
    data = bytearray(open(core, "rb").read())
    info, _ = coreq_json("info", "--format", "json", core)
    ref, _ = coreq_json("stack", "--format", "json", "--no-cache", core)
    fn_addr, fn_name = vdso_function(tmp, info, data)
    if not fn_addr:
        ok(False, "the vdso exports a clock_gettime function")
        return
    regs = first_prstatus_regs(data)
    rip, = struct.unpack_from("<Q", data, regs + 8 * RIP)
    rsp, = struct.unpack_from("<Q", data, regs + 8 * RSP)
    # As if the interrupted function had called the vdso function: push rip.
    struct.pack_into("<Q", data, file_offset(data, rsp - 8), rip)
    struct.pack_into("<Q", data, regs + 8 * RSP, rsp - 8)
    struct.pack_into("<Q", data, regs + 8 * RIP, fn_addr)
    path = os.path.join(tmp, "vdso-core")
    open(path, "wb").write(data)
    got, _ = coreq_json("stack", "--format", "json", "--no-cache", path)
    frames = got["threads"][0]["frames"]
    ok(frames[0]["module"] == "[vdso]" and fn_name in (frames[0]["function"] or ""),
       f"frame 0 is {fn_name} in the vdso, named from the in-core image", str(frames[0]))
    ok(len(frames) > 1 and frames[1]["trust"] == "cfi" and int(frames[1]["pc"], 16) == rip,
       "frame 1 comes from the vdso's own CFI", str(frames[:2]))
    native = [f["function"] for f in ref["threads"][0]["frames"] if f["kind"] == "native"]
    ours = [f["function"] for f in frames[1:] if f["kind"] == "native"]
    ok(ours == native, "the rest of the stack is the original one", [str(ours), str(native)])


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-hostile-")
    try:
        test_hostile(cases["threads8.O2"], tmp)
        test_vdso(cases["abort_deep.O2"], tmp)
    finally:
        shutil.rmtree(tmp)
    done()


main()
