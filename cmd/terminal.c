/*
 * terminal.c - what text output does on a terminal: long output goes
 * through $PAGER (default "less -FRX", quitting at once when it fits; not
 * with --no-pager, or when standard output is not a terminal), and colour
 * is used on a terminal only (--color=auto|always|never; $NO_COLOR turns
 * auto off).  Both options are taken by every command, before its own.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static bool colour;
static bool use_pager = true;
static FILE *pager;

int cmd_terminal_options(int argc, char **argv)
{
	enum { AUTO, ALWAYS, NEVER } mode = AUTO;
	int out = 0;
	bool rest = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!rest && strcmp(a, "--") == 0)
			rest = true;
		if (!rest && strcmp(a, "--no-pager") == 0) {
			use_pager = false;
			continue;
		}
		if (!rest && strncmp(a, "--color", 7) == 0 && (a[7] == '\0' || a[7] == '=')) {
			const char *v = a[7] ? a + 8 : "always";
			mode = strcmp(v, "always") == 0  ? ALWAYS
			       : strcmp(v, "never") == 0 ? NEVER
			                                 : AUTO;
			if (strcmp(v, "always") && strcmp(v, "never") && strcmp(v, "auto")) {
				fprintf(stderr,
				        "coreq: --color takes auto, always or never, not '%s'\n",
				        v);
				return -1;
			}
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	const char *no = getenv("NO_COLOR");
	colour = mode == ALWAYS || (mode == AUTO && isatty(STDOUT_FILENO) && !(no && *no));
	return out;
}

bool cmd_colour(void)
{
	return colour;
}

const char *cmd_sgr(const char *code)
{
	return colour ? code : "";
}

void cmd_pager_start(void)
{
	if (!use_pager || !isatty(STDOUT_FILENO))
		return;
	const char *p = getenv("PAGER");
	if (p && !*p)
		return; /* PAGER= turns it off, as for git */
	if (!p)
		p = "less";
	if (strcmp(p, "less") == 0 && !getenv("LESS"))
		setenv("LESS", "FRX", 1); /* quit when it fits, keep colours, keep the screen */
	fflush(stdout);
	FILE *f = popen(p, "w");
	if (!f)
		return;
	int fd = dup(STDOUT_FILENO);
	if (fd < 0 || dup2(fileno(f), STDOUT_FILENO) < 0) {
		pclose(f);
		if (fd >= 0)
			close(fd);
		return;
	}
	pager = f;
	(void)fd; /* the terminal itself stays open for the pager */
}

void cmd_pager_end(void)
{
	if (!pager)
		return;
	fflush(stdout);
	fclose(stdout); /* the pager sees the end of its input */
	pclose(pager);
	pager = NULL;
}
