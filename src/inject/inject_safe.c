/* inject_safe.c -- is a ptrace-stopped thread at a safe point to be made to
 * call dlopen?
 *
 * dlopen takes the loader's locks and allocates; a thread hijacked while it
 * holds the allocator's arena lock, a loader lock, or the stack-cache lock
 * (pthread_create) deadlocks against itself.  Those locks are only held
 * while such a function is on the thread's stack, so we unwind the stopped
 * thread and refuse it if any frame is inside one of them.  Frames we cannot
 * name are fine: user code holds none of libc's internal locks.  When the
 * answer is no, ha_thread_is_safe_ex also tells where the thread will be out
 * of the outermost refused frame (inject_pick.c lets it run there).
 *
 * Speed matters: the thread is stopped while we look.  Three things make an
 * unwind with the stock _UPT accessors slow (~70 us per frame): every word
 * of the stack and of the remote .eh_frame tables is read with one
 * PTRACE_PEEKDATA; a fresh address space re-parses the unwind info of every
 * module; and a UPT handle remembers the unwind table of one module only,
 * so a stack going exe -> libc -> exe -> libc maps and parses the ELF files
 * again at each change (and each inspection starts with a new handle).  So
 * memory is read a page at a time with process_vm_readv into a small cache
 * that lives for one inspection; the address space (with libunwind's per-IP
 * cache) is kept for the target until ha_thread_safe_reset(); and where
 * each module's unwind table is, is found once (ha_thread_safe_warm() can
 * do it before any thread is stopped) in the target's memory (eh_table.h):
 * _UPT_find_proc_info opened the module's file by its path, blocking and
 * with our rights, and the target chooses what is at that path. */
#define _GNU_SOURCE
#include "inject_safe.h"
#include "eh_table.h"
#include "elfsym.h"
#include "util.h"

#include <libunwind-ptrace.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>

/* Not in the public headers, but exported by libunwind-x86_64 (perf and
 * src/unwind/unwind_access.c use it the same way). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
                                              unw_dyn_info_t *di, unw_proc_info_t *pi,
                                              int need_unwind_info, void *arg);

#define MAX_FRAMES 64
#define PAGE       4096u
#define NPAGES     16          /* stack pages + unwind tables of a few modules */

/* Functions that hold (or are about to take) a lock dlopen needs. */
static const char *const deny_exact[] = {
	/* glibc malloc and its aliases */
	"malloc", "free", "calloc", "realloc", "reallocarray", "cfree",
	"memalign", "posix_memalign", "aligned_alloc", "valloc", "pvalloc",
	"malloc_trim", "malloc_usable_size", "malloc_info", "malloc_stats",
	"mallopt",
	/* jemalloc's unprefixed extended API */
	"mallocx", "rallocx", "xallocx", "sdallocx", "dallocx", "nallocx",
	/* the dynamic loader's entry points in libc */
	"dlopen", "dlmopen", "dlclose", "dlsym", "dlvsym", "dladdr", "dladdr1",
	"dlinfo", "dlerror", "dl_iterate_phdr",
	/* thread and process creation (stack cache lock, atfork lock) */
	"pthread_create", "fork", "_Fork", "__fork", "__libc_fork", "vfork",
	"__vfork",
	/* exit handlers (exit funcs lock, then the loader lock in _dl_fini) */
	"exit", "__cxa_finalize", "__cxa_atexit", "__cxa_thread_atexit_impl",
	"atexit", "on_exit", "__libc_freeres",
};

static const char *const deny_prefix[] = {
	"__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
	"__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__libc_dl",
	"mallinfo", "_dl_", "__dl", "__nptl_",
	"je_", "tc_",
	/* operator new / delete in all their variants call malloc / free */
	"_Znwm", "_Znam", "_ZdlPv", "_ZdaPv",
};

