/* fuzz_proc -- libFuzzer harness for the /proc/PID/stat and status parsers
 * of src/common/proc.c (the comm in them is the target's: any 16 bytes).
 *
 * The input is the text of a file.  Asserted, besides what the sanitizers
 * check (no read past the NUL, no overflow):
 *  - ha_parse_stat returns 0 or -EINVAL, and on 0 the state it gives is the
 *    first non-blank byte after the last ')';
 *  - ha_status_field, for the field names heapattach asks for and for one
 *    taken from the input, returns 0 or -ENOENT; the value it writes is
 *    NUL-terminated within outlen, holds no newline, and on 0 is a prefix
 *    of what follows "name:" on a line of the input.
 * The first byte picks outlen (1..64) for the status lookups.
 *
 * fuzz-sources: src/common/proc.c src/common/util.c
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>

#include "fuzz.h"
#include "proc.h"

static void check_field(const char *text, const char *name, size_t outlen)
{
	char out[64];
	memset(out, 'X', sizeof out);
	int rc = ha_status_field(text, name, out, outlen);
	FUZZ_CHECK(rc == 0 || rc == -ENOENT, "rc %d", rc);
	if (rc != 0)
		return;
	size_t k = strnlen(out, outlen);
	FUZZ_CHECK(k < outlen, "value of '%s' not terminated within %zu bytes", name, outlen);
	FUZZ_CHECK(!memchr(out, '\n', k), "value of '%s' holds a newline", name);
	/* The value is a prefix of what follows "name:" and blanks on some line. */
	size_t nl = strlen(name);
	for (const char *line = text; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (strncmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			v += strspn(v, " \t");
			FUZZ_CHECK(strncmp(v, out, k) == 0, "value of '%s' is not from its line", name);
			return;
		}
	FUZZ_CHECK(0, "'%s' found but no line has it", name);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static const char *const names[] = { "Name", "State", "Tgid", "PPid", "TracerPid",
		                             "Uid", "NSpid", "VmRSS", "Threads" };
	if (n == 0)
		return 0;
	size_t outlen = 1 + d[0] % 64;
	char *text = fuzz_str(d + 1, n - 1);

	char state = 0;
	unsigned long flags = 0;
	int rc = ha_parse_stat(text, &state, &flags);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL, "ha_parse_stat: rc %d", rc);
	if (rc == 0) {
		const char *p = strrchr(text, ')') + 1;
		while (isspace((unsigned char)*p))
			p++;
		FUZZ_CHECK(state == *p, "state '%c', expected '%c'", state, *p);
	}
	FUZZ_CHECK(ha_parse_stat(text, NULL, NULL) == rc, "NULL outputs change the result");

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		check_field(text, names[i], outlen);
	/* A name from the input: its first line up to ':' (or all of it). */
	char name[32];
	snprintf(name, sizeof name, "%.*s", (int)strcspn(text, ":\n"), text);
	check_field(text, name, outlen);
	free(text);
	return 0;
}
