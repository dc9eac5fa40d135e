/* py_offsets_check.c -- src/pyframes on a live CPython: does what
 * ha_py_detect found, and the offsets it took (the generated table, or a
 * 3.13's own _Py_DebugOffsets), match what the interpreter says of itself?
 *
 *   py_offsets_check PID FACTS
 *
 * PID runs tests/py_offsets_target.py, whose facts (one a line) are in the
 * file FACTS; it waits in inner() <- outer() <- the module.  Checked:
 *   - the version, and that each way of finding it that applies agrees
 *     (Py_Version, the module's name, the string Py_GetVersion loads);
 *     3.13: the offsets came from its _Py_DebugOffsets and the table's
 *     entry equals them;
 *   - &PyCode_Type, &PyUnicode_Type, &PyBytes_Type are the types' ids,
 *     PyGILState_GetThisThreadState and _PyEval_EvalFrameDefault lie in
 *     the module's executable mappings, &_PyRuntime is the one it printed;
 *   - the frame chain walked from its thread state with the agent's
 *     offsets (struct ha_py_walk, as the agent will): the code objects of
 *     inner, outer and the module in that order, each of type PyCode_Type,
 *     each frame's lasti on the line Python gave (so f_lasti and its unit,
 *     prev_instr / instr_ptr and co_code_adaptive are right); 3.11: only
 *     the module's frame is_entry; 3.12+: the frame before the module's is
 *     the eval loop's shim (owner 3); each code object's ident computed
 *     with the walk's string layout (its name or qualname, its file name)
 *     is the reader's, and names it;
 *   - every str (ASCII, latin-1, UCS-2, UCS-4) and the bytes object read
 *     back equal; a code object's name, qualname, file name, line table
 *     and co_code_adaptive read back equal.
 * Prints "fin N" (the _finalizing offset, for the target's own check at
 * its exit) and exits 0, or prints each mismatch and exits 1. */
#define _GNU_SOURCE
#include "py_detect.h"
#include "py_elf.h"
#include "py_read.h"
#include "unit.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAXF 16

static pid_t pid;

static uint64_t rd64(uint64_t addr)
{
	uint64_t v = 0;
	if (ha_remote_read(pid, addr, &v, sizeof v) < 0)
		EXPECT(0, "cannot read 8 bytes at %#llx", (unsigned long long)addr);
	return v;
}

static int rd8(uint64_t addr)
{
	unsigned char v = 0;
	if (ha_remote_read(pid, addr, &v, 1) < 0)
		EXPECT(0, "cannot read a byte at %#llx", (unsigned long long)addr);
	return v;
}

static int unhex(const char *h, unsigned char *out, size_t max)
{
	size_t n = 0;
	if (strcmp(h, "-") == 0)
		return 0;
	for (; h[0] && h[1] && n < max; h += 2)
		if (sscanf(h, "%2hhx", &out[n++]) != 1)
			return -1;
	return (int)n;
}

/* Is [a, b) inside one executable mapping of the file path? */
static int in_exec(const struct ha_maps *m, const char *path, uint64_t a, uint64_t b)
{
	const struct ha_map *e = ha_maps_find_addr(m, a);
	return e && (e->prot & PROT_EXEC) && b <= e->end && strcmp(e->path, path) == 0;
}

struct frame_fact {
	char who[16];
	uint64_t code;
	int line;
};

