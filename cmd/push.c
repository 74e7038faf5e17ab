/*
 * push.c - `coreq push --clickhouse URL`: ship the crash records that are
 * new since the last push to ClickHouse over its HTTP interface (libcurl),
 * the same NDJSON `coreq export` writes, in batches of cores.
 *
 * Per batch: the records of the next N cores after the cursor are exported
 * into memory and POSTed as `INSERT INTO coreq.<table> FORMAT JSONEachRow`,
 * stacks and buckets first and the cores last; only when every POST of the
 * batch succeeded is the cursor (the highest local core id shipped) written,
 * atomically.  A failed POST is retried with exponential backoff; if it still
 * fails the push stops with the cursor where it was, so nothing is lost, and
 * the next push sends that batch again, which the tables' natural keys
 * (ReplacingMergeTree) make harmless.
 */
#include "cmd/cmd.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libcore/base/dynlib.h"
#include "libcore/base/output_file.h"
#include "libcore/base/regular_file.h"
#include "libcore/base/write_all.h"
#include "libcore/store/export.h"
#include "libcore/store/store.h"

static const char push_usage[] =
    "Usage: coreq push --clickhouse URL [--db P] [--cursor FILE] [--batch N]\n"
    "                  [--max-batches N] [--retries N] [--timeout S] [--host NAME]\n"
    "\n"
    "Send the crash records stored since the last push to ClickHouse's HTTP\n"
    "interface (e.g. http://127.0.0.1:8123), into the tables of\n"
    "schema/clickhouse/ (database coreq), in batches of cores.  The cursor file\n"
    "(default: the database's path + .push-cursor) holds the last core shipped\n"
    "and moves only after a whole batch is in, so a push that fails loses\n"
    "nothing: the next one resends from there, and re-sent rows replace\n"
    "themselves.  Failed requests are retried with exponential backoff.\n"
    "Prints what was sent; exit 1 when the server could not take it.\n"
    "\n"
    "  --clickhouse URL   the server's HTTP endpoint (required)\n"
    "  --db P             database (default $COREQ_DB, else db in\n"
    "                     /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                     coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --cursor FILE      where the cursor is kept\n"
    "  --batch N          cores per batch (default 1000)\n"
    "  --max-batches N    stop after N batches (default: until all is sent)\n"
    "  --retries N        attempts per request (default 5; waits 1, 2, 4... s)\n"
    "  --timeout S        per request (default 60)\n"
    "  --host NAME        host name for cores that do not record theirs\n"
    "  --format text|json output format (default text)\n"
    "  --help             show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_CLICKHOUSE,
	OPT_CURSOR,
	OPT_BATCH,
	OPT_MAX_BATCHES,
	OPT_RETRIES,
	OPT_TIMEOUT,
	OPT_HOST,
};

/* libcurl, loaded when coreq push runs (libcore/base/dynlib.h). */
static struct {
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	char *(*easy_escape)(CURL *, const char *, int);
	void (*free)(void *);
} curl;

static struct cq_error *load_curl(void)
{
	const struct cq_dynlib_sym syms[] = {
	    {"curl_global_init", (void **)&curl.global_init},
	    {"curl_global_cleanup", (void **)&curl.global_cleanup},
	    {"curl_easy_init", (void **)&curl.easy_init},
	    {"curl_easy_cleanup", (void **)&curl.easy_cleanup},
	    {"curl_easy_setopt", (void **)&curl.easy_setopt},
	    {"curl_easy_perform", (void **)&curl.easy_perform},
	    {"curl_easy_getinfo", (void **)&curl.easy_getinfo},
	    {"curl_easy_strerror", (void **)&curl.easy_strerror},
	    {"curl_easy_escape", (void **)&curl.easy_escape},
	    {"curl_free", (void **)&curl.free},
	};
	return cq_dynlib_load("libcurl.so.4", syms, sizeof(syms) / sizeof(syms[0]));
}

struct push {
	const char *url, *cursor_path;
	unsigned batch, max_batches, retries, timeout;
	CURL *curl;
	char error[CURL_ERROR_SIZE];
};

