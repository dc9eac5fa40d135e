/* alloc_frame.h -- whether a frame is the allocator's own (malloc and its
 * kin, the agent's hooks, the C++ runtime's allocation path) rather than
 * the program's: a profile is about who asked for the memory, not how it
 * was obtained, so heapdiff's reports (hd_fold) and the live view
 * (ha_live_leaf) fold such frames away at a stack's leaf end. */
#ifndef HA_ALLOC_FRAME_H
#define HA_ALLOC_FRAME_H

/* function and module as symbolized (never NULL; "" when unknown). */
int ha_alloc_frame(const char *function, const char *module);

/* The function of the frame the attacher stores after the leaf of a stack
 * it could not unwind (src/record/writer.h), of no module. */
#define HA_NOT_UNWOUND_FUNCTION "(stack not unwound past here)"
/* The one frame of a leaf module's bucket for the call paths that came
 * after the session's cap (--max-callpaths, src/record/intern.h): of the
 * module whose code called the allocation function. */
#define HA_OVER_CAP_FUNCTION "(other call paths, past --max-callpaths)"
/* The module of Python frames (src/record/pymerge.h): reports show
 * "function  file.py:LINE  [py]". */
#define HA_PY_MODULE "py"

/* Is a frame with function and module, followed by a frame with function
 * next, folded away at the leaf end?  An allocator's frame is, but for one
 * followed by the not-unwound frame: all that is known of its stack. */
int ha_fold_frame(const char *function, const char *module, const char *next);

#endif
