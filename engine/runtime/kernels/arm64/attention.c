/* hexa's attention for decoding steps and draft-tree verifications (NEON): few query rows
 * against a long KV cache.
 *
 * The NEON twin of x86/attention.c: the same work split by (kv head, fixed chunk of 128 keys,
 * block of rows), the same per-row partial softmax and the same combine in key order, so a row's
 * output is the same alone or in a whole draft tree (batch invariance) and masked keys (additive
 * -inf) contribute exact zeros. Every output is also the same sequence of IEEE operations as on
 * x86 (an 8-lane vector there is two 4-lane vectors here, lanes 0-3 and 4-7; hadd trees are
 * pairwise adds), so ARM64 and x86 give the same bits. One exception: combine_chunks weighs the
 * chunks with libm's expf, as x86 does, and libms may differ in the last bit (glibc 2.36's aarch64
 * and x86-64 FMA expf disagree on 1 of the ~1.1e9 floats in [-112, 0]: exp(-63.09946)); the
 * weight of a chunk that far below the row's maximum almost never reaches the output's bits.
 * The cache holds fp32 values, or fp16 ones widened on load exactly (x86's, so the same bits).
 */
#include <arm_neon.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "hexa.h"
#include "keys.h"
#include "pool.h"
#include "vexp.h"


static const float zeros[HEXA_MAX_HEAD_DIM] __attribute__((aligned(16)));   /* a zero key, fp32 or fp16 */

#define INLINE static inline __attribute__((always_inline))

/* 4 values of a cache row from value i on, as fp32 (fp16 widened exactly) */
INLINE float32x4_t kv_load(const void *row, int64_t i, int f16) {
    return f16 ? vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)row + i)))
               : vld1q_f32((const float *)row + i);
}

#define RT 3      /* query rows per tile (a GQA group of one token); softmax_numerators unrolls 3 */
_Static_assert(RT == 3, "softmax_numerators and the P.V loop are written for 3 rows");

/* _mm256_max_ps(a, b): a > b ? a : b (b when either is NaN, and for -0 / +0) */
static inline float32x4_t max_x86(float32x4_t a, float32x4_t b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }

/* Keys per group of the scores' pass: 3 rows x KG keys x 2 halves of sums, 2 KG key vectors and
   a query's two in the 32 registers. With 4 keys (34 vectors) GCC reloaded sums from the stack
   inside the loop over dims, each a load, an fmla and a store waiting on the last (up to 34
   stack loads and stores per 24 fmla, objdump of GCC 12 -O3); with 3 (26) no load is left there,
   only stores of the sums (9 per 18 fmla). Not timed on ARM hardware (qemu only); on x86 the
   same change took a spilled sum out of the loop and Gemma-3-270M's prefill 1.07x as fast
   (x86/attention.c). */
#define KG 3

/* s[i][j] = q_i . k_j for rt <= RT rows and n keys (64 dims). Each (row, key) dot is x86's
   operation sequence: 8 lane partials (lane l holds dims l, l+8, ..., l+56: a mul, then FMAs in
   dimension order), reduced by the tree of two _mm256_hadd_ps and the add of the two halves,
   which are vpaddq_f32 on each half here; a key's lanes never meet another key's in it, so a
   group of 3 gives each key the bits a group of 4 gives it. */
