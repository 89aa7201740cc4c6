/* hexa's linear on Q4_1 and Q8_0 codes (AVX2+FMA), for decoding steps and tree verifications.
 *
 * A model shipped as Q4_1 (every block of 32 inputs of an output row is d * q + m, q in 0..15)
 * is converted to fp32 once; a 1-row step then reads 4 bytes per weight and is bound by memory.
 * When every block of a weight is exactly d * q + m again (hexa_pack_quant in ../pack.c finds d,
 * m and q and checks it, block by block), this kernel reads the 4-bit codes instead (0.75 bytes
 * per weight) and rebuilds each weight in registers with the same fp32 operations, a multiply then
 * an add (d * q is exact for these d and q, so only the add rounds, as in the conversion). It
 * therefore sees exactly the fp32 weights, and every y[m][n] is the same FMA chain over k as in
 * packed_gemm.c: the two kernels give identical bits, and which one runs a call never changes a
 * token. Over all 210 projections of SmolLM2-135M: 1 row 9.2 ms (fp32 15.5), 8 rows 19.4 (23.0);
 * from 16 rows on the fp32 kernel is as fast, so more rows go there (QUANT_ROWS). Q8_0 (w = d * q,
 * the tied output head of SmolLM2) works the same way with signed 8-bit codes.
 *
 * Layout, per panel of 16 output columns and per block of 32 inputs, in the order the kernel
 * streams them: Q4_1 (384 bytes) d[16] and m[16] as fp32, then 16 pairs of inputs, 16 bytes each,
 * byte c holding column c's code for the even input in its low nibble and for the odd one in its
 * high; Q8_0 (576 bytes) d[16] as fp32, then 32 inputs, 16 bytes each, byte c column c's code.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>

#include "hexa.h"
#include "pool.h"
#include "codes.h"
#include "tile.h"

/* Columns 0-7 and 8-15 of one input, from 16 unsigned codes (one byte per column): d * q + m. */
static inline void dequant4(__m128i codes, const float *d, const float *m, __m256 *w) {
    w[0] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes)), _mm256_loadu_ps(d)),
                         _mm256_loadu_ps(m));
    w[1] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8))),
                                       _mm256_loadu_ps(d + 8)), _mm256_loadu_ps(m + 8));
}

/* Inputs 2kk and 2kk+1 of a Q4_1 block (its head hd as fp32, layout.h's block_head, its codes at
   cp): w[0..1] for the even input, w[2..3] for the odd one. */
static inline void pair_q4(const float *hd, const uint8_t *cp, int kk, __m256 *w) {
    const float *d = hd, *m = d + PW;
    const __m128i both = _mm_loadu_si128((const __m128i *)cp + kk), low = _mm_set1_epi8(0x0f);
    dequant4(_mm_and_si128(both, low), d, m, w);
    dequant4(_mm_and_si128(_mm_srli_epi16(both, 4), low), d, m, w + 2);
}

/* The same for a Q8_0 block: signed codes, one byte each, and d * q (exact: no rounding at all). */
static inline void pair_q8(const float *hd, const uint8_t *cp, int kk, __m256 *w) {
    const float *d = hd;
    const __m128i *c = (const __m128i *)cp + 2 * kk;
    for (int h = 0; h < 2; h++) {
        const __m128i codes = _mm_loadu_si128(c + h);
        w[2 * h] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes)), _mm256_loadu_ps(d));
        w[2 * h + 1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(codes, 8))),
                                     _mm256_loadu_ps(d + 8));
    }
}

/* Layout 7's 8-bit codes (layout.h): d * q + m, with the d of the input's half of the block */
static inline void pair_q7(const float *hd, const uint8_t *cp, int kk, __m256 *w) {
    const float *d = hd + (2 * kk >= QB / 2 ? PW : 0), *m = hd + MIN_AT(7);
    const __m128i *c = (const __m128i *)cp + 2 * kk;
    for (int h = 0; h < 2; h++) {
        const __m128i codes = _mm_loadu_si128(c + h);
        w[2 * h] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes)), _mm256_loadu_ps(d)),
                                 _mm256_loadu_ps(m));
        w[2 * h + 1] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(codes, 8))),
                                                   _mm256_loadu_ps(d + 8)), _mm256_loadu_ps(m + 8));
    }
}

