#!/usr/bin/env python3
"""Bad input never crashes coreq: each case gets one line `coreq: PATH: reason`
and exit 1, or, when only memory is missing, everything the notes hold plus
one warning line and exit 0.  Inputs are mutations of a real corpus core;
the run is under ASan+UBSan, so an out-of-bounds read fails the test."""
import json
import os
import shutil
import struct
import subprocess
import tempfile

from coreq_test import coreq, done, ok, require_corpus, sanitizer_report


def layout(data):
    """Offsets of the ELF header parts, from the core's own headers."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    phdrs = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align = \
            struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        phdrs.append(dict(index=i, type=p_type, offset=p_offset, filesz=p_filesz,
                          hdr=phoff + i * phentsize))
    return phoff, phentsize, phnum, phdrs


def expect_error(path, name, reason_part=None):
    r = coreq("info", path)
    lines = r.stderr.strip().splitlines()
    good = (r.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"coreq: {path}: ")
            and (reason_part is None or reason_part in lines[0]))
    ok(good and not sanitizer_report(r.stderr), f"{name}: exit 1 with one line" +
       (f" saying '{reason_part}'" if reason_part else ""),
       [f"exit {r.returncode}"] + lines[:20])


def expect_partial(path, name, nthreads):
    r = coreq("info", "--format", "json", path)
    lines = r.stderr.strip().splitlines()
    good = (r.returncode == 0 and len(lines) == 1 and lines[0].startswith(f"coreq: {path}: warning:")
            and "missing" in lines[0])
    ok(good and not sanitizer_report(r.stderr), f"{name}: exit 0 with one warning line",
       [f"exit {r.returncode}"] + lines[:20])
    try:
        d = json.loads(r.stdout)
    except ValueError:
        d = {}
    ok(f'"truncated":true' in r.stdout and len(d.get("threads", [])) == nthreads,
       f"{name}: all {nthreads} threads reported and marked truncated")


def main():
    cases = {c["case"]: c for c in require_corpus()}
    case = cases.get("threads8.O0") or next(iter(cases.values()))
    data = open(case["core"], "rb").read()
    phoff, phentsize, phnum, phdrs = layout(data)
    notes = [p for p in phdrs if p["type"] == 4]
    loads = [p for p in phdrs if p["type"] == 1 and p["filesz"] > 0]
    nthreads = int(case.get("threads") or 1)
    tmp = tempfile.mkdtemp(prefix="coreq-bad-")

    def write(name, blob):
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(blob)
        return p

    try:
        expect_error(write("empty", b""), "empty file", "empty file")
        expect_error(write("text", b"hello, this is not a core\n" * 10), "non-ELF file", "not an ELF")
        exe = case.get("exe")
        if exe and os.path.exists(exe):
            expect_error(exe, "an ELF executable", "not a core file")
        expect_error(write("dir-check", data[:3]), "3 bytes of ELF magic", "truncated")
        # Truncation points inside the headers and the notes: fatal.
        n = notes[0]
        points = {
            "inside e_ident": 10,
            "inside the ELF header": 40,
            "inside the first program header": phoff + 20,
            "inside the last program header": phoff + phentsize * phnum - 1,
            "at the start of the notes": n["offset"] + 10,
            "in the middle of the notes": n["offset"] + n["filesz"] // 2,
            "one byte short of the notes' end": n["offset"] + n["filesz"] - 1,
        }
        for what, cut in points.items():
            expect_error(write(f"cut-{cut}", data[:cut]), f"core truncated {what} (at {cut})",
                         "truncated")
        # Truncation points inside memory: partial results.
        first, last = loads[0], loads[-1]
        mem_points = {
            "inside the first memory segment": first["offset"] + 100,
            "in the middle of memory": (first["offset"] + last["offset"] + last["filesz"]) // 2,
            "one byte short of the end": len(data) - 1,
        }
        for what, cut in mem_points.items():
            expect_partial(write(f"mcut-{cut}", data[:cut]), f"core truncated {what} (at {cut})",
                           nthreads)
        # A segment whose offset is past the end of the file.
        blob = bytearray(data)
        struct.pack_into("<Q", blob, loads[1]["hdr"] + 8, 1 << 40)
        expect_partial(write("seg-past-eof", bytes(blob)), "segment offset past EOF", nthreads)
        # A note whose size overruns its segment.
        blob = bytearray(data)
        struct.pack_into("<I", blob, n["offset"] + 4, 0x7ffffff0)
        expect_error(write("note-overrun", bytes(blob)), "note size overruns the segment",
                     "malformed note")
        # A note segment that claims to extend past the file.
        blob = bytearray(data)
        struct.pack_into("<Q", blob, n["hdr"] + 32, len(data))
        expect_error(write("notes-past-eof", bytes(blob)), "note segment past EOF", "truncated")
        # An NT_PRSTATUS that is too short to hold registers.
        blob = bytearray(data)
        struct.pack_into("<I", blob, n["offset"] + 4, 100)
        expect_error(write("short-prstatus", bytes(blob)), "NT_PRSTATUS too short")
        # Program headers that run off the end of the file.
        blob = bytearray(data)
        struct.pack_into("<Q", blob, 0x20, len(data) - 100)
        expect_error(write("phoff", bytes(blob)), "program headers past the end of the file",
                     "truncated")
        # A 32-bit core and a foreign machine.
        blob = bytearray(data)
        blob[4] = 1
        expect_error(write("class32", bytes(blob)), "32-bit core", "not supported yet")
        blob = bytearray(data)
        struct.pack_into("<H", blob, 0x12, 0x2b)  # EM_SPARCV9
        expect_error(write("machine", bytes(blob)), "unsupported machine", "not supported yet")
        # Corrupt and truncated compressed streams.
        zpath = write("core.zst", subprocess.run(["zstd", "-q", "-c"], input=data,
                                                 capture_output=True, check=True).stdout)
        z = bytearray(open(zpath, "rb").read())
        for i in range(len(z) // 3, len(z) // 3 + 64):
            z[i] ^= 0x5a
        expect_error(write("corrupt.zst", bytes(z)), "corrupt zstd stream", "compressed")
        expect_error(write("short.zst", bytes(z[: len(z) // 2])), "truncated zstd stream",
                     "compressed")
        gz = subprocess.run(["gzip", "-c"], input=data, capture_output=True, check=True).stdout
        expect_error(write("short.gz", gz[: len(gz) // 2]), "truncated gzip stream", "compressed")
        # A missing file and a directory.
        expect_error(os.path.join(tmp, "no-such-core"), "missing file", "No such file")
        expect_error(tmp, "a directory", "directory")
    finally:
        shutil.rmtree(tmp)
    done()


main()
