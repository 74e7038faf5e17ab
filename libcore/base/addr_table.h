/*
 * addr_table.h - arrays of structs that each start with their uint64_t
 * address, sorted by it and searched in O(log n): the lock tables of the
 * wait-for graph (waits.c, wait_reader.c) and the like.
 *
 * Layer: base.
 */
#ifndef CQ_ADDR_TABLE_H
#define CQ_ADDR_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* qsort's comparator for elements whose first member is their uint64_t address. */
int cq_addr_order(const void *a, const void *b);

/* The element of sorted base[n] (each `size` bytes) whose address is addr, or NULL. */
void *cq_addr_find(void *base, size_t n, size_t size, uint64_t addr);

#endif
