/* The packed weights' layouts (layout.h), in plain C shared by every ISA: packing an fp32 weight
 * into panels (hexa_pack), recovering Q4_1 / Q8_0 codes from fp32 weights (hexa_pack_quant),
 * reading rows back from codes (hexa_unpack_rows). One copy of this code is what makes the
 * x86 and ARM64 kernels read the same bytes: the layout and the set of weights accepted as codes
 * cannot drift apart. Everything here is exact IEEE arithmetic (no FMA: -ffp-contract=off), so
 * it gives the same bits on every CPU.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hexa.h"
#include "layout.h"
#include "pool.h"

/* ---- fp32 panels ----------------------------------------------------------------------------- */
struct pack_job { const float *w; float *packed; int N, K; };

static void pack_panel(void *ctx, int p) {
    const struct pack_job *a = ctx;
    for (int k = 0; k < a->K; k++)
        for (int j = 0; j < PW; j++) {
            const int n = p * PW + j;
            a->packed[((int64_t)p * a->K + k) * PW + j] = n < a->N ? a->w[(int64_t)n * a->K + k] : 0.f;
        }
}

/* packed[p][k][j] = w[p*16 + j][k]; columns past N are zero */
void hexa_pack(const float *w, float *packed, int N, int K, int threads) {
    struct pack_job a = {w, packed, N, K};
    hexa_run(pack_panel, &a, (N + PW - 1) / PW, threads);
}

/* ---- codes -------------------------------------------------------------------------------------
 * The model cache holds the fp32 weights that dequantization produced, not the codes. Per block
 * of 32 inputs of an output row: Q4_1 has m = the block's minimum (code 0 always occurs) and d =
 * the fp16 value nearest (max - m) / 15 or a neighbour; Q8_0 has m = 0 and d = the fp16 value
 * nearest max|w| / 127 or a neighbour; q = round((w - m) / d). A block counts only if every w is
 * rebuilt bit for bit by the kernels' own operations; one failing block fails the weight. */

/* fp32 -> fp16 bits, rounded to nearest even as F16C's vcvtps2ph and ARM's fcvt do (checked
   against _cvtss_sh for all 2^32 inputs, and fcvt under qemu), in plain C so both ISAs share it. */
static int half_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const int sign = (int)(u >> 16) & 0x8000;
    const uint32_t a = u & 0x7fffffff;
    if (a > 0x7f800000) return sign | 0x7e00 | (int)(a >> 13 & 0x3ff);  /* nan stays a quiet nan */
    if (a >= 0x477ff000) return sign | 0x7c00;         /* >= 65520 (max + half an ulp): inf */
    if (a < 0x38800000)                                 /* below 2^-14: subnormal, 2^-24 units */
        return sign | (int)nearbyintf(fabsf(f) * 0x1p24f);   /* exact scaling; 1024 is 2^-14 */
    const uint32_t r = a - 0x38000000;                  /* rebias the exponent from 127 to 15 */
    return sign | (int)((r + 0xfff + (r >> 13 & 1)) >> 13);   /* a carry rounds into the exponent */
}