/* The planes and layouts 3, 2 (layout.h: 5 Q5_1/Q5_K d * q + m, 9 Q5_0 d * q, 6 Q6_K and 3 Q3_K d * q with the d of the
   input's half, 2 Q2_K d * q + m with the d and m of the input's half), from the block's codes u decoded into [input][column] bytes (codes.h's
   block_codes): q = u - CODE_OFFSET in integers, then the same fp32 operations as the bytes took */
static inline void pair_pl(const float *hd, const uint8_t *u, int kk, __m256 *w, int bits) {
    const float *d = hd + (SPLIT_SCALE(bits) && 2 * kk >= QB / 2 ? PW : 0);
    const float *m = hd + (MIN_AT(bits) >= 0 ? MIN_OF(bits, 2 * kk) : 0);
    const __m256i off = _mm256_set1_epi32(CODE_OFFSET(bits));
    const __m128i *c = (const __m128i *)u + 2 * kk;
    for (int h = 0; h < 2; h++) {
        const __m128i codes = _mm_loadu_si128(c + h);
        const __m256i q0 = _mm256_sub_epi32(_mm256_cvtepu8_epi32(codes), off);
        const __m256i q1 = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8)), off);
        w[2 * h] = _mm256_mul_ps(_mm256_cvtepi32_ps(q0), _mm256_loadu_ps(d));
        w[2 * h + 1] = _mm256_mul_ps(_mm256_cvtepi32_ps(q1), _mm256_loadu_ps(d + 8));
        if (MIN_AT(bits) >= 0) {
            w[2 * h] = _mm256_add_ps(w[2 * h], _mm256_loadu_ps(m));
            w[2 * h + 1] = _mm256_add_ps(w[2 * h + 1], _mm256_loadu_ps(m + 8));
        }
    }
}
static inline void pair_q5(const float *hd, const uint8_t *u, int kk, __m256 *w) { pair_pl(hd, u, kk, w, 5); }
static inline void pair_q6(const float *hd, const uint8_t *u, int kk, __m256 *w) { pair_pl(hd, u, kk, w, 6); }
static inline void pair_q9(const float *hd, const uint8_t *u, int kk, __m256 *w) { pair_pl(hd, u, kk, w, 9); }
static inline void pair_q3(const float *hd, const uint8_t *u, int kk, __m256 *w) { pair_pl(hd, u, kk, w, 3); }
static inline void pair_q2(const float *hd, const uint8_t *u, int kk, __m256 *w) { pair_pl(hd, u, kk, w, 2); }

#define TILE(FMT, MR, NPAN)                                                                       \
static void tile_##FMT##_##MR##_##NPAN(const float *x, const uint8_t *pk, const float *b,          \
                                       const float *res, float *y, int m0, int p0, int N, int K,  \
                                       int bits) {                                                \
    __m256 acc[MR][2 * NPAN];                                                                     \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 16") for (int j = 0; j < 2 * NPAN; j++) acc[i][j] = _mm256_setzero_ps(); \
    const float *xr = x + (int64_t)m0 * K;                                                        \
    const int nb = K / QB;                                                                        \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        float tmp[NPAN][HEAD_MAX * PW];                                                                  \
        const float *hd[NPAN];                                                                    \
        const uint8_t *cp[NPAN];                                                                  \
        _Alignas(32) uint8_t u[NPAN][QB * PW];                                                    \
        for (int q = 0; q < NPAN; q++) {                                                          \
            hd[q] = block_head(pk, bits, nb, p0 + q, blk, tmp[q]);                                \
            cp[q] = block_at(pk, bits, nb, p0 + q, blk) + CODE_HEAD(bits);                        \
            const uint8_t *own = block_bytes(cp[q], bits, u[q]);                                  \
            if (own) cp[q] = own;                                                                 \
        }                                                                                         \
        for (int kk = 0; kk < QB / 2; kk++) {                                                     \
            const int k = blk * QB + 2 * kk;                                                      \
            _Pragma("GCC unroll 16") for (int q = 0; q < NPAN; q++) {                             \
                __m256 w[4];                                                                      \
                pair_##FMT(hd[q], cp[q], kk, w);                                                  \
                _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                           \
                    const __m256 u0 = _mm256_broadcast_ss(xr + (int64_t)i * K + k);               \
                    const __m256 u1 = _mm256_broadcast_ss(xr + (int64_t)i * K + k + 1);           \
                    acc[i][2 * q] = _mm256_fmadd_ps(u1, w[2], _mm256_fmadd_ps(u0, w[0], acc[i][2 * q])); \
                    acc[i][2 * q + 1] = _mm256_fmadd_ps(u1, w[3], _mm256_fmadd_ps(u0, w[1], acc[i][2 * q + 1])); \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 16") for (int q = 0; q < NPAN; q++)                                   \
            store_panel(acc[i][2 * q], acc[i][2 * q + 1], b, res, y, m0 + i, (p0 + q) * PW, N);   \
}
#define TILES(FMT) TILE(FMT, 1, 1) TILE(FMT, 1, 3) TILE(FMT, 2, 1) TILE(FMT, 2, 3) TILE(FMT, 3, 1) \
                   TILE(FMT, 3, 2) TILE(FMT, 4, 1) TILE(FMT, 5, 1) TILE(FMT, 6, 1)
