/* pymerge_test -- the merge of Python frames into native stacks
 * (src/record/pymerge.c, pymerge.h) with a resolver of its own: each eval
 * frame takes its run, innermost first; counts that disagree leave the
 * stack native and are counted; a cut on either side keeps what can be
 * matched from the inside; a code object gone is named so; the same
 * (function, file, line) is one pc whatever code object it came from, and
 * its name goes to the writer once, before any stack.  Each case states
 * what must come out; the program prints every mismatch and exits 1 if
 * there is one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pymerge.h"
#include "unit.h"
#include "writer.h"

#define EVAL_LO 0x5000
#define EVAL_HI 0x6000
#define EV 0x5100 /* a return address inside the eval loop */

/* Code objects 0x1000 + k name "f<k>" in "m.py" at line 10 * k + lasti / 2;
 * code 0xdead is gone. */
static int resolve(void *ctx, const struct ha_py_frame *f, const char **func, const char **file,
                   int *line)
{
	static char names[64][16];
	int *calls = ctx;
	(*calls)++;
	if (f->code == 0xdead)
		return -1;
	unsigned k = (unsigned)(f->code - 0x1000) % 64;
	snprintf(names[k], sizeof names[k], "f%u", k);
	*func = names[k];
	*file = "m.py";
	*line = (int)(10 * k + (f->lasti & ~HA_PY_RUN_END) / 2);
	return 0;
}

static struct ha_py_frame fr(unsigned k, uint32_t lasti, int end)
{
	return (struct ha_py_frame){ 0x1000 + k, 0x9000 + k, lasti | (end ? HA_PY_RUN_END : 0),
		                     (int32_t)(10 * k) };
}

/* The names the writer got, by id. */
static char got_func[64][32];
static int got_line[64];
static int drain(struct ha_queue *q)
{
	int n = 0;
	struct ha_qmsg *m;
	while ((m = ha_queue_get(q, 0))) {
		struct ha_wmsg_pyframe *p = (struct ha_wmsg_pyframe *)m;
		EXPECT(m->type == HA_WMSG_PYFRAME, "message type %d", m->type);
		if (p->id < 64) {
			snprintf(got_func[p->id], sizeof got_func[p->id], "%s", p->text);
			got_line[p->id] = p->line;
		}
		free(m);
		n++;
	}
	return n;
}

static const char *name_of(uint64_t pc)
{
	return ha_pc_is_py(pc) && pc - HA_PC_PY_BASE < 64 ? got_func[pc - HA_PC_PY_BASE] : "?";
}

