/* Prompt rows on AMX bf16 tiles (the amx build: -DHEXA_AMX), included at the end of quant_dot.c
 * after amx.h: hexa_linear_prefill's arithmetic where the OS granted the tiles.
 *
 * Decoding's int8 arithmetic (quant_dot.c, amx.h) has a scale per 32 inputs on both sides, so
 * every block's sums leave the tiles for their fp32 steps; on the int8 tiles those steps and
 * the tiles' stores took half of a prompt chunk's time (a 6144 x 2048 Q4_K product at 256 rows:
 * 9.6 ms, 4.8 without the fp32 steps). Prompt rows need not take decoding's bits: no draft is
 * verified against them, and every method prefills the same way, so tokens stay identical
 * across methods. Here each panel's weights are decoded once per call to bf16 (d * q + m from
 * the same codes and heads, rounded to nearest even), the rows' activations rounded to bf16,
 * and TDPBF16PS sums them in fp32 over all of K inside the tiles: one weight 1.5-2.5x the int8
 * tiles at 256 rows, and closer to fp32 (max relative error 2.5e-3 against their 5e-3).
 *
 * A row's bits still never depend on the other rows (a tile row's sums read only that row of
 * A), so a prompt gives the same bits in any chunking, and a reused prefix's rows equal a cold
 * prefill's. They do differ from the int8 builds' prompt rows: on a CPU without AMX, or where
 * the OS refused the tiles, hexa_linear_prefill is hexa_linear_dot (a K-quant's rows on the
 * 512-bit tiles aside: quant_dot.c's k256_applies).
 */
#ifdef HEXA_AMX
#define BF_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))
#define BF_SLICE 16   /* blocks of K per pass over the rows: A's slice stays in L2 across panels */

/* Floats become bf16 by VCVTNE(2)PS2BF16 (AVX512-BF16, which every CPU with AMX-BF16 has; the
   amx build requires it): rounded to nearest even, as the five integer steps a vector they replaced
   (the same bits, but for fp32 denormals, which they take as zeros). Products at 64-256 rows
   1.00-1.18x as fast, a Qwen2.5-1.5B-wide prefill ~1.04x (this Xeon, 2026-12-02, builds
   alternated in one process). */

/* panel p's weights, from its codes decoded into pre (decode_panel), as bf16 B tiles: per block
   16 rows (input pairs 2r, 2r+1) x 16 columns (the quads' column order, as amx.h's sums) */
BF_TARGET static void bf_panel(const struct dot_job *a, int p, const __m256i *pre, uint32_t *wb) {
    const int nb = a->K / QB, bits = a->bits, split = SPLIT_SCALE(bits);
    const int off = TILE_OFFSET(bits), min_at = MIN_AT(bits);
    const __m512i offv = _mm512_set1_epi32(off), byte = _mm512_set1_epi32(0xff);
    /* word 2k <- word k (the first input's column k), word 2k+1 <- word 16+k (the second's) */
    const __m512i pairs = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                           23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int blk = 0; blk < nb; blk++) {
        float tmp[HEAD_MAX * PW];
        const float *hd = HEAD_OF(bits) ? pre_head(pre, bits, nb, QB / 2, blk) : block_head(a->packed, bits, nb, p, blk, tmp);
        const __m512 d0 = zmm_join(hd), d1 = split ? zmm_join(hd + PW) : d0;
        const __m512 mn0 = min_at >= 0 ? zmm_join(hd + min_at) : _mm512_setzero_ps();
        const __m512 mn1 = MIN_HALF(bits) ? zmm_join(hd + min_at + PW) : mn0;   /* layout 2: an m per 16 inputs */
        for (int g = 0; g < 8; g++) {   /* a group: 4 inputs x 16 columns, a byte each */
            const __m512i v = _mm512_load_si512((const void *)(pre + (blk * 8 + g) * 2));
            const __m512 d = g < 4 ? d0 : d1, mn = g < 4 ? mn0 : mn1;
            __m512 f[4];
            for (int j = 0; j < 4; j++)
                f[j] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(v, 8 * j), byte), offv)), mn);
            /* inputs 2r and 2r+1 of a column side by side: a tile row's pair */
            uint32_t *row = wb + ((int64_t)blk * 16 + 2 * g) * 16;
            _mm512_store_si512((void *)row, _mm512_permutexvar_epi16(pairs, (__m512i)_mm512_cvtne2ps_pbh(f[1], f[0])));
            _mm512_store_si512((void *)(row + 16), _mm512_permutexvar_epi16(pairs, (__m512i)_mm512_cvtne2ps_pbh(f[3], f[2])));
        }
    }
}

