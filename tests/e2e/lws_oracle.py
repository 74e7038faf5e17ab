"""An independent Python implementation of libwebsockets' lws_backtrace
format (FACTS.md section 5), used by the lws end-to-end tests as an oracle
for coreq's encoder and decoder, and to build blobs coreq's own encoder
never writes (the quirk bit set to 1)."""
import base64

MAX_DEPTH = 31


def _bits(v):
    return v.bit_length() or 1


def encode(addrs, size, quirk=0):
    """The blob lws writes for addrs (innermost first) and size."""
    out = []

    def field(v, w):
        for i in range(w - 1, -1, -1):
            out.append((v >> i) & 1)
        out.append(quirk)

    def counted(v):
        n = _bits(v)
        field(n, 6)
        field(v, n)

    field(len(addrs), 5)
    for i, a in enumerate(addrs):
        best = None
        for m in range(max(0, i - 8), i):
            mag = abs(a - addrs[m])
            if best is None or mag < best[2]:
                best = (m, 1 if a <= addrs[m] else 0, mag)
        if i == 0 or best[0] == 0 or _bits(best[2]) + 11 >= _bits(a) + 7:
            field(0, 1)
            counted(a)
        else:
            field(1, 1)
            field(i - best[0] - 1, 3)
            field(best[1], 1)
            counted(best[2])
    counted(size)
    while len(out) % 8:
        out.append(0)
    data = bytes(int("".join(map(str, out[i:i + 8])), 2) for i in range(0, len(out), 8))
    n = len(data) + 2
    return data + bytes([n >> 8, n & 255])


def encode_text(addrs, size, quirk=0):
    return "~m#" + base64.b64encode(encode(addrs, size, quirk)).decode()


def decode(blob):
    """(addrs, size) of one blob; raises ValueError if malformed."""
    if len(blob) < 2 or (blob[-2] << 8 | blob[-1]) != len(blob):
        raise ValueError("length trailer")
    bits = "".join(f"{b:08b}" for b in blob[:-2])
    pos = 0

    def field(w):
        nonlocal pos
        if pos + w + 1 > len(bits):
            raise ValueError("past the end")
        v = int(bits[pos:pos + w], 2) if w else 0
        pos += w + 1
        return v

    def counted():
        return field(field(6))

    addrs = []
    for i in range(field(5)):
        if field(1):
            r, sub, mag = field(3), field(1), counted()
            if i == 0 or r + 1 > i:
                raise ValueError("delta before item 0")
            ref = addrs[i - r - 1]
            addrs.append(ref - mag if sub else ref + mag)
        else:
            addrs.append(counted())
    return addrs, counted()


def decoded_line(addrs, size):
    return f"~b#size: {size}, " + "".join(f"{a:#x} " for a in addrs)
