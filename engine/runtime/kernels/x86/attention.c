/* hexa's attention for decoding steps and draft-tree verifications (AVX2+FMA): few query rows
 * against a long KV cache, where torch's flash kernel spent ~3x the time it takes to read K and V.
 *
 * Work is split by (kv head, fixed chunk of 128 keys); each item reads its K/V chunk once for all
 * query rows of the head, keeps per-row partial softmax sums, and the chunks are combined in key
 * order. Chunk boundaries depend only on key positions, never on the number of query rows or
 * threads, so a row's output is the same alone or in a whole draft tree (batch invariance), and
 * masked keys (additive -inf) contribute exact zeros.
 *
 * The cache holds fp32 values, or fp16 ones (half the bytes a step reads): widened to fp32 on
 * load, exactly, so every operation after the load is the same in both.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "hexa.h"
#include "keys.h"
#include "pool.h"
#include "vexp.h"

static const float zeros[HEXA_MAX_HEAD_DIM] __attribute__((aligned(32)));   /* a zero key, fp32 or fp16 */

#define INLINE static inline __attribute__((always_inline))

/* Keys read ahead in software, in the scores' pass over K and the first pass over V: a decoding
   step's items each stream 128 keys of fresh K and V that the hardware prefetchers did not keep
   ahead of (Llama-3.2-3B's heads, 8 x 3 rows of 128 dims, fp16 cache, 28 layers: 13 GB/s where
   2 threads read 45). 8 or 16 keys ahead took 0.59-0.63x the time at 1,024 keys and 0.49-0.50x at
   2,048 (32: 0.54x), the same bits (AMD Zen 5, 2026-12-02, builds alternated in one process). */
#define KEYS_AHEAD 16

/* one cache row (a key's or a value's bytes) into L1 ahead of its use */
INLINE void prefetch_row(const char *row, int64_t bytes) {
    for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(row + off, _MM_HINT_T0);
}

/* 8 values of a cache row from value i on, as fp32 (fp16 widened exactly) */
INLINE __m256 kv_load(const void *row, int64_t i, int f16) {
    return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + i)))
               : _mm256_loadu_ps((const float *)row + i);
}

/* Query rows per tile: 3 (a GQA group of one token). With AVX-512's 32 vector registers, 12 where
   a block has more than 9 rows left, else 9 or 6 (a prompt chunk's rows; a 2- to 4-token tree's
   GQA rows). A chunk's 128 keys (128 KB of fp32 K or V at 256 dims) come from L2 once per tile: 3
   rows read 4 key vectors per 12 FMAs (3 per 9 in the scores' pass with 16 registers, KG below),
   near what L2 delivers. 9 and 12 rows (one pass over the keys where 6 + 3 or 6 + 6 took two, and
   half the key loads and conversions per FMA, below) took 0.90-0.91x the attention's time for 3
   tokens x 3 query heads at 800-1,600 keys, 0.94-0.95x for 4 and 0.93-0.95x for 16 (SmolLM2's
   heads, builds alternated in one process; Xeon with AMX, 2026-12-03). Every row takes the same
   operations in any tile. */
#define RT_SMALL 3
#ifdef __AVX512F__
#define RT_MAX 12
#else
#define RT_MAX RT_SMALL
#endif

/* Keys per group of the AVX2 scores' pass: RT rows x KG keys of sums, KG keys and a query vector
   in registers. With 16 (AVX2) 3 rows x 4 keys took 17, and GCC kept one sum on the stack: a load,
   an FMA and a store a step, each waiting on the last (a quarter of attention's time in a
   Gemma-3-270M prefill, perf annotate; AMD Zen 2). 3 keys take 13. The 512-bit pass takes 4 key
   pairs (8 keys) for up to 6 rows and 2 pairs for 9 or 12: 24 sums either way. */
#define KG 3

/* s[i][j] = q_i . k_j for rt <= RT rows and n keys. Every (row, key) dot is the same
   operation sequence whatever rt, RT, n, the keys a group or the key's slot in its group: 8-lane
   partial products in dimension order, then one fixed horizontal-add tree (a key's lanes never
   meet another key's in it). */
