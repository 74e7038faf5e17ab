/*
 * flame.c - `coreq flame`: a flame graph of a core's threads, or of the
 * stored stacks of a crash bucket across cores, as one self-contained
 * interactive SVG (no network, no external script): each frame a box as
 * wide as the threads that pass through it, the outermost frame at the
 * bottom; hovering a box shows its frame and thread count, clicking zooms
 * into it (click the root to zoom out).  Suspended async chains form a
 * tower of their own beside the threads.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/pipeline/analyse.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/base/hash.h"
#include "libcore/base/output_file.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/store/store.h"
#include "libcore/store/store_query.h"

#define WIDTH     1200.0
#define ROW       16
#define MAX_DEPTH 512
#define MAX_NODES 1000000

/*
 * One stack to draw: its frame names outermost first (owned), under an
 * optional top box ("[suspended]"), seen count times.
 */
struct path {
	const char *top;
	char **names;
	size_t n;
	uint64_t count;
};

struct paths {
	struct path *v;
	size_t n, cap;
	bool full; /* out of memory: some stacks are missing */
};

/* One box: a frame reached by one path from the root; its name is borrowed from a path. */
struct node {
	const char *name;
	uint64_t count;
	size_t first_child, last_child, next_sibling; /* indices, 0 = none (0 is the root) */
	unsigned depth;
};

struct tree {
	struct node *v;
	size_t n, cap;
	unsigned depth;
	bool full;
};

/* Takes names[0..n) (outermost first, n <= MAX_DEPTH, owned from now on) as one path. */
static void add_path(struct paths *ps, const char *top, char **names, size_t n, uint64_t count)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 1024;
		struct path *v = realloc(ps->v, cap * sizeof(*v));
		if (!v) {
			for (size_t i = 0; i < n; i++)
				free(names[i]);
			free(names);
			ps->full = true;
			return;
		}
		ps->v = v;
		ps->cap = cap;
	}
	ps->v[ps->n++] = (struct path){.top = top, .names = names, .n = n, .count = count};
}

static void paths_free(struct paths *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		for (size_t k = 0; k < ps->v[i].n; k++)
			free(ps->v[i].names[k]);
		free(ps->v[i].names);
	}
	free(ps->v);
}

/* Paths in the order of their boxes: top, then names one by one, a prefix first. */
static int compare_paths(const void *pa, const void *pb)
{
	const struct path *a = pa, *b = pb;
	if (a->top != b->top) {
		if (!a->top || !b->top)
			return a->top ? 1 : -1;
		int c = strcmp(a->top, b->top);
		if (c)
			return c;
	}
	for (size_t i = 0; i < a->n && i < b->n; i++) {
		int c = strcmp(a->names[i], b->names[i]);
		if (c)
			return c;
	}
	return a->n < b->n ? -1 : a->n > b->n;
}

/*
 * The child of parent called name.  Paths arrive sorted, so a child that
 * exists is the one added last: each step is one comparison, however many
 * siblings there are.
 */
static size_t child(struct tree *t, size_t parent, const char *name)
{
	size_t last = t->v[parent].last_child;
	if (last && strcmp(t->v[last].name, name) == 0)
		return last;
	if (t->n == MAX_NODES) {
		t->full = true;
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap * 2;
		struct node *v = realloc(t->v, cap * sizeof(*v));
		if (!v) {
			t->full = true;
			return 0;
		}
		t->v = v;
		t->cap = cap;
	}
	size_t k = t->n++;
	t->v[k] = (struct node){.name = name, .depth = t->v[parent].depth + 1};
	if (last)
		t->v[last].next_sibling = k;
	else
		t->v[parent].first_child = k;
	t->v[parent].last_child = k;
	if (t->v[k].depth > t->depth)
		t->depth = t->v[k].depth;
	return k;
}

/* The boxes of every path: sorted first, so that building the tree is linear. */
static void build_tree(struct tree *t, struct paths *ps)
{
	if (ps->n > 1)
		qsort(ps->v, ps->n, sizeof(*ps->v), compare_paths);
	for (size_t i = 0; i < ps->n && !t->full; i++) {
		const struct path *p = &ps->v[i];
		size_t at = 0;
		t->v[0].count += p->count;
		if (p->top) {
			if (!(at = child(t, at, p->top)))
				continue;
			t->v[at].count += p->count;
		}
		for (size_t k = 0; k < p->n; k++) {
			size_t c = child(t, at, p->names[k]);
			if (!c)
				break;
			t->v[c].count += p->count;
			at = c;
		}
	}
}

