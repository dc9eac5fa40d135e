/* fuzz_dwarf_vars -- libFuzzer harness for the DWARF variable index of
 * the reachability scan's holders (src/symbolize/symbolize_var.c): a
 * global's or TLS variable's name and definition, read from the target's
 * files, which are anything it likes (or a debug file that claims to be
 * theirs).
 *
 * The input is an ELF file (an executable, a shared object, a relocatable
 * object), given to libdwfl as the symbolizer gives a target's module: a
 * module reported at an address range (dwfl_report_module) whose find_elf
 * callback hands over the file (here a memfd of the input: the seeds are
 * linked with -N, their first segment not page-aligned, so that libdwfl's
 * bias wraps below zero); no separate
 * debug file is ever looked for (find_debuginfo finds none), so the
 * input's own DWARF is read.  (libdwfl's offline reporting from memory,
 * which the symbolizer never uses, crashes in elfutils 0.188 on a
 * truncated ELF header, a write to 0x1c: not ours, not used.)  The index is built on the first question
 * (ha_sym_var_in), then asked: the module's first 64 words; the 8-byte
 * values at each of the input's first 4,096 byte offsets plus the DWARF
 * bias, as addresses (the DW_OP_addr operands and .debug_addr entries
 * among them); as offsets in the module's TLS block, the input's first 512
 * aligned words and 0..256.
 * Asserted, besides what the sanitizers check:
 *  - an answer (0) has a name and a file (strings, "" allowed) and a line
 *    >= 0; no answer (-1) leaves "", "" and 0;
 *  - the same question asked again gives the same answer, the same
 *    interned strings (the index is read once and kept);
 *  - one input, index and questions, within 2 s of CPU (the index's DIE
 *    budget and depth limit bound a hostile file's walk; libFuzzer's own
 *    timeout is 10 s).
 *
 * Seeds (corpus/dwarf_vars/): one C file of globals (an array, a static,
 * a struct, function statics, one in a block) and TLS variables (in .tdata
 * and .tbss), built with gcc -gdwarf-4 and -gdwarf-5 (static, DW_OP_addr)
 * and clang -gdwarf-5 -shared (DW_OP_addrx, decl_file 0), each -O0
 * -nostdlib -Wl,-N -Wl,--build-id=none, .comment removed: 3-5 KiB.
 *
 * fuzz-sources: src/symbolize/symbolize_var.c src/symbolize/strpool.c
 * fuzz-sources: src/common/arena.c src/common/hashtab.c src/symbolize/dwarf_names.c
 * fuzz-libs: -ldw -lelf -lstdc++
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "symbolize_int.h"

#include <elfutils/libdwfl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MOD_LO 0x400000ull
#define MOD_HI (MOD_LO + (1ull << 32))

static const uint8_t *in_data;
static size_t in_len;

/* The module's file: a memfd of the input (libdwfl owns it then). */
static int input_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                     char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	*elfp = NULL;
	int fd = memfd_create("fuzz_dwarf_vars", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0, "memfd_create");
	FUZZ_CHECK(in_len == 0 || write(fd, in_data, in_len) == (ssize_t)in_len, "write");
	return fd;
}

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file,
                        GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = input_elf,
	.find_debuginfo = no_debuginfo,
};

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void ask(struct ha_sym_vars **vs, struct ha_strpool *pool, Dwfl_Module *mod, uint64_t a,
                int tls)
{
	const char *name = NULL, *file = NULL, *name2 = NULL, *file2 = NULL;
	int line = -1, line2 = -1;
	int rc = ha_sym_var_in(vs, pool, mod, a, tls, &name, &file, &line);
	FUZZ_CHECK(name && file, "%#llx: no strings", (unsigned long long)a);
	if (rc == 0)
		FUZZ_CHECK(line >= 0, "%#llx: line %d", (unsigned long long)a, line);
	else
		FUZZ_CHECK(rc == -1 && !name[0] && !file[0] && line == 0,
		           "%#llx: rc %d, '%s' '%s' %d", (unsigned long long)a, rc, name, file, line);
	(void)strlen(name), (void)strlen(file);
	int rc2 = ha_sym_var_in(vs, pool, mod, a, tls, &name2, &file2, &line2);
	FUZZ_CHECK(rc2 == rc && name2 == name && file2 == file && line2 == line,
	           "%#llx%s asked twice: '%s' %d, then '%s' %d", (unsigned long long)a,
	           tls ? " (TLS)" : "", name, line, name2, line2);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	double t0 = cpu_s();
	in_data = d;
	in_len = n;
	Dwfl *dwfl = dwfl_begin(&callbacks);
	FUZZ_CHECK(dwfl != NULL, "dwfl_begin: %s", dwfl_errmsg(-1));
	dwfl_report_begin(dwfl);
	Dwfl_Module *mod = dwfl_report_module(dwfl, "fuzz", MOD_LO, MOD_HI);
	dwfl_report_end(dwfl, NULL, NULL);
	if (mod) {
		struct ha_sym_vars *vs = NULL;
		struct ha_strpool pool;
		memset(&pool, 0, sizeof pool);
		Dwarf_Addr start = 0, end = 0;
		dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
		Dwarf_Addr bias = 0;
		if (!dwfl_module_getdwarf(mod, &bias))
			bias = start;
		for (uint64_t k = 0; k < 64; k++)
			ask(&vs, &pool, mod, start + 8 * k, 0);
		for (size_t i = 0; i + 8 <= n && i < 4096; i++) {
			uint64_t a;
			memcpy(&a, d + i, 8);
			ask(&vs, &pool, mod, a + bias, 0);
			if (i % 8 == 0)
				ask(&vs, &pool, mod, a, 1);
		}
		for (uint64_t off = 0; off <= 256; off++)
			ask(&vs, &pool, mod, off, 1);
		ha_sym_vars_free(vs);
		ha_strpool_free(&pool);
	}
	dwfl_end(dwfl);
	double t = cpu_s() - t0;
	FUZZ_CHECK(t < 2.0, "one input took %.2f s of CPU (%zu bytes)", t, n);
	return 0;
}
