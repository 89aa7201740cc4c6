/* How the dot kernels (x86/quant_dot.c, arm64/quant_dot.c) quantize activations: one copy, in
   plain C, so both ISAs feed their integer dot products the same codes and scales. */
#ifndef HEXA_QUANTIZE_H
#define HEXA_QUANTIZE_H

#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "layout.h"

/* rows from which the dot kernels hand quantizing a product's activations to the pool, a row an
   item (one thread did a prompt chunk's rows while the other core idled: ~5% of a 1,000-token
   prefill; from 16 rows: 0.9-1.06x) */
#define QUANT_PARALLEL 32

/* (int)v as x86's cvttss2si gives it: INT_MIN for NaN and out-of-range v (undefined in C, 0 or
   saturated on ARM). A block whose 1 / d overflows (max|x| < ~4e-37) or that holds NaN / inf
   gets there; spelling the x86 result out keeps those blocks the same bits on both ISAs. */
static inline int x86_int(float v) {
    return v >= -2147483648.f && v < 2147483648.f ? (int)v : INT_MIN;
}

/* The codes, d and d * sum of a block whose max|x| is amax (x86/quant_dot.c finds amax faster
   when it can, and gives it here). */
static inline void quantize_scaled(const float *xb, float amax, int8_t *q, float *dx, float *sx) {
    const float d = amax / 127.f, id = d > 0.f ? 1.f / d : 0.f;
    uint32_t sum = 0;   /* wraps as x86's int adds do when a code is INT_MIN */
    for (int i = 0; i < QB; i++) {
        const int c = x86_int(nearbyintf(xb[i] * id));
        q[i] = (int8_t)c;
        sum += (uint32_t)c;
    }
    *dx = d;
    *sx = d * (float)(int32_t)sum;
}

/* One block of QB inputs -> its codes q = round(x / d) (d = max|x| / 127, so |q| <= 127; an
   out-of-range code is INT_MIN, stored as 0), d, and d * sum of the codes (Q4_1's minimum term). */
static inline void quantize_block(const float *xb, int8_t *q, float *dx, float *sx) {
    float amax = 0.f;
    for (int i = 0; i < QB; i++) amax = fmaxf(amax, fabsf(xb[i]));
    quantize_scaled(xb, amax, q, dx, sx);
}

#endif
