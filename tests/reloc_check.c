/* reloc_check -- the agent's relocation parser and GOT patching on modules
 * built for the test (tests/t_reloc.sh builds tests/reloc_lib.c with lazy
 * binding, with -z now and with -fno-plt, and lists with readelf the
 * JUMP_SLOT/GLOB_DAT relocations of malloc, calloc and free in each).
 *
 *   reloc_check MODULE EXPECTED-FILE LAZY
 *
 * dlopens MODULE (RTLD_LAZY if LAZY is 1), finds it with dl_iterate_phdr,
 * and checks:
 *   1. agent/elfmod.c's parser (ha_mod_parse, ha_mod_slots) reports exactly
 *      the slots readelf listed for those symbols: same offsets, same types,
 *      none missing, none extra;
 *   2. a patch pass of agent/got.c (the real one, with the agent's hooks and
 *      resolver compiled into this program: everything of the agent but
 *      msg.c and agent.c) points each of those slots at the agent's hook for
 *      its symbol, and the module still works through the hooks;
 *   3. after the restore pass every byte of the module's GOT (all its
 *      JUMP_SLOT and GLOB_DAT slots, any symbol, and what lies between
 *      them) is what it was before the patch -- in the lazy module too,
 *      where the JUMP_SLOTs still point into the PLT, and in the -z now
 *      one, whose GOT is read-only (RELRO) and is written through mprotect.
 *      A second round runs the module while patched: then ld.so may bind
 *      other lazy slots meanwhile (memset's), and only the patched slots
 *      must come back byte for byte.
 * This program is never patched itself (ha_mod_skip skips the module the
 * agent's code is linked into). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfmod.h"
#include "got.h"
#include "hooks.h"
#include "imports.h"
#include "resolve.h"
#include "tls.h"

#define MAX_SLOTS 64

struct slot {
	uint64_t off;
	uint32_t type;
	char name[64];
	int seen;
};

static struct slot want[MAX_SLOTS], got_[MAX_SLOTS];
static int nwant, ngot;
static const char *module_path;
static uintptr_t got_lo = UINTPTR_MAX, got_hi;  /* all JUMP_SLOT/GLOB_DAT slots */
static uintptr_t mod_base;
static int found;

static const char *const names[] = { "malloc", "calloc", "free" };

static int type_of(const char *s)
{
	if (strncmp(s, "R_X86_64_JUMP_SLO", 17) == 0)
		return R_X86_64_JUMP_SLOT;
	if (strcmp(s, "R_X86_64_GLOB_DAT") == 0)
		return R_X86_64_GLOB_DAT;
	return -1;
}

static void slot_cb(const struct ha_mod *m, const ElfW(Sym) *sym, uintptr_t slot, uint32_t type,
                    void *ctx)
{
	(void)ctx;
	if (slot < got_lo)
		got_lo = slot;
	if (slot + sizeof(uintptr_t) > got_hi)
		got_hi = slot + sizeof(uintptr_t);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (ha_mod_sym_is(m, sym, names[i]) && ngot < MAX_SLOTS) {
			got_[ngot].off = slot - m->base;
			got_[ngot].type = type;
			snprintf(got_[ngot].name, sizeof got_[ngot].name, "%s", names[i]);
			ngot++;
		}
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || strcmp(info->dlpi_name, module_path) != 0)
		return 0;
	struct ha_mod m;
	found = 1;
	mod_base = info->dlpi_addr;
	if (ha_mod_skip(info)) {
		fprintf(stderr, "ha_mod_skip says the test module is never patched\n");
		return 1;
	}
	if (!ha_mod_parse(info, &m)) {
		fprintf(stderr, "ha_mod_parse failed\n");
		return 1;
	}
	ha_mod_slots(&m, slot_cb, NULL);
	return 1;
}

