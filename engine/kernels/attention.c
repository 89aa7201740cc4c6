/* hexa's attention for decoding steps and draft-tree verifications (AVX2+FMA): few query rows
 * against a long KV cache, where torch's flash kernel spent ~3x the time it takes to read K and V.
 *
 * Work is split by (kv head, fixed chunk of 128 keys); each item reads its K/V chunk once for all
 * query rows of the head, keeps per-row partial softmax sums, and the chunks are combined in key
 * order. Chunk boundaries depend only on key positions, never on the number of query rows or
 * threads, so a row's output is the same alone or in a whole draft tree (batch invariance), and
 * masked keys (additive -inf) contribute exact zeros.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "hexa.h"
#include "pool.h"

#define CHUNK 128

static const float zeros[64] __attribute__((aligned(32)));

/* exp for 8 lanes: Cephes-style range reduction + degree-6 polynomial (rel. error ~2e-7);
   -inf -> 0 exactly, as masked keys need. */
static inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.3f), hi = _mm256_set1_ps(88.3f);
    __m256 zero_mask = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_sub_ps(x, _mm256_mul_ps(fx, _mm256_set1_ps(0.693359375f)));
    x = _mm256_sub_ps(x, _mm256_mul_ps(fx, _mm256_set1_ps(-2.12194440e-4f)));
    __m256 y = _mm256_set1_ps(1.9875691500E-4f);
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(1.3981999507E-3f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(8.3334519073E-3f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(4.1665795894E-2f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(1.6666665459E-1f));
    y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(5.0000001201E-1f));
    y = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(y, x), x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(zero_mask, y);
}

#define RT 3      /* query rows per tile (a GQA group of one token) */

/* s[i][j] = q_i . k_j for rt <= RT rows and n keys (64 dims). Every (row, key) dot is the same
   operation sequence whatever rt, n or the key's slot among the 4: 8-lane partial products in
   dimension order, then one fixed horizontal-add tree. */
static void scores(const float *q, const float *k, float s[RT][CHUNK], int rt, int n) {
    for (int j = 0; j < n; j += 4) {
        const float *kj[4];
        for (int t = 0; t < 4; t++)        /* past the chunk's end: a zero key, discarded */
            kj[t] = j + t < n ? k + (int64_t)(j + t) * 64 : zeros;
        __m256 a[RT][4];
        for (int i = 0; i < RT; i++) {
            const __m256 q0 = _mm256_loadu_ps(q + (i < rt ? i : 0) * 64);   /* rows past rt: computed, discarded */
            for (int t = 0; t < 4; t++) a[i][t] = _mm256_mul_ps(q0, _mm256_loadu_ps(kj[t]));
        }
        for (int d = 1; d < 8; d++) {
            __m256 kv[4];
            for (int t = 0; t < 4; t++) kv[t] = _mm256_loadu_ps(kj[t] + 8 * d);
            for (int i = 0; i < RT; i++) {
                const __m256 qd = _mm256_loadu_ps(q + (i < rt ? i : 0) * 64 + 8 * d);
                for (int t = 0; t < 4; t++) a[i][t] = _mm256_fmadd_ps(qd, kv[t], a[i][t]);
            }
        }
        for (int i = 0; i < rt; i++) {
            __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[i][0], a[i][1]), _mm256_hadd_ps(a[i][2], a[i][3]));
            float four[4];
            _mm_storeu_ps(four, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
            for (int t = 0; t < 4 && j + t < n; t++) s[i][j + t] = four[t];
        }
    }
}

/* s[j] <- exp(s[j] - mx), *l <- their sum in key order; all zero when every key is masked */
static void softmax_numerators(float *s, int n, float mx, float *l) {
    float sum = 0.f;
    if (mx == -INFINITY) {
        for (int j = 0; j < n; j++) s[j] = 0.f;
    } else {
        const __m256 mv = _mm256_set1_ps(mx);
        float t[CHUNK + 8];
        for (int j = 0; j < n; j++) t[j] = s[j];
        for (int j = n; j < ((n + 7) & ~7); j++) t[j] = mx;
        for (int j = 0; j < n; j += 8) _mm256_storeu_ps(t + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(t + j), mv)));
        for (int j = 0; j < n; j++) { s[j] = t[j]; sum += t[j]; }
    }
    *l = sum;
}

struct attention_job {
    const float *q, *k, *v, *mask;
    float *out, *part_m, *part_l, *part_o;   /* per (head, chunk, row): max, sum, weighted V */
    int H, R, L, C, S;
    int64_t head_stride;
};

