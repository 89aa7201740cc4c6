"""``engine.runtime.qnn.hub`` offline: the graphs, input specs, graph names and option strings a compile + link
on Qualcomm AI Hub would get (checked with qai_hub's own objects and its real
``submit_compile_and_link_jobs``, only the network calls recorded instead of sent), AI Hub's
profile format turned into a device cost profile, and the whole compile/profile flow on a client
whose network calls are answered here. Nothing reaches AI Hub."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

qai_hub = pytest.importorskip("qai_hub")

from qai_hub import api_utils  # noqa: E402
from qai_hub import public_api_pb2 as api_pb  # noqa: E402
from qai_hub.client import SourceModelType, _determine_model_type, _profile_pb_to_python_dict  # noqa: E402

from engine.errors import EngineError  # noqa: E402
from engine.model.config import ModelConfig  # noqa: E402
from engine.runtime.qnn import cost_profile, hub  # noqa: E402
from engine.runtime.qnn.graphs import GRAPH_VERSION  # noqa: E402
from engine.runtime.transformer import CompactTransformer  # noqa: E402

DEVICE = "Samsung Galaxy S24"
S24 = ["chipset:qualcomm-snapdragon-8gen3", "chipset:sm8650", "os:android", "hexagon:v75", "framework:qnn",
       "framework:onnx", "htp-supports-fp16:true", "htp-supports-weight-sharing:true", "soc-model:57"]


def tiny_model(layers: int = 3) -> CompactTransformer:
    """A 3-layer llama: hidden 16, 2 query heads sharing 1 kv head of 8."""
    config = ModelConfig("llama", vocab_size=32, hidden_size=16, intermediate_size=32, num_layers=layers,
                         num_heads=2, num_kv_heads=1, head_dim=8, rms_eps=1e-5, max_positions=64,
                         tie_embeddings=True, attention_bias=False, rope={"rope_theta": 10000.0})
    g = np.random.default_rng(0)
    shapes = {"model.embed_tokens.weight": (32, 16), "model.norm.weight": (16,)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (16,), p + "post_attention_layernorm.weight": (16,),
                       p + "self_attn.q_proj.weight": (16, 16), p + "self_attn.k_proj.weight": (8, 16),
                       p + "self_attn.v_proj.weight": (8, 16), p + "self_attn.o_proj.weight": (16, 16),
                       p + "mlp.gate_proj.weight": (32, 16), p + "mlp.up_proj.weight": (32, 16),
                       p + "mlp.down_proj.weight": (16, 32)})
    return CompactTransformer(config, {k: g.standard_normal(s, dtype=np.float32) for k, s in shapes.items()},
                              "numpy")


# blocks of 2 layers, so the last block (1 layer) has other cache shapes than the first
GRAPHS = hub.GraphSet("tiny", 48, ((0, 2), (2, 3)), (1, 8, 64))


def expected_specs(S: int, layers: int, C: int = 48) -> dict:
    """What build_block's inputs are, worked out from the tiny config: G = 2 query heads per kv head."""
    f = "float32"
    return {"x": ((S, 16), f), "cos": ((S, 8), f), "sin": ((S, 8), f), "mask": ((2 * S, C + S), f),
            "past_k": ((layers, 1, C, 8), f), "past_v": ((layers, 1, C, 8), f)}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> list[list[hub.HubGraph]]:
    out = tmp_path_factory.mktemp("export")
    cpu = tiny_model()
    return [hub.export_block(cpu, GRAPHS, bi, out) for bi in range(len(GRAPHS.blocks))]


def test_the_exported_graphs_are_valid_onnx_model_folders_for_ai_hub(exported):
    import onnxruntime as ort

    for block in exported:
        for g in block:
            assert sorted(p.name for p in g.path.iterdir()) == ["model.data", "model.onnx"]
            onnx.checker.check_model(str(g.path / "model.onnx"), full_check=True)
            assert _determine_model_type(g.path) == SourceModelType.ONNX      # qai_hub takes the folder as ONNX
            # the external weights load from the folder, and the graph runs at its static shapes
            sess = ort.InferenceSession(str(g.path / "model.onnx"), providers=["CPUExecutionProvider"])
            feed = {name: np.zeros(shape, np.float32) for name, (shape, _) in g.input_specs.items()}
            feed["x"][:] = 1.0
            x_out, k_new, _ = sess.run(None, feed)
            assert x_out.shape == (g.S, 16) and k_new.shape == (g.last - g.first, 1, g.S, 8)
            assert np.isfinite(x_out).all()


