/* db_memory.c -- a snapshot's memory breakdown written (schema version
 * 10): the two columns of snapshots, the rows of memory_terms and
 * memory_arenas, and (version 13) of memory_pinning; inside the snapshot's
 * transaction (db_write.c). */
#include "db_memory.h"

#include <stdio.h>

static int step(struct ha_db *db, sqlite3_stmt *q, char *err, size_t errlen)
{
	int rc = sqlite3_step(q);
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return sql_fail(db, err, errlen, "writing the memory breakdown");
	return 0;
}

int db_write_memory(struct ha_db *db, int64_t sid, const struct ha_db_memory *m, char *err,
                    size_t errlen)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->h, "UPDATE snapshots SET memory_rss_anon_bytes = ?2,"
	                       " memory_allocator = ?3, memory_cpus_online = ?4,"
	                       " memory_cpus_allowed = ?5, memory_cpu_quota = ?6 WHERE id = ?1", -1,
	                       &q, NULL) != SQLITE_OK)
		return sql_fail(db, err, errlen, "writing the memory breakdown");
	sqlite3_bind_int64(q, 1, sid);
	sqlite3_bind_int64(q, 2, (int64_t)m->rss_anon);
	sqlite3_bind_text(q, 3, m->allocator, -1, SQLITE_TRANSIENT);
	if (m->cpus_online > 0)
		sqlite3_bind_int(q, 4, m->cpus_online);
	if (m->cpus_allowed > 0)
		sqlite3_bind_int(q, 5, m->cpus_allowed);
	if (m->cpu_quota > 0)
		sqlite3_bind_double(q, 6, m->cpu_quota);
	if (step(db, q, err, errlen) < 0)
		return -1;
	for (int t = 0; t < HA_MT_COUNT; t++) {
		if (sqlite3_prepare_v2(db->h, "INSERT INTO memory_terms (snapshot_id, term, bytes)"
		                       " VALUES (?1, ?2, ?3)", -1, &q, NULL) != SQLITE_OK)
			return sql_fail(db, err, errlen, "writing the memory breakdown");
		sqlite3_bind_int64(q, 1, sid);
		sqlite3_bind_text(q, 2, ha_mem_term_name(t), -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 3, m->terms[t]);
		if (step(db, q, err, errlen) < 0)
			return -1;
	}
	for (size_t i = 0; i < m->narenas; i++) {
		const struct ha_db_arena *a = &m->arenas[i];
		if (sqlite3_prepare_v2(db->h, "INSERT INTO memory_arenas (snapshot_id, arena, is_main,"
		                       " address, heaps, system_bytes, in_use_bytes, free_bytes,"
		                       " top_bytes, resident_bytes, trimmable_bytes, pinned_bytes,"
		                       " complete) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
		                       " ?11, ?12, ?13)", -1, &q, NULL) != SQLITE_OK)
			return sql_fail(db, err, errlen, "writing the memory breakdown");
		int64_t v[] = { sid, (int64_t)i, a->is_main, (int64_t)a->address, a->heaps,
		                (int64_t)a->system, (int64_t)a->in_use, (int64_t)a->free,
		                (int64_t)a->top, (int64_t)a->resident, (int64_t)a->trimmable,
		                (int64_t)a->pinned, a->complete };
		for (int k = 0; k < (int)(sizeof v / sizeof v[0]); k++)
			sqlite3_bind_int64(q, k + 1, v[k]);
		if (step(db, q, err, errlen) < 0)
			return -1;
	}
	for (size_t i = 0; i < m->npins; i++) {
		/* two call paths of the book may be one stack of the file */
		if (sqlite3_prepare_v2(db->h, "INSERT INTO memory_pinning (snapshot_id, stack_id,"
		                       " pinned_bytes, blocks) VALUES (?1, ?2, ?3, ?4)"
		                       " ON CONFLICT (snapshot_id, stack_id) DO UPDATE SET"
		                       " pinned_bytes = pinned_bytes + excluded.pinned_bytes,"
		                       " blocks = blocks + excluded.blocks", -1, &q, NULL) != SQLITE_OK)
			return sql_fail(db, err, errlen, "writing the memory breakdown");
		sqlite3_bind_int64(q, 1, sid);
		sqlite3_bind_int64(q, 2, m->pins[i].stack_id);
		sqlite3_bind_double(q, 3, m->pins[i].bytes);
		sqlite3_bind_double(q, 4, m->pins[i].blocks);
		if (step(db, q, err, errlen) < 0)
			return -1;
	}
	return 0;
}
