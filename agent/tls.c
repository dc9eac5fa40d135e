/*
 * tls.c -- the agent's per-thread state (tls.h): the one definition of the
 * initial-exec TLS block.  Nothing else lives here.
 */
#include "tls.h"

__thread struct ha_tls ha_tls __attribute__((tls_model("initial-exec")));
