/*
 * lazy_map.c - memory filled chunk by chunk on first touch, through
 * userfaultfd (see lazy_map.h).
 */
#include "libcore/base/lazy_map.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct cq_lazy_map {
	uint8_t *base;
	size_t map_len, page;
	uint64_t *bound; /* n + 1 */
	size_t n;
	uint64_t budget, resident;
	bool *present;
	bool *pinned; /* chunks with pages put: never dropped */
	size_t *fifo; /* chunks in the order they were filled: a ring of n */
	size_t fifo_head, fifo_len;
	uint8_t *scratch;
	cq_lazy_fill_fn fill;
	void *arg;
	int uffd, stop[2];
	pthread_t thread;
	bool running;
	pid_t owner;          /* the process whose thread serves the region */
	pthread_mutex_t lock; /* guards stats */
	struct cq_lazy_map_stats stats;
};

static size_t chunk_of(const struct cq_lazy_map *m, uint64_t off)
{
	size_t lo = 0, hi = m->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->bound[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t chunk_pages(const struct cq_lazy_map *m, size_t i)
{
	uint64_t len = m->bound[i + 1] - m->bound[i];
	return (len + m->page - 1) & ~(uint64_t)(m->page - 1);
}

static void drop_oldest(struct cq_lazy_map *m)
{
	size_t i = m->fifo[m->fifo_head];
	m->fifo_head = (m->fifo_head + 1) % m->n;
	m->fifo_len--;
	madvise(m->base + m->bound[i], chunk_pages(m, i), MADV_DONTNEED);
	m->present[i] = false;
	m->resident -= chunk_pages(m, i);
	pthread_mutex_lock(&m->lock);
	m->stats.drops++;
	pthread_mutex_unlock(&m->lock);
}

/* Installs len bytes of scratch at dst page by page, skipping pages already there. */
static void install(struct cq_lazy_map *m, uint64_t dst, uint64_t len)
{
	struct uffdio_copy c = {.dst = dst, .src = (uintptr_t)m->scratch, .len = len};
	for (;;) {
		if (ioctl(m->uffd, UFFDIO_COPY, &c) == 0)
			return;
		if (errno == EAGAIN && c.copy > 0) {
			c.dst += (uint64_t)c.copy, c.src += (uint64_t)c.copy,
			    c.len -= (uint64_t)c.copy;
			c.copy = 0;
			continue;
		}
		if (errno != EEXIST)
			break;
		/* Some page is there already (touched through another path): one by one. */
		for (uint64_t at = 0; at < len; at += m->page) {
			struct uffdio_copy p = {.dst = dst + at,
			                        .src = (uintptr_t)m->scratch + at,
			                        .len = m->page,
			                        .mode = UFFDIO_COPY_MODE_DONTWAKE};
			ioctl(m->uffd, UFFDIO_COPY, &p);
		}
		break;
	}
	struct uffdio_range r = {.start = dst, .len = len};
	ioctl(m->uffd, UFFDIO_WAKE, &r);
}

/*
 * Produces chunk i and installs it.  A fault on a chunk counted as present
 * means its pages went away behind our back (or the fault raced the fill):
 * it is produced again, and the pages already there are left alone.
 */
static void fill_chunk(struct cq_lazy_map *m, size_t i)
{
	uint64_t len = m->bound[i + 1] - m->bound[i], plen = chunk_pages(m, i);
	bool again = m->present[i];
	while (!again && m->fifo_len > 0 && m->resident + plen > m->budget)
		drop_oldest(m);
	bool ok = m->fill(m->arg, i, m->scratch, (size_t)len);
	if (!ok)
		memset(m->scratch, 0, (size_t)len);
	memset(m->scratch + len, 0, (size_t)(plen - len));
	if (!again) {
		m->present[i] = true;
		if (!m->pinned[i]) {
			m->fifo[(m->fifo_head + m->fifo_len++) % m->n] = i;
			m->resident += plen;
		}
	}
	/* Counted before the faulting thread is woken, so it sees its own chunk's state. */
	pthread_mutex_lock(&m->lock);
	m->stats.fills++;
	m->stats.bad_chunks += !ok && !again;
	if (m->resident > m->stats.peak_bytes)
		m->stats.peak_bytes = m->resident;
	pthread_mutex_unlock(&m->lock);
	install(m, (uintptr_t)m->base + m->bound[i], plen);
}

static void *serve(void *arg)
{
	struct cq_lazy_map *m = arg;
	struct pollfd p[2] = {{.fd = m->uffd, .events = POLLIN},
	                      {.fd = m->stop[0], .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == ENOMEM)
				continue;
			/* Faults could never be served again: better a clear end than a hang. */
			fprintf(stderr, "coreq: userfaultfd: poll failed: %s\n", strerror(errno));
			abort();
		}
		if (p[1].revents)
			break;
		struct uffd_msg msg;
		ssize_t got = read(m->uffd, &msg, sizeof(msg));
		if (got != (ssize_t)sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		uint64_t addr = msg.arg.pagefault.address & ~(uint64_t)(m->page - 1);
		if (addr < (uintptr_t)m->base || addr >= (uintptr_t)m->base + m->map_len)
			continue;
		fill_chunk(m, chunk_of(m, addr - (uintptr_t)m->base));
	}
	return NULL;
}

static int open_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EPERM)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return -1;
	struct uffdio_api api = {.api = UFFD_API};
	if (ioctl(fd, UFFDIO_API, &api) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

struct cq_error *cq_lazy_map_create(uint64_t size, const uint64_t *bound, size_t n, uint64_t budget,
                                    cq_lazy_fill_fn fill, void *arg, struct cq_lazy_map **out)
{
	*out = NULL;
	long pg = sysconf(_SC_PAGESIZE);
	size_t page = pg > 0 ? (size_t)pg : 4096;
	if (n == 0 || bound[0] != 0 || bound[n] != size)
		return cq_error_create(CQ_ERR_USAGE, "lazy map: bad chunk bounds");
	uint64_t largest = 0;
	for (size_t i = 0; i < n; i++) {
		if (bound[i + 1] <= bound[i] || (i + 1 < n && bound[i + 1] % page))
			return cq_error_create(CQ_ERR_UNSUPPORTED,
			                       "lazy map: chunk %zu does not end on a page", i);
		if (bound[i + 1] - bound[i] > largest)
			largest = bound[i + 1] - bound[i];
	}
	struct cq_lazy_map *m = calloc(1, sizeof(*m));
	if (!m)
		return &cq_error_nomem;
	m->uffd = m->stop[0] = m->stop[1] = -1;
	m->base = MAP_FAILED;
	m->page = page;
	m->n = n;
	m->fill = fill;
	m->arg = arg;
	m->map_len = (size + page - 1) & ~(uint64_t)(page - 1);
	largest = (largest + page - 1) & ~(uint64_t)(page - 1);
	/* Room for a few chunks at least: a read across two, and a second reader. */
	m->budget = budget > 4 * largest ? budget : 4 * largest;
	pthread_mutex_init(&m->lock, NULL);
	struct cq_error *err = NULL;
	m->bound = malloc((n + 1) * sizeof(*m->bound));
	m->present = calloc(n, sizeof(*m->present));
	m->pinned = calloc(n, sizeof(*m->pinned));
	m->fifo = malloc(n * sizeof(*m->fifo));
	m->scratch = malloc((size_t)largest);
	if (!m->bound || !m->present || !m->pinned || !m->fifo || !m->scratch) {
		err = &cq_error_nomem;
		goto fail;
	}
	memcpy(m->bound, bound, (n + 1) * sizeof(*bound));
	if ((m->uffd = open_uffd()) < 0) {
		err = cq_error_create(CQ_ERR_UNSUPPORTED, "userfaultfd is not available: %s",
		                      strerror(errno));
		goto fail;
	}
	/*
	 * Read-only: such a mapping is not counted against RLIMIT_DATA (the
	 * hook's analysis runs under one), and UFFDIO_COPY fills it all the same.
	 */
	m->base =
	    mmap(NULL, m->map_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->base == MAP_FAILED) {
		err = cq_error_errno(errno, "cannot reserve %llu bytes of address space",
		                     (unsigned long long)m->map_len);
		goto fail;
	}
	struct uffdio_register reg = {.range = {.start = (uintptr_t)m->base, .len = m->map_len},
	                              .mode = UFFDIO_REGISTER_MODE_MISSING};
	if (ioctl(m->uffd, UFFDIO_REGISTER, &reg) != 0) {
		err = cq_error_create(CQ_ERR_UNSUPPORTED, "userfaultfd refuses the region: %s",
		                      strerror(errno));
		goto fail;
	}
	/* A forked child has no thread to fill it: it must fault loudly, not read zeros. */
	madvise(m->base, m->map_len, MADV_DONTFORK);
	if (pipe2(m->stop, O_CLOEXEC) != 0) {
		err = cq_error_errno(errno, "cannot make a pipe");
		goto fail;
	}
	int rc = pthread_create(&m->thread, NULL, serve, m);
	if (rc) {
		err = cq_error_errno(rc, "cannot start the decompression thread");
		goto fail;
	}
	m->running = true;
	m->owner = getpid();
	*out = m;
	return NULL;
fail:
	cq_lazy_map_destroy(m);
	return err;
}

struct cq_error *cq_lazy_map_put(struct cq_lazy_map *m, uint64_t off, const uint8_t *src,
                                 uint64_t len)
{
	len = (len + m->page - 1) & ~(uint64_t)(m->page - 1);
	if (off % m->page || off > m->map_len || len > m->map_len - off)
		return cq_error_create(CQ_ERR_USAGE, "lazy map: bad range to put");
	for (size_t i = chunk_of(m, off); i < m->n && m->bound[i] < off + len; i++)
		m->pinned[i] = true;
	struct uffdio_copy c = {.dst = (uintptr_t)m->base + off, .src = (uintptr_t)src, .len = len};
	while (c.len > 0) {
		c.copy = 0;
		if (ioctl(m->uffd, UFFDIO_COPY, &c) == 0)
			break;
		if (errno != EAGAIN)
			return cq_error_errno(errno, "userfaultfd: cannot install pages");
		if (c.copy > 0)
			c.dst += (uint64_t)c.copy, c.src += (uint64_t)c.copy,
			    c.len -= (uint64_t)c.copy;
	}
	return NULL;
}

const uint8_t *cq_lazy_map_data(const struct cq_lazy_map *m)
{
	return m->base;
}

struct cq_lazy_map_stats cq_lazy_map_stats(struct cq_lazy_map *m)
{
	pthread_mutex_lock(&m->lock);
	struct cq_lazy_map_stats s = m->stats;
	pthread_mutex_unlock(&m->lock);
	return s;
}

void cq_lazy_map_destroy(struct cq_lazy_map *m)
{
	if (!m)
		return;
	if (m->running && getpid() == m->owner) {
		char b = 0;
		ssize_t w = write(m->stop[1], &b, 1);
		(void)w;
		pthread_join(m->thread, NULL);
	}
	if (m->base != MAP_FAILED)
		munmap(m->base, m->map_len);
	if (m->uffd >= 0)
		close(m->uffd);
	if (m->stop[0] >= 0) {
		close(m->stop[0]);
		close(m->stop[1]);
	}
	pthread_mutex_destroy(&m->lock);
	free(m->bound);
	free(m->present);
	free(m->pinned);
	free(m->fifo);
	free(m->scratch);
	free(m);
}
