/*
 * heapattach_db.c -- the profile database as the command sees it: its
 * default name, the cheap checks of its path before the target is touched,
 * and its open (or creation) on a thread of its own while the agent is
 * injected (struct db_open_job, heapattach_int.h).
 *
 * Separate because it is the one part of the command that runs beside the
 * injection, with its own thread and its own test hook
 * ($HEAPATTACH_TEST_DB_GATE); main and the recording session only start,
 * finish or abandon the job.  It calls only src/db/ and libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "heapattach_int.h"
#include "db_write.h"
#include "target.h"
#include "util.h"

/* heapattach-<comm>-<pid>.db, with the comm made safe for a file name. */
void default_db_name(const struct ha_target *t, char *out, size_t outlen)
{
	char comm[sizeof t->comm];
	snprintf(comm, sizeof comm, "%s", t->comm);
	for (char *p = comm; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			*p = '_';
	snprintf(out, outlen, "heapattach-%s-%d.db", comm, (int)t->pid);
}

static void *db_open_thread(void *arg)
{
	struct db_open_job *j = arg;
	double t0 = ha_now_ms();
	/* Tests only (t_db_late): a slow disk, made exact -- the creation of
	 * a new database waits for a line from this FIFO. */
	if (j->gate) {
		/* A FIFO only: looked at through O_PATH (which opens nothing),
		 * then opened through that descriptor, which waits for a writer
		 * (one already waiting is met at once). */
		struct stat st;
		int fd = open(j->gate, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
			char again[64], c;
			snprintf(again, sizeof again, "/proc/self/fd/%d", fd);
			int w = open(again, O_RDONLY | O_CLOEXEC);
			if (w >= 0) {
				while (read(w, &c, 1) == 1 && c != '\n')
					;
				close(w);
			}
		}
		if (fd >= 0)
			close(fd);
	}
	j->rc = ha_db_open(j->path, &j->db, j->err, sizeof j->err);
	j->ms = ha_now_ms() - t0;
	return NULL;
}

void db_open_start(struct db_open_job *j)
{
	const char *gate = getenv("HEAPATTACH_TEST_DB_GATE");
	j->gate = gate && *gate ? gate : NULL;
	if (!j->done)
		j->threaded = pthread_create(&j->th, NULL, db_open_thread, j) == 0;
}

/* The part of the database checks that is cheap, done before the target is
 * touched (the rest comes with the open): the file, or the directory a new
 * one goes to, must be there and writable, and no name of it (the file, its
 * -wal, its -shm) a symbolic link.  0, or -1 with err set. */
/* Is dir on a pseudo filesystem, where access(2) may say a file could be
 * made but none can (proc, sysfs and their kin)?  Its name, or NULL. */
static const char *pseudo_fs(const char *dir)
{
	static const struct { unsigned long magic; const char *name; } fs[] = {
		{ 0x9fa0, "proc" },          { 0x62656572, "sysfs" },   { 0x27e0eb, "cgroup" },
		{ 0x63677270, "cgroup2" },   { 0x64626720, "debugfs" }, { 0x74726163, "tracefs" },
		{ 0x73636673, "securityfs" }, { 0x6165676c, "pstore" },  { 0xcafe4a11, "bpf" },
		{ 0x62656570, "configfs" },  { 0x1cd1, "devpts" },
	};
	struct statfs st;
	if (statfs(dir, &st) != 0)
		return NULL;
	for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
		if ((unsigned long)st.f_type == fs[i].magic)
			return fs[i].name;
	return NULL;
}

int db_path_usable(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *fs;

	if (ha_db_path_check(path, err, errlen) < 0)
		return -1;
	snprintf(dir, sizeof dir, "%s", path);
	if ((fs = pseudo_fs(dirname(dir)))) {
		ha_err(err, errlen, "%s: on a %s filesystem, where no database can be made", path, fs);
		return -1;
	}
	if (access(path, R_OK | W_OK) == 0)
		return 0;
	if (errno == ENOENT) {
		snprintf(dir, sizeof dir, "%s", path);
		if (access(dirname(dir), W_OK | X_OK) == 0)
			return 0;
	}
	ha_err(err, errlen, "%s: %s", path, strerror(errno));
	return -1;
}

/* The database of db_open_start, opened (here if no thread could do it);
 * 0 or -1 with j->err set. */
int db_open_finish(struct db_open_job *j)
{
	if (j->threaded)
		pthread_join(j->th, NULL);
	else if (!j->done)
		db_open_thread(j);
	j->threaded = 0;
	j->done = 1;
	return j->rc ? -1 : 0;
}

/* The database of a session that did not start: closed; never made if its
 * creation had not begun.  (A new file is left, empty: another heapattach
 * may be recording into the same path by now.) */
void db_open_abandon(struct db_open_job *j)
{
	if (!j->threaded && !j->done)
		return;
	(void)db_open_finish(j);
	ha_db_close(j->db);
	j->db = NULL;
}