TILES(q4) TILES(q8) TILES(q5) TILES(q6) TILES(q7) TILES(q9) TILES(q3) TILES(q2)

/* Rows [0, M) x panels [p0, p0+np), tiled as in packed_gemm.c: 6-row tiles panel by panel, 1-3
   leftover rows across several panels so the dequantized weights serve more accumulators. */
#define GROUP(FMT)                                                                                \
static void group_##FMT(const float *x, const uint8_t *pk, const float *b, const float *res,      \
                        float *y, int M, int p0, int np, int N, int K, int bits) {                \
    const int full = M / 6 * 6, rest = M - full;                                                  \
    const int wide = rest > 0 && rest <= 3 && np == GP;                                           \
    for (int p = p0; p < p0 + np; p++) {                                                          \
        for (int m = 0; m < full; m += 6) tile_##FMT##_6_1(x, pk, b, res, y, m, p, N, K, bits);        \
        if (wide) continue;                                                                       \
        switch (rest) {                                                                           \
        case 5: tile_##FMT##_5_1(x, pk, b, res, y, full, p, N, K, bits); break;                         \
        case 4: tile_##FMT##_4_1(x, pk, b, res, y, full, p, N, K, bits); break;                         \
        case 3: tile_##FMT##_3_1(x, pk, b, res, y, full, p, N, K, bits); break;                         \
        case 2: tile_##FMT##_2_1(x, pk, b, res, y, full, p, N, K, bits); break;                         \
        case 1: tile_##FMT##_1_1(x, pk, b, res, y, full, p, N, K, bits); break;                         \
        }                                                                                         \
    }                                                                                             \
    if (!wide) return;                                                                            \
    if (rest == 3) { for (int p = p0; p < p0 + GP; p += 2) tile_##FMT##_3_2(x, pk, b, res, y, full, p, N, K, bits); return; } \
    for (int p = p0; p < p0 + GP; p += 3) {                                                       \
        if (rest == 1) tile_##FMT##_1_3(x, pk, b, res, y, full, p, N, K, bits);                         \
        else tile_##FMT##_2_3(x, pk, b, res, y, full, p, N, K, bits);                                   \
    }                                                                                             \
}                                                                                                 \
static void run_##FMT(void *ctx, int g) {                                                         \
    const struct quant_job *a = ctx;                                                              \
    const int p0 = g * GP;                                                                        \
    group_##FMT(a->x, a->packed, a->b, a->res, a->y, a->M, p0, a->P - p0 < GP ? a->P - p0 : GP, a->N, a->K, a->bits); \
}

struct quant_job { const float *x; const uint8_t *packed; const float *b, *res; float *y; int M, N, K, P, bits; };
GROUP(q4) GROUP(q8) GROUP(q5) GROUP(q6) GROUP(q7) GROUP(q9) GROUP(q3) GROUP(q2)

