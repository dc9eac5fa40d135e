// cxx_alloc -- C++ allocations through new, std::string and std::vector,
// kept alive in a registry, so that a profile must show demangled C++
// names with file:line.  "go" builds the registry and prints "done N";
// "quit" ends.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include <unistd.h>

namespace app {

struct Widget {
	char payload[200];
	explicit Widget(int i) { std::memset(payload, i & 0xff, sizeof payload); }
};

class Registry {
public:
	__attribute__((noinline)) void add_name(int i)
	{
		names_.push_back(std::string(300, static_cast<char>('a' + i % 26)));
	}
	__attribute__((noinline)) void add_widget(int i)
	{
		widgets_.push_back(std::unique_ptr<Widget>(new Widget(i)));
	}
	size_t size() const { return names_.size() + widgets_.size(); }

private:
	std::vector<std::string> names_;
	std::vector<std::unique_ptr<Widget>> widgets_;
};

} // namespace app

int main()
{
	char line[64];
	app::Registry reg;
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::printf("ready pid=%d\n", static_cast<int>(getpid()));
	while (std::fgets(line, sizeof line, stdin)) {
		if (std::strncmp(line, "go", 2) == 0) {
			for (int i = 0; i < 20000; i++) {
				reg.add_name(i);
				reg.add_widget(i);
			}
			std::printf("done %zu\n", reg.size());
		} else if (std::strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	return 0;
}