#ifndef __AVX512F__
INLINE void scores(const float *q, const void *k, int D, float *s, int sw, int rt, int n, int f16, const int RT) {
    const int64_t row = (int64_t)D << (f16 ? 1 : 2);   /* bytes */
    for (int j = 0; j < n; j += KG) {
        const void *kj[KG];
        for (int t = 0; t < KG; t++)        /* past the chunk's end: a zero key, discarded */
            kj[t] = j + t < n ? (const char *)k + (j + t) * row : (const void *)zeros;
        for (int t = 0; t < KG && j + KEYS_AHEAD + t < n; t++)
            prefetch_row((const char *)k + (j + KEYS_AHEAD + t) * row, row);
        __m256 a[RT_MAX][KG];
        for (int i = 0; i < RT; i++) {
            const __m256 q0 = _mm256_loadu_ps(q + (i < rt ? i : 0) * D);   /* rows past rt: computed, discarded */
            for (int t = 0; t < KG; t++) a[i][t] = _mm256_mul_ps(q0, kv_load(kj[t], 0, f16));
        }
        for (int d = 1; d < D / 8; d++) {
            __m256 kv[KG];
            for (int t = 0; t < KG; t++) kv[t] = kv_load(kj[t], 8 * d, f16);
            for (int i = 0; i < RT; i++) {
                const __m256 qd = _mm256_loadu_ps(q + (i < rt ? i : 0) * D + 8 * d);
                for (int t = 0; t < KG; t++) a[i][t] = _mm256_fmadd_ps(qd, kv[t], a[i][t]);
            }
        }
        for (int i = 0; i < rt; i++) {   /* with 3 keys the tree's fourth operand is the third again */
            __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[i][0], a[i][1]), _mm256_hadd_ps(a[i][2], a[i][KG - 1]));
            float four[4];
            _mm_storeu_ps(four, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
            for (int t = 0; t < KG && j + t < n; t++) s[i * sw + j + t] = four[t];
        }
    }
}
#else
/* two keys' 8 values from value i on, key a's in the low half, b's in the high */
INLINE __m512 kv_pair(const void *a, const void *b, int64_t i, int f16) {
    if (f16)
        return _mm512_cvtph_ps(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)((const uint16_t *)a + i))),
            _mm_loadu_si128((const __m128i *)((const uint16_t *)b + i)), 1));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps((const float *)a + i))),
                                               _mm256_castps_pd(_mm256_loadu_ps((const float *)b + i)), 1));
}

/* _mm256_hadd_ps in each 128-bit lane: [a0+a1, a2+a3, b0+b1, b2+b3] */
INLINE __m512 hadd512(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
}

/* The same dots with a key pair in each zmm: lanes 0-7 are the 8-lane partial products of one
   key and 8-15 of the next, each lane the ymm pass's FMA chain, and the add tree is the ymm one's
   (((x0+x1)+(x2+x3)) + ((x4+x5)+(x6+x7)) a key): the same bits, half the FMAs, loads and
   conversions. */
