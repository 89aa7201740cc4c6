/* hexa's linear on 4-bit weights (AVX2+FMA), for decoding steps and tree verifications.
 *
 * A model shipped as Q4_1 (every block of 32 inputs of an output row is d * q + m, q in 0..15)
 * is converted to fp32 once; a 1-row step then reads 4 bytes per weight and is bound by memory.
 * When every block of a weight is exactly d * q + m again (engine/kernels/quant.py checks it,
 * block by block, before packing), this kernel reads the 4-bit codes instead (0.75 bytes per
 * weight) and rebuilds each weight in registers with the same fp32 operations, a multiply then
 * an add (d * q is exact for these d and q, so only the add rounds, as in the conversion). It
 * therefore sees exactly the fp32 weights, and every y[m][n] is the same FMA chain over k as in
 * packed_gemm.c: the two kernels give identical bits, and which one runs a call never changes a
 * token. Over all 210 projections of SmolLM2-135M: 1 row 9.2 ms (fp32 15.5), 8 rows 19.4 (23.0);
 * from 16 rows on the fp32 kernel is as fast, so more rows go there (Q4_ROWS).
 *
 * Layout, per panel of 16 output columns and per block of 32 inputs (384 bytes, in the order the
 * kernel streams them): d[16] and m[16] as fp32, then 16 pairs of inputs, 16 bytes each, byte c
 * holding column c's code for the even input in its low nibble and for the odd one in its high.
 */
#include <immintrin.h>
#include <stdint.h>

#include "pool.h"

#define PW 16          /* output columns per panel, as in packed_gemm.c */
#define QB 32          /* inputs per quantization block */
#define BLOCK_BYTES (2 * PW * 4 + QB / 2 * PW)
#define GP 6           /* panels per work item */

/* Columns 0-7 and 8-15 of one input's codes (16 bytes, one per column), as fp32 weights. */
static inline void dequant(__m128i codes, const float *d, const float *m, __m256 *w0, __m256 *w1) {
    *w0 = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes)), _mm256_loadu_ps(d)),
                        _mm256_loadu_ps(m));
    *w1 = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8))),
                                      _mm256_loadu_ps(d + 8)), _mm256_loadu_ps(m + 8));
}

#define TILE(MR, NPAN)                                                                            \
static void tile_##MR##_##NPAN(const float *x, const uint8_t *pk, const float *b, const float *res, \
                               float *y, int m0, int p0, int N, int K) {                         \
    __m256 acc[MR][2 * NPAN];                                                                     \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 16") for (int j = 0; j < 2 * NPAN; j++) acc[i][j] = _mm256_setzero_ps(); \
    const float *xr = x + (int64_t)m0 * K;                                                        \
    const int nb = K / QB;                                                                        \
    const __m128i low = _mm_set1_epi8(0x0f);                                                      \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        for (int kk = 0; kk < QB / 2; kk++) {                                                     \
            const int k = blk * QB + 2 * kk;                                                      \
            _Pragma("GCC unroll 16") for (int q = 0; q < NPAN; q++) {                             \
                const uint8_t *bp = pk + ((int64_t)(p0 + q) * nb + blk) * BLOCK_BYTES;             \
                const float *d = (const float *)bp, *m = d + PW;                                  \
                const __m128i both = _mm_loadu_si128((const __m128i *)(bp + 2 * PW * 4) + kk);      \
                __m256 w0, w1;                                                                    \
                dequant(_mm_and_si128(both, low), d, m, &w0, &w1);                                \
                _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                           \
                    const __m256 u = _mm256_broadcast_ss(xr + (int64_t)i * K + k);                \
                    acc[i][2 * q] = _mm256_fmadd_ps(u, w0, acc[i][2 * q]);                        \
                    acc[i][2 * q + 1] = _mm256_fmadd_ps(u, w1, acc[i][2 * q + 1]);                \
                }                                                                                 \
                dequant(_mm_and_si128(_mm_srli_epi16(both, 4), low), d, m, &w0, &w1);             \
                _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                           \
                    const __m256 u = _mm256_broadcast_ss(xr + (int64_t)i * K + k + 1);            \
                    acc[i][2 * q] = _mm256_fmadd_ps(u, w0, acc[i][2 * q]);                        \
                    acc[i][2 * q + 1] = _mm256_fmadd_ps(u, w1, acc[i][2 * q + 1]);                \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 16") for (int q = 0; q < NPAN; q++) {                                 \
            float out[PW];                                                                        \
            _mm256_storeu_ps(out, acc[i][2 * q]);                                                 \
            _mm256_storeu_ps(out + 8, acc[i][2 * q + 1]);                                         \
            for (int j = 0; j < PW; j++) {                                                        \
                const int n = (p0 + q) * PW + j;                                                  \
                if (n >= N) continue;                                                            \
                const int64_t at = (int64_t)(m0 + i) * N + n;                                     \
                const float v = b ? out[j] + b[n] : out[j];                                       \
                y[at] = res ? res[at] + v : v;                                                    \
            }                                                                                     \
        }                                                                                         \
}
TILE(1, 1) TILE(1, 3) TILE(2, 1) TILE(2, 3) TILE(3, 1) TILE(3, 2) TILE(4, 1) TILE(5, 1) TILE(6, 1)

