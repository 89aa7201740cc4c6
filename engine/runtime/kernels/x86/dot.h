/* What quant_dot.c's tiles share with the tiles in files of their own (wide.c) and at its end
 * (amx.h, amx_bf16.h): the job, reading ahead, a panel's codes decoded once (pre), the rows per
 * tile. The 512-bit tiles are a translation unit of their own so that the two are compiled at
 * once: in quant_dot.c they made its compile 69 s of the avx-vnni build's (-O3, 2 cores,
 * 2026-12-02), 49 s of it theirs.
 */
#ifndef HEXA_X86_DOT_H
#define HEXA_X86_DOT_H

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>

#include "hexa.h"
#include "layout.h"
#include "codes.h"
#include "tile.h"
#include "pool.h"

/* 8-bit codes (layouts 7 and 8) are summed as int16 pairs (DOT_Q8), the nibbles and planes as
   bytes. With VNNI, tiles over pre (more than ONE_Q8 rows) take 8-bit codes as bytes too, biased
   by 128 (quads_bytes, DOT_NIB's B7 and B8): 4 inputs a vpdpbusd where vpdpwssd takes 2, and
   vpdpbusd never saturates. A 256-row Q8_0 product took 0.68-0.74x the time (two builds
   alternated in one process, same bits); one tile of 1-8 rows, which decodes its own codes,
   stays on pairs, where biasing and transposing would be paid in every tile. */
#define BYTE_CODES(bits) (CODES(bits) == 7 || CODES(bits) == 8 || TABLE_CODES(bits))   /* table codes: their values */
#ifdef HEXA_VNNI   /* table codes: their own tiles as the nibbles' (quant_dot.c's TILES_TABLE) */
#define PAIRS(bits, M) (BYTE_CODES(bits) && !TABLE_CODES(bits) && (M) <= ONE_Q8)
#else
#define PAIRS(bits, M) BYTE_CODES(bits)
#endif

/* the offset a tile's codes carry (u = q + OFF): the planes' CODE_OFFSET, 128 for 8-bit codes as
   bytes; hexa_linear_dot has the rows' offs formed with the same one */
#define TILE_OFFSET(bits) (BYTE_CODES(bits) ? 128 : CODE_OFFSET(bits))
/* ... and what the rows' qs hold: that offset times each half block's sum of codes (offs), or
   for an m per 16 inputs (MIN_HALF, whose codes carry none) the sums themselves (half_sx) */
#define QS_OFFSET(bits) (MIN_HALF(bits) ? 1 : TILE_OFFSET(bits))

struct dot_job {
    const uint8_t *packed;
    const float *b, *res;
    float *y;
    const void *codes;      /* nibbles, planes: [M][K] the rows' 8-bit codes; 8-bit codes: [M][K/2] inputs 2j, 2j+1 as two int16 */
    const float *dx, *sx;   /* [M][K/32]: block scale, and scale * sum of the block's codes */
    const int32_t *qs;      /* [M][K/16]: the offset times the codes' sum that each float step subtracts (offs);
                               layout 2: the half blocks' sums of codes (QS_OFFSET) */
    int M, N, K, P, bits;
    int pairs;              /* the codes are int16 pairs (8-bit codes, DOT_Q8), else int8 (quads) */
    int gp;                 /* panels per work item (item_panels) */
    int k256;               /* prompt rows with a scale per 256 inputs (wide.c's K256 tiles): dx the same
                               for a super-block's 8 blocks, sx the block's sum of codes (not times dx) */
};

/* dx times half h's sum of the codes of row block at: what a layout 2 m of that half multiplies
   (layout.h's MIN_HALF; the rows' qs hold the sums there, QS_OFFSET). One fp32 product of an
   exact integer, as arm64/quant_dot.c forms it. */
static inline float half_sx(const struct dot_job *a, int64_t at, int h) {
    return a->dx[at] * (float)a->qs[2 * at + h];
}

/* d[16] (or m[16]) in the quads' column order: columns 0-3 | 8-11, 4-7 | 12-15 */
static inline __m256 quad_order(const float *d, int h) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(d + 4 * h)), _mm_loadu_ps(d + 8 + 4 * h), 1);
}

