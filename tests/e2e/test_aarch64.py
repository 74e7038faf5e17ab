#!/usr/bin/env python3
"""aarch64 cores, made on this machine with the Debian cross toolchain and
qemu-user (corpus/make-aarch64-cores), and x86_64 cores without NT_FILE.

Oracles, never coreq's own output:
- static builds: gdb-multiarch's `thread apply all bt` on the same core,
  every thread's pcs and names (gdb-multiarch unwinds static executables;
  it finds no shared library in qemu's cores, which have no NT_FILE);
- dynamic builds: the program's structure (corpus/programs' crash chain) in
  order on the crashed thread, and the loaded objects (executable, dynamic
  loader, libc) found from the loader's list under --sysroot;
- sighandler: gdb-multiarch hangs in qemu's signal trampoline, so the
  program's structure: crash_in_handler, on_segv, the signal frame, victim,
  main;
- x86_64 corpus cores with the NT_FILE note type rewritten: the same modules
  (build-id, range, status) and the same stacks as with it;
- bad input: a truncated PRSTATUS and a stack of self-pointing x29 words.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile

from coreq_test import CORPUS, coreq, done, ok, read_expect, sanitizer_report, skip

A64 = os.path.join(CORPUS, "aarch64")
NT_FILE = 0x46494C45


def cases():
    out = {}
    if os.path.isdir(A64):
        for name in sorted(os.listdir(A64)):
            if name.startswith("deadlock-"):
                continue  # hang cores: test_aarch64_waits.py (gdb names read() by another alias)
            e = os.path.join(A64, name, "expect")
            if os.path.isfile(e):
                c = read_expect(e)
                c["core"] = os.path.join(A64, name, "core")
                out[name] = c
    return out


def norm(name):
    """A spelling-neutral name (as in test_stack_vs_gdb.py): no arguments,
    templates, clone suffixes or leading underscores (gdb names glibc's
    aliases by DWARF, coreq by symbol table: ___pthread_cond_wait)."""
    if not name or name.startswith("??"):
        return "??"
    if name.startswith("<"):
        return name
    name = re.sub(r"\s*\[clone [^\]]*\]", "", name)
    depth, out = 0, []
    for ch in name:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    name = re.sub(r"(\s+(const|volatile|&&|&))+$", "", "".join(out).strip()).split(" ")[-1]
    return re.sub(r"\.(cold|constprop|isra|part)(\.\d+)*$", "", name).lstrip("_")


def gdb_threads(exe, core, sysroot=None):
    """Every thread's [(pc, name)] as gdb-multiarch's `thread apply all bt` gives them; its
    shared libraries under sysroot when given."""
    cmd = ["timeout", "120", "gdb-multiarch", "-nx", "-batch", "-iex", "set pagination off",
           "-iex", "set width 0"] + (["-iex", f"set sysroot {sysroot}"] if sysroot else []) + [
           "-ex", "set print frame-arguments none",
           "-ex", "set backtrace past-main on", "-ex", "set backtrace past-entry on",
           "-ex", "thread apply all bt", exe, core]
    out = subprocess.run(cmd, capture_output=True, text=True, errors="replace").stdout
    threads, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^Thread \d+ \(.*?LWP (\d+)\)", line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"^#\d+\s+(?:(0x[0-9a-f]+) in )?(.+?)(?: \(.*| at .*)?$", line)
        if m and cur is not None:
            pc = int(m.group(1), 16) if m.group(1) else None
            if pc is None and cur and cur[-1][1] == norm(m.group(2)):
                continue  # gdb repeats a coroutine actor as an inline frame of itself
            cur.append((pc, norm(m.group(2))))
    return threads


def coreq_stack(c, *extra):
    r = coreq("stack", "--format", "json", "--no-cache", "--exe", c["exe"], "--sysroot", c["sysroot"],
              *extra, c["core"], timeout=300)
    return (json.loads(r.stdout) if r.returncode == 0 else None), r


def frames_of(frames):
    """(pc, name) per frame, inline ones included; an inline frame has its physical frame's pc."""
    out, pending = [], []
    for f in frames:
        pending.append((norm(f["function"]), f["kind"] == "inline"))
        if f["kind"] == "inline" and not f["pc"]:
            continue
        pc = int(f["pc"], 16) if f["pc"] else None
        out += [(pc, n, i) for n, i in pending]
        pending = []
    return out + [(None, n, i) for n, i in pending]


