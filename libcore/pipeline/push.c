/*
 * push.c - batches of export records to a fleet store, with the cursor
 * file and retries (see push.h).
 */
#include "libcore/pipeline/push.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/curl_api.h"
#include "libcore/base/output_file.h"
#include "libcore/base/parse.h"
#include "libcore/base/regular_file.h"
#include "libcore/base/write_all.h"
#include "libcore/store/export.h"

/* The tables of one batch, in the order they are sent. */
static const struct {
	unsigned type;
	const char *table;
} batch_order[] = {
    {CQ_EXPORT_STACKS, "stacks"}, {CQ_EXPORT_BUCKETS, "buckets"}, {CQ_EXPORT_THREADS, "threads"},
    {CQ_EXPORT_WAITS, "waits"},   {CQ_EXPORT_CORES, "cores"},
};

/* A cursor file is one id and a newline: more than this is not one. */
#define CURSOR_FILE_MAX 32

struct cq_error *cq_push_cursor_read(const char *path, int64_t *cursor)
{
	*cursor = 0;
	int fd = cq_open_regular(path); /* a FIFO there would block; a device is no cursor */
	if (fd < 0) {
		if (errno == ENOENT)
			return NULL; /* nothing pushed yet */
		return cq_error_errno(errno, "cannot read the cursor %s", path);
	}
	char buf[CURSOR_FILE_MAX + 1];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(buf) - 1 &&
	       ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	int read_errno = n < 0 ? errno : 0;
	close(fd);
	if (read_errno)
		return cq_error_errno(read_errno, "cannot read the cursor %s", path);
	buf[len] = '\0';
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	uint64_t v;
	if (len == sizeof(buf) - 1 || cq_parse_u64(buf, false, &v) != CQ_PARSE_OK ||
	    v > (uint64_t)INT64_MAX)
		return cq_error_create(CQ_ERR_FORMAT,
		                       "the cursor %s does not hold a core id (remove it to push "
		                       "every core again)",
		                       path);
	*cursor = (int64_t)v;
	return NULL;
}

struct cq_error *cq_push_cursor_write(const char *path, int64_t cursor)
{
	/* Replaced whole: a fresh file renamed over it (output_file.h), never a link's target. */
	struct cq_output_file f;
	struct cq_error *err = cq_output_file_create(path, 0666, &f);
	if (err)
		return cq_error_prefix(err, "cannot write the cursor %s", path);
	char line[32];
	int n = snprintf(line, sizeof(line), "%" PRId64 "\n", cursor);
	if (!cq_write_all(f.fd, line, (size_t)n, -1) || fsync(f.fd) != 0) {
		err = cq_error_errno(errno, "cannot write the cursor %s", path);
		cq_output_file_discard(&f);
		return err;
	}
	return cq_output_file_commit(&f);
}

/* ---- the HTTP client: one libcurl handle for the whole push ---- */

struct http {
	const struct cq_curl_api *curl;
	CURL *handle;
	const char *url;
	char error[CURL_ERROR_SIZE];
};

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

static struct cq_error *http_open(struct http *h, const char *url, unsigned timeout)
{
	memset(h, 0, sizeof(*h));
	h->url = url;
	struct cq_error *err = cq_curl_api(&h->curl);
	if (err)
		return err;
	h->curl->global_init(CURL_GLOBAL_DEFAULT);
	if (!(h->handle = h->curl->easy_init())) {
		h->curl->global_cleanup();
		return &cq_error_nomem;
	}
	h->curl->easy_setopt(h->handle, CURLOPT_ERRORBUFFER, h->error);
	h->curl->easy_setopt(h->handle, CURLOPT_TIMEOUT, (long)timeout);
	h->curl->easy_setopt(h->handle, CURLOPT_WRITEFUNCTION, discard);
	h->curl->easy_setopt(h->handle, CURLOPT_NOSIGNAL, 1L);
	return NULL;
}

static void http_close(struct http *h)
{
	if (!h->curl)
		return;
	h->curl->easy_cleanup(h->handle);
	h->curl->global_cleanup();
}

