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

/* The fp32 tiles' inner loop (packed_gemm.c, and quant_gemm.c on weights it has rebuilt):
   acc[i][4q + j] += x[i][k] * w_q[k][4j .. 4j+3] for k = 0 .. kn-1 in order, rows i < MR <= 8 of
   x (ldx floats apart), panels q < NPAN (w_q = pr + q * ldp, PW floats per k). One FMA per
   element and input, as x86's tiles do. A step's MR inputs are gathered into the lanes of one or
   two registers (x86 broadcasts one per row): a 6-row tile then needs 24 accumulators, 4 weights
   and 2 inputs, within NEON's 32 registers even when GCC hoists all of a step's loads (with one
   register per row it spilled accumulators on every step). Rows are spelled out, not looped:
   clang wants every lane index to be a constant expression. */
#define STEP_X(MR, i)                                                                             \
    if ((i) < MR) xv[(i) / 4] = vld1q_lane_f32(x + (i) * ldx + k, xv[(i) / 4], (i) % 4);
#define STEP_FMA(MR, i)                                                                           \
    if ((i) < MR)                                                                                 \
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)                                       \
            acc[(i) % MR][4 * q + j] = vfmaq_laneq_f32(acc[(i) % MR][4 * q + j], wv[j], xv[(i) / 4], (i) % 4);
#define STEPS(MR, NPAN)                                                                           \
static inline void steps_##MR##_##NPAN(float32x4_t acc[MR][4 * NPAN], const float *x, int64_t ldx, \
                                       const float *pr, int64_t ldp, int kn) {                    \
    for (int k = 0; k < kn; k++) {                                                                \
        float32x4_t xv[2] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f)};                                 \
        STEP_X(MR, 0) STEP_X(MR, 1) STEP_X(MR, 2) STEP_X(MR, 3)                                   \
        STEP_X(MR, 4) STEP_X(MR, 5) STEP_X(MR, 6) STEP_X(MR, 7)                                   \
        _Pragma("GCC unroll 8") for (int q = 0; q < NPAN; q++) {                                  \
            const float *wp = pr + q * ldp + (int64_t)k * PW;                                     \
            float32x4_t wv[4];                                                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) wv[j] = vld1q_f32(wp + 4 * j);    \
            STEP_FMA(MR, 0) STEP_FMA(MR, 1) STEP_FMA(MR, 2) STEP_FMA(MR, 3)                       \
            STEP_FMA(MR, 4) STEP_FMA(MR, 5) STEP_FMA(MR, 6) STEP_FMA(MR, 7)                       \
        }                                                                                         \
    }                                                                                             \
}


#endif
