#!/bin/sh
# CMAKE_ARGS for llama-cpp-python built from source (Makefile): this CPU's SIMD named explicitly,
# GGML_NATIVE off (on CPUs with AMX a native build crashed with SIGSEGV in the first decode, in the
# AMX int8 path), AMX off. On ARM64 llama.cpp's defaults are used.
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { case " $flags " in *" $1 "*) echo ON ;; *) echo OFF ;; esac; }
if [ -z "$flags" ]; then
  echo "-DGGML_NATIVE=OFF"
  exit 0
fi
echo "-DGGML_NATIVE=OFF -DGGML_AVX=$(has avx) -DGGML_AVX2=$(has avx2) -DGGML_FMA=$(has fma) -DGGML_F16C=$(has f16c)" \
     "-DGGML_AVX512=$(has avx512f) -DGGML_AVX512_VNNI=$(has avx512_vnni) -DGGML_AVX512_VBMI=$(has avx512vbmi)" \
     "-DGGML_AVX512_BF16=$(has avx512_bf16) -DGGML_AVX_VNNI=$(has avx_vnni)" \
     "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
