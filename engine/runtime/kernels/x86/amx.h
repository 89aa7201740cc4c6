/* The products over pre on AMX tiles (the amx build: -DHEXA_AMX), included at the end of quant_dot.c.
 *
 * A call of 24 rows or more (prompt chunks, the largest draft trees; AMX_ROWS) decodes each
 * panel's codes once into pre: per block of 32 inputs, 8 groups of 4 inputs x 16 columns, 64
 * bytes a group. That is the layout of an AMX B tile (a row per group, 4 bytes a column), so one
 * TDPBSUD multiplies up to 16 rows' int8 codes (A: a row per row, its block's 32 codes) by the
 * panel's unsigned codes and leaves every row's 16 column sums in C: the very integers the VNNI
 * tiles form with 8 vpdpbusd per row. Integer sums are exact, so how they are formed changes no
 * bit. The fp32 steps after them are the VNNI tiles' (NIB_FLOAT, DOT_Q4's), the same operations
 * in the same order per lane; a zmm holds a row's 16 columns where the tiles held two ymm, which
 * changes no lane's arithmetic. So a row still gives the bits it gives alone (the C driver checks
 * every batch size against the rows alone, with the tiles on).
 *
 * The tile registers' state is large (8 KB), and Linux hands it to a process only on request
 * (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA); refused, or on a CPU without AMX, the VNNI
 * tiles run instead, with the same bits. Only the functions here are compiled for AMX (target
 * attributes): the rest of the build is the avx512-vnni build's code.
 */
