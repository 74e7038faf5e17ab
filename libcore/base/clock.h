/*
 * clock.h - the monotonic clock, for the durations coreq reports
 * (scan and index times, progress rates).  Never for anything stored.
 */
#ifndef CQ_CLOCK_H
#define CQ_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock, from an arbitrary start. */
static inline double cq_clock_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