/* More rows than HEXA_QUANT_ROWS (prefill chunks, where the codes are the only copy of a weight):
   rebuild a work item's panels into the fp32 panel layout once, in a per-thread buffer, and run
   packed_gemm.c's tiles on them. The rebuilt weights are the fp32 weights bit for bit (the same
   multiply and add as above), so the result is again packed_gemm.c's, and the rebuild is paid
   once per chunk instead of once per 6 rows. */
#define REBUILD(FMT)                                                                              \
static void rebuild_##FMT(const uint8_t *pk, int p0, int np, int K, int bits, float *out) {       \
    const int nb = K / QB;                                                                        \
    for (int q = 0; q < np; q++)                                                                  \
        for (int blk = 0; blk < nb; blk++) {                                                      \
            float tmp[HEAD_MAX * PW];                                                                    \
            const float *hd = block_head(pk, bits, nb, p0 + q, blk, tmp);                         \
            const uint8_t *cp = block_at(pk, bits, nb, p0 + q, blk) + CODE_HEAD(bits);            \
            _Alignas(32) uint8_t u[QB * PW];                                                      \
            const uint8_t *own = block_bytes(cp, bits, u);                                        \
            if (own) cp = own;                                                                    \
            for (int kk = 0; kk < QB / 2; kk++) {                                                 \
                __m256 w[4];                                                                      \
                pair_##FMT(hd, cp, kk, w);                                                        \
                float *dst = out + ((int64_t)q * K + blk * QB + 2 * kk) * PW;                     \
                _mm256_storeu_ps(dst, w[0]);                                                      \
                _mm256_storeu_ps(dst + 8, w[1]);                                                  \
                _mm256_storeu_ps(dst + PW, w[2]);                                                 \
                _mm256_storeu_ps(dst + PW + 8, w[3]);                                             \
            }                                                                                     \
        }                                                                                         \
}
REBUILD(q4) REBUILD(q8) REBUILD(q5) REBUILD(q6) REBUILD(q7) REBUILD(q9) REBUILD(q3) REBUILD(q2)

static void run_rebuilt(void *ctx, int g) {
    const struct quant_job *a = ctx;
    const int p0 = g * GP, np = a->P - p0 < GP ? a->P - p0 : GP;
    float *panels = hexa_panel_buffer((int64_t)np * a->K * PW);
    if (!panels) abort();        /* out of memory for ~600 KB: nothing sensible is left to do */
    const int codes = READ_AS(a->bits);
    if (codes == 8) rebuild_q8(a->packed, p0, np, a->K, a->bits, panels);
    else if (codes == 5) rebuild_q5(a->packed, p0, np, a->K, a->bits, panels);
    else if (codes == 6) rebuild_q6(a->packed, p0, np, a->K, a->bits, panels);
    else if (codes == 7) rebuild_q7(a->packed, p0, np, a->K, a->bits, panels);
    else if (codes == 9) rebuild_q9(a->packed, p0, np, a->K, a->bits, panels);
    else if (codes == 3) rebuild_q3(a->packed, p0, np, a->K, a->bits, panels);
    else if (codes == 2) rebuild_q2(a->packed, p0, np, a->K, a->bits, panels);
    else rebuild_q4(a->packed, p0, np, a->K, a->bits, panels);
    hexa_f32_group(a->x, panels, a->b, a->res, a->y, a->M, p0, np, a->N, a->K);
}

/* y[M,N] = res[M,N] + (x[M,K] @ w[N,K]^T + b[N]) with w in the Q4_1 (bits 4) or Q8_0 (bits 8)
   layout above (K a multiple of 32); b and res may be NULL, res may be y itself. */
void hexa_linear_quant(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                       int M, int N, int K, int bits, int threads) {
    const int P = (N + PW - 1) / PW;
    struct quant_job a = {x, packed, b, res, y, M, N, K, P, bits};
    const int codes = READ_AS(bits);
    hexa_task task = M > HEXA_QUANT_ROWS ? run_rebuilt : codes == 8 ? run_q8 : codes == 5 ? run_q5
                     : codes == 6 ? run_q6 : codes == 7 ? run_q7 : codes == 9 ? run_q9 : codes == 3 ? run_q3
                     : codes == 2 ? run_q2 : run_q4;
    hexa_run(task, &a, (P + GP - 1) / GP, threads);
}
