#!/bin/bash
# t_push_heapdiff: heapdiff --push sends what a database recorded earlier
# (db_fill --attacher: a baseline, six periodic snapshots, the peak, the
# detach), to a receiver that checks requests as Pyroscope does:
#  - DB alone: the 8 snapshots but the baseline, in id order, each its
#    `heapdiff -f pprof` profile; from/until each snapshot's period (the
#    peak's from the snapshot before it by time), kind=peak for the peak;
#  - DB B: B only; DB A B: A to B; --peak: the peak;
#  - names from the file are untrusted: a comm and a host name with
#    blanks, ',', '{', '}', '=', '+', '%', '&', '#', a control character
#    and UTF-8 arrive as label values cleaned of what would break
#    Pyroscope's name syntax (and the app name of its characters), every
#    other byte intact through the URL's escaping; --app and --label
#    replace them;
#  - a 400 is not retried, names the answer, and makes heapdiff exit 1;
#  - basic authentication from the environment; https verified: a
#    self-signed receiver is refused (not retried), accepted with
#    --push-cacert.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
HD=$HA_BUILDDIR/src/heapdiff
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HD" ] || fail "heapdiff not built: $HD"
[ -x "$FILL" ] || fail "db_fill not built: $FILL"
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
T0=1700000000

db=$W/att.db
"$FILL" --attacher "$db" >/dev/null || fail "db_fill --attacher failed"
# What a hostile target and host could have left in the file.
sqlite3 "$db" "UPDATE sessions SET comm = 'a b,{c}=d+e%f&g#' || char(1) || 'é',
                                   hostname = ' h,o}st ';" || fail "sqlite3 failed"
COMM='a b__c_=d+e%f&g#?é'    # hd_clean_text made char(1) a '?'
APP='a_b__c__d_e_f_g___'    # one '_' per character outside [A-Za-z0-9_./-]
HOST='_h_o_st_'

start_receiver r
"$HD" --push "$RURL" "$db" 2>"$W/hd.err" || fail "heapdiff --push failed: $(cat "$W/hd.err")"
grep -qx "heapdiff: --push $RURL: 8 of 8 profiles sent" "$W/hd.err" || fail "summary: $(cat "$W/hd.err")"
[ "$(requests)" = 8 ] || fail "$(requests) requests for 8 snapshots"
k=0
for id in 2 3 4 5 6 7 8 9; do
	k=$((k + 1))
	case $id in
	8) kind=peak from=$((T0 + 180)) until=$((T0 + 210)) ;;        # after snapshot 4, by time
	9) kind=snapshot from=$((T0 + 360)) until=$((T0 + 420)) ;;
	*) kind=snapshot from=$((T0 + 60 * (id - 2))) until=$((T0 + 60 * (id - 1))) ;;
	esac
	got=$(req "$k" '[r["status"], r["error"], r["labels"], r["query"]["from"], r["query"]["until"], r["query"]["format"]]')
	want=$(python3 -c 'import json, sys; a = sys.argv[1:]; print(json.dumps([200, None, {"__name__": a[0], "hostname": a[1], "pid": "6161", "comm": a[2], "kind": a[3]}, a[4], a[5], "pprof"], sort_keys=True))' \
		"$APP" "$HOST" "$COMM" "$kind" "$from" "$until")
	[ "$got" = "$want" ] || fail "request $k (snapshot $id):
   got:  $got
   want: $want"
	"$HD" -f pprof -o "$W/s$id.pb.gz" "$db" "$id" || fail "heapdiff -f pprof $id failed"
	cmp -s "$RDIR/req-$k.body" "$W/s$id.pb.gz" || fail "request $k's body is not heapdiff -f pprof of snapshot $id"
done
# The raw query escapes every byte of the name that is not unreserved.
q=$(req 1 'r["raw_query"]')
case $q in
name=a_b__c__d_e_f_g___%7Bhostname%3D_h_o_st_%2Cpid%3D6161%2Ccomm%3Da%20b__c_%3Dd%2Be%25f%26g%23%3F%C3%A9%2Ckind%3Dsnapshot%7D\&from=*) ;;
*) fail "the query is escaped otherwise: $q" ;;
esac
echo "ok: DB alone: 8 profiles, their periods, the peak's kind, hostile names cleaned and escaped"

