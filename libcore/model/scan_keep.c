/*
 * scan_keep.c - the pages of a one-stream core that its heap scan will act
 * on, found as the stream passes (scan_keep.h says why and when they are
 * trusted).
 *
 * Layer: model.
 */
#include "libcore/model/scan_keep.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/bytes.h"

/* One mapping of NT_FILE: addresses [lo, hi) of the file at path. */
struct file {
	uint64_t lo, hi;
	const char *path;
};

struct cq_scan_keep {
	char *names; /* NT_FILE's paths, copied */
	struct file *files;
	size_t nfiles;
	uint64_t (*wr)[2]; /* writable segments' file offsets, sorted and merged */
	size_t nwr;
	uint64_t size, page;
	struct cq_feed_words hint[CQ_SCAN_KEEP_MAX_RANGES];
	size_t nhint;
	uint64_t env_lo, env_span; /* every hinted value is in [env_lo, env_lo + env_span] */
	bool armed, gave_up, ended;
	uint64_t *pages; /* kept, ascending */
	size_t npages, cap;
	uint64_t next_at; /* where the next window starts */
	uint8_t *tail;    /* the last whole page of the window before */
	uint64_t tail_off;
	bool have_tail;
	uint64_t owed; /* a page to put from the next window */
	bool has_owed;
	/* The checker: a thread that looks at the window posted while the stream reads on. */
	bool threaded;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t moved;
	bool posted, stop;
	uint64_t post_at, post_len;
	const uint8_t *post_b;
	uint64_t *found; /* the pages it found in the window, their bytes in found_bytes */
	uint8_t *found_bytes;
	size_t nfound, cap_found;
	bool found_failed;
};

static int cmp_file(const void *a, const void *b)
{
	const struct file *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static int cmp_pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* NT_FILE: count, page size, count x {start, end, offset}, then count paths. */
static bool parse_files(struct cq_scan_keep *k, const uint8_t *desc, uint64_t len)
{
	if (!desc || len < 16)
		return true;
	uint64_t count = cq_load_u64(desc);
	if (count > (len - 16) / 24)
		return true;
	uint64_t at = 16 + 24 * count;
	if (!(k->names = malloc(len - at + 1)) ||
	    !(k->files = calloc(count ? count : 1, sizeof(*k->files))))
		return false;
	memcpy(k->names, desc + at, len - at);
	k->names[len - at] = 0;
	const char *p = k->names, *end = k->names + (len - at);
	for (uint64_t i = 0; i < count && p < end; i++) {
		uint64_t lo = cq_load_u64(desc + 16 + 24 * i), hi = cq_load_u64(desc + 24 + 24 * i);
		if (lo < hi)
			k->files[k->nfiles++] = (struct file){lo, hi, p};
		p += strlen(p) + 1;
	}
	qsort(k->files, k->nfiles, sizeof(*k->files), cmp_file);
	return true;
}

struct cq_scan_keep *cq_scan_keep_create(const uint8_t *desc, uint64_t len,
                                         const uint64_t (*writable)[2], size_t nw, uint64_t size,
                                         uint64_t page)
{
	struct cq_scan_keep *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->size = size;
	k->page = page;
	if (!parse_files(k, desc, len) || !(k->tail = malloc(page)) ||
	    !(k->wr = malloc((nw ? nw : 1) * sizeof(*k->wr)))) {
		cq_scan_keep_free(k);
		return NULL;
	}
	for (size_t i = 0; i < nw; i++)
		if (writable[i][0] < writable[i][1]) {
			k->wr[k->nwr][0] = writable[i][0];
			k->wr[k->nwr++][1] = writable[i][1];
		}
	qsort(k->wr, k->nwr, sizeof(*k->wr), cmp_pair);
	size_t m = 0;
	for (size_t i = 0; i < k->nwr; i++) {
		if (m && k->wr[i][0] <= k->wr[m - 1][1]) {
			if (k->wr[i][1] > k->wr[m - 1][1])
				k->wr[m - 1][1] = k->wr[i][1];
		} else {
			k->wr[m][0] = k->wr[i][0];
			k->wr[m++][1] = k->wr[i][1];
		}
	}
	k->nwr = m;
	return k;
}

/* Ends the checker thread, if there is one (after a collect: it has nothing posted). */
static void stop_checker(struct cq_scan_keep *k)
{
	if (!k->threaded)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_broadcast(&k->moved);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->thread, NULL);
	pthread_cond_destroy(&k->moved);
	pthread_mutex_destroy(&k->lock);
	k->threaded = false;
	k->posted = false;
}

