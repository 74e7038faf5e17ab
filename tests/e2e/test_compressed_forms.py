#!/usr/bin/env python3
"""Every corpus core compressed five ways -- zstd as one frame (systemd's
way), zstd in the seekable format (frames of 64 KiB and a seek table, written
here by the zstd command, independently of coreq), xz, gzip and lz4 -- and
piped through standard input gives the raw core's `coreq stack --format
json`, apart from the path it names and the clocks it reads.  The release
binary runs the whole corpus; the ASan binary runs a few cores each way.

A one-stream core is read once, keeping only what the keep plan says
(libcore/model/stream_image.c); a core this small is kept whole, so the
zst form runs again with COREQ_STREAM_KEEP_ALL_BELOW=0 ("zst planned"):
every page the plan drops and the analysis reads must come back, by the
second pass, as the raw core's bytes.  `coreq info` says how each was read:
a build whose analysis read its heap is remembered in the cache, and its
later cores are kept whole in one pass (test_stream_hint.py)."""
import json
import os
import re
import shutil
import subprocess
import tempfile

import zstd_seekable
from coreq_test import COREQ_RELEASE, coreq, done, ok, require_corpus

COMPRESSORS = {
    "zst": ["zstd", "-q", "-c", "-1"],
    "xz": ["xz", "-c", "-0", "-T2"],  # the fastest settings: the format is what is tested
    "gz": ["gzip", "-c", "-1"],
    "lz4": ["lz4", "-q", "-c"],
}
ASAN_CASES = ("abort_deep.O0", "threads8.O2", "rust_async.O2", "cxx_task.O2g", "deadlock-abba.O2")
CLOCKS = re.compile(r'"[a-z_]*_us":[0-9]+')


PLANNED = {"COREQ_STREAM_KEEP_ALL_BELOW": "0"}


def stack(path, binary, env=None):
    r = coreq("stack", "--format", "json", path, binary=binary, env=env)
    out = r.stdout.replace(f'"path":"{path}"', '"path":"CORE"', 1)
    return r, CLOCKS.sub('"_us":0', out)


def main():
    cases = require_corpus()
    ok(len(cases) >= 40, "the corpus has its cores", len(cases))
    tmp = tempfile.mkdtemp(prefix="coreq-forms-")
    tally = {}
    second = by_hint = 0
    try:
        for case in cases:
            name, core = case["case"], case["core"]
            binaries = [COREQ_RELEASE] + ([os.environ.get("COREQ", "build/asan/coreq")]
                                          if name in ASAN_CASES else [])
            forms = {}
            for ext, cmd in COMPRESSORS.items():
                forms[ext] = os.path.join(tmp, f"core.{ext}")
                with open(core, "rb") as fin, open(forms[ext], "wb") as fout:
                    subprocess.run(cmd, stdin=fin, stdout=fout, check=True)
            forms["seekable.zst"] = os.path.join(tmp, "core.seekable.zst")
            # several frames for a small core; fewer zstd runs for a big one
            frame = (64 << 10) if os.path.getsize(core) < (4 << 20) else (1 << 20)
            zstd_seekable.make(core, forms["seekable.zst"], frame=frame)
            for binary in binaries:
                stack(core, binary)  # the build-id caches warm, as for every later run
                ref, ref_out = stack(core, binary)
                if ref.returncode != 0:
                    ok(False, f"{name}: the raw core analyses", ref.stderr)
                    continue
                bad = []
                for ext, path in forms.items():
                    r, out = stack(path, binary)
                    if r.returncode != 0 or out != ref_out:
                        bad.append((ext, r.returncode, r.stderr[-300:]))
                    tally[ext] = tally.get(ext, 0) + (r.returncode == 0 and out == ref_out)
                r, out = stack(forms["zst"], binary, PLANNED)
                if r.returncode != 0 or out != ref_out:
                    bad.append(("zst planned", r.returncode, r.stderr[-300:]))
                tally["zst planned"] = tally.get("zst planned", 0) + (r.returncode == 0 and out == ref_out)
                if binary == COREQ_RELEASE:
                    info = coreq("info", "--format", "json", forms["zst"], binary=binary, env=PLANNED)
                    rd = json.loads(info.stdout).get("read", {}) if info.returncode == 0 else {}
                    # Streamed through the plan; or kept whole, when the cache remembers that an
                    # earlier core of this build (corpus cases share binaries) had its heap read.
                    streamed = (rd.get("how") == "stream" and 0 < rd.get("held_bytes", 0)
                                and (rd.get("second_pass")
                                     or rd.get("held_bytes") <= os.path.getsize(core)))
                    hinted = streamed and rd.get("heap_hint") is True and not rd.get("second_pass")
                    ok(streamed and rd.get("compression") == "zstd"
                       and rd.get("bytes") == os.path.getsize(core),
                       f"{name}: info says how the one-frame zst was read, and what it held", rd)
                    second += bool(rd.get("second_pass"))
                    by_hint += hinted
                with open(core, "rb") as fin:
                    p = subprocess.Popen(["cat"], stdin=fin, stdout=subprocess.PIPE)
                    r = coreq("stack", "--format", "json", "-", stdin=p.stdout, binary=binary)
                    p.wait()
                out = CLOCKS.sub('"_us":0', r.stdout.replace('"path":"-"', '"path":"CORE"', 1))
                if r.returncode != 0 or out != ref_out:
                    bad.append(("pipe", r.returncode, r.stderr[-300:]))
                kind = "asan" if binary != COREQ_RELEASE else "release"
                ok(not bad, f"{name} ({kind}): zst, seekable zst, xz, gz, lz4 and a pipe give the raw "
                   "core's stack JSON", bad)
    finally:
        shutil.rmtree(tmp)
    print("# identical per form:", tally)
    print(f"# zst planned, as info read it: {second} cores read a page the plan dropped (a second "
          f"pass), {by_hint} were kept whole (their build's heap was read before)")
    done()


main()
