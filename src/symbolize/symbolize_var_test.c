/* symbolize_var_test.c -- a global variable's definition found by address
 * from DWARF (symbolize_var.c through ha_symbolize_var), on this test's
 * own process: an array by an element inside it (its size from its type),
 * a static in .bss, a function's static local, the byte past a variable
 * (not it), a TLS variable (never a static address), and an address in
 * no module.  The lines are this file's, taken where each is defined. */
#define _GNU_SOURCE
#include "symbolize.h"
#include "unit.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

double g_arr[32] __attribute__((used)); static const int l_arr = __LINE__;
static char s_buf[100] __attribute__((used)); static const int l_buf = __LINE__;
__thread int t_var __attribute__((used));
static int l_count;

__attribute__((noinline)) static long *counter(void)
{
	static long count; l_count = __LINE__;
	return &count;
}

static const char *base(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

static void expect_var(struct ha_symbolizer *s, const void *at, const char *want, int line)
{
	const char *name, *file;
	int got_line;
	int rc = ha_symbolize_var(s, (uint64_t)(uintptr_t)at, 0, &name, &file, &got_line);
	EXPECT(rc == 0 && strcmp(name, want) == 0, "%p: rc %d name '%s', want %s", at, rc, name, want);
	EXPECT(strcmp(base(file), "symbolize_var_test.c") == 0, "%s: file '%s'", want, file);
	EXPECT(got_line == line, "%s: line %d, want %d", want, got_line, line);
}

int main(void)
{
	char err[200];
	struct ha_symbolizer *s = ha_symbolizer_new(getpid(), err, sizeof err);
	EXPECT(s != NULL, "symbolizer: %s", err);
	if (!s)
		return UNIT_RESULT("");
	g_arr[17] = 1.0;
	s_buf[99] = 1;
	t_var = 1;
	++*counter();
	expect_var(s, &g_arr[17], "g_arr", l_arr);
	expect_var(s, &g_arr[0], "g_arr", l_arr);
	expect_var(s, &s_buf[99], "s_buf", l_buf);
	expect_var(s, counter(), "count", l_count);

	const char *name, *file;
	int line;
	int rc = ha_symbolize_var(s, (uint64_t)(uintptr_t)(s_buf + sizeof s_buf), 0, &name, &file,
	                          &line);
	EXPECT(rc != 0 || strcmp(name, "s_buf") != 0, "the byte past s_buf is not s_buf");
	rc = ha_symbolize_var(s, (uint64_t)(uintptr_t)&t_var, 0, &name, &file, &line);
	EXPECT(rc != 0 || strcmp(name, "t_var") != 0, "a TLS variable has no static address");
	rc = ha_symbolize_var(s, 16, 0, &name, &file, &line);
	EXPECT(rc == -1 && !name[0] && !file[0] && line == 0, "an address in no module: nothing");
	ha_symbolizer_free(s);
	return UNIT_RESULT("a global's definition by address: arrays inside, .bss, static locals; "
	                   "not past the end, not TLS, not outside modules");
}
