/* The products over pre on AMX tiles (the amx build: -DHEXA_AMX), included by quant_dot.c.
 *
 * A call of more rows than one tile takes (prompt chunks, trees past 8 rows) decodes each panel's
 * codes once into pre: per block of 32 inputs, 8 groups of 4 inputs x 16 columns, 64 bytes a
 * group. That is the layout of an AMX B tile (a row per group, 4 bytes a column), so one
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
 * tiles run instead, with the same bits. Only the functions here are compiled for AMX and
 * AVX-512 (target attributes): the rest of the build is the avx-vnni build's code.
 */
#ifdef HEXA_AMX
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8")))
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int amx_granted, amx_on;
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

/* tiles: 0 C (r rows of 16 int32), 1 A (r rows x 32 codes), 2 B (8 groups x 64 bytes), and for
   the formats with a scale per 16 inputs: 3 C of inputs 16-31, 4 A's 16 codes, 5 B's 4 groups */
AMX_TARGET static void amx_configure(int r) {
    struct amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    c.rows[0] = c.rows[1] = c.rows[3] = c.rows[4] = (uint8_t)r;
    c.colsb[0] = c.colsb[3] = 64;
    c.colsb[1] = QB;
    c.rows[2] = QB / 4;
    c.colsb[2] = 64;
    c.colsb[4] = QB / 2;
    c.rows[5] = QB / 8;
    c.colsb[5] = 64;
    _tile_loadconfig(&c);
}

/* two ymm (the tiles' quad column order: quad_order's halves) as one zmm */
AMX_TARGET static inline __m512 amx_join(__m256 lo, __m256 hi) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

/* NIB_FLOAT / DOT_Q4's first steps on one row: acc += float(sum - offs) * (d * dx) */
AMX_TARGET static inline __m512 amx_float(__m512 acc, const int32_t *sum, const float *d, float dx, int off,
                                          int32_t offs) {
    __m512i t = _mm512_load_si512((const void *)sum);
    if (off) t = _mm512_sub_epi32(t, _mm512_set1_epi32(offs));
    const __m512 dq = amx_join(quad_order(d, 0), quad_order(d, 1));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(dq, _mm512_set1_ps(dx)), acc);
}

/* rows [m0, m0+r) (r <= 16) x panel p over pre, as the tiles of dot_group would give them */
AMX_TARGET static void amx_rows(const struct dot_job *a, int m0, int r, int p, const __m256i *pre) {
    const int nb = a->K / QB, bits = a->bits, q4 = CODES(bits) == 4, split = SPLIT_SCALE(bits);
    const int off = !q4 && TILE_OFFSET(bits), min_at = q4 ? PW : MIN_AT(bits);
    const int8_t *codes = (const int8_t *)a->codes + (int64_t)m0 * a->K;
    int32_t sums[2][16][16] __attribute__((aligned(64)));
    __m512 acc[16];
    for (int i = 0; i < r; i++) acc[i] = _mm512_setzero_ps();
    for (int blk = 0; blk < nb; blk++) {
        const uint8_t *group = (const uint8_t *)(pre + (int64_t)blk * QB / 2);   /* 8 groups x 64 bytes */
        if (split) {   /* inputs 0-15 and 16-31 apart: each half has its own scale */
            _tile_zero(0);
            _tile_zero(3);
            _tile_loadd(4, codes + blk * QB, a->K);
            _tile_loadd(5, group, 64);
            _tile_dpbsud(0, 4, 5);
            _tile_loadd(4, codes + blk * QB + QB / 2, a->K);
            _tile_loadd(5, group + 64 * QB / 8, 64);
            _tile_dpbsud(3, 4, 5);
            _tile_stored(0, sums[0], 64);
            _tile_stored(3, sums[1], 64);
        } else {
            _tile_zero(0);
            _tile_loadd(1, codes + blk * QB, a->K);
            _tile_loadd(2, group, 64);
            _tile_dpbsud(0, 1, 2);
            _tile_stored(0, sums[1], 64);
        }
        float tmp[3 * PW];
        const float *hd = HEAD_OF(bits) ? pre_head(pre, a->K / QB, QB / 2, blk) : block_head(a->packed, bits, nb, p, blk, tmp);
        const float *d = hd;
        for (int i = 0; i < r; i++) {
            const int64_t at = (int64_t)(m0 + i) * nb + blk;
            const float dx = a->dx[at];
            if (split) acc[i] = amx_float(acc[i], sums[0][i], d, dx, off, a->qs[2 * at]);
            acc[i] = amx_float(acc[i], sums[1][i], split ? d + PW : d, dx, off, a->qs[2 * at + 1]);
            if (min_at >= 0)   /* + m * dx * sum(xq) */
                acc[i] = _mm512_fmadd_ps(amx_join(quad_order(hd + min_at, 0), quad_order(hd + min_at, 1)),
                                         _mm512_set1_ps(a->sx[at]), acc[i]);
        }
    }
    for (int i = 0; i < r; i++) {
        const __m256 lo = _mm512_castps512_ps256(acc[i]);
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[i]), 1));
        store_panel(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31), a->b, a->res, a->y,
                    m0 + i, p * PW, a->N);
    }
}

/* every row of panel p, 16 at a time; *configured: the rows the tiles are configured for (0: none) */
AMX_TARGET static void amx_panel(const struct dot_job *a, int p, const __m256i *pre, int *configured) {
    for (int m = 0; m < a->M; m += 16) {
        const int r = a->M - m < 16 ? a->M - m : 16;
        if (r != *configured) {
            amx_configure(r);
            *configured = r;
        }
        amx_rows(a, m, r, p, pre);
    }
}

AMX_TARGET static void amx_release(void) { _tile_release(); }

#else
int32_t hexa_amx(int32_t on) {
    (void)on;
    return 0;
}
#endif
