/* Decoding steps and draft trees on integer dot products: Q4_1 / Q8_0 codes (and layout.h's
 * others) times 8-bit activations (NEON), the ARM64 twin of x86/quant_dot.c.
 *
 * Each row of x is quantized per block of 32 inputs exactly as on x86 (quantize.h: dx = max|x| /
 * 127, xq = round(x / dx)); per block and column the kernel forms the exact integer sum(q * xq),
 * then the same float operations as x86, in the same order: acc = fma(sum, d[n] * dx, acc)
 * (+ fma(m[n], dx * sum(xq)) for Q4_1), block after block, bias and residual last. Integer sums
 * are exact, so how they are formed is free: three paths, picked once when the library loads,
 * give the same bits as each other and as x86:
 *  - every ARMv8-A CPU: 8-bit multiplies widened to int16 (SMLAL) on the codes of two inputs per
 *    column as pairs (x86's madd layout), added pairwise into int32 (SADALP);
 *  - CPUs with the dot product extension (ARMv8.2+, nearly every Snapdragon since the 845):
 *    SDOT, 4 inputs x 16 columns per instruction, on codes transposed in registers so that each
 *    32-bit lane holds one column's 4 inputs;
 *  - CPUs with the int8 matrix multiply extension (i8mm: Snapdragon 8 Gen 2 and later, X Elite),
 *    2 rows or more: SMMLA, 2 rows x 2 columns x 8 inputs per instruction, on codes transposed so
 *    that each 64-bit half holds one column's 8 inputs (a single row keeps SDOT). Fewer
 *    instructions per row for draft trees (counted under qemu, below); not timed on ARM hardware.
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

#ifndef HWCAP_ASIMDDP   /* <asm/hwcap.h>'s values, for libcs whose headers predate them */
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef AT_HWCAP2
#define AT_HWCAP2 26
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
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
/* ... and the SMMLA tiles for i8mm (vmmlaq_s32: GCC's arm_neon.h defines it under
   arch=armv8.2-a+i8mm) */
#if defined(__ARM_FEATURE_MATMUL_INT8)
#define I8MM
#elif defined(__clang__)
#define I8MM __attribute__((target("i8mm")))
#else
#define I8MM __attribute__((target("arch=armv8.2-a+i8mm")))
#endif

struct dot_job {
    const uint8_t *packed;
    const float *b, *res;
    float *y;
    const int8_t *codes;    /* [M][K]: the rows' 8-bit codes */
    const float *dx, *sx;   /* [M][K/32]: block scale, and scale * sum of the block's codes */
    const int32_t *qs;      /* [M][K/16]: the sum of each 16 codes (the planes' CODE_OFFSET times it) */
    const int8_t *pairs;    /* SMMLA path, M > 1: [(M+1)/2][K/8][16] the codes of rows 2i, 2i+1 (2i again
                               for an odd last row), 8 inputs of each in turn: one operand a load */
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

#define MR_MAX 4   /* rows per tile (pairs, SDOT): 16 int32 sums + the codes stay in registers (the
                      fp32 sums, touched once per block, may not) */

/* the sums isum so far (16 columns per row), less OFF * sum(xq) for the planes (of the half
   block for a split scale), times d * dx -> the fp32 accumulators, then (HAS_MIN) + m * sx
   (HAS_MIN 2, layout 2: + m0 * (dx * h0) + m1 * (dx * h1), the halves' sums of codes), x86's operations; isum starts again (Q6_K's two halves) */
#define DOT_FLOAT(FMT, MR, HAS_MIN, d, half) DOT_FLOAT_COLS(FMT, MR, HAS_MIN, d, half, 0, 4)
/* ... for columns 4 * C0 .. 4 * C1 - 1 only (the SMMLA tiles' column halves: each column's
   operations stay the same ones in the same order) */
