/* The native kernels' test driver: one C program linked with one instruction set's kernels
 * (engine.runtime.kernels.sources(isa)), run natively for x86 and under qemu-aarch64 for ARM64 by
 * tests/engine/test_native_driver.py. It calls only what hexa.h declares.
 *
 *   driver check        every check; one line per failure (kernel, shape, row), exit 1 if any
 *   driver dump FILE    the same checks, also writing their outputs' raw bytes to FILE, so two
 *                       instruction sets' results can be compared bit for bit
 *
 * Two kinds of checks. Against a plain C reference in double, within a bound on the kernel's fp32
 * rounding derived next to each reference (u = 2^-24, the unit roundoff). And bit for bit: a row
 * computed alone equals the same row in a batch of any size, at any offset, on any thread count —
 * what lets tree verification reproduce plain decoding exactly.
 * Inputs come from the driver's own PRNG through exact arithmetic only (no libc rand, no libm):
 * every instruction set sees the same input bits, so their dumps can be compared.
 */
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hexa.h"
#include "layout.h"
#include "pool.h"
#include "quantize.h"

#define U 0x1p-24   /* fp32 unit roundoff */
#define ROWS 33     /* batch sizes 1..ROWS: every tile shape, both sides of HEXA_QUANT_ROWS */
#define SHOWN 12    /* failure lines printed per check function; the rest are counted */

/* ---- reporting --------------------------------------------------------------------------- */

static const char *kernel = "";    /* the kernel and shape the failure lines name */
static char shape[160];
static int failures, checks, shown;
static FILE *dump;                 /* `dump FILE`: every kept output goes there */

static void at(const char *name, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kernel = name;
    vsnprintf(shape, sizeof shape, fmt, ap);
    va_end(ap);
}

