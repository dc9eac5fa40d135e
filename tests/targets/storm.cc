/* storm [THREADS] [ROUNDS] -- the target of the attach/detach storm
 * (tests/t_storm.sh, bench/storm): THREADS worker threads (default 64)
 * allocate every way -- malloc, calloc, realloc, free, posix_memalign,
 * operator new/delete, new[]/delete[], mmap/munmap -- with every block
 * filled with a pattern and checked before it goes; every 50th round a
 * worker forks a child that execs /bin/true (or _exits when exec fails)
 * and waits for it.  SIGUSR1 and SIGUSR2 are caught (counted, nothing
 * else) so that the test can throw signals at it.  SIGTERM ends the work
 * early: each worker finishes the round it is in and stops, so that a test
 * need not guess how many rounds outlast its attach cycles on a given
 * machine.
 *
 * Prints "ready pid=N" once the workers run, and at the end one line that
 * depends only on the work, never on timing:
 *   "storm threads=T rounds=R done=D blocks=B forks=F mismatches=M"
 * (signals are not in it: how many arrive is timing); D is the rounds all
 * workers did together, T x R unless SIGTERM came, B is 6 x D.  A mismatch of a
 * pattern or an exec'ed child that failed counts in M; exit status 0 iff
 * M is 0. */
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int rounds = 2000;
static std::atomic<long> blocks{ 0 }, forks{ 0 }, mismatches{ 0 }, ready_threads{ 0 };
static volatile sig_atomic_t signals_seen;
static std::atomic<long> rounds_done{ 0 };
static std::atomic<int> stop_requested{ 0 };

static void on_term(int)
{
	stop_requested.store(1, std::memory_order_relaxed);
}

static void on_signal(int)
{
	signals_seen = signals_seen + 1;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 31);
}

static void check(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 31)) {
			mismatches++;
			return;
		}
}

__attribute__((noinline)) static void one_round(unsigned t, unsigned r)
{
	unsigned seed = t * 7919 + r;
	size_t n = 16 + (seed * 2654435761u) % 4000;
	unsigned char *a = (unsigned char *)malloc(n);
	unsigned char *b = (unsigned char *)calloc(1, n / 2 + 1);
	if (!a || !b) {
		mismatches++;
		free(a);
		free(b);
		return;
	}
	fill(a, n, seed);
	for (size_t i = 0; i < n / 2 + 1; i++)
		if (b[i])
			mismatches++;
	a = (unsigned char *)realloc(a, n * 2);
	if (!a) {
		mismatches++;
		free(b);
		return;
	}
	check(a, n, seed);
	void *al = nullptr;
	if (posix_memalign(&al, 64, 256) == 0) {
		fill((unsigned char *)al, 256, seed + 1);
		check((unsigned char *)al, 256, seed + 1);
		free(al);
	}
	int *obj = new int[64];
	for (int i = 0; i < 64; i++)
		obj[i] = (int)(seed + (unsigned)i);
	for (int i = 0; i < 64; i++)
		if (obj[i] != (int)(seed + (unsigned)i))
			mismatches++;
	delete[] obj;
	std::string *s = new std::string(100 + seed % 50, 'x');
	if (s->size() != 100 + seed % 50)
		mismatches++;
	delete s;
	if (r % 10 == 0) {
		size_t len = 64 * 1024;
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			mismatches++;
		} else {
			fill((unsigned char *)m, len, seed + 2);
			check((unsigned char *)m, len, seed + 2);
			munmap(m, len);
		}
	}
	free(b);
	free(a);
	blocks += 6;
}

static void fork_exec()
{
	pid_t c = fork();
	if (c == 0) {
		execl("/bin/true", "true", (char *)nullptr);
		_exit(3);
	}
	int st = 0;
	while (c > 0 && waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	if (c < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		mismatches++;
	forks++;
}

static void *worker(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	ready_threads++;
	for (int r = 0; r < rounds && !stop_requested.load(std::memory_order_relaxed); r++) {
		one_round(t, (unsigned)r);
		rounds_done++;
		if (r % 50 == 49)
			fork_exec();
	}
	return nullptr;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 64;
	rounds = argc > 2 ? atoi(argv[2]) : 2000;
	if (nthreads < 1 || nthreads > 1024 || rounds < 1) {
		fprintf(stderr, "usage: storm [THREADS (1..1024)] [ROUNDS]\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, nullptr);
	sigaction(SIGUSR2, &sa, nullptr);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, nullptr);
	pthread_t *th = new pthread_t[nthreads];
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], nullptr, worker, (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "storm: cannot create thread %d\n", i);
			return 1;
		}
	while (ready_threads.load() < nthreads)
		usleep(1000);
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], nullptr);
	delete[] th;
	printf("storm threads=%d rounds=%d done=%ld blocks=%ld forks=%ld mismatches=%ld\n", nthreads,
	       rounds, rounds_done.load(), blocks.load(), forks.load(), mismatches.load());
	return mismatches.load() ? 1 : 0;
}