#define DOT_FLOAT_COLS(FMT, MR, HAS_MIN, d, half, C0, C1)                                         \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                       \
        const int64_t at = (int64_t)(m0 + i) * nb + blk;                                          \
        const float32x4_t dx = vdupq_n_f32(a->dx[at]);                                            \
        const int32_t *qs = a->qs + 2 * at;                                                       \
        const int32x4_t o = vdupq_n_s32(OFF_(FMT) * (SPLIT_(FMT) ? qs[half] : qs[0] + qs[1]));   \
        _Pragma("GCC unroll 4") for (int c = C0; c < C1; c++) {                                   \
            const int32x4_t t = OFF_(FMT) ? vsubq_s32(isum[i][c], o) : isum[i][c];                \
            acc[i][c] = vfmaq_f32(acc[i][c], vcvtq_f32_s32(t), vmulq_f32(vld1q_f32((d) + 4 * c), dx)); \
            isum[i][c] = vdupq_n_s32(0);                                                          \
        }                                                                                         \
        if (HAS_MIN == 2) {   /* layout 2: each half's m times dx * the half's sum (x86's half_sx) */ \
            const float32x4_t s0 = vdupq_n_f32(a->dx[at] * (float)qs[0]);                         \
            const float32x4_t s1 = vdupq_n_f32(a->dx[at] * (float)qs[1]);                         \
            _Pragma("GCC unroll 4") for (int c = C0; c < C1; c++) {                               \
                acc[i][c] = vfmaq_f32(acc[i][c], vld1q_f32(hd + MOFF_(FMT) + 4 * c), s0);         \
                acc[i][c] = vfmaq_f32(acc[i][c], vld1q_f32(hd + MOFF_(FMT) + PW + 4 * c), s1);    \
            }                                                                                     \
        } else if (HAS_MIN) {                                                                     \
            const float32x4_t sx = vdupq_n_f32(a->sx[at]);                                        \
            _Pragma("GCC unroll 4") for (int c = C0; c < C1; c++)                                 \
                acc[i][c] = vfmaq_f32(acc[i][c], vld1q_f32(hd + MOFF_(FMT) + 4 * c), sx);         \
        }                                                                                         \
    }

/* Which calls a tile inlines is chosen here, not by GCC's budget for a unit's growth by inlining
   (the tiles exhaust it, and adding the SMMLA tiles moved its choices in the others: a 1-row SDOT
   Q4 tile went from 233 to 264 instructions a block, block_head called per block and the
   accumulators spilled around it): every tile is flattened (its block heads and codes inline),
   y's rows are stored out of line, once per tile and panel. */
#define TILE_FN __attribute__((flatten))
static __attribute__((noinline)) void store_rows(float32x4_t (*acc)[4], int rows, const struct dot_job *a,
                                                 int m0, int p) {
    for (int i = 0; i < rows; i++)
        store_panel(acc[i][0], acc[i][1], acc[i][2], acc[i][3], a->b, a->res, a->y, m0 + i, p * PW, a->N);
}

#define DOT_BEGIN(FMT, MR)                                                                        \
    const int nb = a->K / QB, bits = a->bits, bytes = BLOCK_BYTES(bits);                          \
    const int8x16_t lut = vld1q_s8(CODE_TABLE[TABLE(bits)]);   /* table codes' (QT, QU) */         \
    (void)lut;                                                                                    \
    float32x4_t acc[MR][4];                                                                       \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                          \
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) acc[i][c] = vdupq_n_f32(0.f);        \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        const uint8_t *bp = block_at(a->packed, bits, nb, p, blk), *cp = bp + CODE_HEAD(bits);    \
        for (int off = 0; off < bytes; off += 64)   /* PREFETCH blocks ahead */                   \
            __builtin_prefetch(bp + PREFETCH * bytes + off);                                      \
        float tmp[HEAD_MAX * PW];                                                                        \
        const float *hd = block_head(a->packed, bits, nb, p, blk, tmp);                           \
        const int8_t *xq[MR];                                                                     \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                      \
            xq[i] = a->codes + (int64_t)(m0 + i) * a->K + blk * QB;                               \
        int32x4_t isum[MR][4];                                                                    \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                      \
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) isum[i][c] = vdupq_n_s32(0);

#define DOT_END(MR)                                                                               \
    }                                                                                             \
    store_rows(acc, MR, a, m0, p);

/* rows [m0, m0+MR) x panel p, pairs (every CPU) */
#define PAIR_TILE(FMT, MR, HAS_MIN)                                                               \
static TILE_FN void pair_##FMT##_##MR(const struct dot_job *a, int m0, int p) {                   \
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
static TILE_FN DOTPROD void quad_##FMT##_##MR(const struct dot_job *a, int m0, int p) {           \
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