def test_input_specs_and_graph_names_match_the_graphs(exported):
    names = [g.name for block in exported for g in block]
    assert len(set(names)) == len(names) == 6
    client = qai_hub.Client()                      # no configuration is read for offline checks
    for block in exported:
        assert [g.S for g in block] == [1, 8, 64]
        for g in block:
            proto = onnx.load(str(g.path / "model.onnx"), load_external_data=False)
            assert g.name == proto.graph.name == f"block_{g.first}_{g.last}_s{g.S}_c48"
            assert list(g.input_specs) == [i.name for i in proto.graph.input]
            assert g.input_specs == expected_specs(g.S, g.last - g.first)
            client._check_input_specs(SourceModelType.ONNX, g.input_specs)
            types = api_utils.input_shapes_to_tensor_type_list_pb(g.input_specs).types
            assert [(t.name, tuple(t.tensor_type.shape), t.tensor_type.dtype) for t in types] == [
                (n, shape, api_pb.TensorDtype.TENSOR_DTYPE_FLOAT32) for n, (shape, _) in g.input_specs.items()]


class RecordingClient(qai_hub.Client):
    """qai_hub's real client with the calls that would reach the network recorded instead."""

    def __init__(self):
        super().__init__(config=qai_hub.ClientConfig(api_token="offline", api_url="http://127.0.0.1:9",
                                                     web_url="http://127.0.0.1:9"))
        self.uploads, self.compiles, self.links = [], [], []

    def _upload_model_if_needed(self, model, model_type, name=None, project=None):
        self.uploads.append((model, model_type))
        return model

    def submit_compile_job(self, model, device, name=None, input_specs=None, options="", single_compile=True,
                           calibration_data=None, retry=True, project=None):
        self.compiles.append({"model": model, "device": device, "name": name, "input_specs": input_specs,
                              "options": options})
        return _Job(f"c{len(self.compiles)}", target=f"dlc-{len(self.compiles)}")

    def submit_link_job(self, models, device, name=None, options="", project=None):
        self.links.append({"models": models, "device": device, "name": name, "options": options})
        return _Job(f"l{len(self.links)}", target=f"bin-{len(self.links)}")


class _Model:
    def __init__(self, model_id: str):
        self.model_id = model_id


class _Job:
    """A finished AI Hub job, as far as hub.py uses one."""

    def __init__(self, job_id: str, target: str | None = None, ok: bool = True, profile: dict | None = None,
                 options: str = ""):
        self.job_id, self.target, self.ok, self.profile, self.options = job_id, target, ok, profile, options
        self.url = f"https://workbench.aihub.qualcomm.com/jobs/{job_id}/"

    def wait(self, timeout=None):
        if getattr(self, "interrupt", False):       # the user's Ctrl+C while waiting
            self.interrupt = False
            raise KeyboardInterrupt
        state = qai_hub.JobStatus.State.SUCCESS if self.ok else qai_hub.JobStatus.State.FAILED
        return qai_hub.JobStatus(state, None if self.ok else "op not supported")

    get_status = wait

    def get_target_model(self):      # known at submission (AI Hub's current behaviour), even if it fails later
        return _Model(self.target)

    def download_target_model(self, filename: str) -> str:
        Path(filename).write_bytes(b"QNN context binary " + self.target.encode())
        return filename

    def download_profile(self) -> dict:
        return self.profile


def test_compile_and_link_submissions_as_qai_hub_builds_them(exported):
    client = RecordingClient()
    for block in exported:
        cjobs, link = hub.submit_block(client, DEVICE, block, [g.path for g in block], "hexa tiny")
        assert len(cjobs) == 3 and link.job_id == f"l{len(client.links)}"
    assert [u[0] for u in client.uploads] == [g.path for block in exported for g in block]
    assert all(u[1] == SourceModelType.ONNX for u in client.uploads)
    graphs = [g for block in exported for g in block]
    for c, g in zip(client.compiles, graphs, strict=True):        # one compile job per S
        assert c["model"] == g.path and c["input_specs"] == g.input_specs
        assert c["device"] == qai_hub.Device(DEVICE)
        assert c["options"] == f"--quantize_full_type float16 {hub.profile_options(g.name)} --target_runtime qnn_dlc"
        assert hub.profile_options(g.name) == f"--qnn_options context_enable_graphs={g.name}"
    # one link job per block, over that block's three compiled graphs, in S order
    assert [[m.model_id for m in link["models"]] for link in client.links] == [
        ["dlc-1", "dlc-2", "dlc-3"], ["dlc-4", "dlc-5", "dlc-6"]]
    assert all(link["options"] == "" and link["device"] == qai_hub.Device(DEVICE) for link in client.links)