void cq_scan_keep_free(struct cq_scan_keep *k)
{
	if (!k)
		return;
	stop_checker(k);
	free(k->found);
	free(k->found_bytes);
	free(k->names);
	free(k->files);
	free(k->wr);
	free(k->pages);
	free(k->tail);
	free(k);
}

/* The lowest address path is mapped at; false when it is not mapped. */
static bool file_base(const struct cq_scan_keep *k, const char *path, uint64_t *base)
{
	bool found = false;
	for (size_t i = 0; i < k->nfiles; i++)
		if (strcmp(k->files[i].path, path) == 0 && (!found || k->files[i].lo < *base)) {
			*base = k->files[i].lo;
			found = true;
		}
	return found;
}

/* The mapping that holds address a, or NULL. */
static const struct file *file_at(const struct cq_scan_keep *k, uint64_t a)
{
	size_t i = cq_sorted_below(k->files, k->nfiles, sizeof(*k->files), a + 1);
	if (a == UINT64_MAX)
		i = k->nfiles;
	return i > 0 && a < k->files[i - 1].hi ? &k->files[i - 1] : NULL;
}

static bool parse_hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	size_t n = 0;
	for (; n < 17; n++, s++) {
		int d = *s >= '0' && *s <= '9'   ? *s - '0'
		        : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
		                                 : -1;
		if (d < 0)
			break;
		x = x << 4 | (uint64_t)d;
	}
	if (n == 0 || n > 16 || *s != ' ')
		return false;
	*v = x;
	*p = s + 1;
	return true;
}

/* The envelope of the armed ranges, and armed. */
static bool arm_ranges(struct cq_scan_keep *k)
{
	if (k->nhint == 0)
		return false;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < k->nhint; i++) {
		lo = k->hint[i].lo < lo ? k->hint[i].lo : lo;
		hi = k->hint[i].hi > hi ? k->hint[i].hi : hi;
	}
	k->env_lo = lo;
	k->env_span = hi - lo;
	k->armed = true;
	return true;
}

bool cq_scan_keep_arm(struct cq_scan_keep *k, const char *note)
{
	k->nhint = 0;
	k->armed = false;
	const char *p = note;
	char path[4096];
	while (p && *p) {
		uint64_t a, b, base;
		const char *nl = strchr(p, '\n');
		if (!nl || k->nhint == CQ_SCAN_KEEP_MAX_RANGES || !parse_hex(&p, &a) ||
		    !parse_hex(&p, &b) || p >= nl || (size_t)(nl - p) >= sizeof(path) || a > b)
			return false;
		memcpy(path, p, (size_t)(nl - p));
		path[nl - p] = 0;
		if (!file_base(k, path, &base) || base + b < base || base + a == 0)
			return false;
		/* Both ends in a mapping of that file, as when the note was made. */
		const struct file *lo = file_at(k, base + a), *hi = file_at(k, base + b);
		if (!lo || !hi || strcmp(lo->path, path) != 0 || strcmp(hi->path, path) != 0)
			return false;
		k->hint[k->nhint++] = (struct cq_feed_words){base + a, base + b};
		p = nl + 1;
	}
	return arm_ranges(k);
}

/* ---- the words in range: a block of 8 at a time ---- */

#define BLOCK 64 /* bytes: 8 words */

/* Whether a word of the block at p has a value in [lo, lo + span]. */
static bool block_in_range(const uint8_t *p, uint64_t lo, uint64_t span)
{
	uint64_t any = 0;
	for (int i = 0; i < 8; i++)
		any |= (uint64_t)(cq_load_u64(p + 8 * i) - lo <= span);
	return any != 0;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* The same with AVX2: unsigned compares as signed ones with the sign bit flipped. */
__attribute__((target("avx2"))) static uint64_t clear_bytes_avx2(const uint8_t *p, uint64_t n,
                                                                 uint64_t lo, uint64_t span)
{
	const __m256i vlo = _mm256_set1_epi64x((long long)lo);
	const __m256i flip = _mm256_set1_epi64x((long long)INT64_MIN);
	const __m256i lim = _mm256_set1_epi64x((long long)(span ^ (uint64_t)INT64_MIN));
	uint64_t off = 0;
	for (; off + BLOCK <= n; off += BLOCK) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p + off));
		__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + off + 32));
		__m256i da = _mm256_xor_si256(_mm256_sub_epi64(a, vlo), flip);
		__m256i db = _mm256_xor_si256(_mm256_sub_epi64(b, vlo), flip);
		__m256i out =
		    _mm256_and_si256(_mm256_cmpgt_epi64(da, lim), _mm256_cmpgt_epi64(db, lim));
		if (_mm256_movemask_epi8(out) != -1)
			break;
	}
	return off;
}
#endif