/* ---- i8mm CPUs: SMMLA -------------------------------------------------------------------------
   SMMLA takes two rows' 8 inputs (one per 64-bit half of a register) and two columns' 8 codes
   (likewise) and adds the 2 x 2 sums [r0.ca, r0.cb, r1.ca, r1.cb] into 4 int32 lanes: 2 rows x 2
   columns x 8 inputs per instruction, where SDOT does 1 x 4 x 4. The codes of inputs 8j .. 8j+7
   (mm_FMT below): w[v] columns 2v | 2v+1; the rows' (hexa_linear_dot's pairs): one load a pair.
   Rows go in pairs; an odd last row is paired with itself and the copy's sums dropped (each
   row's sums are exact, so no row depends on its neighbour). Up to 4 rows take all 16 columns at
   once (16 registers of sums, as SDOT's 4-row tile, and 8 of codes); 5-8 rows take 8 columns at
   a time (16 again), the codes decoded in two halves (which share no permutes, only loads), then
   the fp32 steps for those columns, each column's the same and in the same order.
   Instructions executed per block of 32 inputs and panel, counted under qemu (not timed on ARM
   hardware), SMMLA / SDOT: Q4 codes 2 rows 261 / 316, 4 rows 411 / 510, 8 rows 725 / 1016; Q8
   266 / 310, 378 / 471, 690 / 938; 1 row keeps SDOT (232). */
#define MM_MAX 8   /* rows per tile on the SMMLA path */

/* the pairs' 2 x 2 sums of columns 4C .. 4C+3 (mm[pair][2C], [2C+1]) -> each row's isum[i][C] as
   the other tiles hold them: row 2pr in the low 64 bits of each, 2pr+1 in the high */
#define MM_SUMS(MR, C0, C1)                                                                       \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                          \
        _Pragma("GCC unroll 4") for (int c = C0; c < C1; c++) {                                   \
            const int64x2_t lo = vreinterpretq_s64_s32(mm[i / 2][2 * c]);                         \
            const int64x2_t hi = vreinterpretq_s64_s32(mm[i / 2][2 * c + 1]);                     \
            isum[i][c] = vreinterpretq_s32_s64(i % 2 ? vzip2q_s64(lo, hi) : vzip1q_s64(lo, hi));  \
        }                                                                                         \
    _Pragma("GCC unroll 4") for (int pr = 0; pr < (MR + 1) / 2; pr++)                             \
        _Pragma("GCC unroll 8") for (int v = 2 * (C0); v < 2 * (C1); v++) mm[pr][v] = vdupq_n_s32(0);

/* rows [m0, m0+MR) x panel p, SMMLA (i8mm CPUs only), CW columns at a time (16 or 8) */
#define MM_TILE(FMT, MR, CW, HAS_MIN)                                                             \
static TILE_FN I8MM void mm_##FMT##_##MR(const struct dot_job *a, int m0, int p) {                \
    DOT_BEGIN(FMT, MR)                                                                            \
        (void)xq;   /* the rows come from a->pairs */                                             \
        int32x4_t mm[(MR + 1) / 2][8];                                                            \
        const int8_t *xp = a->pairs + (int64_t)m0 * a->K;   /* m0 even: tiles start at k * MM_MAX */  \
        _Pragma("GCC unroll 2") for (int h = 0; h < PW / (CW); h++) {                             \
            const int c0 = h * (CW) / 4, c1 = c0 + (CW) / 4;   /* columns 4c0 .. 4c1-1 */         \
            _Pragma("GCC unroll 4") for (int pr = 0; pr < (MR + 1) / 2; pr++)                     \
                _Pragma("GCC unroll 8") for (int v = 2 * c0; v < 2 * c1; v++)                     \
                    mm[pr][v] = vdupq_n_s32(0);                                                   \
            _Pragma("GCC unroll 1") for (int j = 0; j < QB / 8; j++) {                            \
                if (SPLIT_(FMT) && j == QB / 16) {   /* Q6_K: inputs 0-15 have their own scale */ \
                    MM_SUMS(MR, c0, c1)                                                           \
                    DOT_FLOAT_COLS(FMT, MR, 0, hd, 0, c0, c1)                                     \
                }                                                                                 \
                int8x16_t w[8];                                                                   \
                mm_##FMT(cp, j, w);                                                               \
                _Pragma("GCC unroll 4") for (int pr = 0; pr < (MR + 1) / 2; pr++) {               \
                    const int8x16_t xv = vld1q_s8(xp + 2 * ((int64_t)pr * a->K + blk * QB + 8 * j)); \
                    _Pragma("GCC unroll 8") for (int v = 2 * c0; v < 2 * c1; v++)                 \
                        mm[pr][v] = vmmlaq_s32(mm[pr][v], xv, w[v]);                              \
                }                                                                                 \
            }                                                                                     \
            MM_SUMS(MR, c0, c1)                                                                   \
            DOT_FLOAT_COLS(FMT, MR, HAS_MIN, hd + (SPLIT_(FMT) ? PW : 0), 1, c0, c1)              \
        }                                                                                         \
    DOT_END(MR)                                                                                   \
}

