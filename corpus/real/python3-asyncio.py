# python3-asyncio.py: the corpus case real-python3-asyncio.  Debian's python3
# (CPython 3.11, the C _asyncio module) running one event loop with tasks
# suspended in different awaits: asyncio.sleep, a Queue, a Lock, an Event, a
# socket read (StreamReader), gather, a task awaiting another task, a chain
# of three coroutines; and tasks that must not be listed: one done (its
# result kept), one cancelled (kept in a list).  Each pending task writes
# its own chain before it suspends: its coroutines from the innermost (the
# line of its await: the next line) out to the task's coroutine.  Once all
# are suspended, the main coroutine writes ./oracle and creates ./ready, then
# sleeps in the loop's selector; the corpus kills it with SIGABRT.
#
# The oracle, one fact a line:
#   task NAME                      a pending task (asyncio.all_tasks(): also
#                                  main's, and the two gather wraps in tasks)
#   frame NAME QUALNAME LINE FILE  its coroutines, innermost first, where the
#                                  task recorded them
#   awaits NAME OTHER              the task awaits task OTHER
#   done NAME                      a task that is done (must not be listed)
import asyncio
import socket
import sys

records = {}


def record(ahead=1):
    frame = sys._getframe(1)
    top = asyncio.current_task().get_coro().cr_frame  # the task's own coroutine: the last
    frames, first = [], True
    while frame is not None:
        code = frame.f_code
        frames.append((code.co_qualname, frame.f_lineno + (ahead if first else 0), code.co_filename))
        first = False
        if frame is top:
            break
        frame = frame.f_back
    records[asyncio.current_task().get_name()] = frames


async def sleeper():
    record()
    await asyncio.sleep(3600)


async def queue_reader(q):
    record()
    await q.get()


async def lock_taker(lock):
    record()
    await lock.acquire()


async def event_waiter(ev):
    record()
    await ev.wait()


async def socket_reader(reader):
    record()
    await reader.read(1)


async def leaf(ev):
    record()
    await ev.wait()


async def middle(ev):
    await leaf(ev)


async def outer(ev):
    await middle(ev)


async def gatherer(ev):
    record()
    await asyncio.gather(ev.wait(), ev.wait())


async def task_waiter(other):
    record()
    await other


async def finished():
    return 42


async def to_cancel(ev):
    await ev.wait()


async def main():
    ev, lock, q = asyncio.Event(), asyncio.Lock(), asyncio.Queue()
    await lock.acquire()
    a, b = socket.socketpair()
    reader, _ = await asyncio.open_connection(sock=a)
    pending = [
        asyncio.create_task(sleeper(), name="sleeper"),
        asyncio.create_task(queue_reader(q), name="queue"),
        asyncio.create_task(lock_taker(lock), name="lock"),
        asyncio.create_task(event_waiter(ev), name="event"),
        asyncio.create_task(socket_reader(reader), name="socket"),
        asyncio.create_task(outer(ev), name="chain"),
        asyncio.create_task(gatherer(ev), name="gather"),
    ]
    pending.append(asyncio.create_task(task_waiter(pending[0]), name="awaits-task"))
    pending.append(asyncio.create_task(sleeper(), name="sleeper-2"))
    pending.append(asyncio.create_task(queue_reader(q), name="queue-2"))
    done = asyncio.create_task(finished(), name="done")
    cancelled = asyncio.create_task(to_cancel(ev), name="cancelled")
    await asyncio.sleep(0.1)
    cancelled.cancel()
    await asyncio.sleep(0.1)
    assert done.done() and cancelled.cancelled()
    record(ahead=12)  # main's own chain: at the asyncio.sleep(3600) below
    with open("oracle.tmp", "w") as f:
        for t in sorted(asyncio.all_tasks(), key=lambda t: t.get_name()):
            f.write(f"task {t.get_name()}\n")
            for qualname, line, file in records.get(t.get_name(), []):
                f.write(f"frame {t.get_name()} {qualname} {line} {file}\n")
        f.write(f"awaits awaits-task {pending[0].get_name()}\n")
        f.write("done done\ndone cancelled\n")
    import os
    os.rename("oracle.tmp", "oracle")
    open("ready", "w").close()
    keep = (pending, done, cancelled, b)
    await asyncio.sleep(3600)
    return keep


asyncio.run(main())