static int denied(const char *name)
{
	for (size_t i = 0; i < sizeof deny_exact / sizeof deny_exact[0]; i++)
		if (strcmp(name, deny_exact[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof deny_prefix / sizeof deny_prefix[0]; i++)
		if (strncmp(name, deny_prefix[i], strlen(deny_prefix[i])) == 0)
			return 1;
	return 0;
}

/* musl: its libc is its loader too, its malloc and loader keep their locks
 * in functions that .dynsym does not name (hidden ones), and it has no
 * unwind tables (frames past one in it are guesses).  So an address in it
 * is judged by its name where .dynsym has one (malloc, dlopen...: the deny
 * list); where the thread is stopped (frame 0), an unnamed function is
 * refused unless the thread is waiting in one of the system calls below
 * (further frames in it are guesses, judged by name only), which a thread makes for the program, not inside
 * musl's allocator or loader (those lock with futex and map with mmap,
 * munmap, mprotect, brk, madvise, open, openat, read of an ELF file: a read
 * is let through, a window of microseconds inside dlopen). */
static const long musl_waits[] = {
	SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_pread64, SYS_pwrite64,
	SYS_poll, SYS_ppoll, SYS_select, SYS_pselect6, SYS_epoll_wait, SYS_epoll_pwait,
	SYS_nanosleep, SYS_clock_nanosleep, SYS_pause, SYS_accept, SYS_accept4,
	SYS_recvfrom, SYS_recvmsg, SYS_recvmmsg, SYS_sendto, SYS_sendmsg, SYS_connect,
	SYS_wait4, SYS_waitid, SYS_rt_sigsuspend, SYS_rt_sigtimedwait, SYS_msgrcv,
};

static pid_t cur_tid;   /* the thread being looked at (under as_lock) */

static int in_musl_wait(pid_t tid)
{
	struct user_regs_struct r;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &r) != 0 || (long)r.orig_rax < 0)
		return 0;
	for (size_t i = 0; i < sizeof musl_waits / sizeof musl_waits[0]; i++)
		if ((long)r.orig_rax == musl_waits[i])
			return 1;
	return 0;
}

/* Is this mapping the dynamic loader (ld-linux-x86-64.so.2, ld-2.NN.so)? */
static int is_loader(const struct ha_map *m)
{
	const char *b = ha_base_name(m->path);
	return strncmp(b, "ld-linux", 8) == 0 || strncmp(b, "ld-2.", 5) == 0 ||
	       strncmp(b, "ld.so", 5) == 0;
}

/* Classify one code address.  1 safe, 0 unsafe (why filled). */
static int addr_is_safe(pid_t pid, const struct ha_maps *maps, uint64_t addr,
                        int frame, char *why, size_t whylen)
{
	const struct ha_map *m = ha_maps_find_addr(maps, addr);
	const struct ha_map *mod;
	char name[256];

	if (!m || m->path[0] != '/')
		return 1;               /* anonymous / JIT / vdso: no libc locks */
	if (is_loader(m)) {
		snprintf(why, whylen, "in the dynamic loader (frame %d)", frame);
		return 0;
	}
	mod = ha_maps_module_of(maps, m);
	if (mod && ha_elf_symbol_at(pid, mod, addr, name, sizeof name) == 0) {
		if (denied(name)) {
			snprintf(why, whylen, "in %s", name);
			return 0;
		}
	} else if (mod && ha_maps_is_musl_path(mod->path) && frame == 0 &&
	           !(cur_tid > 0 && in_musl_wait(cur_tid))) {
		snprintf(why, whylen, "in musl's libc, in a function it does not name");
		return 0;
	}
	return 1;
}

int ha_addr_is_safe(pid_t pid, const struct ha_maps *maps, uint64_t ip,
                    char *why, size_t whylen)
{
	return addr_is_safe(pid, maps, ip, 0, why, whylen);
}

/* ------------------------------------------------------------------ */
/* memory access through a page cache                                  */
/* ------------------------------------------------------------------ */

struct page_cache {
	pid_t pid;
	unsigned next;                 /* round-robin victim */
	uint64_t addr[NPAGES];         /* page address; valid if have[i] */
	unsigned char have[NPAGES];
	unsigned char data[NPAGES][PAGE];
};

/* The context of the inspection running on this thread: libunwind hands
 * our accessors only its own argument (a UPT handle). */
static __thread struct page_cache *cur_cache;
static __thread const struct ha_maps *cur_maps;
static __thread void *cur_upt;          /* the stopped thread's handle */

static const unsigned char *cache_page(struct page_cache *pc, uint64_t page)
{
	struct iovec local, remote;
	unsigned i;

	for (i = 0; i < NPAGES; i++)
		if (pc->have[i] && pc->addr[i] == page)
			return pc->data[i];
	i = pc->next;
	pc->next = (pc->next + 1) % NPAGES;
	local.iov_base = pc->data[i];
	local.iov_len = PAGE;
	remote.iov_base = (void *)(uintptr_t)page;
	remote.iov_len = PAGE;
	pc->have[i] = 0;
	if (process_vm_readv(pc->pid, &local, 1, &remote, 1, 0) != (ssize_t)PAGE)
		return NULL;
	pc->have[i] = 1;
	pc->addr[i] = page;
	return pc->data[i];
}