/* The formats besides Q4_1 / Q8_0 (layout.h): the planes 5 (Q5_1, Q5_K: + m * sx as Q4_1), 9
   (Q5_0) and 6 (Q6_K: a half block's sums into fp32 with the first scale, SPLIT), codes u with
   their offset OFF; layout 7, Q8_0's tiles on its 8-bit codes with a split scale and an m */
#define LAYOUT_Q2 2   /* each format's layout; what it holds follows from layout.h */
#define LAYOUT_Q3 3
#define LAYOUT_Q4 4
#define LAYOUT_Q5 5
#define LAYOUT_Q6 6
#define LAYOUT_Q7 7
#define LAYOUT_Q8 8
#define LAYOUT_Q9 9
#define LAYOUT_QT 10   /* table codes after 8's head */
#define LAYOUT_QU 11   /* ... after 7's */
#define SPLIT_(FMT) SPLIT_SCALE(LAYOUT_##FMT)
#define OFF_(FMT) CODE_OFFSET(LAYOUT_##FMT)
#define MOFF_(FMT) MIN_AT(LAYOUT_##FMT)   /* where m starts in the head (read only with HAS_MIN) */
#define RUN_Q3 8   /* 15 * 128 a pair (16 would do), ending at the half block: Q3_K's split scale */
#define RUN_Q2 8   /* as Q3: nibbles, a split scale */
#define RUN_Q5 8
#define RUN_Q6 4
#define RUN_Q7 2
#define RUN_Q9 8
#define RUN_QT 2   /* table values, int8 as 8-bit codes */
#define RUN_QU 2
static inline void pairs_Q5(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(5), g, w); }
static inline void pairs_Q6(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(6), g, w); }
static inline void pairs_Q9(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(9), g, w); }
static inline void pairs_Q3(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(3), g, w); }
static inline void pairs_Q2(const uint8_t *cp, int g, int8x16_t *w) { pairs_planes(cp, PLANES(2), g, w); }
#define pairs_Q7 pairs_Q8   /* the same code bytes after another head */
static inline void quads_Q4(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(4), g, w); }
static inline void quads_Q5(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(5), g, w); }
static inline void quads_Q6(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(6), g, w); }
static inline void quads_Q9(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(9), g, w); }
static inline void quads_Q3(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(3), g, w); }
static inline void quads_Q2(const uint8_t *cp, int g, int8x16_t *w) { quads_codes(cp, PLANES(2), g, w); }
#define quads_Q7 quads_Q8
/* table codes: pairs_Q4's nibbles, each index looked up in the tile's lut (DOT_BEGIN) */
static inline void pairs_table(const uint8_t *cp, int8x16_t lut, int g, int8x16_t *w) {
    for (int h = 0; h < 2; h++) {
        const uint8x16_t both = vld1q_u8(cp + 16 * (2 * g + h));
        const int8x16_t lo = vqtbl1q_s8(lut, vandq_u8(both, vdupq_n_u8(0x0f))), hi = vqtbl1q_s8(lut, vshrq_n_u8(both, 4));
        w[2 * h] = vzip1q_s8(lo, hi);
        w[2 * h + 1] = vzip2q_s8(lo, hi);
    }
}
#define pairs_QT(cp, g, w) pairs_table(cp, lut, g, w)
#define pairs_QU(cp, g, w) pairs_table(cp, lut, g, w)
#define quads_QT(cp, g, w) quads_table(cp, lut, g, w)
#define quads_QU(cp, g, w) quads_table(cp, lut, g, w)

