/* exp for 4 lanes, shared by attention.c (softmax) and glue.c (SiLU): the NEON twin of
   x86/vexp.h's exp8, operation by operation, so every lane gets the same bits as there. */
#ifndef HEXA_VEXP_H
#define HEXA_VEXP_H

#include <arm_neon.h>

/* exp for 4 lanes: Cephes-style range reduction + degree-6 polynomial (rel. error ~2e-7);
   -inf -> 0 exactly, as masked keys need. Separate mul and add as in exp8 (-ffp-contract=off
   keeps them apart); the clamp spells out _mm256_max_ps (x > lo ? x : lo, so NaN -> lo), which
   NEON's fmax / fmaxnm do not give for NaNs. */
static inline float32x4_t exp4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(-87.3f), hi = vdupq_n_f32(88.3f);
    const uint32x4_t zero_mask = vcltq_f32(x, lo);
    x = vminq_f32(vbslq_f32(vcgtq_f32(x, lo), x, lo), hi);   /* no NaN left for the min */
    const float32x4_t fx = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    x = vsubq_f32(x, vmulq_f32(fx, vdupq_n_f32(0.693359375f)));
    x = vsubq_f32(x, vmulq_f32(fx, vdupq_n_f32(-2.12194440e-4f)));
    float32x4_t y = vdupq_n_f32(1.9875691500E-4f);
    y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(1.3981999507E-3f));
    y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(8.3334519073E-3f));
    y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(4.1665795894E-2f));
    y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(1.6666665459E-1f));
    y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(5.0000001201E-1f));
    y = vaddq_f32(vmulq_f32(vmulq_f32(y, x), x), vaddq_f32(x, vdupq_n_f32(1.0f)));
    /* fx is a whole number in [-126, 127]: any conversion gives it exactly */
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(fx), vdupq_n_s32(127)), 23);
    y = vmulq_f32(y, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), zero_mask));
}

#endif
