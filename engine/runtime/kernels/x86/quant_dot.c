/* Decoding steps and draft trees on integer dot products: Q4_1 / Q8_0 codes times 8-bit
 * activations (AVX2), as llama.cpp decodes the same GGUF.
 *
 * The exact kernel (quant_gemm.c) rebuilds every fp32 weight in registers (4 vector ops per 8
 * weights) before its FMA: a 1-row step over SmolLM2's codes cost 9.2 ms for ~110 MB, far from
 * what memory allows (~4.3 ms). Here each row of x is quantized per block of 32 inputs (dx =
 * max|x| / 127, xq = round(x / dx)), each block's sum(q * xq) per column is formed in integers
 * (Q4_1: bytes times bytes, _mm256_maddubs_epi16; Q8_0: int16 pairs, _mm256_madd_epi16), then
 * y[n] = sum over blocks of d[n] * dx * sum(q * xq) (+ m[n] * dx * sum(xq) for Q4_1). Integer
 * sums are exact, so how they are formed never changes a bit; the fp32 operations after them are
 * the same ones in the same order in every tile. The codes are read in quant_gemm.c's layout:
 * nothing else is stored.
 *
 * Draft trees verify several rows per call, so rows must be cheap, not only bytes. All of a
 * SmolLM2-135M step's linears (30 layers' qkv, o, gate+up and down, and the Q8_0 head; 2 threads,
 * one process, old and new interleaved, ms) at 1 / 2 / 4 / 8 / 16 / 32 rows: 5.0 / 7.8 / 13.4 /
 * 26.6 / 54.8 / 112 with int16 pairs for Q4_1 too, 3.2 / 4.3 / 6.2 / 12.2 / 22.1 / 40.5 with the
 * Q4_1 bytes, the sums added in order (IN_ORDER), a panel's codes decoded once for all its row
 * tiles (dot_group) and the rows' max|x| found without fmaxf (block_amax).
 *
 * Not the fp32 arithmetic: in the default int8 arithmetic (engine.decode) every pass takes this
 * one, prompt chunks (since 2026-11-25; before, prefill kept the exact kernels), steps and trees
 * alike, never chosen by row count (prompt rows aside: hexa_linear_prefill's bf16 rows on AMX,
 * amx_bf16.h, and a K-quant's rows with a scale per 256 inputs on the 512-bit tiles,
 * k256_applies). Every row is quantized alone and accumulated in one fixed order, block after
 * block, whatever the tile or the batch: a tree row still equals a plain step bit for bit.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hexa.h"
#include "pool.h"
#include "quantize.h"
#include "codes.h"
#include "tile.h"
#include "dot.h"

/* max|x| of a block as quantize_block's chain of fmaxf gives it, on the bits: a float >= 0
   orders as its bits do, and |x|'s bits above inf's are NaN, which fmaxf leaves out. fmaxf is a
   libm call per input on x86 (no instruction has its NaN rule): 64 rows x 1536 inputs took
   0.36 ms to quantize, now 0.08, and all of a 32-row step's linears 46 ms, now 34. Returns 0 for
   a block holding a signaling NaN, which fmaxf does not leave out. */
static inline int block_amax(const float *xb, float *amax) {
    int32_t top = 0, signaling = 0;
    for (int i = 0; i < QB; i++) {
        int32_t b;
        memcpy(&b, xb + i, sizeof b);
        b &= 0x7fffffff;
        signaling |= b > 0x7f800000 && b < 0x7fc00000;
        b = b > 0x7f800000 ? 0 : b;
        top = b > top ? b : top;
    }
    memcpy(amax, &top, sizeof *amax);
    return !signaling;
}

/* A signaling NaN makes the fmaxf chain a quiet NaN, which of the two operands' depending on
   their order, and GCC orders a builtin's operands as suits its registers: the build before
   block_amax called fmaxf(|x|, amax). Through a pointer, that order stays. */
static float (*volatile fmaxf_call)(float, float) = fmaxf;

/* max|x| of a block: block_amax, or fmaxf's chain where the block holds a signaling NaN */
static inline float block_max(const float *xb) {
    float amax;
    if (!block_amax(xb, &amax)) {
        amax = 0.f;
        for (int i = 0; i < QB; i++) amax = fmaxf_call(fabsf(xb[i]), amax);
    }
    return amax;
}

/* The sum of 16 int8 codes, exactly: each biased by 128 into 0..255 (xor 0x80), summed by
   psadbw in two halves of 8. GCC made the plain loop 16 byte extractions, which were over half
   of quantizing a row, and quantizing 8% of a 1,024-token SmolLM2 prefill (perf). */
static inline int32_t half_sum(const int8_t *q) {
    const __m128i s = _mm_sad_epu8(_mm_xor_si128(_mm_loadu_si128((const __m128i *)q), _mm_set1_epi8((char)0x80)),
                                   _mm_setzero_si128());
    return _mm_cvtsi128_si32(s) + _mm_extract_epi16(s, 4) - 16 * 128;
}

/* What a float step of the planes subtracts: the codes' offset times the sum of the row's codes
   it covers, inputs 0-15 and 16-31 (split scales) or all 32 (both entries), formed once per row
   and block where each tile formed it per row, block and panel (a scalar add, multiply and move
   into a vector before every step). The same integers either way; Gemma-3-270M's 256-row Q8_0,
   Q5_0 and Q6_K products took 0.89-0.97x the time (two builds alternated in one process). */
static inline void offs(const int8_t *q, int off, int split, int32_t *out) {
    const int32_t h0 = half_sum(q), h1 = half_sum(q + QB / 2);
    out[0] = off * (split ? h0 : h0 + h1);
    out[1] = off * (split ? h1 : h0 + h1);
}

/* x row [K] -> its block scales and codes (quantize.h): the int8 codes as they are, with what
   the planes' float steps subtract (offs), or as pairs of int16 (sign-extended: the same values)
   in int32 for DOT_Q8 */
