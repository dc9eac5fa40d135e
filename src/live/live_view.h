/* live_view.h -- heapattach --live: the full-screen view (ncurses) of a
 * live model (live_model.h), redrawn once a second and on every key.
 *
 * Keys: g/l/r sort by growth, live bytes, rate; k cycles the kind (heap +
 * mmap, heap, mmap, and resident with --rss); f shows functions (flat and
 * cumulative) instead of call paths, and back; m marks (growth from now
 * on); s asks for a snapshot; / filters by function, file or module (Enter
 * applies, Escape cancels and clears; Escape outside the prompt clears
 * too); Up/Down, Ctrl-P/Ctrl-N or j (down: k is the kind) move the
 * selection, PgUp/PgDn/Home/End by a page or to an end; Enter or space
 * expands or folds the selected row: a call path's whole stack, a
 * function's callers; ? shows the help (any
 * key closes it); q, or Ctrl-C at any time (read as a key: the terminal is
 * raw), detaches.
 * Works at 80x24 and larger, follows resizes, respects NO_COLOR (no
 * colour) and TERM=dumb (plain ASCII lines, no colour, no line drawing: also
 * where terminfo cannot address the cursor).
 *
 * All calls from one thread.  While the view is open nothing else may write
 * to the terminal (stdout or stderr): say it with ha_view_message. */
#ifndef HA_LIVE_VIEW_H
#define HA_LIVE_VIEW_H

#include <stddef.h>
#include "live_model.h"

struct ha_view;

enum ha_view_action {
	HA_VIEW_NONE,
	HA_VIEW_QUIT,      /* q or Ctrl-C: detach, as SIGINT */
	HA_VIEW_SNAPSHOT,  /* s: take a snapshot now */
	HA_VIEW_TRIM,      /* t: malloc_trim(0) in the target now (issue 41) */
};

/* Take the terminal (stdin and stdout must be a terminal: else NULL and one
 * line in err). */
struct ha_view *ha_view_open(char *err, size_t errlen);
/* The fd to poll for keys.  A resize interrupts the poll (EINTR, SIGWINCH):
 * call ha_view_input then too (ncurses has it as a key); the next draw
 * follows a resize in any case. */
int ha_view_fd(const struct ha_view *v);
/* Read the keys waiting; handles sort, kind, mark, filter, selection and
 * help itself (calling ha_live_mark on m), redraws when one changed the
 * screen, and returns what the caller must do (at the first key that asks
 * something: the keys after it wait for the next call). */
enum ha_view_action ha_view_input(struct ha_view *v, struct ha_live *l);
void ha_view_draw(struct ha_view *v, struct ha_live *l);
/* Say something in the view's message line (e.g. "snapshot 7 taken"),
 * shown at once and for 5 s. */
void ha_view_message(struct ha_view *v, const char *msg);
/* Give the terminal back as it was. */
void ha_view_close(struct ha_view *v);

#endif
