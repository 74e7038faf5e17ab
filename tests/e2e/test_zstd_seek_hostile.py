#!/usr/bin/env python3
"""Seekable zstd cores whose seek table lies, under ASan: offsets out of
range, overlapping frames, a frame of 0 bytes, a table larger than the file,
a truncated frame, and frames that decompress to more (or less) than the
table says.  Each gives the honest core's output (a table that does not tile
the file is no index: the frames are streamed), or one line `coreq: PATH:
reason` and exit 1, or a partial result with a warning -- never a sanitizer
report, and within the time and memory of the honest core (bounds below).

Then a 4 GiB core, stored by `coreq hook` (seekable frames), analysed with
`coreq stack` in a stated memory bound, with the raw core's output; and the
same core as one zstd frame (systemd-coredump's form), streamed within a
smaller bound."""
import json
import os
import re
import resource
import shutil
import subprocess
import tempfile
import time

import zstd_seekable as zs
from coreq_test import COREQ, COREQ_RELEASE, done, ok, require_corpus

CLOCKS = re.compile(r'"[a-z_]*_us":[0-9]+')
# whether a runtime's blob came from the cache: the second run of a core reads it
CACHED = re.compile(r'"([a-z_]*_cached)":(true|false|[0-9]+)')
FRAME = 64 << 10


