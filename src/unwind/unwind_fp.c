/* unwind_fp.c -- the frame-pointer fallback of the fast walk (unwind_walk.c)
 * for code without CFI: JIT code in anonymous executable memory, node's
 * embedded builtins, hand-written assembly, a module without .eh_frame for
 * a pc.  Such code that keeps the x86-64 frame-pointer convention (push
 * rbp; mov rsp, rbp) has, at a call site, the caller's rbp at [rbp] and
 * the return address at [rbp + 8]: as a CFI rule, CFA = rbp + 16, the
 * return address at CFA - 8, rbp at CFA - 16, the other callee-saved
 * registers unknown.  The walk applies that rule only
 *   - to a return address (a frame's exact pc may be in its prologue),
 *   - with rbp known, 8-aligned, at or above the frame's sp (the chain moves
 *     up) and with its two words inside the stack copy (target memory is
 *     never read for it),
 *   - and keeps the frame only if its return address lies in an executable
 *     mapping;
 * anything else ends the walk there.  It goes back to CFI at the first pc
 * that has it.  Being a rule like the others, a walk through it is checked
 * by the whole-stack cache word by word as any other (the words at the
 * return-address slots and the CFA bases).  Frames found this way are
 * counted (ha_unwinder_fp_stats). */
#define _GNU_SOURCE
#include "unwind_int.h"

#include <sys/mman.h>

const struct ha_cfi_rule uw_fp_rule = {
	.kind = CFI_OK,
	.cfa_reg = CFI_RBP,
	.cfa_off = 16,
	.save = { [CFI_RIP] = -8, [CFI_RSP] = CFI_SAME, [CFI_RBP] = -16, [CFI_RBX] = CFI_LOST,
	          [CFI_R12] = CFI_LOST, [CFI_R13] = CFI_LOST, [CFI_R14] = CFI_LOST,
	          [CFI_R15] = CFI_LOST },
};

int uw_fp_chain_ok(const struct uctx *c, uint64_t rbp, uint64_t sp)
{
	if (rbp & 7 || rbp < sp)
		return 0;
	return rbp >= c->lo && rbp < c->hi && c->hi - rbp >= 16;
}

int uw_fp_ra_ok(struct uctx *c, uint64_t ra)
{
	const struct ha_map *m = find_map(c, ra);
	return m && (m->prot & PROT_EXEC);
}

void ha_unwinder_fp_stats(const struct ha_unwinder *u, uint64_t *fp_frames, uint64_t *frames)
{
	*fp_frames = u ? u->fp_frames : 0;
	*frames = u ? u->frames : 0;
}
