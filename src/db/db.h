/* db.h -- the profile database (SQLite, schema/schema.sql): opening and
 * closing it, what every user of it needs.  heapdiff opens read-only;
 * writing (the attacher's writer thread) is db_write.h. */
#ifndef HA_DB_H
#define HA_DB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HA_DB_SCHEMA_VERSION 14
/* The oldest version still read; ha_db_open upgrades it in place. */
#define HA_DB_SCHEMA_VERSION_MIN 1

/* A periodic snapshot carries its call paths' rows once every this many
 * (schema version 14; db_write.h, ha_db_paths_due). */
#define HA_DB_PATHS_EVERY 12

struct ha_db;

/* Kinds of memory a bucket counts: what the program allocated (heap,
 * mmap), and where the pages are (rss: resident by first-touch call path,
 * swap: swapped out; schema version 5, heapattach --rss).  The two groups
 * count the same memory twice and are never added up. */
enum ha_mem_kind { HA_KIND_HEAP = 0, HA_KIND_MMAP = 1, HA_KIND_RSS = 2, HA_KIND_SWAP = 3 };
#define HA_KIND_COUNT 4

/* Open an existing database read-only (heapdiff): a file that is not a
 * heapattach database, or of a schema version outside
 * HA_DB_SCHEMA_VERSION_MIN..HA_DB_SCHEMA_VERSION, is refused with a clear
 * err; an older known version is read as it is (never upgraded).  For
 * writing, ha_db_open (db_write.h). */
int ha_db_open_readonly(const char *path, struct ha_db **out, char *err, size_t errlen);
void ha_db_close(struct ha_db *db);

/* The underlying handle, for heapdiff's queries. */
struct sqlite3 *ha_db_handle(struct ha_db *db);

#endif
