/* The products of many rows in 512-bit tiles (the avx-vnni and avx512-vnni builds; on where hexa_wide
 * turns them on, on a CPU with AVX-512 VNNI), for quant_dot.c's hexa_linear_dot. A file of its own,
 * compiled beside quant_dot.c (dot.h says why); the other builds compile only hexa_wide from it.
 *
 * pre holds a group of 4 inputs x 16 columns in 64 bytes (decode_panel), so one zmm vpdpbusd forms
 * a row's 16 column sums of a group where the ymm tiles take two, and the block's float steps take
 * one zmm a row where they took two ymm. Integer sums are exact, and each lane's fp32 steps are the
 * ymm tiles' (zmm.h), so the bits are theirs (the C driver runs both builds with the tiles on and
 * off and compares them with avx2's, output for output). With 32 registers a tile takes up to WIDE_ROWS rows
 * (a sum and an accumulator each), so a group's codes are loaded once for that many rows.
 *
 * Why only where turned on: a CPU that splits a 512-bit instruction into two 256-bit halves gains
 * little from the wider instruction itself. AMD Zen 4 does (a zmm vpdpbusd issued at half the ymm
 * rate: 229 against 219 GMAC/s, 2026-11-28), yet these tiles' fewer float steps and loads a row
 * took whole passes of 6-256 rows to 1.00-1.24x the ymm tiles' speed there (2026-12-03); Zen 5
 * runs it whole (one core, independent chains: 426 against 186 GMAC/s, 2026-12-01). The avx-vnni
 * build takes them too: on Zen 5 it is the faster build for 1-2 rows (decoding steps), where the
 * avx512-vnni build's ymm tiles took 1.01-1.16x its time. The engine turns them on for the CPUs
 * where they were measured to pay, AMD Zen 4 and Zen 5 (kernels/__init__.py's wide_tiles).
 */
#include "dot.h"
#include "zmm.h"

#ifdef HEXA_WIDE
#ifdef __AVX512VNNI__
#define WIDE_TARGET
#else   /* the avx-vnni build: only these functions are compiled for AVX-512 (amx.h's way), and
           hexa_wide turns them on only on a CPU that has it */
#define WIDE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#endif
#ifndef WIDE_ROWS
#define WIDE_ROWS 12
#endif

/* A row's scales for one block, beside the other rows' of its tile (wide_job.scales) */
struct wide_scale {
    float dx, sx;     /* the block's scale, and scale * the codes' sum (quantize_row's) */
    int32_t qs[2];    /* what the float steps subtract (offs) */
};

/* The rows' codes and scales, interleaved per tile: a tile of r rows starting at row m0 holds
   [blk][group][row] quads from m0 * K on, and [blk][row] scales from m0 * nb on. A tile then reads
   every row's quad and scales at constant offsets from one pointer: with a pointer a row (12 rows,
   dx, sx, qs), GCC ran out of general registers and reloaded them from the stack in the loop. */
struct wide_job {
    const struct dot_job *a;
    int32_t *quads;
    struct wide_scale *scales;
    int tiles;
};

/* tile t's first row and rows: the fewest tiles of at most WIDE_ROWS rows, split evenly (dot_group's
   rule) */
static inline int wide_tile_rows(int M, int tiles, int t, int *m0) {
    int m = 0;
    for (int u = 0; u < t; u++) m += tile_rows(M - m, tiles - u);
    *m0 = m;
    return tile_rows(M - m, tiles - t);
}

WIDE_TARGET static void wide_interleave(void *ctx, int t) {
    const struct wide_job *j = ctx;
    const struct dot_job *a = j->a;
    const int nb = a->K / QB;
    int m0;
    const int r = wide_tile_rows(a->M, j->tiles, t, &m0);
    const int32_t *codes = (const int32_t *)((const int8_t *)a->codes + (int64_t)m0 * a->K);
    int32_t *quads = (int32_t *)((int8_t *)j->quads + (int64_t)m0 * a->K);
    struct wide_scale *sc = j->scales + (int64_t)m0 * nb;
    for (int i = 0; i < r; i++)
        for (int q = 0; q < a->K / 4; q++) quads[(int64_t)q * r + i] = codes[(int64_t)i * (a->K / 4) + q];
    for (int i = 0; i < r; i++)
        for (int blk = 0; blk < nb; blk++) {
            const int64_t at = (int64_t)(m0 + i) * nb + blk;
            struct wide_scale *s = sc + (int64_t)blk * r + i;
            s->dx = a->dx[at];
            s->sx = a->sx[at];
            s->qs[0] = a->qs[2 * at];
            s->qs[1] = a->qs[2 * at + 1];
        }
}

