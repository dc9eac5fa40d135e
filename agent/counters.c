/*
 * counters.c -- shared totals of the hooks' call counters (counters.h).
 * Written only from the sampling path, all on one cache line: a flush moves
 * one line between cores, not one per class.
 */
#include "counters.h"

static uint64_t ha_calls[HA_C_COUNT] __attribute__((aligned(64)));

void ha_counters_flush(void)
{
	for (int c = 0; c < HA_C_COUNT; c++) {
		uint64_t d = ha_tls.calls[c] - ha_tls.flushed[c];
		if (d) {
			__atomic_fetch_add(&ha_calls[c], d, __ATOMIC_RELAXED);
			ha_tls.flushed[c] = ha_tls.calls[c];
		}
	}
}

void ha_counters_reset(void)
{
	for (int i = 0; i < HA_C_COUNT; i++)
		__atomic_store_n(&ha_calls[i], 0, __ATOMIC_RELAXED);
}

void ha_counters_read(struct ha_counters *c)
{
	c->malloc_calls = __atomic_load_n(&ha_calls[HA_C_MALLOC], __ATOMIC_RELAXED);
	c->calloc_calls = __atomic_load_n(&ha_calls[HA_C_CALLOC], __ATOMIC_RELAXED);
	c->realloc_calls = __atomic_load_n(&ha_calls[HA_C_REALLOC], __ATOMIC_RELAXED);
}
