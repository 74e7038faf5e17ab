# python3-crash.py: the corpus cases real-python3-crash-*, Debian's python3
# (CPython 3.11) crashing in two ways a Python service does:
#
#   site_a, site_b   a C function (ctypes.string_at: strlen through libffi, on address
#                    0) faults under two different Python callers: SIGSEGV in
#                    strlen, the same native frames, two Python call sites
#   abort            a worker thread's uncaught ValueError("bad job 7") reaches
#                    threading.excepthook, which the service set to os.abort()
#                    to get a core: SIGABRT while the exception is handled
#   abort_keyerror   the same with KeyError("job 7"), whose str() is its repr
#   abort_bare       the same with a bare RuntimeError (no args, no message)
#   killed           the main thread waits inside an except block that handles
#                    ValueError("bad job 7"); a watchdog's SIGABRT from outside
#                    kills it: the exception is not why it died
#
# The program writes ./oracle before it crashes, one fact a line:
#   site QUALNAME       the Python function that calls the faulting C function
#   exception TYPE MESSAGE   (abort) the exception being handled at the abort
#   traceback LINE      (abort*) the last line of the traceback Python prints for
#                       it (traceback.format_exception_only), from the excepthook
import ctypes
import os
import sys
import threading
import time
import traceback


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


def worker_keyerror():
    raise KeyError("job 7")


def worker_bare():
    raise RuntimeError


def abort_hook(args):
    line = traceback.format_exception_only(args.exc_type, args.exc_value)[-1]
    record("traceback " + line.rstrip("\n"))
    os.abort()


if sys.argv[1] == "site_a":
    serve(read_header_a)
elif sys.argv[1] == "site_b":
    serve(read_header_b)
elif sys.argv[1] == "killed":
    try:
        raise ValueError("bad job 7")
    except ValueError:
        record("exception ValueError bad job 7")
        open("ready", "w").close()
        while True:
            time.sleep(1)
else:
    target = {"abort": worker, "abort_keyerror": worker_keyerror, "abort_bare": worker_bare}
    if sys.argv[1] == "abort":
        record("exception ValueError bad job 7")
    threading.excepthook = abort_hook
    t = threading.Thread(target=target[sys.argv[1]], name="job-runner")
    t.start()
    t.join()
