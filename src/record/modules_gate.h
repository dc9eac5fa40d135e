/* modules_gate.h -- when a modules record (a dlopen or dlclose in the
 * target) has the maps read again.
 *
 * Samples after a modules record may have pcs in modules not seen yet: the
 * maps are re-read at once rather than after a rate-limited miss, and the
 * symbolizer told too.  At most once per HA_MODULES_GAP_MS, and after ten
 * times as long as the last re-read took (a target with 65,530 mappings
 * has megabytes of maps): every such record says the same, and a target
 * can write millions of them (each re-read costs a read of its maps: a
 * detach took 49 s after a flood).  One that comes sooner is acted on at
 * the first batch after the gap.  Only the decision lives here. */
#ifndef HA_MODULES_GATE_H
#define HA_MODULES_GATE_H

#include <stdint.h>

#define HA_MODULES_GAP_MS 10

struct ha_modules_gate {
	uint16_t gen;           /* the newest modules record acted on... */
	int seen;               /* ...if any (each ring has a copy) */
	double last_ms;         /* when the maps were last re-read... */
	double cost_ms;         /* ...and how long that took */
	int pending;            /* a record came since, within the gap */
};

/* A modules record of generation gen: 1 if it is newer than every one seen
 * (forward only, as ha_srefs_modules; every ring has a copy of each). */
int ha_modules_gate_record(struct ha_modules_gate *g, uint16_t gen);

/* The maps changed at now (ms): 1 to re-read them now (then tell
 * ha_modules_gate_done when that is over), 0 to wait (pending). */
int ha_modules_gate_ask(struct ha_modules_gate *g, double now);
void ha_modules_gate_done(struct ha_modules_gate *g, double started, double ended);

#endif
