/* writer.h -- the database writer thread.  It owns the SQLite handle and
 * the symbolizer; the collector sends it new callstacks (as pcs) and
 * snapshots as messages.  Local stack ids (the collector's) are mapped to
 * database ids here. */
#ifndef HA_WRITER_H
#define HA_WRITER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "alloc_frame.h"
#include "db_write.h"
#include "queue.h"

struct ha_symbolizer;
struct ha_perfmap;
struct ha_jitdump;

/* HA_WMSG_MAPS (a bare struct ha_qmsg): modules were loaded or unloaded in
 * the target; re-read its maps before symbolizing the stacks that follow. */
/* HA_WMSG_PYFRAME (struct ha_wmsg_pyframe, pymerge.h): what a Python
 * frame's pc names, sent before the first stack holding it. */
enum { HA_WMSG_STACK = 1, HA_WMSG_SNAPSHOT = 2, HA_WMSG_END = 3, HA_WMSG_MAPS = 4,
       HA_WMSG_PYFRAME = 5 };

/* A new callstack: its program counters, innermost first.  The writer
 * symbolizes it (first-time symbolization can take a while as debug info
 * loads; that must never hold up the collector draining the ring). */
/* A pc no code has, last in a callstack whose walk failed (the collector
 * keeps the program's call of the allocation function before it): the
 * writer stores it as the frame HA_NOT_UNWOUND_FUNCTION (alloc_frame.h) of
 * no module. */
#define HA_PC_NOT_UNWOUND UINT64_MAX
/* The first of two pcs of a bucket of call paths past the cap
 * (intern.h): the second is an address of the leaf's module (0: none);
 * the writer stores one frame, HA_OVER_CAP_FUNCTION of that module. */
#define HA_PC_OVER_CAP (UINT64_MAX - 1)

struct ha_wmsg_stack {
	struct ha_qmsg q;
	uint32_t local_id;
	int n;
	int first_is_return;          /* pcs[0] is a return address too */
	uint64_t pcs[];
};

struct ha_wmsg_snapshot {
	struct ha_qmsg q;
	struct ha_db_snapshot info;   /* reason is a static string */
	size_t n;
	struct ha_db_bucket *rows;    /* owned by the message; stack_id = local id */
	struct ha_db_memory *mem;     /* info.memory, owned by the message (mem_feed.h) */
	struct ha_db_reach *reach;    /* a reachability scan, or NULL; owned by the
	                               * message, malloc'ed with its rows and holders
	                               * (stack_id = local id) */
};

struct ha_wmsg_end {
	struct ha_qmsg q;
	double end_time;
	char python[400];             /* sessions.python ("": none) */
};

struct ha_writer {
	struct ha_db *db;             /* handed over at start; the writer closes it */
	pid_t pid;                    /* the target, for the symbolizer */
	pid_t own_pid;                /* its pid in its own pid namespace, which
	                               * names its perf map and jitdump (0: pid) */
	int verbose;                  /* -v: what the debug info cache did */
	struct ha_queue *to_live;     /* a live view: each new stack's text goes
	                               * there (live_feed.h); NULL: none */
	/* Told of each snapshot once it is committed, on the writer thread
	 * (heapattach --push: ha_push_snapshot, which never blocks); NULL:
	 * nobody. */
	void (*on_snapshot)(void *arg, int64_t snapshot_id, const char *reason);
	void *on_snapshot_arg;
	int keep_db;                  /* leave db open at the end: after the join
	                               * the caller owns it and closes it (with
	                               * --push, after the push threads' readers,
	                               * so that the last to close the WAL file,
	                               * which removes it, is still the writer) */
	/* Told of each module of code the symbolizer found no debug file for
	 * (symbolize.h, ha_symbolizer_on_missing): heapattach's debuginfod
	 * fetcher; NULL: nobody. */
	void (*on_missing)(void *ctx, const char *module, const unsigned char *id, int len);
	void *missing_ctx;
	int64_t session_id;
	struct ha_queue inbox;
	pthread_t thread;
	uint64_t snapshots_written;   /* relaxed atomic, for status */
	double snapshot_period;       /* --snapshot-every: old periodic snapshots are
	                               * thinned by it (ha_db_thin); 0: never */
	unsigned since_thin;          /* periodic snapshots since the last thinning */
	uint64_t snapshots_thinned;   /* relaxed atomic: removed by thinning */
	uint64_t jit_frames;          /* relaxed atomic: frames named by the perf map */
	int64_t last_snapshot_id;
	struct ha_wmsg_end end;       /* the last message: no allocation can fail it */
	/* Opened by ha_writer_prepare while the target lives, then the
	 * writer thread's. */
	int prepared;
	struct ha_symbolizer *sym;    /* NULL: stacks are stored without names */
	struct ha_perfmap *perfmap;
	struct ha_jitdump *jitdump;
	char sym_err[200];            /* why sym is NULL, if that is a failure */
	int failed;                   /* a write failed; err says why */
	char err[256];
};

/* The inbox, so that messages can be sent before the thread starts. */
void ha_writer_init(struct ha_writer *w);
/* After ha_writer_init (w->pid, own_pid set), on the caller's thread while
 * the target lives: the symbolizer, which opens the files of the target's
 * modules now, and the JIT names (the thread would do it at its start,
 * which waits for the database: the last stacks of a target that exits
 * meanwhile could no longer be named). */
void ha_writer_prepare(struct ha_writer *w);
/* After ha_writer_init: start the thread, which writes what is in the
 * inbox and what comes after (db and session_id set). */
int ha_writer_start(struct ha_writer *w);
/* After ha_writer_init, instead of starting: free every message sent, the
 * inbox (nobody sends any more) and what ha_writer_prepare opened. */
void ha_writer_discard(struct ha_writer *w);
/* Send END and join: every message before it is written. */
void ha_writer_finish(struct ha_writer *w, double end_time);
/* Before ha_writer_finish: what the session found of the target's CPython,
 * recorded with the session's end (sessions.python). */
void ha_writer_note_python(struct ha_writer *w, const char *text);

#endif