#ifdef HEXA_AMX
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8")))
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int amx_granted;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_ask(void) {
    amx_granted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

int32_t hexa_amx(int32_t on) {
    if (on) pthread_once(&amx_once, amx_ask);
    amx_on = on && amx_granted;
    return amx_on;
}

/* ldtilecfg's 64 bytes: palette 1; per tile its rows and bytes a row */
struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

/* Two blocks in flight: block b+1's products run on the tile unit while block b's sums take their
   fp32 steps. With all of a block's steps waiting on its own products, the tiles gave 1.0-1.3x
   the VNNI tiles' speed at 256 rows; with two in flight 1.2-1.6x (kernels bench, in turn in one
   process). Tiles, without a second scale: C, A (r rows x 32 codes), B (8 groups x 64 bytes)
   twice (0-2, 3-5); with a scale per 16 inputs: C of inputs 0-15 and of 16-31 twice (0, 1 and
   2, 3), A's 16 codes and B's 4 groups twice (4, 5 and 6, 7). Taking 6 panels per A load
   instead (A read once per work item, not per panel) lost the overlap and was slower. */
AMX_TARGET static void amx_configure(int r, int split) {
    struct amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;   /* an unused tile keeps rows and bytes 0: any other pair is refused (#GP) */
    for (int t = 0; t < (split ? 8 : 6); t++) c.colsb[t] = 64;
    if (split) {
        for (int t = 0; t < 4; t++) c.rows[t] = (uint8_t)r;
        c.rows[4] = c.rows[6] = (uint8_t)r;
        c.colsb[4] = c.colsb[6] = QB / 2;
        c.rows[5] = c.rows[7] = QB / 8;
    } else {
        c.rows[0] = c.rows[1] = c.rows[3] = c.rows[4] = (uint8_t)r;
        c.colsb[1] = c.colsb[4] = QB;
        c.rows[2] = c.rows[5] = QB / 4;
    }
    _tile_loadconfig(&c);
}

/* block blk's products into a slot's C tiles (tile numbers are immediates: one macro a slot) */
#define AMX_ISSUE(C, A, B, blk)                                                                   \
    do {                                                                                          \
        _tile_zero(C);                                                                            \
        _tile_loadd(A, codes + (blk) * QB, a->K);                                                 \
        _tile_loadd(B, pre + (int64_t)(blk) * QB / 2, 64);                                        \
        _tile_dpbsud(C, A, B);                                                                    \
    } while (0)
#define AMX_ISSUE_SPLIT(C0, C1, A, B, blk)                                                        \
    do {                                                                                          \
        _tile_zero(C0);                                                                           \
        _tile_zero(C1);                                                                           \
        _tile_loadd(A, codes + (blk) * QB, a->K);                                                 \
        _tile_loadd(B, pre + (int64_t)(blk) * QB / 2, 64);                                        \
        _tile_dpbsud(C0, A, B);                                                                   \
        _tile_loadd(A, codes + (blk) * QB + QB / 2, a->K);                                        \
        _tile_loadd(B, (const uint8_t *)(pre + (int64_t)(blk) * QB / 2) + 64 * QB / 8, 64);       \
        _tile_dpbsud(C1, A, B);                                                                   \
    } while (0)

/* block blk's fp32 steps on rows [m0, m0+r), from its integer sums (sums[half][row]): NIB_FLOAT's
   and DOT_Q4's operations, lane for lane (acc += float(sum - offs) * (d * dx), then + m * sx).
   Inlined into amx_rows with the row loop unrolled, so acc stays in 16 zmm registers: as a call
   with acc in memory, every row's step loaded and stored its accumulator and reloaded a->dx
   (perf: 22% of a Qwen3-shaped prefill in this function). */
AMX_TARGET static inline __attribute__((always_inline)) void
amx_float(const struct dot_job *a, int m0, int r, int p, const __m256i *pre, int blk, int32_t (*sums)[16][16],
          __m512 *acc, const int split, const int off, const int has_min) {
    const int nb = a->K / QB, bits = a->bits, min_at = has_min ? MIN_AT(bits) : -1;
    const float *restrict dx = a->dx + (int64_t)m0 * nb + blk, *restrict sx = a->sx + (int64_t)m0 * nb + blk;
    const int32_t *restrict qs = a->qs + 2 * ((int64_t)m0 * nb + blk);
    float tmp[HEAD_MAX * PW];
    const float *hd = HEAD_OF(bits) ? pre_head(pre, bits, nb, QB / 2, blk) : block_head(a->packed, bits, nb, p, blk, tmp);
    const __m512 d0 = zmm_join(hd), d1 = split ? zmm_join(hd + PW) : d0;
    const __m512 mn = min_at >= 0 ? zmm_join(hd + min_at) : _mm512_setzero_ps();
    const __m512 mn1 = has_min == 2 ? zmm_join(hd + min_at + PW) : mn;   /* an m per 16 inputs: layout 2 */
#pragma GCC unroll 16
    for (int i = 0; i < r; i++) {
        const __m512 dxi = _mm512_set1_ps(dx[(int64_t)i * nb]);
        if (split)
            acc[i] = zmm_step(acc[i], _mm512_load_si512((const void *)sums[0][i]), off, qs[2 * (int64_t)i * nb], d0, dxi);
        acc[i] = zmm_step(acc[i], _mm512_load_si512((const void *)sums[1][i]), off, qs[2 * (int64_t)i * nb + 1], d1, dxi);
        if (has_min == 2) {   /* the halves' m times dx * their sums of codes */
            const int64_t at = (int64_t)(m0 + i) * nb + blk;
            acc[i] = _mm512_fmadd_ps(mn, _mm512_set1_ps(half_sx(a, at, 0)), acc[i]);
            acc[i] = _mm512_fmadd_ps(mn1, _mm512_set1_ps(half_sx(a, at, 1)), acc[i]);
        } else if (min_at >= 0) {
            acc[i] = _mm512_fmadd_ps(mn, _mm512_set1_ps(sx[(int64_t)i * nb]), acc[i]);
        }
    }
}

/* rows [m0, m0+r) (r <= 16) x panel p over pre, as the tiles of dot_group would give them
   (amx_rows16 and amx_rows_tail below: r a constant 16 lets every row loop unroll) */
AMX_TARGET static inline __attribute__((always_inline)) void amx_rows(const struct dot_job *a, int m0, int r, int p,
                                                                      const __m256i *pre, const int split,
                                                                      const int off, const int has_min) {
    const int nb = a->K / QB;
    const int8_t *codes = (const int8_t *)a->codes + (int64_t)m0 * a->K;
    int32_t sums[2][2][16][16] __attribute__((aligned(64)));   /* [slot][half][row][column] */
    __m512 acc[16];
#pragma GCC unroll 16
    for (int i = 0; i < r; i++) acc[i] = _mm512_setzero_ps();
    if (split) {
        AMX_ISSUE_SPLIT(0, 1, 4, 5, 0);
        for (int blk = 0; blk < nb; blk += 2) {
            if (blk + 1 < nb) AMX_ISSUE_SPLIT(2, 3, 6, 7, blk + 1);
            _tile_stored(0, sums[0][0], 64);
            _tile_stored(1, sums[0][1], 64);
            if (blk + 2 < nb) AMX_ISSUE_SPLIT(0, 1, 4, 5, blk + 2);
            amx_float(a, m0, r, p, pre, blk, sums[0], acc, split, off, has_min);
            if (blk + 1 < nb) {
                _tile_stored(2, sums[1][0], 64);
                _tile_stored(3, sums[1][1], 64);
                amx_float(a, m0, r, p, pre, blk + 1, sums[1], acc, split, off, has_min);
            }
        }
    } else {
        AMX_ISSUE(0, 1, 2, 0);
        for (int blk = 0; blk < nb; blk += 2) {
            if (blk + 1 < nb) AMX_ISSUE(3, 4, 5, blk + 1);
            _tile_stored(0, sums[0][1], 64);
            if (blk + 2 < nb) AMX_ISSUE(0, 1, 2, blk + 2);
            amx_float(a, m0, r, p, pre, blk, sums[0], acc, split, off, has_min);
            if (blk + 1 < nb) {
                _tile_stored(3, sums[1][1], 64);
                amx_float(a, m0, r, p, pre, blk + 1, sums[1], acc, split, off, has_min);
            }
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < r; i++) zmm_store_row(a, acc[i], m0 + i, p);
}

/* The formats' flags (a second scale, a code offset, a min term) as constants, so that no row's
   fp32 steps test them: 16 rows (every full tile) per kind of format, the last rows of a call
   with the flags read at run time. */
#define AMX_ROWS16(name, split, off, has_min)                                                     \
    AMX_TARGET static void name(const struct dot_job *a, int m0, int p, const __m256i *pre) {     \
        amx_rows(a, m0, 16, p, pre, split, off, has_min);                                         \
    }
AMX_ROWS16(amx_rows16_min, 0, 0, 1)         /* 4, 5: Q4_0/Q4_1/Q4_K, Q5_1/Q5_K */
AMX_ROWS16(amx_rows16_offset, 0, 1, 0)      /* 8, 9: Q8_0, Q5_0 */
AMX_ROWS16(amx_rows16_split, 1, 1, 0)       /* 6: Q6_K */
AMX_ROWS16(amx_rows16_union, 1, 1, 1)       /* 7: a projection of mixed types */
AMX_ROWS16(amx_rows16_half, 1, 0, 2)        /* 2: Q2_K, an m per 16 inputs */

static int amx_offset(int bits) { return TILE_OFFSET(bits) != 0; }
static int amx_min(int bits) { return MIN_HALF(bits) ? 2 : MIN_AT(bits) >= 0; }

AMX_TARGET static void amx_rows_tail(const struct dot_job *a, int m0, int r, int p, const __m256i *pre) {
    amx_rows(a, m0, r, p, pre, SPLIT_SCALE(a->bits), amx_offset(a->bits), amx_min(a->bits));
}

/* a work item (panels [g*gp, g*gp+gp) x all rows) on the tiles: each panel decoded into pre,
   then its rows 16 at a time */
AMX_TARGET static void amx_group(void *ctx, int g) {
    const struct dot_job *a = ctx;
    const int split = SPLIT_SCALE(a->bits);
    const int p_end = item_stop(a, g);
    __m256i *pre = aligned_alloc(64, pre_bytes(a));
    if (!pre) abort();
    int configured = 0;   /* 2 * rows + split of the configuration loaded (0: none) */
    const int off = amx_offset(a->bits), has_min = amx_min(a->bits);
    void (*rows16)(const struct dot_job *, int, int, const __m256i *) =   /* NULL: no such format yet */
        !off ? (!split && has_min ? amx_rows16_min : split && has_min == 2 ? amx_rows16_half : NULL)
             : split ? (has_min ? amx_rows16_union : amx_rows16_split) : has_min ? NULL : amx_rows16_offset;
    for (int p = g * a->gp; p < p_end; p++) {
        decode_panel(a, p, pre);
        for (int m = 0; m < a->M; m += 16) {
            const int r = a->M - m < 16 ? a->M - m : 16;
            if (2 * r + split != configured) {
                amx_configure(r, split);
                configured = 2 * r + split;
            }
            if (r == 16 && rows16) rows16(a, m, p, pre);
            else amx_rows_tail(a, m, r, p, pre);
        }
    }
    _tile_release();   /* the tile state back to its initial one: cheaper context switches */
    free(pre);
}

#else
int32_t hexa_amx(int32_t on) {
    (void)on;
    return 0;
}
#endif
