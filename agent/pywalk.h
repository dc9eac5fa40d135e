/*
 * pywalk.h -- the sampling thread's Python frames (src/proto/ha_py.h, the
 * contract): walked in the hook, once a sample is due, when the attacher
 * found CPython in the target and said how its frames are laid out.
 *
 * Plain bounded reads, each pointer checked before it is followed (non-null,
 * aligned, a user address), at most depth_max frames, every code object
 * checked by its type: the chain is the thread's own, changed only by the
 * thread itself, which is inside an allocation now.  Per frame also the
 * code's ident (ha_py_ident): its name's and file name's last
 * HA_PY_IDENT_TAIL bytes, strings of a live code object.  Nothing while the
 * interpreter finalizes.  On targets without CPython (chain NONE) a sample
 * pays one load of a global.
 *
 * Sits on tls (HA_HIDDEN only); the sampler calls it.
 */
#ifndef HA_AGENT_PYWALK_H
#define HA_AGENT_PYWALK_H

#include <stdint.h>
#include "ha_py.h"
#include "tls.h"

extern HA_HIDDEN struct ha_py_walk ha_py_cfg;

/* Take the session's layout (chain NONE: walk nothing). */
HA_HIDDEN void ha_pywalk_start(const struct ha_py_walk *w);
/* No more walks (detach, fork child). */
HA_HIDDEN void ha_pywalk_stop(void);

static inline int ha_pywalk_on(void)
{
	return __atomic_load_n(&ha_py_cfg.chain, __ATOMIC_RELAXED) != HA_PY_CHAIN_NONE;
}

/* Walk this thread's frames, innermost first, into out[max] (out NULL:
 * only count).  Returns the frames written (or that would be); *flags gets
 * HA_PY_F_*.  The chain does not change between two calls in one hook:
 * a count, then the same walk into the reserved record. */
HA_HIDDEN uint32_t ha_pywalk(struct ha_py_frame *out, uint32_t max, uint32_t *flags);

#endif