static enum ha_hook_fn hook_of(const char *name)
{
	if (strcmp(name, "malloc") == 0)
		return HA_HOOK_MALLOC;
	if (strcmp(name, "calloc") == 0)
		return HA_HOOK_CALLOC;
	return HA_HOOK_FREE;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: reloc_check MODULE EXPECTED-FILE LAZY\n");
		return 2;
	}
	module_path = argv[1];
	int lazy = atoi(argv[3]);
	const char *missing;   /* what the attacher hands the agent: dlsym */
	if (ha_imports_init((uintptr_t)dlsym, &missing) != 0) {
		fprintf(stderr, "ha_imports_init: no %s\n", missing);
		return 2;
	}
	FILE *f = fopen(argv[2], "r");
	if (!f)
		return perror(argv[2]), 2;
	char tname[64], sname[64];
	unsigned long long off;
	while (nwant < MAX_SLOTS && fscanf(f, "%llx %63s %63s", &off, tname, sname) == 3) {
		int t = type_of(tname);
		if (t < 0) {
			fprintf(stderr, "bad type %s in %s\n", tname, argv[2]);
			return 2;
		}
		want[nwant].off = off;
		want[nwant].type = (uint32_t)t;
		snprintf(want[nwant].name, sizeof want[nwant].name, "%s", sname);
		nwant++;
	}
	fclose(f);
	if (nwant == 0) {
		fprintf(stderr, "no expected slots in %s\n", argv[2]);
		return 2;
	}

	void *h = dlopen(module_path, lazy ? RTLD_LAZY : RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*work)(int) = (int (*)(int))dlsym(h, "reloc_lib_work");
	if (!work) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	(void)dl_iterate_phdr(find_cb, NULL);
	if (!found) {
		fprintf(stderr, "module %s not listed by dl_iterate_phdr\n", module_path);
		return 1;
	}

	/* 1. exactly the expected slots */
	int errors = 0;
	for (int i = 0; i < ngot; i++) {
		int ok = 0;
		for (int j = 0; j < nwant; j++)
			if (!want[j].seen && want[j].off == got_[i].off && want[j].type == got_[i].type &&
			    strcmp(want[j].name, got_[i].name) == 0) {
				want[j].seen = ok = 1;
				break;
			}
		if (!ok) {
			fprintf(stderr, "parser found an unexpected slot: %s at %#llx (type %u)\n", got_[i].name,
			        (unsigned long long)got_[i].off, got_[i].type);
			errors++;
		}
	}
	for (int j = 0; j < nwant; j++)
		if (!want[j].seen) {
			fprintf(stderr, "parser missed %s at %#llx (type %u)\n", want[j].name,
			        (unsigned long long)want[j].off, want[j].type);
			errors++;
		}
	printf("%s: %d slots found, %d expected\n", module_path, ngot, nwant);
	for (int i = 0; i < ngot; i++)
		printf("  %-7s %#8llx %s\n", got_[i].name, (unsigned long long)got_[i].off,
		       got_[i].type == R_X86_64_JUMP_SLOT ? "JUMP_SLOT" : "GLOB_DAT");

	/* 2, 3: patch and restore, twice: first with nothing run in between
	 * (every byte of the GOT must come back, the lazy module's PLT stub
	 * addresses too), then with the module run through the hooks (ld.so
	 * may bind its other JUMP_SLOTs lazily meanwhile, memset's: only the
	 * slots we patched must come back byte for byte). */
	size_t glen = got_hi - got_lo;
	unsigned char *before = malloc(glen), *after = malloc(glen);
	if (!before || !after)
		return 1;
	memcpy(before, (const void *)got_lo, glen);
	char why[128] = "";
	if (ha_resolve_real(why, sizeof why) != 0) {
		fprintf(stderr, "ha_resolve_real: %s\n", why);
		return 1;
	}
	for (int round = 0; round < 2; round++) {
		ha_got_session_start();
		(void)ha_got_patch();
		uint64_t slots = 0, modules = 0;
		ha_got_counts(&slots, &modules);
		for (int i = 0; i < ngot; i++) {
			uintptr_t v = *(volatile uintptr_t *)(mod_base + got_[i].off);
			uintptr_t hook = ha_hooks_hook(hook_of(got_[i].name));
			if (v != hook) {
				fprintf(stderr, "after the patch %s at %#llx holds %#lx, not the hook %#lx\n",
				        got_[i].name, (unsigned long long)got_[i].off, (unsigned long)v,
				        (unsigned long)hook);
				errors++;
			}
		}
		printf("round %d: patched %llu slots in %llu modules (this module's %d among them)\n", round,
		       (unsigned long long)slots, (unsigned long long)modules, ngot);
		if (round == 1) {
			int r = work(100);
			printf("round 1: the module works through the hooks (%d)\n", r);
			if (r != 100) {
				fprintf(stderr, "reloc_lib_work returned %d, not 100\n", r);
				errors++;
			}
		}
		ha_got_restore();
		ha_got_counts(&slots, &modules);
		if (slots != 0) {
			fprintf(stderr, "%llu slots still patched after the restore\n", (unsigned long long)slots);
			errors++;
		}
		memcpy(after, (const void *)got_lo, glen);
		int differ = 0;
		for (size_t i = 0; i < glen; i += sizeof(uintptr_t)) {
			uintptr_t b, a;
			memcpy(&b, before + i, sizeof b);
			memcpy(&a, after + i, sizeof a);
			int ours = 0;
			for (int k = 0; k < ngot; k++)
				ours |= got_[k].off == got_lo + i - mod_base;
			if (a != b && (round == 0 || ours)) {
				fprintf(stderr, "round %d: after the restore the GOT word at %#lx is %#lx, was %#lx\n",
				        round, (unsigned long)(got_lo + i - mod_base), (unsigned long)a,
				        (unsigned long)b);
				errors++;
			}
			differ += a != b;
		}
		printf("round %d: restored; %zu bytes of GOT, %d words differ (%s)\n", round, glen, differ,
		       round == 0 ? "none may" : "only slots ld.so bound meanwhile may");
	}
	if (work(10) != 10)
		errors++;
	if (errors) {
		fprintf(stderr, "reloc_check: %d errors\n", errors);
		return 1;
	}
	printf("reloc_check: ok\n");
	return 0;
}