/* Bytes read ahead in software, up to the end of the work item (item_end): a step's ~120 calls
   each stream 0.1-1.5 MB, too short for the hardware prefetchers to reach full speed (all
   projections of one step ran at ~12 GB/s where a plain sum reaches ~26 on the first machine).
   There 4 blocks ahead did best (~1.3 KB of Q4_1; 16 blocks took 1.09x the time, reading past
   each item's end). On AMD Zen 5 (2026-12-02), one process alternating builds: a streamed
   8960 x 1536 product at 1-4 rows took 0.85-0.98x its time at 4 KB to 8 KB ahead (Q4_K, Q6_K,
   Q8_0, Q5_0); whole decoding steps with the reading stopped at the item's end, 6 KB against 4
   blocks: Qwen2.5-1.5B's widths 1.10x / 1.08x as fast at 1 / 4 rows, SmolLM2-135M Q4_1 1.09x /
   1.06x, Gemma-3-270M 1.04x. */
#define READ_AHEAD 6144
/* ... and each line once more READ_FAR bytes on, into L2 only (_MM_HINT_T2). On AMD Zen 4
   (2026-12-03, builds alternated in one process, whole decoding steps, the same logits), the near
   reading alone left a 1-row Qwen2.5-1.5B-shaped step at 8.8-9.5 ms (a core streamed ~14 GB/s of
   the 23 one core can read): with lines asked for 16 KB on, 1.13-1.19x as fast (4 rows 1.08x,
   8 rows 1.05x); Llama-3.2-3B's widths 1.10-1.18x at 1 row (4, 8 rows 1.01x, 1.04x), Gemma-3-270M
   1.06x (4 rows 1.09x), SmolLM2-135M Q4_K_M 1.02-1.06x, Q4_1 0.99-1.04x. 12 KB ran 1.05-1.07x
   16 KB's speed at 1 row but 0.97x at 4; 24-48 KB no better; moving the near reading to L2 (T1,
   T2) instead 1.02-1.11x, NTA 0.99x. Dropping the reading ahead took those steps 1.37x their
   time. Other x86 CPUs have not run it yet. */
#define READ_FAR 16384

/* one past the last panel of work item g (panels [g*gp, g*gp+gp), the last item shorter) */
static inline int item_stop(const struct dot_job *a, int g) {
    return (g + 1) * a->gp < a->P ? (g + 1) * a->gp : a->P;
}

/* the last line a read ahead may touch from panel p on: the end of p's work item */
static inline const char *item_end(const struct dot_job *a, int p) {
    return (const char *)a->packed + (int64_t)item_stop(a, p / a->gp) * PANEL_BYTES(a->bits, a->K / QB) - 64;
}

/* the block at bp (bytes long) READ_AHEAD and READ_FAR bytes on, or as far as end. Always
   inlined: a function of nothing but prefetches has no effect GCC must keep, and where it was not
   inlined (the tiles over pre, the 512-bit tiles) its calls were dropped whole, so those tiles read
   nothing ahead (8- and 16-row steps took 1.2-1.4x their time, 2026-12-02) */
static inline __attribute__((always_inline)) void read_ahead(const uint8_t *bp, int bytes, const char *end) {
    for (int off = 0; off < bytes; off += 64) {
        const char *at = (const char *)bp + READ_AHEAD + off;
        const char *far = (const char *)bp + READ_FAR + off;
        _mm_prefetch(at < end ? at : end, _MM_HINT_T0);
        _mm_prefetch(far < end ? far : end, _MM_HINT_T2);
    }
}

/* Block blk's head in pre: after the panel's decoded codes (per_blk ymm a block), dot_group
   rebuilds a compact head once per panel for all its row tiles, as it decodes the codes once */
static inline float *pre_head(const __m256i *pre, int bits, int nb, int per_blk, int blk) {
    return (float *)(pre + (int64_t)nb * per_blk) + blk * HEAD_N(bits) * PW;
}

