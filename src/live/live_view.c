/* live_view.c -- heapattach --live's full-screen view: the entry points
 * (live_view.h) and the keys.  The layout is live_draw.c's (its rows
 * live_rows.c's), the terminal
 * live_screen.c's (ncurses, or plain lines for TERM=dumb), the text
 * live_text.c's; what they share is in live_view_int.h.
 *
 * Keys are read until none is waiting, or one asks the caller for
 * something (q, Ctrl-C, s): the rest stay in the terminal for the next
 * call.  A key that changes the rows (sort, kind, mark, filter, functions
 * or call paths) makes the remembered order stale, so that a selection key
 * after it in the same batch acts on the new rows; the screen is drawn
 * once after the batch.
 *
 * The locale: the user's LC_CTYPE (newlocale ""), made current with
 * uselocale for the length of each call only, so that ncurses' output and
 * wcwidth follow it while the process's other threads, and this one
 * between calls, keep theirs. */
#define _GNU_SOURCE
#include "live_view_int.h"

#include <errno.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void message(struct ha_view *v, const char *msg)
{
	snprintf(v->msg, sizeof v->msg, "%s", msg);
	v->msg_ms = lv_now_ms();
}

static void move_sel(struct ha_view *v, long by)
{
	if (v->n_order == 0)
		return;
	long i = (long)v->sel_i + by;
	if (i < 0)
		i = 0;
	if (i >= (long)v->n_order)
		i = (long)v->n_order - 1;
	v->sel_i = (size_t)i;
	v->sel = v->order[i];
	v->follow = 1;
}

static void filter_key(struct ha_view *v, int k)
{
	size_t len = strlen(v->edit);
	if (k == K_ENTER) {
		snprintf(v->filter, sizeof v->filter, "%s", v->edit);
		v->prompt = 0;
		v->follow = 0;
		v->top = 0;
	} else if (k == K_ESC) {
		v->filter[0] = 0;
		v->prompt = 0;
	} else if (k == K_BS) {
		while (len > 0 && ((unsigned char)v->edit[len - 1] & 0xc0) == 0x80)
			len--; /* continuation bytes of the last character */
		if (len > 0)
			len--;
		v->edit[len] = 0;
	} else if (k == K_KILL) {
		v->edit[0] = 0;
	} else if (k >= 0x20 && k < 0x110000 && k != 0x7f) {
		char enc[4];
		int n = v->curses ? ha_utf8_encode((uint32_t)k, enc) : (enc[0] = (char)k, 1);
		if (len + n < sizeof v->edit) {
			memcpy(v->edit + len, enc, n);
			v->edit[len + n] = 0;
		}
	}
}

static void next_kind(struct ha_view *v, struct ha_live *l)
{
	switch (v->kind) {
	case HA_LIVE_ALLOC: v->kind = HA_KIND_HEAP; break;
	case HA_KIND_HEAP: v->kind = HA_KIND_MMAP; break;
	case HA_KIND_MMAP: v->kind = ha_live_summary(l)->rss_on ? HA_KIND_RSS : HA_LIVE_ALLOC; break;
	default: v->kind = HA_LIVE_ALLOC; break;
	}
	v->follow = 0;
	v->top = 0;
}

