# gdb_tokio_owned.py - gdb script for test_tokio.py: counts tokio's live tasks
# from the OwnedTasks list of each multi-thread runtime whose worker::run
# frame gdb can read.  An oracle independent of coreq: gdb's own reading of
# the DWARF types (fields found by name, offsets by gdb).
import gdb

def find_field(v, name, depth=8):
    """The first field called name under struct value v (depth-first)."""
    t = v.type.strip_typedefs()
    if depth == 0 or t.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        return None
    for f in t.fields():
        if f.name is None or f.artificial:
            continue
        try:
            fv = v[f]
        except gdb.error:
            continue
        if f.name == name:
            return fv
        r = find_field(fv, name, depth - 1)
        if r is not None:
            return r
    return None

def first_pointer(v, depth=8):
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        return v
    if depth == 0 or t.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        return None
    for f in t.fields():
        try:
            r = first_pointer(v[f], depth - 1)
        except gdb.error:
            continue
        if r is not None:
            return r
    return None

def ptr_int(v):
    p = first_pointer(v) if v is not None else None
    return int(p) if p is not None else 0

lists = {}
for th in gdb.selected_inferior().threads():
    th.switch()
    f = gdb.newest_frame()
    while f is not None:
        if f.name() and f.name().endswith("multi_thread::worker::run"):
            try:
                worker = f.read_var("worker")
            except (gdb.error, ValueError):
                break
            inner = first_pointer(worker).dereference()
            handle = first_pointer(find_field(inner, "handle")).dereference()
            owned = find_field(handle, "owned")
            lists[int(owned.address)] = owned
            break
        f = f.older()

header_t = gdb.lookup_type("tokio::runtime::task::core::Header")
trailer_t = gdb.lookup_type("tokio::runtime::task::core::Trailer")
total = 0
for addr, owned in lists.items():
    oid = int(owned["id"])
    e = ptr_int(find_field(owned, "head"))
    n = 0
    while e and n < 100000:
        h = gdb.Value(e).cast(header_t.pointer()).dereference()
        owner = find_field(h["owner_id"], "value")
        if owner is not None and int(owner) != oid:
            print("OWNED bad owner_id at 0x%x" % e)
            break
        toff = int(h["vtable"].dereference()["trailer_offset"])
        tr = gdb.Value(e + toff).cast(trailer_t.pointer()).dereference()
        e = ptr_int(find_field(tr["owned"], "next"))
        n += 1
    print("OWNED list=0x%x id=%d tasks=%d" % (addr, oid, n))
    total += n
print("OWNED_TOTAL %d lists=%d" % (total, len(lists)))