/* One POST of body into table; NULL when the server said 200. */
static struct cq_error *http_send(void *arg, const char *table, const char *body, size_t len)
{
	struct http *h = arg;
	char *query = NULL, *url = NULL, *escaped = NULL;
	size_t n = strlen(h->url);
	if (asprintf(&query, "INSERT INTO coreq.%s FORMAT JSONEachRow", table) < 0)
		return &cq_error_nomem;
	escaped = h->curl->easy_escape(h->handle, query, 0);
	free(query);
	if (!escaped || asprintf(&url, "%s%s?input_format_skip_unknown_fields=1&query=%s", h->url,
	                         n && h->url[n - 1] == '/' ? "" : "/", escaped) < 0) {
		h->curl->free(escaped);
		return &cq_error_nomem;
	}
	h->curl->free(escaped);
	h->error[0] = '\0';
	h->curl->easy_setopt(h->handle, CURLOPT_URL, url);
	h->curl->easy_setopt(h->handle, CURLOPT_POSTFIELDS, body);
	h->curl->easy_setopt(h->handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	CURLcode rc = h->curl->easy_perform(h->handle);
	free(url);
	long status = 0;
	h->curl->easy_getinfo(h->handle, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK)
		return cq_error_create(CQ_ERR_IO, "%s: %s", table,
		                       h->error[0] ? h->error : h->curl->easy_strerror(rc));
	if (status != 200)
		return cq_error_create(CQ_ERR_IO, "%s: the server answered HTTP %ld", table,
		                       status);
	return NULL;
}

/* ---- batches ---- */

/* Seconds before attempt (1, 2, 4, ... 32): exponential backoff. */
static unsigned backoff_seconds(unsigned attempt)
{
	return 1u << (attempt - 1 < 5 ? attempt - 1 : 5);
}

static void wait_seconds(void *arg, unsigned seconds)
{
	(void)arg;
	sleep(seconds);
}

/* Sends body into table, with up to o->retries attempts. */
static struct cq_error *
send_with_retries(const struct cq_push_options *o,
                  struct cq_error *(*send)(void *, const char *, const char *, size_t),
                  void *send_arg, const char *table, const char *body, size_t len)
{
	struct cq_error *err = NULL;
	for (unsigned attempt = 0; attempt < o->retries; attempt++) {
		if (attempt)
			(o->wait ? o->wait : wait_seconds)(o->wait_arg, backoff_seconds(attempt));
		cq_error_free(err);
		if (!(err = send(send_arg, table, body, len)))
			break;
	}
	return err;
}

/* Ships one batch after r->cursor; *sent_cores 0 when there was nothing left. */
static struct cq_error *push_batch(struct cq_store *store, const struct cq_push_options *o,
                                   struct cq_error *(*send)(void *, const char *, const char *,
                                                            size_t),
                                   void *send_arg, struct cq_push_result *r, int64_t *sent_cores)
{
	*sent_cores = 0;
	struct cq_export_options eo = {.after_id = r->cursor, .host = o->host};
	struct cq_error *err = cq_store_export_window(store, r->cursor, o->batch, &eo.until_id);
	if (err || eo.until_id == r->cursor)
		return err; /* nothing new */
	int64_t last = r->cursor;
	for (size_t i = 0; i < sizeof(batch_order) / sizeof(batch_order[0]) && !err; i++) {
		char *body = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&body, &len);
		if (!mem)
			return &cq_error_nomem;
		struct cq_export_result er = {0};
		eo.types = batch_order[i].type;
		err = cq_store_export(store, &eo, mem, &er);
		if (fclose(mem) != 0 && !err)
			err = &cq_error_nomem;
		last = er.last_id;
		if (!err && len)
			err = send_with_retries(o, send, send_arg, batch_order[i].table, body, len);
		free(body);
		r->cores += er.cores;
		r->threads += er.threads;
		r->stacks += er.stacks;
		r->buckets += er.buckets;
		r->waits += er.waits;
		*sent_cores += er.cores;
	}
	if (!err && last > r->cursor && !(err = cq_push_cursor_write(o->cursor_path, last)))
		r->cursor = last;
	return err;
}

struct cq_error *cq_push(struct cq_store *store, const struct cq_push_options *o,
                         struct cq_push_result *r)
{
	memset(r, 0, sizeof(*r));
	struct cq_error *err = cq_push_cursor_read(o->cursor_path, &r->cursor_before);
	if (err)
		return err;
	r->cursor = r->cursor_before;
	struct http http = {0};
	struct cq_error *(*send)(void *, const char *, const char *, size_t) = o->send;
	void *send_arg = o->send_arg;
	if (!send) {
		if ((err = http_open(&http, o->url, o->timeout)))
			return err;
		send = http_send;
		send_arg = &http;
	}
	r->started = true;
	while (!err && (!o->max_batches || r->batches < o->max_batches)) {
		int64_t sent_cores;
		err = push_batch(store, o, send, send_arg, r, &sent_cores);
		if (err || !sent_cores)
			break;
		r->batches++;
	}
	http_close(&http);
	return err;
}
