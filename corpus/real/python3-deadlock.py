# python3-deadlock.py: the corpus case real-python3-deadlock.  Debian's
# python3 (CPython 3.11, a program nobody on the team wrote) with two threads
# in an ABBA deadlock on threading.Lock: "a-then-b" holds A and waits for B,
# "b-then-a" holds B and waits for A.  Once both are blocked in the kernel
# (/proc/self/task/TID/syscall says futex), it writes its own account to
# ./oracle and creates ./ready; the corpus then kills it with SIGABRT, as a
# watchdog would.  The main thread sleeps in time.sleep (not a lock).
#
# A threading.Lock is a lockobject whose lock_lock (after PyObject_HEAD, 16
# bytes on 64-bit) points to a POSIX semaphore (CPython's USE_SEMAPHORES);
# a blocked acquire sleeps in sem_clockwait on that sem_t's futex word.  A
# semaphore records no owner: the oracle's "holds" lines come from this
# script's structure, not from anything in the process's memory.
#
# With the argument "with" (the case real-python3-deadlock-with) the workers
# take the module's locks A and B in with statements and hold no local
# reference to them: the only reference a holder's frame keeps is the bound
# __exit__ the with statement leaves on its value stack.
#
# The oracle, one fact a line (as corpus/deadlock.c writes it):
#   thread TID NAME            a worker (threading.get_native_id) and its name
#   lock NAME ADDR             the lock's semaphore (sem_t) address
#   holds TID semaphore ADDR 1 TID holds that lock (acquired, never released)
#   waits TID semaphore ADDR   TID is blocked acquiring it
#   verdict deadlock
import ctypes
import os
import sys
import threading
import time

WITH = sys.argv[1:] == ["with"]
A, B = threading.Lock(), threading.Lock()
a, b = A, B
sem = {name: ctypes.c_void_p.from_address(id(lock) + 16).value for name, lock in (("A", a), ("B", b))}
del a, b
both_hold = threading.Barrier(3)
tids = {}


def worker(first, second):
    tids[threading.current_thread().name] = threading.get_native_id()
    first.acquire()
    both_hold.wait()
    second.acquire()  # never returns


def a_then_b():
    tids[threading.current_thread().name] = threading.get_native_id()
    with A:
        both_hold.wait()
        with B:  # never entered
            pass


def b_then_a():
    tids[threading.current_thread().name] = threading.get_native_id()
    with B:
        both_hold.wait()
        with A:  # never entered
            pass


def blocked_in_futex(tid):
    try:
        with open(f"/proc/self/task/{tid}/syscall") as f:
            return f.read().split()[0] == "202"
    except OSError:
        return False


if WITH:
    threading.Thread(target=a_then_b, name="a-then-b", daemon=True).start()
    threading.Thread(target=b_then_a, name="b-then-a", daemon=True).start()
else:
    threading.Thread(target=worker, args=(A, B), name="a-then-b", daemon=True).start()
    threading.Thread(target=worker, args=(B, A), name="b-then-a", daemon=True).start()
both_hold.wait()
for _ in range(5000):
    if len(tids) == 2 and all(blocked_in_futex(t) for t in tids.values()):
        time.sleep(0.05)
        if all(blocked_in_futex(t) for t in tids.values()):
            break
    time.sleep(0.002)
else:
    raise SystemExit("python3-deadlock: the workers never both blocked")
with open("oracle.tmp", "w") as f:
    f.write("shape python-abba-with\n" if WITH else "shape python-abba\n")
    for name, tid in sorted(tids.items()):
        f.write(f"thread {tid} {name}\n")
    for name, addr in sorted(sem.items()):
        f.write(f"lock {name} {addr:#x}\n")
    f.write(f"holds {tids['a-then-b']} semaphore {sem['A']:#x} 1\n")
    f.write(f"waits {tids['a-then-b']} semaphore {sem['B']:#x}\n")
    f.write(f"holds {tids['b-then-a']} semaphore {sem['B']:#x} 1\n")
    f.write(f"waits {tids['b-then-a']} semaphore {sem['A']:#x}\n")
    f.write("verdict deadlock\n")
os.rename("oracle.tmp", "oracle")
open("ready", "w").close()
while True:
    time.sleep(3600)
