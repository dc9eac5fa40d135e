/* db_write.h -- writing the profile database (the attacher).  One writer
 * thread owns a read-write handle.  Every write of a snapshot is one
 * transaction, so a crash loses at most the snapshot in progress (WAL
 * mode). */
#ifndef HA_DB_WRITE_H
#define HA_DB_WRITE_H

#include "db.h"
#include "mem_terms.h"

struct ha_db_session {
	pid_t pid;
	const char *comm;
	const char *exe;
	uint64_t interval;        /* mean sampling interval, bytes */
	double start_time;        /* unix time, seconds */
	uint64_t rss_period;      /* page faults per --rss sample; 0: no --rss */
	const char *hostname;     /* the attacher's host (NULL: '') */
};

struct ha_db_frame {
	const char *module;
	const char *build_id;
	uint64_t rel_pc;
	const char *function;
	const char *file;
	int line;
	int inlined;
};

/* Cumulative values of one callstack in a session at snapshot time
 * (unbiased estimates: sampled bytes and counts times their weights). */
struct ha_db_bucket {
	int64_t stack_id;         /* from ha_db_stack */
	int kind;                 /* enum ha_mem_kind */
	double alloc_count, alloc_bytes;
	double free_count, free_bytes;
	double live_count, live_bytes;
};

/* Where RssAnon goes at a snapshot (schema version 10: memory_terms,
 * memory_arenas; src/rss/mem_view.h measures it). */
struct ha_db_arena {
	int is_main, complete;
	uint32_t heaps;
	uint64_t address, system, in_use, free, top, resident, trimmable, pinned;
};
/* The pinned bytes charged to one call path's sampled blocks (schema
 * version 13: memory_pinning; src/rss/mem_pin.h). */
struct ha_db_pin {
	int64_t stack_id;         /* a database stack id when written */
	double bytes, blocks;
};
struct ha_db_memory {
	char allocator[160];
	uint64_t rss_anon;
	int64_t terms[HA_MT_COUNT];   /* enum ha_mem_term */
	size_t narenas;
	struct ha_db_arena *arenas;
	size_t npins;
	struct ha_db_pin *pins;
	/* the CPUs it may use (version 13; src/rss/mem_cpus.h): online on the
	 * host, in its affinity (0: unknown), its cgroup's quota (0: none) */
	int cpus_online, cpus_allowed;
	double cpu_quota;
};

struct ha_db_snapshot {
	double time;              /* unix time, seconds */
	uint64_t rss_bytes;
	/* rss_last: the target's memory could not be read at time (it was
	 * gone, or exiting): rss_bytes, rss_anon_bytes and swap_bytes are the
	 * last figures read, at rss_time (0 and all 0: none was) --
	 * snapshots.rss_read_time. */
	int rss_last;
	double rss_time;
	uint64_t samples, drops, unwind_failures;
	const char *reason;       /* "periodic", "signal", "detach", "exit" */
	uint64_t sample_interval; /* largest interval in effect since the last one */
	uint64_t rss_anon_bytes, swap_bytes; /* RssAnon and VmSwap of the target */
	uint64_t rss_samples, rss_lost;      /* page-fault samples booked, lost */
	uint64_t frames, fp_frames;          /* pcs unwound, of which by frame pointer */
	const struct ha_db_memory *memory;   /* NULL: not read */
};

/* Open or create for writing.  A file that is not a heapattach database, or
 * of a schema version outside HA_DB_SCHEMA_VERSION_MIN..HA_DB_SCHEMA_VERSION,
 * is refused with a clear err and left as is; an older known version is
 * upgraded in place (one transaction that only adds views and columns).
 * Closed with ha_db_close. */
int ha_db_open(const char *path, struct ha_db **out, char *err, size_t errlen);
/* What ha_db_open checks of the names first, for a caller that must refuse
 * before doing anything else: neither the file nor its -wal or -shm is a
 * symbolic link (ha_db_open creates a new file 0600, with O_EXCL and
 * O_NOFOLLOW).  0, or -1 with err. */
int ha_db_path_check(const char *path, char *err, size_t errlen);

/* 0 or -1 with err; ids > 0. */
int ha_db_begin_session(struct ha_db *db, const struct ha_db_session *s, int64_t *session_id,
                        char *err, size_t errlen);
int ha_db_end_session(struct ha_db *db, int64_t session_id, double end_time,
                      char *err, size_t errlen);
/* What the session found of the target's CPython (sessions.python). */
int ha_db_session_python(struct ha_db *db, int64_t session_id, const char *python, char *err,
                         size_t errlen);
/* Intern a callstack (frames leaf first, inline frames included) and
 * return its id; the same content gives the same id. */
int ha_db_stack(struct ha_db *db, const struct ha_db_frame *frames, int n, int64_t *stack_id,
                char *err, size_t errlen);
/* Intern many callstacks in one transaction (one commit instead of one
 * per stack): ha_db_batch_begin, ha_db_stack calls (a failed one leaves
 * the others), ha_db_batch_commit.  If the commit fails, none of the
 * batch's ids is valid. */
int ha_db_batch_begin(struct ha_db *db, char *err, size_t errlen);
int ha_db_batch_commit(struct ha_db *db, char *err, size_t errlen);
/* Thin the session's old periodic snapshots, taken every period seconds
 * (db_thin.c: every one of the last 360 periods, one per 6 up to 2,160
 * periods old, one per 60 older -- at 10 s: the last hour, one a minute up
 * to six hours, one every ten minutes; never the baseline, the peak, those
 * asked for, the end or the newest), losing no value of a snapshot kept;
 * *removed: how many went.  One transaction; 0 or -1 with err. */
int ha_db_thin(struct ha_db *db, int64_t session_id, double period, int *removed, char *err,
               size_t errlen);

/* A reachability scan at a snapshot (schema version 10: reach_scans,
 * reach_rows, reach_holders; db_reach.c).  stack_id: a database stack id
 * when written. */
struct ha_db_reach_row {
	int64_t stack_id;
	int kind;
	double unreachable_bytes, unreachable_count;
	double reachable_bytes, reachable_count;
	double unknown_bytes, unknown_count;
};
struct ha_db_reach_holder {
	int64_t stack_id;
	int kind;
	const char *root;         /* "global", "tls", "stack", "register", "anon" */
	char name[128];
	double bytes, count;
	int hops;                 /* the fewest */
	/* Not stored: what the writer's symbolizer adds to name at name[at]
	 * before the row is written (src/record/reach_names.c): a stack's
	 * frame (pc: "tid N in FUNCTION (FILE:LINE)"), a global's
	 * definition (addr in the module at module: "g (FILE:LINE) [prog]"). */
	uint64_t pc, addr, module;
	int pc_is_ret;
	size_t at;
};
struct ha_db_reach {
	double pause_ms, duration_ms;
	uint64_t bytes_scanned, cow_bytes, chunks, blocks;
	char error[200];          /* "": the scan ran */
	struct ha_db_reach_row *rows;
	size_t nrows;
	struct ha_db_reach_holder *holders;
	size_t nholders;
};
/* Write the scan of snapshot_id, one transaction.  0 or -1 with err. */
int ha_db_reach(struct ha_db *db, int64_t snapshot_id, const struct ha_db_reach *r, char *err,
                size_t errlen);

/* Write one snapshot with the buckets that changed since the previous one,
 * in one transaction. */
int ha_db_snapshot(struct ha_db *db, int64_t session_id, const struct ha_db_snapshot *s,
                   const struct ha_db_bucket *buckets, size_t n, int64_t *snapshot_id,
                   char *err, size_t errlen);

#endif
