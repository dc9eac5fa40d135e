/* unwind_cfi.c -- turn libdw's CFI frame state of one pc into the simple
 * rules of struct ha_cfi_rule (see unwind_cfi.h). */
#include "unwind_cfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>

#define DW_REG_RIP 16

/* DWARF x86-64 register number -> CFI_* index, or -1 if not tracked. */
static int track_index(uint64_t dwreg)
{
	switch (dwreg) {
	case 7: return CFI_RSP;
	case 6: return CFI_RBP;
	case 3: return CFI_RBX;
	case 12: return CFI_R12;
	case 13: return CFI_R13;
	case 14: return CFI_R14;
	case 15: return CFI_R15;
	default: return -1;
	}
}

static int fits_i32(int64_t v)
{
	return v > CFI_LOST && v <= INT32_MAX;
}

/* CFA = tracked register + offset, else 0. */
static int cfa_rule(Dwarf_Frame *fr, struct ha_cfi_rule *r)
{
	Dwarf_Op *ops;
	size_t nops;
	uint64_t reg;
	int64_t off;

	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops != 1)
		return 0;
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else {
		return 0;
	}
	int idx = track_index(reg);
	if (idx < 0 || !fits_i32(off))
		return 0;
	r->cfa_reg = (uint8_t)idx;
	r->cfa_off = (int32_t)off;
	return 1;
}

/* The caller's value of DWARF register dwreg: a CFA-relative slot,
 * CFI_SAME, CFI_LOST; 1 in *undef if the rule is "undefined". */
static int32_t reg_rule(Dwarf_Frame *fr, int dwreg, int *undef)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;

	*undef = 0;
	if (dwarf_frame_register(fr, dwreg, mem, &ops, &nops) != 0)
		return CFI_LOST;
	if (nops == 0) {
		if (ops == NULL)
			return CFI_SAME;
		*undef = 1;
		return CFI_LOST;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return CFI_LOST;        /* a register or an expression */
	if (nops == 1)
		return 0;
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst && fits_i32((int64_t)ops[1].number))
		return (int32_t)(int64_t)ops[1].number;
	return CFI_LOST;                /* val_offset (a value, not a slot) or more */
}

static void frame_rule(Dwarf_Frame *fr, struct ha_cfi_rule *r)
{
	static const int dw[CFI_NREG] = { DW_REG_RIP, 7, 6, 3, 12, 13, 14, 15 };
	bool signalp = false;
	int undef;

	if (dwarf_frame_info(fr, NULL, NULL, &signalp) != DW_REG_RIP || signalp)
		return;
	if (!cfa_rule(fr, r))
		return;
	for (int i = 0; i < CFI_NREG; i++) {
		if (i == CFI_RSP) {
			r->save[i] = CFI_SAME;
			continue;
		}
		r->save[i] = reg_rule(fr, dw[i], &undef);
		if (i == CFI_RIP && undef) {
			r->kind = CFI_END;   /* outermost frame (_start, clone) */
			return;
		}
		/* libunwind ends the walk on an undefined rbp; libdw may say
		 * "undefined" for a register the CIE never mentions, where
		 * libunwind assumes "same": leave the question to libunwind. */
		if ((i == CFI_RIP || i == CFI_RBP) && (undef || r->save[i] == CFI_LOST))
			return;
	}
	r->kind = CFI_OK;
}

void ha_cfi_rule(struct Dwarf_CFI_s *cfi, uint64_t addr, struct ha_cfi_rule *r)
{
	Dwarf_Frame *fr = NULL;

	r->kind = CFI_FALLBACK;
	r->kind = CFI_NONE;
	if (!cfi || dwarf_cfi_addrframe(cfi, addr, &fr) != 0 || !fr)
		return;         /* no FDE covers addr */
	r->kind = CFI_FALLBACK;
	frame_rule(fr, r);
	free(fr);
}
