#!/usr/bin/env python3
"""tests/hostile/hostile.py - damaged inputs of every class issue 16 names,
made from real corpus cores by a seeded generator, and the checks that coreq
survives each one.

    hostile.py --corpus DIR --out DIR [--per-class N] [--seed S] [--jobs J] [--only G,...]

For every class, N inputs are made (deterministic for a seed) and coreq is run
on each: the ASan+UBSan build ($COREQ) for behaviour, the release build
($COREQ_RELEASE) for time and memory, each against its honest twin (the same
command on the undamaged input).  An input fails a column when:
  crash    a sanitizer report (or a signal);
  hang     no exit within the time limit;
  slow     the release run used over 2 s more CPU time (user + system, every
           thread) than its honest twin: CPU time, which a loaded machine
           does not stretch as it stretches the wall clock;
  big      the release run's peak RSS was over 256 MiB above its twin's;
  exit     the exit status was not 0 or 1;
  message  exit 1 without exactly one `coreq: PATH: reason` line on stderr;
  json     exit 0 from a --format json command without valid JSON on stdout;
  effect   the input's own check of what the run must not do found it done
           (a shell command from a core ran, a file outside the output was
           written, a handed-over database was changed, ...).
An input may bring a setup (run before each of its runs, to lay out the
files it needs afresh) and an effect check (run after each).
It prints one row per class and exits 1 when any column but `inputs` is not 0.
Only the ELF, note and SQLite formats are used to make inputs, never coreq.
"""
import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import stat
import struct
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import elfcore  # noqa: E402

COREQ = os.path.abspath(os.environ.get("COREQ", "build/asan/coreq"))
COREQ_RELEASE = os.path.abspath(os.environ.get("COREQ_RELEASE", "build/coreq"))
SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schema")
TIME_LIMIT = 20
SLOW_S, BIG_KIB = 2.0, 256 * 1024
BASES = ["segv_null.O2", "abort_deep.stripped", "sighandler.O2", "fpe.O2", "rust_async.O2"]
COLUMNS = ["inputs", "crash", "hang", "slow", "big", "exit", "message", "json", "effect"]
MESSAGE = re.compile(r"^coreq: \S.*: \S")


class Input:
    def __init__(self, cls, name, argv, twin, want_json=True, env=None, setup=None, effect=None,
                 effect_sees_output=False, cwd=None):
        self.cls, self.name, self.argv, self.twin = cls, name, argv, twin
        self.want_json, self.env, self.cwd = want_json, env or {}, cwd
        # setup(): lays out the input's files before each run; effect(): None, or
        # what the run did that it must not (checked after each run); given the
        # run's standard output (bytes, b"" after a hang) when effect_sees_output.
        self.setup, self.effect, self.effect_sees_output = setup, effect, effect_sees_output