static int cached_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
                             int write, void *arg)
{
	struct page_cache *pc = cur_cache;
	unsigned char buf[sizeof *val];

	if (write || !pc)
		return _UPT_access_mem(as, addr, val, write, arg);
	for (size_t done = 0; done < sizeof buf;) {
		uint64_t a = addr + done, page = a & ~(uint64_t)(PAGE - 1);
		size_t off = a - page, n = PAGE - off;
		const unsigned char *p = cache_page(pc, page);
		if (!p)   /* not readable that way: let ptrace decide */
			return _UPT_access_mem(as, addr, val, write, cur_upt ? cur_upt : arg);
		if (n > sizeof buf - done)
			n = sizeof buf - done;
		memcpy(buf + done, p + off, n);
		done += n;
	}
	memcpy(val, buf, sizeof buf);
	return 0;
}

/* ------------------------------------------------------------------ */
/* one address space per target                                        */
/* ------------------------------------------------------------------ */

#define MAX_MODULES 32

static pthread_mutex_t as_lock = PTHREAD_MUTEX_INITIALIZER;
static unw_accessors_t accessors;
static unw_addr_space_t as_cur;
static pid_t as_pid;
static struct {
	uint64_t start;         /* of the module's offset-0 mapping */
	int ok;                 /* its table was found */
	struct ha_eh_table t;
} modules[MAX_MODULES];
static size_t nmodules;

/* The unwind table of module mod (as_lock held), or NULL. */
static const struct ha_eh_table *module_table(const struct ha_map *mod)
{
	for (size_t i = 0; i < nmodules; i++)
		if (modules[i].start == mod->start)
			return modules[i].ok ? &modules[i].t : NULL;
	if (nmodules == MAX_MODULES)
		return NULL;
	modules[nmodules].start = mod->start;
	modules[nmodules].ok = ha_eh_table_read(as_pid, mod->start, &modules[nmodules].t) == 0;
	nmodules++;
	return modules[nmodules - 1].ok ? &modules[nmodules - 1].t : NULL;
}

/* ip's FDE, from its module's .eh_frame_hdr in the target's memory. */
static int cached_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                                 int need_unwind_info, void *arg)
{
	const struct ha_map *m = cur_maps ? ha_maps_find_addr(cur_maps, ip) : NULL;
	const struct ha_map *mod = m && m->path[0] == '/' ? ha_maps_module_of(cur_maps, m) : NULL;
	const struct ha_eh_table *t = mod ? module_table(mod) : NULL;
	unw_dyn_info_t di;

	if (!t)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof di);
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = t->segbase;
	di.u.rti.table_data = t->table;
	di.u.rti.table_len = t->nfde * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
}

static void drop_modules(void)
{
	nmodules = 0;
}

/* The address space for pid; call with as_lock held. */
static unw_addr_space_t get_as(pid_t pid)
{
	if (as_cur && as_pid == pid)
		return as_cur;
	if (as_cur)
		unw_destroy_addr_space(as_cur);
	drop_modules();
	accessors = _UPT_accessors;
	accessors.access_mem = cached_access_mem;
	accessors.find_proc_info = cached_find_proc_info;
	as_cur = unw_create_addr_space(&accessors, 0);
	as_pid = pid;
	if (as_cur)
		unw_set_caching_policy(as_cur, UNW_CACHE_GLOBAL);
	return as_cur;
}

void ha_thread_safe_reset(void)
{
	pthread_mutex_lock(&as_lock);
	if (as_cur)
		unw_destroy_addr_space(as_cur);
	drop_modules();
	as_cur = NULL;
	as_pid = 0;
	pthread_mutex_unlock(&as_lock);
}

/* ------------------------------------------------------------------ */
/* the verdict                                                         */
/* ------------------------------------------------------------------ */

/* Walk the frames; 1 safe, 0 unsafe, -1 stack unreadable.  When unsafe,
 * keep walking to find the outermost unsafe frame: its caller's IP and SP
 * are where the thread is out of all of them (ex, if not NULL). */
static int walk(pid_t pid, unw_cursor_t *c, const struct ha_maps *maps,
                struct ha_safe_exit *ex, char *why, size_t whylen)
{
	int verdict = 1, prev_unsafe = 0;
	char tmp[256] = ""; /* the reason of a frame when the caller wants none */

