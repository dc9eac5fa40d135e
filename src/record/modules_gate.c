/* modules_gate.c -- when a modules record has the maps read again (see
 * modules_gate.h). */
#include "modules_gate.h"

int ha_modules_gate_record(struct ha_modules_gate *g, uint16_t gen)
{
	if (g->seen && (int16_t)(gen - g->gen) <= 0)
		return 0;
	g->seen = 1;
	g->gen = gen;
	return 1;
}

int ha_modules_gate_ask(struct ha_modules_gate *g, double now)
{
	double gap = 10 * g->cost_ms > HA_MODULES_GAP_MS ? 10 * g->cost_ms : HA_MODULES_GAP_MS;
	if (now - g->last_ms < gap) {
		g->pending = 1;
		return 0;
	}
	g->pending = 0;
	return 1;
}

void ha_modules_gate_done(struct ha_modules_gate *g, double started, double ended)
{
	g->last_ms = ended;
	g->cost_ms = ended - started;
}
