/* The per-layer glue between the projections, fused: RMSNorm, SiLU·up (AVX2); RoPE + the KV
 * cache write is plain C, shared with ARM64 (../rope.c).
 *
 * In torch this glue was ~25 small ops per layer (~800 per decoding step, several ms of a ~30 ms
 * step in dispatch alone) and, in prefill chunks, elementwise passes each waking OpenMP's
 * workers. Each function here is one call per layer, parallel over rows through the pool. Every
 * row is computed alone, in a fixed order, so results never depend on how many rows share a call
 * (batch invariance, as in packed_gemm.c).
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "hexa.h"
#include "pool.h"
#include "vexp.h"

struct rms_job { const float *x, *w; float *out; int D; float eps; };

/* out = w * (x * (1 / sqrt(mean(x^2) + eps))), torch's order of operations */
static void rms_row(void *ctx, int m) {
    const struct rms_job *a = ctx;
    const float *x = a->x + (int64_t)m * a->D;
    float *out = a->out + (int64_t)m * a->D;
    __m256 acc = _mm256_setzero_ps();
    int d = 0;
    for (; d + 8 <= a->D; d += 8) {
        const __m256 v = _mm256_loadu_ps(x + d);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(v, v));
    }
    float lanes[8], sum = 0.f;
    _mm256_storeu_ps(lanes, acc);
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

/* silu(g) * u = g / (1 + exp(-g)) * u for 8 lanes. exp8, not libm's expf: expf per element was
   5% of a prefill's time (perf, 800-token prompt); every lane's result is still its own, so a row
   never depends on its neighbours. */
static inline __m256 silu8(__m256 g, __m256 u) {
    const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.f), exp8(_mm256_xor_ps(g, _mm256_set1_ps(-0.f))));
    return _mm256_mul_ps(_mm256_div_ps(g, den), u);
}

/* out = act(g) * u for a row [g | u] of width 2F, 8 lanes at a time; the tail through the same
   lanes, zero-padded */
#define ACT_ROW(NAME, ACT)                                                                        \
static void NAME(void *ctx, int m) {                                                             \
    const struct silu_job *a = ctx;                                                               \
    const float *g = a->gu + (int64_t)m * 2 * a->F, *u = g + a->F;                                \
    float *out = a->out + (int64_t)m * a->F;                                                      \
    int j = 0;                                                                                    \
    for (; j + 8 <= a->F; j += 8) _mm256_storeu_ps(out + j, ACT(_mm256_loadu_ps(g + j), _mm256_loadu_ps(u + j)));          \
    if (j < a->F) {                                                                              \
        float gt[8] = {0}, ut[8] = {0}, ot[8];                                               \
        for (int t = 0; j + t < a->F; t++) { gt[t] = g[j + t]; ut[t] = u[j + t]; }                 \
        _mm256_storeu_ps(ot, ACT(_mm256_loadu_ps(gt), _mm256_loadu_ps(ut)));                                                 \
        for (int t = 0; j + t < a->F; t++) out[j + t] = ot[t];                                    \
    }                                                                                            \
}
ACT_ROW(silu_row, silu8)

void hexa_silu_mul(const float *gu, float *out, int M, int F, int threads) {
    struct silu_job a = {gu, out, F};
    hexa_run(silu_row, &a, M, threads);
}

/* GELU (tanh form, as gemma3's gelu_pytorch_tanh) of g, times u: 0.5 g (1 + tanh(z)),
   z = sqrt(2/pi) (g + 0.044715 g^3), tanh(z) = 1 - 2 / (exp(2z) + 1) on exp8 (arm64/glue.c
   repeats these operations 4 lanes at a time: the same bits) */
static inline __m256 gelu8(__m256 g, __m256 u) {
    const __m256 g3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
    const __m256 z = _mm256_mul_ps(_mm256_add_ps(g, _mm256_mul_ps(_mm256_set1_ps(0.044715f), g3)),
                                   _mm256_set1_ps(0.7978845608f));
    const __m256 e = exp8(_mm256_add_ps(z, z)), one = _mm256_set1_ps(1.f);
    const __m256 th = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, one)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), g), _mm256_add_ps(one, th)), u);
}

ACT_ROW(gelu_row, gelu8)

void hexa_gelu_mul(const float *gu, float *out, int M, int F, int threads) {
    struct silu_job a = {gu, out, F};
    hexa_run(gelu_row, &a, M, threads);
}
