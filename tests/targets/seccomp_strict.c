/* seccomp_strict -- prints "ready pid=N", enters SECCOMP_MODE_STRICT (only
 * read, write, _exit and sigreturn remain allowed), prints "strict", blocks in
 * read() on stdin, then writes "got " and what it read and leaves with
 * syscall(SYS_exit, 0) (exit_group is not allowed in strict mode).
 * Any other system call in strict mode kills the process with SIGKILL. */
#define _GNU_SOURCE
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	char buf[512];
	ssize_t n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0) {
		perror("prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT)");
		return 1;
	}
	/* From here on: raw read/write/exit only. */
	if (write(1, "strict\n", 7) != 7)
		syscall(SYS_exit, 3);
	n = read(0, buf, sizeof buf);
	if (n < 0)
		syscall(SYS_exit, 4);
	if (write(1, "got ", 4) != 4 || write(1, buf, (size_t)n) != n)
		syscall(SYS_exit, 5);
	syscall(SYS_exit, 0);
	return 0;
}
