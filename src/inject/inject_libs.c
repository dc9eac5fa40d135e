/* inject_libs.c -- a target on glibc before 2.34 that has not loaded libdl
 * and libpthread: both loaded into it first, so that the agent gets its
 * dlsym (ha_init_args.dlsym_addr) and, through it, pthread_create.
 *
 * Before 2.34, dlopen, dlsym and the pthread functions are libdl.so.2's and
 * libpthread.so.0's, which a program that links only libc (dash, many small
 * daemons) never loads.  Its libc has __libc_dlopen_mode (GLIBC_PRIVATE:
 * what glibc's own NSS and iconv load their modules with; it wants
 * __RTLD_DLOPEN in its flags).  The hijacked thread calls it for each
 * library missing, as it calls dlopen for the agent (inj_call: returning
 * through the signal frame, so that our death at any moment leaves the
 * thread whole), with RTLD_GLOBAL too: the agent asks
 * dlsym(RTLD_DEFAULT, ...), which searches the global scope, where a
 * library loaded RTLD_LOCAL would not be.  A call's return value is lost
 * (inject_call.c): the maps tell what was loaded.  They are read again,
 * inj_resolve_dlopen finds dlopen, dlerror and dlsym in the libdl now
 * loaded (the agent then goes in through libdl's dlopen, as in a program
 * that linked libdl), and the init arguments already pushed get that dlsym.
 *
 * The libraries stay after the detach, as the dormant agent does (libpthread
 * is -z nodelete anyway); a later session finds them and calls nothing here.
 * A target that had both never comes here.  When dlsym is still missing,
 * the one-line refusal says what was tried and what the maps then showed. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "ha_proto.h"
#include "util.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The names the calls get, pushed on the thread's stack. */
static const char names_buf[] = "libdl.so.2\0libpthread.so.0";

static const struct lib {
	unsigned bit;
	size_t off;              /* of its name in names_buf */
	const char *so, *file;   /* how inj_find_lib knows it */
	const char *what;        /* the call, in the log and the test points */
} libs[] = {
	{ INJ_LIB_DL, 0, "libdl.so", "libdl-2", "__libc_dlopen_mode libdl.so.2" },
	{ INJ_LIB_PTHREAD, 11, "libpthread.so", "libpthread-2", "__libc_dlopen_mode libpthread.so.0" },
};

size_t inj_libs_room(const struct injection *j)
{
	return j->libs_need ? sizeof names_buf : 0;
}

int inj_load_libs(struct injection *j, struct hijack *h, uint64_t names, uint64_t args)
{
	const uint64_t flags = RTLD_NOW | RTLD_GLOBAL | RTLD_DLOPEN_FLAG;
	size_t used = 0;
	int rc = ha_remote_write(j->pid, names, names_buf, sizeof names_buf);

	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot write to the stack of thread %d: %s", (int)h->tid,
		       strerror(-rc));
		return -1;
	}
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
		uint64_t a[2] = { names + libs[i].off, flags };
		if (!(j->libs_need & libs[i].bit))
			continue;
		inj_log(j, "__libc_dlopen_mode(\"%s\", RTLD_NOW | RTLD_GLOBAL | __RTLD_DLOPEN) at 0x%llx",
		        names_buf + libs[i].off, (unsigned long long)j->libs_fn);
		if (inj_call(j, h, libs[i].what, j->libs_fn, a, 2) < 0)
			return -1;
	}
	ha_maps_free(&j->maps);
	rc = ha_maps_read(j->pid, &j->maps);
	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot read /proc/%d/maps: %s", (int)j->pid, strerror(-rc));
		return -1;
	}
	used = (size_t)snprintf(j->libs_why, sizeof j->libs_why, "; __libc_dlopen_mode tried:");
	for (size_t i = 0; i < sizeof libs / sizeof libs[0] && used < sizeof j->libs_why; i++) {
		const struct ha_map *m = inj_find_lib(&j->maps, libs[i].so, libs[i].file);
		if (j->libs_need & libs[i].bit)
			used += (size_t)snprintf(j->libs_why + used, sizeof j->libs_why - used, "%s %s %s",
			                         j->libs_why[used - 1] == ':' ? "" : ",",
			                         names_buf + libs[i].off, m ? "loaded" : "not loaded");
		if (m)
			inj_log(j, "%s mapped: %s at 0x%llx", names_buf + libs[i].off, m->path,
			        (unsigned long long)m->start);
	}
	j->libs_tried = 1;
	if (inj_resolve_dlopen(j) < 0)
		return -1;
	const struct ha_map *dl = inj_find_lib(&j->maps, "libdl.so", "libdl-2");
	inj_log(j, "dlopen at 0x%llx and dlsym at 0x%llx now from %s", (unsigned long long)j->dlopen_fn,
	        (unsigned long long)j->dlsym_fn, dl ? dl->path : "libc");
	rc = ha_remote_write(j->pid, args + offsetof(struct ha_init_args, dlsym_addr), &j->dlsym_fn,
	                     sizeof j->dlsym_fn);
	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot write to the stack of thread %d: %s", (int)h->tid,
		       strerror(-rc));
		return -1;
	}
	return 0;
}
