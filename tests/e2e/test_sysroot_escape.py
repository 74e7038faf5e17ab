#!/usr/bin/env python3
"""`--sysroot D` never reaches a file outside D (issue 45, finding 3).

A core's module paths and the links a sysroot holds are untrusted: each
path is resolved inside D as if D were "/" (openat2 RESOLVE_IN_ROOT), and
the executable is not looked for at its recorded path either (--exe names
it).  One corpus core (made on this host, so this host's files carry the
build-ids its modules record: any file reached outside D would be
`found`), and sysroots crafted against it:
- empty: every module `missing` (the executable too, with a warning that
  says to give --exe); with --exe, the executable `found` again;
- every module path an absolute symbolic link to the host's file;
- every module path a relative link with enough `../` to reach the host's
  file;
- a copy of the core whose libc NT_FILE name climbs out of D with `../`
  to a copy of this host's libc beside D;
- a decoy: the same names inside D holding copies of the host's files are
  `found`, so the resolution itself still works (a name with `../` lands
  on D's own file).
Every module of the escaping cases is `missing` (`coreq info --format
json`), and, when strace is installed, no open/openat/openat2 after the
core's own open returned a file outside D (strace -y shows the file each
returned descriptor is), but the cache and /usr/lib/debug/.build-id.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from coreq_test import COREQ, coreq, done, ok, require_corpus, skip
import elfcore

CASE = "abort_deep.O0"


def modules(core, *extra):
    r = coreq("info", "--format", "json", *extra, core, timeout=120)
    try:
        mods = json.loads(r.stdout)["modules"]
    except (ValueError, KeyError):
        mods = None
    return mods, r


def host_files(core):
    """{path the core records: the host file it is} of the core's modules."""
    mods, r = modules(core)
    assert mods, r.stderr
    return {m["path"]: os.path.realpath(m["path"]) for m in mods
            if m["path"] != "[vdso]" and m["status"] == "found"}


def plant(root, files, how):
    """Puts at each recorded path inside root: a link (absolute or
    relative) to the host's file, or a copy of it."""
    for name, real in files.items():
        at = os.path.join(root, name.lstrip("/"))
        os.makedirs(os.path.dirname(at), exist_ok=True)
        # Never write through a link planted before: copyfile follows it, and
        # an absolute one names a file of this host (it once overwrote
        # /usr/bin/true with the corpus program).
        if os.path.lexists(at):
            os.unlink(at)
        if how == "absolute":
            os.symlink(real, at)
        elif how == "relative":
            os.symlink("../" * (at.count("/") + 4) + real.lstrip("/"), at)
        else:
            shutil.copyfile(real, at)


def climbing_copy(core, name, root, out):
    """A copy of core whose NT_FILE name for name is, with the same length,
    `/../<dir>/<file>`: from root, a file beside it; returns that file."""
    data = bytearray(open(core, "rb").read())
    beside = os.path.join(os.path.dirname(root), "o")
    os.makedirs(beside, exist_ok=True)
    fill = len(name) - len("/../o/")
    new = "/../o/" + "l" * (fill - len(".so.6")) + ".so.6"
    assert len(new) == len(name) and fill > len(".so.6")
    note = next(n for n in elfcore.notes(data) if n["type"] == elfcore.NT_FILE)
    lo, hi = note["desc_off"], note["desc_off"] + len(note["desc"])
    desc = bytes(data[lo:hi])
    assert desc.count(name.encode() + b"\0") >= 1
    data[lo:hi] = desc.replace(name.encode() + b"\0", new.encode() + b"\0")
    open(out, "wb").write(data)
    return new, os.path.join(beside, new[len("/../o/"):])


