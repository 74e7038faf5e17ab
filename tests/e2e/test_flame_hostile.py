#!/usr/bin/env python3
"""`coreq flame` on hostile names and at scale (issue 30, findings 7 and 9).

- Characters XML forbids: frame names in a database carrying U+FFFE,
  U+FFFF, C0 controls, an encoded surrogate or invalid UTF-8, a core whose
  module path carries them (abort_deep.stripped: its frames are named after
  the module), and a core file named with them (the graph's title).  Every
  SVG must parse as XML (Python's expat, and xmllint when installed) and
  still hold one box per crafted name.
- Scale: a bucket of 50,000 distinct stacks (each its own outermost frame
  outer_NNNNNN, below a shared leaf) draws 50,000 sibling boxes under the
  root, each counting one thread, the root counting them all.  No timing is
  asserted here (tests/hostile's svg_chars compares it with reading the same
  stacks).
- flame -o at a symbolic link or a FIFO is refused, the link's target and
  the FIFO left; over an existing 0666 file the SVG is a fresh file whose
  mode comes from the umask.
"""
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import elfcore
from coreq_test import coreq, done, ok, require_corpus

SVG = "{http://www.w3.org/2000/svg}"
BAD = ["\ufffe", "\uffff", "\x01", "\x1b", "\x7f", b"\xed\xa0\x80", b"\xff", b"\xc0\x80", "<&>"]


def raw(v):
    return v.encode() if isinstance(v, str) else v


