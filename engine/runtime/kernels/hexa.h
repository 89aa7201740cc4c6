/* Everything the native kernels export: shapes and constants, the model struct a forward pass
 * reads, and every function Python calls. The one source of truth for both sides: each .c file
 * includes it (the compiler rejects a definition that drifts from its declaration), and the
 * Python binding (kernels/binding.py) reads its #defines, struct fields and prototypes from this
 * file instead of keeping its own lists. Keep to one declaration per line and the plain types
 * binding.py knows (float, int32_t, int64_t, pointers).
 */
#ifndef HEXA_H
#define HEXA_H

#include <stdint.h>

#define HEXA_MAX_HEAD_DIM 256 /* attention.c and rope.c take heads of 64, 128 or 256 dims */
#define HEXA_PANEL 16         /* output columns per packed panel */
#define HEXA_QUANT_BLOCK 32   /* inputs per Q4_1 / Q8_0 block */
#define HEXA_HEAD_F16 16      /* codes' layout | this: the block heads as fp16 (layout.h) */
#define HEXA_HEAD_K 32        /* | this: an fp32 factor per 8 blocks times an int8 per block */
#define HEXA_KSUPER 8         /* blocks per HEXA_HEAD_K factor (a K-quant's 256 inputs) */
#define HEXA_TABLE_SHIFT 6    /* | table << this (3 bits): layouts 10 and 11's 16-value table (layout.h) */
#define HEXA_QUANT_ROWS 12    /* quantized calls of at most this many rows rebuild weights per tile */
#define HEXA_FORWARD_ROWS 64  /* most tokens one hexa_forward call runs (every step and draft tree) */
#define HEXA_TOPK_MAX 32      /* most columns hexa_softmax_topk keeps per row */
#define HEXA_PANELS_F16 1024  /* a projection's bits for fp32 panels stored as fp16 (hexa_linear_half) */
#define HEXA_PANELS_BF16 2048 /* ... as bf16 */

/* One decoder layer's weights. Projections are packed fp32 (bits 0, hexa_pack's layout; HEXA_PANELS_F16
   or _BF16: those panels as 2-byte values) or codes
   (layout.h: bits 4 (Q4_1), 8 (Q8_0), 2, 3, 5-7, 9, 10 and 11, | a table, | HEAD_F16 or HEAD_K for compact heads); bqkv may be NULL. q_norm/k_norm (per-head
   RMSNorm of q and k before RoPE: qwen3, gemma3), post_attn/post_ffn (RMSNorm of the attention's
   and the MLP's output before the residual add: gemma3) are NULL where the model has none.
   local: a sliding-window layer (gemma3), which reads the pass's local mask and RoPE rows. */
struct hexa_layer {
    const float *ln_in;
    const void *wqkv;
    const float *bqkv;
    const void *wo;
    const float *ln_post;
    const void *wgu;
    const void *wdown;
    const float *q_norm;
    const float *k_norm;
    const float *post_attn;
    const float *post_ffn;
    int32_t wqkv_bits;
    int32_t wo_bits;
    int32_t wgu_bits;
    int32_t wdown_bits;
    int32_t local;
};

/* A llama/qwen2/qwen3/gemma3 decoder as hexa_forward runs it. act 0: SiLU(gate)*up, 1: GELU(tanh)(gate)*up */
struct hexa_model {
    int32_t layers;
    int32_t hidden;
    int32_t heads;
    int32_t kv_heads;
    int32_t head_dim;
    int32_t ffn;
    int32_t act;
    float eps;
    float qscale;
    const struct hexa_layer *layer;
    const float *norm;
    int64_t cache_layer_stride;   /* values between two layers of the K (and V) cache */
    int64_t cache_head_stride;    /* values between two kv heads of one layer */
    int32_t kv_f16;               /* the cache's values are fp16 (1) or fp32 (0) */
    int32_t threads;
};

/* linear algebra: y[M,N] = res + (x[M,K] @ w[N,K]^T + b); b, res may be NULL, res may be y.
   hexa_linear_quant gives hexa_linear's bits from codes; hexa_linear_dot quantizes x (quant_dot.c) */
