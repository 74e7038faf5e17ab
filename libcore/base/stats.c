/*
 * stats.c - named values in order (see stats.h).
 */
#include "libcore/base/stats.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/base/json.h"

static struct cq_stat *add(struct cq_stats *s, const char *key, enum cq_stat_type type)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct cq_stat *v = realloc(s->v, cap * sizeof(*v));
		if (!v) {
			s->nomem = true;
			return NULL;
		}
		s->v = v;
		s->cap = cap;
	}
	struct cq_stat *e = &s->v[s->n];
	*e = (struct cq_stat){.type = type};
	if (key && !(e->key = strdup(key))) {
		s->nomem = true;
		return NULL;
	}
	s->n++;
	return e;
}

void cq_stats_uint(struct cq_stats *s, const char *key, uint64_t v)
{
	struct cq_stat *e = add(s, key, CQ_STAT_UINT);
	if (e)
		e->u = v;
}

void cq_stats_bool(struct cq_stats *s, const char *key, bool v)
{
	struct cq_stat *e = add(s, key, CQ_STAT_BOOL);
	if (e)
		e->b = v;
}

void cq_stats_string(struct cq_stats *s, const char *key, const char *v)
{
	struct cq_stat *e = add(s, key, CQ_STAT_STRING);
	if (e && v && !(e->s = strdup(v)))
		s->nomem = true;
}

void cq_stats_hex(struct cq_stats *s, const char *key, uint64_t v)
{
	struct cq_stat *e = add(s, key, CQ_STAT_HEX);
	if (e)
		e->u = v;
}

void cq_stats_null(struct cq_stats *s, const char *key)
{
	add(s, key, CQ_STAT_NULL);
}

void cq_stats_object(struct cq_stats *s, const char *key)
{
	add(s, key, CQ_STAT_OBJECT);
}

void cq_stats_array(struct cq_stats *s, const char *key)
{
	add(s, key, CQ_STAT_ARRAY);
}

void cq_stats_end(struct cq_stats *s)
{
	add(s, NULL, CQ_STAT_END);
}

const struct cq_stat *cq_stats_find(const struct cq_stats *s, const char *key)
{
	unsigned depth = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct cq_stat *e = &s->v[i];
		if (depth == 0 && e->key && strcmp(e->key, key) == 0)
			return e;
		if (e->type == CQ_STAT_OBJECT || e->type == CQ_STAT_ARRAY)
			depth++;
		else if (e->type == CQ_STAT_END && depth)
			depth--;
	}
	return NULL;
}

void cq_stats_json(const struct cq_stats *s, struct cq_json *j)
{
	/*
	 * Which open levels are lists; an unmatched END never closes the caller's
	 * object, and levels left open are closed at the end.
	 */
	enum { MAX_DEPTH = 64 };
	bool is_list[MAX_DEPTH];
	unsigned depth = 0, skipped = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct cq_stat *e = &s->v[i];
		if (skipped) { /* inside a level too deep to show */
			skipped += e->type == CQ_STAT_OBJECT || e->type == CQ_STAT_ARRAY;
			skipped -= e->type == CQ_STAT_END;
			continue;
		}
		if (e->type == CQ_STAT_END) {
			if (!depth)
				continue;
			if (is_list[--depth])
				cq_json_array_end(j);
			else
				cq_json_object_end(j);
			continue;
		}
		if ((e->type == CQ_STAT_OBJECT || e->type == CQ_STAT_ARRAY) && depth == MAX_DEPTH) {
			skipped = 1; /* too deep: left out with all it holds */
			continue;
		}
		if (e->key)
			cq_json_key(j, e->key);
		switch (e->type) {
		case CQ_STAT_UINT:
			cq_json_uint(j, e->u);
			break;
		case CQ_STAT_BOOL:
			cq_json_bool(j, e->b);
			break;
		case CQ_STAT_STRING:
			cq_json_string(j, e->s);
			break;
		case CQ_STAT_HEX:
			cq_json_hex(j, e->u);
			break;
		case CQ_STAT_NULL:
			cq_json_null(j);
			break;
		case CQ_STAT_OBJECT:
			cq_json_object_begin(j);
			is_list[depth++] = false;
			break;
		case CQ_STAT_ARRAY:
			cq_json_array_begin(j);
			is_list[depth++] = true;
			break;
		case CQ_STAT_END:
			break;
		}
	}
	while (depth)
		if (is_list[--depth])
			cq_json_array_end(j);
		else
			cq_json_object_end(j);
}

void cq_stats_free(struct cq_stats *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].key);
		free(s->v[i].s);
	}
	free(s->v);
	*s = (struct cq_stats){0};
}
