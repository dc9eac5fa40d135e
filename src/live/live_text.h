/* live_text.h -- text for the live view's terminal: strings from the
 * target made safe and cut to a width; the view's numbers; sparklines.
 * No state.  A character's width is wcwidth's in the calling thread's
 * locale (the view's: see live_view.c). */
#ifndef HA_LIVE_TEXT_H
#define HA_LIVE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#define HA_TEXT_MAX_W 1000     /* columns, at most */
#define HA_UTF8_BAD 0xFFFFFFFFu

/* One UTF-8 sequence at p (NUL-terminated): its length, and its code point
 * in *cp (HA_UTF8_BAD for a byte that does not start a valid, shortest
 * sequence: then the length is 1). */
int ha_utf8_decode(const unsigned char *p, uint32_t *cp);
/* The UTF-8 of cp (< 0x110000) in out[4]; returns its length. */
int ha_utf8_encode(uint32_t cp, char *out);

/* The cells of s for at most w (1 .. HA_TEXT_MAX_W) columns, in out[w+1],
 * NUL-terminated: printable characters as they are (non-ASCII ones only
 * when utf8), every other one -- C0 and C1 controls, DEL, invalid UTF-8,
 * zero-width and unprintable characters -- as '?'; a string longer than w
 * ends with a marker (an ellipsis, or '~' without utf8).  Returns the count
 * of cells, and the columns they take in *cols. */
int ha_text_clean(const char *s, int utf8, wchar_t *out, int w, int *cols);

/* 3 significant digits and a binary unit ("12.5 MiB"); sign: a '+' on
 * positive values. */
void ha_fmt_bytes(char *b, size_t n, double x, int sign);
/* Counts: "9999", "12.3k", "1.2M". */
void ha_fmt_count(char *b, size_t n, double x, int sign);
/* Seconds as "12s", "4m05s", "1h02m". */
void ha_fmt_age(char *b, size_t n, double s);

/* A sparkline of the n values (oldest first) in at most w columns (one a
 * value while they fit): the whole series, each column the highest value of
 * its share, scaled from the lowest to the highest; block characters when
 * utf8, else "_.-=#".  out gets NUL-terminated UTF-8. */
void ha_sparkline(const double *x, size_t n, int w, int utf8, char *out, size_t len);

#endif
