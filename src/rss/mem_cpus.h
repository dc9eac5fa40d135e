/* mem_cpus.h -- the CPUs a target may use, for the MALLOC_ARENA_MAX hint
 * (issue 41): glibc makes up to 8 arenas per CPU of the host (its online
 * CPUs: Debian's glibc 2.36 made 12 thread arenas for a process pinned to
 * one CPU of two, t_memory_arena_hint), not of the process's affinity nor
 * of its cgroup's CPU quota, which is how a container is usually limited.
 * So a container given 2 CPUs of a 64-CPU host may make 512 arenas. */
#ifndef HA_MEM_CPUS_H
#define HA_MEM_CPUS_H

#include <sys/types.h>

struct ha_mem_cpus {
	int online;             /* the host's online CPUs (0: unknown) */
	int allowed;            /* in the target's affinity (0: unknown) */
	double quota;           /* its cgroup's CPU quota, the lowest on its
	                         * path (cpu.max; v1: cfs_quota_us); 0: none */
};

/* Read them now (each 0 when it cannot be read). */
void ha_mem_cpus_read(pid_t pid, struct ha_mem_cpus *out);

#endif