	for (int i = 0; i < MAX_FRAMES; i++) {
		unw_word_t ip, sp;
		int safe;

		if (unw_get_reg(c, UNW_REG_IP, &ip) < 0 || (i == 0 && ip == 0)) {
			if (i == 0) {
				snprintf(why, whylen, "cannot read the instruction pointer");
				return -1;
			}
			break;
		}
		if (prev_unsafe && ex) {
			/* we just stepped out of an unsafe frame */
			ex->ip = ip;
			ex->sp = unw_get_reg(c, UNW_REG_SP, &sp) == 0 ? sp : 0;
			if (!ex->sp)
				ex->ip = 0;
		}
		/* Above frame 0 the IP is a return address: it may point just
		 * past the end of a call at the end of a function, so look up
		 * ip - 1.  (Signal frames, whose IP is exact, are refused.) */
		safe = addr_is_safe(pid, maps, i == 0 ? ip : ip - 1, i,
		                    verdict ? why : tmp, verdict ? whylen : sizeof tmp);
		if (!safe) {
			verdict = 0;
			if (!ex)
				return 0;
			ex->ip = ex->sp = 0;    /* not out of this one yet */
		}
		prev_unsafe = !safe;
		/* A thread inside a signal handler may be on a small sigaltstack,
		 * and what the handler interrupted may hold any lock. */
		if (unw_is_signal_frame(c) > 0) {
			if (verdict)
				snprintf(why, whylen, "in a signal handler");
			if (ex)
				ex->ip = ex->sp = 0;
			return 0;
		}
		/* <= 0: end of stack, or frames we cannot unwind past; what we
		 * could see is all we can judge. */
		if (unw_step(c) <= 0)
			break;
	}
	if (!verdict && ex && prev_unsafe)
		ex->ip = ex->sp = 0;            /* the stack ended inside one */
	return verdict;
}

int ha_thread_is_safe_ex(pid_t pid, pid_t tid, const struct ha_maps *maps,
                         struct ha_safe_exit *ex, char *why, size_t whylen)
{
	struct page_cache *pc;
	unw_addr_space_t as;
	unw_cursor_t c;
	void *upt;
	int rc, ret;

	if (why && whylen)
		why[0] = '\0';
	if (ex)
		ex->ip = ex->sp = 0;
	pc = calloc(1, sizeof *pc);
	upt = _UPT_create(tid);
	if (!pc || !upt) {
		free(pc);
		if (upt)
			_UPT_destroy(upt);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	pc->pid = pid;
	pthread_mutex_lock(&as_lock);
	as = get_as(pid);
	if (!as) {
		snprintf(why, whylen, "cannot create an unwind address space");
		ret = -1;
		goto out;
	}
	cur_cache = pc;
	cur_maps = maps;
	cur_upt = upt;
	cur_tid = tid;
	rc = unw_init_remote(&c, as, upt);
	if (rc < 0) {
		snprintf(why, whylen, "cannot unwind the stack (%s)", unw_strerror(rc));
		ret = -1;
	} else {
		ret = walk(pid, &c, maps, ex, why, whylen);
	}
	cur_cache = NULL;
	cur_maps = NULL;
	cur_upt = NULL;
	cur_tid = 0;
out:
	pthread_mutex_unlock(&as_lock);
	_UPT_destroy(upt);
	free(pc);
	return ret;
}

void ha_thread_safe_warm(pid_t pid, const struct ha_maps *maps, const char *const *modnames,
                         size_t n)
{
	struct page_cache *pc = calloc(1, sizeof *pc);
	unw_addr_space_t as;

	if (!pc)
		return;
	pc->pid = pid;
	pthread_mutex_lock(&as_lock);
	as = get_as(pid);
	cur_cache = pc;
	cur_maps = maps;
	for (size_t i = 0; as && i < n; i++) {
		const struct ha_map *mod = ha_maps_find_module(maps, modnames[i]);
		unw_proc_info_t pi;
		/* any address in its code (a segment soon after the offset-0
		 * one) will do: the module's table is loaded whether or not
		 * that address has an FDE */
		for (const struct ha_map *m = mod; mod && m < maps->v + maps->n && m < mod + 8; m++) {
			if (!(m->prot & PROT_EXEC) || ha_maps_module_of(maps, m) != mod)
				continue;
			memset(&pi, 0, sizeof pi);
			cached_find_proc_info(as, m->start, &pi, 0, NULL);   /* no unwind_info to put */
			break;
		}
	}
	cur_cache = NULL;
	cur_maps = NULL;
	pthread_mutex_unlock(&as_lock);
	free(pc);
}