/* SMMLA's codes, inputs 8j .. 8j+7, w[v] columns 2v | 2v+1 (each 64-bit half one column's 8
   inputs in order). Q4: the 4 bytes of a column's 8 nibbles gathered on the packed bytes (two
   zips each of 2 x 16 bytes), then split and interleaved: 24 instructions, where the way below
   takes 28. */
static inline void mm_Q4(const uint8_t *cp, int j, int8x16_t *w) {
    const uint8_t *c = cp + 64 * j;   /* input pairs 4j .. 4j+3, 16 bytes each */
    const uint8x16_t p0 = vld1q_u8(c), p1 = vld1q_u8(c + 16), p2 = vld1q_u8(c + 32), p3 = vld1q_u8(c + 48);
    const uint16x8_t a0 = vreinterpretq_u16_u8(vzip1q_u8(p0, p1)), a1 = vreinterpretq_u16_u8(vzip2q_u8(p0, p1));
    const uint16x8_t b0 = vreinterpretq_u16_u8(vzip1q_u8(p2, p3)), b1 = vreinterpretq_u16_u8(vzip2q_u8(p2, p3));
    const uint16x8_t t[4] = {vzip1q_u16(a0, b0), vzip2q_u16(a0, b0), vzip1q_u16(a1, b1), vzip2q_u16(a1, b1)};
    for (int q = 0; q < 4; q++) {   /* t[q]: columns 4q .. 4q+3, a 32-bit lane holds a column's pairs */
        const uint8x16_t v = vreinterpretq_u8_u16(t[q]);
        const uint8x16_t lo = vandq_u8(v, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(v, 4);   /* inputs 0 2 4 6, 1 3 5 7 */
        w[2 * q] = vreinterpretq_s8_u8(vzip1q_u8(lo, hi));
        w[2 * q + 1] = vreinterpretq_s8_u8(vzip2q_u8(lo, hi));
    }
}

/* the others: two groups' quads (each 32-bit lane one column's 4 inputs), zipped by 32 bits; the
   planes' high bits are ORed into the quads, where each byte is one code */
#define MM_BY_QUADS(FMT)                                                                          \
static inline void mm_##FMT(const uint8_t *cp, int j, int8x16_t *w) {                            \
    int8x16_t q0[4], q1[4];                                                                       \
    quads_##FMT(cp, 2 * j, q0);                                                                   \
    quads_##FMT(cp, 2 * j + 1, q1);                                                               \
    for (int c = 0; c < 4; c++) {                                                                 \
        const int32x4_t e = vreinterpretq_s32_s8(q0[c]), o = vreinterpretq_s32_s8(q1[c]);         \
        w[2 * c] = vreinterpretq_s8_s32(vzip1q_s32(e, o));                                        \
        w[2 * c + 1] = vreinterpretq_s8_s32(vzip2q_s32(e, o));                                    \
    }                                                                                             \
}
MM_BY_QUADS(Q5) MM_BY_QUADS(Q6) MM_BY_QUADS(Q8) MM_BY_QUADS(Q9) MM_BY_QUADS(Q3) MM_BY_QUADS(Q2)
#define mm_Q7 mm_Q8
static inline void mm_table(const uint8_t *cp, int8x16_t lut, int j, int8x16_t *w) {   /* MM_BY_QUADS' */
    int8x16_t q0[4], q1[4];
    quads_table(cp, lut, 2 * j, q0);
    quads_table(cp, lut, 2 * j + 1, q1);
    for (int c = 0; c < 4; c++) {
        const int32x4_t e = vreinterpretq_s32_s8(q0[c]), o = vreinterpretq_s32_s8(q1[c]);
        w[2 * c] = vreinterpretq_s8_s32(vzip1q_s32(e, o));
        w[2 * c + 1] = vreinterpretq_s8_s32(vzip2q_s32(e, o));
    }
}
#define mm_QT(cp, j, w) mm_table(cp, lut, j, w)
#define mm_QU(cp, j, w) mm_table(cp, lut, j, w)
PAIR_TILE(Q4, 1, 1) PAIR_TILE(Q4, 2, 1) PAIR_TILE(Q4, 3, 1) PAIR_TILE(Q4, 4, 1)
PAIR_TILE(Q5, 1, 1) PAIR_TILE(Q5, 2, 1) PAIR_TILE(Q5, 3, 1) PAIR_TILE(Q5, 4, 1)
PAIR_TILE(Q6, 1, 0) PAIR_TILE(Q6, 2, 0) PAIR_TILE(Q6, 3, 0) PAIR_TILE(Q6, 4, 0)
PAIR_TILE(Q7, 1, 1) PAIR_TILE(Q7, 2, 1) PAIR_TILE(Q7, 3, 1) PAIR_TILE(Q7, 4, 1)
PAIR_TILE(Q9, 1, 0) PAIR_TILE(Q9, 2, 0) PAIR_TILE(Q9, 3, 0) PAIR_TILE(Q9, 4, 0)
PAIR_TILE(Q8, 1, 0) PAIR_TILE(Q8, 2, 0) PAIR_TILE(Q8, 3, 0) PAIR_TILE(Q8, 4, 0)
PAIR_TILE(Q3, 1, 0) PAIR_TILE(Q3, 2, 0) PAIR_TILE(Q3, 3, 0) PAIR_TILE(Q3, 4, 0)
PAIR_TILE(Q2, 1, 2) PAIR_TILE(Q2, 2, 2) PAIR_TILE(Q2, 3, 2) PAIR_TILE(Q2, 4, 2)
PAIR_TILE(QT, 1, 0) PAIR_TILE(QT, 2, 0) PAIR_TILE(QT, 3, 0) PAIR_TILE(QT, 4, 0)
PAIR_TILE(QU, 1, 1) PAIR_TILE(QU, 2, 1) PAIR_TILE(QU, 3, 1) PAIR_TILE(QU, 4, 1)
QUAD_TILE(Q4, 1, 1) QUAD_TILE(Q4, 2, 1) QUAD_TILE(Q4, 3, 1) QUAD_TILE(Q4, 4, 1)
QUAD_TILE(Q5, 1, 1) QUAD_TILE(Q5, 2, 1) QUAD_TILE(Q5, 3, 1) QUAD_TILE(Q5, 4, 1)
QUAD_TILE(Q6, 1, 0) QUAD_TILE(Q6, 2, 0) QUAD_TILE(Q6, 3, 0) QUAD_TILE(Q6, 4, 0)
QUAD_TILE(Q7, 1, 1) QUAD_TILE(Q7, 2, 1) QUAD_TILE(Q7, 3, 1) QUAD_TILE(Q7, 4, 1)
QUAD_TILE(Q9, 1, 0) QUAD_TILE(Q9, 2, 0) QUAD_TILE(Q9, 3, 0) QUAD_TILE(Q9, 4, 0)
QUAD_TILE(Q8, 1, 0) QUAD_TILE(Q8, 2, 0) QUAD_TILE(Q8, 3, 0) QUAD_TILE(Q8, 4, 0)
QUAD_TILE(Q3, 1, 0) QUAD_TILE(Q3, 2, 0) QUAD_TILE(Q3, 3, 0) QUAD_TILE(Q3, 4, 0)
QUAD_TILE(Q2, 1, 2) QUAD_TILE(Q2, 2, 2) QUAD_TILE(Q2, 3, 2) QUAD_TILE(Q2, 4, 2)
QUAD_TILE(QT, 1, 0) QUAD_TILE(QT, 2, 0) QUAD_TILE(QT, 3, 0) QUAD_TILE(QT, 4, 0)
QUAD_TILE(QU, 1, 1) QUAD_TILE(QU, 2, 1) QUAD_TILE(QU, 3, 1) QUAD_TILE(QU, 4, 1)
#define MM_TILES(FMT, HAS_MIN)                                                                    \
    MM_TILE(FMT, 2, 16, HAS_MIN) MM_TILE(FMT, 3, 16, HAS_MIN) MM_TILE(FMT, 4, 16, HAS_MIN)          \
    MM_TILE(FMT, 5, 8, HAS_MIN) MM_TILE(FMT, 6, 8, HAS_MIN) MM_TILE(FMT, 7, 8, HAS_MIN)             \
    MM_TILE(FMT, 8, 8, HAS_MIN)
