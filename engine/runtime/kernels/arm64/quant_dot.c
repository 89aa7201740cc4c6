/* Decoding steps and draft trees on integer dot products: Q4_1 / Q8_0 codes (and layout.h's
 * others) times 8-bit activations (NEON), the ARM64 twin of x86/quant_dot.c.
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
 * The codes are read in quant_gemm.c's layout (layout.h): nothing else is stored. The planes
 * (layouts 5, 6, 9) hold u = q + CODE_OFFSET >= 0; sum(u * xq) - CODE_OFFSET * sum(xq) is the
 * integer sum(q * xq) exactly, so the float steps after it stay x86's. Every row is
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
#include "codes.h"
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
    const int32_t *qs;      /* [M][K/16]: the sum of each 16 codes (the planes' CODE_OFFSET times it) */
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
   16 columns x inputs (4g, 4g+1) then (4g+2, 4g+3), each column's two codes side by side: w[0]
   columns 0-7, w[1] columns 8-15 of the first pair, w[2], w[3] of the second (the layout of x86's
   pairs_q8, as bytes) */
static inline void pairs_Q4(const uint8_t *cp, int g, int8x16_t *w) {
    for (int h = 0; h < 2; h++) {
        const uint8x16_t both = vld1q_u8(cp + 16 * (2 * g + h));
        const uint8x16_t lo = vandq_u8(both, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(both, 4);
        w[2 * h] = vreinterpretq_s8_u8(vzip1q_u8(lo, hi));
        w[2 * h + 1] = vreinterpretq_s8_u8(vzip2q_u8(lo, hi));
    }
}

static inline void pairs_Q8(const uint8_t *cp, int g, int8x16_t *w) {
    for (int h = 0; h < 2; h++) {
        const int8_t *c = (const int8_t *)cp + 32 * (2 * g + h);
        const int8x16_t a = vld1q_s8(c), b = vld1q_s8(c + 16);
        w[2 * h] = vzip1q_s8(a, b);
        w[2 * h + 1] = vzip2q_s8(a, b);
    }
}

/* The planes: the group's quads (codes.h), whose 16-bit lanes are a column's inputs (0|1) and
   (2|3); the even lanes of two quads are the first pair of their 8 columns, the odd the second */
static inline void pairs_planes(const uint8_t *cp, int planes, int g, int8x16_t *w) {
    int8x16_t q[4];
    quads_codes(cp, planes, g, q);
    for (int h = 0; h < 2; h++) {
        const int16x8_t a = vreinterpretq_s16_s8(q[2 * h]), b = vreinterpretq_s16_s8(q[2 * h + 1]);
        w[h] = vreinterpretq_s8_s16(vuzp1q_s16(a, b));
        w[2 + h] = vreinterpretq_s8_s16(vuzp2q_s16(a, b));
    }
}

/* Input pairs summed in int16 before SADALP widens them (RUN_, in pairs, even: a group of 4
   inputs at a time): a lane holds one product per pair, at most 15 * 128 for Q4_1 (16 pairs, a
   whole block: 30720 < 32767), 128 * 127 for 8-bit codes (2), 31 * 128 for 5-bit planes (8 pairs:
   31744) and 63 * 128 for 6-bit planes (4 pairs: 32256). */
#define RUN_Q4 16
#define RUN_Q8 2

/* ---- dot product CPUs: quads -----------------------------------------------------------------
   16 columns x inputs 4g .. 4g+3, each 32-bit lane one column's 4 codes: w[c] columns 4c .. 4c+3
   (codes.h's quads_codes for the nibbles and planes) */

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

/* the sums isum so far (16 columns per row), less OFF * sum(xq) for the planes (of the half
   block for a split scale), times d * dx -> the fp32 accumulators, then (HAS_MIN) + m * sx,
   x86's operations; isum starts again (Q6_K's two halves) */
#define DOT_FLOAT(FMT, MR, HAS_MIN, d, half)                                                      \
    _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++) {                                       \
        const int64_t at = (int64_t)(m0 + i) * nb + blk;                                          \
        const float32x4_t dx = vdupq_n_f32(a->dx[at]);                                            \
        const int32_t *qs = a->qs + 2 * at;                                                       \
        const int32x4_t o = vdupq_n_s32(OFF_(FMT) * (SPLIT_(FMT) ? qs[half] : qs[0] + qs[1]));   \
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {                                     \
            const int32x4_t t = OFF_(FMT) ? vsubq_s32(isum[i][c], o) : isum[i][c];                \
            acc[i][c] = vfmaq_f32(acc[i][c], vcvtq_f32_s32(t), vmulq_f32(vld1q_f32((d) + 4 * c), dx)); \
            isum[i][c] = vdupq_n_s32(0);                                                          \
        }                                                                                         \
        if (HAS_MIN) {                                                                            \
            const float32x4_t sx = vdupq_n_f32(a->sx[at]);                                        \
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)                                   \
                acc[i][c] = vfmaq_f32(acc[i][c], vld1q_f32(hd + MOFF_(FMT) + 4 * c), sx);         \
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
            if (SPLIT_(FMT) && k0 == QB / 4)   /* Q6_K: inputs 0-15 carry a scale of their own */    \
                DOT_FLOAT(FMT, MR, 0, hd, 0)                                                      \
            int16x8_t s16[MR][4];                                                                 \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                  \
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) s16[i][c] = vdupq_n_s16(0);  \
            _Pragma("GCC unroll 2") for (int g = k0 / 2; g < (k0 + RUN_##FMT) / 2; g++) {        \
                int8x16_t w[4];                                                                   \
                pairs_##FMT(cp, g, w);                                                            \
                _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)                               \
                    _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++) {                        \
                        const int8x16_t xv = dup_pair(xq[i] + 4 * g + 2 * h);                     \
                        s16[i][0] = vmlal_s8(s16[i][0], vget_low_s8(w[2 * h]), vget_low_s8(xv));  \
                        s16[i][1] = vmlal_high_s8(s16[i][1], w[2 * h], xv);                       \
                        s16[i][2] = vmlal_s8(s16[i][2], vget_low_s8(w[2 * h + 1]), vget_low_s8(xv)); \
                        s16[i][3] = vmlal_high_s8(s16[i][3], w[2 * h + 1], xv);                   \
                    }                                                                             \
            }                                                                                     \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                                  \
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) isum[i][c] = vpadalq_s16(isum[i][c], s16[i][c]); \
        }                                                                                         \
        DOT_FLOAT(FMT, MR, HAS_MIN, hd + (SPLIT_(FMT) ? PW : 0), 1)                              \
    DOT_END(MR)                                                                                   \
}

