#!/bin/bash
# The unwinder (src/unwind/unwind.c) and the symbolizer (src/symbolize/symbolize.c) on real
# stacks of live processes:
#  1. tests/unwind_check's self-test: a C call chain with an inlined function,
#     a chain through libc's qsort, a deep recursion, damaged stacks, many
#     call paths, the fast walk against libunwind, speed;
#  2. a C++ target (namespaces, a class template, an inlined function, an
#     anonymous namespace) built here with g++ -O2 -fomit-frame-pointer:
#     demangled names and file:line of every frame;
#  3. a C target built with -O2 -fomit-frame-pointer: DWARF CFI only.
# The targets capture their registers and copy their stack as the agent's
# hook does, write it to a file and wait; unwind_check --attach does the rest.
. "$(dirname "$0")/lib.sh"

UC=$HA_BUILDDIR/tests/unwind_check
[ -x "$UC" ] || fail "not built: $UC (make check builds it)"

log "unwind_check self-test"
"$UC" >"$W/self.out" 2>"$W/self.err"
rc=$?
cat "$W/self.out"
[ "$rc" = 0 ] || fail "unwind_check self-test exited $rc"

# ------------------------------------------------------------ capture prelude
# Compiled into each target (one source file, so that every expected frame's
# file:line is in that file).  struct uc_record is the layout tests/unwind_check.h
# reads: magic, rip rsp rbp rbx r12-r15, stack_len, lines[16], stack bytes.
prelude() {
	cat <<'EOF'
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UC_MAGIC 0x3143455244574e55ull
#define STACK_CAP (64 * 1024)
struct uc_record {
	uint64_t magic;
	uint64_t regs[8];
	uint64_t stack_len;
	int32_t lines[16];
};
static struct uc_record *g_rec;
static uint64_t g_stack_end;
static char g_out[4096];

static void uc_init(const char *out)
{
	char line[4096];
	unsigned long lo, hi, sp = (unsigned long)(uintptr_t)line;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f || !out)
		exit(2);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			g_stack_end = hi;
	fclose(f);
	snprintf(g_out, sizeof g_out, "%s", out);
	g_rec = (struct uc_record *)calloc(1, sizeof *g_rec + STACK_CAP);
	if (!g_rec || !g_stack_end)
		exit(2);
}

__attribute__((noinline, noclone)) static void copy_stack(struct uc_record *r)
{
	uint64_t sp = r->regs[1], n = g_stack_end > sp ? g_stack_end - sp : 0;
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)sp;
	uint64_t *dst = (uint64_t *)(r + 1);
	if (n > STACK_CAP)
		n = STACK_CAP;
	n &= ~(uint64_t)7;
	for (uint64_t i = 0; i < n / 8; i++)
		dst[i] = src[i];
	r->stack_len = n;
}

static void write_record(struct uc_record *r)
{
	char tmp[4200];
	size_t len = sizeof *r + r->stack_len, done = 0;
	snprintf(tmp, sizeof tmp, "%s.tmp", g_out);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		exit(3);
	while (done < len) {
		ssize_t k = write(fd, (const char *)r + done, len - done);
		if (k <= 0)
			exit(3);
		done += (size_t)k;
	}
	close(fd);
	if (rename(tmp, g_out) != 0)
		exit(3);
}

#define CAPTURE_REGS(r)                                                    \
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"                         \
	                 "mov %%rax, 0(%0)\n\t"                            \
	                 "mov %%rsp, 8(%0)\n\t"                            \
	                 "mov %%rbp, 16(%0)\n\t"                           \
	                 "mov %%rbx, 24(%0)\n\t"                           \
	                 "mov %%r12, 32(%0)\n\t"                           \
	                 "mov %%r13, 40(%0)\n\t"                           \
	                 "mov %%r14, 48(%0)\n\t"                           \
	                 "mov %%r15, 56(%0)\n\t"                           \
	                 :                                                 \
	                 : "r"((r)->regs)                                  \
	                 : "rax", "memory")

/* Capture, publish, then block on stdin until the test is done. */
__attribute__((noinline, noclone)) static int capture_point(struct uc_record *r)
{
	char c;
	r->lines[0] = __LINE__; CAPTURE_REGS(r);
	copy_stack(r);
	r->magic = UC_MAGIC;
	write_record(r);
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return (int)(r->stack_len & 1) + 1;
}
EOF
}

# attach_check LABEL EXT EXPECTED-NAMES...: run the built target $W/LABEL,
# wait for its capture, check the unwound and symbolized frames.
attach_check() {
	local label=$1 ext=$2
	shift 2
	local args=() n
	for n in "$@"; do args+=(--expect "$n"); done
	start_cmd "$label" "$W/$label" "$W/$label.rec"
	wait_line "$TOUT" '^ready$' 20
	"$UC" --attach "$TPID" "$W/$label.rec" --file "$label.$ext" "${args[@]}" \
		>"$W/$label.check.out" 2>&1
	rc=$?
	cat "$W/$label.check.out"
	[ "$rc" = 0 ] || fail "$label: unwind_check --attach exited $rc"
	close_fd "$TFD"
	wait_exit "$TPID" 10
	[ "$RC" = 0 ] || fail "$label: target exited $RC"
	log "$label: ok"
}