/* rows [m0, m0+r) x panel p over pre (own: one tile a panel, which decodes the codes itself): r and
   own constants (the functions below), so acc and the sums stay in registers and each function
   holds one of the two paths; split, off, has_min the format's flags (amx.h's: has_min 2, an m
   per 16 inputs), constants too.
   k256 (prompt rows of a K-quant, hexa_linear_prefill): the rows' scale dx is one per super-block
   of 8 blocks, so a block's float step is a convert and an FMA by d (zmm_step_k256) into acc, and
   dx multiplies acc into the row's sums (sum256, in memory: 3 x 12 rows' vectors would not fit the
   registers) once per super-block. */
WIDE_TARGET static inline __attribute__((always_inline)) void wide_rows(const struct wide_job *j, int m0, const int r, int p,
                                                            const __m256i *pre, const int split, const int off,
                                                            const int has_min, const int own, const int k256) {
    const struct dot_job *a = j->a;
    const int nb = a->K / QB, bits = a->bits, min_at = has_min ? MIN_AT(bits) : -1, bytes = BLOCK_BYTES(bits);
    const char *end = item_end(a, p);
    const int32_t *restrict quads = (const int32_t *)((const int8_t *)j->quads + (int64_t)m0 * a->K);
    const struct wide_scale *restrict sc = j->scales + (int64_t)m0 * nb;
    __m512 acc[WIDE_ROWS];
    float sum256[k256 ? WIDE_ROWS * PW : 1] __attribute__((aligned(64)));
#pragma GCC unroll 16
    for (int i = 0; i < r; i++) {
        acc[i] = _mm512_setzero_ps();
        if (k256) _mm512_store_ps(sum256 + i * PW, acc[i]);
    }
    for (int blk = 0; blk < nb; blk++, quads += QB / 4 * r, sc += r) {
        const __m512i *w = own ? NULL : (const __m512i *)(pre + (int64_t)blk * QB / 2);   /* the block's 8 groups */
        const uint8_t *bp = block_at(a->packed, bits, nb, p, blk);
        if (own) read_ahead(bp, bytes, end);   /* as the ymm tiles */
        float tmp[HEAD_MAX * PW];
        const float *hd = !own && HEAD_OF(bits) ? pre_head(pre, bits, nb, QB / 2, blk) : block_head(a->packed, bits, nb, p, blk, tmp);
        __m512i s[WIDE_ROWS];
#pragma GCC unroll 16
        for (int i = 0; i < r; i++) s[i] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int g = 0; g < QB / 4; g++) {
            if (split && g == QB / 8) {   /* inputs 0-15 carry a scale of their own */
                const __m512 d0 = zmm_join(hd);
#pragma GCC unroll 16
                for (int i = 0; i < r; i++) {
                    acc[i] = k256 ? zmm_step_k256(acc[i], s[i], off, sc[i].qs[0], d0)
                                  : zmm_step(acc[i], s[i], off, sc[i].qs[0], d0, _mm512_set1_ps(sc[i].dx));
                    s[i] = _mm512_setzero_si512();
                }
            }
            __m512i wv;
            if (!own) {
                wv = _mm512_load_si512(w + g);
            } else {   /* one tile a panel: its codes decoded here (decode_panel's quads_codes) */
                __m256i h[2];
                quads_codes(bp + CODE_HEAD(bits), PLANES(bits), g, h);
                wv = _mm512_inserti64x4(_mm512_castsi256_si512(h[0]), h[1], 1);
            }
#pragma GCC unroll 16
            for (int i = 0; i < r; i++) {
                ZMM_DPBUSD_BCST(s[i], wv, quads + g * r + i);
            }
        }
        const __m512 d1 = zmm_join(split ? hd + PW : hd);
        const __m512 mn = min_at >= 0 ? zmm_join(hd + min_at) : _mm512_setzero_ps();
        const __m512 mn1 = has_min == 2 ? zmm_join(hd + min_at + PW) : mn;   /* an m per 16 inputs: layout 2 */
#pragma GCC unroll 16
        for (int i = 0; i < r; i++) {
            acc[i] = k256 ? zmm_step_k256(acc[i], s[i], off, sc[i].qs[1], d1)
                          : zmm_step(acc[i], s[i], off, sc[i].qs[1], d1, _mm512_set1_ps(sc[i].dx));
            if (has_min == 2) {   /* the halves' m times dx * their sums of codes (dot.h's half_sx; never k256) */
                acc[i] = _mm512_fmadd_ps(mn, _mm512_set1_ps(sc[i].dx * (float)sc[i].qs[0]), acc[i]);
                acc[i] = _mm512_fmadd_ps(mn1, _mm512_set1_ps(sc[i].dx * (float)sc[i].qs[1]), acc[i]);
            } else if (min_at >= 0) {
                acc[i] = _mm512_fmadd_ps(mn, _mm512_set1_ps(sc[i].sx), acc[i]);   /* k256: sx the codes' sum */
            }
        }
        if (k256 && blk % KSUPER == KSUPER - 1)   /* the super-block's sums times its dx */
#pragma GCC unroll 16
            for (int i = 0; i < r; i++) {
                _mm512_store_ps(sum256 + i * PW, _mm512_fmadd_ps(acc[i], _mm512_set1_ps(sc[i].dx), _mm512_load_ps(sum256 + i * PW)));
                acc[i] = _mm512_setzero_ps();
            }
    }
