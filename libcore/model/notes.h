/*
 * notes.h - parse a core's PT_NOTE segments into struct cq_core.
 *
 * Understands NT_PRSTATUS (one per thread, the first is the crashing thread
 * unless the core is a snapshot: cq_core.snapshot),
 * NT_PRPSINFO, NT_SIGINFO, NT_AUXV, NT_FILE and the per-thread TLS note of
 * architectures whose thread pointer is not in pr_reg.  Every size and count
 * is checked against the note that carries it; a note that overruns its
 * segment, or a required note that is malformed, is an error.
 */
#ifndef CQ_NOTES_H
#define CQ_NOTES_H

#include "libcore/model/core.h"

struct cq_error *cq_notes_parse(struct cq_core *core);

#endif
