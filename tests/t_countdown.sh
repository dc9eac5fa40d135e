#!/bin/bash
# The Poisson countdown's draws (agent/countdown.h): mean within 4 standard
# errors of the interval and exponential by Kolmogorov-Smirnov at 1%.
set -u
exec "$HA_BUILDDIR/tests/countdown_check"