/* Rows [0, M) x panels [p0, p0+np), tiled as in packed_gemm.c: 6-row tiles panel by panel, 1-3
   leftover rows across several panels so the dequantized weights serve more accumulators. */
static void group(const float *x, const uint8_t *pk, const float *b, const float *res, float *y,
                  int M, int p0, int np, int N, int K) {
    const int full = M / 6 * 6, rest = M - full;
    const int wide = rest > 0 && rest <= 3 && np == GP;
    for (int p = p0; p < p0 + np; p++) {
        for (int m = 0; m < full; m += 6) tile_6_1(x, pk, b, res, y, m, p, N, K);
        if (wide) continue;
        switch (rest) {
        case 5: tile_5_1(x, pk, b, res, y, full, p, N, K); break;
        case 4: tile_4_1(x, pk, b, res, y, full, p, N, K); break;
        case 3: tile_3_1(x, pk, b, res, y, full, p, N, K); break;
        case 2: tile_2_1(x, pk, b, res, y, full, p, N, K); break;
        case 1: tile_1_1(x, pk, b, res, y, full, p, N, K); break;
        }
    }
    if (!wide) return;
    if (rest == 1) { tile_1_3(x, pk, b, res, y, full, p0, N, K); tile_1_3(x, pk, b, res, y, full, p0 + 3, N, K); }
    else if (rest == 2) { tile_2_3(x, pk, b, res, y, full, p0, N, K); tile_2_3(x, pk, b, res, y, full, p0 + 3, N, K); }
    else for (int p = p0; p < p0 + GP; p += 2) tile_3_2(x, pk, b, res, y, full, p, N, K);
}

struct q4_job { const float *x; const uint8_t *packed; const float *b, *res; float *y; int M, N, K, P; };

static void q4_group(void *ctx, int g) {
    const struct q4_job *a = ctx;
    const int p0 = g * GP;
    group(a->x, a->packed, a->b, a->res, a->y, a->M, p0, a->P - p0 < GP ? a->P - p0 : GP, a->N, a->K);
}

/* y[M,N] = res[M,N] + (x[M,K] @ w[N,K]^T + b[N]) with w in the 4-bit layout above (K a multiple
   of 32); b and res may be NULL, res may be y itself. */
void hexa_linear_q4(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                    int M, int N, int K, int threads) {
    const int P = (N + PW - 1) / PW;
    struct q4_job a = {x, packed, b, res, y, M, N, K, P};
    hexa_run(q4_group, &a, (P + GP - 1) / GP, threads);
}
