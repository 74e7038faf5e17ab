#!/usr/bin/env python3
"""Module resolution: which file on this host stands for each mapped ELF.

A file is used only if its build-id matches the core's.  Checked here:
--sysroot finds every module under another root; --exe names the
executable; a file with a different build-id is reported as `mismatch`
(and, being unused, gives no symbols); a sysroot that lacks the files makes
every library `missing` and info still works, while the executable is
found at its recorded path (issue 32); build-ids agree with
eu-readelf's reading of the files themselves; the vdso comes from core
memory.
"""
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import coreq, coreq_json, done, ok, require_corpus


def file_build_id(path):
    out = subprocess.run(["eu-readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def main():
    cases = {c["case"]: c for c in require_corpus()}
    case = cases["abort_deep.O0"]
    core, exe = case["core"], case["exe"]
    info, _ = coreq_json("info", "--format", "json", core)
    mods = {m["path"]: m for m in info["modules"]}

    for path, m in mods.items():
        if m["status"] == "found" and not path.startswith("["):
            ok(m["build_id"] == file_build_id(path),
               f"build-id of {os.path.basename(path)} agrees with eu-readelf on the file")
    vdso = [m for m in info["modules"] if m["path"] == "[vdso]"]
    ok(len(vdso) == 1 and vdso[0]["status"] == "found" and vdso[0]["build_id"],
       "the vdso is a module read from core memory, with a build-id", str(vdso))

    tmp = tempfile.mkdtemp(prefix="coreq-sysroot-")
    try:
        # A sysroot holding copies of every file: all found there.
        for path in mods:
            if path.startswith("/"):
                dest = tmp + path
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy(path, dest)
        got, _ = coreq_json("info", "--format", "json", "--sysroot", tmp, core)
        files = [m for m in got["modules"] if m["path"].startswith("/")]
        ok(all(m["status"] == "found" and m["file"] == tmp + m["path"] for m in files),
           "--sysroot finds every module under the given root", [str(m) for m in files])

        # The executable replaced by another program: a build-id mismatch.
        exe_in_root = tmp + os.path.realpath(exe)
        shutil.copy("/bin/true", exe_in_root)
        got, _ = coreq_json("info", "--format", "json", "--sysroot", tmp, core)
        main_mod = [m for m in got["modules"] if os.path.realpath(m["path"]) == os.path.realpath(exe)]
        ok(main_mod and main_mod[0]["status"] == "mismatch" and main_mod[0]["file"] is None,
           "a file with another build-id is reported as mismatch and not used", str(main_mod))
        ok(main_mod and main_mod[0]["build_id"] == file_build_id(exe),
           "the mismatched module keeps the core's build-id")
        st, _ = coreq_json("stack", "--format", "json", "--no-cache", "--sysroot", tmp, core)
        names = [f["function"] for f in st["threads"][0]["frames"] if f["module"] == main_mod[0]["path"]]
        ok("level3" not in names, "a mismatched file lends no symbols", str(names))

        # --exe names the right file again.
        got, _ = coreq_json("info", "--format", "json", "--sysroot", tmp, "--exe", exe, core)
        main_mod = [m for m in got["modules"] if os.path.realpath(m["path"]) == os.path.realpath(exe)]
        ok(main_mod and main_mod[0]["status"] == "found" and main_mod[0]["file"] == exe,
           "--exe overrides the executable's path", str(main_mod))

        # An empty sysroot: every library missing, info still complete; the
        # executable, which lies at its recorded path, is not looked for
        # there, outside the sysroot (issue 45), and one warning says to
        # give it with --exe.
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        got, r = coreq_json("info", "--format", "json", "--sysroot", empty, core)
        libs = [m for m in got["modules"] if m["path"] != "[vdso]"
                and os.path.realpath(m["path"]) != os.path.realpath(exe)]
        ok(libs and all(m["status"] == "missing" for m in libs),
           "an empty sysroot leaves every library missing and still exits 0", r.stderr)
        main_mod = [m for m in got["modules"] if os.path.realpath(m["path"]) == os.path.realpath(exe)]
        warn = [l for l in r.stderr.splitlines() if "not under --sysroot" in l]
        ok(main_mod and main_mod[0]["status"] == "missing" and main_mod[0]["file"] is None
           and len(warn) == 1 and exe in warn[0] and "--exe" in warn[0],
           "the executable, not under the sysroot, is not taken from its recorded path, and a warning "
           "says to give --exe", [str(main_mod), r.stderr])
        ok(len(got["threads"]) == len(info["threads"]), "threads are all reported without files")
    finally:
        shutil.rmtree(tmp)
    done()


main()
