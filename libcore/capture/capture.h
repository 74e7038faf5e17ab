/*
 * capture.h - what is known about a crash from outside the core.
 *
 * systemd-coredump stores a core as
 * core.<comm>.<uid>.<boot id>.<pid>.<timestamp usec>[.zst|.lz4|.xz] (comm
 * with '.', '/' and ' ' escaped as \xNN) and puts the kernel's view in
 * user.coredump.* xattrs; `coreq hook` receives the same facts as
 * core_pattern arguments and stores its copies the same way, so one reader
 * serves both.  The core's own notes win where they disagree: reconciling
 * records each disagreement instead of hiding it.
 *
 * Layer: capture (libcore/capture/): where a core came from and how it was kept; above triage.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_CAPTURE_H
#define CQ_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_core;

/* Which of the numeric fields are known. */
enum {
	CQ_CAPTURE_PID = 1u << 0,
	CQ_CAPTURE_UID = 1u << 1,
	CQ_CAPTURE_GID = 1u << 2,
	CQ_CAPTURE_SIGNAL = 1u << 3,
	CQ_CAPTURE_TIMESTAMP = 1u << 4,
	CQ_CAPTURE_RLIMIT = 1u << 5,
};

struct cq_capture {
	const char *source; /* "file", "systemd" or "hook" */
	unsigned known;     /* CQ_CAPTURE_* */
	int64_t pid, uid, gid, signal;
	int64_t timestamp_us; /* crash time, microseconds since the epoch */
	/* The core file's modification time (seconds), the crash time's stand-in
	 * when no capture recorded one; 0: not known (a core on standard input). */
	int64_t file_mtime;
	int64_t rlimit; /* RLIMIT_CORE in bytes, -1 = unlimited */
	char comm[64];  /* "" = unknown */
	char boot_id[40];
	char hostname[256];
	char exe[1024];
	char conflicts[512]; /* filled by cq_capture_reconcile */
};

void cq_capture_init(struct cq_capture *c);

/*
 * Fills c from a systemd-coredump file name (the last path component).
 * Returns false, leaving c untouched, if name is not one.
 */
bool cq_capture_parse_systemd_name(const char *name, struct cq_capture *c);

/* Adds the user.coredump.* xattrs of the file at path to c; absent ones are skipped. */
void cq_capture_read_xattrs(const char *path, struct cq_capture *c);

/*
 * Who crashed, by one rule for every command and the store: the core's
 * NT_PRPSINFO first; a core without one takes what the capture recorded
 * (systemd's file name and xattrs, the hook's arguments; cap may be NULL);
 * the pid then falls back to the crashed thread's id, and uid and gid are
 * unknown (has_uid, has_gid false).
 */
struct cq_capture_ids {
	int64_t pid;
	bool has_uid, has_gid;
	int64_t uid, gid;
};
void cq_capture_ids(const struct cq_core *core, const struct cq_capture *cap,
                    struct cq_capture_ids *out);

/*
 * Everything the path's name and xattrs say (source "file" when neither says
 * anything), and the file's modification time.
 */
void cq_capture_from_file(const char *path, struct cq_capture *c);

/*
 * Compares c with the core's notes (pid, uid, gid, signal, comm, exe) and
 * lists each disagreement in c->conflicts ("pid: core 12, outside 13; ...").
 * The caller stores the core's values.
 */
void cq_capture_reconcile(const struct cq_core *core, struct cq_capture *c);

/*
 * The file name systemd-coredump would give this crash, with the given
 * extension (".zst"); needs pid, uid and timestamp.  serial, when not 0, is
 * added to the timestamp's microseconds to make the name unique.
 */
struct cq_error *cq_capture_systemd_name(const struct cq_capture *c, unsigned serial, char *buf,
                                         size_t cap, const char *ext);

/* Sets user.coredump.* xattrs on fd from c, as systemd-coredump does. */
struct cq_error *cq_capture_write_xattrs(int fd, const struct cq_capture *c);

/*
 * The default directory of stored cores (malloc'd; NULL when none is
 * known), by the rule of every default path (libcore/base/paths.h): store in
 * the configuration file, else $XDG_STATE_HOME/coreq/cores, else for root
 * /var/lib/coreq/cores, else ~/.local/state/coreq/cores.
 */
char *cq_capture_default_store(void);

#endif