static void frame_name(const struct cq_stack_frame *f, char *buf, size_t size)
{
	if (f->function)
		snprintf(buf, size, "%s%s", f->function,
		         f->kind == CQ_FRAME_INLINE  ? " [inline]"
		         : f->kind == CQ_FRAME_ASYNC ? " [async]"
		                                     : "");
	else if (f->module)
		snprintf(buf, size, "%s+0x%llx", cq_module_basename(f->module),
		         (unsigned long long)f->offset);
	else
		snprintf(buf, size, "0x%llx", (unsigned long long)f->pc);
}

/* Room for the names of a stack of n frames, at most MAX_DEPTH of them (the outermost). */
static char **names_for(struct paths *ps, size_t n)
{
	char **names = calloc(n ? (n < MAX_DEPTH ? n : MAX_DEPTH) : 1, sizeof(*names));
	if (!names)
		ps->full = true;
	return names;
}

/* Adds frames[0..n) (innermost first) as a path, count times. */
static void add_frames(struct paths *ps, const char *top, const struct cq_stack_frame *frames,
                       size_t n, uint64_t count)
{
	char **names = names_for(ps, n);
	if (!names)
		return;
	size_t k = 0;
	for (size_t i = n; i-- > 0 && k < MAX_DEPTH;) {
		char buf[512];
		frame_name(&frames[i], buf, sizeof(buf));
		if (!(names[k] = strdup(buf)))
			break;
		k++;
	}
	add_path(ps, top, names, k, count);
}

static void add_stored(void *ctx, const struct cq_store_stack_row *s)
{
	struct paths *ps = ctx;
	char **names = names_for(ps, s->nframes);
	if (!names)
		return;
	size_t k = 0;
	for (size_t i = s->nframes; i-- > 0 && k < MAX_DEPTH;) {
		const struct cq_store_frame_row *f = &s->frames[i];
		char buf[512];
		if (f->function)
			snprintf(buf, sizeof(buf), "%s%s", f->function,
			         cq_store_text_is(f->kind, "inline")  ? " [inline]"
			         : cq_store_text_is(f->kind, "async") ? " [async]"
			                                              : "");
		else
			snprintf(buf, sizeof(buf), "%s+0x%llx", f->module ? f->module : "",
			         (unsigned long long)f->offset);
		if (!(names[k] = strdup(buf)))
			break;
		k++;
	}
	if (s->threads && s->suspended) { /* both towers: the second path gets its own copy */
		char **again = names_for(ps, k);
		size_t j = 0;
		for (; again && j < k && (again[j] = strdup(names[j])); j++)
			;
		if (again)
			add_path(ps, "[suspended]", again, j, (uint64_t)s->suspended);
	}
	if (s->threads || s->suspended) {
		add_path(ps, s->threads ? NULL : "[suspended]", names, k,
		         (uint64_t)(s->threads ? s->threads : s->suspended));
		return;
	}
	for (size_t i = 0; i < k; i++)
		free(names[i]);
	free(names);
}

/*
 * Text as XML character data.  Bytes a text line would escape (controls,
 * invalid UTF-8, UTF-16 surrogates) are shown as \xNN by cmd_safe; of what
 * remains, U+FFFE and U+FFFF are valid UTF-8 but not XML characters (a
 * browser then shows an error instead of the graph), so they are shown the
 * same way.
 */
static void put_xml(FILE *out, const char *s)
{
	for (const char *p = cmd_safe(s); *p; p++) {
		const unsigned char *u = (const unsigned char *)p;
		if (u[0] == 0xef && u[1] == 0xbf && (u[2] == 0xbe || u[2] == 0xbf)) {
			fprintf(out, "\\xef\\xbf\\x%02x", u[2]);
			p += 2;
			continue;
		}
		switch (*p) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*p, out);
		}
	}
}

/* A warm colour from the name, so a function keeps its colour across graphs. */
static void colour(const char *name, char buf[16])
{
	uint64_t h = cq_fnv1a(CQ_FNV_OFFSET, name, strlen(name));
	snprintf(buf, 16, "#%02x%02x%02x", 205 + (unsigned)(h % 50),
	         80 + (unsigned)((h >> 8) % 150), 40 + (unsigned)((h >> 16) % 40));
}

static void put_node(FILE *out, const struct tree *t, size_t k, double x, double total,
                     unsigned height)
{
	const struct node *nd = &t->v[k];
	double w = WIDTH * (double)nd->count / total;
	double y = (double)(height - (nd->depth + 1) * ROW);
	char fill[16];
	colour(nd->name, fill);
	fprintf(out, "<g class=\"f\" data-x=\"%.4f\" data-w=\"%.4f\"><title>", x, w);
	put_xml(out, nd->name);
	fprintf(out,
	        " (%llu thread%s)</title><rect x=\"%.4f\" y=\"%.1f\" width=\"%.4f\" height=\"%d\" "
	        "fill=\"%s\" rx=\"2\"/><text x=\"%.4f\" y=\"%.1f\">",
	        (unsigned long long)nd->count, nd->count == 1 ? "" : "s", x, y, w, ROW - 1, fill,
	        x + 3, y + ROW - 4);
	fputs("</text></g>\n", out);
	double cx = x;
	for (size_t c = nd->first_child; c; c = t->v[c].next_sibling) {
		put_node(out, t, c, cx, total, height);
		cx += WIDTH * (double)t->v[c].count / total;
	}
}

