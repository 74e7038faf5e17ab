#!/usr/bin/env python3
"""One-stream compressed cores whose headers lie to the keep plan
(libcore/model/stream_image.c), under ASan: forged cores built here, each
zstd-compressed as one frame (systemd-coredump's form) and read with the
keep plan on every core (COREQ_STREAM_KEEP_ALL_BELOW=0).

- every register of a thread, the stack pointer too, at the start of a
  1 GiB segment: the plan keeps at most 16 MiB above a stack pointer, so
  `coreq stack` stays within 96 MiB (it kept the whole GiB before review);
- 2,000 program headers over the same 128 MiB and 840 threads of distinct
  registers in it: the plan gives up (it is bounded) and the core is
  spooled, within 2 s and 256 MiB;
- a head shorter than the bytes read to parse it, a stream cut short, and a
  stream longer than its headers say: the raw file's own output.

Each must give the same output as the same bytes uncompressed (the oracle:
the raw file, read without any plan), never a sanitizer report."""
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time

from coreq_test import COREQ, done, ok

PLANNED = dict(os.environ, COREQ_STREAM_KEEP_ALL_BELOW="0")
V = 0x7F0000000000
CLOCKS = re.compile(r'"[a-z_]*_us":[0-9]+')


def note(name, ntype, desc):
    n = name + b"\0"
    pad = lambda b: b + b"\0" * ((4 - len(b) % 4) % 4)  # noqa: E731
    return struct.pack("<III", len(n), len(desc), ntype) + pad(n) + pad(desc)


def prstatus(regs):
    d = bytearray(336)
    struct.pack_into("<I", d, 32, 1234)
    for i, r in enumerate(regs):
        struct.pack_into("<Q", d, 112 + 8 * i, r)
    return bytes(d)


def header(phdrs):
    eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, len(phdrs), 0, 0, 0)
    return bytearray(eh + b"".join(struct.pack("<IIQQQQQQ", *p) for p in phdrs))


def sp_bomb(path, mib):
    notes = note(b"CORE", 1, prstatus([V] * 27))
    size = mib << 20
    out = header([(4, 0, 4096, 0, 0, len(notes), 0, 1), (1, 6, 8192, V, 0, size, size, 4096)])
    out += b"\0" * (4096 - len(out)) + notes
    out += b"\0" * (8192 - len(out))
    with open(path, "wb") as f:
        f.write(out)
        f.truncate(8192 + size)


def dup_loads(path, p, n):
    notes = b"".join(note(b"CORE", 1, prstatus([V + 4096 * (i * 27 + j) for j in range(27)]))
                     for i in range(n))
    noff = ((64 + 56 * (p + 1)) + 4095) & ~4095
    load_off = (noff + len(notes) + 4095) & ~4095
    out = header([(4, 0, noff, 0, 0, len(notes), 0, 1)] +
                 [(1, 6, load_off, V, 0, 128 << 20, 128 << 20, 4096)] * p)
    out += b"\0" * (noff - len(out)) + notes
    out += b"\0" * (load_off - len(out))
    with open(path, "wb") as f:
        f.write(out)
        f.truncate(load_off + (128 << 20))


def tiny(path):
    out = bytearray(b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8)
    out += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 0, 0, 0, 64, 56, 1, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(out)


def run(args, env=None):
    """(exit status, JSON output with the path and clocks blanked, stderr, seconds, peak KiB)."""
    t = time.monotonic()
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        p = subprocess.Popen([COREQ, "stack", "--format", "json", "--no-cache", *args],
                             stdout=fo, stderr=fe, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(errors="replace"), fe.read().decode(errors="replace")
    out = CLOCKS.sub('"_us":0', re.sub(r'"path":"[^"]*"', '"path":"CORE"', out, count=1))
    err = "\n".join(ln.split(": ", 2)[-1] for ln in err.splitlines())
    return os.waitstatus_to_exitcode(status), out, err, time.monotonic() - t, ru.ru_maxrss


def zstd(raw, z):
    subprocess.run(["zstd", "-q", "-f", "-1", "-T0", "-o", z, raw], check=True)


def main():
    tmp = tempfile.mkdtemp(prefix="coreq-stream-hostile-")
    try:
        cases = []
        raw = os.path.join(tmp, "sp.core")
        sp_bomb(raw, 1024)
        cases.append(("a stack pointer at the start of a 1 GiB segment", raw, 96 << 10, 20))
        raw = os.path.join(tmp, "dup.core")
        dup_loads(raw, 2000, 840)
        cases.append(("2,000 program headers over one 128 MiB segment, 840 threads", raw, 256 << 10, 2))
        raw = os.path.join(tmp, "tiny.core")
        tiny(raw)
        cases.append(("a head shorter than the bytes read to parse it", raw, 64 << 10, 2))
        for what, raw, kib, secs in cases:
            z = raw + ".zst"
            zstd(raw, z)
            want = run([raw])
            got = run([z], PLANNED)
            sane = "Sanitizer" not in got[2] and "runtime error" not in got[2]
            ok(sane and got[0] == want[0] and got[1] == want[1] and got[2] == want[2],
               f"{what}: the raw file's output, no sanitizer report",
               [got[0], want[0], got[2][-400:], want[2][-400:]])
            ok(got[4] < kib and got[3] < secs,
               f"{what}: {got[4] // 1024} MiB (bound {kib // 1024} MiB), {got[3]:.2f} s (bound {secs} s)")
            os.unlink(z)
        # A stream cut short, and one longer than its headers say.
        raw = os.path.join(tmp, "sp.core")
        with open(raw, "rb") as f:
            head = f.read(64 << 20)
        for what, data in (("a stream cut short", head[: 30_000_000]),
                           ("a stream longer than its headers say", head + b"\xaa" * 5000)):
            path = os.path.join(tmp, "cut.core")
            with open(path, "wb") as f:
                f.write(data)
            if what.endswith("say"):
                with open(path, "r+b") as f:  # the headers claim 16 MiB, the file holds more
                    f.seek(64 + 56 + 32)
                    f.write(struct.pack("<QQ", 16 << 20, 16 << 20))
            zstd(path, path + ".zst")
            want, got = run([path]), run([path + ".zst"], PLANNED)
            ok(got[:3] == want[:3] and "Sanitizer" not in got[2],
               f"{what}: the raw file's output, no sanitizer report", [got[2][-300:], want[2][-300:]])
    finally:
        shutil.rmtree(tmp)
    done()


main()