static void quantize_row(const float *x, int K, int pairs, int off, int split, void *codes, float *dx, float *sx,
                         int32_t *qs) {
    for (int b = 0; b < K / QB; b++) {
        int8_t q[QB];
        quantize_scaled(x + b * QB, block_max(x + b * QB), q, dx + b, sx + b);
        if (!pairs) {
            memcpy((int8_t *)codes + b * QB, q, QB);
            offs(q, off, split, qs + 2 * b);
        } else   /* int16 pairs, little-endian: the codes sign-extended in place (the loop GCC made
                    of this was byte extractions too) */
            for (int h = 0; h < 2; h++)
                _mm256_storeu_si256((__m256i *)codes + b * 2 + h,
                                    _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(q + 16 * h))));
    }
}

/* x row [K] -> codes with one scale per 256 inputs, for the K-quants' prompt rows (k256_applies):
   each block of 32 quantized as quantize_row does, but with the super-block's max|x| (the largest of
   its 8 blocks'), so the 8 blocks share dx; sx is the block's sum of codes itself (the min term's
   dx is applied with the rest, per super-block) */
static void quantize_row_k256(const float *x, int K, int off, int split, int8_t *codes, float *dx, float *sx,
                              int32_t *qs) {
    for (int s0 = 0; s0 < K / QB; s0 += KSUPER) {
        float amax = 0.f;
        for (int b = s0; b < s0 + KSUPER; b++) {
            const float a = block_max(x + b * QB);
            amax = a > amax ? a : amax;
        }
        for (int b = s0; b < s0 + KSUPER; b++) {
            int8_t *q = codes + b * QB;
            quantize_scaled(x + b * QB, amax, q, dx + b, sx + b);
            sx[b] = (float)(half_sum(q) + half_sum(q + QB / 2));
            offs(q, off, split, qs + 2 * b);
        }
    }
}

/* ---- Q4_1 and the planes (Q5, Q6_K): bytes times bytes ---------------------------------------
   _mm256_maddubs_epi16 multiplies unsigned bytes (the codes, 0..15) by signed bytes (the row's
   int8 codes, the very values the int16 pairs held) and adds each two products into int16:
   16 columns x 4 inputs in two instructions, where int16 pairs took four. A 16-bit lane takes one
   column's 2 inputs per group of 4, |sum| <= 2 * 15 * 128 = 3840 for any int8, so it never
   saturates and a whole block (8 groups: 30720 < 32767) adds up in int16; one _mm256_madd_epi16
   by 1 then adds each column's two lanes into its int32 sum, the same integer as before. The
   planes' codes u = q + OFF (0..31, 0..63) take the same instructions, in shorter int16 runs (RUN_
   below), and give the bytes' integer sum(q * xq) once OFF * sum(xq) is subtracted: 5- and 6-bit
   codes streamed as planes take 0.62 / 0.75 bytes a weight instead of 1. */

/* GCC re-associated each running sum: it formed a block's products first and added them up
   after, spilling most of them (a 6-row Q8_0 tile: 417 ymm spills and reloads per block; 95, the
   fp32 sums', with this). An empty asm on each running sum keeps one add per product, in order. */
#define IN_ORDER(u, v) __asm__("" : "+x"(u), "+x"(v))

typedef void (*dot_tile)(const struct dot_job *, int, int, const __m256i *);

/* The integer sums, with or without VNNI (the builds for CPUs with AVX-VNNI or AVX-512 VNNI
   define HEXA_VNNI). A 32-bit lane is one column's 4 inputs either way: maddubs' int16 pair sums
   added per group then paired by a madd with ones, or vpdpbusd's quad sums accumulated in int32
   directly; Q8_0's int16 pairs by madd and an add, or by vpdpwssd. Exact integers both ways, so
   the same bits. */
#ifdef HEXA_VNNI
/* vpdpbusd chains on its accumulator (latency 5 on Zen 4): with 1-2 rows the block's 8 groups on
   2 chains per output vector left it slower than maddubs + add (4.6 against 4.2 ms a step); odd
   groups on chains of their own, added at the block's end (integers: the order is free) */
#define SPLIT(MR) ((MR) <= 2)
#define QUAD_SUM(s, ones) ((void)(ones), (s))
#ifdef __AVXVNNI__
#define QUAD_ADD(s, w, x) _mm256_dpbusd_avx_epi32(s, w, x)
#define PAIR_ADD(s, w, x) _mm256_dpwssd_avx_epi32(s, w, x)
#else   /* AVX-512 VNNI with VL (AMD Zen 4, Intel Ice Lake server): the same instructions, EVEX-encoded */
#define QUAD_ADD(s, w, x) _mm256_dpbusd_epi32(s, w, x)
#define PAIR_ADD(s, w, x) _mm256_dpwssd_epi32(s, w, x)
#endif
#else
#define SPLIT(MR) 0
#define QUAD_ADD(s, w, x) _mm256_add_epi16(s, _mm256_maddubs_epi16(w, x))
#define QUAD_SUM(s, ones) _mm256_madd_epi16(s, ones)
#define PAIR_ADD(s, w, x) _mm256_add_epi32(s, _mm256_madd_epi16(w, x))
#endif

/* 4-bit codes: the whole block's pair sums in int16, then one widening. The planes' tile below
   computes the same in its general form, with int32 sums the nibbles do not need: on a Q4_K weight
   of 65536 x 1536 it took 1.05x this one's time at 4 rows (1.0x at 1, 2, 6 and 8). */
/* rows [m0, m0+MR) x panel p; PRE: the codes come quads_codes'd from pre (the panel's, decoded once
   for all its row tiles), else decoded here */