#pragma GCC unroll 16
    for (int i = 0; i < r; i++) zmm_store_row(a, k256 ? _mm512_load_ps(sum256 + i * PW) : acc[i], m0 + i, p);
}

/* One function per row count and kind of format (amx.h's four), the flags constants; pfx names
   the family: wide (decoding's arithmetic) or k256 (a K-quant's prompt rows, a scale per 256
   inputs: hexa_linear_prefill) */
typedef void (*wide_tile)(const struct wide_job *, int, int, const __m256i *);
#define WIDE_FN(pfx, kind, split, off, has_min, own, k256, r)                                      \
    WIDE_TARGET static void pfx##_##kind##_##r(const struct wide_job *j, int m0, int p, const __m256i *pre) { \
        wide_rows(j, m0, r, p, pre, split, off, has_min, own, k256);                              \
    }
/* Tiles over pre take 6-12 rows: a call over pre has more than ONE_Q4 or ONE_Q8 rows (7 or more;
   k256: more than WIDE_OWN_ROWS) and the fewest tiles of at most 12, so 13 rows make the smallest
   ones (6 and 7). Only those are compiled: each unrolls its whole block, and all 12 row counts (and
   one-tile calls of 2-8 rows) made quant_dot.c's compile 4x as long (-O3, 105 against 26 s; 54 s
   now). pfx##_##kind##_pre[rows] is the tile. */
#define OVER_PRE(pfx, kind, split, off, has_min, k256)                                             \
    WIDE_FN(pfx, kind, split, off, has_min, 0, k256, 6) WIDE_FN(pfx, kind, split, off, has_min, 0, k256, 7)   \
    WIDE_FN(pfx, kind, split, off, has_min, 0, k256, 8) WIDE_FN(pfx, kind, split, off, has_min, 0, k256, 9)   \
    WIDE_FN(pfx, kind, split, off, has_min, 0, k256, 10) WIDE_FN(pfx, kind, split, off, has_min, 0, k256, 11) \
    WIDE_FN(pfx, kind, split, off, has_min, 0, k256, 12)                                          \
    static const wide_tile pfx##_##kind##_pre[13] = {0, 0, 0, 0, 0, 0, pfx##_##kind##_6, pfx##_##kind##_7, \
        pfx##_##kind##_8, pfx##_##kind##_9, pfx##_##kind##_10, pfx##_##kind##_11, pfx##_##kind##_12};
/* One tile a panel (WIDE_OWN_ROWS rows or fewer), decoding its own codes: the nibbles and planes
   (8-bit codes take int16 pairs in such calls, PAIRS). Decoding's calls of 6-8 rows; a K-quant's
   prompt rows of 1-8 (a prompt's last chunk; over pre, 8 rows took 1.4x the time).
   pfx##_##kind##_own[rows] is the tile. */
#define OWN_6_8(pfx, kind, split, off, has_min, k256)                                             \
    WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 6)                                     \
    WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 7)                                     \
    WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 8)