/* 16 columns x inputs (2kk, 2kk+1) as int16 pairs: w[0] columns 0-7, w[1] columns 8-15; the codes
   start at head (CODE_HEAD: Q8_0's, or layout 7's after its three fp32 arrays) */
static inline void pairs_q8(const uint8_t *bp, int head, int kk, __m256i *w) {
    const __m128i *c = (const __m128i *)(bp + head) + 2 * kk;
    const __m128i a = _mm_loadu_si128(c), b = _mm_loadu_si128(c + 1);
    w[0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
    w[1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b));
}

/* The same of table codes (layouts 10, 11: nibbles, low the even input), each index looked up in
   lut (table_lut, unbiased) */
static inline void pairs_table(const uint8_t *bp, int head, __m256i lut, int kk, __m256i *w) {
    const __m128i both = _mm_loadu_si128((const __m128i *)(bp + head) + kk), low = _mm_set1_epi8(0x0f);
    const __m128i t = _mm256_castsi256_si128(lut);
    const __m128i a = _mm_shuffle_epi8(t, _mm_and_si128(both, low));
    const __m128i b = _mm_shuffle_epi8(t, _mm_and_si128(_mm_srli_epi16(both, 4), low));
    w[0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
    w[1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b));
}

/* Rows per tile. Up to ONE rows take one tile that decodes its codes itself (up to OWN_TILES x
   ONE rows, such tiles of up to ONE rows each); more rows take tiles of up to MR rows over the
   panel's codes decoded once (pre): decoding in every tile repeats the same work per tile, and a
   tile whose sums outgrow the 16 ymm registers spills.
   The Q8_0 head, 1 thread: 64 rows in tiles of 8 decoding their own codes 41.5 ms, in tiles of 4
   over pre 32.7; but 8 rows in one tile 4.7, in two over pre 6.6. Q4_1 cared little (4 to 8). */
#ifndef ONE_Q4
#ifdef __AVX512F__   /* 32 vector registers: 8 rows' sums fit (7-8 rows 1.3-1.5x faster than 2 tiles over pre) */
#define ONE_Q4 8
#else
#define ONE_Q4 6
#endif
#endif
#ifndef MR_Q4
#define MR_Q4 6
#endif
#ifndef ONE_Q8
#define ONE_Q8 8
#endif
#ifndef MR_Q8
#define MR_Q8 4
#endif
#ifndef MR_B
#define MR_B 6
#endif
_Static_assert(ONE_Q4 <= 8 && MR_Q4 <= 8 && ONE_Q8 <= 8 && MR_Q8 <= 8, "tiles of 1 to 8 rows");
/* OWN_TILES: decoding a panel into pre and reading it back costs more than decoding it again in
   two or three tiles of their own. Without VNNI on AMD Zen 2 (2026-12-02,
   builds alternated in one process, forward passes at 512 tokens of context, same outputs), 3
   against 1: 8 rows 1.22x / 1.44x / 1.08x as fast on Qwen2.5-1.5B's widths, Gemma-3-1B's and
   SmolLM2-135M Q4_1, 16 rows 1.07x / 1.17x / 1.04x, prefill unchanged. The avx-vnni build (16
   registers) takes 2: on the AMX Xeon (2026-12-03, the same way, 800 tokens of context) 7-8
   rows 0.89-0.93x the time against 1 on SmolLM2-135M Q4_K_M and Qwen2.5-1.5B's widths, 12 rows
   0.98x, 1 row unchanged; 3 gave no more at 12 rows and 1.04x at 16. With VNNI, bytes codes past
   ONE_Q8 rows take tiles over pre only (TILES_BYTES). The avx512-vnni and amx builds (32
   registers, tiles of 8 rows) take 2 as well: on the same Xeon (2026-12-04, builds in turn in one
   process, 300 tokens of context) 10-16 rows ran 1.07-1.14x as fast as with 1 on Qwen2.5-1.5B's,
   Llama-3.2-3B's and Gemma-3-1B's widths and SmolLM2-135M Q4_K_M (1-8 rows the same code, 20 rows
   1.00-1.02x); 3 gave nothing at 20-28 rows (0.97-1.01x). (AMD's 512-bit tiles, wide.c, take
   their calls of 6 rows or more before these.) */
