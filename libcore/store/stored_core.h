/*
 * stored_core.h - a core of the crash database read back whole, by its row
 * id: `coreq dump` writes it out, `coreq debug` hands it to gdb.  Also a
 * core file named by path handed to gdb the same way (`coreq debug CORE`).
 *
 * A row is data, possibly from another machine: the file it names is read
 * only when it is a regular file (a row may point at a FIFO or /dev/zero),
 * and only up to the raw size the row records; a file that decompresses to
 * more is refused.  The file read is the hook's stored copy when it is
 * readable (the original may be gone), else the path the core was ingested
 * from.
 *
 * Every error says whose it is (enum cq_stored_core_blame), so that a
 * command prints it under the right name: the row ("core ID"), the core's
 * file, or the output.
 *
 * Layer: store (libcore/store/): the crash database; above capture.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_STORED_CORE_H
#define CQ_STORED_CORE_H

#include <stdint.h>

#include "libcore/base/error.h"

struct cq_core;
struct cq_store;

/* Whose name an error goes under. */
enum cq_stored_core_blame {
	CQ_STORED_CORE_ROW,    /* the row: not stored, its file gone, no size recorded */
	CQ_STORED_CORE_FILE,   /* the core's file (path): unreadable, not regular, too big */
	CQ_STORED_CORE_OUTPUT, /* where the bytes were to go */
};

struct cq_stored_core {
	char *path;                      /* the file read; NULL when the row names none */
	char *exe;                       /* the executable the row names; NULL if none */
	int64_t size;                    /* raw bytes, as the row records them */
	struct cq_core *core;            /* open after cq_stored_core_open succeeded */
	enum cq_stored_core_blame blame; /* after an error: whose it is */
};

/*
 * Finds core id in store and opens its file as the row bounds it (a regular
 * file, decompressed to at most the recorded size); exe, if not NULL, is
 * the executable to use (cq_core_options.exe).  Call cq_stored_core_close
 * in every case.
 */
struct cq_error *cq_stored_core_open(struct cq_store *store, int64_t id, const char *exe,
                                     struct cq_stored_core *out);
void cq_stored_core_close(struct cq_stored_core *s);

/*
 * Writes stored core id, decompressed, to target: a fresh file of mode 0600
 * renamed over it (output_file.h: a link, FIFO or device is refused), or to
 * fd when target is NULL.  The core is opened (cq_stored_core_open) before
 * anything is created.  s tells what was read and, after an error, whose it
 * is; call cq_stored_core_close in every case.
 */
struct cq_error *cq_stored_core_write(struct cq_store *store, int64_t id, const char *target,
                                      int fd, struct cq_stored_core *s);

/* A core ready for a debugger that reads it through an inherited descriptor. */
struct cq_stored_core_handoff {
	int fd;     /* the raw (decompressed) core, without O_CLOEXEC; -1 when none */
	char *exe;  /* the exe asked for, else the one the core names, else the row's; or NULL */
	char *path; /* the file the core was read from; NULL when none */
	enum cq_stored_core_blame blame; /* after an error: whose it is */
};

/* Stored core id for a debugger (as cq_stored_core_open opens it). */
struct cq_error *cq_stored_core_for_debugger(struct cq_store *store, int64_t id, const char *exe,
                                             struct cq_stored_core_handoff *out);

/* The core file at path for a debugger, opened as coreq opens a core (cq_core_open). */
struct cq_error *cq_stored_core_file_for_debugger(const char *path, const char *exe,
                                                  struct cq_stored_core_handoff *out);

/* Closes the descriptor and frees the names; h may be reused after. */
void cq_stored_core_handoff_free(struct cq_stored_core_handoff *h);

#endif