MM_TILES(Q4, 1) MM_TILES(Q5, 1) MM_TILES(Q6, 0) MM_TILES(Q7, 1) MM_TILES(Q9, 0) MM_TILES(Q8, 0) MM_TILES(Q3, 0)
MM_TILES(Q2, 2)
MM_TILES(QT, 0) MM_TILES(QU, 1)

typedef void (*dot_tile)(const struct dot_job *, int, int);
#define MM_ROW(FMT)                                                                               \
    {0, quad_##FMT##_1, mm_##FMT##_2, mm_##FMT##_3, mm_##FMT##_4, mm_##FMT##_5, mm_##FMT##_6,       \
     mm_##FMT##_7, mm_##FMT##_8}
static const dot_tile TILES[3][10][MM_MAX + 1] = {   /* [path][Q4, Q8, bits 5, 6, 7, 9, 3, 10, 11, 2][rows] */
    {{0, pair_Q4_1, pair_Q4_2, pair_Q4_3, pair_Q4_4}, {0, pair_Q8_1, pair_Q8_2, pair_Q8_3, pair_Q8_4},
     {0, pair_Q5_1, pair_Q5_2, pair_Q5_3, pair_Q5_4}, {0, pair_Q6_1, pair_Q6_2, pair_Q6_3, pair_Q6_4},
     {0, pair_Q7_1, pair_Q7_2, pair_Q7_3, pair_Q7_4}, {0, pair_Q9_1, pair_Q9_2, pair_Q9_3, pair_Q9_4},
     {0, pair_Q3_1, pair_Q3_2, pair_Q3_3, pair_Q3_4}, {0, pair_QT_1, pair_QT_2, pair_QT_3, pair_QT_4},
     {0, pair_QU_1, pair_QU_2, pair_QU_3, pair_QU_4}, {0, pair_Q2_1, pair_Q2_2, pair_Q2_3, pair_Q2_4}},
    {{0, quad_Q4_1, quad_Q4_2, quad_Q4_3, quad_Q4_4}, {0, quad_Q8_1, quad_Q8_2, quad_Q8_3, quad_Q8_4},
     {0, quad_Q5_1, quad_Q5_2, quad_Q5_3, quad_Q5_4}, {0, quad_Q6_1, quad_Q6_2, quad_Q6_3, quad_Q6_4},
     {0, quad_Q7_1, quad_Q7_2, quad_Q7_3, quad_Q7_4}, {0, quad_Q9_1, quad_Q9_2, quad_Q9_3, quad_Q9_4},
     {0, quad_Q3_1, quad_Q3_2, quad_Q3_3, quad_Q3_4}, {0, quad_QT_1, quad_QT_2, quad_QT_3, quad_QT_4},
     {0, quad_QU_1, quad_QU_2, quad_QU_3, quad_QU_4}, {0, quad_Q2_1, quad_Q2_2, quad_Q2_3, quad_Q2_4}},
    /* one row: the SDOT tile (SMMLA would pair it with itself, its codes rearranged once more) */
    {MM_ROW(Q4), MM_ROW(Q8), MM_ROW(Q5), MM_ROW(Q6), MM_ROW(Q7), MM_ROW(Q9), MM_ROW(Q3), MM_ROW(QT), MM_ROW(QU),
     MM_ROW(Q2)},
};
static const int ROWS_PER_TILE[3] = {MR_MAX, MR_MAX, MM_MAX};

/* 0: pairs, 1: SDOT (HWCAP_ASIMDDP on Linux and Android), 2: SMMLA (HWCAP2_I8MM, and SDOT too
   for the 1-row tiles: SDOT is mandatory from ARMv8.4, i8mm optional from ARMv8.2); set once,
   when the library loads */
static int path;

__attribute__((constructor)) static void pick_path(void) {
    int dot = 0, mm = 0;
#if defined(__ARM_FEATURE_DOTPROD)
    dot = 1;   /* built for such CPUs only */
#endif
#if defined(__ARM_FEATURE_MATMUL_INT8)
    mm = 1;
#endif
#if defined(__linux__)
    dot |= (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
    mm |= (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#endif
    path = dot ? 1 + mm : 0;
}

/* a work item: panels [g*GP, g*GP+GP) x all rows, up to ROWS_PER_TILE rows at a time (the codes
   of a panel stay in cache across the row groups; each row's arithmetic is the same in every tile) */
static void dot_group(void *ctx, int g) {
    const struct dot_job *a = ctx;
    const int codes = CODES(a->bits), rows = ROWS_PER_TILE[path];
    const dot_tile *tiles = TILES[path][codes == 8 ? 1 : codes >= 5 && codes <= 7 ? codes - 3 : codes == 9 ? 5
                                        : codes == 3 ? 6 : codes >= 10 ? codes - 3 : codes == 2 ? 9 : 0];
    const int p_end = (g + 1) * GP < a->P ? (g + 1) * GP : a->P;
    for (int p = g * GP; p < p_end; p++)
        for (int m = 0; m < a->M; m += rows)
            tiles[a->M - m < rows ? a->M - m : rows](a, m, p);
}

/* the rows' activations quantized, one row an item: a prompt chunk's rows on every thread */
struct quant_job {
    const float *x;
    int8_t *codes;
    float *dx, *sx;
    int32_t *qs;
    int K, nb;
};

static void quantize_item(void *ctx, int m) {
    const struct quant_job *j = ctx;
    for (int blk = 0; blk < j->nb; blk++) {
        const int64_t at = (int64_t)m * j->nb + blk;
        int8_t *q = j->codes + (int64_t)m * j->K + blk * QB;
        quantize_block(j->x + (int64_t)m * j->K + blk * QB, q, j->dx + at, j->sx + at);
        for (int h = 0; h < 2; h++) {   /* the planes' offsets take these; the rest ignore them */
            int32_t sum = 0;
            for (int i = 0; i < QB / 2; i++) sum += q[h * QB / 2 + i];
            j->qs[2 * at + h] = sum;
        }
    }
}

void hexa_linear_dot(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                     int M, int N, int K, int bits, int threads) {
    const int nb = K / QB;
    int8_t *codes = malloc((size_t)M * K);
    float *scales = malloc(sizeof(float) * (size_t)M * nb * 2);
    int32_t *qs = malloc(sizeof(int32_t) * (size_t)M * nb * 2);
    if (!codes || !scales || !qs) abort();
    float *dx = scales, *sx = scales + (int64_t)M * nb;
    struct quant_job qj = {x, codes, dx, sx, qs, K, nb};
    if (M >= QUANT_PARALLEL) hexa_run(quantize_item, &qj, M, threads);
    else for (int m = 0; m < M; m++) quantize_item(&qj, m);
    int8_t *pairs = NULL;   /* the SMMLA tiles' rows, 8 inputs of two rows in turn (struct dot_job) */
    if (path == 2 && M > 1) {
        pairs = malloc((size_t)(M + 1) / 2 * K * 2);
        if (!pairs) abort();
        for (int i = 0; i < (M + 1) / 2; i++) {
            const int8_t *r0 = codes + (int64_t)2 * i * K, *r1 = 2 * i + 1 < M ? r0 + K : r0;
            for (int k = 0; k < K; k += 8) {
                memcpy(pairs + ((int64_t)i * K + k) * 2, r0 + k, 8);
                memcpy(pairs + ((int64_t)i * K + k) * 2 + 8, r1 + k, 8);
            }
        }
    }
    const int P = (N + PW - 1) / PW;
    struct dot_job a = {.packed = packed, .b = b, .res = res, .y = y, .codes = codes, .dx = dx, .sx = sx, .qs = qs,
                        .pairs = pairs, .M = M, .N = N, .K = K, .P = P, .bits = bits};
    hexa_run(dot_group, &a, (P + GP - 1) / GP, threads);
    free(pairs);
    free(codes);
    free(scales);
    free(qs);
}

/* x86's AMX tiles (hexa.h); ARM64's matrix instructions (SMMLA) are chosen when the kernels are built */
int32_t hexa_amx(int32_t on) {
    (void)on;
    return 0;
}

/* x86's 512-bit tiles (hexa.h) */
int32_t hexa_wide(int32_t on) {
    (void)on;
    return 0;
}

/* prompt rows: decoding's arithmetic here (the bf16 tiles are x86's AMX, x86/amx_bf16.h) */
void hexa_linear_prefill(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                         int M, int N, int K, int bits, int threads) {
    hexa_linear_dot(x, packed, b, res, y, M, N, K, bits, threads);
}