def test_graph_sets_follow_the_qnn_backend():
    smol = ModelConfig("llama", vocab_size=49152, hidden_size=576, intermediate_size=1536, num_layers=30,
                       num_heads=9, num_kv_heads=3, head_dim=64, rms_eps=1e-5, max_positions=2048,
                       tie_embeddings=True, attention_bias=False)
    g = hub.GraphSet.for_model(smol, "SmolLM2", None)
    assert g.blocks == ((0, 6), (6, 12), (12, 18), (18, 24), (24, 30)) and g.lengths == (1, 8, 64)
    assert g.context == 1024
    assert hub.GraphSet.for_model(smol, "SmolLM2", 4096).context == 2048      # no more than the model's positions
    folder = g.folder(Path("/c"), DEVICE)
    assert folder.parent == Path("/c/npu/samsung-galaxy-s24") and folder.name.startswith("SmolLM2-")
    assert hub.GraphSet.for_model(smol, "SmolLM2", 512).folder(Path("/c"), DEVICE) != folder


def test_devices_with_a_snapdragon_npu():
    devices = [
        qai_hub.Device("Snapdragon X Elite CRD", "11", [
            "abi:aarch64-windows", "chipset:qualcomm-snapdragon-x-elite", "chipset:sc8380xp", "format:compute",
            "framework:qnn", "hexagon:v73", "htp-supports-fp16:true", "htp-supports-weight-sharing:true",
            "os:windows", "soc-model:60", "vendor:qualcomm"]),
        qai_hub.Device(DEVICE, "13", S24),
        qai_hub.Device(DEVICE, "14", S24),                             # listed once per OS version
        qai_hub.Device("Samsung Galaxy S21", "12", ["chipset:qualcomm-snapdragon-888", "hexagon:v68"]),
        qai_hub.Device("Google Pixel 3", "10", ["chipset:qualcomm-snapdragon-845"]),     # no Hexagon NPU listed
        qai_hub.Device("Apple iPhone 15 Pro", "17", ["chipset:apple-a17-pro", "framework:coreml"]),
    ]
    found = hub.npu_devices(devices)
    assert [d.name for d in found] == ["Samsung Galaxy S21", DEVICE, "Snapdragon X Elite CRD"]
    s21, s24, x_elite = found
    assert (s24.os, s24.chipset, s24.hexagon, s24.soc_model, s24.weight_sharing) == (
        "14", "qualcomm-snapdragon-8gen3", "v75", "57", True)
    assert not s21.weight_sharing and s21.soc_model == ""
    assert x_elite.line().split() == ["Snapdragon", "X", "Elite", "CRD", "qualcomm-snapdragon-x-elite",
                                      "hexagon", "v73", "soc", "60", "weight", "sharing", "yes"]
    assert s21.line().endswith("weight sharing no")


def profile_pb(exec_us: int, warm_us: int, major: int = 1) -> dict:
    """A profile exactly as ``InferenceJob.download_profile()`` gives it: qai_hub's own conversion."""
    pb = api_pb.ProfileDetail(major_version=major, minor_version=2 if major == 1 else 0, execution_time=exec_us,
                              warm_load_time=warm_us, cold_load_time=3 * warm_us, load_time=3 * warm_us,
                              after_execution_peak_memory=7_340_032, peak_memory_usage=9_000_000)
    pb.all_execution_times.extend([exec_us + 40, exec_us, exec_us + 2])
    for i, unit in enumerate([api_pb.COMPUTE_UNIT_NPU] * 5 + [api_pb.COMPUTE_UNIT_CPU]):
        pb.layer_details.add(name=f"op{i}", layer_type_name="MatMul", compute_unit=unit, execution_time=10)
    return _profile_pb_to_python_dict(pb)


def test_an_ai_hub_profile_becomes_a_graph_cost():
    c = hub.graph_cost(profile_pb(612, 35_000), "jp4k1")
    assert (c.compute_ms, c.load_ms) == (0.612, 35.0)
    assert c.extra == {"job": "jp4k1", "load": "warm", "peak_memory_bytes": 7_340_032, "first_load_ms": 105.0,
                       "compute_units": {"CPU": 1, "NPU": 5}}
    old = hub.graph_cost(profile_pb(500, 20_000, major=0), "j0")     # format 0: only the first load
    assert (old.compute_ms, old.load_ms, old.extra["load"]) == (0.5, 60.0, "first")
    with pytest.raises(EngineError, match="no inference time"):
        hub.graph_cost({}, "jempty")


