/*
 * fuzz_waits.c - libFuzzer target for the wait-for graph over a core
 * (libcore/analysis/waits.c, wait_reader.c): every field of a lock read
 * from memory, the one reader of an rwlock searched on the threads' stacks,
 * and the graph's cycles and ends.
 *
 * The input is a core, written to a memfd and opened by path (a sysroot
 * that does not exist keeps its NT_FILE paths from reaching host files).
 * Each thread is given one named frame, chosen by a byte of the input, so
 * that each kind of lock (mutex, rwlock to write and to read, condvar,
 * join, semaphore, Rust's Mutex) is read from whatever its futex word
 * points at.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcore/analysis/waits.h"
#include "libcore/model/core.h"
#include "unwind/frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const functions[] = {
    "__GI___lll_lock_wait",
    "___pthread_rwlock_wrlock",
    "___pthread_rwlock_rdlock",
    "___pthread_cond_wait",
    "__pthread_clockjoin_ex",
    "__new_sem_wait_slow64",
    "<std::sys::sync::mutex::futex::Mutex>::lock_contended",
};
#define NFUNCTIONS (sizeof(functions) / sizeof(functions[0]))

static void find_waits(struct cq_core *core, const uint8_t *data, size_t size)
{
	size_t n = core->nthreads;
	struct cq_thread_stack *ts = calloc(n ? n : 1, sizeof(*ts));
	struct cq_stack_frame *fr = calloc(n ? n : 1, sizeof(*fr));
	if (!ts || !fr)
		goto out;
	for (size_t t = 0; t < n; t++) {
		fr[t].function = functions[(size ? data[t % size] : 0) % NFUNCTIONS];
		ts[t] = (struct cq_thread_stack){
		    .thread = &core->threads[t], .frames = &fr[t], .nframes = 1};
	}
	struct cq_stacks stacks = {.threads = ts, .nthreads = n};
	struct cq_waits *w = NULL;
	struct cq_error *err = cq_waits_find(core, &stacks, &w);
	if (err)
		cq_error_free(err);
	cq_waits_free(w);
out:
	free(ts);
	free(fr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-waits", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct cq_core_options opts = {.sysroot = "/nonexistent-coreq-fuzz-sysroot"};
	struct cq_core *core = NULL;
	struct cq_error *err = cq_core_open(path, &opts, &core);
	if (err) {
		cq_error_free(err);
	} else {
		find_waits(core, data, size);
		cq_core_close(core);
	}
	close(fd);
	return 0;
}