#define DOT_Q4(MR, PRE)                                                                           \
static void dot_Q4_##MR##_##PRE(const struct dot_job *a, int m0, int p, const __m256i *pre) {     \
    const int nb = a->K / QB, bits = a->bits, bytes = BLOCK_BYTES(bits);                          \
    const char *end = item_end(a, p);                                                             \
    const int8_t *codes = (const int8_t *)a->codes + (int64_t)m0 * a->K;                          \
    __m256 acc[MR][2];                                                                            \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps(); \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        const uint8_t *bp = block_at(a->packed, bits, nb, p, blk);                                \
        if (!PRE) read_ahead(bp, bytes, end);                                                     \
        __m256i s[MR][2], u[MR][2];   /* int16 pair sums, or with VNNI the int32 quad sums themselves */ \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) s[i][0] = s[i][1] = u[i][0] = u[i][1] = _mm256_setzero_si256(); \
        _Pragma("GCC unroll 8") for (int g = 0; g < QB / 4; g++) {                                \
            __m256i w[2];                                                                         \
            if (PRE) {                                                                            \
                w[0] = _mm256_load_si256(pre + (blk * QB / 4 + g) * 2);                           \
                w[1] = _mm256_load_si256(pre + (blk * QB / 4 + g) * 2 + 1);                       \
            } else {                                                                              \
                quads_codes(bp + CODE_HEAD(bits), 0, g, w);                                       \
            }                                                                                     \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                int32_t quad;                                                                     \
                memcpy(&quad, codes + (int64_t)i * a->K + blk * QB + 4 * g, sizeof quad);         \
                const __m256i xv = _mm256_set1_epi32(quad);                                       \
                if (SPLIT(MR) && (g & 1)) {   /* VNNI, 1-2 rows: odd groups on chains of their own */ \
                    u[i][0] = QUAD_ADD(u[i][0], w[0], xv);                                        \
                    u[i][1] = QUAD_ADD(u[i][1], w[1], xv);                                        \
                    IN_ORDER(u[i][0], u[i][1]);                                                   \
                    continue;                                                                     \
                }                                                                                 \
                s[i][0] = QUAD_ADD(s[i][0], w[0], xv);                                            \
                s[i][1] = QUAD_ADD(s[i][1], w[1], xv);                                            \
                IN_ORDER(s[i][0], s[i][1]);                                                       \
            }                                                                                     \
        }                                                                                         \
        if (SPLIT(MR))                                                                            \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                s[i][0] = _mm256_add_epi32(s[i][0], u[i][0]);                                     \
                s[i][1] = _mm256_add_epi32(s[i][1], u[i][1]);                                     \
            }                                                                                     \
        float tmp[HEAD_MAX * PW];                                                                        \
        const float *d = PRE && HEAD_OF(bits) ? pre_head(pre, bits, nb, QB / 2, blk) : block_head(a->packed, bits, nb, p, blk, tmp); \
        const __m256 d0 = quad_order(d, 0), d1 = quad_order(d, 1);                                \
        const __m256 mn0 = quad_order(d + PW, 0), mn1 = quad_order(d + PW, 1);                    \
        const __m256i ones = _mm256_set1_epi16(1);                                                \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                    \
            const int64_t at = (int64_t)(m0 + i) * nb + blk;                                      \
            const __m256 dx = _mm256_set1_ps(a->dx[at]), sx = _mm256_set1_ps(a->sx[at]);          \
            acc[i][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(QUAD_SUM(s[i][0], ones)), _mm256_mul_ps(d0, dx), acc[i][0]); \
            acc[i][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(QUAD_SUM(s[i][1], ones)), _mm256_mul_ps(d1, dx), acc[i][1]); \
            acc[i][0] = _mm256_fmadd_ps(mn0, sx, acc[i][0]);                                      \
            acc[i][1] = _mm256_fmadd_ps(mn1, sx, acc[i][1]);                                      \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                          \
        store_panel(_mm256_permute2f128_ps(acc[i][0], acc[i][1], 0x20), _mm256_permute2f128_ps(acc[i][0], acc[i][1], 0x31), \
                    a->b, a->res, a->y, m0 + i, p * PW, a->N);                                    \
}


/* The planes' tiles, one per layout (layout.h: 5, 6, 9; and 3, nibbles alone); what each is follows from its number at
   compile time: PL_ planes, OFF_ the codes' offset, SPL_ a scale per 16 inputs, MIN_ an m per
   column. RUN_: groups of 4 inputs whose maddubs pair sums add up in int16 (|u * xq| pairs: 2 * 15
   * 128 = 3840 for layout 3's 4 bits, 8 groups; 2 * 31 * 128 = 7936 for 5 bits, 4 groups; 2 * 63 *
   128 = 16128 for 6 bits, 2 groups). */
#define BITS_P2 2   /* nibbles with an m per 16 inputs (MINH_) */
#define BITS_P3 3
#define BITS_P5 5
#define BITS_P6 6
#define BITS_P9 9
#define BITS_B7 7   /* with VNNI, the 8-bit codes as biased bytes (quads_bytes): u = q + 128 */
#define BITS_B8 8
#define BITS_T7 11  /* with VNNI, table codes looked up into B7 and B8's bytes, in their own tiles too */
#define BITS_T8 10
#define TAB_(FMT) TABLE_CODES(BITS_##FMT)
#define PL_(FMT) PLANES(BITS_##FMT)
#define OFF_(FMT) TILE_OFFSET(BITS_##FMT)
#define SPL_(FMT) SPLIT_SCALE(BITS_##FMT)
#define MIN_(FMT) (MIN_AT(BITS_##FMT) >= 0)
#define MINH_(FMT) MIN_HALF(BITS_##FMT)
#define RUN_(FMT) (8 >> PL_(FMT))
/* With VNNI the quad sums are int32 from the start: straight into isum (the 6-row tiles' int16
   runs beside them took 36 of the 32 registers), and a run only gathers the odd groups' chains
   (SPLIT) before each float step */
#ifdef HEXA_VNNI
#define DIRECT 1
#define RUN_AT(FMT) (SPL_(FMT) ? QB / 8 : QB / 4)
#else   /* with a split scale a run ends at the half block (layout 3's runs of 8 would pass it) */
#define DIRECT 0
#define RUN_AT(FMT) (SPL_(FMT) && RUN_(FMT) > QB / 8 ? QB / 8 : RUN_(FMT))
#endif

