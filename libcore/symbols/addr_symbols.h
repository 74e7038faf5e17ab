/*
 * addr_symbols.h - which symbol of a module holds an address, with the
 * answer of libdwfl's dwfl_module_addrinfo but without its pass over the
 * whole symbol table for every address.
 *
 * libdw 0.188's dwfl_module_addrinfo reads every symbol of the module for
 * each address it is asked about: 0.1 to 0.5 ms per address for libc's
 * debuginfo symbol table (timestamps, first core of cpp_terminate.O2),
 * much of the symbol time once libc's DWARF is read.  This index reads the
 * table once (dwfl_module_getsym_info, so the symbols, their values and
 * their order are libdwfl's own), sorts it by address, and then answers
 * each address from the few symbols around it, by libdwfl's own rules (see
 * addr_symbols.c).  The cases those few cannot settle (a sizeless symbol
 * that might be taken, an address inside very many symbols, ppc64's
 * function descriptors) go to dwfl_module_addrinfo itself.
 */
#ifndef CQ_ADDR_SYMBOLS_H
#define CQ_ADDR_SYMBOLS_H

#include <elfutils/libdwfl.h>

#include "libcore/base/error.h"

struct cq_addr_symbols;

/*
 * Indexes dm's symbol table (libdwfl loads it, and the module's debuginfo,
 * if it has not yet).  *out is NULL when the module has no symbol table;
 * only out of memory is an error.
 */
struct cq_error *cq_addr_symbols_build(Dwfl_Module *dm, struct cq_addr_symbols **out);

/*
 * The name of the symbol holding addr (an address in dm, as for
 * dwfl_module_addrinfo) and *offset, addr's distance from its start; NULL
 * when none does.  t may be NULL: then libdwfl answers.
 */
const char *cq_addr_symbols_find(const struct cq_addr_symbols *t, Dwfl_Module *dm, GElf_Addr addr,
                                 GElf_Off *offset);

void cq_addr_symbols_free(struct cq_addr_symbols *t);

#endif
