/* The packed weights' layout, shared by every ISA's kernels: panels of output columns, and the
   codes' bytes per panel and block (x86/quant_gemm.c and arm64/quant_gemm.c pack it; the linear and
   dot kernels of both read it). Python never reads these: it asks hexa_quant_block_bytes. */
#ifndef HEXA_LAYOUT_H
#define HEXA_LAYOUT_H

#include <stdint.h>
#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "half.h"
#include "hexa.h"

#define PW HEXA_PANEL   /* panel width: output columns per packed panel */
#define GP 6    /* panels per work item */

#define QB HEXA_QUANT_BLOCK               /* inputs per quantization block */

/* Per panel and block of 32 inputs, a head of fp32 arrays of 16 (one value per column) then the
   codes (HEAD_BYTES, CODE_BYTES below). CODES(bits) says which:
   - 4 (Q4_1, Q4_0, Q4_K): d[16], m[16], then 16 bytes per input pair (the even input's code in the
     low nibble): w = d*q + m;
   - 8 (Q8_0): d[16], then 16 bytes per input: w = d*q;
   - 5-bit and 6-bit codes as *planes*: the nibbles as layout 4's, then the codes' high bits
     (PLANES below), each code stored as u = q + CODE_OFFSET >= 0: 5 (Q5_1, Q5_K: d[16], m[16], q
     0..31: w = d*q + m), 9 (Q5_0: d[16], q -16..15: w = d*q) and 6 (Q6_K: d[16] of inputs 0-15,
     d[16] of inputs 16-31, q -32..31: w = d*q; a Q6_K scale covers 16 inputs). A byte per code
     took a decoding step 1.09 bytes a Q6_K weight (compact head) where the GGUF has 0.82;
     planes take 0.84;
   - 3 (Q3_K): 4-bit codes stored as u = q + 8 in layout 4's nibbles, no planes, no m, and
     layout 6's two scales: d[16] of inputs 0-15, d[16] of inputs 16-31, q -8..7 (Q3_K's -4..3):
     w = d*q. Q3_K took 0.84 bytes a weight in layout 6 where the GGUF has 0.43; this takes 0.59;
   - 2 (Q2_K): layout 4's nibbles (u = q, 0..15, no offset) with a scale and an m per 16 inputs:
     d[16] of inputs 0-15, d[16] of inputs 16-31, m[16] of inputs 0-15, m[16] of inputs 16-31:
     w = d*q + m. Q2_K's min is per 16 inputs, which no other layout holds (7's m is per 32), so
     its sums take each half block's sum of codes (MIN_HALF). A fused projection of Q2_K, Q3_K
     (q + 8, m = -8d) and Q4_K / Q4_0 / Q4_1 parts is kept in it too. 0.69 bytes a weight with a
     compact head where the GGUF has 0.33 (fp32 panels took 4);
   - 7, the union of them all: d[16] of inputs 0-15, d[16] of inputs 16-31, m[16], 8-bit codes:
     w = d*q + m. One fused projection whose parts are of different types (Q4_K_M's Q4_K q and k
     with a Q6_K v) is kept in it, exactly;
   - 10 and 11, *table codes*: layout 4's nibbles, each the index of a code in one of CODE_TABLE's
     tables of 16 int8 values (TABLE(bits)), after 8's head (10) or 7's (11): w = d * table[u]
     (+ m). The IQ types' codes take 16 values or fewer (IQ4's table, IQ3_XXS, IQ2 and IQ1 grid
     values with a sign; IQ3_S's are 2u - 15, layout 4's), which Q8_0's bytes held at 1.05 bytes
     a weight where an IQ4_XS GGUF holds 0.53; these take 0.55 (layout 11: 0.64). Every kernel
     reads them as 8 and 7's bytes (READ_AS), looked up from the nibbles where 8's bytes are loaded
     (a shuffle per 16 or 32 codes). */
#define CODES(bits) ((bits) & 15)                    /* 2, 3, 4, 5, 6, 7, 8, 9, 10 or 11 */
#define TABLE(bits) ((bits) >> HEXA_TABLE_SHIFT & 7)
#define TABLE_CODES(bits) (CODES(bits) >= 10)
#define READ_AS(bits) (CODES(bits) == 10 ? 8 : CODES(bits) == 11 ? 7 : CODES(bits))   /* the layout whose bytes and head these are read as */
/* the tables (TABLE(bits)), the GGUF's own values: IQ4_NL / IQ4_XS's kvalues_iq4nl, IQ3_XXS's
   grid values +-4 .. 62, the IQ2 types' +-8, 25, 43, the IQ1 types' 8 * (-1, 0, 1)
   +- 1 (their grid plus a delta of +-1/8, the scale divided by 8) (engine/model/gguf_codes.py
   packs the indices; hexa_code_table gives these to its tests) */
