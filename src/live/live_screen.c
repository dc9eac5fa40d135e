/* live_screen.c -- the live view's terminal (see live_view_int.h).
 *
 * ncurses when the terminal's terminfo entry can address the cursor; else
 * -- TERM unset or "dumb", an entry without cursor addressing, or one
 * ncurses does not know -- plain output: the same screen, ASCII, without
 * attributes, written as lines of text after a newline each refresh, so
 * that the terminal always shows the latest screen in full.  (Refusing
 * would leave --live unusable exactly where a terminal is simplest; the
 * plain output holds no escape sequence at all.)  Both read the keys as
 * they come with ISIG off: Ctrl-C is a key (detach), not a signal.
 *
 * Nothing but lv_put writes text, and it writes only what ha_text_clean
 * left; no stdio while ncurses owns the screen. */
#define _GNU_SOURCE
#include "live_view_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <term.h>
#include <unistd.h>

enum { PAIR_UP = 1, PAIR_DOWN, PAIR_SPARK, PAIR_MSG };

static attr_t style_attr(const struct ha_view *v, int st)
{
	attr_t a = (st & S_SEL) ? A_REVERSE : A_NORMAL;
	switch (st & 0xff) {
	case S_BOLD: case S_HEAD: a |= A_BOLD; break;
	case S_DIM: a |= A_DIM; break;
	case S_UP: if (v->color) a |= COLOR_PAIR(PAIR_UP); break;
	case S_DOWN: if (v->color) a |= COLOR_PAIR(PAIR_DOWN); break;
	case S_SPARK: if (v->color) a |= COLOR_PAIR(PAIR_SPARK); break;
	case S_MSG: a |= A_BOLD; if (v->color) a |= COLOR_PAIR(PAIR_MSG); break;
	}
	return a;
}

int lv_put(struct ha_view *v, int y, int x, int w, int st, const char *s)
{
	if (y < 0 || y >= v->h || x < 0 || x >= v->w)
		return 0;
	if (w > v->w - x)
		w = v->w - x;
	if (y == v->h - 1 && x + w >= v->w)
		w = v->w - 1 - x;
	if (w <= 0)
		return 0;
	wchar_t cells[MAX_W + 1];
	int cols, n = ha_text_clean(s, v->utf8, cells, w, &cols);
	st |= v->sel_style;
	if (v->curses) {
		attrset(style_attr(v, st));
		mvaddnwstr(y, x, cells, n);
		attrset(A_NORMAL);
	} else {
		for (int i = 0; i < n; i++) /* ASCII only: plain output is never utf8 */
			v->grid[y * v->w + x + i] = (char)cells[i];
	}
	return cols;
}

int lv_putf(struct ha_view *v, int y, int x, int w, int st, const char *fmt, ...)
{
	char buf[MAX_W * 4 + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return lv_put(v, y, x, w, st, buf);
}

/* Blank columns x .. x+w-1 of row y (in the selected row's style). */
void lv_blank(struct ha_view *v, int y, int x, int w)
{
	static const char spaces[MAX_W + 1] = { [0 ... MAX_W - 1] = ' ' };
	if (w > v->w - x)
		w = v->w - x;
	if (y == v->h - 1 && x + w >= v->w)
		w = v->w - 1 - x; /* as lv_put will: not cut, no marker */
	if (w > MAX_W)
		w = MAX_W;
	if (w > 0)
		lv_put(v, y, x, w, S_NORMAL, spaces + MAX_W - w);
}

static void write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(STDOUT_FILENO, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		p += k;
		n -= (size_t)k;
	}
}

/* Plain output: the screen's lines, without their trailing blanks, after a
 * newline (the previous screen scrolls up, out of the way). */
static void plain_flush(struct ha_view *v)
{
	size_t cap = (size_t)v->h * (v->w + 1) + 2, n = 0;
	char *out = malloc(cap);
	if (!out)
		return;
	if (v->plain_drawn)
		out[n++] = '\n';
	for (int y = 0; y < v->h; y++) {
		const char *row = v->grid + (size_t)y * v->w;
		int len = v->w;
		while (len > 0 && row[len - 1] == ' ')
			len--;
		memcpy(out + n, row, len);
		n += len;
		if (y < v->h - 1)
			out[n++] = '\n';
	}
	write_all(out, n);
	free(out);
	v->plain_drawn = 1;
}

/* The size of the terminal now; in ncurses, follow it if it changed (a
 * SIGWINCH that ncurses has not turned into KEY_RESIZE yet). */
static void screen_size(struct ha_view *v)
{
	struct winsize ws;
	int rows = 24, cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		rows = ws.ws_row, cols = ws.ws_col;
	if (v->curses) {
		if (rows != LINES || cols != COLS)
			resizeterm(rows, cols);
		getmaxyx(stdscr, rows, cols);
	}
	v->h = rows;
	v->w = cols > MAX_W ? MAX_W : cols;
}

static int map_char(uint32_t c)
{
	switch (c) {
	case 3: return K_INTR;
	case '\r': case '\n': return K_ENTER;
	case 27: return K_ESC;
	case 127: case 8: return K_BS;
	case 21: return K_KILL;     /* Ctrl-U */
	case 14: return K_DOWN;     /* Ctrl-N */
	case 16: return K_UP;       /* Ctrl-P */
	}
	return (int)c;
}

