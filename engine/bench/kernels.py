"""The native kernels' cost by rows, one instruction-set build against another, in one process.

    python -m engine.bench.kernels [--isas auto,avx2] [--types Q4_K,Q6_K,...] [--rows 1,2,4,8,16]
    python -m engine.bench.kernels --isas avx512-vnni:narrow,avx512-vnni:wide ...   # the 256- against the 512-bit tiles
    python -m engine.bench.kernels --model FILE.gguf [--isas ...] [--kv f32,f16] [--past N]   # a verification's cost curve
    python -m engine.bench.kernels --prompt --rows 64,256 --roof ...   # prompt rows, and the share of the CPU's int8 roof

Without ``--model``: one weight at a time (``hexa_linear_dot``, the decoding arithmetic) on random
GGUF blocks of each type, packed as the engine packs them, at a cache-resident shape and at one
streamed from memory (``--prompt``: the prompt rows' arithmetic, ``hexa_linear_prefill``, which may
differ between builds: their outputs are not compared). Each call's GMAC/s is printed, and with
``--roof`` its share of what the CPU's int8 dot-product instruction issues when it does nothing
else (``roof.c``, each VNNI build's own instruction; the bound a tile's loads, decoding and float
steps are measured against). With ``--model``: the cost of a verification, the model's forward + logits
of S rows over a ``--past``-token context (the draft-tree sizer's cost curve), with each build's
kernels and each KV cache type.

Every build is loaded into this process and the builds are timed in turn, call after call (the
machines these run on are shared: what matters is the ratio within one run), with a pause between
calls so one build's pool workers have stopped spinning before the other's run. Each row count's
outputs must be identical across builds (they form the same integers), or the run stops.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..options import EngineOptions
from ..runtime.kernels import PackedWeight, host_isa, native_kernel

TYPES = ("Q4_K", "Q6_K", "Q5_0", "Q4_1", "Q8_0")
SHAPES = ((8960, 1536), (65536, 1536))      # cache-resident (Qwen2.5-1.5B's ffn x hidden); streamed
ROWS = (1, 2, 4, 8, 16)
PAUSE = 0.002                                # s between calls: pool.c's workers spin 200 us by default


# the types the gguf package cannot quantize: (inputs a block, its bytes, where its fp16 scales are)
RAW_BLOCKS = {"Q4_K": (256, 144, slice(0, 4)), "Q5_K": (256, 176, slice(0, 4)), "Q6_K": (256, 210, slice(208, 210)),
              "Q3_K": (256, 110, slice(108, 110)), "IQ4_XS": (256, 136, slice(0, 2)), "IQ4_NL": (32, 18, slice(0, 2)),
              "IQ3_S": (256, 110, slice(0, 2)), "IQ3_XXS": (256, 98, slice(0, 2)), "IQ2_XXS": (256, 66, slice(0, 2)),
              "IQ2_XS": (256, 74, slice(0, 2)), "IQ2_S": (256, 82, slice(0, 2)), "IQ1_S": (256, 50, slice(0, 2)),
              "IQ1_M": (256, 56, slice(48, 50)), "Q2_K": (256, 84, slice(80, 84))}   # IQ1_M's d: the top nibbles of its 4 scale words (below)


def random_blocks(kind: str, rows: int, K: int, seed: int = 0) -> np.ndarray:
    """A tensor's raw GGUF blocks: quantized by the gguf package where it can, else random bytes
    with finite, positive fp16 scales."""
    from gguf import GGMLQuantizationType, quants

    rng = np.random.default_rng(seed)
    if kind not in RAW_BLOCKS:
        return quants.quantize(rng.standard_normal((rows, K)).astype(np.float32) * 0.05,
                               getattr(GGMLQuantizationType, kind))
    per, size, at = RAW_BLOCKS[kind]
    raw = rng.integers(0, 256, (rows, K // per, size), dtype=np.uint8)
    scales = rng.uniform(1e-4, 2e-3, (rows, K // per, (at.stop - at.start) // 2)).astype(np.float16)
    raw[..., at] = scales.view(np.uint8).reshape(rows, K // per, -1)
    if kind == "IQ1_M":   # the fp16 d, its 4 nibbles at the top of the scale words 0..3
        words = np.ascontiguousarray(raw[..., 48:56]).view(np.uint16)
        d = scales.view(np.uint16)                                      # [rows, blocks, 1]
        words = (words & 0x0FFF) | (((d >> np.array([0, 4, 8, 12], np.uint16)) & 15) << 12)
        raw[..., 48:56] = words.astype(np.uint16).view(np.uint8)
    return raw.reshape(rows, -1)


def check_types(p: argparse.ArgumentParser, types: list[str], shapes: list[tuple[int, ...]]) -> None:
    """--types the engine keeps as codes, each with a block that divides every shape's K (a
    one-line usage error otherwise, before anything is built)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    from ..model.gguf_codes import NATIVE

    for kind in types:
        if kind not in NATIVE:
            p.error(f"--types {kind}: not a type the kernels keep as codes ({', '.join(sorted(NATIVE))})")
        block = GGML_QUANT_SIZES[GGMLQuantizationType[kind]][0]
        for shape in shapes:
            if len(shape) != 2 or shape[1] % block:
                p.error(f"--shapes {'x'.join(map(str, shape))}: {kind} needs NxK with K a multiple of {block}")