# ------------------------------------------------------------ C, no frame pointers
{
	prelude
	cat <<'EOF'
static inline __attribute__((always_inline)) int nf_inl(struct uc_record *r, int x)
{
	r->lines[1] = __LINE__; int v = capture_point(r);
	return v * 3 + x;
}

__attribute__((noinline, noclone)) int nf_c(struct uc_record *r, int x)
{
	volatile long pad[8];
	pad[x & 7] = x;
	r->lines[2] = __LINE__; int v = nf_inl(r, x + 1);
	return v + (int)pad[x & 7];
}

__attribute__((noinline, noclone)) int nf_b(struct uc_record *r, int x)
{
	int a = x * 3, b = x ^ 5, c = x + 11, d = x * x;
	r->lines[3] = __LINE__; int v = nf_c(r, a);
	return v + a * b + c * d;
}

__attribute__((noinline, noclone)) int nf_a(struct uc_record *r, int x)
{
	volatile char buf[100];
	buf[x % 100] = (char)x;
	r->lines[4] = __LINE__; int v = nf_b(r, x + buf[x % 100]);
	return v - 1;
}

int main(int argc, char **argv)
{
	uc_init(argv[1]);
	g_rec->lines[5] = __LINE__; int v = nf_a(g_rec, argc);
	return v == 12345;
}
EOF
} >"$W/c_nofp.c"
gcc -std=gnu11 -O2 -g -fomit-frame-pointer -o "$W/c_nofp" "$W/c_nofp.c" ||
	fail "cannot build the C target"
# make sure the frame pointer really is omitted
objdump -d "$W/c_nofp" | awk '/<nf_b>:/,/ret/' | grep -q 'mov  *%rsp,%rbp' &&
	fail "c_nofp: nf_b sets up a frame pointer despite -fomit-frame-pointer"
attach_check c_nofp c capture_point nf_inl nf_c nf_b nf_a main

# ------------------------------------------------------------ C++
if ! command -v g++ >/dev/null 2>&1; then
	log "g++ not installed: C++ part not run"
	echo "ok: unwind and symbolization checks passed (without C++)"
	exit 0
fi
{
	prelude
	cat <<'EOF'
#include <string>

namespace {
struct Walker {
	long k;
	__attribute__((always_inline)) inline int step(uc_record *r, const std::string &s,
	                                               unsigned long n) const
	{
		r->lines[1] = __LINE__; int v = capture_point(r);
		return v + (int)s.size() + (int)(n * (unsigned long)k);
	}
};
} // namespace

namespace shapes {
static inline __attribute__((always_inline)) int helper(uc_record *r, int x)
{
	Walker w{x};
	std::string s(x > 100 ? "many" : "few");
	r->lines[2] = __LINE__; int v = w.step(r, s, (unsigned long)x);
	return v * 3 + x;
}

template <typename T> struct Box {
	T base;
	__attribute__((noinline, noclone)) T grow(uc_record *r, T x)
	{
		r->lines[3] = __LINE__; T v = helper(r, (int)(x + base));
		return v + base;
	}
};
} // namespace shapes

namespace {
__attribute__((noinline, noclone)) long level2(uc_record *r, long n)
{
	shapes::Box<int> b{3};
	r->lines[4] = __LINE__; long v = b.grow(r, (int)n);
	return v * 2;
}
} // namespace

int main(int argc, char **argv)
{
	uc_init(argv[1]);
	g_rec->lines[5] = __LINE__; long v = level2(g_rec, argc);
	return v == 12345;
}
EOF
} >"$W/cxx_target.cc"
g++ -std=gnu++17 -O2 -g -fomit-frame-pointer -o "$W/cxx_target" "$W/cxx_target.cc" ||
	fail "cannot build the C++ target"
attach_check cxx_target cc \
	'capture_point(uc_record*)' \
	'(anonymous namespace)::Walker::step(uc_record*, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, unsigned long) const' \
	'shapes::helper(uc_record*, int)' \
	'shapes::Box<int>::grow(uc_record*, int)' \
	'(anonymous namespace)::level2(uc_record*, long)' \
	main

# ------------------------------------------------------------ another mount namespace
# The target runs from a path that exists only in its own mount namespace:
# files must be found through /proc/PID/map_files and /proc/PID/root.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 &&
	unshare -m true 2>/dev/null; then
	mkdir -p "$W/nsroot"
	start_cmd ns_target unshare -m sh -c \
		'mount -t tmpfs none "$1" && cp "$2" "$1/ns_target" && exec "$1/ns_target" "$3"' \
		sh "$W/nsroot" "$W/cxx_target" "$W/ns_target.rec"
	wait_line "$TOUT" '^ready$' 20
	[ -e "$W/nsroot/ns_target" ] && fail "the namespace's tmpfs is visible outside"
	"$UC" --attach "$TPID" "$W/ns_target.rec" --file cxx_target.cc \
		--expect 'capture_point(uc_record*)' >"$W/ns_target.check.out" 2>&1
	rc=$?
	cat "$W/ns_target.check.out"
	[ "$rc" = 0 ] || fail "ns_target: unwind_check --attach exited $rc"
	close_fd "$TFD"
	wait_exit "$TPID" 10
	log "ns_target: ok"
else
	log "not root or no unshare: mount-namespace part not run"
fi

echo "ok: unwind and symbolization checks passed"
