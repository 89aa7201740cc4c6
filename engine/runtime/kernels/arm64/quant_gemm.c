/* hexa's linear on Q4_1 and Q8_0 codes and layout.h's others (NEON): the ARM64 twin of x86/quant_gemm.c, giving its
 * bits (and so packed_gemm.c's) exactly.
 *
 * The codes (hexa_pack_quant, ../pack.c; layout in layout.h) are rebuilt into the fp32 weights
 * with x86's operations: Q4_1 (float)q * d, then + m (two roundings: vmulq_f32 and vaddq_f32,
 * never fused, -ffp-contract=off keeps them apart); Q8_0 (float)q * d. Every y[m][n] is then the
 * same FMA chain over k as in packed_gemm.c, from zero, bias and residual added last.
 *
 * Where x86 rebuilds a pair of inputs in registers right before its FMAs, a tile here rebuilds
 * CB blocks of its panels at a time into a small buffer (8 KB per panel, in L1) and runs
 * packed_gemm.c's steps (tile.h) on it: in registers, a 6-row tile's 24 accumulators left too
 * few of the 32 for the rebuilt weights, their scales and the inputs, and GCC spilled
 * accumulators on every step. For M > HEXA_QUANT_ROWS a work item's panels are rebuilt over all
 * of K once and packed_gemm.c's tiles run on them, as on x86.
 */
#include <arm_neon.h>
#include <stdint.h>
#include <stdlib.h>

#include "hexa.h"
#include "pool.h"
#include "codes.h"
#include "tile.h"

#define CB 4   /* blocks a tile rebuilds at a time: 128 inputs x 16 columns */

/* 16 columns of one input from their 16 unsigned codes: (float)q * d + m into w[0..3]. */
static inline void dequant4(uint8x16_t codes, const float *d, const float *m, float32x4_t *w) {
    const uint16x8_t lo = vmovl_u8(vget_low_u8(codes)), hi = vmovl_high_u8(codes);
    const uint32x4_t q[4] = {vmovl_u16(vget_low_u16(lo)), vmovl_high_u16(lo), vmovl_u16(vget_low_u16(hi)),
                             vmovl_high_u16(hi)};
    for (int j = 0; j < 4; j++)
        w[j] = vaddq_f32(vmulq_f32(vcvtq_f32_u32(q[j]), vld1q_f32(d + 4 * j)), vld1q_f32(m + 4 * j));
}

/* Inputs 2kk and 2kk+1 of a Q4_1 block (its head hd as fp32, layout.h's block_head, its codes at
   cp): w[0..3] the even input (low nibbles), w[4..7] the odd. */
static inline void pair_q4(const float *hd, const uint8_t *cp, int kk, float32x4_t *w) {
    const float *d = hd, *m = d + PW;
    const uint8x16_t both = vld1q_u8(cp + kk * PW);
    dequant4(vandq_u8(both, vdupq_n_u8(0x0f)), d, m, w);
    dequant4(vshrq_n_u8(both, 4), d, m, w + 4);
}

/* The same for a Q8_0 block: signed codes, one byte each, and d * q (exact: no rounding at all). */
static inline void pair_q8(const float *hd, const uint8_t *cp, int kk, float32x4_t *w) {
    const float *d = hd;
    for (int h = 0; h < 2; h++) {
        const int8x16_t codes = vld1q_s8((const int8_t *)cp + (2 * kk + h) * PW);
        const int16x8_t lo = vmovl_s8(vget_low_s8(codes)), hi = vmovl_high_s8(codes);
        const int32x4_t q[4] = {vmovl_s16(vget_low_s16(lo)), vmovl_high_s16(lo), vmovl_s16(vget_low_s16(hi)),
                                vmovl_high_s16(hi)};
        for (int j = 0; j < 4; j++) w[4 * h + j] = vmulq_f32(vcvtq_f32_s32(q[j]), vld1q_f32(d + 4 * j));
    }
}

/* Layout 7's 8-bit codes and the planes decoded into bytes u = q + OFF (layout.h: 5 Q5_1/Q5_K
   d * q + m, 9 Q5_0 d * q, 6 Q6_K d * q with the d of the input's half of the block, 7 both; 3 as
   6, 2 with the m of the input's half too):
   q = u - OFF in integers, then x86's operations, one for one */
