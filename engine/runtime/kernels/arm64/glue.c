/* The per-layer glue between the projections, fused: RMSNorm, SiLU·up (NEON); RoPE + the KV
 * cache write is plain C, shared with x86 (../rope.c).
 *
 * The NEON twin of x86/glue.c: one call per layer, parallel over rows through the pool, every
 * row computed alone in a fixed order (batch invariance), and every output the same sequence of
 * IEEE operations as there, so ARM64 and x86 give the same bits. An x86 8-lane vector is two
 * 4-lane vectors here: lanes 0-3 and 4-7 keep their elements.
 */
#include <arm_neon.h>
#include <math.h>
#include <stdint.h>

#include "hexa.h"
#include "pool.h"
#include "vexp.h"

struct rms_job { const float *x, *w; float *out; int D; float eps; };

/* out = w * (x * (1 / sqrt(mean(x^2) + eps))), torch's order of operations; the squares summed
   in 8 lanes (x86's), then the lanes in order, then the tail */
static void rms_row(void *ctx, int m) {
    const struct rms_job *a = ctx;
    const float *x = a->x + (int64_t)m * a->D;
    float *out = a->out + (int64_t)m * a->D;
    float32x4_t acc0 = vdupq_n_f32(0.f), acc1 = vdupq_n_f32(0.f);
    int d = 0;
    for (; d + 8 <= a->D; d += 8) {
        const float32x4_t v0 = vld1q_f32(x + d), v1 = vld1q_f32(x + d + 4);
        acc0 = vaddq_f32(acc0, vmulq_f32(v0, v0));
        acc1 = vaddq_f32(acc1, vmulq_f32(v1, v1));
    }
    float lanes[8], sum = 0.f;
    vst1q_f32(lanes, acc0);
    vst1q_f32(lanes + 4, acc1);
    for (int i = 0; i < 8; i++) sum += lanes[i];
    for (; d < a->D; d++) sum += x[d] * x[d];
    const float r = 1.f / sqrtf(sum / (float)a->D + a->eps);
    for (d = 0; d < a->D; d++) out[d] = a->w[d] * (x[d] * r);
}

void hexa_rmsnorm(const float *x, const float *w, float *out, int M, int D, float eps, int threads) {
    struct rms_job a = {x, w, out, D, eps};
    hexa_run(rms_row, &a, M, threads);
}

struct silu_job { const float *gu; float *out; int F; };

/* silu(g) * u = g / (1 + exp(-g)) * u for 4 lanes */
static inline float32x4_t silu4(float32x4_t g, float32x4_t u) {
    const float32x4_t den = vaddq_f32(vdupq_n_f32(1.f), exp4(vnegq_f32(g)));   /* fneg: x86's xor with -0 */
    return vmulq_f32(vdivq_f32(g, den), u);
}

/* out = act(g) * u for a row [g | u] of width 2F, 4 lanes at a time (each lane is its own: x86's
   8-lane bits); the tail through the same
   lanes, zero-padded */
#define ACT_ROW(NAME, ACT)                                                                        \
static void NAME(void *ctx, int m) {                                                             \
    const struct silu_job *a = ctx;                                                               \
    const float *g = a->gu + (int64_t)m * 2 * a->F, *u = g + a->F;                                \
    float *out = a->out + (int64_t)m * a->F;                                                      \
    int j = 0;                                                                                    \
    for (; j + 4 <= a->F; j += 4) vst1q_f32(out + j, ACT(vld1q_f32(g + j), vld1q_f32(u + j)));          \
    if (j < a->F) {                                                                              \
        float gt[4] = {0}, ut[4] = {0}, ot[4];                                               \
        for (int t = 0; j + t < a->F; t++) { gt[t] = g[j + t]; ut[t] = u[j + t]; }                 \
        vst1q_f32(ot, ACT(vld1q_f32(gt), vld1q_f32(ut)));                                                 \
        for (int t = 0; j + t < a->F; t++) out[j + t] = ot[t];                                    \
    }                                                                                            \
}
ACT_ROW(silu_row, silu4)

void hexa_silu_mul(const float *gu, float *out, int M, int F, int threads) {
    struct silu_job a = {gu, out, F};
    hexa_run(silu_row, &a, M, threads);
}

/* x86/glue.c's gelu8, 4 lanes at a time */
static inline float32x4_t gelu4(float32x4_t g, float32x4_t u) {
    const float32x4_t g3 = vmulq_f32(vmulq_f32(g, g), g);
    const float32x4_t z = vmulq_f32(vaddq_f32(g, vmulq_f32(vdupq_n_f32(0.044715f), g3)), vdupq_n_f32(0.7978845608f));
    const float32x4_t e = exp4(vaddq_f32(z, z)), one = vdupq_n_f32(1.f);
    const float32x4_t th = vsubq_f32(one, vdivq_f32(vdupq_n_f32(2.f), vaddq_f32(e, one)));
    return vmulq_f32(vmulq_f32(vmulq_f32(vdupq_n_f32(0.5f), g), vaddq_f32(one, th)), u);
}

ACT_ROW(gelu_row, gelu4)

void hexa_gelu_mul(const float *gu, float *out, int M, int F, int threads) {
    struct silu_job a = {gu, out, F};
    hexa_run(gelu_row, &a, M, threads);
}