INLINE void scores(const float *q, const void *k, int D, float *s, int sw, int rt, int n, int f16, const int RT) {
    const int64_t row = (int64_t)D << (f16 ? 1 : 2);   /* bytes */
    const int KP = RT > 6 ? 2 : 4, G = 2 * KP;   /* key pairs, keys a group: RT x KP sums in registers */
    for (int j = 0; j < n; j += G) {
        const void *kj[8];
        for (int t = 0; t < G; t++)        /* past the chunk's end: a zero key, discarded */
            kj[t] = j + t < n ? (const char *)k + (j + t) * row : (const void *)zeros;
        for (int t = 0; t < G && j + KEYS_AHEAD + t < n; t++)
            prefetch_row((const char *)k + (j + KEYS_AHEAD + t) * row, row);
        __m512 a[RT_MAX][4];
        for (int d = 0; d < D / 8; d++) {
            __m512 kv[4];
            for (int t = 0; t < KP; t++) kv[t] = kv_pair(kj[2 * t], kj[2 * t + 1], 8 * d, f16);
            for (int i = 0; i < RT; i++) {   /* rows past rt: computed, discarded */
                const __m512 qd = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(
                    _mm256_loadu_ps(q + (i < rt ? i : 0) * D + 8 * d))));
                for (int t = 0; t < KP; t++) a[i][t] = d ? _mm512_fmadd_ps(qd, kv[t], a[i][t]) : _mm512_mul_ps(qd, kv[t]);
            }
        }
        for (int i = 0; i < rt; i++) {
            /* 128-bit lanes: keys 0,2,4,6's first four lanes' sums, their last four's, then keys 1,3,5,7's
               (two pairs: keys 0,2 twice, then 1,3 twice) */
            const __m512 lo = hadd512(a[i][0], a[i][1]);
            __m512 h = hadd512(lo, KP == 4 ? hadd512(a[i][2], a[i][3]) : lo);
            h = _mm512_add_ps(h, _mm512_shuffle_f32x4(h, h, _MM_SHUFFLE(2, 3, 0, 1)));
            const __m128 even = _mm512_castps512_ps128(h), odd = _mm512_extractf32x4_ps(h, 2);
            float eight[8];
            _mm_storeu_ps(eight, _mm_unpacklo_ps(even, odd));
            _mm_storeu_ps(eight + 4, _mm_unpackhi_ps(even, odd));
            for (int t = 0; t < G && j + t < n; t++) s[i * sw + j + t] = eight[t];
        }
    }
}
#endif

/* For each of rt rows: s[j] <- exp(s[j] - mx) in place, l <- their sum in key order; all zero
   for a row whose every key is masked. Rows rt..RT-1 hold zeros: their sums run alongside, so
   the RT add chains are independent and unrolled (one chain after another, or sums kept in
   an array indexed by row, left this loop a tenth of the kernel's time). */
INLINE void softmax_numerators(int sw, float s[][sw], int rt, int n, const float *mx, float *l, const int RT) {
    for (int i = 0; i < rt; i++) {
        if (mx[i] == -INFINITY) {
            for (int j = 0; j < n; j++) s[i][j] = 0.f;
            continue;
        }
        const __m256 mv = _mm256_set1_ps(mx[i]);
        for (int j = n; j < ((n + 7) & ~7); j++) s[i][j] = mx[i];   /* padding: exp(0), never summed */
        for (int j = 0; j < n; j += 8) _mm256_storeu_ps(s[i] + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(s[i] + j), mv)));
    }
    float sum[RT_MAX];
    _Pragma("GCC unroll 12") for (int i = 0; i < RT; i++) sum[i] = 0.f;
    for (int j = 0; j < n; j++)
        _Pragma("GCC unroll 12") for (int i = 0; i < RT; i++) sum[i] += s[i][j];
    _Pragma("GCC unroll 12") for (int i = 0; i < RT; i++) l[i] = sum[i];
}

/* Keys of the chunk past the last one some row of the tile may see: those rows' scores there are
   -inf, their weights exact zeros, so leaving them out changes no bit (a causal prefill chunk
   skips about half its keys, a fully masked chunk all of them). */
static int visible_keys(const float *const *rows, int rt, int n) {
    if (!rows[0]) return n;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    int last = 0;
    for (int i = 0; i < rt; i++) {
        const float *m = rows[i];
        int j = n;
        for (; j - 8 >= last; j -= 8) {   /* 8 at a time: the causal part of a chunk is long */
            const int seen = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(m + j - 8), ninf, _CMP_NEQ_OQ));
            if (seen) { last = j - 8 + 32 - __builtin_clz((unsigned)seen); break; }
        }
        if (j - 8 < last)
            for (; j > last; j--)
                if (m[j - 1] != -INFINITY) { last = j; break; }
    }
    return last;
}

