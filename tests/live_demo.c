/* live_demo -- heapattach --live's view (src/live/live_view.c) on a made-up
 * session, without a target: a model (src/live/live_model.h) fed with a
 * frame a second and the stacks' text, as the collector and the writer
 * would, and the view drawn from it and driven by the keys.
 * tests/t_live_view.sh runs it under tmux.
 *
 *   live_demo [-n ROWS] [-r] [-i MS] [-g FRAME] [-w] [-v]
 *     -n ROWS  call paths (2000; at least 20)
 *     -r       a session with --rss: resident rows and memory
 *     -i MS    the refresh period (1000)
 *     -g FRAME the target gone from frame FRAME on: its RSS the last read
 *     -w       SIGWINCH blocked and read from a signalfd, as heapattach
 *              reads its signals: a resize is a draw (else ncurses' handler
 *              and the poll's EINTR)
 *     -v       at exit, on stderr: the CPU of a refresh and of a frame
 *
 * The rows, by id (each a bucket: a stack and a kind):
 *   1 static_cache   50 MiB live from the start, never grows
 *   2 leak_fast      +1 MiB a frame (the top grower)
 *   3 mmap_arena     +512 KiB of mmap a frame
 *   4 rss_pages      +256 KiB resident a frame (-r only)
 *   5..8             growing, hostile names: escape sequences, bell, newlines,
 *                    invalid UTF-8, C1 controls, bidi overrides, very long
 *                    and double-width names, in function, file and module
 *   9                never symbolized ("(symbolizing...)"), +128 KiB a frame
 *   10 late_symbols  symbolized after 3 frames (so are ids divisible by 97),
 *                    +96 KiB a frame
 *   11 shrinker      grows for 5 frames, then frees
 *   12..             worker_NNNNN: heap (every 5th mmap), most growing at
 *                    their own pace, every 3rd only live; but every 8th
 *                    (19, 27, ...) is intern_key, the helper (through
 *                    operator new, which the view folds away), called by
 *                    parse_header, parse_cookie or load_route from
 *                    route_NNNNN: each path as small as a worker's, together
 *                    (f: functions) the top grower, several MiB a frame
 * s asks for a snapshot: the view says "snapshot requested"; q exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "live_model.h"
#include "live_view.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

static int rss_on;

static double now_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What a row's bucket holds after frame f (from 1). */
static void row_values(uint32_t id, int f, int *kind, double *bytes, double *count)
{
	*kind = HA_KIND_HEAP;
	switch (id) {
	case 1: *bytes = 50 * MIB; *count = 1600; return;
	case 2: *bytes = f * MIB; *count = f * 256.0; return;
	case 3: *kind = HA_KIND_MMAP; *bytes = f * 512 * KIB; *count = f; return;
	case 4: *kind = HA_KIND_RSS; *bytes = f * 256 * KIB; *count = f * 64.0; return;
	case 9: *bytes = f * 128 * KIB; *count = f * 2.0; return;
	case 10: *bytes = f * 96 * KIB; *count = f * 3.0; return;
	case 11: *bytes = (f <= 5 ? f : f < 10 ? 10 - f : 0) * 64 * KIB; *count = *bytes / 4096; return;
	}
	if (id >= 12 && id % 5 == 0)
		*kind = HA_KIND_MMAP;
	double pace = (id * 7 % 13 + 1) * 4 * KIB;
	*bytes = id >= 12 && id % 3 == 0 ? pace * 4 : pace * f;
	*count = *bytes / 512;
}

/* The frames of a row's stack, leaf first (functions, files, modules). */
struct frame_src {
	const char *function, *file, *module;
	int line, inlined;
};

