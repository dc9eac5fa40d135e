/* pywalk.c -- the sampling thread's Python frames (see pywalk.h). */
#include "pywalk.h"

#include <string.h>

HA_HIDDEN struct ha_py_walk ha_py_cfg;

void ha_pywalk_start(const struct ha_py_walk *w)
{
	struct ha_py_walk c = *w;
	if (c.chain > HA_PY_CHAIN_DIRECT || !c.get_tstate || !c.code_type || !c.finalizing ||
	    !c.unicode_type || c.code_filename == HA_PY_NO_FIELD ||
	    (c.chain == HA_PY_CHAIN_FRAMEOBJ && (c.lasti_units == 0 || c.lasti_units > 2)) ||
	    c.str_length + 8u > c.str_ascii_size || c.str_state + 4u > c.str_ascii_size ||
	    c.str_compact_size < c.str_ascii_size || c.str_kind_shift >= 32 ||
	    c.str_compact_bit >= 32 || c.str_ascii_bit >= 32)
		c.chain = HA_PY_CHAIN_NONE;
	if (c.depth_max > HA_PY_DEPTH_MAX || c.depth_max == 0)
		c.depth_max = HA_PY_DEPTH_MAX;
	/* The layout first, the chain (what the hooks look at) last. */
	uint8_t chain = c.chain;
	c.chain = HA_PY_CHAIN_NONE;
	memcpy(&ha_py_cfg, &c, sizeof c);
	__atomic_store_n(&ha_py_cfg.chain, chain, __ATOMIC_RELEASE);
}

void ha_pywalk_stop(void)
{
	__atomic_store_n(&ha_py_cfg.chain, HA_PY_CHAIN_NONE, __ATOMIC_RELEASE);
}

/* A pointer the walk may follow: a user-space address, aligned. */
static inline int ptr_ok(uint64_t p)
{
	return ha_py_ptr_ok(p);
}

static inline uint64_t word_at(uint64_t base, uint16_t off)
{
	return *(const uint64_t *)(uintptr_t)(base + off);
}

/* h with the str at s (ha_py_ident): a string of a live code object,
 * immutable. */
static uint64_t ident_str(const struct ha_py_walk *c, uint64_t s, uint64_t h)
{
	uint32_t off, kind;
	int64_t bytes = -1, length = 0;
	if (ptr_ok(s) && word_at(s, c->object_type) == c->unicode_type) {
		length = *(const int64_t *)(uintptr_t)(s + c->str_length);
		bytes = ha_py_str_bytes(c, length, *(const uint32_t *)(uintptr_t)(s + c->str_state),
		                        &off, &kind);
	}
	if (bytes < 0)
		return ha_py_ident_nostr(h);
	uint32_t n = bytes < HA_PY_IDENT_TAIL ? (uint32_t)bytes : HA_PY_IDENT_TAIL;
	return ha_py_ident_add(h, (const uint8_t *)(uintptr_t)(s + off + (uint64_t)bytes - n), n,
	                       length, kind);
}

/* The code object's ha_py_ident: its name's and its file name's characters. */
static uint64_t ident_of(const struct ha_py_walk *c, uint64_t code)
{
	uint16_t name = c->code_qualname != HA_PY_NO_FIELD ? c->code_qualname : c->code_name;
	uint64_t h = ident_str(c, word_at(code, name), HA_PY_IDENT_SEED);
	return ident_str(c, word_at(code, c->code_filename), h);
}

uint32_t ha_pywalk(struct ha_py_frame *out, uint32_t max, uint32_t *flags)
{
	const struct ha_py_walk *c = &ha_py_cfg;
	uint8_t chain = __atomic_load_n(&c->chain, __ATOMIC_ACQUIRE);
	*flags = 0;
	if (chain == HA_PY_CHAIN_NONE || !ptr_ok(c->finalizing) ||
	    *(const uint64_t *)(uintptr_t)c->finalizing != 0)
		return 0;
	uint64_t tstate = ((uint64_t(*)(void))(uintptr_t)c->get_tstate)();
	if (!ptr_ok(tstate))
		return 0;
	uint64_t f = word_at(tstate, c->tstate_frame);
	if (chain == HA_PY_CHAIN_CFRAME) {
		if (!ptr_ok(f))
			return 0;
		f = word_at(f, c->cframe_current);
	}
	uint32_t n = 0, depth = c->depth_max < max || !out ? c->depth_max : max;
	int run_open = 0; /* a frame recorded since the last run's end */
	for (uint32_t steps = 0; f; steps++) {
		if (!ptr_ok(f) || steps >= 4 * HA_PY_DEPTH_MAX) {
			*flags |= HA_PY_F_INVALID;
			break;
		}
		if (c->frame_owner != HA_PY_NO_FIELD &&
		    *(const uint8_t *)(uintptr_t)(f + c->frame_owner) == HA_PY_OWNER_CSTACK) {
			/* The eval loop's shim frame: the run before it ends;
			 * with no frame since the last, the run is empty (its
			 * eval loop clearing the frame it returns from). */
			if (run_open) {
				if (out)
					out[n - 1].lasti |= HA_PY_RUN_END;
			} else {
				if (n >= depth) {
					*flags |= HA_PY_F_TRUNCATED;
					break;
				}
				if (out)
					out[n] = (struct ha_py_frame){ .lasti = HA_PY_RUN_END };
				n++;
			}
			run_open = 0;
			f = word_at(f, c->frame_back);
			continue;
		}
		uint64_t code = word_at(f, c->frame_code);
		if (!ptr_ok(code) || word_at(code, c->object_type) != c->code_type) {
			if (chain == HA_PY_CHAIN_DIRECT && ptr_ok(code)) {
				/* 3.13: f_executable need not be code (a frame of
				 * no Python function): not a frame to show. */
				f = word_at(f, c->frame_back);
				continue;
			}
			*flags |= HA_PY_F_INVALID;
			break;
		}
		if (n >= depth) {
			*flags |= HA_PY_F_TRUNCATED;
			break;
		}
		if (out) {
			int64_t lasti;
			if (chain == HA_PY_CHAIN_FRAMEOBJ) {
				lasti = (int64_t)*(const int32_t *)(uintptr_t)(f + c->frame_lasti) *
				        c->lasti_units;
			} else {
				/* A pointer into the code's instructions. */
				lasti = (int64_t)(word_at(f, c->frame_lasti) -
				                  (code + c->code_adaptive));
			}
			/* Before the first instruction (a frame just pushed),
			 * or nonsense: the start of the code. */
			if (lasti < 0 || lasti >= (int64_t)HA_PY_RUN_END)
				lasti = 0;
			int end = chain == HA_PY_CHAIN_FRAMEOBJ ||
			          (c->frame_is_entry != HA_PY_NO_FIELD &&
			           *(const uint8_t *)(uintptr_t)(f + c->frame_is_entry));
			out[n] = (struct ha_py_frame){
				.code = code,
				.ident = ident_of(c, code),
				.lasti = (uint32_t)lasti | (end ? HA_PY_RUN_END : 0),
				.firstlineno = *(const int32_t *)(uintptr_t)(code + c->code_firstlineno),
			};
		}
		n++;
		run_open = 1;
		f = word_at(f, c->frame_back);
	}
	/* The outermost frame recorded ends its run when the chain ended
	 * there (its shim frame, if any, was seen above). */
	if (out && n && !*flags)
		out[n - 1].lasti |= HA_PY_RUN_END;
	return n;
}
