#!/bin/bash
# The resident-page book-keeping of --rss (src/rss/rss_pages.c) on this
# process's own pages: written, dropped, sampled twice, the zero page, a
# file page, unmapped, a transparent huge page (tests/rss_check.c); with
# the PAGEMAP_SCAN ioctl (where the kernel has it) and without (as Linux <
# 6.7: frame numbers and kpageflags, root only).
set -u
"$HA_BUILDDIR/tests/rss_check" || exit 1
if [ "$(id -u)" = 0 ]; then
	"$HA_BUILDDIR/tests/rss_check" --no-scan || exit 1
else
	echo "not root: the path without PAGEMAP_SCAN (kpageflags) not run"
fi
