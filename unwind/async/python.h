/*
 * python.h - what the python runtime (python.c) knows about CPython, for
 * its tests: the layouts of the structures it reads (from libpython's DWARF
 * or from the version-keyed table python_layouts.def), and the location
 * table of a code object, decoded as the interpreter decodes it.
 *
 * Layer: unwind (unwind/async/).
 */
#ifndef CQ_ASYNC_PYTHON_H
#define CQ_ASYNC_PYTHON_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * X(field, struct or typedef name, member path or NULL for the type's size):
 * every offset the reader uses, and where the DWARF says it.
 */
#define CQ_PYTHON_LAYOUT_FIELDS(X)                                                                 \
	X(runtime_interp_head, "pyruntimestate", "interpreters.head")                              \
	X(runtime_gil_holder, "pyruntimestate", "ceval.gil.last_holder")                           \
	X(runtime_gil_locked, "pyruntimestate", "ceval.gil.locked")                                \
	X(interp_next, "_is", "next")                                                              \
	X(interp_threads, "_is", "threads.head")                                                   \
	X(tstate_next, "_ts", "next")                                                              \
	X(tstate_interp, "_ts", "interp")                                                          \
	X(tstate_cframe, "_ts", "cframe")                                                          \
	X(tstate_thread_id, "_ts", "thread_id")                                                    \
	X(tstate_native_id, "_ts", "native_thread_id")                                             \
	X(tstate_curexc_value, "_ts", "curexc_value")                                              \
	X(tstate_exc_info, "_ts", "exc_info")                                                      \
	X(stackitem_value, "_err_stackitem", "exc_value")                                          \
	X(stackitem_previous, "_err_stackitem", "previous_item")                                   \
	X(object_type, "_object", "ob_type")                                                       \
	X(type_name, "_typeobject", "tp_name")                                                     \
	X(exception_args, "PyBaseExceptionObject", "args")                                         \
	X(tuple_size, "PyTupleObject", "ob_base.ob_size")                                          \
	X(tuple_items, "PyTupleObject", "ob_item")                                                 \
	X(cframe_current, "_PyCFrame", "current_frame")                                            \
	X(frame_code, "_PyInterpreterFrame", "f_code")                                             \
	X(frame_previous, "_PyInterpreterFrame", "previous")                                       \
	X(frame_prev_instr, "_PyInterpreterFrame", "prev_instr")                                   \
	X(frame_is_entry, "_PyInterpreterFrame", "is_entry")                                       \
	X(frame_owner, "_PyInterpreterFrame", "owner")                                             \
	X(code_firstlineno, "PyCodeObject", "co_firstlineno")                                      \
	X(code_filename, "PyCodeObject", "co_filename")                                            \
	X(code_qualname, "PyCodeObject", "co_qualname")                                            \
	X(code_linetable, "PyCodeObject", "co_linetable")                                          \
	X(code_adaptive, "PyCodeObject", "co_code_adaptive")                                       \
	X(bytes_size, "PyBytesObject", "ob_base.ob_size")                                          \
	X(bytes_data, "PyBytesObject", "ob_sval")                                                  \
	X(unicode_length, "PyASCIIObject", "length")                                               \
	X(unicode_state, "PyASCIIObject", "state")                                                 \
	X(ascii_size, "PyASCIIObject", NULL)                                                       \
	X(compact_utf8_length, "PyCompactUnicodeObject", "utf8_length")                            \
	X(compact_utf8, "PyCompactUnicodeObject", "utf8")                                          \
	X(compact_size, "PyCompactUnicodeObject", NULL)                                            \
	X(frame_stacktop, "_PyInterpreterFrame", "stacktop")                                       \
	X(frame_localsplus, "_PyInterpreterFrame", "localsplus")                                   \
	X(coro_frame_state, "PyCoroObject", "cr_frame_state")                                      \
	X(coro_iframe, "PyCoroObject", "cr_iframe")                                                \
	X(long_size, "_longobject", "ob_base.ob_size")                                             \
	X(long_digits, "_longobject", "ob_digit")                                                  \
	X(type_flags, "_typeobject", "tp_flags")                                                   \
	X(heaptype_cached_keys, "_heaptypeobject", "ht_cached_keys")                               \
	X(dict_keys, "PyDictObject", "ma_keys")                                                    \
	X(dict_values, "PyDictObject", "ma_values")                                                \
	X(keys_log2_index_bytes, "_dictkeysobject", "dk_log2_index_bytes")                         \
	X(keys_kind, "_dictkeysobject", "dk_kind")                                                 \
	X(keys_nentries, "_dictkeysobject", "dk_nentries")                                         \
	X(keys_indices, "_dictkeysobject", "dk_indices")

/*
 * The same for the asyncio accelerator's structures (_asyncio's DWARF, not
 * libpython's): a Task's state, the future it waits on, its coroutine, its
 * name.
 */
#define CQ_PYTHON_ASYNCIO_FIELDS(X)                                                                \
	X(task_state, "TaskObj", "task_state")                                                     \
	X(task_fut_waiter, "TaskObj", "task_fut_waiter")                                           \
	X(task_coro, "TaskObj", "task_coro")                                                       \
	X(task_name, "TaskObj", "task_name")

/* The offsets (and two sizes) of one CPython version's structures, in bytes. */
struct cq_python_layout {
	unsigned major, minor;
#define CQ_PY_FIELD(name, type, member) uint32_t name;
	CQ_PYTHON_LAYOUT_FIELDS(CQ_PY_FIELD)
	CQ_PYTHON_ASYNCIO_FIELDS(CQ_PY_FIELD)
#undef CQ_PY_FIELD
};

/* The table's row for major.minor, or NULL: a version coreq cannot read without DWARF. */
const struct cq_python_layout *cq_python_layout_table(unsigned major, unsigned minor);

/*
 * Every field of the layout from dw (libpython's DWARF: the executable's
 * when it links CPython in, else libpython's); false, with *missing the
 * first field not found ("pyruntimestate interpreters.head"), when one is
 * absent.  Bounded: each type is looked for among the top-level DIEs of the
 * compile units, at most a few thousand member DIEs read.
 */
bool cq_python_layout_dwarf(Dwarf *dw, struct cq_python_layout *out, const char **missing);

/* The CQ_PYTHON_ASYNCIO_FIELDS of out from dw, _asyncio's DWARF; as above. */
bool cq_python_asyncio_layout_dwarf(Dwarf *dw, struct cq_python_layout *out, const char **missing);

/*
 * A layout cached for a module (the python runtime's blob "layout": the
 * version, the field count, each field as a 32-bit word); false when it is
 * damaged or of another version or field list.
 */
bool cq_python_layout_decode(const uint8_t *blob, size_t len, unsigned major, unsigned minor,
                             struct cq_python_layout *out);

/*
 * The line of byte offset `addr` of a code object's instructions, from its
 * location table (co_linetable, 3.11's format) and co_firstlineno, as
 * PyCode_Addr2Line computes it: -1 when the table says the instruction has
 * no line (or the table ends before it); firstlineno for addr < 0.
 */
int cq_python_addr2line(const uint8_t *table, size_t len, int firstlineno, int64_t addr);

#endif
