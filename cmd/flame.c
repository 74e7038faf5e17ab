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

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/base/hash.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/store/store.h"
#include "libcore/store/store_query.h"

static const char flame_usage[] =
    "Usage: coreq flame CORE -o FILE [--exe P] [--sysroot D] [--debug-dir D]\n"
    "       coreq flame --bucket ID [--db P] -o FILE\n"
    "\n"
    "Write a flame graph as a self-contained interactive SVG: every thread of\n"
    "CORE, or the stored stacks of the cores in crash bucket ID (merged across\n"
    "cores), each frame a box as wide as the threads that pass through it,\n"
    "outermost frames at the bottom, suspended async chains as a tower of their\n"
    "own.  Open it in a browser: hover shows a frame and its thread count,\n"
    "click zooms in, click the root zooms out.\n"
    "\n"
    "  -o, --output FILE   the SVG to write (- for standard output)\n"
    "  --bucket ID         the bucket's stored stacks (its hash or id)\n"
    "  --db P              database for --bucket (default $COREQ_DB, else\n"
    "                      $XDG_STATE_HOME/coreq/coreq.db)\n"
    "  --exe P, --sysroot D, --debug-dir D   as for `coreq stack`\n"
    "  --help              show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_BUCKET,
};

#define WIDTH     1200.0
#define ROW       16
#define MAX_DEPTH 512
#define MAX_NODES 1000000

/* One box: a frame reached by one path from the root. */
struct node {
	char *name;
	uint64_t count;
	size_t first_child, next_sibling; /* indices, 0 = none (node 0 is the root) */
	unsigned depth;
};

struct tree {
	struct node *v;
	size_t n, cap;
	unsigned depth;
	bool full;
};

static size_t add_node(struct tree *t, size_t parent, const char *name)
{
	for (size_t c = t->v[parent].first_child; c; c = t->v[c].next_sibling)
		if (strcmp(t->v[c].name, name) == 0)
			return c;
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
	char *copy = strdup(name);
	if (!copy) {
		t->full = true;
		return 0;
	}
	size_t k = t->n++;
	t->v[k] = (struct node){.name = copy,
	                        .depth = t->v[parent].depth + 1,
	                        .next_sibling = t->v[parent].first_child};
	t->v[parent].first_child = k;
	if (t->v[k].depth > t->depth)
		t->depth = t->v[k].depth;
	return k;
}

