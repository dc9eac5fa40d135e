/* unwind_scan.c -- the call-site scan: the fast walk's step over a frame of
 * a module that has no unwind tables for it and keeps no frame pointer.
 *
 * The case it is for: musl's libc (Alpine images) ships .eh_frame for a few
 * assembly routines only and is built without frame pointers, so a stack
 * through strdup, fopen, getline... ended at that function: the program's
 * call path above it was lost.
 *
 * The step: look up the stack copy from the frame's sp (at most SCAN_BYTES)
 * for the first word that is a return address of a call INTO THIS
 * FUNCTION, proven from the caller's code, not guessed from the word's
 * value alone:
 *   - the instruction before it is a call: `call rel32`, or `call
 *     *disp32(%rip)` (a GOT call, -fno-plt);
 *   - its target is the start of the function holding the frame's pc: a
 *     direct call into the same module lands at or below the pc, with no
 *     function start of the module's symbol tables in between; a call
 *     through a PLT stub or a GOT slot names a symbol (its JUMP_SLOT or
 *     GLOB_DAT relocation) that the frame's module defines at or below
 *     the pc, again with no function start in between;
 *   - the function's prologue, decoded from its start (pushes, sub of
 *     rsp, and the moves, leas, xors and constants compilers put between
 *     them), agrees with where the word was found: the frame's sp plus the
 *     bytes pushed and subtracted (plus at most 4 words of a call's stack
 *     arguments) when the decode reached the sub or the pc, at least the
 *     bytes pushed when it stopped at an instruction it does not know.
 * A stale return address left in the frame's padding from an earlier call
 * fails the target check (it was a call to another function).  The
 * prologue's pushes also give back the caller's rbx, rbp and r12-r15
 * (a register the prologue does not push is taken as unchanged, as the
 * ABI's callee-saved rule has it), so a caller whose own CFI is
 * rbp-based (-fno-omit-frame-pointer) unwinds on.
 *
 * Such frames are counted (ha_unwinder_scan_frames; heapattach's last
 * lines say how many) and their walks are never stored in the whole-stack
 * cache (its word checks would not cover the scanned words). */
#define _GNU_SOURCE
#include "unwind_int.h"
#include "unwind_elfsym.h"

#include <sys/mman.h>

#define SCAN_BYTES 2048u           /* how far above sp a return address is sought */
#define CALLEE_SPAN (1u << 20)     /* a function's pc at most this far from its start */
#define PROLOGUE_BYTES 96u         /* decoded of a prologue, at most */
#define ARG_WORDS 4                /* stack arguments pushed for a call, at most */

/* The image of the executable, file-backed mapping holding a, with its load
 * bias; NULL for anything else (anonymous code, the vdso included: it has
 * CFI). */
static struct image *code_image(struct uctx *c, uint64_t a, uint64_t *bias,
                                const struct ha_map **mp)
{
	const struct ha_map *m = find_map(c, a);
	if (!m || !(m->prot & PROT_EXEC))
		return NULL;
	struct mapinfo *mi = uw_mapinfo_of(c->u, m);
	if (mi->kind != MI_IMAGE || !mi->img || mi->img->is_vdso)
		return NULL;
	if (mi->bias_state == 0)
		mi->bias_state = uw_image_bias(mi->img, m, a, &mi->bias);
	if (mi->bias_state != 1)
		return NULL;
	*bias = mi->bias;
	*mp = m;
	return mi->img;
}

/* n bytes of code at a (inside mapping m of image im), from the file. */
static int code_bytes(const struct image *im, const struct ha_map *m, uint64_t a, uint8_t *out,
                      size_t n)
{
	if (a < m->start || a > m->end || m->end - a < n)
		return -1;
	uint64_t fofs = m->offset + (a - m->start);
	if (fofs > im->size || im->size - fofs < n)
		return -1;
	memcpy(out, im->data + fofs, n);
	return 0;
}

static const struct uw_syms *image_syms(struct image *im)
{
	if (im->syms_state == 0) {
		im->syms = uw_syms_parse(im->data, im->size);
		im->syms_state = im->syms ? 1 : -1;
	}
	return im->syms;
}

static int32_t le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	                 (uint32_t)p[3] << 24);
}

/* The GOT slot a PLT stub at t jumps through (jmp *disp(%rip), with an
 * endbr64 and a bnd prefix or not: .plt, .plt.sec, .plt.got); 0 if t is
 * not one. */
static uint64_t plt_slot(const struct image *im, const struct ha_map *m, uint64_t t)
{
	uint8_t s[11];
	size_t at = 0;
	if (code_bytes(im, m, t, s, sizeof s) < 0)
		return 0;
	if (s[0] == 0xf3 && s[1] == 0x0f && s[2] == 0x1e && s[3] == 0xfa)
		at = 4;
	if (s[at] == 0xf2)
		at++;
	if (s[at] != 0xff || s[at + 1] != 0x25)
		return 0;
	return t + at + 6 + (uint64_t)(int64_t)le32(s + at + 2);
}

