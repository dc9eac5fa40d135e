/* jitdump.c -- the target's jitdump file into the perf-map table
 * (jitdump.h has the contract).  Layout (perf's
 * tools/perf/util/jitdump.h, little-endian x86-64):
 *   header   u32 magic 'JiTD' 0x4A695444, u32 version 1, u32 total_size,
 *            u32 elf_mach, u32 pad, u32 pid, u64 timestamp, u64 flags
 *   record   u32 id, u32 total_size, u64 timestamp, then
 *   LOAD 0   u32 pid, u32 tid, u64 vma, u64 code_addr, u64 code_size,
 *            u64 code_index, char name[] (NUL), the code bytes
 *   MOVE 1   u32 pid, u32 tid, u64 vma, u64 old_code_addr,
 *            u64 new_code_addr, u64 code_size, u64 code_index */
#define _GNU_SOURCE
#include "jitdump.h"

#include "procmaps.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JD_MAGIC 0x4A695444u
#define JD_HDR_MIN 40u
#define JD_HDR_MAX 4096u
#define JD_REC_HDR 16u
#define JD_REC_MAX (64u << 20)
#define JD_LOAD_FIXED 40u        /* after the record header, before the name */
#define JD_MOVE_FIXED 48u
#define MAPS_SCAN_MS 1000.0      /* look for the dump in the maps at most this often */

struct ha_jitdump {
	pid_t pid;
	pid_t own_pid;           /* in the target's pid namespace: the file name's */
	char path[4200];
	int found;               /* path names the file to read */
	int dead;                /* a bad header or record: not read again */
	double maps_ms;
	uint64_t dev, ino, done;
};

struct ha_jitdump *ha_jitdump_new(pid_t pid, pid_t own_pid)
{
	struct ha_jitdump *jd = calloc(1, sizeof *jd);
	if (jd) {
		jd->pid = pid;
		jd->own_pid = own_pid;
	}
	return jd;
}

struct ha_jitdump *ha_jitdump_new_path(const char *path)
{
	struct ha_jitdump *jd = calloc(1, sizeof *jd);
	if (jd) {
		snprintf(jd->path, sizeof jd->path, "%s", path);
		jd->found = 1;
	}
	return jd;
}

void ha_jitdump_free(struct ha_jitdump *jd)
{
	free(jd);
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Where the dump is: /tmp/jit-PID.dump, else a mapping of that name. */
static int locate(struct ha_jitdump *jd, struct ha_perfmap *pm)
{
	char name[64];
	struct stat st;
	snprintf(name, sizeof name, "jit-%d.dump", (int)jd->own_pid);
	snprintf(jd->path, sizeof jd->path, "/proc/%d/root/tmp/%s", (int)jd->pid, name);
	int fd = ha_perfmap_open_file(pm, jd->path, &st);
	if (fd >= 0) {
		close(fd);
		return jd->found = 1;
	}
	double now = ha_now_ms();
	if (jd->maps_ms && now - jd->maps_ms < MAPS_SCAN_MS)
		return 0;
	jd->maps_ms = now;
	struct ha_maps maps = { 0 };
	if (ha_maps_read(jd->pid, &maps) < 0)
		return 0;
	for (size_t i = 0; i < maps.n && !jd->found; i++) {
		const char *p = maps.v[i].path;
		if (p[0] == '/' && strcmp(ha_base_name(p), name) == 0 &&
		    (size_t)snprintf(jd->path, sizeof jd->path, "/proc/%d/root%s", (int)jd->pid, p) <
		        sizeof jd->path)
			jd->found = 1;
	}
	ha_maps_free(&maps);
	return jd->found;
}

/* Read n bytes at off; 0 if all of them were there. */
static int read_at(int fd, uint64_t off, uint8_t *buf, size_t n)
{
	ssize_t k = pread(fd, buf, n, (off_t)off);
	return k == (ssize_t)n ? 0 : -1;
}

int ha_jitdump_poll(struct ha_jitdump *jd, struct ha_perfmap *pm)
{
	struct stat st;
	uint8_t hdr[JD_HDR_MIN], rec[JD_REC_HDR + JD_MOVE_FIXED];
	char name[HA_PERFMAP_NAME_MAX + 1];

	if (!jd || !pm || jd->dead || (!jd->found && !locate(jd, pm)))
		return -1;
	int fd = ha_perfmap_open_file(pm, jd->path, &st);
	if (fd < 0)
		return -1;
	uint64_t size = (uint64_t)st.st_size;
	if ((uint64_t)st.st_dev != jd->dev || (uint64_t)st.st_ino != jd->ino || size < jd->done) {
		jd->dev = (uint64_t)st.st_dev;
		jd->ino = (uint64_t)st.st_ino;
		jd->done = 0;
	}
	if (jd->done == 0) {
		if (read_at(fd, 0, hdr, sizeof hdr) != 0) {
			close(fd);
			return 0;       /* not written yet */
		}
		uint32_t hsize = u32_at(hdr + 8);
		if (u32_at(hdr) != JD_MAGIC || u32_at(hdr + 4) != 1 || hsize < JD_HDR_MIN ||
		    hsize > JD_HDR_MAX) {
			jd->dead = 1;
			close(fd);
			return -1;
		}
		jd->done = hsize;
	}
	size_t n0 = ha_perfmap_count(pm);
	while (jd->done + JD_REC_HDR <= size) {
		if (read_at(fd, jd->done, rec, JD_REC_HDR) != 0)
			break;
		uint32_t id = u32_at(rec), tsize = u32_at(rec + 4);
		if (tsize < JD_REC_HDR || tsize > JD_REC_MAX) {
			jd->dead = 1;   /* no way to find the next record */
			break;
		}
		if (jd->done + tsize > size)
			break;          /* still being written */
		if (id == 0 && tsize > JD_REC_HDR + JD_LOAD_FIXED &&
		    read_at(fd, jd->done + JD_REC_HDR, rec + JD_REC_HDR, JD_LOAD_FIXED) == 0) {
			uint64_t addr = u64_at(rec + JD_REC_HDR + 16), csize = u64_at(rec + JD_REC_HDR + 24);
			size_t room = tsize - JD_REC_HDR - JD_LOAD_FIXED;
			size_t want = room < sizeof name - 1 ? room : sizeof name - 1;
			ssize_t k = pread(fd, name, want, (off_t)(jd->done + JD_REC_HDR + JD_LOAD_FIXED));
			if (k > 0) {
				size_t len = strnlen(name, (size_t)k);
				ha_perfmap_add(pm, addr, csize, name, len);
			}
		} else if (id == 1 && tsize >= JD_REC_HDR + JD_MOVE_FIXED &&
		           read_at(fd, jd->done + JD_REC_HDR, rec + JD_REC_HDR, JD_MOVE_FIXED) == 0) {
			uint64_t old = u64_at(rec + JD_REC_HDR + 16), to = u64_at(rec + JD_REC_HDR + 24);
			uint64_t csize = u64_at(rec + JD_REC_HDR + 32), start;
			/* (an entry loaded in this same read is not sorted in
			 * yet: it may be missed, and the move then skipped) */
			const char *nm = ha_perfmap_lookup(pm, old, ha_perfmap_gen(pm) + 1, &start);
			if (nm)
				ha_perfmap_add(pm, to, csize, nm, strlen(nm));
		}
		jd->done += tsize;
	}
	close(fd);
	return ha_perfmap_commit(pm, n0);
}
