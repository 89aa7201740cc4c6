/* The CPU's int8 dot-product instruction roof, for `python -m engine.bench.kernels --roof`: how
 * many 8-bit multiply-adds a second `threads` threads issue when they do nothing else (16
 * independent accumulators a thread, no loads), with the instruction a build's kernels take:
 * vpdpbusd on the VNNI builds (zmm and ymm timed, the faster kept: AMD Zen 4 issues a zmm one at
 * half the ymm rate, Zen 5 at the same). A tile's GMAC/s over this is the share of the roof it
 * reaches: what its loads, decoding and float steps leave. AVX2 has no one instruction for it
 * (maddubs, madd and add), so no roof there. Not part of the engine: compiled by the bench alone. */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define R16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

struct job { int64_t n; int wide; int32_t sink; };

static void *run(void *arg) {
    struct job *j = arg;
    int32_t s = 0;
#if defined(__AVX512VNNI__)
    if (j->wide) {
        __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
#define D(i) __m512i x##i = _mm512_set1_epi32(i);
        R16(D)
#undef D
        for (int64_t i = 0; i < j->n; i++) {
            __asm__ volatile("" : "+v"(a), "+v"(b));   /* the operands are not constants to fold */
#define S(i) x##i = _mm512_dpbusd_epi32(x##i, a, b);
            R16(S)
#undef S
        }
#define F(i) s += _mm512_reduce_add_epi32(x##i);
        R16(F)
#undef F
        j->sink = s;
        return 0;
    }
#endif
#if defined(HEXA_VNNI)
    __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5), t = _mm256_setzero_si256();
#define D(i) __m256i x##i = _mm256_set1_epi32(i);
    R16(D)
#undef D
    for (int64_t i = 0; i < j->n; i++) {
        __asm__ volatile("" : "+x"(a), "+x"(b));
#if defined(__AVX512VNNI__)
#define S(i) x##i = _mm256_dpbusd_epi32(x##i, a, b);
#else
#define S(i) x##i = _mm256_dpbusd_avx_epi32(x##i, a, b);
#endif
        R16(S)
#undef S
    }
#define G(i) t = _mm256_add_epi32(t, x##i);
    R16(G)
#undef G
    j->sink = _mm256_extract_epi32(t, 0) + s;
#endif
    return 0;
}

/* GMAC/s of `threads` threads, each issuing n x 16 of the instruction (wide: zmm) */
static double timed(int threads, int64_t n, int wide) {
    pthread_t th[64];
    struct job jobs[64];
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    const double t0 = now();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (struct job){n, wide, 0};
        pthread_create(&th[i], 0, run, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(th[i], 0);
    const double seconds = now() - t0;
    return (double)n * 16 * threads * (wide ? 64 : 32) / seconds / 1e9;
}

/* the roof in GMAC/s, or -1 on a build without a dot-product instruction (AVX2) */
double hexa_roof_gmacs(int threads, int64_t n) {
#if defined(HEXA_VNNI)
    double best = timed(threads, n, 0);
#if defined(__AVX512VNNI__)
    const double z = timed(threads, n, 1);
    if (z > best) best = z;
#endif
    return best;
#else
    (void)threads, (void)n, (void)timed;
    return -1.0;
#endif
}
