/* alloc_frame.h -- whether a frame is the allocator's own (malloc and its
 * kin, the agent's hooks, the C++ runtime's allocation path) rather than
 * the program's: a profile is about who asked for the memory, not how it
 * was obtained, so heapdiff's reports (hd_fold) and the live view
 * (ha_live_leaf) fold such frames away at a stack's leaf end. */
#ifndef HA_ALLOC_FRAME_H
#define HA_ALLOC_FRAME_H

/* function and module as symbolized (never NULL; "" when unknown). */
int ha_alloc_frame(const char *function, const char *module);

#endif
