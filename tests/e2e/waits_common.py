"""Helpers shared by the wait tests (test_fleet, test_wait_buckets,
test_wait_python): the oracle a hung corpus program writes beside its core."""


def read_oracle(path):
    """A hung program's own account (corpus/deadlock.c's format, also
    corpus/real/python3-deadlock.py's): each thread's tid and role, each
    lock's address, who holds which lock, who waits on which, the verdict."""
    o = {"threads": {}, "locks": {}, "holds": {}, "waits": {}, "verdict": None}
    for line in open(path):
        f = line.split()
        if f[0] == "thread":
            o["threads"][int(f[1])] = f[2]
        elif f[0] == "lock":
            o["locks"][f[1]] = int(f[2], 16)
        elif f[0] == "holds":
            o["holds"][int(f[3], 16)] = int(f[1])
        elif f[0] == "waits":
            o["waits"][int(f[1])] = (f[2], int(f[3], 16))
        elif f[0] == "verdict":
            o["verdict"] = f[1]
    return o