static int stack_of(uint32_t id, struct frame_src *fr, char *name, size_t len)
{
	static const char *svc = "/usr/bin/demo_service", *lib = "/usr/lib/x86_64-linux-gnu/libdemo.so.1";
	static char longname[700], longfile[700];
	int n = 0;
	if (!longname[0]) {
		for (size_t i = 0; i < sizeof longname - 1; i++)
			longname[i] = "very_long_function_name_"[i % 24];
		snprintf(longfile, sizeof longfile, "/src/%.*s/deep/file.c", 600, longname);
	}
	switch (id) {
	case 1: snprintf(name, len, "static_cache"); break;
	case 2: snprintf(name, len, "leak_fast"); break;
	case 3: snprintf(name, len, "mmap_arena"); break;
	case 4: snprintf(name, len, "rss_pages"); break;
	case 5:
		fr[n++] = (struct frame_src){ "evil\033[2J\033[31mred\007bell\nnewline\rcr\tx", "/tmp/\033]0;title\007x.c",
		                              "/tmp/\033[5mlib.so", 5, 0 };
		fr[n++] = (struct frame_src){ "caller\033[H\033[2Jwipe", "ok.c", svc, 6, 1 };
		break;
	case 6:
		fr[n++] = (struct frame_src){ longname, longfile, longfile, 123456, 0 };
		break;
	case 7:
		fr[n++] = (struct frame_src){ "bad\xff\xfe utf8\xc2\x9b" "31m c1 \xc0\xaf overlong", "b\x9b" "1m.c", lib, 7, 0 };
		break;
	case 8:
		fr[n++] = (struct frame_src){ "wide_\xe5\x87\xbd\xe6\x95\xb0_e\xcc\x81_\xe2\x80\xae" "desrever", "w.c", lib, 8, 0 };
		break;
	case 10: snprintf(name, len, "late_symbols"); break;
	case 11: snprintf(name, len, "shrinker"); break;
	default:
		if (id % 8 == 3) { /* the helper, from many call paths */
			static const char *parsers[] = { "parse_header", "parse_cookie", "load_route" };
			snprintf(name, len, "route_%05u", id);
			fr[n++] = (struct frame_src){ "operator new(unsigned long)", "", "/usr/lib/libstdc++.so.6", 0, 0 };
			fr[n++] = (struct frame_src){ "intern_key", "src/intern.c", svc, 42, 0 };
			fr[n++] = (struct frame_src){ parsers[id / 16 % 3], "src/parse.c", svc, 70 + (int)(id / 16 % 3), 0 };
			fr[n++] = (struct frame_src){ name, "src/routes.c", svc, (int)(id % 500) + 1, 0 };
		} else {
			snprintf(name, len, "worker_%05u", id);
		}
		break;
	}
	if (n == 0)
		fr[n++] = (struct frame_src){ name, "src/worker.c", id % 4 ? svc : lib, (int)(id % 500) + 1, 0 };
	static const char *callers[] = { "handle_request", "dispatch", "event_loop", "serve", "main",
	                                 "__libc_start_call_main" };
	int depth = 2 + (int)(id % 5);
	for (int i = 0; i < depth && i < 6; i++)
		fr[n++] = (struct frame_src){ callers[6 - depth + i], "src/service.c", svc, 100 + i * 10, 0 };
	return n;
}

static struct ha_qmsg *stack_msg(uint32_t id)
{
	struct frame_src fr[16];
	char name[64];
	int n = stack_of(id, fr, name, sizeof name);
	size_t text = 0;
	for (int i = 0; i < n; i++)
		text += strlen(fr[i].function) + strlen(fr[i].file) + strlen(fr[i].module) + 3;
	struct ha_lmsg_stack *m = malloc(sizeof *m + n * sizeof m->f[0] + text);
	if (!m)
		return NULL;
	char *p = (char *)&m->f[n];
	m->q.type = HA_LMSG_STACK;
	m->id = id;
	m->n = n;
	for (int i = 0; i < n; i++) {
		const char *s[3] = { fr[i].function, fr[i].file, fr[i].module };
		const char *d[3];
		for (int k = 0; k < 3; k++) {
			d[k] = p;
			p = stpcpy(p, s[k]) + 1;
		}
		m->f[i] = (struct ha_live_text){ d[0], d[1], d[2], fr[i].line, fr[i].inlined };
	}
	return &m->q;
}

/* -g N: the target is gone from frame N on (its RSS the last read). */
static int gone_from;
static uint64_t last_rss;

static struct ha_qmsg *frame_msg(size_t rows, int f)
{
	struct ha_lmsg_frame *m = calloc(1, sizeof *m + rows * sizeof m->rows[0]);
	if (!m)
		return NULL;
	m->q.type = HA_LMSG_FRAME;
	m->time = now_s(CLOCK_REALTIME);
	m->samples = (uint64_t)f * 1234 + (uint64_t)f * f;
	m->drops = f > 20 ? (uint64_t)(f - 20) * 3 : 0;
	m->interval = 512 * 1024;
	m->rss_on = rss_on;
	size_t n = 0;
	for (uint32_t id = 1; n < rows; id++) {
		int kind;
		double bytes, count;
		row_values(id, f, &kind, &bytes, &count);
		if (kind == HA_KIND_RSS && !rss_on)
			continue;
		m->rows[n++] = (struct ha_live_bucket){ id, kind, bytes, count, bytes, count };
		m->kind_bytes[kind] += bytes;
	}
	m->n = n;
	double wobble = (f % 7) * 3 * MIB;
	m->rss_bytes = (uint64_t)(m->kind_bytes[HA_KIND_HEAP] + m->kind_bytes[HA_KIND_MMAP] + 30 * MIB + wobble);
	m->rss_anon_bytes = rss_on ? (uint64_t)(m->kind_bytes[HA_KIND_RSS] + 20 * MIB) : 0;
	m->rss_samples = rss_on ? (uint64_t)f * 100 : 0;
	if (gone_from > 0 && f >= gone_from) {
		m->rss_last = 1;
		m->rss_bytes = last_rss;
		m->rss_time = m->time - 1.5;
	}
	last_rss = m->rss_bytes;
	return &m->q;
}

