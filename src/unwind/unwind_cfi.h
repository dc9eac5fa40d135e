/* unwind_cfi.h -- the simple x86-64 CFI rules of one pc, from an ELF file's
 * .eh_frame through libdw, for the fast walk of unwind_walk.c: the CFA is a
 * tracked register plus an offset, and the return address and callee-saved
 * registers are in CFA-relative slots or unchanged.  Anything else (DWARF
 * expressions, register-to-register rules, signal frames, no FDE) is left
 * to libunwind. */
#ifndef HA_UNWIND_CFI_H
#define HA_UNWIND_CFI_H

#include <stdint.h>

/* Registers in struct ha_regs order. */
enum { CFI_RIP, CFI_RSP, CFI_RBP, CFI_RBX, CFI_R12, CFI_R13, CFI_R14, CFI_R15, CFI_NREG };

#define CFI_SAME INT32_MIN          /* register unchanged in the caller */
#define CFI_LOST (INT32_MIN + 1)    /* not a simple rule: using it needs libunwind */

enum {
	CFI_FALLBACK = 0,            /* no simple rule: libunwind unwinds this stack */
	CFI_OK,
	CFI_END,                     /* return address or rbp undefined: outermost frame */
	CFI_NONE,                    /* no CFI at all for this pc (no FDE, no .eh_frame,
	                              * anonymous code): the walk may follow rbp (unwind_fp.c) */
};

struct ha_cfi_rule {
	uint8_t kind;                /* CFI_* */
	uint8_t cfa_reg;             /* CFI_RSP, CFI_RBP, ... */
	int32_t cfa_off;
	/* save[CFI_RIP] is the return address slot; save[CFI_RSP] is unused
	 * (the caller's rsp is the CFA); the others: slot, CFI_SAME or CFI_LOST. */
	int32_t save[CFI_NREG];
};

struct Dwarf_CFI_s;

/* The rule of address addr (already minus the module's load bias) in cfi.
 * Always fills *r; r->kind says whether it is usable (CFI_NONE: no FDE). */
void ha_cfi_rule(struct Dwarf_CFI_s *cfi, uint64_t addr, struct ha_cfi_rule *r);

#endif
