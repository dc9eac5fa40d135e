#!/bin/bash
# t_profile_cxx: allocations through new, std::string and std::vector in a
# C++ program are attributed to demangled C++ functions with file:line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all cxx_alloc

db=$W/cxx.db
start_profiled cxx cxx_alloc -q -i 4096 -s 3600 -o "$db"
send "$TFD" go
wait_line "$TOUT" '^done 40000$'
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "cxx_alloc did not exit cleanly ($RC)"

"$HA_BUILDDIR/src/heapdiff" --bytes --top 0 "$db" last >"$W/live" || fail "heapdiff failed"
sed 's/^/    /' "$W/live" | head -n 40
# Both call sites, demangled, with the source file and a line.
for fn in 'app::Registry::add_widget(int)' 'app::Registry::add_name(int)'; do
	grep -F "$fn" "$W/live" | grep -Eq 'cxx_alloc\.cc:[0-9]+' ||
		fail "no frame '$fn' with cxx_alloc.cc:LINE in the live heap"
done
# The Widget objects (200 bytes each, 20000 of them) come through operator new.
grep -q 'operator new' "$W/live" || fail "operator new does not appear in any stack"
# The same frames are there for SQL users.
n=$(sqlite3 "$db" "SELECT count(*) FROM frames WHERE function = 'app::Registry::add_widget(int)' AND file LIKE '%cxx_alloc.cc' AND line > 0")
[ "$n" -ge 1 ] || fail "the frames table has no symbolized add_widget frame"
echo ok
