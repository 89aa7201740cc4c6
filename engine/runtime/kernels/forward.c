/* A whole decoder forward pass in one call: every decoding step and draft tree (<= 64 tokens).
 *
 * Driven from Python, a step made ~9 Python -> C calls per layer (270 for SmolLM2's 30 layers),
 * each with its own torch tensor allocation and ctypes marshalling: milliseconds of a step spent
 * outside the kernels. Here Python hands over the embedded tokens, their RoPE rows, the mask and
 * the cache; the layers run back to back over buffers the engine allocated once.
 *
 * The calls are exactly the ones CompactTransformer._native_layers makes, in the same order,
 * with the same arguments: the fused pass gives that path's bits (the engine tests compare them).
 * ``mode`` picks the projections' arithmetic on codes: 0 integer dot products (quant_dot.c,
 * decoding), 1 exact fp32, 2 prompt rows (hexa_linear_prefill); every row is computed alone in
 * each, so a tree row still equals a plain step bit for bit.
 */
#include <stddef.h>
#include <stdint.h>

#include "hexa.h"

static void linear(const void *w, int bits, int mode, const float *x, const float *b, const float *res,
                   float *y, int M, int N, int K, int threads) {
    if (bits == HEXA_PANELS_F16 || bits == HEXA_PANELS_BF16)
        hexa_linear_half(x, w, b, res, y, M, N, K, bits, threads);
    else if (bits && mode == 0)
        hexa_linear_dot(x, w, b, res, y, M, N, K, bits, threads);
    else if (bits && mode == 2)
        hexa_linear_prefill(x, w, b, res, y, M, N, K, bits, threads);
    else if (bits)
        hexa_linear_quant(x, w, b, res, y, M, N, K, bits, threads);
    else
        hexa_linear(x, w, b, res, y, M, N, K, threads);
}

/* floats of scratch one pass of S tokens needs */
int64_t hexa_forward_scratch(const struct hexa_model *m, int S) {
    const int64_t D = m->hidden, qkv = (int64_t)(m->heads + 2 * m->kv_heads) * m->head_dim;
    const int64_t att = (int64_t)m->heads * m->head_dim;
    return S * (D + qkv + 2 * att + 3 * (int64_t)m->ffn);
}

/* y = x @ w^T, then x += RMSNorm(y) (gemma3's post norms) or, without a norm, x += y in the
   linear itself; y [S, D] is scratch. Element by element: each row alone, as everywhere. */
static void project_add(const void *w, int bits, int mode, const float *in, const float *norm, float *x, float *y,
                        int S, int D, int K, float eps, int threads) {
    if (!norm) {
        linear(w, bits, mode, in, NULL, x, x, S, D, K, threads);
        return;
    }
    linear(w, bits, mode, in, NULL, NULL, y, S, D, K, threads);
    hexa_rmsnorm(y, norm, y, S, D, eps, threads);
    for (int64_t i = 0; i < (int64_t)S * D; i++) x[i] += y[i];
}

/* x [S, hidden]: the embedded tokens, updated in place as the residual stream; cos/sin [S, head
   dim] the RoPE rows of their positions; mask [G*S, start+S] additive (G = heads / kv_heads query
   rows per token, repeated) or NULL for a single token; local layers read cos_local, sin_local
   and mask_local instead; new K/V go to cache rows start..start+S-1; out [S, hidden] = the final
   RMSNorm of the last layer's output. */
void hexa_forward(const struct hexa_model *m, float *x, const float *cos, const float *sin, const float *mask,
                  const float *cos_local, const float *sin_local, const float *mask_local,
                  int S, int start, void *k_cache, void *v_cache, float *scratch, float *out,
                  int mode) {
    const int D = m->hidden, Hq = m->heads, Hkv = m->kv_heads, F = m->ffn, T = m->threads, HD = m->head_dim;
    const int QKV = (Hq + 2 * Hkv) * HD, ATT = Hq * HD;
    float *h = scratch, *qkv = h + (int64_t)S * D, *q = qkv + (int64_t)S * QKV, *o = q + (int64_t)S * ATT;
    float *gu = o + (int64_t)S * ATT, *act = gu + (int64_t)S * 2 * F;
    for (int i = 0; i < m->layers; i++) {
        const struct hexa_layer *L = m->layer + i;
        const int64_t at = i * m->cache_layer_stride * (m->kv_f16 ? 2 : 4);   /* bytes */
        void *kc = (char *)k_cache + at, *vc = (char *)v_cache + at;
        const float *c = L->local ? cos_local : cos, *s = L->local ? sin_local : sin;
        const float *mk = L->local ? mask_local : mask;
        hexa_rmsnorm(x, L->ln_in, h, S, D, m->eps, T);
        linear(L->wqkv, L->wqkv_bits, mode, h, L->bqkv, NULL, qkv, S, QKV, D, T);
        hexa_rope_split(qkv, c, s, q, kc, vc, S, Hq, Hkv, HD, m->cache_head_stride, start, m->qscale,
                        L->q_norm, L->k_norm, m->eps, m->kv_f16, T);
        hexa_attention(q, kc, vc, mk, o, Hkv, Hq / Hkv * S, start + S, HD, m->cache_head_stride, S, S, m->kv_f16, T);
        project_add(L->wo, L->wo_bits, mode, o, L->post_attn, x, h, S, D, ATT, m->eps, T);
        hexa_rmsnorm(x, L->ln_post, h, S, D, m->eps, T);
        linear(L->wgu, L->wgu_bits, mode, h, NULL, NULL, gu, S, 2 * F, D, T);
        if (m->act) hexa_gelu_mul(gu, act, S, F, T);
        else hexa_silu_mul(gu, act, S, F, T);
        project_add(L->wdown, L->wdown_bits, mode, act, L->post_ffn, x, h, S, D, F, m->eps, T);
    }
    hexa_rmsnorm(x, m->norm, out, S, D, m->eps, T);
}
