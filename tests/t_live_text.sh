#!/bin/bash
# The live view's text (src/live/live_text.c): target names with control
# characters, escape sequences, C1 codes, invalid or overlong UTF-8, bidi
# and zero-width characters made safe and cut to a width (with double-width
# characters counted), in UTF-8 and ASCII; the number formats; sparklines.
set -u
exec "$HA_BUILDDIR/tests/live_text_check"