/* One key: returns what the caller must do. */
static enum ha_view_action key(struct ha_view *v, struct ha_live *l, int k)
{
	if (k == K_INTR)
		return HA_VIEW_QUIT;
	if (k == K_RESIZE) /* ncurses has the new size: only a redraw */
		return HA_VIEW_NONE;
	if (v->help) {
		v->help = 0;
		return HA_VIEW_NONE;
	}
	if (v->prompt) {
		filter_key(v, k);
		v->stale |= !v->prompt; /* applied or cleared */
		return HA_VIEW_NONE;
	}
	if (k == K_UP || k == K_DOWN || k == 'j' || k == 'k' || k == K_PGUP || k == K_PGDN || k == K_END ||
	    k == K_ENTER || k == ' ')
		lv_fresh_rows(v, l);
	switch (k) {
	case 'q': case 'Q': return HA_VIEW_QUIT;
	case 's': return HA_VIEW_SNAPSHOT;
	case 't': return HA_VIEW_TRIM;
	case 'g': v->sort = HA_LIVE_BY_GROWTH; v->stale = 1; break;
	case 'l': v->sort = HA_LIVE_BY_LIVE; v->stale = 1; break;
	case 'r': v->sort = HA_LIVE_BY_RATE; v->stale = 1; break;
	/* The kind on c: j and k move, as in vi and less, and c is no motion
	 * of theirs (nor h, l, g, G, w, b, e, t, f). */
	case 'c': next_kind(v, l); v->stale = 1; break;
	case 'f': /* functions or call paths: another list, from its top */
		v->funcs = !v->funcs;
		v->stale = 1;
		v->follow = 0;
		v->top = 0;
		v->have_open = 0;
		break;
	case 'm':
		ha_live_mark(l);
		v->stale = 1;
		v->marked = 1;
		v->follow = 0;
		v->top = 0;
		message(v, "mark set: growth is counted from now on");
		break;
	case '/':
		v->prompt = 1; /* a new filter (Enter on nothing: none) */
		v->edit[0] = 0;
		break;
	case K_ESC:
		if (v->filter[0])
			message(v, "filter cleared");
		v->filter[0] = 0;
		v->stale = 1;
		break;
	case '?': v->help = 1; break;
	case K_UP: case 'k': move_sel(v, -1); break;
	case K_DOWN: case 'j': move_sel(v, 1); break;
	case K_PGUP: move_sel(v, -(v->body_h > 1 ? v->body_h - 1 : 1)); break;
	case K_PGDN: move_sel(v, v->body_h > 1 ? v->body_h - 1 : 1); break;
	case K_HOME: v->follow = 0; v->sel_i = v->top = 0; break;
	case K_END: move_sel(v, (long)v->n_order); break;
	case K_ENTER: case ' ':
		if (v->sel_i >= v->n_order)
			break;
		v->sel = v->order[v->sel_i];
		if (v->have_open && v->open.id == v->sel.id && v->open.kind == v->sel.kind) {
			v->have_open = 0;
		} else {
			v->have_open = 1;
			v->open = v->sel;
			v->follow = 1;
		}
		break;
	}
	return HA_VIEW_NONE;
}

int ha_view_fd(const struct ha_view *v)
{
	(void)v;
	return STDIN_FILENO;
}

struct ha_view *ha_view_open(char *err, size_t errlen)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		snprintf(err, errlen, "--live needs a terminal: %s is not one",
		         isatty(STDIN_FILENO) ? "standard output" : "standard input");
		return NULL;
	}
	struct ha_view *v = calloc(1, sizeof *v);
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	v->kind = HA_LIVE_ALLOC;
	v->sort = HA_LIVE_BY_GROWTH;
	v->loc = newlocale(LC_CTYPE_MASK, "", (locale_t)0);
	if (!v->loc)
		v->loc = newlocale(LC_CTYPE_MASK, "C", (locale_t)0);
	if (!v->loc) {
		snprintf(err, errlen, "cannot make a locale: %s", strerror(errno));
		free(v);
		return NULL;
	}
	locale_t prev = uselocale(v->loc);
	v->utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	int rc = lv_term_open(v, err, errlen);
	uselocale(prev);
	if (rc != 0) {
		freelocale(v->loc);
		free(v);
		return NULL;
	}
	return v;
}

enum ha_view_action ha_view_input(struct ha_view *v, struct ha_live *l)
{
	locale_t prev = uselocale(v->loc);
	enum ha_view_action act = HA_VIEW_NONE;
	int k, any = 0;
	while (act == HA_VIEW_NONE && (k = lv_read_key(v)) != K_NONE) {
		act = key(v, l, k);
		any = 1;
	}
	if (any && act != HA_VIEW_QUIT) /* (the keys before an s show too) */
		lv_draw(v, l);
	uselocale(prev);
	return act;
}

void ha_view_draw(struct ha_view *v, struct ha_live *l)
{
	locale_t prev = uselocale(v->loc);
	lv_draw(v, l);
	uselocale(prev);
}

void ha_view_message(struct ha_view *v, const char *msg)
{
	message(v, msg);
	if (v->curses && !v->prompt && v->h > 0) { /* at once: the bottom line alone */
		locale_t prev = uselocale(v->loc);
		lv_draw_bottom(v);
		refresh();
		uselocale(prev);
	}
}

void ha_view_close(struct ha_view *v)
{
	if (!v)
		return;
	locale_t prev = uselocale(v->loc);
	lv_term_close(v);
	uselocale(prev);
	freelocale(v->loc);
	free(v->order);
	free(v);
}
