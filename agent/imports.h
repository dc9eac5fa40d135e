/*
 * imports.h -- the functions the agent takes from the target at run time
 * (imports.c), not from its own dynamic imports.
 *
 * The agent loads under every glibc from 2.17 on: it imports from libc.so.6
 * only symbols that every such libc.so.6 defines, at versions up to
 * GLIBC_2.17 (tests/t_agent_imports.sh checks the built agent).  What lived
 * in libdl or libpthread before glibc 2.34 (dlsym, dladdr, pthread_create,
 * ...) is reached through this table instead: the attacher finds dlsym in
 * the target's own libc (2.34 on) or libdl and passes its address in the
 * init arguments (ha_init_args.dlsym_addr), and ha_imports_init asks it for
 * the rest, where the program itself would find them (RTLD_DEFAULT).  The
 * unwinder's two entries that a hook's cleanup needs when a C++ exception
 * goes through it (_Unwind_Resume, __gcc_personality_v0) are defined here
 * too, jumping on to the target's own (libgcc_s is no NEEDED of ours).
 *
 * Only the session's code uses the table (filled by init before anything
 * else runs); none of the malloc/free hooks' paths calls through it but the
 * once-per-thread stack lookup (sampler.c).
 */
#ifndef HA_AGENT_IMPORTS_H
#define HA_AGENT_IMPORTS_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include "tls.h"

struct ha_imports {
	void *(*dlsym)(void *, const char *);
	int (*dladdr)(const void *, Dl_info *);
	int (*dladdr1)(const void *, Dl_info *, void **, int);   /* glibc's agent only */
	int (*dlinfo)(void *, int, void *);                      /* glibc's agent only */
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int (*pthread_attr_setstacksize)(pthread_attr_t *, size_t);
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
	int (*pthread_attr_getstack)(const pthread_attr_t *, void **, size_t *);
};
extern HA_HIDDEN struct ha_imports ha_imp;

/* Fill ha_imp from dlsym at dlsym_addr (the target's own).  0, or -1 with
 * *missing the name that was not found.  Idempotent; called by init only
 * (one at a time), before any other use of the table. */
HA_HIDDEN int ha_imports_init(uintptr_t dlsym_addr, const char **missing);

/* What the agent does itself instead of importing it from a libc that may
 * not have it:
 * ha_once: pthread_once (libpthread's before glibc 2.34) on *state, 0 at
 * first; a caller that finds fn running waits for it to end. */
HA_HIDDEN void ha_once(int *state, void (*fn)(void));
/* ha_fstat: fstat(2), the system call (glibc before 2.33 has only __fxstat
 * to bind to; x86_64's struct stat is the kernel's).  0 or -1 and errno. */
HA_HIDDEN int ha_fstat(int fd, struct stat *st);

#endif /* HA_AGENT_IMPORTS_H */