/* How many bytes from p (whole blocks, within n) hold no word in [lo, lo + span]. */
static uint64_t clear_bytes(const uint8_t *p, uint64_t n, uint64_t lo, uint64_t span)
{
#if defined(__x86_64__)
	static int avx2 = -1;
	if (avx2 < 0)
		__atomic_store_n(&avx2, __builtin_cpu_supports("avx2") ? 1 : 0, __ATOMIC_RELAXED);
	if (__atomic_load_n(&avx2, __ATOMIC_RELAXED))
		return clear_bytes_avx2(p, n, lo, span);
#endif
	uint64_t off = 0;
	while (off + BLOCK <= n && !block_in_range(p + off, lo, span))
		off += BLOCK;
	return off;
}

bool cq_scan_keep_arm_words(struct cq_scan_keep *k, const struct cq_feed_words *words, size_t n)
{
	k->nhint = 0;
	k->armed = false;
	if (n > CQ_SCAN_KEEP_MAX_RANGES)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (words[i].lo == 0 || words[i].hi < words[i].lo) {
			k->nhint = 0;
			return false;
		}
		k->hint[k->nhint++] = words[i];
	}
	return arm_ranges(k);
}

static bool hinted(const struct cq_scan_keep *k, uint64_t v)
{
	for (size_t i = 0; i < k->nhint; i++)
		if (v >= k->hint[i].lo && v <= k->hint[i].hi)
			return true;
	return false;
}

/* Keeps the pages around the word at file offset off, found in window [at, at + len) of b. */
static void keep_word(struct cq_scan_keep *k, uint64_t off, uint64_t at, const uint8_t *b,
                      uint64_t len, bool (*put)(void *, uint64_t, const uint8_t *), void *arg)
{
	uint64_t mask = ~(k->page - 1);
	uint64_t first = (off >= CQ_FEED_WORD_REACH ? off - CQ_FEED_WORD_REACH : 0) & mask;
	uint64_t last = (off + 8 + CQ_FEED_WORD_REACH - 1) & mask;
	uint64_t room = (len + k->page - 1) & mask; /* b holds [at, at + room) */
	for (uint64_t pg = first; pg <= last && pg < k->size && !k->gave_up; pg += k->page) {
		if (k->npages && pg <= k->pages[k->npages - 1])
			continue;
		if ((k->npages + 1) * k->page > CQ_SCAN_KEEP_MAX_BYTES) {
			k->gave_up = true;
			return;
		}
		if (k->npages == k->cap) {
			size_t cap = k->cap ? 2 * k->cap : 64;
			uint64_t *v = realloc(k->pages, cap * sizeof(*v));
			if (!v) {
				k->gave_up = true;
				return;
			}
			k->pages = v;
			k->cap = cap;
		}
		k->pages[k->npages++] = pg;
		if (pg >= at && pg + k->page <= at + room)
			k->gave_up = !put(arg, pg, b + (pg - at));
		else if (pg < at && k->have_tail && pg == k->tail_off)
			k->gave_up = !put(arg, pg, k->tail);
		else if (pg >= at + len && !k->has_owed) {
			k->owed = pg;
			k->has_owed = true;
		} else
			k->gave_up = true;
	}
}