def same_name(gdb_name, coreq_name, inline):
    """An inlined template whose DWARF has no linkage name is named by coreq
    as libdw gives it, without its class ("wait", where gdb says
    "std::condition_variable::wait"): compare those by the last component."""
    if inline and "::" not in coreq_name:
        return gdb_name.split("::")[-1] == coreq_name
    return gdb_name == coreq_name


def same_as_gdb(gdb, got):
    """Names equal; pcs equal wherever gdb prints one."""
    return len(gdb) == len(got) and all(
        same_name(gn, cn, ci) and (gp is None or gp == cp)
        for (gp, gn), (cp, cn, ci) in zip(gdb, got))


def check_static(c, name):
    d, r = coreq_stack(c)
    if not ok(d is not None and not sanitizer_report(r.stderr), f"{name}: coreq stack succeeds", r.stderr):
        return
    ok(d["core"]["arch"] == "aarch64", f"{name}: arch aarch64", json.dumps(d["core"]))
    if name.startswith("async_coro"):
        # qemu writes no NT_ARM_TLS: the thread pointers come from each
        # thread's struct pthread, and the merged stack is the program's chain
        # (the same expectations as on x86_64, tests/e2e/test_async.py).
        A, N = "async", "native"
        want = {"same": [("crash_now", N), ("crash_same", N), ("inner", N), ("middle", A),
                         ("outer", A), ("blocking_wait", A), ("run_same", N), ("main", N)],
                "cross": [("crash_now", N), ("crash_cross", N), ("inner2", N), ("middle2", A),
                          ("outer2", A), ("blocking_wait", A), ("run_cross", N), ("main", N)]}
        shape = name.split("-")[1].split(".")[0]
        crashed = next(t for t in d["threads"] if t["crashed"])
        got = [(norm(f["function"]), f["kind"]) for f in crashed["frames"] if f["kind"] != "inline"]
        ok(got[:len(want[shape])] == want[shape] and d["async"]["threads_with_roots"] >= 1
           and "without a thread pointer" not in r.stderr,
           f"{name}: no NT_ARM_TLS, yet thread pointers found and the merged stack is the program's chain",
           [str(got), r.stderr, json.dumps(d["async"])])
        if shape == "cross":
            switch = [f for f in crashed["frames"] if f.get("thread_switch")]
            ok(len(switch) == 1 and norm(switch[0]["function"]) == "run_cross",
               f"{name}: the switch to the blocked main thread is marked at run_cross", str(switch))
        d, r = coreq_stack(c, "--no-async")
    if name.startswith("sighandler"):
        crashed = next(t for t in d["threads"] if t["crashed"])
        names = [norm(f["function"]) for f in crashed["frames"]]
        want = ["crash_in_handler", "on_segv", "<signal handler called>", "victim", "main"]
        i = names.index("crash_in_handler") if "crash_in_handler" in names else -1
        ok(i >= 0 and names[i:i + 5] == want,
           f"{name}: through qemu's signal trampoline: {' > '.join(want)}", str(names))
        return
    gdb = gdb_threads(c["exe"], c["core"])
    bad = []
    for t in d["threads"]:
        want = gdb.get(t["tid"]) or []
        got = frames_of(t["frames"])
        if not same_as_gdb(want, got):
            bad += [f"thread {t['tid']}: gdb   {want}", f"thread {t['tid']}: coreq {[g[:2] for g in got]}"]
    ok(gdb and len(gdb) == len(d["threads"]) and not bad,
       f"{name}: every thread's pcs and names equal gdb-multiarch's ({len(d['threads'])} threads)", bad[:8])


