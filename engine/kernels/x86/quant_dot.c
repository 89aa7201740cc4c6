/* Decoding steps and draft trees on integer dot products: Q4_1 / Q8_0 codes times 8-bit
 * activations (AVX2), as llama.cpp decodes the same GGUF.
 *
 * The exact kernel (quant_gemm.c) rebuilds every fp32 weight in registers (4 vector ops per 8
 * weights) before its FMA: a 1-row step over SmolLM2's codes cost 9.2 ms for ~110 MB, far from
 * what memory allows (~4.3 ms). Here each row of x is quantized per block of 32 inputs (dx =
 * max|x| / 127, xq = round(x / dx)), and one _mm256_madd_epi16 multiplies 16 columns' codes by
 * two inputs and adds the pairs: y[n] = sum over blocks of d[n] * dx * sum(q * xq) (+ m[n] * dx *
 * sum(xq) for Q4_1). The codes are read in quant_gemm.c's layout: nothing else is stored.
 *
 * Not the fp32 arithmetic: prefill keeps the exact kernels, and decoding uses this one for every
 * step and tree alike (``engine/transformer.py`` decides by phase, never by row count). Every
 * row is quantized alone and accumulated in one fixed order, block after block, whatever the
 * tile or the batch: a tree row still equals a plain step bit for bit.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "hexa.h"
#include "pool.h"
#include "quantize.h"
#include "tile.h"

struct dot_job {
    const uint8_t *packed;
    const float *b, *res;
    float *y;
    const int32_t *pairs;   /* [M][K/2]: inputs 2j and 2j+1 as two int16 */
    const float *dx, *sx;   /* [M][K/32]: block scale, and scale * sum of the block's codes */
    int M, N, K, P, bits;
};

/* x row [K] -> its block scales and codes (quantize.h), the codes as pairs of int16 in int32 */
static void quantize_row(const float *x, int K, int32_t *pairs, float *dx, float *sx) {
    for (int b = 0; b < K / QB; b++) {
        int8_t q[QB];
        quantize_block(x + b * QB, q, dx + b, sx + b);
        for (int i = 0; i < QB; i += 2)
            pairs[(b * QB + i) / 2] = (int32_t)((uint32_t)(uint16_t)q[i] | (uint32_t)(uint16_t)q[i + 1] << 16);
    }
}

/* 16 columns x inputs (2kk, 2kk+1) as int16 pairs: w[0] columns 0-7, w[1] columns 8-15 */
static inline void pairs_q4(const uint8_t *bp, int kk, __m256i *w) {
    const __m128i both = _mm_loadu_si128((const __m128i *)(bp + Q4_HEAD) + kk), low = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(both, low), hi = _mm_and_si128(_mm_srli_epi16(both, 4), low);
    w[0] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
    w[1] = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(lo, hi));
}

static inline void pairs_q8(const uint8_t *bp, int kk, __m256i *w) {
    const __m128i *c = (const __m128i *)(bp + Q8_HEAD) + 2 * kk;
    const __m128i a = _mm_loadu_si128(c), b = _mm_loadu_si128(c + 1);
    w[0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
    w[1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b));
}

#define pairs_Q4 pairs_q4
#define pairs_Q8 pairs_q8
/* Blocks read ahead in software. A step's ~120 calls each stream 0.1-1.5 MB, too short for the
   hardware prefetchers to reach full speed: all projections of one step ran at ~12 GB/s where a
   plain sum reaches ~26. Interleaved in one process over all of a step's projections: 0 blocks
   ahead 7.9 ms, 4 blocks 6.7, 8 blocks 6.8, 16 blocks 7.3. Past a work item's end this reads
   into the next panels (harmless). */
#ifndef PREFETCH
#define PREFETCH 4
#endif

