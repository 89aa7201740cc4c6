/* The codes the exact kernels read (x86/quant_gemm.c, arm64/quant_gemm.c), a block at a time as
   [32 inputs][16 columns] bytes into u: the planes' and layout 3's u = q + CODE_OFFSET, table codes'
   int8 values q (layout 8 and 7's bytes); NULL where the block's own bytes are read as they lie
   (layouts 4, 7, 8). Included at the end of each ISA's codes.h, after its block_codes and
   table_block (a block's indices looked up in place). */
#ifndef HEXA_CODE_BYTES_H
#define HEXA_CODE_BYTES_H

static inline const uint8_t *block_bytes(const uint8_t *cp, int bits, uint8_t *u) {
    if (OFFSET_CODES(bits)) {
        block_codes(cp, PLANES(bits), u);
        return u;
    }
    if (!TABLE_CODES(bits)) return NULL;
    block_codes(cp, 0, u);
    table_block(u, bits);
    return u;
}

#endif