# Ranges, --peak, --app and --label.
start_receiver r2
"$HD" --push "$RURL" "$db" 5 2>"$W/hd.err" || fail "heapdiff --push DB 5: $(cat "$W/hd.err")"
"$HD" --push "$RURL" "$db" 3 5 2>>"$W/hd.err" || fail "heapdiff --push DB 3 5: $(cat "$W/hd.err")"
"$HD" --push "$RURL" --peak --app srv-prod --label hostname=web-1 --label region=eu "$db" 2>>"$W/hd.err" ||
	fail "heapdiff --push --peak: $(cat "$W/hd.err")"
[ "$(requests)" = 5 ] || fail "$(requests) requests for 1 + 3 + 1 snapshots"
got=$(for k in 1 2 3 4 5; do req "$k" 'r["query"]["until"]'; done | xargs)
[ "$got" = "$((T0 + 240)) $((T0 + 120)) $((T0 + 180)) $((T0 + 240)) $((T0 + 210))" ] || fail "the snapshots sent: $got"
got=$(req 5 'r["labels"]')
want=$(python3 -c 'import json, sys; print(json.dumps({"__name__": "srv-prod", "comm": sys.argv[1], "hostname": "web-1", "kind": "peak", "pid": "6161", "region": "eu"}, sort_keys=True))' "$COMM")
[ "$got" = "$want" ] || fail "--app and --label: $got, expected $want"
echo "ok: DB B, DB A B, --peak; --app and --label replace the defaults"

# A 400 is not retried; heapdiff exits 1 naming it.
start_receiver r400 --fail-first 100 --status 400
"$HD" --push "$RURL" "$db" 5 2>"$W/hd.err"
rc=$?
[ "$rc" = 1 ] || fail "heapdiff exited $rc on a 400, expected 1"
grep -q "snapshot 5 not accepted: HTTP 400: injected failure" "$W/hd.err" || fail "the refusal: $(cat "$W/hd.err")"
grep -q 'attempts' "$W/hd.err" && fail "a 400 was retried: $(cat "$W/hd.err")"
[ "$(requests)" = 1 ] || fail "$(requests) requests for a refused profile, expected 1"
echo "ok: a 400 is not retried, heapdiff exits 1"

# Basic authentication from the environment.
start_receiver rauth
HEAPATTACH_PUSH_USER=alice HEAPATTACH_PUSH_PASSWORD='pa:ss wörd' "$HD" --push "$RURL" \
	--push-header 'X-Scope-OrgID: tenant-b' "$db" 5 2>"$W/hd.err" || fail "with basic authentication: $(cat "$W/hd.err")"
got=$(req 1 '[r["headers"]["authorization"], r["headers"]["x-scope-orgid"]]')
want=$(python3 -c 'import base64, json; print(json.dumps(["Basic " + base64.b64encode("alice:pa:ss wörd".encode()).decode(), "tenant-b"]))')
[ "$got" = "$want" ] || fail "the headers: $got, expected $want"
echo "ok: basic authentication and --push-header"

# https: verified against the system's CAs, or --push-cacert.
if command -v openssl >/dev/null; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$W/key.pem" -out "$W/cert.pem" >/dev/null 2>&1 ||
		fail "openssl could not make a certificate"
	start_receiver rtls --tls "$W/cert.pem" "$W/key.pem"
	HURL=https://127.0.0.1:$RPORT
	"$HD" --push "$HURL" "$db" 5 2>"$W/hd.err" && fail "a self-signed receiver was accepted"
	grep -Eiq 'certificate' "$W/hd.err" || fail "the refusal does not name the certificate: $(cat "$W/hd.err")"
	grep -q 'attempts' "$W/hd.err" && fail "a certificate that does not verify was retried"
	[ "$(requests)" = 0 ] || fail "the self-signed receiver got a request"
	"$HD" --push "$HURL" --push-cacert "$W/cert.pem" "$db" 5 2>"$W/hd.err" ||
		fail "--push-cacert: $(cat "$W/hd.err")"
	[ "$(requests)" = 1 ] || fail "the receiver got $(requests) requests with --push-cacert, expected 1"
	echo "ok: https: a self-signed receiver refused, accepted with --push-cacert"
else
	log "openssl is not installed: https not checked"
fi
echo ok
