/* eh_table.c -- a loaded module's .eh_frame_hdr search table, from the
 * target's memory (see eh_table.h). */
#define _GNU_SOURCE
#include "eh_table.h"

#include <elf.h>
#include <string.h>

#include "util.h"

#define MAX_PHDRS 64
#define PE_OMIT 0xff
#define PE_DATAREL_SDATA4 0x3b

/* Bytes of a fixed-size encoding (udata/sdata 2, 4, 8), or 0. */
static unsigned enc_bytes(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x00: case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

int ha_eh_table_read(pid_t pid, uint64_t base, struct ha_eh_table *t)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PHDRS];
	uint8_t h[4 + 8 + 8];
	uint64_t load = UINT64_MAX, hdr = 0;
	int have_hdr = 0;

	if (ha_remote_read(pid, base, &eh, sizeof eh) != 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS ||
	    eh.e_phoff > (1u << 20) ||
	    ha_remote_read(pid, base + eh.e_phoff, ph, eh.e_phnum * sizeof ph[0]) != 0)
		return -1;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0 && load == UINT64_MAX)
			load = ph[i].p_vaddr & ~(uint64_t)4095;
		if (ph[i].p_type == PT_GNU_EH_FRAME && ph[i].p_memsz >= 4) {
			hdr = ph[i].p_vaddr;
			have_hdr = 1;
		}
	}
	if (load == UINT64_MAX || !have_hdr)
		return -1;
	hdr = hdr - load + base;        /* the module's load bias applied */
	if (ha_remote_read(pid, hdr, h, sizeof h) != 0)
		return -1;
	/* version, eh_frame_ptr_enc, fde_count_enc, table_enc */
	unsigned pn = h[1] == PE_OMIT ? 0 : enc_bytes(h[1]), cn = enc_bytes(h[2]);
	if (h[0] != 1 || h[3] != PE_DATAREL_SDATA4 || h[2] == PE_OMIT || (h[2] & 0x70) != 0 ||
	    (h[1] != PE_OMIT && !pn) || !cn)
		return -1;
	uint64_t n = 0;
	memcpy(&n, h + 4 + pn, cn);     /* little-endian: the low bytes */
	if (n == 0 || n > (1u << 24))
		return -1;
	t->segbase = hdr;
	t->table = hdr + 4 + pn + cn;
	t->nfde = n;
	return 0;
}