void hexa_pack(const float *w, float *packed, int32_t N, int32_t K, int32_t threads);
void hexa_linear(const float *x, const float *packed, const float *b, const float *res, float *y, int32_t M, int32_t N, int32_t K, int32_t threads);
/* hexa_linear's bits from hexa_pack's panels held as fp16 or bf16 values (bits HEXA_PANELS_F16 / _BF16) */
void hexa_linear_half(const float *x, const uint16_t *packed, const float *b, const float *res, float *y, int32_t M, int32_t N, int32_t K, int32_t bits, int32_t threads);
int32_t hexa_pack_quant(const float *w, uint8_t *packed, int32_t N, int32_t K, int32_t bits, int32_t threads);
int32_t hexa_quant_block_bytes(int32_t bits);
int64_t hexa_quant_bytes(int32_t bits, int32_t N, int32_t K);
int32_t hexa_code_table(int32_t table, int8_t *out); /* layouts 10, 11: table's 16 values into out; 0, or -1 for no such table */
void hexa_linear_quant(const float *x, const uint8_t *packed, const float *b, const float *res, float *y, int32_t M, int32_t N, int32_t K, int32_t bits, int32_t threads);
void hexa_linear_dot(const float *x, const uint8_t *packed, const float *b, const float *res, float *y, int32_t M, int32_t N, int32_t K, int32_t bits, int32_t threads);
/* prompt rows (prefill): on AMX tiles (the amx build, tiles granted) weights and rows in bf16
   with fp32 sums over all of K (x86/amx_bf16.h); a K-quant's on the 512-bit tiles (AMD Zen 4, 5)
   with the rows quantized per 256 inputs (x86/quant_dot.c's k256_applies); elsewhere
   hexa_linear_dot. Either way a row's bits do not depend on the other rows, so a prompt gives
   the same bits in any chunking */
void hexa_linear_prefill(const float *x, const uint8_t *packed, const float *b, const float *res, float *y, int32_t M, int32_t N, int32_t K, int32_t bits, int32_t threads);
void hexa_unpack_rows(const uint8_t *packed, const int64_t *rows, int32_t count, int32_t N, int32_t K, int32_t bits, float *out);
/* hexa_linear_dot's calls of 32 rows or more on AMX tiles (the amx build, x86/amx.h):
   on = 1 asks the OS for the tile state, 0 goes back to the VNNI tiles (the same bits either
   way); returns 1 if the tiles are in use, 0 in every other build or if the OS refused */
int32_t hexa_amx(int32_t on);
/* hexa_linear_dot's calls of 6 rows or more on 512-bit tiles (the avx-vnni and avx512-vnni builds,
   x86/wide.c): on = 1 turns them on where the CPU has AVX-512 VNNI, 0 back to the 256-bit tiles
   (the same bits either way); returns 1 if they are on, 0 in every other build or on another CPU */
int32_t hexa_wide(int32_t on);

/* the worker pool (pool.c): how long idle workers spin before sleeping, 0..1000000 us (default
   200); the engine sets it when it loads the library */
void hexa_pool_spin(int32_t us);

/* the rest of a layer; a KV cache (k, v) holds fp16 values where kv_f16 is 1, else fp32 */
void hexa_attention(const float *q, const void *k, const void *v, const float *mask, float *out, int32_t H, int32_t R, int32_t L, int32_t D, int64_t head_stride, int32_t S, int32_t pass, int32_t kv_f16, int32_t threads);
void hexa_rmsnorm(const float *x, const float *w, float *out, int32_t M, int32_t D, float eps, int32_t threads);
void hexa_silu_mul(const float *gu, float *out, int32_t M, int32_t F, int32_t threads);
void hexa_gelu_mul(const float *gu, float *out, int32_t M, int32_t F, int32_t threads);
void hexa_rope_split(const float *qkv, const float *cos, const float *sin, float *q, void *k, void *v, int32_t M, int32_t Hq, int32_t Hkv, int32_t D, int64_t head_stride, int32_t start, float qscale, const float *q_norm, const float *k_norm, float eps, int32_t kv_f16, int32_t threads);

/* calibration's ranking (topk.c): each row of [x | y] (x [R, nx]; y [R, ny] or NULL), softmax over
   its nx + ny columns; its k <= HEXA_TOPK_MAX largest probabilities, largest first, into probs
   [R, k] and their columns (y's counted after x's) into ids [R, k] */
void hexa_softmax_topk(const float *x, int32_t nx, const float *y, int32_t ny, int32_t R, int32_t k, float *probs, int32_t *ids, int32_t threads);

/* a whole forward pass of S <= HEXA_FORWARD_ROWS tokens (forward.c); mode 0: codes times 8-bit
   activations (hexa_linear_dot, decoding), 1: the fp32 arithmetic (reference), 2: prompt rows
   (hexa_linear_prefill). rope:
   cos, sin [S, head_dim] and, for local layers, cos_local, sin_local; mask (mask_local for local
   layers) additive [G*S, start+S] or NULL */
int64_t hexa_forward_scratch(const struct hexa_model *m, int32_t S);
void hexa_forward(const struct hexa_model *m, float *x, const float *cos, const float *sin, const float *mask, const float *cos_local, const float *sin_local, const float *mask_local, int32_t S, int32_t start, void *k_cache, void *v_cache, float *scratch, float *out, int32_t mode);

#endif
