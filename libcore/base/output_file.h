/*
 * output_file.h - a file a command writes by a name it was given (`dump -o`,
 * `flame -o`), made so that the name can never redirect the write.
 *
 * The bytes go to a fresh file created beside the target (O_CREAT|O_EXCL,
 * so never through a symbolic link, and with the mode asked for, so never
 * inheriting an existing file's looser mode or its other hard links); once
 * written in full it is renamed over the target.  A target that exists and
 * is not a regular file (a symbolic link, a FIFO, a device, a directory) is
 * refused before anything is created: rename() would replace the node
 * itself, and /dev/null is not a file to replace.  A half-written output
 * never appears under the target's name.
 */
#ifndef CQ_OUTPUT_FILE_H
#define CQ_OUTPUT_FILE_H

#include <sys/types.h>

#include "libcore/base/error.h"

struct cq_output_file {
	int fd;       /* write here; -1 when closed */
	char *target; /* the name asked for */
	char *temp;   /* the fresh file beside it, until committed or discarded */
};

/*
 * Creates the fresh file for target with mode (less the umask); the
 * target itself is not touched yet.  On error nothing is left behind.
 */
struct cq_error *cq_output_file_create(const char *target, mode_t mode, struct cq_output_file *out);

/*
 * Closes the file and renames it over the target; discards it on error.
 * A caller that wrote through a stream of its own over fd (fdopen) closes
 * that stream first, checking its result, and sets fd to -1.
 */
struct cq_error *cq_output_file_commit(struct cq_output_file *f);

/* Closes and removes the fresh file; the target is left as it was. */
void cq_output_file_discard(struct cq_output_file *f);

#endif
