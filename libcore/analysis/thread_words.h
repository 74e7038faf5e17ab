/*
 * thread_words.h - every word a thread of a core can still use: its
 * registers (the stack pointer aside) and its live stack, from sp up to
 * the end of the mapping that holds it.  The wait-for graph's inferences
 * (waits.c: the one thread that references a lock; wait_reader.c: the one
 * reader of an rwlock) look for lock addresses there.
 *
 * Bounded: at most CQ_THREAD_WORDS_STACK_MAX bytes of each stack, and in
 * all no more stack bytes than the core's own size and 64 MiB (stacks
 * that overlap, a forged core), so a search costs at most the core once.
 *
 * Layer: analysis.
 */
#ifndef CQ_THREAD_WORDS_H
#define CQ_THREAD_WORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cq_core;

#define CQ_THREAD_WORDS_STACK_MAX (8u << 20)

/*
 * Called for each word of thread t: from a register (at NULL, rest 0), or
 * from its stack (at points to the word in the core's bytes and rest is how
 * many bytes of the thread's searched stack start there, at least 8).
 */
typedef void (*cq_thread_word_fn)(void *arg, size_t t, uint64_t word, const uint8_t *at,
                                  uint64_t rest);

/* Visits every thread's words, in thread order; false when the budget ran out (cut short). */
bool cq_thread_words(struct cq_core *core, cq_thread_word_fn fn, void *arg);

#endif
