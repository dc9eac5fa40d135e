/* alloc_frame.c -- the allocator's frames by name (see alloc_frame.h). */
#include "alloc_frame.h"
#include "util.h"

#include <string.h>

/* Frames of the allocator itself and of the C++ runtime's allocation path. */
static const char *const alloc_exact[] = {
	"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
	"memalign", "valloc", "pvalloc", "strdup", "strndup", "__strdup", "__strndup",
	"mmap", "mmap64", "__mmap", "sysmalloc", "tcache_init", "_int_malloc", "_int_realloc",
	"_int_memalign", "_mid_memalign", "__libc_malloc", "__libc_calloc", "__libc_realloc",
	"__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__posix_memalign",
	"__libc_alloc_buffer_allocate", "__cxa_allocate_exception", NULL,
};
/* The C++ runtime's allocation path: operator new and the allocator
 * classes, whole. */
static const char *const alloc_prefix[] = {
	"operator new", "std::allocator<", "std::allocator_traits<", "std::__new_allocator<",
	"__gnu_cxx::new_allocator<", "__gnu_cxx::__alloc_traits<", "std::__allocate_guarded",
	"std::__allocated_ptr", NULL,
};
/* Of the standard containers, only the members that obtain memory: a
 * std::vector<T>::push_back called by the program is worth seeing, the
 * _M_allocate it calls is not. */
static const char *const alloc_member[] = {
	"::_M_allocate(", "::_M_allocate_node", "::_M_allocate_buckets", "::_M_get_node(",
	"::_M_create(", "::_M_create_storage", NULL,
};

int ha_alloc_frame(const char *fn, const char *module)
{
	if (strstr(ha_base_name(module), "heapattach_agent"))
		return 1;
	if (!fn[0])
		return 0;
	for (int i = 0; alloc_exact[i]; i++)
		if (strcmp(fn, alloc_exact[i]) == 0)
			return 1;
	for (int i = 0; alloc_prefix[i]; i++)
		if (strncmp(fn, alloc_prefix[i], strlen(alloc_prefix[i])) == 0)
			return 1;
	if (strncmp(fn, "std::", 5) == 0 || strncmp(fn, "__gnu_cxx::", 11) == 0)
		for (int i = 0; alloc_member[i]; i++)
			if (strstr(fn, alloc_member[i]))
				return 1;
	return 0;
}

int ha_fold_frame(const char *fn, const char *module, const char *next)
{
	return ha_alloc_frame(fn, module) && strcmp(next, HA_NOT_UNWOUND_FUNCTION) != 0;
}
