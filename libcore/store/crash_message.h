/*
 * crash_message.h - the crash message a store keeps (cores.crash_message,
 * schema 016): what the program's runtime said the crash was, read from the
 * core (Go's "panic: ...", Python's "ValueError: bad job 7"; frames.h,
 * cq_stacks.crash_message).
 *
 * The message is untrusted core data of any length and any bytes.  The store
 * keeps at most CQ_CRASH_MESSAGE_MAX bytes: a longer one is cut at a
 * character boundary (never inside a valid UTF-8 sequence) and ends with
 * CQ_CRASH_MESSAGE_CUT.  Its bytes are kept as they are; text output escapes
 * them (text.h) and JSON output writes valid UTF-8 (json.h).
 */
#ifndef CQ_CRASH_MESSAGE_H
#define CQ_CRASH_MESSAGE_H

#include <stddef.h>

#define CQ_CRASH_MESSAGE_MAX 1024 /* bytes, the marker included */
#define CQ_CRASH_MESSAGE_CUT " [cut]"

/*
 * message bounded into out (cap bytes, at least CQ_CRASH_MESSAGE_MAX + 1):
 * the message itself when it fits, else its first characters and the marker.
 * Returns out, or NULL for a NULL or empty message.
 */
const char *cq_crash_message_bound(const char *message, char *out, size_t cap);

#endif
