#!/usr/bin/env python3
"""The same core compressed with zstd, xz, lz4, gzip and bzip2, and piped
through standard input (a pipe that cannot seek), gives output identical to
the raw file's `coreq info --format json`, apart from the path it names."""
import os
import shutil
import subprocess
import tempfile

from coreq_test import coreq, done, ok, require_corpus

COMPRESSORS = {
    "zst": ["zstd", "-q", "-c"],
    "xz": ["xz", "-c", "-T2"],
    "lz4": ["lz4", "-q", "-c"],
    "gz": ["gzip", "-c"],
    "bz2": ["bzip2", "-c"],
}


def info_without_path(args, **kw):
    r = coreq("info", "--format", "json", *args, **kw)
    return r, r.stdout.replace(f'"path":"{args[-1]}"', '"path":"CORE"', 1)


def main():
    cases = [c for c in require_corpus()
             if c["case"] in ("abort_deep.O0", "threads8.O2", "sighandler.O2", "cpp_terminate.O2")]
    ok(len(cases) >= 2, "corpus has the cores this test compresses", [c["case"] for c in cases])
    tmp = tempfile.mkdtemp(prefix="coreq-compress-")
    try:
        for case in cases:
            core, name = case["core"], case["case"]
            ref, ref_out = info_without_path([core])
            ok(ref.returncode == 0, f"{name}: raw core analyses", ref.stderr)
            for ext, cmd in COMPRESSORS.items():
                if not shutil.which(cmd[0]):
                    ok(False, f"{name}: {cmd[0]} is installed (make deps)")
                    continue
                path = os.path.join(tmp, f"core.{ext}")
                with open(core, "rb") as fin, open(path, "wb") as fout:
                    subprocess.run(cmd, stdin=fin, stdout=fout, check=True)
                r, out = info_without_path([path])
                ok(r.returncode == 0 and out == ref_out, f"{name}: .{ext} gives identical info",
                   r.stderr)
            with open(core, "rb") as fin:
                p = subprocess.Popen(["cat"], stdin=fin, stdout=subprocess.PIPE)
                r, out = info_without_path(["-"], stdin=p.stdout)
                p.wait()
            ok(r.returncode == 0 and out == ref_out, f"{name}: piped through stdin gives identical info",
               r.stderr)
            with open(os.path.join(tmp, "core.zst"), "rb") as fin:
                r, out = info_without_path(["-"], stdin=fin)
            ok(r.returncode == 0 and out == ref_out, f"{name}: zstd on stdin gives identical info",
               r.stderr)
    finally:
        shutil.rmtree(tmp)
    done()


main()
