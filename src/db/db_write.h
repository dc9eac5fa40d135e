/* db_write.h -- writing the profile database (the attacher).  One writer
 * thread owns a read-write handle.  Every write of a snapshot with call
 * paths is one transaction, so a crash loses at most the snapshot in
 * progress and the totals-only snapshots since the last one (WAL mode). */
#ifndef HA_DB_WRITE_H
#define HA_DB_WRITE_H

#include "db.h"

#include <string.h>
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
	/* Schema version 14 (man heapattach-db(5), "Cadence"): totals_only,
	 * a snapshot without its call paths' rows (buckets must be 0 of them,
	 * memory NULL); has_live, the live totals of the session below are
	 * known (the sum over every bucket of each kind's live_bytes, and of
	 * heap's and mmap's live_count). */
	int totals_only;
	int has_live;
	double live_bytes[HA_KIND_COUNT], live_count;
};

/* Call paths once every two minutes (schema version 14): a periodic snapshot
 * carries its call paths' rows when HA_DB_PATHS_EVERY periods of
 * --snapshot-every have passed since the last one that did (less half a
 * period: a timer's jitter), or when the session is younger than that;
 * every other periodic snapshot holds the totals only.  Every snapshot
 * that is not periodic has its paths.  age, since: seconds since the
 * session's first snapshot and since the last one with paths. */
static inline int ha_db_paths_due(double age, double since, double period)
{
	return !(period > 0) || age < HA_DB_PATHS_EVERY * period ||
	       since >= (HA_DB_PATHS_EVERY - 0.5) * period;
}

/* The same, kept for a session: does a snapshot of reason taken at now
 * (unix time) carry its paths?  Every one that is not periodic does. */
struct ha_db_cadence {
	double first, last;       /* the session's first snapshot, the last with paths */
};
static inline int ha_db_cadence_paths(struct ha_db_cadence *c, const char *reason, double now,
                                      double period)
{
	if (!(c->first > 0))
		c->first = c->last = now;
	int p = strcmp(reason, "periodic") != 0 || ha_db_paths_due(now - c->first, now - c->last, period);
	if (p)
		c->last = now;
	return p;
}

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
 * (db_thin.c: every one of the last 360 periods; older, those with totals
 * only go, those with call paths stay up to 8,640 periods old, then one
 * per 60 -- at 10 s: the last hour, the call paths once every two minutes
 * for a day, then once every ten minutes; never the baseline, the peak,
 * those asked for, the end or the newest), losing no value of a snapshot
 * kept; *removed: how many went.  One transaction (after one writing the
 * totals-only snapshots kept); 0 or -1 with err. */
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
#define HA_DB_REACH_NAME_MAX 1024   /* a holder's name: at most 1,023 bytes */
struct ha_db_reach_holder {
	int64_t stack_id;
	int kind;
	const char *root;         /* "global", "tls", "stack", "register", "anon" */
	char *name;               /* malloc'ed (the owner of the holders frees it); NULL: "" */
	double bytes, count;
	int hops;                 /* the fewest */
	/* Not stored: what the writer's symbolizer adds to name at name[at]
	 * before the row is written (src/record/reach_names.c): a stack's
	 * frame (pc: "tid N in FUNCTION (FILE:LINE)"), a global's
	 * definition (addr in the module at module: "g (FILE:LINE) [prog]"; at 0:
	 * no ELF symbol named it, "g (FILE:LINE) [prog+0x4a10]"), a TLS
	 * variable's (tls: addr is the word's offset in the static TLS block
	 * of the module at module: "t (FILE:LINE) [prog] tid N"; at 0: no ELF
	 * symbol named it, "tls+0x40 [prog] tid N", DWARF's name replaces
	 * its first word). */
	uint64_t pc, addr, module;
	int pc_is_ret, tls;
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

/* Write one snapshot with the buckets that changed since the previous one
 * with paths, in one transaction.  A periodic snapshot with totals only
 * (s->totals_only) is kept in the handle and written in the transaction
 * of the next snapshot (or of thinning, the session's end, the close):
 * one commit every two minutes, not one each 10 s (each commit of the WAL costs a
 * few pages besides its rows); *snapshot_id is then 0.  A kill -9 loses
 * those kept, at most HA_DB_PATHS_EVERY periods of totals. */
int ha_db_snapshot(struct ha_db *db, int64_t session_id, const struct ha_db_snapshot *s,
                   const struct ha_db_bucket *buckets, size_t n, int64_t *snapshot_id,
                   char *err, size_t errlen);

#endif