/* The integer sums so far times d * dx into the fp32 sums (quad column order). Planes hold
   u = q + OFF: sum(u * xq) - OFF * sum(xq) is sum(q * xq), the very integer the bytes gave (the
   int16 pairs', for 8-bit codes: then these are FLOAT_SUMS' operations on the same values). */
#define NIB_FLOAT(FMT, MR, d, half) {                                                             \
    const __m256 d0 = quad_order(d, 0), d1 = quad_order(d, 1);                                    \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                        \
        const int64_t at = (int64_t)(m0 + i) * nb + blk;                                          \
        const __m256 dx = _mm256_set1_ps(a->dx[at]);                                              \
        __m256i t0 = isum[i][0], t1 = isum[i][1];                                                 \
        if (OFF_(FMT)) {   /* offs: OFF * the codes' sum, formed when the row was quantized */ \
            const __m256i o = _mm256_set1_epi32(a->qs[2 * at + half]);                           \
            t0 = _mm256_sub_epi32(t0, o);                                                         \
            t1 = _mm256_sub_epi32(t1, o);                                                         \
        }                                                                                         \
        acc[i][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t0), _mm256_mul_ps(d0, dx), acc[i][0]);     \
        acc[i][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t1), _mm256_mul_ps(d1, dx), acc[i][1]);     \
        isum[i][0] = isum[i][1] = _mm256_setzero_si256();                                         \
    } }

/* rows [m0, m0+MR) x panel p; PRE: the codes come quads_codes'd from pre (the panel's, decoded
   once for all its row tiles), else decoded here */
