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
#    %fs-relative load.  musl refuses initial-exec TLS in a dlopen'ed
#    library outright: that is what the agent of musl targets is for.
# The agent of musl targets (agent/.libs/musl/, built when musl-gcc is
# installed; t_container_musl.sh runs it):
#  - NEEDED only musl's libc (libc.so, which musl's loader takes as itself);
#  - no STATIC_TLS flag and no initial-exec TLS relocation (TPOFF): its TLS
#    goes through descriptors (R_X86_64_TLSDESC), which musl accepts;
#  - every symbol it imports is defined by musl's libc (linked with
#    --no-undefined against it; checked again here against the loader's
#    own dynamic symbols), the weak toolchain ones aside.
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
ok="NEEDED libc.so.6 only, nothing above GLIBC_$LIMIT, no TLS segment"
if [ -n "$tls" ]; then
	[ "$(readelf -lW "$AGENT" | awk '$1 == "TLS"' | wc -l)" = 1 ] || fail "more than one TLS segment"
	tls_bytes=$((tls))
	log "TLS segment: $tls_bytes bytes (initial-exec: from glibc's static TLS surplus; musl refuses it)"
	[ "$tls_bytes" -le 512 ] || fail "the agent's TLS ($tls_bytes bytes) is over 512: glibc's surplus for dlopen'ed libraries may not hold it"
	ok="NEEDED libc.so.6 only, nothing above GLIBC_$LIMIT; TLS $tls_bytes bytes, initial-exec"
fi

# The agent of musl targets (see the top).
MUSL_AGENT=$(dirname "$AGENT")/musl/heapattach_agent.so
LDMUSL=/lib/ld-musl-x86_64.so.1
if ! command -v musl-gcc >/dev/null; then
	echo "ok: $ok (no musl-gcc: no agent of musl targets to check)"
	exit 0
fi
[ -f "$MUSL_AGENT" ] || fail "musl-gcc is installed but no agent of musl targets was built: $MUSL_AGENT"
needed=$(readelf -dW "$MUSL_AGENT" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
log "musl agent NEEDED: $needed"
[ "$needed" = "libc.so " ] || fail "the musl agent needs more than musl's libc.so: $needed"
! readelf -dW "$MUSL_AGENT" | grep -q 'STATIC_TLS' || fail "the musl agent is flagged STATIC_TLS (musl refuses it in dlopen)"
! readelf -dW "$MUSL_AGENT" | grep -q TEXTREL || fail "the musl agent has text relocations"
rel=$(readelf -rW "$MUSL_AGENT" | awk '$3 ~ /^R_X86_64_(TPOFF|GOTTPOFF|DTPMOD|DTPOFF|TLSDESC)/ { print $3 }' | sort | uniq -c | tr -s ' \n' ' ')
log "musl agent TLS relocations:$rel"
! readelf -rW "$MUSL_AGENT" | grep -q 'R_X86_64_TPOFF' || fail "the musl agent has initial-exec TLS relocations:$rel"
readelf -rW "$MUSL_AGENT" | grep -q 'R_X86_64_TLSDESC' || fail "the musl agent's TLS is not reached through descriptors:$rel"
if [ -e "$LDMUSL" ]; then
	defs=$(readelf -W --dyn-syms "$LDMUSL" | awk '$7 != "UND" && $8 != "" { sub(/@.*/, "", $8); print $8 }' | sort -u)
	missing=$(readelf -W --dyn-syms "$MUSL_AGENT" | awk '$7 == "UND" && $8 != "" && $5 != "WEAK" { sub(/@.*/, "", $8); print $8 }' |
	          sort -u | comm -23 - <(printf '%s\n' "$defs") | tr '\n' ' ')
	[ -z "$missing" ] || fail "the musl agent imports what musl's libc does not define: $missing"
	log "musl agent imports: $(readelf -W --dyn-syms "$MUSL_AGENT" | awk '$7 == "UND" && $8 != "" { print $8 }' | wc -l) symbols, all defined by $LDMUSL"
fi
echo "ok: $ok; the musl agent: NEEDED libc.so only, TLS through descriptors, imports all in musl"
