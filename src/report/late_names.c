/* late_names.c -- frames named at report time (see late_names.h). */
#define _GNU_SOURCE
#include "late_names.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "debugfind.h"
#include "debuginfod_get.h"
#include "report.h"
#include "symbolize_file.h"

#define MAX_ID 64

struct late_mod {
	char *module, *build_id;
	int tried;                 /* a debug file was looked for */
	struct ha_filesym *fs;     /* NULL: none found */
	char *from;                /* where it was found */
	char why[200];             /* why debuginfod had none ("" if not asked) */
	uint64_t named, unnamed;   /* frames */
};

struct hd_late {
	char *dirs;                /* --debug-dir's */
	char *system_dirs;         /* HEAPATTACH_DEBUG_DIR's, then /usr/lib/debug */
	int debuginfod;
	double timeout_s;
	struct late_mod *m;
	size_t n, cap;
};

struct hd_late *hd_late_new(const char *dirs, int debuginfod, double timeout_s)
{
	struct hd_late *l = hd_xmalloc(sizeof *l);
	memset(l, 0, sizeof *l);
	l->dirs = dirs && *dirs ? hd_xstrdup(dirs) : NULL;
	const char *env = getenv("HEAPATTACH_DEBUG_DIR");
	if (env && *env) {
		l->system_dirs = hd_xmalloc(strlen(env) + sizeof ":/usr/lib/debug");
		(void)sprintf(l->system_dirs, "%s:/usr/lib/debug", env);
	}
	l->debuginfod = debuginfod && ha_debuginfod_enabled();
	l->timeout_s = timeout_s;
	return l;
}

void hd_late_free(struct hd_late *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		ha_filesym_free(l->m[i].fs);
		free(l->m[i].module);
		free(l->m[i].build_id);
		free(l->m[i].from);
	}
	free(l->m);
	free(l->dirs);
	free(l->system_dirs);
	free(l);
}

/* DIR/NAME.debug or DIR/NAME under each of dirs, checked by build-id
 * (a debug file kept beside its program, as objcopy --only-keep-debug
 * makes it). */
static int by_name(const char *dirs, const char *module, const unsigned char *id, int len,
                   char **path)
{
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	if (!*base)
		return -1;
	for (const char *d = dirs; d && *d;) {
		size_t dl = strcspn(d, ":");
		char p[PATH_MAX];
		for (int k = 0; k < 2; k++) {
			if (snprintf(p, sizeof p, "%.*s/%s%s", (int)dl, d, base, k ? "" : ".debug") >=
			    (int)sizeof p)
				continue;
			int fd = ha_debugfind_file(p, id, len, path);
			if (fd >= 0)
				return fd;
		}
		d += dl;
		if (*d == ':')
			d++;
	}
	return -1;
}

static struct late_mod *mod_of(struct hd_late *l, const char *module, const char *build_id)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->m[i].module, module) == 0 && strcmp(l->m[i].build_id, build_id) == 0)
			return &l->m[i];
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->m = hd_xrealloc(l->m, l->cap * sizeof *l->m);
	}
	struct late_mod *m = &l->m[l->n++];
	memset(m, 0, sizeof *m);
	m->module = hd_xstrdup(module);
	m->build_id = hd_xstrdup(build_id);
	return m;
}

static void find_file(struct hd_late *l, struct late_mod *m)
{
	unsigned char id[MAX_ID];
	int len = ha_build_id_from_hex(m->build_id, id, MAX_ID);
	char *path = NULL, err[200];
	int fd = -1;

	m->tried = 1;
	if (len < 2)
		return;
	if (l->dirs && (fd = ha_debugfind(l->dirs, id, len, &path)) < 0)
		fd = by_name(l->dirs, m->module, id, len, &path);
	if (fd < 0)
		fd = ha_debugfind(l->system_dirs, id, len, &path);
	if (fd < 0 && l->debuginfod) {
		fd = ha_debuginfod_fetch(id, len, l->timeout_s, NULL, &path, err, sizeof err);
		if (fd < 0)
			snprintf(m->why, sizeof m->why, "%s", err);
	}
	if (fd < 0)
		return;
	char why[256];
	m->fs = ha_filesym_open(fd, path, why, sizeof why);
	if (m->fs)
		m->from = path;
	else
		free(path);
}

int hd_late_name(struct hd_late *l, const char *module, const char *build_id, uint64_t rel_pc,
                 int is_ret, struct ha_sym_frame *out, int max)
{
	if (!l || !module[0] || !build_id[0])
		return 0;
	struct late_mod *m = mod_of(l, module, build_id);
	if (!m->tried)
		find_file(l, m);
	int n = m->fs ? ha_filesym_name(m->fs, rel_pc, is_ret, out, max) : 0;
	if (n > 0)
		m->named++;
	else
		m->unnamed++;
	return n;
}

/* The Debian package whose file list holds path (what dpkg -S answers),
 * into pkg; 0 if none. */
static int dpkg_owner(const char *path, char *pkg, size_t size)
{
	DIR *d = opendir("/var/lib/dpkg/info");
	struct dirent *e;
	char line[PATH_MAX + 2], p[PATH_MAX];
	int found = 0;
	/* usrmerge: /usr/bin/x is listed as /bin/x by some packages. */
	const char *alt = strncmp(path, "/usr/", 5) == 0 ? path + 4 : NULL;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		if (nl < 6 || strcmp(e->d_name + nl - 5, ".list") != 0 ||
		    snprintf(p, sizeof p, "/var/lib/dpkg/info/%s", e->d_name) >= (int)sizeof p)
			continue;
		FILE *f = fopen(p, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof line, f)) {
			line[strcspn(line, "\n")] = '\0';
			if (strcmp(line, path) == 0 || (alt && strcmp(line, alt) == 0)) {
				/* "memcached.list", "libc6:amd64.list": the package */
				size_t k = strcspn(e->d_name, ":");
				if (k > nl - 5)
					k = nl - 5;
				snprintf(pkg, size, "%.*s", (int)k, e->d_name);
				found = 1;
				break;
			}
		}
		(void)fclose(f);
	}
	closedir(d);
	return found;
}

void hd_late_tell(struct hd_late *l, FILE *f)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		const struct late_mod *m = &l->m[i];
		char pkg[256];
		if (m->named)
			fprintf(f, "heapdiff: %llu frames of %s named from %s (the session had no names "
			        "for them)\n", (unsigned long long)m->named, m->module, m->from);
		if (!m->unnamed)
			continue;
		fprintf(f, "heapdiff: %llu frames of %s (build-id %s) have no names; its debug file: ",
		        (unsigned long long)m->unnamed, m->module, m->build_id);
		if (dpkg_owner(m->module, pkg, sizeof pkg))
			fprintf(f, "apt install %s-dbgsym (Debian's debug archive), ", pkg);
		if (m->why[0])
			fprintf(f, "a debuginfod server (asked: %s), ", m->why);
		else if (!l->debuginfod)
			fprintf(f, "a debuginfod server (set DEBUGINFOD_URLS), ");
		fprintf(f, "or --debug-dir DIR\n");
	}
}

char *hd_late_missing_text(struct hd_late *l)
{
	struct hd_buf b = { 0 };
	for (size_t i = 0; l && i < l->n; i++)
		if (l->m[i].unnamed)
			hd_buf_printf(&b, "%s%s (build-id %s)", b.n ? "\n" : "", l->m[i].module,
			              l->m[i].build_id);
	if (!b.n)
		return NULL;
	hd_buf_addc(&b, 0);
	return (char *)b.p;
}
