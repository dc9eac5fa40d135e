/* reach_frames_test.c -- which frame holds a stack word: on frame lists made
 * up (the leaf's red zone, each frame's [SP, caller's SP), the last frame
 * whose end is not known, a walk whose stack pointers stop rising), and
 * reach_frames_walk on a "stack" in the test's own memory read through
 * reach_mem, with a walker that checks what it is handed. */
#include "reach_int.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static uint64_t stack_words[1024] __attribute__((aligned(64)));

static long read_local(void *ctx, uint64_t addr, void *buf, size_t len, int whole)
{
	(void)ctx;
	(void)whole;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return (long)len;
}

/* A walker: three frames, whose SPs it reads from the first words of the
 * stack it is handed (as a real walk reads saved words). */
static int walked_len;
static int walk3(void *ctx, const struct user_regs_struct *regs, const uint8_t *stack, size_t len,
                 uint64_t *pcs, uint64_t *sps, int max)
{
	(void)ctx;
	walked_len = (int)len;
	if (max < 3 || len < 16)
		return -1;
	uint64_t w[2];
	memcpy(w, stack, sizeof w);
	pcs[0] = regs->rip;
	sps[0] = regs->rsp;
	pcs[1] = 0x1111;
	sps[1] = w[0];
	pcs[2] = 0x2222;
	sps[2] = w[1];
	return 3;
}

int main(void)
{
	/* Made up: frames at 0x1000 (leaf), 0x1100, 0x1400, 0x2000 (last). */
	uint64_t pcs[] = { 0xa0, 0xb0, 0xc0, 0xd0 }, sps[] = { 0x1000, 0x1100, 0x1400, 0x2000 };
	struct reach_frames fr = { 0 };
	reach_frames_set(&fr, pcs, sps, 4);
	EXPECT(fr.n == 4, "frames kept: %d, want 4", fr.n);
	struct {
		uint64_t at;
		int frame;
	} want[] = {
		{ 0x1000 - REACH_RED_ZONE - 8, -1 }, /* below the red zone: a dead frame */
		{ 0x1000 - REACH_RED_ZONE, 0 },      /* the leaf's red zone */
		{ 0x1000, 0 },  { 0x10f8, 0 },       /* the leaf's own words */
		{ 0x1100, 1 },  { 0x13f8, 1 },
		{ 0x1400, 2 },  { 0x1ff8, 2 },
		{ 0x2000, -1 }, { 0x9000, -1 },      /* the last frame's: its end is not known */
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int got = reach_frame_of(&fr, want[i].at);
		EXPECT(got == want[i].frame, "word at %#llx: frame %d, want %d",
		       (unsigned long long)want[i].at, got, want[i].frame);
	}

	/* A walk gone wrong: the SPs stop rising at frame 2; nothing past. */
	uint64_t bad[] = { 0x1000, 0x1100, 0x1100, 0x3000 };
	reach_frames_set(&fr, pcs, bad, 4);
	EXPECT(fr.n == 2, "frames kept of a walk whose SPs stop rising: %d, want 2", fr.n);
	EXPECT(reach_frame_of(&fr, 0x1010) == 0, "the leaf's word still told");
	EXPECT(reach_frame_of(&fr, 0x1200) == -1, "a word past the walk's trust has no frame");
	reach_frames_set(&fr, pcs, sps, 1);
	EXPECT(reach_frame_of(&fr, 0x1000) == -1, "one frame alone tells no frame's end");

	/* A walk over memory of our own, read through the window cache. */
	uint64_t lo = (uint64_t)(uintptr_t)stack_words, hi = lo + sizeof stack_words;
	stack_words[64] = lo + 1024;   /* the SP of frame 1, read by walk3 */
	stack_words[65] = lo + 4096;   /* of frame 2 */
	struct reach_range range = { lo, hi, 0 };
	struct reach_mem m = { .read = read_local, .ranges = &range, .nranges = 1 };
	struct ha_map map = { .start = lo, .end = hi, .prot = 3, .path = "" };
	struct ha_maps maps = { &map, 1 };
	struct reach_thread th = { .tid = 7 };
	th.regs.rsp = lo + 512;
	th.regs.rip = 0x4242;
	struct reach_opts o = { .walk = walk3 };
	struct reach_frames wf = { 0 };
	reach_frames_walk(&m, &maps, &th, &o, &wf);
	EXPECT(wf.walked && wf.n == 3, "walked: %d frames, want 3", wf.n);
	EXPECT(walked_len == (int)(hi - (lo + 512)), "the walk was handed %d bytes, want %d",
	       walked_len, (int)(hi - (lo + 512)));
	EXPECT(reach_frame_of(&wf, lo + 600) == 0 && wf.pc[0] == 0x4242, "a word in the leaf frame");
	EXPECT(reach_frame_of(&wf, lo + 2000) == 1 && wf.pc[1] == 0x1111, "a word in frame 1");
	EXPECT(reach_frame_of(&wf, lo + 4096) == -1, "a word in the last frame: none told");

	/* No walker: nothing told, and said so. */
	struct reach_opts none = { 0 };
	reach_frames_walk(&m, &maps, &th, &none, &wf);
	EXPECT(wf.walked && wf.n == 0, "without a walker no frame is told");
	/* An SP in no mapping: nothing read. */
	th.regs.rsp = hi + 4096;
	reach_frames_walk(&m, &maps, &th, &o, &wf);
	EXPECT(wf.n == 0, "an SP in no mapping tells no frame");
	reach_mem_free(&m);
	return UNIT_RESULT("a stack word's frame: red zone, frames, the last one, bad walks, "
	                   "a walk over the copy's bytes");
}
