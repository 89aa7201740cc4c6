/* RoPE + the KV cache write (hexa_rope_split), in plain C shared by every ISA: a few multiplies
 * and adds per element that GCC vectorizes by itself, so both ISAs run this one copy and give the
 * same bits (no FMA: -ffp-contract=off). One call per layer, parallel over tokens through the
 * pool; every token is computed alone, in a fixed order (batch invariance, as in glue.c).
 */
#include <stdint.h>

#include "hexa.h"
#include "pool.h"

struct rope_job {
    const float *qkv, *cos, *sin;
    float *q, *k, *v;
    int M, Hq, Hkv, start;
    int64_t head_stride;
    float qscale;
};

/* rotate-half RoPE of one 64-dim head: x*cos + [-x2, x1]*sin, times scale (a power of two) */
static void rope64(const float *x, const float *c, const float *s, float scale, float *out) {
    for (int d = 0; d < 32; d++) {
        out[d] = (x[d] * c[d] + -x[d + 32] * s[d]) * scale;
        out[d + 32] = (x[d + 32] * c[d + 32] + x[d] * s[d + 32]) * scale;
    }
}

/* one token: q heads -> q[h][m], k heads (rotated) and v heads -> the cache at start + m */
static void rope_row(void *ctx, int m) {
    const struct rope_job *a = ctx;
    const int D = 64;
    const float *row = a->qkv + (int64_t)m * (a->Hq + 2 * a->Hkv) * D;
    const float *c = a->cos + (int64_t)m * D, *s = a->sin + (int64_t)m * D;
    for (int h = 0; h < a->Hq; h++)
        rope64(row + h * D, c, s, a->qscale, a->q + ((int64_t)h * a->M + m) * D);
    for (int h = 0; h < a->Hkv; h++) {
        const int64_t slot = h * a->head_stride + (int64_t)(a->start + m) * D;
        rope64(row + (a->Hq + h) * D, c, s, 1.f, a->k + slot);
        const float *v = row + (a->Hq + a->Hkv + h) * D;
        for (int d = 0; d < D; d++) a->v[slot + d] = v[d];
    }
}

/* qkv [M, (Hq + 2 Hkv) * 64] -> q [Hq, M, 64] (rotated, times qscale); rotated k and v written to
   cache rows start..start+M-1 (head h row j at k + h*head_stride + j*64). */
void hexa_rope_split(const float *qkv, const float *cos, const float *sin, float *q, float *k, float *v,
                     int M, int Hq, int Hkv, int64_t head_stride, int start, float qscale, int threads) {
    struct rope_job a = {qkv, cos, sin, q, k, v, M, Hq, Hkv, start, head_stride, qscale};
    hexa_run(rope_row, &a, M, threads);
}