int main(void)
{
	struct ha_queue q;
	ha_queue_init(&q);
	int calls = 0;
	struct ha_pymerge m;
	const uint64_t eval[2][2] = { { EVAL_LO, EVAL_HI }, { 0x7000, 0x7100 } };
	ha_pymerge_init(&m, eval, resolve, &calls, &q);

	/* 3.11 shape: two eval frames; runs [f1 f2] (f2 entered from C) and [f3]. */
	uint64_t pcs[16] = { 0x100, 0x200, EV, 0x300, EV, 0x400 };
	struct ha_py_frame f[8] = { fr(1, 4, 0), fr(2, 8, 1), fr(3, 0, 1) };
	int n = ha_pymerge(&m, pcs, 6, 16, 0, f, 3, 0);
	EXPECT(drain(&q) == 3, "three names sent");
	EXPECT(n == 7, "merged length %d", n);
	EXPECT(pcs[0] == 0x100 && pcs[1] == 0x200 && pcs[4] == 0x300 && pcs[6] == 0x400,
	       "native frames kept in place");
	EXPECT(strcmp(name_of(pcs[2]), "f1") == 0 && strcmp(name_of(pcs[3]), "f2") == 0 &&
	       strcmp(name_of(pcs[5]), "f3") == 0, "runs in order: %s %s %s", name_of(pcs[2]),
	       name_of(pcs[3]), name_of(pcs[5]));
	EXPECT(got_line[pcs[2] - HA_PC_PY_BASE] == 12 && got_line[pcs[3] - HA_PC_PY_BASE] == 24,
	       "lines from lasti");
	EXPECT(m.st.merged == 1 && m.st.unmatched == 0, "counted merged");

	/* The same frames again: no resolver call, no new name. */
	int before = calls;
	uint64_t again[16] = { 0x100, 0x200, EV, 0x300, EV, 0x400 };
	n = ha_pymerge(&m, again, 6, 16, 0, f, 3, 0);
	EXPECT(calls == before && drain(&q) == 0 && n == 7 && memcmp(again, pcs, 7 * sizeof *pcs) == 0,
	       "cached: the same pcs");

	/* Another code object at another lasti giving the same line: one pc. */
	struct ha_py_frame g[2] = { fr(1, 5, 1) }; /* line 10 + 2 as lasti 4 */
	uint64_t one[4] = { 0x100, EV, 0x400 };
	n = ha_pymerge(&m, one, 3, 4, 0, g, 1, 0);
	EXPECT(n == 3 && one[1] == pcs[2] && drain(&q) == 0, "same line, same pc");

	/* Counts disagree (one eval frame, two runs), nothing cut: native kept. */
	uint64_t bad[8] = { 0x100, EV, 0x400 };
	n = ha_pymerge(&m, bad, 3, 8, 0, f, 3, 0);
	EXPECT(n == 3 && bad[1] == EV && m.st.unmatched == 1, "mismatch left native");

	/* Native walk cut: one eval frame, two runs: the first in place, the
	 * second outside. */
	uint64_t cut[8] = { 0x100, EV, 0x300 };
	n = ha_pymerge(&m, cut, 3, 8, 1, f, 3, 0);
	EXPECT(n == 5 && strcmp(name_of(cut[1]), "f1") == 0 && strcmp(name_of(cut[2]), "f2") == 0 &&
	       cut[3] == 0x300 && strcmp(name_of(cut[4]), "f3") == 0, "native cut: runs appended");

	/* Python walk cut at its depth: three eval frames, one whole run and
	 * an open one: the outermost eval frame stays native. */
	struct ha_py_frame t[3] = { fr(4, 0, 1), fr(5, 0, 0) };
	uint64_t deep[8] = { 0x100, EV, EV, EV, 0x400 };
	n = ha_pymerge(&m, deep, 5, 8, 0, t, 2, HA_PY_F_TRUNCATED);
	drain(&q);
	EXPECT(n == 5 && strcmp(name_of(deep[1]), "f4") == 0 && strcmp(name_of(deep[2]), "f5") == 0 &&
	       deep[3] == EV, "python cut: outer eval native");

	/* A code object gone: named so, once. */
	struct ha_py_frame d[1] = { { 0xdead, 0x1, HA_PY_RUN_END, 3 } };
	uint64_t gone[4] = { 0x100, EV, 0x400 };
	n = ha_pymerge(&m, gone, 3, 4, 0, d, 1, 0);
	EXPECT(drain(&q) == 1 && n == 3 && strcmp(name_of(gone[1]), "(code object gone)") == 0 &&
	       m.st.frames_gone == 1, "gone code object named");

	/* No room: the merged stack is cut at max. */
	uint64_t small[4] = { EV, 0x200, EV, 0x300 };
	n = ha_pymerge(&m, small, 4, 4, 0, f, 3, 0);
	EXPECT(n == 4 && small[3] == pcs[5], "capped at max: %d", n);

	/* The first pc is the leaf itself, not a return address: pc 0x5000 is
	 * inside, 0x6000 is not (a return address 0x6000 is a call inside). */
	uint64_t edge[4] = { 0x6000, 0x6000 };
	struct ha_py_frame e1[1] = { fr(7, 0, 1) };
	n = ha_pymerge(&m, edge, 2, 4, 0, e1, 1, 0);
	drain(&q);
	EXPECT(n == 2 && edge[0] == 0x6000 && strcmp(name_of(edge[1]), "f7") == 0,
	       "return addresses checked at their call");

	/* 3.12 shape, an empty run marked (an eval loop clearing the frame it
	 * returns from): its eval frame stays, the other runs in place. */
	struct ha_py_frame em[3] = { { 0, 0, HA_PY_RUN_END, 0 }, fr(1, 4, 0), fr(2, 8, 1) };
	uint64_t empty[8] = { 0x100, EV, 0x300, EV, 0x400 };
	n = ha_pymerge(&m, empty, 5, 8, 0, em, 3, 0);
	EXPECT(n == 6 && empty[1] == EV && empty[2] == 0x300 && strcmp(name_of(empty[3]), "f1") == 0 &&
	       strcmp(name_of(empty[4]), "f2") == 0 && empty[5] == 0x400 && m.st.unmatched == 1,
	       "empty run marked: its eval frame kept");

	ha_pymerge_free(&m);
	return UNIT_RESULT("pymerge: runs, mismatches, cuts, cache, gone code objects, empty runs");
}
