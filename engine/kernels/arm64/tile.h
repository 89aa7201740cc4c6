/* What the ARM64 linear kernels (packed_gemm.c, quant_gemm.c, quant_dot.c) share: how a tile's
   accumulators reach y. The NEON twin of x86/tile.h: a panel's 16 columns are four 4-lane
   vectors here, two 8-lane ones there; the stores and the order of the adds are the same. */
#ifndef HEXA_TILE_H
#define HEXA_TILE_H

#include <arm_neon.h>
#include <stdint.h>

#include "hexa.h"
#include "layout.h"

/* Row m, columns n0 .. n0+15 (those < N): y = res + (acc + b), the bias added last so every
   output stays one FMA chain over the inputs; b and res may be NULL, res may be y. */
static inline void store_panel(float32x4_t c0, float32x4_t c1, float32x4_t c2, float32x4_t c3,
                               const float *b, const float *res, float *y, int m, int n0, int N) {
    float out[PW];
    vst1q_f32(out, c0);
    vst1q_f32(out + 4, c1);
    vst1q_f32(out + 8, c2);
    vst1q_f32(out + 12, c3);
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
