/* Decoding steps and draft trees on integer dot products: Q4_1 / Q8_0 codes times 8-bit
 * activations (NEON), the ARM64 twin of x86/quant_dot.c.
 *
 * Each row of x is quantized per block of 32 inputs exactly as on x86 (quantize.h: dx = max|x| /
 * 127, xq = round(x / dx)); per block and column the kernel forms the exact integer sum(q * xq),
 * then the same float operations as x86, in the same order: acc = fma(sum, d[n] * dx, acc)
 * (+ fma(m[n], dx * sum(xq)) for Q4_1), block after block, bias and residual last. Integer sums
 * are exact, so how they are formed is free: two paths, picked once when the library loads, give
 * the same bits as each other and as x86:
 *  - every ARMv8-A CPU: 8-bit multiplies widened to int16 (SMLAL) on the codes of two inputs per
 *    column as pairs (x86's madd layout), added pairwise into int32 (SADALP);
 *  - CPUs with the dot product extension (ARMv8.2+, nearly every Snapdragon since the 845):
 *    SDOT, 4 inputs x 16 columns per instruction, on codes transposed in registers so that each
 *    32-bit lane holds one column's 4 inputs.
 * The codes are read in quant_gemm.c's layout (layout.h): nothing else is stored. Every row is
 * quantized alone and accumulated in one fixed order whatever the tile or the batch, so a tree
 * row still equals a plain step bit for bit.
 */
#include <arm_neon.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif

#include "hexa.h"
#include "pool.h"
#include "quantize.h"
#include "tile.h"

#ifndef HWCAP_ASIMDDP   /* <asm/hwcap.h>'s value, for libcs whose headers predate it */
#define HWCAP_ASIMDDP (1 << 20)
#endif

/* The SDOT tiles alone are compiled for the dot product extension (the library is built for
   -march=armv8-a). GCC's arm_neon.h defines vdotq_s32 under arch=armv8.2-a+dotprod, and only a
   function whose target includes that may inline it. */
#if defined(__ARM_FEATURE_DOTPROD)
#define DOTPROD
#elif defined(__clang__)
#define DOTPROD __attribute__((target("dotprod")))
#else
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

struct dot_job {
    const uint8_t *packed;
    const float *b, *res;
    float *y;
    const int8_t *codes;    /* [M][K]: the rows' 8-bit codes */
    const float *dx, *sx;   /* [M][K/32]: block scale, and scale * sum of the block's codes */
    int M, N, K, P, bits;
};

/* codes of inputs i, i+1 (or i..i+3) of one row in every 16-bit (32-bit) lane */
static inline int8x16_t dup_pair(const int8_t *c) {
    int16_t v;
    memcpy(&v, c, sizeof v);
    return vreinterpretq_s8_s16(vdupq_n_s16(v));
}

