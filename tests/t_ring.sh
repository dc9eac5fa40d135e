#!/bin/bash
# The shared-memory ring protocol under concurrent producers: exactly-once,
# intact records; drops counted when full; --block loses nothing.
set -u
exec "$HA_BUILDDIR/tests/ring_check"
