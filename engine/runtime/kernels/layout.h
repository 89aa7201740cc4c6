/* The packed weights' layout, shared by every ISA's kernels: panels of output columns, and the
   codes' bytes per panel and block (x86/quant_gemm.c and arm64/quant_gemm.c pack it; the linear and
   dot kernels of both read it). Python never reads these: it asks hexa_quant_block_bytes. */
#ifndef HEXA_LAYOUT_H
#define HEXA_LAYOUT_H

#include "hexa.h"

#define PW HEXA_PANEL   /* panel width: output columns per packed panel */
#define GP 6    /* panels per work item */

/* Per panel and block of 32 inputs: Q4_1 d[16] and m[16] as fp32, then 16 bytes per input pair;
   Q8_0 d[16], then 16 bytes per input. */
#define QB HEXA_QUANT_BLOCK               /* inputs per quantization block */
#define Q4_HEAD (2 * PW * 4)              /* d[16], m[16] */
#define Q4_BYTES (Q4_HEAD + QB / 2 * PW)  /* + 16 bytes per input pair */
#define Q8_HEAD (PW * 4)                  /* d[16] */
#define Q8_BYTES (Q8_HEAD + QB * PW)      /* + 16 bytes per input */
/* 8-bit codes with a second fp32 array, Q8_0's code bytes after Q4_1's head: bits 5 (Q5_1, Q5_K:
   d[16], m[16], codes 0..31: w = d*q + m) and bits 6 (Q6_K: d[16] of inputs 0-15, d[16] of inputs
   16-31, codes -32..31: w = d*q; a Q6_K scale covers 16 inputs) */
#define QM_HEAD Q4_HEAD
#define QM_BYTES (QM_HEAD + QB * PW)
/* bits 7, the union of them all: d[16] of inputs 0-15, d[16] of inputs 16-31, m[16], 8-bit codes:
   w = d*q + m. One fused projection whose parts are of different types (Q4_K_M's Q4_K q and k
   with a Q6_K v) is kept in it, exactly. */
#define Q7_HEAD (3 * PW * 4)
#define Q7_BYTES (Q7_HEAD + QB * PW)
#define BLOCK_BYTES(bits) ((bits) == 4 ? Q4_BYTES : (bits) == 8 ? Q8_BYTES : (bits) == 7 ? Q7_BYTES : QM_BYTES)
#define CODE_HEAD(bits) ((bits) == 8 ? Q8_HEAD : (bits) == 7 ? Q7_HEAD : QM_HEAD)   /* 8-bit codes' start */
#define SPLIT_SCALE(bits) ((bits) == 6 || (bits) == 7)    /* a second scale for inputs 16-31 */
#define MIN_AT(bits) ((bits) == 7 ? 2 * PW : (bits) == 5 ? PW : -1)   /* m's floats into the head, or none */

/* The ISA's fp32 tiles over rows [0, M) x panels [p0, p0+np), pk pointing at panel p0
   (x86/packed_gemm.c, arm64/packed_gemm.c; internal to the library) */
__attribute__((visibility("hidden"))) void hexa_f32_group(const float *x, const float *pk, const float *b,
                                                          const float *res, float *y, int M, int p0, int np,
                                                          int N, int K);

#endif