static const int8_t CODE_TABLE[4][16] = {
    {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113},
    {-62, -52, -44, -36, -28, -20, -12, -4, 4, 12, 20, 28, 36, 44, 52, 62},
    {-43, -25, -8, 8, 25, 43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {-9, -7, -1, 1, 7, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
/* Per CODES value, packed into one constant each and read by a shift: the kernels find a block's
   address from these once per block, and chains of conditionals there (as first written) took a
   Q4_K product 8-20% longer. */
#define PLANES(bits) ((int)(0x42400u >> (2 * CODES(bits))) & 3)                 /* 5, 9: 1; 6: 2; else 0 */
#define CODE_OFFSET(bits) (CODES(bits) == 6 ? 32 : CODES(bits) == 9 ? 16 : CODES(bits) == 3 ? 8 : 0)
#define CODE_BYTES(bits) (64 * ((int)(0x445886544400ull >> (4 * CODES(bits))) & 15))   /* 2, 3, 4, 10, 11: 256 .. 7, 8: 512 */
#define SPLIT_SCALE(bits) (CODES(bits) == 6 || CODES(bits) == 7 || CODES(bits) == 3 || CODES(bits) == 11 || CODES(bits) == 2)   /* a second scale for inputs 16-31 */
/* codes the exact kernels and readers take as unsigned bytes u = q + CODE_OFFSET (codes.h's
   block_codes): the planes' layouts, 3 and 2 (offset 0); layout 4's nibbles have readers of their own */
#define OFFSET_CODES(bits) (PLANES(bits) || CODES(bits) == 3 || CODES(bits) == 2)
#define MIN_AT(bits) (CODES(bits) == 7 || CODES(bits) == 11 || CODES(bits) == 2 ? 2 * PW : CODES(bits) == 5 || CODES(bits) == 4 ? PW : -1)   /* m's floats into the head, or none */
/* an m per 16 inputs (layout 2): m of inputs 16-31 follows m of 0-15 (MIN_AT + PW), and the dot
   kernels add each half's m times dx * that half's sum of the row's codes, after both halves'
   products: acc + m0 * (dx * h0), then + m1 * (dx * h1), in every tile of both ISAs */
#define MIN_HALF(bits) (CODES(bits) == 2)
/* the m of input k's half */
#define MIN_OF(bits, k) (MIN_AT(bits) + (MIN_HALF(bits) && (k) >= QB / 2 ? PW : 0))

/* The planes, after the nibbles: the high bits of the 8 groups of 4 inputs, in the order the dot
   kernels use the nibbles (x86/quant_dot.c's quads: each 32-bit lane one column's 4 inputs,
   columns 0-3 | 8-11 in the first 32 bytes, 4-7 | 12-15 in the next). 8 / PLANES groups share
   such 64 bytes, group g's bits at g % (8 / PLANES) * PLANES of each byte, so one shift and one
   mask give a group's high bits in place (a code's high bits shifted into bit 4 are the code's). */
static inline int plane_byte(int c, int k, int planes) {   /* column c, input k: the byte after the nibbles */
    const int per = 8 / planes;
    return k / 4 / per * 64 + (c / 4 & 1) * 32 + c / 8 * 16 + c % 4 * 4 + k % 4;
}
static inline int plane_shift(int k, int planes) { return k / 4 % (8 / planes) * planes; }

/* Code q of column c, input k of a block whose codes start at cp (the scalar reader: row lookups,
   the test driver; the kernels decode whole groups) */
static inline int code_at(const uint8_t *cp, int bits, int c, int k) {
    if (CODES(bits) == 7 || CODES(bits) == 8) return (int8_t)cp[k * PW + c];
    int u = cp[k / 2 * PW + c] >> (4 * (k & 1)) & 15;
    if (TABLE_CODES(bits)) return CODE_TABLE[TABLE(bits)][u];
    if (PLANES(bits))
        u |= (cp[QB / 2 * PW + plane_byte(c, k, PLANES(bits))] >> plane_shift(k, PLANES(bits)) & ((1 << PLANES(bits)) - 1)) << 4;
    return u - CODE_OFFSET(bits);
}

/* ... and the writer (cp's bytes zeroed first), for packers and the test driver */
static inline void put_code(uint8_t *cp, int bits, int c, int k, int q) {
    if (CODES(bits) == 7 || CODES(bits) == 8) { cp[k * PW + c] = (uint8_t)(int8_t)q; return; }
    int u = q + CODE_OFFSET(bits);
    if (TABLE_CODES(bits))   /* q's index in the table (q one of its values) */
        for (u = 15; u > 0 && CODE_TABLE[TABLE(bits)][u] != q; u--) continue;
    cp[k / 2 * PW + c] |= (uint8_t)((u & 15) << (4 * (k & 1)));
    if (PLANES(bits))
        cp[QB / 2 * PW + plane_byte(c, k, PLANES(bits))] |= (uint8_t)((u >> 4) << plane_shift(k, PLANES(bits)));
}

/* Compact heads: the same codes and the same fp32 head values, in fewer bytes, so a decoding step
   streams less (it is bound by memory: layout 4 held 0.75 bytes a weight where a Q4_K GGUF holds
   0.56). ``bits`` = the codes' layout above | HEAD_F16 or HEAD_K:
   - HEAD_F16: each head value as fp16 (exact for the d and m of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0);
   - HEAD_K: per panel, first a factor[HEAD_N][16] fp32 per super-block of 8 blocks (256 inputs:
     a K-quant's d and -dmin), then the blocks, each head value an int8 times its factor (Q4_K's
     6-bit sc and mn, Q6_K's int8 scales: products of an fp16 and <= 8 bits, exact in fp32).
   block_head rebuilds the fp32 values exactly, so every kernel gives the bits it gives on the fp32
   head. Blocks stay in order, each its head then its codes. */
#define HEAD_F16 HEXA_HEAD_F16
#define HEAD_K HEXA_HEAD_K
#define KSUPER HEXA_KSUPER                           /* blocks per HEAD_K factor (256 inputs) */
#define HEAD_OF(bits) ((bits) & (HEAD_F16 | HEAD_K))
#define HEAD_N(bits) ((int)(0x311132222400ull >> (4 * CODES(bits))) & 15)   /* fp32 arrays of 16: 8, 9, 10: 1; 7, 11: 3; 2: 4; else 2 */
#define HEAD_MAX 4                                   /* the most: a head's floats fit tmp[HEAD_MAX * PW] */
#define HEAD_BYTES(bits) (HEAD_N(bits) * PW * (4 >> (HEAD_OF(bits) / HEAD_F16)))   /* 4, 2 or 1 bytes a value */
#define BLOCK_BYTES(bits) (HEAD_BYTES(bits) + CODE_BYTES(bits))
#define CODE_HEAD(bits) HEAD_BYTES(bits)             /* the codes' start in a block */
#define FACTOR_BYTES(bits, nb) (HEAD_OF(bits) == HEAD_K ? (int64_t)(nb) / KSUPER * HEAD_N(bits) * PW * 4 : 0)
#define PANEL_BYTES(bits, nb) (FACTOR_BYTES(bits, nb) + (int64_t)(nb) * BLOCK_BYTES(bits))

/* Block blk of panel p */
static inline const uint8_t *block_at(const uint8_t *packed, int bits, int nb, int p, int blk) {
    return packed + (int64_t)p * PANEL_BYTES(bits, nb) + FACTOR_BYTES(bits, nb) + (int64_t)blk * BLOCK_BYTES(bits);
}

/* out[0..n) = the factor f times the int8 values at k (n a multiple of 16), 8 or 4 at a time */
static inline void scale_i8(const float *f, const int8_t *k, float *out, int n) {
    for (int i = 0; i < n; i += 8) {
#if defined(__AVX2__)
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(k + i))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(f + i), v));
#elif defined(__aarch64__)
        const int16x8_t w = vmovl_s8(vld1_s8(k + i));
        vst1q_f32(out + i, vmulq_f32(vld1q_f32(f + i), vcvtq_f32_s32(vmovl_s16(vget_low_s16(w)))));
        vst1q_f32(out + i + 4, vmulq_f32(vld1q_f32(f + i + 4), vcvtq_f32_s32(vmovl_high_s16(w))));
#else
        for (int j = i; j < i + 8; j++) out[j] = f[j] * (float)k[j];
#endif
    }
}