/* C 0-3 and A 4-5 of r rows, B 6-7 (16 input pairs x 16 columns) */
BF_TARGET static void bf_configure(int r) {
    struct amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) {
        c.rows[t] = (uint8_t)(t >= 6 ? 16 : r);
        c.colsb[t] = 64;
    }
    _tile_loadconfig(&c);
}

/* The rows' A tiles (bf_rows_to_bf16's layout) times one or two panels' B tiles, blocks [b0, b1):
   C 0 and 1 the first 16 rows (or the configured r) against panels w0 and w1, C 2 and 3 the next
   16 (ng = 2); sums so far in c0 / c1 ([rows][16] floats a panel), zero at b0 = 0. Two A and two
   B tiles a block for four products, where 64 rows against one panel loaded four A tiles (from
   L2) and one B: in a loop of loads and products alone ~10-11 ns a product against 14-34 (A from
   256-768 KB), and TDPBF16PS on loaded tiles ~8-12 ns; whole products at 100-256 rows 1.0-1.25x
   as fast (Llama-3.2-3B's 3072 x 8192 1.9x), a Qwen2.5-1.5B-wide 768-token prefill 1.10x (this
   Xeon, 2026-12-02, builds alternated in one process). Every C element sums the same products in
   block order as before: the same bits. */
#define BF_C(op, C, c, r) op(C, (c) + (int64_t)(r) * 16, 64)
BF_TARGET static void bf_rows(const uint16_t *x, int nb, int m0, int ng, const uint32_t *w0, const uint32_t *w1,
                              int b0, int b1, float *c0, float *c1) {
    const int two = w1 != NULL;
    if (b0 == 0) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        BF_C(_tile_loadd, 0, c0, m0);
        if (two) BF_C(_tile_loadd, 1, c1, m0);
        if (ng > 1) BF_C(_tile_loadd, 2, c0, m0 + 16);
        if (ng > 1 && two) BF_C(_tile_loadd, 3, c1, m0 + 16);
    }
    const uint16_t *xa = x + (((int64_t)m0 / 16 * nb) << 9), *xb = xa + ((int64_t)nb << 9);
    for (int blk = b0; blk < b1; blk++) {
        _tile_loadd(4, xa + ((int64_t)blk << 9), 64);
        _tile_loadd(6, w0 + (int64_t)blk * 256, 64);
        if (ng > 1) _tile_loadd(5, xb + ((int64_t)blk << 9), 64);
        if (two) _tile_loadd(7, w1 + (int64_t)blk * 256, 64);
        _tile_dpbf16ps(0, 4, 6);
        if (two) _tile_dpbf16ps(1, 4, 7);
        if (ng > 1) _tile_dpbf16ps(2, 5, 6);
        if (ng > 1 && two) _tile_dpbf16ps(3, 5, 7);
    }
    BF_C(_tile_stored, 0, c0, m0);
    if (two) BF_C(_tile_stored, 1, c1, m0);
    if (ng > 1) BF_C(_tile_stored, 2, c0, m0 + 16);
    if (ng > 1 && two) BF_C(_tile_stored, 3, c1, m0 + 16);
}

struct bf_job {
    const struct dot_job *a;
    const float *xf;     /* [M][K] the rows */
    uint16_t *x;         /* ... in bf16 */
};

/* a work item (panels [g*gp, g*gp+gp) x all rows): the panels' weights to bf16, then K slice by
   slice, the panels two at a time against 32 rows at a time, the sums kept in memory between
   slices */