static const char script[] =
    "<script><![CDATA[\n"
    "var W="
    "1200"
    ",boxes=[].slice.call(document.querySelectorAll('g.f'));\n"
    "function label(g,w){var t=g.querySelector('title').textContent,x=g.querySelector('text');\n"
    " var n=Math.floor((w-6)/7);x.textContent=n<3?'':(t.length<=n?t:t.slice(0,n-2)+'..');}\n"
    "function zoom(x0,w0){boxes.forEach(function(g){var x=+g.dataset.x,w=+g.dataset.w;\n"
    " var nx=(x-x0)*W/w0,nw=w*W/w0,r=g.querySelector('rect'),tx=g.querySelector('text');\n"
    " var vis=x+w>x0+1e-6&&x<x0+w0-1e-6;g.style.display=vis?'':'none';\n"
    " r.setAttribute('x',nx);r.setAttribute('width',nw);tx.setAttribute('x',nx+3);label(g,nw);});}"
    "\n"
    "boxes.forEach(function(g){label(g,+g.dataset.w);\n"
    " g.addEventListener('click',function(){zoom(+g.dataset.x,+g.dataset.w);});\n"
    " g.addEventListener('mouseover',function(){document.getElementById('details').textContent=\n"
    "  g.querySelector('title').textContent;});});\n"
    "]]></script>\n";

static void write_svg(FILE *out, const struct tree *t, const char *title)
{
	unsigned height = (t->depth + 1) * ROW + 40;
	fprintf(out,
	        "<?xml version=\"1.0\" standalone=\"yes\"?>\n"
	        "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	        "height=\"%u\" viewBox=\"0 0 %d %u\">\n"
	        "<style>text{font:11px monospace;fill:#000;pointer-events:none}"
	        "g.f:hover rect{stroke:#000;stroke-width:0.5}g.f{cursor:pointer}</style>\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"#fdf8ee\"/>\n"
	        "<text x=\"6\" y=\"14\" style=\"font:13px sans-serif\">",
	        (int)WIDTH, height, (int)WIDTH, height);
	put_xml(out, title);
	fprintf(out, "</text>\n<text id=\"details\" x=\"6\" y=\"30\" "
	             "style=\"font:11px sans-serif\"> </text>\n");
	put_node(out, t, 0, 0.0, t->v[0].count ? (double)t->v[0].count : 1.0, height);
	fputs(script, out);
	fputs("</svg>\n", out);
}

/*
 * Writes the graph to path ("-": standard output): a fresh file beside
 * path renamed over it, never written through a link or into another
 * file's mode (libcore/base/output_file.h).
 */
static int put_svg(const char *path, const struct tree *t, const char *title)
{
	if (strcmp(path, "-") == 0) {
		write_svg(stdout, t, title);
		return fflush(stdout) == 0 ? EXIT_OK
		                           : cmd_fail(path, cq_error_errno(errno, "cannot write"));
	}
	struct cq_output_file f;
	struct cq_error *err = cq_output_file_create(path, 0666, &f);
	if (err)
		return cmd_fail(path, err);
	FILE *out = fdopen(f.fd, "w");
	if (!out) {
		err = cq_error_errno(errno, "cannot write");
		cq_output_file_discard(&f);
		return cmd_fail(path, err);
	}
	f.fd = -1; /* the stream's now */
	write_svg(out, t, title);
	bool bad = ferror(out) != 0;
	if (fclose(out) != 0 || bad) {
		err = cq_error_errno(errno ? errno : EIO, "cannot write");
		cq_output_file_discard(&f);
		return cmd_fail(path, err);
	}
	err = cq_output_file_commit(&f);
	return err ? cmd_fail(path, err) : EXIT_OK;
}

/* Every stack of the core at path (threads, then suspended chains) into ps; the graph's title. */
static struct cq_error *add_core(const char *path, const struct cmd_core_opts *o, struct paths *ps,
                                 char *title, size_t cap)
{
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct cmd_cache_choice cache = {.use = true};
	struct cq_analysis a;
	struct cq_error *err = cmd_analyse(path, o, &so, &cache, false, &a);
	if (!err) {
		const struct cq_stacks *stacks = a.stacks;
		snprintf(title, cap, "coreq flame: %s (%zu threads, %zu suspended chains)", path,
		         stacks->nthreads, stacks->nsuspended);
		for (size_t i = 0; i < stacks->nthreads; i++)
			add_frames(ps, NULL, stacks->threads[i].frames, stacks->threads[i].nframes,
			           1);
		for (size_t i = 0; i < stacks->nsuspended; i++)
			add_frames(ps, "[suspended]", stacks->suspended[i].frames,
			           stacks->suspended[i].nframes, 1);
	}
	cmd_analysis_free(&a);
	return err;
}