static inline void pair_qm(const float *hd, const uint8_t *cp, int kk, float32x4_t *w, int bits) {
    const float *d = hd + (SPLIT_SCALE(bits) && 2 * kk >= QB / 2 ? PW : 0);
    const float *m = hd + (MIN_AT(bits) >= 0 ? MIN_OF(bits, 2 * kk) : 0);
    for (int h = 0; h < 2; h++) {
        int16x8_t lo, hi;
        if (OFFSET_CODES(bits)) {   /* unsigned u */
            const uint8x16_t codes = vld1q_u8(cp + (2 * kk + h) * PW);
            lo = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(codes))), vdupq_n_s16(CODE_OFFSET(bits)));
            hi = vsubq_s16(vreinterpretq_s16_u16(vmovl_high_u8(codes)), vdupq_n_s16(CODE_OFFSET(bits)));
        } else {
            const int8x16_t codes = vld1q_s8((const int8_t *)cp + (2 * kk + h) * PW);
            lo = vmovl_s8(vget_low_s8(codes));
            hi = vmovl_high_s8(codes);
        }
        const int32x4_t q[4] = {vmovl_s16(vget_low_s16(lo)), vmovl_high_s16(lo), vmovl_s16(vget_low_s16(hi)),
                                vmovl_high_s16(hi)};
        for (int j = 0; j < 4; j++) {
            w[4 * h + j] = vmulq_f32(vcvtq_f32_s32(q[j]), vld1q_f32(d + 4 * j));
            if (MIN_AT(bits) >= 0) w[4 * h + j] = vaddq_f32(w[4 * h + j], vld1q_f32(m + 4 * j));
        }
    }
}
static inline void pair_q5(const float *hd, const uint8_t *u, int kk, float32x4_t *w) { pair_qm(hd, u, kk, w, 5); }
static inline void pair_q6(const float *hd, const uint8_t *u, int kk, float32x4_t *w) { pair_qm(hd, u, kk, w, 6); }
static inline void pair_q9(const float *hd, const uint8_t *u, int kk, float32x4_t *w) { pair_qm(hd, u, kk, w, 9); }
static inline void pair_q3(const float *hd, const uint8_t *u, int kk, float32x4_t *w) { pair_qm(hd, u, kk, w, 3); }
static inline void pair_q2(const float *hd, const uint8_t *u, int kk, float32x4_t *w) { pair_qm(hd, u, kk, w, 2); }
static inline void pair_q7(const float *hd, const uint8_t *cp, int kk, float32x4_t *w) { pair_qm(hd, cp, kk, w, 7); }

/* Blocks [blk0, blk0 + n) of panel p into the fp32 panel layout: out[k][0..16) */
#define REBUILD(FMT)                                                                              \
static void rebuild_##FMT(const uint8_t *pk, int bits, int nb, int p, int blk0, int n, float *out) { \
    for (int blk = 0; blk < n; blk++) {                                                           \
        float tmp[HEAD_MAX * PW];                                                                        \
        const float *hd = block_head(pk, bits, nb, p, blk0 + blk, tmp);                           \
        const uint8_t *cp = block_at(pk, bits, nb, p, blk0 + blk) + CODE_HEAD(bits);              \
        uint8_t u[QB * PW];                                                                       \
        const uint8_t *own = block_bytes(cp, bits, u);                                            \
        if (own) cp = own;                                                                        \
        for (int kk = 0; kk < QB / 2; kk++) {                                                     \
            float32x4_t w[8];                                                                     \
            pair_##FMT(hd, cp, kk, w);                                                            \
            float *dst = out + (blk * QB + 2 * kk) * PW;                                          \
            for (int j = 0; j < 8; j++) vst1q_f32(dst + 4 * j, w[j]);                             \
        }                                                                                         \
    }                                                                                             \
}
REBUILD(q4) REBUILD(q8) REBUILD(q5) REBUILD(q6) REBUILD(q7) REBUILD(q9) REBUILD(q3) REBUILD(q2)

static void rebuild(const uint8_t *pk, int bits, int nb, int p, int blk0, int n, float *out) {
    const int codes = READ_AS(bits);
    if (codes == 8) rebuild_q8(pk, bits, nb, p, blk0, n, out);
    else if (codes == 5) rebuild_q5(pk, bits, nb, p, blk0, n, out);
    else if (codes == 6) rebuild_q6(pk, bits, nb, p, blk0, n, out);
    else if (codes == 7) rebuild_q7(pk, bits, nb, p, blk0, n, out);
    else if (codes == 9) rebuild_q9(pk, bits, nb, p, blk0, n, out);
    else if (codes == 3) rebuild_q3(pk, bits, nb, p, blk0, n, out);
    else if (codes == 2) rebuild_q2(pk, bits, nb, p, blk0, n, out);
    else rebuild_q4(pk, bits, nb, p, blk0, n, out);
}

/* y rows [m0, m0+MR) x panels [p0, p0+NPAN): the accumulators stay in registers over all of K
   (spilled only around each rebuild, once per CB blocks), then reach y through store_panel. */
