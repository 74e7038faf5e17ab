/*
 * sender_claimed.h - how a stored core's sender_claimed (schema 015) is
 * read back: one SQL expression for every query that reads it (store_query.c,
 * export.c) and for merge.c, which copies it.
 *
 * The column says whether the signal's sender (sender_pid, sender_uid) is
 * only what the signal claims (cq_core_sender_claimed, libcore/model/core.h).
 * It is believed to be 0 (proven) only where the row agrees with the rule
 * that made it: si_code SI_USER (0) or SI_TKILL (-6), and the sender the
 * core's own pid and uid.  So a database handed over, merged or edited
 * cannot make a sender proven by saying so; NULL (no sender) stays NULL and
 * anything else, a NULL or a value of another type included, reads as 1.
 */
#ifndef CQ_STORE_SENDER_CLAIMED_H
#define CQ_STORE_SENDER_CLAIMED_H

/* Over the cores row aliased `c`. */
#define CQ_SENDER_CLAIMED_SQL                                                                      \
	"(CASE WHEN c.sender_pid IS NULL THEN NULL WHEN c.sender_claimed IS 0 AND c.si_code IN "   \
	"(0, -6) AND c.pid > 0 AND c.sender_pid = c.pid AND c.sender_uid = c.uid THEN 0 ELSE 1 "   \
	"END)"

#endif