struct flame_args {
	struct cmd_core_opts o;
	const char *db, *bucket, *out;
};

static int bucket_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	if (!cq_store_bucket_key_valid(arg))
		return cmd_usage_error(cmd, "--bucket takes a bucket's hash or id, not '%s'", arg);
	*(const char **)field = arg;
	return CMD_OPTS_GO_ON;
}

#define FIELD(f) offsetof(struct flame_args, f)

static const struct cmd_opt flame_options[] = {
    {"output", 'o', CMD_OPT_STRING, FIELD(out), "FILE",
     "the SVG to write (- for standard output): a fresh file renamed over FILE; a link, FIFO "
     "or device there is refused",
     0, 0, NULL, NULL},
    {"bucket", 0, CMD_OPT_CALL, FIELD(bucket), "ID", "the bucket's stored stacks (its hash or id)",
     0, 0, bucket_option, NULL},
    CMD_ROW_DB(struct flame_args, db),
    CMD_ROWS_CORE_FILES(struct flame_args, o),
    {"format", 0, CMD_OPT_FORMAT, FIELD(o.format), "text|json",
     "taken as by the other commands that read a core; the output is always SVG", 0, 0, NULL, NULL},
    CMD_OPT_END,
};

static const struct cmd_spec flame_spec = {
    .name = "flame",
    .forms = "[OPTIONS] CORE -o FILE\n--bucket ID [--db P] -o FILE",
    .about = "Write a flame graph as a self-contained interactive SVG: every thread of\n"
             "CORE, or the stored stacks of the cores in crash bucket ID (merged across\n"
             "cores), each frame a box as wide as the threads that pass through it,\n"
             "outermost frames at the bottom, suspended async chains as a tower of their\n"
             "own.  Open it in a browser: hover shows a frame and its thread count,\n"
             "click zooms in, click the root zooms out.\n",
    .opt = flame_options,
};

/* The stored stacks of the bucket, into ps; the exit status when the database would not open. */
static struct cq_error *add_bucket(const struct flame_args *a, struct paths *ps, char *title,
                                   size_t cap, int *rc)
{
	snprintf(title, cap, "coreq flame: the stored stacks of bucket %s", a->bucket);
	struct cq_store *store;
	if ((*rc = cmd_open_store_query(a->db, &store)) != EXIT_OK)
		return NULL;
	struct cq_store_stack_filter f = {.bucket = a->bucket};
	struct cq_error *err = cq_store_each_stack(store, &f, add_stored, ps);
	cq_store_close(store);
	return err;
}

/* The graph of ps under title, written to out; the exit status. */
static int draw(const char *out, const char *what, const char *title, struct paths *ps)
{
	struct cq_error *err = NULL;
	struct tree t = {.cap = 1024, .full = ps->full};
	if (!(t.v = calloc(t.cap, sizeof(*t.v))))
		err = &cq_error_nomem;
	if (!err) {
		t.v[0].name = "all";
		t.n = 1;
		build_tree(&t, ps);
	}
	int rc = EXIT_OK;
	if (err) {
		rc = cmd_fail(what, err);
	} else if (t.v[0].count == 0) {
		fprintf(stderr, "coreq: %s: no stacks to draw\n", cmd_safe(what));
		rc = EXIT_INPUT;
	} else {
		rc = put_svg(out, &t, title);
		if (t.full)
			fprintf(stderr, "coreq: %s: warning: the graph was cut at %d frames\n",
			        cmd_safe(what), MAX_NODES);
	}
	free(t.v);
	return rc;
}

int cmd_flame(int argc, char **argv)
{
	struct flame_args a = {.db = NULL};
	cmd_core_opts_init(&a.o);
	int rc = cmd_opts_parse(&flame_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (!a.out)
		return cmd_usage_error("flame", "-o FILE is required (- for standard output)");
	if (!a.bucket && optind + 1 != argc)
		return cmd_usage_error("flame", "expected a CORE, or --bucket ID");
	if (a.bucket && optind != argc)
		return cmd_usage_error("flame", "a CORE and --bucket do not go together");
	struct paths ps = {0};
	char title[512];
	const char *what = a.bucket ? a.bucket : argv[optind];
	rc = EXIT_OK;
	struct cq_error *err = a.bucket ? add_bucket(&a, &ps, title, sizeof(title), &rc)
	                                : add_core(what, &a.o, &ps, title, sizeof(title));
	if (rc == EXIT_OK)
		rc = err ? cmd_fail(what, err) : draw(a.out, what, title, &ps);
	paths_free(&ps);
	return rc;
}
