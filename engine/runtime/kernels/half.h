/* fp16 <-> fp32, 8 values at a time, the same bits on every ISA: widening is exact, narrowing
   rounds to nearest even (IEEE, as F16C's vcvtps2ph with _MM_FROUND_TO_NEAREST_INT and ARM's
   fcvtn under the default FPCR do). Compact weight heads (layout.h) and the fp16 KV cache
   (rope.c writes it, attention.c reads it) use them. A scalar _Float16 conversion is a libgcc
   call on x86: a 1-row Q4_1 product took 1.5x as long with it. */
#ifndef HEXA_HALF_H
#define HEXA_HALF_H

#include <stdint.h>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

/* out[0..n) = the fp16 values at h (n a multiple of 8) */
static inline void widen_f16(const void *h, float *out, int n) {
    const uint8_t *b = h;
    for (int i = 0; i < n; i += 8) {
#if defined(__F16C__)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 2 * i))));
#elif defined(__aarch64__)
        vst1q_f32(out + i, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(b + 2 * i))));
        vst1q_f32(out + i + 4, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(b + 2 * i + 8))));
#else
        for (int j = i; j < i + 8; j++) {
            _Float16 v;
            __builtin_memcpy(&v, b + 2 * j, 2);
            out[j] = (float)v;
        }
#endif
    }
}

/* out[0..n) = the bf16 values at h (n a multiple of 8): a bf16 is an fp32's top half, exactly */
static inline void widen_bf16(const void *h, float *out, int n) {
    const uint8_t *b = h;
    for (int i = 0; i < n; i += 8) {
#if defined(__AVX2__)
        const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(b + 2 * i)));
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
#elif defined(__aarch64__)
        const uint16x8_t v = vreinterpretq_u16_u8(vld1q_u8(b + 2 * i));
        vst1q_f32(out + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16)));
        vst1q_f32(out + i + 4, vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(v), 16)));
#else
        for (int j = i; j < i + 8; j++) {
            uint16_t v;
            __builtin_memcpy(&v, b + 2 * j, 2);
            const uint32_t u = (uint32_t)v << 16;
            __builtin_memcpy(out + j, &u, 4);
        }
#endif
    }
}

/* the fp16 values of x[0..n) at h, rounded to nearest even (n a multiple of 8) */
static inline void narrow_f16(const float *x, void *h, int n) {
    uint8_t *b = h;
    for (int i = 0; i < n; i += 8) {
#if defined(__F16C__)
        _mm_storeu_si128((__m128i *)(b + 2 * i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#elif defined(__aarch64__)
        vst1_u8(b + 2 * i, vreinterpret_u8_f16(vcvt_f16_f32(vld1q_f32(x + i))));
        vst1_u8(b + 2 * i + 8, vreinterpret_u8_f16(vcvt_f16_f32(vld1q_f32(x + i + 4))));
#else
        for (int j = i; j < i + 8; j++) {
            const _Float16 v = (_Float16)x[j];
            __builtin_memcpy(b + 2 * j, &v, 2);
        }
#endif
    }
}

#endif