static void check_versions(const struct ha_py_target *t, const struct ha_maps *maps)
{
	const struct ha_map *mod = NULL;
	struct ha_py_sym gv = { .name = "Py_GetVersion" };
	int major, minor;
	char flags[8];

	printf("CPython %d.%d (hex %#x, found by %s) in %s%s%s\n", t->major, t->minor, t->hexversion,
	       t->version_from == HA_PY_VERSION_SYMBOL ? "Py_Version" :
	       t->version_from == HA_PY_VERSION_NAME ? "its name" : "Py_GetVersion's string",
	       t->module, t->debug_offsets ? ", offsets from its _Py_DebugOffsets" : "",
	       t->eval_cold_start ? ", the eval loop's .cold part named" : "");
	EXPECT(t->minor < 11 || t->version_from == HA_PY_VERSION_SYMBOL, "3.11+: Py_Version unused");
	if (ha_py_version_from_name(t->module, &major, &minor, flags, sizeof flags) == 0)
		EXPECT(minor == t->minor && !flags[0], "the name says 3.%d%s", minor, flags);
	for (size_t i = 0; i < maps->n && !mod; i++)
		if (maps->v[i].offset == 0 && strcmp(maps->v[i].path, t->module) == 0)
			mod = &maps->v[i];
	EXPECT(mod && ha_py_elf_lookup(pid, mod, &gv, 1) == 0 && gv.addr, "no Py_GetVersion");
	if (gv.addr) {
		int rc = ha_py_version_from_code(pid, gv.addr, gv.size, &major, &minor);
		EXPECT(rc == 0 && minor == t->minor, "Py_GetVersion's string: rc %d, 3.%d", rc, minor);
	}
	if (t->minor >= 13) {
		EXPECT(t->debug_offsets, "3.13: the debug offsets were not used");
		EXPECT(!t->table_diff, "3.13: the table's %s differs from the target's debug offsets",
		       t->table_diff);
	}
}

/* h with the str at s, as the agent adds it (pywalk.c), read here. */
static uint64_t agent_str(const struct ha_py_walk *w, uint64_t s, uint64_t h)
{
	uint8_t tail[HA_PY_IDENT_TAIL];
	uint32_t off, kind, state = 0;
	int64_t bytes = -1, length = (int64_t)rd64(s + w->str_length);
	ha_remote_read(pid, s + w->str_state, &state, sizeof state);
	if (ha_py_ptr_ok(s) && rd64(s + w->object_type) == w->unicode_type)
		bytes = ha_py_str_bytes(w, length, state, &off, &kind);
	if (bytes < 0)
		return ha_py_ident_nostr(h);
	uint32_t n = bytes < HA_PY_IDENT_TAIL ? (uint32_t)bytes : HA_PY_IDENT_TAIL;
	EXPECT(ha_remote_read(pid, s + off + (uint64_t)bytes - n, tail, n) == 0, "a str's tail");
	return ha_py_ident_add(h, tail, n, length, kind);
}

/* The ident the agent records of the code object at code. */
static uint64_t agent_ident(const struct ha_py_walk *w, uint64_t code)
{
	uint16_t name = w->code_qualname != HA_PY_NO_FIELD ? w->code_qualname : w->code_name;
	return agent_str(w, rd64(code + w->code_filename),
	                 agent_str(w, rd64(code + name), HA_PY_IDENT_SEED));
}

