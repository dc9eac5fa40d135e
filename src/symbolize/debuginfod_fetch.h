/* debuginfod_fetch.h -- the attacher's fetcher of debug files: a thread of
 * its own asks DEBUGINFOD_URLS' servers (debuginfod_get.h) for the modules
 * the symbolizer found without one (ha_symbolizer_on_missing), one at a
 * time, each within a time limit, so that neither the collector nor the
 * writer (nor a snapshot) ever waits on the network.  What it fetches
 * lands in debuginfod's cache, where the symbolizer looks (debugfind.h):
 * frames of a module first named after its file arrived carry names;
 * those named before stay as recorded, and heapdiff names them from the
 * same cache at report time (src/report/late_names.h).
 *
 * Owned by the main thread (start, status, stop); ha_fetcher_want is
 * called on the thread that symbolizes and only queues. */
#ifndef HA_DEBUGINFOD_FETCH_H
#define HA_DEBUGINFOD_FETCH_H

#include <stdint.h>

struct ha_fetcher;

struct ha_fetch_status {
	uint32_t wanted;       /* modules asked for */
	uint32_t done;         /* answered: found or not */
	uint32_t found;
	double busy_s;         /* how long the current one has taken (0: idle) */
	char current[128];     /* its module's file name ("" when idle) */
};

/* NULL when DEBUGINFOD_URLS is not set (or out of memory). */
struct ha_fetcher *ha_fetcher_start(double timeout_s, int verbose);
/* The ha_sym_missing_fn for ha_symbolizer_on_missing (ctx: the fetcher). */
void ha_fetcher_want(void *fetcher, const char *module, const unsigned char *id, int len);
void ha_fetcher_status(struct ha_fetcher *f, struct ha_fetch_status *st);
/* Stop: the fetch under way is cancelled within a second, the rest
 * dropped; with verbose, one line per module on stderr. */
void ha_fetcher_stop(struct ha_fetcher *f);

#endif