#define DOT_NIB(FMT, MR, PRE)                                                                     \
static void dot_##FMT##_##MR##_##PRE(const struct dot_job *a, int m0, int p, const __m256i *pre) { \
    const int nb = a->K / QB, bits = a->bits, bytes = BLOCK_BYTES(bits);                          \
    const char *end = item_end(a, p);                                                             \
    const int8_t *codes = (const int8_t *)a->codes + (int64_t)m0 * a->K;                          \
    const __m256i lut = TAB_(FMT) ? table_lut(bits, 0x80) : _mm256_setzero_si256();              \
    __m256 acc[MR][2];                                                                            \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps(); \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        const uint8_t *bp = block_at(a->packed, bits, nb, p, blk);                                \
        if (!PRE) read_ahead(bp, bytes, end);                                                     \
        float tmp[HEAD_MAX * PW];                                                                        \
        const float *d = PRE && HEAD_OF(bits) ? pre_head(pre, bits, nb, QB / 2, blk) : block_head(a->packed, bits, nb, p, blk, tmp); \
        const float *hd = d;                                                                      \
        __m256i s[MR][2], u[MR][2], isum[MR][2];   /* int16 pair sums (with VNNI the int32 quad sums), int32 sums */ \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                      \
            s[i][0] = s[i][1] = u[i][0] = u[i][1] = isum[i][0] = isum[i][1] = _mm256_setzero_si256(); \
        _Pragma("GCC unroll 8") for (int g = 0; g < QB / 4; g++) {                                \
            if (SPL_(FMT) && g == QB / 8) {   /* inputs 0-15 carry a scale of their own */        \
                NIB_FLOAT(FMT, MR, d, 0)                                                          \
                d += PW;                                                                          \
            }                                                                                     \
            __m256i w[2];                                                                         \
            if (PRE) {                                                                            \
                w[0] = _mm256_load_si256(pre + (blk * QB / 4 + g) * 2);                           \
                w[1] = _mm256_load_si256(pre + (blk * QB / 4 + g) * 2 + 1);                       \
            } else if (TAB_(FMT)) {                                                               \
                quads_table(bp + CODE_HEAD(bits), lut, g, w);                                     \
            } else {   /* not for B7, B8: they only run over pre */                               \
                quads_codes(bp + CODE_HEAD(bits), PL_(FMT), g, w);                                \
            }                                                                                     \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                int32_t quad;                                                                     \
                memcpy(&quad, codes + (int64_t)i * a->K + blk * QB + 4 * g, sizeof quad);         \
                const __m256i xv = _mm256_set1_epi32(quad);                                       \
                if (SPLIT(MR) && (g & 1)) {   /* VNNI, 1-2 rows: odd groups on chains of their own */ \
                    u[i][0] = QUAD_ADD(u[i][0], w[0], xv);                                        \
                    u[i][1] = QUAD_ADD(u[i][1], w[1], xv);                                        \
                    IN_ORDER(u[i][0], u[i][1]);                                                   \
                } else if (DIRECT) {                                                              \
                    isum[i][0] = QUAD_ADD(isum[i][0], w[0], xv);                                  \
                    isum[i][1] = QUAD_ADD(isum[i][1], w[1], xv);                                  \
                    IN_ORDER(isum[i][0], isum[i][1]);                                             \
                } else {                                                                          \
                    s[i][0] = QUAD_ADD(s[i][0], w[0], xv);                                        \
                    s[i][1] = QUAD_ADD(s[i][1], w[1], xv);                                        \
                    IN_ORDER(s[i][0], s[i][1]);                                                   \
                }                                                                                 \
            }                                                                                     \
            if ((g + 1) % RUN_AT(FMT) == 0) {   /* the int16 run ends: into the int32 sums */     \
                const __m256i ones = _mm256_set1_epi16(1);                                        \
                _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                            \
                    if (!DIRECT) {                                                                \
                        isum[i][0] = _mm256_add_epi32(isum[i][0], QUAD_SUM(s[i][0], ones));       \
                        isum[i][1] = _mm256_add_epi32(isum[i][1], QUAD_SUM(s[i][1], ones));       \
                    }                                                                             \
                    if (SPLIT(MR)) {                                                              \
                        isum[i][0] = _mm256_add_epi32(isum[i][0], u[i][0]);                       \
                        isum[i][1] = _mm256_add_epi32(isum[i][1], u[i][1]);                       \
                        u[i][0] = u[i][1] = _mm256_setzero_si256();                               \
                    }                                                                             \
                    s[i][0] = s[i][1] = _mm256_setzero_si256();                                   \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        NIB_FLOAT(FMT, MR, d, 1)                                                                  \
        if (MIN_(FMT) && !MINH_(FMT)) {   /* + m * dx * sum(xq) */                                \
            const float *mn = hd + MIN_AT(BITS_##FMT);                                            \
            const __m256 mn0 = quad_order(mn, 0), mn1 = quad_order(mn, 1);                        \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                const __m256 sx = _mm256_set1_ps(a->sx[(int64_t)(m0 + i) * nb + blk]);            \
                acc[i][0] = _mm256_fmadd_ps(mn0, sx, acc[i][0]);                                  \
                acc[i][1] = _mm256_fmadd_ps(mn1, sx, acc[i][1]);                                  \
            }                                                                                     \
        }                                                                                         \
        if (MINH_(FMT)) {   /* + m of each half * dx * the half's sum(xq) (half_sx) */            \
            const float *mn = hd + MIN_AT(BITS_##FMT);                                            \
            const __m256 a0 = quad_order(mn, 0), a1 = quad_order(mn, 1);                          \
            const __m256 b0 = quad_order(mn + PW, 0), b1 = quad_order(mn + PW, 1);                \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                const int64_t at = (int64_t)(m0 + i) * nb + blk;                                  \
                const __m256 s0 = _mm256_set1_ps(half_sx(a, at, 0)), s1 = _mm256_set1_ps(half_sx(a, at, 1)); \
                acc[i][0] = _mm256_fmadd_ps(b0, s1, _mm256_fmadd_ps(a0, s0, acc[i][0]));          \
                acc[i][1] = _mm256_fmadd_ps(b1, s1, _mm256_fmadd_ps(a1, s0, acc[i][1]));          \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                          \
        store_panel(_mm256_permute2f128_ps(acc[i][0], acc[i][1], 0x20), _mm256_permute2f128_ps(acc[i][0], acc[i][1], 0x31), \
                    a->b, a->res, a->y, m0 + i, p * PW, a->N);                                    \
}
#define DOT_NIBS(FMT) \
    DOT_NIB(FMT, 1, 0) DOT_NIB(FMT, 2, 0) DOT_NIB(FMT, 3, 0) DOT_NIB(FMT, 4, 0) DOT_NIB(FMT, 5, 0) DOT_NIB(FMT, 6, 0) \
    DOT_NIB(FMT, 7, 0) DOT_NIB(FMT, 8, 0) DOT_NIB(FMT, 1, 1) DOT_NIB(FMT, 2, 1) DOT_NIB(FMT, 3, 1) DOT_NIB(FMT, 4, 1) \
    DOT_NIB(FMT, 5, 1) DOT_NIB(FMT, 6, 1) DOT_NIB(FMT, 7, 1) DOT_NIB(FMT, 8, 1)
#define DOT_Q4S DOT_Q4(1, 0) DOT_Q4(2, 0) DOT_Q4(3, 0) DOT_Q4(4, 0) DOT_Q4(5, 0) DOT_Q4(6, 0) DOT_Q4(7, 0) DOT_Q4(8, 0) \
                DOT_Q4(1, 1) DOT_Q4(2, 1) DOT_Q4(3, 1) DOT_Q4(4, 1) DOT_Q4(5, 1) DOT_Q4(6, 1) DOT_Q4(7, 1) DOT_Q4(8, 1)
DOT_Q4S DOT_NIBS(P5) DOT_NIBS(P6) DOT_NIBS(P9) DOT_NIBS(P3) DOT_NIBS(P2)

#define NIB_TILES(FMT)                                                                            \
    {{0, dot_##FMT##_1_0, dot_##FMT##_2_0, dot_##FMT##_3_0, dot_##FMT##_4_0, dot_##FMT##_5_0, dot_##FMT##_6_0, \
      dot_##FMT##_7_0, dot_##FMT##_8_0},                                                          \
     {0, dot_##FMT##_1_1, dot_##FMT##_2_1, dot_##FMT##_3_1, dot_##FMT##_4_1, dot_##FMT##_5_1, dot_##FMT##_6_1, \
      dot_##FMT##_7_1, dot_##FMT##_8_1}}
static const dot_tile TILES_NIB[6][2][9] = {NIB_TILES(Q4), NIB_TILES(P5), NIB_TILES(P6), NIB_TILES(P9),
                                            NIB_TILES(P3), NIB_TILES(P2)};   /* 4, 5, 6, 9, 3, 2 */
#ifdef HEXA_VNNI   /* 8-bit codes as bytes: the int16 runs of 8 groups could saturate without VNNI */
#define DOT_PRES(FMT) DOT_NIB(FMT, 1, 1) DOT_NIB(FMT, 2, 1) DOT_NIB(FMT, 3, 1) DOT_NIB(FMT, 4, 1) \
                      DOT_NIB(FMT, 5, 1) DOT_NIB(FMT, 6, 1) DOT_NIB(FMT, 7, 1) DOT_NIB(FMT, 8, 1)
#define PRE_TILES(FMT) {{0}, {0, dot_##FMT##_1_1, dot_##FMT##_2_1, dot_##FMT##_3_1, dot_##FMT##_4_1, \
                              dot_##FMT##_5_1, dot_##FMT##_6_1, dot_##FMT##_7_1, dot_##FMT##_8_1}}
DOT_PRES(B7) DOT_PRES(B8)   /* over pre only: one-tile calls (1-8 rows) take pairs (PAIRS) */
static const dot_tile TILES_BYTES[2][2][9] = {PRE_TILES(B7), PRE_TILES(B8)};
#define BYTE_TILES(codes) TILES_BYTES[(codes) == 8]
/* Table codes' one-tile calls decode their nibbles as the 4-bit codes' tiles do, one shuffle more
   (quads_table), where Q8_0's take int16 pairs: with pairs_table instead, a Qwen2.5-1.5B-shaped
   IQ4_XS file decoded at 126-132 tok/s against 158-174 with these (hexa bench, plain decoding, the
   two builds alternated three times each; end to end with drafts 113-116 against 131-135; Zen 4,
   2026-12-04) */
#define DOT_OWN(FMT) DOT_NIB(FMT, 1, 0) DOT_NIB(FMT, 2, 0) DOT_NIB(FMT, 3, 0) DOT_NIB(FMT, 4, 0) \
                     DOT_NIB(FMT, 5, 0) DOT_NIB(FMT, 6, 0) DOT_NIB(FMT, 7, 0) DOT_NIB(FMT, 8, 0)
#define OWN_TILES_OF(FMT, PRE_FMT)                                                                \
    {{0, dot_##FMT##_1_0, dot_##FMT##_2_0, dot_##FMT##_3_0, dot_##FMT##_4_0, dot_##FMT##_5_0, dot_##FMT##_6_0, \
      dot_##FMT##_7_0, dot_##FMT##_8_0},                                                          \
     {0, dot_##PRE_FMT##_1_1, dot_##PRE_FMT##_2_1, dot_##PRE_FMT##_3_1, dot_##PRE_FMT##_4_1, dot_##PRE_FMT##_5_1, \
      dot_##PRE_FMT##_6_1, dot_##PRE_FMT##_7_1, dot_##PRE_FMT##_8_1}}
DOT_OWN(T7) DOT_OWN(T8)
static const dot_tile TILES_TABLE[2][2][9] = {OWN_TILES_OF(T7, B7), OWN_TILES_OF(T8, B8)};
#define TABLE_TILES(codes) TILES_TABLE[(codes) == 10]   /* 10: 8's head, 11: 7's */
#else
#define BYTE_TILES(codes) TILES_Q8   /* not reached: PAIRS */
#define TABLE_TILES(codes) TILES_Q8
#endif

/* ---- Q8_0: int16 pairs ------------------------------------------------------------------------
   Signed codes times signed codes. _mm256_maddubs_epi16 needs one side unsigned: |q|, with q's
   sign moved onto xq (_mm256_sign_epi8), reaches 2 * 128 * 127 = 32512 a lane, so no two groups
   add up in int16, and a sign, a maddubs, a widening madd and an add per 8 columns x 4 inputs is
   the count of two madd and two add on these pairs; splitting q into nibbles doubles the
   maddubs instead. So these stay int16 pairs (without VNNI, and in one-tile calls with it); rows
   gain from IN_ORDER and the decoding shared. */

/* rows [m0, m0+MR) x panel p; PRE: the pairs come from pre (decoded once per panel); TAB: the
   codes are table codes (layouts 10, 11), looked up as they are read */
#define DOT_Q8(MR, PRE) DOT_PAIRS(q8, MR, PRE, 0)
#define DOT_PAIRS(NAME, MR, PRE, TAB)                                                             \
static void dot_##NAME##_##MR##_##PRE(const struct dot_job *a, int m0, int p, const __m256i *pre) { \
    const int nb = a->K / QB, half = a->K / 2, bits = a->bits;                                    \
    const int bytes = BLOCK_BYTES(bits), head = CODE_HEAD(bits);                                  \
    const __m256i lut = TAB ? table_lut(bits, 0) : _mm256_setzero_si256();                        \
    const char *end = item_end(a, p);                                                             \
    const int32_t *pairs = (const int32_t *)a->codes + (int64_t)m0 * half;                        \
    __m256 acc[MR][2];                                                                            \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps(); \
    for (int blk = 0; blk < nb; blk++) {                                                          \
        const uint8_t *bp = block_at(a->packed, bits, nb, p, blk);                                \
        if (!PRE) read_ahead(bp, bytes, end);                                                     \
        float tmp[HEAD_MAX * PW];                                                                        \
        const float *hd = PRE && HEAD_OF(bits) ? pre_head(pre, bits, nb, QB, blk) : block_head(a->packed, bits, nb, p, blk, tmp), *d = hd; \
        __m256i isum[MR][2];                                                                      \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) isum[i][0] = isum[i][1] = _mm256_setzero_si256(); \
        _Pragma("GCC unroll 16") for (int kk = 0; kk < QB / 2; kk++) {                            \
            if (SPLIT_SCALE(bits) && kk == QB / 4) {   /* inputs 0-15 carry a scale of their own */ \
                FLOAT_SUMS(MR, d);                                                                \
                d += PW;                                                                          \
            }                                                                                     \
            __m256i w[2];                                                                         \
            if (PRE) {                                                                            \
                w[0] = _mm256_load_si256(pre + (blk * QB / 2 + kk) * 2);                          \
                w[1] = _mm256_load_si256(pre + (blk * QB / 2 + kk) * 2 + 1);                      \
            } else if (TAB) {                                                                     \
                pairs_table(bp, head, lut, kk, w);                                                \
            } else {                                                                              \
                pairs_q8(bp, head, kk, w);                                                        \
            }                                                                                     \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                const __m256i xv = _mm256_set1_epi32(pairs[(int64_t)i * half + blk * QB / 2 + kk]); \
                isum[i][0] = PAIR_ADD(isum[i][0], w[0], xv);                                      \
                isum[i][1] = PAIR_ADD(isum[i][1], w[1], xv);                                      \
                IN_ORDER(isum[i][0], isum[i][1]);                                                 \
            }                                                                                     \
        }                                                                                         \
        FLOAT_SUMS(MR, d);                                                                        \
        if (MIN_AT(bits) >= 0)   /* + m * dx * sum(xq), as Q4_1 */                                \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                \
                const __m256 sx = _mm256_set1_ps(a->sx[(int64_t)(m0 + i) * nb + blk]);            \
                const float *mn = hd + MIN_AT(bits);                                              \
                acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(mn), sx, acc[i][0]);                  \
                acc[i][1] = _mm256_fmadd_ps(_mm256_loadu_ps(mn + 8), sx, acc[i][1]);              \
            }                                                                                     \
    }                                                                                             \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                          \
        store_panel(acc[i][0], acc[i][1], a->b, a->res, a->y, m0 + i, p * PW, a->N);             \
}
/* the integer sums so far times d * dx into the fp32 sums; the integer sums start again */
#define FLOAT_SUMS(MR, d)                                                                         \
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                        \
        const __m256 dx = _mm256_set1_ps(a->dx[(int64_t)(m0 + i) * nb + blk]);                    \
        acc[i][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][0]), _mm256_mul_ps(_mm256_loadu_ps(d), dx), acc[i][0]); \
        acc[i][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][1]), _mm256_mul_ps(_mm256_loadu_ps(d + 8), dx), acc[i][1]); \
        isum[i][0] = isum[i][1] = _mm256_setzero_si256();                                         \
    }