def no_big_files():
    """In the child: no file it writes may pass 64 MiB (a spooled core would)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))


def run(binary, path, preexec=None, extra=(), piped=False):
    """(returncode, stdout normalised, stderr, seconds, peak RSS KiB); piped: the
    file arrives on standard input, through a pipe."""
    t = time.monotonic()
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        cat = subprocess.Popen(["cat", path], stdout=subprocess.PIPE) if piped else None
        p = subprocess.Popen([binary, "stack", "--format", "json", *extra, "-" if piped else path],
                             stdout=fo, stderr=fe, preexec_fn=preexec,
                             stdin=cat.stdout if cat else None)
        if cat:
            cat.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if cat:
            cat.wait()
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode(errors="replace")
        err = fe.read().decode(errors="replace")
    out = CLOCKS.sub('"_us":0', out.replace(f'"path":"{path}"', '"path":"CORE"', 1))
    out = CACHED.sub(r'"\1":-', out)
    # the stored file's name carries the hook's made-up pid: stack reports that conflict
    out = re.sub(r',"meta_conflicts":"[^"]*"', "", out)
    return p.returncode, out, err, time.monotonic() - t, ru.ru_maxrss


def forgeries(frames):
    """(name, file bytes) for each lie; frames: [(compressed, size)]."""
    blob = b"".join(z for z, _ in frames)
    honest = [(len(z), n) for z, n in frames]
    out = []
    e = list(honest)
    e[0] = (e[0][0] + 1000, e[0][1])
    out.append(("offsets out of range", blob + zs.table(e)))
    e = list(honest)
    e[0], e[1] = (e[1][0], e[0][1]), (e[0][0], e[1][1])
    out.append(("overlapping frames (sizes swapped)", blob + zs.table(e)))
    e = list(honest)
    e[1] = (0, e[1][1])
    out.append(("a frame of 0 bytes", blob + zs.table(e)))
    out.append(("a table larger than the file", blob + zs.table(honest, count=1 << 30)))
    out.append(("a table whose size field lies", blob + zs.table(honest, size_field=1 << 31)))
    cut = len(frames[0][0]) + len(frames[1][0]) // 2
    out.append(("a truncated frame", blob[:cut] + blob[cut + 64:] + zs.table(honest)))
    e = [(c, n // 2) for c, n in honest]
    out.append(("frames that decompress to more than the table says", blob + zs.table(e)))
    e = [(c, n * 2) for c, n in honest]
    out.append(("frames that decompress to less than the table says", blob + zs.table(e)))
    e = list(honest)
    e[-3], e[-2] = (e[-3][0], e[-3][1] // 2), (e[-2][0], e[-2][1] + e[-3][1] // 2)
    out.append(("two late frames that decompress to other sizes than the table says",
                blob + zs.table(e)))
    return out


def hostile(tmp, case):
    core = case["core"]
    frames = zs.frames_of(core, FRAME)
    ok(len(frames) >= 3, f"{case['case']}: the core makes several frames", len(frames))
    honest = os.path.join(tmp, "honest.zst")
    zs.write(honest, frames)
    rc, ref, err, secs, rss = run(COREQ, honest)
    _, raw, _, _, _ = run(COREQ, core)
    ok(rc == 0 and ref == raw, "the honest seekable core gives the raw core's output", err)
    # Read frame by frame, not spooled: no file it writes may reach half the core's size
    # (on a core big enough that the debuginfo coreq inflates stays under that).
    half = os.path.getsize(core) // 2
    if half >= 16 << 20:
        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (half, half))
        rc, out, err, _, _ = run(COREQ, honest, small_files, ("--no-cache",))
        ok(rc == 0 and out == raw, "the honest seekable core is read without spooling it",
           (rc, err[-300:]))
        single = os.path.join(tmp, "honest-one-frame.zst")
        subprocess.run(["zstd", "-q", "-f", "-o", single, core], check=True)
        rc, out, err, _, _ = run(COREQ, single, small_files, ("--no-cache",))
        ok(rc == 0 and out == raw, "a one-frame copy is streamed, not spooled, under the same bound",
           (rc, err[-300:]))
        rc, _, _, _, _ = run(COREQ, single, small_files, ("--no-cache",), piped=True)
        ok(rc != 0, "the test can fail: the one-frame copy piped (so spooled) is refused", rc)
    for name, data in forgeries(frames):
        path = os.path.join(tmp, "lie.zst")
        with open(path, "wb") as f:
            f.write(data)
        rc, out, err, s, r = run(COREQ, path)
        lines = err.strip().splitlines()
        sane = "Sanitizer" not in err and "runtime error" not in err
        verdict = ("same" if rc == 0 and out == ref else
                   "partial" if rc == 0 and any("read as zeros" in x for x in lines) else
                   "one line" if rc == 1 and len(lines) == 1 and lines[0].startswith(f"coreq: {path}: ")
                   else "bad")
        ok(sane and verdict != "bad", f"{name}: {verdict}, no sanitizer report", (rc, err[-600:]))
        ok(s < 10 * secs + 5 and r < 2 * rss + 65536,
           f"{name}: within the honest core's time and memory ({s:.2f} s, {r} KiB against "
           f"{secs:.2f} s, {rss} KiB)")


def hook(core, tmp, n, *extra):
    """`coreq hook --format json` with core piped in, as the kernel pipes it, storing
    into tmp/store (n "1") or tmp/store<n>, with a database and cache of its own."""
    suffix = "" if n == "1" else n
    with open(core, "rb") as f:
        cat = subprocess.Popen(["cat"], stdin=f, stdout=subprocess.PIPE)
        r = subprocess.run([COREQ_RELEASE, "hook", "--format", "json",
                            "--store", os.path.join(tmp, "store" + suffix),
                            "--db", os.path.join(tmp, "db" + suffix),
                            "--cache", os.path.join(tmp, f"cache{suffix}.db"), *extra,
                            "1", str(os.getuid()), str(os.getgid()), "6", "1700000000",
                            "18446744073709551615", "host", "heap_fill"],
                           stdin=cat.stdout, capture_output=True, text=True, timeout=600)
        cat.stdout.close()
        cat.wait()
    return r


def big_core(tmp):
    """A 4 GiB core through the hook, then `coreq stack` on the stored file."""
    src = os.path.join(tmp, "heap_fill.c")
    with open(src, "w") as f:
        f.write("#include <stdint.h>\n#include <stdlib.h>\n"
                "int main(int c, char **v) { long mib = atol(v[1]); uint64_t x = 88172645463325252ull;\n"
                " for (long m = 0; m < mib; m++) { uint64_t *p = malloc(1 << 20);\n"
                "  for (long i = 0; i < (1 << 20) / 8; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17;\n"
                "   p[i] = i % 8 ? 0x2020206e6f697473ull + (i & 3) : (x & 0xffff); } }\n"
                " abort(); }\n")
    exe = os.path.join(tmp, "heap_fill")
    subprocess.run(["gcc", "-O2", "-g", "-o", exe, src], check=True)
    subprocess.run(["sh", "-c", f"ulimit -c unlimited; exec {exe} 4096"], cwd=tmp,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    core = os.path.join(tmp, "core")
    if not os.path.exists(core):
        ok(True, "# SKIP no kernel core dump here (core_pattern)")
        return
    size = os.path.getsize(core)
    ok(size >= 4 << 30, "the core holds 4 GiB", size)
    store = os.path.join(tmp, "store")
    h = hook(core, tmp, "1", "--max-analyses", "0")
    stored = [os.path.join(store, n) for n in os.listdir(store) if n.endswith(".zst")] \
        if os.path.isdir(store) else []
    ok(h.returncode == 0 and len(stored) == 1, "the hook stores the 4 GiB core", h.stderr[-500:])
    if not stored:
        return
    # The hook's own analysis of the stored file (no raw copy kept), under its RLIMIT_DATA.
    h2 = hook(core, tmp, "2")
    try:
        doc = json.loads(h2.stdout)
    except ValueError:
        doc = {}
    ok(h2.returncode == 0 and doc.get("analysed_from") == "stored file" and doc.get("status") == "ok",
       "the hook analyses the piped 4 GiB core from its stored frames (no raw copy: the default)",
       [h2.stdout[-300:], h2.stderr[-300:]])
    shutil.rmtree(os.path.join(tmp, "store2"), ignore_errors=True)
    rc, raw, _, _, _ = run(COREQ_RELEASE, core)
    # The bounds: the frame budget (128 MiB, libcore/model/source.h) plus 64 MiB for the
    # rest, and no file of more than 64 MiB written (no spool of the decompressed core).
    rc2, out, err, secs, rss = run(COREQ_RELEASE, stored[0], preexec=no_big_files)
    first = next((i for i, (x, y) in enumerate(zip(out, raw)) if x != y), min(len(out), len(raw)))
    ok(rc == 0 and rc2 == 0 and out == raw, "the stored 4 GiB core gives the raw core's output",
       [err[-500:], out[max(0, first - 200):first + 200], raw[max(0, first - 200):first + 200]])
    ok(rss < 192 * 1024, f"`coreq stack` on it peaks at {rss // 1024} MiB (bound 192 MiB), "
       f"with no file over 64 MiB written, in {secs:.2f} s")
    # A one-frame copy (systemd-coredump's form) is streamed once, keeping what the
    # analysis reads (libcore/model/stream_image.c): the same bounds, less the frame budget.
    single = os.path.join(tmp, "single.zst")
    subprocess.run(["zstd", "-q", "-f", "-T0", "-1", "-o", single, core], check=True)
    rc3, out3, err3, secs3, rss3 = run(COREQ_RELEASE, single, preexec=no_big_files)
    ok(rc3 == 0 and out3 == raw, "the one-frame 4 GiB core gives the raw core's output, streamed",
       err3[-500:])
    ok(rss3 < 64 * 1024, f"`coreq stack` on the one-frame copy peaks at {rss3 // 1024} MiB "
       f"(bound 64 MiB), with no file over 64 MiB written, in {secs3:.2f} s")
    # The test can fail: piped, the same file must be spooled, so it cannot pass the bounds.
    rc4, _, _, _, _ = run(COREQ_RELEASE, single, preexec=no_big_files, piped=True)
    ok(rc4 != 0, "the test can fail: the one-frame copy piped (so spooled) is refused", rc4)


def main():
    cases = [c for c in require_corpus() if c["case"] in ("abort_deep.O0", "threads8.O2")]
    ok(len(cases) == 2, "the corpus has abort_deep.O0 and threads8.O2")
    tmp = tempfile.mkdtemp(prefix="coreq-seek-")
    try:
        for case in cases:
            hostile(tmp, case)
        big_core(tmp)
    finally:
        shutil.rmtree(tmp)
    done()


main()
