// reach_cxx -- C++ holders with long names, for the reachability scan's
// holder names (heapattach --reach, issue 40): blocks held only by a
// static member of a class template whose arguments spell a long name
// (demangled, over 300 bytes: std::map<std::string, std::vector<long>>
// and more), and blocks held only by a thread_local of the same namespace.
// Prints "ready pid=N", then takes commands on stdin, one a line, each
// answered "done CMD":
//   build N SIZE   N blocks of SIZE bytes at each site: cxx_global_site
//                  (held by registry<...>::entries), cxx_tls_site (held by
//                  the main thread's thread_local t_cache);
//   check          "check SUM": a sum over the held blocks' first bytes.
// End of input: exit 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#define MAXN 4096

namespace heapattach_reach_test {
namespace a_rather_long_namespace_for_holder_names {
template <typename Key, typename Value, int N> struct registry_of_cached_entries {
	static Value *entries[N];
};
template <typename Key, typename Value, int N>
Value *registry_of_cached_entries<Key, Value, N>::entries[N];
thread_local char *t_cache[MAXN];
} // namespace a_rather_long_namespace_for_holder_names
} // namespace heapattach_reach_test

namespace ns = heapattach_reach_test::a_rather_long_namespace_for_holder_names;
typedef ns::registry_of_cached_entries<std::map<std::string, std::vector<long>>, char, MAXN>
	registry;
template struct ns::registry_of_cached_entries<std::map<std::string, std::vector<long>>, char,
                                               MAXN>;

static int n_blocks;

__attribute__((noinline)) static void cxx_global_site(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		registry::entries[i] = static_cast<char *>(malloc(size));
		memset(registry::entries[i], 1, size);
	}
}

__attribute__((noinline)) static void cxx_tls_site(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		ns::t_cache[i] = static_cast<char *>(malloc(size));
		memset(ns::t_cache[i], 2, size);
	}
}

int main()
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	char line[256];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = '\0';
		int n;
		size_t size;
		if (sscanf(line, "build %d %zu", &n, &size) == 2 && n > 0 && n <= MAXN && size >= 16 &&
		    !n_blocks) {
			n_blocks = n;
			cxx_global_site(n, size);
			cxx_tls_site(n, size);
		} else if (strcmp(line, "check") == 0) {
			unsigned long sum = 0;
			for (int i = 0; i < n_blocks; i++)
				sum += static_cast<unsigned char>(registry::entries[i][0]) +
				       static_cast<unsigned char>(ns::t_cache[i][0]);
			printf("check %lu\n", sum);
		}
		printf("done %s\n", line);
	}
	return 0;
}