DOT_Q8(1, 0) DOT_Q8(2, 0) DOT_Q8(3, 0) DOT_Q8(4, 0) DOT_Q8(5, 0) DOT_Q8(6, 0) DOT_Q8(7, 0) DOT_Q8(8, 0)
DOT_Q8(1, 1) DOT_Q8(2, 1) DOT_Q8(3, 1) DOT_Q8(4, 1) DOT_Q8(5, 1) DOT_Q8(6, 1) DOT_Q8(7, 1) DOT_Q8(8, 1)

static const dot_tile TILES_Q8[2][9] = {
    {0, dot_q8_1_0, dot_q8_2_0, dot_q8_3_0, dot_q8_4_0, dot_q8_5_0, dot_q8_6_0, dot_q8_7_0, dot_q8_8_0},
    {0, dot_q8_1_1, dot_q8_2_1, dot_q8_3_1, dot_q8_4_1, dot_q8_5_1, dot_q8_6_1, dot_q8_7_1, dot_q8_8_1}};
#ifndef HEXA_VNNI   /* table codes as pairs (without VNNI only: PAIRS): their own tiles, or over pre
                       (decode_panel looked them up) Q8_0's */
DOT_PAIRS(qt, 1, 0, 1) DOT_PAIRS(qt, 2, 0, 1) DOT_PAIRS(qt, 3, 0, 1) DOT_PAIRS(qt, 4, 0, 1)
DOT_PAIRS(qt, 5, 0, 1) DOT_PAIRS(qt, 6, 0, 1) DOT_PAIRS(qt, 7, 0, 1) DOT_PAIRS(qt, 8, 0, 1)
static const dot_tile TILES_QT[2][9] = {
    {0, dot_qt_1_0, dot_qt_2_0, dot_qt_3_0, dot_qt_4_0, dot_qt_5_0, dot_qt_6_0, dot_qt_7_0, dot_qt_8_0},
    {0, dot_q8_1_1, dot_q8_2_1, dot_q8_3_1, dot_q8_4_1, dot_q8_5_1, dot_q8_6_1, dot_q8_7_1, dot_q8_8_1}};