/* The function a call through the GOT slot at runtime address slot of the
 * caller's module (image cim, bias cbias) reaches in the callee's module:
 * its start there, by the slot's symbol name; 0 if unknown. */
static uint64_t slot_target(struct image *cim, uint64_t cbias, uint64_t slot, struct image *im,
                            uint64_t bias)
{
	const char *name = uw_syms_slot_name(image_syms(cim), slot - cbias);
	uint64_t start;
	if (!name || !uw_syms_func_named(image_syms(im), name, &start))
		return 0;
	return start + bias;
}

/* Is pc inside the function starting at f of image im: at most
 * CALLEE_SPAN above it, no function of the module starting in between? */
static int holds(struct image *im, uint64_t bias, uint64_t f, uint64_t pc)
{
	uint64_t start;
	if (f > pc || pc - f >= CALLEE_SPAN)
		return 0;
	return !uw_syms_func_le(image_syms(im), pc - bias, &start) || start <= f - bias;
}

/* Instructions that only move values between registers or load constants
 * and addresses (as compilers put between a prologue's pushes, or before a
 * tail call): their length at b (8 bytes read), 0 for anything else. */
static unsigned move_length(const uint8_t *b)
{
	unsigned rex = (b[0] & 0xf0) == 0x40 ? b[0] : 0;
	const uint8_t *o = rex ? b + 1 : b;
	if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		return 4;                       /* endbr64 */
	if ((o[0] == 0x89 || o[0] == 0x31 || o[0] == 0x85) && (o[1] >> 6) == 3 &&
	    ((o[1] & 7) != 4 || (rex & 1)))
		return rex ? 3 : 2;             /* mov, xor, test between registers, not to rsp */
	if ((rex & 0xfb) == 0x48 && o[0] == 0x8d && (o[1] & 0xc7) == 0x05)
		return 7;                       /* lea disp32(%rip), reg */
	if ((rex == 0 || rex == 0x41) && o[0] >= 0xb8 && o[0] <= 0xbf)
		return rex ? 6 : 5;             /* mov $imm32, reg32 */
	return 0;
}

/* Where the code at f jumps after moves only (jmp rel32 or rel8): a tail
 * call's target; 0 if it does not. */
static uint64_t tail_jump(struct uctx *c, uint64_t f)
{
	const struct ha_map *m;
	uint64_t bias, a = f;
	uint8_t b[8];
	struct image *im = code_image(c, f, &bias, &m);
	for (unsigned len; im && a - f < 32 && code_bytes(im, m, a, b, sizeof b) == 0; a += len) {
		if (b[0] == 0xe9)
			return a + 5 + (uint64_t)(int64_t)le32(b + 1);
		if (b[0] == 0xeb)
			return a + 2 + (uint64_t)(int64_t)(int8_t)b[1];
		if (!(len = move_length(b)))
			return 0;
	}
	return 0;
}

/* Is the instruction before ra a call to the function holding pc (in
 * image im, bias, mapping m)?  Its start in *fn if so. */
static int call_reaches(struct uctx *c, uint64_t ra, uint64_t pc, struct image *im,
                        uint64_t bias, uint64_t *fn)
{
	const struct ha_map *rm, *tm;
	uint64_t rbias, tbias, f = 0, t;
	uint8_t b[6];
	struct image *rim = code_image(c, ra - 1, &rbias, &rm), *tim;

	if (!rim || ra - rm->start < sizeof b || code_bytes(rim, rm, ra - sizeof b, b, sizeof b) < 0)
		return 0;
	if (b[1] == 0xe8) {                     /* call rel32 */
		t = ra + (uint64_t)(int64_t)le32(b + 2);
		tim = code_image(c, t, &tbias, &tm);
		if (!tim)
			return 0;
		uint64_t slot = plt_slot(tim, tm, t);
		if (slot)
			f = slot_target(tim, tbias, slot, im, bias);
		else if (tim == im && tbias == bias)
			f = t;
	} else if (b[0] == 0xff && b[1] == 0x15) { /* call *disp32(%rip) */
		f = slot_target(rim, rbias, ra + (uint64_t)(int64_t)le32(b + 2), im, bias);
	}
	if (!f)
		return 0;
	if (!holds(im, bias, f, pc)) {
		/* f may be a tail call's stub (musl's getline: two moves and
		 * jmp getdelim): the function it jumps to */
		f = tail_jump(c, f);
		if (!f || !holds(im, bias, f, pc))
			return 0;
	}
	*fn = f;
	return 1;
}

/* The prologue of the function at fn, decoded up to pc: its pushes (in
 * order) and the bytes it subtracts from rsp; ends 1 when the decode
 * reached the sub or pc, 0 when it stopped at an instruction it does not
 * know. */
struct prologue {
	int npush;
	int8_t push[16];                 /* CFI_* register, or -1 (not callee-saved) */
	uint64_t sub;
	int ends;
};

