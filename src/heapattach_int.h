/* heapattach_int.h -- what the files of the heapattach command share, and
 * nothing else: the exit codes, what ends a session, the database opened
 * alongside the injection, and each file's entry points.
 *
 * The command is one file a concern, and they call one way only:
 *
 *   heapattach.c            main: the order of events, the refusals
 *     -> heapattach_args.c     options (a leaf)
 *     -> heapattach_db.c       the database's name, checks and open (a leaf)
 *     -> heapattach_session.c  the agent: inject, handshake, detach
 *     -> heapattach_stay.c     cmd_setup_signals, cmd_stop_pending only
 *     -> heapattach_trim.c     --trim: predict, malloc_trim(0), measure
 *          -> heapattach_session.c (attach, detach)
 *     -> heapattach_record.c   one recording session, start to summary
 *          -> heapattach_session.c (detach), heapattach_db.c,
 *             heapattach_live.c, heapattach_status.c (the summary)
 *          -> heapattach_stay.c   the loop while attached
 *               -> heapattach_live.c, heapattach_status.c (the line)
 *
 * No file calls back into one that calls it; heapattach_live.c and
 * heapattach_status.c call only libraries.
 */
#ifndef HA_HEAPATTACH_INT_H
#define HA_HEAPATTACH_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "heapattach_args.h"
#include "mem_alloc.h"
#include "py_detect.h"

struct ha_collector;
struct ha_fetcher;
struct ha_counters;
struct ha_db;
struct ha_db_session;
struct ha_live;
struct ha_pf;
struct ha_push;
struct ha_py_reader;
struct ha_queue;
struct ha_session;
struct ha_target;
struct ha_view;
struct ha_writer;

/* heapattach(1)'s exit status: 0 for a session recorded (or a target that
 * exited), 1 refused before the target was touched, 2 a usage error, 3 a
 * failure once under way. */
enum { EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_FAILED = 3 };

/* What ends a session. */
enum stop_reason { STOP_SIGNAL, STOP_DURATION, STOP_TARGET_EXIT, STOP_TARGET_EXEC, STOP_AGENT_LOST };

/* ---- heapattach_db.c: the database ---------------------------------- */

/* Opening (and checking, or creating) the database costs a few ms of CPU;
 * on a busy machine every ms the attacher spends before the agent is ready
 * adds many more of waiting for a CPU, so it is done on its own thread while
 * the agent is injected. */
struct db_open_job {
	const char *path;
	struct ha_db *db;
	double ms;
	int rc;
	const char *gate;       /* $HEAPATTACH_TEST_DB_GATE (tests only), or NULL */
	int threaded;           /* th runs db_open_thread */
	int done;               /* opened (or failed) already, before the attach */
	pthread_t th;
	char err[512];
};

void default_db_name(const struct ha_target *t, char *out, size_t outlen);
int db_path_usable(const char *path, char *err, size_t errlen);
void db_open_start(struct db_open_job *j);
int db_open_finish(struct db_open_job *j);
void db_open_abandon(struct db_open_job *j);

/* ---- heapattach_py.c: the target's CPython -------------------------- */

struct cmd_python {
	int found;                  /* a CPython we walk */
	struct ha_py_target t;      /* what ha_py_detect found */
	char why[640];              /* found: which; else why not ("" : none) */
	struct ha_py_reader *reader; /* the collector's, during the session */
};

void cmd_py_detect(const struct options *o, const struct ha_target *t, struct cmd_python *py);
void cmd_py_collector(struct cmd_python *py, struct ha_collector *c, pid_t pid);
void cmd_py_end(struct cmd_python *py);
/* At the end: what became of the frames and the wrap, for sessions.python. */
void cmd_py_note(const struct cmd_python *py, struct ha_collector *c, struct ha_writer *w);

/* ---- heapattach_reach.c: the reachability scan (--reach, SIGUSR2) ---- */

struct cmd_reach {
	pid_t pid;
	struct ha_ring_hdr *ring;   /* the first ring's header: the park (reach.h) */
	int at_end;                 /* --reach: a scan at the final snapshot */
	int verbose;
	int scans;                  /* scans that ran */
	int pending;                /* a "reach" snapshot asked for and not yet taken */
	char last_err[200];         /* the last reason none could ("": none) */
	/* cmd_reach_last waits for every scan asked to be done */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned asked, done;       /* "reach" snapshots asked for, and scanned */
};

struct ha_book;
struct ha_unwinder;
struct ha_wmsg_snapshot;
/* The collector's hook (collector.h: reach), ctx a struct cmd_reach. */
void cmd_reach_hook(void *ctx, const struct ha_book *book, struct ha_unwinder *unw,
                    struct ha_wmsg_snapshot *m);
