"""zstd's seekable format written independently of coreq: each FRAME bytes of
the input compressed by the zstd command as its own frame, then the seek
table (zstd's contrib/seekable_format: a skippable frame of (compressed,
decompressed) u32 pairs, the frame count, a descriptor byte and the magic
0x8F92EAB1).  The tests use it as an oracle writer and to forge lying tables."""
import struct
import subprocess

SKIP_MAGIC = 0x184D2A5E
SEEK_MAGIC = 0x8F92EAB1


def frames_of(path, frame=2 << 20, level=3):
    """[(compressed bytes, decompressed size)] for each FRAME bytes of path."""
    out = []
    with open(path, "rb") as f:
        while True:
            chunk = f.read(frame)
            if not chunk:
                break
            z = subprocess.run(["zstd", "-q", "-c", f"-{level}"], input=chunk,
                               capture_output=True, check=True).stdout
            out.append((z, len(chunk)))
    return out


def table(entries, descriptor=0, size_field=None, count=None, checksums=False):
    """The seek table for entries [(compressed size, decompressed size)]; the
    other arguments forge it."""
    body = b"".join(struct.pack("<II", c, d) + (b"\0\0\0\0" if checksums else b"")
                    for c, d in entries)
    foot = struct.pack("<IBI", len(entries) if count is None else count, descriptor, SEEK_MAGIC)
    size = len(body) + len(foot) if size_field is None else size_field
    return struct.pack("<II", SKIP_MAGIC, size) + body + foot


def write(path, frames, tbl=None):
    with open(path, "wb") as f:
        for z, _ in frames:
            f.write(z)
        f.write(tbl if tbl is not None else table([(len(z), n) for z, n in frames]))


def make(src, dst, frame=2 << 20):
    write(dst, frames_of(src, frame))
