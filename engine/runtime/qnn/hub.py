"""Qualcomm AI Hub: the qnn backend's block graphs compiled, linked and profiled on hosted Snapdragons.

``compile_for_device`` exports every (block, S) graph the qnn backend runs, compiles each on AI Hub
for one device and links each block's graphs into ONE context binary whose graphs share one copy
of the block's weights, downloaded into ``<cache>/npu/<device>/<model>-<key>/`` beside ``npu.json``
(the jobs: an interrupted run resumes waiting instead of uploading again). ``profile_device`` times
each graph in a profiling job on the device and stores a ``DeviceCostProfile`` for ``--cost-profile``.
AI Hub's errors become one-line ``EngineError``s. The token and network check before the first call
is the CLI's (``app.cli.npu``): importing this module already costs seconds (onnx, qai_hub).
"""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import onnx

from ...errors import EngineError
from ...files import atomic_write
from .cost_profile import DeviceCostProfile, GraphCost, device_slug, profile_path
from .graphs import GRAPH_VERSION, build_block
from .runtime import BLOCK_LAYERS, DECODE_LENGTHS, PREFILL_LENGTH

Say = Callable[[str], None]

# The graphs are fp32 ONNX; the HTP runs them in fp16, as the emulator does here
# (enable_htp_fp16_precision). No --quantize_io: inputs and outputs stay float32, what the engine feeds.
COMPILE_OPTIONS = "--quantize_full_type float16"
LINK_OPTIONS = ""
MANIFEST = "npu.json"
FORMAT = "hexa-npu-binaries/1"
RETRY = "; after a change, `hexa npu compile --force` submits new jobs"


def one_line(exc: BaseException) -> str:
    """qai_hub's messages come in multi-line text boxes; their words on one line."""
    lines = (ln.strip().strip("|│").strip() for ln in str(exc).splitlines())
    text = " ".join(ln for ln in lines if ln and not set(ln) <= set("┌┐└┘─"))
    return re.sub(r"\s+", " ", text) or exc.__class__.__name__


@contextlib.contextmanager
def hub_errors() -> Iterator[None]:
    """AI Hub's errors (a bad token, a refused job, the service down) as one-line EngineErrors."""
    import qai_hub
    import requests
    from qai_hub.public_rest_api import APIException

    try:
        yield
    except (qai_hub.Error, APIException) as exc:
        raise EngineError(f"Qualcomm AI Hub: {one_line(exc)}") from None
    except requests.exceptions.RequestException as exc:
        raise EngineError(f"Qualcomm AI Hub could not be reached: {one_line(exc)}") from None


def make_client(api_token: str, api_url: str, web_url: str, project: str | None = None):
    """A client on the configuration the CLI checked, quiet: the progress lines are ours."""
    import qai_hub

    return qai_hub.Client(config=qai_hub.ClientConfig(api_token=api_token, api_url=api_url, web_url=web_url,
                                                      verbose=False, default_project=project))


@dataclass(frozen=True)
class NpuDevice:
    name: str
    os: str
    chipset: str              # AI Hub's chipset attribute, e.g. qualcomm-snapdragon-8gen3
    hexagon: str              # the NPU's Hexagon version, e.g. v75
    soc_model: str            # QNN's SoC id, when AI Hub gives it
    weight_sharing: bool      # can hold context binaries whose graphs share weights

    def line(self) -> str:
        soc = f"soc {self.soc_model}" if self.soc_model else "soc ?"
        return (f"{self.name:<34} {self.chipset:<36} hexagon {self.hexagon:<4} {soc:<7} "
                f"weight sharing {'yes' if self.weight_sharing else 'no'}")


def npu_devices(devices) -> list[NpuDevice]:
    """The ``qai_hub.Device``s with a Snapdragon NPU (a qualcomm chipset and a Hexagon version),
    one per name (AI Hub lists a device once per OS version; the last one listed is kept)."""
    found: dict[str, NpuDevice] = {}
    for d in devices:
        attrs = [d.attributes] if isinstance(d.attributes, str) else list(d.attributes)

        def value(prefix: str) -> str:
            return next((a[len(prefix):] for a in attrs if a.startswith(prefix)), "")

        chipset = value("chipset:qualcomm-")
        hexagon = value("hexagon:")
        if not chipset or not re.fullmatch(r"v\d+", hexagon):
            continue
        found[d.name] = NpuDevice(d.name, d.os, "qualcomm-" + chipset, hexagon, value("soc-model:"),
                                  "htp-supports-weight-sharing:true" in attrs)
    return sorted(found.values(), key=lambda n: n.name.lower())


def list_devices(client) -> list[NpuDevice]:
    with hub_errors():
        return npu_devices(client.get_devices())