#define TILE(MR, NPAN)                                                                            \
STEPS(MR, NPAN)                                                                                   \
static void tile_##MR##_##NPAN(const float *x, const uint8_t *pk, const float *b, const float *res, \
                               float *y, int m0, int p0, int N, int K, int bits) {               \
    float32x4_t acc[MR][4 * NPAN];                                                                \
    _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 32") for (int j = 0; j < 4 * NPAN; j++) acc[i][j] = vdupq_n_f32(0.f); \
    float wb[NPAN][CB * QB * PW];                                                                 \
    const int nb = K / QB;                                                                        \
    for (int blk = 0; blk < nb; blk += CB) {                                                      \
        const int n = nb - blk < CB ? nb - blk : CB;                                              \
        for (int q = 0; q < NPAN; q++)                                                            \
            rebuild(pk, bits, nb, p0 + q, blk, n, wb[q]);                                         \
        steps_##MR##_##NPAN(acc, x + (int64_t)m0 * K + blk * QB, K, wb[0], CB * QB * PW, n * QB);  \
    }                                                                                             \
    _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                                         \
        _Pragma("GCC unroll 32") for (int q = 0; q < NPAN; q++)                                   \
            store_panel(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3],    \
                        b, res, y, m0 + i, (p0 + q) * PW, N);                                     \
}
TILE(1, 1) TILE(1, 3) TILE(2, 1) TILE(2, 2) TILE(3, 1) TILE(4, 1) TILE(5, 1) TILE(6, 1)

struct quant_job { const float *x; const uint8_t *packed; const float *b, *res; float *y; int M, N, K, P, bits; };

/* Rows [0, M) x panels [p0, p0+np), tiled as in packed_gemm.c: 6-row tiles panel by panel, 1-2
   leftover rows across several panels so the rebuilt weights serve more accumulators. */
static void run_tiles(void *ctx, int g) {
    const struct quant_job *a = ctx;
    const float *x = a->x, *b = a->b, *res = a->res;
    const uint8_t *pk = a->packed;
    float *y = a->y;
    const int p0 = g * GP, np = a->P - p0 < GP ? a->P - p0 : GP, N = a->N, K = a->K, bits = a->bits;
    const int full = a->M / 6 * 6, rest = a->M - full;
    const int wide = rest > 0 && rest <= 2 && np == GP;
    for (int p = p0; p < p0 + np; p++) {
        for (int m = 0; m < full; m += 6) tile_6_1(x, pk, b, res, y, m, p, N, K, bits);
        if (wide) continue;
        switch (rest) {
        case 5: tile_5_1(x, pk, b, res, y, full, p, N, K, bits); break;
        case 4: tile_4_1(x, pk, b, res, y, full, p, N, K, bits); break;
        case 3: tile_3_1(x, pk, b, res, y, full, p, N, K, bits); break;
        case 2: tile_2_1(x, pk, b, res, y, full, p, N, K, bits); break;
        case 1: tile_1_1(x, pk, b, res, y, full, p, N, K, bits); break;
        }
    }
    if (!wide) return;
    if (rest == 1) for (int p = p0; p < p0 + GP; p += 3) tile_1_3(x, pk, b, res, y, full, p, N, K, bits);
    else for (int p = p0; p < p0 + GP; p += 2) tile_2_2(x, pk, b, res, y, full, p, N, K, bits);
}

/* More rows than HEXA_QUANT_ROWS (prefill chunks, where the codes are the only copy of a weight):
   rebuild a work item's panels into the fp32 panel layout once, in a per-thread buffer, and run
   packed_gemm.c's tiles on them: the same weights bit for bit, so again packed_gemm.c's result. */
static void run_rebuilt(void *ctx, int g) {
    const struct quant_job *a = ctx;
    const int p0 = g * GP, np = a->P - p0 < GP ? a->P - p0 : GP, nb = a->K / QB;
    float *panels = hexa_panel_buffer((int64_t)np * a->K * PW);
    if (!panels) abort();        /* out of memory for ~600 KB: nothing sensible is left to do */
    for (int q = 0; q < np; q++)
        rebuild(a->packed, a->bits, nb, p0 + q, 0, nb, panels + (int64_t)q * a->K * PW);
    hexa_f32_group(a->x, panels, a->b, a->res, a->y, a->M, p0, np, a->N, a->K);
}

/* y[M,N] = res[M,N] + (x[M,K] @ w[N,K]^T + b[N]) with w in the Q4_1 (bits 4) or Q8_0 (bits 8)
   layout (K a multiple of 32); b and res may be NULL, res may be y itself. */
void hexa_linear_quant(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                       int M, int N, int K, int bits, int threads) {
    const int P = (N + PW - 1) / PW;
    struct quant_job a = {x, packed, b, res, y, M, N, K, P, bits};
    hexa_run(M > HEXA_QUANT_ROWS ? run_rebuilt : run_tiles, &a, (P + GP - 1) / GP, threads);
}