#else
#define TILES_QT TILES_Q8   /* not reached: table codes' tiles (TILES_TABLE) */
#endif

/* Panels per work item. A call of up to STEP_ROWS rows (a decoding step, a draft tree) streams
   its codes once, and each item starts a stream whose first READ_AHEAD bytes nothing read ahead:
   such calls take items of up to STEP_GP panels, while every thread still gets 4 or more. Whole
   decoding steps on AMD Zen 5 (2026-12-02, builds alternated in one process), 24 panels against
   6: Qwen2.5-1.5B's widths 1.01-1.05x as fast, SmolLM2-135M Q4_1 1.08-1.15x; 3 panels 0.88x. */
#define STEP_ROWS 8
#define STEP_GP 24
static int item_panels(int M, int P, int threads) {
    const int gp = P / (4 * threads);
    return M > STEP_ROWS || gp < GP ? GP : gp > STEP_GP ? STEP_GP : gp;
}

/* a work item: panels [g*gp, g*gp+gp) x all rows, in tiles (the codes of a panel stay in cache
   across the row tiles; each row's arithmetic is the same in every tile) */
static void dot_group(void *ctx, int g) {
    const struct dot_job *a = ctx;
    const int q8 = a->pairs, byte = BYTE_CODES(a->bits), codes = CODES(a->bits);
    const dot_tile (*tiles_of)[9] = q8 ? (TABLE_CODES(a->bits) ? TILES_QT : TILES_Q8)
                                    : TABLE_CODES(a->bits) ? TABLE_TILES(codes) : byte ? BYTE_TILES(codes)
                                    : TILES_NIB[codes == 5 ? 1 : codes == 6 ? 2 : codes == 9 ? 3 : codes == 3 ? 4 : codes == 2 ? 5 : 0];
    const int p_end = item_stop(a, g);
    const int lim = q8 ? ONE_Q8 : ONE_Q4, mr = q8 ? MR_Q8 : byte ? MR_B : MR_Q4;   /* table codes own: ONE_Q4 */
    /* tiles that decode their own codes where the format has them (VNNI's byte tiles are over pre
       only), else over pre */
    const int own = tiles_of[0][1] && a->M <= lim * OWN_TILES;
    const int tiles = own ? (a->M + lim - 1) / lim : (a->M + mr - 1) / mr;   /* rows split evenly over the fewest tiles */
    __m256i *pre = NULL;
    if (!own && !(pre = aligned_alloc(64, pre_bytes(a)))) abort();
    for (int p = g * a->gp; p < p_end; p++) {
        if (pre) decode_panel(a, p, pre);
        for (int t = 0, m = 0; t < tiles; t++) {
            const int rows = tile_rows(a->M - m, tiles - t);
            tiles_of[!own][rows](a, m, p, pre);
            m += rows;
        }
    }
    free(pre);
}

/* the rows' activations quantized, one row an item: a prompt chunk's rows on every thread */
struct quant_job {
    const float *x;
    uint8_t *codes;
    float *dx, *sx;
    int32_t *qs;
    size_t row_bytes;
    int K, nb, pairs, off, split, k256;
};

