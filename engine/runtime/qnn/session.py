"""onnxruntime sessions on QNN's HTP backend, with compiled graphs cached as QNN context binaries.

Compiling a graph for the HTP (weights converted to fp16, ops lowered and scheduled) takes seconds
per block; the result is saved as an "EP context" model (the QNN context binary embedded in a small
ONNX file), and later starts load that instead. That load is the real, measurable "graph load"
cost the progressive scheduler reasons about. On x86-64 Linux the HTP library in the
``onnxruntime-qnn`` wheel is Qualcomm's emulator; on a Snapdragon device the same code runs on the NPU.

For a real device the S graphs of a block are compiled into one weight-shared context binary
(``compile_shared``, see shared.py): each graph's EP context file then points at that ``.bin``.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import EngineError
from .shared import Soc, real_npu, resolve_soc

_registered = False
_htp_started = False


@contextlib.contextmanager
def _first_load_quiet():
    """The HTP library prints a banner on file descriptor 1 when the first session loads it; that
    is `hexa ask`'s answer stream, and the TUI's terminal. Point fd 1 at /dev/null for that one
    call (engine loading, before anything of ours is printed to stdout)."""
    global _htp_started
    if _htp_started:
        yield
        return
    _htp_started = True
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):    # no usable fd 1 (embedded use): let it print
        yield
        return
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def provider_options(soc: Soc | None = None) -> dict[str, str]:
    """QNN derives the Hexagon architecture from ``soc_model`` (a mismatched ``htp_arch`` is
    overridden); ours are given together, from the checked table in shared.py."""
    soc = soc or resolve_soc(None)
    return {"backend_type": "htp", "enable_htp_fp16_precision": "1", "soc_model": soc.id,
            "htp_arch": soc.arch, "htp_performance_mode": "burst"}


def _qnn_devices():
    global _registered
    try:
        import onnxruntime as ort
        import onnxruntime_qnn as qnn
    except ImportError as exc:
        raise EngineError(f"the qnn backend needs the onnxruntime-qnn package ({exc.name} is missing)") from None
    if not _registered:
        try:
            ort.register_execution_provider_library(qnn.get_ep_name(), qnn.get_library_path())
        except Exception as exc:  # already registered by doctor in this process, or a broken plugin
            if "already" not in str(exc).lower():
                raise EngineError(f"the QNN execution provider failed to load: {exc}") from None
        _registered = True
    devices = [d for d in ort.get_ep_devices() if d.ep_name == qnn.get_ep_name()]
    if not devices:
        raise EngineError("the QNN execution provider reports no device")
    return ort, devices


def backend_version() -> str:
    import onnxruntime_qnn as qnn

    return f"onnxruntime-qnn {qnn.__version__}"


def _options(ort, devices, soc: Soc, dump_to: Path | None = None, share: bool = False):
    """``dump_to``: compile and write the EP context file there (the binary embedded in it, or
    with ``share`` beside it, shared with the other graphs compiled until ``stop_share``);
    ``share`` without ``dump_to``: load a graph of a weight-shared binary."""
    so = ort.SessionOptions()
    # onnxruntime's own fusions (MatMul+Add -> Gemm) produce ops the QNN EP rejects; QNN optimizes itself
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")   # all on the HTP, or fail
    so.log_severity_level = 3
    if dump_to is not None:
        so.add_session_config_entry("ep.context_enable", "1")
        so.add_session_config_entry("ep.context_file_path", str(dump_to))
        # a shared binary cannot be embedded: every graph's context file names the one .bin
        so.add_session_config_entry("ep.context_embed_mode", "0" if share else "1")
    if share:
        # sessions in one process reuse the QNN context (all graphs, one copy of the weights)
        so.add_session_config_entry("ep.share_ep_contexts", "1")
    so.add_provider_for_devices(devices, provider_options(soc))
    return so


@dataclass(frozen=True)
class GraphSource:
    """How ``load_graph`` (re)builds a graph: ``write(path)`` saves its float ONNX graph, compiled
    for ``soc``. ``rebuild_block`` (weight-shared layout): recompile the whole block's binary."""
    write: Callable[[Path], None]
    soc: Soc
    rebuild_block: Callable[[], None] | None = None

    def __call__(self, path: Path) -> None:
        self.write(path)

    @property
    def shared(self) -> bool:
        return self.rebuild_block is not None


class GraphSession:
    """One compiled static-shape graph, loaded on the HTP."""

    def __init__(self, session, path: Path, load_ms: float, compiled: bool):
        self.session = session
        self.path = path
        self.load_ms = load_ms       # time to create the session from the cached context binary
        self.compiled = compiled     # True when this load had to compile it first

    def run(self, feed: dict):
        return self.session.run(None, feed)