def titles(path):
    """The box titles of the SVG at path, or the parse error."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return str(e)
    if shutil.which("xmllint"):
        r = subprocess.run(["xmllint", "--noout", path], capture_output=True, text=True)
        if r.returncode:
            return r.stderr[:300]
    return [g.find(SVG + "title").text for g in root.iter(SVG + "g")]


def add_stacks(db, names):
    """Adds one thread of core 1 per name: a stack leaf <- name (outermost)."""
    con = sqlite3.connect(db)
    base = con.execute("SELECT max(id) FROM stacks").fetchone()[0]
    con.executemany("INSERT INTO stacks (id, hash, nframes) VALUES (?, ?, 2)",
                    [(base + 1 + k, f"{0xa000000000000000 + k:016x}") for k in range(len(names))])
    con.executemany("INSERT INTO frames (stack_id, idx, module_id, offset, kind, trust, function) "
                    "VALUES (?, ?, NULL, ?, 'native', 'cfi', CAST(? AS TEXT))",
                    [r for k, n in enumerate(names) for r in ((base + 1 + k, 0, k, b"leaf"), (base + 1 + k, 1, k, n))])
    con.executemany("INSERT INTO threads (core_id, tid, idx, name, crashed, stack_id, end) "
                    "VALUES (1, ?, ?, 't', 0, ?, 'outermost')",
                    [(1_000_000 + k, 1000 + k, base + 1 + k) for k in range(len(names))])
    con.commit()
    bucket = con.execute("SELECT b.hash FROM buckets b JOIN cores c ON c.bucket_id = b.id").fetchone()[0]
    con.close()
    return bucket


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-flame-hostile-")
    try:
        core = cases["segv_null.O2"]["core"]
        # ---- finding 9: characters XML forbids
        db = os.path.join(tmp, "chars.db")
        coreq("ingest", "--no-cache", "--db", db, core)
        names = [b"f" + raw(c) + b"g" for c in BAD]
        bucket = add_stacks(db, names)
        svg = os.path.join(tmp, "chars.svg")
        r = coreq("flame", "--db", db, "--bucket", bucket, "-o", svg)
        t = titles(svg) if r.returncode == 0 else r.stderr
        ok(isinstance(t, list) and sum(1 for x in t if x.startswith("f") and x.endswith("g (1 thread)")) == len(BAD),
           f"frame names with {len(BAD)} kinds of XML-illegal characters: the SVG parses, one box each", str(t)[:600])
        stripped = cases["abort_deep.stripped"]
        data = open(stripped["core"], "rb").read()
        crafted = os.path.join(tmp, "module.core")
        open(crafted, "wb").write(elfcore.with_renamed_files(data, stripped["exe"].encode(),
                                                             b"/nowhere/m\xef\xbf\xbe\xef\xbf\xbf\x01"))
        svg = os.path.join(tmp, "module.svg")
        r = coreq("flame", crafted, "-o", svg, timeout=300)
        t = titles(svg) if r.returncode == 0 else r.stderr
        ok(isinstance(t, list) and any(x.startswith("m") and "+0x" in x for x in t),
           "a module path with U+FFFE, U+FFFF and a control: the SVG parses, frames named after it", str(t)[:600])
        named = os.path.join(tmp, os.fsdecode(b"core\xef\xbf\xbe\xef\xbf\xbf"))
        shutil.copy(core, named)
        svg = os.path.join(tmp, "named.svg")
        r = coreq("flame", named, "-o", svg, timeout=300)
        t = titles(svg) if r.returncode == 0 else r.stderr
        ok(isinstance(t, list) and t, "a core file named with U+FFFE U+FFFF: the title keeps the SVG well-formed",
           str(t)[:600])

        # ---- finding 9: many siblings
        n = 50_000
        wide = os.path.join(tmp, "wide.db")
        coreq("ingest", "--no-cache", "--db", wide, core)
        bucket = add_stacks(wide, [f"outer_{k:06d}".encode() for k in range(n)])
        svg = os.path.join(tmp, "wide.svg")
        r = coreq("flame", "--db", wide, "--bucket", bucket, "-o", svg, timeout=600)
        root = ET.parse(svg).getroot() if r.returncode == 0 else None
        boxes = [] if root is None else [g.find(SVG + "title").text for g in root.iter(SVG + "g")]
        outer = {b.rsplit(" (", 1)[0] for b in boxes if b.startswith("outer_") and b.endswith("(1 thread)")}
        threads = sqlite3.connect(wide).execute("SELECT count(*) FROM threads").fetchone()[0]
        top = [b for b in boxes if b.startswith("all (")]
        ok(len(outer) == n and top == [f"all ({threads} threads)"],
           f"{n} distinct stacks: {n} sibling boxes of one thread each, the root counts all {threads} threads",
           f"{len(outer)} outer boxes, root {top}: {r.stderr[-300:]}")

        # ---- finding 7: where flame -o writes
        victim = os.path.join(tmp, "victim")
        open(victim, "w").write("precious\n")
        link = os.path.join(tmp, "link.svg")
        os.symlink(victim, link)
        r = coreq("flame", core, "-o", link, timeout=300)
        ok(r.returncode == 1 and open(victim).read() == "precious\n" and os.path.islink(link),
           "flame -o LINK is refused; the link's target keeps its content", r.stderr)
        fifo = os.path.join(tmp, "fifo.svg")
        os.mkfifo(fifo)
        try:
            r = coreq("flame", core, "-o", fifo, timeout=60)
            good = r.returncode == 1 and stat.S_ISFIFO(os.lstat(fifo).st_mode)
        except subprocess.TimeoutExpired:
            good, r = False, None
        ok(good, "flame -o FIFO is refused at once, the FIFO left", r.stderr if r else "no exit in 60 s")
        loose = os.path.join(tmp, "loose.svg")
        open(loose, "w").write("old\n")
        os.chmod(loose, 0o666)
        old = os.umask(0o022)
        os.umask(old)
        r = coreq("flame", core, "-o", loose, timeout=300)
        mode = os.lstat(loose).st_mode & 0o777
        ok(r.returncode == 0 and isinstance(titles(loose), list) and mode == 0o666 & ~old,
           f"flame -o over a 0666 file: a fresh SVG of mode {0o666 & ~old:o} (umask {old:03o})",
           f"mode {mode:o}: {r.stderr}")
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