static const struct {
	unsigned type;
	const char *table;
} order[] = {
    {CQ_EXPORT_STACKS, "stacks"},
    {CQ_EXPORT_BUCKETS, "buckets"},
    {CQ_EXPORT_THREADS, "threads"},
    {CQ_EXPORT_CORES, "cores"},
};

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* POSTs body into table; NULL when the server said 200. */
static struct cq_error *post(struct push *p, const char *table, const char *body, size_t len)
{
	char *query = NULL, *url = NULL;
	char *escaped = NULL;
	if (asprintf(&query, "INSERT INTO coreq.%s FORMAT JSONEachRow", table) < 0 ||
	    !(escaped = curl.easy_escape(p->curl, query, 0)) ||
	    asprintf(&url, "%s%s?input_format_skip_unknown_fields=1&query=%s", p->url,
	             p->url[strlen(p->url) - 1] == '/' ? "" : "/", escaped) < 0) {
		free(query);
		curl.free(escaped);
		return &cq_error_nomem;
	}
	free(query);
	curl.free(escaped);
	struct cq_error *err = NULL;
	for (unsigned attempt = 0; attempt < p->retries; attempt++) {
		if (attempt)
			sleep(1u << (attempt - 1 < 5 ? attempt - 1 : 5));
		curl.easy_setopt(p->curl, CURLOPT_URL, url);
		curl.easy_setopt(p->curl, CURLOPT_POSTFIELDS, body);
		curl.easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		CURLcode rc = curl.easy_perform(p->curl);
		long status = 0;
		curl.easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
		cq_error_free(err);
		err = NULL;
		if (rc == CURLE_OK && status == 200)
			break;
		err = rc != CURLE_OK
		          ? cq_error_create(CQ_ERR_IO, "%s: %s", table,
		                            p->error[0] ? p->error : curl.easy_strerror(rc))
		          : cq_error_create(CQ_ERR_IO, "%s: the server answered HTTP %ld", table,
		                            status);
	}
	free(url);
	return err;
}

static int64_t read_cursor(const char *path)
{
	int fd = cq_open_regular(path); /* a FIFO there would block */
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f && fd >= 0)
		close(fd);
	long long v = 0;
	if (f) {
		if (fscanf(f, "%lld", &v) != 1 || v < 0)
			v = 0;
		fclose(f);
	}
	return v;
}

/* The cursor replaced whole: a fresh file renamed over it (output_file.h), never a link's target.
 */
static struct cq_error *write_cursor(const char *path, int64_t id)
{
	struct cq_output_file f;
	struct cq_error *err = cq_output_file_create(path, 0666, &f);
	if (err)
		return cq_error_prefix(err, "cannot write the cursor %s", path);
	char line[32];
	int n = snprintf(line, sizeof(line), "%lld\n", (long long)id);
	if (!cq_write_all(f.fd, line, (size_t)n, -1) || fsync(f.fd) != 0) {
		err = cq_error_errno(errno, "cannot write the cursor %s", path);
		cq_output_file_discard(&f);
		return err;
	}
	err = cq_output_file_commit(&f);
	return err ? cq_error_prefix(err, "cannot replace the cursor %s", path) : NULL;
}

/* Ships one batch after *cursor; *sent 0 when there was nothing left. */
static struct cq_error *push_batch(struct push *p, struct cq_store *store,
                                   struct cq_export_options *o, int64_t *cursor,
                                   struct cq_export_result *sent)
{
	memset(sent, 0, sizeof(*sent));
	o->after_id = *cursor;
	o->limit = 0;
	struct cq_error *err = cq_store_export_window(store, *cursor, p->batch, &o->until_id);
	if (err || o->until_id == *cursor)
		return err; /* nothing new */
	int64_t last = *cursor;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && !err; i++) {
		char *body = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&body, &len);
		if (!mem)
			return &cq_error_nomem;
		struct cq_export_result r;
		o->types = order[i].type;
		err = cq_store_export(store, o, mem, &r);
		fclose(mem);
		last = r.last_id;
		if (!err && len)
			err = post(p, order[i].table, body, len);
		free(body);
		sent->cores += r.cores;
		sent->threads += r.threads;
		sent->stacks += r.stacks;
		sent->buckets += r.buckets;
	}
	if (!err && last > *cursor && !(err = write_cursor(p->cursor_path, last)))
		*cursor = last;
	return err;
}

