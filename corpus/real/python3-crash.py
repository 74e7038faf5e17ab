# python3-crash.py: the corpus cases real-python3-crash-*, Debian's python3
# (CPython 3.11) crashing in two ways a Python service does:
#
#   site_a, site_b   a C function (ctypes.string_at: strlen through libffi, on address
#                    0) faults under two different Python callers: SIGSEGV in
#                    strlen, the same native frames, two Python call sites
#   abort            a worker thread's uncaught ValueError("bad job 7") reaches
#                    threading.excepthook, which the service set to os.abort()
#                    to get a core: SIGABRT while the exception is handled
#
# The program writes ./oracle before it crashes, one fact a line:
#   site QUALNAME       the Python function that calls the faulting C function
#   exception TYPE MESSAGE   (abort) the exception being handled at the abort
import ctypes
import os
import sys
import threading


def record(line):
    with open("oracle", "a") as f:
        f.write(line + "\n")


def read_header_a():
    record("site read_header_a")
    return ctypes.string_at(0)


def read_header_b():
    record("site read_header_b")
    return ctypes.string_at(0)


def serve(reader):
    return reader()


def worker():
    raise ValueError("bad job 7")


def abort_hook(args):
    os.abort()


if sys.argv[1] == "site_a":
    serve(read_header_a)
elif sys.argv[1] == "site_b":
    serve(read_header_b)
else:
    record("exception ValueError bad job 7")
    threading.excepthook = abort_hook
    t = threading.Thread(target=worker, name="job-runner")
    t.start()
    t.join()