def check_dynamic(c, name):
    r = coreq("info", "--format", "json", "--exe", c["exe"], "--sysroot", c["sysroot"], c["core"])
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    mods = {os.path.basename(m["path"]): m for m in info.get("modules", [])}
    need = [os.path.basename(c["exe"]), "ld-linux-aarch64.so.1", "libc.so.6"]
    ok(r.returncode == 0 and info.get("core", {}).get("arch") == "aarch64"
       and all(n in mods and mods[n]["status"] == "found" for n in need)
       and all(os.path.exists(c["sysroot"] + m["path"]) for n, m in mods.items()
               if n not in (need[0], "[vdso]")),
       f"{name}: no NT_FILE, yet the executable, ld.so and libc are found from the loader's list",
       [r.stderr, json.dumps(info.get("modules"))])
    d, r = coreq_stack(c)
    crashed = next((t for t in (d or {}).get("threads", []) if t["crashed"]), {"frames": []})
    names = [norm(f["function"]) for f in crashed["frames"]]
    chain = c["crash_chain"].split()
    pos = [names.index(n) for n in chain if n in names]
    ok(len(pos) == len(chain) and pos == sorted(pos) and pos == list(range(pos[0], pos[0] + len(chain))),
       f"{name}: the crashed thread runs {' > '.join(chain)}", str(names))
    libc = [f for f in crashed["frames"] if os.path.basename(f.get("module") or "") == "libc.so.6"]
    ok(libc and any(f["function"] == "abort" for f in libc),
       f"{name}: libc's frames are named (abort)", str([f.get("function") for f in libc]))


def rewrite_notes(src, dst, fn):
    """Copies core src to dst, calling fn(buf, note_offset, namesz, descsz, type) on each note."""
    b = bytearray(open(src, "rb").read())
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    for i in range(phnum):
        off = phoff + i * phentsize
        if struct.unpack_from("<I", b, off)[0] != 4:
            continue
        at, = struct.unpack_from("<Q", b, off + 8)
        end = at + struct.unpack_from("<Q", b, off + 32)[0]
        while at + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", b, at)
            fn(b, at, namesz, descsz, ntype)
            at += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    with open(dst, "wb") as f:
        f.write(b)


def check_x86_without_nt_file(tmp):
    for name in ("threads8.O2", "abort_deep.O0", "cpp_terminate.O2"):
        core = os.path.join(CORPUS, "cores", name, "core")
        if not os.path.exists(core):
            ok(False, f"corpus has {name}")
            continue
        stripped = os.path.join(tmp, name + ".core")
        rewrite_notes(core, stripped,
                      lambda b, at, n, d, t: struct.pack_into("<I", b, at + 8, 0x46494C00) if t == NT_FILE else None)
        infos = []
        for c in (core, stripped):
            r = coreq("info", "--format", "json", c)
            infos.append(json.loads(r.stdout) if r.returncode == 0 else {})
        # NT_FILE lists file-backed mappings only; the loader's list gives the
        # whole PT_LOAD extent, .bss included: the same start, an end at or after.
        key = lambda i: sorted((m["build_id"], m["start"], m["status"]) for m in i.get("modules", []))
        ends = lambda i: {m["build_id"]: int(m["end"], 16) for m in i.get("modules", [])}
        e0, e1 = ends(infos[0]), ends(infos[1])
        ok(infos[0] and key(infos[0]) == key(infos[1]) and all(e1[b] >= e for b, e in e0.items())
           and infos[0].get("mappings") != infos[1].get("mappings"),
           f"{name} without NT_FILE: the same modules (build-id, start, status) from the loader's list",
           [json.dumps(key(infos[0])), json.dumps(key(infos[1]))])
        stacks = []
        for c in (core, stripped):
            r = coreq("stack", "--format", "json", "--no-cache", c)
            d = json.loads(r.stdout) if r.returncode == 0 else {}
            for t in d.get("threads", []):
                for f in t["frames"]:
                    f["module"] = os.path.realpath(f["module"]) if f.get("module") else None
            stacks.append(d.get("threads"))
        ok(stacks[0] and stacks[0] == stacks[1],
           f"{name} without NT_FILE: the same stacks, frame for frame")


