/* RoPE + the KV cache write (hexa_rope_split), in plain C shared by every ISA: a few multiplies
 * and adds per element that GCC vectorizes by itself, so both ISAs run this one copy and give the
 * same bits (no FMA: -ffp-contract=off). One call per layer, parallel over tokens through the
 * pool; every token is computed alone, in a fixed order (batch invariance, as in glue.c).
 */
#include <math.h>
#include <stdint.h>

#include "half.h"
#include "hexa.h"
#include "pool.h"

struct rope_job {
    const float *qkv, *cos, *sin, *q_norm, *k_norm;
    float *q;
    void *k, *v;            /* the cache: fp32, or fp16 where kv_f16 */
    int M, Hq, Hkv, D, start, kv_f16;
    int64_t head_stride;
    float qscale, eps;
};

/* per-head RMSNorm (qwen3's and gemma3's q/k norm) into t: one head's dims in order, plain C on
   every ISA, so the same bits everywhere */
static const float *head_norm(const float *x, const float *w, int D, float eps, float *t) {
    if (!w) return x;
    float sum = 0.f;
    for (int d = 0; d < D; d++) sum += x[d] * x[d];
    const float r = 1.f / sqrtf(sum / (float)D + eps);
    for (int d = 0; d < D; d++) t[d] = w[d] * (x[d] * r);
    return t;
}

/* rotate-half RoPE of one D-dim head: x*cos + [-x2, x1]*sin, times scale */
static void rope(const float *x, const float *c, const float *s, int D, float scale, float *out) {
    const int h = D / 2;
    for (int d = 0; d < h; d++) {
        out[d] = (x[d] * c[d] + -x[d + h] * s[d]) * scale;
        out[d + h] = (x[d + h] * c[d + h] + x[d] * s[d + h]) * scale;
    }
}

/* one token: q heads -> q[h][m], k heads (rotated) and v heads -> the cache at start + m */
static void rope_row(void *ctx, int m) {
    const struct rope_job *a = ctx;
    const int D = a->D;
    const float *row = a->qkv + (int64_t)m * (a->Hq + 2 * a->Hkv) * D;
    const float *c = a->cos + (int64_t)m * D, *s = a->sin + (int64_t)m * D;
    float t[HEXA_MAX_HEAD_DIM], kr[HEXA_MAX_HEAD_DIM];
    for (int h = 0; h < a->Hq; h++)
        rope(head_norm(row + h * D, a->q_norm, D, a->eps, t), c, s, D, a->qscale, a->q + ((int64_t)h * a->M + m) * D);
    for (int h = 0; h < a->Hkv; h++) {
        const int64_t slot = h * a->head_stride + (int64_t)(a->start + m) * D;
        const float *v = row + (a->Hq + a->Hkv + h) * D;
        if (a->kv_f16) {   /* each value rounded once, to nearest even: the same bits whichever pass wrote it */
            rope(head_norm(row + (a->Hq + h) * D, a->k_norm, D, a->eps, t), c, s, D, 1.f, kr);
            narrow_f16(kr, (uint16_t *)a->k + slot, D);
            narrow_f16(v, (uint16_t *)a->v + slot, D);
            continue;
        }
        rope(head_norm(row + (a->Hq + h) * D, a->k_norm, D, a->eps, t), c, s, D, 1.f, (float *)a->k + slot);
        for (int d = 0; d < D; d++) ((float *)a->v)[slot + d] = v[d];
    }
}

/* qkv [M, (Hq + 2 Hkv) * D] -> q [Hq, M, D] (per-head normed if q_norm, rotated, times qscale);
   k (normed if k_norm, rotated) and v written to cache rows start..start+M-1 (head h row j at
   value h*head_stride + j*D of k and v, fp16 values where kv_f16). */
void hexa_rope_split(const float *qkv, const float *cos, const float *sin, float *q, void *k, void *v,
                     int M, int Hq, int Hkv, int D, int64_t head_stride, int start, float qscale,
                     const float *q_norm, const float *k_norm, float eps, int kv_f16, int threads) {
    struct rope_job a = {qkv, cos, sin, q_norm, k_norm, q, k, v, M, Hq, Hkv, D, start, kv_f16, head_stride, qscale, eps};
    hexa_run(rope_row, &a, M, threads);
}
