#!/bin/bash
# t_push_args: what --push is given is checked before anything happens.
# Each bad URL, --app, --label, --push-header, --push-cacert,
# --push-timeout and credential in the environment makes heapattach exit 2
# with one line that names the problem (never echoing a secret), the
# running target untouched (no tracer, no agent); heapdiff refuses the same
# with exit 2, and --push with a report option or two databases.
. "$(dirname "$0")/lib.sh"
require_ha
require_target idle
HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$FILL" ] || fail "db_fill not built: $FILL"

start_target idle idle
pid=$TPID
"$FILL" --attacher "$W/a.db" >/dev/null || fail "db_fill --attacher failed"
U=http://127.0.0.1:9/

# bad KEYWORD ARGS...: heapattach ARGS PID and heapdiff ARGS DB refuse, exit
# 2, one line (heapdiff: and its 'Try' line) naming KEYWORD; nothing
# secret in it.
bad() {
	local kw=$1 n
	shift
	run_ha "$@" "$pid"
	[ "$HA_RC" = 2 ] || fail "heapattach $*: exit $HA_RC, expected 2 (usage error)"
	n=$(wc -l <"$HA_ERR")
	[ "$n" = 1 ] || fail "heapattach $*: $n lines on stderr, expected one"
	grep -q '^heapattach: ' "$HA_ERR" || fail "heapattach $*: the line does not start with 'heapattach: '"
	grep -qiF -- "$kw" "$HA_ERR" || fail "heapattach $*: the line does not say '$kw': $(cat "$HA_ERR")"
	! grep -q 's3cr3t' "$HA_ERR" || fail "heapattach $*: the secret is in the message"
	"$HD" "$@" "$W/a.db" >"$W/hd.out" 2>"$W/hd.err"
	local rc=$?
	[ "$rc" = 2 ] || fail "heapdiff $*: exit $rc, expected 2: $(cat "$W/hd.err")"
	head -n 1 "$W/hd.err" | grep -qiF -- "$kw" || fail "heapdiff $*: does not say '$kw': $(cat "$W/hd.err")"
	! grep -q 's3cr3t' "$W/hd.err" || fail "heapdiff $*: the secret is in the message"
	[ ! -s "$W/hd.out" ] || fail "heapdiff $*: wrote to stdout"
	log "refused: $(cat "$HA_ERR")"
}

bad 'scheme must be http or https' --push ftp://127.0.0.1/
bad 'not a URL' --push 127.0.0.1:4040
bad 'not a URL' --push 'http://'
bad 'not a URL' --push 'http://host name/'
bad 'credentials in the URL' --push http://user:s3cr3t@127.0.0.1:4040
bad 'has a query' --push 'http://127.0.0.1:4040/?x=1'
bad 'fragment' --push 'http://127.0.0.1:4040/#top'
bad 'wants NAME=VALUE' --push "$U" --label team
bad 'label name holds letters' --push "$U" --label 'my team=core'
bad "holds ',', '{' or '}'" --push "$U" --label 'team=a,b'
bad "holds ',', '{' or '}'" --push "$U" --label 'team=a}b'
bad 'control character' --push "$U" --label $'team=a\tb'
bad 'blank' --push "$U" --label 'team= core'
bad 'empty' --push "$U" --label 'team='
bad "Pyroscope's own" --push "$U" --label '__name__=x'
bad '--app' --push "$U" --app 'my app'
bad "wants 'Name: value'" --push "$U" --push-header 'X-Scope-OrgID'
bad 'no value' --push "$U" --push-header 'X-Scope-OrgID:  '
bad 'control character' --push "$U" --push-header $'X-Scope-OrgID: a\r\nX-Evil: 1'
bad 'credentials never come from the command line' --push "$U" --push-header 'Authorization: Bearer s3cr3t'
bad 'sets that header itself' --push "$U" --push-header 'Content-Length: 3'
bad '--push-cacert' --push "$U" --push-cacert "$W/no-such-ca.pem"
bad '--push-timeout' --push "$U" --push-timeout 0
bad 'options of --push' --label team=core
bad 'options of --push' --push-header 'X-Scope-OrgID: t'
HEAPATTACH_PUSH_TOKEN=s3cr3t HEAPATTACH_PUSH_USER=u HEAPATTACH_PUSH_PASSWORD=s3cr3t bad 'both' --push "$U"
HEAPATTACH_PUSH_USER=u bad 'without $HEAPATTACH_PUSH_PASSWORD' --push "$U"
HEAPATTACH_PUSH_PASSWORD=s3cr3t bad 'without $HEAPATTACH_PUSH_USER' --push "$U"
HEAPATTACH_PUSH_TOKEN=$'s3cr3t\nX-Evil: 1' bad 'control character' --push "$U"
check_untouched "$pid"
echo "ok: heapattach and heapdiff refuse every bad --push argument with one line, the target untouched"

# heapdiff: --push writes no report, and sends one database's snapshots.
hd_bad() {
	local kw=$1 rc
	shift
	"$HD" "$@" >"$W/hd.out" 2>"$W/hd.err"
	rc=$?
	[ "$rc" = 2 ] || fail "heapdiff $*: exit $rc, expected 2: $(cat "$W/hd.err")"
	head -n 1 "$W/hd.err" | grep -qiF -- "$kw" || fail "heapdiff $*: does not say '$kw': $(cat "$W/hd.err")"
}
cp "$W/a.db" "$W/b.db"
hd_bad 'writes no report (-f)' --push "$U" -f json "$W/a.db"
hd_bad 'writes no report (--module)' --push "$U" --module srv "$W/a.db"
hd_bad 'writes no report (--leaks)' --push "$U" --leaks "$W/a.db"
hd_bad 'not of two' --push "$U" "$W/a.db:2" "$W/b.db:3"
echo "ok: heapdiff --push refuses report options and two databases"
echo ok
