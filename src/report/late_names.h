/* late_names.h -- names for the frames a session could not name, found at
 * report time (issue 38).
 *
 * A frame the session left unnamed (function '') still has its module's
 * path, build-id and rel_pc in the database.  When a debug file for that
 * build-id can be had now -- the directories given with --debug-dir, those
 * of HEAPATTACH_DEBUG_DIR, /usr/lib/debug (after `apt install
 * foo-dbgsym`), libdebuginfod's cache, or the servers of DEBUGINFOD_URLS
 * -- the frame is named from it, with its inlined frames, in every view;
 * the database is never written.  A --debug-dir DIR is searched as a
 * .build-id tree and for DIR/NAME.debug and DIR/NAME (NAME: the module's
 * file name), each checked by build-id.
 *
 * Modules whose frames stay unnamed are told once each at the end
 * (hd_late_tell): path, build-id, and how to get names: the Debian package
 * owning the file (as dpkg -S finds it), DEBUGINFOD_URLS, --debug-dir.
 *
 * Owned by heapdiff's one thread. */
#ifndef HD_LATE_NAMES_H
#define HD_LATE_NAMES_H

#include <stdint.h>
#include <stdio.h>

#include "symbolize.h"

struct hd_late;

/* dirs: --debug-dir's, ':'-joined (NULL: none); debuginfod: ask the
 * servers (when DEBUGINFOD_URLS is set), each file within timeout_s. */
struct hd_late *hd_late_new(const char *dirs, int debuginfod, double timeout_s);
void hd_late_free(struct hd_late *l);

/* The inline chain naming rel_pc of the module (path, build_id hex), into
 * out[max], innermost first (strings valid until hd_late_free); 0 when no
 * debug file names it (counted for hd_late_tell). */
int hd_late_name(struct hd_late *l, const char *module, const char *build_id, uint64_t rel_pc,
                 int is_ret, struct ha_sym_frame *out, int max);

/* One line on f for each module with frames left unnamed, then one for
 * those named late (where their names came from). */
void hd_late_tell(struct hd_late *l, FILE *f);

/* The modules still without names, as "PATH (build-id ID)" lines joined
 * by '\n' for a report's notice (NULL: none); malloc'd. */
char *hd_late_missing_text(struct hd_late *l);

#endif