/* Walk the chain as the agent will; compare with the facts. */
static void check_chain(struct ha_py_reader *r, const struct ha_py_target *t, uint64_t tstate,
                        const struct frame_fact *ff, int nf)
{
	const struct ha_py_walk *w = &t->walk;
	uint64_t f = rd64(tstate + w->tstate_frame);
	int k = 0, shim_seen = 0;

	if (w->chain == HA_PY_CHAIN_CFRAME)
		f = rd64(f + w->cframe_current);
	for (int depth = 0; f && depth < 64 && k <= nf; depth++, f = rd64(f + w->frame_back)) {
		uint64_t code = rd64(f + w->frame_code), lasti;
		struct ha_py_loc loc;
		int entry = -1;

		if (w->frame_owner != HA_PY_NO_FIELD && rd8(f + w->frame_owner) == HA_PY_OWNER_CSTACK) {
			EXPECT(k == nf, "a shim frame (owner 3) before the module's frame (frame %d)", k);
			shim_seen = 1;
			break;
		}
		if (k == nf)
			break;
		EXPECT(rd64(code + w->object_type) == w->code_type, "frame %d: not a code object", k);
		if (w->chain == HA_PY_CHAIN_FRAMEOBJ) {
			int32_t l = 0;
			ha_remote_read(pid, f + w->frame_lasti, &l, sizeof l);
			lasti = (uint64_t)(int64_t)l * w->lasti_units;
		} else {
			lasti = rd64(f + w->frame_lasti) - (code + w->code_adaptive);
		}
		if (w->frame_is_entry != HA_PY_NO_FIELD)
			entry = rd8(f + w->frame_is_entry);
		uint64_t ident = agent_ident(w, code), theirs = 0;
		EXPECT(ha_py_code_ident(r, code, &theirs) == 0 && theirs == ident,
		       "frame %d: ident %#llx, the reader's %#llx", k, (unsigned long long)ident,
		       (unsigned long long)theirs);
		int rc = ha_py_code_resolve(r, code, ident, (int32_t)rd64(code + w->code_firstlineno),
		                            (uint32_t)lasti, &loc);
		printf("frame %d: %s %s:%d (lasti %lld%s)\n", k, loc.func, loc.file, loc.line,
		       (long long)lasti, entry == 1 ? ", entry" : "");
		EXPECT(rc == HA_PY_CODE_OK, "frame %d: resolve gave %d", k, rc);
		EXPECT(code == ff[k].code, "frame %d (%s): code %#llx, Python said %#llx", k, ff[k].who,
		       (unsigned long long)code, (unsigned long long)ff[k].code);
		EXPECT(loc.line == ff[k].line, "frame %d (%s): line %d, Python said %d", k, ff[k].who,
		       loc.line, ff[k].line);
		if (entry >= 0)
			EXPECT(entry == (k == nf - 1), "frame %d (%s): is_entry %d", k, ff[k].who, entry);
		k++;
	}
	EXPECT(k == nf, "walked %d frames of the %d expected", k, nf);
	if (w->frame_owner != HA_PY_NO_FIELD)
		EXPECT(shim_seen, "no shim frame (owner 3) after the module's frame");
}

