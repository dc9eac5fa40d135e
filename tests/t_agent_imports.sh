#!/bin/bash
# t_agent_imports: the built agent loads under any glibc from 2.17 on and in
# an image without libgcc_s or libm (issue 36, step 2).  readelf on it:
#  - dynamic section: NEEDED libc.so.6 and nothing else; BIND_NOW and
#    NODELETE (-z now, -z nodelete) as built; no TEXTREL;
#  - version needs: only libc.so.6's, none above GLIBC_2.17; every undefined
#    symbol it imports carries a GLIBC_ version (none left unversioned but
#    the weak ones the toolchain adds), so it binds to nothing newer;
#  - program headers: the one TLS segment (initial-exec, agent/tls.h) stays
#    small.  It stays because glibc serves a dlopen'ed library's
#    initial-exec TLS from its static TLS surplus (hundreds of bytes
#    guaranteed), and the hooks reach their per-thread state through one
#    %fs-relative load; musl refuses initial-exec TLS in a dlopen'ed library
#    outright, which is why the agent does not load there yet
#    (t_container_musl.sh, issue 36 step 2).
. "$(dirname "$0")/lib.sh"
command -v readelf >/dev/null || skip "readelf is not installed (binutils)"
[ -f "$AGENT" ] || fail "no agent built at $AGENT"
LIMIT=2.17

needed=$(readelf -dW "$AGENT" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
log "NEEDED: $needed"
[ "$needed" = "libc.so.6 " ] || fail "the agent needs more than libc.so.6: $needed"
readelf -dW "$AGENT" | grep -q '(FLAGS).*BIND_NOW' || fail "the agent is not linked -z now"
readelf -dW "$AGENT" | grep -q '(FLAGS_1).*NODELETE' || fail "the agent is not linked -z nodelete"
! readelf -dW "$AGENT" | grep -q TEXTREL || fail "the agent has text relocations"

# Version needs (.gnu.version_r): "File: libc.so.6", then "Name: GLIBC_2.x".
vr=$(readelf -VW "$AGENT" | sed -n '/\.gnu\.version_r/,$p')
files=$(printf '%s\n' "$vr" | sed -n 's/.*File: \([^ ]*\).*/\1/p' | sort -u | tr '\n' ' ')
[ "$files" = "libc.so.6 " ] || fail "version needs of other files than libc.so.6: $files"
versions=$(printf '%s\n' "$vr" | sed -n 's/.*Name: \([^ ]*\).*/\1/p' | sort -u)
log "libc versions needed: $(echo $versions)"
for v in $versions; do
	case $v in
	GLIBC_[0-9]*) ;;
	*) fail "a version need that is not glibc's: $v" ;;
	esac
	n=${v#GLIBC_}
	[ "$(printf '%s\n%s\n' "$n" "$LIMIT" | sort -V | tail -n 1)" = "$LIMIT" ] ||
		fail "the agent needs $v, newer than GLIBC_$LIMIT: $(readelf -W --dyn-syms "$AGENT" | grep "@$v" | awk '{ print $8 }' | tr '\n' ' ')"
done

# Every undefined dynamic symbol is versioned (GLIBC_...), but weak
# toolchain ones that may stay unresolved.
unver=$(readelf -W --dyn-syms "$AGENT" | awk '$7 == "UND" && $8 != "" && $8 !~ /@/ && $5 != "WEAK" { print $8 }')
[ -z "$unver" ] || fail "unversioned imports (would bind to whatever defines them): $unver"
log "imports: $(readelf -W --dyn-syms "$AGENT" | awk '$7 == "UND" && $8 != "" { print $8 }' | wc -l) symbols, all of libc.so.6 at GLIBC_$LIMIT or older"

# TLS: one segment, initial-exec, small (see the top).
tls=$(readelf -lW "$AGENT" | awk '$1 == "TLS" { print $6 }')
[ -n "$tls" ] || { echo "ok: NEEDED libc.so.6 only, nothing above GLIBC_$LIMIT, no TLS segment"; exit 0; }
[ "$(readelf -lW "$AGENT" | awk '$1 == "TLS"' | wc -l)" = 1 ] || fail "more than one TLS segment"
tls_bytes=$((tls))
log "TLS segment: $tls_bytes bytes (initial-exec: from glibc's static TLS surplus; musl refuses it)"
[ "$tls_bytes" -le 512 ] || fail "the agent's TLS ($tls_bytes bytes) is over 512: glibc's surplus for dlopen'ed libraries may not hold it"
echo "ok: NEEDED libc.so.6 only, nothing above GLIBC_$LIMIT; TLS $tls_bytes bytes, initial-exec"