/* rows [m0, m0+MR) x panel p, SDOT (dot product CPUs only) */
#define QUAD_TILE(FMT, MR, HAS_MIN)                                                               \
static DOTPROD void quad_##FMT##_##MR(const struct dot_job *a, int m0, int p) {                  \
    DOT_BEGIN(FMT, MR)                                                                            \
        _Pragma("GCC unroll 1") for (int g = 0; g < QB / 4; g++) {                                \
            if (SPLIT_(FMT) && g == QB / 8)   /* Q6_K: inputs 0-15 carry a scale of their own */     \
                DOT_FLOAT(FMT, MR, 0, hd, 0)                                                      \
            int8x16_t w[4];                                                                       \
            quads_##FMT(cp, g, w);                                                                \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++) {                                \
                const int8x16_t xv = dup_quad(xq[i] + 4 * g);                                     \
                _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) isum[i][c] = vdotq_s32(isum[i][c], w[c], xv); \
            }                                                                                     \
        }                                                                                         \
        DOT_FLOAT(FMT, MR, HAS_MIN, hd + (SPLIT_(FMT) ? PW : 0), 1)                              \
    DOT_END(MR)                                                                                   \
}

/* The formats besides Q4_1 / Q8_0 (layout.h): the planes 5 (Q5_1, Q5_K: + m * sx as Q4_1), 9
   (Q5_0) and 6 (Q6_K: a half block's sums into fp32 with the first scale, SPLIT), codes u with
   their offset OFF; layout 7, Q8_0's tiles on its 8-bit codes with a split scale and an m */
