/*
 * text.h - strings from a core, made safe to print as text.
 *
 * Paths, command lines, thread and function names come from the core, its
 * modules or the database, and may hold any bytes.  Printed verbatim, a
 * newline forges an output line and an ESC sequence drives the terminal.
 * Text output (and the hook's syslog line) shows them escaped visibly:
 * control bytes as \n, \t, \r or \xNN, DEL and every byte that is not part
 * of valid UTF-8 as \xNN.  Valid UTF-8 passes unchanged.  JSON output has
 * its own escaping (json.h).
 */
#ifndef CQ_TEXT_H
#define CQ_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if invalid. */
size_t cq_utf8_sequence(const unsigned char *s, size_t n);

/* True when s prints as itself (no byte needs escaping). */
bool cq_text_is_safe(const char *s);

/*
 * s escaped for text output: s itself when nothing needs escaping, else the
 * escaped form written to *buf (malloc'd or grown as needed; *cap its size).
 * NULL s gives NULL; out of memory gives "?".
 */
const char *cq_text_escape(const char *s, char **buf, size_t *cap);

#endif