/* Frame f and the stacks that become known with it. */
static double feed(struct ha_live *l, size_t rows, int f)
{
	double t0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	struct ha_qmsg *m = frame_msg(rows, f);
	if (m)
		ha_live_take(l, m);
	double cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
	for (uint32_t id = 1; id <= rows + 1; id++) {
		int late = id == 10 || id % 97 == 0;
		if (id == 9 || (late ? f != 4 : f != 1))
			continue;
		if ((m = stack_msg(id)) != NULL)
			ha_live_take(l, m);
	}
	return cpu;
}

int main(int argc, char **argv)
{
	size_t rows = 2000;
	int period_ms = 1000, verbose = 0, winch_fd = -1, c;
	while ((c = getopt(argc, argv, "n:ri:g:wv")) != -1) {
		switch (c) {
		case 'n': rows = strtoul(optarg, NULL, 10); break;
		case 'r': rss_on = 1; break;
		case 'g': gone_from = atoi(optarg); break;
		case 'i': period_ms = atoi(optarg); break;
		case 'v': verbose = 1; break;
		case 'w': {
			sigset_t m;
			sigemptyset(&m);
			sigaddset(&m, SIGWINCH);
			sigprocmask(SIG_BLOCK, &m, NULL);
			winch_fd = signalfd(-1, &m, SFD_CLOEXEC | SFD_NONBLOCK);
			break;
		}
		default:
			fprintf(stderr, "usage: live_demo [-n ROWS] [-r] [-i MS] [-g FRAME] [-w] [-v]\n");
			return 2;
		}
	}
	if (rows < 20)
		rows = 20;
	if (period_ms < 10)
		period_ms = 10;

	char err[256];
	struct ha_live *l = ha_live_new(getpid(), "demo\033[7m", now_s(CLOCK_REALTIME));
	struct ha_view *v = l ? ha_view_open(err, sizeof err) : NULL;
	if (!v) {
		fprintf(stderr, "live_demo: %s\n", l ? err : "out of memory");
		ha_live_free(l);
		return 1;
	}
	int f = 1, draws = 0;
	double frame_cpu = feed(l, rows, f), draw_cpu = 0;
	ha_view_draw(v, l);
	double next = now_s(CLOCK_MONOTONIC) + period_ms / 1e3;
	for (;;) {
		double wait = next - now_s(CLOCK_MONOTONIC);
		struct pollfd p[2] = { { ha_view_fd(v), POLLIN, 0 }, { winch_fd, POLLIN, 0 } };
		int rc = poll(p, winch_fd >= 0 ? 2 : 1, wait > 0 ? (int)(wait * 1e3) + 1 : 0);
		if (rc > 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(winch_fd, &si, sizeof si) == sizeof si)
				;
			ha_view_draw(v, l); /* follows the new size */
		}
		if (rc < 0 || (p[0].revents & POLLIN)) { /* a key, or EINTR (SIGWINCH): ncurses has a KEY_RESIZE */
			enum ha_view_action a = ha_view_input(v, l);
			if (a == HA_VIEW_QUIT)
				break;
			if (a == HA_VIEW_SNAPSHOT)
				ha_view_message(v, "snapshot requested");
		}
		if (now_s(CLOCK_MONOTONIC) >= next) {
			frame_cpu += feed(l, rows, ++f);
			double t0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
			ha_view_draw(v, l);
			draw_cpu += now_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
			draws++;
			next += period_ms / 1e3;
		}
	}
	ha_view_close(v);
	if (winch_fd >= 0)
		close(winch_fd);
	if (verbose)
		fprintf(stderr,
		        "live_demo: %zu rows, %d refreshes: %.3f ms of CPU a refresh (the model's rows and the "
		        "drawing), %.3f ms a frame taken\n",
		        rows, draws, draws ? draw_cpu * 1e3 / draws : 0.0, frame_cpu * 1e3 / f);
	ha_live_free(l);
	return 0;
}
