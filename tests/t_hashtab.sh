#!/bin/bash
# The hash table of src/common (hashtab.h) on its own: src/common/hashtab_test.c.
exec "$HA_BUILDDIR/src/common/hashtab_test"
