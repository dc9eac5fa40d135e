/*
 * tls.c -- the agent's per-thread state (tls.h): the one definition of the
 * TLS block (initial-exec; TLSDESC in the agent of musl targets).  Nothing
 * else lives here.
 */
#include "tls.h"

__thread struct ha_tls ha_tls __attribute__((tls_model(HA_TLS_MODEL)));
