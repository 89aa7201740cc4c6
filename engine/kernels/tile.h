/* What the linear kernels (packed_gemm.c, quant_gemm.c) share: how a tile's accumulators reach y. */
#ifndef HEXA_TILE_H
#define HEXA_TILE_H

#include <immintrin.h>
#include <stdint.h>

#include "hexa.h"

#define PW HEXA_PANEL   /* panel width: output columns per packed panel */
#define GP 6    /* panels per work item */

/* The codes' layout (quant_gemm.c packs it; quant_gemm.c and quant_dot.c read it), per panel and
   block of 32 inputs: Q4_1 d[16] and m[16] as fp32, then 16 bytes per input pair; Q8_0 d[16], then
   16 bytes per input. */
#define QB HEXA_QUANT_BLOCK               /* inputs per quantization block */
#define Q4_HEAD (2 * PW * 4)              /* d[16], m[16] */
#define Q4_BYTES (Q4_HEAD + QB / 2 * PW)  /* + 16 bytes per input pair */
#define Q8_HEAD (PW * 4)                  /* d[16] */
#define Q8_BYTES (Q8_HEAD + QB * PW)      /* + 16 bytes per input */

/* Row m, columns n0 .. n0+15 (those < N): y = res + (acc + b), the bias added last so every
   output stays one FMA chain over the inputs; b and res may be NULL, res may be y. */
static inline void store_panel(__m256 lo, __m256 hi, const float *b, const float *res, float *y,
                               int m, int n0, int N) {
    float out[PW];
    _mm256_storeu_ps(out, lo);
    _mm256_storeu_ps(out + 8, hi);
    for (int j = 0; j < PW && n0 + j < N; j++) {
        const int64_t at = (int64_t)m * N + n0 + j;
        const float v = b ? out[j] + b[n0 + j] : out[j];
        y[at] = res ? res[at] + v : v;
    }
}

/* packed_gemm.c's tiles over rows [0, M) x panels [p0, p0+np), pk pointing at panel p0 (internal) */
__attribute__((visibility("hidden"))) void hexa_f32_group(const float *x, const float *pk, const float *b, const float *res, float *y, int M,
                    int p0, int np, int N, int K);

#endif