int cmd_push(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"clickhouse", required_argument, NULL, OPT_CLICKHOUSE},
	    {"cursor", required_argument, NULL, OPT_CURSOR},
	    {"batch", required_argument, NULL, OPT_BATCH},
	    {"max-batches", required_argument, NULL, OPT_MAX_BATCHES},
	    {"retries", required_argument, NULL, OPT_RETRIES},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"host", required_argument, NULL, OPT_HOST},
	    {NULL, 0, NULL, 0},
	};
	struct push p = {.batch = 1000, .retries = 5, .timeout = 60};
	const char *db = NULL, *host = NULL;
	enum cmd_format format = CMD_FORMAT_TEXT;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		unsigned *count = opt == OPT_BATCH         ? &p.batch
		                  : opt == OPT_MAX_BATCHES ? &p.max_batches
		                  : opt == OPT_RETRIES     ? &p.retries
		                  : opt == OPT_TIMEOUT     ? &p.timeout
		                                           : NULL;
		if (count) {
			const char *name = opt == OPT_BATCH         ? "--batch"
			                   : opt == OPT_MAX_BATCHES ? "--max-batches"
			                   : opt == OPT_RETRIES     ? "--retries"
			                                            : "--timeout";
			if (!cmd_parse_count(optarg, 1, 1000000, count, "push", name))
				return EXIT_USAGE;
			continue;
		}
		switch (opt) {
		case 'h':
		case OPT_HELP:
			fputs(push_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &format, "push"))
				return EXIT_USAGE;
			break;
		case OPT_DB:
			db = optarg;
			break;
		case OPT_CLICKHOUSE:
			p.url = optarg;
			break;
		case OPT_CURSOR:
			p.cursor_path = optarg;
			break;
		case OPT_HOST:
			host = optarg;
			break;
		default:
			return cmd_option_error("push", opt, argv);
		}
	}
	if (optind != argc)
		return cmd_usage_error("push", "unexpected argument '%s'", argv[optind]);
	if (!p.url || !*p.url)
		return cmd_usage_error("push", "--clickhouse URL is required");
	char *def = db ? NULL : cq_store_default_path();
	const char *dbpath = db ? db : def;
	char *cursor_default = NULL;
	if (!p.cursor_path && dbpath && asprintf(&cursor_default, "%s.push-cursor", dbpath) >= 0)
		p.cursor_path = cursor_default;
	struct cq_store *store = NULL;
	int rc = dbpath ? cmd_open_store_query(dbpath, &store) : EXIT_INPUT;
	if (!dbpath)
		fprintf(stderr, "coreq: no database path: use --db or set COREQ_DB\n");
	if (rc != EXIT_OK || !p.cursor_path) {
		free(def);
		free(cursor_default);
		return rc != EXIT_OK ? rc : EXIT_INPUT;
	}
	struct cq_error *err = load_curl();
	if (err) {
		cq_store_close(store);
		free(def);
		free(cursor_default);
		return cmd_fail(p.url, err);
	}
	curl.global_init(CURL_GLOBAL_DEFAULT);
	p.curl = curl.easy_init();
	err = p.curl ? NULL : &cq_error_nomem;
	if (p.curl) {
		curl.easy_setopt(p.curl, CURLOPT_ERRORBUFFER, p.error);
		curl.easy_setopt(p.curl, CURLOPT_TIMEOUT, (long)p.timeout);
		curl.easy_setopt(p.curl, CURLOPT_WRITEFUNCTION, discard);
		curl.easy_setopt(p.curl, CURLOPT_NOSIGNAL, 1L);
	}
	char hostname[256] = "";
	if (!host && gethostname(hostname, sizeof(hostname)) == 0)
		host = hostname;
	struct cq_export_options o = {.host = host};
	int64_t cursor = read_cursor(p.cursor_path), start = cursor;
	struct cq_export_result total = {0}, sent;
	unsigned batches = 0;
	while (!err && (!p.max_batches || batches < p.max_batches)) {
		err = push_batch(&p, store, &o, &cursor, &sent);
		total.cores += sent.cores;
		total.threads += sent.threads;
		total.stacks += sent.stacks;
		total.buckets += sent.buckets;
		if (!sent.cores)
			break;
		batches++;
	}
	if (p.curl)
		curl.easy_cleanup(p.curl);
	curl.global_cleanup();
	cq_store_close(store);
	if (format == CMD_FORMAT_JSON) {
		printf("{\"cores\":%lld,\"threads\":%lld,\"stacks\":%lld,\"buckets\":%lld,"
		       "\"cursor_before\":%lld,\"cursor\":%lld,\"complete\":%s}\n",
		       (long long)total.cores, (long long)total.threads, (long long)total.stacks,
		       (long long)total.buckets, (long long)start, (long long)cursor,
		       err ? "false" : "true");
	} else {
		printf("pushed %lld cores (%lld threads, %lld stacks, %lld buckets) to %s; cursor "
		       "%lld\n",
		       (long long)total.cores, (long long)total.threads, (long long)total.stacks,
		       (long long)total.buckets, p.url, (long long)cursor);
	}
	rc = err ? cmd_fail(p.url, err) : EXIT_OK;
	free(def);
	free(cursor_default);
	return rc;
}