#ifndef __AVX512F__
/* o[i] = sum over the n keys of s[i][j] * v_j for rt rows, one FMA chain a lane in key order */
INLINE void weighted_values(float *o_rows, const char *vh, int sw, float s[][sw], int rt, int nv, int D, int f16, const int RT) {
    const int es = f16 ? 2 : 4;
    for (int half = 0; half < D / 32; half++) {      /* 32 of the head's dims at a time */
        /* all RT rows, unrolled: with a loop over rt the accumulators went to the stack */
        __m256 o[RT_MAX][4];
        _Pragma("GCC unroll 6") for (int i = 0; i < RT; i++)
            for (int d = 0; d < 4; d++) o[i][d] = _mm256_setzero_ps();
        for (int j = 0; j < nv; j++) {
            const void *vj = vh + ((int64_t)j * D + 32 * half) * es;
            if (half == 0 && j + KEYS_AHEAD < nv)   /* the later passes find V's rows in cache */
                prefetch_row(vh + (int64_t)(j + KEYS_AHEAD) * D * es, D * es);
            __m256 p[RT_MAX];
            _Pragma("GCC unroll 6") for (int i = 0; i < RT; i++) p[i] = _mm256_set1_ps(s[i][j]);
            for (int d = 0; d < 4; d++) {
                const __m256 vd = kv_load(vj, 8 * d, f16);
                _Pragma("GCC unroll 6") for (int i = 0; i < RT; i++) o[i][d] = _mm256_fmadd_ps(p[i], vd, o[i][d]);
            }
        }
        for (int i = 0; i < rt; i++)
            for (int d = 0; d < 4; d++) _mm256_store_ps(o_rows + (int64_t)i * D + 32 * half + 8 * d, o[i][d]);
    }
}
#else
/* the same with 16 dims a zmm: each lane's FMA chain is the ymm pass's, the same bits */
INLINE void weighted_values(float *o_rows, const char *vh, int sw, float s[][sw], int rt, int nv, int D, int f16, const int RT) {
    const int es = f16 ? 2 : 4;
    const int DZ = RT > 6 ? 2 : 4;   /* zmm of dims a pass: RT x DZ sums in registers */
    for (int blk = 0; blk < D / (16 * DZ); blk++) {   /* 16 * DZ of the head's dims at a time */
        __m512 o[RT_MAX][4];
        _Pragma("GCC unroll 12") for (int i = 0; i < RT; i++)
            for (int d = 0; d < DZ; d++) o[i][d] = _mm512_setzero_ps();
        for (int j = 0; j < nv; j++) {
            const char *vj = vh + ((int64_t)j * D + 16 * DZ * blk) * es;
            if (blk == 0 && j + KEYS_AHEAD < nv)   /* the later passes find V's rows in cache */
                prefetch_row(vh + (int64_t)(j + KEYS_AHEAD) * D * es, D * es);
            for (int d = 0; d < DZ; d++) {
                const __m512 vd = f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vj + 32 * d)))
                                      : _mm512_loadu_ps((const float *)vj + 16 * d);
                _Pragma("GCC unroll 12") for (int i = 0; i < RT; i++) o[i][d] = _mm512_fmadd_ps(_mm512_set1_ps(s[i][j]), vd, o[i][d]);
            }
        }
        for (int i = 0; i < rt; i++)
            for (int d = 0; d < DZ; d++) _mm512_storeu_ps(o_rows + (int64_t)i * D + 16 * DZ * blk + 16 * d, o[i][d]);
    }
}
#endif

struct attention_job {
    const float *q;
    const void *k, *v;                        /* fp32 values, or fp16 where kv_f16 */
    const float *mask;
    float *out, *part_m, *part_l, *part_o;   /* per (head, chunk, row): max, sum, weighted V */
    int H, R, L, C, S, B, D;                  /* B: blocks of BLOCK rows per (head, chunk); D: head dim */
    int64_t head_stride;                      /* values */
    int kv_f16;
    struct key_plan plan;                     /* which keys each chunk holds */
};

#define BLOCK 48   /* query rows per work item: a long prompt's chunk splits into many items */

/* rows r0..r0+rt-1 (rt <= RT) of item (head h, chunk c): partial softmax over the chunk's keys.
   A row's numbers depend only on its own row and the chunk, never on the tile or item it is in. */
