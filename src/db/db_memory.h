/* db_memory.h -- writing a snapshot's memory breakdown (db_memory.c). */
#ifndef HA_DB_MEMORY_H
#define HA_DB_MEMORY_H

#include "db_int.h"
#include "db_write.h"

/* Inside the open transaction of snapshot sid.  0 or -1 with err. */
int db_write_memory(struct ha_db *db, int64_t sid, const struct ha_db_memory *m, char *err,
                    size_t errlen);

#endif