#define OWN_1_5(pfx, kind, split, off, has_min, k256)                                             \
    WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 1) WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 2) \
    WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 3) WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 4) \
    WIDE_FN(pfx##_own, kind, split, off, has_min, 1, k256, 5)
#define WIDE_OWNS(kind, split, off, has_min)                                                      \
    OWN_6_8(wide, kind, split, off, has_min, 0)                                                   \
    static const wide_tile wide_##kind##_own[9] = {0, 0, 0, 0, 0, 0, wide_own_##kind##_6, wide_own_##kind##_7, \
        wide_own_##kind##_8};
#define K256_OWNS(kind, split, off, has_min)                                                      \
    OWN_1_5(k256, kind, split, off, has_min, 1) OWN_6_8(k256, kind, split, off, has_min, 1)       \
    static const wide_tile k256_##kind##_own[9] = {0, k256_own_##kind##_1, k256_own_##kind##_2,   \
        k256_own_##kind##_3, k256_own_##kind##_4, k256_own_##kind##_5, k256_own_##kind##_6,       \
        k256_own_##kind##_7, k256_own_##kind##_8};
WIDE_OWNS(min, 0, 0, 1)
WIDE_OWNS(offset, 0, 1, 0)   /* 9: Q5_0 */
WIDE_OWNS(split, 1, 1, 0)    /* 6: Q6_K */
WIDE_OWNS(half, 1, 0, 2)     /* 2: Q2_K */
#define WIDE_OWN_ROWS 8   /* most rows of a one-tile call that decodes its own codes */
_Static_assert(WIDE_ROWS == 12 && WIDE_OWN_ROWS == 8 && ONE_Q4 >= 6 && ONE_Q4 <= WIDE_OWN_ROWS && ONE_Q8 >= 6,
               "tiles over pre of 6-12 rows, one-tile calls of 6-8 (k256: 1-8)");
OVER_PRE(wide, min, 0, 0, 1, 0)       /* 4, 5: Q4_0/Q4_1/Q4_K, Q5_1/Q5_K */
OVER_PRE(wide, offset, 0, 1, 0, 0)    /* 8, 9: Q8_0, Q5_0 */
OVER_PRE(wide, split, 1, 1, 0, 0)     /* 6: Q6_K */
OVER_PRE(wide, union, 1, 1, 1, 0)     /* 7: a projection of mixed types */
OVER_PRE(wide, half, 1, 0, 2, 0)      /* 2: Q2_K */
OVER_PRE(k256, min, 0, 0, 1, 1)       /* a K-quant's prompt rows: 4, 5 (Q4_K, Q5_K) */
OVER_PRE(k256, split, 1, 1, 0, 1)     /* ... 6 (Q6_K) */
K256_OWNS(min, 0, 0, 1)
K256_OWNS(split, 1, 1, 0)

/* a work item (panels [g*gp, g*gp+gp) x all rows): each panel decoded into pre once, then its
   row tiles */
WIDE_TARGET static void wide_group(void *ctx, int g) {
    const struct wide_job *j = ctx;
    const struct dot_job *a = j->a;
    const int split = SPLIT_SCALE(a->bits), off = TILE_OFFSET(a->bits) != 0;
    const int has_min = MIN_HALF(a->bits) ? 2 : MIN_AT(a->bits) >= 0;
    const int p_end = item_stop(a, g);
    if (j->tiles == 1 && a->M <= WIDE_OWN_ROWS && !BYTE_CODES(a->bits)) {   /* one tile a panel, its own codes */
        const wide_tile *own = a->k256 ? (split ? k256_split_own : k256_min_own)   /* 1-8 rows */
                                       : split ? (has_min ? wide_half_own : wide_split_own)
                                       : off ? wide_offset_own : wide_min_own;   /* 6-8 */
        for (int p = g * a->gp; p < p_end; p++) own[a->M](j, 0, p, NULL);
        return;
    }
    const wide_tile *tiles_of = a->k256 ? (split ? k256_split_pre : k256_min_pre)
                                : split ? (has_min == 2 ? wide_half_pre : has_min ? wide_union_pre : wide_split_pre)
                                : off ? wide_offset_pre : wide_min_pre;
    __m256i *pre = aligned_alloc(64, pre_bytes(a));
    if (!pre) abort();
    for (int p = g * a->gp; p < p_end; p++) {
        decode_panel(a, p, pre);
        for (int t = 0, m = 0; t < j->tiles; t++) {
            const int rows = tile_rows(a->M - m, j->tiles - t);
            tiles_of[rows](j, m, p, pre);
            m += rows;
        }
    }
    free(pre);
}

/* hexa_linear_dot's calls that dot_group would give pre, on the 512-bit tiles */
WIDE_TARGET void wide_dot(const struct dot_job *a, int threads) {
    const int nb = a->K / QB, tiles = (a->M + WIDE_ROWS - 1) / WIDE_ROWS;
    struct wide_job j = {a, malloc((size_t)a->M * a->K), malloc(sizeof(struct wide_scale) * (size_t)a->M * nb), tiles};
    if (!j.quads || !j.scales) abort();
    hexa_run(wide_interleave, &j, tiles, threads);
    hexa_run(wide_group, &j, (a->P + a->gp - 1) / a->gp, threads);
    free(j.quads);
    free(j.scales);
}

int wide_on;   /* what hexa_wide last said: quant_dot.c reads it */

int32_t hexa_wide(int32_t on) {
    __builtin_cpu_init();
    wide_on = on && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    return wide_on;
}
#else
int32_t hexa_wide(int32_t on) {
    (void)on;
    return 0;
}
#endif
