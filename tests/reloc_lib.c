/* reloc_lib -- a module for tests/reloc_check.c, built by tests/t_reloc.sh
 * three ways (lazy binding, -z now, -fno-plt): it calls malloc, calloc and
 * free through its PLT (JUMP_SLOT relocations, GLOB_DAT with -fno-plt) and
 * takes free's address in code (a GOT load: a GLOB_DAT, which the linker
 * then uses for free's calls too).  Which slots each build has is what
 * readelf says, not what this comment says. */
#include <stdlib.h>
#include <string.h>

int reloc_lib_work(int n)
{
	void (*volatile free_ptr)(void *) = free;
	int sum = 0;
	for (int i = 1; i <= n; i++) {
		char *a = malloc((size_t)i * 16);
		int *b = calloc((size_t)i, sizeof *b);
		if (!a || !b)
			return -1;
		memset(a, 1, (size_t)i * 16);
		sum += a[i] + b[i - 1];
		free(a);
		free_ptr(b);
	}
	return sum;
}
