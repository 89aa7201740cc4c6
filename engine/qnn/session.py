"""onnxruntime sessions on QNN's HTP backend, with compiled graphs cached as QNN context binaries.

Compiling a graph for the HTP (weights converted to fp16, ops lowered and scheduled) takes seconds
per block; the result is saved as an "EP context" model (the QNN context binary embedded in a small
ONNX file), and later starts load that instead. That load is the real, measurable "graph load"
cost the progressive scheduler reasons about. On x86-64 Linux the HTP library in the
``onnxruntime-qnn`` wheel is Qualcomm's emulator; on a Snapdragon device the same code runs on the NPU.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from ..errors import EngineError

DEFAULT_SOC = "57"       # QNN's id for Snapdragon 8 Gen 3 (SM8650); HEXA_QNN_SOC overrides
DEFAULT_HTP_ARCH = "75"  # its Hexagon architecture (v75); HEXA_QNN_ARCH overrides
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


def provider_options() -> dict[str, str]:
    return {"backend_type": "htp", "enable_htp_fp16_precision": "1",
            "soc_model": os.environ.get("HEXA_QNN_SOC", DEFAULT_SOC),
            "htp_arch": os.environ.get("HEXA_QNN_ARCH", DEFAULT_HTP_ARCH),
            "htp_performance_mode": "burst"}


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


def _options(ort, devices, dump_to: Path | None):
    so = ort.SessionOptions()
    # onnxruntime's own fusions (MatMul+Add -> Gemm) produce ops the QNN EP rejects; QNN optimizes itself
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")   # all on the HTP, or fail
    so.log_severity_level = 3
    if dump_to is not None:
        so.add_session_config_entry("ep.context_enable", "1")
        so.add_session_config_entry("ep.context_file_path", str(dump_to))
        so.add_session_config_entry("ep.context_embed_mode", "1")
    so.add_provider_for_devices(devices, provider_options())
    return so


class GraphSession:
    """One compiled static-shape graph, loaded on the HTP."""

    def __init__(self, session, path: Path, load_ms: float, compiled: bool):
        self.session = session
        self.path = path
        self.load_ms = load_ms       # time to create the session from the cached context binary
        self.compiled = compiled     # True when this load had to compile it first

    def run(self, feed: dict):
        return self.session.run(None, feed)


def load_graph(ctx_path: Path, build) -> GraphSession:
    """Load the context binary at ``ctx_path``; if absent, ``build(onnx_path)`` writes the float
    graph, which is compiled for the HTP and saved there (temporary name, then rename)."""
    ort, devices = _qnn_devices()
    compiled = False
    if not ctx_path.is_file():
        ctx_path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=ctx_path.parent, prefix=".build-") as tmp:
            src = Path(tmp) / "graph.onnx"
            build(src)
            out = Path(tmp) / "graph_ctx.onnx"
            try:
                with _first_load_quiet():
                    ort.InferenceSession(str(src), _options(ort, devices, out))
            except Exception as exc:
                raise EngineError(f"QNN could not compile {ctx_path.name}: {str(exc).splitlines()[0]}") from None
            if not out.is_file():
                raise EngineError(f"QNN compiled {ctx_path.name} but wrote no context binary")
            os.replace(out, ctx_path)
        compiled = True
    t0 = time.perf_counter()
    try:
        with _first_load_quiet():
            session = ort.InferenceSession(str(ctx_path), _options(ort, devices, None))
    except Exception as exc:    # a damaged cache file: drop it so the next start recompiles
        ctx_path.unlink(missing_ok=True)
        raise EngineError(f"cannot load QNN graph {ctx_path.name} ({str(exc).splitlines()[0]}); "
                          "it was removed and will be rebuilt on the next start") from None
    return GraphSession(session, ctx_path, (time.perf_counter() - t0) * 1000, compiled)