BF_TARGET static void bf_group(void *ctx, int g) {
    const struct bf_job *j = ctx;
    const struct dot_job *a = j->a;
    const int p0 = g * a->gp, p_end = item_stop(a, g), np = p_end - p0, nb = a->K / QB;
    const int64_t panel_words = (int64_t)a->K * 8, rows16 = (a->M + 15) / 16 * 16;
    __m256i *pre = aligned_alloc(64, pre_bytes(a));
    uint32_t *wb = aligned_alloc(64, sizeof(uint32_t) * panel_words * np);
    float *cb = aligned_alloc(64, sizeof(float) * 16 * rows16 * np);
    if (!pre || !wb || !cb) abort();
    for (int p = p0; p < p_end; p++) {
        decode_panel(a, p, pre);
        bf_panel(a, p, pre, wb + (p - p0) * panel_words);
    }
    const int full = a->M / 16 * 16, tail = a->M - full;
    for (int b0 = 0; b0 < nb; b0 += BF_SLICE) {
        const int b1 = b0 + BF_SLICE < nb ? b0 + BF_SLICE : nb;
        /* the full rows, then the tail's: the tiles configured twice a slice (LDTILECFG ~150 ns) */
        for (int part = 0; part < 2; part++) {
            const int rows = part ? tail : full, m_start = part ? full : 0;
            if (!rows) continue;
            bf_configure(part ? tail : 16);
            for (int p = p0; p < p_end; p += 2) {   /* panels in pairs, the last one alone if odd */
                const int two = p + 1 < p_end;
                const uint32_t *w0 = wb + (p - p0) * panel_words, *w1 = two ? w0 + panel_words : NULL;
                float *c0 = cb + (p - p0) * rows16 * 16, *c1 = two ? c0 + rows16 * 16 : NULL;
                for (int m = m_start; m < m_start + rows; m += 32)
                    bf_rows(j->x, nb, m, part || m + 16 >= full ? 1 : 2, w0, w1, b0, b1, c0, c1);
            }
        }
    }
    for (int p = p0; p < p_end; p++)
        for (int i = 0; i < a->M; i++) zmm_store_row(a, _mm512_load_ps(cb + ((p - p0) * rows16 + i) * 16), i, p);
    _tile_release();
    free(pre);
    free(wb);
    free(cb);
}

/* the rows to bf16 (a pool item: 16 rows), laid out as A tiles: per 16 rows and block of K, the
   rows' 32 values one after another, so that a tile is 1 KB in one piece (read in place, its 16
   rows lay 2K bytes apart: for K = 8960 on as many pages). Alone this changed no measured time. */
BF_TARGET static void bf_rows_to_bf16(void *ctx, int item) {
    const struct bf_job *j = ctx;
    const int64_t K = j->a->K, nb = K / QB, m0 = (int64_t)item * 16, m1 = m0 + 16 < j->a->M ? m0 + 16 : j->a->M;
    uint16_t *tiles = j->x + item * nb * 512;
    for (int64_t blk = 0; blk < nb; blk++)
        for (int64_t i = m0; i < m1; i++)
            for (int h = 0; h < 2; h++)
                _mm256_store_si256((__m256i *)(tiles + blk * 512 + (i - m0) * 32 + 16 * h),
                                   (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(j->xf + i * K + blk * QB + 16 * h)));
}

static int bf16_linear(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                       int M, int N, int K, int bits, int threads) {
    if (!amx_on) return 0;
    uint16_t *xb = aligned_alloc(64, (size_t)(M + 15) / 16 * 16 * K * 2);   /* whole A tiles */
    if (!xb) abort();
    /* gp: panels per work item (GP), read by bf_group and by decode_panel's read-ahead (item_end);
       left out (0), every prefill died dividing by it (c723aee) */
    const struct dot_job a = {.packed = packed, .b = b, .res = res, .y = y, .M = M, .N = N, .K = K,
                              .P = (N + PW - 1) / PW, .bits = bits, .gp = GP};
    const struct bf_job j = {&a, x, xb};
    hexa_run(bf_rows_to_bf16, (void *)&j, (M + 15) / 16, threads);
    hexa_run(bf_group, (void *)&j, (a.P + a.gp - 1) / a.gp, threads);
    free(xb);
    return 1;
}
#else
static int bf16_linear(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                       int M, int N, int K, int bits, int threads) {
    (void)x, (void)packed, (void)b, (void)res, (void)y, (void)M, (void)N, (void)K, (void)bits, (void)threads;
    return 0;
}
#endif

void hexa_linear_prefill(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                         int M, int N, int K, int bits, int threads) {
    if (!bf16_linear(x, packed, b, res, y, M, N, K, bits, threads))
        dot_rows(x, packed, b, res, y, M, N, K, bits, threads, k256_applies(bits, K));
}