static void fail(int row, const char *fmt, ...) {
    va_list ap;
    failures++;
    if (shown++ >= SHOWN) return;
    printf("FAIL %s %s row %d: ", kernel, shape, row);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* n floats equal bit for bit (a -0 is not +0) */
static int same(int row, const float *got, const float *want, int64_t n, const char *what) {
    checks++;
    if (!memcmp(got, want, sizeof(float) * n)) return 1;
    int64_t c = 0;
    while (!memcmp(got + c, want + c, sizeof(float))) c++;
    fail(row, "col %lld is %.9g, %s gave %.9g", (long long)c, got[c], what, want[c]);
    return 0;
}

/* |got - ref| <= tol for each of n columns (a NaN never is) */
static int near(int row, const float *got, const double *ref, const double *tol, int n) {
    checks++;
    for (int c = 0; c < n; c++)
        if (!(fabs(got[c] - ref[c]) <= tol[c])) {
            fail(row, "col %d is %.9g, reference %.9g (bound %.2g)", c, got[c], ref[c], tol[c]);
            return 0;
        }
    return 1;
}

/* record an output under the current kernel and shape: "name\0", uint64 byte count, the bytes */
static void keep(const char *what, const void *p, int64_t bytes) {
    if (!dump) return;
    const uint64_t n = (uint64_t)bytes;
    fprintf(dump, "%s %s %s%c", kernel, shape, what, 0);
    fwrite(&n, sizeof n, 1, dump);
    fwrite(p, 1, (size_t)bytes, dump);
}

/* ---- memory and inputs ------------------------------------------------------------------- */

static void *blocks[512];          /* freed after each check function */
static int nblocks;

static void *grab(int64_t bytes) {
    void *p = calloc(1, (size_t)(bytes > 0 ? bytes : 1));
    if (!p || nblocks == (int)(sizeof blocks / sizeof *blocks)) { fputs("driver: out of memory\n", stderr); exit(2); }
    return blocks[nblocks++] = p;
}
static float *floats(int64_t n) { return grab(n * (int64_t)sizeof(float)); }
static double *doubles(int64_t n) { return grab(n * (int64_t)sizeof(double)); }
static void drop(void) { free(blocks[--nblocks]); }   /* the last grab */
static void release(void) { while (nblocks) drop(); }

static uint64_t state;

static void seed(uint64_t s) { state = s; }

static uint64_t next(void) {       /* splitmix64 */
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int below(int n) { return (int)(next() % (uint64_t)n); }

static float pow2(int e) {         /* 2^e, exactly */
    float p = 1.f;
    for (; e > 0; e--) p *= 2.f;
    for (; e < 0; e++) p *= 0.5f;
    return p;
}

/* uniform in [-scale, scale): a 24-bit integer times 2^-23 (exact), then times scale */
static float uniform(float scale) {
    return (float)((int32_t)(next() >> 40) - (1 << 23)) * 0x1p-23f * scale;
}

/* max without fmax: Debian's aarch64 GCC 12 crashes vectorizing fmax reductions at -O3 */
static double larger(double a, double b) { return a > b ? a : b; }

static float *randoms(int64_t n, float scale) {
    float *p = floats(n);
    for (int64_t i = 0; i < n; i++) p[i] = uniform(scale);
    return p;
}

/* ---- hexa_pack, hexa_linear --------------------------------------------------------------- */

/* y = res + (x . w_n + b) in double. An FMA chain of K steps from zero errs by at most
   K u sum|x w| (first order), the bias and residual adds by u (|b| + |res| + sum|x w|) each. */
static void ref_linear(const float *x, const float *w, const float *b, const float *res, int N, int K,
                       double *ref, double *tol) {
    for (int n = 0; n < N; n++) {
        double s = 0, a = 0;
        for (int k = 0; k < K; k++) {
            s += (double)x[k] * w[(int64_t)n * K + k];
            a += fabs((double)x[k] * w[(int64_t)n * K + k]);
        }
        const double bb = b ? b[n] : 0, rr = res ? res[n] : 0;
        ref[n] = rr + (s + bb);
        tol[n] = 1.01 * (K + 4) * U * (a + fabs(bb) + fabs(rr)) + 1e-30;
    }
}

/* x rows [s0, s0+M) of every batch size M = 1..ROWS, through `linear`, against rows computed
   alone: first rows, then last rows of x, alternately */
typedef void (*linear_fn)(const float *x, const void *w, const float *b, const float *res, float *y, int M,
                          int N, int K, int bits, int threads);

static void batches(const char *name, linear_fn linear, const float *x, const void *w, const float *b,
                    const float *res, const float *alone, int N, int K, int bits, int threads) {
    float *y = floats((int64_t)ROWS * N);
    for (int M = 1; M <= ROWS; M++) {
        const int s0 = M % 2 ? 0 : ROWS - M;
        at(name, "N=%d K=%d bits=%d threads=%d M=%d", N, K, bits, threads, M);
        linear(x + (int64_t)s0 * K, w, b, res + (int64_t)s0 * N, y, M, N, K, bits, threads);
        for (int i = 0; i < M; i++)
            same(s0 + i, y + (int64_t)i * N, alone + (int64_t)(s0 + i) * N, N, "the row alone");
    }
}

static void fp32_linear(const float *x, const void *w, const float *b, const float *res, float *y, int M, int N,
                        int K, int bits, int threads) {
    (void)bits;
    hexa_linear(x, w, b, res, y, M, N, K, threads);
}

static void check_linear(void) {
    static const int shapes[][2] = {{37, 83}, {197, 83}, {16, 5}, {3, 1}};   /* N, K: tails, 13 panels */
    for (unsigned s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int N = shapes[s][0], K = shapes[s][1], P = (N + HEXA_PANEL - 1) / HEXA_PANEL;
        seed(100 + s);
        float *x = randoms((int64_t)ROWS * K, 1.f), *w = randoms((int64_t)N * K, 1.f), *b = randoms(N, 1.f);
        float *res = randoms((int64_t)ROWS * N, 4.f), *packed = floats((int64_t)P * HEXA_PANEL * K);
        float *alone = floats((int64_t)ROWS * N), *first = floats((int64_t)ROWS * N), *y = floats((int64_t)ROWS * N);
        double *ref = doubles(N), *tol = doubles(N);
        for (int threads = 1; threads <= 3; threads += 2) {
            at("hexa_pack", "N=%d K=%d threads=%d", N, K, threads);
            hexa_pack(w, packed, N, K, threads);
            for (int n = 0; n < P * HEXA_PANEL; n++)      /* packed[p][k][j] = w[16p + j][k], padding 0 */
                for (int k = 0; k < K; k++) {
                    const float want = n < N ? w[(int64_t)n * K + k] : 0.f;
                    if (memcmp(&packed[((int64_t)(n / HEXA_PANEL) * K + k) * HEXA_PANEL + n % HEXA_PANEL], &want, 4)) {
                        fail(n, "input %d is not in its panel slot", k);
                        break;
                    }
                }
            at("hexa_linear", "N=%d K=%d threads=%d M=1", N, K, threads);
            for (int r = 0; r < ROWS; r++) {
                hexa_linear(x + (int64_t)r * K, packed, b, res + (int64_t)r * N, alone + (int64_t)r * N, 1, N, K, threads);
                ref_linear(x + (int64_t)r * K, w, b, res + (int64_t)r * N, N, K, ref, tol);
                near(r, alone + (int64_t)r * N, ref, tol, N);
                if (threads > 1) same(r, alone + (int64_t)r * N, first + (int64_t)r * N, N, "threads=1");
            }
            batches("hexa_linear", fp32_linear, x, packed, b, res, alone, N, K, 0, threads);
            at("hexa_linear", "N=%d K=%d threads=%d M=%d no bias, no residual", N, K, threads, ROWS);
            hexa_linear(x, packed, NULL, NULL, y, ROWS, N, K, threads);
            for (int r = 0; r < ROWS; r++) {
                ref_linear(x + (int64_t)r * K, w, NULL, NULL, N, K, ref, tol);
                near(r, y + (int64_t)r * N, ref, tol, N);
            }
            at("hexa_linear", "N=%d K=%d threads=%d M=%d residual in place", N, K, threads, ROWS);
            memcpy(y, res, sizeof(float) * ROWS * N);
            hexa_linear(x, packed, b, y, y, ROWS, N, K, threads);
            for (int r = 0; r < ROWS; r++) same(r, y + (int64_t)r * N, alone + (int64_t)r * N, N, "a separate residual");
            memcpy(first, alone, sizeof(float) * ROWS * N);
        }
        at("hexa_pack", "N=%d K=%d", N, K);
        keep("packed", packed, sizeof(float) * P * HEXA_PANEL * K);
        at("hexa_linear", "N=%d K=%d", N, K);
        keep("y", alone, sizeof(float) * ROWS * N);
    }
}

/* hexa_linear_half: hexa_pack's panels of fp16 / bf16 values give hexa_linear's bits on the same
   panels widened, whatever the rows and threads (both widenings are exact) */
static void half_linear(const float *x, const void *w, const float *b, const float *res, float *y, int M, int N,
                        int K, int bits, int threads) {
    hexa_linear_half(x, w, b, res, y, M, N, K, bits, threads);
}

static void check_linear_half(void) {
    static const int shapes[][2] = {{37, 83}, {197, 64}, {16, 5}, {3, 1}};   /* N, K */
    for (unsigned s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int N = shapes[s][0], K = shapes[s][1], P = (N + HEXA_PANEL - 1) / HEXA_PANEL;
        const int64_t n = (int64_t)P * HEXA_PANEL * K;
        seed(300 + s);
        float *x = randoms((int64_t)ROWS * K, 1.f), *b = randoms(N, 1.f), *res = randoms((int64_t)ROWS * N, 4.f);
        float *packed = floats(n), *alone = floats((int64_t)ROWS * N);
        uint16_t *half = grab(n * 2);
        for (int bits = HEXA_PANELS_F16; bits <= HEXA_PANELS_BF16; bits *= 2) {
            float *w = randoms((int64_t)N * K, 1.f);
            for (int64_t i = 0; i < (int64_t)N * K; i++) {       /* w's values made exactly fp16 / bf16 */
                uint32_t u;
                memcpy(&u, &w[i], 4);
                if (bits == HEXA_PANELS_BF16) u &= 0xffff0000u;
                else u &= 0xffffe000u, u = (u & 0x7fffffffu) < 0x38800000u ? u & 0x80000000u : u;   /* >= 2^-14 */
                memcpy(&w[i], &u, 4);
            }
            hexa_pack(w, packed, N, K, 1);
            if (bits == HEXA_PANELS_F16) narrow_f16(packed, half, (int)n);   /* exact: fp16 values */
            else for (int64_t i = 0; i < n; i++) {                             /* a bf16 is the top half */
                uint32_t u;
                memcpy(&u, &packed[i], 4);
                half[i] = (uint16_t)(u >> 16);
            }
            for (int threads = 1; threads <= 3; threads += 2) {
                at("hexa_linear_half", "N=%d K=%d bits=%d threads=%d M=1", N, K, bits, threads);
                for (int r = 0; r < ROWS; r++) {
                    float *want = floats(N);
                    hexa_linear(x + (int64_t)r * K, packed, b, res + (int64_t)r * N, want, 1, N, K, threads);
                    hexa_linear_half(x + (int64_t)r * K, half, b, res + (int64_t)r * N, alone + (int64_t)r * N, 1, N, K,
                                     bits, threads);
                    same(r, alone + (int64_t)r * N, want, N, "hexa_linear on the widened panels");
                    drop();
                }
                batches("hexa_linear_half", half_linear, x, half, b, res, alone, N, K, bits, threads);
            }
            at("hexa_linear_half", "N=%d K=%d bits=%d", N, K, bits);
            keep("y", alone, sizeof(float) * ROWS * N);
        }
    }
}

/* ---- codes: hexa_pack_quant, hexa_linear_quant, hexa_linear_dot, hexa_unpack_rows ----------- */

/* A weight that is exactly Q4_1 (w = d*q + m, q in 0..15) or Q8_0 (w = d*q, q in -127..127) per
   block of 32 inputs, d and m fp16 values (an 11-bit significand times a power of two, around
   2^-e), each block holding its extreme codes as quantization makes them. */
struct qweight { int N, K, bits; float *w, *m; uint8_t *codes; };

static float half_value(int e) {
    return (float)(1024 + below(1024)) * pow2(-10 - e - below(3));
}

static struct qweight make_quant(int bits, int N, int K, int e) {
    const int nb = K / HEXA_QUANT_BLOCK;
    struct qweight q = {N, K, bits, floats((int64_t)N * K), floats((int64_t)N * nb), NULL};
    for (int n = 0; n < N; n++)
        for (int blk = 0; blk < nb; blk++) {
            const float d = half_value(e), m = bits == 4 ? -half_value(e - 2) : 0.f;
            const int lo = below(32), hi = (lo + 1 + below(31)) % 32;
            for (int i = 0; i < 32; i++) {
                int c = bits == 4 ? below(16) : below(255) - 127;
                if (i == lo) c = bits == 4 ? 0 : -127;
                if (i == hi) c = bits == 4 ? 15 : 127;
                q.w[(int64_t)n * K + blk * 32 + i] = bits == 4 ? d * (float)c + m : d * (float)c;
            }
            q.m[(int64_t)n * nb + blk] = m;
        }
    return q;
}

static int64_t code_bytes(int bits, int N, int K) {
    return (int64_t)(N + HEXA_PANEL - 1) / HEXA_PANEL * (K / HEXA_QUANT_BLOCK) * hexa_quant_block_bytes(bits);
}

static void check_pack_quant(struct qweight *q) {
    const int N = q->N, K = q->K, bits = q->bits, other = bits == 4 ? 8 : 4;
    const int64_t bytes = code_bytes(bits, N, K);
    uint8_t *first = grab(bytes), *junk = grab(code_bytes(8, N, K));   /* refusals may scribble */
    float *bad = floats((int64_t)N * K);
    at("hexa_quant_block_bytes", "bits=%d", bits);
    if (hexa_quant_block_bytes(bits) != (bits == 4 ? 384 : 576))
        fail(0, "%d bytes per panel and block", hexa_quant_block_bytes(bits));
    q->codes = grab(bytes);
    for (int threads = 1; threads <= 3; threads += 2) {
        at("hexa_pack_quant", "N=%d K=%d bits=%d threads=%d", N, K, bits, threads);
        if (!hexa_pack_quant(q->w, q->codes, N, K, bits, threads)) fail(0, "refused an exact weight");
        if (threads > 1 && memcmp(q->codes, first, (size_t)bytes)) fail(0, "codes differ from threads=1");
        memcpy(first, q->codes, (size_t)bytes);
        if (hexa_pack_quant(q->w, junk, N, K, other, threads)) fail(0, "took it for %d-bit codes", other);
        memcpy(bad, q->w, sizeof(float) * N * K);   /* one weight one ulp off: no longer exact */
        const int64_t i = (int64_t)(N / 2) * K + K / 2 + 3;
        uint32_t u;
        memcpy(&u, &bad[i], 4);
        u++;
        memcpy(&bad[i], &u, 4);
        if (hexa_pack_quant(bad, junk, N, K, bits, threads)) fail(N / 2, "took a weight one ulp off");
        memcpy(bad, q->w, sizeof(float) * N * K);   /* a block of zeros: d = 0; with a -0, never d * 0 */
        for (int k = 0; k < 32; k++) bad[(int64_t)(N - 1) * K + k] = bits == 8 && k == 5 ? -0.f : 0.f;
        if (bits == 8 && hexa_pack_quant(bad, junk, N, K, bits, threads)) fail(N - 1, "took a -0");
        if (bits == 4 && !hexa_pack_quant(bad, junk, N, K, bits, threads)) fail(N - 1, "refused a zero block");
        if (hexa_pack_quant(q->w, junk, N, K - 1, bits, threads)) fail(0, "took K=%d", K - 1);
        if (hexa_pack_quant(q->w, junk, N, K, 5, threads)) fail(0, "took bits=5");
    }
    at("hexa_pack_quant", "N=%d K=%d bits=%d", N, K, bits);
    keep("codes", q->codes, bytes);
}

static void check_unpack_rows(const struct qweight *q) {
    const int N = q->N, K = q->K;
    const int64_t rows[] = {0, 1, 15, 16, N - 1, 7, 7, -1, N, N + 100};
    const int count = sizeof rows / sizeof *rows;
    float *out = floats((int64_t)count * K), *zero = floats(K);
    at("hexa_unpack_rows", "N=%d K=%d bits=%d", N, K, q->bits);
    hexa_unpack_rows(q->codes, rows, count, N, K, q->bits, out);
    for (int r = 0; r < count; r++) {
        const int inside = rows[r] >= 0 && rows[r] < N;
        same((int)rows[r], out + (int64_t)r * K, inside ? q->w + rows[r] * K : zero, K,
             inside ? "the weight" : "zeros (a row outside the weight)");
    }
    keep("rows", out, sizeof(float) * count * K);
}

static void quant_linear(const float *x, const void *w, const float *b, const float *res, float *y, int M, int N,
                         int K, int bits, int threads) {
    hexa_linear_quant(x, w, b, res, y, M, N, K, bits, threads);
}

/* the codes give hexa_linear's bits on the same weight, in every batch size */
static void check_linear_quant(const struct qweight *q) {
    const int N = q->N, K = q->K, bits = q->bits, P = (N + HEXA_PANEL - 1) / HEXA_PANEL;
    seed(200 + bits);
    float *x = randoms((int64_t)ROWS * K, 1.f), *b = randoms(N, 1.f), *res = randoms((int64_t)ROWS * N, 4.f);
    float *packed = floats((int64_t)P * HEXA_PANEL * K), *alone = floats((int64_t)ROWS * N);
    float *y = floats((int64_t)ROWS * N), *want = floats((int64_t)ROWS * N);
    hexa_pack(q->w, packed, N, K, 1);
    for (int r = 0; r < ROWS; r++)
        hexa_linear(x + (int64_t)r * K, packed, b, res + (int64_t)r * N, alone + (int64_t)r * N, 1, N, K, 1);
    for (int threads = 1; threads <= 3; threads += 2) {
        batches("hexa_linear_quant", quant_linear, x, q->codes, b, res, alone, N, K, bits, threads);
        for (int M = 7; M <= ROWS; M += ROWS - 7) {   /* under and over HEXA_QUANT_ROWS */
            at("hexa_linear_quant", "N=%d K=%d bits=%d threads=%d M=%d no bias, no residual", N, K, bits, threads, M);
            hexa_linear_quant(x, q->codes, NULL, NULL, y, M, N, K, bits, threads);
            hexa_linear(x, packed, NULL, NULL, want, M, N, K, threads);
            for (int r = 0; r < M; r++) same(r, y + (int64_t)r * N, want + (int64_t)r * N, N, "hexa_linear");
            at("hexa_linear_quant", "N=%d K=%d bits=%d threads=%d M=%d residual in place", N, K, bits, threads, M);
            memcpy(y, res, sizeof(float) * M * N);
            hexa_linear_quant(x, q->codes, b, y, y, M, N, K, bits, threads);
            for (int r = 0; r < M; r++) same(r, y + (int64_t)r * N, alone + (int64_t)r * N, N, "hexa_linear");
        }
    }
    at("hexa_linear_quant", "N=%d K=%d bits=%d", N, K, bits);
    keep("y", alone, sizeof(float) * ROWS * N);
}

/* hexa_linear_dot quantizes each block of 32 inputs of a row: dx = max|x| / 127, xq =
   round(x / dx), so |x - dx xq| <= 0.5001 dx (the rounding of 1/dx and x/dx adds < 2e-5 to 0.5),
   and sums d dx sum(q xq) + m dx sum(xq) over blocks. Against sum w x in double:
   - quantization: sum |w| 0.5001 dx (d q + m is w up to one rounding, u |w|);
   - fp32: per block two products and two FMAs, each rounding once, all terms bounded by
     S = sum (|d q| + |m|)(|x| + 0.6 dx) <= sum (|w| + 2|m|)(|x| + 0.6 dx) (|d q| <= |w| + |m|),
     so at most (2 nb + 2) u S, plus u S for w's own rounding and 2 u for the bias and residual
     (a split scale, an m per 16 inputs: more FMAs a block, fmas). q->m: a block's largest |m|. */
static void ref_dot_scaled(const struct qweight *q, const float *x, const float *b, const float *res, double *ref,
                           double *tol, int super) {   /* super: blocks of 32 sharing a scale (ref_k256's 8) */
    const int N = q->N, K = q->K, nb = K / 32, bits = q->bits;
    /* FMAs into a row's sums per block: one per scale (two with a split scale), one per m (two
       with an m per 16 inputs: layout 2) */
    const int fmas = (SPLIT_SCALE(bits) ? 2 : 1) + (MIN_HALF(bits) ? 2 : MIN_AT(bits) >= 0);
    for (int n = 0; n < N; n++) {
        double s = 0, qerr = 0, S = 0;
        for (int blk = 0; blk < nb; blk++) {
            double amax = 0;
            for (int i = blk / super * super * 32; i < (blk / super + 1) * super * 32; i++) amax = larger(amax, fabs(x[i]));
            const double dx = amax / 127 * (1 + 4 * U), m = fabs(q->m[(int64_t)n * nb + blk]);
            for (int i = 0; i < 32; i++) {
                const double w = q->w[(int64_t)n * K + blk * 32 + i], xi = x[blk * 32 + i];
                s += w * xi;
                qerr += fabs(w) * 0.5001 * dx;
                S += (fabs(w) + 2 * m) * (fabs(xi) + 0.6 * dx);
            }
        }
        const double bb = b ? b[n] : 0, rr = res ? res[n] : 0;
        ref[n] = rr + (s + bb);
        tol[n] = 1.01 * (qerr + (fmas * nb + 6) * U * (S + fabs(bb) + fabs(rr))) + 1e-30;
    }
}

static void ref_dot(const struct qweight *q, const float *x, const float *b, const float *res, double *ref,
                    double *tol) {
    ref_dot_scaled(q, x, b, res, ref, tol, 1);
}

static void dot_linear(const float *x, const void *w, const float *b, const float *res, float *y, int M, int N,
                       int K, int bits, int threads) {
    hexa_linear_dot(x, w, b, res, y, M, N, K, bits, threads);
}

static void check_linear_dot(const struct qweight *q) {
    const int N = q->N, K = q->K, bits = q->bits;
    seed(300 + bits);
    float *x = randoms((int64_t)ROWS * K, 1.f), *b = randoms(N, 1.f), *res = randoms((int64_t)ROWS * N, 4.f);
    float *alone = floats((int64_t)ROWS * N), *first = floats((int64_t)ROWS * N), *y = floats((int64_t)ROWS * N);
    double *ref = doubles(N), *tol = doubles(N);
    for (int k = 0; k < K; k += 5) x[k] *= 1e-3f;            /* small inputs among large ones */
    for (int k = 0; k < 32; k++) x[(int64_t)(ROWS - 1) * K + k] = 0.f;   /* an all-zero block: dx = 0 */
    for (int threads = 1; threads <= 3; threads += 2) {
        at("hexa_linear_dot", "N=%d K=%d bits=%d threads=%d M=1", N, K, bits, threads);
        for (int r = 0; r < ROWS; r++) {
            hexa_linear_dot(x + (int64_t)r * K, q->codes, b, res + (int64_t)r * N, alone + (int64_t)r * N, 1, N, K,
                            bits, threads);
            ref_dot(q, x + (int64_t)r * K, b, res + (int64_t)r * N, ref, tol);
            near(r, alone + (int64_t)r * N, ref, tol, N);
            if (threads > 1) same(r, alone + (int64_t)r * N, first + (int64_t)r * N, N, "threads=1");
        }
        batches("hexa_linear_dot", dot_linear, x, q->codes, b, res, alone, N, K, bits, threads);
        at("hexa_linear_dot", "N=%d K=%d bits=%d threads=%d M=%d no bias, no residual", N, K, bits, threads, ROWS);
        hexa_linear_dot(x, q->codes, NULL, NULL, y, ROWS, N, K, bits, threads);
        for (int r = 0; r < ROWS; r++) {
            ref_dot(q, x + (int64_t)r * K, NULL, NULL, ref, tol);
            near(r, y + (int64_t)r * N, ref, tol, N);
        }
        memcpy(first, alone, sizeof(float) * ROWS * N);
    }
    at("hexa_linear_dot", "N=%d K=%d bits=%d", N, K, bits);
    keep("y", alone, sizeof(float) * ROWS * N);
}

/* hexa_linear_prefill: prompt rows. Where the amx build's tiles are on, weights (fma(d, q, m),
   one fp32 rounding) and rows are rounded to bf16 (2^-9 relative each), their products are exact
   in fp32 and summed in fp32 over all of K: at most (2^-9 (2 + u) + u) sum|w x| for the roundings
   and (K + 6) u (sum|w x| + |b| + |res|) for the sums. Everywhere else it is hexa_linear_dot, bit
   for bit. Either way a row's bits never depend on the batch or the threads. Its outputs are not
   dumped: the tiles' differ from the other builds' by design. */
static int tiles;   /* the amx build's tiles are on (main) */

static void ref_prefill(const struct qweight *q, const float *x, const float *b, const float *res, double *ref,
                        double *tol) {
    for (int n = 0; n < q->N; n++) {
        double s = 0, a = 0;
        for (int k = 0; k < q->K; k++) {
            s += (double)q->w[(int64_t)n * q->K + k] * x[k];
            a += fabs((double)q->w[(int64_t)n * q->K + k] * x[k]);
        }
        const double bb = b ? b[n] : 0, rr = res ? res[n] : 0;
        ref[n] = rr + (s + bb);
        tol[n] = 1.01 * ((0x1p-9 * (2 + U) + U) * a + (q->K + 6) * U * (a + fabs(bb) + fabs(rr))) + 1e-30;
    }
}

/* Where the 512-bit tiles are on (x86/wide.c: AMD Zen 4 and 5), a K-quant's (HEAD_K) prompt rows
   take a scale per 256 inputs (quant_dot.c's k256_applies): the row quantized per 256 inputs (the
   blocks of 32 with their super-block's max|x|), each block's integer sum times d (the head's exact
   fp32 value; Q6_K: each half's) and the block's sum of codes times m into a super-block's sum,
   that times dx into the row's, then the bias and the residual. The same operations lane for lane
   as the tiles', in scalar C, so the same bits; a bound against double is ref_dot's case. */
static int wide_tiles;   /* the 512-bit tiles are on (main) */

static int takes_k256(int bits) {
    return wide_tiles && HEAD_OF(bits) == HEAD_K &&
           (CODES(bits) == 4 || CODES(bits) == 5 || CODES(bits) == 6 || CODES(bits) == 3);
}

static void ref_k256(const struct qweight *q, const float *x, const float *b, const float *res, float *y) {
    const int N = q->N, K = q->K, bits = q->bits, nb = K / QB;
    int8_t *xq = malloc((size_t)K);
    float *dx = malloc(sizeof(float) * nb);
    int32_t *sum = malloc(sizeof(int32_t) * nb);
    if (!xq || !dx || !sum) abort();
    for (int s0 = 0; s0 < nb; s0 += KSUPER) {
        float amax = 0.f;
        for (int k = s0 * QB; k < (s0 + KSUPER) * QB; k++) amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
        for (int blk = s0; blk < s0 + KSUPER; blk++) {
            float sx;
            quantize_scaled(x + blk * QB, amax, xq + blk * QB, dx + blk, &sx);
            sum[blk] = 0;
            for (int i = 0; i < QB; i++) sum[blk] += xq[blk * QB + i];
        }
    }
    for (int n = 0; n < N; n++) {
        const int p = n / PW, c = n % PW;
        float row = 0.f, acc = 0.f, tmp[3 * PW];
        for (int blk = 0; blk < nb; blk++) {
            const float *hd = block_head(q->codes, bits, nb, p, blk, tmp);
            const uint8_t *cp = block_at(q->codes, bits, nb, p, blk) + CODE_HEAD(bits);
            int32_t half[2] = {0, 0};
            for (int k = 0; k < QB; k++) half[k >= QB / 2] += code_at(cp, bits, c, k) * xq[blk * QB + k];
            if (SPLIT_SCALE(bits)) {
                acc = fmaf((float)half[0], hd[c], acc);
                acc = fmaf((float)half[1], hd[PW + c], acc);
            } else {
                acc = fmaf((float)(half[0] + half[1]), hd[c], acc);
            }
            if (MIN_AT(bits) >= 0) acc = fmaf(hd[MIN_AT(bits) + c], (float)sum[blk], acc);
            if (blk % KSUPER == KSUPER - 1) {
                row = fmaf(acc, dx[blk], row);
                acc = 0.f;
            }
        }
        const float v = b ? row + b[n] : row;
        y[n] = res ? res[n] + v : v;
    }
    free(xq), free(dx), free(sum);
}

static void prefill_linear(const float *x, const void *w, const float *b, const float *res, float *y, int M, int N,
                           int K, int bits, int threads) {
    hexa_linear_prefill(x, w, b, res, y, M, N, K, bits, threads);
}

/* rows (up to 69: the tiles' groups of 16, four at a time, and a tail) alone, in every batch of
   1..ROWS and all at once, on 1 and 3 threads */
static void check_linear_prefill(const struct qweight *q) {
    const int N = q->N, K = q->K, bits = q->bits, R = 69;
    seed(700 + bits);
    float *x = randoms((int64_t)R * K, 1.f), *b = randoms(N, 1.f), *res = randoms((int64_t)R * N, 4.f);
    float *alone = floats((int64_t)R * N), *first = floats((int64_t)R * N), *y = floats((int64_t)R * N);
    double *ref = doubles(N), *tol = doubles(N);
    for (int k = 0; k < K; k += 5) x[k] *= 1e-3f;
    for (int threads = 1; threads <= 3; threads += 2) {
        at("hexa_linear_prefill", "N=%d K=%d bits=%d threads=%d M=1", N, K, bits, threads);
        for (int r = 0; r < R; r++) {
            const float *xr = x + (int64_t)r * K, *rr = res + (int64_t)r * N;
            hexa_linear_prefill(xr, q->codes, b, rr, alone + (int64_t)r * N, 1, N, K, bits, threads);
            if (tiles) {
                ref_prefill(q, xr, b, rr, ref, tol);
                near(r, alone + (int64_t)r * N, ref, tol, N);
            } else if (takes_k256(bits)) {
                ref_k256(q, xr, b, rr, y);
                same(r, alone + (int64_t)r * N, y, N, "the per-256 reference");
                ref_dot_scaled(q, xr, b, rr, ref, tol, KSUPER);   /* and near the double sum */
                near(r, alone + (int64_t)r * N, ref, tol, N);
            } else {
                hexa_linear_dot(xr, q->codes, b, rr, y, 1, N, K, bits, threads);
                same(r, alone + (int64_t)r * N, y, N, "hexa_linear_dot");
            }
            if (threads > 1) same(r, alone + (int64_t)r * N, first + (int64_t)r * N, N, "threads=1");
        }
        batches("hexa_linear_prefill", prefill_linear, x, q->codes, b, res, alone, N, K, bits, threads);
        at("hexa_linear_prefill", "N=%d K=%d bits=%d threads=%d M=%d", N, K, bits, threads, R);
        hexa_linear_prefill(x, q->codes, b, res, y, R, N, K, bits, threads);
        for (int r = 0; r < R; r++) same(r, y + (int64_t)r * N, alone + (int64_t)r * N, N, "the row alone");
        memcpy(first, alone, sizeof(float) * R * N);
    }
}

/* bits 5 (Q5_1, Q5_K: d, m, codes 0..31), 9 (Q5_0: d, codes -16..15), 6 (Q6_K: a d per 16
   inputs, codes -32..31), 3 (Q3_K: a d per 16 inputs, codes -8..7, nibbles alone), 2 (Q2_K: a d
   and an m per 16 inputs, codes 0..15 as nibbles) and 7 (a d per 16 inputs and m, codes
   -127..127), written straight into
   their layout (layout.h: the fp32 head, then the codes by put_code: planes for 5, 6, 9, bytes for
   7), as engine/model/gguf_codes.py packs them from a GGUF's blocks; and table codes (10: 8's
   head, 11: 7's; | a table), the table's values (its first `values`), drawn by index */
static struct qweight make_quant_m(int bits, int N, int K, int e) {
    const int nb = K / QB, table = TABLE_CODES(bits);
    const int values = table ? (TABLE(bits) >= 2 ? 6 : 16) : 0;
    const int lo = table ? 0 : bits == 5 || bits == 2 ? 0 : bits == 9 ? -16 : bits == 6 ? -32 : bits == 3 ? -8 : -127;
    const int hi = table ? values - 1 : bits == 5 ? 31 : bits == 9 ? 15 : bits == 6 ? 31 : bits == 3 ? 7 : bits == 2 ? 15 : 127;
    struct qweight q = {N, K, bits, floats((int64_t)N * K), floats((int64_t)N * nb), grab(code_bytes(bits, N, K))};
    memset(q.codes, 0, (size_t)code_bytes(bits, N, K));
    for (int n = 0; n < N; n++)
        for (int blk = 0; blk < nb; blk++) {
            uint8_t *bp = (uint8_t *)block_at(q.codes, bits, nb, n / PW, blk);
            float *dd = (float *)bp, d[2] = {half_value(e), half_value(e - 1)};
            const float m = MIN_AT(bits) >= 0 ? -half_value(e - 3) : 0.f;
            const float mh[2] = {m, MIN_HALF(bits) ? -half_value(e - 3) : m};   /* m of each half */
            if (!SPLIT_SCALE(bits)) d[1] = d[0];
            dd[n % PW] = d[0];
            if (SPLIT_SCALE(bits)) dd[PW + n % PW] = d[1];
            if (MIN_AT(bits) >= 0) dd[MIN_AT(bits) + n % PW] = m;
            if (MIN_HALF(bits)) dd[MIN_AT(bits) + PW + n % PW] = mh[1];
            const int at_lo = below(32), at_hi = (at_lo + 1 + below(31)) % 32;   /* the extreme codes occur */
            for (int i = 0; i < 32; i++) {
                const int pick = i == at_lo ? lo : i == at_hi ? hi : lo + below(hi - lo + 1);
                const int c = table ? CODE_TABLE[TABLE(bits)][pick] : pick;
                put_code(bp + CODE_HEAD(bits), bits, n % PW, i, c);
                if (code_at(bp + CODE_HEAD(bits), bits, n % PW, i) != c) fail(n, "code %d read back as another", c);
                const float dq = d[i >= 16] * (float)c;
                q.w[(int64_t)n * K + blk * 32 + i] = MIN_AT(bits) >= 0 ? dq + mh[i >= 16] : dq;
            }
            q.m[(int64_t)n * nb + blk] = fabsf(mh[0]) > fabsf(mh[1]) ? mh[0] : mh[1];
        }
    return q;
}

/* ---- compact heads (layout.h): HEAD_F16, HEAD_K ---------------------------------------------- */

/* q's weight with a compact head: HEAD_F16 (q's head values are fp16 values: half_value) or
   HEAD_K, for which q's head is first made an fp16 factor per 8 blocks times an int8 per block
   (q->w and q->m follow: the full layout's rows, read back). Returns the compact bytes. */
static uint8_t *compact(struct qweight *q, int head) {
    const int N = q->N, K = q->K, bits = q->bits, nb = K / QB, P = (N + PW - 1) / PW;
    const int cb = bits | head, n = HEAD_N(bits) * PW;
    uint8_t *out = grab(hexa_quant_bytes(cb, N, K));
    for (int p = 0; p < P; p++)
        for (int blk = 0; blk < nb; blk++) {
            uint8_t *src = (uint8_t *)block_at(q->codes, bits, nb, p, blk);
            uint8_t *dst = (uint8_t *)block_at(out, cb, nb, p, blk);
            float *hd = (float *)src;
            if (head == HEAD_F16) {
                for (int i = 0; i < n; i++) {
                    const _Float16 h = (_Float16)hd[i];
                    if ((float)h != hd[i]) fail(0, "head value %g is no fp16 value", hd[i]);
                    memcpy(dst + 2 * i, &h, 2);
                }
            } else {
                float *f = (float *)(out + (int64_t)p * PANEL_BYTES(cb, nb)) + (int64_t)(blk / KSUPER) * n;
                for (int i = 0; i < n; i++) {
                    const int is_min = MIN_AT(bits) >= 0 && i / PW >= MIN_AT(bits) / PW && CODES(bits) != 6;
                    if (blk % KSUPER == 0) f[i] = is_min ? -half_value(6) : half_value(4);
                    const int k = is_min ? below(64) : CODES(bits) == 6 ? below(256) - 128 : 1 + below(63);
                    dst[i] = (uint8_t)(int8_t)k;
                    hd[i] = f[i] * (float)k;
                }
            }
            memcpy(dst + HEAD_BYTES(cb), src + HEAD_BYTES(bits), BLOCK_BYTES(bits) - HEAD_BYTES(bits));
        }
    if (head == HEAD_K) {   /* the weight the full layout now holds, and its block minima */
        int64_t *rows = grab(sizeof(int64_t) * N);
        for (int r = 0; r < N; r++) rows[r] = r;
        hexa_unpack_rows(q->codes, rows, N, N, K, bits, q->w);
        for (int r = 0; r < N; r++)
            for (int blk = 0; blk < nb; blk++)
                if (MIN_AT(bits) < 0 || CODES(bits) == 6) {
                    q->m[(int64_t)r * nb + blk] = 0.f;
                } else {   /* the largest |m| of the block (of its two halves' for layout 2) */
                    const float *hd = (const float *)block_at(q->codes, bits, nb, r / PW, blk);
                    const float m0 = hd[MIN_AT(bits) + r % PW], m1 = hd[MIN_OF(bits, QB - 1) + r % PW];
                    q->m[(int64_t)r * nb + blk] = fabsf(m0) > fabsf(m1) ? m0 : m1;
                }
    }
    return out;
}

/* the compact head gives the full head's bits in every kernel */
static void check_compact(struct qweight *q, int head) {
    const int N = q->N, K = q->K, bits = q->bits;
    uint8_t *small = compact(q, head);
    at("hexa_quant_bytes", "N=%d K=%d bits=%d", N, K, bits | head);
    if (hexa_quant_bytes(bits | head, N, K) >= hexa_quant_bytes(bits, N, K)) fail(0, "not fewer bytes");
    seed(400 + bits + head);
    float *x = randoms((int64_t)ROWS * K, 1.f), *y = floats((int64_t)ROWS * N), *want = floats((int64_t)ROWS * N);
    for (int M = 1; M <= ROWS; M += 4)
        for (int dot = 0; dot < 2; dot++) {
            at(dot ? "hexa_linear_dot" : "hexa_linear_quant", "N=%d K=%d bits=%d M=%d", N, K, bits | head, M);
            (dot ? dot_linear : quant_linear)(x, q->codes, NULL, NULL, want, M, N, K, bits, 2);
            (dot ? dot_linear : quant_linear)(x, small, NULL, NULL, y, M, N, K, bits | head, 2);
            for (int r = 0; r < M; r++) same(r, y + (int64_t)r * N, want + (int64_t)r * N, N, "the fp32 head");
        }
    struct qweight c = *q;   /* then every check of the full layout, on the compact one */
    c.codes = small;
    c.bits = bits | head;
    check_unpack_rows(&c);
    check_linear_quant(&c);
    check_linear_dot(&c);
    check_linear_prefill(&c);
}

static void check_codes(void) {
    static const int shapes[][2] = {{37, 96}, {197, 64}, {53, 512}};   /* N tails; 13 panels (two full groups); K-quant supers */
    static const int planes_and_bytes[] = {2, 3, 5, 6, 7, 9, 10, 11 | 2 << HEXA_TABLE_SHIFT,   /* IQ4's table; IQ2's */
                                           10 | 3 << HEXA_TABLE_SHIFT};                     /* IQ1's */
    for (unsigned f = 0; f < sizeof planes_and_bytes / sizeof *planes_and_bytes; f++)
        for (unsigned s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            const int bits = planes_and_bytes[f];
            seed(bits * 10 + s);
            struct qweight q = make_quant_m(bits, shapes[s][0], shapes[s][1], 4);
            check_unpack_rows(&q);
            check_linear_quant(&q);
            check_linear_dot(&q);
            check_linear_prefill(&q);
            check_compact(&q, HEAD_F16);
            if (shapes[s][1] % (QB * KSUPER) == 0) check_compact(&q, HEAD_K);
            release();
        }
    for (int bits = 4; bits <= 8; bits += 4)
        for (unsigned s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            seed(bits * 10 + s);
            struct qweight q = make_quant(bits, shapes[s][0], shapes[s][1], 4);
            check_pack_quant(&q);
            check_unpack_rows(&q);
            check_linear_quant(&q);
            check_linear_dot(&q);
            check_linear_prefill(&q);
            check_compact(&q, HEAD_F16);
            if (shapes[s][1] % (QB * KSUPER) == 0) check_compact(&q, HEAD_K);
            release();
        }
    for (int bits = 5; bits <= 6; bits++) {   /* K over 512 inputs: the bf16 tiles' slices of K */
        seed(bits * 10 + 9);
        struct qweight q = make_quant_m(bits, 21, 1280, 4);
        check_linear_prefill(&q);
        release();
    }
}

/* ---- hexa_attention ----------------------------------------------------------------------- */

#define HD 64              /* the head dim of the checks below; the tree checks take 64, 128 and 256 */
#define CHUNK 128          /* attention.c's key chunks: masks below cover whole ones */

struct attn {
    int H, R, L, S, threads;    /* S: the R rows are R/S query heads of S tokens (0: plain rows) */
    int64_t stride;             /* floats between two heads of the cache */
    const float *q, *k, *v, *mask;
};

/* rows [r0, r0 + M) of every head alone (copied out of q), in [H, M, 64] */
static void attend_rows(const struct attn *a, int r0, int M, float *out) {
    float *q = floats((int64_t)a->H * M * HD);
    for (int h = 0; h < a->H; h++)
        memcpy(q + (int64_t)h * M * HD, a->q + ((int64_t)h * a->R + r0) * HD, sizeof(float) * M * HD);
    hexa_attention(q, a->k, a->v, a->mask ? a->mask + (int64_t)r0 * a->L : NULL, out, a->H, M, a->L, HD, a->stride, 0, 0,
                   0, a->threads);
    drop();
}

/* softmax(q k^T + mask) v of one row in double. Bound, to first order: each score is a dot of 64
   products, 8 FMAs per lane then a 3-level add tree (11 roundings: es = 11 u sum|q k|); a weight
   exp(s - mx) then errs relatively by 2 es + u |s - mx| (the subtraction) + 3e-7 (exp8's
   polynomial, ~2e-7, and the chunks' expf) = eta, the normalized output by 2 eta max|v|; the sums
   over <= 128 keys of a chunk, of the chunks and the final division add (2*128 + 2 C + 8) u. */
static void ref_attention(const struct attn *a, int h, int r, double *ref, double *tol) {
    const float *q = a->q + ((int64_t)h * a->R + r) * HD;
    const float *kh = a->k + h * a->stride, *vh = a->v + h * a->stride;
    const float *mrow = a->mask ? a->mask + (int64_t)r * a->L : NULL;
    double *s = doubles(a->L), mx = -INFINITY, es = 0, vmax = 0, lo = INFINITY, l = 0;
    for (int j = 0; j < a->L; j++) {
        double dot = 0, mag = 0;
        for (int d = 0; d < HD; d++) {
            dot += (double)q[d] * kh[(int64_t)j * HD + d];
            mag += fabs((double)q[d] * kh[(int64_t)j * HD + d]);
        }
        s[j] = dot + (mrow ? mrow[j] : 0.f);
        if (s[j] == -INFINITY) continue;
        es = larger(es, 11 * U * mag);
        mx = larger(mx, s[j]);
        lo = s[j] < lo ? s[j] : lo;
        for (int d = 0; d < HD; d++) vmax = larger(vmax, fabs(vh[(int64_t)j * HD + d]));
    }
    for (int d = 0; d < HD; d++) ref[d] = 0;
    for (int j = 0; j < a->L; j++) {
        if (s[j] == -INFINITY) continue;
        const double p = exp(s[j] - mx);
        l += p;
        for (int d = 0; d < HD; d++) ref[d] += p * vh[(int64_t)j * HD + d];
    }
    const double eta = 2 * es + U * (mx - lo) + 3e-7, C = (a->L + CHUNK - 1) / CHUNK;
    for (int d = 0; d < HD; d++) {
        ref[d] /= l;
        tol[d] = 1.25 * vmax * (2 * eta + (2 * CHUNK + 2 * C + 8) * U) + 1e-30;
    }
    drop();
}

/* One attention shape: against the reference (threads 1), each row alone and every prefix of 1..33
   rows against the whole batch, threads 3 against 1, the token-major layout against the plain. */
static void attention_case(const char *name, int H, int R, int L, int S, const float *mask) {
    const int64_t cap = L + 5, n = (int64_t)H * R * HD;
    struct attn a = {H, R, L, S, 1, cap * HD + 64, NULL, NULL, NULL, mask};
    a.q = randoms(n, 0.5f);
    a.k = randoms(H * a.stride, 1.f);
    a.v = randoms(H * a.stride, 1.f);
    float *full = floats(n), *first = floats(n), *rows = floats(n), *tok = floats(n);
    double *ref = doubles(HD), *tol = doubles(HD);
    for (a.threads = 1; a.threads <= 3; a.threads += 2) {
        at("hexa_attention", "%s H=%d R=%d L=%d threads=%d", name, H, R, L, a.threads);
        hexa_attention(a.q, a.k, a.v, mask, full, H, R, L, HD, a.stride, 0, 0, 0, a.threads);
        for (int h = 0; h < H; h++)
            for (int r = 0; r < R; r++) {
                const float *row = full + ((int64_t)h * R + r) * HD;
                if (a.threads > 1) {
                    same(r, row, first + ((int64_t)h * R + r) * HD, HD, "threads=1");
                    continue;
                }
                ref_attention(&a, h, r, ref, tol);
                near(r, row, ref, tol, HD);
            }
        for (int r = 0; r < R; r++) {
            attend_rows(&a, r, 1, rows);
            for (int h = 0; h < H; h++) same(r, rows + (int64_t)h * HD, full + ((int64_t)h * R + r) * HD, HD, "the whole batch");
        }
        for (int M = 2; M <= R && M <= ROWS; M++) {
            at("hexa_attention", "%s H=%d R=%d L=%d threads=%d rows 0..%d", name, H, R, L, a.threads, M - 1);
            attend_rows(&a, 0, M, rows);
            for (int h = 0; h < H; h++)
                for (int r = 0; r < M; r++)
                    same(r, rows + ((int64_t)h * M + r) * HD, full + ((int64_t)h * R + r) * HD, HD, "the whole batch");
        }
        if (S) {   /* row r of kv head h: query head h*G + r/S at token r%S */
            at("hexa_attention", "%s H=%d R=%d L=%d threads=%d S=%d", name, H, R, L, a.threads, S);
            hexa_attention(a.q, a.k, a.v, mask, tok, H, R, L, HD, a.stride, S, 0, 0, a.threads);
            const int G = R / S;
            for (int h = 0; h < H; h++)
                for (int r = 0; r < R; r++)
                    same(r, tok + ((int64_t)(r % S) * H * G + h * G + r / S) * HD, full + ((int64_t)h * R + r) * HD,
                         HD, "the [H, R, 64] layout");
        }
        memcpy(first, full, sizeof(float) * n);
    }
    at("hexa_attention", "%s H=%d R=%d L=%d", name, H, R, L);
    keep("out", full, sizeof(float) * n);
    if (S) keep("token-major", tok, sizeof(float) * n);
    /* an fp16 cache: the fp32 cache of the same values (widened) gives the same bits, so every
       check above holds for it too; its own output joins the dump */
    const int64_t values = H * a.stride;
    uint16_t *k16 = grab(2 * values), *v16 = grab(2 * values);
    float *kw = floats(values), *vw = floats(values), *half = floats(n);
    narrow_f16(a.k, k16, (int)values);
    narrow_f16(a.v, v16, (int)values);
    widen_f16(k16, kw, (int)values);
    widen_f16(v16, vw, (int)values);
    for (int threads = 1; threads <= 3; threads += 2) {
        at("hexa_attention", "%s fp16 cache H=%d R=%d L=%d threads=%d", name, H, R, L, threads);
        hexa_attention(a.q, kw, vw, mask, full, H, R, L, HD, a.stride, S, 0, 0, threads);
        hexa_attention(a.q, k16, v16, mask, half, H, R, L, HD, a.stride, S, 0, 1, threads);
        same(0, half, full, n, "the fp32 cache of its values");
    }
    keep("fp16 cache", half, sizeof(float) * n);
}

/* additive causal mask of S tokens after `start` cached ones, rows repeated for G query heads */
static float *causal_mask(int G, int S, int start) {
    const int L = start + S;
    float *mask = floats((int64_t)G * S * L);
    for (int r = 0; r < G * S; r++)
        for (int j = 0; j < L; j++) mask[(int64_t)r * L + j] = j <= start + r % S ? 0.f : -INFINITY;
    return mask;
}

static void check_attention(void) {
    seed(400);
    attention_case("decode", 2, 3, 290, 0, NULL);
    /* a draft tree: some keys -inf, others small penalties; keys 128..255 (a whole chunk) masked
       for every row, keys 256.. for row 0 only (the rest of its tile still sees them) */
    const int R = 26, L = 290;
    float *tree = floats((int64_t)R * L);
    for (int r = 0; r < R; r++)
        for (int j = 0; j < L; j++) {
            float v = below(5) == 0 ? -INFINITY : below(2) ? 0.f : -uniform(2.f) * uniform(2.f);
            if ((j >= CHUNK && j < 2 * CHUNK) || (r == 0 && j >= 2 * CHUNK)) v = -INFINITY;
            tree[(int64_t)r * L + j] = j == 3 ? 0.f : v;   /* every row sees at least one key */
        }
    attention_case("tree", 2, 3, L, 0, tree);
    attention_case("tree", 1, R, L, 13, tree);
    attention_case("causal prefill", 2, 2 * 60, 300 + 60, 60, causal_mask(2, 60, 300));
    attention_case("causal prefill", 1, 2 * 50, 50, 50, causal_mask(2, 50, 0));
}

/* A draft tree of n nodes after P cached keys against plain steps: node x at depth d, fed in a
   plain run, sees keys 0..P+d with its ancestors in slots P..P+d-1 and itself in P+d; in the tree
   they sit in slots P+i (tree order). Its G query rows must give the plain step's bits, whichever
   side of a multiple of 128 the two runs put its keys (random parents, random topological order). */
static void tree_against_plain(int P, int n, int G, int D, int threads) {
    const int L = P + n, H = 2;
    const int64_t stride = (int64_t)(L + 3) * D;
    at("hexa_attention", "tree of %d after %d keys, G=%d D=%d threads=%d", n, P, G, D, threads);
    int *parent = grab(sizeof(int) * n), *depth = grab(sizeof(int) * n);
    parent[0] = -1; depth[0] = 0;
    for (int i = 1; i < n; i++) { parent[i] = below(i); depth[i] = depth[parent[i]] + 1; }
    float *k = randoms(H * stride, 1.f), *v = randoms(H * stride, 1.f), *q = randoms((int64_t)H * G * n * D, 0.5f);
    float *mask = floats((int64_t)G * n * L), *out = floats((int64_t)H * G * n * D);
    for (int r = 0; r < G * n; r++) {
        float *m = mask + (int64_t)r * L;
        for (int j = 0; j < L; j++) m[j] = j < P ? 0.f : -INFINITY;
        for (int x = r % n; x >= 0; x = parent[x]) m[P + x] = 0.f;
    }
    hexa_attention(q, k, v, mask, out, H, G * n, L, D, stride, 0, n, 0, threads);
    float *pk = floats(H * stride), *pv = floats(H * stride), *pq = floats((int64_t)H * G * D), *po = floats((int64_t)H * G * D);
    for (int x = 0; x < n; x++) {
        memcpy(pk, k, sizeof(float) * H * stride);
        memcpy(pv, v, sizeof(float) * H * stride);
        for (int y = x; y >= 0; y = parent[y])   /* the ancestors at their plain run's slots */
            for (int h = 0; h < H; h++) {
                memcpy(pk + h * stride + (int64_t)(P + depth[y]) * D, k + h * stride + (int64_t)(P + y) * D, sizeof(float) * D);
                memcpy(pv + h * stride + (int64_t)(P + depth[y]) * D, v + h * stride + (int64_t)(P + y) * D, sizeof(float) * D);
            }
        for (int h = 0; h < H; h++)
            for (int g = 0; g < G; g++)
                memcpy(pq + ((int64_t)h * G + g) * D, q + ((int64_t)h * G * n + g * n + x) * D, sizeof(float) * D);
        hexa_attention(pq, pk, pv, NULL, po, H, G, P + depth[x] + 1, D, stride, 1, 1, 0, threads);
        for (int h = 0; h < H; h++)
            for (int g = 0; g < G; g++)
                same(x, out + ((int64_t)h * G * n + g * n + x) * D, po + ((int64_t)h * G + g) * D, D, "a plain step");
    }
    keep("tree", out, sizeof(float) * H * G * n * D);
    release();
}

static void check_attention_trees(void) {
    seed(450);
    static const int cases[][4] = {{250, 40, 3, 64}, {100, 33, 1, 64}, {128, 17, 3, 64}, {1000, 64, 2, 64},
                                   {383, 2, 3, 64}, {5, 30, 3, 64}, {250, 40, 2, 128}, {120, 20, 4, 256}};
    for (unsigned c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int threads = 1; threads <= 3; threads += 2)
            tree_against_plain(cases[c][0], cases[c][1], cases[c][2], cases[c][3], threads);
}

/* ---- hexa_rmsnorm, hexa_silu_mul, hexa_rope_split ----------------------------------------- */

/* out = w (x / sqrt(mean x^2 + eps)): the sum of squares (positive terms) errs relatively by at
   most (D + 2) u, the mean, eps, sqrt, division and the two products by 6 u more, halved by the
   square root where it counts: (D + 16) u |out| bounds it with margin */
static void check_rmsnorm(void) {
    static const int widths[] = {70, 64, 83, 5};
    const int M = 9;
    const float eps = 1e-5f;
    for (unsigned s = 0; s < sizeof widths / sizeof *widths; s++) {
        const int D = widths[s];
        seed(500 + s);
        float *x = randoms((int64_t)M * D, 2.f), *w = randoms(D, 1.f), *out = floats((int64_t)M * D);
        float *one = floats(D), *first = floats((int64_t)M * D);
        double *ref = doubles(D), *tol = doubles(D);
        for (int k = 0; k < D; k++) x[k] *= 1e-3f;   /* a small row, where eps counts */
        for (int threads = 1; threads <= 3; threads += 2) {
            at("hexa_rmsnorm", "M=%d D=%d threads=%d", M, D, threads);
            hexa_rmsnorm(x, w, out, M, D, eps, threads);
            for (int r = 0; r < M; r++) {
                const float *xr = x + (int64_t)r * D;
                double ss = 0;
                for (int k = 0; k < D; k++) ss += (double)xr[k] * xr[k];
                const double inv = 1 / sqrt(ss / D + eps);
                for (int k = 0; k < D; k++) {
                    ref[k] = w[k] * (xr[k] * inv);
                    tol[k] = (D + 16) * U * fabs(ref[k]) + 1e-30;
                }
                near(r, out + (int64_t)r * D, ref, tol, D);
                hexa_rmsnorm(xr, w, one, 1, D, eps, threads);
                same(r, one, out + (int64_t)r * D, D, "the whole batch");
                if (threads > 1) same(r, out + (int64_t)r * D, first + (int64_t)r * D, D, "threads=1");
            }
            memcpy(first, out, sizeof(float) * M * D);
        }
        at("hexa_rmsnorm", "M=%d D=%d", M, D);
        keep("out", out, sizeof(float) * M * D);
        release();
    }
}

/* silu(g) u = g u / (1 + exp(-g)): exp8 errs by ~2e-7 relatively, the add, division and product
   by a rounding each; 1e-6 |out| bounds it with margin */
static void check_silu_mul(void) {
    static const int widths[] = {20, 37, 8, 3};
    const int M = 9;
    for (unsigned s = 0; s < sizeof widths / sizeof *widths; s++) {
        const int F = widths[s];
        seed(600 + s);
        float *gu = randoms((int64_t)M * 2 * F, 6.f), *out = floats((int64_t)M * F), *one = floats(F);
        float *first = floats((int64_t)M * F);
        double *ref = doubles(F), *tol = doubles(F);
        for (int threads = 1; threads <= 3; threads += 2) {
            at("hexa_silu_mul", "M=%d F=%d threads=%d", M, F, threads);
            hexa_silu_mul(gu, out, M, F, threads);
            for (int r = 0; r < M; r++) {
                const float *g = gu + (int64_t)r * 2 * F, *u = g + F;
                for (int j = 0; j < F; j++) {
                    ref[j] = (double)g[j] / (1 + exp(-(double)g[j])) * u[j];
                    tol[j] = 1e-6 * fabs(ref[j]) + 1e-30;
                }
                near(r, out + (int64_t)r * F, ref, tol, F);
                hexa_silu_mul(g, one, 1, F, threads);
                same(r, one, out + (int64_t)r * F, F, "the whole batch");
                if (threads > 1) same(r, out + (int64_t)r * F, first + (int64_t)r * F, F, "threads=1");
            }
            memcpy(first, out, sizeof(float) * M * F);
        }
        at("hexa_silu_mul", "M=%d F=%d", M, F);
        keep("out", out, sizeof(float) * M * F);
        release();
    }
}

/* rotate-half RoPE, (x c - x2 s) * scale: three roundings of terms bounded by |x c| + |x2 s| */
static void rope_ref(const float *x, const float *c, const float *s, float scale, double *ref, double *tol) {
    for (int d = 0; d < HD; d++) {
        const int o = (d + 32) % HD;
        const double rot = d < 32 ? -(double)x[o] : x[o];
        ref[d] = ((double)x[d] * c[d] + rot * s[d]) * scale;
        tol[d] = 3.03 * U * (fabs((double)x[d] * c[d]) + fabs(rot * s[d])) * fabs(scale) + 1e-30;
    }
}

static void check_rope_split(void) {
    const int M = 7, Hq = 4, Hkv = 2, start = 10, cap = 20, W = (Hq + 2 * Hkv) * HD;
    const int64_t stride = (int64_t)cap * HD + 64, cache = Hkv * stride;
    const float qscale = 0.125f, sentinel = -1234.5f;
    seed(700);
    float *qkv = randoms((int64_t)M * W, 2.f), *cos = randoms((int64_t)M * HD, 1.f), *sin = randoms((int64_t)M * HD, 1.f);
    float *q = floats((int64_t)Hq * M * HD), *k = floats(cache), *v = floats(cache), *q1 = floats((int64_t)Hq * HD);
    float *k1 = floats(cache), *v1 = floats(cache), *first = floats((int64_t)Hq * M * HD), *firstk = floats(cache);
    double *ref = doubles(HD), *tol = doubles(HD);
    for (int threads = 1; threads <= 3; threads += 2) {
        at("hexa_rope_split", "M=%d Hq=%d Hkv=%d start=%d threads=%d", M, Hq, Hkv, start, threads);
        for (int64_t i = 0; i < cache; i++) k[i] = v[i] = k1[i] = v1[i] = sentinel;
        hexa_rope_split(qkv, cos, sin, q, k, v, M, Hq, Hkv, HD, stride, start, qscale, NULL, NULL, 0.f, 0, threads);
        for (int m = 0; m < M; m++) {
            const float *row = qkv + (int64_t)m * W, *c = cos + (int64_t)m * HD, *s = sin + (int64_t)m * HD;
            for (int h = 0; h < Hq; h++) {
                rope_ref(row + h * HD, c, s, qscale, ref, tol);
                near(m, q + ((int64_t)h * M + m) * HD, ref, tol, HD);
            }
            for (int h = 0; h < Hkv; h++) {
                const int64_t slot = h * stride + (int64_t)(start + m) * HD;
                rope_ref(row + (Hq + h) * HD, c, s, 1.f, ref, tol);
                near(m, k + slot, ref, tol, HD);
                same(m, v + slot, row + (Hq + Hkv + h) * HD, HD, "qkv's v");
            }
            /* the token alone, at its own position */
            hexa_rope_split(row, c, s, q1, k1, v1, 1, Hq, Hkv, HD, stride, start + m, qscale, NULL, NULL, 0.f, 0, threads);
            for (int h = 0; h < Hq; h++) same(m, q1 + (int64_t)h * HD, q + ((int64_t)h * M + m) * HD, HD, "the whole batch");
        }
        for (int h = 0; h < Hkv; h++)   /* same cache, every row outside start..start+M-1 untouched */
            for (int j = 0; j < cap; j++) {
                const int64_t slot = h * stride + (int64_t)j * HD;
                same(j, k1 + slot, k + slot, HD, "the whole batch (k cache)");
                same(j, v1 + slot, v + slot, HD, "the whole batch (v cache)");
                if (j < start || j >= start + M)
                    for (int d = 0; d < HD; d++)
                        if (k[slot + d] != sentinel || v[slot + d] != sentinel) { fail(j, "cache row written"); break; }
            }
        if (threads > 1) {
            for (int h = 0; h < Hq; h++)
                for (int m = 0; m < M; m++)
                    same(m, q + ((int64_t)h * M + m) * HD, first + ((int64_t)h * M + m) * HD, HD, "threads=1");
            same(0, k, firstk, cache, "threads=1 (k cache)");
        }
        memcpy(first, q, sizeof(float) * Hq * M * HD);
        memcpy(firstk, k, sizeof(float) * cache);
    }
    /* an fp16 cache: each value the fp32 one rounded to nearest even, rows outside untouched */
    at("hexa_rope_split", "fp16 cache M=%d Hq=%d Hkv=%d start=%d", M, Hq, Hkv, start);
    uint16_t *k16 = grab(2 * cache), *v16 = grab(2 * cache), *want = grab(2 * cache);
    for (int64_t i = 0; i < cache; i++) k16[i] = v16[i] = 0x7bff;   /* 65504: a sentinel */
    hexa_rope_split(qkv, cos, sin, q, k16, v16, M, Hq, Hkv, HD, stride, start, qscale, NULL, NULL, 0.f, 1, 3);
    for (int h = 0; h < Hkv; h++)
        for (int j = 0; j < cap; j++) {
            const int64_t slot = h * stride + (int64_t)j * HD;
            for (int kv = 0; kv < 2; kv++) {
                const float *f = (kv ? v : k) + slot;
                const uint16_t *got = (kv ? v16 : k16) + slot;
                if (j >= start && j < start + M) narrow_f16(f, want, HD);
                else for (int d = 0; d < HD; d++) want[d] = 0x7bff;
                checks++;
                if (memcmp(got, want, 2 * HD)) fail(j, "%s cache row differs from the fp32 row rounded", kv ? "v" : "k");
            }
        }
    at("hexa_rope_split", "M=%d Hq=%d Hkv=%d start=%d", M, Hq, Hkv, start);
    keep("q", q, sizeof(float) * Hq * M * HD);
    keep("k", k, sizeof(float) * cache);
    keep("k fp16", k16, 2 * cache);
    release();
}

/* ---- hexa_forward -------------------------------------------------------------------------- */

/* a weight [N, K] as hexa_forward reads it: fp32 panels (bits 0) or codes (4: Q4_1, 8: Q8_0) */
static const void *forward_weight(int bits, int N, int K) {
    if (!bits) {
        float *w = randoms((int64_t)N * K, 0.15f), *packed = floats((int64_t)(N + HEXA_PANEL - 1) / HEXA_PANEL * HEXA_PANEL * K);
        hexa_pack(w, packed, N, K, 1);
        return packed;
    }
    struct qweight q = make_quant(bits, N, K, 7);
    uint8_t *codes = grab(code_bytes(bits, N, K));
    if (!hexa_pack_quant(q.w, codes, N, K, bits, 1)) fail(0, "the model's %d-bit weight [%d, %d] was refused", bits, N, K);
    return codes;
}

static float *window_mask(int G, int S, int start, int W);

/* A tiny llama: 2 layers, 4 heads of 64 dims over 2 kv heads (GQA), hidden 96, ffn 83 (tails in
   the gate/up panels and SiLU's lanes); Q4_1 and Q8_0 codes and fp32 panels, a qkv bias. After a
   prompt prefilled in two passes (64 + 60 tokens, causal), one pass of 9 tokens with a causal mask
   must give, row by row, exactly what 9 one-token passes give (the KV cache filled as it goes), in
   both arithmetics: the property lossless speculative decoding rests on. */
static void forward_case(const int Dh, const int gemma, const int kv_f16) {
    enum { LAYERS = 2, HID = 96, FFN = 83, PROMPT = 124, S = 9, CAP = 140, W = 50 };
    const int HEADS = gemma ? 2 : 4, KV = gemma ? 1 : 2, G = HEADS / KV;
    const int QKV = (HEADS + 2 * KV) * Dh, ATT = HEADS * Dh;
    static const int bits[LAYERS][4] = {{4, 8, 4, 0}, {0, 4, 0, 0}};   /* wqkv, wo, wgu, wdown */
    seed(800);
    at("hexa_forward", "layers=%d hidden=%d heads=%d/%d of %d ffn=%d gemma=%d kv_f16=%d", LAYERS, HID, HEADS, KV, Dh, FFN,
       gemma, kv_f16);
    struct hexa_layer layer[LAYERS];
    for (int i = 0; i < LAYERS; i++) {
        const int *b = bits[i];
        float *ln_in = randoms(HID, 0.25f), *ln_post = randoms(HID, 0.25f);
        for (int d = 0; d < HID; d++) { ln_in[d] += 1.f; ln_post[d] += 1.f; }
        layer[i] = (struct hexa_layer){ln_in, forward_weight(b[0], QKV, HID), i ? randoms(QKV, 0.5f) : NULL,
                                       forward_weight(b[1], HID, ATT), ln_post, forward_weight(b[2], 2 * FFN, HID),
                                       forward_weight(b[3], HID, FFN), NULL, NULL, NULL, NULL, b[0], b[1], b[2], b[3], 0};
        if (gemma) {   /* q/k norms and post norms in both layers; layer 0 sliding-window */
            float *nq = randoms(Dh, 0.25f), *nk = randoms(Dh, 0.25f), *pa = randoms(HID, 0.25f), *pf = randoms(HID, 0.25f);
            for (int d = 0; d < Dh; d++) { nq[d] += 1.f; nk[d] += 1.f; }
            for (int d = 0; d < HID; d++) { pa[d] += 1.f; pf[d] += 1.f; }
            layer[i].q_norm = nq; layer[i].k_norm = nk; layer[i].post_attn = pa; layer[i].post_ffn = pf;
            layer[i].local = i == 0;
        }
    }
    float *norm = randoms(HID, 0.25f);
    for (int d = 0; d < HID; d++) norm[d] += 1.f;
    const int64_t head = (int64_t)CAP * Dh, layer_stride = KV * head, cache = LAYERS * layer_stride;
    struct hexa_model model = {LAYERS, HID, HEADS, KV, Dh, FFN, gemma, 1e-5f, 1.f / sqrtf((float)Dh), layer, norm, layer_stride,
                               head, kv_f16, 3};
    const size_t es = kv_f16 ? 2 : 4, bytes = es * cache;   /* a cache value's bytes, the cache's */
    const int P = PROMPT + S;
    float *emb = randoms((int64_t)P * HID, 1.f), *cos = randoms((int64_t)P * Dh, 1.f), *sin = randoms((int64_t)P * Dh, 1.f);
    float *lcos = randoms((int64_t)P * Dh, 1.f), *lsin = randoms((int64_t)P * Dh, 1.f);   /* the local layers' rotation */
    float *scratch = floats(hexa_forward_scratch(&model, HEXA_FORWARD_ROWS));
    float *k0 = floats(cache), *v0 = floats(cache), *ka = floats(cache), *va = floats(cache);
    float *kb = floats(cache), *vb = floats(cache), *x = floats((int64_t)HEXA_FORWARD_ROWS * HID);
    float *pass = floats((int64_t)HEXA_FORWARD_ROWS * HID), *steps = floats((int64_t)S * HID);
    /* the prompt, exact, into k0/v0 */
    for (int start = 0; start < PROMPT; start += HEXA_FORWARD_ROWS) {
        const int n = PROMPT - start < HEXA_FORWARD_ROWS ? PROMPT - start : HEXA_FORWARD_ROWS;
        memcpy(x, emb + (int64_t)start * HID, sizeof(float) * n * HID);
        hexa_forward(&model, x, cos + (int64_t)start * Dh, sin + (int64_t)start * Dh, causal_mask(G, n, start),
                     lcos + (int64_t)start * Dh, lsin + (int64_t)start * Dh, window_mask(G, n, start, W), n, start,
                     k0, v0, scratch, pass, 1);
    }
    for (int exact = 1; exact >= 0; exact--) {
        at("hexa_forward", "layers=%d hidden=%d heads=%d/%d of %d ffn=%d gemma=%d kv_f16=%d exact=%d start=%d S=%d",
           LAYERS, HID, HEADS, KV, Dh, FFN, gemma, kv_f16, exact, PROMPT, S);
        memcpy(ka, k0, bytes); memcpy(va, v0, bytes);
        memcpy(kb, k0, bytes); memcpy(vb, v0, bytes);
        memcpy(x, emb + (int64_t)PROMPT * HID, sizeof(float) * S * HID);
        hexa_forward(&model, x, cos + (int64_t)PROMPT * Dh, sin + (int64_t)PROMPT * Dh, causal_mask(G, S, PROMPT),
                     lcos + (int64_t)PROMPT * Dh, lsin + (int64_t)PROMPT * Dh, window_mask(G, S, PROMPT, W), S, PROMPT,
                     ka, va, scratch, pass, exact);
        for (int t = 0; t < S; t++) {
            memcpy(x, emb + (int64_t)(PROMPT + t) * HID, sizeof(float) * HID);
            hexa_forward(&model, x, cos + (int64_t)(PROMPT + t) * Dh, sin + (int64_t)(PROMPT + t) * Dh, NULL,
                         lcos + (int64_t)(PROMPT + t) * Dh, lsin + (int64_t)(PROMPT + t) * Dh,
                         window_mask(G, 1, PROMPT + t, W), 1, PROMPT + t, kb, vb, scratch, steps + (int64_t)t * HID, exact);
        }
        for (int t = 0; t < S; t++) {
            const float *row = pass + (int64_t)t * HID;
            for (int d = 0; d < HID; d++)
                if (!isfinite(row[d]) || fabsf(row[d]) > 1e3f) { fail(t, "col %d is %g", d, row[d]); break; }
            same(t, row, steps + (int64_t)t * HID, HID, "one-token passes");
            for (int i = 0; i < LAYERS; i++)
                for (int h = 0; h < KV; h++) {
                    const int64_t at = (i * layer_stride + h * head + (int64_t)(PROMPT + t) * Dh) * es;   /* bytes */
                    const int n = (int)(Dh * es / sizeof(float));   /* the row's bytes, compared as floats */
                    char what[80];
                    snprintf(what, sizeof what, "one-token passes (layer %d kv head %d, k cache)", i, h);
                    same(t, (float *)((char *)ka + at), (float *)((char *)kb + at), n, what);
                    snprintf(what, sizeof what, "one-token passes (layer %d kv head %d, v cache)", i, h);
                    same(t, (float *)((char *)va + at), (float *)((char *)vb + at), n, what);
                }
        }
        keep("out", pass, sizeof(float) * S * HID);
        keep("k cache", ka, bytes);
    }
    release();
}

/* the sliding-window mask of S tokens after `start` cached ones: causal, and no key W or more
   positions behind its token (gemma3's local layers), rows repeated for G query heads */
static float *window_mask(int G, int S, int start, int W) {
    const int L = start + S;
    float *mask = floats((int64_t)G * S * L);
    for (int r = 0; r < G * S; r++)
        for (int j = 0; j < L; j++) {
            const int p = start + r % S;
            mask[(int64_t)r * L + j] = j <= p && p - j < W ? 0.f : -INFINITY;
        }
    return mask;
}

/* the tiny llama above, and a tiny gemma3 (heads of 128 dims, q/k and post norms, GELU, a
   sliding-window layer with its own rotation) */
static void check_forward(void) {
    for (int kv_f16 = 0; kv_f16 <= 1; kv_f16++) {
        forward_case(64, 0, kv_f16);
        forward_case(128, 1, kv_f16);
    }
}

/* ---- the worker pool ----------------------------------------------------------------------- */

/* Jobs of different item counts back to back: every item must run once, with its own job's
   function and context. The pool before its CLOSED claim word let a worker that read a job's
   fields across a job boundary run the next job's function on the last job's context (9-31 bad
   items in 3M job pairs on the 2-core x86 machine, none with the fix). */
struct pool_job { int magic, items; int done[8]; };
static _Atomic long pool_bad;
static void pool_item(struct pool_job *j, int magic, int i) {
    if (j->magic != magic || i >= j->items) pool_bad++; else __atomic_fetch_add(&j->done[i], 1, __ATOMIC_RELAXED);
}
static void pool_a(void *ctx, int i) { pool_item(ctx, 0xA, i); }
static void pool_b(void *ctx, int i) { pool_item(ctx, 0xB, i); }

static void check_pool(void) {
    at("hexa_run", "alternating jobs of 1-2 and 5 items, 2 threads");
    for (long it = 0; it < 500000; it++) {
        struct pool_job a = {0xA, 1 + (int)(it % 2), {0}}, b = {0xB, 5, {0}};
        hexa_run(pool_a, &a, a.items, 2);
        hexa_run(pool_b, &b, b.items, 2);
        for (int i = 0; i < a.items; i++) if (a.done[i] != 1) pool_bad++;
        for (int i = 0; i < b.items; i++) if (b.done[i] != 1) pool_bad++;
        a.magic = b.magic = 0;
    }
    checks++;
    if (pool_bad) fail(0, "%ld items ran with another job's function or context, or not exactly once", (long)pool_bad);
}

/* ---- main ---------------------------------------------------------------------------------- */

static void run(const char *name, void (*check)(void)) {
    const int before = failures;
    shown = 0;
    check();
    release();
    if (shown > SHOWN) printf("FAIL %s: %d more failures not shown\n", name, shown - SHOWN);
    fprintf(stderr, "%-16s %s\n", name, failures == before ? "ok" : "FAILED");
}

int main(int argc, char **argv) {
    /* --narrow: the avx512-vnni build's 256-bit tiles (the ones a CPU that splits 512-bit
       instructions runs); without it its 512-bit tiles (x86/wide.c) run every call they take */
    const int narrow = argc > 1 && !strcmp(argv[1], "--narrow");
    argc -= narrow;
    argv += narrow;
    if (argc == 3 && !strcmp(argv[1], "dump")) {
        if (!(dump = fopen(argv[2], "wb"))) { perror(argv[2]); return 2; }
    } else if (argc != 2 || strcmp(argv[1], "check")) {
        fprintf(stderr, "usage: %s [--narrow] check | dump FILE\n", argv[0]);
        return 2;
    }
    /* the amx build's tiles, on if the OS grants them (0 in every other build) */
    tiles = hexa_amx(1);
    printf("amx tiles: %s\n", tiles ? "on" : "off");
    wide_tiles = hexa_wide(!narrow);
    printf("512-bit tiles: %s\n", wide_tiles ? "on" : "off");
    run("linear", check_linear);
    run("linear half", check_linear_half);
    run("codes", check_codes);
    run("attention", check_attention);
    run("attention tree", check_attention_trees);
    run("rmsnorm", check_rmsnorm);
    run("silu_mul", check_silu_mul);
    run("rope_split", check_rope_split);
    run("forward", check_forward);
    run("pool", check_pool);
    if (dump && fclose(dump)) { perror(argv[2]); return 2; }
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