def packed_weight(kernel, kind: str, N: int, K: int) -> PackedWeight:
    """Random blocks of ``kind`` packed as the engine packs a GGUF tensor (compact heads)."""
    from ..model.gguf_codes import NATIVE, decode, k_factors, pack

    data = random_blocks(kind, N, K)
    codes, bits = pack(NATIVE[kind], *decode(kind, data, N, K), k=k_factors(kind, data, N, K))
    return PackedWeight(None, (N, K), (codes, bits), kernel)


def interleaved(calls: dict[str, callable], reps: int) -> dict[str, float]:
    """Median ms of each call, the calls taken in turn ``reps`` times (after one warm-up each)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for rep in range(reps + 1):
        for name, call in calls.items():
            time.sleep(PAUSE)
            t0 = time.perf_counter()
            call()
            if rep:
                times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def tiles_of(spec: str) -> tuple[str, str]:
    """"avx512-vnni:narrow" -> ("avx512-vnni", "narrow"): a build, and the tiles its calls of many
    rows take ("wide": 512-bit, x86/wide.c; "narrow": 256-bit; "": as the engine would choose)."""
    isa, _, tiles = spec.partition(":")
    if tiles not in ("", "wide", "narrow"):
        raise SystemExit(f"kernels bench: {spec}: the tiles are wide or narrow")
    return isa, tiles


def set_tiles(kernel, tiles: str) -> None:
    """Before each call: one build loaded twice is one library, so its tiles are set call by call."""
    if not kernel.fn["hexa_wide"](int(tiles == "wide" if tiles else kernel.wide)) and tiles == "wide":
        raise SystemExit(f"kernels bench: the {kernel.isa} build has no 512-bit tiles")


def builds(isas: list[str], cache: Path, threads: int) -> dict[str, tuple[object, str]]:
    out = {}
    for spec in isas:
        isa, tiles = tiles_of(spec)
        kernel, why = native_kernel(cache, threads, options=EngineOptions(isa=isa))
        if kernel is None:
            raise SystemExit(f"kernels bench: no {isa} kernels here: {why}")
        out[f"{kernel.isa}:{tiles}" if tiles else kernel.isa] = (kernel, tiles)
    return out


def roof(isa: str, cache: Path, threads: int) -> float | None:
    """The int8 dot-product instruction roof of ``isa``'s build on this CPU in GMAC/s (``roof.c``),
    or None where it is not measured: AVX2 (no one instruction for it) and ARM64 builds."""
    import ctypes

    from ..runtime.kernels import FLAGS, ISA_FLAGS, ISA_FOLDER, _compiler
    from ..runtime.kernels.compile import compile_c

    cc = _compiler(None)
    if ISA_FOLDER.get(isa) != "x86" or not cc:
        return None
    out = cache / f"roof-{isa}.so"
    failed = compile_c(cc, [*FLAGS, *ISA_FLAGS[isa]], [Path(__file__).with_name("roof.c")], out)
    if failed:
        raise SystemExit(f"kernels bench: the roof of {isa}: {failed[0]}")
    fn = ctypes.CDLL(str(out)).hexa_roof_gmacs
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_int, ctypes.c_int64]
    best = max(fn(threads, 20_000_000) for _ in range(3))   # ~0.1-0.3 s each; the host's best moment
    return best if best > 0 else None


def weight_table(kernels: dict, types: list[str], shapes, rows: list[int], reps: int,
                 prompt: bool = False) -> list[dict]:
    results = []
    for N, K in shapes:
        for kind in types:
            weights = {name: packed_weight(k, kind, N, K) for name, (k, _) in kernels.items()}
            for m in rows:
                x = np.random.default_rng(m).standard_normal((m, K), dtype=np.float32)

                def call(name):
                    kernel, tiles = kernels[name]
                    set_tiles(kernel, tiles)
                    return kernel.linear(x, weights[name], exact=False, prompt=prompt)
                outs = {name: call(name) for name in weights}
                first = next(iter(outs.values()))
                if not prompt and not all(np.array_equal(first, o) for o in outs.values()):
                    raise SystemExit(f"kernels bench: {kind} {N}x{K} at {m} rows differs between builds")
                ms = interleaved({name: (lambda name=name: call(name)) for name in weights}, reps)
                results.append(dict(weight=f"{kind} {N}x{K}{' prompt' if prompt else ''}", rows=m, ms=ms,
                                    gmacs={n: m * N * K / t / 1e6 for n, t in ms.items()}))
    return results


def model_table(model_path: str, isas: list[str], cache: Path, threads: int, rows: list[int], reps: int,
                past: int = 512, kvs: tuple[str, ...] = ("auto",)) -> list[dict]:
    from ..engine import Engine

    engines, tiles_for = {}, {}
    for spec in isas:
        isa, tiles = tiles_of(spec)
        for kv in kvs:
            e = Engine.load(model_path, cache, threads=threads, options=EngineOptions(isa=isa, kv=kv))
            got = getattr(e.model, "kernel", "")
            if not got.startswith(isa if isa != "auto" else ""):
                raise SystemExit(f"kernels bench: the {isa} engine runs {got!r}")
            name = f"{got.split()[0]}{':' + tiles if tiles else ''} {np.dtype(e.model.kv_dtype).name}"
            engines[name], tiles_for[name] = e.model, tiles
    results = []
    g = np.random.default_rng(0)
    caches = {}
    for name, model in engines.items():
        cache_ = model.new_cache(past + max(rows) + 1)
        cache_.k[...] = np.random.default_rng(1).standard_normal(cache_.k.shape, dtype=np.float32)
        cache_.v[...] = np.random.default_rng(1).standard_normal(cache_.v.shape, dtype=np.float32)
        cache_.length = past
        caches[name] = cache_
    for m in rows:
        toks = g.integers(0, 1000, m, dtype=np.int64)
        pos = np.arange(past, past + m, dtype=np.int64)
        mask = np.tri(m, past + m, past, dtype=bool) if m > 1 else None

        def call(model, c, tiles):
            set_tiles(model._packer, tiles)
            return model.logits(model.forward(toks, pos, c, mask))
        outs = {n: call(model, caches[n], tiles_for[n]) for n, model in engines.items()}
        for kv in {n.split()[1] for n in outs}:    # the same cache type: the same bits on every build
            same = [o for n, o in outs.items() if n.split()[1] == kv]
            if not all(np.array_equal(same[0], o) for o in same):
                raise SystemExit(f"kernels bench: the logits of {m} rows differ between builds")
        ms = interleaved({n: (lambda model=model, c=caches[n], t=tiles_for[n]: call(model, c, t))
                          for n, model in engines.items()}, reps)
        results.append(dict(weight=f"{Path(model_path).name} forward+logits @{past}", rows=m, ms=ms))
    return results


def print_table(results: list[dict], roofs: dict[str, float | None] | None = None) -> None:
    """One line a weight and row count: each build's ms, speedups over the first, the first's ms
    over its 1-row ms; for single weights each build's GMAC/s, and with ``roofs`` (a build's int8
    roof in GMAC/s, None where not measured) the share of it."""
    isas = list(results[0]["ms"])
    base = isas[0]
    rates = "gmacs" in results[0]
    print(f"{'what':40} {'rows':>4} " + " ".join(f"{isa + ' ms':>16}" for isa in isas)
          + "".join(f"  {isa + ' speedup':>20}" for isa in isas[1:]) + "   ms vs 1 row (" + base + ")"
          + ("".join(f"  {isa + ' GMAC/s':>22}" for isa in isas) if rates else ""))
    one: dict[str, float] = {}
    for r in results:
        if r["rows"] == min(x["rows"] for x in results if x["weight"] == r["weight"]):
            one[r["weight"]] = r["ms"][base]
        print(f"{r['weight']:40} {r['rows']:>4} " + " ".join(f"{r['ms'][i]:16.3f}" for i in isas)
              + "".join(f"  {r['ms'][base] / r['ms'][i]:19.2f}x" for i in isas[1:])
              + f"   {r['ms'][base] / one[r['weight']]:.2f}x"
              + ("".join(f"  {_rate(r['gmacs'][i], (roofs or {}).get(i)):>22}" for i in isas) if rates else ""))
    for isa, top in (roofs or {}).items():
        print(f"{isa}: the int8 dot-product roof " + (f"{top:.0f} GMAC/s" if top else "not measured for this build")
              + " with these threads")


def _rate(gmacs: float, top: float | None) -> str:
    return f"{gmacs:.0f}" + (f" ({100 * gmacs / top:.0f}% of roof)" if top else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.bench.kernels", description=__doc__.split("\n\n")[0])
    p.add_argument("--isas", default=None, metavar="ISA,...",
                   help="builds to compare (default: avx2 and the best this CPU runs, if another)")
    p.add_argument("--types", default=",".join(TYPES), metavar="TYPE,...")
    p.add_argument("--shapes", default=",".join(f"{n}x{k}" for n, k in SHAPES), metavar="NxK,...")
    p.add_argument("--rows", default=",".join(map(str, ROWS)), metavar="N,...")
    p.add_argument("--prompt", action="store_true",
                   help="single weights: time the prompt rows' arithmetic (hexa_linear_prefill) instead of decoding's")
    p.add_argument("--roof", action="store_true",
                   help="single weights: also each build's share of this CPU's int8 dot-product instruction roof")
    p.add_argument("--model", default=None, metavar="FILE", help="a verification's cost curve on this model")
    p.add_argument("--kv", default="auto", metavar="KV,...", help="with --model: KV cache types to compare (f32, f16)")
    p.add_argument("--past", type=int, default=512, metavar="N", help="with --model: tokens of context")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", type=Path, default=None, metavar="FILE")
    p.add_argument("--cache", type=Path, default=None, metavar="DIR",
                   help="where the builds are compiled and kept (default: a temporary folder)")
    a = p.parse_args(argv)
    if a.model and (a.prompt or a.roof):
        p.error("--prompt and --roof time single weights: leave out --model")
    best, why = host_isa()
    if best is None:
        print(f"kernels bench: no native kernels here: {why}", file=sys.stderr)
        return 2
    isas = a.isas.split(",") if a.isas else list(dict.fromkeys(["avx2" if best != "neon" else "neon", best]))
    try:
        rows = [int(r) for r in a.rows.split(",")]
        shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    except ValueError:
        p.error(f"--rows {a.rows} / --shapes {a.shapes}: expected numbers (1,4,8) and NxK shapes (2048x2048)")
    types = [t.upper() for t in a.types.split(",")]
    check_types(p, types, shapes)
    roofs = None
    with tempfile.TemporaryDirectory() as tmp:
        cache = a.cache or Path(tmp)
        if a.model:
            results = model_table(a.model, isas, cache, a.threads, rows, a.reps, a.past, tuple(a.kv.split(",")))
        else:
            kernels = builds(isas, cache, a.threads)
            results = weight_table(kernels, types, shapes, rows, a.reps, a.prompt)
            if a.roof:
                each = {k.isa: roof(k.isa, cache, a.threads) for k, _ in kernels.values()}
                roofs = {name: each[kernel.isa] for name, (kernel, _) in kernels.items()}
    print_table(results, roofs)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
