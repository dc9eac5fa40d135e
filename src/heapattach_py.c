/* heapattach_py.c -- the target's CPython (issue 37): found before the
 * attach, so that the agent is told how to walk a sampling thread's Python
 * frames (struct ha_py_walk in HA_MSG_CONFIG); read during the session, so
 * that the collector names the frames the agent recorded (a reader of the
 * target's code objects, src/pyframes/, used on the collector thread only).
 * A target without CPython, or with one we do not support, is profiled as
 * before: its frames stay native, and -v says why. */
#define _GNU_SOURCE
#include "heapattach_int.h"

#include <stdio.h>
#include <string.h>

#include "procmaps.h"
#include "collector.h"
#include "py_read.h"
#include "pymerge.h"
#include "target.h"
#include "writer.h"

void cmd_py_detect(const struct options *o, const struct ha_target *t, struct cmd_python *py)
{
	struct ha_maps maps = { 0 };
	memset(py, 0, sizeof *py);
	if (o->python == HA_PYTHON_OFF) {
		snprintf(py->why, sizeof py->why, "--python off");
		if (o->verbose)
			fprintf(stderr, "heapattach: --python off: no Python frames\n");
		return;
	}
	if (ha_maps_read(t->pid, &maps) < 0) {
		snprintf(py->why, sizeof py->why, "cannot read the maps of %d", (int)t->pid);
		return;
	}
	int r = ha_py_detect(t->pid, &maps, &py->t, py->why, sizeof py->why);
	ha_maps_free(&maps);
	py->found = r == 0;
	if (py->found)
		snprintf(py->why, sizeof py->why, "Python %d.%d (%s)", py->t.major, py->t.minor,
		         py->t.module);
	if (o->verbose && (py->found || py->why[0]))
		fprintf(stderr, "heapattach: %s%s\n", py->why,
		        py->found ? ": Python frames in every stack" : "; no Python frames");
}

/* The collector's resolver (pymerge.h): a recorded frame named. */
static int py_resolve(void *ctx, const struct ha_py_frame *f, const char **func, const char **file,
                      int *line)
{
	struct ha_py_loc loc;
	if (ha_py_code_resolve(ctx, f->code, f->ident, f->firstlineno, f->lasti & ~HA_PY_RUN_END,
	                       &loc) != HA_PY_CODE_OK)
		return -1;
	*func = loc.func;
	*file = loc.file;
	*line = loc.line > 0 ? loc.line : 0;
	return 0;
}

void cmd_py_collector(struct cmd_python *py, struct ha_collector *c, pid_t pid)
{
	if (!py->found || !(py->reader = ha_py_reader_new(pid, &py->t)))
		return;
	c->py_eval[0][0] = py->t.eval_start;
	c->py_eval[0][1] = py->t.eval_end;
	c->py_eval[1][0] = py->t.eval_cold_start;
	c->py_eval[1][1] = py->t.eval_cold_end;
	c->py_resolve = py_resolve;
	c->py_resolve_ctx = py->reader;
}

void cmd_py_end(struct cmd_python *py)
{
	ha_py_reader_free(py->reader);
	py->reader = NULL;
}

void cmd_py_note(const struct cmd_python *py, struct ha_collector *c, struct ha_writer *w)
{
	if (!py->found)
		return;
	struct ha_collector_stats st;
	char text[400];
	ha_collector_read_stats(c, &st);
	snprintf(text, sizeof text, "%.200s: %llu samples with Python frames, %llu left native; %s",
	         py->why, (unsigned long long)st.py_samples, (unsigned long long)st.py_unmatched,
	         ha_py_wrap_words((uint32_t)st.py_wrap));
	ha_writer_note_python(w, text);
}