def test_ai_hub_errors_become_one_line():
    box = qai_hub.client._visible_textbox("Failure to authenticate is likely caused by a bad or expired API token.")
    assert hub.one_line(qai_hub.UserError(f"Failed to authenticate.\n{box}")) == (
        "Failed to authenticate. Failure to authenticate is likely caused by a bad or expired API token.")
    for exc in (qai_hub.UserError(f"Failed.\n{box}"), qai_hub.InternalError("Internal API failure.\n" + box)):
        with pytest.raises(EngineError) as info, hub.hub_errors():
            raise exc
        assert "\n" not in str(info.value) and str(info.value).startswith("Qualcomm AI Hub: ")


class FakeHub(RecordingClient):
    """Every call compile_for_device and profile_device make, answered here (qai_hub's own
    submit_compile_and_link_jobs still builds the submissions)."""

    def __init__(self, fail_compile: str | None = None):
        super().__init__()
        self.jobs: dict[str, _Job] = {}
        self.fail_compile = fail_compile
        self.inference = []

    def get_devices(self, name="", os="", attributes=None):
        devices = [qai_hub.Device(DEVICE, "14", S24),
                   qai_hub.Device("Samsung Galaxy S21", "12", ["chipset:qualcomm-snapdragon-888", "hexagon:v68"])]
        return [d for d in devices if not name or d.name == name]

    def upload_model(self, model, name=None, project=None):
        assert _determine_model_type(model) == SourceModelType.ONNX
        self.uploads.append((Path(model), name))
        return qai_hub.Model(self, f"m{len(self.uploads)}", None, SourceModelType.ONNX, name, {}, None, False,
                             None, None, None)

    def _upload_model_if_needed(self, model, model_type, name=None, project=None):
        return model

    def submit_compile_job(self, model, device, **kw):
        job = super().submit_compile_job(model, device, **kw)
        job.ok = self.fail_compile is None or self.fail_compile not in kw["options"]
        self.jobs[job.job_id] = job
        return job

    def submit_link_job(self, models, device, **kw):
        job = super().submit_link_job(models, device, **kw)
        self.jobs[job.job_id] = job
        return job

    def get_job(self, job_id, job_type=None):
        return self.jobs[job_id]

    def get_model(self, model_id):
        return _Model(model_id)

    def submit_inference_job(self, model, device, inputs=None, name=None, options="", retry=True, profile=True,
                             project=None):
        assert inputs is None and profile and device == qai_hub.Device(DEVICE)
        graph = options.split("context_enable_graphs=")[1]
        S = int(graph.split("_s")[1].split("_")[0])
        self.inference.append((model.model_id, options))
        return _Job(f"p{len(self.inference)}", profile=profile_pb(400 + 10 * S, 30_000))


def test_compile_then_profile_on_answered_calls(tmp_path, monkeypatch):
    cpu, loads = tiny_model(), []
    monkeypatch.setattr(hub, "load_cpu_model", lambda model, cache, say: loads.append(model) or (cpu, "tiny"))
    monkeypatch.setattr(hub, "model_config", lambda model, cache, say: (cpu.config, "tiny"))
    client, lines = FakeHub(), []
    folder = hub.compile_for_device(client, DEVICE, None, None, tmp_path, lines.append)
    graphs = hub.GraphSet.for_model(cpu.config, "tiny", None)      # 3 layers: one block; C = 64 positions
    assert folder == graphs.folder(tmp_path, DEVICE) and graphs.blocks == ((0, 3),)
    assert sorted(p.name for p in folder.iterdir()) == ["block00-03.bin", "npu.json"]   # the exports are gone
    assert (folder / "block00-03.bin").read_bytes() == b"QNN context binary bin-1"
    manifest = json.loads((folder / "npu.json").read_text())
    assert manifest["complete"] and manifest["chipset"] == "qualcomm-snapdragon-8gen3"
    assert manifest["binaries"] == [{"block": 0, "file": "block00-03.bin", "link_job": "l1", "model_id": "bin-1",
                                     "graphs": {str(S): f"block_0_3_s{S}_c64" for S in (1, 8, 64)},
                                     "compile_jobs": {"1": "c1", "8": "c2", "64": "c3"}}]
    text = "\n".join(lines)
    assert all(job.url in text for job in client.jobs.values())      # every job's link is printed
    assert [name for _, name in client.uploads] == [f"hexa block_0_3_s{S}_c64" for S in (1, 8, 64)]

    again = []
    assert hub.compile_for_device(client, DEVICE, None, None, tmp_path, again.append) == folder
    assert "already compiled" in again[-1] and len(client.uploads) == 3 and len(loads) == 1   # no weights loaded

    path = hub.profile_device(client, DEVICE, None, None, tmp_path, lines.append)
    assert client.inference == [("bin-1", f"--qnn_options context_enable_graphs=block_0_3_s{S}_c64")
                                for S in (1, 8, 64)]
    assert path == cost_profile.profile_path(tmp_path, DEVICE, "tiny")
    prof = cost_profile.load(DEVICE, tmp_path, "tiny")          # what --cost-profile "Samsung Galaxy S24" reads
    prof.check_fits("tiny", GRAPH_VERSION, 64, list(graphs.blocks), graphs.lengths)
    assert {k: (c.compute_ms, c.load_ms) for k, c in prof.graphs.items()} == {
        (0, 1): (0.41, 30.0), (0, 8): (0.48, 30.0), (0, 64): (1.04, 30.0)}
    assert prof.graphs[(0, 8)].extra["job"] == "p2" and "Qualcomm AI Hub profile jobs" in prof.source