/* item = (head, chunk): partial softmax of every query row of the head over the chunk's keys */
static void attend_chunk(void *ctx, int item) {
    const struct attention_job *a = ctx;
    const int D = 64, R = a->R, L = a->L, h = item / a->C, c = item % a->C;
    const float *mask = a->mask;
    const int j0 = c * CHUNK, n = L - j0 < CHUNK ? L - j0 : CHUNK;
    const float *kh = a->k + h * a->head_stride, *vh = a->v + h * a->head_stride;
    float s[RT][CHUNK];
    for (int r0 = 0; r0 < R; r0 += RT) {
        const int rt = R - r0 < RT ? R - r0 : RT;
        scores(a->q + ((int64_t)h * R + r0) * D, kh + (int64_t)j0 * D, s, rt, n);
        float mx[RT], l[RT];
        for (int i = 0; i < rt; i++) {
            mx[i] = -INFINITY;
            for (int j = 0; j < n; j++) {
                if (mask) s[i][j] += mask[(int64_t)(r0 + i) * L + j0 + j];
                mx[i] = s[i][j] > mx[i] ? s[i][j] : mx[i];
            }
            softmax_numerators(s[i], n, mx[i], &l[i]);
        }
        for (int half = 0; half < 2; half++) {      /* 32 of the 64 dims at a time */
            __m256 o[RT][4];
            for (int i = 0; i < RT; i++)
                for (int d = 0; d < 4; d++) o[i][d] = _mm256_setzero_ps();
            for (int j = 0; j < n; j++) {
                const float *vj = vh + (int64_t)(j0 + j) * D + 32 * half;
                const __m256 v0 = _mm256_loadu_ps(vj), v1 = _mm256_loadu_ps(vj + 8),
                             v2 = _mm256_loadu_ps(vj + 16), v3 = _mm256_loadu_ps(vj + 24);
                for (int i = 0; i < rt; i++) {
                    const __m256 pv = _mm256_set1_ps(s[i][j]);
                    o[i][0] = _mm256_fmadd_ps(pv, v0, o[i][0]);
                    o[i][1] = _mm256_fmadd_ps(pv, v1, o[i][1]);
                    o[i][2] = _mm256_fmadd_ps(pv, v2, o[i][2]);
                    o[i][3] = _mm256_fmadd_ps(pv, v3, o[i][3]);
                }
            }
            for (int i = 0; i < rt; i++) {
                const int64_t slot = ((int64_t)h * a->C + c) * R + r0 + i;
                for (int d = 0; d < 4; d++) _mm256_store_ps(a->part_o + slot * D + 32 * half + 8 * d, o[i][d]);
                a->part_m[slot] = mx[i];
                a->part_l[slot] = l[i];
            }
        }
    }
}

/* item = (head, row): combine the row's chunks in key order */
static void combine_chunks(void *ctx, int item) {
    const struct attention_job *a = ctx;
    const int D = 64, C = a->C, R = a->R, h = item / R, r = item % R;
    float M = -INFINITY;
    for (int c = 0; c < C; c++) {
        const float m = a->part_m[((int64_t)h * C + c) * R + r];
        M = m > M ? m : M;
    }
    __m256 o[8];
    for (int d = 0; d < 8; d++) o[d] = _mm256_setzero_ps();
    float l = 0.f;
    for (int c = 0; c < C; c++) {
        const int64_t slot = ((int64_t)h * C + c) * R + r;
        if (a->part_m[slot] == -INFINITY) continue;
        const float w = expf(a->part_m[slot] - M);
        l += a->part_l[slot] * w;
        const __m256 wv = _mm256_set1_ps(w);
        for (int d = 0; d < 8; d++) o[d] = _mm256_fmadd_ps(wv, _mm256_load_ps(a->part_o + slot * D + 8 * d), o[d]);
    }
    const __m256 inv = _mm256_set1_ps(1.f / l);
    float *dst = a->out + ((int64_t)h * R + r) * D;
    if (a->S) {   /* token-major: row r of kv head h is query head h*G + r/S at token r%S */
        const int G = R / a->S, Hq = a->H * G;
        dst = a->out + ((int64_t)(r % a->S) * Hq + h * G + r / a->S) * D;
    }
    for (int d = 0; d < 8; d++) _mm256_storeu_ps(dst + 8 * d, _mm256_mul_ps(o[d], inv));
}

/* q [H, R, 64] (R query rows per kv head, already scaled), k/v: head h row j at
   k + h*head_stride + j*64, mask [R, L] additive or NULL. out: [H, R, 64] if S is 0; else the
   R rows are G = R/S query heads of S tokens each, and out is token-major [S, H*G, 64] (the
   layout the output projection reads). */
void hexa_attention(const float *q, const float *k, const float *v, const float *mask, float *out,
                    int H, int R, int L, int64_t head_stride, int S, int threads) {
    const int D = 64, C = (L + CHUNK - 1) / CHUNK;
    struct attention_job a = {q, k, v, mask, out,
                              malloc(sizeof(float) * H * C * R), malloc(sizeof(float) * H * C * R),
                              aligned_alloc(32, sizeof(float) * ((int64_t)H * C * R * D + 8)),
                              H, R, L, C, S, head_stride};
    hexa_run(attend_chunk, &a, H * C, threads);
    hexa_run(combine_chunks, &a, H * R, threads);
    free(a.part_m); free(a.part_l); free(a.part_o);
}
