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
 * the OS refused the tiles, hexa_linear_prefill is hexa_linear_dot.
 */
#ifdef HEXA_AMX
#define BF_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-bf16")))
#define BF_SLICE 16   /* blocks of K per pass over the rows: A's slice stays in L2 across panels */

/* bf16 bits of 16 floats, rounded to nearest even (finite values: weights and activations) */
BF_TARGET static inline __m512i bf16_bits(__m512 f) {
    const __m512i b = _mm512_castps_si512(f);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    return _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), odd), 16);
}

/* panel p's weights, from its codes decoded into pre (decode_panel), as bf16 B tiles: per block
   16 rows (input pairs 2r, 2r+1) x 16 columns (the quads' column order, as amx.h's sums) */
BF_TARGET static void bf_panel(const struct dot_job *a, int p, const __m256i *pre, uint32_t *wb) {
    const int nb = a->K / QB, bits = a->bits, split = SPLIT_SCALE(bits);
    const int off = TILE_OFFSET(bits), min_at = MIN_AT(bits);
    const __m512i offv = _mm512_set1_epi32(off), byte = _mm512_set1_epi32(0xff);
    for (int blk = 0; blk < nb; blk++) {
        float tmp[3 * PW];
        const float *hd = HEAD_OF(bits) ? pre_head(pre, nb, QB / 2, blk) : block_head(a->packed, bits, nb, p, blk, tmp);
        const __m512 d0 = zmm_join(hd), d1 = split ? zmm_join(hd + PW) : d0;
        const __m512 mn = min_at >= 0 ? zmm_join(hd + min_at) : _mm512_setzero_ps();
        for (int g = 0; g < 8; g++) {   /* a group: 4 inputs x 16 columns, a byte each */
            const __m512i v = _mm512_load_si512((const void *)(pre + (blk * 8 + g) * 2));
            const __m512 d = g < 4 ? d0 : d1;
            __m512i h[4];
            for (int j = 0; j < 4; j++) {
                const __m512i q = _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(v, 8 * j), byte), offv);
                h[j] = bf16_bits(_mm512_fmadd_ps(d, _mm512_cvtepi32_ps(q), mn));
            }
            uint32_t *row = wb + ((int64_t)blk * 16 + 2 * g) * 16;
            _mm512_store_si512((void *)row, _mm512_or_si512(h[0], _mm512_slli_epi32(h[1], 16)));
            _mm512_store_si512((void *)(row + 16), _mm512_or_si512(h[2], _mm512_slli_epi32(h[3], 16)));
        }
    }
}

/* C 0-3 and A 4-5 of r rows, B 6 (16 input pairs x 16 columns) */
BF_TARGET static void bf_configure(int r) {
    struct amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 7; t++) {
        c.rows[t] = (uint8_t)(t == 6 ? 16 : r);
        c.colsb[t] = 64;
    }
    _tile_loadconfig(&c);
}

/* ng (1-4) groups of the configured rows from m0, blocks [b0, b1) of one panel: sums so far in
   cb ([rows][16] floats), zero at b0 = 0 */
#define BF_C(op, C, t) \
    if (ng > t) op(C, cb + (int64_t)(m0 + 16 * t) * 16, 64);
#define BF_DP(C, A, t)                                                                            \
    if (ng > t) {                                                                                 \
        _tile_loadd(A, x + (int64_t)(m0 + 16 * t) * K + blk * QB, 2 * K);                        \
        _tile_dpbf16ps(C, A, 6);                                                                  \
    }
BF_TARGET static void bf_rows(const uint16_t *x, int K, int m0, int ng, const uint32_t *wb, int b0, int b1,
                              float *cb) {
    if (b0 == 0) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        BF_C(_tile_loadd, 0, 0) BF_C(_tile_loadd, 1, 1) BF_C(_tile_loadd, 2, 2) BF_C(_tile_loadd, 3, 3)
    }
    for (int blk = b0; blk < b1; blk++) {
        _tile_loadd(6, wb + (int64_t)blk * 256, 64);
        BF_DP(0, 4, 0) BF_DP(1, 5, 1) BF_DP(2, 4, 2) BF_DP(3, 5, 3)
    }
    BF_C(_tile_stored, 0, 0) BF_C(_tile_stored, 1, 1) BF_C(_tile_stored, 2, 2) BF_C(_tile_stored, 3, 3)
}

struct bf_job {
    const struct dot_job *a;
    const float *xf;     /* [M][K] the rows */
    uint16_t *x;         /* ... in bf16 */
};

/* a work item (panels [g*GP, g*GP+GP) x all rows): the panels' weights to bf16, then K slice by
   slice, each panel's rows 64 at a time, the sums kept in memory between slices */
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
        for (int p = p0; p < p_end; p++) {
            const uint32_t *w = wb + (p - p0) * panel_words;
            float *c = cb + (p - p0) * rows16 * 16;
            if (full) {
                bf_configure(16);
                for (int m = 0; m < full; m += 64)
                    bf_rows(j->x, a->K, m, (full - m) / 16 < 4 ? (full - m) / 16 : 4, w, b0, b1, c);
            }
            if (tail) {
                bf_configure(tail);
                bf_rows(j->x, a->K, full, 1, w, b0, b1, c);
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

/* the rows to bf16 (a pool item: 16 rows) */
BF_TARGET static void bf_rows_to_bf16(void *ctx, int item) {
    const struct bf_job *j = ctx;
    const int64_t K = j->a->K, m0 = (int64_t)item * 16, m1 = m0 + 16 < j->a->M ? m0 + 16 : j->a->M;
    const float *x = j->xf;
    for (int64_t i = m0 * K; i < m1 * K; i += 16)
        _mm256_storeu_si256((__m256i *)(j->x + i), _mm512_cvtepi32_epi16(bf16_bits(_mm512_loadu_ps(x + i))));
}

static int bf16_linear(const float *x, const uint8_t *packed, const float *b, const float *res, float *y,
                       int M, int N, int K, int bits, int threads) {
    if (!amx_on) return 0;
    uint16_t *xb = aligned_alloc(64, ((size_t)M * K * 2 + 63) / 64 * 64);
    if (!xb) abort();
    /* gp: panels per work item (GP), read by bf_group and by decode_panel's read-ahead (item_end) */
    const struct dot_job a = {packed, b, res, y, NULL, NULL, NULL, NULL, M, N, K, (N + PW - 1) / PW, bits, 0, GP};
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
        hexa_linear_dot(x, packed, b, res, y, M, N, K, bits, threads);
}
