/*
 * corpus_db.h - a scratch crash database holding corpus cores, put there
 * by the ingest pipeline (libcore/pipeline/ingest.h), for the tests of the
 * store's readers and rewriters; and a module's build-id as readelf
 * reads it (an oracle outside coreq).
 */
#ifndef CQ_TEST_CORPUS_DB_H
#define CQ_TEST_CORPUS_DB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/store/store.h"
#include "libcore/triage/rules.h"
#include "tests/unit/corpus.h"

struct corpus_db {
	char dir[64];
	char path[128];
	struct cq_store *store;
	struct cq_bucket_rules *rules;
	struct cq_core_options co;
	struct cq_stack_options so;
};

static inline int corpus_db_open(struct corpus_db *d, const char *what)
{
	memset(d, 0, sizeof(*d));
	if (!scratch_make(d->dir, sizeof(d->dir), what))
		return -1;
	snprintf(d->path, sizeof(d->path), "%s/t.db", d->dir);
	if (cq_store_open(d->path, &d->store) || cq_bucket_rules_load(NULL, &d->rules))
		return -1;
	cq_stack_options_default(&d->so);
	return 0;
}

static inline void corpus_db_close(struct corpus_db *d)
{
	cq_store_close(d->store);
	cq_bucket_rules_free(d->rules);
	scratch_remove(d->dir);
}

/* Ingests the core at path; its core id, 0 on error (said). */
static inline int64_t corpus_db_ingest_path(struct corpus_db *d, const char *path)
{
	struct cq_ingest_options o = {
	    .core = &d->co, .stacks = &d->so, .signature_frames = 5, .rules = d->rules};
	struct cq_ingest_result r;
	struct cq_error *err = cq_ingest_core(d->store, path, &o, &r);
	if (err) {
		fprintf(stderr, "# ingest %s: %s\n", path, err->message);
		cq_error_free(err);
		cq_ingest_result_free(&r);
		return 0;
	}
	int64_t id = r.store.core_id;
	cq_ingest_result_free(&r);
	return id;
}

/* Ingests case name (its expect file into *c); its core id, 0 when the corpus lacks it. */
static inline int64_t corpus_db_ingest(struct corpus_db *d, const char *name, struct corpus_case *c)
{
	return corpus_case(name, c) ? corpus_db_ingest_path(d, c->core) : 0;
}

/*
 * A small fleet, ingested in this order:
 *   a   abort_deep.O0   } one bucket (the same crash chain and signal,
 *   b   abort_deep.O2   } two builds: two stacks)
 *   s   segv_null.O0        SIGSEGV
 *   t   threads8.O0         9 threads, each worker parked under its own function
 *   g0  bucket-100/core-000 } site g of bucket_multi twice (expect's sites list):
 *   g4  bucket-100/core-004 } one stack, two cores
 */
struct fleet {
	struct corpus_case a, b, s, t;
	int64_t ida, idb, ids, idt, idg0, idg4;
	char g0[600], g4[600];
};

static inline bool corpus_db_fleet(struct corpus_db *d, struct fleet *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->g0, sizeof(f->g0), "%s/cores/bucket-100/core-000", corpus_root());
	snprintf(f->g4, sizeof(f->g4), "%s/cores/bucket-100/core-004", corpus_root());
	if (!corpus_case("abort_deep.O0", &f->a) || !corpus_case("abort_deep.O2", &f->b) ||
	    !corpus_case("segv_null.O0", &f->s) || !corpus_case("threads8.O0", &f->t))
		return false;
	f->ida = corpus_db_ingest_path(d, f->a.core);
	f->idb = corpus_db_ingest_path(d, f->b.core);
	f->ids = corpus_db_ingest_path(d, f->s.core);
	f->idt = corpus_db_ingest_path(d, f->t.core);
	f->idg0 = corpus_db_ingest_path(d, f->g0);
	f->idg4 = corpus_db_ingest_path(d, f->g4);
	return f->ida && f->idb && f->ids && f->idt && f->idg0 && f->idg4;
}

/* The GNU build-id of an ELF file as `readelf -n` prints it, or "" . */
static inline void readelf_build_id(const char *path, char *out, size_t cap)
{
	char cmd[700], line[512];
	out[0] = 0;
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");
		if (b) {
			b += strlen("Build ID: ");
			b[strcspn(b, " \n")] = 0;
			snprintf(out, cap, "%s", b);
		}
	}
	pclose(p);
}

/* The fixture of tests over the fleet of corpus_db_fleet, in a database named what. */
struct fleet_fixture {
	struct corpus_db d;
	struct fleet f;
	bool have; /* the corpus had the fleet's cores */
};

static inline int fleet_fixture_setup(void **state, const char *what)
{
	struct fleet_fixture *x = calloc(1, sizeof(*x));
	if (!x || corpus_db_open(&x->d, what)) {
		free(x);
		return -1;
	}
	x->have = corpus_db_fleet(&x->d, &x->f);
	*state = x;
	return 0;
}

/* The fixture of tests over one ingested corpus case. */
struct case_fixture {
	struct corpus_db d;
	struct corpus_case c;
	int64_t id;
};

static inline int case_fixture_setup(void **state, const char *what, const char *case_name)
{
	struct case_fixture *x = calloc(1, sizeof(*x));
	if (!x || corpus_db_open(&x->d, what)) {
		free(x);
		return -1;
	}
	x->id = corpus_db_ingest(&x->d, case_name, &x->c);
	*state = x;
	return 0;
}

/* Either fixture's teardown: both start with their struct corpus_db. */
static inline int corpus_fixture_teardown(void **state)
{
	struct corpus_db *d = *state;
	corpus_db_close(d);
	free(d);
	return 0;
}

/* Returns from a test when the corpus lacked the fleet's cores. */
#define NEED_FLEET(x)                                                                              \
	do {                                                                                       \
		if (!(x)->have)                                                                    \
			return;                                                                    \
	} while (0)

#endif