def test_a_failed_compile_names_its_job_and_force_submits_new_ones(tmp_path, monkeypatch):
    cpu = tiny_model()
    monkeypatch.setattr(hub, "load_cpu_model", lambda model, cache, say: (cpu, "tiny"))
    monkeypatch.setattr(hub, "model_config", lambda model, cache, say: (cpu.config, "tiny"))
    client = FakeHub(fail_compile="_s8_")
    failure = (r"AI Hub could not compile block_0_3_s8_c64: op not supported "
               r"\(https://workbench.aihub.qualcomm.com/jobs/c2/\); after a change, `hexa npu compile --force`")
    with pytest.raises(EngineError, match=failure):
        hub.compile_for_device(client, DEVICE, None, None, tmp_path, lambda _: None)
    folder = hub.GraphSet.for_model(cpu.config, "tiny", None).folder(tmp_path, DEVICE)
    assert not hub.read_manifest(folder)["complete"]
    with pytest.raises(EngineError, match=failure):        # the same failed job again, nothing uploaded
        hub.compile_for_device(client, DEVICE, None, None, tmp_path, lambda _: None)
    assert len(client.uploads) == 3
    client.fail_compile = None
    hub.compile_for_device(client, DEVICE, None, None, tmp_path, lambda _: None, force=True)
    assert len(client.uploads) == 6 and hub.read_manifest(folder)["complete"]
    with pytest.raises(EngineError, match="cannot hold weight-shared"):
        hub.compile_for_device(client, "Samsung Galaxy S21", None, None, tmp_path, lambda _: None)
    with pytest.raises(EngineError, match="no device named 'Galaxy S24'"):
        hub.compile_for_device(client, "Galaxy S24", None, None, tmp_path, lambda _: None)


def test_an_interrupted_wait_is_picked_up_without_uploading_again(tmp_path, monkeypatch):
    cpu = tiny_model()
    monkeypatch.setattr(hub, "load_cpu_model", lambda model, cache, say: (cpu, "tiny"))
    monkeypatch.setattr(hub, "model_config", lambda model, cache, say: (cpu.config, "tiny"))
    client = FakeHub()
    real_submit = client.submit_link_job

    def submit_link_job(models, device, **kw):
        job = real_submit(models, device, **kw)
        job.interrupt = True
        return job

    client.submit_link_job = submit_link_job
    with pytest.raises(KeyboardInterrupt):
        hub.compile_for_device(client, DEVICE, None, None, tmp_path, lambda _: None)
    lines = []
    folder = hub.compile_for_device(client, DEVICE, None, None, tmp_path, lines.append)
    assert any("picking up" in line for line in lines) and len(client.uploads) == 3
    assert hub.read_manifest(folder)["complete"] and (folder / "block00-03.bin").is_file()


def test_profiling_needs_compiled_binaries(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "model_config", lambda model, cache, say: (tiny_model(1).config, "tiny"))
    with pytest.raises(EngineError, match=r'nothing compiled for .*run `hexa npu compile --device "Samsung Galaxy S24"`'):
        hub.profile_device(FakeHub(), DEVICE, None, None, tmp_path, lambda _: None)