class Gen:
    """Makes the inputs of every class into out, from the corpus's cores."""

    def __init__(self, corpus, out, per_class, seed):
        self.corpus, self.out, self.n, self.rng = corpus, out, per_class, random.Random(seed)
        self.bases = []
        for b in BASES:
            core = os.path.join(corpus, "cores", b, "core")
            if os.path.isfile(core):
                self.bases.append((b, core, open(core, "rb").read()))
        self.inputs = []
        self.count = 0

    def path(self, suffix):
        self.count += 1
        return os.path.join(self.out, f"{self.count:05d}{suffix}")

    def write(self, data, suffix=".core"):
        p = self.path(suffix)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def base(self):
        return self.rng.choice(self.bases)

    def stack(self, cls, core, twin_core, extra=(), name=None):
        argv = ["stack", "--format", "json", "--no-cache", *extra, core]
        twin = ["stack", "--format", "json", "--no-cache", *extra, twin_core]
        self.inputs.append(Input(cls, name or os.path.basename(core), argv, twin))

    def flip(self, data, lo, hi, nbytes):
        d = bytearray(data)
        for _ in range(nbytes):
            i = self.rng.randrange(lo, max(lo + 1, hi))
            if i < len(d):
                d[i] = self.rng.choice([0, 0xff, self.rng.randrange(256), d[i] ^ (1 << self.rng.randrange(8))])
        return d

    # ---- cores -------------------------------------------------------------------
    def header(self):
        for _ in range(self.n):
            name, core, data = self.base()
            self.stack("header", self.write(self.flip(data, 0, 64, self.rng.choice([1, 2, 4]))), core)

    def phdrs(self):
        for _ in range(self.n):
            name, core, data = self.base()
            ph = elfcore.phdrs(data)
            p = self.rng.choice(ph)
            d = bytearray(data)
            field = self.rng.choice([(0, "<I"), (8, "<Q"), (16, "<Q"), (32, "<Q"), (40, "<Q")])
            val = self.rng.choice([0, 1, 0xffffffff, 0xffffffffffffffff, 1 << 40, len(data) * 2,
                                   self.rng.randrange(1 << 32)])
            fmt = field[1]
            struct.pack_into(fmt, d, p["hdr"] + field[0], val & (0xffffffff if fmt == "<I" else (1 << 64) - 1))
            self.stack("phdrs", self.write(d), core)

    def notes(self):
        for _ in range(self.n):
            name, core, data = self.base()
            ns = elfcore.notes(data)
            n = self.rng.choice(ns)
            d = bytearray(data)
            if self.rng.random() < 0.5:  # a header field of one note
                struct.pack_into("<I", d, n["offset"] + 4 * self.rng.randrange(3),
                                 self.rng.choice([0, 1, 7, 0xffff, 0xffffffff, self.rng.randrange(1 << 32)]))
            else:
                d = self.flip(d, n["desc_off"], n["desc_off"] + len(n["desc"]), self.rng.choice([1, 8, 32]))
            self.stack("notes", self.write(d), core)

    def nt_file(self):
        for _ in range(self.n):
            name, core, data = self.base()
            ns = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_FILE]
            if not ns:
                continue
            n = ns[0]
            d = bytearray(data)
            k = self.rng.randrange(4)
            if k == 0:  # the count
                struct.pack_into("<Q", d, n["desc_off"], self.rng.choice([0, 1 << 20, (1 << 64) - 1, 3]))
            elif k == 1:  # the page size
                struct.pack_into("<Q", d, n["desc_off"] + 8, self.rng.choice([0, 1, 1 << 63]))
            elif k == 2:  # the strings lose their NULs
                desc = n["desc"]
                count, = struct.unpack_from("<Q", desc, 0)
                strings = n["desc_off"] + 16 + 24 * min(count, 4096)
                for i in range(strings, n["desc_off"] + len(desc)):
                    if d[i] == 0:
                        d[i] = ord("A")
            else:
                d = self.flip(d, n["desc_off"], n["desc_off"] + len(n["desc"]), 16)
            self.stack("nt_file", self.write(d), core)

    def registers(self):
        for _ in range(self.n):
            name, core, data = self.base()
            ns = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS]
            d = bytearray(data)
            n = self.rng.choice(ns)
            for _ in range(self.rng.choice([1, 3, 27])):
                slot = self.rng.randrange(27)
                struct.pack_into("<Q", d, n["desc_off"] + 112 + 8 * slot,
                                 self.rng.choice([0, 1, (1 << 64) - 1, 1 << 47, self.rng.randrange(1 << 64)]))
            self.stack("registers", self.write(d), core)

    def stack_loops(self):
        """rsp and rbp pointing into the stack so that frames point at themselves."""
        for _ in range(self.n):
            name, core, data = self.base()
            pr = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS][0]
            rsp, = struct.unpack_from("<Q", pr["desc"], 112 + 19 * 8)
            d = bytearray(data)
            off = None
            for p in elfcore.phdrs(data):
                if p["type"] == elfcore.PT_LOAD and p["vaddr"] <= rsp < p["vaddr"] + p["filesz"]:
                    off = p["offset"] + rsp - p["vaddr"]
            if off is None:
                continue
            for i in range(0, 256, 8):  # every word: the stack itself, or back to rip
                if off + i + 8 <= len(d):
                    struct.pack_into("<Q", d, off + i, rsp + self.rng.choice([0, i, 16]))
            struct.pack_into("<Q", d, pr["desc_off"] + 112 + 4 * 8, rsp)  # rbp = rsp
            self.stack("stack_loops", self.write(d), core)

    def truncations(self):
        for _ in range(self.n):
            name, core, data = self.base()
            cut = self.rng.choice([self.rng.randrange(64), self.rng.randrange(4096),
                                   self.rng.randrange(len(data))])
            self.stack("truncations", self.write(data[:cut]), core)

    def many_loads(self):
        """10,000 PT_LOAD headers (the original ones first), at the end of the file."""
        name, core, data = self.bases[0]
        ph = elfcore.phdrs(data)
        entries = bytearray()
        for p in ph:
            entries += bytes(data[p["hdr"]: p["hdr"] + 56])
        base = 0x600000000000  # above user code and heap, below the stacks
        for i in range(10_000 - len(ph)):
            entries += struct.pack("<IIQQQQQQ", elfcore.PT_LOAD, 6, 0, base + i * 8192, 0, 4096, 4096, 4096)
        d = bytearray(data)
        d += b"\0" * (-len(d) % 8)
        phoff = len(d)
        d += entries
        struct.pack_into("<Q", d, 0x20, phoff)
        struct.pack_into("<H", d, 0x38, 0xffff if len(ph) + 10_000 > 0xffff else 10_000)
        self.stack("many_loads", self.write(d), core)

    def many_threads(self):
        """100,000 NT_PRSTATUS notes, each a copy of the crashed thread with its own tid."""
        name, core, data = self.bases[0]
        ns = elfcore.notes(data)
        blob = bytearray(b"".join(elfcore.raw_note(data, n) for n in ns))
        pr = [n for n in ns if n["type"] == elfcore.NT_PRSTATUS][0]
        desc = bytearray(pr["desc"])
        for i in range(100_000):
            struct.pack_into("<i", desc, elfcore.PRSTATUS_PID, 2_000_000 + i)
            blob += elfcore.note_bytes(b"CORE", elfcore.NT_PRSTATUS, desc)
        self.stack("many_threads", self.write(elfcore.with_notes(data, bytes(blob))), core)

    # ---- compressed -----------------------------------------------------------------
    def compressed(self):
        for i in range(self.n):
            name, core, data = self.base()
            tool = self.rng.choice(["zstd", "xz", "gzip"])
            raw = data if i % 3 else self.flip(data, 0, len(data), 8)
            z = subprocess.run([tool, "-c", "-q"], input=bytes(raw), capture_output=True).stdout
            if i % 3 == 1:
                z = self.flip(z, 0, len(z), self.rng.choice([1, 4]))
            elif i % 3 == 2:
                z = z[: self.rng.randrange(1, len(z))]
            self.stack("compressed", self.write(z, "." + {"zstd": "zst", "xz": "xz", "gzip": "gz"}[tool]), core)

    # ---- one-stream cores read through the keep plan (libcore/model/stream_image.c) ----
    def streams(self):
        """Damaged cores compressed as one stream and read with the keep plan on
        (COREQ_STREAM_KEEP_ALL_BELOW=0: small cores too drop what the plan does
        not keep): program headers, notes, registers and NT_FILE that lie about
        what to keep, and streams cut short or longer than the headers say."""
        for i in range(self.n):
            name, core, data = self.base()
            d = bytearray(data)
            kind = self.rng.randrange(6)
            if kind == 0:  # a program header field
                p = self.rng.choice(elfcore.phdrs(data))
                off, fmt = self.rng.choice([(8, "<Q"), (16, "<Q"), (32, "<Q"), (40, "<Q")])
                struct.pack_into(fmt, d, p["hdr"] + off, self.rng.choice(
                    [0, 1, 0xffffffffffffffff, 1 << 40, len(data) * 2, self.rng.randrange(1 << 32)]))
            elif kind in (1, 2):  # a note's bytes: registers (sp, fs_base, ...) or NT_FILE's ranges
                ns = elfcore.notes(data)
                n = self.rng.choice([x for x in ns if x["type"] in (elfcore.NT_PRSTATUS, elfcore.NT_FILE)] or ns)
                d = self.flip(d, n["desc_off"], n["desc_off"] + len(n["desc"]), self.rng.choice([1, 8, 64]))
            elif kind == 3:  # the raw core cut short
                d = d[: self.rng.randrange(64, len(d))]
            elif kind == 4:  # more bytes than the headers account for
                d += bytes(self.rng.randrange(1, 1 << 16))
            z = subprocess.run(["zstd", "-c", "-q", "-1"], input=bytes(d), capture_output=True).stdout
            if kind == 5:  # the stream itself cut short
                z = z[: self.rng.randrange(1, len(z))]
            argv = ["stack", "--format", "json", "--no-cache", self.write(z, ".zst")]
            self.inputs.append(Input("streams", os.path.basename(argv[-1]), argv,
                                     ["stack", "--format", "json", "--no-cache", core],
                                     env={"COREQ_STREAM_KEEP_ALL_BELOW": "0"}))

    # ---- module files found through --sysroot ------------------------------------------
    def sysroot(self):
        name, core, data = self.bases[0]
        exe = os.path.join(self.corpus, "bin", "O2", name.split(".")[0])
        other = os.path.join(self.corpus, "bin", "O0", name.split(".")[0])
        kinds = ["other_build", "truncated", "eh_frame", "debug_info", "directory", "fifo", "sparse"]
        for i in range(max(self.n, len(kinds))):
            kind = kinds[i % len(kinds)]
            root = self.path(".sysroot")
            target = os.path.join(root, exe.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            blob = open(exe, "rb").read()
            if kind == "other_build":
                shutil.copy(other, target)
            elif kind == "truncated":
                open(target, "wb").write(blob[: self.rng.randrange(16, len(blob))])
            elif kind in ("eh_frame", "debug_info"):
                sec = section(exe, ".eh_frame" if kind == "eh_frame" else ".debug_info")
                if sec:
                    blob = self.flip(blob, sec[0], sec[0] + sec[1], 32)
                open(target, "wb").write(blob)
            elif kind == "directory":
                os.makedirs(target)
            elif kind == "fifo":
                os.mkfifo(target)
            elif kind == "sparse":
                with open(target, "wb") as f:
                    f.truncate(8 << 30)
            self.stack("sysroot", core, core, extra=("--sysroot", root), name=f"{kind}-{i}")

    def sysroot_traversal(self):
        """Sysroots whose names and links climb out of them, toward this host's
        own module files (which carry the build-ids the core records): an
        absolute link, a relative one with enough `../`, a link to a directory
        of the host, a magic link, a loop, a chain of 41 links, and an NT_FILE
        name rewritten (same length) to climb with `../` to a copy beside the
        sysroot.  Whatever the kind, every module is missing: nothing outside
        the sysroot is found (the effect checks `coreq info`'s JSON)."""
        kinds = ["absolute", "relative", "dir_link", "magic", "loop", "chain", "climb"]
        for i in range(max(self.n, len(kinds))):
            kind = kinds[i % len(kinds)]
            name, core, data = self.base()
            ns = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_FILE]
            if not ns:
                continue
            desc = ns[0]["desc"]
            count, = struct.unpack_from("<Q", desc, 0)
            names = desc[16 + 24 * count:].split(b"\0")[:count]
            files = sorted({n.decode() for n in names
                            if n.startswith(b"/") and os.path.isfile(n.decode())})
            if not files:
                continue
            root = self.path(".sysroot")
            os.makedirs(root)
            for f in files:
                at = os.path.join(root, f.lstrip("/"))
                os.makedirs(os.path.dirname(at), exist_ok=True)
                real = os.path.realpath(f)
                if kind == "absolute":
                    os.symlink(real, at)
                elif kind == "relative":
                    os.symlink("../" * (at.count("/") + self.rng.randrange(1, 8)) + real.lstrip("/"), at)
                elif kind == "magic":
                    os.symlink("/proc/self/root" + real, at)
                elif kind == "loop":
                    os.symlink(os.path.basename(at), at)
                elif kind == "chain":
                    for k in range(41):
                        link = os.path.basename(f"{at}.{k + 1}") if k < 40 else real
                        os.symlink(link, f"{at}.{k}" if k else at)
                elif kind == "dir_link" and not os.path.lexists(os.path.dirname(at) + ".d"):
                    os.symlink(os.path.dirname(real), os.path.dirname(at) + ".d")
                    os.symlink(os.path.basename(os.path.dirname(at)) + ".d/" + os.path.basename(real), at)
            d = bytearray(data)
            if kind == "climb":  # every name: /../<n>/<file> beside the root, the same length
                lo = ns[0]["desc_off"] + 16 + 24 * count
                hi = ns[0]["desc_off"] + len(desc)
                beside = os.path.join(os.path.dirname(root), "o")
                os.makedirs(beside, exist_ok=True)
                for f in files:
                    if len(f) < 12:
                        continue
                    new = "/../o/" + "x" * (len(f) - 6 - 5) + f"{len(f):05d}"[-5:]
                    shutil.copyfile(os.path.realpath(f), os.path.join(beside, new[6:]))
                    d[lo:hi] = bytes(d[lo:hi]).replace(f.encode() + b"\0", new.encode() + b"\0")
            out = self.write(bytes(d))
            argv = ["info", "--format", "json", "--sysroot", root, out]
            self.inputs.append(Input("sysroot_traversal", f"{kind}-{i}", argv,
                                     ["info", "--format", "json", "--sysroot", root, core],
                                     effect=sysroot_found_outside, effect_sees_output=True))

    # ---- databases ------------------------------------------------------------------
    def cache_db(self):
        # A C core (tables and symbols) and, every other input, a Rust one: its
        # cache also holds a runtime blob (the Rust index in runtime_blobs).
        bases = [self.bases[0]] + [b for b in self.bases if b[0].startswith("rust_")][:1]
        cleans = []
        for name, core, data in bases:
            clean = self.path(".cache.db")
            subprocess.run([COREQ_RELEASE, "stack", "--cache", clean, core], capture_output=True)
            cleans.append(clean)
        for i in range(self.n):
            name, core, data = bases[i % len(bases)]
            db = self.path(".cache.db")
            shutil.copy(cleans[i % len(bases)], db)
            con = sqlite3.connect(db)
            rows = con.execute("SELECT build_id, address, debuginfo, frames FROM symbols").fetchall()
            for bid, addr, dbg, blob in rows:
                con.execute("UPDATE symbols SET frames = ? WHERE build_id = ? AND address = ? AND debuginfo = ?",
                            (bytes(self.flip(blob, 0, len(blob), 1 + i % 8))[: len(blob) - (i % 3)], bid, addr, dbg))
            for bid, blob in con.execute("SELECT build_id, blob FROM unwind_tables").fetchall():
                con.execute("UPDATE unwind_tables SET blob = ? WHERE build_id = ?",
                            (bytes(self.flip(blob, 0, len(blob), 1 + i % 8)), bid))
            for src, rt, nm, blob in con.execute("SELECT source, runtime, name, blob FROM runtime_blobs").fetchall():
                # bits flipped and cut short; or no blob at all: text, an empty blob
                bad = [bytes(self.flip(blob, 0, len(blob), 1 + i % 8))[: len(blob) - (i % 3)],
                       "not a blob", b""][(i // 2) % 3]
                con.execute("UPDATE runtime_blobs SET blob = ? WHERE source = ? AND runtime = ? AND name = ?",
                            (bad, src, rt, nm))
            if i % 5 == 4:  # as an older coreq left it, with a view and a trigger: emptied, made again
                con.execute(f"PRAGMA user_version = {1 + i % 7}")
                con.execute("CREATE VIEW planted_view AS SELECT * FROM symbols")
                con.execute("CREATE TRIGGER planted AFTER DELETE ON symbols BEGIN SELECT 1; END")
            con.commit()
            con.close()
            if i % 4 == 3:  # the file itself damaged
                raw = bytearray(open(db, "rb").read())
                open(db, "wb").write(self.flip(raw, 0, len(raw), 64))
            argv = ["stack", "--format", "json", "--cache", db, core]
            self.inputs.append(Input("cache_db", os.path.basename(db), argv,
                                     ["stack", "--format", "json", "--no-cache", core]))

    @staticmethod
    def evil_symbols(blob):
        """A symbol row with every function named EVIL_..., its CRC-32 recomputed."""
        n, p, out = blob[0], 1, bytearray(blob[:1])
        for _ in range(n):
            flags = blob[p]
            out += blob[p:p + 5]
            p += 5
            for flag in (2, 4):
                if flags & flag:
                    end = blob.index(b"\0", p)
                    out += (b"EVIL_" if flag == 2 else b"") + blob[p:end + 1]
                    p = end + 1
        return bytes(out) + struct.pack("<I", zlib.crc32(bytes(out)))

    def forged_cache(self):
        """Intact caches that lie (issue 45, finding 6): every symbol row names EVIL_...
        with a good CRC, unwind tables swapped between modules; the file is another uid's
        (as root), writable by others, or in a directory others can write.  coreq must
        refuse it with a warning and name no EVIL_ function."""
        name, core, data = self.bases[0]
        clean = self.path(".cache.db")
        subprocess.run([COREQ_RELEASE, "stack", "--cache", clean, core], capture_output=True)
        ways = (["uid", "mode", "dir"] if os.geteuid() == 0 else ["mode", "dir"])
        for i in range(self.n):
            pristine = self.path(".forged.db")
            shutil.copy(clean, pristine)
            con = sqlite3.connect(pristine)
            for src, addr, dbg, fmt, blob in con.execute(
                    "SELECT source, address, debuginfo, format, frames FROM symbols").fetchall():
                con.execute("UPDATE symbols SET frames = ? WHERE source = ? AND address = ? AND "
                            "debuginfo = ? AND format = ?",
                            (self.evil_symbols(blob), src, addr, dbg, fmt))
            tables = con.execute("SELECT source, blob FROM unwind_tables").fetchall()
            if len(tables) > 1:
                k = self.rng.randrange(1, len(tables))
                for (src, _), (_, blob) in zip(tables, tables[k:] + tables[:k]):
                    con.execute("UPDATE unwind_tables SET blob = ? WHERE source = ?", (blob, src))
            con.commit()
            con.close()
            way = ways[i % len(ways)]
            home = self.path(".forged")
            os.mkdir(home)
            db = os.path.join(home, "cache.db")

            def setup(pristine=pristine, home=home, db=db, way=way):
                for x in ("", "-wal", "-shm", "-journal"):
                    if os.path.exists(db + x):
                        os.remove(db + x)
                shutil.copy(pristine, db)
                os.chmod(home, 0o777 if way == "dir" else 0o755)
                os.chmod(db, 0o666 if way == "mode" else 0o644)
                if way == "uid":
                    os.chown(db, 65534, 65534)

            def effect(out):
                return "an EVIL_ name from the forged cache was printed" if b"EVIL_" in out else None
            self.inputs.append(Input("forged_cache", f"{way}-{i}",
                                     ["stack", "--format", "json", "--cache", db, core],
                                     ["stack", "--format", "json", "--no-cache", core],
                                     setup=setup, effect=effect, effect_sees_output=True))

    def db_limits(self):
        """Values and sizes (issue 45, minor c): a 200 MB exe, cmdline or frames blob, and a
        database followed by a 1 TB hole; queries must stay within the twin's memory."""
        cores = [c for _, c, _ in self.bases[:2]]
        clean = self.clean_db(cores)
        huge = 200_000_000
        changes = [f"UPDATE cores SET exe = printf('%.*c', {huge}, 'x')",
                   f"UPDATE cores SET cmdline = printf('%.*c', {huge}, 'y') WHERE id = 1",
                   f"UPDATE stacks SET frames_blob = zeroblob({huge}) WHERE id = 1",
                   None]
        dbs = []
        for change in changes[: max(1, min(self.n, len(changes)))]:
            db = self.path(".db")
            shutil.copy(clean, db)
            if change:
                con = sqlite3.connect(db)
                con.execute(change)
                con.commit()
                con.close()
            else:
                with open(db, "r+b") as f:
                    f.truncate(os.path.getsize(db) + (1 << 40))
            dbs.append(db)
        queries = [["cores", "--format", "json"], ["show", "1", "--format", "json"],
                   ["list-stacks", "--format", "json"], ["show", "1"], ["cores"]]
        for i in range(self.n):
            db, q = dbs[i % len(dbs)], queries[(i // len(dbs)) % len(queries)]
            self.inputs.append(Input("db_limits", f"{os.path.basename(db)}-{q[0]}",
                                     [*q, "--db", db], [*q, "--db", clean],
                                     want_json="json" in q))

    def ingest_db(self):
        name, core, data = self.bases[0]
        clean = self.path(".db")
        subprocess.run([COREQ_RELEASE, "ingest", "--no-cache", "--db", clean, core], capture_output=True)
        con = sqlite3.connect(clean)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        raw = open(clean, "rb").read()
        queries = [["cores"], ["show", "1"], ["buckets"], ["list-stacks"]]
        for i in range(self.n):
            db = self.write(self.flip(raw, 0 if i % 2 else 100, len(raw), self.rng.choice([1, 16, 256])), ".db")
            q = queries[i % len(queries)]
            self.inputs.append(Input("ingest_db", os.path.basename(db),
                                     [*q, "--db", db, "--format", "json"],
                                     [*q, "--db", clean, "--format", "json"]))
            if i % 4 == 0:
                db2 = self.path(".db")
                shutil.copy(db, db2)
                self.inputs.append(Input("ingest_db", os.path.basename(db2),
                                         ["ingest", "--no-cache", "--db", db2, "--format", "json", core],
                                         ["ingest", "--no-cache", "--db", self.path(".db"), "--format", "json", core]))

    # ---- build-ids that are not ones (issue 30) --------------------------------------
    BAD_BUILD_IDS = [
        "../../../evil",  # from a --debug-dir tree D/.build-id/xx/rest.debug to ROOT/evil.debug
        "../escape",  # from the debuginfod client's cache ROOT/c/cache to ROOT/c/escape
        "../../escape", "ab/../../escape", "zz" * 20, "ab" * 65, "a" * 10000, "abc", "",
        "\x1b]0;title\x07", "%2e%2e/escape", "ab cd", "ab\ncd",
    ]

    def build_id(self):
        """Build-ids that are not 2 to 128 hex digits where they enter as text: a
        database's modules.build_id for resymbolize (a file:// debuginfod and a
        --debug-dir tree, with evil.debug planted where a traversal leads),
        export and list-stacks; and build-id notes of odd sizes in cores (info,
        stack --debug-dir)."""
        name, core, data = next(b for b in self.bases if b[0] == "abort_deep.stripped")
        clean = self.path(".db")
        subprocess.run([COREQ_RELEASE, "ingest", "--no-cache", "--db", clean, core], capture_output=True)
        con = sqlite3.connect(clean)
        con.execute("PRAGMA journal_mode=DELETE")
        exe_mod, genuine = con.execute("SELECT m.id, m.build_id FROM modules m JOIN core_modules cm "
                                       "ON cm.module_id = m.id JOIN cores c ON c.id = cm.core_id "
                                       "WHERE cm.path = c.exe").fetchone()
        con.close()
        debug = os.path.join(self.corpus, "debug", ".build-id", genuine[:2], genuine[2:] + ".debug")
        twin_root = self.build_id_root(clean, exe_mod, genuine, debug)
        twin_root()
        twins = {k: self.build_id_argv(k, self.out_twin) for k in ("resymbolize", "export", "list-stacks")}
        for i in range(self.n):
            if i % 3 == 2:
                self.build_id_core(i, core, data)
                continue
            bid = self.BAD_BUILD_IDS[i % len(self.BAD_BUILD_IDS)]
            if self.rng.random() < 0.2:
                bid = "".join(chr(self.rng.randrange(1, 256)) for _ in range(self.rng.randrange(1, 200)))
            kind = ["resymbolize", "resymbolize", "export", "list-stacks"][i % 4]
            root = self.path(".bid")
            setup = self.build_id_root(clean, exe_mod, bid, debug, root)
            argv = self.build_id_argv(kind, root)
            env = {"DEBUGINFOD_CACHE_PATH": os.path.join(root, "c", "cache"), "DEBUGINFOD_URLS": ""}
            if kind == "export":
                self.inputs.append(Input("build_id", f"{kind}-{i}", argv, twins[kind], want_json=False,
                                         env=env, setup=setup, effect=exported_build_ids_ok,
                                         effect_sees_output=True))
            else:
                self.inputs.append(Input("build_id", f"{kind}-{i}", argv, twins[kind], env=env, setup=setup,
                                         effect=lambda root=root, m=exe_mod: build_id_effects(root, m)))

    @property
    def out_twin(self):
        return os.path.join(self.out, "build_id-twin")

    def build_id_root(self, clean, exe_mod, bid, debug, root=None):
        """A setup laying out root afresh: the database with bid for the
        executable's module, the client cache's parent, an empty file://
        debuginfod, an empty --debug-dir tree, and ROOT/evil.debug (the
        executable's genuine debug file, so that frames named from it show)."""
        root = root or self.out_twin

        def setup():
            shutil.rmtree(root, ignore_errors=True)
            os.makedirs(os.path.join(root, "c"))
            os.makedirs(os.path.join(root, "srv"))
            os.makedirs(os.path.join(root, "d", "debug", ".build-id"))
            shutil.copy(debug, os.path.join(root, "evil.debug"))
            db = os.path.join(root, "db.sqlite")
            shutil.copy(clean, db)
            con = sqlite3.connect(db)
            con.execute("UPDATE modules SET build_id = ? WHERE id = ?", (bid, exe_mod))
            con.commit()
            con.close()
        return setup

    @staticmethod
    def build_id_argv(kind, root):
        db = os.path.join(root, "db.sqlite")
        if kind == "resymbolize":
            return ["resymbolize", "--db", db, "--format", "json", "--debuginfod",
                    "file://" + os.path.join(root, "srv"), "--debug-dir", os.path.join(root, "d", "debug")]
        if kind == "export":
            return ["export", "--db", db, "--type", "stack"]
        return ["list-stacks", "--db", db, "--format", "json"]

    def build_id_core(self, i, core, data):
        """Every GNU build-id note in the core's copies of module headers gets descsz n."""
        d = bytearray(data)
        pat = struct.pack("<III", 4, 20, 3) + b"GNU\0"
        sizes = [0, 1, 2, 3, 19, 21, 63, 64, 65, 128, 0x10000, 0xffffffff]
        size = sizes[i // 3 % len(sizes)]
        for m in re.finditer(re.escape(pat), bytes(data)):
            struct.pack_into("<I", d, m.start() + 4, size)
        path = self.write(d)
        if i % 2:
            argv = ["info", "--format", "json", path]
            twin = ["info", "--format", "json", core]
        else:
            dd = os.path.join(self.corpus, "debug")
            argv = ["stack", "--format", "json", "--no-cache", "--debug-dir", dd, path]
            twin = ["stack", "--format", "json", "--no-cache", "--debug-dir", dd, core]
        self.inputs.append(Input("build_id", f"note{size}-{i}", argv, twin, effect=printed_build_ids_ok,
                                 effect_sees_output=True))
    # ---- programs coreq starts, files it writes and reads by path (issue 30) ---------
    def genuine_db(self, core):
        """A database holding core (ingested by the release build): its path and the row's bucket."""
        db = self.path(".db")
        subprocess.run([COREQ_RELEASE, "ingest", "--no-cache", "--db", db, core], capture_output=True)
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        bucket = con.execute("SELECT b.hash FROM buckets b JOIN cores c ON c.bucket_id = b.id").fetchone()
        con.close()
        return db, bucket[0] if bucket else "0"

    def db_copy(self, db, sql=(), args=()):
        """A copy of db with sql run on it (each statement with its args)."""
        out = self.path(".db")
        shutil.copy(db, out)
        con = sqlite3.connect(out)
        for q, a in zip(sql, args):
            con.execute(q, a)
        con.commit()
        con.close()
        return out

    def gdb_args(self):
        """Cores whose NT_FILE names the executable as a gdb option that runs a shell command
        (directly, or through a command file); `coreq debug` of the core, and of a database
        row made from it or pointing at it.  Effect: the command's marker file exists."""
        if not shutil.which("gdb"):
            return
        name, core, data = self.bases[0]
        exe = elfcore.nt_file([n for n in elfcore.notes(data) if n["type"] == elfcore.NT_FILE][0]["desc"])[1][0][3]
        clean_db, _ = self.genuine_db(core)
        forms = ["--eval-command=shell touch {m}", "-eval-command=shell touch {m}", "--ex=shell touch {m}",
                 "--init-eval-command=shell touch {m}", "-iex=shell touch {m}", "--command={s}", "-ix={s}",
                 "--eval-command=python import os; os.system('touch {m}')"]
        for i in range(max(self.n, len(forms) + 2)):
            marker = self.path(".marker")
            script = self.path(".gdb")
            with open(script, "w") as f:
                f.write(f"shell touch {marker}\n")
            evil = forms[i % len(forms)].format(m=marker, s=script).encode()
            crafted = self.write(elfcore.with_renamed_files(data, exe, evil))
            way = i % 3
            if way == 0:
                argv = ["debug", crafted, "--", "-batch"]
            elif way == 1:  # ingested: the row and the core both name it
                db = self.path(".db")
                subprocess.run([COREQ_RELEASE, "ingest", "--no-cache", "--db", db, crafted], capture_output=True)
                argv = ["debug", "--db", db, "1", "--", "-batch"]
            else:  # a genuine row pointed at the crafted core, its exe column the option too
                db = self.db_copy(clean_db, ["UPDATE cores SET path = ?, stored_path = ?, exe = ?"],
                                  [(crafted, crafted, evil.decode())])
                argv = ["debug", "--db", db, "1", "--", "-batch"]

            def gone(m=marker):
                if os.path.exists(m):
                    os.unlink(m)

            def ran(m=marker):
                return f"gdb ran a shell command the core named ({m} exists)" if os.path.exists(m) else None

            self.inputs.append(Input("gdb_args", f"{os.path.basename(crafted)}-{way}", argv,
                                     ["debug", core, "--", "-batch"], want_json=False, setup=gone, effect=ran))

    def output_paths(self):
        """dump -o and flame -o at a symbolic link, an existing 0666 file, a FIFO, a device; and
        database rows whose core is a FIFO, /dev/zero, a link to it, or a regular file or zstd
        stream holding more than the size the row records."""
        name, core, data = self.bases[0]
        clean_db, bucket = self.genuine_db(core)
        kinds = ["link", "loose_mode", "fifo", "device", "row_fifo", "row_zero", "row_zero_link",
                 "row_longer", "row_bomb"]
        for i in range(max(self.n, 2 * len(kinds))):
            kind = kinds[i % len(kinds)]
            cmd = ["dump", "--db", clean_db, "1", "-o"] if i % 2 == 0 else \
                ["flame", "--db", clean_db, "--bucket", bucket, "-o"]
            d = self.path(".out")
            os.makedirs(d)
            target = os.path.join(d, "target")
            twin = cmd + [os.path.join(d, "honest")]
            setup = effect = None
            if kind == "link":
                victim = os.path.join(d, "victim")

                def setup(t=target, v=victim):
                    open(v, "w").write("precious\n")
                    if not os.path.lexists(t):
                        os.symlink(v, t)

                def effect(v=victim):
                    return None if open(v, "rb").read() == b"precious\n" else "wrote through a symbolic link"
            elif kind == "loose_mode":
                def setup(t=target):
                    if os.path.lexists(t):
                        os.unlink(t)
                    open(t, "w").write("old\n")
                    os.chmod(t, 0o666)

                def effect(t=target):
                    st = os.lstat(t)
                    changed = open(t, "rb").read() != b"old\n"
                    return f"the output kept mode {st.st_mode & 0o777:o}" if changed and st.st_mode & 0o066 == 0o066 \
                        else None
            elif kind == "fifo":
                def setup(t=target):
                    if not os.path.exists(t):
                        os.mkfifo(t)

                def effect(t=target):
                    return None if stat.S_ISFIFO(os.lstat(t).st_mode) else "the FIFO was replaced"
            elif kind == "device":
                if os.geteuid() != 0:
                    continue

                def setup(t=target):
                    if not os.path.lexists(t):
                        os.mknod(t, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null

                def effect(t=target):
                    return None if stat.S_ISCHR(os.lstat(t).st_mode) else "the device node was replaced"
            else:  # the stored core: the row points somewhere hostile
                where = {"row_fifo": os.path.join(d, "fifo"), "row_zero": "/dev/zero",
                         "row_zero_link": os.path.join(d, "zero")}.get(kind)
                if kind == "row_fifo":
                    os.mkfifo(where)
                elif kind == "row_zero_link":
                    os.symlink("/dev/zero", where)
                elif kind == "row_longer":  # a regular file longer than recorded
                    where = self.write(data + b"\0" * 65536)
                elif kind == "row_bomb":  # a zstd stream of 256 MiB for a row of the core's size
                    where = self.path(".zst")
                    zeros = subprocess.run(["zstd", "-q", "-c", "-19"], input=b"\0" * (1 << 20),
                                           capture_output=True).stdout
                    with open(where, "wb") as f:
                        f.write(subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True).stdout)
                        f.write(zeros * 256)
                db = self.db_copy(clean_db, ["UPDATE cores SET path = ?, stored_path = ?"], [(where, where)])
                out = os.path.join(d, "dumped")
                cmd, twin = ["dump", "--db", db, "1", "-o"], ["dump", "--db", clean_db, "1", "-o", out + ".honest"]
                target = out

                def effect(o=out, n=len(data)):
                    return f"dumped {os.path.getsize(o)} bytes for a row of {n}" \
                        if os.path.exists(o) and os.path.getsize(o) > n else None

                def setup(o=out):
                    if os.path.exists(o):
                        os.unlink(o)
            self.inputs.append(Input("output_paths", f"{kind}-{cmd[0]}-{i}", cmd + [target], twin,
                                     want_json=False, setup=setup, effect=effect))

    def svg_chars(self):
        """Frame names and paths with characters XML forbids (U+FFFE, U+FFFF, controls,
        surrogates, invalid UTF-8) in a database's frames, a core's module paths and the
        core's file name; and one bucket of 50,000 distinct stacks.  Effect: the SVG does
        not parse as XML, or does not draw every stack."""
        name, core, data = self.bases[0]
        clean_db, bucket = self.genuine_db(core)
        bad = ["\ufffe", "\uffff", "\x01", "\x1b[31m", "\x0b", "\x7f", "\ud800", "\udfff",
               b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xef\xbf\xbe", b"\xf4\x90\x80\x80", "]]>", "<&\"'>"]

        def raw(v):
            return v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v

        stripped = [b for b in self.bases if "stripped" in b[0]]
        for i in range(self.n):
            d = self.path(".svgdir")
            os.makedirs(d)
            svg = os.path.join(d, "out.svg")
            chars = b"".join(raw(self.rng.choice(bad)) for _ in range(self.rng.choice([1, 2, 4])))
            way = i % 3
            if way == 0:  # frames in the database
                db = self.db_copy(clean_db, ["UPDATE frames SET function = CAST(? AS TEXT) || coalesce(function, '')"
                                             " WHERE idx % 2 = 0"], [(b"f" + chars,)])
                argv, twin = ["flame", "--db", db, "--bucket", bucket, "-o", svg], \
                    ["flame", "--db", clean_db, "--bucket", bucket, "-o", svg + ".honest"]
            elif way == 1 and stripped:  # module paths in a core: frames are named after them
                sname, score, sdata = stripped[0]
                exe = elfcore.nt_file([n for n in elfcore.notes(sdata) if n["type"] == elfcore.NT_FILE][0]["desc"])[1][0][3]
                crafted = self.write(elfcore.with_renamed_files(sdata, exe, b"/nowhere/m" + chars))
                argv, twin = ["flame", crafted, "-o", svg], ["flame", score, "-o", svg + ".honest"]
            else:  # the core's own file name: the graph's title
                named = os.path.join(d, os.fsdecode(b"core" + chars.replace(b"/", b"_").replace(b"\0", b"_")))
                shutil.copy(core, named)
                argv, twin = ["flame", named, "-o", svg], ["flame", core, "-o", svg + ".honest"]
            self.inputs.append(Input("svg_chars", f"{os.path.basename(d)}-{way}", argv, twin, want_json=False,
                                     effect=lambda p=svg: svg_not_xml(p)))
        n = 50_000
        wide = self.path(".db")
        shutil.copy(clean_db, wide)
        con = sqlite3.connect(wide)
        base = con.execute("SELECT max(id) FROM stacks").fetchone()[0]
        con.executemany("INSERT INTO stacks (id, hash, nframes) VALUES (?, ?, 2)",
                        [(base + 1 + k, f"{0xa000000000000000 + k:016x}") for k in range(n)])
        con.executemany("INSERT INTO frames (stack_id, idx, module_id, offset, kind, trust, function) "
                        "VALUES (?, ?, NULL, ?, 'native', 'cfi', ?)",
                        [r for k in range(n) for r in ((base + 1 + k, 0, k, "leaf"),
                                                       (base + 1 + k, 1, k, f"outer_{k:06d}"))])
        con.executemany("INSERT INTO threads (core_id, tid, idx, name, crashed, stack_id, end) "
                        "VALUES (1, ?, ?, 't', 0, ?, 'outermost')",
                        [(1_000_000 + k, 1000 + k, base + 1 + k) for k in range(n)])
        con.commit()
        con.close()
        svg = self.path(".svg")
        # The twin reads the same stacks from the same database: what is left is the graph's own cost.
        self.inputs.append(Input("svg_chars", f"wide-{n}", ["flame", "--db", wide, "--bucket", bucket, "-o", svg],
                                 ["list-stacks", "--db", wide, "--bucket", bucket, "--format", "json"],
                                 want_json=False, effect=lambda p=svg: svg_not_xml(p, want=n)))

    def config(self):
        """$COREQ_CONFIG at a FIFO, a directory, a device, a link to a FIFO, and a file over
        64 KiB whose cut falls inside `db = .../good.db`.  Effect: a database made at the cut path."""
        name, core, data = self.bases[0]
        kinds = ["fifo", "directory", "zero", "fifo_link", "oversized", "oversized_nul"]
        for i in range(max(self.n, len(kinds))):
            kind = kinds[i % len(kinds)]
            d = self.path(".conf.d")
            os.makedirs(d)
            good = os.path.join(d, "good.db")
            honest = os.path.join(d, "honest.conf")
            open(honest, "w").write(f"db = {os.path.join(d, 'honest.db')}\n")
            conf = os.path.join(d, "coreq.conf")
            cut = None
            if kind == "fifo":
                os.mkfifo(conf)
            elif kind == "directory":
                os.makedirs(conf)
            elif kind == "zero":
                conf = "/dev/zero"
            elif kind == "fifo_link":
                os.mkfifo(conf + ".fifo")
                os.symlink(conf + ".fifo", conf)
            else:
                line = f"db = {good}\n"
                pad = 65536 - len(line) + 4 + self.rng.randrange(3)  # the cut: 4..6 bytes before the end
                filler = ("#" * 99 + "\n") if kind == "oversized" else ("#" * 99 + "\0")
                text = (filler * (pad // 100 + 1))[:pad - 1] + "\n" + line
                open(conf, "w").write(text)
                cut = text.encode()[:65536].split(b"\n")[-1].split(b"=", 1)[1].strip().decode()
            env = {"COREQ_CONFIG": conf, "COREQ_DB": "", "XDG_STATE_HOME": d}

            def effect(c=cut):
                return f"a database was made at the cut path {c}" if c and os.path.exists(c) else None
            self.inputs.append(Input("config", f"{kind}-{i}", ["ingest", "--no-cache", "--format", "json", core],
                                     ["ingest", "--no-cache", "--format", "json", "--db",
                                      os.path.join(d, "twin.db"), core],
                                     env=env, effect=effect))
    # ---- databases from elsewhere (issue 30, findings 5 and 6) ---------------------
    def clean_db(self, cores, suffix=".db"):
        """A database of cores made by the release build, in rollback-journal mode (as a
        copy handed over from another host is)."""
        db = self.path(suffix)
        subprocess.run([COREQ_RELEASE, "ingest", "--no-cache", "--db", db, *cores], capture_output=True)
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.execute("PRAGMA journal_mode=DELETE")
        con.close()
        return db

    @staticmethod
    def loosened(db, table, change):
        """Runs change(con) with table's NOT NULLs lifted, then puts its declaration back:
        NULLs where coreq's schema has NOT NULL, in a schema that is coreq's."""
        con = sqlite3.connect(db)
        orig = con.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                           (table,)).fetchone()[0]
        con.execute("PRAGMA writable_schema=ON")
        con.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?",
                    (re.sub(r"\bNOT NULL\b", "", orig), table))
        con.commit()
        con.close()
        con = sqlite3.connect(db)
        try:
            change(con)
            con.commit()
        except sqlite3.Error:
            pass
        con.close()
        con = sqlite3.connect(db)
        con.execute("PRAGMA writable_schema=ON")
        con.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (orig, table))
        con.commit()
        con.close()

    @staticmethod
    def unchanged(db):
        """An effect check: db keeps its bytes, and nothing appears beside it."""
        data = open(db, "rb").read()

        def check():
            if open(db, "rb").read() != data:
                return f"{os.path.basename(db)} was changed"
            side = [x for x in ("-wal", "-shm", "-journal") if os.path.exists(db + x)]
            return f"{os.path.basename(db)}{side[0]} appeared" if side else None
        return check

    @staticmethod
    def restore(pristine, db):
        def setup():
            for x in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(db + x):
                    os.remove(db + x)
            shutil.copy(pristine, db)
        return setup

    QUERIES = [["cores", "--format", "json"], ["show", "1", "--format", "json"],
               ["list-stacks", "--format", "json"], ["list-stacks"], ["list-stacks", "--format", "folded"],
               ["list-stacks", "--bucket", "1"], ["buckets", "--format", "json"], ["show", "2"],
               ["flame", "--bucket", "1", "-o"], ["export"]]
    COLUMNS = {"frames": ["kind", "trust", "offset", "function", "file", "line", "state", "sig_name",
                          "module_id"],
               "cores": ["identity", "path", "size", "pid", "exe", "cmdline", "signal", "signal_name",
                         "status", "crashed_tid", "nthreads", "ingested_at", "bucket_id", "source",
                         "timestamp", "hostname", "comm", "message", "stored_path", "fault_address"],
               "buckets": ["hash", "signature", "count", "first_seen", "last_seen", "example_core"],
               "stacks": ["hash", "nframes", "frames_blob"],
               "threads": ["name", "crashed", "end", "tid", "stack_id"],
               "modules": ["build_id", "path"],
               "core_modules": ["path", "status", "end", "module_id"]}

    def query_input(self, cls, name, pristine, q, writes=False):
        """Input running query q on a fresh copy of pristine; a query must leave it as it was."""
        db = self.path(".db")
        shutil.copy(pristine, db)
        argv = list(q)
        if argv[-1] == "-o":
            argv.append(self.path(".svg"))
        want_json = "json" in argv
        argv += ["--db", db]
        twin = [a if a != db else self.db_clean for a in argv]
        self.inputs.append(Input(cls, name, argv, twin, want_json=want_json,
                                 setup=self.restore(pristine, db),
                                 effect=None if writes else self.unchanged(db)))

    def db_hostile(self):
        """Databases handed over from elsewhere: NULLs and values of any type in any column,
        a table declared without its NOT NULLs, views named like coreq's tables (recursive),
        triggers, an older schema, URI-looking file names.  Queries must leave the file as it
        was; nothing planted may run."""
        cores = [c for _, c, _ in self.bases[:2]]
        self.db_clean = clean = self.clean_db(cores)
        kinds = ["values", "values", "loose", "view", "trigger", "old", "uri_ingest", "uri_merge"]
        for i in range(self.n):
            kind = kinds[i % len(kinds)]
            db = self.path(f".{kind}.db")
            shutil.copy(clean, db)
            q = self.QUERIES[(i // len(kinds) + i) % len(self.QUERIES)]
            if kind == "values":
                for t, cs in self.COLUMNS.items():
                    if self.rng.random() < 0.5:
                        continue
                    v = self.rng.choice([None, None, 7, -1, b"\x00\xff\x1b[31m", 1.5, "zz\x1b]0;x\x07", ""])
                    sub = [c for c in cs if self.rng.random() < 0.4 and
                           (v is None or c not in ("identity", "hash", "build_id"))]
                    if sub:
                        self.loosened(db, t, lambda con: con.execute(
                            f"UPDATE {t} SET " + ", ".join(f"{c} = ?" for c in sub), [v] * len(sub)))
                if i % 4 == 1:  # rebucket writes: it only must not crash
                    self.query_input("db_hostile", f"{kind}-{i}", db, ["rebucket", "--format", "json"],
                                     writes=True)
                    continue
            elif kind == "loose":  # re-declared without NOT NULL: not coreq's table
                con = sqlite3.connect(db)
                t = self.rng.choice(["frames", "cores", "buckets"])
                orig = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]
                con.execute("PRAGMA writable_schema=ON")
                con.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?",
                            (re.sub(r"\bNOT NULL\b", "", orig), t))
                con.commit()
                con.close()
                con = sqlite3.connect(db)
                col = {"frames": "kind", "cores": "status", "buckets": "signature"}[t]
                con.execute(f"UPDATE {t} SET {col} = NULL")
                con.commit()
                con.close()
            elif kind == "view":  # a view where a table should be, endless
                t = self.rng.choice(["cores", "buckets", "threads", "stacks", "frames"])
                con = sqlite3.connect(db)
                cols = [c[1] for c in con.execute(f"PRAGMA table_info({t})")]
                con.execute(f"ALTER TABLE {t} RENAME TO {t}_gone")
                con.execute(f"CREATE VIEW {t} AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
                            f"SELECT n + 1 FROM r) SELECT " + ", ".join(f"n AS {c}" for c in cols) +
                            " FROM r")
                con.commit()
                con.close()
                if (i // len(kinds)) % 2:
                    q = ["ingest", "--no-cache", "--format", "json", self.bases[-1][1]]
                elif t in ("cores", "buckets"):
                    q = [["cores", "--format", "json"], ["buckets", "--format", "json"]][t == "buckets"]
            elif kind == "trigger":  # SQL planted to run when coreq writes
                con = sqlite3.connect(db)
                con.execute("CREATE TABLE planted (what TEXT)")
                for t, ev in (("cores", "INSERT"), ("buckets", "UPDATE"), ("frames", "UPDATE"),
                              ("buckets", "INSERT"), ("cores", "UPDATE")):
                    con.execute(f"CREATE TRIGGER planted_{t}_{ev.lower()} AFTER {ev} ON {t} "
                                f"BEGIN INSERT INTO planted VALUES ('{t} {ev}'); END")
                con.commit()
                con.close()
                q = self.rng.choice([["ingest", "--no-cache", "--format", "json", self.bases[-1][1]],
                                     ["rebucket", "--format", "json"], ["resymbolize", "--format", "json"]])

                def planted_ran(db=db):
                    try:
                        con = sqlite3.connect(db)
                        n = con.execute("SELECT count(*) FROM planted").fetchone()[0]
                        con.close()
                    except sqlite3.Error:
                        return None
                    return f"a planted trigger ran {n} times" if n else None
                pristine = self.path(".db")
                shutil.copy(db, pristine)
                argv = q + ["--db", db]
                self.inputs.append(Input("db_hostile", f"{kind}-{i}", argv,
                                         q + ["--db", self.path(".db")],
                                         setup=self.restore(pristine, db), effect=planted_ran))
                continue
            elif kind == "old":  # an older schema, as an older coreq left it
                os.remove(db)
                con = sqlite3.connect(db)
                version = self.rng.randrange(1, 9)
                for f in sorted(os.listdir(SCHEMA)):
                    if re.match(r"\d{3}_", f) and int(f[:3]) <= version:
                        con.executescript(open(os.path.join(SCHEMA, f)).read())
                con.execute(f"PRAGMA user_version = {version}")
                con.commit()
                con.close()
            elif kind in ("uri_ingest", "uri_merge"):  # a file name that reads as a URI
                d = self.path(".dir")
                os.makedirs(d)
                other = os.path.join(d, "other.db")
                shutil.copy(clean, other)
                if kind == "uri_ingest":
                    argv = ["ingest", "--no-cache", "--format", "json", "--db", "file:other.db",
                            self.bases[-1][1]]
                    self.inputs.append(Input("db_hostile", f"{kind}-{i}", argv, argv, cwd=d,
                                             effect=self.unchanged(other)))
                else:
                    # "file:other.db?mode=ro" is a database of one genuine core; other.db holds two
                    literal = os.path.join(d, "file:other.db?mode=ro")
                    shutil.copy(self.clean_db(cores[:1]), literal)
                    target = os.path.join(d, "target.db")
                    argv = ["merge", "--format", "json", "--db", "target.db", "file:other.db?mode=ro"]

                    def merged_other(target=target):
                        con = sqlite3.connect(target)
                        n = con.execute("SELECT count(*) FROM cores").fetchone()[0]
                        con.close()
                        return f"merged {n} cores from other.db, not the file named" if n != 1 else None
                    self.inputs.append(Input("db_hostile", f"{kind}-{i}", argv, argv, cwd=d,
                                             setup=lambda t=target: [os.remove(t + x) for x in
                                                                     ("", "-wal", "-shm")
                                                                     if os.path.exists(t + x)],
                                             effect=merged_other))
                continue
            pristine = self.path(".db")
            shutil.copy(db, pristine)
            self.query_input("db_hostile", f"{kind}-{i}", pristine, q,
                             writes=q[0] in ("ingest", "rebucket"))

    def merge_poison(self):
        """Merge sources whose rows disagree with their hashes: a bucket's hash kept under a
        planted label, a stack's hash kept over planted frames, malformed build-ids.  After the
        merge the genuine crash is ingested: it must be filed under its own signature, with its
        own frames, and no malformed build-id may have come in."""
        kinds = ["label", "frames", "kind", "drop_frame", "nframes", "build_id"]
        refs = {}
        for name, core, _ in self.bases[:4]:
            ref = self.clean_db([core])
            con = sqlite3.connect(ref)
            refs[name] = (ref, con.execute("SELECT signature FROM buckets").fetchone()[0],
                          con.execute("SELECT f.idx, f.offset, f.kind, f.function FROM frames f JOIN threads t "
                                      "ON t.stack_id = f.stack_id AND t.idx = 0 ORDER BY f.idx").fetchall())
            con.close()
        for i in range(self.n):
            kind = kinds[i % len(kinds)]
            name, core, _ = self.bases[(i // len(kinds)) % len(refs)]
            ref, signature, frames = refs[name]
            src = self.path(f".{kind}.db")
            shutil.copy(ref, src)
            con = sqlite3.connect(src)
            con.execute("UPDATE cores SET identity = 'planted-' || identity")
            con.commit()
            con.close()
            twin_src = self.path(".db")
            shutil.copy(src, twin_src)
            if kind == "label":
                self.loosened(src, "buckets", lambda c: c.execute(
                    "UPDATE buckets SET signature = 'harmless_known_issue | ' || signature"))
            elif kind == "frames":
                self.loosened(src, "frames", lambda c: c.execute(
                    "UPDATE frames SET offset = offset + 16, function = 'harmless_known_issue' "
                    "WHERE idx = 0"))
            elif kind == "kind":
                self.loosened(src, "frames", lambda c: c.execute(
                    "UPDATE frames SET kind = 'inline' WHERE idx = 0"))
            elif kind == "drop_frame":
                self.loosened(src, "frames", lambda c: c.execute(
                    "DELETE FROM frames WHERE idx = (SELECT max(idx) FROM frames f2 "
                    "WHERE f2.stack_id = frames.stack_id)"))
            elif kind == "nframes":
                self.loosened(src, "stacks", lambda c: c.execute("UPDATE stacks SET nframes = nframes + 1"))
            else:
                bad = self.rng.choice(["../../../../tmp/x", "zz", "", "a" * 300, "ABCD/../ef"])
                self.loosened(src, "modules", lambda c: c.execute(
                    "UPDATE modules SET build_id = ? WHERE rowid = (SELECT min(rowid) FROM modules "
                    "WHERE build_id NOT LIKE 'path:%')", (bad,)))
            target = self.path(".target.db")
            argv = ["merge", "--format", "json", "--db", target, src]
            twin = ["merge", "--format", "json", "--db", self.path(".twin.db"), twin_src]

            def setup(target=target):
                for x in ("", "-wal", "-shm"):
                    if os.path.exists(target + x):
                        os.remove(target + x)

            def poisoned(target=target, core=core, signature=signature, frames=frames):
                subprocess.run([COREQ_RELEASE, "ingest", "--no-cache", "--db", target, core],
                               capture_output=True)
                con = sqlite3.connect(target)
                sig = con.execute("SELECT b.signature FROM cores c JOIN buckets b ON b.id = c.bucket_id "
                                  "WHERE c.identity NOT LIKE 'planted-%'").fetchone()
                got = con.execute("SELECT f.idx, f.offset, f.kind, f.function FROM cores c JOIN threads t "
                                  "ON t.core_id = c.id AND t.idx = 0 JOIN frames f ON f.stack_id = t.stack_id "
                                  "WHERE c.identity NOT LIKE 'planted-%' ORDER BY f.idx").fetchall()
                ids = [b for (b,) in con.execute("SELECT build_id FROM modules")]
                con.close()
                if not sig or sig[0] != signature:
                    return f"the genuine crash is filed under {sig[0] if sig else None!r}"
                if got != frames:
                    return "the genuine crash shows frames it does not have"
                if any(not (b.startswith("path:") or re.fullmatch(r"[0-9a-fA-F]{2,128}", b)) for b in ids):
                    return "a malformed build-id was merged"
                return None
            self.inputs.append(Input("merge_poison", f"{kind}-{name}-{i}", argv, twin, setup=setup,
                                     effect=poisoned))

    # ---- C++ coroutine frames (issue 33) ------------------------------------------
    def cxx_core(self, case="cxx_task.O2g"):
        """case's core, its exe's load bias and its coroutine frames as
        {coroutine: (vaddr, file offset)}, found from the exe's .actor/.destroy
        symbols (gcc; clang's .resume and .destroy or .cleanup) (nm) and the
        core's NT_FILE; None without the case or nm."""
        d = os.path.join(self.corpus, "cores", case)
        core = os.path.join(d, "core")
        if not os.path.isfile(core) or not shutil.which("nm"):
            return None
        exe = [l.split("=", 1)[1].strip() for l in open(os.path.join(d, "expect"))
               if l.startswith("exe=")][0]
        data = open(core, "rb").read()
        nt = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_FILE]
        _, files = elfcore.nt_file(nt[0]["desc"])
        real = os.path.realpath(exe).encode()
        bias = min((st for st, _, off, name in files if name == real), default=None)
        if bias is None:
            return None
        sym = {}
        out = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"([0-9a-f]+) t _Z\w*?(\d+)(_ZL\w+)\.Frame\.(actor|destroy)$", line)
            c = re.match(r"([0-9a-f]+) t (_ZL\w+)\.(resume|destroy|cleanup)$", line)
            if m:
                sym.setdefault(m.group(3), {})[m.group(4)] = int(m.group(1), 16) + bias
            elif c:
                kind = {"resume": "actor", "cleanup": "cleanup"}.get(c.group(3), "destroy")
                sym.setdefault(c.group(2), {})[kind] = int(c.group(1), 16) + bias
        pairs = {struct.pack("<QQ", v["actor"], v[dk]): k for k, v in sym.items()
                 for dk in ("destroy", "cleanup") if "actor" in v and dk in v}
        frames = {}
        for p in elfcore.phdrs(data):
            if p["type"] != elfcore.PT_LOAD or not p["flags"] & 2:
                continue
            seg = data[p["offset"]: p["offset"] + p["filesz"]]
            for at in range(0, len(seg) - 15, 8):
                k = pairs.get(seg[at: at + 16])
                if k:
                    frames[k] = (p["vaddr"] + at, p["offset"] + at)
        return core, data, frames, list(pairs)

    def cxx_frames(self):
        """Coroutine frames made hostile: continuation cycles, a frame whose
        chunk is freed, resume indexes out of range, and a million fake
        resume/destroy pairs (or 262,144 fake frames linked as a chain, a
        cycle, a star or at random) in a 16 MiB segment of their own."""
        found = self.cxx_core()
        if not found:
            return
        core, data, frames, pairs = found
        names = {re.sub(r"^_ZL\d+", "", k)[:-1]: k for k in frames}  # park_top -> _ZL8park_topi
        for i in range(self.n):
            d = bytearray(data)
            kind = i % 5
            if kind == 0:  # the top of each parked chain continues at its leaf
                for top, leaf in (("park_top", "park_leaf"), ("hold_b", "wait_b"), ("outer", "mid")):
                    if top in names and leaf in names:
                        struct.pack_into("<Q", d, frames[names[top]][1] + 16, frames[names[leaf]][0])
            elif kind == 1:  # a parked frame's chunk is free: the next chunk's PREV_INUSE is clear
                victim = names.get(self.rng.choice(["park_mid", "wait_b", "mid", "park_leaf"]))
                if victim:
                    vaddr, off = frames[victim]
                    size, = struct.unpack_from("<Q", d, off - 8)
                    nxt = off - 16 + (size & ~7) + 8
                    if 0 < size & ~7 < 1 << 20 and nxt + 8 <= len(d):
                        struct.pack_into("<Q", d, nxt, struct.unpack_from("<Q", d, nxt)[0] & ~1)
            elif kind == 2:  # resume indexes out of range (cxx_task's Task<int>(int) frames: +44)
                for k in frames:
                    struct.pack_into("<H", d, frames[k][1] + 44,
                                     self.rng.choice([0xffff, 0x7fff, 1001, 255]))
            else:
                pair = self.rng.choice(pairs)
                n = 16 << 20
                if kind == 3:  # back to back: a million pairs
                    blob = pair * (n // 16)
                else:  # 64-byte fake frames, each at await #0, linked by promise continuations
                    base, count = 0x600000000000, n // 64
                    shape = self.rng.choice(["chain", "cycle", "star", "random"])
                    recs = bytearray(n)
                    for r in range(count):
                        nxt = {"chain": r + 1, "cycle": (r + 1) % count, "star": 0,
                               "random": self.rng.randrange(count)}[shape]
                        struct.pack_into("<16sQ", recs, 64 * r, pair, base + 64 * nxt)
                        struct.pack_into("<H", recs, 64 * r + 44, 4)
                    blob = bytes(recs)
                ph = elfcore.phdrs(data)
                d += b"\0" * (-len(d) % 4096)
                seg_off = len(d)
                d += blob
                entries = bytearray()
                for p in ph:
                    entries += bytes(data[p["hdr"]: p["hdr"] + 56])
                entries += struct.pack("<IIQQQQQQ", elfcore.PT_LOAD, 6, seg_off, 0x600000000000, 0,
                                       len(blob), len(blob), 4096)
                d += b"\0" * (-len(d) % 8)
                phoff = len(d)
                d += entries
                struct.pack_into("<Q", d, 0x20, phoff)
                struct.pack_into("<H", d, 0x38, len(ph) + 1)
            self.stack("cxx_frames", self.write(d), core, name=f"cxx_frames-{kind}-{i}")

    # ---- async-task TaskVTables (issue 34) -----------------------------------------
    TASK_BASES = ("smol_tasks.O2", "smol_tasks.O0")

    def task_core(self, case):
        """A smol core, its TaskVTables as [(vaddr, file offset)] and the file
        offsets of the words that point at one (its tasks' headers and their
        copies), found from the exe's RawTask<F,T,S>::run symbols (nm: run is
        a TaskVTable's sixth word) and the core's NT_FILE; None without them."""
        d = os.path.join(self.corpus, "cores", case)
        core = os.path.join(d, "core")
        if not os.path.isfile(core) or not shutil.which("nm"):
            return None
        exe = [l.split("=", 1)[1].strip() for l in open(os.path.join(d, "expect"))
               if l.startswith("exe=")][0]
        data = open(core, "rb").read()
        nt = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_FILE]
        if not nt or not os.path.isfile(exe):
            return None
        _, files = elfcore.nt_file(nt[0]["desc"])
        real = os.path.realpath(exe).encode()
        bias = min((st for st, _, off, name in files if name == real), default=None)
        if bias is None:
            return None
        out = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
        runs = {struct.pack("<Q", int(m.group(1), 16) + bias)
                for m in re.finditer(r"^([0-9a-f]+) [tT] _ZN10async_task3raw\S*RawTask\S*3run17h", out, re.M)}
        vtables, loads = [], [p for p in elfcore.phdrs(data)
                              if p["type"] == elfcore.PT_LOAD and p["filesz"]]
        for p in loads:
            seg = data[p["offset"]: p["offset"] + p["filesz"]]
            for at in range(40, len(seg) - 23, 8):
                if seg[at: at + 8] in runs:
                    vtables.append((p["vaddr"] + at - 40, p["offset"] + at - 40))
        if not vtables:
            return None
        addrs = {struct.pack("<Q", v): v for v, _ in vtables}
        refs = []
        for p in loads:
            seg = data[p["offset"]: p["offset"] + p["filesz"]]
            refs += [p["offset"] + at for at in range(0, len(seg) - 7, 8) if seg[at: at + 8] in addrs]
        return core, data, vtables, refs

    @staticmethod
    def add_segment(data, blob, vaddr, flags=6):
        """data with blob appended as a new PT_LOAD at vaddr (the program headers moved to the end)."""
        ph = elfcore.phdrs(data)
        d = bytearray(data)
        d += b"\0" * (-len(d) % 4096)
        seg_off = len(d)
        d += blob
        entries = bytearray()
        for p in ph:
            entries += bytes(data[p["hdr"]: p["hdr"] + 56])
        entries += struct.pack("<IIQQQQQQ", elfcore.PT_LOAD, flags, seg_off, vaddr, 0, len(blob), len(blob), 4096)
        d += b"\0" * (-len(d) % 8)
        phoff = len(d)
        d += entries
        struct.pack_into("<Q", d, 0x20, phoff)
        struct.pack_into("<H", d, 0x38, len(ph) + 1)
        return d

    def task_vtables(self):
        """async-task's TaskVTables and tasks made hostile (issue 34): layout_info
        pointing anywhere (null, unmapped, at the vtable, into a task, unaligned);
        forged TaskLayouts (huge, size below the offsets, offsets in the header,
        all equal, the future overlapping the next chunk) in a segment of their
        own; vtable slots that disagree (swapped between vtables, one function
        in every slot, garbage); every task header's state and vtable garbled;
        vtables overlapping their neighbours; and 2 million fake vtable pointers
        (bare, or as headers with any state) in a 16 MiB segment or over the heap."""
        pool = [f for f in (self.task_core(c) for c in self.TASK_BASES) if f]
        if not pool:
            return
        seg_at = 0x600000000000
        for i in range(self.n):
            core, data, vtables, refs = self.rng.choice(pool)
            d = bytearray(data)
            kind = i % 7
            word = lambda off: struct.unpack_from("<Q", d, off)[0]
            if kind == 0:  # layout_info points anywhere
                for va, off in self.rng.sample(vtables, min(len(vtables), self.rng.choice([1, 3, len(vtables)]))):
                    target = self.rng.choice(
                        [0, 1, (1 << 64) - 1, 0xdead0000, (1 << 47) - 8, va, va + 3, va + 56, word(off + 56) + 4,
                         word(off + 56) - 8, self.rng.choice(vtables)[0] + 8 * self.rng.randrange(8)]
                        + [self.rng.choice(refs) - self.rng.randrange(0, 64, 8)] * bool(refs))
                    struct.pack_into("<Q", d, off + 56, target & ((1 << 64) - 1))
            elif kind == 1:  # forged TaskLayouts {size, align, offset_s, offset_f, offset_r}
                layouts = bytearray()
                for _ in range(64):
                    size = self.rng.choice([0, 8, 32, 33, 1 << 26, (1 << 26) + 1, 1 << 40, (1 << 63), (1 << 64) - 1,
                                            self.rng.randrange(1 << 16)])
                    off_f = self.rng.choice([0, 8, 16, 31, 32, size, size - 8, size + 8, (1 << 64) - 1,
                                             self.rng.randrange(1 << 12)]) & ((1 << 64) - 1)
                    other = self.rng.choice([off_f, 0, 8, size, self.rng.randrange(1 << 64)])
                    w = [size & ((1 << 64) - 1), self.rng.choice([0, 1, 8, 3, 1 << 63]), other, off_f,
                         self.rng.choice([off_f, off_f, other])]
                    layouts += struct.pack("<5Q", *w)
                for va, off in vtables:
                    struct.pack_into("<Q", d, off + 56, seg_at + 40 * self.rng.randrange(64))
                d = self.add_segment(d, bytes(layouts) + b"\0" * (-len(layouts) % 4096), seg_at, flags=4)
            elif kind == 2:  # slots that disagree
                slots = [word(off + 8 * s) for _, off in vtables for s in range(7)]
                how = self.rng.choice(["swap", "same", "garbage", "shift"])
                for va, off in vtables:
                    for s in range(7):
                        if how == "swap" or (how == "garbage" and self.rng.random() < 0.5):
                            v = self.rng.choice(slots) if how == "swap" else self.rng.randrange(1 << 64)
                        elif how == "same":
                            v = word(off + 40)
                        else:
                            v = slots[(slots.index(word(off + 8 * s)) + 7 * self.rng.randrange(1, 4)) % len(slots)]
                        struct.pack_into("<Q", d, off + 8 * s, v)
            elif kind == 3:  # every task header garbled: state bits, another vtable
                for off in refs:
                    if self.rng.random() < 0.5:
                        struct.pack_into("<Q", d, off, self.rng.choice(vtables)[0])
                    if off + 16 <= len(d):
                        struct.pack_into("<Q", d, off + 8, self.rng.choice(
                            [0, 1, 2, 3, 4, 8, 0x10, 0x20, 0x100, (1 << 64) - 1, self.rng.randrange(1 << 64)]))
            elif kind == 4:  # vtables copied over their neighbours, overlapping by a word or more
                for va, off in vtables:
                    shift = 8 * self.rng.choice([-7, -3, -1, 1, 2, 8])
                    if 0 <= off + shift and off + shift + 64 <= len(d):
                        d[off + shift: off + shift + 64] = bytes(data[off: off + 64])
            elif kind == 5:  # 2 million fake vtable pointers in a segment of their own
                n = 16 << 20
                if self.rng.random() < 0.5:
                    recs = b"".join(struct.pack("<Q", v) for v, _ in vtables)
                    blob = (recs * (n // len(recs) + 1))[:n]
                else:
                    va = self.rng.choice(vtables)[0]
                    blob = struct.pack("<QQ", va, self.rng.choice([0, 1, 2, 0x100])) * (n // 16)
                d = self.add_segment(d, blob, seg_at)
            else:  # the heap's words made fake vtable pointers
                heaps = [p for p in elfcore.phdrs(data) if p["type"] == elfcore.PT_LOAD and p["flags"] & 2
                         and any(p["offset"] <= r < p["offset"] + p["filesz"] for r in refs)]
                for p in heaps:
                    step = self.rng.choice([8, 16, 64])
                    for at in range(p["offset"], p["offset"] + p["filesz"] - 8, step):
                        if self.rng.random() < 0.5:
                            struct.pack_into("<Q", d, at, self.rng.choice(vtables)[0])
            self.stack("task_vtables", self.write(d), core, name=f"task_vtables-{kind}-{i}")

    def cxx_clang_frames(self):
        """clang's coroutine frames (cxx_task.clangO2g: no layout, sizes from
        heap chunks, elided frames inside their awaiter's) made hostile:
        continuation cycles, a frame's chunk freed or its size word
        damaged, fake .resume/.destroy pairs at every 16 bytes inside the
        real frames (nested elision), and a million fake pairs (or 262,144
        fake 64-byte frames linked as a chain, a cycle, a star or at random)
        in a 16 MiB segment of their own."""
        found = self.cxx_core("cxx_task.clangO2g")
        if not found:
            return
        core, data, frames, pairs = found
        names = {re.sub(r"^_ZL\d+", "", k)[:-1]: k for k in frames}
        for i in range(self.n):
            d = bytearray(data)
            kind = i % 6
            if kind == 0:  # the top of each chain continues at its leaf (the promise's first word)
                for top, leaf in (("park_top", "park_leaf"), ("hold_b", "wait_b"), ("outer", "mid")):
                    if top in names and leaf in names:
                        struct.pack_into("<Q", d, frames[names[top]][1] + 16, frames[names[leaf]][0])
            elif kind in (1, 2):  # a frame's chunk freed, or its size word damaged
                victim = names.get(self.rng.choice(["park_top", "hold_b"]))
                if victim:
                    vaddr, off = frames[victim]
                    size, = struct.unpack_from("<Q", d, off - 8)
                    nxt = off - 16 + (size & ~7) + 8
                    if kind == 1 and 0 < size & ~7 < 1 << 20 and nxt + 8 <= len(d):
                        struct.pack_into("<Q", d, nxt, struct.unpack_from("<Q", d, nxt)[0] & ~1)
                    elif kind == 2:
                        struct.pack_into("<Q", d, off - 8, self.rng.choice(
                            [0, 1, 7, 16, 17, 1 << 40, (1 << 64) - 1, 0x100001, 0x31]))
            elif kind == 3:  # fake pairs every 16 bytes inside each real frame's first 512 bytes
                for k, (vaddr, off) in frames.items():
                    for at in range(off + 16, min(off + 512, len(d) - 16), 16):
                        d[at: at + 16] = self.rng.choice(pairs)
            else:
                pair = self.rng.choice(pairs)
                n = 16 << 20
                if kind == 4:
                    blob = pair * (n // 16)
                else:
                    base, count = 0x600000000000, n // 64
                    shape = self.rng.choice(["chain", "cycle", "star", "random"])
                    recs = bytearray(n)
                    for r in range(count):
                        nxt = {"chain": r + 1, "cycle": (r + 1) % count, "star": 0,
                               "random": self.rng.randrange(count)}[shape]
                        struct.pack_into("<16sQ", recs, 64 * r, pair, base + 64 * nxt)
                    blob = bytes(recs)
                ph = elfcore.phdrs(data)
                d += b"\0" * (-len(d) % 4096)
                seg_off = len(d)
                d += blob
                entries = bytearray()
                for p in ph:
                    entries += bytes(data[p["hdr"]: p["hdr"] + 56])
                entries += struct.pack("<IIQQQQQQ", elfcore.PT_LOAD, 6, seg_off, 0x600000000000, 0,
                                       len(blob), len(blob), 4096)
                d += b"\0" * (-len(d) % 8)
                phoff = len(d)
                d += entries
                struct.pack_into("<Q", d, 0x20, phoff)
                struct.pack_into("<H", d, 0x38, len(ph) + 1)
            self.stack("cxx_clang_frames", self.write(d), core, name=f"cxx_clang_frames-{kind}-{i}")

    # ---- wait-for graph (issue 35) ---------------------------------------------------
    WAIT_BASES = ("deadlock-abba.O2", "deadlock-chain.O0", "deadlock-rwlock.O2", "deadlock-recursive.O2")

    @staticmethod
    def file_offset(data, vaddr, n):
        """The file offset of n bytes at vaddr in one PT_LOAD of data, or None."""
        for p in elfcore.phdrs(data):
            if p["type"] == elfcore.PT_LOAD and p["vaddr"] <= vaddr and vaddr + n <= p["vaddr"] + p["filesz"]:
                return p["offset"] + vaddr - p["vaddr"]
        return None

    def waits(self):
        """Threads forged into futex waits (orig_rax 202, rax -ERESTARTSYS, rdi the
        word): on unmapped words, on words of writable memory made into mutexes
        and rwlocks whose owner is no thread of the core, the waiter itself, a
        huge or negative tid, with kinds no glibc mutex has; the deadlock corpus
        cores (when the corpus has them) keep their lock frames, so their real
        mutexes are damaged too.  Then one core whose 100,000 threads all wait."""
        pool = []
        for c in self.WAIT_BASES:
            core = os.path.join(self.corpus, "cores", c, "core")
            if os.path.isfile(core):
                pool.append((core, open(core, "rb").read()))
        pool = pool or [(core, data) for _, core, data in self.bases]
        for _ in range(self.n):
            core, data = self.rng.choice(pool)
            ns = [n for n in elfcore.notes(data) if n["type"] == elfcore.NT_PRSTATUS]
            tids = [struct.unpack_from("<i", n["desc"], elfcore.PRSTATUS_PID)[0] for n in ns]
            loads = [p for p in elfcore.phdrs(data)
                     if p["type"] == elfcore.PT_LOAD and p["filesz"] >= 4096 and p["flags"] & 2]
            d = bytearray(data)
            for n in self.rng.sample(ns, min(len(ns), self.rng.choice([1, 2, len(ns)]))):
                reg = n["desc_off"] + 112
                word, = struct.unpack_from("<Q", d, reg + 8 * 14)
                k = self.rng.randrange(4)
                if k == 0 or not loads:
                    word = self.rng.choice([0, 1, 3, (1 << 64) - 1, 0xdead0000, (1 << 47) - 2])
                elif k == 1:
                    p = self.rng.choice(loads)
                    word = (p["vaddr"] + self.rng.randrange(p["filesz"] - 64)) & ~3
                for addr in {word, word - 8, word - 12}:  # the mutex, or the rwlock around it
                    off = self.file_offset(d, addr, 56)
                    if off is None or self.rng.random() < 0.3:
                        continue
                    for field in (0, 4, 8, 16, 24):
                        struct.pack_into("<i", d, off + field, self.rng.choice(
                            [0, -1, 2, 3, 0x7fffffff, 0x7ffffffe, 0x40000000 | tids[0], 1 << 30,
                             self.rng.choice(tids), 999999, 16, 32, 1, self.rng.randrange(-(1 << 31), 1 << 31)]))
                struct.pack_into("<Q", d, reg + 8 * 15, 202)
                struct.pack_into("<q", d, reg + 8 * 10, self.rng.choice([-512, -516, -4]))
                struct.pack_into("<Q", d, reg + 8 * 14, word & ((1 << 64) - 1))
            self.stack("waits", self.write(d), core)
        core, data = pool[0]
        ns = elfcore.notes(data)
        prs = [n for n in ns if n["type"] == elfcore.NT_PRSTATUS]
        waiting = [n for n in prs if struct.unpack_from("<Q", n["desc"], 112 + 8 * 15)[0] == 202]
        desc = bytearray((waiting or prs)[-1]["desc"])
        struct.pack_into("<Q", desc, 112 + 8 * 15, 202)
        struct.pack_into("<q", desc, 112 + 8 * 10, -512)
        blob = bytearray(b"".join(elfcore.raw_note(data, n) for n in ns))
        for i in range(100_000):
            struct.pack_into("<i", desc, elfcore.PRSTATUS_PID, 2_000_000 + i)
            blob += elfcore.note_bytes(b"CORE", elfcore.NT_PRSTATUS, desc)
        self.stack("waits", self.write(elfcore.with_notes(data, bytes(blob))), core, name="waits-100000")

    # ---- CPython thread states and frames that loop (issue 45) -----------------------
    def interp_loops(self):
        """The CPython 3.11 core real-python3-deadlock (when the corpus has it),
        its interpreter's thread-state list and frames forged so that coreq's
        owner inference walks them: a thread state whose next is itself, two
        that point to each other, a frame whose previous is itself, and 4095
        frames of no slots behind a thread state that is its own next (the
        ~2.7e8 steps of issue 45, finding 2)."""
        core = os.path.join(self.corpus, "cores", "real-python3-deadlock", "core")
        if not os.path.isfile(core):
            return
        data = open(core, "rb").read()
        exe = next((ln.split("=", 1)[1].strip() for ln in open(os.path.join(os.path.dirname(core), "expect"))
                    if ln.startswith("exe=")), None)
        runtime = self.elf_symbol(data, exe, b"_PyRuntime") if exe else None
        if runtime is None:
            return

        def u64(d, addr):
            off = self.file_offset(d, addr, 8)
            return None if off is None else struct.unpack_from("<Q", d, off)[0]

        def put(d, addr, value, fmt="<Q"):
            off = self.file_offset(d, addr, struct.calcsize(fmt))
            if off is not None:
                struct.pack_into(fmt, d, off, value)
            return off is not None

        interp = u64(data, runtime + 40)
        tss, ts = [], interp and u64(data, interp + 16)
        while ts and len(tss) < 64 and ts not in tss:
            tss.append(ts)
            ts = u64(data, ts + 8)
        if not tss:
            return
        taken = {runtime, interp, *tss}
        big = [p for p in elfcore.phdrs(data) if p["type"] == elfcore.PT_LOAD and p["flags"] & 2
               and p["filesz"] >= 4096 * 80 + 8192
               and not any(p["vaddr"] <= a < p["vaddr"] + p["filesz"] for a in taken)]
        kinds = ["ts-self", "ts-pair", "frame-self", "empty-frames"]
        for i in range(self.n):
            kind = kinds[i % len(kinds)]
            d = bytearray(data)
            ts = self.rng.choice(tss)
            if kind == "ts-self" or (kind == "ts-pair" and len(tss) < 2):
                put(d, ts + 8, ts)
            elif kind == "ts-pair":
                a, b = self.rng.sample(tss, 2)
                put(d, a + 8, b)
                put(d, b + 8, a)
            elif kind == "frame-self":
                for t in tss:
                    cframe = u64(d, t + 56)
                    frame = cframe and u64(d, cframe + 8)
                    if frame:
                        put(d, frame + 48, frame)
            else:
                if not big:
                    continue
                base = self.rng.choice(big)["vaddr"] + 4096
                code, cframe = base + 4096 * 80, base + 4096 * 80 + 128
                for k in range(4095):
                    frame = base + 80 * k
                    put(d, frame + 32, code)
                    put(d, frame + 48, frame + 80 if k < 4094 else 0)
                    put(d, frame + 64, 0, "<I")
                put(d, code + 68, 0, "<I")
                put(d, code + 76, 0, "<I")
                put(d, cframe + 8, base)
                put(d, ts + 56, cframe)
                put(d, ts + 8, ts)
            self.stack("interp_loops", self.write(d), core, name=f"interp_loops-{kind}-{i}")

    @staticmethod
    def elf_symbol(core_data, exe, name):
        """The address of the dynamic symbol name of exe (a path) in the process of core_data, or None."""
        try:
            elf = open(exe, "rb").read()
        except OSError:
            return None
        shoff, = struct.unpack_from("<Q", elf, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", elf, 0x3a)
        sh = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
        value = None
        for _, stype, _, _, off, size, link, _, _, entsize in sh:
            if stype != 11 or not entsize:  # SHT_DYNSYM
                continue
            stroff = sh[link][4]
            for k in range(size // entsize):
                st_name, = struct.unpack_from("<I", elf, off + k * entsize)
                end = elf.index(b"\0", stroff + st_name)
                if elf[stroff + st_name:end] == name:
                    value, = struct.unpack_from("<Q", elf, off + k * entsize + 8)
        if value is None:
            return None
        etype, = struct.unpack_from("<H", elf, 0x10)
        if etype == 2:  # ET_EXEC: no load bias
            return value
        lowest = min(p["vaddr"] for p in elfcore.phdrs(elf) if p["type"] == elfcore.PT_LOAD) & ~0xfff
        for n in elfcore.notes(core_data):
            if n["type"] == elfcore.NT_FILE:
                page, entries = elfcore.nt_file(n["desc"])
                for start, _, pgoff, path in entries:
                    if path == exe.encode() and pgoff == 0:
                        return start - lowest + value
        return None
    # ---- a module's DWARF scope tree, read by coreq itself (issue 46 part 2) ------------
    def lto_scopes(self):
        """Debian's python3.11 (a gcc LTO build, whose inline scopes
        libcore/symbols/scope_index.c reads without libdw's dwarf_getscopes)
        with one byte in 4096, 1024 or 256 of every .debug_info unit changed, first in the
        --debug-dir tree, on the real-python3 core; the twin has the genuine
        file there."""
        core = os.path.join(self.corpus, "cores", "real-python3", "core")
        exe = "/usr/bin/python3.11"
        ids = re.findall(r"Build ID: ([0-9a-f]+)", subprocess.run(
            ["readelf", "-n", exe], capture_output=True, text=True).stdout) if os.path.exists(exe) else []
        src = f"/usr/lib/debug/.build-id/{ids[0][:2]}/{ids[0][2:]}.debug" if ids else ""
        if not (os.path.isfile(core) and os.path.isfile(src)):
            return
        plain = self.path(".debug")
        if subprocess.run(["eu-elfcompress", "-q", "-t", "none", "-o", plain, src]).returncode:
            return
        data = open(plain, "rb").read()
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
        sect = lambda i: struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        strtab = sect(shstrndx)[4]
        info = [h for h in map(sect, range(shnum))
                if data[strtab + h[0]:data.index(b"\0", strtab + h[0])] == b".debug_info"]
        if not info:
            return
        lo, size = info[0][4], info[0][5]
        units, at = [], 0
        while at + 4 <= size and len(units) < 100_000:  # DWARF 32-bit unit headers
            length, = struct.unpack_from("<I", data, lo + at)
            units.append((lo + at, lo + min(size, at + 4 + length)))
            at += 4 + length
        twin_dir = os.path.join(self.out, "lto-genuine", ".build-id", ids[0][:2])
        os.makedirs(twin_dir, exist_ok=True)
        os.symlink(src, os.path.join(twin_dir, ids[0][2:] + ".debug"))
        for i in range(min(self.n, 8)):
            d = bytearray(data)
            every = (4096, 1024, 256)[i % 3]  # one byte in every so many, past each unit header
            for u_lo, u_hi in units:
                for _ in range(max(1, (u_hi - u_lo) // every)):
                    at = self.rng.randrange(u_lo + 12, max(u_lo + 13, u_hi))
                    if at < u_hi:
                        d[at] = self.rng.choice([0, 0xff, self.rng.randrange(256), d[at] ^ (1 << self.rng.randrange(8))])
            root = os.path.join(self.out, f"lto-{i}")
            os.makedirs(os.path.join(root, ".build-id", ids[0][:2]))
            with open(os.path.join(root, ".build-id", ids[0][:2], ids[0][2:] + ".debug"), "wb") as f:
                f.write(d)
            self.inputs.append(Input("lto_scopes", f"lto-{i}",
                                     ["stack", "--format", "json", "--no-cache", "--debug-dir", root, core],
                                     ["stack", "--format", "json", "--no-cache", "--debug-dir",
                                      os.path.join(self.out, "lto-genuine"), core]))
        os.unlink(plain)

    # ---- a signal the process queued itself (issue 45: a forged sender) --------------
    def self_queued_signal(self):
        """Cores whose NT_SIGINFO the process could have queued itself
        (rt_sigqueueinfo on its own pid takes any si_code <= 0, and >= 0 too,
        with any si_pid and si_uid): SI_USER "from pid 1 uid 0", its own pid
        with another uid, sigqueue codes naming it, codes Linux does not
        define.  `info` must call the sender claimed (JSON sender_claimed,
        text "as the signal claims") unless the code is SI_USER or SI_TKILL
        naming the core's own pid and uid (NT_PRPSINFO), report the bytes as
        they are, and see no sender where the code has none."""
        NT_SIGINFO, SENDER_CODES = 0x53494749, (0, -1, -3, -4, -6, -60)
        for i in range(self.n):
            name, core, data = self.base()
            ns = elfcore.notes(data)
            si = [n for n in ns if n["type"] == NT_SIGINFO]
            ps = [n for n in ns if n["type"] == elfcore.NT_PRPSINFO]
            if not si or not ps:
                continue
            uid, _, pid = struct.unpack_from("<IIi", ps[0]["desc"], 16)
            code = self.rng.choice([0, 0, -6, -6, -1, -3, -4, -60, -2, -5, -7, 0x80, 1, -1000,
                                    self.rng.randrange(-(1 << 31), 1 << 31)])
            spid = self.rng.choice([1, 0, -1, pid, pid, pid + 1, (1 << 31) - 1, -(1 << 31)])
            suid = self.rng.choice([0, uid, uid, uid + 1, 0xffffffff])
            if i % 5 == 0:  # what abort() leaves, the one sender that is proven
                code, spid, suid = self.rng.choice([0, -6]), pid, uid
            d = bytearray(data)
            struct.pack_into("<i", d, si[0]["desc_off"] + 8, code)
            struct.pack_into("<iI", d, si[0]["desc_off"] + 16, spid, suid & 0xffffffff)
            sender = code in SENDER_CODES
            proven = code in (0, -6) and pid > 0 and spid == pid and suid == uid
            path = self.write(d)
            text = i % 2 == 1
            fmt = [] if text else ["--format", "json"]

            def effect(out, sender=sender, proven=proven, spid=spid, suid=suid, text=text):
                if not out:
                    return None  # a failed run is the other columns' business
                out = out.decode("utf-8", "replace")
                if text:
                    line = next((l for l in out.splitlines() if l.startswith("signal:")), "")
                    said_proven = "raised by the process itself" in line
                    said_claimed = "as the signal claims" in line
                    if said_proven != proven or said_claimed != (sender and not proven):
                        return f"sender {spid} uid {suid}, proven {proven}: {line}"
                    return None
                try:
                    c = json.loads(out)["core"]
                except (ValueError, KeyError, TypeError):
                    return None  # the json column says so
                want = (spid, suid, not proven) if sender else (None, None, None)
                got = (c.get("sender_pid"), c.get("sender_uid"), c.get("sender_claimed"))
                return None if got == want else f"sender {got}, want {want}"

            self.inputs.append(Input("self_queued_signal", os.path.basename(path),
                                     ["info", *fmt, path], ["info", *fmt, core],
                                     want_json=not text, effect=effect, effect_sees_output=True))

    # ---- seekable zstd cores whose seek table lies (libcore/formats/zstd_seek.c) ------
    def seek_tables(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
        import zstd_seekable as zs
        frames_of = {}
        for i in range(self.n):
            name, core, data = self.base()
            if name not in frames_of:
                frames_of[name] = zs.frames_of(core, 64 << 10)
            frames = frames_of[name]
            blob = bytearray(b"".join(z for z, _ in frames))
            e = [[len(z), n] for z, n in frames]
            kw = {}
            for _ in range(self.rng.choice([1, 1, 2, 3])):
                lie = self.rng.randrange(9)
                k = self.rng.randrange(len(e))
                if lie == 0:
                    e[k][0] = self.rng.choice([0, 1, e[k][0] + 1, e[k][0] - 1, 0xffffffff])
                elif lie == 1:
                    e[k][1] = self.rng.choice([0, 4096, e[k][1] * 2, e[k][1] // 2, 0xffffffff,
                                               e[k][1] + 1])
                elif lie == 2 and len(e) > 1:
                    j = self.rng.randrange(len(e))
                    e[k], e[j] = e[j], e[k]
                elif lie == 3:
                    kw["count"] = self.rng.choice([0, len(e) + 1, 1 << 31, 0xffffffff])
                elif lie == 4:
                    kw["descriptor"] = self.rng.choice([0x80, 0x04, 0xff])
                elif lie == 5:
                    kw["size_field"] = self.rng.choice([0, 9, 1 << 31])
                elif lie == 6:
                    blob = bytearray(self.flip(blob, 0, len(blob), self.rng.choice([1, 8])))
                elif lie == 7:
                    cut = self.rng.randrange(1, len(blob))
                    blob = blob[:cut] + blob[cut + self.rng.randrange(1, 4096):]
                else:
                    e.append([self.rng.randrange(1, 1 << 20), 4096])
            tbl = zs.table([tuple(x) for x in e], **kw)
            self.stack("seek_tables", self.write(bytes(blob) + tbl, ".zst"), core)

    def gcore_snapshots(self):
        """Cores made to look as gdb's gcore writes a snapshot (issue 46): no
        segment for any executable mapping (the text reads from the module
        files, code by their program headers), NT_PRPSINFO first, a "GDB"
        note, NT_SIGINFO of SIGSTOP, SI_KERNEL after every thread, every
        pr_cursig 0; then lies: a pr_cursig or NT_SIGINFO of a fault, short or
        missing SIGINFO and GDB notes, and registers pointing anywhere in the
        text or the stack, so the walk and its scan meet file-backed code."""
        for _ in range(self.n):
            name, core, data = self.base()
            d = bytearray(data)
            text = [p for p in elfcore.phdrs(data) if p["type"] == elfcore.PT_LOAD and p["flags"] & 1]
            for p in text:
                struct.pack_into("<I", d, p["hdr"], 0)  # PT_NULL: gone, as gcore leaves it
            ns = elfcore.notes(data)
            psinfo = [elfcore.raw_note(data, n) for n in ns if n["type"] == elfcore.NT_PRPSINFO]
            blob = bytearray(b"".join(psinfo))
            for n in ns:
                if n["type"] in (elfcore.NT_PRPSINFO, 0x53494749):
                    continue
                desc = bytearray(n["desc"])
                if n["type"] == elfcore.NT_PRSTATUS and n["name"] == b"CORE":
                    struct.pack_into("<h", desc, 12, self.rng.choice([0, 0, 0, 19, 11, -1, 0x7fff]))
                    if text and self.rng.random() < 0.5:
                        p = self.rng.choice(text)
                        struct.pack_into("<Q", desc, 112 + 16 * 8, p["vaddr"] + self.rng.randrange(p["memsz"]))
                    if self.rng.random() < 0.3:
                        struct.pack_into("<Q", desc, 112 + 4 * 8, self.rng.choice(
                            [0, 1, (1 << 64) - 1, struct.unpack_from("<Q", desc, 112 + 19 * 8)[0]]))
                blob += elfcore.note_bytes(n["name"], n["type"], bytes(desc))
                if n["type"] == elfcore.NT_PRSTATUS and n["name"] == b"CORE":
                    si = bytearray(128)
                    struct.pack_into("<ii", si, 0, self.rng.choice([19, 19, 11, 0, -1]), 0)
                    struct.pack_into("<i", si, 8, self.rng.choice([128, 128, 1, 0, -6]))
                    blob += elfcore.note_bytes(b"CORE", 0x53494749, bytes(si[: self.rng.choice([128, 128, 8, 0])]))
            if self.rng.random() < 0.8:
                blob += elfcore.note_bytes(b"GDB", 0xff000000, bytes(self.rng.randrange(256) for _ in range(
                    self.rng.choice([0, 3, 64]))))
            out = elfcore.with_notes(bytes(d), bytes(blob))
            self.stack("gcore_snapshots", self.write(out), core)

    def all(self, only=None):
        for g in (self.header, self.phdrs, self.notes, self.nt_file, self.registers, self.stack_loops,
                  self.truncations, self.many_loads, self.many_threads, self.compressed, self.sysroot,
                  self.sysroot_traversal, self.cache_db, self.forged_cache, self.db_limits, self.ingest_db, self.build_id,
                  self.gdb_args, self.output_paths, self.svg_chars, self.config,
                  self.db_hostile, self.merge_poison, self.cxx_frames, self.cxx_clang_frames, self.waits, self.interp_loops, self.task_vtables,
                  self.seek_tables, self.streams, self.gcore_snapshots, self.self_queued_signal,
                  self.lto_scopes):
            if not only or g.__name__ in only:
                g()
        return self.inputs


def sysroot_found_outside(out):
    """What a sysroot_traversal run must not do: find any module (all its
    files lie outside the sysroot)."""
    try:
        mods = json.loads(out)["modules"]
    except (ValueError, KeyError, TypeError):
        return None  # no JSON: the json column says so
    found = [m["path"] for m in mods if m.get("path") != "[vdso]" and m.get("status") != "missing"]
    return f"found outside the sysroot: {found[:4]}" if found else None


VALID_BUILD_ID = re.compile(r"^(?:[0-9a-fA-F]{2}){1,64}$")


def build_id_effects(root, module_id):
    """What a run on a build_id input must not have done: create anything
    outside the database's files, the client's cache and what setup laid
    out; name frames of the module (its only debuginfo is ROOT/evil.debug,
    reachable only by a traversal)."""
    allowed = [os.path.join(root, p) for p in ("c/cache", "srv", "d", "evil.debug")]
    db = os.path.join(root, "db.sqlite")
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            if p == os.path.join(root, "c") or p.startswith(db):
                continue
            if not any(p == a or p.startswith(a + os.sep) for a in allowed):
                return f"created {p}"
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        n = con.execute("SELECT count(*) FROM frames WHERE module_id = ? AND function IS NOT NULL",
                        (module_id,)).fetchone()[0]
        con.close()
    except sqlite3.Error as e:
        return f"database unreadable after the run: {e}"
    return f"{n} frames named from {root}/evil.debug" if n else None


def exported_build_ids_ok(out):
    """Every exported stack's build_ids are "", a build-id or a path: key."""
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            return f"not a JSON record: {line[:120]!r}"
        for b in rec.get("build_ids", []):
            if b and not VALID_BUILD_ID.match(b) and not b.startswith("path:"):
                return f"exported build-id {b[:60]!r}"
    return None


def printed_build_ids_ok(out):
    """Every build-id info or stack prints is null, "" or 2 to 128 hex digits."""
    try:
        doc = json.loads(out)
    except ValueError:
        return None  # the json column reports it
    ids = [m.get("build_id") for m in doc.get("modules", [])]
    ids += [f.get("build_id") for t in doc.get("threads", []) for f in t.get("frames", [])]
    bad = [b for b in ids if b and not VALID_BUILD_ID.match(b)]
    return f"printed build-id {bad[0][:60]!r}" if bad else None


def svg_not_xml(path, want=None):
    """Why the SVG at path is not what a browser can draw (not XML; fewer than want boxes), or None."""
    if not os.path.exists(path):
        return None
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return f"the SVG is not well-formed XML: {e}"
    boxes = sum(1 for _ in root.iter("{http://www.w3.org/2000/svg}g"))
    return f"the SVG has {boxes} boxes for {want} stacks" if want and boxes < want else None


def section(path, name):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and m.group(1) == name:
            return int(m.group(2), 16), int(m.group(3), 16)
    return None


def run(binary, argv, env, timed, cwd=None):
    cmd = [binary] + argv
    if timed:
        cmd = ["/usr/bin/time", "-f", "@@%U %S %M"] + cmd
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=TIME_LIMIT, env=env,
                           stdin=subprocess.DEVNULL, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None
    err = p.stderr.decode("utf-8", "replace")
    secs = kib = 0
    if timed:
        lines = err.splitlines()
        m = re.match(r"@@([\d.]+) ([\d.]+) (\d+)", lines[-1]) if lines else None
        if m:
            secs, kib = float(m.group(1)) + float(m.group(2)), int(m.group(3))
            err = "\n".join(lines[:-1])
    return p.returncode, p.stdout, err, secs, kib


def check(inp, tmp, twins):
    env = dict(os.environ, TMPDIR=tmp, COREQ_CACHE=os.path.join(tmp, "cache.db"),
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=99", **inp.env)
    bad = {}

    def effect(r):
        if not inp.effect:
            return
        why = inp.effect(r[1] if r else b"") if inp.effect_sees_output else inp.effect()
        if why:
            bad.setdefault("effect", why)

    if inp.setup:
        inp.setup()
    r = run(COREQ, inp.argv, env, False, inp.cwd)
    effect(r)
    if r is None:
        bad["hang"] = "no exit"
    else:
        rc, out, err, _, _ = r
        if any(m in err for m in ("AddressSanitizer", "runtime error:", "LeakSanitizer")) or rc == 99 or rc < 0:
            bad["crash"] = err[-1500:]
        elif rc not in (0, 1):
            bad["exit"] = f"exit {rc}: {err[-500:]}"
        elif rc == 1:
            lines = err.strip().splitlines()
            if len(lines) != 1 or not MESSAGE.match(lines[0]):
                bad["message"] = err[-800:]
        elif inp.want_json:
            try:
                json.loads(out)
            except ValueError as e:
                bad["json"] = f"{e}: {out[:200]!r}"
    key = " ".join(inp.twin)
    if key not in twins:
        t = run(COREQ_RELEASE, inp.twin, env, True, inp.cwd)
        twins[key] = t[3:] if t else (TIME_LIMIT, 0)
    if inp.setup:
        inp.setup()
    r = run(COREQ_RELEASE, inp.argv, env, True, inp.cwd)
    effect(r)
    if r is None:
        bad.setdefault("hang", "release build: no exit")
    else:
        secs, kib = r[3], r[4]
        if secs > twins[key][0] + SLOW_S:
            bad["slow"] = f"{secs:.2f} s of CPU against {twins[key][0]:.2f} s"
        if kib > twins[key][1] + BIG_KIB:
            bad["big"] = f"{kib // 1024} MiB against {twins[key][1] // 1024} MiB"
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-class", type=int, default=20)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="comma-separated generator names (default: all)")
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    tmp = os.path.join(a.out, "tmp")
    os.makedirs(tmp)
    inputs = Gen(a.corpus, a.out, a.per_class, a.seed).all(a.only.split(",") if a.only else None)
    twins = {}
    results = {}
    with ThreadPoolExecutor(a.jobs) as pool:
        for inp, bad in zip(inputs, pool.map(lambda i: check(i, tmp, twins), inputs)):
            results.setdefault(inp.cls, []).append((inp, bad))
    failed = 0
    print(f"{'class':<14}" + "".join(f"{c:>9}" for c in COLUMNS))
    for cls, rows in results.items():
        counts = [len(rows)] + [sum(1 for _, b in rows if c in b) for c in COLUMNS[1:]]
        failed += sum(counts[1:])
        print(f"{cls:<14}" + "".join(f"{n:>9}" for n in counts))
    total = [sum(len(r) for r in results.values())] + \
        [sum(1 for rows in results.values() for _, b in rows if c in b) for c in COLUMNS[1:]]
    print(f"{'all':<14}" + "".join(f"{n:>9}" for n in total))
    for cls, rows in results.items():
        for inp, bad in rows:
            for col, why in bad.items():
                argv = " ".join(inp.argv).encode("utf-8", "backslashreplace").decode()
                print(f"# {cls} {inp.name} {col}: coreq {argv}\n#   " +
                      why.replace("\n", "\n#   ")[:1500])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
