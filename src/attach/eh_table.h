/* eh_table.h -- where a loaded module's .eh_frame_hdr search table is,
 * read from the target's own memory, for libunwind's
 * dwarf_search_unwind_table (inject_safe.c's find_proc_info).
 *
 * libunwind-ptrace's _UPT_find_proc_info learns it by opening the module's
 * file at the path in /proc/PID/maps (through /proc/PID/root) with a plain
 * blocking open(2) as whoever runs heapattach: a path the target replaced
 * by a FIFO stopped the injection for good with one of its threads
 * stopped, and one replaced by a link to /etc/shadow was opened as root.
 * The loaded module holds all that is needed: its ELF and program headers
 * are mapped with its first segment, and PT_GNU_EH_FRAME is loaded too.
 * Everything read is the target's and checked as such. */
#ifndef HA_EH_TABLE_H
#define HA_EH_TABLE_H

#include <stdint.h>
#include <sys/types.h>

struct ha_eh_table {
	uint64_t segbase;   /* the .eh_frame_hdr, in the target */
	uint64_t table;     /* its binary search table (pairs of int32, datarel) */
	uint64_t nfde;      /* entries in it */
};

/* The table of the module whose offset-0 mapping starts at base in pid.
 * 0, or -1 (no usable table: an unusual encoding, not an ELF file). */
int ha_eh_table_read(pid_t pid, uint64_t base, struct ha_eh_table *t);

#endif