static int8_t cfi_reg_of(unsigned x86)
{
	switch (x86) {
	case 3: return CFI_RBX;
	case 5: return CFI_RBP;
	case 12: return CFI_R12;
	case 13: return CFI_R13;
	case 14: return CFI_R14;
	case 15: return CFI_R15;
	default: return -1;
	}
}

static void decode_prologue(const struct image *im, const struct ha_map *m, uint64_t fn,
                            uint64_t pc, struct prologue *p)
{
	uint8_t b[8];
	unsigned len;
	uint64_t a = fn, end = pc < fn + PROLOGUE_BYTES ? pc : fn + PROLOGUE_BYTES;
	memset(p, 0, sizeof *p);
	while (a < end) {
		if (code_bytes(im, m, a, b, sizeof b) < 0)
			return;
		unsigned rex = (b[0] & 0xf0) == 0x40 ? b[0] : 0;
		const uint8_t *o = rex ? b + 1 : b;
		if ((rex == 0 || rex == 0x41) && o[0] >= 0x50 && o[0] <= 0x57) {
			if (p->npush == (int)sizeof p->push)
				return;
			p->push[p->npush++] = cfi_reg_of((o[0] - 0x50u) + (rex ? 8u : 0u));
			a += rex ? 2 : 1;       /* push reg */
		} else if (b[0] == 0x48 && b[1] == 0x83 && b[2] == 0xec) {
			p->sub = b[3];          /* sub $imm8, %rsp */
			p->ends = 1;
			return;
		} else if (b[0] == 0x48 && b[1] == 0x81 && b[2] == 0xec) {
			int32_t v = le32(b + 3);
			if (v < 0)
				return;
			p->sub = (uint64_t)v;   /* sub $imm32, %rsp */
			p->ends = 1;
			return;
		} else if ((len = move_length(b)) != 0) {
			a += len;
		} else {
			return;
		}
	}
	p->ends = 1;                    /* reached pc: what ran of it is known */
}

/* Is the instruction before ra a call of any form (rel32, through memory
 * or a register, with a REX prefix or not)?  1 too when ra is not in a
 * module's code (JIT code: its bytes are not at hand). */
int uw_call_before(struct uctx *c, uint64_t ra)
{
	const struct ha_map *m;
	uint64_t bias;
	uint8_t b[7];
	struct image *im = code_image(c, ra - 1, &bias, &m);
	if (!im)
		return 1;
	if (ra - m->start < sizeof b || code_bytes(im, m, ra - sizeof b, b, sizeof b) < 0)
		return 0;
	/* b[6] is the byte just before ra; an instruction of k bytes starts at b[7 - k] */
	if (b[2] == 0xe8 || (b[1] == 0xff && (b[2] == 0x15 || (b[2] & 0xf8) == 0x90)))
		return 1;       /* call rel32; call *disp32(%rip); call *disp32(%reg) */
	if (b[0] == 0xff && b[1] == 0x94)
		return 1;       /* call *disp32(%reg,%reg,s) */
	if (b[4] == 0xff && (b[5] & 0xf8) == 0x50 && b[5] != 0x54)
		return 1;       /* call *disp8(%reg) */
	if (b[3] == 0xff && b[4] == 0x54)
		return 1;       /* call *disp8(%reg,%reg,s) */
	if (b[5] == 0xff && ((b[6] & 0xf8) == 0xd0 || ((b[6] & 0xf8) == 0x10 && b[6] != 0x14 && b[6] != 0x15)))
		return 1;       /* call *%reg; call *(%reg) */
	return 0;
}

int uw_scan_frame(struct uctx *c, uint64_t pc, uint64_t sp, struct uw_scan *out)
{
	const struct ha_map *m;
	uint64_t bias, fn;
	struct image *im = code_image(c, pc, &bias, &m);
	if (!im || sp < c->lo || sp & 7)
		return 0;
	for (uint64_t slot = sp; slot - sp < SCAN_BYTES && slot < c->hi && c->hi - slot >= 8;
	     slot += 8) {
		uint64_t w;
		memcpy(&w, c->stack + (slot - c->lo), 8);
		const struct ha_map *wm = find_map(c, w - 1);
		if (!wm || !(wm->prot & PROT_EXEC) || !call_reaches(c, w, pc, im, bias, &fn))
			continue;
		struct prologue p;
		decode_prologue(im, m, fn, pc, &p);
		uint64_t frame = 8u * (uint64_t)p.npush + p.sub, found = slot - sp;
		if (found < frame || (p.ends && found > frame + 8ull * ARG_WORDS))
			continue;
		out->slot = slot;
		out->ra = w;
		out->npush = 0;
		for (int k = 0; k < p.npush; k++)
			if (p.push[k] >= 0)
				out->saved[out->npush++] = (struct uw_saved){ p.push[k], slot - 8u * (uint64_t)(k + 1) };
		return 1;
	}
	return 0;
}

uint64_t ha_unwinder_scan_frames(const struct ha_unwinder *u)
{
	return u ? u->scan_frames : 0;
}