/* fp16 bits in [0, 0x7c00) (finite, non-negative) -> fp32, exactly */
static float half_value(int h) {
    if (h < 0x400) return (float)h * 0x1p-24f;
    const uint32_t u = ((uint32_t)h << 13) + 0x38000000;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

struct quant_pack_job { const float *w; uint8_t *packed; int N, K, bits; volatile int failed; };

static int fit_block(const float *w, int bits, float *d_out, float *m_out, int *q) {
    const int lo = bits == 4 ? 0 : -127, hi = bits == 4 ? 15 : 127;
    float mn = w[0], mx = w[0], amax = 0.f;
    for (int i = 0; i < QB; i++) {
        if (!isfinite(w[i])) return 0;
        mn = w[i] < mn ? w[i] : mn;
        mx = w[i] > mx ? w[i] : mx;
        amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
    }
    const float m = bits == 4 ? mn : 0.f;
    const int base = half_bits(bits == 4 ? (mx - m) / 15.f : amax / 127.f);
    static const int steps[] = {0, 1, -1, 2, -2};
    for (int s = 0; s < 5; s++) {
        const int h = base + steps[s];
        if (h < 0 || h >= 0x7c00) continue;          /* negative, inf or nan */
        const float d = half_value(h);
        int ok = 1;
        for (int i = 0; i < QB && ok; i++) {
            const float c = d > 0.f ? nearbyintf((w[i] - m) / d) : 0.f;
            q[i] = c < lo ? lo : c > hi ? hi : (int)c;
            const float prod = d * (float)q[i];       /* the kernels' operations, in order */
            const float rebuilt = bits == 4 ? prod + m : prod;
            ok = memcmp(&rebuilt, &w[i], sizeof rebuilt) == 0;   /* bits: a -0 must stay -0 */
        }
        if (ok) { *d_out = d; *m_out = m; return 1; }
    }
    return 0;
}

static void pack_quant_panel(void *ctx, int p) {
    struct quant_pack_job *a = ctx;
    const int nb = a->K / QB, head = CODE_HEAD(a->bits), bytes = BLOCK_BYTES(a->bits);
    int q[QB];
    for (int blk = 0; blk < nb && !a->failed; blk++) {
        uint8_t *out = a->packed + ((int64_t)p * nb + blk) * bytes;
        memset(out, 0, bytes);                        /* columns past N: d = m = 0, code 0 */
        float *d = (float *)out, *m = d + PW;
        for (int c = 0; c < PW; c++) {
            const int n = p * PW + c;
            if (n >= a->N) break;
            float dc, mc;
            if (!fit_block(a->w + (int64_t)n * a->K + blk * QB, a->bits, &dc, &mc, q)) { a->failed = 1; return; }
            d[c] = dc;
            if (a->bits == 4) m[c] = mc;
            for (int i = 0; i < QB; i++) put_code(out + head, a->bits, c, i, q[i]);
        }
    }
}

/* Fill ``packed`` (P * K/32 blocks of BLOCK_BYTES(bits)) from w[N, K]; 1 if every block of w
   is exactly Q4_1 (bits 4) / Q8_0 (bits 8), else 0 (packed is then garbage). */
int hexa_pack_quant(const float *w, uint8_t *packed, int N, int K, int bits, int threads) {
    if (K % QB || (bits != 4 && bits != 8)) return 0;
    struct quant_pack_job a = {w, packed, N, K, bits, 0};
    hexa_run(pack_quant_panel, &a, (N + PW - 1) / PW, threads);
    return !a.failed;
}

/* Bytes per panel and block of 32 inputs in the layout for ``bits`` (4: Q4_1, 8: Q8_0, 5, 6 and 9:
   planes, 7: bytes, | HEAD_F16 or HEAD_K: layout.h), without a
   HEAD_K panel's factors */
int hexa_quant_block_bytes(int bits) {
    return BLOCK_BYTES(bits);
}

/* layout.h's code table ``table`` (layouts 10, 11), for the packer's tests */
int32_t hexa_code_table(int32_t table, int8_t *out) {
    if (table < 0 || table >= (int)(sizeof CODE_TABLE / sizeof CODE_TABLE[0])) return -1;
    memcpy(out, CODE_TABLE[table], sizeof CODE_TABLE[0]);
    return 0;
}

/* Bytes of a weight [N, K] in the layout for ``bits``, so callers size the buffers from here */
int64_t hexa_quant_bytes(int bits, int N, int K) {
    return (int64_t)(N + PW - 1) / PW * PANEL_BYTES(bits, K / QB);
}

/* Rows ``rows[0..count)`` of w [N, K] as fp32 into out [count, K]: the embedding lookup and the
   calibration head read rows of the tied output projection, whose codes are its only copy. The
   kernels' rebuild, one weight at a time: d * q, then + m for Q4_1 and bits 5. */
void hexa_unpack_rows(const uint8_t *packed, const int64_t *rows, int count, int N, int K, int bits,
                      float *out) {
    const int nb = K / QB;
    for (int r = 0; r < count; r++) {
        const int64_t n = rows[r];
        float *dst = out + (int64_t)r * K;
        if (n < 0 || n >= N) { memset(dst, 0, sizeof(float) * K); continue; }
        const int p = (int)(n / PW), c = (int)(n % PW);
        for (int blk = 0; blk < nb; blk++) {
            float tmp[HEAD_MAX * PW];
            const float *hd = block_head(packed, bits, nb, p, blk, tmp);
            const uint8_t *cp = block_at(packed, bits, nb, p, blk) + CODE_HEAD(bits);
            for (int i = 0; i < QB; i++) {   /* d (of the input's half for 2, 3, 6, 7) * q, + m for 2, 4, 5, 7 */
                float w = hd[(SPLIT_SCALE(bits) && i >= QB / 2) * PW + c] * (float)code_at(cp, bits, c, i);
                if (MIN_AT(bits) >= 0) w = w + hd[MIN_OF(bits, i) + c];
                dst[blk * QB + i] = w;
            }
        }
    }
}

/* quant_gemm.c's per-thread buffer (both ISAs) for panels rebuilt from codes: grown as needed,
   kept (internal) */
__attribute__((visibility("hidden"))) float *hexa_panel_buffer(int64_t floats) {
    static __thread float *buf;
    static __thread int64_t cap;
    if (floats > cap) {
        free(buf);
        buf = aligned_alloc(64, (size_t)((floats * 4 + 63) / 64 * 64));
        cap = buf ? floats : 0;
    }
    return buf;
}