def find_device(client, name: str) -> NpuDevice:
    """The device called ``name`` (exactly, as AI Hub names it), which must hold weight-shared binaries."""
    with hub_errors():
        devices = client.get_devices(name=name)
    if not devices:
        raise EngineError(f"AI Hub has no device named {name!r} (names are exact: `hexa npu devices` lists them)")
    npus = npu_devices(devices)
    if not npus:
        raise EngineError(f"{name} has no Snapdragon NPU on AI Hub (`hexa npu devices` lists those that do)")
    d = npus[0]
    if not d.weight_sharing:
        raise EngineError(f"{name} ({d.chipset}, Hexagon {d.hexagon}) cannot hold weight-shared context binaries "
                          "(`hexa npu devices` shows which can)")
    return d


@dataclass(frozen=True)
class GraphSet:
    """The graphs the qnn backend runs for a model at a context: the unit compiled and profiled."""
    model: str                                  # the model's cache folder name, as QnnTransformer names it
    context: int
    blocks: tuple[tuple[int, int], ...]
    lengths: tuple[int, ...]

    @classmethod
    def for_model(cls, config, model: str, context: int | None) -> "GraphSet":
        """The same blocks, lengths and static context as ``Engine.load(..., backend="qnn")``."""
        from ...methods import DEFAULT_CONTEXT

        C = min(config.max_positions, context or DEFAULT_CONTEXT["qnn"])
        n = config.num_layers
        blocks = tuple((a, min(a + BLOCK_LAYERS, n)) for a in range(0, n, BLOCK_LAYERS))
        return cls(model, C, blocks, tuple(sorted(set(DECODE_LENGTHS) | {PREFILL_LENGTH})))

    def folder(self, cache_dir: Path, device: str) -> Path:
        """Where a device's binaries for these graphs go; the key changes with anything compiled in."""
        basis = "|".join(map(str, (self.model, GRAPH_VERSION, self.context, self.blocks, self.lengths,
                                   COMPILE_OPTIONS, LINK_OPTIONS)))
        key = hashlib.sha256(basis.encode()).hexdigest()[:12]
        return Path(cache_dir) / "npu" / device_slug(device) / f"{self.model}-{key}"


@dataclass(frozen=True)
class HubGraph:
    block: int
    first: int
    last: int
    S: int
    name: str                  # its graph name in the linked binary: the ONNX graph's own name
    input_specs: dict          # qai_hub InputSpecs: input name -> (shape, dtype), in the graph's order
    path: Path | None = None   # the exported model folder (model.onnx + model.data)


def input_specs(proto: onnx.ModelProto) -> dict[str, tuple[tuple[int, ...], str]]:
    """A static graph's inputs as qai_hub InputSpecs."""
    specs = {}
    for v in proto.graph.input:
        t = v.type.tensor_type
        shape = tuple(d.dim_value for d in t.shape.dim)
        if not shape or min(shape) < 1:
            raise EngineError(f"graph {proto.graph.name}: input {v.name} has no static shape")
        specs[v.name] = (shape, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name)
    return specs