INLINE void attend_tile(const struct attention_job *a, int h, int c, int r0, int rt, int f16, const int RT) {
    const int D = a->D, R = a->R, L = a->L;
    const float *mask = a->mask;
    const int j0 = a->plan.lo[c], n = a->plan.hi[c] - j0, sw = ((a->plan.widest + 7) & ~7) + 8;
    const int es = f16 ? 2 : 4;   /* bytes a value */
    const char *kh = (const char *)a->k + h * a->head_stride * es, *vh = (const char *)a->v + h * a->head_stride * es;
    float s[RT][sw], rows_mask[RT * (n > 0 ? n : 1)];
    const int64_t slot0 = ((int64_t)h * a->C + c) * R + r0;
    /* the mask's rows over the chunk's keys, or the chunk's own view of them (keys.c) */
    const float *own = key_plan_rows(&a->plan, mask, c, r0, rt, rows_mask), *mrows[RT_MAX] = {NULL};
    for (int i = 0; mask && i < rt; i++) mrows[i] = own ? own + (int64_t)i * n : mask + (int64_t)(r0 + i) * L + j0;
    const int nv = visible_keys(mrows, rt, n);
    if (nv == 0) {   /* every key masked for every row: what the full computation gives */
        for (int i = 0; i < rt; i++) { a->part_m[slot0 + i] = -INFINITY; a->part_l[slot0 + i] = 0.f; }
        return;
    }
    scores(a->q + ((int64_t)h * R + r0) * D, kh + (int64_t)j0 * D * es, D, &s[0][0], sw, rt, nv, f16, RT);
    for (int i = rt; i < RT; i++)      /* rows past rt: weights 0, computed and discarded */
        for (int j = 0; j < nv; j++) s[i][j] = 0.f;
    float mx[RT_MAX], l[RT_MAX];
    for (int i = 0; i < rt; i++) {
        __m256 m8 = _mm256_set1_ps(-INFINITY);
        int j = 0;
        const float *mrow = mrows[i];
        for (; j + 8 <= nv; j += 8) {
            __m256 v = _mm256_loadu_ps(s[i] + j);
            if (mrow) v = _mm256_add_ps(v, _mm256_loadu_ps(mrow + j));
            _mm256_storeu_ps(s[i] + j, v);
            m8 = _mm256_max_ps(m8, v);
        }
        float m4[8];
        _mm256_storeu_ps(m4, m8);
        mx[i] = -INFINITY;
        for (int t = 0; t < 8; t++) mx[i] = m4[t] > mx[i] ? m4[t] : mx[i];
        for (; j < nv; j++) {
            if (mrow) s[i][j] += mrow[j];
            mx[i] = s[i][j] > mx[i] ? s[i][j] : mx[i];
        }
    }
    softmax_numerators(sw, s, rt, nv, mx, l, RT);
    for (int i = 0; i < rt; i++) { a->part_m[slot0 + i] = mx[i]; a->part_l[slot0 + i] = l[i]; }
    weighted_values(a->part_o + slot0 * D, vh + (int64_t)j0 * D * es, sw, s, rt, nv, D, f16, RT);
}

/* item = (head, chunk, block of rows), in tiles of RT_MAX rows while more than RT_SMALL are left */
INLINE void attend(const struct attention_job *a, int item, int f16) {
    const int R = a->R, b = item % a->B, h = item / a->B / a->C, c = item / a->B % a->C;
    const int rend = (b + 1) * BLOCK < R ? (b + 1) * BLOCK : R;
    for (int r0 = b * BLOCK; r0 < rend;) {
        const int left = rend - r0;
#ifdef __AVX512F__   /* 12 rows a tile; 9 or 6 for the rest (a 3- or 2-token tree's GQA rows) */
        const int RT = left > 9 ? 12 : left > 6 ? 9 : left > RT_SMALL ? 6 : RT_SMALL;
#else
        const int RT = RT_SMALL;
#endif
        const int rt = left < RT ? left : RT;
        if (RT == 12) attend_tile(a, h, c, r0, rt, f16, 12);   /* each with RT known when inlined */
        else if (RT == 9) attend_tile(a, h, c, r0, rt, f16, 9);
        else if (RT == 6) attend_tile(a, h, c, r0, rt, f16, 6);
        else attend_tile(a, h, c, r0, rt, f16, RT_SMALL);
        r0 += RT;
    }
}

