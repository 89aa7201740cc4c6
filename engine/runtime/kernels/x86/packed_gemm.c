/* hexa's fp32 linear on packed weights (AVX2+FMA): every decoding step, tree verification and
 * prefill chunk of the torch backend goes through it.
 *
 * Layout: a weight [N, K] is packed once, at load (hexa_pack, ../pack.c), into panels of 16
 * output columns, panel[p][k][0..16) = w[16p .. 16p+16)[k], so a panel streams through memory in
 * order and each k step is two 8-lane loads. Outputs are accumulated as outer products: a tile of
 * MR input rows x NPAN panels keeps MR * 2 * NPAN accumulators in registers (at most 12 of the 16
 * ymm registers).
 * Measured on the 2-core EPYC over all 121 projections of SmolLM2-135M: 12.7-17 ms for 1 row
 * (the library kernels and the previous row-dot kernel took 20-24), 30 ms for 8 rows (36-46),
 * and faster than oneDNN for 256-row prefill chunks (1.9 against 2.2 ms per row).
 *
 * Batch invariance: every y[m][n] is one FMA chain over k = 0..K-1 in order, started from zero,
 * whatever tile computes it; the bias is added last. So a row's output never depends on how many
 * rows share the call — tree verification reproduces plain greedy decoding bit for bit.
 */
#include <immintrin.h>
#include <stdint.h>

#include "hexa.h"
#include "pool.h"
#include "tile.h"

/* y rows [m0, m0+MR) x panels [p0, p0+NPAN). Exact-size arrays and fully unrolled small loops,
   so GCC keeps the accumulators in registers (with a shared bigger array it stored them to the
   stack on every k step, which cost 40%). */
#define TILE_OF(NAME, T, LOAD, MR, NPAN)                                                          \
static void NAME##_##MR##_##NPAN(const float *x, const T *pr, const float *b, const float *res,    \
                                 float *y, int m0, int p0, int N, int K) {                       \
    __m256 acc[MR][2 * NPAN];                                                                     \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 16") for (int j = 0; j < 2 * NPAN; j++) acc[i][j] = _mm256_setzero_ps(); \
    const float *xr = x + (int64_t)m0 * K;                                                        \
    for (int k = 0; k < K; k++) {                                                                 \
        __m256 wv[2 * NPAN];                                                                      \
        _Pragma("GCC unroll 16") for (int q = 0; q < NPAN; q++) {                                 \
            wv[2 * q] = LOAD(pr + ((int64_t)q * K + k) * PW);                                     \
            wv[2 * q + 1] = LOAD(pr + ((int64_t)q * K + k) * PW + 8);                             \
        }                                                                                         \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                                   \
            __m256 u = _mm256_broadcast_ss(xr + (int64_t)i * K + k);                              \
            _Pragma("GCC unroll 16") for (int j = 0; j < 2 * NPAN; j++)                           \
                acc[i][j] = _mm256_fmadd_ps(u, wv[j], acc[i][j]);                                 \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 16") for (int q = 0; q < NPAN; q++)                                   \
            store_panel(acc[i][2 * q], acc[i][2 * q + 1], b, res, y, m0 + i, (p0 + q) * PW, N);   \
}
#define TILE(MR, NPAN) TILE_OF(tile, float, _mm256_loadu_ps, MR, NPAN)
/* the same tiles over panels of fp16 / bf16 values, widened as they are loaded (exactly) */
#define LOAD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOAD_BF16(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define HALF_TILES(MR, NPAN) TILE_OF(f16, uint16_t, LOAD_F16, MR, NPAN) TILE_OF(bf16, uint16_t, LOAD_BF16, MR, NPAN)
HALF_TILES(1, 1) HALF_TILES(1, 6) HALF_TILES(2, 1) HALF_TILES(2, 3) HALF_TILES(3, 1) HALF_TILES(3, 2)
TILE(1, 1) TILE(1, 6) TILE(2, 1) TILE(2, 3) TILE(3, 1) TILE(3, 2) TILE(4, 1) TILE(5, 1) TILE(6, 1)

/* y rows [0, M) x panels [p0, p0+np), pk pointing at panel p0's data: tiles of 6 rows, one panel
   at a time (the panel stays in cache between them); 4-5 leftover rows likewise; 1-3 leftover rows
   span several panels at once, so they still keep 12 accumulators busy (a 2-row tile on one panel
   has only 4: at 8 rows, the 6 + 2 split cost 39 ms over all projections against 27 ms for 6
   rows). quant_gemm.c runs it on panels it has just rebuilt from codes. */
void hexa_f32_group(const float *x, const float *pk, const float *b, const float *res, float *y, int M,
                    int p0, int np, int N, int K) {
    const int full = M / 6 * 6, rest = M - full;
    const int wide = rest > 0 && rest <= 3 && np == GP;
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
    if (rest == 1) tile_1_6(x, PANEL(p0), b, res, y, full, p0, N, K);
    else if (rest == 2) { tile_2_3(x, PANEL(p0), b, res, y, full, p0, N, K); tile_2_3(x, PANEL(p0 + 3), b, res, y, full, p0 + 3, N, K); }
    else for (int p = p0; p < p0 + GP; p += 2) tile_3_2(x, PANEL(p), b, res, y, full, p, N, K);
#undef PANEL
}

/* hexa_f32_group's 1-3 row calls (decoding steps, small trees) straight from fp16 / bf16 panels:
   the widened panel of a work item was written and read again per call, which cost a 1-row step
   as much as the bytes it saved (an F16 SmolLM2-135M decoded 54 tok/s from a buffer, 87 loading
   them widened). Returns 0 (the caller widens into a buffer) for 4 rows or more. */
#define HALF_GROUP(T)                                                                             \
static void T##_group(const float *x, const uint16_t *pk, const float *b, const float *res, float *y, int M, \
                      int p0, int np, int N, int K) {                                             \
    if (np == GP && M == 1) T##_1_6(x, pk, b, res, y, 0, p0, N, K);                               \
    else if (np == GP && M == 2)                                                                  \
        for (int p = p0; p < p0 + GP; p += 3) T##_2_3(x, PANEL_AT(p), b, res, y, 0, p, N, K);      \
    else if (np == GP)                                                                            \
        for (int p = p0; p < p0 + GP; p += 2) T##_3_2(x, PANEL_AT(p), b, res, y, 0, p, N, K);      \
    else for (int p = p0; p < p0 + np; p++) {                                                     \
        if (M == 1) T##_1_1(x, PANEL_AT(p), b, res, y, 0, p, N, K);                               \
        else if (M == 2) T##_2_1(x, PANEL_AT(p), b, res, y, 0, p, N, K);                          \
        else T##_3_1(x, PANEL_AT(p), b, res, y, 0, p, N, K);                                      \
    }                                                                                             \
}
#define PANEL_AT(p) (pk + (int64_t)((p) - p0) * K * PW)
HALF_GROUP(f16) HALF_GROUP(bf16)
#undef PANEL_AT

int hexa_half_group(const float *x, const uint16_t *pk, int bits, const float *b, const float *res, float *y,
                    int M, int p0, int np, int N, int K) {
    if (M > 3) return 0;
    if (bits == HEXA_PANELS_BF16) bf16_group(x, pk, b, res, y, M, p0, np, N, K);
    else f16_group(x, pk, b, res, y, M, p0, np, N, K);
    return 1;
}
