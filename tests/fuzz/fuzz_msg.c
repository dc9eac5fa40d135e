/* fuzz_msg -- libFuzzer harness for what the attacher does with a socket
 * message from the agent, ha_session_check_msg (src/attach/session.c,
 * what recv_msg runs on every message of the handshake and the detach).
 * The agent runs inside the target: every byte of a message is the
 * target's, and an ERROR's text ends up on the user's terminal.
 *
 * Input: the type wanted (1 byte: HELLO, READY or DETACHED, what the
 * attacher waits for), a flags byte (bit 0: the kernel cut the message,
 * MSG_TRUNC; bit 1: a short error buffer), then the message as received:
 * n bytes (up to sizeof(struct ha_msg) of them copied, as recvmsg does).
 * Asserted, besides what the sanitizers check:
 *  - 0 only for a whole, uncut message of the right magic, version and
 *    the type wanted; -1 otherwise, with a line in err;
 *  - err is NUL-terminated inside its buffer and one line as
 *    ha_clean_line leaves it (check_text): valid UTF-8, no C0 control
 *    (ESC would let the target drive the terminal), no newline, no DEL,
 *    no C1 control (U+009B is CSI to some terminals);
 *  - the message is left as it was but for the last byte of an ERROR's
 *    text (its terminator).
 *
 * fuzz-sources: src/attach/session.c src/common/util.c src/common/target_fs.c src/common/proc.c
 */
#define _GNU_SOURCE
#include "check_text.h"
#include "fuzz.h"
#include "session.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static const uint16_t wants[] = { HA_MSG_HELLO, HA_MSG_READY, HA_MSG_DETACHED };
	if (n < 2)
		return 0;
	uint16_t want = wants[d[0] % 3];
	int truncated = d[1] & 1;
	size_t errlen = d[1] & 2 ? 24 : 512;
	d += 2;
	n -= 2;

	struct ha_msg m, before;
	memset(&m, 0, sizeof m);
	memcpy(&m, d, n < sizeof m ? n : sizeof m);
	before = m;
	char *err = malloc(errlen);
	if (!err)
		abort();
	memset(err, 'X', errlen);
	int rc = ha_session_check_msg(&m, (long)n, truncated, want, err, errlen);

	int good = n == sizeof m && !truncated && before.magic == HA_PROTO_MAGIC &&
	           before.version == HA_PROTO_VERSION && before.type == want;
	FUZZ_CHECK(rc == 0 || rc == -1, "result %d", rc);
	FUZZ_CHECK((rc == 0) == good, "a %zu-byte message of type %u (wanted %u), cut %d: %d", n,
	           before.type, want, truncated, rc);
	if (rc == 0) {
		FUZZ_CHECK(memcmp(&m, &before, sizeof m) == 0, "an accepted message changed");
	} else {
		size_t len = strnlen(err, errlen);
		FUZZ_CHECK(len < errlen, "err not terminated");
		FUZZ_CHECK(len > 0, "no error line");
		size_t at;
		const char *why = check_text(err, len, 1, &at);
		FUZZ_CHECK(!why, "%s at byte %zu of the error line", why, at);
		if (n == sizeof m && !truncated && before.magic == HA_PROTO_MAGIC &&
		    before.version == HA_PROTO_VERSION && before.type == HA_MSG_ERROR)
			before.u.error.text[sizeof before.u.error.text - 1] = '\0';
		FUZZ_CHECK(memcmp(&m, &before, sizeof m) == 0, "a refused message changed");
	}
	free(err);
	return 0;
}