#ifndef OWN_TILES
#if defined(HEXA_VNNI)
#define OWN_TILES 2
#else
#define OWN_TILES 3
#endif
#endif

/* panel p's codes decoded once for all the row tiles (pre): per block per_blk ymm (int16 pairs
   of 8-bit codes, else quads of bytes), then the blocks' compact heads rebuilt (pre_head).
   Inlined into each caller: called out of line from dot_group and amx.h, it took 40% of an
   8-row Qwen3-shaped pass where inlined it took 25% (perf), the whole pass 1.1x the time */
static inline __attribute__((always_inline)) void decode_panel(const struct dot_job *a, int p, __m256i *pre) {
    const int q8 = a->pairs, byte = BYTE_CODES(a->bits), nb = a->K / QB, table = TABLE_CODES(a->bits);
    const int bytes = BLOCK_BYTES(a->bits), per_blk = q8 ? QB : QB / 2;
    const __m256i lut = table_lut(a->bits, q8 ? 0 : 0x80);   /* table codes: as pairs, or biased quads */
    const char *end = item_end(a, p);
    for (int blk = 0; blk < nb; blk++) {
        const uint8_t *bp = block_at(a->packed, a->bits, nb, p, blk);
        read_ahead(bp, bytes, end);
        for (int q = 0; q < per_blk / 2; q++) {
            if (q8 && table) pairs_table(bp, CODE_HEAD(a->bits), lut, q, pre + (blk * per_blk / 2 + q) * 2);
            else if (q8) pairs_q8(bp, CODE_HEAD(a->bits), q, pre + (blk * per_blk / 2 + q) * 2);
            else if (table) quads_table(bp + CODE_HEAD(a->bits), lut, q, pre + (blk * per_blk / 2 + q) * 2);
            else if (byte) quads_bytes(bp + CODE_HEAD(a->bits), q, pre + (blk * per_blk / 2 + q) * 2);
            else quads_codes(bp + CODE_HEAD(a->bits), PLANES(a->bits), q, pre + (blk * per_blk / 2 + q) * 2);
        }
        if (HEAD_OF(a->bits))   /* a compact head: always rebuilt into its place */
            block_head(a->packed, a->bits, nb, p, blk, pre_head(pre, a->bits, nb, per_blk, blk));
    }
}

/* bytes of one panel's pre (decode_panel), rounded up for aligned_alloc's 64 */
static inline size_t pre_bytes(const struct dot_job *a) {
    const int nb = a->K / QB, per_blk = a->pairs ? QB : QB / 2;   /* decoded ymm per block */
    const size_t heads = HEAD_OF(a->bits) ? sizeof(float) * HEAD_N(a->bits) * PW * (size_t)nb : 0;   /* pre_head */
    return (sizeof(__m256i) * (size_t)nb * per_blk + heads + 63) / 64 * 64;
}

/* rows of the next tile when `left` rows remain for `tiles` tiles: the rows split evenly over the
   fewest tiles (dot_group's, wide.c's) */
static inline int tile_rows(int left, int tiles) { return left / tiles + (left % tiles != 0); }

/* 512-bit tiles (wide.c): the avx-vnni and avx512-vnni builds, on where the engine turns them on
   (hexa_wide) */
#if (defined(__AVX512VNNI__) || defined(__AVXVNNI__)) && !defined(HEXA_AMX)
#define HEXA_WIDE
__attribute__((visibility("hidden"))) extern int wide_on;
__attribute__((visibility("hidden"))) void wide_dot(const struct dot_job *a, int threads);
/* fewest rows of a one-tile call on the 512-bit tiles: at 2-4 rows a row's 8 chained vpdpbusd a block
   wait on each other where the ymm tiles split them (SPLIT), 0.74-1.01x their speed; 6-8 rows
   1.02-1.14x (Q4_K, Q6_K weights, 2026-12-01). wide.c compiles one-tile calls of 6-8 rows only. */
#define WIDE_ONE 6
#endif

#endif
