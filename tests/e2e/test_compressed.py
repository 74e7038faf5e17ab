#!/usr/bin/env python3
"""The same core compressed with zstd, xz, lz4, gzip and bzip2, and piped
through standard input (a pipe that cannot seek), gives output identical to
the raw file's `coreq info --format json`, apart from the path it names and
its "read" object, which must say how the bytes came: the raw file mapped, a
compressed file streamed (libcore/model/stream_image.c) with the format the
compressor wrote, standard input spooled."""
import json
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


FORMAT = {"zst": "zstd", "xz": "xz", "lz4": "lz4", "gz": "gzip", "bz2": "bzip2"}


def info_without_path(args, **kw):
    """(run, its JSON less path and read, its read object)."""
    r = coreq("info", "--format", "json", *args, **kw)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return r, None, {}
    doc["core"]["path"] = "CORE"
    read = doc.pop("read", {})
    return r, doc, read


def main():
    cases = [c for c in require_corpus()
             if c["case"] in ("abort_deep.O0", "threads8.O2", "sighandler.O2", "cpp_terminate.O2")]
    ok(len(cases) >= 2, "corpus has the cores this test compresses", [c["case"] for c in cases])
    tmp = tempfile.mkdtemp(prefix="coreq-compress-")
    try:
        for case in cases:
            core, name = case["core"], case["case"]
            ref, ref_out, rd = info_without_path([core])
            ok(ref.returncode == 0, f"{name}: raw core analyses", ref.stderr)
            size = os.path.getsize(core)
            ok((rd.get("how"), rd.get("compression"), rd.get("bytes")) == ("mapped", "none", size),
               f"{name}: info says the raw core was mapped", rd)
            for ext, cmd in COMPRESSORS.items():
                if not shutil.which(cmd[0]):
                    ok(False, f"{name}: {cmd[0]} is installed (make deps)")
                    continue
                path = os.path.join(tmp, f"core.{ext}")
                with open(core, "rb") as fin, open(path, "wb") as fout:
                    subprocess.run(cmd, stdin=fin, stdout=fout, check=True)
                r, out, rd = info_without_path([path])
                ok(r.returncode == 0 and out == ref_out, f"{name}: .{ext} gives identical info",
                   r.stderr)
                ok((rd.get("how"), rd.get("compression"), rd.get("bytes")) == ("stream", FORMAT[ext], size),
                   f"{name}: info says the .{ext} file was streamed as {FORMAT[ext]}", rd)
            with open(core, "rb") as fin:
                p = subprocess.Popen(["cat"], stdin=fin, stdout=subprocess.PIPE)
                r, out, rd = info_without_path(["-"], stdin=p.stdout)
                p.wait()
            ok(r.returncode == 0 and out == ref_out, f"{name}: piped through stdin gives identical info",
               r.stderr)
            ok((rd.get("how"), rd.get("compression"), rd.get("held_bytes")) == ("spooled", "none", size),
               f"{name}: info says the piped core was spooled", rd)
            with open(os.path.join(tmp, "core.zst"), "rb") as fin:
                r, out, rd = info_without_path(["-"], stdin=fin)
            ok(r.returncode == 0 and out == ref_out, f"{name}: zstd on stdin gives identical info",
               r.stderr)
            ok((rd.get("how"), rd.get("compression")) == ("spooled", "zstd"),
               f"{name}: info says zstd on stdin was spooled", rd)
    finally:
        shutil.rmtree(tmp)
    done()


main()