def check_bad_input(c, tmp):
    # A PRSTATUS cut short (descsz smaller than aarch64's 392 bytes).
    bad = os.path.join(tmp, "short-prstatus.core")
    rewrite_notes(c["core"], bad,
                  lambda b, at, n, d, t: struct.pack_into("<I", b, at + 4, 100) if t == 1 else None)
    r = coreq("stack", "--exe", c["exe"], "--sysroot", c["sysroot"], bad, timeout=60)
    lines = r.stderr.strip().splitlines()
    ok(not sanitizer_report(r.stderr) and
       ((r.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"coreq: {bad}: "))
        or (r.returncode == 0 and any("warning" in l for l in lines))),
       "aarch64 core with a truncated PRSTATUS: one line and exit 1, or a partial result with a warning",
       [f"exit {r.returncode}"] + lines[:5])
    # Every word of the crashed thread's stack pointing at itself: x29 chains that loop.
    d, _ = coreq_stack(c, "--no-async")
    sp = int(next(t for t in d["threads"] if t["crashed"])["frames"][0].get("pc", "0x0"), 16) if d else 0
    r = coreq("info", "--format", "json", c["core"])
    thr = json.loads(r.stdout)["threads"][0] if r.returncode == 0 else {}
    sp = int(thr.get("sp", "0x0"), 16)
    b = bytearray(open(c["core"], "rb").read())
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    done_words = 0
    for i in range(phnum):
        off = phoff + i * phentsize
        p_type, = struct.unpack_from("<I", b, off)
        p_offset, p_vaddr = struct.unpack_from("<QQ", b, off + 8)
        p_filesz, = struct.unpack_from("<Q", b, off + 32)
        if p_type == 1 and p_vaddr <= sp < p_vaddr + p_filesz:
            start = sp - p_vaddr
            for k in range(0, min(8192, p_filesz - start) - 8, 8):
                struct.pack_into("<Q", b, p_offset + start + k, sp + k)
                done_words += 1
    loop = os.path.join(tmp, "x29-loop.core")
    with open(loop, "wb") as f:
        f.write(b)
    r = coreq("stack", "--format", "json", "--exe", c["exe"], "--sysroot", c["sysroot"], loop, timeout=60)
    ok(done_words > 100 and r.returncode == 0 and not sanitizer_report(r.stderr)
       and json.loads(r.stdout)["threads"],
       f"aarch64 stack of {done_words} self-pointing words: a result, no crash or hang",
       [f"exit {r.returncode}", r.stderr[:500]])


def main():
    cs = cases()
    tools = all(shutil.which(t) for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64", "gdb-multiarch"))
    with tempfile.TemporaryDirectory(prefix="coreq-a64-") as tmp:
        check_x86_without_nt_file(tmp)
        if not cs:
            skip("aarch64 cores", "no aarch64 corpus (aarch64-linux-gnu-gcc or qemu-aarch64 missing)"
                 if not tools else "corpus/make-aarch64-cores made no core")
            done()
        for name, c in cs.items():
            if name.startswith("recurse-"):
                continue  # test_aarch64_recursion.py: frame for frame against gdb-multiarch
            if c["link"] == "static":
                check_static(c, name)
            else:
                check_dynamic(c, name)
        dyn = cs.get("abort_deep.O0.dynamic")
        if dyn:
            check_bad_input(dyn, tmp)
    done()


if __name__ == "__main__":
    main()