static inline int8x16_t dup_quad(const int8_t *c) {
    int32_t v;
    memcpy(&v, c, sizeof v);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

/* ---- every ARMv8-A CPU: pairs ----------------------------------------------------------------
   16 columns x inputs (2kk, 2kk+1), each column's two codes side by side: w[0] columns 0-7,
   w[1] columns 8-15 (the layout of x86's pairs_q8, as bytes) */
static inline void pairs_Q4(const uint8_t *cp, int kk, int8x16_t *w) {
    const uint8x16_t both = vld1q_u8(cp + 16 * kk);
    const uint8x16_t lo = vandq_u8(both, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(both, 4);
    w[0] = vreinterpretq_s8_u8(vzip1q_u8(lo, hi));
    w[1] = vreinterpretq_s8_u8(vzip2q_u8(lo, hi));
}

static inline void pairs_Q8(const uint8_t *cp, int kk, int8x16_t *w) {
    const int8x16_t a = vld1q_s8((const int8_t *)cp + 32 * kk), b = vld1q_s8((const int8_t *)cp + 32 * kk + 16);
    w[0] = vzip1q_s8(a, b);
    w[1] = vzip2q_s8(a, b);
}

/* Input pairs summed in int16 before SADALP widens them: a lane holds one product per pair, at
   most 15 * 127 for Q4_1 (16 pairs, a whole block: 30480 < 32767) and 128 * 127 for Q8_0 (2). */
#define RUN_Q4 16
#define RUN_Q8 2
#define RUN_QM 2

/* ---- dot product CPUs: quads -----------------------------------------------------------------
   16 columns x inputs 4g .. 4g+3, each 32-bit lane one column's 4 codes: w[c] columns 4c .. 4c+3 */
static inline void quads_Q4(const uint8_t *cp, int g, int8x16_t *w) {
    const uint8x16_t b0 = vld1q_u8(cp + 32 * g), b1 = vld1q_u8(cp + 32 * g + 16);
    const uint8x16_t z[2] = {vzip1q_u8(b0, b1), vzip2q_u8(b0, b1)};   /* per column: inputs (0|1, 2|3) */
    for (int h = 0; h < 2; h++) {
        const uint8x16_t lo = vandq_u8(z[h], vdupq_n_u8(0x0f)), hi = vshrq_n_u8(z[h], 4);
        w[2 * h] = vreinterpretq_s8_u8(vzip1q_u8(lo, hi));
        w[2 * h + 1] = vreinterpretq_s8_u8(vzip2q_u8(lo, hi));
    }
}

static inline void quads_Q8(const uint8_t *cp, int g, int8x16_t *w) {
    const int8_t *c = (const int8_t *)cp + 64 * g;
    const int8x16_t v0 = vld1q_s8(c), v1 = vld1q_s8(c + 16), v2 = vld1q_s8(c + 32), v3 = vld1q_s8(c + 48);
    const int16x8_t z01a = vreinterpretq_s16_s8(vzip1q_s8(v0, v1)), z01b = vreinterpretq_s16_s8(vzip2q_s8(v0, v1));
    const int16x8_t z23a = vreinterpretq_s16_s8(vzip1q_s8(v2, v3)), z23b = vreinterpretq_s16_s8(vzip2q_s8(v2, v3));
    w[0] = vreinterpretq_s8_s16(vzip1q_s16(z01a, z23a));
    w[1] = vreinterpretq_s8_s16(vzip2q_s16(z01a, z23a));
    w[2] = vreinterpretq_s8_s16(vzip1q_s16(z01b, z23b));
    w[3] = vreinterpretq_s8_s16(vzip2q_s16(z01b, z23b));
}

/* Blocks read ahead in software: x86's distance, measured there (a step's calls stream too little
   each for the hardware prefetchers to reach full speed); not yet tuned on ARM hardware. Past a
   work item's end this reads into the next panels (harmless). */
#ifndef PREFETCH
#define PREFETCH 4
#endif

#define MR_MAX 4   /* rows per tile: 16 int32 sums + the codes stay in registers (the fp32 sums,
                      touched once per block, may not) */

/* the sums isum so far (16 columns per row) times d * dx -> the fp32 accumulators, then (HAS_MIN)
   + m * sx, x86's operations; isum starts again (Q6_K's two halves) */
#define DOT_FLOAT(FMT, MR, HAS_MIN, d)                                                            \
    _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++) {                                       \
        const int64_t at = (int64_t)(m0 + i) * nb + blk;                                          \
        const float32x4_t dx = vdupq_n_f32(a->dx[at]);                                            \
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {                                     \
            acc[i][c] = vfmaq_f32(acc[i][c], vcvtq_f32_s32(isum[i][c]), vmulq_f32(vld1q_f32((d) + 4 * c), dx)); \
            isum[i][c] = vdupq_n_s32(0);                                                          \
        }                                                                                         \
        if (HAS_MIN) {                                                                            \
            const float32x4_t sx = vdupq_n_f32(a->sx[at]);                                        \
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)                                   \
                acc[i][c] = vfmaq_f32(acc[i][c], vld1q_f32(hd + MOFF_##FMT + 4 * c), sx);         \
        }                                                                                         \
    }

#define DOT_BEGIN(FMT, MR)                                                                        \
    const int nb = a->K / QB, bits = a->bits, bytes = BLOCK_BYTES(bits);                          \
    float32x4_t acc[MR][4];                                                                       \
    _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                          \
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) acc[i][c] = vdupq_n_f32(0.f);        \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        const uint8_t *bp = block_at(a->packed, bits, nb, p, blk), *cp = bp + CODE_HEAD(bits);    \
        for (int off = 0; off < bytes; off += 64)   /* PREFETCH blocks ahead */                   \
            __builtin_prefetch(bp + PREFETCH * bytes + off);                                      \
        float tmp[3 * PW];                                                                        \
        const float *hd = block_head(a->packed, bits, nb, p, blk, tmp);                           \
        const int8_t *xq[MR];                                                                     \
        _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                      \
            xq[i] = a->codes + (int64_t)(m0 + i) * a->K + blk * QB;                               \
        int32x4_t isum[MR][4];                                                                    \
        _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                      \
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) isum[i][c] = vdupq_n_s32(0);

#define DOT_END(MR)                                                                               \
    }                                                                                             \
    _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                          \
        store_panel(acc[i][0], acc[i][1], acc[i][2], acc[i][3], a->b, a->res, a->y, m0 + i, p * PW, a->N);