def opened_outside(core, root, args):
    """Files outside root (and not the core) that a successful open returned
    after coreq opened the core, under strace -y; None without strace.  The
    cache and this host's build-id tree of debuginfo (/usr/lib/debug/.build-id,
    by the core's build-ids, which never become more of a path than hex) are
    not module lookups."""
    if not shutil.which("strace"):
        return None, 0
    with tempfile.NamedTemporaryFile(prefix="coreq-strace-", delete=False) as t:
        log = t.name
    try:
        subprocess.run(["strace", "-f", "-y", "-qq", "-o", log, "-e", "trace=open,openat,openat2",
                        COREQ] + args, capture_output=True, timeout=300,
                       env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
        lines = open(log, errors="replace").read().splitlines()
    finally:
        os.unlink(log)
    real_root, real_core = os.path.realpath(root), os.path.realpath(core)
    cache = os.path.realpath(os.environ.get("COREQ_CACHE", "/nonexistent"))
    allowed = ("/proc/", "/dev/", "/usr/lib/debug/.build-id/", cache)
    after, out, inside = False, [], 0
    for line in lines:
        m = re.search(r"= \d+<([^>]*)>$", line)
        if not m:
            continue
        path = m.group(1)
        if path == real_core:
            after = True
            continue
        if after and not (path + "/").startswith(real_root + "/") and not path.startswith(allowed):
            out.append(line)
        inside += after and (path + "/").startswith(real_root + "/")
    return out, inside


def check_escape(label, core, root, files, allowed=()):
    """Every module but the vdso missing, and nothing outside root opened."""
    mods, r = modules(core, "--sysroot", root)
    bad = [m for m in (mods or []) if m["path"] != "[vdso]" and m["status"] != "missing"]
    ok(mods and not bad, f"{label}: every module is missing", [json.dumps(bad), r.stderr[-600:]])
    outside, _ = opened_outside(core, root, ["info", "--format", "json", "--sysroot", root, core])
    if outside is None:
        skip(f"{label}: strace", "strace is not installed")
        return mods, r
    leaked = [l for l in outside if any(f in l for f in list(files.values()) + list(allowed))]
    ok(not leaked, f"{label}: no file of the host's modules opened (strace)", leaked[:8])
    ok(not outside, f"{label}: nothing outside the sysroot opened after the core (strace)", outside[:8])
    return mods, r


def main():
    cases = {c["case"]: c for c in require_corpus()}
    c = cases.get(CASE)
    if not c:
        skip("sysroot escape", f"no corpus case {CASE}")
        done()
    core = c["core"]
    files = host_files(core)
    exe = next((p for p in files if os.path.realpath(p) == os.path.realpath(c["exe"])), None)
    libc = next((p for p in files if os.path.basename(p).startswith("libc.so")), None)
    ok(exe and libc and len(files) >= 3, "the core's executable, libc and loader are found on this host",
       json.dumps(files))
    with tempfile.TemporaryDirectory(prefix="coreq-sysroot-escape-") as tmp:
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        mods, r = check_escape("empty sysroot", core, empty, files)
        ok(any("--exe" in l and exe in l for l in r.stderr.splitlines()),
           "empty sysroot: a warning says the executable is not under it, and to give --exe", r.stderr)
        mods, r = modules(core, "--sysroot", empty, "--exe", c["exe"])
        main_mod = [m for m in (mods or []) if m["path"] == exe]
        ok(main_mod and main_mod[0]["status"] == "found" and main_mod[0]["file"] == c["exe"],
           "empty sysroot with --exe: the executable found as named", json.dumps(mods))

        for how in ("absolute", "relative"):
            root = os.path.join(tmp, how)
            plant(root, files, how)
            check_escape(f"{how} links to the host's files", core, root, files)

        root = os.path.join(tmp, "r")
        os.makedirs(root)
        climbing, beside = climbing_copy(core, libc, root, os.path.join(tmp, "climbing.core"))
        shutil.copyfile(files[libc], beside)
        mods, _ = check_escape("a `../` name", os.path.join(tmp, "climbing.core"), root, files, [beside])
        ok(any(m["path"] == climbing for m in mods or []), "a `../` name: the module keeps its recorded name",
           json.dumps(mods))

        # An absolute link the sysroot resolves inside itself, whose target
        # also exists on this host (another program): the executable (built
        # with -g, its own debuginfo) is found and symbolized from the
        # sysroot's copy; the host's file the link names is never opened.
        root = os.path.join(tmp, "linked")
        plant(root, {n: f for n, f in files.items() if n != exe}, "copy")
        host_other = os.path.realpath(shutil.which("true"))
        inside = os.path.join(root, host_other.lstrip("/"))
        os.makedirs(os.path.dirname(inside), exist_ok=True)
        shutil.copyfile(files[exe], inside)
        at = os.path.join(root, exe.lstrip("/"))
        os.makedirs(os.path.dirname(at), exist_ok=True)
        os.symlink(host_other, at)
        mods, r = modules(core, "--sysroot", root)
        main_mod = [m for m in (mods or []) if m["path"] == exe]
        ok(main_mod and main_mod[0]["status"] == "found",
           "an absolute link inside the sysroot: resolved inside it, the executable found", json.dumps(mods))
        args = ["stack", "--format", "json", "--no-cache", "--sysroot", root, core]
        r = coreq(*args, timeout=300)
        ok(r.returncode == 0 and "level3" in r.stdout,
           "an absolute link inside the sysroot: the executable's frames named from the sysroot's copy",
           r.stdout[-400:] + r.stderr[-400:])
        outside, inside_n = opened_outside(core, root, args)
        if outside is not None:
            ok(not outside and not any(host_other in l for l in outside),
               f"an absolute link inside the sysroot: `coreq stack` opens nothing outside it (strace)",
               outside[:8])

        # The decoy: the files themselves inside the root are found there.
        plant(root, files, "copy")
        os.makedirs(os.path.join(root, "o"))
        shutil.copyfile(files[libc], os.path.join(root, "o", os.path.basename(beside)))
        for label, which in (("the host's files copied inside", core),
                             ("a `../` name, its file inside", os.path.join(tmp, "climbing.core"))):
            mods, r = modules(which, "--sysroot", root)
            bad = [m for m in (mods or []) if m["path"] != "[vdso]" and m["status"] != "found"]
            ok(mods and not bad and all(m["file"].startswith(root + "/") for m in mods if m["path"] != "[vdso]"),
               f"{label}: every module found inside the sysroot", [json.dumps(mods), r.stderr[-600:]])
            outside, inside = opened_outside(which, root, ["info", "--format", "json", "--sysroot", root, which])
            if outside is not None:
                ok(not outside and inside >= len(files),
                   f"{label}: strace sees the modules opened inside the sysroot ({inside}), nothing outside",
                   outside[:8])
    done()


if __name__ == "__main__":
    main()
