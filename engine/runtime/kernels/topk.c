/* Calibration's ranking (hexa_softmax_topk): for every prompt position, the k most probable of
 * the ranked ids and their softmax probabilities. In numpy this was a softmax over the whole
 * [256, ~4,500] chunk and a top-k over blocks of it, 3.4 ms of the 9.8 ms that ranking a
 * 256-token chunk took on SmolLM2 (the head's product is the rest); here it is 0.6 ms: each row
 * is read twice while it sits in L1/L2 (the selection, whose first entry is the maximum, then
 * the sum of exponentials) and nothing is written but [R, k].
 *
 * Plain C shared by every ISA: the exponential is exp8's polynomial (x86/vexp.h) written per
 * element without branches, which GCC vectorizes. Calibration only steers drafts, so no output
 * depends on these bits; rows are still computed alone, in a fixed order.
 */
#include <stdint.h>
#include <string.h>

#include "hexa.h"
#include "pool.h"

/* exp(x) for x <= 0 (a logit minus its row's maximum): exp8's range reduction and polynomial;
   below -87.3 it gives 0, as exp8 does */
static inline float exp_le0(float x) {
    const float under = x < -87.3f ? 0.f : 1.f;
    x = x < -87.3f ? -87.3f : x;
    const float fx = __builtin_rintf(x * 1.44269504088896341f);
    x = x - fx * 0.693359375f;
    x = x - fx * -2.12194440e-4f;
    float y = 1.9875691500E-4f;
    y = y * x + 1.3981999507E-3f;
    y = y * x + 8.3334519073E-3f;
    y = y * x + 4.1665795894E-2f;
    y = y * x + 1.6666665459E-1f;
    y = y * x + 5.0000001201E-1f;
    y = y * x * x + (x + 1.f);
    const int32_t bits = ((int32_t)fx + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale * under;
}

struct topk_job { const float *x, *y; int nx, ny, k; float *probs; int32_t *ids; };

/* keep the k largest (value, column) pairs seen, largest first; an equal value does not displace
   an earlier column */
static inline void offer(float *v, int32_t *c, int k, float x, int32_t col) {
    if (!(x > v[k - 1])) return;
    int j = k - 1;
    while (j > 0 && x > v[j - 1]) {
        v[j] = v[j - 1];
        c[j] = c[j - 1];
        j--;
    }
    v[j] = x;
    c[j] = col;
}

/* offer x[0..n) (columns from col0); a block of 16 is first compared with the k-th value so
   far as one vector, and most blocks of a row have nothing above it */
static void select(float *v, int32_t *c, int k, const float *x, int n, int32_t col0) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const float kth = v[k - 1];
        int above = 0;
        for (int l = 0; l < 16; l++) above |= x[i + l] > kth;
        if (above)
            for (int l = 0; l < 16; l++) offer(v, c, k, x[i + l], col0 + i + l);
    }
    for (; i < n; i++) offer(v, c, k, x[i], col0 + i);
}

static float row_expsum(const float *x, int n, float m) {
    float s[16] = {0};   /* 16 partial sums: lets GCC keep the loop in vector lanes */
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) s[l] += exp_le0(x[i + l] - m);
    float sum = 0.f;
    for (; i < n; i++) sum += exp_le0(x[i] - m);
    for (int l = 0; l < 16; l++) sum += s[l];
    return sum;
}

static void topk_row(void *ctx, int r) {
    const struct topk_job *a = ctx;
    const float *x = a->x + (int64_t)r * a->nx, *y = a->y ? a->y + (int64_t)r * a->ny : 0;
    float v[HEXA_TOPK_MAX];
    int32_t c[HEXA_TOPK_MAX];
    for (int j = 0; j < a->k; j++) { v[j] = -__builtin_inff(); c[j] = -1; }
    select(v, c, a->k, x, a->nx, 0);
    if (y) select(v, c, a->k, y, a->ny, a->nx);
    float *p = a->probs + (int64_t)r * a->k;
    int32_t *ids = a->ids + (int64_t)r * a->k;
    if (c[0] < 0) {   /* nothing above -inf (a row of -inf or NaN): probabilities 0, and no
                         exp of -inf - -inf, whose NaN would reach exp_le0's int conversion */
        for (int j = 0; j < a->k; j++) { p[j] = 0.f; ids[j] = 0; }
        return;
    }
    const float m = v[0];   /* the row's maximum */
    float sum = row_expsum(x, a->nx, m) + (y ? row_expsum(y, a->ny, m) : 0.f);
    if (!(sum > 0.f)) sum = __builtin_inff();
    for (int j = 0; j < a->k; j++) {
        p[j] = c[j] < 0 ? 0.f : exp_le0(v[j] - m) / sum;
        ids[j] = c[j] < 0 ? 0 : c[j];
    }
}

void hexa_softmax_topk(const float *x, int32_t nx, const float *y, int32_t ny, int32_t R, int32_t k, float *probs, int32_t *ids, int32_t threads) {
    struct topk_job a = {x, y, nx, y ? ny : 0, k < 1 ? 1 : k > HEXA_TOPK_MAX ? HEXA_TOPK_MAX : k, probs, ids};
    hexa_run(topk_row, &a, R, threads);
}
