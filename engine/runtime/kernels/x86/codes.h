/* The codes of a block as the x86 kernels take them in (quant_dot.c's integer sums, quant_gemm.c's
   rebuilt weights): layout.h's nibbles and planes decoded into unsigned bytes u = q + CODE_OFFSET. */
#ifndef HEXA_X86_CODES_H
#define HEXA_X86_CODES_H

#include <immintrin.h>
#include <stdint.h>

#include "layout.h"

/* 16 columns x inputs 4g .. 4g+3 of the block whose codes start at cp, each 32-bit lane one
   column's 4 codes (arm64/quant_dot.c's quads): w[0] columns 0-3 | 8-11, w[1] columns 4-7 | 12-15.
   The nibbles, then (planes > 0) the group's high bits: one shift brings them to bit 4 of their
   byte (a 16-bit shift by at most 4 moves no plane bit into the other byte's place), one mask. */
static inline void quads_codes(const uint8_t *cp, int planes, int g, __m256i *w) {
    const __m256i zip = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,
                                         0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    const __m256i v = _mm256_loadu_si256((const __m256i *)cp + g);   /* pairs 2g | 2g+1 */
    /* per column c, a 16-bit lane: its byte of pair 2g, its byte of pair 2g+1 (c 0-7 | 8-15) */
    const __m256i z = _mm256_shuffle_epi8(_mm256_permute4x64_epi64(v, 0xd8), zip), low = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_and_si256(z, low), hi = _mm256_and_si256(_mm256_srli_epi16(z, 4), low);
    w[0] = _mm256_unpacklo_epi8(lo, hi);
    w[1] = _mm256_unpackhi_epi8(lo, hi);
    if (!planes) return;
    const int per = 8 / planes, sh = g % per * planes;
    const __m256i *pl = (const __m256i *)(cp + QB / 2 * PW) + g / per * 2;
    const __m256i mask = _mm256_set1_epi8((char)(((1 << planes) - 1) << 4));
    for (int h = 0; h < 2; h++) {
        const __m256i p = _mm256_loadu_si256(pl + h);
        const __m256i at4 = sh <= 4 ? _mm256_sll_epi16(p, _mm_cvtsi32_si128(4 - sh)) : _mm256_srl_epi16(p, _mm_cvtsi32_si128(sh - 4));
        w[h] = _mm256_or_si256(w[h], _mm256_and_si256(at4, mask));
    }
}

/* The 8-bit codes (layouts 7 and 8: [32 inputs][16 columns] int8 at cp) of inputs 4g .. 4g+3 in
   quads_codes' order, each biased by 128 into an unsigned byte u = q + 128: vpdpbusd multiplies
   unsigned bytes by signed ones, so the int16 pairs' q * xq become u * xq - 128 * xq (quant_dot.c) */
static inline void quads_bytes(const uint8_t *cp, int g, __m256i *w) {
    const __m128i *c = (const __m128i *)cp + 4 * g, bias = _mm_set1_epi8((char)0x80);
    const __m128i i0 = _mm_xor_si128(_mm_loadu_si128(c), bias), i1 = _mm_xor_si128(_mm_loadu_si128(c + 1), bias);
    const __m128i i2 = _mm_xor_si128(_mm_loadu_si128(c + 2), bias), i3 = _mm_xor_si128(_mm_loadu_si128(c + 3), bias);
    /* a 16-bit lane per column: inputs 0, 1 (columns 0-7 | 8-15), then inputs 2, 3 */
    const __m128i l01 = _mm_unpacklo_epi8(i0, i1), h01 = _mm_unpackhi_epi8(i0, i1);
    const __m128i l23 = _mm_unpacklo_epi8(i2, i3), h23 = _mm_unpackhi_epi8(i2, i3);
    w[0] = _mm256_set_m128i(_mm_unpacklo_epi16(h01, h23), _mm_unpacklo_epi16(l01, l23));   /* 0-3 | 8-11 */
    w[1] = _mm256_set_m128i(_mm_unpackhi_epi16(h01, h23), _mm_unpackhi_epi16(l01, l23));   /* 4-7 | 12-15 */
}

/* Table codes (layouts 10, 11) as quads_bytes gives 8-bit codes: the nibbles' quads, each index
   looked up in lut (the table's 16 values biased by 128, in both 128-bit lanes: table_lut) */
static inline void quads_table(const uint8_t *cp, __m256i lut, int g, __m256i *w) {
    quads_codes(cp, 0, g, w);
    w[0] = _mm256_shuffle_epi8(lut, w[0]);
    w[1] = _mm256_shuffle_epi8(lut, w[1]);
}

/* bits' table in both lanes, its values xor bias (0x80: biased by 128 as quads_bytes' codes, 0
   as they are) */
static inline __m256i table_lut(int bits, int bias) {
    const __m128i t = _mm_loadu_si128((const __m128i *)CODE_TABLE[TABLE(bits)]);
    return _mm256_broadcastsi128_si256(_mm_xor_si128(t, _mm_set1_epi8((char)bias)));
}

/* A whole block's codes u as [32 inputs][16 columns] bytes (the exact kernels' order): the quads
   of each group, each 128-bit lane's 4 x 4 bytes transposed, then the two halves' columns joined */
static inline void block_codes(const uint8_t *cp, int planes, uint8_t *u) {
    const __m256i t = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                       0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int g = 0; g < QB / 4; g++) {
        __m256i w[2];
        quads_codes(cp, planes, g, w);
        /* a: 32-bit lane i = input i, columns 0-3 (low half) | 8-11; b: columns 4-7 | 12-15 */
        const __m256i a = _mm256_shuffle_epi8(w[0], t), b = _mm256_shuffle_epi8(w[1], t);
        const __m256i x = _mm256_unpacklo_epi32(a, b), y = _mm256_unpackhi_epi32(a, b);
        /* x: 64-bit lanes input 0 cols 0-7, input 1 cols 0-7 | input 0 cols 8-15, input 1 cols 8-15 */
        const __m256i i01 = _mm256_permute4x64_epi64(x, 0xd8), i23 = _mm256_permute4x64_epi64(y, 0xd8);
        _mm256_storeu_si256((__m256i *)(u + 4 * g * PW), i01);
        _mm256_storeu_si256((__m256i *)(u + (4 * g + 2) * PW), i23);
    }
}

/* [32 inputs][16 columns] table indices u -> their values, in place (code_bytes.h) */
static inline void table_block(uint8_t *u, int bits) {
    const __m256i lut = table_lut(bits, 0);
    for (int i = 0; i < QB * PW; i += 32)
        _mm256_storeu_si256((__m256i *)(u + i), _mm256_shuffle_epi8(lut, _mm256_loadu_si256((const __m256i *)(u + i))));
}

#include "code_bytes.h"

#endif
