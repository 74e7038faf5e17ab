#!/usr/bin/env python3
"""`coreq flame` (issue 19): an interactive SVG flame graph of a core's
threads, or of a crash bucket's stored stacks across cores, checked as XML
against the corpus programs and rendered by a real browser.

- threads-10 (a main thread aborting in nthreads_crash, 10 threads parked in
  parked_thread; thread count from the core's notes): the root box counts
  every thread, parked_thread 10 and nthreads_crash 1, every box lies inside
  its parent, and the boxes carry the hover text and the zoom script;
- rust_async.O2: suspended futures form their own "[suspended]" tower;
- a bucket of corpus bucket-100 (site f, counted from its expect file): the
  root counts that bucket's cores and the tower holds crash_in_f;
- headless Chromium renders the SVG to a PNG that is not blank (its path is
  printed in the test log for a person to look at).
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib

import elfcore
from coreq_test import BUILD, CORPUS, coreq, done, ok, read_expect, require_corpus, skip

SVG = "{http://www.w3.org/2000/svg}"


def boxes(path):
    root = ET.parse(path).getroot()
    out = []
    for g in root.iter(SVG + "g"):
        r = g.find(SVG + "rect")
        out.append((g.find(SVG + "title").text, float(r.get("x")), float(r.get("width")),
                    float(r.get("y"))))
    return root, out


def count_of(title):
    return int(title.rsplit("(", 1)[1].split()[0])


def png_colours(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    idat, at = b"", 8
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idat += data[at + 8: at + 8 + n]
        at += 12 + n
    raw = zlib.decompress(idat)
    return w, h, len({raw[i:i + 3] for i in range(0, min(len(raw), 3_000_000), 3)})


def main():
    cases = {c["case"]: c for c in require_corpus()}
    tmp = tempfile.mkdtemp(prefix="coreq-flame-")
    try:
        core = cases["threads-10"]["core"]
        nthreads = sum(1 for n in elfcore.notes(open(core, "rb").read()) if n["type"] == elfcore.NT_PRSTATUS)
        svg = os.path.join(tmp, "threads.svg")
        r = coreq("flame", core, "-o", svg, timeout=300)
        ok(r.returncode == 0 and os.path.getsize(svg) > 0, "flame CORE -o FILE", r.stderr)
        root, bx = boxes(svg)
        titles = {t.rsplit(" (", 1)[0]: t for t, _, _, _ in bx}
        ok(count_of(titles.get("all", "x (0 x)")) == nthreads, f"the root counts all {nthreads} threads")
        ok(count_of(titles.get("parked_thread", "x (0 x)")) == nthreads - 1 and
           count_of(titles.get("nthreads_crash", "x (0 x)")) == 1,
           "parked_thread has the parked threads, nthreads_crash the crashed one", str(list(titles)[:12]))
        inside = all(0 <= x and x + w <= 1200.01 for _, x, w, _ in bx)
        ok(inside and root.find(SVG + "script") is not None and "zoom" in root.find(SVG + "script").text,
           "boxes lie in the graph; the zoom script is inline")
        if "rust_async.O2" in cases:
            rs = os.path.join(tmp, "rust.svg")
            r = coreq("flame", cases["rust_async.O2"]["core"], "-o", rs, timeout=300)
            live = json.loads(coreq("stack", "--format", "json", cases["rust_async.O2"]["core"],
                                    timeout=300).stdout)
            _, rb = boxes(rs)
            sus = [t for t, _, _, _ in rb if t.startswith("[suspended]")]
            ok(r.returncode == 0 and sus and count_of(sus[0]) == len(live["suspended"]),
               "suspended futures are a tower of their own", str(sus))

        case = os.path.join(CORPUS, "cores", "bucket-100")
        facts = read_expect(os.path.join(case, "expect"))
        sites = facts["sites"].split()[:20]
        db = os.path.join(tmp, "b.db")
        coreq("ingest", "--db", db, "--no-cache", *[os.path.join(case, f"core-{i:03d}") for i in range(20)],
              timeout=600)
        b = json.loads(coreq("buckets", "--db", db, "--format", "json").stdout)["buckets"]
        f = [x for x in b if x["signature"].startswith("crash_in_f |")]
        bs = os.path.join(tmp, "bucket.svg")
        r = coreq("flame", "--db", db, "--bucket", f[0]["hash"] if f else "0", "-o", bs, timeout=300)
        ok(r.returncode == 0 and f, "flame --bucket ID", r.stderr)
        if r.returncode == 0:
            _, bb = boxes(bs)
            t = {x.rsplit(" (", 1)[0]: x for x, _, _, _ in bb}
            ok(count_of(t["all"]) == sites.count("f") and "crash_in_f" in t,
               f"the bucket's {sites.count('f')} cores, through crash_in_f", str(list(t)))

        chromium = shutil.which("chromium")
        if not chromium:
            skip("the SVG in a browser", "chromium is not installed (make deps installs it)")
        else:
            png = os.path.join(BUILD, "test-log", "flame-threads-10.png")
            os.makedirs(os.path.dirname(png), exist_ok=True)
            if os.path.exists(png):
                os.unlink(png)
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                "--hide-scrollbars", f"--screenshot={png}", "--window-size=1200,400",
                                "file://" + svg], capture_output=True, text=True, timeout=180,
                               env=dict(os.environ, HOME=tmp))
            ok(os.path.exists(png), "headless Chromium renders the SVG", r.stderr[-800:])
            if os.path.exists(png):
                w, h, colours = png_colours(png)
                ok(w == 1200 and h == 400 and colours > 30,
                   f"the picture is drawn ({colours} distinct pixel values); PNG: {png}")
                print(f"# flame graph rendered by Chromium: {png}")
    finally:
        shutil.rmtree(tmp)
    done()


if __name__ == "__main__":
    main()