/* Ask the collector for a snapshot with a scan, unless one is asked already
 * (the main thread: the --reach timer, SIGUSR2). */
void cmd_reach_ask(struct ha_collector *c);
/* --reach: the session's last scan, before a detach (the agent's hooks
 * still in, so its park works on a busy target): asked as a "reach"
 * snapshot and waited for; the detach's snapshot scans no more.  The main
 * thread, before cmd_detach. */
void cmd_reach_last(struct ha_collector *c);

/* ---- heapattach_session.c: the agent -------------------------------- */

int cmd_find_agent(const struct options *o, char *out, size_t outlen);
int cmd_attach(const struct options *o, const struct ha_target *t, struct ha_session *s,
               const struct cmd_python *py, struct db_open_job *dbj, double t_start,
               double t_checked);
int cmd_detach(const struct options *o, const struct ha_target *t, struct ha_session *s,
               enum stop_reason why, int signo);

/* ---- heapattach_trim.c: --trim and --trim=predict -------------------- */

/* Predict, then (unless --trim=predict) attach, malloc_trim(0) on the
 * agent's thread, the drop measured, detach.  Returns the exit status. */
/* --live's t: predict, have the agent call malloc_trim(0), measure; msg:
 * the line for the view (predicted against measured, or why not). */
/* Another allocator's figures at each snapshot (heapattach_alloc.c). */
struct cmd_alloc {
	struct ha_session *s;
	int verbose;
	int off;                   /* not asked any more (relaxed atomic) */
	int fails;                 /* in a row (the collector's) */
	int detached;              /* the agent is gone: last stands (atomic) */
	pthread_mutex_t mu;        /* last, t_last */
	struct ha_mem_alloc last;
	double t_last;             /* ha_now_ms() of last; 0: none */
};
void cmd_alloc_init(struct cmd_alloc *a, struct ha_session *s, int verbose);
/* The collector's hook (collector.h: alloc_ask), ctx a struct cmd_alloc. */
int cmd_alloc_hook(void *ctx, struct ha_mem_alloc *out);
/* Just before the detach: ask once more, and let that answer stand for
 * the final snapshot, taken after it. */
void cmd_alloc_last(struct cmd_alloc *a);
/* Ask the agent for the allocator's figures and check them: 0 or -1 with err. */
int cmd_alloc_read(struct ha_session *s, int timeout_ms, struct ha_mem_alloc *out, char *err,
                   size_t errlen);
void cmd_trim_now(pid_t pid, struct ha_session *s, int timeout_ms, char *msg, size_t len);
int cmd_trim(const struct options *o, const struct ha_target *t, struct ha_session *s,
             double t_start, double t_checked);

/* ---- heapattach_stay.c: signals, timers, the loop while attached ---- */

int cmd_setup_signals(void);
int cmd_stop_pending(const char **name);
enum stop_reason cmd_stay_attached(const struct options *o, struct ha_session *s, int sigfd,
                                   struct ha_collector *coll, struct ha_live *live,
                                   struct ha_view *view, struct ha_push *push, int *signo);

/* ---- heapattach_status.c: what the user reads of the counters ------- */

void cmd_print_status(struct ha_collector *c, const struct ha_session *s,
                      uint64_t *last_samples, struct ha_live *live, struct ha_push *push);
void cmd_print_summary(const struct options *o, const struct ha_session *s,
                       struct ha_collector *c, const struct ha_writer *w,
                       const struct ha_db_session *info, const char *dbname);
void cmd_print_push(const struct ha_push *push);

/* ---- heapattach_live.c: the live model and the --live view ---------- */

/* The view and the stderr it holds while it owns the terminal. */
struct cmd_view {
	struct ha_view *view;   /* NULL: no view */
	int saved_stderr;       /* the real stderr while held, or -1 */
	int held;               /* the memory file holding what was said, or -1 */
};

struct ha_live *cmd_live_start(const struct options *o, const struct ha_target *t,
                               double start_time, struct ha_queue *q);
void cmd_live_feed(struct ha_queue *q, struct ha_live *live, int wait_ms);
void cmd_live_end(struct ha_queue *q, struct ha_live *live);
void cmd_view_open(const struct options *o, struct ha_live *live, struct cmd_view *v);
void cmd_view_close(struct cmd_view *v);

/* ---- heapattach_record.c: one recording session --------------------- */

struct ha_pf *cmd_open_rss(const struct options *o, pid_t pid);
int cmd_profile(const struct options *o, const struct ha_target *t, struct ha_session *s,
                struct cmd_python *py, int sigfd, struct db_open_job *dbj, const char *dbname,
                struct ha_pf *pf);

/* The debuginfod fetcher of this session (debuginfod_fetch.h), for the
 * status line; NULL: none.  The main thread's. */
extern struct ha_fetcher *cmd_fetcher;

#endif