#define LAYOUT_Q4 4   /* each format's layout; what it holds follows from layout.h */
#define LAYOUT_Q5 5
#define LAYOUT_Q6 6
#define LAYOUT_Q7 7
#define LAYOUT_Q8 8
#define LAYOUT_Q9 9
#define SPLIT_(FMT) SPLIT_SCALE(LAYOUT_##FMT)
#define OFF_(FMT) CODE_OFFSET(LAYOUT_##FMT)
#define MOFF_(FMT) MIN_AT(LAYOUT_##FMT)   /* where m starts in the head (read only with HAS_MIN) */
#define RUN_Q5 8
#define RUN_Q6 4
#define RUN_Q7 2
#define RUN_Q9 8
static inline void pairs_Q5(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(5), g, w); }
static inline void pairs_Q6(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(6), g, w); }
static inline void pairs_Q9(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(9), g, w); }
#define pairs_Q7 pairs_Q8   /* the same code bytes after another head */
static inline void quads_Q4(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(4), g, w); }
static inline void quads_Q5(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(5), g, w); }
static inline void quads_Q6(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(6), g, w); }
static inline void quads_Q9(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(9), g, w); }
#define quads_Q7 quads_Q8
PAIR_TILE(Q4, 1, 1) PAIR_TILE(Q4, 2, 1) PAIR_TILE(Q4, 3, 1) PAIR_TILE(Q4, 4, 1)
PAIR_TILE(Q5, 1, 1) PAIR_TILE(Q5, 2, 1) PAIR_TILE(Q5, 3, 1) PAIR_TILE(Q5, 4, 1)
PAIR_TILE(Q6, 1, 0) PAIR_TILE(Q6, 2, 0) PAIR_TILE(Q6, 3, 0) PAIR_TILE(Q6, 4, 0)
PAIR_TILE(Q7, 1, 1) PAIR_TILE(Q7, 2, 1) PAIR_TILE(Q7, 3, 1) PAIR_TILE(Q7, 4, 1)
PAIR_TILE(Q9, 1, 0) PAIR_TILE(Q9, 2, 0) PAIR_TILE(Q9, 3, 0) PAIR_TILE(Q9, 4, 0)
PAIR_TILE(Q8, 1, 0) PAIR_TILE(Q8, 2, 0) PAIR_TILE(Q8, 3, 0) PAIR_TILE(Q8, 4, 0)
QUAD_TILE(Q4, 1, 1) QUAD_TILE(Q4, 2, 1) QUAD_TILE(Q4, 3, 1) QUAD_TILE(Q4, 4, 1)
QUAD_TILE(Q5, 1, 1) QUAD_TILE(Q5, 2, 1) QUAD_TILE(Q5, 3, 1) QUAD_TILE(Q5, 4, 1)
QUAD_TILE(Q6, 1, 0) QUAD_TILE(Q6, 2, 0) QUAD_TILE(Q6, 3, 0) QUAD_TILE(Q6, 4, 0)
QUAD_TILE(Q7, 1, 1) QUAD_TILE(Q7, 2, 1) QUAD_TILE(Q7, 3, 1) QUAD_TILE(Q7, 4, 1)
QUAD_TILE(Q9, 1, 0) QUAD_TILE(Q9, 2, 0) QUAD_TILE(Q9, 3, 0) QUAD_TILE(Q9, 4, 0)
QUAD_TILE(Q8, 1, 0) QUAD_TILE(Q8, 2, 0) QUAD_TILE(Q8, 3, 0) QUAD_TILE(Q8, 4, 0)

typedef void (*dot_tile)(const struct dot_job *, int, int);
static const dot_tile TILES[2][6][MR_MAX + 1] = {   /* [dot product][Q4, Q8, bits 5, 6, 7, 9] */
    {{0, pair_Q4_1, pair_Q4_2, pair_Q4_3, pair_Q4_4}, {0, pair_Q8_1, pair_Q8_2, pair_Q8_3, pair_Q8_4},
     {0, pair_Q5_1, pair_Q5_2, pair_Q5_3, pair_Q5_4}, {0, pair_Q6_1, pair_Q6_2, pair_Q6_3, pair_Q6_4},
     {0, pair_Q7_1, pair_Q7_2, pair_Q7_3, pair_Q7_4}, {0, pair_Q9_1, pair_Q9_2, pair_Q9_3, pair_Q9_4}},
    {{0, quad_Q4_1, quad_Q4_2, quad_Q4_3, quad_Q4_4}, {0, quad_Q8_1, quad_Q8_2, quad_Q8_3, quad_Q8_4},
     {0, quad_Q5_1, quad_Q5_2, quad_Q5_3, quad_Q5_4}, {0, quad_Q6_1, quad_Q6_2, quad_Q6_3, quad_Q6_4},
     {0, quad_Q7_1, quad_Q7_2, quad_Q7_3, quad_Q7_4}, {0, quad_Q9_1, quad_Q9_2, quad_Q9_3, quad_Q9_4}},
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
    const dot_tile *tiles = TILES[dotprod][codes == 8 ? 1 : codes >= 5 && codes <= 7 ? codes - 3 : codes == 9 ? 5 : 0];
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
    int32_t *qs = malloc(sizeof(int32_t) * (size_t)M * nb * 2);
    if (!codes || !scales || !qs) abort();
    float *dx = scales, *sx = scales + (int64_t)M * nb;
    for (int m = 0; m < M; m++)
        for (int blk = 0; blk < nb; blk++) {
            const int64_t at = (int64_t)m * nb + blk;
            int8_t *q = codes + (int64_t)m * K + blk * QB;
            quantize_block(x + (int64_t)m * K + blk * QB, q, dx + at, sx + at);
            for (int h = 0; h < 2; h++) {   /* the planes' offsets take these; the rest ignore them */
                int32_t sum = 0;
                for (int i = 0; i < QB / 2; i++) sum += q[h * QB / 2 + i];
                qs[2 * at + h] = sum;
            }
        }
    const int P = (N + PW - 1) / PW;
    struct dot_job a = {packed, b, res, y, codes, dx, sx, qs, M, N, K, P, bits};
    hexa_run(dot_group, &a, (P + GP - 1) / GP, threads);
    free(codes);
    free(scales);
    free(qs);
}