static void quantize_item(void *ctx, int m) {
    const struct quant_job *j = ctx;
    const float *x = j->x + (int64_t)m * j->K;
    uint8_t *codes = j->codes + j->row_bytes * m;
    float *dx = j->dx + (int64_t)m * j->nb, *sx = j->sx + (int64_t)m * j->nb;
    int32_t *qs = j->qs + (int64_t)m * j->nb * 2;
    if (j->k256) quantize_row_k256(x, j->K, j->off, j->split, (int8_t *)codes, dx, sx, qs);
    else quantize_row(x, j->K, j->pairs, j->off, j->split, codes, dx, sx, qs);
}

#ifdef HEXA_AMX
/* the AMX tiles' calls (amx.h, at the end of this file). Fewer rows keep the VNNI tiles: a whole
   SmolLM2-135M Q4_1 / Qwen3-1.7B-shaped forward pass of 8 rows took 0.89x / 0.82x their time on
   the tiles (16 rows 0.96x / 1.00x; kernels bench --model, the builds in turn in one process):
   one 16-row tile a panel pays its loads and stores for few rows. From 32 rows on the tiles
   win (one weight 1.2-1.6x at 64-256 rows), and from 24 on since the VNNI tiles of 9-16 rows
   decode their own codes (OWN_TILES, dot.h) and 17-31 rows stay over pre: whole passes with the
   tiles from 24 rows against from 32 (2026-12-04, builds in turn in one process, 300 tokens of
   context) 24 / 26 / 28 / 30 rows 1.07 / 1.10 / 1.11 / 1.12x as fast on Llama-3.2-3B's widths,
   Qwen2.5-1.5B's 0.99x at 24 and 1.05 / 1.08x at 28 / 31, SmolLM2-135M Q4_1 1.00-1.01x; from
   17 rows Qwen2.5's 17 / 20 rows took 1.06 / 1.01x the time. (AMX_ROWS: one-off builds) */
#ifndef AMX_ROWS
#define AMX_ROWS 24
#endif
static int amx_on;
static void amx_group(void *ctx, int g);
#endif

/* The rows quantized, then their products: decoding's arithmetic, or with k256 (k256_applies) a
   K-quant's prompt rows with one scale per 256 inputs on the 512-bit tiles */
static void dot_rows(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                     int M, int N, int K, int bits, int threads, int k256) {
    const int nb = K / QB, pairs = k256 ? 0 : PAIRS(bits, M);
    const size_t row_bytes = pairs ? sizeof(int32_t) * (K / 2) : (size_t)K;
    uint8_t *codes = malloc(row_bytes * (size_t)M);
    float *scales = malloc(sizeof(float) * (size_t)M * nb * 2);
    int32_t *qs = malloc(sizeof(int32_t) * (size_t)M * nb * 2);
    if (!codes || !scales || !qs) abort();
    struct quant_job q = {x, codes, scales, scales + (int64_t)M * nb, qs, row_bytes, K, nb, pairs,
                          QS_OFFSET(bits), SPLIT_SCALE(bits), k256};   /* what OFF_ and SPL_ are in its tiles */
    if (M >= QUANT_PARALLEL) hexa_run(quantize_item, &q, M, threads);
    else for (int m = 0; m < M; m++) quantize_item(&q, m);
    const int P = (N + PW - 1) / PW;
    /* named fields: a field left out is 0, and gp 0 is a division by zero (item_end) */
    struct dot_job a = {.packed = packed, .b = b, .res = res, .y = y, .codes = codes, .dx = scales,
                        .sx = scales + (int64_t)M * nb, .qs = qs, .M = M, .N = N, .K = K, .P = P, .bits = bits,
                        .pairs = pairs, .gp = item_panels(M, P, threads), .k256 = k256};
#ifdef HEXA_AMX
    /* pre is a B tile per block (amx.h); chosen here, not in dot_group, which stays the avx512-vnni
       build's code: with the branch inside it, 8- and 16-row passes took 1.1x their time */
    if (M >= AMX_ROWS && !pairs && amx_on)
        hexa_run(amx_group, &a, (P + a.gp - 1) / a.gp, threads);
    else
#endif
#ifdef HEXA_WIDE
    if (k256 || (wide_on && !pairs && (M > (BYTE_CODES(bits) ? ONE_Q8 : ONE_Q4) || (M >= WIDE_ONE && !BYTE_CODES(bits)))))
        wide_dot(&a, threads);
    else
#endif
        hexa_run(dot_group, &a, (P + a.gp - 1) / a.gp, threads);
    free(codes);
    free(scales);
    free(qs);
}

/* Prompt rows of a K-quant (Q4_K, Q5_K, Q6_K: HEAD_K) on the 512-bit tiles (hexa_linear_prefill):
   the rows quantized with one scale per 256 inputs, the K-quants' own super-block (llama.cpp's
   Q8_K takes the same), so a block's float step needs no product d * dx (wide.c's K256 tiles). A
   one-off build without that product ran a Qwen2.5-1.5B-shaped pass of 64 / 256 rows in
   0.91 / 0.88-0.91x the time; these tiles, alternated with decoding's, 256-row passes of three
   wide shapes 1.03-1.10x as fast in 15 of 18 measures (AMD Zen 4, 2026-12-04; 1-12 rows
   0.96-1.04x). Prompt rows need not take decoding's bits (begin_prefill; amx_bf16.h's bf16 rows
   are the same case); each row is still computed alone, so a prompt's KV does not depend on its
   chunking. 1 where a weight's prompt rows take it (dot_rows' k256), 0 where they take decoding's
   arithmetic (no 512-bit tiles, another head). */
static int k256_applies(int bits, int K) {
#ifdef HEXA_WIDE
    const int layout = CODES(bits);   /* the K-quants' layouts: Q4_K, Q5_K, Q6_K, Q3_K */
    return wide_on && HEAD_OF(bits) == HEAD_K && (layout == 4 || layout == 5 || layout == 6 || layout == 3) &&
           K % (QB * KSUPER) == 0;
#else
    (void)bits, (void)K;
    return 0;
#endif
}

void hexa_linear_dot(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                     int M, int N, int K, int bits, int threads) {
    dot_rows(x, packed, b, res, y, M, N, K, bits, threads, 0);
}

#include "zmm.h"
#include "amx.h"
#include "amx_bf16.h"
