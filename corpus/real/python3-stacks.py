# python3-stacks.py: the corpus case real-python3-stacks.  Debian's python3
# (CPython 3.11) with threads blocked in distinct Python code: a method on a
# lock, a queue, a socket read, a recursion 30 deep in time.sleep, a
# generator waiting on an event, a nested function, functions with non-ASCII
# names (Latin-1 and CJK: the two compact str kinds), and one thread
# spinning in the interpreter (it holds the GIL whenever it runs).
#
# Each blocking thread writes its own Python stack just before it blocks:
# its frames from the one that blocks outwards, each its code object's
# qualified name, file and line, the innermost at the line of the blocking
# call (the next line: record() is called on the line before it).  Once every
# such thread sleeps in the kernel (/proc/self/task/TID/syscall is not
# "running"), the main thread writes ./oracle and creates ./ready; the corpus
# then kills it with SIGABRT.
#
# The oracle, one fact a line:
#   thread TID NAME
#   frame TID QUALNAME LINE FILE     innermost first (FILE last: it may hold spaces)
#   spin TID QUALNAME FIRST-LAST FILE   the spinning thread: its line is in that range
import os
import queue
import socket
import sys
import threading
import time

records = {}
record_lock = threading.Lock()
tids = {}


def record(ahead=1):
    """The caller's stack, its innermost line `ahead` lines on (where it blocks)."""
    frame = sys._getframe(1)
    frames = []
    first = True
    while frame is not None:
        code = frame.f_code
        frames.append((code.co_qualname, frame.f_lineno + (ahead if first else 0), code.co_filename))
        first = False
        frame = frame.f_back
    name = threading.current_thread().name
    with record_lock:
        tids[name] = threading.get_native_id()
        records[name] = frames


held = threading.Lock()
held.acquire()
jobs = queue.Queue()
never = threading.Event()
left, right = socket.socketpair()


class Worker:
    def wait_lock(self):
        record()
        held.acquire()


def consume_queue():
    record()
    jobs.get()


def read_socket():
    record()
    left.recv(1)


def recurse(n):
    if n == 0:
        record()
        time.sleep(3600)
    recurse(n - 1)


def produce():
    record()
    never.wait()
    yield 1


def drain():
    for _ in produce():
        pass


def outer():
    def inner():
        record()
        never.wait()

    inner()


def wärte():
    record()
    never.wait()


def 待つ():
    record()
    never.wait()


SPIN_FIRST = sys._getframe().f_lineno + 6


def spin():
    tids[threading.current_thread().name] = threading.get_native_id()
    n = 0
    while True:
        n = (n * 31 + 7) % 1000003


SPIN_LAST = sys._getframe().f_lineno - 3

blockers = {
    "wait-lock": Worker().wait_lock,
    "queue": consume_queue,
    "socket": read_socket,
    "recurse": lambda: recurse(30),
    "generator": drain,
    "nested": outer,
    "latin1": wärte,
    "cjk": 待つ,
}
for name, target in blockers.items():
    threading.Thread(target=target, name=name, daemon=True).start()
threading.Thread(target=spin, name="spin", daemon=True).start()


def sleeping(tid):
    try:
        with open(f"/proc/self/task/{tid}/syscall") as f:
            return f.read().split()[0] != "running"
    except OSError:
        return False


def finish():
    """Waits for every blocker to sleep, writes the oracle, blocks for ever."""
    record(ahead=20)  # the main thread: at never.wait() below
    for _ in range(5000):
        with record_lock:
            blocked = [tids[n] for n in blockers if n in records]
        if len(blocked) == len(blockers) and "spin" in tids and all(sleeping(t) for t in blocked):
            time.sleep(0.05)
            if all(sleeping(t) for t in blocked):
                break
        time.sleep(0.002)
    else:
        raise SystemExit("python3-stacks: the threads never all blocked")
    with open("oracle.tmp", "w") as f:
        for name in ["MainThread"] + list(blockers):
            f.write(f"thread {tids[name]} {name}\n")
            for qualname, line, file in records[name]:
                f.write(f"frame {tids[name]} {qualname} {line} {file}\n")
        f.write(f"thread {tids['spin']} spin\n")
        f.write(f"spin {tids['spin']} spin {SPIN_FIRST}-{SPIN_LAST} {os.path.abspath(__file__)}\n")
    os.rename("oracle.tmp", "oracle")
    # one line: a core taken as soon as ./ready exists finds the main thread on it
    open("ready", "w").close(); never.wait()  # noqa: E702


finish()
