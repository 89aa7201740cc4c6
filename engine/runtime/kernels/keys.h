/* Which keys each attention chunk holds (keys.c, shared by every ISA's attention.c).
 *
 * A chunk's partial softmax (max, sum, weighted V) is rounded once per chunk, so a row gives a
 * plain step's bits only when its visible keys fall into the same chunks as in that step. A plain
 * step at position p sees keys 0..p in slots 0..p: chunk c holds logical positions
 * [128c, 128c + 128). A pass's own tokens (a draft tree) sit in slots L-pass..L-1 in tree order,
 * not at their positions: a row at depth d sees its d ancestors, which a plain run had put in
 * consecutive slots. So the pass's visible keys of a row take the positions L-pass, L-pass+1, ...
 * in slot order (ancestors precede children), and chunks follow those positions. (Chunked by slot,
 * a tree straddling a multiple of 128 gave its rows other bits than plain steps: measured on
 * SmolLM2, 95 of 1,716 path rows of random trees differed, every one straddling a boundary.)
 */
#ifndef HEXA_KEYS_H
#define HEXA_KEYS_H

#include <stdint.h>

#define CHUNK 128   /* logical key positions per partial softmax: the same on every ISA */

struct key_plan {
    int L, P, C, R;      /* keys, first key of the pass (L when none), chunks, rows */
    int *lo, *hi;        /* chunk c reads key slots [lo[c], hi[c]) */
    int16_t *chunk;      /* [R][L - P]: the chunk a row's pass key belongs to, -1 if masked; NULL: by slot */
    int widest;          /* the longest slot range of a chunk */
};

/* mask [R, L] additive or NULL; pass: the last `pass` keys are the pass's own tokens */
__attribute__((visibility("hidden"))) void key_plan_init(struct key_plan *p, const float *mask, int R, int L,
                                                         int pass);
__attribute__((visibility("hidden"))) void key_plan_free(struct key_plan *p);
/* the additive mask rows r0..r0+rt-1 restricted to chunk c's keys of each row, [rt][n] at `out`
   (n = hi - lo); returns `out`, or NULL when the chunk needs none (rows read the mask itself) */
__attribute__((visibility("hidden"))) const float *key_plan_rows(const struct key_plan *p, const float *mask, int c,
                                                                 int r0, int rt, float *out);

#endif
