/*
 * crash_message.c - the crash message a store keeps, bounded (see crash_message.h).
 */
#include "libcore/store/crash_message.h"

#include <string.h>

#include "libcore/base/text.h"

const char *cq_crash_message_bound(const char *message, char *out, size_t cap)
{
	if (!message || !message[0] || cap == 0)
		return NULL;
	size_t limit = cap - 1 < CQ_CRASH_MESSAGE_MAX ? cap - 1 : CQ_CRASH_MESSAGE_MAX;
	size_t len = strnlen(message, limit + 1);
	if (len <= limit) {
		memcpy(out, message, len + 1);
		return out;
	}
	size_t mark = sizeof(CQ_CRASH_MESSAGE_CUT) - 1;
	if (limit < mark)
		return NULL;
	/* Whole characters up to the room left before the marker; an invalid byte counts as one. */
	const unsigned char *s = (const unsigned char *)message;
	size_t keep = 0;
	while (keep < len) {
		size_t seq = cq_utf8_sequence(s + keep, len - keep);
		if (seq == 0)
			seq = 1;
		if (keep + seq > limit - mark)
			break;
		keep += seq;
	}
	memcpy(out, message, keep);
	memcpy(out + keep, CQ_CRASH_MESSAGE_CUT, mark + 1);
	return out;
}
