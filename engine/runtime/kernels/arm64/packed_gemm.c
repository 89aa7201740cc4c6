/* hexa's fp32 linear on packed weights (NEON): the ARM64 twin of x86/packed_gemm.c, giving its
 * bits exactly.
 *
 * Layout: hexa_pack's panels (../pack.c), panel[p][k][0..16) = w[16p .. 16p+16)[k]; each k step
 * of a panel is four 4-lane loads. Outputs are accumulated as outer products, a tile of MR input
 * rows x NPAN panels keeping MR * 4 * NPAN accumulators in registers, at most 24 of NEON's 32
 * (tile.h's STEPS). Not timed on ARM hardware yet: only checked under qemu, bit for bit.
 *
 * Same bits as x86: every y[m][n] is one FMA chain over k = 0..K-1 in order, started from zero
 * (vfmaq_f32 is fused like _mm256_fmadd_ps), then store_panel adds the bias and the residual as
 * x86 does. Columns 0-7 / 8-15 of a panel, one ymm each there, are two q registers each here; no
 * lane ever mixes with another, so the split changes nothing. Hence batch invariance too: a row's
 * output never depends on how many rows share the call.
 */
#include <arm_neon.h>
#include <stdint.h>

#include "hexa.h"
#include "pool.h"
#include "tile.h"

/* y rows [m0, m0+MR) x panels [p0, p0+NPAN): the accumulators stay in registers over all of K
   (exact-size arrays, fully unrolled small loops), then reach y through store_panel. */
#define TILE(MR, NPAN)                                                                            \
STEPS(MR, NPAN)                                                                                   \
static void tile_##MR##_##NPAN(const float *x, const float *pr, const float *b, const float *res,  \
                               float *y, int m0, int p0, int N, int K) {                         \
    float32x4_t acc[MR][4 * NPAN];                                                                \
    _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 32") for (int j = 0; j < 4 * NPAN; j++) acc[i][j] = vdupq_n_f32(0.f); \
    steps_##MR##_##NPAN(acc, x + (int64_t)m0 * K, K, pr, (int64_t)K * PW, K);                     \
    _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 32") for (int q = 0; q < NPAN; q++)                                   \
            store_panel(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3],    \
                        b, res, y, m0 + i, (p0 + q) * PW, N);                                     \
}
TILE(1, 1) TILE(1, 3) TILE(2, 1) TILE(2, 2) TILE(3, 1) TILE(4, 1) TILE(5, 1) TILE(6, 1)

/* y rows [0, M) x panels [p0, p0+np), pk pointing at panel p0's data: tiles of 6 rows, one panel
   at a time (the panel stays in cache between them); 3-5 leftover rows likewise; 1-2 leftover
   rows span several panels at once (1 x 3 and 2 x 2 panels: 12 and 16 accumulators, where one
   panel would keep only 4 or 8 FMAs in flight). x86's 1 x 6, 2 x 3 and 3 x 2 tiles need more
   than 32 registers here. quant_gemm.c runs it on panels it has just rebuilt from codes. */
void hexa_f32_group(const float *x, const float *pk, const float *b, const float *res, float *y, int M,
                    int p0, int np, int N, int K) {
    const int full = M / 6 * 6, rest = M - full;
    const int wide = rest > 0 && rest <= 2 && np == GP;
#define PANEL(p) (pk + (int64_t)((p) - p0) * K * PW)
    for (int p = p0; p < p0 + np; p++) {
        for (int m = 0; m < full; m += 6) tile_6_1(x, PANEL(p), b, res, y, m, p, N, K);
        if (wide) continue;
        switch (rest) {
        case 5: tile_5_1(x, PANEL(p), b, res, y, full, p, N, K); break;
        case 4: tile_4_1(x, PANEL(p), b, res, y, full, p, N, K); break;
        case 3: tile_3_1(x, PANEL(p), b, res, y, full, p, N, K); break;
        case 2: tile_2_1(x, PANEL(p), b, res, y, full, p, N, K); break;
        case 1: tile_1_1(x, PANEL(p), b, res, y, full, p, N, K); break;
        }
    }
    if (!wide) return;
    if (rest == 1) for (int p = p0; p < p0 + GP; p += 3) tile_1_3(x, PANEL(p), b, res, y, full, p, N, K);
    else for (int p = p0; p < p0 + GP; p += 2) tile_2_2(x, PANEL(p), b, res, y, full, p, N, K);
#undef PANEL
}

/* x86's 1-3 row calls read fp16 / bf16 panels straight (packed_gemm.c there); here every call
   widens them into a buffer first (linear.c): the same bits. Not timed on ARM hardware. */
int hexa_half_group(const float *x, const uint16_t *pk, int bits, const float *b, const float *res, float *y,
                    int M, int p0, int np, int N, int K) {
    (void)x, (void)pk, (void)bits, (void)b, (void)res, (void)y, (void)M, (void)p0, (void)np, (void)N, (void)K;
    return 0;
}
