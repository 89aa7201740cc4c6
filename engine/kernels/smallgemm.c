/* hexa's fp32 linear for the few rows of a decoding step or a draft-tree verification (AVX2+FMA).
 *
 * Why: a step feeds 1-33 rows through weight matrices of 576-49152 rows. oneDNN and MKL pick a
 * different (and slow) path for every small row count; this kernel streams each weight row once
 * and reuses it for all input rows, so 8 rows cost little more than 1.
 * Batch invariance: every output is made by the same operation sequence whatever tile computes
 * it, so a position's logits never depend on how many positions share the pass — tree
 * verification reproduces plain greedy decoding bit for bit.
 */
#include <immintrin.h>
#include <stdint.h>

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 0x1));
    return _mm_cvtss_f32(s);
}

/* Every y[m][n] is made by the same operation sequence whatever tile computes it: 8-lane FMA
   partial sums over k in order, a fixed horizontal sum, the k tail, the bias. So a row's result
   never depends on how many rows share the call (batch invariance). */
static inline __attribute__((always_inline)) void
tile(const float *x, const float *w, const float *b, float *y, int m0, int n0, int N, int K,
     const int MR, const int NR) {
    const int K8 = K & ~7;
    __m256 acc[4][8];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_ps();
    const float *xr = x + (int64_t)m0 * K, *wr = w + (int64_t)n0 * K;
    for (int k = 0; k < K8; k += 8) {
        __m256 wv[8];
        for (int j = 0; j < NR; j++) wv[j] = _mm256_loadu_ps(wr + (int64_t)j * K + k);
        for (int i = 0; i < MR; i++) {
            __m256 u = _mm256_loadu_ps(xr + (int64_t)i * K + k);
            for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(u, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) {
            const float *xm = xr + (int64_t)i * K, *wn = wr + (int64_t)j * K;
            float s = hsum8(acc[i][j]);
            for (int k = K8; k < K; k++) s += xm[k] * wn[k];
            if (b) s += b[n0 + j];
            y[(int64_t)(m0 + i) * N + n0 + j] = s;
        }
}

#define NB 8   /* columns per work item */

static void block(const float *x, const float *w, const float *b, float *y, int M, int n0, int N, int K) {
    const int nr = N - n0 < NB ? N - n0 : NB;
    if (nr < NB) {                                   /* ragged last block: one column at a time */
        for (int j = 0; j < nr; j++)
            for (int m = 0; m < M; m++) tile(x, w, b, y, m, n0 + j, N, K, 1, 1);
        return;
    }
    int m = 0;
    if (M == 1) { tile(x, w, b, y, 0, n0, N, K, 1, 8); return; }
    for (; m + 4 <= M; m += 4) { tile(x, w, b, y, m, n0, N, K, 4, 3); tile(x, w, b, y, m, n0 + 3, N, K, 4, 3);
                                  tile(x, w, b, y, m, n0 + 6, N, K, 4, 2); }
    for (; m + 2 <= M; m += 2) { tile(x, w, b, y, m, n0, N, K, 2, 4); tile(x, w, b, y, m, n0 + 4, N, K, 2, 4); }
    for (; m < M; m++) tile(x, w, b, y, m, n0, N, K, 1, 8);
}

/* y[M,N] = x[M,K] @ w[N,K]^T (+ b[N]); rows of x, w, y contiguous. */
void hexa_linear(const float *x, const float *w, const float *b, float *y,
                 int M, int N, int K, int threads) {
    const int blocks = (N + NB - 1) / NB;
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int nb = 0; nb < blocks; nb++) block(x, w, b, y, M, nb * NB, N, K);
}