def compile_graph(ctx_path: Path, write: Callable[[Path], None], soc: Soc) -> None:
    """``write(onnx_path)`` writes the float graph; it is compiled for the HTP and saved at
    ``ctx_path`` with its context binary embedded (temporary name, then rename)."""
    ort, devices = _qnn_devices()
    ctx_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ctx_path.parent, prefix=".build-") as tmp:
        src = Path(tmp) / "graph.onnx"
        write(src)
        out = Path(tmp) / "graph_ctx.onnx"
        try:
            with _first_load_quiet():
                ort.InferenceSession(str(src), _options(ort, devices, soc, out))
        except Exception as exc:
            raise EngineError(f"QNN could not compile {ctx_path.name}: {str(exc).splitlines()[0]}") from None
        if not out.is_file():
            raise EngineError(f"QNN compiled {ctx_path.name} but wrote no context binary")
        os.replace(out, ctx_path)


def compile_shared(graphs: list[tuple[Path, Callable[[Path], None]]], bin_path: Path, soc: Soc) -> Path:
    """Compile ``graphs`` ((EP context path, writer of its float graph), ...) into ONE context
    binary at ``bin_path`` whose graphs share one copy of their common weights. Each context path
    becomes a small ONNX file whose EPContext node names that binary. Written in a temporary
    folder, then renamed: the binary first, so a context file never points at a missing binary.
    Loading the result needs a Snapdragon NPU (Qualcomm's x86-64 emulator crashes on it).
    A failure midway leaves the provider's sharing open for this process: a retry in it finds no
    binary of its own and says so; a new process starts clean."""
    import onnx

    ort, devices = _qnn_devices()
    bin_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=bin_path.parent, prefix=".build-") as tmp:
        outs = []
        for i, (ctx_path, write) in enumerate(graphs):
            # one file name per graph: QNN names each graph in the binary after its source model
            src = Path(tmp) / f"graph{i}.onnx"
            write(src)
            out = Path(tmp) / f"graph{i}_ctx.onnx"
            so = _options(ort, devices, soc, out, share=True)
            if i == len(graphs) - 1:      # the last graph: write the binary, stop sharing
                so.add_session_config_entry("ep.stop_share_ep_contexts", "1")
            try:
                with _first_load_quiet():
                    ort.InferenceSession(str(src), so)
            except Exception as exc:
                raise EngineError(f"QNN could not compile {ctx_path.name} for {bin_path.name}: "
                                  f"{str(exc).splitlines()[0]}") from None
            outs.append(out)
        bins = sorted(p.name for p in Path(tmp).glob("*.bin"))
        if len(bins) != 1:
            raise EngineError(f"QNN wrote {len(bins)} context binaries for {bin_path.name}, not one shared")
        for out in outs:
            model = onnx.load(str(out))
            nodes = [n for n in model.graph.node if n.op_type == "EPContext"]
            names = [a.s for n in nodes for a in n.attribute if a.name == "ep_cache_context"]
            if not nodes or names != [bins[0].encode()] * len(nodes):
                raise EngineError(f"QNN's context file for {bin_path.name} does not point at the shared binary")
            for n in nodes:       # the binary is renamed: point at its final name
                next(a for a in n.attribute if a.name == "ep_cache_context").s = bin_path.name.encode()
            onnx.save(model, str(out))
        os.replace(Path(tmp) / bins[0], bin_path)
        for out, (ctx_path, _) in zip(outs, graphs):
            os.replace(out, ctx_path)
    return bin_path


def load_graph(ctx_path: Path, build) -> GraphSession:
    """Load the compiled graph at ``ctx_path``, compiling it first if absent. ``build`` is a
    ``GraphSource``, or a plain writer of the float graph (the default SoC, embedded binary)."""
    source = build if isinstance(build, GraphSource) else GraphSource(build, resolve_soc(None))
    if source.shared and not real_npu():      # the emulator segfaults on them: never try
        raise EngineError("weight-shared QNN context binaries only load on a Snapdragon NPU, not on the "
                          "x86-64 emulator")
    ort, devices = _qnn_devices()
    compiled = False
    if not ctx_path.is_file():
        if source.shared:
            source.rebuild_block()
        else:
            compile_graph(ctx_path, source.write, source.soc)
        compiled = True
    t0 = time.perf_counter()
    try:
        with _first_load_quiet():
            session = ort.InferenceSession(str(ctx_path), _options(ort, devices, source.soc,
                                                                   share=source.shared))
    except Exception as exc:    # a damaged cache file: drop it so the next start recompiles
        ctx_path.unlink(missing_ok=True)
        raise EngineError(f"cannot load QNN graph {ctx_path.name} ({str(exc).splitlines()[0]}); "
                          "it was removed and will be rebuilt on the next start") from None
    return GraphSession(session, ctx_path, (time.perf_counter() - t0) * 1000, compiled)
