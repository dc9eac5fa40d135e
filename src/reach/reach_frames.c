/* reach_frames.c -- which function's frame holds a stack word: a thread's
 * stack in the copy is walked once per scan, on the first holder found on
 * it, by the walker the caller gives (heapattach's: src/unwind's walk,
 * run on the collector's thread that owns it, over the bytes read here
 * from the copy), and each frame's stack pointer kept beside its pc;
 * frame i's words are [sp[i], sp[i + 1]), the leaf frame's from its SP
 * less the red zone.  The pc is named later, where frames are named (the
 * writer's symbolizer).  A walk is untrusted: frames are kept only while
 * their stack pointers rise, and a word at or past the last frame's SP
 * (whose end is not known) has no frame. */
#include "reach_int.h"

#include <stdlib.h>
#include <string.h>

void reach_frames_set(struct reach_frames *fr, const uint64_t *pcs, const uint64_t *sps, int n)
{
	fr->n = 0;
	if (n > REACH_FRAMES_MAX)
		n = REACH_FRAMES_MAX;
	for (int i = 0; i < n; i++) {
		if (i > 0 && sps[i] <= sps[i - 1])
			break;
		fr->pc[i] = pcs[i];
		fr->sp[i] = sps[i];
		fr->n = i + 1;
	}
}

int reach_frame_of(const struct reach_frames *fr, uint64_t at)
{
	if (fr->n < 2 || at >= fr->sp[fr->n - 1])
		return -1;
	uint64_t lo = fr->sp[0] > REACH_RED_ZONE ? fr->sp[0] - REACH_RED_ZONE : 0;
	if (at < lo)
		return -1;
	/* the last frame i with sp[i] <= at (frame 0 for the red zone) */
	int a = 0, b = fr->n - 1;
	while (a + 1 < b) {
		int mid = a + (b - a) / 2;
		if (fr->sp[mid] <= at)
			a = mid;
		else
			b = mid;
	}
	return a;
}

void reach_frames_walk(struct reach_mem *m, const struct ha_maps *maps,
                       const struct reach_thread *th, const struct reach_opts *o,
                       struct reach_frames *fr)
{
	fr->walked = 1;
	fr->n = 0;
	uint64_t sp = th->regs.rsp;
	const struct ha_map *e = ha_maps_find_addr(maps, sp);
	if (!o || !o->walk || !e)
		return;
	uint64_t want = e->end - sp < REACH_STACK_READ ? e->end - sp : REACH_STACK_READ;
	uint8_t *buf = malloc(want ? want : 1);
	if (!buf)
		return;
	size_t have = 0;
	while (have < want) {
		size_t len;
		const uint8_t *p = reach_mem_get(m, sp + have, want - have, &len);
		if (!p || len == 0)
			break;
		memcpy(buf + have, p, len);
		have += len;
	}
	uint64_t pcs[REACH_FRAMES_MAX], sps[REACH_FRAMES_MAX];
	int n = o->walk(o->walk_ctx, &th->regs, buf, have, pcs, sps, REACH_FRAMES_MAX);
	if (n > 0)
		reach_frames_set(fr, pcs, sps, n);
	free(buf);
}