/* rows [m0, m0+MR) x panel p, pairs (every CPU) */
#define PAIR_TILE(FMT, MR, HAS_MIN)                                                               \
static void pair_##FMT##_##MR(const struct dot_job *a, int m0, int p) {                          \
    DOT_BEGIN(FMT, MR)                                                                            \
        for (int k0 = 0; k0 < QB / 2; k0 += RUN_##FMT) {                                          \
            if (SPLIT_##FMT && k0 == QB / 4)   /* Q6_K: inputs 0-15 carry a scale of their own */    \
                DOT_FLOAT(FMT, MR, 0, hd)                                                         \
            int16x8_t s16[MR][4];                                                                 \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                  \
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) s16[i][c] = vdupq_n_s16(0);  \
            _Pragma("GCC unroll 2") for (int kk = k0; kk < k0 + RUN_##FMT; kk++) {               \
                int8x16_t w[2];                                                                   \
                pairs_##FMT(cp, kk, w);                                                           \
                _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++) {                            \
                    const int8x16_t xv = dup_pair(xq[i] + 2 * kk);                                \
                    s16[i][0] = vmlal_s8(s16[i][0], vget_low_s8(w[0]), vget_low_s8(xv));          \
                    s16[i][1] = vmlal_high_s8(s16[i][1], w[0], xv);                               \
                    s16[i][2] = vmlal_s8(s16[i][2], vget_low_s8(w[1]), vget_low_s8(xv));          \
                    s16[i][3] = vmlal_high_s8(s16[i][3], w[1], xv);                               \
                }                                                                                 \
            }                                                                                     \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                  \
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) isum[i][c] = vpadalq_s16(isum[i][c], s16[i][c]); \
        }                                                                                         \
        DOT_FLOAT(FMT, MR, HAS_MIN, hd + (SPLIT_##FMT ? PW : 0))                                 \
    DOT_END(MR)                                                                                   \
}

/* rows [m0, m0+MR) x panel p, SDOT (dot product CPUs only) */
#define QUAD_TILE(FMT, MR, HAS_MIN)                                                               \
static DOTPROD void quad_##FMT##_##MR(const struct dot_job *a, int m0, int p) {                  \
    DOT_BEGIN(FMT, MR)                                                                            \
        _Pragma("GCC unroll 1") for (int g = 0; g < QB / 4; g++) {                                \
            if (SPLIT_##FMT && g == QB / 8)   /* Q6_K: inputs 0-15 carry a scale of their own */     \
                DOT_FLOAT(FMT, MR, 0, hd)                                                         \
            int8x16_t w[4];                                                                       \
            quads_##FMT(cp, g, w);                                                                \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++) {                                \
                const int8x16_t xv = dup_quad(xq[i] + 4 * g);                                     \
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) isum[i][c] = vdotq_s32(isum[i][c], w[c], xv); \
            }                                                                                     \
        }                                                                                         \
        DOT_FLOAT(FMT, MR, HAS_MIN, hd + (SPLIT_##FMT ? PW : 0))                                 \
    DOT_END(MR)                                                                                   \
}

/* bits 5 and 6 (layout.h): Q8_0's tiles over their code bytes; bits 5 adds m * sx as Q4_1 does,
   bits 6 moves a half block's sums into fp32 with the first scale (SPLIT) */
#define SPLIT_Q4 0
#define SPLIT_Q8 0
#define SPLIT_Q5 0
#define SPLIT_Q6 1
#define SPLIT_Q7 1
#define MOFF_Q4 PW      /* where m starts in the head */
#define MOFF_Q8 0
#define MOFF_Q5 PW
#define MOFF_Q6 0
#define MOFF_Q7 (2 * PW)
#define RUN_Q5 2
#define RUN_Q6 2
#define RUN_Q7 2
#define pairs_Q5 pairs_Q8   /* the same code bytes after another head */
#define pairs_Q6 pairs_Q8
#define pairs_Q7 pairs_Q8
#define quads_Q5 quads_Q8
#define quads_Q6 quads_Q8
#define quads_Q7 quads_Q8
PAIR_TILE(Q4, 1, 1) PAIR_TILE(Q4, 2, 1) PAIR_TILE(Q4, 3, 1) PAIR_TILE(Q4, 4, 1)
PAIR_TILE(Q5, 1, 1) PAIR_TILE(Q5, 2, 1) PAIR_TILE(Q5, 3, 1) PAIR_TILE(Q5, 4, 1)
PAIR_TILE(Q6, 1, 0) PAIR_TILE(Q6, 2, 0) PAIR_TILE(Q6, 3, 0) PAIR_TILE(Q6, 4, 0)
PAIR_TILE(Q7, 1, 1) PAIR_TILE(Q7, 2, 1) PAIR_TILE(Q7, 3, 1) PAIR_TILE(Q7, 4, 1)
QUAD_TILE(Q7, 1, 1) QUAD_TILE(Q7, 2, 1) QUAD_TILE(Q7, 3, 1) QUAD_TILE(Q7, 4, 1)
QUAD_TILE(Q5, 1, 1) QUAD_TILE(Q5, 2, 1) QUAD_TILE(Q5, 3, 1) QUAD_TILE(Q5, 4, 1)
QUAD_TILE(Q6, 1, 0) QUAD_TILE(Q6, 2, 0) QUAD_TILE(Q6, 3, 0) QUAD_TILE(Q6, 4, 0)
PAIR_TILE(Q8, 1, 0) PAIR_TILE(Q8, 2, 0) PAIR_TILE(Q8, 3, 0) PAIR_TILE(Q8, 4, 0)
QUAD_TILE(Q4, 1, 1) QUAD_TILE(Q4, 2, 1) QUAD_TILE(Q4, 3, 1) QUAD_TILE(Q4, 4, 1)
QUAD_TILE(Q8, 1, 0) QUAD_TILE(Q8, 2, 0) QUAD_TILE(Q8, 3, 0) QUAD_TILE(Q8, 4, 0)

typedef void (*dot_tile)(const struct dot_job *, int, int);
static const dot_tile TILES[2][5][MR_MAX + 1] = {   /* [dot product][Q4, Q8, bits 5, 6, 7] */
    {{0, pair_Q4_1, pair_Q4_2, pair_Q4_3, pair_Q4_4}, {0, pair_Q8_1, pair_Q8_2, pair_Q8_3, pair_Q8_4},
     {0, pair_Q5_1, pair_Q5_2, pair_Q5_3, pair_Q5_4}, {0, pair_Q6_1, pair_Q6_2, pair_Q6_3, pair_Q6_4},
     {0, pair_Q7_1, pair_Q7_2, pair_Q7_3, pair_Q7_4}},
    {{0, quad_Q4_1, quad_Q4_2, quad_Q4_3, quad_Q4_4}, {0, quad_Q8_1, quad_Q8_2, quad_Q8_3, quad_Q8_4},
     {0, quad_Q5_1, quad_Q5_2, quad_Q5_3, quad_Q5_4}, {0, quad_Q6_1, quad_Q6_2, quad_Q6_3, quad_Q6_4},
     {0, quad_Q7_1, quad_Q7_2, quad_Q7_3, quad_Q7_4}},
};

/* 1 when the CPU has SDOT (HWCAP_ASIMDDP on Linux and Android); set once, when the library loads */
static int dotprod;

__attribute__((constructor)) static void pick_path(void) {
#if defined(__ARM_FEATURE_DOTPROD)
    dotprod = 1;   /* built for such CPUs only */
#elif defined(__linux__)
    dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
    dotprod = 0;
#endif
}

/* a work item: panels [g*GP, g*GP+GP) x all rows, up to MR_MAX rows at a time (the codes of a
   panel stay in cache across the row groups; each row's arithmetic is the same in every tile) */
static void dot_group(void *ctx, int g) {
    const struct dot_job *a = ctx;
    const int codes = CODES(a->bits);
    const dot_tile *tiles = TILES[dotprod][codes == 8 ? 1 : codes >= 5 && codes <= 7 ? codes - 3 : 0];
    const int p_end = (g + 1) * GP < a->P ? (g + 1) * GP : a->P;
    for (int p = g * GP; p < p_end; p++)
        for (int m = 0; m < a->M; m += MR_MAX)
            tiles[a->M - m < MR_MAX ? a->M - m : MR_MAX](a, m, p);
}

void hexa_linear_dot(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                     int M, int N, int K, int bits, int threads) {
    const int nb = K / QB;
    int8_t *codes = malloc((size_t)M * K);
    float *scales = malloc(sizeof(float) * (size_t)M * nb * 2);
    if (!codes || !scales) abort();
    float *dx = scales, *sx = scales + (int64_t)M * nb;
    for (int m = 0; m < M; m++)
        for (int blk = 0; blk < nb; blk++) {
            const int64_t at = (int64_t)m * nb + blk;
            quantize_block(x + (int64_t)m * K + blk * QB, codes + (int64_t)m * K + blk * QB, dx + at, sx + at);
        }
    const int P = (N + PW - 1) / PW;
    struct dot_job a = {packed, b, res, y, codes, dx, sx, M, N, K, P, bits};
    hexa_run(dot_group, &a, (P + GP - 1) / GP, threads);
    free(codes);
    free(scales);
}