INLINE void scores(const float *q, const void *k, int D, float *s, int sw, int rt, int n, int f16) {
    const int64_t row = (int64_t)D << (f16 ? 1 : 2);   /* bytes */
    for (int j = 0; j < n; j += KG) {
        const void *kj[KG];
        for (int t = 0; t < KG; t++)        /* past the chunk's end: a zero key, discarded */
            kj[t] = j + t < n ? (const char *)k + (j + t) * row : (const void *)zeros;
        float32x4_t a[RT][KG][2];           /* [row][key][lanes 0-3, 4-7] */
        for (int i = 0; i < RT; i++) {
            const float *qi = q + (i < rt ? i : 0) * D;   /* rows past rt: computed, discarded */
            for (int t = 0; t < KG; t++) {
                a[i][t][0] = vmulq_f32(vld1q_f32(qi), kv_load(kj[t], 0, f16));
                a[i][t][1] = vmulq_f32(vld1q_f32(qi + 4), kv_load(kj[t], 4, f16));
            }
        }
        for (int d = 1; d < D / 8; d++)
            for (int t = 0; t < KG; t++) {
                const float32x4_t k0 = kv_load(kj[t], 8 * d, f16), k1 = kv_load(kj[t], 8 * d + 4, f16);
                for (int i = 0; i < RT; i++) {
                    const float *qi = q + (i < rt ? i : 0) * D + 8 * d;
                    a[i][t][0] = vfmaq_f32(a[i][t][0], vld1q_f32(qi), k0);
                    a[i][t][1] = vfmaq_f32(a[i][t][1], vld1q_f32(qi + 4), k1);
                }
            }
        for (int i = 0; i < rt; i++) {
            /* hadd(hadd(a0, a1), hadd(a2, a2)) per 128-bit half, then low half + high half: x86's
               tree with 3 keys (its fourth operand the third again) */
            const float32x4_t h0 = vpaddq_f32(vpaddq_f32(a[i][0][0], a[i][1][0]), vpaddq_f32(a[i][2][0], a[i][KG - 1][0]));
            const float32x4_t h1 = vpaddq_f32(vpaddq_f32(a[i][0][1], a[i][1][1]), vpaddq_f32(a[i][2][1], a[i][KG - 1][1]));
            float four[4];
            vst1q_f32(four, vaddq_f32(h0, h1));
            for (int t = 0; t < KG && j + t < n; t++) s[i * sw + j + t] = four[t];
        }
    }
}


/* For each of rt rows: s[j] <- exp(s[j] - mx) in place, l <- their sum in key order; all zero
   for a row whose every key is masked. Rows rt..RT-1 hold zeros: their sums run alongside, so
   the three add chains are independent. exp is per lane: 4 lanes at a time give exp8's bits. */
static void softmax_numerators(int sw, float s[][sw], int rt, int n, const float *mx, float *l) {
    for (int i = 0; i < rt; i++) {
        if (mx[i] == -INFINITY) {
            for (int j = 0; j < n; j++) s[i][j] = 0.f;
            continue;
        }
        const float32x4_t mv = vdupq_n_f32(mx[i]);
        for (int j = n; j < ((n + 3) & ~3); j++) s[i][j] = mx[i];   /* padding: exp(0), never summed */
        for (int j = 0; j < n; j += 4) vst1q_f32(s[i] + j, exp4(vsubq_f32(vld1q_f32(s[i] + j), mv)));
    }
    float l0 = 0.f, l1 = 0.f, l2 = 0.f;
    for (int j = 0; j < n; j++) { l0 += s[0][j]; l1 += s[1][j]; l2 += s[2][j]; }
    l[0] = l0; l[1] = l1; l[2] = l2;
}

/* Keys of the chunk past the last one some row of the tile may see: those rows' scores there are
   -inf, their weights exact zeros, so leaving them out changes no bit (a causal prefill chunk
   skips about half its keys, a fully masked chunk all of them). x86's scan step by step (8 keys
   at a time where a lane counts when > -inf, its _CMP_NEQ_OQ; then one key at a time where
   != -inf), so even a mask holding NaNs leaves out the same keys. */
static int visible_keys(const float *const *rows, int rt, int n) {
    if (!rows[0]) return n;
    const float32x4_t ninf = vdupq_n_f32(-INFINITY);
    const uint32x4_t bit0 = {1, 2, 4, 8}, bit4 = {16, 32, 64, 128};
    int last = 0;
    for (int i = 0; i < rt; i++) {
        const float *m = rows[i];
        int j = n;
        for (; j - 8 >= last; j -= 8) {   /* 8 at a time: the causal part of a chunk is long */
            const uint32x4_t lo = vandq_u32(vcgtq_f32(vld1q_f32(m + j - 8), ninf), bit0);
            const uint32x4_t hi = vandq_u32(vcgtq_f32(vld1q_f32(m + j - 4), ninf), bit4);
            const unsigned seen = vaddvq_u32(vorrq_u32(lo, hi));   /* _mm256_movemask_ps */
            if (seen) { last = j - 8 + 32 - __builtin_clz(seen); break; }
        }
        if (j - 8 < last)
            for (; j > last; j--)
                if (m[j - 1] != -INFINITY) { last = j; break; }
    }
    return last;
}

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

