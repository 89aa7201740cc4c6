/* A panel's 16 columns in one zmm, for the tiles that hold a row's sums so (wide.c; amx.h and
 * amx_bf16.h, included at the end of quant_dot.c): the quads' column order (quad_order's two halves,
 * columns 0-3 | 8-11 | 4-7 | 12-15, as pre holds a group's 16 columns), one float step of a row,
 * and a row's store. A lane's arithmetic is the ymm tiles' (NIB_FLOAT's, DOT_Q4's), so holding 16
 * columns in one register changes no bit. The amx build is not compiled for AVX-512: there these
 * take target attributes, as amx.h's functions do. */
#ifndef HEXA_X86_ZMM_H
#define HEXA_X86_ZMM_H

#ifdef __AVX512F__
#define ZMM_TARGET
#else
#define ZMM_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

/* d[16] (or m[16]) in the quads' column order */
ZMM_TARGET static inline __m512 zmm_join(const float *d) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(quad_order(d, 0))),
                                               _mm256_castps_pd(quad_order(d, 1)), 1));
}

/* acc + float(sum - offs) * (d * dx): a block's (or half block's) integer sums into a row's fp32
   sums, NIB_FLOAT's operations lane for lane (off: the format's codes carry an offset) */
ZMM_TARGET static inline __m512 zmm_step(__m512 acc, __m512i sum, const int off, int32_t offs, __m512 d, __m512 dx) {
    if (off) sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(offs));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, dx), acc);
}

/* acc + float(sum - offs) * d: zmm_step without dx, for sums whose scale dx is the same over a
   super-block (prompt rows of the K256 tiles, wide.c): dx then multiplies once per 8 blocks */
ZMM_TARGET static inline __m512 zmm_step_k256(__m512 acc, __m512i sum, const int off, int32_t offs, __m512 d) {
    if (off) sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(offs));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), d, acc);
}

/* sum + the dot products of w's 16 columns with the 4 signed bytes at q, broadcast in the
   instruction itself ({1to16}): GCC loaded each broadcast with a vpbroadcastd of its own (12 a
   group in a 12-row tile, as many as the vpdpbusd), and on AMD Zen 4 folding them ran one weight's
   prompt rows 1.02-1.05x as fast at 64 and 256 rows (16: 1.00-1.10x; same bits, builds alternated
   in one process, 2026-12-04). The asm is also IN_ORDER's barrier: one add per product, no spills. */
#define ZMM_DPBUSD_BCST(sum, w, q) __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(sum) : "v"(w), "m"(*(q)))

/* row m's 16 sums of panel p (the quads' column order) into y */
ZMM_TARGET static inline void zmm_store_row(const struct dot_job *a, __m512 acc, int m, int p) {
    const __m256 lo = _mm512_castps512_ps256(acc);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
    store_panel(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31), a->b, a->res, a->y, m,
                p * PW, a->N);
}

#endif