/* rows [m0, m0+MR) x panel p */
#define DOT_TILE(FMT, MR, HAS_MIN)                                                                \
static void dot_##FMT##_##MR(const struct dot_job *a, int m0, int p) {                            \
    const int nb = a->K / QB, half = a->K / 2;                                                    \
    __m256 acc[MR][2];                                                                            \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps(); \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        const uint8_t *bp = a->packed + ((int64_t)p * nb + blk) * FMT##_BYTES;                   \
        for (int off = 0; off < FMT##_BYTES; off += 64)   /* PREFETCH blocks ahead */   \
            _mm_prefetch((const char *)bp + PREFETCH * FMT##_BYTES + off, _MM_HINT_T0);           \
        __m256i isum[MR][2];                                                                      \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) isum[i][0] = isum[i][1] = _mm256_setzero_si256(); \
        _Pragma("GCC unroll 16") for (int kk = 0; kk < QB / 2; kk++) {                            \
            __m256i w[2];                                                                         \
            pairs_##FMT(bp, kk, w);                                                               \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                const __m256i xv = _mm256_set1_epi32(a->pairs[(int64_t)(m0 + i) * half + blk * QB / 2 + kk]); \
                isum[i][0] = _mm256_add_epi32(isum[i][0], _mm256_madd_epi16(w[0], xv));           \
                isum[i][1] = _mm256_add_epi32(isum[i][1], _mm256_madd_epi16(w[1], xv));           \
            }                                                                                     \
        }                                                                                         \
        const float *d = (const float *)bp;                                                       \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                    \
            const int64_t at = (int64_t)(m0 + i) * nb + blk;                                      \
            const __m256 dx = _mm256_set1_ps(a->dx[at]);                                          \
            acc[i][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][0]), _mm256_mul_ps(_mm256_loadu_ps(d), dx), acc[i][0]); \
            acc[i][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][1]), _mm256_mul_ps(_mm256_loadu_ps(d + 8), dx), acc[i][1]); \
            if (HAS_MIN) {                                                                        \
                const __m256 sx = _mm256_set1_ps(a->sx[at]);                                      \
                acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(d + PW), sx, acc[i][0]);              \
                acc[i][1] = _mm256_fmadd_ps(_mm256_loadu_ps(d + PW + 8), sx, acc[i][1]);          \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                          \
        store_panel(acc[i][0], acc[i][1], a->b, a->res, a->y, m0 + i, p * PW, a->N);             \
}
DOT_TILE(Q4, 1, 1) DOT_TILE(Q4, 2, 1) DOT_TILE(Q4, 3, 1) DOT_TILE(Q4, 4, 1) DOT_TILE(Q4, 5, 1) DOT_TILE(Q4, 6, 1)
DOT_TILE(Q8, 1, 0) DOT_TILE(Q8, 2, 0) DOT_TILE(Q8, 3, 0) DOT_TILE(Q8, 4, 0) DOT_TILE(Q8, 5, 0) DOT_TILE(Q8, 6, 0)

typedef void (*dot_tile)(const struct dot_job *, int, int);
static const dot_tile TILES_Q4[7] = {0, dot_Q4_1, dot_Q4_2, dot_Q4_3, dot_Q4_4, dot_Q4_5, dot_Q4_6};
static const dot_tile TILES_Q8[7] = {0, dot_Q8_1, dot_Q8_2, dot_Q8_3, dot_Q8_4, dot_Q8_5, dot_Q8_6};

/* a work item: panels [g*GP, g*GP+GP) x all rows, up to 6 rows at a time (the codes of a panel
   stay in cache across the row groups; each row's arithmetic is the same in every tile) */
static void dot_group(void *ctx, int g) {
    const struct dot_job *a = ctx;
    const dot_tile *tiles = a->bits == 8 ? TILES_Q8 : TILES_Q4;
    const int p_end = (g + 1) * GP < a->P ? (g + 1) * GP : a->P;
    for (int p = g * GP; p < p_end; p++)
        for (int m = 0; m < a->M; m += 6)
            tiles[a->M - m < 6 ? a->M - m : 6](a, m, p);
}

void hexa_linear_dot(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                     int M, int N, int K, int bits, int threads) {
    const int nb = K / QB;
    int32_t *pairs = malloc(sizeof(int32_t) * (size_t)M * (K / 2));
    float *scales = malloc(sizeof(float) * (size_t)M * nb * 2);
    if (!pairs || !scales) abort();
    for (int m = 0; m < M; m++)
        quantize_row(x + (int64_t)m * K, K, pairs + (int64_t)m * (K / 2), scales + (int64_t)m * nb,
                     scales + (int64_t)M * nb + (int64_t)m * nb);
    const int P = (N + PW - 1) / PW;
    struct dot_job a = {packed, b, res, y, pairs, scales, scales + (int64_t)M * nb, M, N, K, P, bits};
    hexa_run(dot_group, &a, (P + GP - 1) / GP, threads);
    free(pairs);
    free(scales);
}
