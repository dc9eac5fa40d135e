/* unwind_elfsym_test.c -- unit test of unwind_elfsym.c: on this test's own
 * executable (its functions by name and by address, against where the
 * loader put them), on musl's libc where installed (strdup, which the
 * call-site scan steps over), and on damaged copies of the executable
 * (cut short, section headers pointing out of the file, garbage): empty
 * or partial tables, never a read outside the bytes (ASan) nor an answer
 * above the address asked. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "unwind_elfsym.h"

#define MUSL_LIBC "/usr/lib/x86_64-linux-musl/libc.so"

static uint8_t *slurp(const char *path, size_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	uint8_t *p = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && (p = malloc((size_t)st.st_size)) &&
	    read(fd, p, (size_t)st.st_size) != st.st_size) {
		free(p);
		p = NULL;
	}
	close(fd);
	*size = p ? (size_t)st.st_size : 0;
	return p;
}

static int main_bias(struct dl_phdr_info *info, size_t size, void *out)
{
	(void)size;
	*(uintptr_t *)out = info->dlpi_addr;
	return 1;   /* the first object is the program */
}

__attribute__((noinline)) int elfsym_probe(int x)
{
	return x * 3 + 1;
}

/* Queries on tables made from anything: answers at or below the address. */
static void check_sane(const struct uw_syms *s, const char *what)
{
	for (uint64_t a = 0; a < 0x40000; a += 0x777) {
		uint64_t st;
		if (uw_syms_func_le(s, a, &st))
			EXPECT(st <= a, "%s: a start above the address asked (%#llx > %#llx)", what,
			       (unsigned long long)st, (unsigned long long)a);
		(void)uw_syms_slot_name(s, a);
	}
	uint64_t st;
	(void)uw_syms_func_named(s, "main", &st);
}

int main(void)
{
	size_t size;
	uintptr_t bias = 0;
	uint64_t st;
	uint8_t *exe = slurp("/proc/self/exe", &size);
	EXPECT(exe != NULL, "cannot read /proc/self/exe");
	if (!exe)
		return UNIT_RESULT("");
	dl_iterate_phdr(main_bias, &bias);
	struct uw_syms *s = uw_syms_parse(exe, size);
	EXPECT(s != NULL, "no tables for this executable");
	uint64_t probe = (uint64_t)(uintptr_t)elfsym_probe - bias;
	EXPECT(uw_syms_func_named(s, "elfsym_probe", &st) && st == probe,
	       "elfsym_probe by name: %#llx, loaded at vaddr %#llx", (unsigned long long)st,
	       (unsigned long long)probe);
	EXPECT(uw_syms_func_le(s, probe + 3, &st) && st == probe,
	       "the function holding elfsym_probe+3 starts at %#llx, not %#llx",
	       (unsigned long long)st, (unsigned long long)probe);
	EXPECT(uw_syms_func_le(s, probe, &st) && st == probe, "a function's own start holds it");
	EXPECT(!uw_syms_func_named(s, "no_such_function_here", &st), "an unknown name found");
	check_sane(s, "this executable");
	uw_syms_free(s);

	/* musl's libc: only .dynsym, strdup among its functions. */
	size_t msize;
	uint8_t *musl = slurp(MUSL_LIBC, &msize);
	if (musl) {
		uint64_t sd;
		s = uw_syms_parse(musl, msize);
		EXPECT(s && uw_syms_func_named(s, "strdup", &sd), "strdup not in %s", MUSL_LIBC);
		EXPECT(s && uw_syms_func_le(s, sd + 4, &st) && st == sd,
		       "strdup+4 is not in strdup (%#llx)", (unsigned long long)st);
		uw_syms_free(s);
		free(musl);
	} else {
		printf("note: no %s (Debian package musl): its part skipped\n", MUSL_LIBC);
	}

	/* Damaged copies, each in a block of exactly its size (ASan). */
	size_t cuts[] = { 0, 4, sizeof(Elf64_Ehdr) - 1, sizeof(Elf64_Ehdr), 4096, size / 2, size - 1 };
	for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
		uint8_t *p = malloc(cuts[i] ? cuts[i] : 1);
		memcpy(p, exe, cuts[i]);
		s = uw_syms_parse(p, cuts[i]);
		check_sane(s, "a cut copy");
		uw_syms_free(s);
		free(p);
	}
	uint8_t *bad = malloc(size);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)exe;
	for (unsigned k = 0; k < 64; k++) {
		memcpy(bad, exe, size);
		Elf64_Shdr *sh = (Elf64_Shdr *)(bad + eh->e_shoff);
		for (unsigned i = 0; i < eh->e_shnum; i++) {
			switch ((i + k) % 5) {
			case 0: sh[i].sh_link = 0xffff - k; break;
			case 1: sh[i].sh_size = ~0ull - k; break;
			case 2: sh[i].sh_offset = size - (k % 8); break;
			case 3: sh[i].sh_size = sh[i].sh_size / (k + 2) + 1; break;
			default: break;
			}
		}
		s = uw_syms_parse(bad, size);
		check_sane(s, "damaged section headers");
		uw_syms_free(s);
	}
	for (size_t i = 0; i < size; i++)
		bad[i] = (uint8_t)(i * 131 + 7);
	memcpy(bad, exe, sizeof(Elf64_Ehdr));   /* a good header over garbage */
	s = uw_syms_parse(bad, size);
	check_sane(s, "garbage behind a good header");
	uw_syms_free(s);
	free(bad);
	free(exe);
	return UNIT_RESULT("a module's functions by name and address, musl's strdup, damaged files");
}