def save_for_hub(proto: onnx.ModelProto, folder: Path) -> None:
    """A model folder of one ``model.onnx`` and its weights in one ``model.data``: the form AI Hub
    takes for an ONNX model with external weights (a block of a big model passes protobuf's 2 GB)."""
    folder.mkdir(parents=True)
    onnx.save_model(proto, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.data", size_threshold=1024)


def export_block(cpu, graphs: GraphSet, block: int, out: Path) -> list[HubGraph]:
    """Block ``block``'s graphs, one per S, written under ``out``."""
    a, b = graphs.blocks[block]
    exported = []
    for S in graphs.lengths:
        proto = build_block(cpu, a, b, S, graphs.context)
        name, specs = proto.graph.name, input_specs(proto)
        path = out / f"{name}.onnx"
        save_for_hub(proto, path)
        exported.append(HubGraph(block, a, b, S, name, specs, path))
    return exported


def _model_folder(model: str | None, cache_dir: Path, say: Say) -> Path:
    from ...model.cache import ensure_cached
    from ...model.source import resolve

    return ensure_cached(resolve(model), Path(cache_dir) / "models", say)


def load_cpu_model(model: str | None, cache_dir: Path, say: Say):
    """(CompactTransformer, model name) as ``Engine.load`` finds them, without the QNN provider:
    building the ONNX graphs needs only the weights."""
    from ..transformer import CompactTransformer

    folder = _model_folder(model, cache_dir, say)
    # the graphs are built from the raw weights: which CPU linear the model would run does not matter
    return CompactTransformer.load(folder), folder.name


def model_config(model: str | None, cache_dir: Path, say: Say):
    """(ModelConfig, model name), the weights left alone."""
    from ...model.config import ModelConfig

    folder = _model_folder(model, cache_dir, say)
    return ModelConfig.from_dict(json.loads((folder / "config.json").read_text())), folder.name


def submit_block(client, device: str, graphs: list[HubGraph], models: list, name: str):
    """One block: a compile job per S, and a link job joining them into one weight-shared binary.

    S is baked into the graphs' reshapes, so each S is its own model (input-spec variants of ONE
    model need dynamic shapes): ``submit_compile_and_link_jobs`` gets a list of models, one input
    spec and graph name each, and adds ``--target_runtime qnn_dlc`` and ``context_enable_graphs``.
    The compile jobs' target models exist at submission, so it returns at once: every block
    compiles in parallel on AI Hub."""
    import qai_hub

    with hub_errors():
        compile_jobs, link_job = client.submit_compile_and_link_jobs(
            models, device=qai_hub.Device(device), name=name,
            input_specs=[g.input_specs for g in graphs], graph_names=[g.name for g in graphs],
            compile_options=COMPILE_OPTIONS, link_options=LINK_OPTIONS)
    if link_job is None:        # no target models at submission (an older AI Hub): nothing to link
        raise EngineError(f"AI Hub did not link {name}: see {', '.join(j.url for j in compile_jobs)}")
    return compile_jobs, link_job


def _check(job, what: str, hint: str = "") -> None:
    """Wait for ``job``; a failure names the job's page, where AI Hub keeps its log."""
    status = job.wait()
    if not status.success:
        raise EngineError(f"AI Hub could not {what}: {status.message or status.code} ({job.url}){hint}")


def read_manifest(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def compile_for_device(client, device: str, model: str | None, context: int | None, cache_dir: Path,
                       say: Say, force: bool = False) -> Path:
    """Compile, link and download the qnn graphs for ``device``; returns the binaries' folder."""
    import qai_hub

    d = find_device(client, device)
    say(f"device: {d.name} ({d.chipset}, Hexagon {d.hexagon})")
    config, name = model_config(model, cache_dir, say)
    graphs = GraphSet.for_model(config, name, context)
    folder = graphs.folder(cache_dir, d.name)
    old = None if force else read_manifest(folder)
    if old and len(old["binaries"]) == len(graphs.blocks):     # every block was submitted
        if old.get("complete") and all((folder / b["file"]).is_file() for b in old["binaries"]):
            say(f"already compiled for {d.name}: {folder} (--force compiles again)")
            return folder
        say("picking up the AI Hub jobs submitted earlier (--force submits new ones)")
        return _finish(client, folder, old, say)
    cpu, _ = load_cpu_model(model, cache_dir, say)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    n = len(graphs.blocks) * len(graphs.lengths)
    say(f"exporting {n} graphs: {len(graphs.blocks)} blocks x S={'/'.join(map(str, graphs.lengths))}, "
        f"context {graphs.context}")
    manifest = {"format": FORMAT, "complete": False, "device": d.name, "chipset": d.chipset, "hexagon": d.hexagon,
                "soc_model": d.soc_model, "model": graphs.model, "graph_version": GRAPH_VERSION,
                "context": graphs.context, "blocks": [list(b) for b in graphs.blocks],
                "lengths": list(graphs.lengths), "compile_options": COMPILE_OPTIONS,
                "link_options": LINK_OPTIONS, "qai_hub": str(qai_hub.__version__), "binaries": []}
    done = 0
    for bi, (a, b) in enumerate(graphs.blocks):
        with tempfile.TemporaryDirectory(dir=folder, prefix=".export-") as tmp:
            block_graphs = export_block(cpu, graphs, bi, Path(tmp))
            models = []
            for g in block_graphs:
                done += 1
                size = sum(f.stat().st_size for f in g.path.iterdir()) / 1e6
                say(f"uploading graph {done}/{n}: {g.name} ({size:.0f} MB)")
                with hub_errors():
                    models.append(client.upload_model(str(g.path), name=f"hexa {g.name}"))
            cjobs, link = submit_block(client, d.name, block_graphs, models, f"hexa {graphs.model} block {a}-{b}")
        for g, j in zip(block_graphs, cjobs):
            say(f"  compile job S={g.S}: {j.url}")
        say(f"  link job (block {a}-{b}, one weight copy): {link.url}")
        manifest["binaries"].append({"block": bi, "file": f"block{a:02d}-{b:02d}.bin",
                                     "graphs": {str(g.S): g.name for g in block_graphs},
                                     "compile_jobs": {str(g.S): j.job_id for g, j in zip(block_graphs, cjobs)},
                                     "link_job": link.job_id})
        atomic_write(folder / MANIFEST, json.dumps(manifest, indent=1))
    return _finish(client, folder, manifest, say)


def _finish(client, folder: Path, manifest: dict, say: Say) -> Path:
    """Wait for each block's jobs, download its binary; the manifest is complete when all are."""
    say("waiting for AI Hub (Ctrl+C stops waiting; the jobs go on, and the same command picks them up)")
    with hub_errors():
        for entry in manifest["binaries"]:
            target = folder / entry["file"]
            for S, job_id in entry["compile_jobs"].items():
                _check(client.get_job(job_id), f"compile {entry['graphs'][S]}", RETRY)
            link = client.get_job(entry["link_job"])
            _check(link, f"link {target.stem}", RETRY)
            if not target.is_file():
                part = folder / f".{target.stem}.part.bin"
                with contextlib.redirect_stdout(io.StringIO()):    # qai_hub prints "Downloaded model to ..."
                    got = Path(link.download_target_model(str(part)))
                if not got.is_file() or got.stat().st_size == 0:
                    raise EngineError(f"AI Hub's link job {link.job_id} gave no context binary ({link.url})")
                os.replace(got, target)
            entry["model_id"] = link.get_target_model().model_id
            say(f"  {target.name}: {len(entry['graphs'])} graphs, {target.stat().st_size / 1e6:.0f} MB")
    manifest["complete"] = True
    atomic_write(folder / MANIFEST, json.dumps(manifest, indent=1))
    say(f"weight-shared context binaries for {manifest['device']} in {folder}")
    return folder


def profile_options(graph: str) -> str:
    """Selects one graph of a multi-graph context binary for an inference or profile job."""
    return f"--qnn_options context_enable_graphs={graph}"


def graph_cost(profile: dict, job: str = "") -> GraphCost:
    """One graph's cost from ``InferenceJob.download_profile()`` (times in microseconds)."""
    summary = profile.get("execution_summary") or {}
    compute = summary.get("estimated_inference_time")
    if not compute:
        raise EngineError(f"AI Hub's profile of job {job} has no inference time")
    load, kind = summary.get("warm_load_time"), "warm"
    if load is None:                      # profiles of format 0 have only the first load
        load, kind = summary.get("first_load_time"), "first"
    extra: dict = {"job": job, "load": kind}
    if summary.get("estimated_inference_peak_memory") is not None:
        extra["peak_memory_bytes"] = int(summary["estimated_inference_peak_memory"])
    if summary.get("first_load_time") is not None:
        extra["first_load_ms"] = summary["first_load_time"] / 1000
    units = Counter(layer.get("compute_unit", "?") for layer in profile.get("execution_detail") or ())
    if units:
        extra["compute_units"] = dict(sorted(units.items()))    # ops off the NPU show here
    return GraphCost(compute / 1000, (load or 0) / 1000, extra)


def profile_device(client, device: str, model: str | None, context: int | None, cache_dir: Path,
                   say: Say) -> Path:
    """Profile every compiled graph on ``device``; returns the stored cost profile's path."""
    import qai_hub

    config, name = model_config(model, cache_dir, say)
    graphs = GraphSet.for_model(config, name, context)
    folder = graphs.folder(cache_dir, device)
    manifest = read_manifest(folder)
    if not manifest or not manifest.get("complete"):
        raise EngineError(f"nothing compiled for {device!r} ({name}, context {graphs.context}): "
                          f"run `hexa npu compile --device \"{device}\"` first")
    d = find_device(client, manifest["device"])
    jobs = {}
    with hub_errors():
        for entry in manifest["binaries"]:
            binary = client.get_model(entry["model_id"])
            for S, graph in entry["graphs"].items():
                # no inputs: AI Hub feeds random data of the selected graph's own shapes and types
                job = client.submit_inference_job(binary, device=qai_hub.Device(d.name), name=f"hexa profile {graph}",
                                                  options=profile_options(graph), profile=True)
                jobs[(int(entry["block"]), int(S))] = (graph, job)
                say(f"profile job {graph}: {job.url}")
        say("waiting for AI Hub (Ctrl+C stops waiting)")
        costs = {}
        for key, (graph, job) in sorted(jobs.items()):
            _check(job, f"profile {graph}")
            costs[key] = c = graph_cost(job.download_profile(), job.job_id)
            say(f"  block {key[0]} S={key[1]:<3} compute {c.compute_ms:8.3f} ms   load {c.load_ms:8.1f} ms")
    source = (f"Qualcomm AI Hub profile jobs on {d.name} ({datetime.date.today().isoformat()}, "
              f"qai-hub {qai_hub.__version__}); binaries from {folder.name}")
    path = profile_path(cache_dir, d.name, manifest["model"])
    DeviceCostProfile(device=d.name, chipset=manifest["chipset"], source=source, model=manifest["model"],
                      graph_version=int(manifest["graph_version"]), context=int(manifest["context"]),
                      blocks=tuple((int(a), int(b)) for a, b in manifest["blocks"]), graphs=costs).save(path)
    say(f"device cost profile: {path} (use it with --cost-profile \"{d.name}\")")
    return path
