/* reach_names.h -- the holders of a reachability scan named on the
 * writer's thread, which owns the symbolizer (reach_names.c). */
#ifndef HA_REACH_NAMES_H
#define HA_REACH_NAMES_H

#include "db_write.h"

struct ha_symbolizer;

/* Add to each holder's name what sym knows (db_write.h: a stack's frame,
 * a global's definition); names stay as they are where it knows nothing
 * (sym NULL included). */
void ha_reach_name_holders(struct ha_symbolizer *sym, struct ha_db_reach *r);

#endif