/* the pool's item: one copy of the work for each cache type, the loads chosen at compile time */
static void attend_chunk(void *ctx, int item) {
    const struct attention_job *a = ctx;
    if (a->kv_f16) attend(a, item, 1);
    else attend(a, item, 0);
}

/* item = (head, row): combine the row's chunks in key order */
static void combine_chunks(void *ctx, int item) {
    const struct attention_job *a = ctx;
    const int D = a->D, C = a->C, R = a->R, h = item / R, r = item % R;
    float M = -INFINITY;
    for (int c = 0; c < C; c++) {
        const float m = a->part_m[((int64_t)h * C + c) * R + r];
        M = m > M ? m : M;
    }
    float l = 0.f, wt[C];   /* each chunk's weight, once (per 64 dims it was 4 expf a chunk at 256 dims) */
    for (int c = 0; c < C; c++) {
        const int64_t slot = ((int64_t)h * C + c) * R + r;
        wt[c] = a->part_m[slot] != -INFINITY ? expf(a->part_m[slot] - M) : 0.f;
        if (a->part_m[slot] != -INFINITY) l += a->part_l[slot] * wt[c];
    }
    const __m256 inv = _mm256_set1_ps(1.f / l);
    float *dst = a->out + ((int64_t)h * R + r) * D;
    if (a->S) {   /* token-major: row r of kv head h is query head h*G + r/S at token r%S */
        const int G = R / a->S, Hq = a->H * G;
        dst = a->out + ((int64_t)(r % a->S) * Hq + h * G + r / a->S) * D;
    }
    for (int db = 0; db < D; db += 64) {   /* 64 dims at a time: each an FMA chain over the chunks in order */
        __m256 o[8];
        for (int d = 0; d < 8; d++) o[d] = _mm256_setzero_ps();
        for (int c = 0; c < C; c++) {
            const int64_t slot = ((int64_t)h * C + c) * R + r;
            if (a->part_m[slot] == -INFINITY) continue;
            const __m256 wv = _mm256_set1_ps(wt[c]);
            for (int d = 0; d < 8; d++) o[d] = _mm256_fmadd_ps(wv, _mm256_load_ps(a->part_o + slot * D + db + 8 * d), o[d]);
        }
        for (int d = 0; d < 8; d++) _mm256_storeu_ps(dst + db + 8 * d, _mm256_mul_ps(o[d], inv));
    }
}

/* q [H, R, D] (R query rows per kv head, already scaled; D 64, 128 or 256), k/v: head h row j
   at k + h*head_stride + j*D, mask [R, L] additive or NULL. out: [H, R, D] if S is 0; else the
   R rows are G = R/S query heads of S tokens each, and out is token-major [S, H*G, D] (the
   layout the output projection reads). pass: the last `pass` keys are this pass's own tokens,
   whose visible ones count at consecutive positions for each row (keys.h); 0: keys by slot.
   kv_f16: k and v hold fp16 values (head_stride counts values either way). */
void hexa_attention(const float *q, const void *k, const void *v, const float *mask, float *out,
                    int H, int R, int L, int D, int64_t head_stride, int S, int pass, int kv_f16, int threads) {
    const int C = (L + CHUNK - 1) / CHUNK, B = (R + BLOCK - 1) / BLOCK;
    struct attention_job a = {q, k, v, mask, out,
                              malloc(sizeof(float) * H * C * R), malloc(sizeof(float) * H * C * R),
                              aligned_alloc(32, sizeof(float) * ((int64_t)H * C * R * D + 8)),
                              H, R, L, C, S, B, D, head_stride, kv_f16};
    key_plan_init(&a.plan, mask, R, L, pass);
    hexa_run(attend_chunk, &a, H * C * B, threads);
    hexa_run(combine_chunks, &a, H * R, threads);
    key_plan_free(&a.plan);
    free(a.part_m); free(a.part_l); free(a.part_o);
}