/* item = (head, chunk, block of rows): partial softmax of the rows over the chunk's keys. A
   row's numbers depend only on its own row and the chunk, never on the tile or item it is in. */
INLINE void attend(const struct attention_job *a, int item, int f16) {
    const int D = a->D, R = a->R, L = a->L, b = item % a->B, h = item / a->B / a->C, c = item / a->B % a->C;
    const float *mask = a->mask;
    const int j0 = a->plan.lo[c], n = a->plan.hi[c] - j0, sw = ((a->plan.widest + 7) & ~7) + 8;
    const int es = f16 ? 2 : 4;   /* bytes a value */
    const char *kh = (const char *)a->k + h * a->head_stride * es, *vh = (const char *)a->v + h * a->head_stride * es;
    const int rend = (b + 1) * BLOCK < R ? (b + 1) * BLOCK : R;
    float s[RT][sw], rows_mask[RT * (n > 0 ? n : 1)];
    for (int r0 = b * BLOCK; r0 < rend; r0 += RT) {
        const int rt = rend - r0 < RT ? rend - r0 : RT;
        const int64_t slot0 = ((int64_t)h * a->C + c) * R + r0;
        /* the mask's rows over the chunk's keys, or the chunk's own view of them (keys.c) */
        const float *own = key_plan_rows(&a->plan, mask, c, r0, rt, rows_mask), *mrows[RT] = {NULL, NULL, NULL};
        for (int i = 0; mask && i < rt; i++) mrows[i] = own ? own + (int64_t)i * n : mask + (int64_t)(r0 + i) * L + j0;
        const int nv = visible_keys(mrows, rt, n);
        if (nv == 0) {   /* every key masked for every row: what the full computation gives */
            for (int i = 0; i < rt; i++) { a->part_m[slot0 + i] = -INFINITY; a->part_l[slot0 + i] = 0.f; }
            continue;
        }
        scores(a->q + ((int64_t)h * R + r0) * D, kh + (int64_t)j0 * D * es, D, &s[0][0], sw, rt, nv, f16);
        for (int i = rt; i < RT; i++)      /* rows past rt: weights 0, computed and discarded */
            for (int j = 0; j < nv; j++) s[i][j] = 0.f;
        float mx[RT], l[RT];
        for (int i = 0; i < rt; i++) {   /* scores + mask, and their max as x86 takes it */
            float32x4_t m0 = vdupq_n_f32(-INFINITY), m1 = m0;
            int j = 0;
            const float *mrow = mrows[i];
            for (; j + 8 <= nv; j += 8) {
                float32x4_t v0 = vld1q_f32(s[i] + j), v1 = vld1q_f32(s[i] + j + 4);
                if (mrow) { v0 = vaddq_f32(v0, vld1q_f32(mrow + j)); v1 = vaddq_f32(v1, vld1q_f32(mrow + j + 4)); }
                vst1q_f32(s[i] + j, v0);
                vst1q_f32(s[i] + j + 4, v1);
                m0 = max_x86(m0, v0);
                m1 = max_x86(m1, v1);
            }
            float m8[8];
            vst1q_f32(m8, m0);
            vst1q_f32(m8 + 4, m1);
            mx[i] = -INFINITY;
            for (int t = 0; t < 8; t++) mx[i] = m8[t] > mx[i] ? m8[t] : mx[i];
            for (; j < nv; j++) {
                if (mrow) s[i][j] += mrow[j];
                mx[i] = s[i][j] > mx[i] ? s[i][j] : mx[i];
            }
        }
        softmax_numerators(sw, s, rt, nv, mx, l);
        for (int half = 0; half < D / 32; half++) {      /* 32 of the head's dims at a time */
            /* every output dim is one FMA chain over the keys in order, as on x86; all RT rows
               unrolled: 24 accumulators, a V vector and 3 weights in the 32 registers */
            float32x4_t o[RT][8];
            for (int i = 0; i < RT; i++)
                for (int d = 0; d < 8; d++) o[i][d] = vdupq_n_f32(0.f);
            for (int j = 0; j < nv; j++) {
                const void *vj = vh + ((int64_t)(j0 + j) * D + 32 * half) * es;
                const float32x4_t p0 = vld1q_dup_f32(s[0] + j), p1 = vld1q_dup_f32(s[1] + j), p2 = vld1q_dup_f32(s[2] + j);
                for (int d = 0; d < 8; d++) {
                    const float32x4_t vd = kv_load(vj, 4 * d, f16);
                    o[0][d] = vfmaq_f32(o[0][d], p0, vd);
                    o[1][d] = vfmaq_f32(o[1][d], p1, vd);
                    o[2][d] = vfmaq_f32(o[2][d], p2, vd);
                }
            }
            /* rows by constant index: indexed by a variable, o went to the stack on every key */
            float *po = a->part_o + slot0 * D + 32 * half;
            for (int d = 0; d < 8; d++) {
                vst1q_f32(po + 4 * d, o[0][d]);
                if (rt > 1) vst1q_f32(po + D + 4 * d, o[1][d]);
                if (rt > 2) vst1q_f32(po + 2 * D + 4 * d, o[2][d]);
            }
        }
        for (int i = 0; i < rt; i++) {
            a->part_m[slot0 + i] = mx[i];
            a->part_l[slot0 + i] = l[i];
        }
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
    float l = 0.f, wt[C];   /* each chunk's weight, once (as x86's) */
    for (int c = 0; c < C; c++) {
        const int64_t slot = ((int64_t)h * C + c) * R + r;
        wt[c] = a->part_m[slot] != -INFINITY ? expf(a->part_m[slot] - M) : 0.f;
        if (a->part_m[slot] != -INFINITY) l += a->part_l[slot] * wt[c];
    }
    const float32x4_t inv = vdupq_n_f32(1.f / l);
    float *dst = a->out + ((int64_t)h * R + r) * D;
    if (a->S) {   /* token-major: row r of kv head h is query head h*G + r/S at token r%S */
        const int G = R / a->S, Hq = a->H * G;
        dst = a->out + ((int64_t)(r % a->S) * Hq + h * G + r / a->S) * D;
    }
    for (int db = 0; db < D; db += 64) {   /* 64 dims at a time: each an FMA chain over the chunks in order */
        float32x4_t o[16];
        for (int d = 0; d < 16; d++) o[d] = vdupq_n_f32(0.f);
        for (int c = 0; c < C; c++) {
            const int64_t slot = ((int64_t)h * C + c) * R + r;
            if (a->part_m[slot] == -INFINITY) continue;
            const float32x4_t wv = vdupq_n_f32(wt[c]);
            for (int d = 0; d < 16; d++) o[d] = vfmaq_f32(o[d], wv, vld1q_f32(a->part_o + slot * D + db + 4 * d));
        }
        for (int d = 0; d < 16; d++) vst1q_f32(dst + db + 4 * d, vmulq_f32(o[d], inv));
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
                              malloc(sizeof(float) * (int64_t)H * C * R * D),
                              H, R, L, C, S, B, D, head_stride, kv_f16};
    key_plan_init(&a.plan, mask, R, L, pass);
    hexa_run(attend_chunk, &a, H * C * B, threads);
    hexa_run(combine_chunks, &a, H * R, threads);
    key_plan_free(&a.plan);
    free(a.part_m); free(a.part_l); free(a.part_o);
}
