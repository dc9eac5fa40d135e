/* fuzz_maps -- libFuzzer harness for the /proc/PID/maps parser of
 * src/common/procmaps.c (ha_maps_parse, what ha_maps_read runs on the
 * file) and the lookups made on its result.  The target chooses its paths
 * and can map what it likes where it likes.
 *
 * The input is the text of a maps file.  Asserted, besides what the
 * sanitizers check:
 *  - ha_maps_parse returns 0 (-ENOMEM cannot happen here);
 *  - the mappings are sorted by start, each with start <= end, and no path
 *    holds a newline;
 *  - ha_maps_find_addr, for the first and last byte of every mapping and
 *    the byte after it, gives NULL or a mapping that contains the address
 *    (NULL is allowed: mappings may overlap in a forged file, and the
 *    binary search then sees only the last one that starts below);
 *  - ha_maps_module_of gives NULL or an offset-0 mapping of the same file;
 *  - ha_maps_find_module gives NULL or an offset-0 mapping of an absolute
 *    path whose base name starts with the prefix.
 *
 * fuzz-sources: src/common/procmaps.c src/common/util.c
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "procmaps.h"
#include "util.h"

static void check_addr(const struct ha_maps *m, uint64_t addr)
{
	const struct ha_map *e = ha_maps_find_addr(m, addr);
	FUZZ_CHECK(!e || (e >= m->v && e < m->v + m->n && e->start <= addr && addr < e->end),
	           "the mapping found does not contain %#llx", (unsigned long long)addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *text = fuzz_str(d, n);
	struct ha_maps m;
	int rc = ha_maps_parse(text, n, &m);
	FUZZ_CHECK(rc == 0, "rc %d", rc);
	for (size_t i = 0; i < m.n; i++) {
		const struct ha_map *e = &m.v[i];
		FUZZ_CHECK(e->start <= e->end, "mapping %zu ends before it starts", i);
		FUZZ_CHECK(i == 0 || m.v[i - 1].start <= e->start, "mapping %zu out of order", i);
		FUZZ_CHECK(e->path && !strchr(e->path, '\n'), "mapping %zu: bad path", i);
	}
	for (size_t i = 0; i < m.n; i++) {
		const struct ha_map *e = &m.v[i];
		if (e->start < e->end) {
			check_addr(&m, e->start);
			check_addr(&m, e->end - 1);
		}
		check_addr(&m, e->end);
		const struct ha_map *mod = ha_maps_module_of(&m, e);
		FUZZ_CHECK(!mod || (mod->offset == 0 && strcmp(mod->path, e->path) == 0 &&
		                    mod->inode == e->inode && mod->dev == e->dev),
		           "module_of mapping %zu is not an offset-0 mapping of its file", i);
	}
	static const char *const prefixes[] = { "libc.so.6", "heapattach_agent.so", "ld-", "" };
	for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
		const struct ha_map *e = ha_maps_find_module(&m, prefixes[k]);
		FUZZ_CHECK(!e || (e->offset == 0 && e->path[0] == '/' &&
		                  strncmp(ha_maps_module_name(e->path), prefixes[k],
		                          strlen(prefixes[k])) == 0),
		           "find_module('%s') gave a wrong mapping", prefixes[k]);
		/* A memfd passes for a module only as the agent's. */
		FUZZ_CHECK(!e || strncmp(ha_base_name(e->path), "memfd:", 6) != 0 || k == 1 ||
		                   !prefixes[k][0],
		           "find_module('%s') took a memfd (%s)", prefixes[k], e->path);
	}
	ha_maps_free(&m);
	free(text);
	return 0;
}
