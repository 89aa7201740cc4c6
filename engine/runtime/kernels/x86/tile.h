/* What the x86 linear kernels (packed_gemm.c, quant_gemm.c) share: how a tile's accumulators reach y. */
#ifndef HEXA_TILE_H
#define HEXA_TILE_H

#include <immintrin.h>
#include <stdint.h>

#include "hexa.h"
#include "layout.h"

/* Row m, columns n0 .. n0+15 (those < N): y = res + (acc + b), the bias added last so every
   output stays one FMA chain over the inputs; b and res may be NULL, res may be y. */
static inline void store_panel(__m256 lo, __m256 hi, const float *b, const float *res, float *y,
                               int m, int n0, int N) {
    if (n0 + PW <= N) {   /* a whole panel: the same adds lane by lane (the scalar loop below took
                             ~12% of a 512-bit tile's time in a prefill, perf) */
        const int64_t at = (int64_t)m * N + n0;
        if (b) {
            lo = _mm256_add_ps(lo, _mm256_loadu_ps(b + n0));
            hi = _mm256_add_ps(hi, _mm256_loadu_ps(b + n0 + 8));
        }
        if (res) {
            lo = _mm256_add_ps(_mm256_loadu_ps(res + at), lo);
            hi = _mm256_add_ps(_mm256_loadu_ps(res + at + 8), hi);
        }
        _mm256_storeu_ps(y + at, lo);
        _mm256_storeu_ps(y + at + 8, hi);
        return;
    }
    float out[PW];
    _mm256_storeu_ps(out, lo);
    _mm256_storeu_ps(out + 8, hi);
    for (int j = 0; j < PW && n0 + j < N; j++) {
        const int64_t at = (int64_t)m * N + n0 + j;
        const float v = b ? out[j] + b[n0 + j] : out[j];
        y[at] = res ? res[at] + v : v;
    }
}


#endif