/* Adds one stack (names outermost first) seen count times, under an optional top frame. */
static void add_path(struct tree *t, const char *top, char **names, size_t n, uint64_t count)
{
	size_t at = 0;
	t->v[0].count += count;
	if (top) {
		at = add_node(t, at, top);
		if (!at)
			return;
		t->v[at].count += count;
	}
	for (size_t i = 0; i < n && t->v[at].depth < MAX_DEPTH; i++) {
		size_t k = add_node(t, at, names[i]);
		if (!k)
			return;
		t->v[k].count += count;
		at = k;
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

/* Adds frames[0..n) (innermost first) as a path, count times. */
static void add_frames(struct tree *t, const char *top, const struct cq_stack_frame *frames,
                       size_t n, uint64_t count)
{
	char **names = calloc(n ? n : 1, sizeof(*names));
	if (!names) {
		t->full = true;
		return;
	}
	size_t k = 0;
	for (size_t i = n; i-- > 0;) {
		char buf[512];
		frame_name(&frames[i], buf, sizeof(buf));
		if (!(names[k] = strdup(buf)))
			break;
		k++;
	}
	add_path(t, top, names, k, count);
	for (size_t i = 0; i < k; i++)
		free(names[i]);
	free(names);
}

static void add_stored(void *ctx, const struct cq_store_stack_row *s)
{
	struct tree *t = ctx;
	char **names = calloc(s->nframes ? s->nframes : 1, sizeof(*names));
	if (!names) {
		t->full = true;
		return;
	}
	size_t k = 0;
	for (size_t i = s->nframes; i-- > 0;) {
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
	if (s->threads)
		add_path(t, NULL, names, k, (uint64_t)s->threads);
	if (s->suspended)
		add_path(t, "[suspended]", names, k, (uint64_t)s->suspended);
	for (size_t i = 0; i < k; i++)
		free(names[i]);
	free(names);
}

/* Text as SVG/XML character data. */
static void put_xml(FILE *out, const char *s)
{
	for (const char *p = cmd_safe(s); *p; p++) {
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

int cmd_flame(int argc, char **argv)
{
	static const struct option longopts[] = {
	    CMD_CORE_LONG_OPTIONS,
	    {"db", required_argument, NULL, OPT_DB},
	    {"bucket", required_argument, NULL, OPT_BUCKET},
	    {"output", required_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	struct cmd_core_opts o;
	cmd_core_opts_init(&o);
	const char *db = NULL, *bucket = NULL, *out_path = NULL;
	int opt;
	while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		if (opt == 'h' || opt == OPT_HELP) {
			fputs(flame_usage, stdout);
			return EXIT_OK;
		}
		int r = cmd_core_opts_handle(&o, opt, optarg, "flame");
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0)
			continue;
		if (opt == OPT_DB)
			db = optarg;
		else if (opt == OPT_BUCKET) {
			if (!cq_store_bucket_key_valid(optarg))
				return cmd_usage_error(
				    "flame", "--bucket takes a bucket's hash or id, not '%s'",
				    optarg);
			bucket = optarg;
		} else if (opt == 'o')
			out_path = optarg;
		else
			return cmd_option_error("flame", opt, argv);
	}
	if (!out_path)
		return cmd_usage_error("flame", "-o FILE is required (- for standard output)");
	if (!bucket && optind + 1 != argc)
		return cmd_usage_error("flame", "expected a CORE, or --bucket ID");
	if (bucket && optind != argc)
		return cmd_usage_error("flame", "a CORE and --bucket do not go together");
	struct tree t = {.cap = 1024};
	if (!(t.v = calloc(t.cap, sizeof(*t.v))) || !(t.v[0].name = strdup("all"))) {
		free(t.v);
		return cmd_fail("flame", &cq_error_nomem);
	}
	t.n = 1;
	char title[512];
	struct cq_error *err = NULL;
	const char *what = bucket ? bucket : argv[optind];
	if (bucket) {
		snprintf(title, sizeof(title), "coreq flame: the stored stacks of bucket %s",
		         bucket);
		struct cq_store *store;
		int rc = cmd_open_store_query(db, &store);
		if (rc != EXIT_OK) {
			free(t.v[0].name);
			free(t.v);
			return rc;
		}
		struct cq_store_stack_filter f = {.bucket = bucket};
		err = cq_store_each_stack(store, &f, add_stored, &t);
		cq_store_close(store);
	} else {
		struct cq_core *core = NULL;
		err = cmd_open_core(what, &o, &core);
		struct cq_stack_options so;
		cq_stack_options_default(&so);
		so.cache = err ? NULL : cmd_open_cache(NULL);
		so.debug_dirs = o.core.debug_dirs;
		struct cq_stacks *stacks = NULL;
		if (!err && !(err = cq_core_stacks(core, &so, &stacks))) {
			snprintf(title, sizeof(title),
			         "coreq flame: %s (%zu threads, %zu suspended chains)", what,
			         stacks->nthreads, stacks->nsuspended);
			for (size_t i = 0; i < stacks->nthreads; i++)
				add_frames(&t, NULL, stacks->threads[i].frames,
				           stacks->threads[i].nframes, 1);
			for (size_t i = 0; i < stacks->nsuspended; i++)
				add_frames(&t, "[suspended]", stacks->suspended[i].frames,
				           stacks->suspended[i].nframes, 1);
			cq_stacks_free(stacks);
		}
		cq_core_close(core);
		cmd_close_cache(so.cache);
	}
	int rc = EXIT_OK;
	if (err) {
		rc = cmd_fail(what, err);
	} else if (t.v[0].count == 0) {
		fprintf(stderr, "coreq: %s: no stacks to draw\n", cmd_safe(what));
		rc = EXIT_INPUT;
	} else {
		FILE *out = strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "w");
		if (!out) {
			rc = cmd_fail(out_path, cq_error_errno(errno, "cannot create"));
		} else {
			write_svg(out, &t, title);
			if ((out != stdout && fclose(out) != 0) ||
			    (out == stdout && fflush(out) != 0))
				rc = cmd_fail(out_path, cq_error_errno(errno, "cannot write"));
		}
		if (t.full)
			fprintf(stderr, "coreq: %s: warning: the graph was cut at %d frames\n",
			        cmd_safe(what), MAX_NODES);
	}
	for (size_t i = 0; i < t.n; i++)
		free(t.v[i].name);
	free(t.v);
	return rc;
}
