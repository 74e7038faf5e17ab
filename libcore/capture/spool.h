/*
 * spool.h - a core read from a pipe (the kernel's, in the hook) stored as
 * systemd-coredump would store it, and the raw copy an analysis reads while
 * the stored copy is still being compressed (spool.c).
 *
 * Layer: capture.
 */
#ifndef CQ_SPOOL_H
#define CQ_SPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_capture;

/* What cq_spool_store wrote. */
struct cq_spool_result {
	char *path;          /* malloc'd: dir/<systemd-style name>.zst */
	uint64_t raw_bytes;  /* bytes of core read and stored */
	uint64_t file_bytes; /* bytes of the compressed file */
	bool truncated;      /* limit reached: the rest of the input was not read */
	bool xattrs;         /* the user.coredump.* xattrs could be set */
};

/*
 * A raw copy of the core kept in memory while the stored copy is compressed,
 * so that an analysis can read it at once: no second decompression, and the
 * analysis overlaps the compression.  The reader writes what it reads into
 * fd (a memfd the caller made and shares with the analysis); a thread
 * compresses from fd behind it.  Beyond budget bytes the copy is given up
 * (fd is emptied) and the rest of the core is compressed straight from the
 * input, as without a raw copy.
 */
struct cq_spool_raw {
	int fd;
	uint64_t budget;
	/*
	 * Called in the caller's thread as soon as the whole core (up to the
	 * limit) is in fd and the input will not be read again, while the
	 * compression may still run; never called if the copy was given up.
	 */
	void (*complete)(void *arg, uint64_t size);
	void *arg;
	bool kept; /* set by cq_spool_store: complete() was called */
};

/*
 * Reads a core from in_fd and stores at most limit bytes of it (0: no limit),
 * as seekable zstd (libzstd: independent checksummed frames of
 * CQ_ZSEEK_WRITE_FRAME bytes and a seek table), as dir/<systemd-style name>.zst: a
 * hidden temporary file renamed into place (never over an existing file),
 * fsynced, with c's xattrs.  On error nothing is left in dir.  raw (may be
 * NULL) keeps the raw copy described above.
 */
struct cq_error *cq_spool_store(int in_fd, const char *dir, const struct cq_capture *c,
                                uint64_t limit, struct cq_spool_raw *raw,
                                struct cq_spool_result *out);

/*
 * How many raw bytes of a core may be stored in dir (0: no bound): the
 * smallest of max_size (0: none), the process's RLIMIT_CORE (rlimit; <= 0:
 * none) and the space above keep_free bytes free in dir's file system
 * (keep_free 0: no such bound).  *no_room is set when that space is none.
 */
uint64_t cq_spool_limit(const char *dir, uint64_t max_size, int64_t rlimit, uint64_t keep_free,
                        bool *no_room);

#endif
