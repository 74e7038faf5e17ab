#!/usr/bin/env python3
"""Every stored stack's frames_blob says what its frames rows say.

The story: coreq keeps each stack twice, as rows of the frames table for SQL
and as a compact blob of libwebsockets backtrace records
(libcore/formats/stack_blob.h).  Anyone reading the blob must get the same frames.

The corpus cores (all but the 1000+ thread ones) are ingested; every blob is
then decoded by tests/e2e/lws_oracle.py, an independent Python decoder of
the lws format, following the layout documented in stack_blob.h, and
compared with the frames rows: module id, offset and kind of every frame,
and the frame count.
"""
import atexit
import os
import shutil
import sqlite3
import tempfile

import lws_oracle
from coreq_test import coreq, corpus_cases, done, ok, require_corpus

KINDS = {0: "native", 1: "inline", 2: "async", 3: "python"}


def split_records(blob):
    """The lws records of a blob, walking the length trailers from its end."""
    records, end = [], len(blob)
    while end > 0:
        n = blob[end - 2] << 8 | blob[end - 1]
        if n < 2 or n > end:
            raise ValueError(f"bad trailer at {end}")
        records.append(blob[end - n:end])
        end -= n
    return list(reversed(records))


def decode_blob(blob):
    """[(module_id or None, offset, kind)] per stack_blob.h."""
    recs = [lws_oracle.decode(r) for r in split_records(blob)]
    n = recs[0][1]
    noffsets = max(1, -(-n // 31))
    offsets = [a for addrs, _ in recs[:noffsets] for a in addrs]
    frames = []
    for addrs, size in recs[noffsets:]:
        for item in addrs:
            length = (item & 255) + 1
            top = (item >> 12) & 1
            kind = (item >> 8) & 15
            module = item >> 13
            for _ in range(length):
                i = len(frames)
                frames.append((module or None, offsets[i] | (top << 63), KINDS.get(kind, kind)))
    if len(offsets) != n or len(frames) != n:
        raise ValueError(f"{n} frames, {len(offsets)} offsets, {len(frames)} attributes")
    return frames


def main():
    require_corpus()
    cases = corpus_cases(include_big=False)
    db = os.path.join(tempfile.mkdtemp(prefix="coreq-blob-"), "blob.db")
    atexit.register(shutil.rmtree, os.path.dirname(db), True)
    r = coreq("ingest", "--db", db, "--no-cache", *[c["core"] for c in cases], timeout=600)
    ok(r.returncode == 0, f"ingest of {len(cases)} corpus cores", r.stderr)
    con = sqlite3.connect(db)
    stacks = con.execute("SELECT id, nframes, frames_blob FROM stacks ORDER BY id").fetchall()
    ok(len(stacks) > 10, f"{len(stacks)} distinct stacks stored")
    bad, blob_bytes, nframes = [], 0, 0
    for sid, n, blob in stacks:
        rows = con.execute("SELECT module_id, offset, kind FROM frames WHERE stack_id = ? ORDER BY idx",
                           (sid,)).fetchall()
        rows = [(m, o & ((1 << 64) - 1), k) for m, o, k in rows]
        try:
            got = decode_blob(blob) if blob is not None else None
        except (ValueError, IndexError) as e:
            got = f"undecodable: {e}"
        if got != rows or len(rows) != n:
            bad.append(f"stack {sid}: blob {str(got)[:200]} frames {str(rows)[:200]}")
        blob_bytes += len(blob or b"")
        nframes += n
    ok(not bad, "every stack's frames_blob decodes (independently) to its frames rows", bad[:5])
    # Plain frames take 18 bytes each (8-byte module id and offset, kind, trust).
    ok(blob_bytes < nframes * 9,
       f"the blobs are compact: {blob_bytes} bytes for {nframes} frames ({blob_bytes / max(nframes, 1):.1f} B/frame)")
    done()


main()
