# gdb_tailcalls.py - gdb script for test_stack_vs_gdb.py: prints
# "TAILCALL <lwp> <level>" for every frame of every thread that gdb
# synthesised from DW_TAG_call_site information (gdb.TAILCALL_FRAME).  Such
# a frame is a function that jumped to the next one instead of calling it,
# so no frame of it is on the stack: eu-stack and coreq do not show it.
import gdb

for inferior in gdb.inferiors():
    for thread in inferior.threads():
        thread.switch()
        frame, level = gdb.newest_frame(), 0
        while frame is not None:
            if frame.type() == gdb.TAILCALL_FRAME:
                print("TAILCALL %d %d" % (thread.ptid[1], level))
            try:
                frame = frame.older()
            except gdb.error:
                break
            level += 1