void cq_scan_keep_window(struct cq_scan_keep *k, uint64_t at, const uint8_t *b, uint64_t len,
                         bool (*put)(void *arg, uint64_t off, const uint8_t *page), void *arg)
{
	if (!k || !k->armed || k->gave_up)
		return;
	if (at != k->next_at) {
		k->gave_up = true;
		return;
	}
	k->next_at = at + len;
	uint64_t room = (len + k->page - 1) & ~(k->page - 1);
	if (k->has_owed) {
		k->has_owed = false;
		if (k->owed >= at && k->owed + k->page <= at + room)
			k->gave_up = !put(arg, k->owed, b + (k->owed - at));
		else
			k->gave_up = true;
	}
	uint64_t end = at + len;
	size_t r = cq_sorted_below(k->wr, k->nwr, sizeof(*k->wr), at);
	if (r > 0 && k->wr[r - 1][1] > at)
		r--;
	for (; r < k->nwr && k->wr[r][0] < end && !k->gave_up; r++) {
		uint64_t lo = k->wr[r][0] > at ? k->wr[r][0] : at;
		uint64_t hi = k->wr[r][1] < end ? k->wr[r][1] : end;
		/* A word cut by the window's edge is never looked at whole. */
		if ((lo & 7 && lo > k->wr[r][0]) || (hi & 7 && hi < k->wr[r][1])) {
			k->gave_up = true;
			break;
		}
		lo = (lo + 7) & ~(uint64_t)7;
		for (uint64_t off = lo; off + 8 <= hi && !k->gave_up;) {
			/* Blocks of 8 words none of which is in range go by at once. */
			off += clear_bytes(b + (off - at), hi - off, k->env_lo, k->env_span);
			uint64_t stop = hi - off > BLOCK ? off + BLOCK : hi;
			for (; off + 8 <= stop; off += 8) {
				uint64_t v = cq_load_u64(b + (off - at));
				if (v - k->env_lo <= k->env_span && hinted(k, v))
					keep_word(k, off, at, b, len, put, arg);
			}
		}
	}
	/* The last whole page, for a word at the next window's start. */
	k->have_tail = false;
	if ((end & (k->page - 1)) == 0 && len >= k->page && end - k->page >= at) {
		memcpy(k->tail, b + (end - k->page - at), k->page);
		k->tail_off = end - k->page;
		k->have_tail = true;
	}
}

void cq_scan_keep_end(struct cq_scan_keep *k)
{
	if (!k)
		return;
	stop_checker(k);
	if (!k->armed || k->gave_up)
		return;
	if (k->next_at != k->size)
		k->gave_up = true; /* cut short: what was not seen was not looked at */
	k->has_owed = false;       /* past the end: nothing to put */
	k->ended = true;
}

/* ---- the checker thread ---- */

/* The checker's put: the page is copied, to be put on the stream's thread. */
static bool hold_page(void *arg, uint64_t off, const uint8_t *page)
{
	struct cq_scan_keep *k = arg;
	if (k->nfound == k->cap_found) {
		size_t cap = k->cap_found ? 2 * k->cap_found : 16;
		uint64_t *f = realloc(k->found, cap * sizeof(*f));
		if (f)
			k->found = f;
		uint8_t *b = f ? realloc(k->found_bytes, cap * k->page) : NULL;
		if (!b)
			return false;
		k->found_bytes = b;
		k->cap_found = cap;
	}
	k->found[k->nfound] = off;
	memcpy(k->found_bytes + k->nfound * k->page, page, k->page);
	k->nfound++;
	return true;
}