int main(int argc, char **argv)
{
	struct ha_py_target t;
	struct ha_maps maps = { 0 };
	struct ha_py_reader *r;
	struct frame_fact ff[MAXF];
	char line[65536], err[512];
	uint64_t tstate = 0, runtime = 0, types[3] = { 0 };
	int nf = 0, nstr = 0, rc;
	FILE *facts;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PID FACTS\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pid = (pid_t)atoi(argv[1]);
	if (ha_maps_read(pid, &maps) < 0 || !(facts = fopen(argv[2], "r"))) {
		fprintf(stderr, "cannot read the maps of %d or %s\n", (int)pid, argv[2]);
		return 1;
	}
	rc = ha_py_detect(pid, &maps, &t, err, sizeof err);
	if (rc != 0) {
		printf("MISMATCH: ha_py_detect: %d: %s\n", rc, err);
		ha_maps_free(&maps);
		return 1;
	}
	r = ha_py_reader_new(pid, &t);
	if (!r) {
		printf("MISMATCH: ha_py_reader_new refused the offsets\n");
		ha_maps_free(&maps);
		return 1;
	}
	check_versions(&t, &maps);
	EXPECT(in_exec(&maps, t.module, t.walk.get_tstate, t.walk.get_tstate + 1),
	       "PyGILState_GetThisThreadState is not in the module's code");
	EXPECT(in_exec(&maps, t.module, t.eval_start, t.eval_end),
	       "_PyEval_EvalFrameDefault is not in the module's code");
	EXPECT(!t.eval_cold_start || in_exec(&maps, t.module, t.eval_cold_start, t.eval_cold_end),
	       "_PyEval_EvalFrameDefault.cold is not in the module's code");
	EXPECT(ha_py_in_eval(&t, t.eval_start) && ha_py_in_eval(&t, t.eval_end - 1) &&
	       !ha_py_in_eval(&t, t.eval_end) && !ha_py_in_eval(&t, 0), "ha_py_in_eval");
	while (fgets(line, sizeof line, facts)) {
		char a[32], b[32], c[32], d[8192], e[8192], f[8192], g[8192], h[8192];
		unsigned char want[4096], got[4096];
		char s[4 * HA_PY_STR_MAX + 1];
		uint64_t addr;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "tstate %" SCNu64, &tstate) == 1 ||
		    sscanf(line, "runtime %" SCNu64, &runtime) == 1 ||
		    sscanf(line, "types %" SCNu64 " %" SCNu64 " %" SCNu64, &types[0], &types[1],
		           &types[2]) == 3)
			continue;
		if (sscanf(line, "str %" SCNu64 " %8191s", &addr, d) == 2) {
			int n = unhex(d, want, sizeof want);
			EXPECT(ha_py_read_str(r, addr, s, sizeof s) == n && memcmp(s, want, (size_t)n) == 0,
			       "str %s read back as \"%s\"", d, s);
			nstr++;
		} else if (sscanf(line, "bytes %" SCNu64 " %8191s", &addr, d) == 2) {
			int n = unhex(d, want, sizeof want);
			EXPECT(ha_py_read_bytes(r, addr, got, sizeof got) == n &&
			       memcmp(got, want, (size_t)n) == 0, "bytes %s read back differ", d);
		} else if (sscanf(line, "code %31s %31s %31s %8191s %8191s %8191s %8191s %8191s", a, b, c,
		                  d, e, f, g, h) == 8) {
			uint64_t code = strtoull(a, NULL, 10), tab;
			struct ha_py_loc loc;
			char name[1024] = "", qual[1024] = "", file[4096] = "";
			int n;
			unhex(d, (unsigned char *)name, sizeof name - 1);
			unhex(e, (unsigned char *)qual, sizeof qual - 1);
			unhex(f, (unsigned char *)file, sizeof file - 1);
			uint64_t ident = agent_ident(&t.walk, code);
			rc = ha_py_code_resolve(r, code, ident, atoi(c), 0, &loc);
			EXPECT(rc == HA_PY_CODE_OK, "code: resolve gave %d", rc);
			EXPECT(strcmp(loc.func, t.minor >= 11 ? qual : name) == 0, "code: name %s", loc.func);
			EXPECT(strcmp(loc.file, file) == 0, "code: file %s, not %s", loc.file, file);
			EXPECT(ha_py_read_str(r, rd64(code + t.off.code_name), s, sizeof s) >= 0 &&
			       strcmp(s, name) == 0, "code: co_name %s", s);
			tab = rd64(code + t.off.code_linetable);
			n = unhex(g, want, sizeof want);
			EXPECT(ha_py_read_bytes(r, tab, got, sizeof got) == n &&
			       memcmp(got, want, (size_t)n) == 0, "code: the line table read back differs");
			n = unhex(h, want, sizeof want);
			if (t.off.code_adaptive != HA_PY_NO_FIELD)
				EXPECT(ha_remote_read(pid, code + t.off.code_adaptive, got, (size_t)n) == 0 &&
				       memcmp(got, want, (size_t)n) == 0, "code: co_code_adaptive differs");
			/* the same code object under another ident: gone */
			rc = ha_py_code_resolve(r, code, ident + 16, atoi(c), 0, &loc);
			EXPECT(rc == HA_PY_CODE_GONE, "code: another ident gave %d, not gone", rc);
		} else if (nf < MAXF && sscanf(line, "frame %15s %" SCNu64 " %d", ff[nf].who,
		                               &ff[nf].code, &ff[nf].line) == 3) {
			nf++;
		}
	}
	fclose(facts);
	EXPECT(tstate && runtime && nf == 3 && nstr == 4, "facts missing");
	EXPECT(runtime == t.runtime, "&_PyRuntime %#llx, Python said %#llx",
	       (unsigned long long)t.runtime, (unsigned long long)runtime);
	EXPECT(t.walk.finalizing == t.runtime + t.off.runtime_finalizing, "walk.finalizing");
	EXPECT(types[0] == t.code_type && types[1] == t.unicode_type && types[2] == t.bytes_type,
	       "the types' addresses differ from their ids");
	if (tstate && nf == 3)
		check_chain(r, &t, tstate, ff, nf);
	ha_py_reader_free(r);
	ha_maps_free(&maps);
	if (unit_failures)
		return UNIT_RESULT("offsets");
	printf("fin %u\n", (unsigned)t.off.runtime_finalizing);
	return 0;
}
