/*
 * feed.c - spans read ahead into a ring of buffers by worker threads (see
 * feed.h).
 */
#include "libcore/base/feed.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_FAILED };

struct slot {
	uint8_t *buf;
	size_t span; /* which span it holds (SIZE_MAX: none yet) */
	enum slot_state state;
};

/* The ring: each worker fills one slot while the reader holds one and one waits ready. */
#define SLOTS_BEYOND_WORKERS 2

struct cq_feed {
	pthread_mutex_t lock;
	pthread_cond_t moved;
	struct cq_feed_span *spans;
	size_t n;
	struct slot *slot;
	size_t nslots;
	uint64_t slot_bytes;
	size_t next_fill; /* the next span a worker takes */
	size_t next_read; /* the next span handed out */
	bool held;        /* span next_read - 1 is with the reader: its slot is not free */
	bool held_made;   /* and was handed out whole (not NULL) */
	bool stop;
	cq_feed_fill_fn fill;
	void *arg;
	pthread_t *threads;
	unsigned nthreads;
};

struct worker {
	struct cq_feed *f;
	unsigned id;
};

/* Spans below this are done with: their slots may be filled again. */
static size_t released(const struct cq_feed *f)
{
	return f->next_read - (f->held ? 1 : 0);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct cq_feed *f = w->f;
	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (!f->stop && f->next_fill < f->n && f->next_fill >= released(f) + f->nslots)
			pthread_cond_wait(&f->moved, &f->lock);
		if (f->stop || f->next_fill >= f->n)
			break;
		size_t k = f->next_fill++;
		struct slot *s = &f->slot[k % f->nslots];
		s->span = k;
		s->state = SLOT_FILLING;
		pthread_mutex_unlock(&f->lock);
		const struct cq_feed_span *sp = &f->spans[k];
		struct cq_feed_span rest = {sp->off + sp->lead, sp->len - sp->lead, 0};
		bool ok = f->fill(f->arg, w->id, &rest, s->buf + sp->lead);
		pthread_mutex_lock(&f->lock);
		s->state = ok ? SLOT_READY : SLOT_FAILED;
		pthread_cond_broadcast(&f->moved);
	}
	pthread_mutex_unlock(&f->lock);
	free(w);
	return NULL;
}

static void feed_free(struct cq_feed *f)
{
	for (size_t i = 0; f->slot && i < f->nslots; i++)
		free(f->slot[i].buf);
	free(f->slot);
	free(f->spans);
	free(f->threads);
	pthread_cond_destroy(&f->moved);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

struct cq_error *cq_feed_start(const struct cq_feed_span *spans, size_t n, unsigned workers,
                               cq_feed_fill_fn fill, void *arg, struct cq_feed **out)
{
	*out = NULL;
	workers = workers ? workers : 1;
	for (size_t i = 0; i < n; i++)
		if (spans[i].lead > spans[i].len)
			return cq_error_create(CQ_ERR_USAGE, "a span's lead is longer than it");
	struct cq_feed *f = calloc(1, sizeof(*f));
	if (!f)
		return &cq_error_nomem;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->moved, NULL);
	f->n = n;
	f->fill = fill;
	f->arg = arg;
	f->nslots = workers + SLOTS_BEYOND_WORKERS;
	uint64_t most = 1;
	for (size_t i = 0; i < n; i++)
		most = spans[i].len > most ? spans[i].len : most;
	f->spans = malloc((n ? n : 1) * sizeof(*spans));
	f->slot = calloc(f->nslots, sizeof(*f->slot));
	f->threads = calloc(workers, sizeof(*f->threads));
	bool ok = f->spans && f->slot && f->threads && most <= SIZE_MAX;
	f->slot_bytes = most;
	for (size_t i = 0; ok && i < f->nslots; i++) {
		f->slot[i].span = SIZE_MAX;
		ok = (f->slot[i].buf = malloc((size_t)most)) != NULL;
	}
	if (!ok) {
		feed_free(f);
		return &cq_error_nomem;
	}
	memcpy(f->spans, spans, n * sizeof(*spans));
	for (unsigned i = 0; i < workers; i++) {
		struct worker *w = malloc(sizeof(*w));
		if (!w)
			break;
		*w = (struct worker){f, i};
		if (pthread_create(&f->threads[f->nthreads], NULL, work, w) != 0) {
			free(w);
			break;
		}
		f->nthreads++;
	}
	if (f->nthreads == 0) {
		feed_free(f);
		return cq_error_create(CQ_ERR_IO, "cannot start a thread to read ahead");
	}
	*out = f;
	return NULL;
}

/* Lets the span the reader holds go. */
static void release(struct cq_feed *f)
{
	if (!f->held)
		return;
	f->slot[(f->next_read - 1) % f->nslots].state = SLOT_FREE;
	f->held = false;
	pthread_cond_broadcast(&f->moved);
}

const uint8_t *cq_feed_next(struct cq_feed *f)
{
	pthread_mutex_lock(&f->lock);
	if (f->next_read >= f->n) {
		release(f);
		pthread_mutex_unlock(&f->lock);
		return NULL;
	}
	size_t k = f->next_read;
	struct slot *s = &f->slot[k % f->nslots];
	while (s->span != k || (s->state != SLOT_READY && s->state != SLOT_FAILED))
		pthread_cond_wait(&f->moved, &f->lock);
	const struct cq_feed_span *sp = &f->spans[k];
	const uint8_t *b = s->state == SLOT_READY ? s->buf : NULL;
	if (b && sp->lead) {
		/*
		 * The lead from the span before, which the reader still holds:
		 * from bytes it was given whole, or that its own fill made
		 * (beyond its own lead, which may not have been).
		 */
		const struct cq_feed_span *pp = k ? &f->spans[k - 1] : NULL;
		const struct slot *p = k ? &f->slot[(k - 1) % f->nslots] : NULL;
		if (f->held && pp->len >= sp->lead && pp->off + pp->len == sp->off + sp->lead &&
		    (f->held_made || (p->state == SLOT_READY && pp->len - sp->lead >= pp->lead)))
			memcpy(s->buf, p->buf + pp->len - sp->lead, (size_t)sp->lead);
		else
			b = NULL;
	}
	release(f);
	f->next_read++;
	f->held = true;
	f->held_made = b != NULL;
	pthread_mutex_unlock(&f->lock);
	return b;
}

uint64_t cq_feed_ring_bytes(const struct cq_feed *f)
{
	return f->nslots * f->slot_bytes;
}

void cq_feed_stop(struct cq_feed *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_broadcast(&f->moved);
	pthread_mutex_unlock(&f->lock);
	for (unsigned i = 0; i < f->nthreads; i++)
		pthread_join(f->threads[i], NULL);
	feed_free(f);
}

unsigned cq_feed_workers(void)
{
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	return n < 1 ? 1 : n > 4 ? 4 : (unsigned)n;
}