static void *checker(void *arg)
{
	struct cq_scan_keep *k = arg;
	pthread_mutex_lock(&k->lock);
	for (;;) {
		while (!k->posted && !k->stop)
			pthread_cond_wait(&k->moved, &k->lock);
		if (k->stop)
			break;
		pthread_mutex_unlock(&k->lock);
		cq_scan_keep_window(k, k->post_at, k->post_b, k->post_len, hold_page, k);
		pthread_mutex_lock(&k->lock);
		k->posted = false;
		pthread_cond_broadcast(&k->moved);
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

void cq_scan_keep_post(struct cq_scan_keep *k, uint64_t at, const uint8_t *b, uint64_t len)
{
	if (!k || !k->armed || k->gave_up)
		return;
	if (!k->threaded && !k->ended && cq_feed_workers() > 1 &&
	    pthread_mutex_init(&k->lock, NULL) == 0) {
		if (pthread_cond_init(&k->moved, NULL) == 0) {
			k->threaded = pthread_create(&k->thread, NULL, checker, k) == 0;
			if (!k->threaded)
				pthread_cond_destroy(&k->moved);
		}
		if (!k->threaded)
			pthread_mutex_destroy(&k->lock);
	}
	if (k->threaded)
		pthread_mutex_lock(&k->lock);
	k->post_at = at;
	k->post_b = b;
	k->post_len = len;
	k->posted = true;
	if (k->threaded) {
		pthread_cond_broadcast(&k->moved);
		pthread_mutex_unlock(&k->lock);
	}
}

void cq_scan_keep_collect(struct cq_scan_keep *k,
                          bool (*put)(void *arg, uint64_t off, const uint8_t *page), void *arg)
{
	if (!k)
		return;
	if (!k->threaded) {
		if (k->posted && put)
			cq_scan_keep_window(k, k->post_at, k->post_b, k->post_len, put, arg);
		k->posted = false;
		return;
	}
	pthread_mutex_lock(&k->lock);
	while (k->posted)
		pthread_cond_wait(&k->moved, &k->lock);
	pthread_mutex_unlock(&k->lock);
	for (size_t i = 0; i < k->nfound && put && !k->gave_up; i++)
		k->gave_up = !put(arg, k->found[i], k->found_bytes + i * k->page);
	k->nfound = 0;
}

bool cq_scan_keep_covers(const struct cq_scan_keep *k, const struct cq_feed_span *spans, size_t n,
                         const struct cq_feed_words *words, size_t nwords)
{
	if (!k || !k->armed || k->gave_up || !k->ended || nwords == 0)
		return false;
	for (size_t i = 0; i < nwords; i++) {
		bool in = false;
		for (size_t h = 0; h < k->nhint && !in; h++)
			in = words[i].lo >= k->hint[h].lo && words[i].hi <= k->hint[h].hi &&
			     words[i].lo <= words[i].hi;
		if (!in)
			return false;
	}
	for (size_t i = 0; i < n; i++) {
		/* A scan counts its words from a span's start: they must be the words looked at. */
		if (spans[i].off % 8)
			return false;
		size_t r = cq_sorted_below(k->wr, k->nwr, sizeof(*k->wr), spans[i].off + 1);
		if (r == 0 || spans[i].len > k->wr[r - 1][1] - spans[i].off ||
		    spans[i].off >= k->wr[r - 1][1])
			return false;
	}
	return true;
}

size_t cq_scan_keep_pages(const struct cq_scan_keep *k, uint64_t off, uint64_t len,
                          const uint64_t **first)
{
	*first = NULL;
	if (k->npages == 0)
		return 0;
	size_t i = cq_sorted_below(k->pages, k->npages, sizeof(*k->pages), off);
	if (i > 0 && k->pages[i - 1] + k->page > off)
		i--;
	size_t j = i;
	while (j < k->npages && k->pages[j] < off + len)
		j++;
	*first = k->pages + i;
	return j - i;
}

uint64_t cq_scan_keep_bytes(const struct cq_scan_keep *k)
{
	return k ? k->npages * k->page : 0;
}

bool cq_scan_keep_armed(const struct cq_scan_keep *k)
{
	return k && k->armed;
}

bool cq_scan_keep_gave_up(const struct cq_scan_keep *k)
{
	return k && k->gave_up;
}

char *cq_scan_keep_note(const struct cq_scan_keep *k, const struct cq_feed_words *words,
                        size_t nwords)
{
	if (!k || nwords == 0 || nwords > CQ_SCAN_KEEP_MAX_RANGES)
		return NULL;
	size_t cap = 1;
	for (size_t i = 0; i < nwords; i++) {
		const struct file *lo = file_at(k, words[i].lo), *hi = file_at(k, words[i].hi);
		if (!lo || !hi || words[i].lo > words[i].hi || strcmp(lo->path, hi->path) != 0 ||
		    strchr(lo->path, '\n') || strlen(lo->path) >= 4096)
			return NULL;
		cap += 2 * 17 + strlen(lo->path) + 1;
	}
	char *out = malloc(cap), *p = out;
	for (size_t i = 0; out && i < nwords; i++) {
		const struct file *f = file_at(k, words[i].lo);
		uint64_t base = 0;
		file_base(k, f->path, &base);
		p += snprintf(p, cap - (size_t)(p - out), "%llx %llx %s\n",
		              (unsigned long long)(words[i].lo - base),
		              (unsigned long long)(words[i].hi - base), f->path);
	}
	return out;
}