/* The block's head as fp32 arrays (HEAD_N of 16): the block's own bytes for an fp32 head, else
   rebuilt into tmp[HEAD_MAX * PW]. fp16 -> fp32 and an fp16 factor times a small integer are exact. */
static inline const float *block_head(const uint8_t *packed, int bits, int nb, int p, int blk, float *tmp) {
    const uint8_t *bp = block_at(packed, bits, nb, p, blk);
    const int n = HEAD_N(bits) * PW;
    if (HEAD_OF(bits) == HEAD_F16) {
        widen_f16(bp, tmp, n);
        return tmp;
    }
    if (HEAD_OF(bits) == HEAD_K) {
        const float *f = (const float *)(packed + (int64_t)p * PANEL_BYTES(bits, nb)) + (int64_t)(blk / KSUPER) * n;
        scale_i8(f, (const int8_t *)bp, tmp, n);
        return tmp;
    }
    return (const float *)bp;
}

/* The ISA's fp32 tiles over rows [0, M) x panels [p0, p0+np), pk pointing at panel p0
   (x86/packed_gemm.c, arm64/packed_gemm.c; internal to the library) */
__attribute__((visibility("hidden"))) void hexa_f32_group(const float *x, const float *pk, const float *b,
                                                          const float *res, float *y, int M, int p0, int np,
                                                          int N, int K);
/* hexa_f32_group's tiles reading fp16 / bf16 panels (bits HEXA_PANELS_*) as they load them, where the
   ISA has them for M rows (x86: 1-3); 0 where it has not (the caller widens into a buffer) */
__attribute__((visibility("hidden"))) int hexa_half_group(const float *x, const uint16_t *pk, int bits,
                                                          const float *b, const float *res, float *y, int M,
                                                          int p0, int np, int N, int K);
/* a per-thread buffer of at least this many floats for panels rebuilt from codes or widened from
   2-byte values (pack.c; NULL when out of memory) */
__attribute__((visibility("hidden"))) float *hexa_panel_buffer(int64_t floats);

#endif
