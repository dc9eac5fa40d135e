/* live_view_int.h -- what the files of the live view share; the rest of
 * heapattach sees live_view.h only.
 *
 *   live_view.c    the entry points (live_view.h) and the keys
 *   live_draw.c    the screen's layout: header, body, help, the bottom
 *                  line; the selection and the scrolling
 *   live_rows.c    the body's rows: call paths and their stacks, or
 *                  functions and their callers
 *   live_screen.c  the terminal: ncurses, or plain lines where it cannot
 *                  address the cursor; writing cells, reading keys
 *   live_text.c    names made safe, numbers, sparklines (live_text.h)
 *
 * Every entry point runs in the view's own locale (uselocale), so that
 * ncurses and wcwidth see the user's LC_CTYPE while the process's other
 * threads keep theirs. */
#ifndef HA_LIVE_VIEW_INT_H
#define HA_LIVE_VIEW_INT_H

#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <locale.h>
#include <termios.h>
#include <time.h>

#include "live_text.h"
#include "live_view.h"

#define MAX_W HA_TEXT_MAX_W /* columns drawn at most */
#define MIN_W 40            /* below this or MIN_H, only a line that says so */
#define MIN_H 10
#define MSG_MS 5000         /* a message replaces the key hints this long */
#define FILTER_MAX 128

/* Styles: attributes in ncurses (colour only when allowed), nothing in
 * plain output. */
enum { S_NORMAL, S_BOLD, S_DIM, S_UP, S_DOWN, S_SPARK, S_MSG, S_HEAD, S_SEL = 0x100 };

/* Keys, as lv_read_key returns them: a character, or one of these. */
enum {
	K_NONE = -1,
	K_UP = 0x110000, K_DOWN, K_PGUP, K_PGDN, K_HOME, K_END,
	K_ENTER, K_ESC, K_BS, K_KILL, K_RESIZE, K_INTR, K_OTHER
};

/* A row of the model: a bucket (id, kind), or a function (its id, the
 * view's kind). */
struct ident {
	uint32_t id;
	int kind;
};

struct ha_view {
	/* The terminal (live_screen.c). */
	int curses;               /* ncurses owns the screen; else plain output */
	SCREEN *scr;
	int color, utf8;
	locale_t loc;
	struct termios saved;     /* plain output: the terminal as it was */
	int plain_drawn;
	int h, w;                 /* the screen being drawn */
	char *grid;               /* plain output's screen, h * w */
	int sel_style;            /* S_SEL while drawing the selected row */

	/* What is shown. */
	int funcs;                /* functions, not call paths */
	int kind;
	enum ha_live_sort sort;
	char filter[FILTER_MAX];
	int prompt;               /* the filter prompt is open */
	char edit[FILTER_MAX];
	int help;
	int marked;

	/* The rows as last drawn, the selection, the expanded row. */
	struct ident *order;
	size_t n_order, cap_order;
	int follow;               /* the selection follows sel (else: the first row) */
	int stale;                /* order is not the rows of the view's settings */
	struct ident sel;
	size_t sel_i, top;
	int have_open;
	struct ident open;
	int body_h;

	char msg[256];
	double msg_ms;
};

static inline double lv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* live_screen.c */
int lv_term_open(struct ha_view *v, char *err, size_t errlen);
void lv_term_close(struct ha_view *v);
/* Start a screen (the terminal's size now, everything blank) / send it. */
void lv_begin(struct ha_view *v);
void lv_end(struct ha_view *v);
/* Write s (cleaned: ha_text_clean) at row y, column x, in at most w
 * columns, never past the screen nor in its bottom-right cell; returns the
 * columns used. */
int lv_put(struct ha_view *v, int y, int x, int w, int st, const char *s);
int lv_putf(struct ha_view *v, int y, int x, int w, int st, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void lv_blank(struct ha_view *v, int y, int x, int w);
void lv_box(struct ha_view *v, int y, int x, int h, int w);
/* Show the cursor at (y, x), or hide it (y < 0). */
void lv_cursor(struct ha_view *v, int y, int x);
int lv_read_key(struct ha_view *v);

/* The rows of the mode in force, as the model gave them. */
struct lv_rows {
	size_t n;
	const struct ha_live_row *path;       /* call paths */
	const struct ha_live_fn *fn;          /* functions (v->funcs) */
	const struct ha_live_caller *callers; /* the open function's (lv_open_lines) */
	size_t n_callers;
};

/* live_rows.c */
const char *lv_kind_name(int kind);
void lv_get_rows(struct ha_view *v, struct ha_live *l, struct lv_rows *r);
struct ident lv_row_ident(const struct ha_view *v, const struct lv_rows *r, size_t i);
/* The column heads at row y. */
void lv_draw_columns(struct ha_view *v, int y);
void lv_draw_row(struct ha_view *v, int y, const struct lv_rows *r, size_t i, int selected);
/* The lines row i takes expanded (before the screen cuts them): its stack,
 * or its callers (which it gets from the model into r). */
int lv_open_lines(struct ha_view *v, struct ha_live *l, struct lv_rows *r, size_t i);
void lv_draw_open(struct ha_view *v, int y, int nlines, const struct lv_rows *r, size_t i);

/* live_draw.c */
void lv_draw(struct ha_view *v, struct ha_live *l);
void lv_draw_bottom(struct ha_view *v);
/* Before a key that acts on the selection: the rows as the keys before it
 * in the same batch left them (a new sort, kind, mark or filter). */
void lv_fresh_rows(struct ha_view *v, struct ha_live *l);

#endif
