/* unwind_check.h -- what the two halves of the unwinder's self-test share
 * (tests/unwind_check.c and unwind_check_hostile.c check,
 * tests/unwind_child.c is the child side):
 * the capture record a child leaves in shared memory (or a target writes
 * to a file for --attach), and the scenarios a child can run. */
#ifndef HA_TESTS_UNWIND_CHECK_H
#define HA_TESTS_UNWIND_CHECK_H

#include <stdint.h>
#include <sys/types.h>

#include "ha_proto.h"

#define STACK_CAP (64 * 1024)
#define MAX_PCS 128
#define MAX_FR 512
#define UC_MAGIC 0x3143455244574e55ull /* "UNWDREC1" */

/* What a capture leaves behind (shared memory here, a file for --attach):
 * this header, then stack_len bytes copied from regs[1] (rsp) upward.
 * lines[i]: the source line frame i must show (0: not checked). */
struct uc_record {
	uint64_t magic;
	uint64_t regs[8];        /* rip rsp rbp rbx r12 r13 r14 r15 */
	uint64_t stack_len;
	int32_t lines[16];
};
_Static_assert(sizeof(struct uc_record) == 144, "record layout (tests/t_unwind.sh has a copy)");
_Static_assert(sizeof(struct ha_regs) == 8 * 8, "regs layout");

/* The file whose frames the self-test checks by file:line. */
#define UC_CHILD_FILE "unwind_child.c"

#define MANY_LEVELS 3
#define MANY_N 512                /* 8^MANY_LEVELS */
#define MANY_CAP 16384
#define MANY_SLOT (sizeof(struct uc_record) + MANY_CAP)
extern uint8_t *g_many;           /* shared: MANY_N slots (unwind_child.c) */
extern volatile int q_captured;    /* SC_QSORT captures in the first comparison */

enum scenario { SC_CHAIN, SC_QSORT, SC_DEEP, SC_SIGNAL, SC_MANY };
#define DEEP_DEPTH 40

struct child {
	pid_t pid;
	int release_w;
	struct uc_record *rec;
};

/* The capture's registers as the unwinder takes them (unwind_check.c). */
struct ha_regs;
void rec_regs(const struct uc_record *r, struct ha_regs *regs);
/* The checks on damaged copies, a pc past its segment, a return address's
 * state, a stale map (unwind_check_hostile.c): how many failed. */
struct ha_unwinder;
int uc_hostile_copies(struct ha_unwinder *u, pid_t pid, const struct uc_record *r);

/* Fork a child that runs scenario sc and waits, captured, until reap. */
int spawn(enum scenario sc, struct child *ch);
void reap(struct child *ch);

#endif
