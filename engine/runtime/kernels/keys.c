/* The attention chunks' keys by logical position (keys.h says why). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

/* whether a row's visible pass keys (finite mask entries) are a prefix of the pass: checked
   before any plan is built, since a prompt chunk's rows always are (scanning its mask and
   building chunk ids serially, before the parallel work, took ~4% of a 256-token chunk's
   attention on one thread while the other waited) */
static int visible_prefix(const float *m, int n) {
    int k = 0, after = 0;
    while (k < n && m[k] != -INFINITY) k++;
    for (int j = k; j < n; j++) after |= m[j] != -INFINITY;   /* no early exit: vectorized */
    return !after;
}

void key_plan_init(struct key_plan *p, const float *mask, int R, int L, int pass) {
    const int C = (L + CHUNK - 1) / CHUNK;
    p->L = L; p->R = R; p->C = C;
    p->P = mask && pass > 0 ? L - pass : L;
    p->lo = malloc(sizeof(int) * 2 * (C + 1));
    p->hi = p->lo + C + 1;
    p->chunk = NULL;
    for (int c = 0; c < C; c++) {          /* slot chunks over the keys before the pass */
        p->lo[c] = c * CHUNK < p->P ? c * CHUNK : L;
        p->hi[c] = c * CHUNK < p->P ? ((c + 1) * CHUNK < p->P ? (c + 1) * CHUNK : p->P) : 0;
    }
    const int n = L - p->P;
    int in_place = 1;   /* every row sees a prefix of the pass (a causal prompt chunk, a chain) */
    for (int r = 0; r < R && n > 0 && in_place; r++)
        in_place = visible_prefix(mask + (int64_t)r * L + p->P, n);
    if (n > 0 && !in_place) {
        p->chunk = malloc(sizeof(int16_t) * (int64_t)R * n);
        for (int r = 0; r < R; r++) {
            const float *m = mask + (int64_t)r * L + p->P;
            int16_t *ch = p->chunk + (int64_t)r * n;
            int rank = 0;
            for (int j = 0; j < n; j++) {
                if (m[j] == -INFINITY) { ch[j] = -1; continue; }
                const int c = (p->P + rank++) / CHUNK;
                ch[j] = (int16_t)c;
                if (p->P + j < p->lo[c]) p->lo[c] = p->P + j;
                if (p->P + j + 1 > p->hi[c]) p->hi[c] = p->P + j + 1;
            }
        }
    }
    if (n > 0 && in_place) {
        /* each visible key's position is its slot: the plan is the slots' own, and the rows read
           the mask itself (building every chunk's rows cost a 1,000-token prefill 4%) */
        p->P = L;
        for (int c = 0; c < C; c++) {
            p->lo[c] = c * CHUNK;
            p->hi[c] = (c + 1) * CHUNK < L ? (c + 1) * CHUNK : L;
        }
    }
    p->widest = 0;
    for (int c = 0; c < C; c++) {
        if (p->hi[c] <= p->lo[c]) p->lo[c] = p->hi[c] = 0;   /* no key: every row's partial is empty */
        if (p->hi[c] - p->lo[c] > p->widest) p->widest = p->hi[c] - p->lo[c];
    }
}

void key_plan_free(struct key_plan *p) {
    free(p->lo);
    free(p->chunk);
}

const float *key_plan_rows(const struct key_plan *p, const float *mask, int c, int r0, int rt, float *out) {
    if (!mask || !p->chunk || p->hi[c] <= p->P) return NULL;
    const int lo = p->lo[c], n = p->hi[c] - lo, np = p->L - p->P;
    for (int i = 0; i < rt; i++) {
        const float *m = mask + (int64_t)(r0 + i) * p->L;
        const int16_t *ch = p->chunk + (int64_t)(r0 + i) * np;
        float *o = out + (int64_t)i * n;
        for (int j = 0; j < n; j++) {
            const int slot = lo + j;
            o[j] = slot < p->P ? m[slot] : (ch[slot - p->P] == c ? m[slot] : -INFINITY);
        }
    }
    return out;
}
