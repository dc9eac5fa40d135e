/* symbolize_var_test.c -- a global variable's definition found by address
 * from DWARF (symbolize_var.c through ha_symbolize_var), on this test's
 * own process: an array by an element inside it (its size from its type),
 * a static in .bss, a function's static local, the byte past a variable
 * (not it), a TLS variable (never a static address), and an address in
 * no module; TLS variables by their offset in the module's TLS block
 * (ha_symbolize_tls_var: the block from dl_iterate_phdr's dlpi_tls_data),
 * an array by an element inside it, past a .tdata variable.  The lines
 * are this file's, taken where each is defined. */
#define _GNU_SOURCE
#include "symbolize.h"
#include "unit.h"

#include <link.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

double g_arr[32] __attribute__((used)); static const int l_arr = __LINE__;
static char s_buf[100] __attribute__((used)); static const int l_buf = __LINE__;
__thread int t_var __attribute__((used)); static const int l_tvar = __LINE__;
__thread long t_arr[8] __attribute__((used)) = { 1 }; static const int l_tarr = __LINE__;
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

/* This executable's TLS block in this thread and an address of it. */
struct own_tls {
	uintptr_t block, module;
};

static int find_own(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct own_tls *o = ctx;
	if (info->dlpi_name[0] || !info->dlpi_tls_data)
		return 0;   /* the executable comes first, named "" */
	o->block = (uintptr_t)info->dlpi_tls_data;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			o->module = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			break;
		}
	return 1;
}

static void expect_tls(struct ha_symbolizer *s, const struct own_tls *o, const void *at,
                       const char *want, int line)
{
	const char *name, *file;
	int got_line;
	uint64_t off = (uint64_t)((uintptr_t)at - o->block);
	int rc = ha_symbolize_tls_var(s, o->module, off, &name, &file, &got_line);
	EXPECT(rc == 0 && strcmp(name, want) == 0, "TLS +%llu: rc %d name '%s', want %s",
	       (unsigned long long)off, rc, name, want);
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
	struct own_tls o = { 0, 0 };
	t_arr[5] = 2;
	dl_iterate_phdr(find_own, &o);
	EXPECT(o.block && o.module, "no TLS block of this executable found");
	if (o.block && o.module) {
		expect_tls(s, &o, &t_var, "t_var", l_tvar);
		expect_tls(s, &o, &t_arr[5], "t_arr", l_tarr);
		expect_tls(s, &o, &t_arr[0], "t_arr", l_tarr);
		rc = ha_symbolize_tls_var(s, o.module, 1u << 20, &name, &file, &line);
		EXPECT(rc == -1 && !name[0], "an offset past every TLS variable: nothing ('%s')", name);
	}
	ha_symbolizer_free(s);
	return UNIT_RESULT("a global's definition by address: arrays inside, .bss, static locals; "
	                   "not past the end, not TLS, not outside modules; TLS by offset");
}
