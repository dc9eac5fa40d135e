/* idle -- a test target that blocks reading stdin.
 *
 *   idle            prints "ready pid=N", then reads lines from stdin:
 *                   "check" -> prints "hooked=0|1" (is the GOT slot of malloc
 *                   currently patched?), "signals" -> prints "signals=N" (the
 *                   number of SIGRTMIN it has handled; the handler is
 *                   installed with SA_RESTART), any other line ->
 *                   "echo LINE"; at EOF prints "bye" and exits 0.
 *   idle zombie     first forks a child that exits at once and is never
 *                   reaped; prints "zombie pid=N" before "ready".
 *   idle catch=LIST catches the signals of LIST (comma-separated of URG,
 *                   WINCH, CHLD: those whose default is to be ignored) and
 *                   counts them: "caught" -> prints "caught=N".
 *   idle block=LIST blocks the signals of LIST (as a program reading them
 *                   through signalfd would).
 *
 * "hooked": in a PIE, taking malloc's address loads it from the GOT
 * (a GLOB_DAT slot), so comparing it with dlsym(RTLD_DEFAULT, "malloc")
 * tells whether that slot currently points somewhere else. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t nsig, ncaught;

static void on_caught(int sig)
{
	(void)sig;
	ncaught++;
}


/* catch=URG,WINCH,CHLD: a counting handler for each; block=...: blocked.
 * 0 or -1. */
static int catch_list(const char *list, int block)
{
	static const struct { const char *name; int sig; } tab[] = {
		{ "URG", SIGURG }, { "WINCH", SIGWINCH }, { "CHLD", SIGCHLD },
	};
	char buf[64], *save = NULL, *tok;
	sigset_t blocked;

	sigemptyset(&blocked);
	snprintf(buf, sizeof buf, "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < sizeof tab / sizeof tab[0]; i++)
			if (strcmp(tok, tab[i].name) == 0)
				break;
		if (i == sizeof tab / sizeof tab[0] ||
		    (block ? sigaddset(&blocked, tab[i].sig) != 0
		           : signal(tab[i].sig, on_caught) == SIG_ERR)) {
			fprintf(stderr, "idle: cannot %s '%s'\n", block ? "block" : "catch", tok);
			return -1;
		}
	}
	return block ? sigprocmask(SIG_BLOCK, &blocked, NULL) : 0;
}

static void on_rtmin(int sig)
{
	(void)sig;
	nsig++;
}

static int got_hooked(void)
{
	void *(*volatile m)(size_t) = malloc;
	void *real = dlsym(RTLD_DEFAULT, "malloc");
	return (void *)m != real;
}

int main(int argc, char **argv)
{
	char line[4096];

	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_rtmin;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGRTMIN, &sa, NULL) != 0) {
		perror("sigaction");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "zombie") == 0) {
		pid_t c = fork();
		if (c < 0) {
			perror("fork");
			return 1;
		}
		if (c == 0)
			_exit(0);
		printf("zombie pid=%d\n", (int)c);
	} else if (argc > 1 && (strncmp(argv[1], "catch=", 6) == 0 ||
	                        strncmp(argv[1], "block=", 6) == 0)) {
		if (catch_list(argv[1] + 6, argv[1][0] == 'b') < 0)
			return 2;
	} else if (argc > 1) {
		fprintf(stderr, "usage: idle [zombie | catch=URG,WINCH,CHLD | block=...]\n");
		return 2;
	}
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (strcmp(line, "check") == 0)
			printf("hooked=%d\n", got_hooked());
		else if (strcmp(line, "signals") == 0)
			printf("signals=%d\n", (int)nsig);
		else if (strcmp(line, "caught") == 0)
			printf("caught=%d\n", (int)ncaught);
		else
			printf("echo %s\n", line);
	}
	if (ferror(stdin)) {
		perror("idle: read");
		return 1;
	}
	printf("bye\n");
	return 0;
}
