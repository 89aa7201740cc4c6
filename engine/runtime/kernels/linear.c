/* hexa_linear's work split, the same for every instruction set: items of GP panels, each run by
 * the ISA's tiles (hexa_f32_group in x86/ or arm64/packed_gemm.c). */
#include <stdint.h>
#include <stdlib.h>

#include "half.h"
#include "hexa.h"
#include "layout.h"
#include "pool.h"

struct linear_job { const float *x, *packed, *b, *res; float *y; int M, N, K, P; };

static void linear_group(void *ctx, int g) {
    const struct linear_job *a = ctx;
    const int p0 = g * GP;
    hexa_f32_group(a->x, a->packed + (int64_t)p0 * a->K * PW, a->b, a->res, a->y, a->M, p0,
                   a->P - p0 < GP ? a->P - p0 : GP, a->N, a->K);
}

/* y[M,N] = res[M,N] + (x[M,K] @ w[N,K]^T + b[N]), w packed by hexa_pack; b and res may be NULL,
   res may be y itself (the residual stream updated in place); x and y rows contiguous. */
void hexa_linear(const float *x, const float *packed, const float *b, const float *res, float *y,
                 int M, int N, int K, int threads) {
    const int P = (N + PW - 1) / PW;
    struct linear_job a = {x, packed, b, res, y, M, N, K, P};
    hexa_run(linear_group, &a, (P + GP - 1) / GP, threads);
}

/* panels of fp16 or bf16 values (an F16/BF16 GGUF's matrices, half of fp32 panels' bytes): each
   item runs the ISA's tiles that widen them as they load (hexa_half_group), or widens its GP
   panels into the thread's buffer and runs the fp32 tiles; either way exactly, so the result is
   hexa_linear's on the widened panels, bit for bit. */
struct half_job { const float *x; const uint16_t *packed; const float *b, *res; float *y; int M, N, K, P, bits; };

static void half_group(void *ctx, int g) {
    const struct half_job *a = ctx;
    const int p0 = g * GP, np = a->P - p0 < GP ? a->P - p0 : GP;
    const uint16_t *src = a->packed + (int64_t)p0 * a->K * PW;
    if (hexa_half_group(a->x, src, a->bits, a->b, a->res, a->y, a->M, p0, np, a->N, a->K)) return;
    const int n = np * a->K * PW;
    float *panels = hexa_panel_buffer(n);
    if (!panels) abort();        /* out of memory for a few MB: nothing sensible is left to do */
    if (a->bits == HEXA_PANELS_BF16) widen_bf16(src, panels, n);
    else widen_f16(src, panels, n);
    hexa_f32_group(a->x, panels, a->b, a->res, a->y, a->M, p0, np, a->N, a->K);
}

void hexa_linear_half(const float *x, const uint16_t *packed, const float *b, const float *res, float *y,
                      int M, int N, int K, int bits, int threads) {
    const int P = (N + PW - 1) / PW;
    struct half_job a = {x, packed, b, res, y, M, N, K, P, bits};
    hexa_run(half_group, &a, (P + GP - 1) / GP, threads);
}