/* The next key waiting, or K_NONE. */
int lv_read_key(struct ha_view *v)
{
	if (v->curses) {
		wint_t wc;
		int rc = wget_wch(stdscr, &wc);
		if (rc == ERR)
			return K_NONE;
		if (rc == OK)
			return map_char(wc);
		switch (wc) {
		case KEY_UP: return K_UP;
		case KEY_DOWN: return K_DOWN;
		case KEY_PPAGE: return K_PGUP;
		case KEY_NPAGE: return K_PGDN;
		case KEY_HOME: return K_HOME;
		case KEY_END: return K_END;
		case KEY_ENTER: return K_ENTER;
		case KEY_BACKSPACE: return K_BS;
		case KEY_RESIZE: return K_RESIZE;
		}
		return K_OTHER;
	}
	/* Plain output: bytes as typed (VMIN 0: a read returns at once); the
	 * arrows' CSI or SS3 sequences, when their bytes are there. */
	unsigned char c, s[2];
	if (read(STDIN_FILENO, &c, 1) != 1)
		return K_NONE;
	if (c != 27)
		return map_char(c);
	if (read(STDIN_FILENO, &s[0], 1) != 1)
		return K_ESC;
	if ((s[0] != '[' && s[0] != 'O') || read(STDIN_FILENO, &s[1], 1) != 1)
		return K_OTHER;
	return s[1] == 'A' ? K_UP : s[1] == 'B' ? K_DOWN : K_OTHER;
}

static int plain_open(struct ha_view *v, char *err, size_t errlen)
{
	struct termios t;
	if (tcgetattr(STDIN_FILENO, &v->saved) != 0) {
		snprintf(err, errlen, "cannot set up the terminal: %s", strerror(errno));
		return -1;
	}
	t = v->saved;
	t.c_lflag &= ~(ICANON | ECHO | ISIG | IEXTEN);
	t.c_iflag &= ~(IXON | ICRNL);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) != 0) {
		snprintf(err, errlen, "cannot set up the terminal: %s", strerror(errno));
		return -1;
	}
	v->curses = 0;
	v->utf8 = 0; /* plain ASCII */
	return 0;
}

/* Whether ncurses can draw on this terminal: a terminfo entry that
 * addresses the cursor.  (Reading terminfo writes nothing.) */
static int curses_usable(void)
{
	const char *term = getenv("TERM");
	int err;
	if (!term || !*term || strcmp(term, "dumb") == 0)
		return 0;
	if (setupterm(NULL, STDOUT_FILENO, &err) != OK)
		return 0;
	const char *cup = tigetstr("cup");
	int ok = cup && cup != (char *)-1;
	del_curterm(cur_term);
	return ok;
}

int lv_term_open(struct ha_view *v, char *err, size_t errlen)
{
	if (!curses_usable() || (v->scr = newterm(NULL, stdout, stdin)) == NULL)
		return plain_open(v, err, errlen);
	v->curses = 1;
	const char *nc = getenv("NO_COLOR");
	if ((!nc || !*nc) && has_colors() && start_color() == OK) {
		use_default_colors();
		init_pair(PAIR_UP, COLOR_RED, -1);
		init_pair(PAIR_DOWN, COLOR_GREEN, -1);
		init_pair(PAIR_SPARK, COLOR_CYAN, -1);
		init_pair(PAIR_MSG, COLOR_YELLOW, -1);
		v->color = 1;
	}
	raw(); /* no ISIG: Ctrl-C is read */
	noecho();
	nonl();
	intrflush(stdscr, FALSE);
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	return 0;
}

void lv_term_close(struct ha_view *v)
{
	if (v->curses) {
		curs_set(1);
		endwin();
		delscreen(v->scr);
	} else {
		write_all("\n", 1);
		tcsetattr(STDIN_FILENO, TCSADRAIN, &v->saved);
	}
	free(v->grid);
	v->grid = NULL;
}

void lv_begin(struct ha_view *v)
{
	screen_size(v);
	if (v->curses) {
		erase();
		return;
	}
	char *g = realloc(v->grid, (size_t)v->h * v->w);
	if (!g) { /* nothing drawn: lv_put sees a screen of 0x0 */
		v->h = v->w = 0;
		return;
	}
	v->grid = g;
	memset(g, ' ', (size_t)v->h * v->w);
}

void lv_end(struct ha_view *v)
{
	if (v->curses)
		refresh();
	else if (v->h > 0)
		plain_flush(v);
}

void lv_box(struct ha_view *v, int y0, int x0, int h, int w)
{
	for (int y = y0; y < y0 + h; y++)
		lv_blank(v, y, x0, w);
	if (h < 2 || w < 2)
		return;
	if (v->curses) {
		attrset(A_NORMAL);
		mvhline(y0, x0 + 1, ACS_HLINE, w - 2);
		mvhline(y0 + h - 1, x0 + 1, ACS_HLINE, w - 2);
		mvvline(y0 + 1, x0, ACS_VLINE, h - 2);
		mvvline(y0 + 1, x0 + w - 1, ACS_VLINE, h - 2);
		mvaddch(y0, x0, ACS_ULCORNER);
		mvaddch(y0, x0 + w - 1, ACS_URCORNER);
		mvaddch(y0 + h - 1, x0, ACS_LLCORNER);
		mvaddch(y0 + h - 1, x0 + w - 1, ACS_LRCORNER);
		return;
	}
	for (int y = y0; y < y0 + h; y++) {
		int edge = y == y0 || y == y0 + h - 1;
		lv_put(v, y, x0, 1, S_NORMAL, edge ? "+" : "|");
		lv_put(v, y, x0 + w - 1, 1, S_NORMAL, edge ? "+" : "|");
		for (int x = x0 + 1; edge && x < x0 + w - 1; x++)
			lv_put(v, y, x, 1, S_NORMAL, "-");
	}
}

void lv_cursor(struct ha_view *v, int y, int x)
{
	if (!v->curses)
		return;
	if (y < 0) {
		curs_set(0);
		return;
	}
	move(y, x < v->w - 1 ? x : v->w - 1);
	curs_set(1);
}
