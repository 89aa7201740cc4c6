/* The codes of a block as the ARM64 kernels take them in (quant_dot.c's integer sums,
   quant_gemm.c's rebuilt weights): layout.h's nibbles and planes decoded into unsigned bytes
   u = q + CODE_OFFSET, as x86/codes.h does. */
#ifndef HEXA_ARM64_CODES_H
#define HEXA_ARM64_CODES_H

#include <arm_neon.h>
#include <stdint.h>

#include "layout.h"

/* The group's high bits (at g % (8 / planes) * planes of each plane byte) into bit 4 of the
   nibble: one shift by a vector count (left for a count > 0, right otherwise: g need not be a
   compile-time constant), one mask, one OR */
static inline uint8x16_t or_plane(uint8x16_t nib, uint8x16_t plane, int planes, int g) {
    const int sh = g % (8 / planes) * planes;
    const uint8x16_t at4 = vshlq_u8(plane, vdupq_n_s8((int8_t)(4 - sh)));
    return vorrq_u8(nib, vandq_u8(at4, vdupq_n_u8((uint8_t)(((1 << planes) - 1) << 4))));
}

/* 16 columns x inputs 4g .. 4g+3 of the block whose codes start at cp, each 32-bit lane one
   column's 4 codes: w[c] columns 4c .. 4c+3. The nibbles, then (planes > 0) the group's high bits,
   16 bytes per column quad in layout.h's order: columns 0-3, 8-11, 4-7, 12-15. */
static inline void quads_codes(const uint8_t *cp, int planes, int g, int8x16_t *w) {
    const uint8x16_t b0 = vld1q_u8(cp + 32 * g), b1 = vld1q_u8(cp + 32 * g + 16);
    const uint8x16_t z[2] = {vzip1q_u8(b0, b1), vzip2q_u8(b0, b1)};   /* per column: inputs (0|1, 2|3) */
    uint8x16_t u[4];
    for (int h = 0; h < 2; h++) {
        const uint8x16_t lo = vandq_u8(z[h], vdupq_n_u8(0x0f)), hi = vshrq_n_u8(z[h], 4);
        u[2 * h] = vzip1q_u8(lo, hi);
        u[2 * h + 1] = vzip2q_u8(lo, hi);
    }
    if (planes) {
        const uint8_t *pl = cp + QB / 2 * PW + g / (8 / planes) * 64;
        static const int at[4] = {0, 32, 16, 48};
        for (int c = 0; c < 4; c++) u[c] = or_plane(u[c], vld1q_u8(pl + at[c]), planes, g);
    }
    for (int c = 0; c < 4; c++) w[c] = vreinterpretq_s8_u8(u[c]);
}

/* A whole block's codes u as [32 inputs][16 columns] bytes (the exact kernels' order): the
   nibbles as they lie (pair kk: input 2kk low, 2kk+1 high), then the planes, 64 bytes at a time:
   vld4 splits them by input (byte 4i + j: input 4g + j), a table puts the columns in order */
static inline void block_codes(const uint8_t *cp, int planes, uint8_t *u) {
    for (int kk = 0; kk < QB / 2; kk++) {
        const uint8x16_t v = vld1q_u8(cp + kk * PW);
        vst1q_u8(u + 2 * kk * PW, vandq_u8(v, vdupq_n_u8(0x0f)));
        vst1q_u8(u + (2 * kk + 1) * PW, vshrq_n_u8(v, 4));
    }
    if (!planes) return;
    static const uint8_t order[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};
    const uint8x16_t idx = vld1q_u8(order);
    const int per = 8 / planes;
    for (int s = 0; s < QB / 4 / per; s++) {
        const uint8x16x4_t v = vld4q_u8(cp + QB / 2 * PW + 64 * s);
        for (int j = 0; j < 4; j++) {
            const uint8x16_t plane = vqtbl1q_u8(v.val[j], idx);
            for (int g = s * per; g < (s + 1) * per; g++) {
                uint8_t *dst = u + (4 * g + j) * PW;
                vst1q_u8(dst, or_plane(vld1q_u8(dst), plane, planes, g));
            }
        }
    }
}

/* Table codes (layouts 10, 11) as 8-bit codes: the nibbles' quads, each index looked up in lut
   (the table's 16 values: vld1q_s8(CODE_TABLE[TABLE(bits)])) */
static inline void quads_table(const uint8_t *cp, int8x16_t lut, int g, int8x16_t *w) {
    quads_codes(cp, 0, g, w);
    for (int c = 0; c < 4; c++) w[c] = vqtbl1q_s8(lut, vreinterpretq_u8_s8(w[c]));
}

/* [32 inputs][16 columns] table indices u -> their values, in place (code_bytes.h) */
static inline void table_block(uint8_t *u, int bits) {
    const int8x16_t lut = vld1q_s8(CODE_TABLE[TABLE(bits)]);
    for (int i = 0; i < QB * PW; i += 16) vst1q_s8((int8_t *)u + i, vqtbl1q_s8(lut, vld1q_u8(u + i)));
}

#include "code_bytes.h"

#endif
