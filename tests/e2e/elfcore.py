"""Reading and rewriting ELF core files (64-bit little-endian) for tests that
build damaged or unusual cores from real ones.

Only the ELF and note formats are used here (elf.h), never coreq's code:
- phdrs(data): the program headers as dicts;
- notes(data): every note of every PT_NOTE segment;
- note_bytes(name, ntype, desc): one note, padded as the format wants;
- with_notes(data, blob): a copy whose PT_NOTE segment is blob, appended
  at the end of the file (the PT_LOAD data stays where it is).
"""
import struct

PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_PRPSINFO, NT_FILE = 1, 3, 0x46494C45
PRSTATUS_PID = 32      # pr_pid in elf_prstatus (x86_64 and aarch64)
PRPSINFO_FNAME = 40    # fname[16] in elf_prpsinfo
PRPSINFO_PSARGS = 56   # psargs[80]


def phdrs(data):
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    out = []
    for i in range(phnum):
        at = phoff + i * phentsize
        t, flags, off, vaddr, paddr, filesz, memsz, align = struct.unpack_from("<IIQQQQQQ", data, at)
        out.append(dict(index=i, hdr=at, type=t, flags=flags, offset=off, vaddr=vaddr,
                        filesz=filesz, memsz=memsz))
    return out


def _pad(n):
    return (n + 3) & ~3


def notes(data):
    """Each note as a dict: offset (of its header), size (padded), name, type, desc, desc_off."""
    out = []
    for p in phdrs(data):
        if p["type"] != PT_NOTE:
            continue
        at, end = p["offset"], p["offset"] + p["filesz"]
        while at + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, at)
            name = bytes(data[at + 12: at + 12 + namesz]).rstrip(b"\0")
            desc_off = at + 12 + _pad(namesz)
            size = 12 + _pad(namesz) + _pad(descsz)
            out.append(dict(offset=at, size=size, name=name, type=ntype, desc_off=desc_off,
                            desc=bytes(data[desc_off: desc_off + descsz])))
            at += size
    return out


def note_bytes(name, ntype, desc):
    name = name + b"\0"
    return (struct.pack("<III", len(name), len(desc), ntype) + name + b"\0" * (_pad(len(name)) - len(name))
            + desc + b"\0" * (_pad(len(desc)) - len(desc)))


def raw_note(data, n):
    return bytes(data[n["offset"]: n["offset"] + n["size"]])


def with_notes(data, blob):
    """A copy of core data whose (first) PT_NOTE segment holds blob, placed at the end."""
    out = bytearray(data)
    out += b"\0" * (-len(out) % 8)
    at = len(out)
    out += blob
    for p in phdrs(data):
        if p["type"] == PT_NOTE:
            struct.pack_into("<Q", out, p["hdr"] + 8, at)          # p_offset
            struct.pack_into("<Q", out, p["hdr"] + 32, len(blob))  # p_filesz
            break
    return out


def nt_file(desc):
    """An NT_FILE note's desc as (page_size, [(start, end, page_offset, path bytes)])."""
    count, page_size = struct.unpack_from("<QQ", desc, 0)
    names = desc[16 + 24 * count:].split(b"\0")
    return page_size, [struct.unpack_from("<QQQ", desc, 16 + 24 * i) + (names[i],) for i in range(count)]


def nt_file_desc(page_size, entries):
    """The NT_FILE desc of (start, end, page_offset, path bytes) entries."""
    out = struct.pack("<QQ", len(entries), page_size)
    out += b"".join(struct.pack("<QQQ", s, e, o) for s, e, o, _ in entries)
    return out + b"".join(name + b"\0" for *_, name in entries)


def with_renamed_files(data, old, new):
    """A copy of core data whose NT_FILE names path new wherever it named old (bytes)."""
    blob = b""
    for n in notes(data):
        if n["type"] == NT_FILE:
            page_size, entries = nt_file(n["desc"])
            entries = [(s, e, o, new if name == old else name) for s, e, o, name in entries]
            blob += note_bytes(n["name"], NT_FILE, nt_file_desc(page_size, entries))
        else:
            blob += raw_note(data, n)
    return with_notes(data, blob)
